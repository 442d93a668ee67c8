/* The weight-gradient convolutions #5 Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh,
 * #7 conv2d_column_packing and #8 conv2d_column_packing_io10
 * (kernels/conv/wgrad.h) against the conv reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "conv_check.h"
#include "kernels/conv/wgrad.h"
#include "support.h"

#define L5 "fb01_io01->01bf"
#define L8 "fb01_io10->01bf"
#define K5 conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh
#define N5 "Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh"
#define K7 conv2d_column_packing
#define K8 conv2d_column_packing_io10

/* #5: img (CI, N, H, W), filt (CI, CO, HF, WF). */
static void check5(nx_dtype dt, uint64_t CI, uint64_t N, uint64_t H, uint64_t W, uint64_t CO, uint64_t HF,
                   uint64_t WF, const char *attrs, uint64_t seed) {
    conv_case c = {L5, dt, {CI, N, H, W}, {CI, CO, HF, WF}, attrs, 1, seed};
    conv_check_leaf(K5, N5, &c, 1);
}

/* #7 / #8: img (CI, C, H, W), filt (CI, C, HF, WF) / (CI, C, WF, HF). */
static void check7(int io10, nx_dtype dt, uint64_t CI, uint64_t C, uint64_t H, uint64_t W, uint64_t HF, uint64_t WF,
                   const char *attrs, uint64_t seed) {
    char buf[256];
    snprintf(buf, sizeof buf, "batch_group_count=%llu%s%s", (unsigned long long)C, attrs ? ";" : "", attrs ? attrs : "");
    conv_case c = {io10 ? L8 : L5, dt, {CI, C, H, W}, {CI, C, io10 ? WF : HF, io10 ? HF : WF}, buf, 1, seed};
    conv_check_leaf(io10 ? K8 : K7, io10 ? "conv2d_column_packing_io10" : "conv2d_column_packing", &c, 1);
}

static void test_basic(void **state) {
    (void)state;
    check5(NX_DT_FP32, 2, 3, 6, 7, 4, 4, 5, NULL, 1);
    check5(NX_DT_BF16, 3, 2, 9, 9, 5, 5, 5, "padding=[[1,1],[1,1]]", 2);
    check7(0, NX_DT_FP32, 2, 3, 6, 7, 4, 5, NULL, 3);
    check7(1, NX_DT_FP32, 2, 3, 6, 7, 4, 5, "padding=[[1,1],[1,1]]", 4);
}

/* The shapes on #5: CI (the contraction features) 1, 3, 130;
 * N 1, 2, 129; CO 1, 3, 130; 1x1 outputs and outputs larger than the
 * gradient; strides 1-3 and rhs_dilation 1-3; negative padding. */
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
}

/* The shapes on #7 and #8: C (channels = groups) 1, 3, 130; CI (the
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
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic),
        cmocka_unit_test(test_shapes5),
        cmocka_unit_test(test_shapes7),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
