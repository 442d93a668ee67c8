/* Checking a top-k leaf against the top-k reference (kernels/ref/ref.h
 * nx_ref_topk), shared by the top-k tests.
 *
 * One case = a leaf, dtype, rows x n input, k, largest, extra attributes
 * ("name=JSON;..."), the kind of data, the grid (1 or 2 programs) and
 * whether to run the model. topk_check traces every program of the grid
 * into one program (tensors x, values, indices), runs the static order
 * check, executes it on the functional executor and (run_model) on the
 * SystemC model with the race detector, and compares values (bit for bit:
 * they are input elements) and indices (exactly) with the reference.
 * Failures name the case, the row and the rank. */
#ifndef NXSIM_TESTS_TOPK_CHECK_H
#define NXSIM_TESTS_TOPK_CHECK_H

#include <stdint.h>

#include "isa/dtype.h"
#include "kernels/kernel.h"

typedef enum topk_data {
    TOPK_RANDOM,   /* uniform in [-1, 1) in the dtype (bf16 and narrower: many ties) */
    TOPK_TIES,     /* values from a set of 5 */
    TOPK_EQUAL,    /* every element equal */
    TOPK_SPECIAL,  /* +-inf, NaN, +-0, the extreme finite values among random ones */
    TOPK_ASCENDING,/* 0, 1, 2, ... (the worst case for a bounded insertion) */
} topk_data;

typedef struct topk_case {
    nx_leaf_fn leaf;
    const char *name;
    nx_dtype dtype;
    uint64_t rows, n, k;
    int largest;
    const char *attrs;  /* extra attributes or NULL */
    topk_data data;
    uint32_t grid;      /* programs: 1 or 2 */
    int run_model;
    uint64_t seed;
} topk_case;

void topk_check(const topk_case *c);

/* Fills n elements of dt for the data kind (deterministic from seed). */
void topk_fill(uint8_t *x, nx_dtype dt, uint64_t n, topk_data kind, uint64_t seed);

/* Expects the leaf to refuse the case with exactly msg. */
void topk_expect_refusal(const topk_case *c, const char *msg);

#endif
