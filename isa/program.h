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

typedef struct nx_stream {
    nx_insn *insns;
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
 * kernels/author.h). Strings owned by the program. `file` is shown relative
 * to the source tree ("kernels/tiled_pf_transpose.c"). */
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
    nx_tensor_decl *tensors;
    uint32_t tensor_count;
    uint32_t tensor_capacity;
    nx_src_loc *srcs;      /* distinct source locations (isa/program_src.c) */
    uint32_t src_count;
    uint32_t src_capacity;
} nx_program;

void nx_program_init(nx_program *p);
void nx_program_free(nx_program *p);
/* Appends a copy of insn to a stream (growing it). Returns 0 or -1 (OOM). */
int nx_program_append(nx_program *p, uint32_t core, nx_engine engine,
                      const nx_insn *insn, nx_error *err);
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
