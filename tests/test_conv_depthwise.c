/* The depthwise forward convolution leaves (kernels/conv/depthwise.h):
 * Conv1d_depthwise_bf01_oi01_bf01, conv2d_column_packing_1 and
 * conv2d_depthwise_f01b_o01i_bf01.
 *
 * Each case builds the call in the leaf's layouts, traces the leaf, checks
 * the program's ordering statically (nx_kcheck_program), runs it on the
 * functional executor and on the SystemC model (with the race detector on
 * the model's log), and compares both outputs with the convolution
 * reference (kernels/ref) on pseudo-random inputs in [-1, 1).
 *
 * Tolerance, per output element: |got - ref| <= (2 u + 2 (K + 1) 2^-24)
 * * sum_taps |x| |f| + the dtype's smallest subnormal, where u is the unit
 * roundoff of the dtype (2^-24 fp32, 2^-8 bf16, 2^-11 fp16, 2^-4 fp8_e4m3,
 * 2^-3 fp8_e5m2) and K = KH * KW the contraction length: the leaf's fp32
 * sum of K products (each product exact, or rounded once to the dtype by
 * conv2d_depthwise_f01b_o01i_bf01) is within (u + K 2^-24) sum |x f| of the
 * exact sum, the reference's fp32 sum within K 2^-24 sum |x f|, and the
 * final rounding to the dtype adds u |result|. sum |x| |f| is the reference
 * run on the absolute values. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "isa/builder.h"
#include "isa/exec.h"
#include "kernels/author.h"
#include "kernels/conv/depthwise.h"
#include "kernels/ref/ref.h"
#include "registry/macro_op.h"
#include "sim/machine.h"
#include "sim/model.h"
#include "sim/race.h"
#include "support.h"

typedef int (*leaf_fn)(struct nx_kctx *, const nx_kernel_call *, nx_error *);

typedef struct dw_leaf {
    leaf_fn fn;
    const char *key;
    const char *img, *filt, *out; /* layout labels */
} dw_leaf;

static const dw_leaf C1D = {conv1d_depthwise_bf01_oi01_bf01, "Conv1d_depthwise_bf01_oi01_bf01", "bf01", "oi01",
                            "bf01"};
static const dw_leaf CP1 = {conv2d_column_packing_1, "conv2d_column_packing_1", "bf01", "oi01", "bf01"};
static const dw_leaf F01B = {conv2d_depthwise_f01b_o01i_bf01, "conv2d_depthwise_f01b_o01i_bf01", "f01b", "o01i",
                             "bf01"};

/* One convolution: logical sizes and attributes. */
typedef struct dw_case {
    nx_dtype dt;
    uint64_t n, c, h, w, kh, kw;
    int64_t stride[2], lo[2], hi[2], lhs[2], rhs[2];
    int64_t fgc;      /* feature_group_count; 0 = C */
    uint64_t mult;    /* filters per channel (0 = 1): > 1 only in refusal tests */
    int filt_dt;      /* the filter's dtype; -1: the image's */
    int omit_attrs;   /* leave every attribute but feature_group_count out */
} dw_case;

static dw_case dw_default(nx_dtype dt, uint64_t n, uint64_t c, uint64_t h, uint64_t w, uint64_t kh, uint64_t kw) {
    dw_case k;
    memset(&k, 0, sizeof k);
    k.dt = dt;
    k.n = n;
    k.c = c;
    k.h = h;
    k.w = w;
    k.kh = kh;
    k.kw = kw;
    for (int d = 0; d < 2; d++) k.stride[d] = k.lhs[d] = k.rhs[d] = 1;
    k.filt_dt = -1;
    return k;
}

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t lo, int64_t hi, int64_t ld, int64_t rd) {
    int64_t span = (in - 1) * ld + 1 + lo + hi, win = (k - 1) * rd + 1;
    return span < win || s < 1 ? 0 : (span - win) / s + 1;
}

/* ---- the call ---- */

typedef struct call_buf {
    nx_tensor_ref args[3];
    nx_attrs attrs;
    nx_kernel_call call;
    uint64_t oh, ow;
} call_buf;

static void shape_by_labels(const char *labels, const char *names, const uint64_t *vals, uint64_t *shape) {
    for (int i = 0; i < 4; i++) shape[i] = vals[strchr(names, labels[i]) - names];
}

static void set_pair_list(nx_attrs *a, const char *name, const int64_t v[2]) {
    nx_value val;
    uint64_t u[2] = {(uint64_t)v[0], (uint64_t)v[1]};
    nx_error err;
    assert_int_equal(nx_value_int_list(&val, u, 2, &err), 0);
    val.items[0].i = v[0];
    val.items[1].i = v[1];
    assert_int_equal(nx_attrs_set(a, name, &val, &err), 0);
}

static void make_call(call_buf *cb, const dw_leaf *L, const dw_case *k) {
    memset(cb, 0, sizeof *cb);
    nx_attrs_init(&cb->attrs);
    cb->oh = (uint64_t)out_size((int64_t)k->h, (int64_t)k->kh, k->stride[0], k->lo[0], k->hi[0], k->lhs[0], k->rhs[0]);
    cb->ow = (uint64_t)out_size((int64_t)k->w, (int64_t)k->kw, k->stride[1], k->lo[1], k->hi[1], k->lhs[1], k->rhs[1]);
    const uint64_t iv[4] = {k->n, k->c, k->h, k->w}, fv[4] = {k->c * (k->mult ? k->mult : 1), 1, k->kh, k->kw},
                   ov[4] = {k->n, k->c * (k->mult ? k->mult : 1), cb->oh, cb->ow};
    static const char *const names[3] = {"img", "filt", "out"};
    shape_by_labels(L->img, "bf01", iv, cb->args[0].shape);
    shape_by_labels(L->filt, "oi01", fv, cb->args[1].shape);
    shape_by_labels(L->out, "bf01", ov, cb->args[2].shape);
    for (int i = 0; i < 3; i++) {
        strcpy(cb->args[i].name, names[i]);
        cb->args[i].dtype = i == 1 && k->filt_dt >= 0 ? (nx_dtype)k->filt_dt : k->dt;
        cb->args[i].ndims = 4;
    }
    nx_error err;
    if (!k->omit_attrs) {
        set_pair_list(&cb->attrs, "stride", k->stride);
        nx_value pad;
        uint64_t z[2] = {0, 0};
        assert_int_equal(nx_value_int_list(&pad, z, 2, &err), 0);
        for (int d = 0; d < 2; d++) {
            nx_value_free(&pad.items[d]);
            int64_t pr[2] = {k->lo[d], k->hi[d]};
            uint64_t u[2] = {0, 0};
            assert_int_equal(nx_value_int_list(&pad.items[d], u, 2, &err), 0);
            pad.items[d].items[0].i = pr[0];
            pad.items[d].items[1].i = pr[1];
        }
        assert_int_equal(nx_attrs_set(&cb->attrs, "padding", &pad, &err), 0);
        set_pair_list(&cb->attrs, "lhs_dilation", k->lhs);
        set_pair_list(&cb->attrs, "rhs_dilation", k->rhs);
    }
    nx_value g = nx_value_int(k->fgc ? k->fgc : (int64_t)k->c);
    assert_int_equal(nx_attrs_set(&cb->attrs, "feature_group_count", &g, &err), 0);
    nx_value bg = nx_value_int(1);
    assert_int_equal(nx_attrs_set(&cb->attrs, "batch_group_count", &bg, &err), 0);
    if (cb->oh && cb->ow) { /* what the conv-attrs + out_shape builder adds */
        nx_value os;
        assert_int_equal(nx_value_int_list(&os, cb->args[2].shape, 4, &err), 0);
        assert_int_equal(nx_attrs_set(&cb->attrs, "out_shape", &os, &err), 0);
    }
    cb->call.args = cb->args;
    cb->call.nargs = 3;
    cb->call.n_inputs = 2;
    cb->call.additional_args = &cb->attrs;
}

static uint64_t elems(const nx_tensor_ref *t) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < t->ndims; i++) n *= t->shape[i];
    return n;
}

/* ---- reference ---- */

/* The shared conv reference (nx_ref_conv) in the leaf's labels, fp32
 * result. */
static void reference(const dw_leaf *L, const dw_case *k, const call_buf *cb, const void *img, const void *filt,
                      float *out) {
    nx_conv_params p;
    nx_conv_params_default(&p, 2);
    for (int d = 0; d < 2; d++) {
        p.stride[d] = k->stride[d];
        p.pad_lo[d] = k->lo[d];
        p.pad_hi[d] = k->hi[d];
        p.lhs_dilation[d] = k->lhs[d];
        p.rhs_dilation[d] = k->rhs[d];
    }
    p.feature_group_count = (int64_t)k->c;
    char labels[32];
    snprintf(labels, sizeof labels, "%s_%s->%s", L->img, L->filt, L->out);
    nx_ref_operand lhs = {img, k->dt, 4, cb->args[0].shape}, rhs = {filt, k->dt, 4, cb->args[1].shape};
    nx_error err;
    if (nx_ref_conv(labels, &p, &lhs, &rhs, out, NX_DT_FP32, 4, cb->args[2].shape, &err) != 0)
        fail_msg("reference: %s", err.msg);
}

static double unit_roundoff(nx_dtype dt) {
    switch (dt) {
    case NX_DT_BF16: return ldexp(1, -8);
    case NX_DT_FP16: return ldexp(1, -11);
    case NX_DT_FP8_E4M3: return ldexp(1, -4);
    case NX_DT_FP8_E5M2: return ldexp(1, -3);
    default: return ldexp(1, -24);
    }
}

static double min_subnormal(nx_dtype dt) {
    switch (dt) {
    case NX_DT_BF16: return ldexp(1, -133);
    case NX_DT_FP16: return ldexp(1, -24);
    case NX_DT_FP8_E4M3: return ldexp(1, -9);
    case NX_DT_FP8_E5M2: return ldexp(1, -16);
    default: return ldexp(1, -149);
    }
}

/* ---- running ---- */

/* Pseudo-random values in [-1, 1) into buf, their absolute values into abs_buf. */
static void fill(uint8_t *buf, uint8_t *abs_buf, uint64_t n, nx_dtype dt, test_rng *r) {
    size_t sz = nx_dtype_size(dt);
    for (uint64_t i = 0; i < n; i++) {
        nx_dtype_store(dt, buf + i * sz, test_rng_uniform(r, -1, 1));
        nx_dtype_store(dt, abs_buf + i * sz, fabs(nx_dtype_load(dt, buf + i * sz)));
    }
}

static void compare(const char *what, const uint8_t *got, nx_dtype dt, const float *ref, const float *absref,
                    uint64_t n, double K) {
    size_t sz = nx_dtype_size(dt);
    double u = unit_roundoff(dt), tiny = min_subnormal(dt);
    for (uint64_t i = 0; i < n; i++) {
        double g = nx_dtype_load(dt, got + i * sz);
        double tol = (2 * u + 2 * (K + 1) * ldexp(1, -24)) * absref[i] + tiny;
        if (!(fabs(g - ref[i]) <= tol))
            fail_msg("%s: element %llu is %.9g, reference %.9g (tolerance %.3g)", what, (unsigned long long)i, g,
                     ref[i], tol);
    }
}

static int trace(const dw_leaf *L, nx_builder *b, call_buf *cb, nx_error *err) {
    for (int i = 0; i < 3; i++)
        if (nx_builder_tensor(b, cb->args[i].name, cb->args[i].dtype, 4, cb->args[i].shape,
                              i < 2 ? NX_ROLE_INPUT : NX_ROLE_OUTPUT, &cb->args[i].hbm_offset, err) != 0)
            fail_msg("declare %s: %s", cb->args[i].name, err->msg);
    nx_kctx *kc = nx_kctx_new(b, 0, 1);
    assert_non_null(kc);
    int rc = L->fn(kc, &cb->call, err);
    if (rc == 0 && nx_kctx_finish(kc, err) != 0) fail_msg("finish: %s", err->msg);
    nx_kctx_free(kc);
    return rc;
}

static void describe(char *buf, size_t len, const dw_leaf *L, const dw_case *k) {
    snprintf(buf, len,
             "%s %s N=%llu C=%llu HxW=%llux%llu K=%llux%llu stride [%lld,%lld] pad [[%lld,%lld],[%lld,%lld]] "
             "lhs [%lld,%lld] rhs [%lld,%lld]",
             L->key, nx_dtype_name(k->dt), (unsigned long long)k->n, (unsigned long long)k->c,
             (unsigned long long)k->h, (unsigned long long)k->w, (unsigned long long)k->kh,
             (unsigned long long)k->kw, (long long)k->stride[0], (long long)k->stride[1], (long long)k->lo[0],
             (long long)k->hi[0], (long long)k->lo[1], (long long)k->hi[1], (long long)k->lhs[0],
             (long long)k->lhs[1], (long long)k->rhs[0], (long long)k->rhs[1]);
}

/* The full check of one case on machine `machine`; `model` 0 skips the
 * SystemC run. */
static void check_case_on(const char *machine, const dw_leaf *L, const dw_case *k, uint64_t seed, int model) {
    char what[512];
    describe(what, sizeof what, L, k);
    nx_geometry geo = test_geometry(machine);
    nx_builder *b = nx_builder_new(&geo, 1);
    assert_non_null(b);
    call_buf cb;
    make_call(&cb, L, k);
    nx_error err;
    if (trace(L, b, &cb, &err) != 0) fail_msg("%s: %s", what, err.msg);
    nx_program prog;
    if (nx_builder_finish(b, &prog, &err) != 0) fail_msg("%s: finish: %s", what, err.msg);
    nx_builder_free(b);
    if (nx_kcheck_program(&prog, &err) != 0) fail_msg("%s: order check: %s", what, err.msg);

    size_t sz = nx_dtype_size(k->dt);
    uint64_t ni = elems(&cb.args[0]), nf = elems(&cb.args[1]), no = elems(&cb.args[2]);
    uint8_t *img = malloc(ni * sz), *filt = malloc(nf * sz), *aimg = malloc(ni * sz), *afilt = malloc(nf * sz);
    float *ref = malloc(no * sizeof *ref), *absref = malloc(no * sizeof *absref);
    assert_true(img && filt && aimg && afilt && ref && absref);
    test_rng r = {seed * 0x9E3779B97F4A7C15ull + 7};
    fill(img, aimg, ni, k->dt, &r);
    fill(filt, afilt, nf, k->dt, &r);
    reference(L, k, &cb, img, filt, ref);
    reference(L, k, &cb, aimg, afilt, absref);
    double K = (double)(k->kh * k->kw);

    nx_state st;
    if (nx_state_init(&st, &geo, 1, prog.hbm_bytes, prog.sem_count, &err) != 0) fail_msg("%s: state: %s", what, err.msg);
    memcpy(st.hbm + cb.args[0].hbm_offset, img, ni * sz);
    memcpy(st.hbm + cb.args[1].hbm_offset, filt, nf * sz);
    if (nx_exec_program(&prog, &st, &err) != 0) fail_msg("%s: exec: %s", what, err.msg);
    char w2[600];
    snprintf(w2, sizeof w2, "%s (executor)", what);
    compare(w2, st.hbm + cb.args[2].hbm_offset, k->dt, ref, absref, no, K);

    if (model) {
        nx_machine m;
        if (nx_machine_load(machine, &m, &err) != 0) fail_msg("machine: %s", err.msg);
        nx_state_reset(&st);
        memcpy(st.hbm + cb.args[0].hbm_offset, img, ni * sz);
        memcpy(st.hbm + cb.args[1].hbm_offset, filt, nf * sz);
        nx_sim_options opt = {1, 0};
        nx_sim_result res;
        memset(&res, 0, sizeof res);
        if (nx_sim_run(&m, &prog, &st, &opt, &res, &err) != 0) fail_msg("%s: model: %s", what, err.msg);
        if (nx_race_check(&prog, res.log, res.log_count, &err) != 0) fail_msg("%s: race detector: %s", what, err.msg);
        nx_sim_result_free(&res);
        snprintf(w2, sizeof w2, "%s (model)", what);
        compare(w2, st.hbm + cb.args[2].hbm_offset, k->dt, ref, absref, no, K);
    }
    nx_state_free(&st);
    nx_program_free(&prog);
    nx_attrs_free(&cb.attrs);
    free(img), free(filt), free(aimg), free(afilt), free(ref), free(absref);
}

static void check_case(const dw_leaf *L, const dw_case *k, uint64_t seed, int model) {
    check_case_on("trn2", L, k, seed, model);
}

static void expect_refusal(const dw_leaf *L, const dw_case *k, const char *msg) {
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 1);
    assert_non_null(b);
    call_buf cb;
    make_call(&cb, L, k);
    nx_error err;
    assert_int_equal(trace(L, b, &cb, &err), -1);
    assert_string_equal(err.msg, msg);
    nx_builder_free(b);
    nx_attrs_free(&cb.attrs);
}

/* ---- conv1d ---- */

static dw_case c1(nx_dtype dt, uint64_t n, uint64_t c, uint64_t w, uint64_t wf, int64_t s, int64_t lo, int64_t hi,
                  int64_t rd) {
    dw_case k = dw_default(dt, n, c, 1, w, 1, wf);
    k.stride[1] = s;
    k.lo[1] = lo;
    k.hi[1] = hi;
    k.rhs[1] = rd;
    return k;
}

static dw_case c2(nx_dtype dt, uint64_t n, uint64_t c, uint64_t h, uint64_t w, uint64_t kh, uint64_t kw, int64_t s,
                  int64_t pad) {
    dw_case k = dw_default(dt, n, c, h, w, kh, kw);
    k.stride[0] = k.stride[1] = s;
    k.lo[0] = k.hi[0] = k.lo[1] = k.hi[1] = pad;
    return k;
}


static void test_conv1d_shapes(void **state) {
    (void)state;
    const nx_dtype dts[] = {NX_DT_FP32, NX_DT_BF16, NX_DT_FP16, NX_DT_FP8_E4M3};
    for (int d = 0; d < 4; d++) {
        dw_case k = c1(dts[d], 2, 3, 37, 4, 1, 3, 0, 1); /* causal (Mamba-style) */
        check_case(&C1D, &k, 1 + (uint64_t)d, 1);
    }
    dw_case cases[] = {
        c1(NX_DT_FP32, 1, 1, 1, 1, 1, 0, 0, 1),      /* 1x1 everything */
        c1(NX_DT_FP32, 3, 129, 50, 1, 1, 0, 0, 1),   /* 1-tap kernel, C = 129 */
        c1(NX_DT_BF16, 1, 300, 64, 3, 1, 1, 1, 1),   /* C = 300 */
        c1(NX_DT_FP32, 513, 1, 20, 3, 2, 1, 1, 1),   /* N = 513, C = 1 */
        c1(NX_DT_FP32, 3, 7, 5, 9, 1, 4, 4, 1),      /* kernel larger than the image */
        c1(NX_DT_FP32, 2, 5, 40, 2, 5, 0, 1, 1),     /* stride > kernel */
        c1(NX_DT_BF16, 2, 40, 33, 3, 2, 2, 3, 3),    /* rhs_dilation, asymmetric padding */
        c1(NX_DT_FP32, 1, 9, 30, 3, 1, -2, -1, 1),   /* negative padding crops */
        c1(NX_DT_FP16, 4, 33, 70, 5, 3, 6, 6, 2),    /* C = 33: tiles span images */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&C1D, &cases[i], 10 + i, 1);
}

static void test_conv1d_long(void **state) {
    (void)state;
    /* W long enough to be cut into several chunks with halos */
    dw_case k = c1(NX_DT_FP32, 1, 130, 40000, 5, 1, 2, 2, 1);
    check_case(&C1D, &k, 99, 1);
}

static void test_conv1d_random(void **state) {
    (void)state;
    test_rng r = {12345};
    const nx_dtype dts[] = {NX_DT_FP32, NX_DT_BF16, NX_DT_FP16};
    for (int i = 0; i < 12; i++) {
        uint64_t wf = 1 + test_rng_next(&r) % 6;
        int64_t s = 1 + (int64_t)(test_rng_next(&r) % 4), rd = 1 + (int64_t)(test_rng_next(&r) % 3);
        int64_t lo = (int64_t)(test_rng_next(&r) % 5), hi = (int64_t)(test_rng_next(&r) % 5);
        uint64_t w = 1 + test_rng_next(&r) % 90;
        if (out_size((int64_t)w, (int64_t)wf, s, lo, hi, 1, rd) < 1) w += (wf - 1) * (uint64_t)rd;
        dw_case k = c1(dts[i % 3], 1 + test_rng_next(&r) % 4, 1 + test_rng_next(&r) % 200, w, wf, s, lo, hi, rd);
        check_case(&C1D, &k, 100 + (uint64_t)i, 1);
    }
}

static void test_conv1d_refusals(void **state) {
    (void)state;
    dw_case k = c1(NX_DT_FP32, 1, 4, 10, 3, 1, 0, 0, 1);
    k.lhs[1] = 2;
    expect_refusal(&C1D, &k,
                   "Conv1d_depthwise_bf01_oi01_bf01: attribute lhs_dilation=[1,2] is not supported (this leaf takes "
                   "lhs_dilation [1,1] only)");
    k = c1(NX_DT_FP32, 1, 4, 10, 3, 1, 0, 0, 1);
    k.h = 2;
    expect_refusal(&C1D, &k, "Conv1d_depthwise_bf01_oi01_bf01: operand 0 (img): dim 2 (H) is 2, a conv1d image has H = 1");
    k = c1(NX_DT_FP32, 1, 4, 10, 3, 1, 0, 0, 1);
    k.lo[0] = 1;
    expect_refusal(&C1D, &k,
                   "Conv1d_depthwise_bf01_oi01_bf01: attribute padding=[[1,0],[0,0]] is not supported (a conv1d takes "
                   "padding [0,0] on dim 0)");
    k = c1(NX_DT_FP32, 1, 4, 10, 3, 1, 0, 0, 1);
    k.fgc = 1;
    expect_refusal(&C1D, &k,
                   "Conv1d_depthwise_bf01_oi01_bf01: operand 1 (filt): dim 1 (i) is 1 but operand 0 (img) features 4 / "
                   "feature_group_count 1 = 4");
    k = c1(NX_DT_FP32, 1, 4, 10, 3, 0, 0, 0, 1);
    k.stride[1] = 0;
    expect_refusal(&C1D, &k, "Conv1d_depthwise_bf01_oi01_bf01: attribute stride=[1,0]: entries must be >= 1");
}

/* ---- conv2d_depthwise_f01b_o01i_bf01 ---- */

static void test_f01b_shapes(void **state) {
    (void)state;
    const nx_dtype dts[] = {NX_DT_FP32, NX_DT_BF16, NX_DT_FP16, NX_DT_FP8_E4M3, NX_DT_FP8_E5M2};
    for (int d = 0; d < 5; d++) {
        dw_case k = c2(dts[d], 2, 5, 9, 7, 3, 3, 1, 1);
        check_case(&F01B, &k, 200 + (uint64_t)d, 1);
    }
    dw_case cases[] = {
        c2(NX_DT_FP32, 1, 1, 1, 1, 1, 1, 1, 0),     /* 1x1 everything */
        c2(NX_DT_BF16, 3, 129, 6, 5, 1, 1, 1, 0),   /* 1x1 kernel, C = 129 */
        c2(NX_DT_FP32, 1, 300, 5, 6, 3, 3, 2, 1),   /* C = 300, stride 2 */
        c2(NX_DT_BF16, 513, 3, 3, 4, 2, 2, 1, 1),   /* N = 513 */
        c2(NX_DT_FP32, 2, 4, 3, 2, 5, 4, 1, 3),     /* kernel larger than the image */
        c2(NX_DT_FP32, 2, 6, 11, 12, 2, 2, 4, 0),   /* stride > kernel */
        c2(NX_DT_FP32, 1, 33, 8, 9, 3, 3, 1, -1),   /* negative padding, C = 33 */
        c2(NX_DT_BF16, 1, 70, 20, 30, 3, 3, 1, 1),  /* C = 70: one tap per matmul */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&F01B, &cases[i], 210 + i, 1);
}

static void test_f01b_dilations(void **state) {
    (void)state;
    /* the depthwise input gradient of a stride-2 3x3 conv: lhs_dilation 2,
     * padding 1/2 (a transposed conv) */
    dw_case k = c2(NX_DT_FP32, 2, 8, 5, 6, 3, 3, 1, 0);
    k.lhs[0] = k.lhs[1] = 2;
    k.lo[0] = k.lo[1] = 1;
    k.hi[0] = k.hi[1] = 2;
    check_case(&F01B, &k, 300, 1);
    /* lhs and rhs dilation with stride, asymmetric padding */
    k = c2(NX_DT_BF16, 3, 20, 7, 9, 3, 2, 2, 0);
    k.lhs[0] = 3, k.lhs[1] = 2, k.rhs[0] = 2, k.rhs[1] = 3;
    k.lo[0] = 2, k.hi[0] = 0, k.lo[1] = 1, k.hi[1] = 4;
    check_case(&F01B, &k, 301, 1);
    /* rhs dilation alone, wide image */
    k = c2(NX_DT_FP16, 1, 16, 6, 700, 2, 3, 1, 2);
    k.rhs[0] = 2, k.rhs[1] = 2;
    check_case(&F01B, &k, 302, 1);
}

static void test_f01b_random(void **state) {
    (void)state;
    test_rng r = {777};
    const nx_dtype dts[] = {NX_DT_FP32, NX_DT_BF16, NX_DT_FP16};
    for (int i = 0; i < 12; i++) {
        dw_case k = dw_default(dts[i % 3], 1 + test_rng_next(&r) % 4, 1 + test_rng_next(&r) % 150,
                               1 + test_rng_next(&r) % 12, 1 + test_rng_next(&r) % 12, 1 + test_rng_next(&r) % 4,
                               1 + test_rng_next(&r) % 4);
        for (int d = 0; d < 2; d++) {
            k.stride[d] = 1 + (int64_t)(test_rng_next(&r) % 3);
            k.lhs[d] = 1 + (int64_t)(test_rng_next(&r) % 3);
            k.rhs[d] = 1 + (int64_t)(test_rng_next(&r) % 2);
            k.lo[d] = (int64_t)(test_rng_next(&r) % 4) - 1;
            k.hi[d] = (int64_t)(test_rng_next(&r) % 4) - 1;
        }
        uint64_t *in[2] = {&k.h, &k.w}, kk[2] = {k.kh, k.kw};
        for (int d = 0; d < 2; d++)
            while (out_size((int64_t)*in[d], (int64_t)kk[d], k.stride[d], k.lo[d], k.hi[d], k.lhs[d], k.rhs[d]) < 1)
                (*in[d])++;
        check_case(&F01B, &k, 400 + (uint64_t)i, 1);
    }
}

static void test_f01b_refusals(void **state) {
    (void)state;
    dw_case k = c2(NX_DT_FP32, 1, 4, 5, 5, 3, 3, 1, 1);
    k.fgc = 2;
    expect_refusal(&F01B, &k,
                   "conv2d_depthwise_f01b_o01i_bf01: operand 1 (filt): dim 3 (i) is 1 but operand 0 (img) features 4 / "
                   "feature_group_count 2 = 2");
    /* a filter of 2 per channel (channel multiplier 2): a valid conv, not this leaf's */
    k = c2(NX_DT_FP32, 1, 4, 5, 5, 3, 3, 1, 1);
    k.mult = 2;
    expect_refusal(&F01B, &k,
                   "conv2d_depthwise_f01b_o01i_bf01: operand 1 (filt): dim 0 (o) is 8: channel multiplier 2 is not "
                   "supported (this leaf takes o = C = 4)");
    k = c2(NX_DT_FP32, 1, 4, 2, 2, 5, 5, 1, 0);
    expect_refusal(&F01B, &k,
                   "conv2d_depthwise_f01b_o01i_bf01: conv spatial dim 0: the window (5 taps, rhs_dilation 1) does not "
                   "fit the input (2, lhs_dilation 1, padding [0,0]): no output");
    k = c2(NX_DT_BF16, 1, 4, 5, 5, 3, 3, 1, 1);
    k.filt_dt = (int)NX_DT_FP32;
    expect_refusal(&F01B, &k,
                   "conv2d_depthwise_f01b_o01i_bf01: operand 1 (filt): dtype fp32 differs from operand 0 (img)'s bf16");
    k = c2(NX_DT_INT8, 1, 4, 5, 5, 3, 3, 1, 1);
    expect_refusal(&F01B, &k,
                   "conv2d_depthwise_f01b_o01i_bf01: operand 0 (img): dtype int8 is not one of fp32, bf16, fp16, "
                   "fp8_e4m3, fp8_e5m2");
}

/* ---- conv2d_column_packing_1 ---- */

static void test_cp1_shapes(void **state) {
    (void)state;
    const nx_dtype dts[] = {NX_DT_FP32, NX_DT_BF16, NX_DT_FP16, NX_DT_FP8_E4M3, NX_DT_FP8_E5M2};
    for (int d = 0; d < 5; d++) {
        dw_case k = c2(dts[d], 1, 6, 9, 7, 3, 3, 1, 1);
        check_case(&CP1, &k, 500 + (uint64_t)d, 1);
    }
    dw_case cases[] = {
        c2(NX_DT_FP32, 1, 1, 1, 1, 1, 1, 1, 0),     /* 1x1 everything */
        c2(NX_DT_BF16, 1, 129, 6, 5, 1, 1, 1, 0),   /* 1x1 kernel, C = 129 */
        c2(NX_DT_FP32, 1, 300, 5, 6, 3, 3, 2, 1),   /* C = 300, stride 2 */
        c2(NX_DT_FP32, 1, 4, 3, 2, 5, 4, 1, 3),     /* kernel larger than the image */
        c2(NX_DT_FP32, 1, 6, 11, 12, 2, 2, 4, 0),   /* stride > kernel */
        c2(NX_DT_FP32, 1, 33, 8, 9, 3, 3, 1, -1),   /* negative padding, C = 33 (2 column groups) */
        c2(NX_DT_BF16, 1, 70, 20, 30, 3, 3, 1, 1),  /* C = 70: one diagonal per pass */
        c2(NX_DT_BF16, 1, 32, 40, 40, 3, 3, 1, 1),  /* C = 32: 4 replicas x 2 column groups */
        c2(NX_DT_FP32, 1, 3, 13, 700, 3, 5, 1, 2),  /* wide rows: chunks of part of a row */
        c2(NX_DT_FP32, 1, 2, 30, 4, 7, 1, 3, 3),    /* tall kernel, few channels */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&CP1, &cases[i], 510 + i, 1);
    dw_case k = c2(NX_DT_BF16, 1, 20, 15, 14, 3, 3, 2, 1);
    k.rhs[0] = 2, k.rhs[1] = 3, k.lo[1] = 3, k.hi[1] = 0;
    check_case(&CP1, &k, 530, 1);
}

/* 81 passes: more stationaries than the leaf keeps, so each is rebuilt per
 * band (the pass-by-pass order) */
static void test_cp1_big_kernel(void **state) {
    (void)state;
    dw_case k = c2(NX_DT_BF16, 1, 100, 14, 13, 9, 9, 1, 4);
    check_case(&CP1, &k, 540, 1);
    k = c2(NX_DT_FP32, 1, 20, 3, 40, 1, 70, 1, 30); /* a long kernel row */
    check_case(&CP1, &k, 541, 1);
    k = c2(NX_DT_FP32, 1, 5, 12, 12, 9, 9, 1, 4);
    check_case(&F01B, &k, 542, 1);
    dw_case c = c1(NX_DT_FP32, 2, 70, 500, 100, 3, 50, 49, 2); /* a 100-tap conv1d */
    check_case(&C1D, &c, 543, 1);
}

static void test_cp1_random(void **state) {
    (void)state;
    test_rng r = {4242};
    const nx_dtype dts[] = {NX_DT_FP32, NX_DT_BF16, NX_DT_FP16};
    for (int i = 0; i < 14; i++) {
        dw_case k = dw_default(dts[i % 3], 1, 1 + test_rng_next(&r) % 140, 1 + test_rng_next(&r) % 14,
                               1 + test_rng_next(&r) % 14, 1 + test_rng_next(&r) % 5, 1 + test_rng_next(&r) % 5);
        for (int d = 0; d < 2; d++) {
            k.stride[d] = 1 + (int64_t)(test_rng_next(&r) % 3);
            k.rhs[d] = 1 + (int64_t)(test_rng_next(&r) % 3);
            k.lo[d] = (int64_t)(test_rng_next(&r) % 5) - 1;
            k.hi[d] = (int64_t)(test_rng_next(&r) % 5) - 1;
        }
        uint64_t *in[2] = {&k.h, &k.w}, kk[2] = {k.kh, k.kw};
        for (int d = 0; d < 2; d++)
            while (out_size((int64_t)*in[d], (int64_t)kk[d], k.stride[d], k.lo[d], k.hi[d], 1, k.rhs[d]) < 1)
                (*in[d])++;
        check_case(&CP1, &k, 600 + (uint64_t)i, 1);
    }
}

static void test_cp1_refusals(void **state) {
    (void)state;
    dw_case k = c2(NX_DT_FP32, 2, 4, 5, 5, 3, 3, 1, 1);
    expect_refusal(&CP1, &k,
                   "conv2d_column_packing_1: operand 0 (img): batch 2 is not supported (this leaf takes N = 1; "
                   "conv2d_depthwise_f01b_o01i_bf01 takes any batch)");
    k = c2(NX_DT_FP32, 1, 4, 5, 5, 3, 3, 1, 1);
    k.lhs[0] = 2;
    expect_refusal(&CP1, &k,
                   "conv2d_column_packing_1: attribute lhs_dilation=[2,1] is not supported (this leaf takes "
                   "lhs_dilation [1,1] only)");
}

/* ---- the trn1 preset: a smaller SBUF, DVE and POOL sharing the SBUF port,
 * DVE and ACT sharing PSUM ---- */

static void test_trn1(void **state) {
    (void)state;
    dw_case k = c1(NX_DT_BF16, 3, 129, 300, 4, 1, 3, 0, 1);
    check_case_on("trn1", &C1D, &k, 700, 1);
    k = c2(NX_DT_FP32, 1, 40, 17, 19, 3, 3, 1, 1);
    check_case_on("trn1", &CP1, &k, 701, 1);
    k = c2(NX_DT_BF16, 2, 40, 9, 11, 3, 3, 1, 0);
    k.lhs[0] = k.lhs[1] = 2;
    k.lo[0] = k.lo[1] = k.hi[0] = k.hi[1] = 2;
    check_case_on("trn1", &F01B, &k, 702, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv1d_shapes),
        cmocka_unit_test(test_conv1d_long),
        cmocka_unit_test(test_conv1d_random),
        cmocka_unit_test(test_conv1d_refusals),
        cmocka_unit_test(test_cp1_shapes),
        cmocka_unit_test(test_cp1_big_kernel),
        cmocka_unit_test(test_cp1_random),
        cmocka_unit_test(test_cp1_refusals),
        cmocka_unit_test(test_f01b_shapes),
        cmocka_unit_test(test_f01b_dilations),
        cmocka_unit_test(test_f01b_random),
        cmocka_unit_test(test_f01b_refusals),
        cmocka_unit_test(test_trn1),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
