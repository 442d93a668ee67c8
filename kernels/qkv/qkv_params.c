/* qkv's operand and attribute rules (kernels/qkv/qkv.h), shared by the
 * registry's rules and the kernel: one home for every refusal's text. */
#include <stdio.h>
#include <string.h>

#include "qkv.h"

const char *const nx_qkv_attrs[] = {"n_q_heads", "n_kv_heads", "head_dim", "norm", "eps", "layout",
                                    "bias",      "rope",       "plan",     NULL};

/* Attribute `name`: one of the n strings of `names` (default index 0). */
static int read_choice(const nx_attrs *attrs, const char *name, const char *const *names, int n, int *out,
                       nx_error *err) {
    const nx_value *v = nx_attrs_get_given(attrs, name);
    *out = 0;
    if (!v) return 0;
    char list[96] = "";
    for (int i = 0; i < n; i++) {
        if (v->kind == NX_VAL_STRING && strcmp(v->s, names[i]) == 0) {
            *out = i;
            return 0;
        }
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
    }
    if (v->kind == NX_VAL_STRING) {
        nx_quoted q;
        return nx_fail(err, "attribute %s: '%s' is not one of %s", name, nx_quote(&q, v->s, 64), list);
    }
    return nx_fail(err, "attribute %s: must be a string, one of %s", name, list);
}

/* A positive INT attribute; dflt 0 means required unless *given is NULL. */
static int read_count(const nx_attrs *attrs, const char *name, int64_t dflt, uint64_t *out, nx_error *err) {
    int64_t v;
    if (nx_norm_attr_int(attrs, name, dflt, &v, err) != 0) return -1;
    if (v <= 0 && nx_attrs_get_given(attrs, name))
        return nx_fail(err, "attribute %s: %lld must be positive", name, (long long)v);
    *out = (uint64_t)(v > 0 ? v : 0);
    return 0;
}

static int read_attrs(const nx_attrs *attrs, nx_qkv_params *p, nx_error *err) {
    static const char *const norms[2] = {"rms", "none"}, *const layouts[2] = {"bsd", "heads"},
                             *const plans[3] = {"auto", "decode", "prefill"};
    int norm, layout, plan;
    if (read_choice(attrs, "norm", norms, 2, &norm, err) != 0 ||
        read_choice(attrs, "layout", layouts, 2, &layout, err) != 0 ||
        read_choice(attrs, "plan", plans, 3, &plan, err) != 0 ||
        nx_norm_attr_number(attrs, "eps", 1e-6, &p->eps, err) != 0 ||
        nx_norm_attr_bool(attrs, "bias", 0, &p->bias, err) != 0 ||
        nx_norm_attr_bool(attrs, "rope", 0, &p->rope, err) != 0)
        return -1;
    if (p->eps < 0) return nx_fail(err, "attribute eps: %g must be >= 0", p->eps);
    p->norm = norm == 0;
    p->heads = layout == 1;
    p->plan = (nx_qkv_plan)plan;
    if (!nx_attrs_get_given(attrs, "n_q_heads"))
        return nx_fail(err, "attribute n_q_heads: is missing (qkv needs the number of query heads)");
    if (read_count(attrs, "n_q_heads", 0, &p->nq, err) != 0 ||
        read_count(attrs, "n_kv_heads", (int64_t)p->nq, &p->nkv, err) != 0 ||
        read_count(attrs, "head_dim", 0, &p->d, err) != 0)
        return -1;
    if (p->nq % p->nkv)
        return nx_fail(err, "attribute n_q_heads: %llu is not a multiple of n_kv_heads = %llu",
                       (unsigned long long)p->nq, (unsigned long long)p->nkv);
    return 0;
}

/* Operand i, when present, is a vector [len] of fp32 or bf16. */
static int vector_operand(const nx_norm_tensor *t, uint32_t i, const char *what, uint64_t len, nx_error *err) {
    if (nx_norm_float_operand(t, i, "qkv", err) != 0) return -1;
    if (t->ndims != 1 || t->shape[0] != len)
        return nx_fail(err, "operand %u (%s): %s must be [%llu]", i, t->name, what, (unsigned long long)len);
    return 0;
}

/* bias and rope not given: what the operand count says (as ONNX
 * LayerNormalization's bias follows its third input), with norm's flag as
 * read: 1 operand beyond x, w [, gamma] is the bias, 2 are cos and sin, 3
 * all three. Given flags are kept (their refusal names the count). */
static void infer_flags(const nx_attrs *attrs, uint32_t n_in, nx_qkv_params *p) {
    const int bias_given = nx_attrs_get_given(attrs, "bias") != NULL, rope_given = nx_attrs_get_given(attrs, "rope") != NULL;
    const int64_t extra = (int64_t)n_in - 2 - p->norm;
    if (bias_given && rope_given) return;
    if (!bias_given && !rope_given) {
        if (extra >= 0 && extra <= 3) p->bias = (int)(extra & 1), p->rope = extra >= 2;
    } else if (!bias_given) {
        if (extra - 2 * p->rope == 0 || extra - 2 * p->rope == 1) p->bias = (int)(extra - 2 * p->rope);
    } else if (extra - p->bias == 0 || extra - p->bias == 2) {
        p->rope = extra - p->bias == 2;
    }
}

int nx_qkv_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_qkv_params *p, nx_error *err) {
    memset(p, 0, sizeof *p);
    if (read_attrs(attrs, p, err) != 0) return -1;
    infer_flags(attrs, n_in, p);
    p->n_operands = 2 + (uint32_t)p->norm + (uint32_t)p->bias + 2u * (uint32_t)p->rope;
    if (n_in != p->n_operands)
        return nx_fail(err,
                       "qkv with norm=%s bias=%s rope=%s takes %u operands (x, w%s%s%s), the op has %u",
                       p->norm ? "rms" : "none", p->bias ? "true" : "false", p->rope ? "true" : "false",
                       p->n_operands, p->norm ? ", gamma" : "", p->bias ? ", bias" : "",
                       p->rope ? ", cos, sin" : "", n_in);
    const nx_norm_tensor *x = &in[0], *w = &in[1];
    if (nx_norm_float_operand(x, 0, "qkv", err) != 0 || nx_norm_float_operand(w, 1, "qkv", err) != 0) return -1;
    if (x->ndims != 3) return nx_fail(err, "operand 0 (%s): rank %u, qkv takes x [B, S, H]", x->name, x->ndims);
    p->B = x->shape[0], p->S = x->shape[1], p->H = x->shape[2];
    p->dtype = x->dtype;
    if (p->B == 0 || p->S == 0 || p->H == 0) return nx_fail(err, "operand 0 (%s): x has an empty dim", x->name);
    if (w->ndims != 2 || w->shape[0] != p->H)
        return nx_fail(err, "operand 1 (%s): w must be [H, (n_q_heads + 2 n_kv_heads) head_dim] with H = %llu",
                       w->name, (unsigned long long)p->H);
    if (w->dtype != x->dtype)
        return nx_fail(err, "operand 1 (%s): dtype %s differs from x's %s", w->name, nx_dtype_name(w->dtype),
                       nx_dtype_name(x->dtype));
    const uint64_t heads = p->nq + 2 * p->nkv, width = w->shape[1];
    if (p->d == 0) {
        if (width % heads)
            return nx_fail(err,
                           "operand 1 (%s): width %llu is not a multiple of n_q_heads + 2 n_kv_heads = %llu + 2 x "
                           "%llu = %llu",
                           w->name, (unsigned long long)width, (unsigned long long)p->nq,
                           (unsigned long long)p->nkv, (unsigned long long)heads);
        p->d = width / heads;
    }
    p->N = heads * p->d;
    if (width != p->N)
        return nx_fail(err,
                       "operand 1 (%s): width %llu must be (n_q_heads + 2 n_kv_heads) head_dim = (%llu + 2 x %llu) x "
                       "%llu = %llu",
                       w->name, (unsigned long long)width, (unsigned long long)p->nq, (unsigned long long)p->nkv,
                       (unsigned long long)p->d, (unsigned long long)p->N);
    if (p->rope && p->d % 2)
        return nx_fail(err, "attribute head_dim: %llu must be even (rope rotates its halves)",
                       (unsigned long long)p->d);
    uint32_t at = 2;
    if (p->norm) {
        p->gamma_op = at;
        if (vector_operand(&in[at], at, "gamma", p->H, err) != 0) return -1;
        p->gamma_dtype = in[at++].dtype;
    }
    if (p->bias) {
        p->bias_op = at;
        if (vector_operand(&in[at], at, "bias", p->N, err) != 0) return -1;
        p->bias_dtype = in[at++].dtype;
    }
    if (p->rope) {
        const nx_norm_tensor *c = &in[at], *s = &in[at + 1];
        p->cos_op = at;
        if (nx_norm_float_operand(c, at, "qkv", err) != 0) return -1;
        const uint64_t h = p->d / 2;
        int ok = (c->ndims == 2 && c->shape[0] == p->S && c->shape[1] == h) ||
                 (c->ndims == 3 && c->shape[0] == p->B && c->shape[1] == p->S && c->shape[2] == h);
        if (!ok)
            return nx_fail(err, "operand %u (%s): cos must be [%llu, %llu] or [%llu, %llu, %llu] ([S, d/2] or "
                                "[B, S, d/2])",
                           at, c->name, (unsigned long long)p->S, (unsigned long long)h, (unsigned long long)p->B,
                           (unsigned long long)p->S, (unsigned long long)h);
        if (s->ndims != c->ndims || memcmp(s->shape, c->shape, c->ndims * sizeof *c->shape) != 0 ||
            s->dtype != c->dtype)
            return nx_fail(err, "operand %u (%s): sin must have cos's shape and dtype", at + 1, s->name);
        p->cs_dtype = c->dtype;
        p->cs_batched = c->ndims == 3;
    }
    return 0;
}

uint32_t nx_qkv_n_results(const nx_qkv_params *p) { return p->heads ? 3 : 1; }

void nx_qkv_result_shape(const nx_qkv_params *p, uint32_t j, uint32_t *ndims, uint64_t *shape) {
    if (!p->heads) {
        *ndims = 3;
        shape[0] = p->B, shape[1] = p->S, shape[2] = p->N;
        return;
    }
    *ndims = 4;
    shape[0] = p->B, shape[1] = j == 0 ? p->nq : p->nkv, shape[2] = p->S, shape[3] = p->d;
}
