/* Checking a conv leaf against the conv reference (kernels/ref/ref.h
 * nx_ref_conv), shared by the conv leaves' tests.
 *
 * One case = dimension labels (the leaf's), a dtype, the lhs and rhs
 * shapes and the attributes as "name=JSON" pairs separated by ';' (e.g.
 * "stride=[2,2];padding=[[1,1],[0,2]]"). conv_check_leaf traces the leaf
 * into a one-core program (tensors img, filt, out), runs the static order
 * check, executes it on the functional executor and (run_model) on the
 * SystemC model with the race detector, and compares both results with the
 * reference on pseudo-random inputs in [-1, 1) within
 *
 *   |got - ref| <= 2 K 2^-24 S (1 + 2e) + 2 e |ref| + tiny(out dtype)
 *                  (+ p S for a leaf that rounds its products: conv_check_opts)
 *
 * where K is the contraction length (in-features x taps), S the same
 * convolution of |img| and |filt| (the sum of |terms| of each output), e
 * half an ulp of the output dtype relative to the value (0 for fp32) and
 * tiny its smallest subnormal: the leaf and the reference add the same fp32
 * products in different orders and each rounds once to the output dtype.
 * Failures name the case and the first bad element. */
#ifndef NXSIM_TESTS_CONV_CHECK_H
#define NXSIM_TESTS_CONV_CHECK_H

#include <stdint.h>

#include "isa/dtype.h"
#include "kernels/kernel.h"

typedef struct conv_case {
    const char *labels;       /* e.g. "0f1b_0i1o->01fb" */
    nx_dtype dtype;           /* img, filt and out */
    uint64_t lhs[4], rhs[4];  /* shapes (labels' spatial count + 2 dims) */
    const char *attrs;        /* "name=JSON;..." or NULL */
    int add_out_shape;        /* 1: also pass out_shape (the conv attrs + out_shape builder) */
    uint64_t seed;
} conv_case;

/* Full check of one case; fails the cmocka test on any mismatch. */
void conv_check_leaf(nx_leaf_fn leaf, const char *leaf_name, const conv_case *c, int run_model);

/* Options of conv_check_leaf_opts / conv_expect_refusal_opts (zeroed = the
 * defaults of conv_check_leaf). */
typedef struct conv_check_opts {
    const char *machine;     /* machine preset for geometry and model; NULL = "trn2" */
    double product_rounding; /* the leaf rounds each product to a dtype of this unit
                              * roundoff before summing (0: exact products): adds
                              * product_rounding x S to the tolerance */
    int filt_dtype;          /* refusals only: the filter's dtype if >= 0 (else c->dtype) */
} conv_check_opts;

void conv_check_leaf_opts(nx_leaf_fn leaf, const char *leaf_name, const conv_case *c, int run_model,
                          const conv_check_opts *o);

/* Expects the leaf to refuse the case with exactly msg (out gets the
 * shape the reference would give, or out_shape_override if non-NULL). */
void conv_expect_refusal(nx_leaf_fn leaf, const conv_case *c, const uint64_t *out_shape_override,
                         const char *msg);
void conv_expect_refusal_opts(nx_leaf_fn leaf, const conv_case *c, const uint64_t *out_shape_override,
                              const char *msg, const conv_check_opts *o);

/* Traces the case and returns the number of instructions of each engine
 * (PE, DVE, ACT, POOL, SP) in counts[] (tests of the tiling). */
void conv_count_insns(nx_leaf_fn leaf, const conv_case *c, uint64_t *counts);

/* Half an ulp of dt relative to the value (2^-(mantissa bits + 1); 0 for
 * fp32, which the bound's sum term covers) and dt's smallest subnormal. */
double conv_half_ulp(nx_dtype dt);
double conv_tiny(nx_dtype dt);

#endif
