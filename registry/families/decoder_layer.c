/* The decoder_layer family's rules (kernels/layer/layer.h):
 * decoder_layer (a Llama-style layer composed from the roster kernels):
 *   results    out (x's shape and dtype), k_cache and v_cache (theirs);
 *   reference  nx_ref_decoder_layer (the composition of the roster
 *              references, every intermediate rounded to the dtype);
 *   tolerance  out: kernel and reference round the same intermediates
 *              (q, k, v, P, the attention out, o, h, the normed rows, a,
 *              the mlp out) from fp32 sums in different orders, so an
 *              element near a rounding boundary lands one unit apart and
 *              carries into the later stages; with the default values
 *              (operands of magnitude <= 2, weights scaled by
 *              1/sqrt(fan-in) as a trained layer's are) every stage's
 *              values are of magnitude A = 2, so abs = A (8 eps + 16 u
 *              (sqrt(H) + sqrt(nq d) + sqrt(S_max + S) + sqrt(H) +
 *              sqrt(I))), a unit of eight rounded stages and the fp32 sum
 *              orders of the five contractions; rel = 4 eps; tp 2 sums
 *              the partial o and mlp products of the two cores after
 *              rounding each (two more roundings, inside the eight);
 *              the caches: the new entries are qkv's k and v (abs A (eps
 *              + 16 u sqrt(H)), rel eps), every other entry moved
 *              (tests/test_decoder_layer.c checks those bit for bit);
 *   default    H 256, 4 q heads, 2 kv heads, d 64, I 512, B 1, S 1 (one
 *              decode step) at cache length 100 of S_max 101, bf16, tp 1. */
#include "families.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "isa/rng.h"
#include "kernels/layer/layer.h"
#include "kernels/ref/ref.h"

static int layer_read_op(const nx_macro_op *op, nx_layer_params *p, nx_error *err) {
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    for (uint32_t i = 0; i < op->n_operands && i < NX_OP_MAX_TENSORS; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    return nx_layer_read(&op->attrs, in, op->n_operands, p, err);
}

static int layer_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_layer_params p;
    if (layer_read_op(op, &p, err) != 0) return -1;
    static const char *const dflt[3] = {"out", "k_cache_out", "v_cache_out"};
    static const uint32_t from[3] = {0, 10, 11};
    for (uint32_t j = 0; j < 3; j++) {
        const nx_op_tensor *t = &op->operands[from[j]];
        if (nx_macro_op_add_result(op, names && names[j] ? names[j] : dflt[j], t->dtype, t->ndims, t->shape, err) != 0)
            return -1;
    }
    return 0;
}

static int layer_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_layer_params p;
    if (layer_read_op(op, &p, err) != 0) return -1;
    return nx_ref_decoder_layer(&p, in, out, err);
}

static int layer_default(nx_macro_op *op, nx_error *err) {
    const uint64_t B = 1, S = 1, H = 256, nq = 4, nkv = 2, d = 64, inter = 512, Smax = 101;
    const uint64_t x[3] = {B, S, H}, g[1] = {H}, wqkv[2] = {H, (nq + 2 * nkv) * d}, wo[2] = {nq * d, H},
                   wgu[2] = {H, inter}, wd[2] = {inter, H}, cs[3] = {B, S, d / 2}, kv[4] = {B, nkv, Smax, d}, len[1] = {B};
    const nx_dtype t = NX_DT_BF16;
    if (nx_macro_op_add_operand(op, "x", t, 3, x, err) != 0 || nx_macro_op_add_operand(op, "gamma_attn", t, 1, g, err) != 0 ||
        nx_macro_op_add_operand(op, "w_qkv", t, 2, wqkv, err) != 0 || nx_macro_op_add_operand(op, "w_o", t, 2, wo, err) != 0 ||
        nx_macro_op_add_operand(op, "gamma_mlp", t, 1, g, err) != 0 ||
        nx_macro_op_add_operand(op, "w_gate", t, 2, wgu, err) != 0 || nx_macro_op_add_operand(op, "w_up", t, 2, wgu, err) != 0 ||
        nx_macro_op_add_operand(op, "w_down", t, 2, wd, err) != 0 || nx_macro_op_add_operand(op, "cos", t, 3, cs, err) != 0 ||
        nx_macro_op_add_operand(op, "sin", t, 3, cs, err) != 0 || nx_macro_op_add_operand(op, "k_cache", t, 4, kv, err) != 0 ||
        nx_macro_op_add_operand(op, "v_cache", t, 4, kv, err) != 0 ||
        nx_macro_op_add_operand(op, "lengths", NX_DT_INT32, 1, len, err) != 0)
        return -1;
    nx_value v = nx_value_int((int64_t)nq), w = nx_value_int((int64_t)nkv), hd = nx_value_int((int64_t)d);
    return nx_attrs_set(&op->attrs, "n_q_heads", &v, err) != 0 || nx_attrs_set(&op->attrs, "n_kv_heads", &w, err) != 0 ||
                   nx_attrs_set(&op->attrs, "head_dim", &hd, err) != 0
               ? -1
               : 0;
}

/* lengths: every row at S_max - S (the cache full after the step: the
 * default op's 100 of S_max 101, a bench's L of S_max = L + S); the weights uniform in [-2, 2) / sqrt(fan-in), the
 * scale of a trained layer's (the tolerance assumes it). */
static int layer_values(const nx_macro_op *op, uint32_t operand, void *data, uint64_t seed) {
    nx_layer_params p;
    if (layer_read_op(op, &p, NULL) != 0) return 0;
    const int weight = operand == 2 || operand == 3 || operand == 5 || operand == 6 || operand == 7;
    if (operand != 12 && !weight) return 0;
    if (!data) return 1;
    uint64_t st = seed ^ (0x1a7e4ull << 20) ^ operand;
    if (operand == 12) {
        int32_t *v = data;
        for (uint64_t b = 0; b < p.B; b++) v[b] = (int32_t)(p.S_max - p.S);
        return 1;
    }
    const nx_op_tensor *t = &op->operands[operand];
    const uint64_t n = t->shape[0] * t->shape[1], es = nx_dtype_size(t->dtype);
    const double scale = 1.0 / sqrt((double)t->shape[0]);
    for (uint64_t e = 0; e < n; e++)
        nx_dtype_store(t->dtype, (uint8_t *)data + e * es, (4.0 * nx_splitmix64_unit(&st) - 2.0) * scale);
    return 1;
}

static int layer_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    nx_layer_params p;
    if (layer_read_op(op, &p, err) != 0) return -1;
    memset(out, 0, sizeof *out);
    const double eps = nx_dtype_epsilon(p.dtype), A = 2.0, u = 0x1p-24;
    if (result > 0) { /* the new entries are qkv's k and v: one rounding of an fp32 sum of H terms */
        out->abs = A * (eps + 16.0 * u * sqrt((double)p.H));
        out->rel = eps;
        snprintf(out->text, sizeof out->text, "new entries: abs %.3g, eps(%s); the others exact", out->abs,
                 nx_dtype_name(p.dtype));
        return 0;
    }
    const double sums = 2.0 * sqrt((double)p.H) + sqrt((double)(p.nq * p.d)) + sqrt((double)(p.S_max + p.S)) +
                        sqrt((double)p.inter);
    out->abs = A * (8.0 * eps + 16.0 * u * sums);
    out->rel = 4.0 * eps;
    snprintf(out->text, sizeof out->text, "H=%llu nq d=%llu S_max+S=%llu I=%llu: abs %.3g, 4 x eps(%s)",
             (unsigned long long)p.H, (unsigned long long)(p.nq * p.d), (unsigned long long)(p.S_max + p.S),
             (unsigned long long)p.inter, out->abs, nx_dtype_name(p.dtype));
    return 0;
}

static int layer_explain(const nx_macro_op *op, const nx_geometry *geo, char *buf, size_t len, nx_error *err) {
    (void)geo;
    nx_layer_params p;
    if (layer_read_op(op, &p, err) != 0) return -1;
    char att[160];
    if (p.S <= NX_LAYER_STEP)
        snprintf(att, sizeof att, "attention_decode (cache writes fused)");
    else
        snprintf(att, sizeof att,
                 "flash attention over %llu cached columns (masked at each row's length) and the %llu new keys "
                 "(causal), the cache writes beside it",
                 (unsigned long long)(p.S_max - p.S), (unsigned long long)p.S);
    snprintf(buf, len,
             "qkv (rms norm + rope fused), %s, o projection (matmul), mlp (residual + rms norm fused), residual; tp %u: %s",
             att, p.tp,
             p.tp == 2 ? "heads and I split over the two cores, all-reduces after w_o and w_down"
                       : "each sub-kernel split over the grid, a barrier between them");
    return 0;
}

/* Decode (S <= NX_LAYER_STEP): k_cache and v_cache (operands 10 and 11)
 * are updated in place: results 1 and 2 share their tensors, the layer
 * writes only the new entries. Prefill keeps results of their own: its flash
 * attention reads the cached columns past L_b (masked at run time) on both
 * cores while the new rows are scattered there, which in one tensor would
 * need a barrier between every core's attention and the writes. */
static int32_t layer_aliases(const nx_macro_op *op, uint32_t result) {
    nx_layer_params p;
    nx_error err;
    if (layer_read_op(op, &p, &err) != 0 || p.S > NX_LAYER_STEP) return -1;
    return result == 1 ? 10 : result == 2 ? 11 : -1;
}

static const nx_op_rules nx_rules_decoder_layer = {
    .attrs = nx_layer_attrs,
    .infer_results = layer_infer,
    .default_op = layer_default,
    .reference = layer_reference,
    .reference_name = "nx_ref_decoder_layer",
    .tolerance = layer_tolerance,
    .default_values = layer_values,
    .explain = layer_explain,
    .aliases = layer_aliases,
};

/* The composite: one decoder layer as one program per core of the VNC grid (kernels/layer/). */
static const nx_composite decoder_layer_composites[] = {
    {.name = "decoder_layer",
     .config = NX_CONFIG(NX_LEAF(nx_decoder_layer), NX_OPERANDS_ALL, &nx_args_attrs, true),
     .rules = &nx_rules_decoder_layer,
     .via = "nxsim run decoder_layer --op layer.json (qkv, attention_decode, w_o, mlp; tp 1 or 2)"},
};

const nx_family nx_family_decoder_layer = {.name = "decoder_layer", NX_FAMILY_COMPOSITES(decoder_layer_composites)};
