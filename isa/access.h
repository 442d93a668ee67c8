/* Resolved views of operands, for the semantics files (the files under isa/insns/).
 *
 * A view turns a validated memory operand into host pointers: element e
 * (row-major over the free dims) of partition p lives at
 *   base + p * partition_step + sum_k(stride_bytes[k] * i_k).
 * The semantics read a partition's elements into a buffer of engine values
 * (double, see dtype.h), compute (the run forms of the ALU and activation
 * functions in insn.h), and store the buffer back. Immediates and
 * patterns also have views, so an instruction can treat "imm or per-partition
 * AP" uniformly via nx_view_scalar(). */
#ifndef NXSIM_ISA_ACCESS_H
#define NXSIM_ISA_ACCESS_H

#include <stdint.h>

#include "exec.h"
#include "insn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nx_view {
    uint8_t kind;              /* nx_operand_kind of the operand */
    uint8_t dtype;
    uint8_t ndims;
    uint32_t partitions;       /* partition_count */
    uint64_t free_elems;       /* elements per partition */
    uint8_t *base;             /* memory: address of (p=0, e=0) */
    int64_t partition_step;    /* memory: bytes between partitions */
    int64_t stride_bytes[NX_MAX_FREE_DIMS];
    uint32_t count[NX_MAX_FREE_DIMS];
    double imm;                /* IMM */
    int64_t pattern_base;      /* PATTERN */
    int64_t pattern_cm;        /* PATTERN channel multiplier */
    int32_t pattern_stride[NX_MAX_FREE_DIMS];
    /* memory: the free dims as a walk over runs, the same elements in the
     * same row-major order: count-1 dims dropped, a dim merged into its
     * inner neighbour when the two are one run (outer step = inner step x
     * inner count); innermost last, walk_nd >= 1 (no free dim: one run of
     * one element). The innermost dim is the run the converters take. */
    uint32_t walk_nd;
    uint64_t walk_count[NX_MAX_FREE_DIMS];
    int64_t walk_step[NX_MAX_FREE_DIMS]; /* bytes */
} nx_view;

/* Resolves op for the core in ctx. The operand must have validated. For a
 * PATTERN, `partitions` = op->partition_count. */
void nx_view_init(nx_view *v, const nx_exec_ctx *ctx, const nx_operand *op);

/* Host address of element e of partition p (memory views only). */
uint8_t *nx_view_addr(const nx_view *v, uint32_t p, uint64_t e);

/* Loads partition p's free_elems values (engine values) into out.
 * IMM: fills free_elems copies of imm (free_elems is 1 for IMM unless set).
 * PATTERN: the pattern's integer values. */
void nx_view_load(const nx_view *v, uint32_t p, double *out);
/* Stores n = free_elems engine values into partition p (memory views). */
void nx_view_store(const nx_view *v, uint32_t p, const double *in);
/* nx_view_store of only the elements e with pred[e] != 0 (NaN counts as
 * nonzero), in element order; the others are left as they are. */
void nx_view_store_where(const nx_view *v, uint32_t p, const double *in, const double *pred);

/* Partition p's elements as raw bytes, packed (element e at packed +
 * e * dtype size), and back: bit copies, no conversion (memory views). */
void nx_view_load_bits(const nx_view *v, uint32_t p, void *packed);
void nx_view_store_bits(const nx_view *v, uint32_t p, const void *packed);

/* The per-partition scalar of a "scalar" slot: IMM -> imm; memory -> element 0
 * of partition p. */
double nx_view_scalar(const nx_view *v, uint32_t p);

/* A scratch buffer of engine values owned by the caller's stack frame
 * pattern: allocate with nx_buf_alloc (malloc; NULL on OOM) and free. */
double *nx_buf_alloc(uint64_t n);

#ifdef __cplusplus
}
#endif

#endif
