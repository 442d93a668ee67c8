/* The depthwise forward convolution leaves (kernels/conv/depthwise/depthwise.h):
 * Conv1d_depthwise_bf01_oi01_bf01, conv2d_column_packing_1 and
 * conv2d_depthwise_f01b_o01i_bf01.
 *
 * Each case goes through the leaf-case suite (tests/conv_cases.h,
 * tests/leaf_cases.h): the leaf's registry entry on the run path in its
 * layouts, the program's ordering checked statically, run on the functional
 * executor and on the SystemC model with the race check, both outputs
 * compared with the convolution reference nx_ref_conv under the rules'
 * tolerance and with each other bit for bit, on pseudo-random inputs in
 * [-1, 1); then within the bound per output element (conv_cases.h):
 *   |got - ref| <= (2 K 2^-24 + p) S (1 + 2e) + 2 e |ref| + tiny
 * with K = KH*KW the taps (one input feature per group), S the conv of
 * |img| and |filt|, e half an ulp of the dtype (0 for fp32), tiny its
 * smallest subnormal, and p the unit roundoff of the products' dtype for
 * conv2d_depthwise_f01b_o01i_bf01 on bf16/fp16 inputs (it rounds each
 * product to the input dtype before the fp32 sum: 2^-8 bf16, 2^-11 fp16),
 * else 0 (the products are exact in fp32). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "conv_cases.h"
#include "leaf_cases.h"
#include "kernels/conv/depthwise/depthwise.h"
#include "registry/macro_op.h"
#include "registry/registry.h"
#include "kernels/conv/depthwise/depthwise_plan.h"
#include "support.h"

typedef struct dw_leaf {
    nx_leaf_fn fn;
    const char *key;
    const char *labels;
    int rounds_products; /* products rounded to the input dtype (bf16/fp16) */
} dw_leaf;

static const dw_leaf C1D = {conv1d_depthwise_bf01_oi01_bf01, "Conv1d_depthwise_bf01_oi01_bf01", "bf01_oi01->bf01", 0};
static const dw_leaf CP1 = {conv2d_column_packing_1, "conv2d_column_packing_1", "bf01_oi01->bf01", 0};
static const dw_leaf F01B = {conv2d_depthwise_f01b_o01i_bf01, "conv2d_depthwise_f01b_o01i_bf01", "f01b_o01i->bf01", 1};

/* One convolution: logical sizes and attributes. */
typedef struct dw_case {
    nx_dtype dt;
    uint64_t n, c, h, w, kh, kw;
    int64_t stride[2], lo[2], hi[2], lhs[2], rhs[2];
    int64_t fgc;    /* feature_group_count; 0 = C */
    uint64_t mult;  /* filters per channel (0 = 1): > 1 only in refusal tests */
    int filt_dt;    /* refusal tests: the filter's dtype; -1 = the image's */
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

/* The case in the leaf's layouts, its attributes as conv_check's text. */
static void to_conv_case(const dw_leaf *L, const dw_case *k, uint64_t seed, char *attrs, size_t len, conv_case *c) {
    memset(c, 0, sizeof *c);
    const uint64_t iv[4] = {k->n, k->c, k->h, k->w}, fv[4] = {k->c * (k->mult ? k->mult : 1), 1, k->kh, k->kw};
    for (int i = 0; i < 4; i++) {
        c->lhs[i] = iv[strchr("bf01", L->labels[i]) - "bf01"];
        c->rhs[i] = fv[strchr("oi01", L->labels[5 + i]) - "oi01"];
    }
    snprintf(attrs, len,
             "stride=[%lld,%lld];padding=[[%lld,%lld],[%lld,%lld]];lhs_dilation=[%lld,%lld];rhs_dilation=[%lld,%lld];"
             "feature_group_count=%lld;batch_group_count=1",
             (long long)k->stride[0], (long long)k->stride[1], (long long)k->lo[0], (long long)k->hi[0],
             (long long)k->lo[1], (long long)k->hi[1], (long long)k->lhs[0], (long long)k->lhs[1],
             (long long)k->rhs[0], (long long)k->rhs[1], (long long)(k->fgc ? k->fgc : (int64_t)k->c));
    c->labels = L->labels;
    c->dtype = k->dt;
    c->attrs = attrs;
    c->add_out_shape = 1; /* what the conv-attrs + out_shape builder passes */
    c->seed = seed;
}

/* The unit roundoff of the products f01b rounds to bf16/fp16 (fp8 inputs:
 * exact bf16 products). */
static double product_rounding(const dw_leaf *L, nx_dtype dt) {
    if (!L->rounds_products || (dt != NX_DT_BF16 && dt != NX_DT_FP16)) return 0;
    return conv_half_ulp(dt);
}

/* The full check of one case on machine `machine`; `model` 0 skips the
 * SystemC run. */
static void check_case_on(const char *machine, const dw_leaf *L, const dw_case *k, uint64_t seed, int model) {
    char attrs[256];
    conv_case c;
    to_conv_case(L, k, seed, attrs, sizeof attrs, &c);
    conv_check_opts o = {.machine = machine, .backends = model ? 0 : LEAF_FUNCTIONAL,
                         .product_rounding = product_rounding(L, k->dt), .filt_dtype = -1};
    conv_check_leaf_opts(L->fn, &c, &o);
}

static void check_case(const dw_leaf *L, const dw_case *k, uint64_t seed, int model) {
    check_case_on("trn2", L, k, seed, model);
}

static void expect_refusal(const dw_leaf *L, const dw_case *k, const char *msg) {
    char attrs[256];
    conv_case c;
    to_conv_case(L, k, 1, attrs, sizeof attrs, &c);
    conv_check_opts o = {.filt_dtype = k->filt_dt};
    conv_expect_refusal_opts(L->fn, &c, NULL, msg, &o);
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
    expect_refusal(&C1D, &k, "Conv1d_depthwise_bf01_oi01_bf01: operand 0 (img): dim 2 (H) is 2, a conv1d image has H = 1"
            " (img is N,C,1,W, filt C,1,1,KW)");
    k = c1(NX_DT_FP32, 1, 4, 10, 3, 1, 0, 0, 1);
    k.lo[0] = 1;
    expect_refusal(&C1D, &k,
                   "Conv1d_depthwise_bf01_oi01_bf01: attribute padding=[[1,0],[0,0]] is not supported (a conv1d takes "
                   "padding [0,0] on dim 0)");
    k = c1(NX_DT_FP32, 1, 4, 10, 3, 1, 0, 0, 1);
    k.fgc = 1;
    expect_refusal(&C1D, &k,
                   "Conv1d_depthwise_bf01_oi01_bf01: operand 1 (filt): dim 1 (i) is 1 but operand 0 (img) features 4 / "
                   "feature_group_count 1 = 4"
            " (layouts, labels bf01_oi01->bf01: operand 0 (img) N,C,H,W, operand 1 (filt) O,C/G,KH,KW, result N,O,OH,OW)");
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
                   "feature_group_count 2 = 2"
            " (layouts, labels f01b_o01i->bf01: operand 0 (img) C,H,W,N, operand 1 (filt) O,KH,KW,C/G, result N,O,OH,OW)");
    /* a filter of 2 per channel (channel multiplier 2): a valid conv, not this leaf's */
    k = c2(NX_DT_FP32, 1, 4, 5, 5, 3, 3, 1, 1);
    k.mult = 2;
    expect_refusal(&F01B, &k,
                   "conv2d_depthwise_f01b_o01i_bf01: operand 1 (filt): dim 0 (o) is 8: channel multiplier 2 is not "
                   "supported (this leaf takes o = C = 4"
            "; layouts, labels f01b_o01i->bf01: operand 0 (img) C,H,W,N, operand 1 (filt) O,KH,KW,C/G, result N,O,OH,OW)");
    k = c2(NX_DT_FP32, 1, 4, 2, 2, 5, 5, 1, 0);
    expect_refusal(&F01B, &k,
                   "conv2d_depthwise_f01b_o01i_bf01: conv spatial dim 0: the window (5 taps, rhs_dilation 1) does not "
                   "fit the input (2, lhs_dilation 1, padding [0,0]): no output"
            " (layouts, labels f01b_o01i->bf01: operand 0 (img) C,H,W,N, operand 1 (filt) O,KH,KW,C/G, result N,O,OH,OW)");
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
                   "conv2d_column_packing_1: operand 0 (img): batch 2 is not supported (this leaf takes N = 1, img 1,C,H,W; "
                   "conv2d_depthwise_f01b_o01i_bf01 takes any batch)");
    k = c2(NX_DT_FP32, 1, 4, 5, 5, 3, 3, 1, 1);
    k.stride[0] = 1ll << 30;
    expect_refusal(&CP1, &k,
                   "conv2d_column_packing_1: attributes stride=[1073741824,1], lhs_dilation=[1,1], "
                   "rhs_dilation=[1,1] with operand 0 (img) need access-pattern strides beyond 32 bits");
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

/* ---- the registry rules (registry/families/conv_depthwise.c) ---- */

static const nx_op_rules *rules_of(const char *key) {
    const nx_registry_entry *e = nx_registry_get(nx_get_internal_kernel_registry(), key);
    assert_non_null(e);
    assert_non_null(e->rules);
    return e->rules;
}

static void test_rules(void **state) {
    (void)state;
    /* the default ops: their result shapes and tolerances */
    static const struct {
        const char *key;
        uint64_t out[4];
        const char *tol;
    } defaults[] = {
        {"Conv1d_depthwise_bf01_oi01_bf01", {2, 160, 1, 300}, "K=4: 9 x eps(fp32)"},
        {"conv2d_column_packing_1", {1, 48, 28, 28}, "K=9: 28 x eps(fp32)"},
        {"conv2d_depthwise_f01b_o01i_bf01", {2, 40, 28, 28}, "K=9: 28 x eps(fp32)"},
    };
    nx_error err;
    for (int i = 0; i < 3; i++) {
        const nx_op_rules *r = rules_of(defaults[i].key);
        nx_macro_op op;
        nx_macro_op_init(&op);
        assert_int_equal(nx_macro_op_set_func_name(&op, defaults[i].key, &err), 0);
        assert_int_equal(r->default_op(&op, &err), 0);
        if (r->infer_results(&op, NULL, &err) != 0) fail_msg("%s: %s", defaults[i].key, err.msg);
        assert_int_equal(op.n_results, 1);
        assert_int_equal(op.results[0].ndims, 4);
        assert_memory_equal(op.results[0].shape, defaults[i].out, sizeof defaults[i].out);
        nx_tolerance t;
        assert_int_equal(nx_op_rules_tolerance(r, &op, 0, &t, &err), 0);
        assert_string_equal(t.text, defaults[i].tol);
        nx_macro_op_free(&op);
    }
    /* an absent feature_group_count is C; an explicit 1 is kept (and refused) */
    const nx_op_rules *r = rules_of("conv2d_column_packing_1");
    static const uint64_t img[4] = {1, 8, 10, 10}, filt[4] = {8, 1, 3, 3}, want[4] = {1, 8, 8, 8};
    nx_macro_op op;
    nx_macro_op_init(&op);
    assert_int_equal(nx_macro_op_set_func_name(&op, "conv2d_column_packing_1", &err), 0);
    assert_int_equal(nx_macro_op_add_operand(&op, "img", NX_DT_BF16, 4, img, &err), 0);
    assert_int_equal(nx_macro_op_add_operand(&op, "filt", NX_DT_BF16, 4, filt, &err), 0);
    assert_int_equal(r->infer_results(&op, NULL, &err), 0);
    assert_memory_equal(op.results[0].shape, want, sizeof want);
    const nx_value *g = nx_attrs_get(&op.attrs, "feature_group_count");
    assert_non_null(g);
    assert_int_equal(g->i, 8);
    nx_tolerance t;
    assert_int_equal(nx_op_rules_tolerance(r, &op, 0, &t, &err), 0);
    assert_string_equal(t.text, "K=9: 1 x eps(bf16)");
    nx_macro_op_free(&op);
    nx_macro_op_init(&op);
    assert_int_equal(nx_macro_op_set_func_name(&op, "conv2d_column_packing_1", &err), 0);
    assert_int_equal(nx_macro_op_add_operand(&op, "img", NX_DT_FP32, 4, img, &err), 0);
    assert_int_equal(nx_macro_op_add_operand(&op, "filt", NX_DT_FP32, 4, filt, &err), 0);
    nx_value one = nx_value_int(1);
    assert_int_equal(nx_attrs_set(&op.attrs, "feature_group_count", &one, &err), 0);
    assert_int_equal(r->infer_results(&op, NULL, &err), -1);
    assert_string_equal(err.msg, "operand 1 (filt): dim 1 (i) is 1 but operand 0 (img) features 8 / "
                                 "feature_group_count 1 = 8"
            " (layouts, labels bf01_oi01->bf01: operand 0 (img) N,C,H,W, operand 1 (filt) O,C/G,KH,KW, result N,O,OH,OW)");
    nx_macro_op_free(&op);
    /* f01b's bf16 products widen its tolerance by sqrt(K) */
    r = rules_of("conv2d_depthwise_f01b_o01i_bf01");
    static const uint64_t img2[4] = {8, 10, 10, 1}, filt2[4] = {8, 3, 3, 1};
    nx_macro_op_init(&op);
    assert_int_equal(nx_macro_op_set_func_name(&op, "conv2d_depthwise_f01b_o01i_bf01", &err), 0);
    assert_int_equal(nx_macro_op_add_operand(&op, "img", NX_DT_BF16, 4, img2, &err), 0);
    assert_int_equal(nx_macro_op_add_operand(&op, "filt", NX_DT_BF16, 4, filt2, &err), 0);
    assert_int_equal(r->infer_results(&op, NULL, &err), 0);
    assert_int_equal(nx_op_rules_tolerance(r, &op, 0, &t, &err), 0);
    assert_string_equal(t.text, "K=9, bf16 products: 4 x eps(bf16)");
    nx_macro_op_free(&op);
}

/* The schedules' engine ratios come from the machine's clocks as exact
 * fractions: on both presets a DVE cycle is 5/4 of an ACT cycle, POOL runs
 * at the ACT clock, and POOL takes 5/7 of the columns against DVE's two
 * cycles per element; a machine with other clocks gets its own. */
static void test_clock_ratios(void **state) {
    (void)state;
    static const char *const presets[2] = {"trn1", "trn2"};
    for (int i = 0; i < 2; i++) {
        nx_machine m = test_machine(presets[i]);
        uint32_t n, d;
        nx_dw_ratio(m.clock_ghz[NX_ENG_ACT] / m.clock_ghz[NX_ENG_DVE], &n, &d);
        assert_int_equal(n, 5), assert_int_equal(d, 4);
        nx_dw_ratio(m.clock_ghz[NX_ENG_ACT] / m.clock_ghz[NX_ENG_POOL], &n, &d);
        assert_int_equal(n, 1), assert_int_equal(d, 1);
        double pool = m.clock_ghz[NX_ENG_POOL], dve = m.clock_ghz[NX_ENG_DVE] / m.dve_cycles_per_elem_two_inputs;
        nx_dw_ratio(pool / (pool + dve), &n, &d);
        assert_int_equal(n, 5), assert_int_equal(d, 7);
    }
    uint32_t n, d;
    nx_dw_ratio(1.0 / 3.0, &n, &d);
    assert_int_equal(n, 1), assert_int_equal(d, 3);
    nx_dw_ratio(3.14159265358979, &n, &d); /* none within 1e-9 below 65: the last convergent */
    assert_int_equal(n, 22), assert_int_equal(d, 7);
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
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_clock_ratios),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
