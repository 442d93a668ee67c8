/* conv_cases.h: a conv case as a leaf case of the leaf-case suite. */
#include "conv_cases.h"

#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/conv/conv_params.h"
#include "kernels/ref/ref.h"
#include "leaf_cases.h"
#include "registry/registry.h"
#include "support.h"

static void fmt(char *buf, size_t len, uint32_t nd, const uint64_t *s) {
    size_t n = 0;
    for (uint32_t i = 0; i < nd && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%llu", i ? "," : "[", (unsigned long long)s[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

/* The registry entry of `leaf`, or of o->key for a leaf outside it. */
static const nx_registry_entry *entry_of(nx_leaf_fn leaf, const conv_check_opts *o) {
    const nx_kernel_registry *reg = nx_get_internal_kernel_registry();
    for (uint32_t i = 0; i < reg->count; i++) {
        const nx_registry_entry *e = &reg->entries[i];
        if (o && o->key ? strcmp(e->key, o->key) == 0 : e->config.kernel_func && e->config.kernel_func->fn == leaf)
            return e;
    }
    fail_msg("conv case: no registry entry for the leaf%s%s", o && o->key ? " under " : "", o && o->key ? o->key : "");
    return NULL;
}

static void make(const nx_registry_entry *e, const conv_case *c, nx_dtype filt_dt, leaf_case *out) {
    nx_conv_layout L;
    nx_error err;
    if (nx_conv_layout_parse(c->labels, &L, &err) != 0) fail_msg("%s", err.msg);
    uint32_t nd = L.spatial + 2;
    char a[64], b[64], name[256];
    fmt(a, sizeof a, nd, c->lhs);
    fmt(b, sizeof b, nd, c->rhs);
    snprintf(name, sizeof name, "%s %s %s img %s filt %s {%s}", e->key, c->labels, nx_dtype_name(c->dtype), a, b,
             c->attrs ? c->attrs : "");
    leaf_case_init(out, name, e->key);
    leaf_case_operand(out, "img", c->dtype, nd, c->lhs);
    leaf_case_operand(out, "filt", filt_dt, nd, c->rhs);
    leaf_case_attrs(out, c->attrs);
    out->seed = c->seed;
}

void conv_check_leaf(nx_leaf_fn leaf, const conv_case *c, int run_model) {
    conv_check_opts o;
    memset(&o, 0, sizeof o);
    if (!run_model) o.backends = LEAF_FUNCTIONAL;
    conv_check_leaf_opts(leaf, c, &o);
}

static uint64_t elems(uint32_t nd, const uint64_t *s) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < nd; i++) n *= s[i];
    return n;
}

/* The bound of conv_cases.h on every element of got. */
static void expect_within_bound(const leaf_case *lc, const conv_case *c, const uint8_t *x, const uint8_t *w,
                                const nx_op_tensor *out, const uint8_t *got, double product_rounding) {
    nx_conv_layout L;
    nx_conv_params p;
    nx_error err;
    if (nx_conv_layout_parse(c->labels, &L, &err) != 0 ||
        nx_conv_params_read(&lc->op.attrs, L.spatial, NULL, &p, &err) != 0)
        fail_msg("%s: %s", lc->name, err.msg);
    p.out_ndims = 0;
    uint32_t nd = L.spatial + 2;
    nx_dtype dt = c->dtype;
    size_t es = nx_dtype_size(dt);
    uint64_t nl = elems(nd, c->lhs), nr = elems(nd, c->rhs), no = elems(nd, out->shape);
    uint8_t *want = malloc(no * es);
    float *ax = malloc(nl * sizeof *ax), *aw = malloc(nr * sizeof *aw), *mag = malloc(no * sizeof *mag);
    assert_true(want && ax && aw && mag);
    for (uint64_t i = 0; i < nl; i++) ax[i] = (float)fabs(nx_dtype_load(dt, x + i * es));
    for (uint64_t i = 0; i < nr; i++) aw[i] = (float)fabs(nx_dtype_load(dt, w + i * es));
    nx_ref_operand a = {x, dt, nd, c->lhs}, f = {w, dt, nd, c->rhs};
    nx_ref_operand aa = {ax, NX_DT_FP32, nd, c->lhs}, af = {aw, NX_DT_FP32, nd, c->rhs};
    if (nx_ref_conv(c->labels, &p, &a, &f, want, dt, nd, out->shape, &err) != 0 ||
        nx_ref_conv(c->labels, &p, &aa, &af, mag, NX_DT_FP32, nd, out->shape, &err) != 0)
        fail_msg("%s: ref: %s", lc->name, err.msg);
    uint64_t K = c->rhs[L.rhs_in];
    for (uint32_t d = 0; d < L.spatial; d++) K *= c->rhs[L.rhs_spatial[d]];
    double e = conv_half_ulp(dt);
    uint64_t bad = 0, first = 0;
    double first_got = 0, first_want = 0, first_tol = 0;
    for (uint64_t i = 0; i < no; i++) {
        double g = nx_dtype_load(dt, got + i * es), r = nx_dtype_load(dt, want + i * es);
        double tol = (2.0 * (double)K * 0x1p-24 + product_rounding) * (double)mag[i] * (1 + 2 * e) + 2 * e * fabs(r) +
                     conv_tiny(dt);
        if (!(fabs(g - r) <= tol) && !bad++) first = i, first_got = g, first_want = r, first_tol = tol;
    }
    free(want);
    free(ax);
    free(aw);
    free(mag);
    if (bad)
        fail_msg("%s: %llu of %llu elements beyond the bound; first: element %llu is %.9g, the reference %.9g "
                 "(bound %.3g)", lc->name, (unsigned long long)bad, (unsigned long long)no, (unsigned long long)first,
                 first_got, first_want, first_tol);
}

void conv_check_leaf_opts(nx_leaf_fn leaf, const conv_case *c, const conv_check_opts *o) {
    const nx_registry_entry *e = entry_of(leaf, o);
    /* a leaf in the entry's place: a one-entry registry of the test's own */
    nx_leaf own = {e->config.kernel_func ? e->config.kernel_func->name : e->key, leaf};
    nx_registry_entry row = *e;
    row.config.kernel_func = &own;
    nx_kernel_registry reg = {&row, 1};
    leaf_case lc;
    make(e, c, c->dtype, &lc);
    if (o->machine) snprintf(lc.machine, sizeof lc.machine, "%s", o->machine);
    if (o->backends) lc.backends = o->backends;
    if (o->key) lc.registry = &reg;
    /* operands uniform in [-1, 1) in the dtype */
    size_t es = nx_dtype_size(c->dtype);
    uint32_t nd = lc.op.operands[0].ndims;
    uint64_t nl = elems(nd, c->lhs), nr = elems(nd, c->rhs);
    uint8_t *x = malloc(nl * es), *w = malloc(nr * es);
    assert_true(x && w);
    test_rng r = {c->seed * 0x9E3779B97F4A7C15ull + 7};
    for (uint64_t i = 0; i < nl; i++) nx_dtype_store(c->dtype, x + i * es, test_rng_uniform(&r, -1, 1));
    for (uint64_t i = 0; i < nr; i++) nx_dtype_store(c->dtype, w + i * es, test_rng_uniform(&r, -1, 1));
    lc.inputs[0] = x;
    lc.inputs[1] = w;
    leaf_case_report rep;
    leaf_case_check(&lc, &rep);
    expect_within_bound(&lc, c, x, w, &rep.result[0], rep.results[0], o->product_rounding);
    leaf_case_report_free(&rep);
    leaf_case_free(&lc);
    free(x);
    free(w);
}

void conv_expect_refusal(nx_leaf_fn leaf, const conv_case *c, const uint64_t *out_shape_override,
                         const char *msg) {
    conv_check_opts o;
    memset(&o, 0, sizeof o);
    o.filt_dtype = -1;
    conv_expect_refusal_opts(leaf, c, out_shape_override, msg, &o);
}

void conv_expect_refusal_opts(nx_leaf_fn leaf, const conv_case *c, const uint64_t *out_shape_override,
                              const char *msg, const conv_check_opts *o) {
    const nx_registry_entry *e = entry_of(leaf, NULL);
    leaf_case lc;
    make(e, c, o->filt_dtype >= 0 ? (nx_dtype)o->filt_dtype : c->dtype, &lc);
    if (o->machine) snprintf(lc.machine, sizeof lc.machine, "%s", o->machine);
    /* out: the reference's shape (1s where the attributes give none) */
    nx_conv_layout L;
    nx_conv_params p;
    nx_error err;
    if (nx_conv_layout_parse(c->labels, &L, &err) != 0) fail_msg("%s", err.msg);
    uint32_t nd = L.spatial + 2;
    uint64_t out[4] = {1, 1, 1, 1};
    if (nx_conv_params_read(&lc.op.attrs, L.spatial, NULL, &p, &err) != 0 ||
        nx_conv_result_shape(&L, &p, nd, c->lhs, nd, c->rhs, "img", "filt", out, &err) != 0)
        for (uint32_t i = 0; i < nd; i++) out[i] = 1;
    if (out_shape_override) memcpy(out, out_shape_override, nd * sizeof out[0]);
    for (uint32_t i = 0; i < nd; i++)
        if (out[i] == 0) out[i] = 1;
    if (c->add_out_shape) {
        nx_value v;
        if (nx_value_int_list(&v, out, nd, &err) != 0 || nx_attrs_set(&lc.op.attrs, "out_shape", &v, &err) != 0)
            fail_msg("%s", err.msg);
    }
    leaf_case_result(&lc, "out", c->dtype, nd, out);
    if (leaf_case_trace_leaf(&lc, leaf, &err) == 0) fail_msg("%s: the leaf accepted the case, expected: %s", lc.name, msg);
    assert_string_equal(err.msg, msg);
    leaf_case_free(&lc);
}

/* half an ulp relative to the value, the smallest subnormal */
static const struct {
    nx_dtype dt;
    double half_ulp, tiny;
} dtype_figures[] = {
    {NX_DT_BF16, 0x1p-8, 0x1p-133},    {NX_DT_FP16, 0x1p-11, 0x1p-24},
    {NX_DT_FP8_E4M3, 0x1p-4, 0x1p-9},  {NX_DT_FP8_E5M2, 0x1p-3, 0x1p-16},
};

static int figures_of(nx_dtype dt) {
    for (int i = 0; i < (int)(sizeof dtype_figures / sizeof dtype_figures[0]); i++)
        if (dtype_figures[i].dt == dt) return i;
    return -1;
}

double conv_half_ulp(nx_dtype dt) {
    int i = figures_of(dt);
    return i < 0 ? 0 : dtype_figures[i].half_ulp;
}

double conv_tiny(nx_dtype dt) {
    int i = figures_of(dt);
    return i < 0 ? 0x1p-149 : dtype_figures[i].tiny;
}
