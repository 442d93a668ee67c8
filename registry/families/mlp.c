/* The mlp family's rules (kernels/mlp/mlp.h):
 * mlp (the dense gated MLP, decode and prefill plans):
 *   results    out (x's shape and dtype) [, x' with residual=true];
 *   reference  nx_ref_mlp (fp32 sgemms, the definition's roundings);
 *   tolerance  both round a = act(G) * U to the dtype from fp32 sums of H
 *              products in different orders, so an element of a near a
 *              rounding boundary may land one unit apart, moving the out
 *              row by eps |a| |Wd|; for operand values of magnitude <= 2
 *              (the default op's and the tests') |h| is about 1.6 rms and
 *              |a| about A = 3.6 H, so: abs = A (8 eps + 16 u sqrt(H I)),
 *              a few such flips and the fp32 sum orders of both
 *              contractions; rel = 4 eps (out's own rounding and the
 *              rms); x' is an fp32 add rounded once in both: exact;
 *   default    x [8, 512] bf16, w_gate and w_up [512, 1024], w_down
 *              [1024, 512], silu (the decode plan on both cores). */
#include "families.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/mlp/mlp.h"
#include "kernels/ref/ref.h"

static int mlp_read_op(const nx_macro_op *op, nx_mlp_params *p, nx_error *err) {
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    for (uint32_t i = 0; i < op->n_operands && i < NX_OP_MAX_TENSORS; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    return nx_mlp_read(&op->attrs, in, op->n_operands, p, err);
}

static int mlp_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_mlp_params p;
    if (mlp_read_op(op, &p, err) != 0) return -1;
    const nx_op_tensor x = op->operands[0];
    if (nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", x.dtype, x.ndims, x.shape, err) != 0) return -1;
    if (!p.residual) return 0;
    return nx_macro_op_add_result(op, names && names[0] && names[1] ? names[1] : "out1", x.dtype, x.ndims, x.shape, err);
}

static int mlp_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_mlp_params p;
    if (mlp_read_op(op, &p, err) != 0) return -1;
    return nx_ref_mlp(&p, in, out, err);
}

static int mlp_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t x[2] = {8, 512}, w[2] = {512, 1024}, wd[2] = {1024, 512};
    if (nx_macro_op_add_operand(op, "x", NX_DT_BF16, 2, x, err) != 0 ||
        nx_macro_op_add_operand(op, "w_gate", NX_DT_BF16, 2, w, err) != 0 ||
        nx_macro_op_add_operand(op, "w_up", NX_DT_BF16, 2, w, err) != 0)
        return -1;
    return nx_macro_op_add_operand(op, "w_down", NX_DT_BF16, 2, wd, err);
}

static int mlp_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    nx_mlp_params p;
    if (mlp_read_op(op, &p, err) != 0) return -1;
    memset(out, 0, sizeof *out);
    if (result == 1) {
        snprintf(out->text, sizeof out->text, "exact");
        return 0;
    }
    const double H = (double)p.H, I = (double)p.inter, eps = nx_dtype_epsilon(p.dtype), A = 3.6 * H;
    out->abs = A * (8.0 * eps + 16.0 * 0x1p-24 * sqrt(H * I));
    out->rel = 4.0 * eps;
    snprintf(out->text, sizeof out->text, "H=%.0f I=%.0f: abs %.3g, 4 x eps(%s)", H, I, out->abs,
             nx_dtype_name(p.dtype));
    return 0;
}

static int mlp_explain(const nx_macro_op *op, const nx_geometry *geo, char *buf, size_t len, nx_error *err) {
    nx_mlp_params p;
    if (mlp_read_op(op, &p, err) != 0) return -1;
    if (nx_mlp_plan_of(&p, geo) == NX_MLP_PLAN_DECODE)
        snprintf(buf, len, "decode plan: T = %llu tokens, weights streamed once, I (gate/up) and H (down) split across "
                           "the cores",
                 (unsigned long long)p.T);
    else
        snprintf(buf, len, "prefill plan: T = %llu tokens split across the cores, each core's in blocks of up to %u",
                 (unsigned long long)p.T, 4 * (geo && geo->pe_cols ? geo->pe_cols : 128));
    return 0;
}

static const nx_op_rules nx_rules_mlp = {
    .attrs = nx_mlp_attrs,
    .infer_results = mlp_infer,
    .default_op = mlp_default,
    .reference = mlp_reference,
    .reference_name = "nx_ref_mlp",
    .tolerance = mlp_tolerance,
    .explain = mlp_explain,
};

/* The composite: the dense MLP on both cores of the VNC grid (kernels/mlp/mlp.c). */
static const nx_composite mlp_composites[] = {
    {.name = "mlp",
     .config = NX_CONFIG(NX_LEAF(nx_mlp), NX_OPERANDS_ALL, &nx_args_attrs, true),
     .rules = &nx_rules_mlp,
     .via = "nxsim run mlp (gated MLP: act silu/gelu/gelu_tanh/relu, fused rms norm and residual; decode and prefill plans)"},
};

const nx_family nx_family_mlp = {.name = "mlp", NX_FAMILY_COMPOSITES(mlp_composites)};
