/* The attention_decode family's rules (kernels/attention/decode.h):
 *   results    out (q's dtype and shape), k_cache and v_cache (theirs,
 *              aliased to the operands: updated in place);
 *   reference  nx_ref_attention_decode (a softmax per query row in double,
 *              P rounded to the dtype, kernels/ref/ref.h);
 *   tolerance  out: both sides round P to the dtype (relative eps / 2 per
 *              weight, from different maxima: the kernel's running one),
 *              the fp32 dot products of D terms and the PSUM sums of up to
 *              S_max + s weights (u per term), and the result's rounding:
 *              abs = rel = 4 eps(dtype) + 4 (D + S_max + s) u, u = 2^-24,
 *              relative above |ref| = 1, absolute below (the values are
 *              weighted means of v); the caches: exact (moves);
 *   default    B 2, Hq 8, Hkv 2, s 2, D 64, S_max 256, bf16; lengths drawn in
 *              [0, S_max - s], block tables a shuffled permutation. */
#include "families.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "isa/rng.h"
#include "kernels/attention/decode.h"
#include "kernels/ref/ref.h"

static int dec_read(const nx_macro_op *op, nx_decode_params *p, nx_error *err) {
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    for (uint32_t i = 0; i < op->n_operands && i < NX_OP_MAX_TENSORS; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    return nx_decode_read(&op->attrs, in, op->n_operands, p, err);
}

static int dec_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_decode_params p;
    if (dec_read(op, &p, err) != 0) return -1;
    static const char *const dflt[3] = {"out", "k_cache_out", "v_cache_out"};
    static const uint32_t from[3] = {0, 1, 2};
    for (uint32_t j = 0; j < 3; j++) {
        const nx_op_tensor *t = &op->operands[from[j]];
        if (nx_macro_op_add_result(op, names && names[j] ? names[j] : dflt[j], t->dtype, t->ndims, t->shape, err) != 0)
            return -1;
    }
    return 0;
}

static int dec_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_decode_params p;
    if (dec_read(op, &p, err) != 0) return -1;
    return nx_ref_attention_decode(&p, in, out, err);
}

static int dec_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t q[4] = {2, 8, 2, 64}, kc[4] = {2, 2, 256, 64}, kn[4] = {2, 2, 2, 64}, len[1] = {2};
    if (nx_macro_op_add_operand(op, "q", NX_DT_BF16, 4, q, err) != 0 ||
        nx_macro_op_add_operand(op, "k_cache", NX_DT_BF16, 4, kc, err) != 0 ||
        nx_macro_op_add_operand(op, "v_cache", NX_DT_BF16, 4, kc, err) != 0 ||
        nx_macro_op_add_operand(op, "k_new", NX_DT_BF16, 4, kn, err) != 0 ||
        nx_macro_op_add_operand(op, "v_new", NX_DT_BF16, 4, kn, err) != 0)
        return -1;
    return nx_macro_op_add_operand(op, "lengths", NX_DT_INT32, 1, len, err);
}

/* lengths in [0, S_max - s] (the first row the longest), block tables a
 * shuffled permutation of the blocks (row b takes max_blocks of them). */
static int dec_values(const nx_macro_op *op, uint32_t operand, void *data, uint64_t seed) {
    nx_decode_params p;
    if (dec_read(op, &p, NULL) != 0) return 0;
    if (operand != 5 && !(p.paged && operand == p.bt_operand)) return 0;
    if (!data) return 1;
    uint64_t st = seed ^ (0xdecull << 20) ^ operand;
    int32_t *v = data;
    if (operand == 5) {
        const uint64_t top = p.S_max - p.s;
        for (uint64_t b = 0; b < p.B; b++)
            v[b] = (int32_t)(b == 0 ? top : nx_splitmix64(&st) % (top + 1));
        return 1;
    }
    const uint64_t n = p.B * p.max_blocks;
    for (uint64_t i = 0; i < n; i++) v[i] = (int32_t)(i % p.num_blocks);
    for (uint64_t i = n; i-- > 1;) { /* Fisher-Yates */
        uint64_t j = nx_splitmix64(&st) % (i + 1);
        int32_t t = v[i];
        v[i] = v[j], v[j] = t;
    }
    return 1;
}

static int dec_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    nx_decode_params p;
    memset(out, 0, sizeof *out);
    if (dec_read(op, &p, err) != 0) return -1;
    if (result > 0) {
        snprintf(out->text, sizeof out->text, "exact (cache entries moved)");
        return 0;
    }
    const double n = (double)(p.D + p.S_max + p.s);
    out->abs = out->rel = 4 * nx_dtype_epsilon(p.dtype) + 4 * n * 0x1p-24;
    snprintf(out->text, sizeof out->text, "4 eps(%s) + 4 (D+S_max+s) u, D+S_max+s=%.0f", nx_dtype_name(p.dtype), n);
    return 0;
}

/* k_cache and v_cache are updated in place (results 1 and 2 share the
 * operands' tensors): the kernel writes only the new entries. */
static int32_t dec_aliases(const nx_macro_op *op, uint32_t result) {
    (void)op;
    return result == 1 || result == 2 ? (int32_t)result : -1;
}

static const nx_op_rules nx_rules_attention_decode = {
    .attrs = nx_decode_attrs,
    .infer_results = dec_infer,
    .default_op = dec_default,
    .reference = dec_reference,
    .reference_name = "nx_ref_attention_decode",
    .tolerance = dec_tolerance,
    .default_values = dec_values,
    .aliases = dec_aliases,
};

/* The composite: decode attention against a KV cache (kernels/attention/). */
static const nx_composite attention_decode_composites[] = {
    {.name = "attention_decode",
     .config = NX_CONFIG(NX_LEAF(nx_attention_decode), NX_OPERANDS_ALL, NULL, true),
     .rules = &nx_rules_attention_decode,
     .via = "nxsim run attention_decode (attributes scale, sliding_window, sink, block_size)"},
};

const nx_family nx_family_attention_decode = {.name = "attention_decode",
                                              NX_FAMILY_COMPOSITES(attention_decode_composites)};
