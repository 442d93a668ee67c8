/* The tutorial family's rules (the four NKI matmul tutorial composites,
 * kernels/tutorial/tutorial.h): result = lhsT^T @ rhs.
 *   results    one tensor [M, N] of lhsT's dtype (lhsT [K, M], rhs [K, N]);
 *   reference  nx_ref_matmul_lhsT (OpenBLAS sgemm in fp32);
 *   tolerance  PSUM sums K products in fp32 and the result is rounded once:
 *              1 + 2 K sqrt(K) u / eps(dtype) units of eps (u = 2^-24, the
 *              conv family's bound for inputs of magnitude <= 1);
 *              nki_matmul_fully_optimized also rounds its SBUF partial sums
 *              to the result dtype after each of its K / BLOCK_K blocks:
 *              one eps each relative to the result, and, for results that
 *              cancel, an absolute half eps of a partial sum of magnitude
 *              up to sqrt(K) per block (3 sigma of a sum of K products of
 *              values uniform in [-1, 1), the default operands);
 *   default    lhsT [1024, 2048] @ rhs [1024, 1024] bf16: the smallest
 *              shape the fully optimised kernel's default blocking takes,
 *              the same for all four (2 GMAC; well under a second with the
 *              fast PE datapath). */
#include "families.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/ref/ref.h"
#include "kernels/tutorial/tutorial.h"

static int tut_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    if (op->n_operands != 2)
        return nx_fail(err, "%s takes two operands (lhsT [K, M], rhs [K, N]), the op has %u", op->func_name,
                       op->n_operands);
    const nx_op_tensor *l = &op->operands[0], *r = &op->operands[1];
    uint64_t shape[2];
    if (nx_tutorial_result_shape(l->name, l->ndims, l->shape, r->name, r->ndims, r->shape, shape, err) != 0)
        return -1;
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", l->dtype, 2, shape, err);
}

static int tut_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    if (op->n_operands != 2 || op->n_results != 1)
        return nx_fail(err, "%s: the reference takes two operands and one result", op->func_name);
    const nx_op_tensor *l = &op->operands[0], *r = &op->operands[1];
    nx_ref_operand a = {in[0], l->dtype, l->ndims, l->shape}, b = {in[1], r->dtype, r->ndims, r->shape};
    return nx_ref_matmul_lhsT(&a, &b, out[0], op->results[0].dtype, err);
}

static int tut_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t lhsT[2] = {1024, 2048}, rhs[2] = {1024, 1024};
    if (nx_macro_op_add_operand(op, "lhsT", NX_DT_BF16, 2, lhsT, err) != 0) return -1;
    return nx_macro_op_add_operand(op, "rhs", NX_DT_BF16, 2, rhs, err);
}

/* K of the op (0 when the operands are not what the kernel takes: the
 * trace refuses those anyway). */
static uint64_t op_k(const nx_macro_op *op) {
    return op->n_operands >= 1 && op->operands[0].ndims == 2 ? op->operands[0].shape[0] : 0;
}

static int tolerance_with(const nx_macro_op *op, uint32_t result, uint64_t sbuf_blocks, nx_tolerance *out) {
    nx_dtype dt = result < op->n_results ? op->results[result].dtype : op->operands[0].dtype;
    double k = (double)(op_k(op) ? op_k(op) : 1), eps = nx_dtype_epsilon(dt);
    double psum = 1.0 + 2.0 * k * sqrt(k) * 0x1p-24 / eps;
    out->rel = (psum + (double)sbuf_blocks) * eps;
    out->abs = (psum + (double)sbuf_blocks * 0.5 * sqrt(k)) * eps;
    char text[128];
    if (sbuf_blocks)
        snprintf(text, sizeof text, "K=%.0f, %llu SBUF sums: %.3g rel, %.3g abs x eps(%s)", k,
                 (unsigned long long)sbuf_blocks, out->rel / eps, out->abs / eps, nx_dtype_name(dt));
    else
        snprintf(text, sizeof text, "K=%.0f: %.3g x eps(%s)", k, psum, nx_dtype_name(dt));
    snprintf(out->text, sizeof out->text, "%.*s", (int)sizeof out->text - 1, text);
    return 0;
}

static int tut_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    (void)err;
    return tolerance_with(op, result, 0, out);
}

/* The fully optimised kernel: K / BLOCK_K roundings of the SBUF partial
 * sums, BLOCK_K = TILE_K x tiles_in_block_k with TILE_K the machine's
 * partitions (kernels/tutorial/tutorial.h; 128 on the trn presets, the
 * figure without a machine). An op the kernel refuses gets the plain
 * tolerance. */
static int opt_tolerance(const nx_macro_op *op, const nx_geometry *geo, uint32_t result, nx_tolerance *out,
                         nx_error *err) {
    nx_tutorial_blocking b;
    if (nx_tutorial_blocking_read(&op->attrs, &b, err) != 0) return -1;
    uint64_t block_k = (geo ? geo->partitions : 128) * b.tiles_k, K = op_k(op);
    return tolerance_with(op, result, K && K % block_k == 0 ? K / block_k : 0, out);
}

static const char *const no_attrs[] = {NULL};

static const nx_op_rules nx_rules_tutorial_matmul = {
    .attrs = no_attrs,
    .infer_results = tut_infer,
    .default_op = tut_default,
    .reference = tut_reference,
    .reference_name = "nx_ref_matmul_lhsT",
    .tolerance = tut_tolerance,
};

static const nx_op_rules nx_rules_tutorial_matmul_fully_optimized = {
    .attrs = nx_tutorial_matmul_attrs,
    .infer_results = tut_infer,
    .default_op = tut_default,
    .reference = tut_reference,
    .reference_name = "nx_ref_matmul_lhsT",
    .tolerance_on = opt_tolerance,
};

/* The composites: the four kernels of the NKI matrix-multiplication
 * tutorial (kernels/tutorial/tutorial.h), in the tutorial's order. */
#define TUTORIAL(key, fn, rules_, via_) \
    {.name = (key), .config = NX_CONFIG(NX_LEAF(fn), NX_OPERANDS_ALL, NULL, false), .rules = (rules_), .via = (via_)}
static const nx_composite tutorial_composites[] = {
    TUTORIAL("nki_matmul_tiled", nx_tutorial_matmul_tiled, &nx_rules_tutorial_matmul,
             "nxsim run nki_matmul_tiled (NKI matmul tutorial, original tiled)"),
    TUTORIAL("nki_matmul_hoist_load", nx_tutorial_matmul_hoist_load, &nx_rules_tutorial_matmul,
             "nxsim run nki_matmul_hoist_load (NKI matmul tutorial, optimization 1)"),
    TUTORIAL("nki_matmul_block_free_dimension", nx_tutorial_matmul_block_free_dimension, &nx_rules_tutorial_matmul,
             "nxsim run nki_matmul_block_free_dimension (NKI matmul tutorial, optimization 2)"),
    TUTORIAL("nki_matmul_fully_optimized", nx_tutorial_matmul_fully_optimized, &nx_rules_tutorial_matmul_fully_optimized,
             "nxsim run nki_matmul_fully_optimized (NKI matmul tutorial, optimization 3)"),
};
#undef TUTORIAL

const nx_family nx_family_tutorial = {.name = "tutorial", NX_FAMILY_COMPOSITES(tutorial_composites)};
