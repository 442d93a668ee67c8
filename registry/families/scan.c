/* The state-space scan family's rules (kernels/scan/scan.h):
 * selective_scan.
 *   results    y [B, C, L] of u's dtype, h_final [B, C, N] fp32;
 *   reference  nx_ref_selective_scan (the sequential recurrence in double);
 *   tolerance  per step the kernel rounds delta' A, exp, delta' u, its
 *              product with Bm, the scan's multiply and add (fp32, u =
 *              2^-24 each): a state carries the relative error of every
 *              factor exp(delta' A) of its memory, at most L of them, and
 *              adds about 2 u a step: (4 L + 8) u for h_final; y adds the
 *              N products with Cm, their sum and the skip term, then one
 *              rounding to its dtype: eps(dtype) + (4 L + N + 8) u.
 *              Relative above 1 and absolute below (values of order 1:
 *              docs/parts/scan.md, "Numerics");
 *   default    u, delta [1, 256, 512] bf16, A [256, 16] fp32, Bm, Cm
 *              [1, 16, 512] bf16, D [256] fp32, skip and delta_softplus
 *              (Mamba's configuration); A = -(n + 1) (S4D-real, Mamba's
 *              initialisation), delta such that softplus(delta) lies in
 *              [0.01, 0.1] (Mamba's dt range) when operands have no file. */
#include "families.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "isa/rng.h"
#include "kernels/ref/ref.h"
#include "kernels/scan/scan.h"

static int sc_read(const nx_macro_op *op, nx_scan_params *p, nx_error *err) {
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    for (uint32_t i = 0; i < op->n_operands && i < NX_OP_MAX_TENSORS; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    return nx_scan_read(&op->attrs, in, op->n_operands, p, err);
}

static int sc_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_scan_params p;
    if (sc_read(op, &p, err) != 0) return -1;
    const uint64_t hf[3] = {p.B, p.C, p.N};
    if (nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", p.dtype, 3, op->operands[0].shape, err) != 0)
        return -1;
    return nx_macro_op_add_result(op, names && names[1] ? names[1] : "out1", NX_DT_FP32, 3, hf, err);
}

static int sc_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_scan_params p;
    if (sc_read(op, &p, err) != 0) return -1;
    return nx_ref_selective_scan(&p, in, out[0], out[1], err);
}

static int sc_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t x[3] = {1, 256, 512}, a[2] = {256, 16}, bm[3] = {1, 16, 512}, d[1] = {256};
    if (nx_macro_op_add_operand(op, "u", NX_DT_BF16, 3, x, err) != 0 ||
        nx_macro_op_add_operand(op, "delta", NX_DT_BF16, 3, x, err) != 0 ||
        nx_macro_op_add_operand(op, "A", NX_DT_FP32, 2, a, err) != 0 ||
        nx_macro_op_add_operand(op, "Bm", NX_DT_BF16, 3, bm, err) != 0 ||
        nx_macro_op_add_operand(op, "Cm", NX_DT_BF16, 3, bm, err) != 0 ||
        nx_macro_op_add_operand(op, "D", NX_DT_FP32, 1, d, err) != 0)
        return -1;
    nx_value t = nx_value_bool(1), sp = nx_value_bool(1); /* nx_attrs_set moves the value */
    if (nx_attrs_set(&op->attrs, "skip", &t, err) != 0) return -1;
    return nx_attrs_set(&op->attrs, "delta_softplus", &sp, err);
}

static int sc_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    nx_scan_params p;
    memset(out, 0, sizeof *out);
    if (sc_read(op, &p, err) != 0) return -1;
    const double u = 0x1p-24, L = (double)p.L, N = (double)p.N;
    if (result == 1) {
        out->rel = out->abs = (4 * L + 8) * u;
        snprintf(out->text, sizeof out->text, "(4L+8) u, L=%llu", (unsigned long long)p.L);
    } else {
        out->rel = out->abs = nx_dtype_epsilon(p.dtype) + (4 * L + N + 8) * u;
        snprintf(out->text, sizeof out->text, "eps(%s) + (4L+N+8) u, L=%llu, N=%llu", nx_dtype_name(p.dtype),
                 (unsigned long long)p.L, (unsigned long long)p.N);
    }
    return 0;
}

static void put_f(nx_dtype dt, uint8_t *data, uint64_t i, double v) {
    nx_dtype_store(dt, data + i * nx_dtype_size(dt), v);
}

/* delta (operand 1) and A (operand 2) take values a Mamba layer has; the
 * others stay pseudo-random in [-1, 1). */
static int sc_values(const nx_macro_op *op, uint32_t operand, void *data, uint64_t seed) {
    nx_scan_params p;
    nx_error err;
    if ((operand != 1 && operand != 2) || sc_read(op, &p, &err) != 0) return 0;
    if (!data) return 1;
    if (operand == 2) {
        for (uint64_t c = 0; c < p.C; c++)
            for (uint64_t n = 0; n < p.N; n++) put_f(p.a_dtype, data, c * p.N + n, -(double)(n + 1));
        return 1;
    }
    uint64_t s = seed ^ 0x55CA11ull;
    /* softplus^-1 of [0.01, 0.1]: [-4.6, -2.25] */
    const double lo = p.delta_softplus ? -4.6 : 0.01, hi = p.delta_softplus ? -2.25 : 0.1;
    for (uint64_t i = 0; i < p.B * p.C * p.L; i++) put_f(p.dtype, data, i, lo + (hi - lo) * nx_splitmix64_unit(&s));
    return 1;
}

static int sc_explain(const nx_macro_op *op, const nx_geometry *geo, char *buf, size_t len, nx_error *err) {
    nx_scan_params p;
    nx_scan_plan pl;
    if (sc_read(op, &p, err) != 0 || nx_scan_plan_make(&p, geo, geo->cores ? geo->cores : 1,
                                                       op->operands[3].name, &pl, err) != 0)
        return -1;
    snprintf(buf, len, "sequence tiles of %llu, up to %llu channel tiles per core, %llu bytes per partition",
             (unsigned long long)pl.T, (unsigned long long)pl.ct_max, (unsigned long long)pl.bytes);
    return 0;
}

static const nx_op_rules nx_rules_selective_scan = {
    .attrs = nx_scan_attrs,
    .infer_results = sc_infer,
    .default_op = sc_default,
    .reference = sc_reference,
    .reference_name = "nx_ref_selective_scan",
    .tolerance = sc_tolerance,
    .default_values = sc_values,
    .explain = sc_explain,
};

/* The composite: `nxsim run selective_scan`, on the VNC(2) grid (the
 * (batch, channel) rows split over the cores). */
static const nx_composite scan_composites[] = {
    {.name = "selective_scan",
     .config = NX_CONFIG(NX_LEAF(nx_selective_scan), NX_OPERANDS_ALL, NULL, true),
     .rules = &nx_rules_selective_scan,
     .via = "nxsim run selective_scan (attributes delta_softplus, skip, initial_state)"},
};

const nx_family nx_family_scan = {.name = "scan", NX_FAMILY_COMPOSITES(scan_composites)};
