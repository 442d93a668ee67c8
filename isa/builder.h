/* The program-builder C API: declare HBM tensors, place SBUF/PSUM regions,
 * emit instructions into per-core, per-engine streams, and attach semaphore
 * waits and increments by hand.
 *
 * Automatic synchronisation (the kernel-authoring layer, kernels/author/) is added as a
 * layer above this one that calls nx_builder_emit() and then sets waits and
 * increments through nx_builder_set_insn(); kernels written against that layer do
 * not change when it learns more. The builder owns everything it allocates
 * until nx_builder_finish() moves the program out. */
#ifndef NXSIM_ISA_BUILDER_H
#define NXSIM_ISA_BUILDER_H

#include <stdint.h>

#include "error.h"
#include "geometry.h"
#include "insn.h"
#include "opcodes.h"
#include "program.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nx_builder nx_builder;

/* NULL on OOM. `geo` is copied and bounds the allocators. */
nx_builder *nx_builder_new(const nx_geometry *geo, uint32_t cores);
void nx_builder_free(nx_builder *b);
/* The machine geometry the builder was made for (owned by the builder). */
const nx_geometry *nx_builder_geometry(const nx_builder *b);

/* Declares an HBM tensor, placed at the next 64-byte-aligned offset. Fills
 * *full (optional) with an HBM access pattern of the whole tensor viewed as
 * [shape[0] partitions-rows] x [product of the rest] (partition_stride = row
 * elements); for 1-D tensors, one row. */
int nx_builder_tensor(nx_builder *b, const char *name, nx_dtype dtype, uint32_t ndims,
                      const uint64_t *shape, nx_tensor_role role, uint64_t *offset_out,
                      nx_error *err);

/* The byte offset of the declared tensor `name` in *offset_out: 0, or -1
 * (nothing set) when no tensor has that name. Lets the programs of a grid
 * share a scratch tensor that the first one declared. */
int nx_builder_find_tensor(const nx_builder *b, const char *name, uint64_t *offset_out);

/* Bump allocators, per core, in bytes per partition. align must be a power
 * of two. Overflow is an error naming the request and what is left. PSUM
 * allocations never straddle a bank when bytes <= bank size. */
int nx_builder_sbuf_alloc(nx_builder *b, uint32_t core, uint64_t bytes, uint64_t align,
                          uint64_t *offset_out, nx_error *err);
int nx_builder_psum_alloc(nx_builder *b, uint32_t core, uint64_t bytes, uint64_t *offset_out,
                          nx_error *err);

/* Allocates the next semaphore index (per-program; same index on every core). */
int nx_builder_semaphore(nx_builder *b, uint32_t *sem_out, nx_error *err);

/* Appends a copy of insn to (core, engine); *index_out gets its position. */
int nx_builder_emit(nx_builder *b, uint32_t core, nx_engine engine, const nx_insn *insn,
                    uint32_t *index_out, nx_error *err);
/* Where code emitted an instruction: __FILE__, __LINE__, __func__ of the
 * call (borrowed for the call only; the program keeps copies). */
typedef struct nx_src_here {
    const char *file;
    const char *func;
    uint32_t line;
} nx_src_here;
/* nx_builder_emit, recording `at` (NULL: unknown) as the instruction's
 * source location in the program (isa/program.h, nx_program_insn_src). */
int nx_builder_emit_at(nx_builder *b, uint32_t core, nx_engine engine, const nx_insn *insn,
                       const nx_src_here *at, uint32_t *index_out, nx_error *err);
/* Limits on a trace (docs/parts/security.md), checked as each instruction
 * is appended so a kernel that emits without end stops early: at most
 * NX_PROGRAM_MAX_INSNS instructions in all streams, always, and with
 * limit > 0 at most limit bytes for the program's instruction storage
 * (nx_program_insn_bytes: records and operand pool) plus
 * `beside` (what the caller holds for the same run). An emit past a limit
 * fails ("more than 2097152 instructions, the most a program may hold" or
 * "the program being traced holds 92.0 MiB beside the run's 10.5 MiB, more
 * than the memory limit of 100 MiB") and nx_builder_limit_hit says which. */
void nx_builder_set_memory_limit(nx_builder *b, uint64_t limit, uint64_t beside);
typedef enum nx_builder_limit {
    NX_BUILDER_WITHIN = 0,
    NX_BUILDER_INSN_CAP, /* NX_PROGRAM_MAX_INSNS */
    NX_BUILDER_MEMORY,   /* the memory limit */
} nx_builder_limit;
/* Which limit an emit stopped at; with one, *why (optional) gets that emit's
 * message again (a leaf may have prefixed or replaced the one it returned). */
nx_builder_limit nx_builder_limit_hit(const nx_builder *b, nx_error *why);
/* An emitted instruction, copied to *scratch (the caller's); NULL if there
 * is none. nx_builder_set_insn replaces it (0, or -1 with err set). */
const nx_insn *nx_builder_insn(const nx_builder *b, uint32_t core, nx_engine engine, uint32_t index,
                               nx_insn *scratch);
int nx_builder_set_insn(nx_builder *b, uint32_t core, nx_engine engine, uint32_t index,
                        const nx_insn *insn, nx_error *err);
uint32_t nx_builder_stream_len(const nx_builder *b, uint32_t core, nx_engine engine);

/* Moves the program out (validated against the geometry) and resets b. */
int nx_builder_finish(nx_builder *b, nx_program *out, nx_error *err);

/* ---- operand and instruction constructors ---- */
nx_insn nx_insn_make(nx_opcode opcode); /* zeroed, no wait, no increment */
void nx_insn_wait(nx_insn *insn, uint32_t sem, uint32_t value);
/* A wait on each of semaphores first .. first + span - 1 (span 1: first alone). */
void nx_insn_wait_span(nx_insn *insn, uint32_t first, uint32_t span, uint32_t value);
void nx_insn_inc(nx_insn *insn, uint32_t sem, uint32_t amount);

/* Memory AP: kind NX_OPK_HBM/SBUF/PSUM; strides/counts outermost first. */
nx_operand nx_ap(nx_operand_kind kind, nx_dtype dtype, uint32_t start_partition,
                 uint32_t partitions, int32_t partition_stride, uint64_t offset_bytes,
                 uint32_t ndims, const int32_t *strides, const uint32_t *counts);
/* On-chip [partitions] x [free] contiguous. */
nx_operand nx_ap_tile(nx_operand_kind kind, nx_dtype dtype, uint32_t start_partition,
                      uint32_t partitions, uint64_t offset_bytes, uint32_t free_elems);
/* HBM rows: `rows` partitions of `cols` contiguous elements, row pitch `pitch` elements. */
nx_operand nx_ap_hbm_rows(nx_dtype dtype, uint64_t offset_bytes, uint32_t rows,
                          int32_t pitch, uint32_t cols);
nx_operand nx_imm(double value, nx_dtype dtype);
nx_operand nx_pattern(int64_t base, int32_t channel_multiplier, uint32_t partitions,
                      uint32_t ndims, const int32_t *strides, const uint32_t *counts);

#ifdef __cplusplus
}
#endif

#endif
