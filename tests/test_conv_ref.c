/* The conv reference (kernels/ref/ref.h nx_ref_conv) and the conv label /
 * shape vocabulary it rests on (kernels/conv/conv_params.h).
 *
 * Checked against:
 *  - the published ONNX Conv and ConvTranspose examples (onnx/onnx,
 *    docs/Operators.md and onnx/backend/test/case/node/{conv,convtranspose}.py:
 *    test_basic_conv_with_padding, test_basic_conv_without_padding,
 *    test_conv_with_strides_padding, test_conv_with_strides_no_padding,
 *    test_conv_with_strides_and_asymmetric_padding, test_convtranspose_pad,
 *    test_convtranspose_pads, test_convtranspose_dilations), written as XLA
 *    convolutions: an ONNX ConvTranspose with strides s, kernel k, pads
 *    (b, e), output_padding op and dilation d is the convolution with
 *    lhs_dilation s, padding [(k-1)d - b, (k-1)d - e + op], rhs_dilation d,
 *    the kernel flipped and its two feature dims read as i, o (labels
 *    bf01_io01->bf01);
 *  - hand-worked 1-D cases for negative padding, stride > kernel, feature
 *    groups and batch groups (XLA's evaluator: output feature o of batch
 *    group g = o / (O/B) reads lhs batch b + g * N/B);
 *  - a direct sum over every output element, feature and tap (the 7-loop
 *    definition) on randomized shapes, attributes and dimension labels,
 *    with the tolerance 2 * K * 2^-24 * sum|terms| (two fp32 sums of K
 *    products in different orders; K = in-features x taps), plus half an
 *    ulp of the output dtype when it is narrower than fp32. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conv_cases.h"
#include "kernels/conv/conv_params.h"
#include "kernels/ref/ref.h"
#include "support.h"

/* Runs the reference on fp32 data and compares with `want` exactly (the
 * published examples are small integers: exact in fp32 in any order). */
static void run_exact(const char *labels, const nx_conv_params *p, const float *lhs, uint32_t nd,
                      const uint64_t *ls, const float *rhs, const uint64_t *rs, const uint64_t *os,
                      const float *want) {
    nx_ref_operand a = {lhs, NX_DT_FP32, nd, ls}, b = {rhs, NX_DT_FP32, nd, rs};
    uint64_t n = 1;
    for (uint32_t i = 0; i < nd; i++) n *= os[i];
    float *out = malloc(n * sizeof *out);
    assert_non_null(out);
    nx_error err;
    if (nx_ref_conv(labels, p, &a, &b, out, NX_DT_FP32, nd, os, &err) != 0) fail_msg("%s: %s", labels, err.msg);
    for (uint64_t i = 0; i < n; i++)
        if (out[i] != want[i]) fail_msg("%s: element %llu is %g, want %g", labels, (unsigned long long)i, out[i], want[i]);
    free(out);
}

static void iota_f(float *v, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) v[i] = (float)i;
}

static void ones_f(float *v, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) v[i] = 1.0f;
}

static nx_conv_params params2(int64_t sy, int64_t sx, int64_t ly, int64_t hy, int64_t lx, int64_t hx) {
    nx_conv_params p;
    nx_conv_params_default(&p, 2);
    p.stride[0] = sy;
    p.stride[1] = sx;
    p.pad_lo[0] = ly;
    p.pad_hi[0] = hy;
    p.pad_lo[1] = lx;
    p.pad_hi[1] = hx;
    return p;
}

/* ---- published examples ------------------------------------------------------- */

static void test_onnx_basic_conv(void **state) {
    (void)state;
    float x[25], w[9];
    iota_f(x, 25);
    ones_f(w, 9);
    const uint64_t xs[4] = {1, 1, 5, 5}, ws[4] = {1, 1, 3, 3};
    static const float with_pad[25] = {12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108,
                                       117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84};
    static const float without_pad[9] = {54, 63, 72, 99, 108, 117, 144, 153, 162};
    nx_conv_params p = params2(1, 1, 1, 1, 1, 1);
    const uint64_t o5[4] = {1, 1, 5, 5}, o3[4] = {1, 1, 3, 3};
    run_exact("bf01_oi01->bf01", &p, x, 4, xs, w, ws, o5, with_pad);
    p = params2(1, 1, 0, 0, 0, 0);
    run_exact("bf01_oi01->bf01", &p, x, 4, xs, w, ws, o3, without_pad);
}

static void test_onnx_conv_with_strides(void **state) {
    (void)state;
    float x[35], w[9];
    iota_f(x, 35);
    ones_f(w, 9);
    const uint64_t xs[4] = {1, 1, 7, 5}, ws[4] = {1, 1, 3, 3};
    static const float padded[12] = {12, 27, 24, 63, 108, 81, 123, 198, 141, 112, 177, 124};
    static const float unpadded[6] = {54, 72, 144, 162, 234, 252};
    static const float asym[8] = {21, 33, 99, 117, 189, 207, 171, 183};
    const uint64_t o43[4] = {1, 1, 4, 3}, o32[4] = {1, 1, 3, 2}, o42[4] = {1, 1, 4, 2};
    nx_conv_params p = params2(2, 2, 1, 1, 1, 1);
    run_exact("bf01_oi01->bf01", &p, x, 4, xs, w, ws, o43, padded);
    p = params2(2, 2, 0, 0, 0, 0);
    run_exact("bf01_oi01->bf01", &p, x, 4, xs, w, ws, o32, unpadded);
    /* ONNX pads [1, 0, 1, 0] = H begin 1, W begin 0, H end 1, W end 0 */
    p = params2(2, 2, 1, 1, 0, 0);
    run_exact("bf01_oi01->bf01", &p, x, 4, xs, w, ws, o42, asym);
}

/* The same ONNX case in the layout of the dense pixel-by-pixel leaf
 * (img H,C,W,N; filt KH,C,KW,O; out OH,OW,O,N): a 1x1 batch and feature
 * leave the element order unchanged. */
static void test_onnx_conv_in_leaf_labels(void **state) {
    (void)state;
    float x[35], w[9];
    iota_f(x, 35);
    ones_f(w, 9);
    const uint64_t xs[4] = {7, 1, 5, 1}, ws[4] = {3, 1, 3, 1}, os[4] = {4, 3, 1, 1};
    static const float padded[12] = {12, 27, 24, 63, 108, 81, 123, 198, 141, 112, 177, 124};
    nx_conv_params p = params2(2, 2, 1, 1, 1, 1);
    run_exact("0f1b_0i1o->01fb", &p, x, 4, xs, w, ws, os, padded);
}

static void test_onnx_convtranspose(void **state) {
    (void)state;
    float x[9], w[18];
    iota_f(x, 9);
    ones_f(w, 18);
    const uint64_t xs[4] = {1, 1, 3, 3}, ws[4] = {1, 2, 3, 3};
    /* test_convtranspose_pad: strides [3,2], output_padding [1,1] -> (1,2,10,8) */
    static const float row[3][8] = {{0, 0, 1, 1, 3, 2, 2, 0}, {3, 3, 7, 4, 9, 5, 5, 0}, {6, 6, 13, 7, 15, 8, 8, 0}};
    float want[160];
    for (int c = 0; c < 2; c++)
        for (int y = 0; y < 10; y++)
            for (int x2 = 0; x2 < 8; x2++) want[(c * 10 + y) * 8 + x2] = y < 9 ? row[y / 3][x2] : 0.0f;
    nx_conv_params p = params2(1, 1, 2, 3, 2, 3);
    p.lhs_dilation[0] = 3;
    p.lhs_dilation[1] = 2;
    const uint64_t o108[4] = {1, 2, 10, 8};
    run_exact("bf01_io01->bf01", &p, x, 4, xs, w, ws, o108, want);
    /* test_convtranspose_pads: strides [3,2], pads [1,2,1,2] -> (1,2,7,3) */
    static const float pads_rows[7][3] = {{1, 1, 3}, {1, 1, 3}, {7, 4, 9}, {7, 4, 9}, {7, 4, 9}, {13, 7, 15}, {13, 7, 15}};
    float want2[42];
    for (int c = 0; c < 2; c++)
        for (int y = 0; y < 7; y++)
            for (int x2 = 0; x2 < 3; x2++) want2[(c * 7 + y) * 3 + x2] = pads_rows[y][x2];
    p = params2(1, 1, 1, 1, 0, 0);
    p.lhs_dilation[0] = 3;
    p.lhs_dilation[1] = 2;
    const uint64_t o73[4] = {1, 2, 7, 3};
    run_exact("bf01_io01->bf01", &p, x, 4, xs, w, ws, o73, want2);
}

static void test_onnx_convtranspose_dilations(void **state) {
    (void)state;
    static const float x[9] = {3, 8, 1, 9, 5, 7, 3, 2, 6};
    static const float wflip[4] = {9, 1, 2, 7}; /* ONNX W [[7,2],[1,9]] flipped */
    static const float want[25] = {21, 56, 13, 16, 2, 63, 35, 67, 10, 14, 24, 22, 76,
                                   76, 21, 9, 5, 88, 45, 63, 3, 2, 33, 18, 54};
    const uint64_t xs[4] = {1, 1, 3, 3}, ws[4] = {1, 1, 2, 2}, os[4] = {1, 1, 5, 5};
    nx_conv_params p = params2(1, 1, 2, 2, 2, 2);
    p.rhs_dilation[0] = p.rhs_dilation[1] = 2;
    run_exact("bf01_io01->bf01", &p, x, 4, xs, wflip, ws, os, want);
}

/* ---- hand-worked 1-D cases ---------------------------------------------------- */

static void test_hand_negative_padding_stride(void **state) {
    (void)state;
    /* in [1..6], k [1, 10], stride 3, padding [-1, 0]: padded length 5,
     * out (5 - 2) / 3 + 1 = 2; out[o] = in[3o+1] + 10 in[3o+2] */
    static const float x[6] = {1, 2, 3, 4, 5, 6}, w[2] = {1, 10}, want[2] = {32, 65};
    const uint64_t xs[3] = {1, 1, 6}, ws[3] = {1, 1, 2}, os[3] = {1, 1, 2};
    nx_conv_params p;
    nx_conv_params_default(&p, 1);
    p.stride[0] = 3;
    p.pad_lo[0] = -1;
    run_exact("bf0_oi0->bf0", &p, x, 3, xs, w, ws, os, want);
    /* stride 4 > kernel 2, padding [1, 2]: padded 9 -> out 2; u = 4o - 1 + k */
    static const float want2[2] = {10, 4 + 50};
    p.stride[0] = 4;
    p.pad_lo[0] = 1;
    p.pad_hi[0] = 2;
    run_exact("bf0_oi0->bf0", &p, x, 3, xs, w, ws, os, want2);
    /* a kernel longer than the input, padding [3, 3]: in 2, k 4 -> out 5 */
    static const float x3[2] = {1, 2}, w3[4] = {1, 2, 3, 4}, want3[5] = {4, 3 + 8, 2 + 6, 1 + 4, 2};
    const uint64_t xs3[3] = {1, 1, 2}, ws3[3] = {1, 1, 4}, os3[3] = {1, 1, 5};
    nx_conv_params_default(&p, 1);
    p.pad_lo[0] = p.pad_hi[0] = 3;
    run_exact("bf0_oi0->bf0", &p, x3, 3, xs3, w3, ws3, os3, want3);
}

static void test_hand_groups(void **state) {
    (void)state;
    /* feature groups: 4 features in 2 groups; o0 = f0 + f1, o1 = f2 - f3 */
    static const float x[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    static const float w[4] = {1, 1, 1, -1};
    static const float want[6] = {5, 7, 9, -3, -3, -3};
    const uint64_t xs[3] = {1, 4, 3}, ws[3] = {2, 2, 1}, os[3] = {1, 2, 3};
    nx_conv_params p;
    nx_conv_params_default(&p, 1);
    p.feature_group_count = 2;
    run_exact("bf0_oi0->bf0", &p, x, 3, xs, w, ws, os, want);
    /* depthwise with channel multiplier 2: G = C = 2, O = 4, I = 1 */
    static const float x2[4] = {1, 2, 3, 4}, w2[4] = {1, -1, 10, 100};
    static const float want2[8] = {1, 2, -1, -2, 30, 40, 300, 400};
    const uint64_t xs2[3] = {1, 2, 2}, ws2[3] = {4, 1, 1}, os2[3] = {1, 4, 2};
    p.feature_group_count = 2;
    run_exact("bf0_oi0->bf0", &p, x2, 3, xs2, w2, ws2, os2, want2);
    /* batch groups: batch 4 in 2 groups, O = 2: o0 reads batch b, o1 batch b + 2 */
    static const float w3[2] = {1, 2};
    static const float want3[12] = {1, 2, 3, 14, 16, 18, 4, 5, 6, 20, 22, 24};
    const uint64_t xs3[3] = {4, 1, 3}, ws3[3] = {2, 1, 1}, os3[3] = {2, 2, 3};
    nx_conv_params_default(&p, 1);
    p.batch_group_count = 2;
    run_exact("bf0_oi0->bf0", &p, x, 3, xs3, w3, ws3, os3, want3);
}

/* ---- direct sum on random cases ----------------------------------------------- */

typedef struct rcase {
    char labels[32];
    nx_conv_layout L;
    nx_conv_params p;
    uint32_t nd;
    uint64_t ls[6], rs[6], os[6];
} rcase;

static void shuffle_chars(char *s, size_t n, test_rng *r) {
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(test_rng_next(r) % i);
        char t = s[i - 1];
        s[i - 1] = s[j];
        s[j] = t;
    }
}

static uint64_t rnd(test_rng *r, uint64_t lo, uint64_t hi) { return lo + test_rng_next(r) % (hi - lo + 1); }

/* A random valid case (retries until the window fits). */
static void make_case(rcase *c, test_rng *r) {
    for (;;) {
        memset(c, 0, sizeof *c);
        uint32_t ns = (uint32_t)rnd(r, 1, 2);
        char l[8] = "bf01", k[8] = "oi01", o[8] = "bf01";
        l[2 + ns] = k[2 + ns] = o[2 + ns] = 0;
        shuffle_chars(l, 2 + ns, r);
        shuffle_chars(k, 2 + ns, r);
        shuffle_chars(o, 2 + ns, r);
        snprintf(c->labels, sizeof c->labels, "%s_%s->%s", l, k, o);
        nx_error err;
        if (nx_conv_layout_parse(c->labels, &c->L, &err) != 0) fail_msg("%s", err.msg);
        nx_conv_params_default(&c->p, ns);
        c->nd = ns + 2;
        uint64_t groups = 1, mode = rnd(r, 0, 3);
        if (mode == 1) c->p.feature_group_count = (int64_t)(groups = rnd(r, 2, 3));
        if (mode == 2) c->p.batch_group_count = (int64_t)(groups = rnd(r, 2, 3));
        uint64_t batch = rnd(r, 1, 3) * (mode == 2 ? groups : 1);
        uint64_t inf = rnd(r, 1, 5), outf = rnd(r, 1, 3) * groups;
        c->ls[c->L.lhs_batch] = batch;
        c->ls[c->L.lhs_feature] = inf * (mode == 1 ? groups : 1);
        c->rs[c->L.rhs_in] = inf;
        c->rs[c->L.rhs_out] = outf;
        for (uint32_t d = 0; d < ns; d++) {
            c->ls[c->L.lhs_spatial[d]] = rnd(r, 1, 9);
            c->rs[c->L.rhs_spatial[d]] = rnd(r, 1, 4);
            c->p.stride[d] = (int64_t)rnd(r, 1, 3);
            c->p.pad_lo[d] = (int64_t)rnd(r, 0, 5) - 2;
            c->p.pad_hi[d] = (int64_t)rnd(r, 0, 5) - 2;
            c->p.lhs_dilation[d] = rnd(r, 0, 2) ? 1 : (int64_t)rnd(r, 2, 3);
            c->p.rhs_dilation[d] = rnd(r, 0, 2) ? 1 : (int64_t)rnd(r, 2, 3);
        }
        if (nx_conv_result_shape(&c->L, &c->p, c->nd, c->ls, c->nd, c->rs, "lhs", "rhs", c->os, &err) == 0) return;
    }
}

static uint64_t index_of(uint32_t nd, const uint64_t *shape, const uint64_t *idx) {
    uint64_t o = 0;
    for (uint32_t i = 0; i < nd; i++) o = o * shape[i] + idx[i];
    return o;
}

/* The definition, term by term, in double; also sum |terms| per output. */
static void direct_conv(const rcase *c, const double *lhs, const double *rhs, double *out, double *mag) {
    const nx_conv_layout *L = &c->L;
    const nx_conv_params *p = &c->p;
    uint32_t ns = L->spatial;
    uint64_t O = c->rs[L->rhs_out], I = c->rs[L->rhs_in], Bout = c->os[L->out_batch];
    uint64_t fg = (uint64_t)p->feature_group_count, bg = (uint64_t)p->batch_group_count;
    uint64_t oi[6] = {0}, total = 1;
    for (uint32_t i = 0; i < c->nd; i++) total *= c->os[i];
    for (uint64_t e = 0; e < total; e++) {
        uint64_t rest = e;
        for (uint32_t i = c->nd; i-- > 0;) {
            oi[i] = rest % c->os[i];
            rest /= c->os[i];
        }
        uint64_t b = oi[L->out_batch], o = oi[L->out_feature];
        uint64_t lb = b + (o / (O / bg)) * Bout, f0 = (o / (O / fg)) * I;
        double s = 0, m = 0;
        uint64_t taps = 1;
        for (uint32_t d = 0; d < ns; d++) taps *= c->rs[L->rhs_spatial[d]];
        for (uint64_t i = 0; i < I; i++) {
            for (uint64_t t = 0; t < taps; t++) {
                uint64_t li[6], ri[6], tr = t;
                int inside = 1;
                li[L->lhs_batch] = lb;
                li[L->lhs_feature] = f0 + i;
                ri[L->rhs_out] = o;
                ri[L->rhs_in] = i;
                for (uint32_t d = ns; d-- > 0;) {
                    uint64_t kd = c->rs[L->rhs_spatial[d]], k = tr % kd;
                    tr /= kd;
                    ri[L->rhs_spatial[d]] = k;
                    int64_t u = (int64_t)oi[L->out_spatial[d]] * p->stride[d] - p->pad_lo[d] +
                                (int64_t)k * p->rhs_dilation[d];
                    if (u < 0 || u % p->lhs_dilation[d]) {
                        inside = 0;
                        continue;
                    }
                    int64_t x = u / p->lhs_dilation[d];
                    if (x >= (int64_t)c->ls[L->lhs_spatial[d]]) inside = 0;
                    else li[L->lhs_spatial[d]] = (uint64_t)x;
                }
                if (!inside) continue;
                double term = lhs[index_of(c->nd, c->ls, li)] * rhs[index_of(c->nd, c->rs, ri)];
                s += term;
                m += fabs(term);
            }
        }
        out[e] = s;
        mag[e] = m;
        (void)taps;
    }
}

/* Random values exactly representable in dt, in [-2, 2). */
static void fill(void *buf, nx_dtype dt, uint64_t n, double *vals, test_rng *r) {
    size_t es = nx_dtype_size(dt);
    for (uint64_t i = 0; i < n; i++) {
        nx_dtype_store(dt, (unsigned char *)buf + i * es, test_rng_uniform(r, -2, 2));
        vals[i] = nx_dtype_load(dt, (unsigned char *)buf + i * es);
    }
}

static void check_random(nx_dtype in_dt, nx_dtype out_dt, int cases, uint64_t seed) {
    test_rng r = {seed};
    for (int t = 0; t < cases; t++) {
        rcase c;
        make_case(&c, &r);
        uint64_t nl = 1, nr = 1, no = 1;
        for (uint32_t i = 0; i < c.nd; i++) {
            nl *= c.ls[i];
            nr *= c.rs[i];
            no *= c.os[i];
        }
        size_t es = nx_dtype_size(in_dt);
        void *lb = malloc(nl * es), *rb = malloc(nr * es), *ob = malloc(no * nx_dtype_size(out_dt));
        double *lv = malloc(nl * sizeof *lv), *rv = malloc(nr * sizeof *rv);
        double *want = malloc(no * sizeof *want), *mag = malloc(no * sizeof *mag);
        assert_true(lb && rb && ob && lv && rv && want && mag);
        fill(lb, in_dt, nl, lv, &r);
        fill(rb, in_dt, nr, rv, &r);
        direct_conv(&c, lv, rv, want, mag);
        nx_ref_operand a = {lb, in_dt, c.nd, c.ls}, b = {rb, in_dt, c.nd, c.rs};
        nx_error err;
        if (nx_ref_conv(c.labels, &c.p, &a, &b, ob, out_dt, c.nd, c.os, &err) != 0)
            fail_msg("case %d %s: %s", t, c.labels, err.msg);
        uint64_t K = c.rs[c.L.rhs_in];
        for (uint32_t d = 0; d < c.L.spatial; d++) K *= c.rs[c.L.rhs_spatial[d]];
        for (uint64_t e = 0; e < no; e++) {
            double got = nx_dtype_load(out_dt, (unsigned char *)ob + e * nx_dtype_size(out_dt));
            double tol = 2.0 * (double)K * 0x1p-24 * mag[e] + 1e-30;
            /* rounding to a narrower output: half an ulp, at least half the
             * smallest subnormal step */
            if (out_dt != NX_DT_FP32) tol += conv_half_ulp(out_dt) * fabs(want[e]) + conv_tiny(out_dt);
            if (fabs(got - want[e]) > tol)
                fail_msg("case %d %s stride [%lld,%lld] pad [%lld,%lld]/[%lld,%lld] ld [%lld,%lld] rd [%lld,%lld] "
                         "fg %lld bg %lld: element %llu is %.9g, the direct sum %.9g (tolerance %.3g)",
                         t, c.labels, (long long)c.p.stride[0], (long long)c.p.stride[1], (long long)c.p.pad_lo[0],
                         (long long)c.p.pad_hi[0], (long long)c.p.pad_lo[1], (long long)c.p.pad_hi[1],
                         (long long)c.p.lhs_dilation[0], (long long)c.p.lhs_dilation[1],
                         (long long)c.p.rhs_dilation[0], (long long)c.p.rhs_dilation[1],
                         (long long)c.p.feature_group_count, (long long)c.p.batch_group_count,
                         (unsigned long long)e, got, want[e], tol);
        }
        free(lb);
        free(rb);
        free(ob);
        free(lv);
        free(rv);
        free(want);
        free(mag);
    }
}

static void test_random_vs_direct_sum_fp32(void **state) {
    (void)state;
    check_random(NX_DT_FP32, NX_DT_FP32, 400, 11);
}

static void test_random_vs_direct_sum_dtypes(void **state) {
    (void)state;
    check_random(NX_DT_BF16, NX_DT_BF16, 60, 12);
    check_random(NX_DT_FP16, NX_DT_FP32, 60, 13);
    check_random(NX_DT_FP8_E4M3, NX_DT_FP16, 60, 14);
    check_random(NX_DT_FP8_E5M2, NX_DT_BF16, 60, 15);
}

/* A large contraction takes several patch chunks (the chunking must not
 * change the result). */
static void test_chunked_patches(void **state) {
    (void)state;
    /* rows = 64 x 9 = 576, positions 100 x 100 = 10000 > 16 MiB / 576 / 4 */
    const uint64_t xs[4] = {1, 64, 100, 100}, ws[4] = {2, 64, 3, 3}, os[4] = {1, 2, 100, 100};
    uint64_t nl = 64 * 100 * 100, nr = 2 * 64 * 9, no = 2 * 100 * 100;
    float *x = malloc(nl * 4), *w = malloc(nr * 4), *out = malloc(no * 4);
    assert_true(x && w && out);
    test_rng r = {5};
    for (uint64_t i = 0; i < nl; i++) x[i] = (float)test_rng_uniform(&r, -1, 1);
    for (uint64_t i = 0; i < nr; i++) w[i] = (float)test_rng_uniform(&r, -1, 1);
    nx_conv_params p = params2(1, 1, 1, 1, 1, 1);
    nx_ref_operand a = {x, NX_DT_FP32, 4, xs}, b = {w, NX_DT_FP32, 4, ws};
    nx_error err;
    if (nx_ref_conv("bf01_oi01->bf01", &p, &a, &b, out, NX_DT_FP32, 4, os, &err) != 0) fail_msg("%s", err.msg);
    /* spot-check positions in the first and last chunks directly */
    static const uint64_t pos[][3] = {{0, 0, 0}, {1, 50, 7}, {0, 99, 99}, {1, 99, 0}, {0, 63, 64}};
    for (size_t t = 0; t < sizeof pos / sizeof pos[0]; t++) {
        uint64_t o = pos[t][0], y = pos[t][1], xx = pos[t][2];
        double s = 0, m = 0;
        for (uint64_t i = 0; i < 64; i++)
            for (int ky = 0; ky < 3; ky++)
                for (int kx = 0; kx < 3; kx++) {
                    int64_t iy = (int64_t)y + ky - 1, ix = (int64_t)xx + kx - 1;
                    if (iy < 0 || ix < 0 || iy >= 100 || ix >= 100) continue;
                    double term = (double)x[(i * 100 + (uint64_t)iy) * 100 + (uint64_t)ix] *
                                  (double)w[((o * 64 + i) * 3 + (uint64_t)ky) * 3 + (uint64_t)kx];
                    s += term;
                    m += fabs(term);
                }
        double got = out[(o * 100 + y) * 100 + xx];
        assert_true(fabs(got - s) <= 2 * 576 * 0x1p-24 * m);
    }
    free(x);
    free(w);
    free(out);
}

/* ---- errors ------------------------------------------------------------------- */

static void expect_labels_error(const char *labels, const char *msg) {
    nx_conv_layout L;
    nx_error err;
    assert_int_equal(nx_conv_layout_parse(labels, &L, &err), -1);
    assert_string_equal(err.msg, msg);
}

static void test_labels(void **state) {
    (void)state;
    nx_conv_layout L;
    nx_error err;
    assert_int_equal(nx_conv_layout_parse("0f1b_0i1o->01fb", &L, &err), 0);
    assert_int_equal(L.spatial, 2);
    assert_int_equal(L.lhs_batch, 3);
    assert_int_equal(L.lhs_feature, 1);
    assert_int_equal(L.lhs_spatial[0], 0);
    assert_int_equal(L.lhs_spatial[1], 2);
    assert_int_equal(L.rhs_out, 3);
    assert_int_equal(L.rhs_in, 1);
    assert_int_equal(L.out_feature, 2);
    assert_int_equal(L.out_batch, 3);
    assert_int_equal(L.out_spatial[1], 1);
    assert_string_equal(L.text, "0f1b_0i1o->01fb");
    assert_int_equal(nx_conv_layout_parse("fb01_io01->01bf", &L, &err), 0);
    assert_int_equal(L.rhs_in, 0);
    assert_int_equal(L.rhs_out, 1);
    assert_int_equal(L.out_batch, 2);
    assert_int_equal(nx_conv_layout_parse("bf0_oi0->bf0", &L, &err), 0);
    assert_int_equal(L.spatial, 1);
    expect_labels_error("bf01_oi0->bf01",
                        "conv labels \"bf01_oi0->bf01\": lhs, rhs and out must have the same spatial dims (2, 1, 2)");
    expect_labels_error("bf01-oi01", "conv labels \"bf01-oi01\": expected LHS_RHS->OUT, e.g. bf01_oi01->bf01");
    expect_labels_error("bb01_oi01->bf01",
                        "conv labels \"bb01_oi01->bf01\": lhs \"bb01\": 'b' is repeated or not one of b, f, 0..2");
    expect_labels_error("bf02_oi01->bf01", "conv labels \"bf02_oi01->bf01\": lhs \"bf02\": spatial digits must be 0..1");
    expect_labels_error("bf01_oo01->bf01",
                        "conv labels \"bf01_oo01->bf01\": rhs \"oo01\": 'o' is repeated or not one of o, i, 0..2");
    expect_labels_error("bf_oi->bf", "conv labels \"bf_oi->bf\": lhs \"bf\" must have 3..5 letters (b, f and 1..3 spatial digits)");
}

static void test_reference_errors(void **state) {
    (void)state;
    float x[16] = {0}, w[16] = {0}, out[64];
    nx_conv_params p;
    nx_conv_params_default(&p, 1);
    nx_error err;
    /* in-features do not match */
    const uint64_t xs[3] = {1, 4, 4}, ws[3] = {2, 3, 1}, os[3] = {1, 2, 4};
    nx_ref_operand a = {x, NX_DT_FP32, 3, xs}, b = {w, NX_DT_FP32, 3, ws};
    assert_int_equal(nx_ref_conv("bf0_oi0->bf0", &p, &a, &b, out, NX_DT_FP32, 3, os, &err), -1);
    assert_string_equal(err.msg, "conv reference rhs: dim 1 (i) is 3 but conv reference lhs features 4 / "
                                 "feature_group_count 1 = 4"
            " (layouts, labels bf0_oi0->bf0: conv reference lhs N,C,W, conv reference rhs O,C/G,KW, result N,O,OW)");
    /* the output shape given does not match */
    const uint64_t ws2[3] = {2, 4, 1}, bad[3] = {1, 2, 5};
    nx_ref_operand b2 = {w, NX_DT_FP32, 3, ws2};
    assert_int_equal(nx_ref_conv("bf0_oi0->bf0", &p, &a, &b2, out, NX_DT_FP32, 3, bad, &err), -1);
    assert_string_equal(err.msg, "conv reference: the output shape does not match the convolution's");
    /* the window does not fit */
    const uint64_t ws3[3] = {2, 4, 6};
    nx_ref_operand b3 = {w, NX_DT_FP32, 3, ws3};
    assert_int_equal(nx_ref_conv("bf0_oi0->bf0", &p, &a, &b3, out, NX_DT_FP32, 3, os, &err), -1);
    assert_string_equal(err.msg, "conv spatial dim 0: the window (6 taps, rhs_dilation 1) does not fit the input "
                                 "(4, lhs_dilation 1, padding [0,0]): no output"
            " (layouts, labels bf0_oi0->bf0: conv reference lhs N,C,W, conv reference rhs O,C/G,KW, result N,O,OW)");
    /* batch groups must divide the batch */
    p.batch_group_count = 2;
    assert_int_equal(nx_ref_conv("bf0_oi0->bf0", &p, &a, &b2, out, NX_DT_FP32, 3, os, &err), -1);
    assert_string_equal(err.msg, "conv reference lhs: dim 0 (b) of batch 1 is not divisible by batch_group_count 2"
            " (layouts, labels bf0_oi0->bf0: conv reference lhs N,C,W, conv reference rhs O,C/G,KW, result N,O,OW)");
}

static void test_out_size(void **state) {
    (void)state;
    assert_int_equal(nx_conv_out_size(224, 7, 2, 3, 3, 1, 1), 112);
    assert_int_equal(nx_conv_out_size(56, 3, 1, 1, 1, 1, 1), 56);
    assert_int_equal(nx_conv_out_size(56, 3, 2, 1, 1, 1, 1), 28);
    assert_int_equal(nx_conv_out_size(5, 3, 1, 0, 0, 1, 2), 1);  /* dilated kernel 5 */
    assert_int_equal(nx_conv_out_size(5, 3, 1, 0, 0, 1, 3), 0);  /* dilated kernel 7 > 5 */
    assert_int_equal(nx_conv_out_size(3, 3, 1, 2, 3, 3, 1), 10); /* dilated input 7 */
    assert_int_equal(nx_conv_out_size(6, 2, 3, -1, 0, 1, 1), 2);
    assert_int_equal(nx_conv_out_size(4, 1, 1, -3, -1, 1, 1), 0); /* cropped away */
    assert_int_equal(nx_conv_out_size(0, 1, 1, 0, 0, 1, 1), 0);
    assert_int_equal(nx_conv_out_size(4, 1, 0, 0, 0, 1, 1), 0);
    /* ResNet-50 conv1 weight gradient: 224 + 3 + 2 - ((112-1)*2+1) + 1 = 7 */
    assert_int_equal(nx_conv_out_size(224, 112, 1, 3, 2, 1, 2), 7);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_onnx_basic_conv),
        cmocka_unit_test(test_onnx_conv_with_strides),
        cmocka_unit_test(test_onnx_conv_in_leaf_labels),
        cmocka_unit_test(test_onnx_convtranspose),
        cmocka_unit_test(test_onnx_convtranspose_dilations),
        cmocka_unit_test(test_hand_negative_padding_stride),
        cmocka_unit_test(test_hand_groups),
        cmocka_unit_test(test_random_vs_direct_sum_fp32),
        cmocka_unit_test(test_random_vs_direct_sum_dtypes),
        cmocka_unit_test(test_chunked_patches),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_reference_errors),
        cmocka_unit_test(test_out_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
