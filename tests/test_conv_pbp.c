/* The dense PE convolutions #3 conv2d_pbp_0f1b_0i1o_01fb_experimental_1
 * and #4 conv2d_pbp_fb01_io01_01bf_kernel_experimental_1
 * (kernels/conv/conv2d_pbp.h) against the conv reference.
 *
 * Every case is traced, order-checked, executed on the functional executor
 * and on the SystemC model with the race detector, and compared element by
 * element with nx_ref_conv within the tolerance of tests/conv_check.h
 * (2 K 2^-24 sum|terms| + one rounding to the output dtype; K = C_in/G x
 * KH x KW). Shapes: 1x1 kernels, kernels larger than the image with
 * padding, stride larger than the kernel, C = 1, 129, 300, N = 1, 3, 513,
 * asymmetric and negative padding, rhs_dilation, grouped and depthwise
 * (channel multiplier) convolutions, every PE dtype; then the tiling
 * (pixel packing, the transposed store), and the refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "conv_check.h"
#include "kernels/conv/conv2d_pbp.h"
#include "kernels/conv/conv2d_pbp_plan.h"
#include "support.h"

#define L3 "0f1b_0i1o->01fb"
#define L4 "fb01_io01->01bf"
#define K3 conv2d_pbp_0f1b_0i1o_01fb_experimental_1
#define K4 conv2d_pbp_fb01_io01_01bf_kernel_experimental_1
#define N3 "conv2d_pbp_0f1b_0i1o_01fb_experimental_1"
#define N4 "conv2d_pbp_fb01_io01_01bf_kernel_experimental_1"

/* #3 with img (H, C, W, N) and filt (KH, C/G, KW, O). */
/* attrs plus feature_group_count=G when G > 1 */
static const char *with_groups(char *buf, size_t len, const char *attrs, uint64_t G) {
    if (G <= 1) return attrs;
    snprintf(buf, len, "%s%sfeature_group_count=%llu", attrs ? attrs : "", attrs ? ";" : "", (unsigned long long)G);
    return buf;
}

static void check3(nx_dtype dt, uint64_t H, uint64_t C, uint64_t W, uint64_t N, uint64_t KH, uint64_t KW, uint64_t O,
                   uint64_t G, const char *attrs, uint64_t seed) {
    char buf[256];
    conv_case c = {L3, dt, {H, C, W, N}, {KH, C / G, KW, O}, with_groups(buf, sizeof buf, attrs, G), 0, seed};
    conv_check_leaf(K3, N3, &c, 1);
}

/* #4 with img (C, N, H, W) and filt (C/G, O, KH, KW). */
static void check4(nx_dtype dt, uint64_t H, uint64_t C, uint64_t W, uint64_t N, uint64_t KH, uint64_t KW, uint64_t O,
                   uint64_t G, const char *attrs, uint64_t seed) {
    char buf[256];
    conv_case c = {L4, dt, {C, N, H, W}, {C / G, O, KH, KW}, with_groups(buf, sizeof buf, attrs, G), 0, seed};
    conv_check_leaf(K4, N4, &c, 1);
}

static void test_basic(void **state) {
    (void)state;
    check3(NX_DT_FP32, 5, 3, 6, 2, 3, 3, 4, 1, NULL, 1);
    check3(NX_DT_BF16, 7, 8, 5, 1, 3, 3, 8, 1, "padding=[[1,1],[1,1]]", 2);
    check3(NX_DT_FP32, 9, 4, 9, 3, 3, 2, 5, 1, "stride=[2,2];padding=[[1,1],[0,2]]", 3);
}

/* The shapes: 1x1 kernels, kernels larger than the image with
 * padding, stride > kernel, C = 1, 129, 300, N = 1, 3, 513. */
static void test_shapes(void **state) {
    (void)state;
    check3(NX_DT_BF16, 6, 129, 7, 3, 1, 1, 130, 1, NULL, 10);                       /* 1x1, C and O > 128 */
    check3(NX_DT_FP32, 3, 2, 4, 2, 5, 6, 3, 1, "padding=[[2,2],[3,3]]", 11);        /* kernel > image */
    check3(NX_DT_BF16, 11, 3, 13, 2, 2, 2, 4, 1, "stride=[3,4]", 12);                /* stride > kernel */
    check3(NX_DT_FP32, 8, 1, 8, 1, 3, 3, 1, 1, "padding=[[1,1],[1,1]]", 13);         /* C = O = N = 1 */
    check3(NX_DT_BF16, 5, 300, 4, 3, 3, 3, 20, 1, "padding=[[1,1],[1,1]]", 14);      /* C = 300: 3 steps */
    check3(NX_DT_BF16, 4, 5, 3, 513, 2, 2, 6, 1, "padding=[[0,1],[1,0]]", 15);       /* N = 513: split */
    check3(NX_DT_FP16, 3, 129, 3, 3, 3, 3, 300, 1, "padding=[[1,1],[1,1]]", 16);     /* O = 300: 3 tiles */
    check3(NX_DT_FP32, 1, 2, 1, 1, 1, 1, 1, 1, NULL, 17);                            /* one element */
}

static void test_padding_stride_dilation(void **state) {
    (void)state;
    check3(NX_DT_FP32, 10, 4, 9, 2, 3, 3, 5, 1, "padding=[[-1,2],[1,-2]]", 20);      /* crop + pad */
    check3(NX_DT_BF16, 12, 6, 11, 2, 3, 2, 4, 1, "rhs_dilation=[2,3];padding=[[2,1],[0,3]]", 21);
    check3(NX_DT_FP32, 15, 3, 14, 1, 3, 3, 2, 1, "stride=[2,3];rhs_dilation=[3,2];padding=[[-2,0],[1,1]]", 22);
    check3(NX_DT_BF16, 6, 3, 6, 2, 2, 2, 3, 1, "padding=[[5,0],[0,5]]", 23);         /* whole padding rows */
    check3(NX_DT_FP32, 4, 2, 4, 1, 1, 1, 2, 1, "padding=[[-3,0],[0,-3]]", 24);       /* 1x1 output */
}

static void test_groups(void **state) {
    (void)state;
    check3(NX_DT_FP32, 6, 6, 5, 2, 3, 3, 4, 2, "padding=[[1,1],[1,1]]", 30);          /* 2 groups packed */
    check3(NX_DT_BF16, 5, 160, 5, 1, 3, 3, 200, 4, "padding=[[1,1],[1,1]]", 31);      /* Cg 40, Og 50: 2 per tile */
    check3(NX_DT_BF16, 4, 390, 3, 2, 2, 2, 6, 3, "stride=[2,1]", 32);                 /* Cg 130: unpacked, 2 steps */
    check3(NX_DT_FP32, 7, 130, 6, 2, 3, 3, 260, 130, "padding=[[1,1],[1,1]]", 33);    /* depthwise, multiplier 2 */
    check3(NX_DT_BF16, 9, 5, 8, 3, 3, 3, 5, 5, "stride=[2,2];padding=[[1,1],[1,1]]", 34); /* depthwise */
    check3(NX_DT_FP16, 5, 12, 5, 1, 3, 1, 300, 3, "rhs_dilation=[2,1];padding=[[2,2],[0,0]]", 35); /* Og 100 */
}

static void test_dtypes(void **state) {
    (void)state;
    static const nx_dtype dts[] = {NX_DT_FP32, NX_DT_BF16, NX_DT_FP16, NX_DT_FP8_E4M3, NX_DT_FP8_E5M2};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++)
        check3(dts[i], 7, 20, 6, 4, 3, 3, 12, 1, "stride=[1,2];padding=[[1,1],[2,0]]", 40 + i);
}

/* Bands: several of them (pipelined), column-blocked rows, batch-split
 * windows. */
static void test_bands(void **state) {
    (void)state;
    check3(NX_DT_BF16, 40, 16, 37, 2, 3, 3, 16, 1, "padding=[[1,1],[1,1]]", 50);
    /* one row of 2000 x 64 bf16 does not fit a band: column blocks */
    check3(NX_DT_BF16, 1, 2, 2000, 64, 1, 3, 2, 1, NULL, 51);
    /* one pixel's window of 40000 bf16 does not fit: batch blocks */
    check3(NX_DT_BF16, 1, 1, 1, 40000, 1, 1, 3, 1, NULL, 52);
}

/* #4: the same convolutions in fb01_io01->01bf, through #3. */
static void test_fb01(void **state) {
    (void)state;
    check4(NX_DT_FP32, 5, 3, 6, 2, 3, 3, 4, 1, NULL, 60);
    check4(NX_DT_BF16, 9, 4, 9, 3, 3, 2, 5, 1, "stride=[2,2];padding=[[1,1],[0,2]]", 61);
    check4(NX_DT_BF16, 6, 129, 7, 3, 1, 1, 130, 1, NULL, 62);                        /* C, O > 128 */
    check4(NX_DT_FP32, 8, 1, 8, 1, 3, 3, 1, 1, "padding=[[1,1],[1,1]]", 63);          /* N = 1: direct result */
    check4(NX_DT_FP16, 4, 5, 3, 513, 2, 2, 6, 1, "padding=[[0,1],[1,0]]", 64);        /* N = 513 */
    check4(NX_DT_BF16, 12, 6, 11, 2, 3, 2, 4, 2, "rhs_dilation=[2,3];padding=[[-1,1],[0,3]]", 65);
    check4(NX_DT_FP8_E4M3, 7, 130, 6, 2, 3, 3, 260, 130, "padding=[[1,1],[1,1]]", 66); /* depthwise x2 */
    check4(NX_DT_FP32, 3, 300, 2, 1, 2, 2, 7, 1, "padding=[[1,0],[0,1]]", 67);        /* C = 300 */
    check4(NX_DT_BF16, 140, 2, 3, 1, 3, 1, 3, 1, NULL, 68);                          /* H > 128 rows */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_padding_stride_dilation),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_bands),
        cmocka_unit_test(test_fb01),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
