/* The functional hot paths against the plain element-by-element path, bit
 * for bit (isa/dtype_run.c, isa/alu_run.c, isa/actfn.c's run form, and the
 * instructions that use them: tensor_tensor, tensor_scalar,
 * scalar_tensor_tensor, activation, tensor_reduce, tensor_copy, dma_copy,
 * select, transpose, dma_transpose).
 *
 * The references are the element functions (nx_dtype_load, nx_dtype_store,
 * nx_alu_apply, nx_act_apply) applied one element at a time, as the
 * instructions did before they had run kernels, and for the arithmetic ops
 * also the documented double formula written out here. Inputs mix every
 * kind of value the kernels treat apart: plain fp32 values (the fast lanes),
 * NaNs with payloads of both signs, +-Inf, -0, fp32 and double subnormals,
 * each narrow format's boundaries and ties, integers beyond 2^24, and
 * arbitrary doubles (an immediate can be any double); runs of every length
 * around the four-lane groups, contiguous, strided, of step 0 and negative. */
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
#include "isa/ew.h"
#include "support.h"

/* ---- values ---- */

static double bits_double(uint64_t b) {
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}
static uint64_t double_bits(double d) {
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}
static double float_of_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* Values at the edges of the formats and of the integer rounding. */
static const double edges[] = {
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.5,
    65504.0, 65519.99609375, 65520.0, -65520.0, 6.103515625e-05, 6.097555160522461e-05,
    5.960464477539063e-08, 2.9802322387695312e-08, 2.98023223876953125e-08 * 1.5,
    448.0, 449.0, 464.0, 465.0, 480.0, -464.0, 0.015625, 0.0009765625, 0.001953125,
    57344.0, 61439.99, 61440.0, 1.52587890625e-05, 7.62939453125e-06,
    3.4028234663852886e38, -3.4028234663852886e38, 3.4028235677973366e38, 1e39,
    1.1754943508222875e-38, 1.401298464324817e-45, 7.006492321624085e-46, 1e-300, -4.9e-324,
    16777216.0, 16777217.0, 16842753.0, -16777217.0, 2147483647.0, 2147483648.0,
    -2147483648.0, -2147483649.0, 4294967295.0, 4294967296.0, 4294967295.5, 2147483647.5,
    127.5, 128.5, -128.5, -129.0, 255.5, 256.0, 32767.5, -32768.5, 65535.5, 1e300, -1e300,
};

/* One engine value (or any double) of a random kind. */
static double any_value(test_rng *r) {
    uint64_t k = test_rng_next(r) % 16, x = test_rng_next(r);
    uint32_t b = (uint32_t)x;
    switch (k) {
    case 0: return float_of_bits(b);                                  /* any fp32 pattern */
    case 1: return float_of_bits((b & 0x807fffffu) | 0x7f800000u);    /* NaN / Inf */
    case 2: return bits_double(0x7ff0000000000000ull | (x >> 12) | (x & 0x8000000000000000ull));
    case 3: return (double)(int32_t)b;
    case 4: return (double)b;
    case 5: return bits_double(x);                                    /* any double */
    case 6: return edges[x % (sizeof edges / sizeof edges[0])];
    case 7: return float_of_bits((b & 0x807fffffu) | (uint32_t)(96 + x % 48) << 23); /* narrow edges */
    case 8: return float_of_bits(b & 0x807fffffu);                    /* fp32 subnormals */
    case 9: return (double)(int32_t)(b % 601) / 4.0 - 75.0;           /* ties for the integers */
    default: return (float)test_rng_uniform(r, -300.0, 300.0);        /* plain fp32 values */
    }
}

/* n values; with `plain` set, long stretches of plain fp32 values (so whole
 * four-lane groups take the fast lanes) with a stray other value. */
static void fill_values(test_rng *r, double *v, uint64_t n, int plain) {
    for (uint64_t i = 0; i < n; i++) {
        if (plain && test_rng_next(r) % 64 != 0) v[i] = (float)test_rng_uniform(r, -1000.0, 1000.0);
        else v[i] = any_value(r);
    }
}

static void assert_same_bits(const double *got, const double *want, uint64_t n, const char *what) {
    for (uint64_t i = 0; i < n; i++)
        if (double_bits(got[i]) != double_bits(want[i]))
            fail_msg("%s: element %llu: got %a (0x%016llx), want %a (0x%016llx)", what,
                     (unsigned long long)i, got[i], (unsigned long long)double_bits(got[i]), want[i],
                     (unsigned long long)double_bits(want[i]));
}

static const uint64_t run_lengths[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 31, 64, 255, 256, 257, 1031};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- dtype run converters ---- */

enum { MAXN = 1031, PAD = 8 * MAXN };

static void check_store_run(nx_dtype dt, int64_t step, uint64_t n, const double *v) {
    static uint8_t a[2 * PAD + 16], b[2 * PAD + 16];
    memset(a, 0x5a, sizeof a);
    memset(b, 0x5a, sizeof b);
    uint8_t *pa = a + PAD, *pb = b + PAD; /* room for negative steps */
    for (uint64_t i = 0; i < n; i++) nx_dtype_store(dt, pa + (int64_t)i * step, v[i]);
    nx_dtype_store_run(dt, pb, step, n, v);
    if (memcmp(a, b, sizeof a) == 0) return;
    for (uint64_t i = 0; i < n; i++)
        if (memcmp(pa + (int64_t)i * step, pb + (int64_t)i * step, nx_dtype_size(dt)) != 0)
            fail_msg("store %s step %lld n %llu: element %llu (%a) differs", nx_dtype_name(dt),
                     (long long)step, (unsigned long long)n, (unsigned long long)i, v[i]);
    fail_msg("store %s step %lld n %llu: bytes outside the run differ", nx_dtype_name(dt),
             (long long)step, (unsigned long long)n);
}

static void check_load_run(nx_dtype dt, const uint8_t *src, int64_t step, uint64_t n) {
    static double want[MAXN], got[MAXN];
    for (uint64_t i = 0; i < n; i++) want[i] = nx_dtype_load(dt, src + (int64_t)i * step);
    nx_dtype_load_run(dt, src, step, n, got);
    char what[64];
    snprintf(what, sizeof what, "load %s step %lld", nx_dtype_name(dt), (long long)step);
    assert_same_bits(got, want, n, what);
}

static void test_store_run_matches_element_store(void **state) {
    (void)state;
    test_rng r = {0x5eed1};
    static double v[MAXN];
    for (int round = 0; round < 12; round++) {
        fill_values(&r, v, MAXN, round % 2);
        for (int dt = 0; dt < NX_DT_COUNT; dt++) {
            const int64_t z = (int64_t)nx_dtype_size((nx_dtype)dt);
            const int64_t steps[] = {z, 2 * z, 3 * z, 0, -z};
            for (size_t s = 0; s < COUNT(steps); s++)
                for (size_t k = 0; k < COUNT(run_lengths); k++) {
                    uint64_t n = run_lengths[k];
                    if (steps[s] != 0 && n * (uint64_t)(steps[s] < 0 ? -steps[s] : steps[s]) > PAD) continue;
                    check_store_run((nx_dtype)dt, steps[s], n, v);
                }
        }
    }
}

static void test_load_run_matches_element_load(void **state) {
    (void)state;
    /* every 8- and 16-bit pattern, contiguous */
    static uint8_t pat[2 * 65536];
    for (uint32_t i = 0; i < 65536; i++) {
        pat[2 * i] = (uint8_t)i;
        pat[2 * i + 1] = (uint8_t)(i >> 8);
    }
    static double want[65536], got[65536];
    for (int dt = 0; dt < NX_DT_COUNT; dt++) {
        const uint64_t z = nx_dtype_size((nx_dtype)dt), n = z == 4 ? 32768 : 65536;
        const uint8_t *src = pat;
        uint8_t bytes[256];
        if (z == 1) { /* all 256 bytes, 256 times over */
            for (int i = 0; i < 256; i++) bytes[i] = (uint8_t)i;
            src = bytes;
        }
        const uint64_t m = z == 1 ? 256 : n;
        for (uint64_t i = 0; i < m; i++) want[i] = nx_dtype_load((nx_dtype)dt, src + i * z);
        nx_dtype_load_run((nx_dtype)dt, src, (int64_t)z, m, got);
        assert_same_bits(got, want, m, nx_dtype_name((nx_dtype)dt));
    }
    /* random bytes (NaN payloads, subnormals, every integer), strided too */
    test_rng r = {0x10ad};
    static uint8_t mem[2 * PAD + 16];
    for (int round = 0; round < 8; round++) {
        test_rng_bytes(&r, mem, sizeof mem);
        for (int dt = 0; dt < NX_DT_COUNT; dt++) {
            const int64_t z = (int64_t)nx_dtype_size((nx_dtype)dt);
            const int64_t steps[] = {z, 2 * z, 3 * z, 0, -z};
            for (size_t s = 0; s < COUNT(steps); s++)
                for (size_t k = 0; k < COUNT(run_lengths); k++) {
                    uint64_t n = run_lengths[k];
                    if (n * (uint64_t)(steps[s] < 0 ? -steps[s] : steps[s]) > PAD) continue;
                    check_load_run((nx_dtype)dt, mem + PAD + (round & 3), steps[s], n);
                }
        }
    }
}

/* Walks of 1-4 dims (short runs, gaps, steps of 0 and negative) against
 * the element routines in walk order. */
static void test_walks_match_element_path(void **state) {
    (void)state;
    test_rng r = {0x3a1c};
    static uint8_t mem[2 * PAD + 16], a[2 * PAD + 16], b[2 * PAD + 16];
    static double v[MAXN], want[MAXN], got[MAXN], pred[MAXN];
    test_rng_bytes(&r, mem, sizeof mem);
    for (int trial = 0; trial < 3000; trial++) {
        const nx_dtype dt = (nx_dtype)(test_rng_next(&r) % NX_DT_COUNT);
        const int64_t z = (int64_t)nx_dtype_size(dt);
        const uint32_t nd = 1 + (uint32_t)(test_rng_next(&r) % 4);
        uint64_t count[4], total = 1;
        int64_t step[4], reach = 0;
        for (uint32_t k = 0; k < nd; k++) {
            count[k] = 1 + test_rng_next(&r) % (k + 1 == nd ? 9 : 5);
            total *= count[k];
        }
        int64_t inner = (int64_t)(test_rng_next(&r) % 4) - 1; /* -1, 0, 1, 2 elements */
        for (int k = (int)nd - 1; k >= 0; k--) {
            step[k] = inner * z;
            reach += (step[k] < 0 ? -step[k] : step[k]) * (int64_t)(count[k] - 1);
            inner = test_rng_next(&r) % 5 == 0 ? 0 : (inner == 0 ? 1 : inner) * (int64_t)count[k] + (int64_t)(test_rng_next(&r) % 3);
        }
        if (reach + z > PAD) continue;
        const uint8_t *src = mem + PAD;
        /* load: walk order */
        uint64_t i = 0;
        uint64_t c[4] = {1, 1, 1, 1};
        int64_t st[4] = {0, 0, 0, 0};
        for (uint32_t k = 0; k < nd; k++) {
            c[4 - nd + k] = count[k];
            st[4 - nd + k] = step[k];
        }
        for (uint64_t i0 = 0; i0 < c[0]; i0++)
            for (uint64_t i1 = 0; i1 < c[1]; i1++)
                for (uint64_t i2 = 0; i2 < c[2]; i2++)
                    for (uint64_t i3 = 0; i3 < c[3]; i3++)
                        want[i++] = nx_dtype_load(dt, src + (int64_t)i0 * st[0] + (int64_t)i1 * st[1] +
                                                          (int64_t)i2 * st[2] + (int64_t)i3 * st[3]);
        nx_dtype_load_walk(dt, src, nd, count, step, got);
        assert_same_bits(got, want, total, "load walk");
        /* store and predicated store: the same writes in the same order */
        fill_values(&r, v, total, trial % 2);
        for (uint64_t e = 0; e < total; e++) pred[e] = test_rng_next(&r) % 3 == 0 ? 0.0 : (e % 7 == 0 ? NAN : 1.0);
        for (int where = 0; where < 2; where++) {
            memset(a, 0x33, sizeof a);
            memset(b, 0x33, sizeof b);
            i = 0;
            for (uint64_t i0 = 0; i0 < c[0]; i0++)
                for (uint64_t i1 = 0; i1 < c[1]; i1++)
                    for (uint64_t i2 = 0; i2 < c[2]; i2++)
                        for (uint64_t i3 = 0; i3 < c[3]; i3++, i++)
                            if (!where || pred[i] != 0.0)
                                nx_dtype_store(dt, a + PAD + (int64_t)i0 * st[0] + (int64_t)i1 * st[1] +
                                                       (int64_t)i2 * st[2] + (int64_t)i3 * st[3], v[i]);
            if (where) nx_dtype_store_walk_where(dt, b + PAD, nd, count, step, v, pred);
            else nx_dtype_store_walk(dt, b + PAD, nd, count, step, v);
            if (memcmp(a, b, sizeof a) != 0)
                fail_msg("%s walk of %s, %u dims: bytes differ", where ? "predicated store" : "store",
                         nx_dtype_name(dt), nd);
        }
    }
}

/* A same-dtype load + store is the bits with NaNs made canonical: every
 * 8- and 16-bit pattern, and fp32 / int32 patterns around the NaNs. */
static void test_canonical_nans_is_the_round_trip(void **state) {
    (void)state;
    test_rng r = {0xca70};
    static uint8_t bits[4 * 65536], want[4 * 65536];
    for (int dt = 0; dt < NX_DT_COUNT; dt++) {
        const uint64_t z = nx_dtype_size((nx_dtype)dt), n = 65536;
        for (uint64_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)i;
            if (z == 4) u = (uint32_t)test_rng_next(&r) % 4 ? ((uint32_t)test_rng_next(&r) & 0x807fffffu) | 0x7f800000u
                                                            : (uint32_t)test_rng_next(&r);
            if (z == 1) u = (uint32_t)(i & 0xff);
            memcpy(bits + i * z, &u, z); /* little-endian host bytes are fine: both sides read them */
        }
        for (uint64_t i = 0; i < n; i++) nx_dtype_store((nx_dtype)dt, want + i * z, nx_dtype_load((nx_dtype)dt, bits + i * z));
        nx_dtype_canonical_nans((nx_dtype)dt, bits, n);
        for (uint64_t i = 0; i < n; i++)
            if (memcmp(bits + i * z, want + i * z, z) != 0)
                fail_msg("%s element %llu: canonical_nans and the round trip differ", nx_dtype_name((nx_dtype)dt),
                         (unsigned long long)i);
    }
}

/* ---- ALU run forms ---- */

/* The documented arithmetic rule, written out independently of isa/alu*.c
 * (docs/parts/insns-dve.md, "The ALU" and "NaN results"). */
static double ref_arith(nx_alu_op op, double a, double b) {
    double x = (float)a, y = (float)b, r;
    switch (op) {
    case NX_ALU_ADD: r = (float)(x + y); break;
    case NX_ALU_SUBTRACT: r = (float)(x - y); break;
    case NX_ALU_MULTIPLY: r = (float)(x * y); break;
    default: r = (float)(x / y); break;
    }
    if (!isnan(r)) return r;
    return isnan(a) ? a : isnan(b) ? b : NAN;
}

static void check_alu_against_rule(nx_alu_op op, const double *out, const double *a, const double *b,
                                   uint64_t n) {
    if (op != NX_ALU_ADD && op != NX_ALU_SUBTRACT && op != NX_ALU_MULTIPLY && op != NX_ALU_DIVIDE)
        return;
    for (uint64_t i = 0; i < n; i++) {
        double want = ref_arith(op, a[i], b[i]);
        if (double_bits(out[i]) != double_bits(want))
            fail_msg("%s(%a, %a): got %a, the rule gives %a", nx_alu_name(op), a[i], b[i], out[i], want);
    }
}

static void test_alu_run_matches_apply(void **state) {
    (void)state;
    test_rng r = {0xa1u};
    static double a[MAXN], b[MAXN], want[MAXN], got[MAXN], bs[MAXN];
    for (int round = 0; round < 6; round++) {
        for (int op = 0; op < NX_ALU_COUNT; op++) {
            const nx_alu_op o = (nx_alu_op)op;
            for (size_t k = 0; k < COUNT(run_lengths); k++) {
                const uint64_t n = run_lengths[k];
                fill_values(&r, a, n, round % 2);
                fill_values(&r, b, n, round % 3 == 0);
                char what[80];
                snprintf(what, sizeof what, "%s n %llu", nx_alu_name(o), (unsigned long long)n);
                for (uint64_t i = 0; i < n; i++) want[i] = nx_alu_apply(o, a[i], b[i]);
                nx_alu_run(o, got, a, b, n);
                assert_same_bits(got, want, n, what);
                check_alu_against_rule(o, got, a, b, n);
                /* in place: out = a, out = b */
                memcpy(got, a, n * sizeof *got);
                nx_alu_run(o, got, got, b, n);
                assert_same_bits(got, want, n, what);
                memcpy(got, b, n * sizeof *got);
                nx_alu_run(o, got, a, got, n);
                assert_same_bits(got, want, n, what);
                /* a scalar on either side, in place */
                const double s = any_value(&r);
                for (uint64_t i = 0; i < n; i++) {
                    want[i] = nx_alu_apply(o, a[i], s);
                    bs[i] = s;
                }
                memcpy(got, a, n * sizeof *got);
                nx_alu_run_scalar(o, got, got, s, 0, n);
                assert_same_bits(got, want, n, what);
                check_alu_against_rule(o, got, a, bs, n);
                for (uint64_t i = 0; i < n; i++) want[i] = nx_alu_apply(o, s, a[i]);
                nx_alu_run_scalar(o, got, a, s, 1, n);
                assert_same_bits(got, want, n, what);
                check_alu_against_rule(o, got, bs, a, n);
                /* the fold, from an identity and from any value */
                double acc0 = isnan(nx_alu_reduce_identity(o)) ? s : nx_alu_reduce_identity(o);
                double acc = acc0;
                for (uint64_t i = 0; i < n; i++) acc = nx_alu_apply(o, acc, a[i]);
                double folded = nx_alu_fold(o, acc0, a, n);
                assert_same_bits(&folded, &acc, 1, what);
            }
        }
    }
}

/* Zeros of both signs in every position, equal values, NaN next to numbers:
 * the tie and NaN rules of the four-lane kernels. */
static void test_alu_run_ties_and_nans(void **state) {
    (void)state;
    static const double vals[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, -NAN,
                                  1e-45, -1e-45, 3.0, 16777217.0};
    enum { V = sizeof vals / sizeof vals[0], N = V * V };
    double a[N], b[N], want[N], got[N];
    for (int i = 0; i < V; i++)
        for (int j = 0; j < V; j++) {
            a[i * V + j] = vals[i];
            b[i * V + j] = vals[j];
        }
    for (int op = 0; op < NX_ALU_COUNT; op++) {
        for (int i = 0; i < N; i++) want[i] = nx_alu_apply((nx_alu_op)op, a[i], b[i]);
        nx_alu_run((nx_alu_op)op, got, a, b, N);
        assert_same_bits(got, want, N, nx_alu_name((nx_alu_op)op));
        for (int j = 0; j < V; j++) {
            for (int i = 0; i < N; i++) want[i] = nx_alu_apply((nx_alu_op)op, a[i], vals[j]);
            nx_alu_run_scalar((nx_alu_op)op, got, a, vals[j], 0, N);
            assert_same_bits(got, want, N, nx_alu_name((nx_alu_op)op));
            for (int i = 0; i < N; i++) want[i] = nx_alu_apply((nx_alu_op)op, vals[j], a[i]);
            nx_alu_run_scalar((nx_alu_op)op, got, a, vals[j], 1, N);
            assert_same_bits(got, want, N, nx_alu_name((nx_alu_op)op));
        }
    }
}

/* Folds of every op: zeros of both signs, ties, a NaN of either sign at
 * the front, inside a four-lane group, in the tail, or in acc. */
static void test_alu_fold_nan_positions(void **state) {
    (void)state;
    /* mixed signs; then only zeros and positives (min's answer is a zero
     * tie), only zeros and negatives (max's) */
    static const double pools[3][6] = {{0.0, -0.0, 1.0, -3.0, INFINITY, -INFINITY},
                                       {0.0, -0.0, 1.0, 3.0, INFINITY, 1e-45},
                                       {0.0, -0.0, -1.0, -3.0, -INFINITY, -1e-45}};
    static const double accs[] = {0.0, -0.0, 1.0, INFINITY, -INFINITY, NAN, -NAN, 7.5};
    enum { N = 37 };
    test_rng r = {0xf01d};
    double x[N];
    for (int op = 0; op < NX_ALU_COUNT; op++)
        for (int pos = -1; pos < N; pos += (pos < 6 ? 1 : 5))
            for (size_t k = 0; k < 3 * (COUNT(accs) + 1); k++) {
                const double *pool = pools[k % 3];
                for (int i = 0; i < N; i++) x[i] = pool[test_rng_next(&r) % 6];
                if (pos >= 0) x[pos] = test_rng_next(&r) % 2 ? NAN : -NAN;
                double acc0 = k / 3 < COUNT(accs) ? accs[k / 3] : nx_alu_reduce_identity((nx_alu_op)op);
                for (uint64_t n = 0; n <= N; n += (n < 9 ? 1 : 7)) {
                    double want = acc0;
                    for (uint64_t i = 0; i < n; i++) want = nx_alu_apply((nx_alu_op)op, want, x[i]);
                    double got = nx_alu_fold((nx_alu_op)op, acc0, x, n);
                    assert_same_bits(&got, &want, 1, nx_alu_name((nx_alu_op)op));
                }
            }
}

static void test_act_run_matches_apply(void **state) {
    (void)state;
    test_rng r = {0xac7};
    static double x[MAXN], want[MAXN];
    for (int f = 0; f < NX_ACT_COUNT; f++)
        for (size_t k = 0; k < COUNT(run_lengths); k++) {
            const uint64_t n = run_lengths[k];
            fill_values(&r, x, n, k % 2);
            for (uint64_t i = 0; i < n; i++) want[i] = nx_act_apply((nx_act_func)f, x[i]);
            nx_act_apply_run((nx_act_func)f, x, n);
            assert_same_bits(x, want, n, nx_act_name((nx_act_func)f));
        }
}

/* ---- instructions against the element-by-element path ---- */

/* Each operand lies in bytes [0, TRIAL) of its partitions (HBM: rows TRIAL
 * bytes apart); a DMA's SBUF source and acc_out sit in the next TRIAL
 * bytes. The trials compare bytes [0, AREA) of the partitions they use. */
enum { TRIAL = 5120, AREA = 3 * TRIAL, HBM_BYTES = 128 * TRIAL };

static void copy_state(nx_state *dst, const nx_state *src, uint32_t parts) {
    const uint64_t sb = src->geo.sbuf_partition_bytes, ps = src->geo.psum_partition_bytes;
    for (uint32_t p = 0; p < parts; p++) {
        memcpy(dst->core[0].sbuf + p * sb, src->core[0].sbuf + p * sb, AREA);
        memcpy(dst->core[0].psum + p * ps, src->core[0].psum + p * ps, AREA);
    }
    memcpy(dst->hbm, src->hbm, (uint64_t)parts * TRIAL);
}

static void assert_same_bytes(const uint8_t *got, const uint8_t *want, uint64_t n, const char *what,
                              const char *mem, uint32_t p) {
    if (memcmp(got, want, n) == 0) return;
    for (uint64_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("%s: %s partition %u byte %llu: 0x%02x, want 0x%02x", what, mem, p,
                     (unsigned long long)i, got[i], want[i]);
}

static void assert_same_state(const nx_state *a, const nx_state *b, uint32_t parts, const char *what) {
    const uint64_t sb = a->geo.sbuf_partition_bytes, ps = a->geo.psum_partition_bytes;
    for (uint32_t p = 0; p < parts; p++) {
        assert_same_bytes(a->core[0].sbuf + p * sb, b->core[0].sbuf + p * sb, AREA, what, "sbuf", p);
        assert_same_bytes(a->core[0].psum + p * ps, b->core[0].psum + p * ps, AREA, what, "psum", p);
        assert_same_bytes(a->hbm + (uint64_t)p * TRIAL, b->hbm + (uint64_t)p * TRIAL, TRIAL, what, "hbm row", p);
    }
}

/* Fills the trial region with encodings of random values of each dtype in
 * turn (so NaN encodings, subnormals and every integer occur). */
static void fill_state(nx_state *st, test_rng *r) {
    const uint64_t sb = st->geo.sbuf_partition_bytes, ps = st->geo.psum_partition_bytes;
    for (uint32_t p = 0; p < st->geo.partitions; p++)
        for (uint32_t i = 0; i < AREA; i += 4) {
            nx_dtype dt = (nx_dtype)(test_rng_next(r) % NX_DT_COUNT);
            nx_dtype_store(dt, st->core[0].sbuf + p * sb + i, any_value(r));
            nx_dtype_store(dt, st->core[0].psum + p * ps + i, any_value(r));
        }
    for (uint64_t i = 0; i + 4 <= HBM_BYTES; i += 4)
        nx_dtype_store((nx_dtype)(test_rng_next(r) % NX_DT_COUNT), st->hbm + i, any_value(r));
}

/* An access pattern of `elems` elements per partition in [0, TRIAL) of
 * SBUF or PSUM (or HBM rows), 1-3 free dims, strides that may be 0,
 * negative or gapped. Returns 0 if the draw does not fit. */
static int random_ap(test_rng *r, nx_operand *op, nx_operand_kind kind, nx_dtype dt, uint32_t parts,
                     uint64_t elems, int allow_zero_stride) {
    memset(op, 0, sizeof *op);
    op->kind = (uint8_t)kind;
    op->dtype = (uint8_t)dt;
    op->partition_count = (uint8_t)parts;
    /* split elems into up to 3 dims */
    uint32_t counts[3] = {(uint32_t)elems, 1, 1};
    uint32_t nd = 1 + (uint32_t)(test_rng_next(r) % 3);
    for (uint32_t k = 1; k < nd; k++) {
        uint32_t c = counts[0];
        uint32_t f = 1 + (uint32_t)(test_rng_next(r) % 4);
        if (c % f == 0) {
            counts[k] = counts[0] / f;
            counts[0] = f;
        }
    }
    op->ndims = (uint8_t)nd;
    int32_t inner = 1;
    const uint64_t pick = test_rng_next(r) % 8;
    if (pick == 0) inner = 2;
    else if (pick == 1 && allow_zero_stride) inner = 0;
    else if (pick == 2) inner = -1;
    int64_t span_lo = 0, span_hi = 0, step = inner;
    for (int k = (int)nd - 1; k >= 0; k--) {
        op->count[k] = counts[k];
        op->stride[k] = (int32_t)step;
        int64_t ext = step * (int64_t)(counts[k] - 1);
        if (ext < 0) span_lo += ext; else span_hi += ext;
        int64_t mag = step < 0 ? -step : step;
        if (mag == 0) mag = 1;
        step = (step < 0 ? -1 : 1) * mag * counts[k] + (test_rng_next(r) % 4 == 0 ? (step < 0 ? -1 : 1) : 0);
        if (allow_zero_stride && test_rng_next(r) % 10 == 0) step = 0;
    }
    const int64_t size = (int64_t)nx_dtype_size(dt);
    const int64_t room = TRIAL / size;
    if (span_hi - span_lo + 1 > room) return 0;
    const int64_t first = -span_lo + (int64_t)(test_rng_next(r) % (uint64_t)(room - (span_hi - span_lo)));
    if (kind == NX_OPK_HBM) {
        op->partition_stride = (int32_t)room;
        op->offset = (uint64_t)(first * size);
    } else {
        op->offset = (uint64_t)(first * size);
    }
    return 1;
}

static nx_dtype random_dtype(test_rng *r) { return (nx_dtype)(test_rng_next(r) % NX_DT_COUNT); }

/* The element-by-element path: the row load/store of the instructions
 * before they had run kernels. */
static void ref_load(const nx_view *v, uint32_t p, double *out) {
    if (v->kind == NX_OPK_IMM) {
        for (uint64_t e = 0; e < v->free_elems; e++) out[e] = v->imm;
        return;
    }
    for (uint64_t e = 0; e < v->free_elems; e++) out[e] = nx_dtype_load((nx_dtype)v->dtype, nx_view_addr(v, p, e));
}
static void ref_store(const nx_view *v, uint32_t p, const double *in) {
    for (uint64_t e = 0; e < v->free_elems; e++) nx_dtype_store((nx_dtype)v->dtype, nx_view_addr(v, p, e), in[e]);
}
static double ref_scalar(const nx_view *v, uint32_t p) {
    return v->kind == NX_OPK_IMM ? v->imm : nx_dtype_load((nx_dtype)v->dtype, nx_view_addr(v, p, 0));
}

/* The reference semantics of one instruction on st (docs/parts/insns-*.md),
 * element by element. */
static void ref_execute(nx_state *st, const nx_insn *insn) {
    nx_error err;
    nx_exec_ctx ctx = {st, 0, NX_ENG_DVE, 0, &err};
    nx_view v[5];
    for (int k = 0; k < 5; k++)
        if (insn->op[k].kind != NX_OPK_NONE) nx_view_init(&v[k], &ctx, &insn->op[k]);
    const uint64_t n = v[0].free_elems;
    double *x = calloc(n * 2 + 1, sizeof *x), *y = x + n;
    assert_non_null(x);
    const nx_alu_op op0 = (nx_alu_op)insn->alu0, op1 = (nx_alu_op)insn->alu1;
    const int rev0 = (insn->flags & NX_FLAG_REVERSE0) != 0, rev1 = (insn->flags & NX_FLAG_REVERSE1) != 0;
    switch (insn->opcode) {
    case NX_OP_TENSOR_TENSOR:
        for (uint32_t p = 0; p < v[0].partitions; p++) {
            ref_load(&v[1], p, x);
            ref_load(&v[2], p, y);
            for (uint64_t e = 0; e < n; e++) x[e] = nx_alu_apply(op0, x[e], y[e]);
            if (nx_alu_is_bitvec(op0)) nx_alu_bits_for_dtype((nx_dtype)v[0].dtype, x, n);
            ref_store(&v[0], p, x);
        }
        break;
    case NX_OP_TENSOR_SCALAR: {
        const int two = insn->op[3].kind != NX_OPK_NONE;
        for (uint32_t p = 0; p < v[0].partitions; p++) {
            const double s0 = ref_scalar(&v[2], p), s1 = two ? ref_scalar(&v[3], p) : 0.0;
            ref_load(&v[1], p, x);
            for (uint64_t e = 0; e < n; e++) {
                double t = rev0 ? nx_alu_apply(op0, s0, x[e]) : nx_alu_apply(op0, x[e], s0);
                if (two) t = rev1 ? nx_alu_apply(op1, s1, t) : nx_alu_apply(op1, t, s1);
                x[e] = t;
            }
            if (nx_alu_is_bitvec(two ? nx_alu_last(op0, op1) : op0)) nx_alu_bits_for_dtype((nx_dtype)v[0].dtype, x, n);
            ref_store(&v[0], p, x);
        }
        break;
    }
    case NX_OP_SCALAR_TENSOR_TENSOR:
        for (uint32_t p = 0; p < v[0].partitions; p++) {
            const double s = ref_scalar(&v[2], p);
            ref_load(&v[1], p, x);
            ref_load(&v[3], p, y);
            for (uint64_t e = 0; e < n; e++) {
                double t = rev0 ? nx_alu_apply(op0, s, x[e]) : nx_alu_apply(op0, x[e], s);
                x[e] = nx_alu_apply(op1, t, y[e]);
            }
            if (nx_alu_is_bitvec(nx_alu_last(op0, op1))) nx_alu_bits_for_dtype((nx_dtype)v[0].dtype, x, n);
            ref_store(&v[0], p, x);
        }
        break;
    case NX_OP_SELECT: {
        double *t = calloc(n + 1, sizeof *t);
        assert_non_null(t);
        const int has_false = insn->op[3].kind != NX_OPK_NONE;
        for (uint32_t p = 0; p < v[0].partitions; p++) {
            ref_load(&v[1], p, x);
            for (uint64_t e = 0; e < n; e++) t[e] = v[2].kind == NX_OPK_IMM ? v[2].imm : 0.0;
            if (v[2].kind != NX_OPK_IMM) ref_load(&v[2], p, t);
            if (has_false) {
                for (uint64_t e = 0; e < n; e++) y[e] = v[3].kind == NX_OPK_IMM ? v[3].imm : 0.0;
                if (v[3].kind != NX_OPK_IMM) ref_load(&v[3], p, y);
                for (uint64_t e = 0; e < n; e++) y[e] = x[e] != 0.0 ? t[e] : y[e];
                ref_store(&v[0], p, y);
            } else {
                for (uint64_t e = 0; e < n; e++)
                    if (x[e] != 0.0) nx_dtype_store((nx_dtype)v[0].dtype, nx_view_addr(&v[0], p, e), t[e]);
            }
        }
        free(t);
        break;
    }
    case NX_OP_TENSOR_COPY:
        for (uint32_t p = 0; p < v[0].partitions; p++) {
            ref_load(&v[1], p, x);
            ref_store(&v[0], p, x);
        }
        break;
    case NX_OP_ACTIVATION: {
        const uint32_t parts = v[1].partitions;
        double *all = calloc((uint64_t)parts * n + 3u * parts + 1, sizeof *all);
        assert_non_null(all);
        double *s = all + (uint64_t)parts * n, *b = s + parts, *red = b + parts;
        for (uint32_t p = 0; p < parts; p++) {
            ref_load(&v[1], p, all + (uint64_t)p * n);
            s[p] = nx_fp32_round(ref_scalar(&v[2], p));
            b[p] = nx_fp32_round(ref_scalar(&v[3], p));
        }
        const int has_acc = insn->op[4].kind != NX_OPK_NONE;
        for (uint32_t p = 0; p < parts; p++) {
            double *row = all + (uint64_t)p * n, acc = nx_alu_reduce_identity(op0);
            for (uint64_t e = 0; e < n; e++) {
                double t = nx_alu_apply(NX_ALU_MULTIPLY, row[e], s[p]);
                row[e] = nx_act_apply((nx_act_func)insn->func, nx_alu_apply(NX_ALU_ADD, t, b[p]));
                if (has_acc) acc = nx_alu_apply(op0, acc, row[e]);
            }
            red[p] = acc;
        }
        for (uint32_t p = 0; p < parts; p++) ref_store(&v[0], p, all + (uint64_t)p * n);
        if (has_acc)
            for (uint32_t p = 0; p < parts; p++) ref_store(&v[4], p, red + p);
        free(all);
        break;
    }
    case NX_OP_TENSOR_REDUCE: {
        const nx_operand *in = &insn->op[1];
        const uint32_t axes = (uint32_t)insn->iparam[0], nd = in->ndims;
        const int bits = nx_alu_is_bitvec(op0), negate = (insn->flags & NX_FLAG_NEGATE) != 0;
        uint64_t ostride[NX_MAX_FREE_DIMS] = {0}, st1 = 1;
        for (uint32_t k = nd; k-- > 0;) {
            if (axes & (1u << k)) continue;
            ostride[k] = st1;
            st1 *= in->count[k];
        }
        const uint64_t ni = v[1].free_elems, m = v[0].free_elems;
        double *xi = calloc(ni + m + 1, sizeof *xi), *ro = xi + ni;
        assert_non_null(xi);
        for (uint32_t p = 0; p < v[0].partitions; p++) {
            ref_load(&v[1], p, xi);
            for (uint64_t o = 0; o < m; o++) ro[o] = nx_alu_reduce_identity(op0);
            uint32_t idx[NX_MAX_FREE_DIMS] = {0};
            uint64_t o = 0;
            for (uint64_t e = 0; e < ni; e++) {
                ro[o] = nx_alu_apply(op0, ro[o], xi[e]);
                for (uint32_t k = nd; k-- > 0;) {
                    o += ostride[k];
                    if (++idx[k] < in->count[k]) break;
                    o -= ostride[k] * in->count[k];
                    idx[k] = 0;
                }
            }
            for (uint64_t i = 0; i < m; i++)
                if (negate) ro[i] = bits ? 0.0 - ro[i] : -ro[i];
            if (bits) nx_alu_bits_for_dtype((nx_dtype)v[0].dtype, ro, m);
            ref_store(&v[0], p, ro);
        }
        free(xi);
        break;
    }
    case NX_OP_DMA_COPY: { /* direct, source and destination apart */
        const int acc = (insn->flags & NX_FLAG_ACCUMULATE) != 0;
        const nx_dtype dd = (nx_dtype)v[0].dtype, sd = (nx_dtype)v[1].dtype;
        for (uint32_t p = 0; p < v[0].partitions; p++)
            for (uint64_t e = 0; e < n; e++) {
                uint8_t *q = nx_view_addr(&v[0], p, e);
                const uint8_t *s = nx_view_addr(&v[1], p, e);
                if (!acc && dd == sd) {
                    memmove(q, s, nx_dtype_size(dd));
                    continue;
                }
                double val = nx_dtype_load(sd, s);
                if (acc) val = nx_alu_apply(NX_ALU_ADD, nx_dtype_load(dd, q), val);
                nx_dtype_store(dd, q, val);
            }
        break;
    }
    case NX_OP_TRANSPOSE:
    case NX_OP_DMA_TRANSPOSE: { /* dst[f][p] = src[p][f], source read first */
        const uint32_t pc = v[1].partitions;
        const uint64_t fc = v[1].free_elems, z = nx_dtype_size((nx_dtype)v[1].dtype);
        uint8_t *raw = malloc(pc * fc * z + 1);
        assert_non_null(raw);
        for (uint32_t p = 0; p < pc; p++)
            for (uint64_t f = 0; f < fc; f++) memcpy(raw + (p * fc + f) * z, nx_view_addr(&v[1], p, f), z);
        for (uint64_t f = 0; f < fc; f++)
            for (uint32_t p = 0; p < pc; p++) {
                uint8_t *to = nx_view_addr(&v[0], (uint32_t)f, p);
                if (v[0].dtype != v[1].dtype)
                    nx_dtype_store((nx_dtype)v[0].dtype, to, nx_dtype_load((nx_dtype)v[1].dtype, raw + (p * fc + f) * z));
                else
                    memcpy(to, raw + (p * fc + f) * z, z);
            }
        free(raw);
        break;
    }
    default: fail_msg("no reference for opcode %u", insn->opcode);
    }
    free(x);
}

/* A random instruction of one of the families above; 0 if the draw does
 * not fit (then the caller draws again). */
static int random_insn_params(test_rng *r, nx_insn *in, nx_engine *eng, uint32_t partitions);

static int random_insn(test_rng *r, nx_insn *in, nx_engine *eng, uint32_t partitions) {
    if (!random_insn_params(r, in, eng, partitions)) return 0;
    /* parameters the row does not use must be 0 */
    const nx_opcode_info *info = nx_opcode_lookup(in->opcode);
    if (!(info->params & NX_PARAM_ALU0)) in->alu0 = 0;
    if (!(info->params & NX_PARAM_ALU1)) in->alu1 = 0;
    return 1;
}

static int random_insn_params(test_rng *r, nx_insn *in, nx_engine *eng, uint32_t partitions) {
    static const nx_opcode ops[] = {NX_OP_TENSOR_TENSOR, NX_OP_TENSOR_SCALAR, NX_OP_SCALAR_TENSOR_TENSOR,
                                    NX_OP_TENSOR_COPY,   NX_OP_ACTIVATION,    NX_OP_TENSOR_REDUCE,
                                    NX_OP_DMA_COPY,      NX_OP_SELECT,        NX_OP_TRANSPOSE,
                                    NX_OP_DMA_TRANSPOSE};
    const nx_opcode opc = ops[test_rng_next(r) % COUNT(ops)];
    *in = nx_insn_make(opc);
    *eng = NX_ENG_DVE;
    const uint32_t parts = 1 + (uint32_t)(test_rng_next(r) % 3 == 0 ? test_rng_next(r) % partitions : test_rng_next(r) % 4);
    static const uint64_t lens[] = {1, 3, 4, 7, 8, 12, 33, 64, 100, 257, 600};
    const uint64_t n = lens[test_rng_next(r) % COUNT(lens)];
    const nx_operand_kind mem = test_rng_next(r) % 4 == 0 ? NX_OPK_PSUM : NX_OPK_SBUF;
    in->alu0 = (uint8_t)(test_rng_next(r) % NX_ALU_COUNT);
    in->alu1 = (uint8_t)(test_rng_next(r) % NX_ALU_COUNT);
    const nx_dtype dst_dt = random_dtype(r);
    /* dst apart from the inputs: the inputs live in the other memory, or
     * dst is exactly in0 (the in-place form the leaves use) */
    const nx_operand_kind in_mem = mem == NX_OPK_PSUM ? NX_OPK_SBUF : NX_OPK_PSUM;
    if (opc == NX_OP_TRANSPOSE || opc == NX_OP_DMA_TRANSPOSE) {
        /* src [P, F] -> dst [F, P]; DVE blocks of up to 32 x 32, the PE's
         * float inputs to PSUM (same dtype or fp32), the DMA's 2-byte types */
        static const nx_dtype two[] = {NX_DT_BF16, NX_DT_FP16, NX_DT_INT16, NX_DT_UINT16};
        const int pe = opc == NX_OP_TRANSPOSE && test_rng_next(r) % 2;
        const uint32_t lim = opc == NX_OP_DMA_TRANSPOSE || pe ? 128 : 32;
        const uint32_t P = 1 + (uint32_t)(test_rng_next(r) % lim), F = 1 + (uint32_t)(test_rng_next(r) % lim);
        nx_dtype sdt = random_dtype(r), ddt;
        if (opc == NX_OP_DMA_TRANSPOSE) {
            *eng = NX_ENG_SP;
            in->iparam[0] = (int32_t)(test_rng_next(r) % 4);
            sdt = ddt = two[test_rng_next(r) % 4];
            const nx_operand_kind sk = test_rng_next(r) % 2 ? NX_OPK_HBM : NX_OPK_SBUF;
            const nx_operand_kind dk = test_rng_next(r) % 2 ? NX_OPK_HBM : NX_OPK_SBUF;
            if (!random_ap(r, &in->op[1], sk, sdt, P, F, 1)) return 0;
            if (!random_ap(r, &in->op[0], dk, ddt, F, P, 0)) return 0;
            if (sk == NX_OPK_SBUF && dk == NX_OPK_SBUF) in->op[1].offset += TRIAL;
            return 1;
        }
        if (pe) {
            *eng = NX_ENG_PE;
            sdt = (nx_dtype)(test_rng_next(r) % 5); /* the float dtypes */
            ddt = test_rng_next(r) % 2 ? NX_DT_FP32 : sdt;
            if (!random_ap(r, &in->op[1], NX_OPK_SBUF, sdt, P, F, 1)) return 0;
            if (!random_ap(r, &in->op[0], NX_OPK_PSUM, ddt, F, P, 0)) return 0;
            return 1;
        }
        ddt = sdt;
        if (!random_ap(r, &in->op[1], in_mem, sdt, P, F, 1)) return 0;
        if (!random_ap(r, &in->op[0], mem, ddt, F, P, 0)) return 0;
        return 1;
    }
    if (!random_ap(r, &in->op[0], mem, dst_dt, parts, n, opc == NX_OP_SELECT)) return 0;
    switch (opc) {
    case NX_OP_SELECT: {
        /* pred of values that are often 0; on_true / on_false immediates or APs */
        if (!random_ap(r, &in->op[1], in_mem, random_dtype(r), parts, n, 1)) return 0;
        for (int k = 2; k <= 3; k++) {
            if (k == 3 && test_rng_next(r) % 2) break;
            if (test_rng_next(r) % 3 == 0) in->op[k] = nx_imm(any_value(r), NX_DT_FP32);
            else if (!random_ap(r, &in->op[k], in_mem, random_dtype(r), parts, n, 1)) return 0;
        }
        return 1;
    }
    case NX_OP_TENSOR_TENSOR:
    case NX_OP_SCALAR_TENSOR_TENSOR:
    case NX_OP_TENSOR_SCALAR:
    case NX_OP_TENSOR_COPY:
    case NX_OP_ACTIVATION: {
        const nx_dtype in_dt = opc == NX_OP_TENSOR_COPY && test_rng_next(r) % 2 ? dst_dt : random_dtype(r);
        if (test_rng_next(r) % 4 == 0) in->op[1] = in->op[0];
        else if (!random_ap(r, &in->op[1], in_mem, in_dt, parts, n, 1)) return 0;
        if (opc == NX_OP_TENSOR_TENSOR && !random_ap(r, &in->op[2], in_mem, random_dtype(r), parts, n, 1)) return 0;
        if (opc == NX_OP_SCALAR_TENSOR_TENSOR && !random_ap(r, &in->op[3], in_mem, random_dtype(r), parts, n, 1)) return 0;
        const int first_scalar = 2;
        const int last_scalar = opc == NX_OP_TENSOR_SCALAR ? (test_rng_next(r) % 2 ? 3 : 2)
                                : opc == NX_OP_ACTIVATION ? 3
                                : opc == NX_OP_SCALAR_TENSOR_TENSOR ? 2 : 1;
        for (int k = first_scalar; k <= last_scalar; k++) {
            if (test_rng_next(r) % 2) in->op[k] = nx_imm(any_value(r), NX_DT_FP32);
            else if (!random_ap(r, &in->op[k], in_mem, random_dtype(r), parts, 1, 0)) return 0;
        }
        if (opc == NX_OP_TENSOR_SCALAR && last_scalar == 2) in->alu1 = NX_ALU_BYPASS;
        if (opc == NX_OP_TENSOR_SCALAR || opc == NX_OP_SCALAR_TENSOR_TENSOR)
            in->flags = (uint8_t)(test_rng_next(r) % 2 ? NX_FLAG_REVERSE0 : 0);
        if (opc == NX_OP_TENSOR_SCALAR && last_scalar == 3 && test_rng_next(r) % 2) in->flags |= NX_FLAG_REVERSE1;
        if (opc == NX_OP_ACTIVATION) {
            *eng = NX_ENG_ACT;
            in->func = (uint8_t)(test_rng_next(r) % NX_ACT_COUNT);
            static const nx_alu_op acc_ops[] = {NX_ALU_ADD, NX_ALU_MAX, NX_ALU_MIN, NX_ALU_MULTIPLY, NX_ALU_ABS_MAX};
            if (test_rng_next(r) % 2) {
                in->alu0 = (uint8_t)acc_ops[test_rng_next(r) % COUNT(acc_ops)];
                /* acc_out beside dst, in dst's memory */
                nx_operand acc = in->op[0];
                acc.ndims = 1;
                acc.count[0] = 1;
                acc.stride[0] = 1;
                acc.dtype = (uint8_t)random_dtype(r);
                acc.offset = 2 * TRIAL + 64;
                in->op[4] = acc;
            } else {
                in->alu0 = NX_ALU_BYPASS;
            }
        }
        return 1;
    }
    case NX_OP_TENSOR_REDUCE: {
        /* in: dims (a, b, c); dst: the kept ones */
        const uint32_t nd = 1 + (uint32_t)(test_rng_next(r) % 3);
        uint32_t c[3] = {1 + (uint32_t)(test_rng_next(r) % 9), 1 + (uint32_t)(test_rng_next(r) % 40), 1 + (uint32_t)(test_rng_next(r) % 6)};
        uint32_t axes = 1 + (uint32_t)(test_rng_next(r) % ((1u << nd) - 1));
        static const nx_alu_op red_ops[] = {NX_ALU_ADD, NX_ALU_MULTIPLY, NX_ALU_MAX, NX_ALU_MIN, NX_ALU_ABS_MAX,
                                            NX_ALU_BITWISE_AND, NX_ALU_BITWISE_OR, NX_ALU_BITWISE_XOR};
        in->alu0 = (uint8_t)red_ops[test_rng_next(r) % COUNT(red_ops)];
        in->iparam[0] = (int32_t)axes;
        in->flags = (uint8_t)(test_rng_next(r) % 2 ? NX_FLAG_NEGATE : 0);
        uint64_t total = 1, kept = 1;
        for (uint32_t k = 0; k < nd; k++) {
            total *= c[k];
            if (!(axes & (1u << k))) kept *= c[k];
        }
        nx_operand *src = &in->op[1];
        if (!random_ap(r, src, in_mem, random_dtype(r), parts, total, 1)) return 0;
        /* reshape the pattern's element count into the chosen dims (contiguous) */
        src->ndims = (uint8_t)nd;
        int32_t step = test_rng_next(r) % 3 == 0 ? 2 : 1;
        for (int k = (int)nd - 1; k >= 0; k--) {
            src->count[k] = c[k];
            src->stride[k] = step;
            step *= (int32_t)c[k];
        }
        if ((int64_t)src->offset + (int64_t)total * 2 * (int64_t)nx_dtype_size((nx_dtype)src->dtype) > TRIAL) return 0;
        if (!random_ap(r, &in->op[0], mem, dst_dt, parts, kept, 0)) return 0;
        return 1;
    }
    case NX_OP_DMA_COPY: {
        *eng = NX_ENG_SP;
        in->iparam[0] = (int32_t)(test_rng_next(r) % 4);
        in->flags = (uint8_t)(test_rng_next(r) % 3 == 0 ? NX_FLAG_ACCUMULATE : 0);
        /* HBM <-> SBUF, or SBUF -> SBUF in the other half of the region */
        const uint64_t way = test_rng_next(r) % 3;
        if (way == 0) {
            if (!random_ap(r, &in->op[0], NX_OPK_SBUF, dst_dt, parts, n, in->flags == 0)) return 0;
            if (!random_ap(r, &in->op[1], NX_OPK_HBM, random_dtype(r), parts, n, 1)) return 0;
        } else if (way == 1) {
            if (!random_ap(r, &in->op[0], NX_OPK_HBM, dst_dt, parts, n, in->flags == 0)) return 0;
            if (!random_ap(r, &in->op[1], NX_OPK_SBUF, random_dtype(r), parts, n, 1)) return 0;
        } else {
            if (!random_ap(r, &in->op[0], NX_OPK_SBUF, dst_dt, parts, n, 1)) return 0;
            if (!random_ap(r, &in->op[1], NX_OPK_SBUF, random_dtype(r), parts, n, 1)) return 0;
            in->op[1].offset += TRIAL; /* apart from dst */
        }
        return 1;
    }
    default: return 0;
    }
}

static void test_instructions_match_element_path(void **state) {
    (void)state;
    nx_state fast, ref;
    test_state(&fast, 1, HBM_BYTES, 1);
    test_state(&ref, 1, HBM_BYTES, 1);
    test_rng r = {0x1257};
    fill_state(&fast, &r);
    copy_state(&ref, &fast, fast.geo.partitions);
    int ran[NX_OP_COUNT] = {0}, trials = 0;
    for (int draw = 0; draw < 8000 && trials < 1200; draw++) {
        nx_insn in;
        nx_engine eng;
        if (!random_insn(&r, &in, &eng, fast.geo.partitions)) continue;
        nx_error err;
        if (nx_insn_validate(&in, eng, &fast.geo, fast.hbm_bytes, fast.sem_count, &err) != 0) continue;
        uint32_t parts = 0; /* the partitions (HBM rows) any operand touches */
        for (int k = 0; k < 5; k++)
            if (nx_operand_is_memory(&in.op[k]) && in.op[k].partition_count > parts) parts = in.op[k].partition_count;
        if (test_run(&fast, 0, eng, &in, &err) != 0)
            fail_msg("%s: %s", nx_opcode_lookup(in.opcode)->mnemonic, err.msg);
        ref_execute(&ref, &in);
        char what[96];
        snprintf(what, sizeof what, "trial %d, %s", trials, nx_opcode_lookup(in.opcode)->mnemonic);
        assert_same_state(&fast, &ref, parts, what);
        ran[in.opcode]++;
        trials++;
    }
    /* every family ran often enough to mean something */
    const nx_opcode fams[] = {NX_OP_TENSOR_TENSOR, NX_OP_TENSOR_SCALAR, NX_OP_SCALAR_TENSOR_TENSOR,
                              NX_OP_TENSOR_COPY, NX_OP_ACTIVATION, NX_OP_TENSOR_REDUCE, NX_OP_DMA_COPY,
                              NX_OP_SELECT, NX_OP_TRANSPOSE, NX_OP_DMA_TRANSPOSE};
    for (size_t k = 0; k < COUNT(fams); k++)
        if (ran[fams[k]] < 40)
            fail_msg("%s ran only %d times", nx_opcode_lookup(fams[k])->mnemonic, ran[fams[k]]);
    nx_state_free(&fast);
    nx_state_free(&ref);
}

/* ---- the fused kernel (isa/ew_fused.c): contiguous float operands ---- */

static nx_operand contiguous(nx_operand_kind kind, nx_dtype dt, uint32_t p0, uint32_t parts, uint64_t off,
                             uint32_t n) {
    nx_operand op = nx_ap_tile(kind, dt, p0, parts, off, n);
    return op;
}

static nx_dtype float_dtype(test_rng *r) { return (nx_dtype)(test_rng_next(r) % 5); }

/* A scalar operand: an fp32 immediate, one that is not an fp32 value, NaN,
 * or a per-partition AP of a float dtype beside the tensors. */
static nx_operand fused_scalar(test_rng *r, uint32_t parts, uint64_t off) {
    switch (test_rng_next(r) % 5) {
    case 0: return nx_imm((float)test_rng_uniform(r, -4.0, 4.0), NX_DT_FP32);
    case 1: return nx_imm(0.1 * (double)(1 + test_rng_next(r) % 9), NX_DT_FP32); /* not fp32 values */
    case 2: return nx_imm(any_value(r), NX_DT_FP32);
    default: return contiguous(NX_OPK_SBUF, float_dtype(r), 0, parts, off, 1);
    }
}

/* Instructions the fused kernel takes (and some it must turn down: partial
 * overlaps, non-fp32 scalars for comparisons, activation rows that a later
 * partition reads), against the element path. */
/* The fused kernel asked directly for a tensor_tensor or tensor_scalar,
 * with the steps its instruction builds (isa/insns/): 1 when it did the
 * instruction, 0 when it declined (or for another family). */
static int fused_direct(nx_state *st, const nx_insn *in) {
    nx_error err;
    nx_exec_ctx ctx = {st, 0, NX_ENG_DVE, 0, &err};
    nx_view v[4];
    for (int k = 0; k < 4; k++)
        if (in->op[k].kind != NX_OPK_NONE) nx_view_init(&v[k], &ctx, &in->op[k]);
    const nx_alu_op op0 = (nx_alu_op)in->alu0, op1 = (nx_alu_op)in->alu1;
    if (in->opcode == NX_OP_TENSOR_TENSOR) {
        const nx_ew_step step = {op0, 0, &v[2], NULL};
        return nx_ew_fused(&v[0], &v[1], &step, 1, 0);
    }
    if (in->opcode != NX_OP_TENSOR_SCALAR) return 0;
    const int two = in->op[3].kind != NX_OPK_NONE;
    const nx_ew_step steps[2] = {{op0, (in->flags & NX_FLAG_REVERSE0) != 0, NULL, &v[2]},
                                 {op1, (in->flags & NX_FLAG_REVERSE1) != 0, NULL, two ? &v[3] : NULL}};
    return nx_ew_fused(&v[0], &v[1], steps, two ? 2 : 1, 0);
}

static void test_fused_elementwise_matches_element_path(void **state) {
    (void)state;
    static const nx_alu_op ops[] = {NX_ALU_BYPASS, NX_ALU_ADD,    NX_ALU_SUBTRACT, NX_ALU_MULTIPLY,
                                    NX_ALU_DIVIDE, NX_ALU_MAX,    NX_ALU_MIN,      NX_ALU_ABS_MAX,
                                    NX_ALU_IS_EQUAL, NX_ALU_NOT_EQUAL, NX_ALU_IS_GE, NX_ALU_IS_GT,
                                    NX_ALU_IS_LE, NX_ALU_IS_LT, NX_ALU_POW};
    static const nx_opcode fams[] = {NX_OP_TENSOR_TENSOR, NX_OP_TENSOR_SCALAR, NX_OP_SCALAR_TENSOR_TENSOR,
                                     NX_OP_ACTIVATION};
    nx_state fast, ref;
    test_state(&fast, 1, HBM_BYTES, 1);
    test_state(&ref, 1, HBM_BYTES, 1);
    test_rng r = {0xf05ed};
    fill_state(&fast, &r);
    /* plain fp32 values in part of the region, so whole groups take the lanes */
    for (uint32_t p = 0; p < fast.geo.partitions; p++)
        for (uint32_t i = 0; i < TRIAL; i += 4)
            if (test_rng_next(&r) % 4) nx_dtype_store(NX_DT_FP32, nx_sbuf_at(&fast, 0, p, i), (float)test_rng_uniform(&r, -8, 8));
    copy_state(&ref, &fast, fast.geo.partitions);
    int trials = 0, fused = 0;
    for (int draw = 0; draw < 3000 && trials < 600; draw++) {
        const nx_opcode opc = fams[test_rng_next(&r) % COUNT(fams)];
        nx_insn in = nx_insn_make(opc);
        const uint32_t parts = 1 + (uint32_t)(test_rng_next(&r) % 32);
        const uint32_t n = 1 + (uint32_t)(test_rng_next(&r) % 300);
        const nx_dtype ddt = float_dtype(&r);
        const uint64_t doff = 4 * (test_rng_next(&r) % 256);
        in.op[0] = contiguous(NX_OPK_SBUF, ddt, 0, parts, doff, n);
        /* in: in place, the same partitions elsewhere (maybe overlapping
         * dst partly), a later start partition, or PSUM */
        const uint64_t how = test_rng_next(&r) % 5;
        const nx_dtype adt = how == 0 ? ddt : float_dtype(&r);
        const uint64_t aoff = how == 0 ? doff : 4 * (test_rng_next(&r) % 512);
        const uint32_t ap0 = how == 2 ? 32 * (uint32_t)(test_rng_next(&r) % 3) : 0;
        if (ap0 + parts > 128) continue;
        in.op[1] = contiguous(how == 3 ? NX_OPK_PSUM : NX_OPK_SBUF, adt, ap0, parts, aoff, n);
        if (how == 4) in.op[0].start_partition = 32, in.op[1].start_partition = 0; /* dst after in */
        const nx_alu_op op0 = ops[test_rng_next(&r) % COUNT(ops)], op1 = ops[test_rng_next(&r) % COUNT(ops)];
        const uint64_t soff = TRIAL + 64;
        switch (opc) {
        case NX_OP_TENSOR_TENSOR:
            in.alu0 = (uint8_t)op0;
            in.op[2] = contiguous(test_rng_next(&r) % 2 ? NX_OPK_PSUM : NX_OPK_SBUF, float_dtype(&r), 0, parts,
                                  4 * (test_rng_next(&r) % 512), n);
            break;
        case NX_OP_TENSOR_SCALAR:
            in.alu0 = (uint8_t)op0;
            in.op[2] = fused_scalar(&r, parts, soff);
            if (test_rng_next(&r) % 2) {
                in.alu1 = (uint8_t)op1;
                in.op[3] = fused_scalar(&r, parts, soff + 8);
            }
            in.flags = (uint8_t)((test_rng_next(&r) % 2 ? NX_FLAG_REVERSE0 : 0) |
                                 (in.op[3].kind != NX_OPK_NONE && test_rng_next(&r) % 2 ? NX_FLAG_REVERSE1 : 0));
            break;
        case NX_OP_SCALAR_TENSOR_TENSOR:
            in.alu0 = (uint8_t)op0;
            in.alu1 = (uint8_t)op1;
            in.op[2] = fused_scalar(&r, parts, soff);
            in.op[3] = contiguous(NX_OPK_PSUM, float_dtype(&r), 0, parts, 4 * (test_rng_next(&r) % 512), n);
            in.flags = (uint8_t)(test_rng_next(&r) % 2 ? NX_FLAG_REVERSE0 : 0);
            break;
        default: /* activation, identity, no acc_out */
            in.func = NX_ACT_IDENTITY;
            in.op[2] = fused_scalar(&r, parts, soff);
            in.op[3] = fused_scalar(&r, parts, soff + 8);
            if (test_rng_next(&r) % 4 == 0) in.op[2].start_partition = in.op[0].start_partition + 1; /* a later row */
            break;
        }
        const nx_engine eng = opc == NX_OP_ACTIVATION ? NX_ENG_ACT : NX_ENG_DVE;
        nx_error err;
        if (nx_insn_validate(&in, eng, &fast.geo, fast.hbm_bytes, fast.sem_count, &err) != 0) continue;
        /* every other tensor_tensor / tensor_scalar straight into the kernel */
        const int direct = trials % 2 && fused_direct(&fast, &in);
        fused += direct;
        if (!direct && test_run(&fast, 0, eng, &in, &err) != 0) fail_msg("%s", err.msg);
        ref_execute(&ref, &in);
        char what[96];
        snprintf(what, sizeof what, "fused trial %d, %s%s", trials, nx_opcode_lookup(in.opcode)->mnemonic,
                 direct ? " (kernel asked directly)" : "");
        assert_same_state(&fast, &ref, 128, what);
        trials++;
    }
    if (trials < 300) fail_msg("only %d trials validated", trials);
    /* the kernel did a share of the trials itself (about a quarter of them
     * are direct tensor_tensor / tensor_scalar calls it can take) */
    printf("fused: %d of %d trials done by the kernel asked directly\n", fused, trials);
    if (fused < trials / 10) fail_msg("the fused kernel did only %d of %d trials", fused, trials);
    nx_state_free(&fast);
    nx_state_free(&ref);
}

/* Activation reads every partition before it writes: the fused kernel
 * must turn down a dst whose rows a later partition of an input lies in
 * (compute engines' start-partition rules keep validated instructions
 * from this, so the kernel is asked directly), and take the other order. */
static void test_fused_declines_rows_read_later(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    nx_error err;
    nx_exec_ctx ctx = {&st, 0, NX_ENG_ACT, 0, &err};
    nx_operand early = contiguous(NX_OPK_SBUF, NX_DT_FP32, 0, 8, 0, 16);
    nx_operand late = contiguous(NX_OPK_SBUF, NX_DT_FP32, 4, 8, 0, 16);
    nx_operand one = nx_imm(1.0, NX_DT_FP32), zero = nx_imm(0.0, NX_DT_FP32);
    nx_view ve, vl, s1, s0;
    nx_view_init(&ve, &ctx, &early);
    nx_view_init(&vl, &ctx, &late);
    nx_view_init(&s1, &ctx, &one);
    nx_view_init(&s0, &ctx, &zero);
    const nx_ew_step steps[2] = {{NX_ALU_MULTIPLY, 0, NULL, &s1}, {NX_ALU_ADD, 0, NULL, &s0}};
    assert_int_equal(nx_ew_fused(&vl, &ve, steps, 2, 1), 0); /* in row 4 is dst row 0 */
    assert_int_equal(nx_ew_fused(&ve, &vl, steps, 2, 1), 1); /* dst row 4 is in row 0, read first */
    assert_int_equal(nx_ew_fused(&vl, &ve, steps, 2, 0), 1); /* row by row semantics */
    /* a per-partition scalar in a row written before it is read */
    nx_operand sc = contiguous(NX_OPK_SBUF, NX_DT_FP32, 0, 8, 64, 1); /* partition q + 4 is dst row q */
    nx_view vs;
    nx_view_init(&vs, &ctx, &sc);
    const nx_ew_step with_sc[1] = {{NX_ALU_ADD, 0, NULL, &vs}};
    nx_operand dst = contiguous(NX_OPK_SBUF, NX_DT_FP32, 4, 8, 0, 32);
    nx_operand src = contiguous(NX_OPK_PSUM, NX_DT_FP32, 0, 8, 0, 32);
    nx_view vd, vsrc;
    nx_view_init(&vd, &ctx, &dst);
    nx_view_init(&vsrc, &ctx, &src);
    assert_int_equal(nx_ew_fused(&vd, &vsrc, with_sc, 1, 1), 0);
    assert_int_equal(nx_ew_fused(&vd, &vsrc, with_sc, 1, 0), 1);
    nx_state_free(&st);
}

/* ---- the NaN rule of activation's scale/bias and of dma_copy acc ---- */

static void put_f32_bits(uint8_t *p, uint32_t b) { memcpy(p, &b, 4); }
static uint32_t get_f32_bits(const uint8_t *p) {
    uint32_t b;
    memcpy(&b, p, 4);
    return b;
}

enum { PNAN = 0x7fc00000u, NNAN = 0xffc00000u, PINF = 0x7f800000u, NINF = 0xff800000u, ONE = 0x3f800000u };

/* docs/parts/insns-act-pool.md: a NaN product is in's NaN, else the
 * scale's, else (0 * Inf) the positive NaN; a NaN sum the product's, else
 * the bias's, else (Inf - Inf) the positive NaN. */
static void test_activation_nan_rule(void **state) {
    (void)state;
    static const struct { uint32_t in, scale, bias, want; } c[] = {
        {0x00000000u, PINF, 0, PNAN},          /* 0 * Inf: positive (x86 would give 0xffc00000) */
        {0x80000000u, PINF, 0, PNAN},
        {NNAN, PNAN, 0, NNAN},                 /* in's NaN first */
        {PNAN, 0x7fc12345u, NNAN, PNAN},
        {ONE, NNAN, PNAN, NNAN},               /* then the scale's */
        {ONE, PINF, NINF, PNAN},               /* Inf - Inf: positive */
        {ONE, ONE, NNAN, NNAN},                /* the bias's */
        {NINF, 0x00000000u, NNAN, PNAN},       /* the product's (0 * Inf) before the bias's */
    };
    enum { P = sizeof c / sizeof c[0] };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    for (uint32_t p = 0; p < P; p++) {
        put_f32_bits(nx_sbuf_at(&st, 0, p, 0), c[p].in);
        put_f32_bits(nx_sbuf_at(&st, 0, p, 64), c[p].scale);
        put_f32_bits(nx_sbuf_at(&st, 0, p, 128), c[p].bias);
    }
    nx_insn in = nx_insn_make(NX_OP_ACTIVATION);
    in.func = NX_ACT_IDENTITY;
    in.op[0] = test_sb(NX_DT_FP32, 0, P, 256, 1);
    in.op[1] = test_sb(NX_DT_FP32, 0, P, 0, 1);
    in.op[2] = test_sb(NX_DT_FP32, 0, P, 64, 1);
    in.op[3] = test_sb(NX_DT_FP32, 0, P, 128, 1);
    test_run_ok(&st, NX_ENG_ACT, &in);
    for (uint32_t p = 0; p < P; p++) {
        uint32_t got = get_f32_bits(nx_sbuf_at(&st, 0, p, 256));
        if (got != c[p].want)
            fail_msg("case %u: in 0x%08x scale 0x%08x bias 0x%08x: got 0x%08x, want 0x%08x", p, c[p].in,
                     c[p].scale, c[p].bias, got, c[p].want);
    }
    nx_state_free(&st);
}

/* docs/parts/insns-pe-dma.md: acc adds with the ALU's add: dst's NaN, else
 * src's, else (Inf + -Inf) the positive NaN. Contiguous rows (the chunked
 * path) and a dst of stride 0 (the element path). */
static void test_dma_acc_nan_rule(void **state) {
    (void)state;
    static const uint32_t dst[] = {PINF, NNAN, PNAN, ONE, NINF, ONE, 0x7f812345u, ONE, ONE};
    static const uint32_t src[] = {NINF, PNAN, NNAN, NNAN, PINF, ONE, NNAN, PNAN, ONE};
    static const uint32_t want[] = {PNAN, NNAN, PNAN, NNAN, PNAN, 0x40000000u, PNAN, PNAN, 0x40000000u};
    enum { N = sizeof dst / sizeof dst[0] };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    for (uint32_t i = 0; i < N; i++) {
        put_f32_bits(nx_sbuf_at(&st, 0, 0, 4 * i), dst[i]);
        put_f32_bits(st.hbm + 4 * i, src[i]);
    }
    nx_insn in = test_dma(test_sb(NX_DT_FP32, 0, 1, 0, N), nx_ap_hbm_rows(NX_DT_FP32, 0, 1, N, N), 0);
    in.flags = NX_FLAG_ACCUMULATE;
    test_run_ok(&st, NX_ENG_SP, &in);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t got = get_f32_bits(nx_sbuf_at(&st, 0, 0, 4 * i));
        if (got != want[i])
            fail_msg("element %u: dst 0x%08x + src 0x%08x: got 0x%08x, want 0x%08x", i, dst[i], src[i], got, want[i]);
    }
    /* stride-0 dst: every src element adds into one element, in order:
     * 1 + 1 = 2, + (-NaN) = src's -NaN, + (+NaN) = dst's (now -NaN) */
    put_f32_bits(nx_sbuf_at(&st, 0, 0, 512), ONE);
    put_f32_bits(st.hbm + 1024, ONE);
    put_f32_bits(st.hbm + 1028, NNAN);
    put_f32_bits(st.hbm + 1032, PNAN);
    nx_operand d0 = test_sb(NX_DT_FP32, 0, 1, 512, 3);
    d0.stride[0] = 0;
    in = test_dma(d0, nx_ap_hbm_rows(NX_DT_FP32, 1024, 1, 3, 3), 0);
    in.flags = NX_FLAG_ACCUMULATE;
    test_run_ok(&st, NX_ENG_SP, &in);
    assert_int_equal(get_f32_bits(nx_sbuf_at(&st, 0, 0, 512)), NNAN);
    nx_state_free(&st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_run_matches_element_store),
        cmocka_unit_test(test_load_run_matches_element_load),
        cmocka_unit_test(test_walks_match_element_path),
        cmocka_unit_test(test_canonical_nans_is_the_round_trip),
        cmocka_unit_test(test_alu_run_matches_apply),
        cmocka_unit_test(test_alu_run_ties_and_nans),
        cmocka_unit_test(test_alu_fold_nan_positions),
        cmocka_unit_test(test_act_run_matches_apply),
        cmocka_unit_test(test_instructions_match_element_path),
        cmocka_unit_test(test_fused_elementwise_matches_element_path),
        cmocka_unit_test(test_fused_declines_rows_read_later),
        cmocka_unit_test(test_activation_nan_rule),
        cmocka_unit_test(test_dma_acc_nan_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
