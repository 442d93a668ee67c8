/* router_topk's operand and attribute rules (kernels/moe/router.h): one
 * home for what the rules check on an op and the kernel on a call. */
#include <string.h>

#include "router.h"

const char *const nx_router_attrs[] = {"k", "act", "pre_norm", "norm_topk", "bias", NULL};

static int read_act(const nx_attrs *attrs, nx_router_act *out, nx_error *err) {
    const nx_value *v = nx_attrs_get_given(attrs, "act");
    *out = NX_ROUTER_SOFTMAX;
    if (!v) return 0;
    if (v->kind == NX_VAL_STRING && strcmp(v->s, "softmax") == 0) return 0;
    if (v->kind == NX_VAL_STRING && strcmp(v->s, "sigmoid") == 0) {
        *out = NX_ROUTER_SIGMOID;
        return 0;
    }
    if (v->kind == NX_VAL_STRING) {
        nx_quoted q;
        return nx_fail(err, "attribute act: '%s' is not one of softmax, sigmoid", nx_quote(&q, v->s, 64));
    }
    return nx_fail(err, "attribute act: must be a string, softmax or sigmoid");
}

static int want_rank2(const nx_norm_tensor *t, uint32_t i, const char *what, nx_error *err) {
    if (t->ndims == 2) return 0;
    return nx_fail(err, "operand %u (%s): rank %u, must be %s", i, t->name, t->ndims, what);
}

int nx_router_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_router_params *p,
                   nx_error *err) {
    memset(p, 0, sizeof *p);
    int64_t k;
    if (nx_norm_attr_bool(attrs, "bias", 0, &p->bias, err) != 0 ||
        nx_norm_attr_bool(attrs, "pre_norm", 1, &p->pre_norm, err) != 0 ||
        nx_norm_attr_bool(attrs, "norm_topk", 0, &p->norm_topk, err) != 0 || read_act(attrs, &p->act, err) != 0)
        return -1;
    if (!nx_attrs_get_given(attrs, "k")) return nx_fail(err, "attribute k: required (the experts per token, 1 to 16)");
    if (nx_norm_attr_int(attrs, "k", 0, &k, err) != 0) return -1;
    p->n_operands = 2 + (uint32_t)p->bias;
    if (n_in != p->n_operands)
        return nx_fail(err, "router_topk takes %u operands (x, w%s) with bias=%s, the op has %u", p->n_operands,
                       p->bias ? ", bias" : "", p->bias ? "true" : "false", n_in);
    const nx_norm_tensor *x = &in[0], *w = &in[1];
    if (nx_norm_float_operand(x, 0, "router_topk", err) != 0 || want_rank2(x, 0, "[T, H]", err) != 0 ||
        want_rank2(w, 1, "[H, E]", err) != 0)
        return -1;
    p->dtype = x->dtype;
    p->T = x->shape[0], p->H = x->shape[1];
    if (w->dtype != p->dtype)
        return nx_fail(err, "operand 1 (%s): dtype %s differs from operand 0 (%s)'s %s", w->name,
                       nx_dtype_name(w->dtype), x->name, nx_dtype_name(p->dtype));
    if (w->shape[0] != p->H)
        return nx_fail(err, "operand 1 (%s): dim 0 is %llu, must be operand 0 (%s)'s H = %llu", w->name,
                       (unsigned long long)w->shape[0], x->name, (unsigned long long)p->H);
    p->E = w->shape[1];
    if (p->T == 0 || p->H == 0 || p->E == 0)
        return nx_fail(err, "operand %u (%s): a dim is 0 (T = %llu, H = %llu, E = %llu)", p->E == 0 ? 1 : 0,
                       p->E == 0 ? w->name : x->name, (unsigned long long)p->T, (unsigned long long)p->H,
                       (unsigned long long)p->E);
    if (p->E > NX_ROUTER_MAX_E)
        return nx_fail(err, "operand 1 (%s): E = %llu experts, router_topk takes at most %d (one PSUM bank of fp32 "
                            "logits per token)",
                       w->name, (unsigned long long)p->E, NX_ROUTER_MAX_E);
    if (p->bias) {
        const nx_norm_tensor *b = &in[2];
        if (nx_norm_float_operand(b, 2, "router_topk", err) != 0) return -1;
        if (b->ndims != 1 || b->shape[0] != p->E)
            return nx_fail(err, "operand 2 (%s): must be [E] = [%llu]", b->name, (unsigned long long)p->E);
        p->bias_dtype = b->dtype;
    }
    if (k < 1) return nx_fail(err, "attribute k: %lld, router_topk selects at least 1 expert", (long long)k);
    if (k > NX_ROUTER_MAX_K)
        return nx_fail(err, "attribute k: %lld is above the limit of %d (two rounds of max8)", (long long)k,
                       NX_ROUTER_MAX_K);
    if ((uint64_t)k > p->E)
        return nx_fail(err, "attribute k: %lld is larger than operand 1 (%s)'s E = %llu experts", (long long)k,
                       w->name, (unsigned long long)p->E);
    p->k = (uint64_t)k;
    return 0;
}
