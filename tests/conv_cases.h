/* The conv leaves' cases for the leaf-case suite (tests/leaf_cases.h): a
 * conv case (the leaf's dimension labels, a dtype, the img and filt shapes,
 * the attributes as "name=JSON;...", e.g. "stride=[2,2];padding=[[1,1],
 * [0,2]]", a seed) becomes a leaf case of the leaf's registry entry, run
 * through nx_run_op on the functional executor and the model with the race
 * check (and the RTL PE where asked) against nx_ref_conv under the rules'
 * tolerance (docs/parts/conv.md), the backends bit for bit; the operands
 * pseudo-random in [-1, 1) from the seed. Then, tighter, every element
 * within
 *
 *   |got - ref| <= 2 K 2^-24 S (1 + 2e) + 2 e |ref| + tiny(out dtype)
 *                  (+ p S for a leaf that rounds its products: product_rounding)
 *
 * where K is the contraction length (in-features x taps), S the same
 * convolution of |img| and |filt| (the sum of |terms| of each output), e
 * half an ulp of the output dtype relative to the value (0 for fp32) and
 * tiny its smallest subnormal: the leaf and the reference add the same fp32
 * products in different orders and each rounds once to the output dtype.
 * The leaves' own refusals are traced directly with the result shape the
 * reference gives (or one given). Failures name the case and the first bad
 * element. */
#ifndef NXSIM_TESTS_CONV_CASES_H
#define NXSIM_TESTS_CONV_CASES_H

#include <stdint.h>

#include "isa/dtype.h"
#include "kernels/kernel.h"

typedef struct conv_case {
    const char *labels;       /* e.g. "0f1b_0i1o->01fb" */
    nx_dtype dtype;           /* img, filt and out */
    uint64_t lhs[4], rhs[4];  /* shapes (labels' spatial count + 2 dims) */
    const char *attrs;        /* "name=JSON;..." or NULL */
    int add_out_shape;        /* refusals: also pass out_shape (the conv attrs + out_shape builder;
                               * the run path's builder adds it itself) */
    uint64_t seed;
} conv_case;

/* Options (zeroed = the defaults). */
typedef struct conv_check_opts {
    const char *machine; /* machine preset for geometry and model; NULL = "trn2" */
    unsigned backends;   /* LEAF_* of tests/leaf_cases.h; 0 = functional and model */
    const char *key;     /* with a leaf outside the registry (a test's pinned plan): the
                          * registry entry whose rules it runs under */
    double product_rounding; /* the leaf rounds each product to a dtype of this unit
                              * roundoff before summing (0: exact products) */
    int filt_dtype;      /* refusals only: the filter's dtype if >= 0 (else c->dtype) */
} conv_check_opts;

/* The case of `leaf` (a registry leaf, found by its function) through the
 * suite; fails the cmocka test on any mismatch. run_model 0: the
 * functional executor only. */
void conv_check_leaf(nx_leaf_fn leaf, const conv_case *c, int run_model);
void conv_check_leaf_opts(nx_leaf_fn leaf, const conv_case *c, const conv_check_opts *o);

/* Expects the leaf to refuse the case with exactly msg (out gets the
 * shape the reference would give, or out_shape_override if non-NULL). */
void conv_expect_refusal(nx_leaf_fn leaf, const conv_case *c, const uint64_t *out_shape_override,
                         const char *msg);
void conv_expect_refusal_opts(nx_leaf_fn leaf, const conv_case *c, const uint64_t *out_shape_override,
                              const char *msg, const conv_check_opts *o);

/* Half an ulp of dt relative to the value (2^-(mantissa bits + 1); 0 for
 * fp32) and dt's smallest subnormal: the tests' own bounds use them. */
double conv_half_ulp(nx_dtype dt);
double conv_tiny(nx_dtype dt);

#endif
