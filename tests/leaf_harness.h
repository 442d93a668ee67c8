/* Running one leaf kernel the way its tests need: trace it on one core into
 * a fresh builder, order-check the program (test_kcheck_program), execute it on
 * the functional executor and on the SystemC model with the race detector,
 * and hand back both executors' outputs. Any failure fails the test with a
 * message naming the case. Tests link tests/leaf_harness.c. */
#ifndef NXSIM_TESTS_LEAF_HARNESS_H
#define NXSIM_TESTS_LEAF_HARNESS_H

#include <stdint.h>

#include "kernels/kernel.h"

#define LEAF_MAX_TENSORS 4

typedef struct leaf_case {
    nx_leaf_fn leaf;
    const char *what;        /* names the case in failures */
    const char *machine;     /* "trn2" (NULL) or "trn1" */
    nx_tensor_ref args[LEAF_MAX_TENSORS]; /* inputs, then outputs (offsets filled by the harness) */
    uint32_t nargs, n_inputs;
    const nx_attrs *attrs;   /* additional args (may be NULL) */
    int skip_model;          /* 1: functional executor only */
} leaf_case;

typedef struct leaf_result {
    uint8_t *out[LEAF_MAX_TENSORS];       /* functional executor's outputs (malloc'd) */
    uint8_t *model_out[LEAF_MAX_TENSORS]; /* the model's (NULL with skip_model) */
    uint64_t bytes[LEAF_MAX_TENSORS];
    uint32_t nout;
    double model_ns;                       /* simulated time */
    uint64_t instructions;                 /* program instructions, all streams */
} leaf_result;

/* Bytes of a tensor. */
uint64_t leaf_tensor_bytes(const nx_tensor_ref *t);
/* Fills a tensor descriptor. */
void leaf_tensor(nx_tensor_ref *t, const char *name, nx_dtype dt, uint32_t ndims, const uint64_t *shape);

/* Runs the case with inputs[i] (leaf_tensor_bytes of args[i] each). */
void leaf_run(leaf_case *c, const void *const *inputs, leaf_result *r);
/* Traces only and returns the leaf's rc (its message in err); the program is
 * discarded. For refusal tests. */
int leaf_trace_only(leaf_case *c, nx_error *err);
void leaf_result_free(leaf_result *r);

/* Fails the test at the first element of `got` that differs from `want` in
 * its bits (elements of `size` bytes). */
void leaf_expect_bytes(const uint8_t *got, const uint8_t *want, uint64_t bytes, size_t size, const char *what);

#endif
