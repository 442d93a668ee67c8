/* The norms family's rules (kernels/norms/norms.h): rmsnorm.
 *   results    by nx_rmsnorm_result: y or q [, s] [, x'];
 *   reference  nx_ref_rmsnorm (double per row, kernels/ref/ref.h);
 *   tolerance  y: the kernel's square-sum adds H positive fp32 terms
 *              (relative error <= H u, u = 2^-24), rsqrt halves it and adds
 *              a few roundings, the two products one each: (H / 2 + 8) u;
 *              then both sides round to the dtype once: + eps(dtype). s:
 *              (H / 2 + 8) u (fp32 result). q: one fp8 step, eps(fp8_e4m3)
 *              relative, 2^-9 (the smallest fp8_e4m3 step) absolute. x':
 *              exact (an fp32 add rounded once, as the reference does);
 *   default    x [512, 2048] bf16, gamma [2048] bf16.
 * softmax (ONNX Softmax, opset 13):
 *   results    y of x's dtype and shape;
 *   reference  nx_ref_softmax (double per line);
 *   tolerance  exp rounds once, the sum of A positive fp32 terms <= A u,
 *              the division once, x - max at most u |x - max| (so y e^-d d u
 *              <= u / e absolute): rel eps(dtype) + (A + 4) u, abs 2 u.
 * layernorm (ONNX LayerNormalization, opset 17):
 *   results    Y, Mean, InvStdDev (always all three: `-o` names as many as
 *              the caller wants, the others are only summarised);
 *   reference  nx_ref_layernorm (two passes in double);
 *   tolerance  bn_stats / bn_aggr's bound (docs/parts/insns-dve.md: mean
 *              within 4 H u max|x|, m2 within 4 H u (m2 + max|x| spread),
 *              for data of spread about its deviation: 16 H u on the
 *              variance, 8 H u on its rsqrt) plus a few roundings, then one
 *              rounding to the dtype on each side: eps(dtype) + (8 H + 8) u
 *              for Y and InvStdDev, eps(dtype) + (4 H + 4) u for Mean,
 *              relative above 1 and absolute below (values of order 1). */
#include "families.h"

#include <stdio.h>
#include <string.h>

#include "kernels/norms/norms.h"
#include "kernels/ref/ref.h"

static int rms_read(const nx_macro_op *op, nx_rmsnorm_params *p, nx_norm_tensor *in, nx_error *err) {
    for (uint32_t i = 0; i < op->n_operands; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    return nx_rmsnorm_read(&op->attrs, in, op->n_operands, p, err);
}

static int rms_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_rmsnorm_params p;
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    if (rms_read(op, &p, in, err) != 0) return -1;
    for (uint32_t j = 0; j < p.n_results; j++) {
        nx_dtype dt;
        uint32_t nd;
        uint64_t shape[NX_KERNEL_MAX_DIMS];
        nx_rmsnorm_result(&p, &in[0], j, &dt, &nd, shape);
        char name[16];
        snprintf(name, sizeof name, "out%u", j);
        if (nx_macro_op_add_result(op, names && names[j] ? names[j] : name, dt, nd, shape, err) != 0) return -1;
    }
    return 0;
}

static int rms_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_rmsnorm_params p;
    nx_norm_tensor t[NX_OP_MAX_TENSORS];
    if (rms_read(op, &p, t, err) != 0) return -1;
    return nx_ref_rmsnorm(&p, in[0], in[1], p.residual ? in[p.r_operand] : NULL,
                          p.quant == NX_RMSNORM_QUANT_STATIC ? in[p.scale_operand] : NULL, out, err);
}

static int rms_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t x[2] = {512, 2048}, g[1] = {2048};
    if (nx_macro_op_add_operand(op, "x", NX_DT_BF16, 2, x, err) != 0) return -1;
    return nx_macro_op_add_operand(op, "gamma", NX_DT_BF16, 1, g, err);
}

static int rms_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    nx_rmsnorm_params p;
    nx_norm_tensor t[NX_OP_MAX_TENSORS];
    memset(out, 0, sizeof *out);
    if (rms_read(op, &p, t, err) != 0) return -1;
    const double u = 0x1p-24, reduce = ((double)p.H / 2 + 8) * u;
    uint32_t quant_results = p.quant == NX_RMSNORM_QUANT_ROW ? 2 : 1;
    if (result >= quant_results) {
        snprintf(out->text, sizeof out->text, "exact (x' = x + r, one rounding)");
        return 0;
    }
    if (p.quant == NX_RMSNORM_QUANT_NONE) {
        double eps = nx_dtype_epsilon(p.dtype);
        out->rel = eps + reduce;
        out->abs = 0x1p-126;
        snprintf(out->text, sizeof out->text, "eps(%s) + (H/2+8) u, H=%llu", nx_dtype_name(p.dtype),
                 (unsigned long long)p.H);
    } else if (result == 1) {
        out->rel = reduce;
        snprintf(out->text, sizeof out->text, "(H/2+8) u, H=%llu", (unsigned long long)p.H);
    } else {
        out->rel = nx_dtype_epsilon(NX_DT_FP8_E4M3);
        out->abs = 0x1p-9;
        snprintf(out->text, sizeof out->text, "one fp8_e4m3 step");
    }
    return 0;
}

static const nx_op_rules nx_rules_rmsnorm = {
    .attrs = nx_rmsnorm_attrs,
    .infer_results = rms_infer,
    .default_op = rms_default,
    .reference = rms_reference,
    .reference_name = "nx_ref_rmsnorm",
    .tolerance = rms_tolerance,
};

static int sm_read(const nx_macro_op *op, nx_softmax_params *p, nx_error *err) {
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    for (uint32_t i = 0; i < op->n_operands && i < NX_OP_MAX_TENSORS; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    return nx_softmax_read(&op->attrs, in, op->n_operands, p, err);
}

static int sm_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_softmax_params p;
    if (sm_read(op, &p, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", x->dtype, x->ndims, x->shape, err);
}

static int sm_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_softmax_params p;
    if (sm_read(op, &p, err) != 0) return -1;
    return nx_ref_softmax(&p, in[0], out[0], err);
}

static int sm_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t x[2] = {512, 2048};
    return nx_macro_op_add_operand(op, "x", NX_DT_BF16, 2, x, err);
}

static int sm_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    (void)result;
    nx_softmax_params p;
    memset(out, 0, sizeof *out);
    if (sm_read(op, &p, err) != 0) return -1;
    const double u = 0x1p-24;
    out->rel = nx_dtype_epsilon(p.dtype) + ((double)p.A + 4) * u;
    out->abs = 2 * u;
    snprintf(out->text, sizeof out->text, "eps(%s) + (A+4) u, A=%llu; abs 2u", nx_dtype_name(p.dtype),
             (unsigned long long)p.A);
    return 0;
}

static const nx_op_rules nx_rules_softmax = {
    .attrs = nx_softmax_attrs,
    .infer_results = sm_infer,
    .default_op = sm_default,
    .reference = sm_reference,
    .reference_name = "nx_ref_softmax",
    .tolerance = sm_tolerance,
};

static int ln_read(const nx_macro_op *op, nx_layernorm_params *p, nx_norm_tensor *in, nx_error *err) {
    for (uint32_t i = 0; i < op->n_operands && i < NX_OP_MAX_TENSORS; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    return nx_layernorm_read(&op->attrs, in, op->n_operands, p, err);
}

static int ln_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_layernorm_params p;
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    if (ln_read(op, &p, in, err) != 0) return -1;
    for (uint32_t j = 0; j < 3; j++) {
        uint32_t nd;
        uint64_t shape[NX_KERNEL_MAX_DIMS];
        nx_layernorm_result(&p, &in[0], j, &nd, shape);
        char name[16];
        snprintf(name, sizeof name, "out%u", j);
        if (nx_macro_op_add_result(op, names && names[j] ? names[j] : name, p.dtype, nd, shape, err) != 0) return -1;
    }
    return 0;
}

static int ln_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_layernorm_params p;
    nx_norm_tensor t[NX_OP_MAX_TENSORS];
    if (ln_read(op, &p, t, err) != 0) return -1;
    return nx_ref_layernorm(&p, in[0], in[1], p.bias ? in[2] : NULL, out, err);
}

static int ln_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t x[2] = {512, 2048}, g[1] = {2048};
    if (nx_macro_op_add_operand(op, "X", NX_DT_BF16, 2, x, err) != 0 ||
        nx_macro_op_add_operand(op, "Scale", NX_DT_BF16, 1, g, err) != 0)
        return -1;
    return nx_macro_op_add_operand(op, "B", NX_DT_BF16, 1, g, err);
}

static int ln_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    nx_layernorm_params p;
    nx_norm_tensor t[NX_OP_MAX_TENSORS];
    memset(out, 0, sizeof *out);
    if (ln_read(op, &p, t, err) != 0) return -1;
    const double u = 0x1p-24, H = (double)p.H;
    out->rel = out->abs = nx_dtype_epsilon(p.dtype) + (result == 1 ? 4 * H + 4 : 8 * H + 8) * u;
    snprintf(out->text, sizeof out->text, "eps(%s) + (%s) u, H=%llu", nx_dtype_name(p.dtype),
             result == 1 ? "4H+4" : "8H+8", (unsigned long long)p.H);
    return 0;
}

static const nx_op_rules nx_rules_layernorm = {
    .attrs = nx_layernorm_attrs,
    .infer_results = ln_infer,
    .default_op = ln_default,
    .reference = ln_reference,
    .reference_name = "nx_ref_layernorm",
    .tolerance = ln_tolerance,
};

/* The composites: rmsnorm, softmax, layernorm (kernels/norms/). */
#define NORM(key, fn, rules_, via_) \
    {.name = (key), .config = NX_CONFIG(NX_LEAF(fn), NX_OPERANDS_ALL, NULL, false), .rules = (rules_), .via = (via_)}
static const nx_composite norms_composites[] = {
    NORM("rmsnorm", nx_rmsnorm, &nx_rules_rmsnorm, "nxsim run rmsnorm (attributes eps, quant, fp8_max, residual)"),
    NORM("softmax", nx_softmax, &nx_rules_softmax, "nxsim run softmax (ONNX Softmax, attribute axis)"),
    NORM("layernorm", nx_layernorm, &nx_rules_layernorm,
         "nxsim run layernorm (ONNX LayerNormalization, attributes axis, epsilon, bias)"),
};
#undef NORM

const nx_family nx_family_norms = {.name = "norms", NX_FAMILY_COMPOSITES(norms_composites)};
