/* The collective family's rules:
 * collective_matmul (kernels/collective/collective_matmul.h):
 *   operands   A [M, K], B [K, N], fp32 or bf16 of one dtype;
 *   attribute  reduce_scatter (1; 0: all-reduce every tile, measurement);
 *   results    C [M, N] of the dtype;
 *   reference  nx_ref_collective_matmul (one fp32 sgemm over the whole K);
 *   tolerance  the matmul's: the cores' two fp32 partial sums and their fp32
 *              sum stay within the bound of a K-long fp32 dot product,
 *              1 + 2 K sqrt(K) u / eps(dtype) units of eps, relative above
 *              1, absolute below;
 *   default    A [256, 512] bf16 @ B [512, 384] bf16.
 * The kernel refuses K below the grid's cores when it runs (the rules do
 * not know the grid). */
#include "families.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/collective/collective_matmul.h"
#include "kernels/ref/ref.h"

static int cm_read(const nx_macro_op *op, nx_matmul_params *p, nx_error *err) {
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    for (uint32_t i = 0; i < op->n_operands && i < NX_OP_MAX_TENSORS; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    int scatter;
    return nx_collective_matmul_read(in, op->n_operands, &op->attrs, 1, p, &scatter, err);
}

static int cm_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_matmul_params p;
    if (cm_read(op, &p, err) != 0) return -1;
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", p.dtype, p.out_ndims, p.out_shape, err);
}

static int cm_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_matmul_params p;
    if (cm_read(op, &p, err) != 0) return -1;
    return nx_ref_collective_matmul(&p, in[0], in[1], out[0], err);
}

static int cm_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t a[2] = {256, 512}, b[2] = {512, 384};
    if (nx_macro_op_add_operand(op, "A", NX_DT_BF16, 2, a, err) != 0) return -1;
    return nx_macro_op_add_operand(op, "B", NX_DT_BF16, 2, b, err);
}

static int cm_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    (void)result;
    nx_matmul_params p;
    if (cm_read(op, &p, err) != 0) return -1;
    double K = (double)p.K, eps = nx_dtype_epsilon(p.dtype), m = 1.0 + 2.0 * K * sqrt(K) * 0x1p-24 / eps;
    memset(out, 0, sizeof *out);
    out->abs = out->rel = m * eps;
    snprintf(out->text, sizeof out->text, "K=%.0f: %.3g x eps(%s)", K, m, nx_dtype_name(p.dtype));
    return 0;
}

static const char *const cm_attrs[] = {"reduce_scatter", NULL};

static const nx_op_rules nx_rules_collective_matmul = {
    .attrs = cm_attrs,
    .infer_results = cm_infer,
    .default_op = cm_default,
    .reference = cm_reference,
    .reference_name = "nx_ref_collective_matmul",
    .tolerance = cm_tolerance,
};

/* The composite: the K-split matmul over the VNC grid (kernels/collective/). */
static const nx_composite collective_composites[] = {
    {.name = "collective_matmul",
     .config = NX_CONFIG(NX_LEAF(nx_collective_matmul), NX_OPERANDS_ALL, NULL, true),
     .rules = &nx_rules_collective_matmul,
     .via = "nxsim run collective_matmul (K split over the grid's cores, partial products reduce-scattered)"},
};

const nx_family nx_family_collective = {.name = "collective", NX_FAMILY_COMPOSITES(collective_composites)};
