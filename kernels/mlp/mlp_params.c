/* The mlp composite's operand and attribute rules (kernels/mlp/mlp.h): one
 * home for what the rules check on an op and the kernel on a call. */
#include <stdio.h>
#include <string.h>

#include "mlp.h"

const char *const nx_mlp_attrs[] = {"act", "norm", "eps", "residual", "plan", NULL};

/* A string attribute that must be one of names[0 .. n): its index. */
static int read_choice(const nx_attrs *attrs, const char *name, const char *const *names, int n, int *out,
                       nx_error *err) {
    const nx_value *v = nx_attrs_get_given(attrs, name);
    char list[128] = "";
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
    *out = 0;
    if (!v) return 0;
    if (v->kind != NX_VAL_STRING) return nx_fail(err, "attribute %s: must be a string, one of %s", name, list);
    for (int i = 0; i < n; i++)
        if (strcmp(v->s, names[i]) == 0) {
            *out = i;
            return 0;
        }
    nx_quoted q;
    return nx_fail(err, "attribute %s: '%s' is not one of %s", name, nx_quote(&q, v->s, 64), list);
}

static void shape_text(char *buf, size_t len, const nx_norm_tensor *t) {
    size_t at = (size_t)snprintf(buf, len, "[");
    for (uint32_t d = 0; d < t->ndims && at < len; d++)
        at += (size_t)snprintf(buf + at, len - at, "%s%llu", d ? ", " : "", (unsigned long long)t->shape[d]);
    if (at < len) snprintf(buf + at, len - at, "]");
}

static int want_shape(const nx_norm_tensor *t, uint32_t i, uint32_t nd, const uint64_t *s, const char *what,
                      nx_error *err) {
    int ok = t->ndims == nd;
    for (uint32_t d = 0; ok && d < nd; d++) ok = t->shape[d] == s[d];
    if (ok) return 0;
    char got[96];
    shape_text(got, sizeof got, t);
    return nx_fail(err, "operand %u (%s): shape %s, must be %s", i, t->name, got, what);
}

int nx_mlp_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_mlp_params *p, nx_error *err) {
    static const char *const acts[] = {"silu", "gelu", "gelu_tanh", "relu"};
    static const nx_act_func act_fn[] = {NX_ACT_SILU, NX_ACT_GELU, NX_ACT_GELU_TANH, NX_ACT_RELU};
    static const char *const norms[] = {"none", "rms"};
    static const char *const plans[] = {"auto", "decode", "prefill"};
    memset(p, 0, sizeof *p);
    int a, nm, pl;
    if (read_choice(attrs, "act", acts, 4, &a, err) != 0 || read_choice(attrs, "norm", norms, 2, &nm, err) != 0 ||
        read_choice(attrs, "plan", plans, 3, &pl, err) != 0 ||
        nx_norm_attr_number(attrs, "eps", 1e-6, &p->eps, err) != 0 ||
        nx_norm_attr_bool(attrs, "residual", 0, &p->residual, err) != 0)
        return -1;
    if (p->eps < 0) return nx_fail(err, "attribute eps: %g is negative, must be >= 0", p->eps);
    p->act = act_fn[a];
    p->norm = nm;
    p->plan = (nx_mlp_plan)pl;
    p->n_operands = 4 + (uint32_t)p->norm + (uint32_t)p->residual;
    p->n_results = 1 + (uint32_t)p->residual;
    p->gamma_operand = p->norm ? 4 : 0;
    p->r_operand = p->residual ? 4 + (uint32_t)p->norm : 0;
    if (n_in != p->n_operands)
        return nx_fail(err, "mlp: %u operands given, norm=%s residual=%s takes %u (x, w_gate, w_up, w_down%s%s)", n_in,
                       norms[nm], p->residual ? "true" : "false", p->n_operands, p->norm ? ", gamma" : "",
                       p->residual ? ", r" : "");
    const nx_norm_tensor *x = &in[0];
    if (x->ndims != 2 && x->ndims != 3)
        return nx_fail(err, "operand 0 (%s): rank %u, must be 2 ([T, H]) or 3 ([B, S, H])", x->name, x->ndims);
    if (nx_norm_float_operand(x, 0, "mlp", err) != 0) return -1;
    p->dtype = x->dtype;
    /* the weights take x's dtype (the PE's operands); gamma and r any float */
    for (uint32_t i = 1; i < n_in; i++)
        if (i >= 4 && nx_norm_float_operand(&in[i], i, "mlp", err) != 0) return -1;
    p->gamma_dtype = p->norm ? in[p->gamma_operand].dtype : x->dtype;
    p->r_dtype = p->residual ? in[p->r_operand].dtype : x->dtype;
    for (uint32_t i = 1; i < 4; i++)
        if (in[i].dtype != x->dtype) {
            const char *d = nx_dtype_name(in[i].dtype);
            return nx_fail(err, "operand %u (%s): dtype %s, must be x's %s", i, in[i].name, d ? d : "?",
                           nx_dtype_name(x->dtype));
        }
    p->H = x->shape[x->ndims - 1];
    p->T = 1;
    for (uint32_t d = 0; d + 1 < x->ndims; d++) p->T *= x->shape[d];
    if (p->T == 0 || p->H == 0) return nx_fail(err, "operand 0 (%s): an empty dim, mlp needs T, H >= 1", x->name);
    const nx_norm_tensor *wg = &in[1];
    if (wg->ndims != 2 || wg->shape[0] != p->H || wg->shape[1] == 0) {
        char got[96];
        shape_text(got, sizeof got, wg);
        return nx_fail(err, "operand 1 (%s): shape %s, must be [H, I] with H = %llu (x's last dim) and I >= 1",
                       wg->name, got, (unsigned long long)p->H);
    }
    p->inter = wg->shape[1];
    char what[192];
    snprintf(what, sizeof what, "[%llu, %llu] (w_gate's)", (unsigned long long)p->H, (unsigned long long)p->inter);
    const uint64_t hi[2] = {p->H, p->inter}, ih[2] = {p->inter, p->H};
    if (want_shape(&in[2], 2, 2, hi, what, err) != 0) return -1;
    snprintf(what, sizeof what, "[%llu, %llu] ([I, H])", (unsigned long long)p->inter, (unsigned long long)p->H);
    if (want_shape(&in[3], 3, 2, ih, what, err) != 0) return -1;
    if (p->norm) {
        snprintf(what, sizeof what, "[%llu] ([H])", (unsigned long long)p->H);
        if (want_shape(&in[p->gamma_operand], p->gamma_operand, 1, &p->H, what, err) != 0) return -1;
    }
    if (p->residual) {
        char xs[96];
        shape_text(xs, sizeof xs, x);
        snprintf(what, sizeof what, "%s (x's)", xs);
        if (want_shape(&in[p->r_operand], p->r_operand, x->ndims, x->shape, what, err) != 0) return -1;
    }
    return 0;
}

nx_mlp_plan nx_mlp_plan_of(const nx_mlp_params *p, const nx_geometry *g) {
    if (p->plan != NX_MLP_PLAN_AUTO) return p->plan;
    const uint64_t tmax = g && g->pe_cols ? g->pe_cols : 128;
    return p->T <= tmax ? NX_MLP_PLAN_DECODE : NX_MLP_PLAN_PREFILL;
}
