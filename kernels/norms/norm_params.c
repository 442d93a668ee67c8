/* The norms' operand and attribute rules (kernels/norms/norms.h): one home
 * for what the rules check on an op and the kernels check on a call. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "norms.h"

const char *const nx_rmsnorm_attrs[] = {"eps", "quant", "fp8_max", "residual", NULL};
const char *const nx_softmax_attrs[] = {"axis", NULL};
const char *const nx_layernorm_attrs[] = {"axis", "epsilon", "bias", "stash_type", NULL};

int nx_norm_attr_number(const nx_attrs *attrs, const char *name, double dflt, double *out, nx_error *err) {
    const nx_value *v = nx_attrs_get_given(attrs, name);
    *out = dflt;
    if (!v) return 0;
    if (v->kind == NX_VAL_FLOAT) *out = v->f;
    else if (v->kind == NX_VAL_INT) *out = (double)v->i;
    else return nx_fail(err, "attribute %s: must be a number", name);
    if (!isfinite(*out)) return nx_fail(err, "attribute %s: must be finite", name);
    return 0;
}

int nx_norm_attr_bool(const nx_attrs *attrs, const char *name, int dflt, int *out, nx_error *err) {
    const nx_value *v = nx_attrs_get_given(attrs, name);
    *out = dflt;
    if (!v) return 0;
    if ((v->kind == NX_VAL_BOOL || v->kind == NX_VAL_INT) && (v->i == 0 || v->i == 1)) {
        *out = (int)v->i;
        return 0;
    }
    return nx_fail(err, "attribute %s: must be true or false (or 0 / 1)", name);
}

int nx_norm_attr_int(const nx_attrs *attrs, const char *name, int64_t dflt, int64_t *out, nx_error *err) {
    const nx_value *v = nx_attrs_get_given(attrs, name);
    *out = dflt;
    if (!v) return 0;
    if (v->kind != NX_VAL_INT) return nx_fail(err, "attribute %s: must be an integer", name);
    *out = v->i;
    return 0;
}

static int read_quant(const nx_attrs *attrs, nx_rmsnorm_quant *out, nx_error *err) {
    static const char *const names[3] = {"none", "row", "static"};
    const nx_value *v = nx_attrs_get_given(attrs, "quant");
    *out = NX_RMSNORM_QUANT_NONE;
    if (!v) return 0;
    if (v->kind == NX_VAL_STRING)
        for (int i = 0; i < 3; i++)
            if (strcmp(v->s, names[i]) == 0) {
                *out = (nx_rmsnorm_quant)i;
                return 0;
            }
    if (v->kind == NX_VAL_STRING) {
        nx_quoted q;
        return nx_fail(err, "attribute quant: '%s' is not one of none, row, static", nx_quote(&q, v->s, 64));
    }
    return nx_fail(err, "attribute quant: must be a string, one of none, row, static");
}

int nx_norm_float_operand(const nx_norm_tensor *t, uint32_t i, const char *what, nx_error *err) {
    if (t->dtype == NX_DT_FP32 || t->dtype == NX_DT_BF16) return 0;
    const char *n = nx_dtype_name(t->dtype);
    return nx_fail(err, "operand %u (%s): dtype %s, %s takes fp32 or bf16", i, t->name, n ? n : "?", what);
}

int nx_norm_attr_axis(const nx_attrs *attrs, const char *name, int64_t dflt, uint32_t rank, uint32_t *out,
                      nx_error *err) {
    int64_t a;
    if (nx_norm_attr_int(attrs, name, dflt, &a, err) != 0) return -1;
    if (a < -(int64_t)rank || a >= (int64_t)rank)
        return nx_fail(err, "attribute %s: %lld is out of range [%d, %u) for rank %u", name, (long long)a,
                       -(int)rank, rank, rank);
    *out = (uint32_t)(a < 0 ? a + rank : a);
    return 0;
}

static void shape_text(char *buf, size_t len, uint32_t nd, const uint64_t *s) {
    size_t at = (size_t)snprintf(buf, len, "[");
    for (uint32_t d = 0; d < nd && at < len; d++)
        at += (size_t)snprintf(buf + at, len - at, "%s%llu", d ? ", " : "", (unsigned long long)s[d]);
    if (at < len) snprintf(buf + at, len - at, "]");
}

int nx_rmsnorm_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_rmsnorm_params *p,
                    nx_error *err) {
    memset(p, 0, sizeof *p);
    if (nx_norm_attr_number(attrs, "eps", 1e-6, &p->eps, err) != 0 ||
        nx_norm_attr_number(attrs, "fp8_max", 240.0, &p->fp8_max, err) != 0 ||
        nx_norm_attr_bool(attrs, "residual", 0, &p->residual, err) != 0 || read_quant(attrs, &p->quant, err) != 0)
        return -1;
    if (p->eps < 0) return nx_fail(err, "attribute eps: %g is negative (eps >= 0)", p->eps);
    if (!(p->fp8_max > 0)) return nx_fail(err, "attribute fp8_max: %g must be > 0", p->fp8_max);
    p->n_operands = 2 + (uint32_t)p->residual + (p->quant == NX_RMSNORM_QUANT_STATIC);
    p->n_results = (p->quant == NX_RMSNORM_QUANT_ROW ? 2u : 1u) + (uint32_t)p->residual;
    if (p->residual) p->r_operand = 2;
    if (p->quant == NX_RMSNORM_QUANT_STATIC) p->scale_operand = 2 + (uint32_t)p->residual;
    if (n_in != p->n_operands)
        return nx_fail(err, "rmsnorm takes %u operands (x, gamma%s%s), the op has %u", p->n_operands,
                       p->residual ? ", r (residual=true)" : "",
                       p->quant == NX_RMSNORM_QUANT_STATIC ? ", scale (quant=\"static\")" : "", n_in);
    const nx_norm_tensor *x = &in[0], *g = &in[1];
    if (nx_norm_float_operand(x, 0, "rmsnorm", err) != 0 || nx_norm_float_operand(g, 1, "rmsnorm", err) != 0)
        return -1;
    if (x->ndims < 1 || x->ndims > NX_KERNEL_MAX_DIMS)
        return nx_fail(err, "operand 0 (%s): rank %u, rmsnorm takes x of rank 1..%d", x->name, x->ndims,
                       NX_KERNEL_MAX_DIMS);
    p->dtype = x->dtype;
    p->gamma_dtype = g->dtype;
    p->H = x->shape[x->ndims - 1];
    p->rows = 1;
    for (uint32_t d = 0; d + 1 < x->ndims; d++) p->rows *= x->shape[d];
    char s[96];
    if (g->ndims != 1 || g->shape[0] != p->H) {
        shape_text(s, sizeof s, g->ndims, g->shape);
        return nx_fail(err, "operand 1 (%s): gamma must be [%llu] (x's last dim), got %s", g->name,
                       (unsigned long long)p->H, s);
    }
    if (p->residual) {
        const nx_norm_tensor *r = &in[p->r_operand];
        if (r->dtype != x->dtype)
            return nx_fail(err, "operand %u (%s): residual dtype %s differs from x's %s", p->r_operand, r->name,
                           nx_dtype_name(r->dtype) ? nx_dtype_name(r->dtype) : "?", nx_dtype_name(x->dtype));
        if (r->ndims != x->ndims || memcmp(r->shape, x->shape, x->ndims * sizeof *x->shape) != 0) {
            char xs[96];
            shape_text(s, sizeof s, r->ndims, r->shape);
            shape_text(xs, sizeof xs, x->ndims, x->shape);
            return nx_fail(err, "operand %u (%s): residual shape %s differs from x's %s", p->r_operand, r->name, s, xs);
        }
    }
    if (p->quant == NX_RMSNORM_QUANT_STATIC) {
        const nx_norm_tensor *c = &in[p->scale_operand];
        if (c->dtype != NX_DT_FP32 || c->ndims != 1 || c->shape[0] != 1) {
            shape_text(s, sizeof s, c->ndims, c->shape);
            return nx_fail(err, "operand %u (%s): scale must be fp32 [1], got %s %s", p->scale_operand, c->name,
                           nx_dtype_name(c->dtype) ? nx_dtype_name(c->dtype) : "?", s);
        }
    }
    return 0;
}

void nx_rmsnorm_result(const nx_rmsnorm_params *p, const nx_norm_tensor *x, uint32_t j, nx_dtype *dtype,
                       uint32_t *ndims, uint64_t *shape) {
    *ndims = x->ndims;
    memcpy(shape, x->shape, x->ndims * sizeof *shape);
    uint32_t quant_results = p->quant == NX_RMSNORM_QUANT_ROW ? 2 : 1;
    if (j >= quant_results) { /* x' */
        *dtype = p->dtype;
        return;
    }
    if (p->quant == NX_RMSNORM_QUANT_NONE) {
        *dtype = p->dtype;
        return;
    }
    *dtype = j == 0 ? NX_DT_FP8_E4M3 : NX_DT_FP32;
    if (j == 1) shape[x->ndims - 1] = 1;
}

int nx_softmax_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_softmax_params *p,
                    nx_error *err) {
    memset(p, 0, sizeof *p);
    if (n_in != 1) return nx_fail(err, "softmax takes 1 operand (x), the op has %u", n_in);
    p->dtype = in[0].dtype;
    return nx_norm_axis_operand(attrs, &in[0], "softmax", &p->axis, &p->outer, &p->A, &p->inner, err);
}

int nx_norm_axis_operand(const nx_attrs *attrs, const nx_norm_tensor *x, const char *what, uint32_t *axis,
                         uint64_t *outer, uint64_t *A, uint64_t *inner, nx_error *err) {
    if (nx_norm_float_operand(x, 0, what, err) != 0) return -1;
    if (x->ndims < 1 || x->ndims > NX_KERNEL_MAX_DIMS)
        return nx_fail(err, "operand 0 (%s): rank %u, %s takes rank 1..%d", x->name, x->ndims, what, NX_KERNEL_MAX_DIMS);
    if (nx_norm_attr_axis(attrs, "axis", -1, x->ndims, axis, err) != 0) return -1;
    *outer = *inner = 1;
    for (uint32_t d = 0; d < x->ndims; d++) {
        if (d < *axis) *outer *= x->shape[d];
        if (d > *axis) *inner *= x->shape[d];
    }
    *A = x->shape[*axis];
    if (*A * *inner > INT32_MAX)
        return nx_fail(err, "operand 0 (%s): axis %u strides beyond a 32-bit access pattern", x->name, *axis);
    return 0;
}

int nx_layernorm_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_layernorm_params *p,
                      nx_error *err) {
    memset(p, 0, sizeof *p);
    if (n_in < 2 || n_in > 3)
        return nx_fail(err, "layernorm takes 2 or 3 operands (X, Scale [, B]), the op has %u", n_in);
    const nx_norm_tensor *x = &in[0];
    int64_t stash;
    if (nx_norm_attr_number(attrs, "epsilon", 1e-5, &p->epsilon, err) != 0 ||
        nx_norm_attr_bool(attrs, "bias", n_in == 3, &p->bias, err) != 0 ||
        nx_norm_attr_int(attrs, "stash_type", 1, &stash, err) != 0)
        return -1;
    if (stash != 1) return nx_fail(err, "attribute stash_type: %lld, only 1 (fp32 statistics) is supported", (long long)stash);
    if (p->epsilon < 0) return nx_fail(err, "attribute epsilon: %g is negative (epsilon >= 0)", p->epsilon);
    if (p->bias && n_in != 3) return nx_fail(err, "attribute bias: true, but the op has no operand 2 (B)");
    if (!p->bias && n_in == 3) return nx_fail(err, "attribute bias: false, but the op has operand 2 (%s)", in[2].name);
    for (uint32_t i = 0; i < n_in; i++)
        if (nx_norm_float_operand(&in[i], i, "layernorm", err) != 0) return -1;
    if (x->ndims < 1 || x->ndims > NX_KERNEL_MAX_DIMS)
        return nx_fail(err, "operand 0 (%s): rank %u, layernorm takes rank 1..%d", x->name, x->ndims, NX_KERNEL_MAX_DIMS);
    if (nx_norm_attr_axis(attrs, "axis", -1, x->ndims, &p->axis, err) != 0) return -1;
    p->dtype = x->dtype;
    p->scale_dtype = in[1].dtype;
    p->bias_dtype = p->bias ? in[2].dtype : in[1].dtype;
    p->rows = p->H = 1;
    for (uint32_t d = 0; d < x->ndims; d++) {
        if (d < p->axis) p->rows *= x->shape[d];
        else p->H *= x->shape[d];
    }
    uint32_t nn = x->ndims - p->axis;
    for (uint32_t i = 1; i < n_in; i++) {
        const nx_norm_tensor *t = &in[i];
        if (t->ndims != nn || memcmp(t->shape, x->shape + p->axis, nn * sizeof *t->shape) != 0) {
            char want[96], got[96];
            shape_text(want, sizeof want, nn, x->shape + p->axis);
            shape_text(got, sizeof got, t->ndims, t->shape);
            return nx_fail(err, "operand %u (%s): %s must be %s (X's dims from axis %u), got %s", i, t->name,
                           i == 1 ? "Scale" : "B", want, p->axis, got);
        }
    }
    return 0;
}

void nx_layernorm_result(const nx_layernorm_params *p, const nx_norm_tensor *x, uint32_t j, uint32_t *ndims,
                         uint64_t *shape) {
    *ndims = x->ndims;
    for (uint32_t d = 0; d < x->ndims; d++) shape[d] = j == 0 || d < p->axis ? x->shape[d] : 1;
}
