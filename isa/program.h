/* A program: what one .nxb file holds and what the executor and the SystemC
 * model run. Per core and per engine one instruction stream; a table of HBM
 * tensors; a semaphore count. The program owns its arrays (nx_program_free). */
#ifndef NXSIM_ISA_PROGRAM_H
#define NXSIM_ISA_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "geometry.h"
#include "insn.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NX_TENSOR_NAME_MAX 64 /* including the NUL */
#define NX_TENSOR_MAX_DIMS 6

typedef enum nx_tensor_role {
    NX_ROLE_INPUT = 0,   /* loaded from --in before the run */
    NX_ROLE_OUTPUT = 1,  /* written to --out after the run (starts zeroed) */
    NX_ROLE_SCRATCH = 2, /* zeroed, never loaded or saved */
    NX_ROLE_COUNT = 3
} nx_tensor_role;
const char *nx_role_name(nx_tensor_role r); /* "input","output","scratch" */
int nx_role_from_name(const char *name, nx_tensor_role *out);

typedef struct nx_tensor_decl {
    char name[NX_TENSOR_NAME_MAX]; /* [A-Za-z_][A-Za-z0-9_.]* */
    uint8_t dtype;                 /* nx_dtype */
    uint8_t role;                  /* nx_tensor_role */
    uint8_t ndims;                 /* 1..NX_TENSOR_MAX_DIMS */
    uint64_t shape[NX_TENSOR_MAX_DIMS];
    uint64_t offset;               /* bytes from HBM start, dtype-aligned */
} nx_tensor_decl;
uint64_t nx_tensor_bytes(const nx_tensor_decl *t);

/* How a stream stores an instruction: every nx_insn field but the operands
 * inline, each operand slot as the index of its value in the program's
 * operand pool (shared by all streams; equal operands are stored once). 44
 * bytes where an nx_insn takes 384, and the operands cost once per distinct
 * value. Header fields (opcode, semaphores) may be read here directly; the
 * whole instruction comes from nx_program_insn. */
typedef struct nx_insn_rec {
    uint8_t opcode;
    uint8_t alu0;
    uint8_t alu1;
    uint8_t func;
    uint16_t flags;
    uint8_t wait_sem;
    uint8_t inc_sem;
    uint32_t wait_value;
    uint32_t inc_amount;
    int32_t iparam[2];
    uint32_t op[NX_MAX_OPERANDS]; /* indices into nx_program.operands.ops */
    uint32_t wait_span;
} nx_insn_rec;

/* The distinct operands of a program (isa/program_store.c). `ops` holds
 * each once; `slots` is an open-addressed hash of them (1 + index, 0 =
 * empty; slot_count a power of two or 0). Owned by the program; it only
 * grows (an operand no instruction uses any more stays). */
typedef struct nx_operand_pool {
    nx_operand *ops;
    uint32_t count;
    uint32_t capacity;
    uint32_t *slots;
    uint32_t slot_count;
} nx_operand_pool;

typedef struct nx_stream {
    nx_insn_rec *recs; /* count records (capacity allocated) */
    uint32_t count;
    uint32_t capacity;
    /* Where each instruction was emitted: src[i] is 1 + an index into the
     * program's srcs, 0 = unknown. NULL = no instruction of this stream has
     * a source location (programs loaded from files, hand-built ones). Never
     * part of the encoded instruction word or the .nxb container. */
    uint32_t *src;
} nx_stream;

/* A source location of the code that emitted instructions (the authoring
 * layer's emit helpers capture __FILE__, __LINE__ and __func__;
 * kernels/author/author.h). Strings owned by the program. `file` is shown relative
 * to the source tree ("kernels/transpose/tiled_pf_transpose.c"). */
typedef struct nx_src_loc {
    char *file;
    char *func;
    uint32_t line;
} nx_src_loc;

typedef struct nx_program {
    char machine[16];      /* target machine name, NUL-terminated */
    uint32_t cores;        /* 1..NX_MAX_CORES */
    uint32_t sem_count;    /* 0..NX_MAX_SEMAPHORES, per core */
    uint64_t hbm_bytes;    /* HBM extent the program uses (>= every tensor end) */
    nx_stream stream[NX_MAX_CORES][NX_ENG_COUNT];
    nx_operand_pool operands; /* every stream's operand values */
    nx_tensor_decl *tensors;
    uint32_t tensor_count;
    uint32_t tensor_capacity;
    nx_src_loc *srcs;      /* distinct source locations (isa/program_src.c) */
    uint32_t src_count;
    uint32_t src_capacity;
} nx_program;

/* Limits on untrusted programs (docs/parts/security.md). A .nxs or .nxb
 * program holds at most NX_PROGRAM_MAX_INSNS instructions in all its streams
 * together (96 MiB of 48-byte records, plus an operand pool of at most five
 * distinct 72-byte operands per instruction and its hash: about 0.9 GiB when
 * every operand differs): the assembler and the decoder refuse more before
 * the memory is taken. A program file is at most
 * NX_PROGRAM_FILE_MAX bytes (a .nxb of the most instructions is 640 MiB). */
#define NX_PROGRAM_MAX_INSNS (1u << 21)
#define NX_PROGRAM_FILE_MAX ((uint64_t)1 << 30)

void nx_program_init(nx_program *p);
/* Instructions in all streams. */
uint64_t nx_program_insn_count(const nx_program *p);
void nx_program_free(nx_program *p);
/* ---- instructions (isa/program_store.c) ---- */

/* Appends a copy of insn to a stream (growing it; its operands join the
 * pool). Returns 0 or -1 (OOM). */
int nx_program_append(nx_program *p, uint32_t core, nx_engine engine,
                      const nx_insn *insn, nx_error *err);
/* Instruction `index` of (core, engine), every field exactly as appended,
 * written to *scratch (the caller's; it stays valid however the program
 * changes). Returns scratch, or NULL when there is no such instruction. */
const nx_insn *nx_program_insn(const nx_program *p, uint32_t core, nx_engine engine,
                               uint32_t index, nx_insn *scratch);
/* Every field of a record but the operands into *out. */
static inline void nx_insn_rec_fields(const nx_insn_rec *r, nx_insn *out) {
    out->opcode = r->opcode;
    out->alu0 = r->alu0;
    out->alu1 = r->alu1;
    out->func = r->func;
    out->flags = r->flags;
    out->wait_sem = r->wait_sem;
    out->inc_sem = r->inc_sem;
    out->wait_value = r->wait_value;
    out->inc_amount = r->inc_amount;
    out->iparam[0] = r->iparam[0];
    out->iparam[1] = r->iparam[1];
    out->wait_span = r->wait_span;
}
/* nx_program_insn for a record of one of p's streams (no bounds checks). */
static inline const nx_insn *nx_program_expand(const nx_program *p, const nx_insn_rec *r,
                                               nx_insn *out) {
    nx_insn_rec_fields(r, out);
    for (unsigned k = 0; k < NX_MAX_OPERANDS; k++) out->op[k] = p->operands.ops[r->op[k]];
    return out;
}
/* nx_program_expand into a scratch kept from one call to the next, for a
 * loop over a stream: ids[k] names the pool entry out->op[k] holds
 * (UINT32_MAX before the first call), and only slots that change are
 * copied. */
static inline const nx_insn *nx_program_expand_next(const nx_program *p, const nx_insn_rec *r, nx_insn *out,
                                                    uint32_t ids[NX_MAX_OPERANDS]) {
    nx_insn_rec_fields(r, out);
    for (unsigned k = 0; k < NX_MAX_OPERANDS; k++)
        if (ids[k] != r->op[k]) {
            out->op[k] = p->operands.ops[r->op[k]];
            ids[k] = r->op[k];
        }
    return out;
}
/* Replaces instruction `index` of (core, engine) by a copy of insn. 0, or
 * -1 (no such instruction, out of memory). */
int nx_program_set_insn(nx_program *p, uint32_t core, nx_engine engine, uint32_t index,
                        const nx_insn *insn, nx_error *err);
/* Bytes the program's instruction storage holds: every stream's records
 * (as allocated), the operand pool and its hash. */
uint64_t nx_program_insn_bytes(const nx_program *p);
/* Appends a tensor declaration (no overlap/placement checks here). */
int nx_program_add_tensor(nx_program *p, const nx_tensor_decl *t, nx_error *err);
/* Index of the tensor named `name`, or -1. */
int nx_program_find_tensor(const nx_program *p, const char *name);

/* ---- source locations (isa/program_src.c) ---- */

/* The index of (file, line, func) in p->srcs, added if new; file is
 * normalised by nx_src_display_path first. 0, or -1 (out of memory). */
int nx_program_src_intern(nx_program *p, const char *file, uint32_t line, const char *func,
                          uint32_t *index_out, nx_error *err);
/* Records that instruction `index` of (core, engine) came from p->srcs[src]
 * (the stream's src array is created on first use). 0, or -1. */
int nx_program_set_src(nx_program *p, uint32_t core, nx_engine engine, uint32_t index, uint32_t src,
                       nx_error *err);
/* Where instruction `index` of (core, engine) was emitted, or NULL. */
const nx_src_loc *nx_program_insn_src(const nx_program *p, uint32_t core, nx_engine engine,
                                      uint32_t index);
/* A compiler's __FILE__ as the source tree names it: without the leading
 * "../" and "./" steps a build directory adds and without the absolute
 * path of the tree ("/home/me/nxsim/kernels/x.c" and "../../kernels/x.c"
 * are both "kernels/x.c"). Returns a pointer into `file`. */
const char *nx_src_display_path(const char *file);

/* Full static validation against a machine: header fields, tensor table
 * (names, dtypes, shapes, alignment, inside hbm_bytes, no overlap), and every
 * instruction (isa/validate.h). The message names the core, engine,
 * instruction index and mnemonic of the first bad instruction. */
int nx_program_validate(const nx_program *p, const nx_geometry *geo, nx_error *err);

#ifdef __cplusplus
}
#endif

#endif
