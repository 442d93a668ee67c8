/* The PE matmul datapath's kernels (isa/pe/datapath.h): every kernel this
 * host runs gives, bit for bit, what a plain C loop written here gives:
 *   p = a0 * b0;  p = p + ak * bk (k = 1 .. K-1, float, no contraction);
 *   out = acc ? prior + p : p;  a NaN out is 0x7fc00000,
 * for every pair of PE input dtypes (stationary x moving), shapes with and
 * without edge tiles, accumulate on and off, contiguous and strided
 * operands, and the extremes: products that overflow, products that fall
 * into fp32's subnormals, Inf - Inf, NaN payloads, -0. Where a kernel may
 * fuse (bf16, fp16, fp8 inputs), the extremes are chosen so that a fused
 * multiply-add in the wrong place gives other bits (checked against an
 * fmaf() reference), so the test fails if the datapath fuses where a
 * product is not exact. Also: the kernel names, NXSIM_MM_KERNEL's choice
 * and refusals, the multiply_moving instruction under each kernel, and
 * every kernel on 1 to 4 worker threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/bytes.h"
#include "isa/pe/datapath.h"
#include "isa/workers.h"
#include "support.h"

static const nx_dtype pe_dtypes[] = {NX_DT_FP32, NX_DT_BF16, NX_DT_FP16, NX_DT_FP8_E4M3, NX_DT_FP8_E5M2};
enum { N_PE_DTYPES = sizeof pe_dtypes / sizeof pe_dtypes[0] };

/* The value dt stores for v (rounded, saturated as dtype.h says). */
static float in_dtype(nx_dtype dt, double v) {
    uint8_t b[4];
    nx_dtype_store(dt, b, v);
    return (float)nx_dtype_load(dt, b);
}

/* ---- operands ---- */

typedef struct operands {
    uint32_t K, M, N;
    nx_dtype st_dt, mv_dt;
    float *st;          /* [K][M], values of st_dt */
    float *mv;          /* [K][N], values of mv_dt */
    float *prior;       /* [M][N] fp32, what an accumulate adds to */
} operands;

typedef enum value_kind {
    VALUES_UNIT,        /* uniform in [-2, 2), rounded to the dtype */
    VALUES_WIDE,        /* random sign, significand and exponent over the dtype's whole range, with
                         * +-0, +-Inf and NaN sprinkled in */
    VALUES_TINY,        /* |x| around 2^-70: bf16 products fall into fp32's subnormals */
    VALUES_HUGE         /* |x| around 2^64: bf16 products overflow */
} value_kind;

/* The exponent range [lo, hi] of dt's finite values, subnormals included. */
static void exp_limits(nx_dtype dt, int *lo, int *hi) {
    switch (dt) {
    case NX_DT_FP32: *lo = -149, *hi = 127; break;
    case NX_DT_BF16: *lo = -133, *hi = 127; break;
    case NX_DT_FP16: *lo = -24, *hi = 15; break;
    case NX_DT_FP8_E4M3: *lo = -9, *hi = 8; break;
    default: *lo = -16, *hi = 15; break; /* fp8_e5m2 */
    }
}

static float random_value(test_rng *r, nx_dtype dt, value_kind kind) {
    double sign = test_rng_next(r) & 1 ? -1.0 : 1.0;
    double sig = test_rng_uniform(r, 1.0, 2.0);
    int lo, hi;
    exp_limits(dt, &lo, &hi);
    switch (kind) {
    case VALUES_UNIT: return in_dtype(dt, test_rng_uniform(r, -2.0, 2.0));
    case VALUES_TINY: return in_dtype(dt, sign * sig * ldexp(1.0, -70 + (int)(test_rng_next(r) % 5)));
    case VALUES_HUGE: return in_dtype(dt, sign * sig * ldexp(1.0, 62 + (int)(test_rng_next(r) % 5)));
    case VALUES_WIDE:
        break;
    }
    uint64_t pick = test_rng_next(r) % 64;
    if (pick == 0) return in_dtype(dt, sign * 0.0);
    if (pick == 1) return in_dtype(dt, sign * INFINITY); /* e4m3 saturates to +-448 */
    if (pick == 2) return in_dtype(dt, NAN);
    int e = lo + (int)(test_rng_next(r) % (uint64_t)(hi - lo + 1));
    return in_dtype(dt, sign * sig * ldexp(1.0, e));
}

static float *random_matrix(test_rng *r, nx_dtype dt, value_kind kind, uint32_t rows, uint32_t cols) {
    float *x = malloc((size_t)rows * cols * sizeof *x);
    assert_non_null(x);
    for (size_t i = 0; i < (size_t)rows * cols; i++) x[i] = random_value(r, dt, kind);
    return x;
}

static operands make_operands(uint32_t K, uint32_t M, uint32_t N, nx_dtype st_dt, nx_dtype mv_dt, value_kind st_kind,
                              value_kind mv_kind, uint64_t seed) {
    test_rng r = {seed};
    operands o = {K, M, N, st_dt, mv_dt, NULL, NULL, NULL};
    o.st = random_matrix(&r, st_dt, st_kind, K, M);
    o.mv = random_matrix(&r, mv_dt, mv_kind, K, N);
    o.prior = random_matrix(&r, NX_DT_FP32, st_kind == VALUES_WIDE ? VALUES_WIDE : VALUES_UNIT, M, N);
    return o;
}

static void free_operands(operands *o) {
    free(o->st);
    free(o->mv);
    free(o->prior);
}

/* ---- references ---- */

/* out[m][n] as the PE computes it; fused: with fmaf (what a kernel that
 * fused everywhere would give). */
static void reference(const operands *o, int acc, int fused, uint32_t *out) {
    for (uint32_t m = 0; m < o->M; m++)
        for (uint32_t n = 0; n < o->N; n++) {
            float p = o->st[m] * o->mv[n];
            for (uint32_t k = 1; k < o->K; k++) {
                float a = o->st[(size_t)k * o->M + m], b = o->mv[(size_t)k * o->N + n];
                if (fused) {
                    p = fmaf(a, b, p);
                } else {
                    float ab = a * b;
                    p = p + ab;
                }
            }
            if (acc) p = o->prior[(size_t)m * o->N + n] + p;
            out[(size_t)m * o->N + n] = p != p ? 0x7fc00000u : nx_f32_bits(p);
        }
}

/* ---- running a kernel ---- */

typedef enum layout {
    LAYOUT_CONTIGUOUS,  /* moving rows contiguous, dst rows contiguous (updated in place) */
    LAYOUT_STRIDED      /* moving every other element, dst rows reversed (a staging copy) */
} layout;

/* Runs kernel k on o (stationary loaded from st_dt), on the workers w
 * (NULL: one thread), and returns dst's bits. */
static void run_kernel_on(nx_pe_kernel k, nx_workers *w, const operands *o, int acc, layout lay, uint32_t *out) {
    const size_t es = nx_dtype_size(o->mv_dt);
    const uint32_t st_ld = o->M + 5, step = lay == LAYOUT_STRIDED ? 2 : 1;
    const uint64_t mv_row = (uint64_t)o->N * step * es + 24, dst_ld = o->N + 3;
    float *st = malloc((size_t)o->K * st_ld * sizeof *st);
    uint8_t *mv = malloc((size_t)o->K * mv_row);
    float *dst = malloc((size_t)o->M * dst_ld * sizeof *dst);
    assert_non_null(st);
    assert_non_null(mv);
    assert_non_null(dst);
    for (uint32_t i = 0; i < o->K; i++) {
        memcpy(st + (size_t)i * st_ld, o->st + (size_t)i * o->M, o->M * sizeof *st);
        memset(mv + i * mv_row, 0xa5, mv_row);
        for (uint32_t n = 0; n < o->N; n++)
            nx_dtype_store(o->mv_dt, mv + i * mv_row + (uint64_t)n * step * es, o->mv[(size_t)i * o->N + n]);
    }
    nx_view mvv, dv;
    memset(&mvv, 0, sizeof mvv);
    memset(&dv, 0, sizeof dv);
    mvv.kind = NX_OPK_SBUF;
    mvv.dtype = (uint8_t)o->mv_dt;
    mvv.ndims = 1;
    mvv.partitions = o->K;
    mvv.free_elems = o->N;
    mvv.base = mv;
    mvv.partition_step = (int64_t)mv_row;
    mvv.stride_bytes[0] = (int64_t)(step * es);
    mvv.count[0] = o->N;
    dv.kind = NX_OPK_PSUM;
    dv.dtype = NX_DT_FP32;
    dv.ndims = 1;
    dv.partitions = o->M;
    dv.free_elems = o->N;
    dv.partition_step = (int64_t)(dst_ld * sizeof(float));
    dv.count[0] = o->N;
    if (lay == LAYOUT_STRIDED) {
        dv.base = (uint8_t *)(dst + o->N - 1);
        dv.stride_bytes[0] = -(int64_t)sizeof(float);
    } else {
        dv.base = (uint8_t *)dst;
        dv.stride_bytes[0] = sizeof(float);
    }
    /* dst holds the prior (or garbage a plain multiply overwrites) */
    for (uint32_t m = 0; m < o->M; m++)
        for (uint32_t n = 0; n < o->N; n++) {
            float v = acc ? o->prior[(size_t)m * o->N + n] : 1234.5f;
            memcpy(nx_view_addr(&dv, m, n), &v, sizeof v);
        }
    nx_pe_matmul mm = {st, st_ld, o->st_dt, &mvv, &dv, acc, w};
    nx_error err;
    if (nx_pe_matmul_run(k, &mm, &err) != 0) fail_msg("%s: %s", nx_pe_kernel_name(k), err.msg);
    for (uint32_t m = 0; m < o->M; m++)
        for (uint32_t n = 0; n < o->N; n++) memcpy(&out[(size_t)m * o->N + n], nx_view_addr(&dv, m, n), 4);
    free(st);
    free(mv);
    free(dst);
}

static void run_kernel(nx_pe_kernel k, const operands *o, int acc, layout lay, uint32_t *out) {
    run_kernel_on(k, NULL, o, acc, lay, out);
}

static void expect_bits(const char *what, nx_pe_kernel k, const operands *o, const uint32_t *got,
                        const uint32_t *want) {
    for (uint32_t m = 0; m < o->M; m++)
        for (uint32_t n = 0; n < o->N; n++) {
            size_t i = (size_t)m * o->N + n;
            if (got[i] != want[i])
                fail_msg("%s, kernel %s, %s x %s, K=%u M=%u N=%u: [%u][%u] = 0x%08x (%.9g), reference 0x%08x (%.9g)",
                         what, nx_pe_kernel_name(k), nx_dtype_name(o->st_dt), nx_dtype_name(o->mv_dt), o->K, o->M,
                         o->N, m, n, got[i], (double)nx_f32_from_bits(got[i]), want[i], (double)nx_f32_from_bits(want[i]));
        }
}

/* Every available kernel, accumulate off and on, against the reference. */
static void every_kernel(const char *what, const operands *o, layout lay) {
    size_t n = (size_t)o->M * o->N;
    uint32_t *want = malloc(n * 4), *got = malloc(n * 4);
    assert_non_null(want);
    assert_non_null(got);
    for (int acc = 0; acc < 2; acc++) {
        reference(o, acc, 0, want);
        for (int k = 0; k < NX_PE_KERNEL_COUNT; k++) {
            if (!nx_pe_kernel_available((nx_pe_kernel)k)) continue;
            run_kernel((nx_pe_kernel)k, o, acc, lay, got);
            expect_bits(what, (nx_pe_kernel)k, o, got, want);
        }
    }
    free(want);
    free(got);
}

/* 1 if fusing every step would change some result bit of o. */
static int fusing_would_show(const operands *o) {
    size_t n = (size_t)o->M * o->N;
    uint32_t *sep = malloc(n * 4), *fus = malloc(n * 4);
    assert_non_null(sep);
    assert_non_null(fus);
    reference(o, 0, 0, sep);
    reference(o, 0, 1, fus);
    int differs = memcmp(sep, fus, n * 4) != 0;
    free(sep);
    free(fus);
    return differs;
}

/* ---- tests ---- */

static void kernel_names_and_choice(void **state) {
    (void)state;
    assert_string_equal(nx_pe_kernel_name(NX_PE_KERNEL_SCALAR), "scalar");
    assert_string_equal(nx_pe_kernel_name(NX_PE_KERNEL_VECTOR), "vector");
    assert_string_equal(nx_pe_kernel_name(NX_PE_KERNEL_AVX2), "avx2");
    assert_string_equal(nx_pe_kernel_name(NX_PE_KERNEL_AVX512), "avx512");
    assert_null(nx_pe_kernel_name(NX_PE_KERNEL_COUNT));
    assert_true(nx_pe_kernel_available(NX_PE_KERNEL_SCALAR));
    assert_true(nx_pe_kernel_available(NX_PE_KERNEL_VECTOR));
    assert_false(nx_pe_kernel_available(NX_PE_KERNEL_COUNT));
    /* unset or empty: the fastest available */
    nx_pe_kernel best = NX_PE_KERNEL_VECTOR, got;
    if (nx_pe_kernel_available(NX_PE_KERNEL_AVX2)) best = NX_PE_KERNEL_AVX2;
    if (nx_pe_kernel_available(NX_PE_KERNEL_AVX512)) best = NX_PE_KERNEL_AVX512;
    nx_error err;
    assert_int_equal(nx_pe_kernel_choose(NULL, &got, &err), 0);
    assert_int_equal(got, best);
    assert_int_equal(nx_pe_kernel_choose("", &got, &err), 0);
    assert_int_equal(got, best);
    for (int k = 0; k < NX_PE_KERNEL_COUNT; k++) {
        int rc = nx_pe_kernel_choose(nx_pe_kernel_name((nx_pe_kernel)k), &got, &err);
        if (nx_pe_kernel_available((nx_pe_kernel)k)) {
            assert_int_equal(rc, 0);
            assert_int_equal(got, k);
        } else {
            assert_int_equal(rc, -1);
            if (!strstr(err.msg, "which this CPU lacks") && !strstr(err.msg, "not in this build"))
                fail_msg("refusal of %s: %s", nx_pe_kernel_name((nx_pe_kernel)k), err.msg);
        }
    }
    assert_int_equal(nx_pe_kernel_choose("AVX512", &got, &err), -1);
    assert_string_equal(err.msg, "unknown matmul kernel 'AVX512' (one of avx512, avx2, vector, scalar)");
    /* through the environment, as multiply_moving reads it */
    const char *saved = getenv("NXSIM_MM_KERNEL");
    char keep[64] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    assert_int_equal(setenv("NXSIM_MM_KERNEL", "scalar", 1), 0);
    assert_int_equal(nx_pe_kernel_active(&got, &err), 0);
    assert_int_equal(got, NX_PE_KERNEL_SCALAR);
    assert_int_equal(setenv("NXSIM_MM_KERNEL", "fast", 1), 0);
    assert_int_equal(nx_pe_kernel_active(&got, &err), -1);
    assert_string_equal(err.msg, "NXSIM_MM_KERNEL: unknown matmul kernel 'fast' (one of avx512, avx2, vector, scalar)");
    assert_int_equal(unsetenv("NXSIM_MM_KERNEL"), 0);
    assert_int_equal(nx_pe_kernel_active(&got, &err), 0);
    assert_int_equal(got, best);
    if (saved) setenv("NXSIM_MM_KERNEL", keep, 1);
}

/* Every stationary x moving dtype pair, values in [-2, 2). */
static void every_dtype_pair(void **state) {
    (void)state;
    static const uint32_t shapes[][3] = {{128, 128, 512}, {37, 13, 70}, {1, 1, 1}, {5, 9, 33}, {128, 6, 16}};
    uint64_t seed = 1;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int i = 0; i < N_PE_DTYPES; i++)
            for (int j = 0; j < N_PE_DTYPES; j++) {
                /* the full-size tile for one pair in four: the edges are where kernels differ */
                if (s == 0 && (i + j) % 4 != 0) continue;
                operands o = make_operands(shapes[s][0], shapes[s][1], shapes[s][2], pe_dtypes[i], pe_dtypes[j],
                                           VALUES_UNIT, VALUES_UNIT, seed++);
                every_kernel("unit values", &o, LAYOUT_CONTIGUOUS);
                free_operands(&o);
            }
}

/* Values over each dtype's whole range with +-0, +-Inf and NaN: products
 * overflow, underflow, Inf - Inf and NaN occur in the sums. */
static void wide_values(void **state) {
    (void)state;
    uint64_t seed = 100;
    for (int i = 0; i < N_PE_DTYPES; i++)
        for (int j = 0; j < N_PE_DTYPES; j++) {
            operands o = make_operands(24, 20, 50, pe_dtypes[i], pe_dtypes[j], VALUES_WIDE, VALUES_WIDE, seed++);
            every_kernel("wide values", &o, LAYOUT_CONTIGUOUS);
            free_operands(&o);
        }
}

/* bf16 products that fall into fp32's subnormals (pass 0), products that
 * overflow (pass 1), both in one multiply (pass 2): fusing them would change
 * bits (checked), so each kernel must take the separate path on exactly
 * those tiles: tiny stationary columns 0..4 (the first block) times tiny
 * moving columns 0..19, huge values in moving columns 40..59 only. */
static void bf16_outside_the_exact_range(void **state) {
    (void)state;
    for (int pass = 0; pass < 3; pass++) {
        operands o = make_operands(64, 40, 96, NX_DT_BF16, NX_DT_BF16, VALUES_UNIT, VALUES_UNIT, 200 + pass);
        test_rng r = {300 + pass};
        for (uint32_t k = 0; pass != 1 && k < o.K; k++) {
            for (uint32_t m = 0; m < 5; m++) o.st[k * o.M + m] = random_value(&r, NX_DT_BF16, VALUES_TINY);
            for (uint32_t n = 0; n < 20; n++) o.mv[k * o.N + n] = random_value(&r, NX_DT_BF16, VALUES_TINY);
        }
        for (uint32_t k = 0; pass != 0 && k < o.K; k++)
            for (uint32_t n = 40; n < 60; n++) o.mv[k * o.N + n] = random_value(&r, NX_DT_BF16, VALUES_HUGE);
        if (pass != 0) {
            /* -max, then 2^64 x 2^64 = 2^128: Inf when rounded alone, but
             * -max + 2^128 = 2^120 in one fused step */
            for (uint32_t m = 5; m < o.M; m++) {
                o.st[m] = -in_dtype(NX_DT_BF16, 0x1.fep127);
                o.st[o.M + m] = 0x1p64f;
            }
            for (uint32_t n = 40; n < 60; n++) o.mv[n] = 1.0f, o.mv[o.N + n] = 0x1p64f;
        }
        assert_true(fusing_would_show(&o));
        every_kernel("bf16 outside the exact range", &o, LAYOUT_CONTIGUOUS);
        free_operands(&o);
    }
}

/* Inf - Inf, NaN payloads (signalling and negative) and -0, one column
 * each, for every dtype pair that has the values. */
static void special_values(void **state) {
    (void)state;
    for (int i = 0; i < N_PE_DTYPES; i++)
        for (int j = 0; j < N_PE_DTYPES; j++) {
            operands o =
                make_operands(9, 10, 40, pe_dtypes[i], pe_dtypes[j], VALUES_UNIT, VALUES_UNIT, 400 + i * 5 + j);
            const float big = in_dtype(pe_dtypes[j], INFINITY); /* Inf, or 448 for e4m3 */
            for (uint32_t k = 0; k < o.K; k++) {
                /* column 0: +Inf then -Inf (NaN where the dtype has Inf) */
                o.mv[k * o.N + 0] = k == 0 ? big : k == 1 ? -big : 0.0f;
                /* column 1: an input NaN (payloads are not kept: only NaN-ness) */
                o.mv[k * o.N + 1] = k == 4 ? in_dtype(pe_dtypes[j], NAN) : o.mv[k * o.N + 1];
                /* column 2: every product -0 (moving -0 times positive stationary) */
                o.mv[k * o.N + 2] = -0.0f;
                /* column 3: every product +-0 */
                o.mv[k * o.N + 3] = k % 2 ? 0.0f : -0.0f;
            }
            /* positive stationary values, so column 2's products are all -0 */
            for (uint32_t x = 0; x < o.K * o.M; x++) o.st[x] = in_dtype(pe_dtypes[i], fabsf(o.st[x]) + 0.25f);
            /* priors of both zero signs under the -0 column */
            for (uint32_t m = 0; m < o.M; m++) o.prior[m * o.N + 2] = m % 2 ? -0.0f : 0.0f;
            every_kernel("special values", &o, LAYOUT_CONTIGUOUS);
            /* and the values really are there */
            uint32_t *want = malloc((size_t)o.M * o.N * 4);
            assert_non_null(want);
            reference(&o, 0, 0, want);
            if (big == INFINITY) assert_int_equal(want[0], 0x7fc00000u);
            if (in_dtype(pe_dtypes[j], NAN) != in_dtype(pe_dtypes[j], NAN)) assert_int_equal(want[1], 0x7fc00000u);
            assert_int_equal(want[2], 0x80000000u);
            free(want);
            free_operands(&o);
        }
    /* an input NaN's payload and sign never reach the result */
    operands o = make_operands(3, 8, 32, NX_DT_FP32, NX_DT_FP32, VALUES_UNIT, VALUES_UNIT, 499);
    o.mv[5] = nx_f32_from_bits(0xffa00001u);  /* negative signalling NaN with a payload */
    o.st[o.M + 2] = nx_f32_from_bits(0x7f812345u);
    every_kernel("NaN payloads", &o, LAYOUT_CONTIGUOUS);
    free_operands(&o);
}

/* Strided moving (every other element) and reversed dst rows (the staging
 * path), with edge tiles. */
static void strided_operands(void **state) {
    (void)state;
    for (int i = 0; i < N_PE_DTYPES; i++) {
        operands o = make_operands(19, 21, 45, pe_dtypes[i], pe_dtypes[(i + 1) % N_PE_DTYPES], VALUES_UNIT,
                                   VALUES_UNIT, 500 + i);
        every_kernel("strided operands", &o, LAYOUT_STRIDED);
        free_operands(&o);
    }
}

/* nx_pe_convert (load_stationary's and multiply_moving's converter) under
 * every kernel: every bf16, fp16 and fp8 code and random fp32 bit patterns
 * (NaN payloads included) give what isa/pe_input.h defines: fp32 copied bit
 * for bit, the others' exact values, a bf16 or fp16 NaN as the canonical
 * quiet NaN with its sign; contiguous and strided. */
static void convert_every_kernel(void **state) {
    (void)state;
    enum { ROWS = 8, COLS = 8192 };
    uint8_t *src = malloc((size_t)ROWS * COLS * 4 * 2);
    float *out = malloc((size_t)ROWS * (COLS + 7) * sizeof *out);
    assert_non_null(src);
    assert_non_null(out);
    test_rng r = {700};
    for (int d = 0; d < N_PE_DTYPES; d++) {
        nx_dtype dt = pe_dtypes[d];
        size_t es = nx_dtype_size(dt);
        for (uint32_t step = 1; step <= 2; step++) {
            const int64_t row_bytes = (int64_t)COLS * es * step;
            for (size_t i = 0; i < (size_t)ROWS * COLS; i++) {
                uint32_t code = es == 4 ? (uint32_t)test_rng_next(&r) : (uint32_t)(i % (1u << (8 * es)));
                if (es == 4 && i % 97 == 0) code = 0x7f800001u + (uint32_t)(i % 1000); /* NaN payloads */
                uint8_t *at = src + (i / COLS) * row_bytes + (i % COLS) * es * step;
                for (size_t b = 0; b < es; b++) at[b] = (uint8_t)(code >> (8 * b));
            }
            nx_view v;
            memset(&v, 0, sizeof v);
            v.kind = NX_OPK_SBUF;
            v.dtype = (uint8_t)dt;
            v.ndims = 1;
            v.partitions = ROWS;
            v.free_elems = COLS;
            v.base = src;
            v.partition_step = row_bytes;
            v.stride_bytes[0] = (int64_t)(es * step);
            v.count[0] = COLS;
            for (int k = 0; k < NX_PE_KERNEL_COUNT; k++) {
                if (!nx_pe_kernel_available((nx_pe_kernel)k)) continue;
                memset(out, 0xff, (size_t)ROWS * (COLS + 7) * sizeof *out);
                nx_pe_convert((nx_pe_kernel)k, &v, ROWS, out, COLS + 7);
                for (size_t i = 0; i < (size_t)ROWS * COLS; i++) {
                    const uint8_t *at = src + (i / COLS) * row_bytes + (i % COLS) * es * step;
                    float got = out[(i / COLS) * (COLS + 7) + i % COLS];
                    uint32_t code = 0;
                    for (size_t b = 0; b < es; b++) code |= (uint32_t)at[b] << (8 * b);
                    float want = (float)nx_dtype_load(dt, at);
                    /* fp32 bit for bit; a 16-bit or fp8 NaN as the canonical quiet
                     * NaN with its sign (isa/pe_input.h); anything else exact */
                    uint32_t nan_bits = (dt == NX_DT_BF16 || dt == NX_DT_FP16 ? (code >> (8 * es - 1)) << 31 : 0) |
                                        0x7fc00000u;
                    int ok = dt == NX_DT_FP32 ? nx_f32_bits(got) == code
                             : want != want   ? nx_f32_bits(got) == nan_bits || (es == 1 && got != got)
                                              : nx_f32_bits(got) == nx_f32_bits(want);
                    if (!ok)
                        fail_msg("convert, kernel %s, %s step %u, element %zu (code 0x%x): got 0x%08x",
                                 nx_pe_kernel_name((nx_pe_kernel)k), nx_dtype_name(dt), step, i, code, nx_f32_bits(got));
                }
            }
        }
    }
    free(src);
    free(out);
}

/* Worker threads (isa/workers.h) share out a large multiply's output
 * panels: for 1, 2, 3 and 4 threads (3 splits every kernel's panels
 * unevenly) every kernel gives the reference's bits, on multiplies large
 * enough to be split: fp32 (each panel read by its first block, one panel
 * buffer per thread), bf16 with products that underflow and overflow in
 * some tiles only (the per-tile fuse decision), fp16 (always fused), edge
 * tiles, accumulate, and the strided layout (dst through a staging copy). */
static void every_thread_count(void **state) {
    (void)state;
    static const struct {
        uint32_t K, M, N;
        nx_dtype st, mv;
        layout lay;
        int extremes;
    } cases[] = {
        {128, 128, 512, NX_DT_FP32, NX_DT_FP32, LAYOUT_CONTIGUOUS, 0},
        {128, 128, 512, NX_DT_BF16, NX_DT_BF16, LAYOUT_CONTIGUOUS, 1},
        {128, 125, 333, NX_DT_FP16, NX_DT_BF16, LAYOUT_CONTIGUOUS, 0},
        {128, 90, 500, NX_DT_FP32, NX_DT_BF16, LAYOUT_STRIDED, 0},
    };
    nx_workers *pools[5] = {NULL};
    nx_error err;
    for (unsigned t = 2; t <= 4; t++)
        if (nx_workers_create(t, &pools[t], &err) != 0) fail_msg("%s", err.msg);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        operands o = make_operands(cases[c].K, cases[c].M, cases[c].N, cases[c].st, cases[c].mv, VALUES_UNIT,
                                   VALUES_UNIT, 800 + c);
        assert_true((uint64_t)o.K * o.M * o.N >= 1u << 20); /* the datapath's split threshold */
        test_rng r = {900 + c};
        for (uint32_t k = 0; cases[c].extremes && k < o.K; k++) {
            for (uint32_t m = 0; m < 8; m++) o.st[k * o.M + m] = random_value(&r, NX_DT_BF16, VALUES_TINY);
            for (uint32_t n = 0; n < 40; n++) o.mv[k * o.N + n] = random_value(&r, NX_DT_BF16, VALUES_TINY);
            for (uint32_t n = 300; n < 340; n++) o.mv[k * o.N + n] = random_value(&r, NX_DT_BF16, VALUES_HUGE);
        }
        if (cases[c].extremes) assert_true(fusing_would_show(&o));
        size_t n = (size_t)o.M * o.N;
        uint32_t *want = malloc(n * 4), *got = malloc(n * 4);
        assert_non_null(want);
        assert_non_null(got);
        for (int acc = 0; acc < 2; acc++) {
            reference(&o, acc, 0, want);
            for (int k = 0; k < NX_PE_KERNEL_COUNT; k++) {
                if (!nx_pe_kernel_available((nx_pe_kernel)k)) continue;
                for (unsigned t = 1; t <= 4; t++) {
                    run_kernel_on((nx_pe_kernel)k, pools[t], &o, acc, cases[c].lay, got);
                    char what[64];
                    snprintf(what, sizeof what, "%u thread%s, accumulate %d", t, t == 1 ? "" : "s", acc);
                    expect_bits(what, (nx_pe_kernel)k, &o, got, want);
                }
            }
        }
        free(want);
        free(got);
        free_operands(&o);
    }
    for (unsigned t = 2; t <= 4; t++) nx_workers_destroy(pools[t]);
}

/* multiply_moving itself under NXSIM_MM_KERNEL = each available kernel:
 * the reference's bits; an unknown name fails the instruction. */
static void instruction_under_each_kernel(void **state) {
    (void)state;
    const uint32_t K = 40, M = 30, N = 70;
    operands o = make_operands(K, M, N, NX_DT_BF16, NX_DT_FP16, VALUES_UNIT, VALUES_UNIT, 600);
    uint32_t *want = malloc((size_t)M * N * 4);
    assert_non_null(want);
    reference(&o, 0, 0, want);
    const char *saved = getenv("NXSIM_MM_KERNEL");
    char keep[64] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    for (int k = 0; k < NX_PE_KERNEL_COUNT; k++) {
        if (!nx_pe_kernel_available((nx_pe_kernel)k)) continue;
        assert_int_equal(setenv("NXSIM_MM_KERNEL", nx_pe_kernel_name((nx_pe_kernel)k), 1), 0);
        nx_state st;
        test_state(&st, 1, 0, 0);
        for (uint32_t p = 0; p < K; p++) {
            double a[128], b[128];
            for (uint32_t i = 0; i < M; i++) a[i] = o.st[p * M + i];
            for (uint32_t i = 0; i < N; i++) b[i] = o.mv[p * N + i];
            test_sbuf_put(&st, 0, NX_DT_BF16, p, 0, M, a);
            test_sbuf_put(&st, 0, NX_DT_FP16, p, 1024, N, b);
        }
        nx_insn ls = nx_insn_make(NX_OP_LOAD_STATIONARY);
        ls.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_BF16, 0, K, 0, M);
        nx_insn mm = nx_insn_make(NX_OP_MULTIPLY_MOVING);
        mm.op[0] = nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, M, 0, N);
        mm.op[1] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP16, 0, K, 1024, N);
        nx_error err;
        if (test_run(&st, 0, NX_ENG_PE, &ls, &err) != 0 || test_run(&st, 0, NX_ENG_PE, &mm, &err) != 0)
            fail_msg("%s: %s", nx_pe_kernel_name((nx_pe_kernel)k), err.msg);
        for (uint32_t m = 0; m < M; m++) {
            uint32_t got[128];
            memcpy(got, nx_psum_at(&st, 0, m, 0), N * 4);
            for (uint32_t n = 0; n < N; n++)
                if (got[n] != want[m * N + n])
                    fail_msg("instruction, kernel %s: [%u][%u] = 0x%08x, reference 0x%08x",
                             nx_pe_kernel_name((nx_pe_kernel)k), m, n, got[n], want[m * N + n]);
        }
        if (k == NX_PE_KERNEL_SCALAR) {
            assert_int_equal(setenv("NXSIM_MM_KERNEL", "avx", 1), 0);
            assert_int_equal(test_run(&st, 0, NX_ENG_PE, &mm, &err), -1);
            assert_string_equal(err.msg, "core 0 pe #0 (multiply_moving): NXSIM_MM_KERNEL: unknown matmul kernel "
                                         "'avx' (one of avx512, avx2, vector, scalar)");
        }
        nx_state_free(&st);
    }
    if (saved) setenv("NXSIM_MM_KERNEL", keep, 1);
    else unsetenv("NXSIM_MM_KERNEL");
    free(want);
    free_operands(&o);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kernel_names_and_choice),
        cmocka_unit_test(every_dtype_pair),
        cmocka_unit_test(wide_values),
        cmocka_unit_test(bf16_outside_the_exact_range),
        cmocka_unit_test(special_values),
        cmocka_unit_test(strided_operands),
        cmocka_unit_test(convert_every_kernel),
        cmocka_unit_test(every_thread_count),
        cmocka_unit_test(instruction_under_each_kernel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
