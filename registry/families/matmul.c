/* The matmul family's rules:
 * matmul (ONNX MatMul, kernels/matmul/matmul.h):
 *   results    numpy.matmul's shape, the operands' dtype;
 *   reference  nx_ref_matmul (an fp32 sgemm per result matrix);
 *   tolerance  the tutorial matmuls' (registry/families/tutorial.c): PSUM
 *              sums K products in fp32, one rounding: 1 + 2 K sqrt(K) u /
 *              eps(dtype) units of eps, relative above 1, absolute below;
 *   default    A [256, 512] bf16 @ B [512, 384] bf16. */
#include "families.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/matmul/matmul.h"
#include "kernels/ref/ref.h"

static int mm_read(const nx_macro_op *op, nx_matmul_params *p, nx_error *err) {
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    for (uint32_t i = 0; i < op->n_operands && i < NX_OP_MAX_TENSORS; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    return nx_matmul_read(in, op->n_operands, p, err);
}

static int mm_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_matmul_params p;
    if (mm_read(op, &p, err) != 0) return -1;
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", p.dtype, p.out_ndims, p.out_shape, err);
}

static int mm_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_matmul_params p;
    if (mm_read(op, &p, err) != 0) return -1;
    return nx_ref_matmul(&p, in[0], in[1], out[0], err);
}

static int mm_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t a[2] = {256, 512}, b[2] = {512, 384};
    if (nx_macro_op_add_operand(op, "A", NX_DT_BF16, 2, a, err) != 0) return -1;
    return nx_macro_op_add_operand(op, "B", NX_DT_BF16, 2, b, err);
}

static int mm_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    (void)result;
    nx_matmul_params p;
    if (mm_read(op, &p, err) != 0) return -1;
    double K = (double)p.K, eps = nx_dtype_epsilon(p.dtype), m = 1.0 + 2.0 * K * sqrt(K) * 0x1p-24 / eps;
    memset(out, 0, sizeof *out);
    out->abs = out->rel = m * eps;
    snprintf(out->text, sizeof out->text, "K=%.0f: %.3g x eps(%s)", K, m, nx_dtype_name(p.dtype));
    return 0;
}

static const char *const no_attrs[] = {NULL};

static const nx_op_rules nx_rules_matmul = {
    .attrs = no_attrs,
    .infer_results = mm_infer,
    .default_op = mm_default,
    .reference = mm_reference,
    .reference_name = "nx_ref_matmul",
    .tolerance = mm_tolerance,
};

/* The composite: ONNX MatMul (kernels/matmul/). */
static const nx_composite matmul_composites[] = {
    {.name = "matmul", .config = NX_CONFIG(NX_LEAF(nx_matmul), NX_OPERANDS_ALL, NULL, false), .rules = &nx_rules_matmul,
     .via = "nxsim run matmul (ONNX MatMul: batched, broadcast, any M, K, N)"},
};

const nx_family nx_family_matmul = {.name = "matmul", NX_FAMILY_COMPOSITES(matmul_composites)};
