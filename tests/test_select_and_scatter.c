/* SelectAndScatter: the reference (nx_ref_select_and_scatter) against
 * StableHLO's published example and hand-worked max-pool gradients, and the
 * leaf select_and_scatter_kernel against the reference through the
 * leaf-case suite (the run path, on the functional executor and the SystemC
 * model with the race check, the backends bit for bit): the
 * example as a rank-4 op, ties, all-negative windows at a padded border,
 * windows larger than the image, stride > window, 1x1 images, strides and
 * padding over N and C, negative padding, init_value, every float dtype,
 * bands of rows and columns, random shapes; and the refusals. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/ref/ref.h"
#include "kernels/select_and_scatter/select_and_scatter.h"
#include "leaf_cases.h"
#include "support.h"

/* ---- attributes ---- */

typedef struct attr_buf {
    nx_attr items[4];
    nx_value lists[3][NX_SAS_MAX_DIMS];
    nx_value pairs[NX_SAS_MAX_DIMS][2];
    char names[4][32];
    nx_attrs attrs;
} attr_buf;

typedef struct sas_case {
    uint32_t rank;
    uint64_t shape[NX_SAS_MAX_DIMS];
    int64_t window[NX_SAS_MAX_DIMS], stride[NX_SAS_MAX_DIMS], lo[NX_SAS_MAX_DIMS], hi[NX_SAS_MAX_DIMS];
    double init;
    nx_dtype dt;
} sas_case;

static nx_attr *add_attr(attr_buf *a, const char *name) {
    nx_attr *at = &a->items[a->attrs.count];
    snprintf(a->names[a->attrs.count], sizeof a->names[0], "%s", name);
    at->name = a->names[a->attrs.count++];
    a->attrs.items = a->items;
    return at;
}

static void int_list(attr_buf *a, int li, const char *name, const int64_t *v, uint32_t n) {
    nx_attr *at = add_attr(a, name);
    at->value.kind = NX_VAL_LIST;
    at->value.count = n;
    at->value.items = a->lists[li];
    for (uint32_t i = 0; i < n; i++) {
        a->lists[li][i].kind = NX_VAL_INT;
        a->lists[li][i].i = v[i];
    }
}

static void make_attrs(attr_buf *a, const sas_case *c) {
    memset(a, 0, sizeof *a);
    int_list(a, 0, "window_dimensions", c->window, c->rank);
    int_list(a, 1, "window_strides", c->stride, c->rank);
    nx_attr *p = add_attr(a, "padding");
    p->value.kind = NX_VAL_LIST;
    p->value.count = c->rank;
    p->value.items = a->lists[2];
    for (uint32_t i = 0; i < c->rank; i++) {
        a->pairs[i][0] = (nx_value){.kind = NX_VAL_INT, .i = c->lo[i]};
        a->pairs[i][1] = (nx_value){.kind = NX_VAL_INT, .i = c->hi[i]};
        a->lists[2][i] = (nx_value){.kind = NX_VAL_LIST, .items = a->pairs[i], .count = 2};
    }
    nx_attr *in = add_attr(a, "init_value");
    in->value.kind = NX_VAL_FLOAT;
    in->value.f = c->init;
}

static void params_of(const sas_case *c, nx_sas_params *p, uint64_t *src_shape) {
    attr_buf a;
    make_attrs(&a, c);
    nx_error err;
    if (nx_sas_params_read(&a.attrs, c->rank, p, &err) != 0) fail_msg("params: %s", err.msg);
    if (nx_sas_source_shape(p, c->shape, src_shape, &err) != 0) fail_msg("source shape: %s", err.msg);
}

static uint64_t count_of(const uint64_t *shape, uint32_t rank) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < rank; i++) n *= shape[i];
    return n;
}

/* ---- the reference on published and hand-worked cases ---- */

static void test_ref_stablehlo_example(void **state) {
    (void)state;
    /* StableHLO's select_and_scatter example */
    const float x[8] = {1, 5, 2, 5, 3, 6, 4, 4}, src[4] = {5, 6, 7, 8};
    const float want[8] = {0, 0, 0, 0, 5, 14, 7, 0};
    sas_case c = {.rank = 2, .shape = {4, 2}, .window = {3, 1}, .stride = {2, 1}, .lo = {0, 0}, .hi = {1, 0}};
    nx_sas_params p;
    uint64_t ss[NX_SAS_MAX_DIMS];
    params_of(&c, &p, ss);
    assert_int_equal(ss[0], 2);
    assert_int_equal(ss[1], 2);
    float out[8];
    nx_error err;
    assert_int_equal(nx_ref_select_and_scatter(x, src, NX_DT_FP32, c.shape, &p, out, &err), 0);
    assert_memory_equal(out, want, sizeof want);
}

/* A 3x3 / stride 2 / pad 1 max-pool gradient worked by hand: all-negative
 * values (the padding must never win), a tie (the first wins) and
 * overlapping windows that add. */
static void test_ref_maxpool_by_hand(void **state) {
    (void)state;
    const float x[16] = {-5, -1, -7, -2,  /* row 0 */
                         -3, -1, -6, -9,  /* row 1: -1 ties row 0's -1 */
                         -8, -4, -2, -3,  /* row 2 */
                         -6, -5, -4, -2}; /* row 3 */
    const float src[4] = {10, 20, 30, 40};
    /* windows (padded rows/cols -1..1, 1..3): top-left covers rows 0..1,
     * cols 0..1 -> max -1 first at (0,1); top-right covers rows 0..1, cols
     * 1..3 -> -1 at (0,1) again; bottom-left rows 1..3 cols 0..1 -> -1 at
     * (1,1); bottom-right rows 1..3 cols 1..3 -> -1 at (1,1). */
    float want[16] = {0};
    want[1] = 30;
    want[5] = 70;
    sas_case c = {.rank = 2, .shape = {4, 4}, .window = {3, 3}, .stride = {2, 2}, .lo = {1, 1}, .hi = {1, 1}};
    nx_sas_params p;
    uint64_t ss[NX_SAS_MAX_DIMS];
    params_of(&c, &p, ss);
    float out[16];
    nx_error err;
    assert_int_equal(nx_ref_select_and_scatter(x, src, NX_DT_FP32, c.shape, &p, out, &err), 0);
    assert_memory_equal(out, want, sizeof want);
}

static void test_params_refusals(void **state) {
    (void)state;
    sas_case c = {.rank = 4, .shape = {1, 1, 4, 4}, .window = {1, 1, 3, 3}, .stride = {1, 1, 0, 2}};
    attr_buf a;
    make_attrs(&a, &c);
    nx_sas_params p;
    nx_error err;
    assert_int_equal(nx_sas_params_read(&a.attrs, 4, &p, &err), -1);
    assert_string_equal(err.msg, "attribute window_strides: entry 2 is 0 (must be >= 1)");
    c.stride[2] = 1;
    c.window[3] = 7;
    make_attrs(&a, &c);
    assert_int_equal(nx_sas_params_read(&a.attrs, 4, &p, &err), 0);
    uint64_t ss[4];
    assert_int_equal(nx_sas_source_shape(&p, c.shape, ss, &err), -1);
    assert_string_equal(err.msg, "dim 3: the window of 7 does not fit the padded operand (4 + 0 + 0 = 4)");
    make_attrs(&a, &c);
    a.attrs.items = &a.items[1];
    a.attrs.count = 3;
    assert_int_equal(nx_sas_params_read(&a.attrs, 4, &p, &err), -1);
    assert_string_equal(err.msg, "attribute window_dimensions: missing (one window size per operand dim)");
}

/* ---- the leaf against the reference ---- */

/* Values of the dtype, NaN-free; `levels` > 0 draws from a few integers
 * (many ties), else uniform in [-4, 4). */
static void fill_values(uint8_t *p, uint64_t n, nx_dtype dt, uint64_t seed, int levels, double shift) {
    test_rng r = {seed * 0x9E3779B97F4A7C15ull + 11};
    size_t es = nx_dtype_size(dt);
    for (uint64_t i = 0; i < n; i++) {
        double v = levels > 0 ? (double)(test_rng_next(&r) % (uint64_t)levels) - levels / 2
                              : test_rng_uniform(&r, -4, 4);
        nx_dtype_store(dt, p + i * es, v + shift);
    }
}

/* The leaf case of SelectAndScatter: operand, source (shape ss), out. */
static void make_case(leaf_case *lc, const char *what, const sas_case *c, nx_dtype src_dt, const uint64_t *ss,
                      const attr_buf *a) {
    leaf_case_init(lc, what, "SelectAndScatter");
    leaf_case_operand(lc, "operand", c->dt, 4, c->shape);
    leaf_case_operand(lc, "source", src_dt, 4, ss);
    leaf_case_result(lc, "out", c->dt, 4, c->shape);
    nx_error err;
    nx_attrs_free(&lc->op.attrs);
    if (nx_attrs_copy(&lc->op.attrs, &a->attrs, &err) != 0) fail_msg("%s: %s", what, err.msg);
}

static void check(const sas_case *c, int levels, double shift, int model, const char *machine, const char *label) {
    char what[320];
    snprintf(what, sizeof what,
             "%s: %s [%llu,%llu,%llu,%llu] window [%lld,%lld,%lld,%lld] stride [%lld,%lld,%lld,%lld] pad "
             "[%lld,%lld,%lld,%lld | %lld,%lld,%lld,%lld] init %g%s%s",
             label, nx_dtype_name(c->dt), (unsigned long long)c->shape[0], (unsigned long long)c->shape[1],
             (unsigned long long)c->shape[2], (unsigned long long)c->shape[3], (long long)c->window[0],
             (long long)c->window[1], (long long)c->window[2], (long long)c->window[3], (long long)c->stride[0],
             (long long)c->stride[1], (long long)c->stride[2], (long long)c->stride[3], (long long)c->lo[0],
             (long long)c->lo[1], (long long)c->lo[2], (long long)c->lo[3], (long long)c->hi[0], (long long)c->hi[1],
             (long long)c->hi[2], (long long)c->hi[3], c->init, machine ? " " : "", machine ? machine : "");
    nx_sas_params p;
    uint64_t ss[NX_SAS_MAX_DIMS];
    params_of(c, &p, ss);
    attr_buf a;
    make_attrs(&a, c);
    uint64_t nx = count_of(c->shape, 4), ns = count_of(ss, 4);
    size_t es = nx_dtype_size(c->dt);
    uint8_t *x = malloc(nx * es), *s = malloc(ns * es);
    assert_non_null(x);
    assert_non_null(s);
    fill_values(x, nx, c->dt, nx + 3 * (uint64_t)c->window[2], levels, shift);
    fill_values(s, ns, c->dt, ns + 17, 0, 0);
    /* the rules' exact tolerance compares values (-0 == +0: with an
     * init_value other than +0 the leaf documents that only the sign of
     * zeros may differ), the backends bit for bit */
    leaf_case lc;
    make_case(&lc, what, c, c->dt, ss, &a);
    if (machine) snprintf(lc.machine, sizeof lc.machine, "%s", machine);
    lc.backends = LEAF_FUNCTIONAL | (model ? LEAF_MODEL : 0);
    lc.inputs[0] = x;
    lc.inputs[1] = s;
    leaf_case_check(&lc, NULL);
    leaf_case_free(&lc);
    free(x);
    free(s);
}

static sas_case pool2d(nx_dtype dt, uint64_t n, uint64_t ch, uint64_t h, uint64_t w, int64_t wh, int64_t ww, int64_t sh,
                       int64_t sw, int64_t plo_h, int64_t phi_h, int64_t plo_w, int64_t phi_w) {
    sas_case c = {.rank = 4, .shape = {n, ch, h, w}, .window = {1, 1, wh, ww}, .stride = {1, 1, sh, sw},
                  .lo = {0, 0, plo_h, plo_w}, .hi = {0, 0, phi_h, phi_w}, .dt = dt};
    return c;
}

/* StableHLO's example as a rank-4 op: operand [1, 1, 4, 2] (N = C = 1),
 * window [1, 1, 3, 1], strides [1, 1, 2, 1], padding [[0,0],[0,0],[0,1],[0,0]]. */
static void test_leaf_stablehlo_example(void **state) {
    (void)state;
    sas_case c = pool2d(NX_DT_FP32, 1, 1, 4, 2, 3, 1, 2, 1, 0, 1, 0, 0);
    nx_sas_params p;
    uint64_t ss[4];
    params_of(&c, &p, ss);
    const float x[8] = {1, 5, 2, 5, 3, 6, 4, 4}, src[4] = {5, 6, 7, 8};
    const float want[8] = {0, 0, 0, 0, 5, 14, 7, 0};
    attr_buf a;
    make_attrs(&a, &c);
    /* the reference gives StableHLO's result, and so does the leaf (on every backend) */
    nx_error err;
    float got[8];
    assert_int_equal(nx_ref_select_and_scatter(x, src, NX_DT_FP32, c.shape, &p, got, &err), 0);
    assert_memory_equal(got, want, sizeof want);
    leaf_case lc;
    make_case(&lc, "StableHLO example", &c, NX_DT_FP32, ss, &a);
    lc.inputs[0] = x;
    lc.inputs[1] = src;
    leaf_case_report rep;
    leaf_case_check(&lc, &rep);
    assert_memory_equal(rep.results[0], want, sizeof want); /* bit for bit: +0 where nothing lands */
    leaf_case_report_free(&rep);
    leaf_case_free(&lc);
}

static void test_leaf_maxpool_grad(void **state) {
    (void)state;
    /* ResNet's stem pool (3x3, stride 2, pad 1), small */
    sas_case c = pool2d(NX_DT_FP32, 2, 3, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1);
    check(&c, 0, 0, 1, NULL, "3x3/2 pad 1");
    check(&c, 5, 0, 1, "trn1", "ties");
    /* all negative (every window at the border sees padding) */
    check(&c, 0, -10, 1, NULL, "all negative");
    /* every value -inf: each window selects its first real element, which
     * ties the padding's fill */
    check(&c, 0, -INFINITY, 1, NULL, "all -inf");
    c.dt = NX_DT_BF16;
    check(&c, 3, -2, 1, NULL, "bf16 ties, negative");
}

static void test_leaf_windows(void **state) {
    (void)state;
    sas_case big = pool2d(NX_DT_FP32, 1, 2, 3, 2, 5, 4, 1, 2, 2, 2, 1, 2); /* window larger than the image */
    check(&big, 0, -1, 1, NULL, "window > image");
    sas_case gap = pool2d(NX_DT_FP32, 2, 2, 11, 10, 2, 2, 3, 4, 0, 0, 1, 0); /* stride > window */
    check(&gap, 4, 0, 1, NULL, "stride > window");
    sas_case one = pool2d(NX_DT_FP32, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0); /* 1x1 images */
    check(&one, 0, 0, 1, NULL, "1x1");
    sas_case one_pad = pool2d(NX_DT_FP16, 3, 2, 1, 1, 3, 3, 2, 2, 1, 1, 1, 1);
    check(&one_pad, 0, -3, 1, NULL, "1x1 padded");
    sas_case crop = pool2d(NX_DT_FP32, 1, 3, 9, 8, 3, 2, 2, 1, -1, -2, 1, -1); /* negative padding crops */
    check(&crop, 0, 0, 1, NULL, "negative padding");
    sas_case row = pool2d(NX_DT_FP32, 2, 2, 1, 17, 1, 4, 1, 3, 0, 0, 2, 2); /* a 1-D window */
    check(&row, 3, 0, 1, NULL, "1-D");
    sas_case padonly = pool2d(NX_DT_FP32, 1, 2, 2, 2, 2, 2, 1, 1, 3, 0, 0, 3); /* windows of padding only */
    check(&padonly, 0, 0, 1, NULL, "padding-only windows");
}

static void test_leaf_planes(void **state) {
    (void)state;
    /* strides and padding over N and C (windows of 1): some operand planes
     * are never selected from and stay init_value */
    sas_case c = pool2d(NX_DT_FP32, 5, 4, 6, 7, 2, 3, 2, 2, 0, 1, 1, 0);
    c.stride[0] = 2;
    c.lo[0] = 1;
    c.hi[0] = 1;
    c.stride[1] = 3;
    c.hi[1] = 2;
    check(&c, 0, 0, 1, NULL, "N/C strides");
    c.init = 1.5;
    check(&c, 0, 0, 1, NULL, "init_value");
    sas_case many = pool2d(NX_DT_FP32, 3, 70, 5, 6, 2, 2, 2, 2, 0, 0, 1, 1); /* 210 planes: two tiles */
    check(&many, 0, 0, 1, NULL, "210 planes");
}

static void test_leaf_every_dtype(void **state) {
    (void)state;
    static const nx_dtype dts[5] = {NX_DT_FP32, NX_DT_BF16, NX_DT_FP16, NX_DT_FP8_E4M3, NX_DT_FP8_E5M2};
    for (int i = 0; i < 5; i++) {
        sas_case c = pool2d(dts[i], 2, 2, 9, 10, 3, 3, 2, 2, 1, 1, 1, 1);
        check(&c, 0, 0, i < 2, NULL, "dtype");
        check(&c, 7, -6, 0, NULL, "dtype ties");
    }
}

/* Bands: one plane (row bands for parallelism, interior bands of one class
 * on partitions), and rows so wide that column bands are needed. */
static void test_leaf_bands(void **state) {
    (void)state;
    sas_case tall = pool2d(NX_DT_FP32, 1, 1, 203, 31, 3, 3, 2, 2, 1, 1, 1, 1);
    check(&tall, 0, 0, 1, NULL, "row bands");
    check(&tall, 4, -3, 1, "trn1", "row bands, ties");
    sas_case wide = pool2d(NX_DT_BF16, 1, 1, 5, 30000, 3, 3, 2, 2, 1, 1, 1, 1);
    check(&wide, 0, 0, 1, NULL, "column bands");
    sas_case huge = pool2d(NX_DT_FP32, 1, 2, 20, 24, 16, 16, 4, 4, 2, 2, 2, 2); /* 256 positions: fp32 indices */
    check(&huge, 3, 0, 1, NULL, "16x16 window");
    sas_case odd = pool2d(NX_DT_FP32, 2, 1, 57, 23, 4, 3, 3, 2, 2, 1, 0, 2);
    check(&odd, 6, 0, 1, NULL, "row bands, stride 3");
}

static void test_leaf_random(void **state) {
    (void)state;
    test_rng r = {77};
    static const nx_dtype dts[5] = {NX_DT_FP32, NX_DT_BF16, NX_DT_FP16, NX_DT_FP8_E4M3, NX_DT_FP8_E5M2};
    for (int i = 0; i < 14; i++) {
        sas_case c;
        for (;;) {
            uint64_t h = 1 + test_rng_next(&r) % 19, w = 1 + test_rng_next(&r) % 19;
            int64_t wh = 1 + (int64_t)(test_rng_next(&r) % 5), ww = 1 + (int64_t)(test_rng_next(&r) % 5);
            int64_t sh = 1 + (int64_t)(test_rng_next(&r) % 4), sw = 1 + (int64_t)(test_rng_next(&r) % 4);
            int64_t l0 = (int64_t)(test_rng_next(&r) % 4) - 1, h0 = (int64_t)(test_rng_next(&r) % 4) - 1;
            int64_t l1 = (int64_t)(test_rng_next(&r) % 4) - 1, h1 = (int64_t)(test_rng_next(&r) % 4) - 1;
            c = pool2d(dts[test_rng_next(&r) % 5], 1 + test_rng_next(&r) % 3, 1 + test_rng_next(&r) % 5, h, w, wh, ww, sh,
                       sw, l0, h0, l1, h1);
            if ((int64_t)h + l0 + h0 >= wh && (int64_t)w + l1 + h1 >= ww) break;
        }
        check(&c, (int)(test_rng_next(&r) % 2) * 6, 0, i % 3 == 0, i % 2 ? "trn1" : NULL, "random");
    }
}

static void expect_refusal(const sas_case *c, nx_dtype src_dt, const uint64_t *src_shape, const char *msg) {
    attr_buf a;
    make_attrs(&a, c);
    leaf_case lc;
    make_case(&lc, "refusal", c, src_dt, src_shape, &a);
    nx_error err;
    assert_int_equal(leaf_case_trace_leaf(&lc, select_and_scatter_kernel, &err), -1);
    assert_string_equal(err.msg, msg);
    leaf_case_free(&lc);
}

static void test_leaf_refusals(void **state) {
    (void)state;
    sas_case c = pool2d(NX_DT_FP32, 2, 4, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0);
    const uint64_t ss[4] = {2, 4, 4, 4}, bad[4] = {2, 4, 4, 3};
    expect_refusal(&c, NX_DT_FP32, bad, "operand 1 (source): shape must be the window counts [2,4,4,4]");
    expect_refusal(&c, NX_DT_BF16, ss, "operand 1 (source): dtype bf16 differs from operand 0 (operand)'s fp32");
    sas_case cw = c;
    cw.window[1] = 2;
    cw.stride[1] = 2;
    const uint64_t ssc[4] = {2, 2, 4, 4};
    expect_refusal(&cw, NX_DT_FP32, ssc,
                   "attribute window_dimensions: dim 1 (C) has a window of 2: select_and_scatter_kernel windows H and W "
                   "only (windows of 1 over N and C)");
    sas_case ci = c;
    ci.dt = NX_DT_INT32;
    expect_refusal(&ci, NX_DT_INT32, ss,
                   "operand 0 (operand): dtype int32: select_and_scatter_kernel takes float dtypes (fp32, bf16, fp16, "
                   "fp8_e4m3, fp8_e5m2)");
    /* an init_value past the dtype's largest finite value would fill the
     * output with inf (or saturate) silently: refused; the largest runs */
    sas_case cb = c;
    cb.init = 1e308;
    expect_refusal(&cb, NX_DT_FP32, ss, "attribute init_value: 1e+308 is outside fp32's finite range (+-3.40282e+38)");
    cb.init = -65520;
    cb.dt = NX_DT_FP16;
    expect_refusal(&cb, NX_DT_FP16, ss, "attribute init_value: -65520 is outside fp16's finite range (+-65504)");
    cb.init = 449;
    cb.dt = NX_DT_FP8_E4M3;
    expect_refusal(&cb, NX_DT_FP8_E4M3, ss, "attribute init_value: 449 is outside fp8_e4m3's finite range (+-448)");
    nx_sas_params p = {.init = 0x1.fep127};
    nx_error err;
    assert_int_equal(nx_sas_init_check(&p, NX_DT_BF16, &err), 0);
    p.init = 0x1.fffffep127;
    assert_int_equal(nx_sas_init_check(&p, NX_DT_FP32, &err), 0);
    assert_int_equal(nx_sas_init_check(&p, NX_DT_BF16, &err), -1);
    p.init = 57344;
    assert_int_equal(nx_sas_init_check(&p, NX_DT_FP8_E5M2, &err), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_stablehlo_example), cmocka_unit_test(test_ref_maxpool_by_hand),
        cmocka_unit_test(test_params_refusals),       cmocka_unit_test(test_leaf_stablehlo_example),
        cmocka_unit_test(test_leaf_maxpool_grad),     cmocka_unit_test(test_leaf_windows),
        cmocka_unit_test(test_leaf_planes),           cmocka_unit_test(test_leaf_every_dtype),
        cmocka_unit_test(test_leaf_bands),            cmocka_unit_test(test_leaf_random),
        cmocka_unit_test(test_leaf_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
