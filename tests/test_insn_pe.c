/* Tests for the PE instructions (isa/insns/{load_stationary,multiply_moving,
 * transpose}.c) and DVE transpose.
 *
 * Matmul references, written here:
 *   - a float loop, m and n outer, k inner, each product rounded to fp32 and
 *     added to the running sum starting from the k = 0 product: the result
 *     must be bit-identical (C float arithmetic under -std=c11 is IEEE
 *     single precision without FMA contraction);
 *   - a double loop, checked to |got - exact| <= (K + 2) * 2^-24 * sum|a*b|
 *     (the recursive-summation error bound with rounded products, plus one
 *     rounding for an accumulate). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/access.h"
#include "isa/dtype.h"
#include "isa/pe_input.h"
#include "support.h"

/* ---- helpers ---- */

/* Fails unless validation rejects insn with a message containing `part`. */
static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static nx_insn load_stationary(nx_operand src) {
    nx_insn insn = nx_insn_make(NX_OP_LOAD_STATIONARY);
    insn.op[0] = src;
    return insn;
}

static nx_insn multiply(nx_operand dst, nx_operand moving, int acc) {
    nx_insn insn = nx_insn_make(NX_OP_MULTIPLY_MOVING);
    insn.op[0] = dst;
    insn.op[1] = moving;
    insn.flags = acc ? NX_FLAG_ACCUMULATE : 0;
    return insn;
}

/* Writes random values of dtype dt as a [rows, n] tile at SBUF `off` and
 * returns the values as stored (rounded to dt), row-major. */
static float *sbuf_random(nx_state *st, test_rng *r, nx_dtype dt, uint32_t rows, uint32_t n,
                          uint64_t off, double lo, double hi) {
    float *out = malloc((size_t)rows * n * sizeof *out);
    double *row = malloc(n * sizeof *row);
    assert_non_null(out);
    assert_non_null(row);
    for (uint32_t p = 0; p < rows; p++) {
        for (uint32_t i = 0; i < n; i++) row[i] = test_rng_uniform(r, lo, hi);
        test_sbuf_put(st, 0, dt, p, off, n, row);
        test_sbuf_get(st, 0, dt, p, off, n, row);
        for (uint32_t i = 0; i < n; i++) out[(size_t)p * n + i] = (float)row[i];
    }
    free(row);
    return out;
}

/* out[m][n] = sum_k st[k][m] * mv[k][n], float, sequential in k. */
static void ref_float(uint32_t K, uint32_t M, uint32_t N, const float *st, const float *mv, float *out) {
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t n = 0; n < N; n++) {
            float s = st[m] * mv[n];
            for (uint32_t k = 1; k < K; k++) {
                float p = st[(size_t)k * M + m] * mv[(size_t)k * N + n];
                s = s + p;
            }
            out[(size_t)m * N + n] = s;
        }
}

/* Checks dst (PSUM fp32 [M][N] at dst_off, contiguous rows) against both
 * references; `prior` (may be NULL) is what was accumulated into. */
static void check_matmul(nx_state *st, uint32_t K, uint32_t M, uint32_t N, const float *a,
                         const float *b, const float *prior, uint32_t dst_p0, uint64_t dst_off) {
    float *want = malloc((size_t)M * N * sizeof *want);
    double *got = malloc(N * sizeof *got);
    assert_non_null(want);
    assert_non_null(got);
    ref_float(K, M, N, a, b, want);
    for (uint32_t m = 0; m < M; m++) {
        test_psum_get(st, 0, NX_DT_FP32, dst_p0 + m, dst_off, N, got);
        for (uint32_t n = 0; n < N; n++) {
            float w = want[(size_t)m * N + n];
            if (prior) w = prior[(size_t)m * N + n] + w;
            if (!same_bits((float)got[n], w))
                fail_msg("[%u][%u]: got %.9g, float reference %.9g", m, n, got[n], (double)w);
            double exact = prior ? prior[(size_t)m * N + n] : 0.0, mag = 0.0;
            for (uint32_t k = 0; k < K; k++) {
                double p = (double)a[(size_t)k * M + m] * (double)b[(size_t)k * N + n];
                exact += p;
                mag += fabs(p);
            }
            double tol = (K + 2) * ldexp(1.0, -24) * (mag + (prior ? fabs(prior[(size_t)m * N + n]) : 0.0));
            if (fabs(got[n] - exact) > tol)
                fail_msg("[%u][%u]: got %.9g, exact %.9g, tolerance %.3g", m, n, got[n], exact, tol);
        }
    }
    free(want);
    free(got);
}

/* ---- load_stationary ---- */

static void test_load_stationary_stores_fp32(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 0, 0);
    test_rng r = {11};
    float *a = sbuf_random(&st, &r, NX_DT_BF16, 5, 7, 64, -4.0, 4.0);
    nx_insn insn = load_stationary(nx_ap_tile(NX_OPK_SBUF, NX_DT_BF16, 0, 5, 64, 7));
    test_run_ok(&st, NX_ENG_PE, &insn);
    const nx_core_state *cs = &st.core[0];
    assert_int_equal(cs->stationary_valid, 1);
    assert_int_equal(cs->stationary_k, 5);
    assert_int_equal(cs->stationary_m, 7);
    assert_int_equal(cs->stationary_dtype, NX_DT_BF16);
    for (uint32_t k = 0; k < 5; k++)
        for (uint32_t m = 0; m < 7; m++)
            assert_true(same_bits(cs->stationary[k * st.geo.pe_cols + m], a[k * 7 + m]));
    free(a);
    nx_state_free(&st);
}

/* Every fp16 and fp8 code is loaded exactly (fast converters vs dtype.c). */
static void test_load_stationary_every_code(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 0, 0);
    const nx_core_state *cs = &st.core[0];
    for (uint32_t chunk = 0; chunk < 4; chunk++) {
        for (uint32_t k = 0; k < 128; k++)
            for (uint32_t m = 0; m < 128; m++) {
                uint16_t code = (uint16_t)(chunk * 16384 + k * 128 + m);
                uint8_t *p = nx_sbuf_at(&st, 0, k, 2 * m);
                p[0] = (uint8_t)code;
                p[1] = (uint8_t)(code >> 8);
            }
        nx_insn insn = load_stationary(nx_ap_tile(NX_OPK_SBUF, NX_DT_FP16, 0, 128, 0, 128));
        test_run_ok(&st, NX_ENG_PE, &insn);
        for (uint32_t k = 0; k < 128; k++)
            for (uint32_t m = 0; m < 128; m++) {
                float want = nx_fp16_to_f32((uint16_t)(chunk * 16384 + k * 128 + m));
                float got = cs->stationary[k * 128 + m];
                if (isnan(want) ? !isnan(got) : !same_bits(got, want))
                    fail_msg("fp16 code 0x%04x: got %.9g, want %.9g", chunk * 16384 + k * 128 + m,
                             (double)got, (double)want);
            }
    }
    for (int e4 = 0; e4 < 2; e4++) {
        nx_dtype dt = e4 ? NX_DT_FP8_E4M3 : NX_DT_FP8_E5M2;
        for (uint32_t k = 0; k < 2; k++)
            for (uint32_t m = 0; m < 128; m++) *nx_sbuf_at(&st, 0, k, m) = (uint8_t)(k * 128 + m);
        nx_insn insn = load_stationary(nx_ap_tile(NX_OPK_SBUF, dt, 0, 2, 0, 128));
        test_run_ok(&st, NX_ENG_PE, &insn);
        for (uint32_t c = 0; c < 256; c++) {
            float want = e4 ? nx_fp8_e4m3_to_f32((uint8_t)c) : nx_fp8_e5m2_to_f32((uint8_t)c);
            float got = cs->stationary[(c / 128) * 128 + c % 128];
            if (isnan(want) ? !isnan(got) : !same_bits(got, want))
                fail_msg("%s code 0x%02x: got %.9g, want %.9g", nx_dtype_name(dt), c, (double)got,
                         (double)want);
        }
    }
    nx_state_free(&st);
}

/* A NaN input, signalling or quiet with a payload, reads as the canonical
 * quiet NaN 0x7fc00000 with its sign on every path (docs/parts/dtypes.md,
 * "NaN -> any float"): the element load every engine uses (nx_dtype_load,
 * the narrow helpers, a tensor_copy to fp32 memory) and the PE's input
 * conversion (load_stationary's tile and nx_pe_rows_to_f32, which
 * multiply_moving and the RTL feed use). */
static void test_nan_inputs_read_alike_on_every_path(void **state) {
    (void)state;
    static const struct {
        nx_dtype dt;
        uint16_t code;
    } cases[] = {
        {NX_DT_BF16, 0x7f81},  {NX_DT_BF16, 0xff81},   {NX_DT_BF16, 0x7fc1}, {NX_DT_BF16, 0x7fbf},
        {NX_DT_FP16, 0x7c01},  {NX_DT_FP16, 0xfc01},   {NX_DT_FP16, 0x7e01}, {NX_DT_FP16, 0x7dff},
        {NX_DT_FP8_E5M2, 0x7d}, {NX_DT_FP8_E5M2, 0xff}, {NX_DT_FP8_E4M3, 0x7f}, {NX_DT_FP8_E4M3, 0xff},
    };
    const size_t n = sizeof cases / sizeof cases[0];
    nx_state st;
    test_state(&st, 1, 0, 0);
    nx_exec_ctx ctx = {&st, 0, NX_ENG_PE, 0, NULL};
    for (size_t i = 0; i < n; i++) {
        nx_dtype dt = cases[i].dt;
        size_t sz = nx_dtype_size(dt);
        uint32_t want = (cases[i].code >> (8 * sz - 1)) ? 0xffc00000u : 0x7fc00000u;
        uint8_t mem[2] = {(uint8_t)cases[i].code, (uint8_t)(cases[i].code >> 8)};
        /* the element load and the narrow helper */
        float loaded = (float)nx_dtype_load(dt, mem);
        float helper = dt == NX_DT_BF16   ? nx_bf16_to_f32(cases[i].code)
                       : dt == NX_DT_FP16 ? nx_fp16_to_f32(cases[i].code)
                       : dt == NX_DT_FP8_E5M2 ? nx_fp8_e5m2_to_f32((uint8_t)cases[i].code)
                                              : nx_fp8_e4m3_to_f32((uint8_t)cases[i].code);
        /* partition 0: the code, as a one-element tile */
        memcpy(nx_sbuf_at(&st, 0, 0, 0), mem, sz);
        nx_insn cp = nx_insn_make(NX_OP_TENSOR_COPY);
        cp.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 1, 64, 1);
        cp.op[1] = nx_ap_tile(NX_OPK_SBUF, dt, 0, 1, 0, 1);
        test_run_ok(&st, NX_ENG_DVE, &cp);
        uint32_t copied;
        memcpy(&copied, nx_sbuf_at(&st, 0, 0, 64), 4);
        nx_insn ls = load_stationary(nx_ap_tile(NX_OPK_SBUF, dt, 0, 1, 0, 1));
        test_run_ok(&st, NX_ENG_PE, &ls);
        float stationary = st.core[0].stationary[0];
        nx_view v;
        nx_operand op = nx_ap_tile(NX_OPK_SBUF, dt, 0, 1, 0, 1);
        nx_view_init(&v, &ctx, &op);
        float moving = 0.0f;
        nx_pe_rows_to_f32(&v, 1, &moving, 1);
        const float paths[4] = {loaded, helper, stationary, moving};
        const char *names[4] = {"nx_dtype_load", "narrow helper", "load_stationary", "nx_pe_rows_to_f32"};
        for (int k = 0; k < 4; k++) {
            uint32_t got;
            memcpy(&got, &paths[k], 4);
            if (got != want)
                fail_msg("%s 0x%x via %s: 0x%08x, want 0x%08x", nx_dtype_name(dt), cases[i].code, names[k], got,
                         want);
        }
        if (copied != want)
            fail_msg("%s 0x%x via tensor_copy to fp32: 0x%08x, want 0x%08x", nx_dtype_name(dt), cases[i].code,
                     copied, want);
    }
    nx_state_free(&st);
}

static void test_load_stationary_rejects(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 0, 0);
    nx_insn insn = load_stationary(nx_ap_tile(NX_OPK_SBUF, NX_DT_INT8, 0, 4, 0, 4));
    test_invalid(&st, NX_ENG_PE, &insn, "src dtype int8 is not a PE input type");
    insn = load_stationary(nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 4, 0, 129));
    test_invalid(&st, NX_ENG_PE, &insn, "src has 129 elements per partition (M), more than the PE's 128 columns");
    /* K beyond a (smaller) machine's PE rows */
    nx_geometry small = st.geo;
    small.pe_rows = 64;
    nx_error err;
    insn = load_stationary(nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 65, 0, 8));
    assert_int_equal(nx_insn_validate(&insn, NX_ENG_PE, &small, 0, 0, &err), -1);
    assert_string_equal(err.msg, "src has 65 partitions (K), more than the PE's 64 rows");
    /* PE reads SBUF only (generic rule) and only runs on PE */
    insn = load_stationary(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 4, 0, 4));
    test_invalid(&st, NX_ENG_PE, &insn, "src");
    nx_state_free(&st);
}

/* ---- multiply_moving ---- */

/* dst at PSUM partitions p0.., byte 2048 (bank 1) */
static void matmul_case(uint32_t K, uint32_t M, uint32_t N, nx_dtype adt, nx_dtype bdt, uint32_t p0,
                        uint64_t seed) {
    nx_state st;
    test_state(&st, 1, 0, 0);
    test_rng r = {seed};
    float *a = sbuf_random(&st, &r, adt, K, M, 0, -1.0, 1.0);
    float *b = sbuf_random(&st, &r, bdt, K, N, 4096, -1.0, 1.0);
    /* garbage in dst: a non-accumulating multiply overwrites it */
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t n = 0; n < N; n++) {
            double v = 1234.5;
            test_psum_put(&st, 0, NX_DT_FP32, p0 + m, 2048 + 4 * n, 1, &v);
        }
    nx_insn ls = load_stationary(nx_ap_tile(NX_OPK_SBUF, adt, 0, K, 0, M));
    test_run_ok(&st, NX_ENG_PE, &ls);
    nx_insn mm = multiply(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, p0, M, 2048, N),
                          nx_ap_tile(NX_OPK_SBUF, bdt, 0, K, 4096, N), 0);
    test_run_ok(&st, NX_ENG_PE, &mm);
    check_matmul(&st, K, M, N, a, b, NULL, p0, 2048);
    free(a);
    free(b);
    nx_state_free(&st);
}

static void test_matmul_fp32_full(void **state) {
    (void)state;
    matmul_case(128, 128, 512, NX_DT_FP32, NX_DT_FP32, 0, 1);
}

static void test_matmul_fp32_odd_shapes(void **state) {
    (void)state;
    matmul_case(100, 37, 77, NX_DT_FP32, NX_DT_FP32, 0, 2);
    matmul_case(1, 1, 1, NX_DT_FP32, NX_DT_FP32, 0, 3);
    matmul_case(3, 9, 33, NX_DT_FP32, NX_DT_FP32, 96, 4);
    matmul_case(64, 32, 64, NX_DT_FP32, NX_DT_FP32, 32, 10);
    matmul_case(40, 64, 96, NX_DT_BF16, NX_DT_BF16, 64, 11);
    matmul_case(128, 8, 32, NX_DT_FP32, NX_DT_FP32, 0, 5);
    matmul_case(17, 120, 500, NX_DT_FP32, NX_DT_FP32, 0, 6);
}

static void test_matmul_low_precision_inputs(void **state) {
    (void)state;
    matmul_case(128, 128, 512, NX_DT_BF16, NX_DT_BF16, 0, 7);
    matmul_case(64, 40, 100, NX_DT_FP8_E4M3, NX_DT_BF16, 0, 8);
    matmul_case(96, 128, 64, NX_DT_FP16, NX_DT_FP8_E5M2, 0, 9);
}

/* The sum starts from the k = 0 product, not from +0: -1 * 0 stays -0. */
static void test_matmul_starts_from_first_product(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 0, 0);
    double a = -1.0, b = 0.0;
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 0, 1, &a);
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 64, 1, &b);
    nx_insn ls = load_stationary(nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 1, 0, 1));
    test_run_ok(&st, NX_ENG_PE, &ls);
    nx_insn mm = multiply(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 1, 0, 1), nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 1, 64, 1), 0);
    test_run_ok(&st, NX_ENG_PE, &mm);
    double got;
    test_psum_get(&st, 0, NX_DT_FP32, 0, 0, 1, &got);
    assert_true(got == 0.0 && signbit(got));
    /* and the order is sequential: 1e8 + 1 - 1e8 = 0 in fp32, not 1 */
    double as[3] = {1.0, 1.0, 1.0}, bs[3] = {1e8, 1.0, -1e8};
    for (uint32_t k = 0; k < 3; k++) {
        test_sbuf_put(&st, 0, NX_DT_FP32, k, 0, 1, &as[k]);
        test_sbuf_put(&st, 0, NX_DT_FP32, k, 64, 1, &bs[k]);
    }
    ls = load_stationary(nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 3, 0, 1));
    test_run_ok(&st, NX_ENG_PE, &ls);
    mm = multiply(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 1, 0, 1), nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 3, 64, 1), 0);
    test_run_ok(&st, NX_ENG_PE, &mm);
    test_psum_get(&st, 0, NX_DT_FP32, 0, 0, 1, &got);
    assert_true(got == 0.0);
    nx_state_free(&st);
}

/* Two multiplies into one PSUM tile: the second adds (fp32) to the first. */
static void test_matmul_accumulate(void **state) {
    (void)state;
    const uint32_t K = 64, M = 96, N = 200;
    nx_state st;
    test_state(&st, 1, 0, 0);
    test_rng r = {21};
    float *a1 = sbuf_random(&st, &r, NX_DT_BF16, K, M, 0, -2.0, 2.0);
    float *b1 = sbuf_random(&st, &r, NX_DT_BF16, K, N, 1024, -2.0, 2.0);
    float *a2 = sbuf_random(&st, &r, NX_DT_FP32, K, M, 2048, -2.0, 2.0);
    float *b2 = sbuf_random(&st, &r, NX_DT_FP32, K, N, 4096, -2.0, 2.0);
    nx_operand dst = nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, M, 6144, N);
    nx_insn ls = load_stationary(nx_ap_tile(NX_OPK_SBUF, NX_DT_BF16, 0, K, 0, M));
    test_run_ok(&st, NX_ENG_PE, &ls);
    nx_insn mm = multiply(dst, nx_ap_tile(NX_OPK_SBUF, NX_DT_BF16, 0, K, 1024, N), 0);
    test_run_ok(&st, NX_ENG_PE, &mm);
    float *first = malloc((size_t)M * N * sizeof *first);
    assert_non_null(first);
    ref_float(K, M, N, a1, b1, first);
    check_matmul(&st, K, M, N, a1, b1, NULL, 0, 6144);
    ls = load_stationary(nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, K, 2048, M));
    test_run_ok(&st, NX_ENG_PE, &ls);
    mm = multiply(dst, nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, K, 4096, N), 1);
    test_run_ok(&st, NX_ENG_PE, &mm);
    check_matmul(&st, K, M, N, a2, b2, first, 0, 6144);
    free(a1);
    free(b1);
    free(a2);
    free(b2);
    free(first);
    nx_state_free(&st);
}

/* Strided moving (two free dims, every other element) and a reversed dst
 * row (stride -1) at a start partition of 64. */
static void test_matmul_strided_operands(void **state) {
    (void)state;
    const uint32_t K = 20, M = 48, N = 30; /* moving viewed as 3 x 10 */
    nx_state st;
    test_state(&st, 1, 0, 0);
    test_rng r = {31};
    float *a = sbuf_random(&st, &r, NX_DT_FP32, K, M, 0, -1.0, 1.0);
    float *wide = sbuf_random(&st, &r, NX_DT_FP32, K, 2 * N, 1024, -1.0, 1.0);
    float *b = malloc((size_t)K * N * sizeof *b);
    assert_non_null(b);
    for (uint32_t k = 0; k < K; k++)
        for (uint32_t n = 0; n < N; n++) b[k * N + n] = wide[k * 2 * N + 2 * n];
    nx_insn ls = load_stationary(nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, K, 0, M));
    test_run_ok(&st, NX_ENG_PE, &ls);
    int32_t ms[2] = {20, 2};
    uint32_t mc[2] = {3, 10};
    int32_t ds[1] = {-1};
    uint32_t dc[1] = {N};
    nx_operand mv = nx_ap(NX_OPK_SBUF, NX_DT_FP32, 0, K, 0, 1024, 2, ms, mc);
    nx_operand dst = nx_ap(NX_OPK_PSUM, NX_DT_FP32, 64, M, 0, 4 * (N - 1), 1, ds, dc);
    nx_insn mm = multiply(dst, mv, 0);
    test_run_ok(&st, NX_ENG_PE, &mm);
    float *want = malloc((size_t)M * N * sizeof *want);
    assert_non_null(want);
    ref_float(K, M, N, a, b, want);
    for (uint32_t m = 0; m < M; m++) {
        double got[30];
        test_psum_get(&st, 0, NX_DT_FP32, 64 + m, 0, N, got);
        for (uint32_t n = 0; n < N; n++)
            if (!same_bits((float)got[N - 1 - n], want[m * N + n]))
                fail_msg("[%u][%u]: got %.9g want %.9g", m, n, got[N - 1 - n], (double)want[m * N + n]);
    }
    free(a);
    free(wide);
    free(b);
    free(want);
    nx_state_free(&st);
}

static void test_matmul_runtime_errors(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 0, 0);
    nx_insn mm = multiply(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 8, 0, 16), nx_ap_tile(NX_OPK_SBUF, NX_DT_BF16, 0, 4, 0, 16), 0);
    test_run_fails(&st, NX_ENG_PE, &mm,
              "core 0 pe #0 (multiply_moving): no stationary tile is loaded (load_stationary must come first)");
    nx_insn ls = load_stationary(nx_ap_tile(NX_OPK_SBUF, NX_DT_BF16, 0, 5, 0, 8));
    test_run_ok(&st, NX_ENG_PE, &ls);
    test_run_fails(&st, NX_ENG_PE, &mm,
              "core 0 pe #0 (multiply_moving): moving has K = 4 partitions but the stationary tile has K = 5");
    mm = multiply(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 9, 0, 16), nx_ap_tile(NX_OPK_SBUF, NX_DT_BF16, 0, 5, 0, 16), 0);
    test_run_fails(&st, NX_ENG_PE, &mm,
              "core 0 pe #0 (multiply_moving): dst has 9 partitions but the stationary tile has M = 8 columns");
    /* the failed instructions wrote nothing */
    double got[16];
    test_psum_get(&st, 0, NX_DT_FP32, 0, 0, 16, got);
    for (int i = 0; i < 16; i++) assert_true(got[i] == 0.0);
    nx_state_free(&st);
}

static void test_matmul_static_rejects(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 0, 0);
    nx_operand mv = nx_ap_tile(NX_OPK_SBUF, NX_DT_BF16, 0, 16, 0, 128);
    /* 128 fp32 = 512 bytes at 1792 straddles the 2048 bank boundary */
    nx_insn mm = multiply(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 16, 1792, 128), mv, 0);
    test_invalid(&st, NX_ENG_PE, &mm, "dst bytes [1792, 2304) of each partition straddle PSUM banks of 2048 bytes");
    /* ending exactly at the boundary is fine */
    mm = multiply(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 16, 1536, 128), mv, 0);
    nx_error err;
    assert_int_equal(nx_insn_validate(&mm, NX_ENG_PE, &st.geo, 0, 0, &err), 0);
    /* a whole bank of N = 512 fits; N = 513 is over the moving limit */
    mm = multiply(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 16, 2048, 512), nx_ap_tile(NX_OPK_SBUF, NX_DT_BF16, 0, 16, 0, 512), 0);
    assert_int_equal(nx_insn_validate(&mm, NX_ENG_PE, &st.geo, 0, 0, &err), 0);
    mm = multiply(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 16, 0, 513), nx_ap_tile(NX_OPK_SBUF, NX_DT_BF16, 0, 16, 0, 513), 0);
    test_invalid(&st, NX_ENG_PE, &mm, "moving has 513 elements per partition (N), more than the limit 512");
    mm = multiply(nx_ap_tile(NX_OPK_PSUM, NX_DT_BF16, 0, 16, 0, 128), mv, 0);
    test_invalid(&st, NX_ENG_PE, &mm, "dst dtype bf16 must be fp32");
    mm = multiply(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 16, 0, 127), mv, 0);
    test_invalid(&st, NX_ENG_PE, &mm, "dst has 127 elements per partition but moving has 128 (N)");
    mm = multiply(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 16, 0, 128), nx_ap_tile(NX_OPK_SBUF, NX_DT_INT32, 0, 16, 0, 128), 0);
    test_invalid(&st, NX_ENG_PE, &mm, "moving dtype int32 is not a PE input type");
    /* generic engine rule: the PE writes PSUM, not SBUF */
    mm = multiply(nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 16, 0, 128), mv, 0);
    test_invalid(&st, NX_ENG_PE, &mm, "dst");
    nx_state_free(&st);
}

/* ---- transpose ---- */

static nx_insn transpose(nx_operand dst, nx_operand src) {
    nx_insn insn = nx_insn_make(NX_OP_TRANSPOSE);
    insn.op[0] = dst;
    insn.op[1] = src;
    return insn;
}

/* src SBUF [P, F] of sdt at offset 0 -> dst [F, P] of ddt; checks every
 * element against the stored source (bit-exact when the dtypes are equal). */
static void transpose_case(nx_engine eng, nx_operand_kind dkind, uint32_t P, uint32_t F, nx_dtype sdt,
                           nx_dtype ddt, uint64_t seed) {
    nx_state st;
    test_state(&st, 1, 0, 0);
    test_rng r = {seed};
    float *src = sbuf_random(&st, &r, sdt, P, F, 0, -100.0, 100.0);
    uint64_t doff = dkind == NX_OPK_PSUM ? 0 : 8192;
    nx_insn insn = transpose(nx_ap_tile(dkind, ddt, 0, F, doff, P), nx_ap_tile(NX_OPK_SBUF, sdt, 0, P, 0, F));
    test_run_ok(&st, eng, &insn);
    double *row = malloc(P * sizeof *row);
    assert_non_null(row);
    for (uint32_t f = 0; f < F; f++) {
        if (dkind == NX_OPK_PSUM) test_psum_get(&st, 0, ddt, f, doff, P, row);
        else test_sbuf_get(&st, 0, ddt, f, doff, P, row);
        for (uint32_t p = 0; p < P; p++)
            if (!same_bits((float)row[p], src[(size_t)p * F + f]))
                fail_msg("dst[%u][%u] = %.9g, src[%u][%u] = %.9g", f, p, row[p], p, f,
                         (double)src[(size_t)p * F + f]);
    }
    free(row);
    free(src);
    nx_state_free(&st);
}

static void test_transpose_pe(void **state) {
    (void)state;
    transpose_case(NX_ENG_PE, NX_OPK_PSUM, 128, 128, NX_DT_BF16, NX_DT_BF16, 41);
    transpose_case(NX_ENG_PE, NX_OPK_PSUM, 1, 1, NX_DT_FP32, NX_DT_FP32, 42);
    transpose_case(NX_ENG_PE, NX_OPK_PSUM, 100, 37, NX_DT_FP32, NX_DT_FP32, 43);
    transpose_case(NX_ENG_PE, NX_OPK_PSUM, 100, 37, NX_DT_BF16, NX_DT_FP32, 44);
    transpose_case(NX_ENG_PE, NX_OPK_PSUM, 64, 128, NX_DT_FP8_E4M3, NX_DT_FP8_E4M3, 45);
}

/* A bit-exact move keeps NaN payloads and -0. */
static void test_transpose_pe_bit_exact(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 0, 0);
    const uint16_t codes[4] = {0x7fc1, 0x8000, 0xff81, 0x0001}; /* NaN, -0, NaN, subnormal */
    for (uint32_t p = 0; p < 2; p++)
        for (uint32_t f = 0; f < 2; f++) memcpy(nx_sbuf_at(&st, 0, p, 2 * f), &codes[p * 2 + f], 2);
    nx_insn insn = transpose(nx_ap_tile(NX_OPK_PSUM, NX_DT_BF16, 0, 2, 0, 2), nx_ap_tile(NX_OPK_SBUF, NX_DT_BF16, 0, 2, 0, 2));
    test_run_ok(&st, NX_ENG_PE, &insn);
    for (uint32_t f = 0; f < 2; f++)
        for (uint32_t p = 0; p < 2; p++) {
            uint16_t got;
            memcpy(&got, nx_psum_at(&st, 0, f, 2 * p), 2);
            assert_int_equal(got, codes[p * 2 + f]);
        }
    nx_state_free(&st);
}

static void test_transpose_dve(void **state) {
    (void)state;
    transpose_case(NX_ENG_DVE, NX_OPK_SBUF, 32, 32, NX_DT_FP32, NX_DT_FP32, 51);
    transpose_case(NX_ENG_DVE, NX_OPK_PSUM, 7, 19, NX_DT_BF16, NX_DT_BF16, 52);
    transpose_case(NX_ENG_DVE, NX_OPK_SBUF, 32, 1, NX_DT_INT32, NX_DT_INT32, 53);
}

/* In place on DVE: the source is read before anything is written. */
static void test_transpose_dve_in_place(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 0, 0);
    for (uint32_t p = 0; p < 4; p++)
        for (uint32_t f = 0; f < 4; f++) {
            double v = p * 10 + f;
            test_sbuf_put(&st, 0, NX_DT_FP32, p, 4 * f, 1, &v);
        }
    nx_operand t = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 4, 0, 4);
    nx_insn insn = transpose(t, t);
    test_run_ok(&st, NX_ENG_DVE, &insn);
    for (uint32_t f = 0; f < 4; f++) {
        double row[4];
        test_sbuf_get(&st, 0, NX_DT_FP32, f, 0, 4, row);
        for (uint32_t p = 0; p < 4; p++) assert_true(row[p] == p * 10 + f);
    }
    nx_state_free(&st);
}

static void test_transpose_rejects(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 0, 0);
    nx_insn insn = transpose(nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 33, 0, 32), nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 32, 0, 33));
    test_invalid(&st, NX_ENG_DVE, &insn, "src is 32 x 33, more than the 32 x 32 block dve can transpose");
    insn = transpose(nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 32, 0, 33), nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 33, 0, 32));
    test_invalid(&st, NX_ENG_DVE, &insn, "src is 33 x 32");
    insn = transpose(nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 8, 0, 8), nx_ap_tile(NX_OPK_SBUF, NX_DT_BF16, 0, 8, 0, 8));
    test_invalid(&st, NX_ENG_DVE, &insn, "dst dtype fp32 must equal src dtype bf16 on dve");
    insn = transpose(nx_ap_tile(NX_OPK_PSUM, NX_DT_BF16, 0, 8, 0, 8), nx_ap_tile(NX_OPK_SBUF, NX_DT_FP16, 0, 8, 0, 8));
    test_invalid(&st, NX_ENG_PE, &insn, "dst dtype bf16 must equal src dtype fp16 or be fp32 on the PE");
    insn = transpose(nx_ap_tile(NX_OPK_PSUM, NX_DT_INT32, 0, 8, 0, 8), nx_ap_tile(NX_OPK_SBUF, NX_DT_INT32, 0, 8, 0, 8));
    test_invalid(&st, NX_ENG_PE, &insn, "src dtype int32 is not a PE input type");
    insn = transpose(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 8, 0, 9), nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 8, 0, 8));
    test_invalid(&st, NX_ENG_PE, &insn, "dst has 9 elements per partition but src has 8 partitions");
    insn = transpose(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 9, 0, 8), nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 8, 0, 8));
    test_invalid(&st, NX_ENG_PE, &insn, "dst has 9 partitions but src has 8 elements per partition");
    insn = transpose(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 8, 2040, 8), nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 8, 0, 8));
    test_invalid(&st, NX_ENG_PE, &insn, "straddle PSUM banks");
    insn = transpose(nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 8, 0, 8), nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 8, 0, 8));
    test_invalid(&st, NX_ENG_PE, &insn, "dst"); /* PE writes PSUM only */
    /* the PE limits come from the geometry */
    nx_geometry small = st.geo;
    small.pe_cols = 16;
    nx_error err;
    insn = transpose(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 17, 0, 8), nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 8, 0, 17));
    assert_int_equal(nx_insn_validate(&insn, NX_ENG_PE, &small, 0, 0, &err), -1);
    assert_string_equal(err.msg, "src has 17 elements per partition, more than the PE's 16 columns");
    nx_state_free(&st);
}

/* transpose on the PE leaves the stationary tile alone */
static void test_transpose_keeps_stationary(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 0, 0);
    double one = 3.0;
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 0, 1, &one);
    nx_insn ls = load_stationary(nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 1, 0, 1));
    test_run_ok(&st, NX_ENG_PE, &ls);
    nx_insn tr = transpose(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 4, 0, 2), nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 2, 64, 4));
    test_run_ok(&st, NX_ENG_PE, &tr);
    assert_int_equal(st.core[0].stationary_valid, 1);
    assert_int_equal(st.core[0].stationary_k, 1);
    assert_int_equal(st.core[0].stationary_m, 1);
    assert_true(st.core[0].stationary[0] == 3.0f);
    nx_state_free(&st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_stationary_stores_fp32),
        cmocka_unit_test(test_load_stationary_every_code),
        cmocka_unit_test(test_nan_inputs_read_alike_on_every_path),
        cmocka_unit_test(test_load_stationary_rejects),
        cmocka_unit_test(test_matmul_fp32_full),
        cmocka_unit_test(test_matmul_fp32_odd_shapes),
        cmocka_unit_test(test_matmul_low_precision_inputs),
        cmocka_unit_test(test_matmul_starts_from_first_product),
        cmocka_unit_test(test_matmul_accumulate),
        cmocka_unit_test(test_matmul_strided_operands),
        cmocka_unit_test(test_matmul_runtime_errors),
        cmocka_unit_test(test_matmul_static_rejects),
        cmocka_unit_test(test_transpose_pe),
        cmocka_unit_test(test_transpose_pe_bit_exact),
        cmocka_unit_test(test_transpose_dve),
        cmocka_unit_test(test_transpose_dve_in_place),
        cmocka_unit_test(test_transpose_rejects),
        cmocka_unit_test(test_transpose_keeps_stationary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
