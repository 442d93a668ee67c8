/* decoder_layer's operand and attribute rules (kernels/layer/layer.h),
 * shared by the registry's rules and the kernel: one home for every
 * refusal's text. */
#include <stdio.h>
#include <string.h>

#include "layer.h"

const char *const nx_layer_attrs[] = {"n_q_heads", "n_kv_heads", "head_dim", "eps", "tp", NULL};


static unsigned long long ull(uint64_t v) { return (unsigned long long)v; }

/* The head attributes: n_q_heads (required), n_kv_heads (n_q_heads),
 * head_dim (0: from w_qkv's width), each positive when given. */
static int read_heads(const nx_attrs *attrs, nx_layer_params *p, nx_error *err) {
    static const char *const names[3] = {"n_q_heads", "n_kv_heads", "head_dim"};
    uint64_t *out[3] = {&p->nq, &p->nkv, &p->d};
    for (int i = 0; i < 3; i++) {
        int64_t v;
        if (nx_norm_attr_int(attrs, names[i], i == 1 ? (int64_t)p->nq : 0, &v, err) != 0) return -1;
        if (v <= 0 && nx_attrs_get_given(attrs, names[i]))
            return nx_fail(err, "attribute %s: %lld must be positive", names[i], (long long)v);
        *out[i] = (uint64_t)(v > 0 ? v : 0);
    }
    return 0;
}

/* Operand i must have rank nd and shape want[0 .. nd) (described by `what`). */
static int shaped(const nx_norm_tensor *t, uint32_t i, uint32_t nd, const uint64_t *want, const char *what,
                  nx_error *err) {
    int ok = t->ndims == nd;
    for (uint32_t j = 0; ok && j < nd; j++) ok = t->shape[j] == want[j];
    if (ok) return 0;
    char s[96] = "";
    for (uint32_t j = 0; j < nd; j++) snprintf(s + strlen(s), sizeof s - strlen(s), "%s%llu", j ? ", " : "", ull(want[j]));
    return nx_fail(err, "operand %u (%s): must be %s = [%s]", i, t->name, what, s);
}

int nx_layer_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_layer_params *p, nx_error *err) {
    memset(p, 0, sizeof *p);
    if (n_in != NX_LAYER_OPERANDS)
        return nx_fail(err,
                       "decoder_layer takes 13 operands (x, gamma_attn, w_qkv, w_o, gamma_mlp, w_gate, w_up, w_down, "
                       "cos, sin, k_cache, v_cache, lengths), the op has %u",
                       n_in);
    if (nx_norm_attr_number(attrs, "eps", 1e-6, &p->eps, err) != 0) return -1;
    if (p->eps < 0) return nx_fail(err, "attribute eps: %g must be >= 0", p->eps);
    int64_t tp;
    if (nx_norm_attr_int(attrs, "tp", 1, &tp, err) != 0) return -1;
    if (tp != 1 && tp != 2) return nx_fail(err, "attribute tp: %lld must be 1 or 2 (the VNC grid's cores)", (long long)tp);
    p->tp = (uint32_t)tp;
    if (!nx_attrs_get_given(attrs, "n_q_heads"))
        return nx_fail(err, "attribute n_q_heads: is missing (decoder_layer needs the number of query heads)");
    if (read_heads(attrs, p, err) != 0) return -1;
    if (p->nq % p->nkv)
        return nx_fail(err, "attribute n_q_heads: %llu is not a multiple of n_kv_heads = %llu", ull(p->nq), ull(p->nkv));
    if (p->nkv % p->tp)
        return nx_fail(err, "attribute tp: 2 splits the heads over the cores, n_kv_heads = %llu is not divisible by 2",
                       ull(p->nkv));
    for (uint32_t i = 0; i < NX_LAYER_OPERANDS; i++) {
        if (i == 12) continue;
        if (nx_norm_float_operand(&in[i], i, "decoder_layer", err) != 0) return -1;
        if (i > 0 && in[i].dtype != in[0].dtype)
            return nx_fail(err, "operand %u (%s): dtype %s differs from x's %s (one dtype for the layer)", i, in[i].name,
                           nx_dtype_name(in[i].dtype), nx_dtype_name(in[0].dtype));
    }
    const nx_norm_tensor *x = &in[0];
    if (x->ndims != 3) return nx_fail(err, "operand 0 (%s): rank %u, decoder_layer takes x [B, S, H]", x->name, x->ndims);
    p->dtype = x->dtype;
    p->B = x->shape[0], p->S = x->shape[1], p->H = x->shape[2];
    if (p->B == 0 || p->S == 0 || p->H == 0) return nx_fail(err, "operand 0 (%s): x has an empty dim", x->name);
    const uint64_t heads = p->nq + 2 * p->nkv;
    if (in[2].ndims != 2 || in[2].shape[0] != p->H)
        return nx_fail(err, "operand 2 (%s): w_qkv must be [H, (n_q_heads + 2 n_kv_heads) head_dim] with H = %llu",
                       in[2].name, ull(p->H));
    if (p->d == 0) {
        if (in[2].shape[1] % heads)
            return nx_fail(err, "operand 2 (%s): width %llu is not a multiple of n_q_heads + 2 n_kv_heads = %llu",
                           in[2].name, ull(in[2].shape[1]), ull(heads));
        p->d = in[2].shape[1] / heads;
    }
    if (p->d % 2) return nx_fail(err, "attribute head_dim: %llu must be even (rope rotates its halves)", ull(p->d));
    if (in[7].ndims != 2)
        return nx_fail(err, "operand 7 (%s): rank %u, w_down must be [I, H]", in[7].name, in[7].ndims);
    p->inter = in[7].shape[0];
    if (in[10].ndims != 4) return nx_fail(err, "operand 10 (%s): rank %u, k_cache must be [B, n_kv_heads, S_max, head_dim]", in[10].name, in[10].ndims);
    p->S_max = in[10].shape[2];
    if (p->inter % p->tp)
        return nx_fail(err, "operand 7 (%s): I = %llu is not divisible by tp = 2", in[7].name, ull(p->inter));
    const uint64_t v_h[1] = {p->H}, wqkv[2] = {p->H, heads * p->d}, wo[2] = {p->nq * p->d, p->H},
                   wgu[2] = {p->H, p->inter}, wd[2] = {p->inter, p->H}, cs[3] = {p->B, p->S, p->d / 2},
                   kv[4] = {p->B, p->nkv, p->S_max, p->d}, len[1] = {p->B};
    if (shaped(&in[1], 1, 1, v_h, "[H]", err) != 0 ||
        shaped(&in[2], 2, 2, wqkv, "[H, (n_q_heads + 2 n_kv_heads) head_dim]", err) != 0 ||
        shaped(&in[3], 3, 2, wo, "[n_q_heads head_dim, H]", err) != 0 || shaped(&in[4], 4, 1, v_h, "[H]", err) != 0 ||
        shaped(&in[5], 5, 2, wgu, "[H, I]", err) != 0 || shaped(&in[6], 6, 2, wgu, "[H, I]", err) != 0 ||
        shaped(&in[7], 7, 2, wd, "[I, H]", err) != 0 || shaped(&in[8], 8, 3, cs, "[B, S, head_dim / 2]", err) != 0 ||
        shaped(&in[9], 9, 3, cs, "[B, S, head_dim / 2]", err) != 0 ||
        shaped(&in[10], 10, 4, kv, "[B, n_kv_heads, S_max, head_dim]", err) != 0 ||
        shaped(&in[11], 11, 4, kv, "[B, n_kv_heads, S_max, head_dim]", err) != 0 ||
        shaped(&in[12], 12, 1, len, "[B]", err) != 0)
        return -1;
    if (in[12].dtype != NX_DT_INT32)
        return nx_fail(err, "operand 12 (%s): dtype %s, lengths must be int32", in[12].name, nx_dtype_name(in[12].dtype));
    if (p->S > p->S_max)
        return nx_fail(err, "operand 0 (%s): S = %llu new tokens beyond the caches' S_max = %llu", x->name, ull(p->S),
                       ull(p->S_max));
    return 0;
}
