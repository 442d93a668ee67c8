/* The three top-k leaves against the top-k reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "kernels/topk/topk.h"
#include "topk_check.h"

#define SCAN naive_scanning_topk, "SCANNING"
#define CASC cascaded_2_stage_topk, "CASCADED"
#define ROT rotational_topk, "ROTATIONAL"

static void test_smoke(void **state) {
    (void)state;
    topk_case cs[] = {
        {SCAN, NX_DT_FP32, 4, 100, 9, 1, NULL, TOPK_RANDOM, 1, 1, 1},
        {CASC, NX_DT_FP32, 2, 1000, 9, 1, NULL, TOPK_TIES, 1, 1, 2},
        {ROT, NX_DT_FP32, 2, 1000, 9, 1, NULL, TOPK_TIES, 1, 1, 3},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) topk_check(&cs[i]);
}

static void test_sweep(void **state) {
    (void)state;
    nx_leaf_fn leaves[3] = {naive_scanning_topk, cascaded_2_stage_topk, rotational_topk};
    const char *names[3] = {"SCANNING", "CASCADED", "ROTATIONAL"};
    nx_dtype dts[4] = {NX_DT_FP32, NX_DT_BF16, NX_DT_FP16, NX_DT_FP8_E4M3};
    uint64_t ns[] = {8, 9, 17, 100, 1000, 4095};
    uint64_t ks[] = {1, 7, 8, 9, 64};
    const char *attrs[] = {NULL, "folds=4", "folds=16", "chunk=64", "folds=2;chunk=40"};
    uint64_t seed = 1;
    for (int l = 0; l < 3; l++)
        for (int d = 0; d < 4; d++)
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
                for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                    uint64_t n = ns[ni], k = ks[ki] > n ? n : ks[ki];
                    int kind = (int)(seed % 5);
                    const char *a = attrs[seed % 5];
                    if (a && l == 0 && a[0] == 'f') a = NULL;
                    topk_case c = {leaves[l], names[l], dts[d], 1 + seed % 5, n, k, (int)(seed % 2), a, (topk_data)kind, 1 + (uint32_t)(seed % 2), 0, seed};
                    if (a && a[0] == 'f') {
                        /* folds must fit the row */
                        uint32_t f = a[6] == '4' ? 4 : a[6] == '1' ? 16 : 2;
                        uint64_t sf = (n + f - 1) / f;
                        if ((f - 1) * sf >= n || f * (c.rows) > 128) c.attrs = NULL;
                    }
                    topk_check(&c);
                    seed++;
                }
}

static void test_model(void **state) {
    (void)state;
    topk_case cs[] = {
        {SCAN, NX_DT_BF16, 300, 100, 9, 1, NULL, TOPK_SPECIAL, 2, 1, 11},
        {CASC, NX_DT_FP32, 3, 4095, 64, 0, NULL, TOPK_SPECIAL, 2, 1, 12},
        {ROT, NX_DT_FP16, 3, 4095, 64, 1, NULL, TOPK_TIES, 2, 1, 13},
        {ROT, NX_DT_FP32, 1, 4095, 4095, 1, NULL, TOPK_SPECIAL, 1, 1, 14},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) topk_check(&cs[i]);
}
static void test_long(void **state) {
    (void)state;
    topk_case cs[] = {
        {SCAN, NX_DT_BF16, 1, 151936, 8, 1, NULL, TOPK_RANDOM, 2, 1, 21},
        {CASC, NX_DT_BF16, 1, 151936, 8, 1, NULL, TOPK_RANDOM, 2, 1, 22},
        {ROT, NX_DT_BF16, 1, 151936, 8, 1, NULL, TOPK_RANDOM, 2, 1, 23},
        {SCAN, NX_DT_FP32, 2, 65536, 9, 0, NULL, TOPK_SPECIAL, 2, 1, 24},
        {CASC, NX_DT_FP32, 2, 16384, 2048, 1, NULL, TOPK_TIES, 2, 1, 25},
        {ROT, NX_DT_FP32, 1, 16384, 2048, 1, NULL, TOPK_TIES, 2, 1, 26},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) topk_check(&cs[i]);
}

static void test_dbg(void **state) {
    (void)state;
    const char *env = getenv("TK");
    if (!env) return;
    unsigned long long rows, n, k, seed; int largest, kind, grid, dt; char attrs[64] = "";
    sscanf(env, "%d,%llu,%llu,%llu,%d,%d,%d,%llu,%63s", &dt, &rows, &n, &k, &largest, &kind, &grid, &seed, attrs);
    nx_leaf_fn leaves[3] = {naive_scanning_topk, cascaded_2_stage_topk, rotational_topk};
    int l = getenv("TKL") ? atoi(getenv("TKL")) : 0;
    topk_case c = {leaves[l], "dbg", (nx_dtype)dt, rows, n, k, largest, attrs[0] ? attrs : NULL, (topk_data)kind, (uint32_t)grid, 0, seed};
    topk_check(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dbg),
        cmocka_unit_test(test_smoke),
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_model),
        cmocka_unit_test(test_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
