/* The weight-gradient convolutions #5 Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh,
 * #7 conv2d_column_packing and #8 conv2d_column_packing_io10
 * (kernels/conv/wgrad/wgrad.h) against independent references.
 *
 * 1. Against the conv reference (nx_ref_conv), through the leaf-case suite
 *    (tests/conv_cases.h): every case runs on the run path, order-checked,
 *    on the functional executor and on the SystemC model with the race
 *    check, compared element by element under the rules' tolerance
 *    (docs/parts/conv.md) and the backends bit for bit. Shapes: C_in/N/C_out of 1, 2 or 3 and 129/130
 *    (two tiles), 1x1 outputs and outputs larger than the gradient, strides
 *    1-3, rhs_dilation 1-3, negative and asymmetric padding, every PE
 *    dtype, a scaled-down ResNet-50 conv1 weight gradient; then tilings
 *    pinned through the plan's limits (column groups with tails, several
 *    row blocks with dead rows, column blocks, chunked accumulators, passes
 *    that share images, deferred folds, two mask sizes), the trn1 preset.
 * 2. The gradient property, on the registry's run path (nx_run_op, the
 *    model with the race check): for a forward convolution y = conv(x, W)
 *    and L(W) = <conv(x, W), g>, the central difference (L(W + hV) - L(W -
 *    hV)) / 2h, computed in fp64 on the host by a direct sum, equals
 *    <leaf(x, g), V> for random W, V and g, within the leaf's error bound
 *    summed against |V| (L is linear in W, so the difference is exact up to
 *    fp64 rounding).
 * 3. Refusals: the exact messages (lhs_dilation, feature_group_count, the
 *    depthwise batch_group_count rule, dtypes, shapes).
 * 4. The plan reads its machine: the bench's ResNet-50 conv1 weight
 *    gradient tiles differently on trn1 and trn2 because of the DMA bytes a
 *    PE cycle is worth, and giving trn2 trn1's figure gives trn1's choice. */
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
#include "kernels/author/author.h"
#include "kernels/conv/wgrad/wgrad.h"
#include "kernels/conv/wgrad/wgrad_core.h"
#include "registry/check.h"
#include "registry/lower.h"
#include "registry/macro_op.h"
#include "registry/run/run.h"
#include "sim/machine.h"
#include "support.h"

#define L5 "fb01_io01->01bf"
#define L8 "fb01_io10->01bf"
#define K5 conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh
#define N5 "Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh"
#define K7 conv2d_column_packing
#define N7 "conv2d_column_packing"
#define K8 conv2d_column_packing_io10
#define N8 "conv2d_column_packing_io10"

/* #5: img (CI, N, H, W), filt (CI, CO, HF, WF). */
static void check5(nx_dtype dt, uint64_t CI, uint64_t N, uint64_t H, uint64_t W, uint64_t CO, uint64_t HF,
                   uint64_t WF, const char *attrs, uint64_t seed) {
    conv_case c = {L5, dt, {CI, N, H, W}, {CI, CO, HF, WF}, attrs, 1, seed};
    conv_check_leaf(K5, &c, 1);
}

/* #7 / #8: img (CI, C, H, W), filt (CI, C, HF, WF) / (CI, C, WF, HF),
 * batch_group_count = C. */
static void check7(int io10, nx_dtype dt, uint64_t CI, uint64_t C, uint64_t H, uint64_t W, uint64_t HF, uint64_t WF,
                   const char *attrs, uint64_t seed) {
    char buf[256];
    snprintf(buf, sizeof buf, "batch_group_count=%llu%s%s", (unsigned long long)C, attrs ? ";" : "", attrs ? attrs : "");
    conv_case c = {io10 ? L8 : L5, dt, {CI, C, H, W}, {CI, C, io10 ? WF : HF, io10 ? HF : WF}, buf, 1, seed};
    conv_check_leaf(io10 ? K8 : K7, &c, 1);
}

static void test_basic(void **state) {
    (void)state;
    check5(NX_DT_FP32, 2, 3, 6, 7, 4, 4, 5, NULL, 1);
    check5(NX_DT_BF16, 3, 2, 9, 9, 5, 5, 5, "padding=[[1,1],[1,1]]", 2);
    check7(0, NX_DT_FP32, 2, 3, 6, 7, 4, 5, NULL, 3);
    check7(1, NX_DT_FP32, 2, 3, 6, 7, 4, 5, "padding=[[1,1],[1,1]]", 4);
}

/* Edge shapes on #5: CI (the contraction features) 1, 3, 130; N 1,
 * 2, 129; CO 1, 3, 130; 1x1 outputs and outputs larger than the gradient;
 * strides and rhs_dilation 1-3; negative padding. */
static void test_shapes5(void **state) {
    (void)state;
    check5(NX_DT_FP32, 1, 1, 5, 6, 1, 5, 6, NULL, 10);                                 /* 1x1 out, all 1 */
    check5(NX_DT_BF16, 130, 2, 4, 5, 3, 2, 3, NULL, 11);                               /* 2 ci tiles */
    check5(NX_DT_FP32, 3, 129, 6, 6, 5, 4, 4, NULL, 12);                               /* N = 129 */
    check5(NX_DT_BF16, 2, 3, 5, 5, 130, 3, 3, "padding=[[1,1],[1,1]]", 13);            /* CO = 130 */
    check5(NX_DT_FP32, 3, 2, 9, 8, 4, 2, 3, "padding=[[1,0],[0,1]]", 14);              /* out > gradient */
    check5(NX_DT_FP32, 2, 3, 13, 11, 3, 4, 3, "stride=[2,3];padding=[[1,2],[2,1]]", 15); /* strides */
    check5(NX_DT_BF16, 4, 2, 15, 14, 3, 5, 4, "rhs_dilation=[3,2];padding=[[2,-1],[-2,3]]", 16);
    check5(NX_DT_FP32, 3, 3, 12, 16, 4, 5, 5, "stride=[3,1];rhs_dilation=[2,3];padding=[[-1,-2],[3,-3]]", 17);
    check5(NX_DT_FP32, 2, 1, 4, 4, 2, 6, 6, "padding=[[3,2],[2,3]]", 18);              /* gradient > image */
}

/* Edge shapes on #7 and #8: C (channels = groups) 1, 3, 130; CI (the
 * forward batch) 1, 2, 129; the same windows. */
static void test_shapes7(void **state) {
    (void)state;
    for (int io10 = 0; io10 < 2; io10++) {
        check7(io10, NX_DT_FP32, 1, 1, 5, 6, 5, 6, NULL, 20);
        check7(io10, NX_DT_BF16, 2, 130, 5, 4, 3, 3, "padding=[[1,1],[1,1]]", 21);
        check7(io10, NX_DT_FP32, 129, 3, 6, 5, 4, 4, NULL, 22);
        check7(io10, NX_DT_FP32, 2, 3, 9, 8, 2, 3, "padding=[[1,0],[0,1]]", 23);
        check7(io10, NX_DT_BF16, 3, 5, 13, 11, 4, 3, "stride=[2,3];padding=[[1,2],[2,1]]", 24);
        check7(io10, NX_DT_FP32, 2, 4, 15, 14, 5, 4, "rhs_dilation=[3,2];padding=[[2,-1],[-2,3]]", 25);
        check7(io10, NX_DT_FP32, 3, 2, 12, 16, 5, 5, "stride=[3,1];rhs_dilation=[2,3];padding=[[-1,-2],[3,-3]]", 26);
    }
}

/* Every dtype the PE takes, with fp32 accumulation and one rounding. */
static void test_dtypes(void **state) {
    (void)state;
    static const nx_dtype dts[] = {NX_DT_FP32, NX_DT_BF16, NX_DT_FP16, NX_DT_FP8_E4M3, NX_DT_FP8_E5M2};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        check5(dts[i], 5, 3, 10, 9, 6, 4, 4, "rhs_dilation=[2,2];padding=[[1,0],[1,1]]", 30 + i);
        check7(0, dts[i], 3, 7, 8, 9, 6, 7, "padding=[[1,1],[1,1]]", 40 + i);
        check7(1, dts[i], 3, 7, 8, 9, 6, 7, "padding=[[1,1],[1,1]]", 50 + i);
    }
}

/* ResNet-50 conv1's weight gradient structure at 1/7 of its size (the full
 * size is in bench/wgrad_bench.c): out [7,7,3,16] from img [4,3,32,32] and
 * the gradient [4,16,16,16], padding [[3,2],[3,2]], rhs_dilation [2,2];
 * and a MobileNet-like depthwise layer's at 1/4 of its size. */
static void test_scaled_bench_shapes(void **state) {
    (void)state;
    check5(NX_DT_BF16, 4, 3, 32, 32, 16, 16, 16, "padding=[[3,2],[3,2]];rhs_dilation=[2,2]", 60);
    check5(NX_DT_FP32, 4, 3, 32, 32, 16, 16, 16, "padding=[[3,2],[3,2]];rhs_dilation=[2,2]", 61);
    check7(0, NX_DT_BF16, 8, 8, 28, 28, 28, 28, "padding=[[1,1],[1,1]]", 62);
    check7(1, NX_DT_FP32, 8, 8, 28, 28, 28, 28, "padding=[[1,1],[1,1]]", 63);
}

/* Random shapes (a fixed seed): any of the three keys, any PE dtype, C_in
 * 1-140, N or C 1-9 (1-140 now and then), image 1-14 per side, windows,
 * strides 1-3, rhs_dilation 1-3, padding -2..3 on each side; cases whose
 * window does not fit are drawn again. */
static void test_random_shapes(void **state) {
    (void)state;
    static const nx_dtype dts[] = {NX_DT_FP32, NX_DT_BF16, NX_DT_FP16, NX_DT_FP8_E4M3, NX_DT_FP8_E5M2};
    test_rng r = {0x5eed};
    int done = 0;
    while (done < 40) {
        int kind = (int)(test_rng_next(&r) % 3); /* 0: #5, 1: #7, 2: #8 */
        nx_dtype dt = dts[test_rng_next(&r) % 5];
        uint64_t CI = test_rng_next(&r) % 8 ? 1 + test_rng_next(&r) % 9 : 1 + test_rng_next(&r) % 140;
        uint64_t N = test_rng_next(&r) % 8 ? 1 + test_rng_next(&r) % 9 : 1 + test_rng_next(&r) % 140;
        uint64_t CO = kind ? N : 1 + test_rng_next(&r) % 12;
        int64_t H = 1 + (int64_t)(test_rng_next(&r) % 14), W = 1 + (int64_t)(test_rng_next(&r) % 14);
        int64_t HF = 1 + (int64_t)(test_rng_next(&r) % 8), WF = 1 + (int64_t)(test_rng_next(&r) % 8);
        int64_t s[2], d[2], lo[2], hi[2];
        for (int i = 0; i < 2; i++) {
            s[i] = 1 + (int64_t)(test_rng_next(&r) % 3);
            d[i] = 1 + (int64_t)(test_rng_next(&r) % 3);
            lo[i] = (int64_t)(test_rng_next(&r) % 6) - 2;
            hi[i] = (int64_t)(test_rng_next(&r) % 6) - 2;
        }
        if (nx_conv_out_size((uint64_t)H, (uint64_t)HF, s[0], lo[0], hi[0], 1, d[0]) == 0 ||
            nx_conv_out_size((uint64_t)W, (uint64_t)WF, s[1], lo[1], hi[1], 1, d[1]) == 0)
            continue;
        char attrs[200];
        snprintf(attrs, sizeof attrs, "stride=[%lld,%lld];rhs_dilation=[%lld,%lld];padding=[[%lld,%lld],[%lld,%lld]]%s",
                 (long long)s[0], (long long)s[1], (long long)d[0], (long long)d[1], (long long)lo[0],
                 (long long)hi[0], (long long)lo[1], (long long)hi[1], kind ? "" : "");
        uint64_t seed = 1000 + (uint64_t)done;
        if (kind == 0) check5(dt, CI, N, (uint64_t)H, (uint64_t)W, CO, (uint64_t)HF, (uint64_t)WF, attrs, seed);
        else check7(kind == 2, dt, CI, N, (uint64_t)H, (uint64_t)W, (uint64_t)HF, (uint64_t)WF, attrs, seed);
        done++;
    }
}

/* ---- pinned tilings ---- */

/* A test leaf: the real call checks and emitter with the plan search held
 * to g_lim; g_expect checks the plan it chose (so each case surely runs the
 * tiling it names). */
static nx_wg_limits g_lim;
static void (*g_expect)(const nx_wg_plan *pl);

static int pinned(nx_wg_kind kind, const char *labels, struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_wg_problem p;
    if (nx_wg_prepare("pinned", kind, labels, call, &p, err) != 0) return -1;
    nx_wg_plan pl;
    if (nx_wg_plan_make_machine(nx_kctx_machine(k), &p, &g_lim, &pl, err) != 0) return -1;
    if (g_expect) g_expect(&pl);
    return nx_wg_emit(k, &p, &pl, err);
}
static int pinned5(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    return pinned(NX_WG_DENSE, L5, k, call, err);
}
static int pinned7(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    return pinned(NX_WG_DEPTHWISE, L5, k, call, err);
}

static void pin(uint32_t gx, uint32_t gy, uint32_t cot, uint32_t A, uint32_t T, uint32_t b_max, uint32_t wfb_max,
                void (*expect)(const nx_wg_plan *)) {
    memset(&g_lim, 0, sizeof g_lim);
    g_lim.gx = gx, g_lim.gy = gy, g_lim.cot = cot, g_lim.A = A, g_lim.T = T, g_lim.b_max = b_max;
    g_lim.wfb_max = wfb_max;
    g_expect = expect;
}

static void run5(nx_dtype dt, uint64_t CI, uint64_t N, uint64_t H, uint64_t W, uint64_t CO, uint64_t HF, uint64_t WF,
                 const char *attrs, uint64_t seed) {
    conv_case c = {L5, dt, {CI, N, H, W}, {CI, CO, HF, WF}, attrs, 1, seed};
    conv_check_opts o = {.key = N5, .filt_dtype = -1};
    conv_check_leaf_opts(pinned5, &c, &o);
}
static void run7(nx_dtype dt, uint64_t CI, uint64_t C, uint64_t H, uint64_t W, uint64_t HF, uint64_t WF,
                 const char *attrs, uint64_t seed) {
    char buf[256];
    snprintf(buf, sizeof buf, "batch_group_count=%llu%s%s", (unsigned long long)C, attrs ? ";" : "", attrs ? attrs : "");
    conv_case c = {L5, dt, {CI, C, H, W}, {CI, C, HF, WF}, buf, 1, seed};
    conv_check_opts o = {.key = N7, .filt_dtype = -1};
    conv_check_leaf_opts(pinned7, &c, &o);
}

static void expect_groups_tails(const nx_wg_plan *pl) {
    assert_int_equal(pl->Gx, 3);
    assert_int_equal(pl->Gy, 2);
    assert_true(pl->nhb >= 2);
}
static void expect_blocks(const nx_wg_plan *pl) {
    assert_int_equal(pl->B, 2);
    assert_true(pl->R >= 2);
    assert_true(pl->nhb * pl->R * pl->B > 13); /* dead rows in the last block */
}
/* all R replica blocks in the last row block, in fewer rows each */
static void expect_short_last(const nx_wg_plan *pl) {
    assert_int_equal(pl->R, 3);
    assert_int_equal(pl->B, 4);
    assert_int_equal(pl->nhb, 2);
    nx_wg_problem p;
    memset(&p, 0, sizeof p);
    p.HF = pl->Gy == 1 ? 20 : 15;
    nx_wg_rows rw;
    nx_wg_block_rows(&p, pl, 1, &rw);
    assert_int_equal(rw.Bh, pl->Gy == 1 ? 3 : 2);
    assert_int_equal(rw.Rl, pl->Gy == 1 ? 3 : 2);
    assert_int_equal(rw.vb_last, pl->Gy == 1 ? 2 : 1); /* a dead row */
}
static void expect_col_blocks(const nx_wg_plan *pl) {
    assert_int_equal(pl->WFb, 3);
    assert_true(pl->nwb >= 3);
}
static void expect_n_chunks(const nx_wg_plan *pl) {
    assert_true(pl->nan >= 2);
    assert_int_equal(pl->A, 2);
    assert_true(pl->npass >= 2);
    assert_int_equal(pl->nps, 2 * pl->T * pl->A); /* folds deferred behind the next pass */
}
static void expect_k_chunks(const nx_wg_plan *pl) { assert_true(pl->na0 >= 2); }
static void expect_k_and_n_chunks(const nx_wg_plan *pl) {
    assert_true(pl->na0 >= 2);
    assert_true(pl->nan % 2 == 1); /* some pass straddles two k0 chunks */
    assert_int_equal(pl->A, 2);
}
static void expect_shared_image(const nx_wg_plan *pl) {
    assert_int_equal(pl->T, 3);
    assert_int_equal(pl->ncot, 3);
}
static void expect_mixed_groups(const nx_wg_plan *pl) {
    assert_int_equal(pl->ncot, 3); /* tile groups {0, 1} and {2}: 2-item and 1-item blocks */
    assert_int_equal(pl->T, 2);
    assert_true(pl->nhb >= 2);
}
static void expect_masks(const nx_wg_plan *pl) {
    assert_int_equal(pl->cot, 4);
    assert_int_equal(pl->ncot, 3); /* 10 channels: tiles of 4, 4, 2 */
    assert_true(pl->Gx * pl->Gy > 1);
}
static void expect_diag_chunks(const nx_wg_plan *pl) { assert_true(pl->na0 * pl->na1 >= 2); }

static void test_pinned_tilings(void **state) {
    (void)state;
    /* column groups 3 x 2 with a column tail (WF 7) and dead rows: 50
     * features leave room for 2 replica blocks, so 7 rows take 2 blocks */
    pin(3, 2, 0, 0, 0, 2, 0, expect_groups_tails);
    run5(NX_DT_FP32, 50, 2, 14, 13, 5, 7, 7, "padding=[[1,1],[2,0]]", 100);
    run7(NX_DT_BF16, 50, 5, 14, 13, 7, 7, "padding=[[1,1],[2,0]]", 101);
    /* row blocks of 2 rows over 3 replica blocks (40 features): 13 rows in 3
     * blocks, the last partly dead */
    pin(1, 1, 0, 0, 0, 2, 0, expect_blocks);
    run5(NX_DT_FP32, 40, 2, 16, 9, 3, 13, 5, "rhs_dilation=[1,1];padding=[[0,1],[1,1]]", 102);
    /* 17 rows in 3 blocks of 3 x 2: the last block's third replica has one
     * live row, its dead row holds the first block's filter (the buffer's
     * earlier use) and meets real image rows: it must read as zero */
    run5(NX_DT_FP32, 40, 2, 22, 9, 3, 17, 5, NULL, 110);
    pin(1, 2, 0, 0, 0, 2, 0, expect_blocks);
    run7(NX_DT_BF16, 40, 3, 22, 9, 17, 5, NULL, 111);
    /* 20 rows over 3 replica blocks of 4: the last block's 8 rows go to 3
     * blocks of 3 (fewer steps than 2 blocks of 4), the third with a dead
     * row over the first block's filter; with Gy = 2, 15 rows: the last
     * block's 3 rows in 2 blocks of 2 */
    pin(1, 1, 0, 0, 0, 4, 0, expect_short_last);
    g_lim.R = 3;
    run5(NX_DT_FP32, 40, 2, 26, 9, 3, 20, 5, NULL, 114);
    pin(1, 2, 0, 0, 0, 4, 0, expect_short_last);
    g_lim.R = 3;
    run5(NX_DT_FP32, 40, 2, 21, 9, 3, 15, 5, "padding=[[1,0],[0,1]]", 115);
    run7(NX_DT_BF16, 40, 3, 21, 9, 15, 5, NULL, 116);
    /* column blocks of 3 filter columns (each loads its own image columns) */
    pin(2, 1, 0, 0, 0, 0, 3, expect_col_blocks);
    run5(NX_DT_BF16, 3, 2, 9, 18, 4, 4, 10, "rhs_dilation=[1,2];padding=[[1,1],[0,1]]", 103);
    run7(NX_DT_FP32, 3, 4, 9, 18, 4, 10, "rhs_dilation=[1,2];padding=[[1,1],[0,1]]", 104);
    /* N = 300 in accumulators of 1 x 1 x 56 batch, two per pass, passes
     * double-buffered (the fold of one after the next one's first item) */
    pin(1, 1, 0, 2, 1, 0, 0, expect_n_chunks);
    run5(NX_DT_FP32, 2, 300, 6, 6, 9, 4, 4, "padding=[[0,-1],[0,-1]]", 105);
    /* N = 9 in 1-batch accumulators over 2 k0 chunks, two per pass: a pass
     * holds batch 8 of the first chunk and batch 0 of the second, its image
     * window the whole batch */
    pin(1, 1, 0, 2, 1, 0, 0, expect_k_and_n_chunks);
    run5(NX_DT_BF16, 4, 9, 30, 27, 5, 5, 4, "padding=[[2,-1],[-1,2]]", 112);
    /* outputs 30 x 20: accumulators along k0 */
    pin(1, 1, 0, 0, 0, 0, 0, expect_k_chunks);
    run5(NX_DT_FP32, 2, 2, 33, 24, 3, 4, 5, NULL, 106);
    /* three co tiles of one pass share each image block */
    pin(1, 1, 16, 1, 3, 0, 0, expect_shared_image);
    run5(NX_DT_BF16, 3, 2, 10, 10, 40, 4, 4, "padding=[[1,1],[1,1]]", 107);
    /* three co tiles in passes of two and one: the last 2-item block loads
     * the next pass's first image in shares, 1-item blocks their own */
    pin(1, 1, 16, 1, 2, 2, 0, expect_mixed_groups);
    run5(NX_DT_FP32, 40, 2, 14, 9, 40, 9, 4, "padding=[[1,1],[0,1]]", 113);
    /* depthwise channel tiles of 4, 4 and 2 with column groups: two masks */
    pin(2, 2, 4, 0, 0, 0, 0, expect_masks);
    run7(NX_DT_FP32, 3, 10, 12, 11, 6, 6, "padding=[[1,0],[1,1]]", 108);
    /* depthwise outputs 20 x 24 with 32 channels: accumulators along k0/k1 */
    pin(1, 1, 0, 0, 0, 0, 0, expect_diag_chunks);
    run7(NX_DT_FP32, 2, 32, 27, 29, 8, 6, NULL, 109);
    pin(0, 0, 0, 0, 0, 0, 0, NULL);
}

/* The trn1 preset (192 KiB SBUF per partition, other clocks). */
static void test_trn1(void **state) {
    (void)state;
    /* conv_check_leaf runs trn2; trace on trn1 through the run path */
    nx_error err;
    nx_machine m;
    assert_int_equal(nx_machine_load("trn1", &m, &err), 0);
    nx_lowerer *L = nx_lowerer_new_machine(&m, NULL, NULL);
    assert_non_null(L);
    static const char *const keys[3] = {N5, N7, N8};
    for (int i = 0; i < 3; i++) {
        nx_macro_op given;
        nx_macro_op_init(&given);
        assert_int_equal(nx_macro_op_set_func_name(&given, keys[i], &err), 0);
        nx_prepared op;
        if (nx_op_prepare(L, &given, NULL, &op, &err) != 0) fail_msg("%s: %s", keys[i], err.msg);
        nx_macro_op_free(&given);
        nx_run_options opt = {.backend = NX_RUN_MODEL, .race_check = 1, .check = 1, .seed = 7};
        nx_run_result res;
        if (nx_run_op(L, &m, &op, NULL, &opt, &res, &err) != 0) fail_msg("%s on trn1: %s", keys[i], err.msg);
        assert_int_equal(res.check_failures, 0);
        assert_true(res.trace.race_checked);
        nx_run_result_free(&res);
        nx_prepared_free(&op);
    }
    nx_lowerer_free(L);
}

/* ---- the gradient property ---- */

typedef struct fwd_conv {
    int depthwise;
    int64_t B, C, H, W, O, KH, KW, sy, sx, ply, phy, plx, phx;
} fwd_conv;

static int64_t fwd_out(int64_t in, int64_t k, int64_t s, int64_t lo, int64_t hi) { return (in + lo + hi - k) / s + 1; }

/* L(Wt) = <conv(x, Wt), g> in fp64 by a direct sum; Wt (O, C, KH, KW) or
 * (C, 1, KH, KW) depthwise; x (B, C, H, W); g (B, O, OH, OW). */
static double fwd_loss(const fwd_conv *f, const double *x, const double *Wt, const double *g) {
    int64_t OH = fwd_out(f->H, f->KH, f->sy, f->ply, f->phy), OW = fwd_out(f->W, f->KW, f->sx, f->plx, f->phx);
    int64_t O = f->depthwise ? f->C : f->O, Ci = f->depthwise ? 1 : f->C;
    double L = 0;
    for (int64_t b = 0; b < f->B; b++)
        for (int64_t o = 0; o < O; o++)
            for (int64_t i = 0; i < OH; i++)
                for (int64_t j = 0; j < OW; j++) {
                    double y = 0;
                    for (int64_t c = 0; c < Ci; c++)
                        for (int64_t kh = 0; kh < f->KH; kh++)
                            for (int64_t kw = 0; kw < f->KW; kw++) {
                                int64_t r = i * f->sy + kh - f->ply, q = j * f->sx + kw - f->plx;
                                if (r < 0 || r >= f->H || q < 0 || q >= f->W) continue;
                                int64_t ch = f->depthwise ? o : c;
                                y += x[((b * f->C + ch) * f->H + r) * f->W + q] *
                                     Wt[((o * Ci + c) * f->KH + kh) * f->KW + kw];
                            }
                    L += y * g[((b * O + o) * OH + i) * OW + j];
                }
    return L;
}

/* The weight gradient of f by the leaf on the run path (model + race
 * check) vs the central difference of L along V; io10 swaps the
 * gradient's spatial dims (#8). */
static void gradient_property(const fwd_conv *f, nx_dtype dt, int io10, uint64_t seed) {
    int64_t OH = fwd_out(f->H, f->KH, f->sy, f->ply, f->phy), OW = fwd_out(f->W, f->KW, f->sx, f->plx, f->phx);
    int64_t O = f->depthwise ? f->C : f->O, Ci = f->depthwise ? 1 : f->C;
    uint64_t nx = (uint64_t)(f->B * f->C * f->H * f->W), ng = (uint64_t)(f->B * O * OH * OW);
    uint64_t nw = (uint64_t)(O * Ci * f->KH * f->KW);
    double *x = malloc(nx * sizeof *x), *g = malloc(ng * sizeof *g), *V = malloc(nw * sizeof *V);
    double *W0 = malloc(nw * sizeof *W0), *Wp = malloc(nw * sizeof *Wp), *Wm = malloc(nw * sizeof *Wm);
    size_t es = nx_dtype_size(dt);
    uint8_t *xb = malloc(nx * es), *gb = malloc(ng * es);
    assert_true(x && g && V && W0 && Wp && Wm && xb && gb);
    test_rng r = {seed * 0x9E3779B97F4A7C15ull + 3};
    /* operands rounded to dt first: the leaf and the fp64 sums see the same values */
    for (uint64_t i = 0; i < nx; i++) {
        nx_dtype_store(dt, xb + i * es, test_rng_uniform(&r, -1, 1));
        x[i] = nx_dtype_load(dt, xb + i * es);
    }
    for (int64_t b = 0; b < f->B; b++)
        for (int64_t o = 0; o < O; o++)
            for (int64_t i = 0; i < OH; i++)
                for (int64_t j = 0; j < OW; j++) {
                    uint64_t k = (uint64_t)(((b * O + o) * OH + i) * OW + j);
                    /* #8's gradient is (B, O, OW, OH) */
                    uint64_t kb = io10 ? (uint64_t)(((b * O + o) * OW + j) * OH + i) : k;
                    nx_dtype_store(dt, gb + kb * es, test_rng_uniform(&r, -1, 1));
                    g[k] = nx_dtype_load(dt, gb + kb * es);
                }
    for (uint64_t i = 0; i < nw; i++) V[i] = test_rng_uniform(&r, -1, 1), W0[i] = test_rng_uniform(&r, -1, 1);
    const double h = 0.25;
    for (uint64_t i = 0; i < nw; i++) Wp[i] = W0[i] + h * V[i], Wm[i] = W0[i] - h * V[i];
    double fd = (fwd_loss(f, x, Wp, g) - fwd_loss(f, x, Wm, g)) / (2 * h);

    /* the weight gradient op: img = x (fb01: CI = B, N = C), filt = g */
    const char *key = f->depthwise ? (io10 ? N8 : N7) : N5;
    nx_error err;
    nx_machine m;
    assert_int_equal(nx_machine_load("trn2", &m, &err), 0);
    nx_lowerer *L = nx_lowerer_new_machine(&m, NULL, NULL);
    assert_non_null(L);
    nx_macro_op given;
    nx_macro_op_init(&given);
    uint64_t ishape[4] = {(uint64_t)f->B, (uint64_t)f->C, (uint64_t)f->H, (uint64_t)f->W};
    uint64_t fshape[4] = {(uint64_t)f->B, (uint64_t)O, (uint64_t)(io10 ? OW : OH), (uint64_t)(io10 ? OH : OW)};
    char attrs[3][64];
    snprintf(attrs[0], sizeof attrs[0], "[%lld,%lld]", (long long)f->sy, (long long)f->sx);
    /* the window of OH (OW) rows dilated by the stride ends at the last row
     * it reads: padding hi = (OH - 1) s + KH - H - lo (may crop) */
    snprintf(attrs[1], sizeof attrs[1], "[[%lld,%lld],[%lld,%lld]]", (long long)f->ply,
             (long long)((OH - 1) * f->sy + f->KH - f->H - f->ply), (long long)f->plx,
             (long long)((OW - 1) * f->sx + f->KW - f->W - f->plx));
    nx_value v;
    nx_prepared op;
    if (nx_macro_op_set_func_name(&given, key, &err) != 0 || nx_macro_op_add_operand(&given, "img", dt, 4, ishape, &err) != 0 ||
        nx_macro_op_add_operand(&given, "filt", dt, 4, fshape, &err) != 0 ||
        nx_value_parse("rhs_dilation", attrs[0], &v, &err) != 0 || nx_attrs_set(&given.attrs, "rhs_dilation", &v, &err) != 0 ||
        nx_value_parse("padding", attrs[1], &v, &err) != 0 || nx_attrs_set(&given.attrs, "padding", &v, &err) != 0 ||
        nx_op_prepare(L, &given, NULL, &op, &err) != 0)
        fail_msg("%s: %s", key, err.msg);
    nx_macro_op_free(&given);
    /* the result is the forward filter's gradient: (KH, KW, C, O) or (KH, KW, 1, C) */
    assert_int_equal(op.op.results[0].shape[0], f->KH);
    assert_int_equal(op.op.results[0].shape[1], f->KW);
    const void *inputs[2] = {xb, gb};
    nx_run_options opt = {.backend = NX_RUN_MODEL, .race_check = 1};
    nx_run_result res;
    if (nx_run_op(L, &m, &op, inputs, &opt, &res, &err) != 0) fail_msg("%s: %s", key, err.msg);
    /* <dW, V> and its error bound: sum over W's elements of |V| x (2 K u
     * S + half an ulp of dt x |dW| + tiny), S = sum |x| |g| over the
     * element's terms */
    double dot = 0, bound = 0, big = 0;
    double K = (double)(f->B * OH * OW), half = conv_half_ulp(dt), tiny = conv_tiny(dt);
    for (int64_t o = 0; o < O; o++)
        for (int64_t c = 0; c < Ci; c++)
            for (int64_t kh = 0; kh < f->KH; kh++)
                for (int64_t kw = 0; kw < f->KW; kw++) {
                    int64_t ch = f->depthwise ? o : c;
                    uint64_t oi = f->depthwise ? (uint64_t)((kh * f->KW + kw) * f->C + o)
                                               : (uint64_t)(((kh * f->KW + kw) * f->C + c) * O + o);
                    double dw = nx_dtype_load(dt, res.results[0] + oi * es);
                    double vv = V[((o * Ci + c) * f->KH + kh) * f->KW + kw], S = 0;
                    for (int64_t b = 0; b < f->B; b++)
                        for (int64_t i = 0; i < OH; i++)
                            for (int64_t j = 0; j < OW; j++) {
                                int64_t rr = i * f->sy + kh - f->ply, q = j * f->sx + kw - f->plx;
                                if (rr < 0 || rr >= f->H || q < 0 || q >= f->W) continue;
                                S += fabs(x[((b * f->C + ch) * f->H + rr) * f->W + q]) *
                                     fabs(g[((b * O + o) * OH + i) * OW + j]);
                            }
                    dot += dw * vv;
                    big = fmax(big, fabs(dw * vv));
                    bound += fabs(vv) * (2 * K * 0x1p-24 * S * (1 + 2 * half) + 2 * half * fabs(dw) + tiny);
                }
    bound += 1e-9 * (fabs(fd) + 1);
    if (!(fabs(dot - fd) <= bound))
        fail_msg("%s %s: <dW, V> = %.12g, central difference of L = %.12g (|diff| %.3g > bound %.3g)", key,
                 nx_dtype_name(dt), dot, fd, fabs(dot - fd), bound);
    /* the bound is tight enough to mean something: one V entry's worth */
    /* the bound is tight enough to mean something: below the largest
     * single term, so a lost or misplaced element of dW shows */
    if (!(bound < big)) fail_msg("%s %s: bound %.3g is not below the largest term %.3g", key, nx_dtype_name(dt), bound, big);
    nx_run_result_free(&res);
    nx_prepared_free(&op);
    nx_lowerer_free(L);
    free(x), free(g), free(V), free(W0), free(Wp), free(Wm), free(xb), free(gb);
}

static void test_gradient_property(void **state) {
    (void)state;
    /* dense: stride 2 with padding 1 (the last row unused: the op's hi crops) */
    fwd_conv a = {0, 3, 4, 11, 10, 5, 3, 3, 2, 2, 1, 1, 1, 1};
    gradient_property(&a, NX_DT_FP32, 0, 1);
    gradient_property(&a, NX_DT_BF16, 0, 2);
    /* dense: stride 3 x 1, asymmetric padding, a 4 x 2 kernel */
    fwd_conv b = {0, 2, 3, 13, 9, 4, 4, 2, 3, 1, 2, 0, 0, 1};
    gradient_property(&b, NX_DT_FP32, 0, 3);
    /* depthwise, both filter layouts */
    fwd_conv c = {1, 3, 6, 10, 12, 6, 3, 3, 1, 2, 1, 1, 1, 1};
    gradient_property(&c, NX_DT_FP32, 0, 4);
    gradient_property(&c, NX_DT_FP32, 1, 5);
    gradient_property(&c, NX_DT_BF16, 1, 6);
}

/* ---- refusals ---- */

typedef struct refusal {
    nx_leaf_fn leaf;
    conv_case c;
    int any_out; /* give out a shape the formula cannot check */
    const char *msg;
} refusal;

static const uint64_t any_out[4] = {5, 5, 3, 4};
static const uint64_t wrong_out[4] = {5, 5, 4, 3};

static const refusal REFUSALS[] = {
    {K5, {L5, NX_DT_FP32, {2, 3, 8, 8}, {2, 4, 4, 4}, "lhs_dilation=[2,2]", 1, 1}, 1,
     "Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh: attribute lhs_dilation=[2,2] is not supported (this leaf takes "
     "lhs_dilation [1,1] only)"},
    {K5, {L5, NX_DT_FP32, {2, 4, 8, 8}, {1, 4, 4, 4}, "feature_group_count=2", 1, 1}, 0,
     "Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh: attribute feature_group_count=2 is not supported (this leaf takes "
     "feature_group_count 1 only)"},
    {K5, {L5, NX_DT_FP32, {2, 4, 8, 8}, {2, 4, 4, 4}, "batch_group_count=4", 1, 1}, 0,
     "Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh: attribute batch_group_count=4 is not supported (this leaf takes "
     "batch_group_count 1 only)"},
    {K7, {L5, NX_DT_FP32, {2, 4, 8, 8}, {2, 4, 4, 4}, NULL, 1, 1}, 0,
     "conv2d_column_packing: attribute batch_group_count=1 is not supported (the depthwise weight gradient needs "
     "batch_group_count = N = C_out; operand 0 (img) has N = 4, operand 1 (filt) C_out = 4)"},
    {K8, {L8, NX_DT_FP32, {2, 4, 8, 8}, {2, 4, 4, 4}, "batch_group_count=2", 1, 1}, 0,
     "conv2d_column_packing_io10: attribute batch_group_count=2 is not supported (the depthwise weight gradient "
     "needs batch_group_count = N = C_out; operand 0 (img) has N = 4, operand 1 (filt) C_out = 4)"},
    {K7, {L5, NX_DT_FP32, {2, 4, 8, 8}, {2, 4, 4, 4}, "batch_group_count=4;lhs_dilation=[1,2]", 1, 1}, 1,
     "conv2d_column_packing: attribute lhs_dilation=[1,2] is not supported (this leaf takes lhs_dilation [1,1] "
     "only)"},
    {K5, {L5, NX_DT_INT8, {2, 3, 8, 8}, {2, 4, 4, 4}, NULL, 1, 1}, 0,
     "Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh: operand 0 (img): dtype int8 is not a PE input type (fp32, bf16, "
     "fp16, fp8_e4m3, fp8_e5m2)"},
    {K5, {L5, NX_DT_FP32, {2, 3, 8, 8}, {2, 4, 4, 4}, NULL, 0, 1}, 2,
     "Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh: operand 2 (out): shape [5,5,4,3] must be [5,5,3,4] (the "
     "convolution's result; layouts, labels fb01_io01->01bf: operand 0 (img) C,N,H,W, operand 1 (filt) C/G,O,KH,KW, "
     "result OH,OW,N,O)"},
    {K5, {L5, NX_DT_FP32, {2, 3, 8, 8}, {2, 4, 4, 4}, "strides=[1,1]", 0, 1}, 1,
     "Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh: attribute strides: not a conv attribute (stride, padding, "
     "lhs_dilation, rhs_dilation, feature_group_count, batch_group_count, out_shape)"},
};

static void test_refusals(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof REFUSALS / sizeof REFUSALS[0]; i++) {
        const refusal *r = &REFUSALS[i];
        conv_expect_refusal(r->leaf, &r->c, r->any_out == 1 ? any_out : r->any_out == 2 ? wrong_out : NULL, r->msg);
    }
}

/* #5 on ResNet-50 conv1's weight gradient (bf16 img [16, 3, 224, 224], grad
 * [16, 64, 112, 112], padding 3/2, rhs_dilation 2: the bench's case) planned
 * for machine m: returns the column groups Gx x Gy and the co tile. */
static void conv1_plan(const nx_machine *m, uint32_t *gx, uint32_t *gy, uint32_t *cot) {
    nx_wg_problem p;
    memset(&p, 0, sizeof p);
    p.leaf = N5, p.kind = NX_WG_DENSE, p.dt = NX_DT_BF16, p.es = 2;
    p.CI = 16, p.N = 3, p.H = 224, p.W = 224, p.CO = 64, p.HF = 112, p.WF = 112;
    p.sy = p.sx = 1, p.rdy = p.rdx = 2, p.ply = p.plx = 3, p.K0 = p.K1 = 7;
    p.img_name = "img", p.filt_name = "filt";
    nx_wg_plan pl;
    nx_error err;
    if (nx_wg_plan_make_machine(m, &p, NULL, &pl, &err) != 0) fail_msg("%s", err.msg);
    *gx = pl.Gx, *gy = pl.Gy, *cot = pl.cot;
}

/* DMA bytes one PE cycle is worth: a core's DMA engines over the PE clock
 * (trn2 16 x 23 / 2.4 = 153; trn1 16 x 17 / 2.8 = 97). */
static double dma_per_pe_cycle(const nx_machine *m) {
    return nx_machine_dma_engines_bytes_per_ns(m) / m->clock_ghz[NX_ENG_PE];
}

/* The same op plans differently on the presets: on trn2 the plan takes 2 x 2
 * column groups of 32 co; trn1's PE cycle is worth fewer DMA bytes (97
 * against 153), so PE work weighs less against DMA and it takes 4 x 2 groups
 * of 16 co. Giving trn2 trn1's ratio (its PE clock alone changed) gives
 * trn1's choice on trn2's geometry: that figure decides. */
static void test_plan_reads_machine(void **state) {
    (void)state;
    nx_machine t1 = test_machine("trn1"), t2 = test_machine("trn2");
    uint32_t gx, gy, cot;
    conv1_plan(&t2, &gx, &gy, &cot);
    assert_int_equal(gx, 2), assert_int_equal(gy, 2), assert_int_equal(cot, 32);
    conv1_plan(&t1, &gx, &gy, &cot);
    assert_int_equal(gx, 4), assert_int_equal(gy, 2), assert_int_equal(cot, 16);
    /* trn2 with only its PE clock changed so that a PE cycle is worth
     * trn1's 97 DMA bytes: trn1's choice on trn2's geometry */
    nx_machine t2r = t2;
    t2r.clock_ghz[NX_ENG_PE] = nx_machine_dma_engines_bytes_per_ns(&t2) / dma_per_pe_cycle(&t1);
    assert_true(fabs(dma_per_pe_cycle(&t2r) - dma_per_pe_cycle(&t1)) < 1e-9);
    conv1_plan(&t2r, &gx, &gy, &cot);
    assert_int_equal(gx, 4), assert_int_equal(gy, 2), assert_int_equal(cot, 16);
}

/* The registry rules: the default ops' result shapes, an absent
 * batch_group_count taken as N for #7/#8, the tolerance text. */
static void test_rules(void **state) {
    (void)state;
    nx_error err;
    nx_geometry geo = test_geometry("trn2");
    nx_lowerer *L = nx_lowerer_new(&geo, NULL);
    assert_non_null(L);
    static const char *const keys[3] = {N5, N7, N8};
    static const uint64_t want[3][4] = {{7, 7, 3, 16}, {3, 3, 1, 24}, {3, 3, 1, 24}};
    for (int i = 0; i < 3; i++) {
        nx_kernel_target tgt;
        assert_int_equal(nx_lowerer_lookup(L, keys[i], &tgt, &err), 0);
        nx_macro_op op;
        nx_macro_op_init(&op);
        assert_int_equal(nx_macro_op_set_func_name(&op, keys[i], &err), 0);
        assert_int_equal(tgt.rules->default_op(&op, &err), 0);
        assert_int_equal(nx_op_rules_apply_results(tgt.rules, keys[i], NULL, &op, &err), 0);
        assert_int_equal(op.results[0].ndims, 4);
        for (int d = 0; d < 4; d++) assert_int_equal(op.results[0].shape[d], want[i][d]);
        assert_int_equal(op.results[0].dtype, NX_DT_BF16);
        nx_tolerance tol;
        assert_int_equal(nx_op_rules_tolerance(tgt.rules, &op, 0, &tol, &err), 0);
        if (i == 0) assert_string_equal(tol.text, "K=1024: 1.5 x eps(bf16)");
        if (i > 0) {
            const nx_value *g = nx_attrs_get(&op.attrs, "batch_group_count");
            assert_non_null(g);
            assert_int_equal(g->i, 24);
        }
        nx_macro_op_free(&op);
    }
    nx_lowerer_free(L);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic),
        cmocka_unit_test(test_shapes5),
        cmocka_unit_test(test_shapes7),
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_scaled_bench_shapes),
        cmocka_unit_test(test_random_shapes),
        cmocka_unit_test(test_pinned_tilings),
        cmocka_unit_test(test_trn1),
        cmocka_unit_test(test_gradient_property),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_plan_reads_machine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
