/* conv_check.h: a conv leaf on the executor and the model against nx_ref_conv. */
#include "conv_check.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "isa/builder.h"
#include "kcheck.h"
#include "isa/exec.h"
#include "kernels/author/author.h"
#include "kernels/conv/conv_params.h"
#include "kernels/ref/ref.h"
#include "registry/macro_op.h"
#include "sim/machine.h"
#include "sim/model.h"
#include "sim/race.h"
#include "support.h"

typedef struct conv_setup {
    nx_conv_layout L;
    nx_conv_params p;
    uint32_t nd;
    uint64_t out[4];
    nx_attrs attrs;
    nx_tensor_ref args[3];
    nx_kernel_call call;
    char what[384];
} conv_setup;

static void parse_attrs(const char *text, nx_attrs *a) {
    nx_attrs_init(a);
    if (!text) return;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
        char *eq = strchr(tok, '=');
        if (!eq) fail_msg("attrs '%s': expected name=JSON", text);
        *eq = 0;
        nx_value v;
        nx_error err;
        if (nx_value_parse(tok, eq + 1, &v, &err) != 0 || nx_attrs_set(a, tok, &v, &err) != 0)
            fail_msg("attrs '%s': %s", text, err.msg);
    }
}

static void fmt(char *buf, size_t len, uint32_t nd, const uint64_t *s) {
    size_t n = 0;
    for (uint32_t i = 0; i < nd && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%llu", i ? "," : "[", (unsigned long long)s[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

/* Parses the case; out shape from the formula (0 on failure when `may_fail`). */
static int setup(const conv_case *c, conv_setup *s, int may_fail) {
    memset(s, 0, sizeof *s);
    nx_error err;
    if (nx_conv_layout_parse(c->labels, &s->L, &err) != 0) fail_msg("%s", err.msg);
    s->nd = s->L.spatial + 2;
    parse_attrs(c->attrs, &s->attrs);
    int ok = nx_conv_params_read(&s->attrs, s->L.spatial, NULL, &s->p, &err) == 0 &&
             nx_conv_result_shape(&s->L, &s->p, s->nd, c->lhs, s->nd, c->rhs, "img", "filt", s->out, &err) == 0;
    if (!ok && !may_fail) fail_msg("case %s %s: %s", c->labels, c->attrs ? c->attrs : "", err.msg);
    if (ok && c->add_out_shape) {
        nx_value v;
        if (nx_value_int_list(&v, s->out, s->nd, &err) != 0 || nx_attrs_set(&s->attrs, "out_shape", &v, &err) != 0)
            fail_msg("%s", err.msg);
    }
    static const char *const names[3] = {"img", "filt", "out"};
    const uint64_t *shapes[3] = {c->lhs, c->rhs, s->out};
    for (int i = 0; i < 3; i++) {
        strcpy(s->args[i].name, names[i]);
        s->args[i].dtype = c->dtype;
        s->args[i].ndims = s->nd;
        memcpy(s->args[i].shape, shapes[i], s->nd * sizeof(uint64_t));
    }
    s->call.args = s->args;
    s->call.nargs = 3;
    s->call.n_inputs = 2;
    s->call.additional_args = &s->attrs;
    char a[64], b[64];
    fmt(a, sizeof a, s->nd, c->lhs);
    fmt(b, sizeof b, s->nd, c->rhs);
    snprintf(s->what, sizeof s->what, "%s %s img %s filt %s {%s}", c->labels, nx_dtype_name(c->dtype), a, b,
             c->attrs ? c->attrs : "");
    return ok;
}

static int trace(nx_leaf_fn leaf, conv_setup *s, nx_builder *b, nx_error *err) {
    for (int i = 0; i < 3; i++)
        if (nx_builder_tensor(b, s->args[i].name, s->args[i].dtype, s->args[i].ndims, s->args[i].shape,
                              i < 2 ? NX_ROLE_INPUT : NX_ROLE_OUTPUT, &s->args[i].hbm_offset, err) != 0)
            fail_msg("declare %s: %s", s->args[i].name, err->msg);
    nx_machine km = test_machine_of(nx_builder_geometry(b));
    nx_kctx *k = nx_kctx_new_machine(b, &km, 0, 1);
    assert_non_null(k);
    int rc = leaf(k, &s->call, err);
    if (rc == 0 && nx_kctx_finish(k, err) != 0) fail_msg("%s: finish: %s", s->what, err->msg);
    nx_kctx_free(k);
    return rc;
}

static uint64_t elems(uint32_t nd, const uint64_t *s) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < nd; i++) n *= s[i];
    return n;
}

double conv_half_ulp(nx_dtype dt) {
    switch (dt) {
    case NX_DT_BF16: return 0x1p-8;
    case NX_DT_FP16: return 0x1p-11;
    case NX_DT_FP8_E4M3: return 0x1p-4;
    case NX_DT_FP8_E5M2: return 0x1p-3;
    default: return 0;
    }
}

double conv_tiny(nx_dtype dt) {
    switch (dt) {
    case NX_DT_BF16: return 0x1p-133;
    case NX_DT_FP16: return 0x1p-24;
    case NX_DT_FP8_E4M3: return 0x1p-9;
    case NX_DT_FP8_E5M2: return 0x1p-16;
    default: return 0x1p-149;
    }
}

static void compare(const conv_setup *s, nx_dtype dt, const uint8_t *got, const uint8_t *want, const float *mag,
                    uint64_t n, uint64_t K, double product_rounding, const char *backend) {
    size_t es = nx_dtype_size(dt);
    double e = conv_half_ulp(dt);
    uint64_t bad = 0, first = 0;
    double worst = 0, first_got = 0, first_want = 0, first_tol = 0;
    for (uint64_t i = 0; i < n; i++) {
        double g = nx_dtype_load(dt, got + i * es), w = nx_dtype_load(dt, want + i * es);
        double sum_err = (2.0 * (double)K * 0x1p-24 + product_rounding) * (double)mag[i] * (1 + 2 * e);
        double tol = sum_err + 2 * e * fabs(w) + conv_tiny(dt);
        double d = fabs(g - w);
        if (!(d <= tol)) {
            if (!bad) {
                first = i;
                first_got = g;
                first_want = w;
                first_tol = tol;
            }
            bad++;
        }
        if (d > worst) worst = d;
    }
    if (bad)
        fail_msg("%s on the %s: %llu of %llu elements beyond the tolerance; first: element %llu is %.9g, the "
                 "reference %.9g (tolerance %.3g)",
                 s->what, backend, (unsigned long long)bad, (unsigned long long)n, (unsigned long long)first, first_got,
                 first_want, first_tol);
}

void conv_check_leaf(nx_leaf_fn leaf, const char *leaf_name, const conv_case *c, int run_model) {
    conv_check_opts o;
    memset(&o, 0, sizeof o);
    o.filt_dtype = -1;
    conv_check_leaf_opts(leaf, leaf_name, c, run_model, &o);
}

void conv_check_leaf_opts(nx_leaf_fn leaf, const char *leaf_name, const conv_case *c, int run_model,
                          const conv_check_opts *o) {
    const char *machine = o->machine ? o->machine : "trn2";
    conv_setup s;
    setup(c, &s, 0);
    nx_geometry geo = test_geometry(machine);
    nx_builder *b = nx_builder_new(&geo, 1);
    assert_non_null(b);
    nx_error err;
    if (trace(leaf, &s, b, &err) != 0) fail_msg("%s %s: %s", leaf_name, s.what, err.msg);
    nx_program prog;
    if (nx_builder_finish(b, &prog, &err) != 0) fail_msg("%s %s: finish: %s", leaf_name, s.what, err.msg);
    nx_builder_free(b);
    if (test_kcheck_program(&prog, &err) != 0) fail_msg("%s %s: order check: %s", leaf_name, s.what, err.msg);

    size_t es = nx_dtype_size(c->dtype);
    uint64_t nl = elems(s.nd, c->lhs), nr = elems(s.nd, c->rhs), no = elems(s.nd, s.out);
    uint8_t *x = malloc(nl * es), *w = malloc(nr * es), *want = malloc(no * es);
    float *ax = malloc(nl * sizeof *ax), *aw = malloc(nr * sizeof *aw), *mag = malloc(no * sizeof *mag);
    assert_true(x && w && want && ax && aw && mag);
    test_rng r = {c->seed * 0x9E3779B97F4A7C15ull + 7};
    for (uint64_t i = 0; i < nl; i++) {
        nx_dtype_store(c->dtype, x + i * es, test_rng_uniform(&r, -1, 1));
        ax[i] = (float)fabs(nx_dtype_load(c->dtype, x + i * es));
    }
    for (uint64_t i = 0; i < nr; i++) {
        nx_dtype_store(c->dtype, w + i * es, test_rng_uniform(&r, -1, 1));
        aw[i] = (float)fabs(nx_dtype_load(c->dtype, w + i * es));
    }
    nx_conv_params p = s.p;
    p.out_ndims = 0;
    nx_ref_operand a = {x, c->dtype, s.nd, c->lhs}, f = {w, c->dtype, s.nd, c->rhs};
    if (nx_ref_conv(c->labels, &p, &a, &f, want, c->dtype, s.nd, s.out, &err) != 0) fail_msg("ref: %s", err.msg);
    nx_ref_operand aa = {ax, NX_DT_FP32, s.nd, c->lhs}, af = {aw, NX_DT_FP32, s.nd, c->rhs};
    if (nx_ref_conv(c->labels, &p, &aa, &af, mag, NX_DT_FP32, s.nd, s.out, &err) != 0) fail_msg("ref: %s", err.msg);
    uint64_t K = c->rhs[s.L.rhs_in];
    for (uint32_t d = 0; d < s.L.spatial; d++) K *= c->rhs[s.L.rhs_spatial[d]];

    nx_state st;
    if (nx_state_init(&st, &geo, 1, prog.hbm_bytes, prog.sem_count, &err) != 0) fail_msg("state: %s", err.msg);
    memcpy(st.hbm + s.args[0].hbm_offset, x, nl * es);
    memcpy(st.hbm + s.args[1].hbm_offset, w, nr * es);
    if (nx_exec_program(&prog, &st, &err) != 0) fail_msg("%s %s: exec: %s", leaf_name, s.what, err.msg);
    compare(&s, c->dtype, st.hbm + s.args[2].hbm_offset, want, mag, no, K, o->product_rounding, "executor");

    if (run_model) {
        nx_machine m;
        if (nx_machine_load(machine, &m, &err) != 0) fail_msg("machine: %s", err.msg);
        nx_state_reset(&st);
        memcpy(st.hbm + s.args[0].hbm_offset, x, nl * es);
        memcpy(st.hbm + s.args[1].hbm_offset, w, nr * es);
        nx_sim_options opt = {1, 0};
        nx_sim_result res;
        memset(&res, 0, sizeof res);
        if (nx_sim_run(&m, &prog, &st, &opt, &res, &err) != 0) fail_msg("%s %s: model: %s", leaf_name, s.what, err.msg);
        if (nx_race_check(&prog, res.log, res.log_count, &err) != 0)
            fail_msg("%s %s: race detector: %s", leaf_name, s.what, err.msg);
        nx_sim_result_free(&res);
        compare(&s, c->dtype, st.hbm + s.args[2].hbm_offset, want, mag, no, K, o->product_rounding, "model");
    }
    nx_state_free(&st);
    nx_program_free(&prog);
    nx_attrs_free(&s.attrs);
    free(x);
    free(w);
    free(want);
    free(ax);
    free(aw);
    free(mag);
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
    conv_setup s;
    setup(c, &s, 1);
    if (o->filt_dtype >= 0) s.args[1].dtype = (nx_dtype)o->filt_dtype;
    if (out_shape_override) memcpy(s.args[2].shape, out_shape_override, s.nd * sizeof(uint64_t));
    for (uint32_t i = 0; i < s.nd; i++)
        if (s.args[2].shape[i] == 0) s.args[2].shape[i] = 1;
    nx_geometry geo = test_geometry(o->machine ? o->machine : "trn2");
    nx_builder *b = nx_builder_new(&geo, 1);
    assert_non_null(b);
    nx_error err;
    if (trace(leaf, &s, b, &err) == 0) fail_msg("%s: the leaf accepted the case, expected: %s", s.what, msg);
    assert_string_equal(err.msg, msg);
    nx_builder_free(b);
    nx_attrs_free(&s.attrs);
}

void conv_count_insns(nx_leaf_fn leaf, const conv_case *c, uint64_t *counts) {
    conv_setup s;
    setup(c, &s, 0);
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 1);
    assert_non_null(b);
    nx_error err;
    if (trace(leaf, &s, b, &err) != 0) fail_msg("%s: %s", s.what, err.msg);
    nx_program prog;
    if (nx_builder_finish(b, &prog, &err) != 0) fail_msg("%s: finish: %s", s.what, err.msg);
    nx_builder_free(b);
    for (int e = 0; e < NX_ENG_COUNT; e++) counts[e] = prog.stream[0][e].count;
    nx_program_free(&prog);
    nx_attrs_free(&s.attrs);
}
