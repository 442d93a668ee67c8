/* Tests for isa/dtype.c: names, sizes, predicates, exact loads, and the
 * single-rounding stores, checked for every ordered (src, dst) pair against an
 * independent reference written here in a different way:
 *   - narrow float formats (bf16, fp16, fp8): every encoding is decoded with
 *     ldexpl, and the expected result is the nearest encoding (ties to the even
 *     one) found by searching that table of all encodings (a linear scan, and
 *     a bisection that is cross-checked against the scan);
 *   - fp32: frexpl/ldexpl scaling and a floorl-based round-half-even in long
 *     double (itself cross-checked against the C double->float conversion);
 *   - integers: floorl-based round-half-even and clamping in long double.
 * Hand-computed values (RNE ties, double-rounding traps, saturation points)
 * are checked as literals as well. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/dtype.h"

/* ---- reference descriptions of the formats (from the OCP fp8 spec and IEEE 754) */

typedef struct ref_float_fmt {
    nx_dtype dt;
    int bits, exp_bits, man_bits;
    int ieee;          /* 1: all-ones exponent is Inf/NaN; 0: OCP e4m3fn */
    uint32_t max_code; /* largest finite, positive */
    uint32_t inf_code; /* positive Inf (ieee only) */
    uint32_t qnan;     /* canonical quiet NaN, positive */
} ref_float_fmt;

static const ref_float_fmt REF_FLOATS[] = {
    {NX_DT_FP32, 32, 8, 23, 1, 0x7f7fffffu, 0x7f800000u, 0x7fc00000u},
    {NX_DT_BF16, 16, 8, 7, 1, 0x7f7fu, 0x7f80u, 0x7fc0u},
    {NX_DT_FP16, 16, 5, 10, 1, 0x7bffu, 0x7c00u, 0x7e00u},
    {NX_DT_FP8_E4M3, 8, 4, 3, 0, 0x7eu, 0, 0x7fu},
    {NX_DT_FP8_E5M2, 8, 5, 2, 1, 0x7bu, 0x7cu, 0x7eu},
};

typedef struct ref_int_fmt {
    nx_dtype dt;
    int bits;
    int64_t lo, hi;
} ref_int_fmt;

static const ref_int_fmt REF_INTS[] = {
    {NX_DT_INT8, 8, -128, 127},
    {NX_DT_UINT8, 8, 0, 255},
    {NX_DT_INT16, 16, -32768, 32767},
    {NX_DT_UINT16, 16, 0, 65535},
    {NX_DT_INT32, 32, -2147483648LL, 2147483647LL},
    {NX_DT_UINT32, 32, 0, 4294967295LL},
};

static const ref_float_fmt *ref_float(nx_dtype dt)
{
    for (size_t i = 0; i < sizeof REF_FLOATS / sizeof REF_FLOATS[0]; i++)
        if (REF_FLOATS[i].dt == dt) return &REF_FLOATS[i];
    return NULL;
}

static const ref_int_fmt *ref_int(nx_dtype dt)
{
    for (size_t i = 0; i < sizeof REF_INTS / sizeof REF_INTS[0]; i++)
        if (REF_INTS[i].dt == dt) return &REF_INTS[i];
    return NULL;
}

static int ref_bits(nx_dtype dt)
{
    const ref_float_fmt *f = ref_float(dt);
    return f ? f->bits : ref_int(dt)->bits;
}

static uint32_t bits_mask(int bits) { return bits == 32 ? 0xffffffffu : (1u << bits) - 1; }

/* The value of an encoding, from its fields, in long double. */
static long double ref_decode(const ref_float_fmt *f, uint32_t code)
{
    const int m = f->man_bits;
    const int bias = (1 << (f->exp_bits - 1)) - 1;
    const uint32_t exp_all = (1u << f->exp_bits) - 1;
    const uint32_t field = (code >> m) & exp_all;
    const uint32_t man = code & ((1u << m) - 1);
    const int negative = (code >> (f->bits - 1)) & 1;
    long double mag;
    if (f->ieee && field == exp_all) mag = man ? (long double)NAN : (long double)INFINITY;
    else if (!f->ieee && field == exp_all && man == (1u << m) - 1) mag = (long double)NAN;
    else if (field == 0) mag = ldexpl((long double)man, 1 - bias - m);
    else mag = ldexpl((long double)man + ldexpl(1.0L, m), (int)field - bias - m);
    return copysignl(mag, negative ? -1.0L : 1.0L);
}

/* Round half to even, written with floorl (independent of the rounding mode). */
static long double ref_round_even(long double y)
{
    const long double fl = floorl(y);
    const long double diff = y - fl;
    if (diff > 0.5L) return fl + 1.0L;
    if (diff < 0.5L) return fl;
    return fmodl(fl, 2.0L) == 0.0L ? fl : fl + 1.0L;
}

/* fp32 magnitude encoding of a >= 0 (not NaN): scale so one unit in the last
 * place is 1, round, scale back. */
static uint32_t ref_fp32_magnitude(long double a)
{
    if (isinf(a)) return 0x7f800000u;
    if (a == 0.0L) return 0;
    int e;
    (void)frexpl(a, &e); /* a = m * 2^e, 0.5 <= m < 1: 24 bits => ulp 2^(e-24) */
    int ulp_exp = e - 24;
    if (ulp_exp < -149) ulp_exp = -149;
    const long double r = ldexpl(ref_round_even(ldexpl(a, -ulp_exp)), ulp_exp);
    if (r >= 0x1p128L) return 0x7f800000u;
    const float f = (float)r; /* exact by construction */
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* All positive finite values of a narrow format, ascending. */
typedef struct ref_table {
    const ref_float_fmt *fmt;
    size_t n;
    long double *value;
    uint32_t *code;
    long double max_value;
    long double overflow_at; /* ieee: |x| >= this rounds to Inf */
} ref_table;

typedef struct ref_ctx {
    ref_table tables[NX_DT_COUNT]; /* filled for bf16, fp16, e4m3, e5m2 */
} ref_ctx;

static void table_build(ref_table *t, const ref_float_fmt *f)
{
    const uint32_t ncodes = 1u << (f->bits - 1);
    t->fmt = f;
    t->value = malloc(ncodes * sizeof *t->value);
    t->code = malloc(ncodes * sizeof *t->code);
    assert_non_null(t->value);
    assert_non_null(t->code);
    t->n = 0;
    for (uint32_t c = 0; c < ncodes; c++) {
        const long double v = ref_decode(f, c);
        if (isnan(v) || isinf(v)) continue;
        t->value[t->n] = v;
        t->code[t->n] = c;
        t->n++;
    }
    for (size_t i = 1; i < t->n; i++) assert_true(t->value[i - 1] < t->value[i]);
    t->max_value = ref_decode(f, f->max_code);
    assert_true(t->value[t->n - 1] == t->max_value);
    int e;
    (void)frexpl(t->max_value, &e);
    /* halfway between max finite and the next power of two (what the next
     * binade's first value would be) */
    t->overflow_at = (t->max_value + ldexpl(1.0L, e)) / 2.0L;
}

/* Nearest encoding to a (0 <= a <= max) by scanning every encoding; on a tie
 * the even code wins. */
static uint32_t nearest_scan(const ref_table *t, long double a)
{
    uint32_t best = t->code[0];
    long double best_d = INFINITY;
    for (size_t i = 0; i < t->n; i++) {
        const long double d = fabsl(t->value[i] - a);
        if (d < best_d || (d == best_d && (t->code[i] & 1u) == 0)) {
            best_d = d;
            best = t->code[i];
        }
    }
    return best;
}

/* Same, by bisection (much faster; cross-checked against nearest_scan). */
static uint32_t nearest_bisect(const ref_table *t, long double a)
{
    size_t lo = 0, hi = t->n - 1; /* value[lo] <= a */
    if (a >= t->value[hi]) return t->code[hi];
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if (t->value[mid] <= a) lo = mid;
        else hi = mid;
    }
    const long double dlo = a - t->value[lo], dhi = t->value[hi] - a;
    if (dlo < dhi) return t->code[lo];
    if (dhi < dlo) return t->code[hi];
    return (t->code[lo] & 1u) == 0 ? t->code[lo] : t->code[hi];
}

/* Expected stored bits of the exact value x in dst. */
static uint32_t ref_encode_with(const ref_ctx *r, nx_dtype dst, long double x, int use_scan)
{
    const ref_int_fmt *fi = ref_int(dst);
    if (fi != NULL) {
        int64_t v;
        if (isnan(x)) v = 0;
        else if (x <= (long double)fi->lo) v = fi->lo;
        else if (x >= (long double)fi->hi) v = fi->hi;
        else {
            const long double rr = ref_round_even(x);
            v = rr < (long double)fi->lo ? fi->lo : rr > (long double)fi->hi ? fi->hi : (int64_t)rr;
        }
        return (uint32_t)((uint64_t)v & bits_mask(fi->bits));
    }
    const ref_float_fmt *f = ref_float(dst);
    const uint32_t sign = signbit(x) ? 1u << (f->bits - 1) : 0;
    if (isnan(x)) return sign | f->qnan;
    const long double a = fabsl(x);
    if (dst == NX_DT_FP32) return sign | ref_fp32_magnitude(a);
    const ref_table *t = &r->tables[dst];
    if (isinf(a)) return sign | (f->ieee ? f->inf_code : f->max_code);
    if (f->ieee && a >= t->overflow_at) return sign | f->inf_code;
    if (!f->ieee && a > t->max_value) return sign | f->max_code;
    return sign | (use_scan ? nearest_scan(t, a) : nearest_bisect(t, a));
}

static uint32_t ref_encode(const ref_ctx *r, nx_dtype dst, long double x)
{
    return ref_encode_with(r, dst, x, 0);
}

/* Exact value of a source encoding. */
static long double ref_value(nx_dtype src, uint32_t code)
{
    const ref_float_fmt *f = ref_float(src);
    if (f != NULL) return ref_decode(f, code);
    const ref_int_fmt *fi = ref_int(src);
    if (fi->lo == 0) return (long double)code;
    const int64_t half = (int64_t)1 << (fi->bits - 1);
    const int64_t u = (int64_t)code;
    return (long double)(u >= half ? u - 2 * half : u);
}

static int group_setup(void **state)
{
    ref_ctx *r = calloc(1, sizeof *r);
    if (r == NULL) return -1;
    for (size_t i = 1; i < sizeof REF_FLOATS / sizeof REF_FLOATS[0]; i++)
        table_build(&r->tables[REF_FLOATS[i].dt], &REF_FLOATS[i]);
    *state = r;
    return 0;
}

static int group_teardown(void **state)
{
    ref_ctx *r = *state;
    for (int i = 0; i < NX_DT_COUNT; i++) {
        free(r->tables[i].value);
        free(r->tables[i].code);
    }
    free(r);
    return 0;
}

/* ---- little helpers ------------------------------------------------------- */

static void put_le(unsigned char *p, uint32_t v, int bits)
{
    for (int i = 0; i < bits / 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le(const unsigned char *p, int bits)
{
    uint32_t v = 0;
    for (int i = 0; i < bits / 8; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint32_t f2u(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static float u2f(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* Deterministic xorshift64*: the state is the caller's. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

/* Stores `value` (an engine value) to dst and returns the stored bits. */
static uint32_t store_bits(nx_dtype dst, double value)
{
    unsigned char buf[8];
    memset(buf, 0xa5, sizeof buf);
    nx_dtype_store(dst, buf, value);
    const int bits = ref_bits(dst);
    for (int i = bits / 8; i < 8; i++) assert_int_equal(buf[i], 0xa5); /* no overrun */
    return get_le(buf, bits);
}

/* Accumulates mismatches so one failing test reports several examples. */
typedef struct tally {
    unsigned long checks, failures;
} tally;

static void tally_check(tally *t, const char *what, nx_dtype src, nx_dtype dst, uint32_t src_code,
                        long double x, uint32_t got, uint32_t want)
{
    t->checks++;
    if (got == want) return;
    if (t->failures++ < 12)
        print_error("%s %s->%s: src 0x%08x value %.21Lg: got 0x%08x want 0x%08x\n", what,
                    nx_dtype_name(src), nx_dtype_name(dst), src_code, x, got, want);
}

/* Same value, same NaN-ness, same sign (so -0 != +0). */
static int same_value(long double a, long double b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) && !signbit(a) == !signbit(b);
    return a == b && !signbit(a) == !signbit(b);
}

/* ---- names, sizes, predicates ----------------------------------------------- */

static void test_names_sizes_predicates(void **state)
{
    (void)state;
    static const struct {
        nx_dtype dt;
        const char *name;
        size_t size;
        int is_float, is_signed;
    } want[] = {
        {NX_DT_FP32, "fp32", 4, 1, 0},       {NX_DT_BF16, "bf16", 2, 1, 0},
        {NX_DT_FP16, "fp16", 2, 1, 0},       {NX_DT_FP8_E4M3, "fp8_e4m3", 1, 1, 0},
        {NX_DT_FP8_E5M2, "fp8_e5m2", 1, 1, 0}, {NX_DT_INT8, "int8", 1, 0, 1},
        {NX_DT_UINT8, "uint8", 1, 0, 0},     {NX_DT_INT16, "int16", 2, 0, 1},
        {NX_DT_UINT16, "uint16", 2, 0, 0},   {NX_DT_INT32, "int32", 4, 0, 1},
        {NX_DT_UINT32, "uint32", 4, 0, 0},
    };
    assert_int_equal(sizeof want / sizeof want[0], NX_DT_COUNT);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(want[i].dt, (nx_dtype)i); /* codes are the .nxb encoding */
        assert_string_equal(nx_dtype_name(want[i].dt), want[i].name);
        assert_int_equal(nx_dtype_size(want[i].dt), want[i].size);
        assert_int_equal(!!nx_dtype_is_float(want[i].dt), want[i].is_float);
        assert_int_equal(!!nx_dtype_is_signed_int(want[i].dt), want[i].is_signed);
        assert_true(nx_dtype_is_valid((int)i));
        nx_dtype parsed = NX_DT_COUNT;
        assert_int_equal(nx_dtype_from_name(want[i].name, &parsed), 0);
        assert_int_equal(parsed, want[i].dt);
    }
    assert_false(nx_dtype_is_valid(-1));
    assert_false(nx_dtype_is_valid(NX_DT_COUNT));
    assert_false(nx_dtype_is_valid(1000));
    assert_int_equal(nx_dtype_size(NX_DT_COUNT), 0);
    assert_null(nx_dtype_name(NX_DT_COUNT));
    assert_null(nx_dtype_name((nx_dtype)-1));
    assert_false(nx_dtype_is_float(NX_DT_COUNT));
    assert_false(nx_dtype_is_signed_int(NX_DT_COUNT));

    nx_dtype out = NX_DT_INT8;
    assert_int_equal(nx_dtype_from_name("float32", &out), -1);
    assert_int_equal(nx_dtype_from_name("FP32", &out), -1);
    assert_int_equal(nx_dtype_from_name("fp8", &out), -1);
    assert_int_equal(nx_dtype_from_name("", &out), -1);
    assert_int_equal(nx_dtype_from_name("int32 ", &out), -1);
    assert_int_equal(nx_dtype_from_name(NULL, &out), -1);
    assert_int_equal(out, NX_DT_INT8); /* untouched on failure */
}

static void test_invalid_code_is_harmless(void **state)
{
    (void)state;
    unsigned char buf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    nx_dtype_store(NX_DT_COUNT, buf, 1.0);
    for (int i = 0; i < 8; i++) assert_int_equal(buf[i], i + 1);
    assert_true(nx_dtype_load(NX_DT_COUNT, buf) == 0.0);
}

/* ---- the reference itself ----------------------------------------------------- */

/* Published values of the formats anchor ref_decode (OCP OFP8 spec table 1,
 * IEEE 754 binary16/binary32, bfloat16). */
static void test_reference_anchors(void **state)
{
    (void)state;
    assert_true(ref_decode(ref_float(NX_DT_FP8_E4M3), 0x7e) == 448.0L);
    assert_true(ref_decode(ref_float(NX_DT_FP8_E4M3), 0x08) == 0x1p-6L);
    assert_true(ref_decode(ref_float(NX_DT_FP8_E4M3), 0x01) == 0x1p-9L);
    assert_true(ref_decode(ref_float(NX_DT_FP8_E4M3), 0x38) == 1.0L);
    assert_true(ref_decode(ref_float(NX_DT_FP8_E4M3), 0xfe) == -448.0L);
    assert_true(isnan(ref_decode(ref_float(NX_DT_FP8_E4M3), 0x7f)));
    assert_true(ref_decode(ref_float(NX_DT_FP8_E4M3), 0x78) == 256.0L);
    assert_true(ref_decode(ref_float(NX_DT_FP8_E5M2), 0x7b) == 57344.0L);
    assert_true(ref_decode(ref_float(NX_DT_FP8_E5M2), 0x01) == 0x1p-16L);
    assert_true(ref_decode(ref_float(NX_DT_FP8_E5M2), 0x04) == 0x1p-14L);
    assert_true(isinf(ref_decode(ref_float(NX_DT_FP8_E5M2), 0x7c)));
    assert_true(ref_decode(ref_float(NX_DT_FP16), 0x7bff) == 65504.0L);
    assert_true(ref_decode(ref_float(NX_DT_FP16), 0x0001) == 5.9604644775390625e-08L);
    assert_true(ref_decode(ref_float(NX_DT_FP16), 0x3c00) == 1.0L);
    assert_true(ref_decode(ref_float(NX_DT_FP16), 0xc000) == -2.0L);
    assert_true(ref_decode(ref_float(NX_DT_BF16), 0x7f7f) == 3.38953138925153547590470800371487867e38L);
    assert_true(ref_decode(ref_float(NX_DT_BF16), 0x3f80) == 1.0L);
    assert_true(ref_decode(ref_float(NX_DT_BF16), 0x0001) == 0x1p-133L);
    assert_true(ref_decode(ref_float(NX_DT_FP32), 0x7f7fffff) == (long double)3.40282346638528859811704183484516925e38L);
    assert_true(ref_decode(ref_float(NX_DT_FP32), 0x00000001) == 0x1p-149L);
    assert_true(signbit(ref_decode(ref_float(NX_DT_FP16), 0x8000)));
}

/* Cross-checks the two nearest searches, and the fp32 reference against the C
 * double -> float conversion (IEEE RNE in the default rounding mode). */
static void test_reference_self_check(void **state)
{
    const ref_ctx *r = *state;
    uint64_t s = 0x9e3779b97f4a7c15u;
    static const nx_dtype narrow[] = {NX_DT_BF16, NX_DT_FP16, NX_DT_FP8_E4M3, NX_DT_FP8_E5M2};
    for (size_t k = 0; k < 4; k++) {
        const ref_table *t = &r->tables[narrow[k]];
        /* every value, every midpoint, and random points in the range */
        for (size_t i = 0; i < t->n; i += (t->n > 256 ? 61 : 1)) {
            const long double v = t->value[i];
            assert_int_equal(nearest_scan(t, v), t->code[i]);
            assert_int_equal(nearest_bisect(t, v), t->code[i]);
            if (i + 1 < t->n) {
                const long double mid = (v + t->value[i + 1]) / 2;
                assert_int_equal(nearest_scan(t, mid), nearest_bisect(t, mid));
                const uint32_t even = (t->code[i] & 1) ? t->code[i + 1] : t->code[i];
                assert_int_equal(nearest_scan(t, mid), even);
            }
        }
        for (int i = 0; i < 400; i++) {
            const long double a = t->max_value * (long double)(rng_next(&s) >> 11) * 0x1p-53L;
            assert_int_equal(nearest_scan(t, a), nearest_bisect(t, a));
        }
    }
    for (int i = 0; i < 200000; i++) {
        double d;
        uint64_t b = rng_next(&s);
        /* keep exponents around the fp32 range (and some beyond) */
        b = (b & UINT64_C(0x800fffffffffffff)) | ((uint64_t)(1023 - 160 + (int)((b >> 52) % 300)) << 52);
        memcpy(&d, &b, sizeof d);
        assert_int_equal(ref_encode(r, NX_DT_FP32, (long double)d), f2u((float)d));
    }
}

/* ---- the full (src, dst) matrix ----------------------------------------------- */

typedef struct code_list {
    uint32_t *v;
    size_t n, cap;
} code_list;

static void list_add(code_list *l, uint32_t code)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        assert_non_null(l->v);
    }
    l->v[l->n++] = code;
}

static void list_add_float(code_list *l, float f)
{
    list_add(l, f2u(f));
    list_add(l, f2u(-f));
}

/* fp32 engine values that sit on the interesting points of every destination:
 * every midpoint between adjacent narrow-format values (the RNE ties) and the
 * fp32 neighbours on both sides of it, the limits, and random values. */
static void fp32_sources(const ref_ctx *r, code_list *l)
{
    static const uint32_t codes[] = {
        0x00000000u, 0x00000001u, 0x00000002u, 0x007fffffu, 0x00800000u, 0x00800001u,
        0x3f800000u, 0x3f7fffffu, 0x7f7fffffu, 0x7f7ffffeu, 0x7f800000u, 0x7fc00000u,
        0x7f800001u, 0x7fffffffu, 0x7fa00000u,
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        list_add(l, codes[i]);
        list_add(l, codes[i] | 0x80000000u);
    }
    static const float values[] = {
        448.0f, 449.0f, 464.0f, 465.0f, 480.0f, 1e6f, 57344.0f, 61439.0f, 61439.99609375f,
        61440.0f, 65504.0f, 65519.0f, 65519.99609375f, 65520.0f, 65536.0f, 0.5f, 1.5f, 2.5f,
        3.5f, 0.49999997f, 127.5f, 128.0f, 128.5f, 255.5f, 256.0f, 32767.5f, 32768.0f,
        65535.5f, 65536.0f, 2147483648.0f, 2147483520.0f, 4294967296.0f, 4294967040.0f,
        1e10f, 1e20f, 3e38f, 1e-45f, 0x1p-133f, 0x1p-134f, 0x1p-24f, 0x1p-25f, 0x1p-16f,
        0x1p-17f, 0x1p-9f, 0x1p-10f, 0x1p-14f, 0x1p-6f, 16777216.0f, 16777218.0f,
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) list_add_float(l, values[i]);
    static const nx_dtype narrow[] = {NX_DT_BF16, NX_DT_FP16, NX_DT_FP8_E4M3, NX_DT_FP8_E5M2};
    for (size_t k = 0; k < 4; k++) {
        const ref_table *t = &r->tables[narrow[k]];
        for (size_t i = 0; i < t->n; i++) {
            int e;
            (void)frexpl(t->max_value, &e);
            const long double next = i + 1 < t->n ? t->value[i + 1] : ldexpl(1.0L, e);
            const long double mid = (t->value[i] + next) / 2;
            const float f = (float)mid;
            assert_true((long double)f == mid); /* every midpoint is an fp32 value */
            list_add_float(l, f);
            list_add_float(l, nextafterf(f, INFINITY));
            list_add_float(l, nextafterf(f, 0.0f));
        }
    }
    uint64_t s = 12345;
    for (int i = 0; i < 100000; i++) list_add(l, (uint32_t)(rng_next(&s) >> 32));
    for (int i = 0; i < 100000; i++) {
        const uint32_t b = (uint32_t)(rng_next(&s) >> 32);
        /* exponents 2^-40 .. 2^40 */
        list_add(l, (b & 0x807fffffu) | ((uint32_t)(127 - 40 + (b >> 23) % 81) << 23));
    }
}

/* int32 / uint32 engine values: the limits, and bf16/fp16/fp32 midpoints in the
 * integer range with their neighbours (where a double rounding would show). */
static void int32_sources(const ref_ctx *r, int is_unsigned, code_list *l)
{
    static const int64_t values[] = {
        0, 1, -1, 2, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769, 65535,
        65536, 448, 449, 464, 465, 480, 57344, 61439, 61440, 65504, 65519, 65520, 2049, 2050,
        2051, 16777216, 16777217, 16777218, 16777219, 16842752, 16842753, 16973824,
        -16842753, 2147483520, 2147483584, 2147483647, 2147483646, -2147483647 - 1,
        -2147483647, 2147483648LL, 4294967295LL, 4294967294LL, 4294967168LL, 4294967040LL,
    };
    const int64_t lo = is_unsigned ? 0 : -2147483648LL;
    const int64_t hi = is_unsigned ? 4294967295LL : 2147483647LL;
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        if (values[i] >= lo && values[i] <= hi) list_add(l, (uint32_t)(uint64_t)values[i]);
    const ref_table *bf = &r->tables[NX_DT_BF16];
    for (size_t i = 0; i + 1 < bf->n; i++) {
        const long double mid = (bf->value[i] + bf->value[i + 1]) / 2;
        if (mid < 1.0L || mid > 4294967295.0L || mid != floorl(mid)) continue;
        for (int d = -1; d <= 1; d++) {
            const int64_t v = (int64_t)mid + d;
            if (v <= hi) list_add(l, (uint32_t)(uint64_t)v);
            if (-v >= lo) list_add(l, (uint32_t)(uint64_t)-v);
        }
    }
    for (int e = 24; e < 32; e++) /* fp32 midpoints: 2^e + 2^(e-24) * (2k+1) */
        for (int64_t k = 0; k < 40; k++) {
            const int64_t mid = ((int64_t)1 << e) + ((int64_t)1 << (e - 24)) * (2 * k + 1);
            for (int d = -1; d <= 1; d++) {
                const int64_t v = mid + d;
                if (v <= hi) list_add(l, (uint32_t)(uint64_t)v);
                if (-v >= lo) list_add(l, (uint32_t)(uint64_t)-v);
            }
        }
    uint64_t s = is_unsigned ? 777 : 555;
    for (int i = 0; i < 100000; i++) {
        const uint64_t b = rng_next(&s);
        list_add(l, (uint32_t)(b >> 32) >> (b % 32)); /* all magnitudes */
        list_add(l, (uint32_t)(b >> 32));
    }
}

static void run_matrix_for_source(const ref_ctx *r, nx_dtype src, const code_list *codes, tally *t)
{
    const int sbits = ref_bits(src);
    for (size_t i = 0; i < codes->n; i++) {
        const uint32_t code = codes->v[i] & bits_mask(sbits);
        unsigned char in[4];
        put_le(in, code, sbits);
        const long double x = ref_value(src, code);
        const double engine = nx_dtype_load(src, in);
        t->checks++;
        if (!same_value((long double)engine, x) && t->failures++ < 12)
            print_error("load %s 0x%08x: got %.17g want %.21Lg\n", nx_dtype_name(src), code, engine, x);
        for (int d = 0; d < NX_DT_COUNT; d++) {
            const nx_dtype dst = (nx_dtype)d;
            tally_check(t, "store", src, dst, code, x, store_bits(dst, engine), ref_encode(r, dst, x));
        }
    }
}

/* Boundary values of every source type, loaded and stored to every dtype.
 * 8- and 16-bit sources are enumerated completely. */
static void test_all_pairs(void **state)
{
    const ref_ctx *r = *state;
    tally t = {0, 0};
    for (int s = 0; s < NX_DT_COUNT; s++) {
        const nx_dtype src = (nx_dtype)s;
        code_list codes = {NULL, 0, 0};
        if (src == NX_DT_FP32) fp32_sources(r, &codes);
        else if (src == NX_DT_INT32) int32_sources(r, 0, &codes);
        else if (src == NX_DT_UINT32) int32_sources(r, 1, &codes);
        else
            for (uint32_t c = 0; c < (1u << ref_bits(src)); c++) list_add(&codes, c);
        run_matrix_for_source(r, src, &codes, &t);
        free(codes.v);
    }
    print_message("all pairs: %lu checks\n", t.checks);
    assert_true(t.checks > 4000000);
    assert_int_equal(t.failures, 0);
}

/* The named boundary values of each source, against a reference that scans
 * every destination encoding (no bisection involved). */
static void test_boundaries_by_scan(void **state)
{
    const ref_ctx *r = *state;
    tally t = {0, 0};
    for (int s = 0; s < NX_DT_COUNT; s++) {
        const nx_dtype src = (nx_dtype)s;
        code_list codes = {NULL, 0, 0};
        const ref_float_fmt *f = ref_float(src);
        if (f != NULL) {
            const uint32_t sign = 1u << (f->bits - 1);
            const uint32_t min_normal = 1u << f->man_bits;
            const uint32_t one = (uint32_t)((1 << (f->exp_bits - 1)) - 1) << f->man_bits;
            const uint32_t list[] = {0, 1, 2, min_normal - 1, min_normal, min_normal + 1, one,
                                     f->max_code, f->max_code - 1, f->qnan,
                                     f->ieee ? f->inf_code : f->max_code,
                                     f->ieee ? f->inf_code | 1u : f->qnan};
            for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) {
                list_add(&codes, list[i]);
                list_add(&codes, list[i] | sign);
            }
        } else {
            const ref_int_fmt *fi = ref_int(src);
            const int64_t list[] = {fi->lo, fi->lo + 1, -1, 0, 1, fi->hi - 1, fi->hi};
            for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
                if (list[i] >= fi->lo) list_add(&codes, (uint32_t)((uint64_t)list[i] & bits_mask(fi->bits)));
        }
        for (size_t i = 0; i < codes.n; i++) {
            unsigned char in[4];
            put_le(in, codes.v[i], ref_bits(src));
            const long double x = ref_value(src, codes.v[i]);
            const double engine = nx_dtype_load(src, in);
            assert_true(same_value((long double)engine, x));
            for (int d = 0; d < NX_DT_COUNT; d++)
                tally_check(&t, "scan", src, (nx_dtype)d, codes.v[i], x, store_bits((nx_dtype)d, engine),
                            ref_encode_with(r, (nx_dtype)d, x, 1));
        }
        free(codes.v);
    }
    assert_int_equal(t.failures, 0);
}

/* ---- exhaustive round trips and the narrow helpers ------------------------------ */

typedef float (*widen_fn)(uint32_t);
typedef uint32_t (*narrow_fn)(float);
static float widen_bf16(uint32_t c) { return nx_bf16_to_f32((uint16_t)c); }
static float widen_fp16(uint32_t c) { return nx_fp16_to_f32((uint16_t)c); }
static float widen_e4m3(uint32_t c) { return nx_fp8_e4m3_to_f32((uint8_t)c); }
static float widen_e5m2(uint32_t c) { return nx_fp8_e5m2_to_f32((uint8_t)c); }
static uint32_t narrow_bf16(float f) { return nx_f32_to_bf16(f); }
static uint32_t narrow_fp16(float f) { return nx_f32_to_fp16(f); }
static uint32_t narrow_e4m3(float f) { return nx_f32_to_fp8_e4m3(f); }
static uint32_t narrow_e5m2(float f) { return nx_f32_to_fp8_e5m2(f); }

static const struct {
    nx_dtype dt;
    widen_fn widen;
    narrow_fn narrow;
} HELPERS[] = {
    {NX_DT_BF16, widen_bf16, narrow_bf16},
    {NX_DT_FP16, widen_fp16, narrow_fp16},
    {NX_DT_FP8_E4M3, widen_e4m3, narrow_e4m3},
    {NX_DT_FP8_E5M2, widen_e5m2, narrow_e5m2},
};

/* Every bf16/fp16/fp8 encoding widens exactly to fp32 and comes back
 * unchanged (NaNs come back as the canonical NaN with their sign), both through
 * the narrow helpers and through nx_dtype_load/nx_dtype_store via fp32 memory. */
static void test_exhaustive_round_trip(void **state)
{
    (void)state;
    tally t = {0, 0};
    for (size_t k = 0; k < sizeof HELPERS / sizeof HELPERS[0]; k++) {
        const ref_float_fmt *f = ref_float(HELPERS[k].dt);
        for (uint32_t c = 0; c < (1u << f->bits); c++) {
            const long double x = ref_decode(f, c);
            const uint32_t want = isnan(x) ? (c & (1u << (f->bits - 1))) | f->qnan : c;
            const float w = HELPERS[k].widen(c);
            t.checks++;
            if (!same_value((long double)w, x) && t.failures++ < 12)
                print_error("widen %s 0x%x: got %.9g want %.21Lg\n", nx_dtype_name(f->dt), c, w, x);
            if (isnan(w)) assert_true((f2u(w) & 0x00400000u) != 0); /* quiet */
            tally_check(&t, "helper round trip", f->dt, f->dt, c, x, HELPERS[k].narrow(w), want);

            unsigned char narrow_mem[2], fp32_mem[4];
            put_le(narrow_mem, c, f->bits);
            nx_dtype_store(NX_DT_FP32, fp32_mem, nx_dtype_load(f->dt, narrow_mem));
            const uint32_t as_fp32 = get_le(fp32_mem, 32);
            if (!isnan(x)) tally_check(&t, "to fp32", f->dt, NX_DT_FP32, c, x, as_fp32, f2u((float)x));
            else tally_check(&t, "to fp32", f->dt, NX_DT_FP32, c, x, as_fp32,
                             (c >> (f->bits - 1)) ? 0xffc00000u : 0x7fc00000u);
            tally_check(&t, "memory round trip", NX_DT_FP32, f->dt, as_fp32, x,
                        store_bits(f->dt, nx_dtype_load(NX_DT_FP32, fp32_mem)), want);
        }
    }
    assert_int_equal(t.failures, 0);
}

/* nx_f32_to_* on random floats and all ties, against the reference. */
static void test_narrow_helpers_random(void **state)
{
    const ref_ctx *r = *state;
    tally t = {0, 0};
    uint64_t s = 42;
    for (size_t k = 0; k < sizeof HELPERS / sizeof HELPERS[0]; k++) {
        const nx_dtype dt = HELPERS[k].dt;
        for (int i = 0; i < 200000; i++) {
            uint32_t b = (uint32_t)(rng_next(&s) >> 32);
            if (i & 1) b = (b & 0x807fffffu) | ((uint32_t)(127 - 30 + (b >> 23) % 50) << 23);
            const float f = u2f(b);
            tally_check(&t, "helper", NX_DT_FP32, dt, b, (long double)f, HELPERS[k].narrow(f),
                        ref_encode(r, dt, (long double)f));
        }
        const ref_table *tb = &r->tables[dt];
        for (size_t i = 0; i + 1 < tb->n; i++) {
            const float mid = (float)((tb->value[i] + tb->value[i + 1]) / 2);
            const float around[] = {mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY), -mid};
            for (int j = 0; j < 4; j++)
                tally_check(&t, "helper tie", NX_DT_FP32, dt, f2u(around[j]), (long double)around[j],
                            HELPERS[k].narrow(around[j]), ref_encode(r, dt, (long double)around[j]));
        }
    }
    assert_int_equal(t.failures, 0);
}

/* ---- hand-computed cases ----------------------------------------------------- */

typedef struct hand_case {
    nx_dtype dt;
    double value;
    uint32_t want;
} hand_case;

static void check_hand_cases(const hand_case *cases, size_t n)
{
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        const uint32_t got = store_bits(cases[i].dt, cases[i].value);
        if (got != cases[i].want) {
            failures++;
            print_error("%s <- %.17g: got 0x%x want 0x%x\n", nx_dtype_name(cases[i].dt), cases[i].value,
                        got, cases[i].want);
        }
    }
    assert_int_equal(failures, 0);
}

/* Exact halfway values go to the even encoding; a hair above goes up. */
static void test_rne_ties(void **state)
{
    (void)state;
    static const hand_case cases[] = {
        {NX_DT_BF16, 1.0 + 0x1p-8, 0x3f80},           /* tie 0x3f80 | 0x3f81 -> even */
        {NX_DT_BF16, 1.0 + 3 * 0x1p-8, 0x3f82},       /* tie 0x3f81 | 0x3f82 -> even */
        {NX_DT_BF16, 1.0 + 0x1p-8 + 0x1p-23, 0x3f81}, /* just above the tie */
        {NX_DT_BF16, 1.0 + 0x1p-8 - 0x1p-23, 0x3f80}, /* just below */
        {NX_DT_BF16, -(1.0 + 0x1p-8), 0xbf80},
        {NX_DT_BF16, 0x1p-134, 0x0000},               /* half the smallest subnormal */
        {NX_DT_BF16, 0x1p-134 + 0x1p-149, 0x0001},
        {NX_DT_BF16, 3 * 0x1p-134, 0x0002},
        {NX_DT_BF16, 0x1p-126 - 0x1p-149, 0x0080},    /* largest fp32 subnormal -> smallest normal */
        {NX_DT_FP16, 1.0 + 0x1p-11, 0x3c00},
        {NX_DT_FP16, 1.0 + 3 * 0x1p-11, 0x3c02},
        {NX_DT_FP16, 1.0 + 0x1p-11 + 0x1p-23, 0x3c01},
        {NX_DT_FP16, 2049.0, 0x6800},
        {NX_DT_FP16, 2050.0, 0x6801},
        {NX_DT_FP16, 2051.0, 0x6802},
        {NX_DT_FP16, 0x1p-24, 0x0001},
        {NX_DT_FP16, 0x1p-25, 0x0000},
        {NX_DT_FP16, 0x1p-25 + 0x1p-40, 0x0001},
        {NX_DT_FP16, 3 * 0x1p-25, 0x0002},
        {NX_DT_FP16, 0x1p-14 - 0x1p-25, 0x0400},      /* tie 0x03ff | 0x0400 */
        {NX_DT_FP16, -0x1p-26, 0x8000},
        {NX_DT_FP8_E4M3, 1.0, 0x38},
        {NX_DT_FP8_E4M3, 1.0625, 0x38},
        {NX_DT_FP8_E4M3, 1.1875, 0x3a},
        {NX_DT_FP8_E4M3, 1.0625 + 0x1p-20, 0x39},
        {NX_DT_FP8_E4M3, 432.0, 0x7e},                /* tie 416 (0x7d) | 448 (0x7e) */
        {NX_DT_FP8_E4M3, 0x1p-10, 0x00},
        {NX_DT_FP8_E4M3, 0x1p-10 + 0x1p-20, 0x01},
        {NX_DT_FP8_E4M3, 3 * 0x1p-10, 0x02},
        {NX_DT_FP8_E4M3, 7 * 0x1p-9, 0x07},
        {NX_DT_FP8_E4M3, 15 * 0x1p-10, 0x08},         /* tie 0x07 | 0x08 */
        {NX_DT_FP8_E4M3, 240.0, 0x77},
        {NX_DT_FP8_E4M3, 256.0, 0x78},
        {NX_DT_FP8_E5M2, 1.0, 0x3c},
        {NX_DT_FP8_E5M2, 1.125, 0x3c},
        {NX_DT_FP8_E5M2, 1.375, 0x3e},
        {NX_DT_FP8_E5M2, 53248.0, 0x7a},              /* tie 49152 (0x7a) | 57344 (0x7b) */
        {NX_DT_FP8_E5M2, 0x1p-16, 0x01},
        {NX_DT_FP8_E5M2, 0x1p-17, 0x00},
        {NX_DT_FP8_E5M2, 3 * 0x1p-17, 0x02},
        {NX_DT_FP32, 16777217.0, 0x4b800000u},        /* int32 tie -> even */
        {NX_DT_FP32, 16777219.0, 0x4b800002u},
        {NX_DT_FP32, 2147483584.0, 0x4f000000u},      /* tie 2^31-128 | 2^31 */
        {NX_DT_FP32, 2147483583.0, 0x4effffffu},
        {NX_DT_FP32, 0x1p-150, 0x00000000u},
        {NX_DT_FP32, -0x1p-150, 0x80000000u},
        {NX_DT_FP32, 3 * 0x1p-150, 0x00000002u},
    };
    check_hand_cases(cases, sizeof cases / sizeof cases[0]);
}

/* An int32 engine value is rounded once from its exact value: rounding it to
 * fp32 first would land on a tie and round the wrong way. */
static void test_double_rounding_trap(void **state)
{
    (void)state;
    static const hand_case cases[] = {
        {NX_DT_BF16, 16777217.0, 0x4b80},  /* 2^24 + 1 -> 2^24 */
        {NX_DT_BF16, 16842752.0, 0x4b80},  /* 2^24 + 2^16: a bf16 tie -> even */
        {NX_DT_BF16, 16842753.0, 0x4b81},  /* via fp32 it would be the tie above -> 0x4b80 */
        {NX_DT_BF16, -16842753.0, 0xcb81},
        {NX_DT_BF16, 16973824.0, 0x4b82},  /* 2^24 + 3*2^16: tie -> even */
        {NX_DT_BF16, 2147483647.0, 0x4f00},
        {NX_DT_BF16, 4294967295.0, 0x4f80},
        {NX_DT_BF16, 2155872257.0, 0x4f01}, /* 2^31 + 2^23 + 1: just above a bf16 tie */
        {NX_DT_FP32, 2147483647.0, 0x4f000000u},
        {NX_DT_FP32, 4294967295.0, 0x4f800000u},
        {NX_DT_FP32, -2147483648.0, 0xcf000000u},
        {NX_DT_FP16, 16777217.0, 0x7c00},
    };
    check_hand_cases(cases, sizeof cases / sizeof cases[0]);
    /* through memory too: int32 -> bf16 */
    unsigned char in[4], out[2];
    put_le(in, 16842753u, 32);
    nx_dtype_store(NX_DT_BF16, out, nx_dtype_load(NX_DT_INT32, in));
    assert_int_equal(get_le(out, 16), 0x4b81);
}

static void test_overflow_and_saturation(void **state)
{
    (void)state;
    static const hand_case cases[] = {
        {NX_DT_FP8_E4M3, 448.0, 0x7e},
        {NX_DT_FP8_E4M3, 449.0, 0x7e},
        {NX_DT_FP8_E4M3, 464.0, 0x7e},
        {NX_DT_FP8_E4M3, 465.0, 0x7e},
        {NX_DT_FP8_E4M3, 480.0, 0x7e},
        {NX_DT_FP8_E4M3, 1e6, 0x7e},
        {NX_DT_FP8_E4M3, 3.0e38, 0x7e},
        {NX_DT_FP8_E4M3, -464.0, 0xfe},
        {NX_DT_FP8_E4M3, INFINITY, 0x7e},
        {NX_DT_FP8_E4M3, -INFINITY, 0xfe},
        {NX_DT_FP8_E4M3, NAN, 0x7f},
        {NX_DT_FP8_E4M3, -NAN, 0xff},
        {NX_DT_FP8_E4M3, -0.0, 0x80},
        {NX_DT_FP8_E5M2, 57344.0, 0x7b},
        {NX_DT_FP8_E5M2, 61439.0, 0x7b},
        {NX_DT_FP8_E5M2, 61439.99609375, 0x7b},
        {NX_DT_FP8_E5M2, 61440.0, 0x7c},
        {NX_DT_FP8_E5M2, -61440.0, 0xfc},
        {NX_DT_FP8_E5M2, 1e6, 0x7c},
        {NX_DT_FP8_E5M2, INFINITY, 0x7c},
        {NX_DT_FP8_E5M2, NAN, 0x7e},
        {NX_DT_FP8_E5M2, -NAN, 0xfe},
        {NX_DT_FP16, 65504.0, 0x7bff},
        {NX_DT_FP16, 65519.0, 0x7bff},
        {NX_DT_FP16, 65519.99609375, 0x7bff},
        {NX_DT_FP16, 65520.0, 0x7c00},
        {NX_DT_FP16, -65520.0, 0xfc00},
        {NX_DT_FP16, 1e9, 0x7c00},
        {NX_DT_FP16, NAN, 0x7e00},
        {NX_DT_FP16, -NAN, 0xfe00},
        {NX_DT_FP16, -0.0, 0x8000},
        {NX_DT_BF16, 3.3895313892515355e38, 0x7f7f},
        {NX_DT_BF16, 0x1.fefffep127, 0x7f7f},         /* fp32 0x7f7f7fff */
        {NX_DT_BF16, 0x1.ffp127, 0x7f80},             /* halfway to 2^128 -> Inf */
        {NX_DT_BF16, 0x1.fffffep127, 0x7f80},         /* fp32 max */
        {NX_DT_BF16, -INFINITY, 0xff80},
        {NX_DT_BF16, NAN, 0x7fc0},
        {NX_DT_BF16, -NAN, 0xffc0},
        {NX_DT_BF16, -0.0, 0x8000},
        {NX_DT_FP32, 0x1.fffffep127, 0x7f7fffffu},
        {NX_DT_FP32, 0x1.ffffffp127, 0x7f800000u},    /* only a double can hold it */
        {NX_DT_FP32, NAN, 0x7fc00000u},
        {NX_DT_FP32, -NAN, 0xffc00000u},
        {NX_DT_FP32, -0.0, 0x80000000u},
    };
    check_hand_cases(cases, sizeof cases / sizeof cases[0]);
}

static void test_integer_stores(void **state)
{
    (void)state;
    static const hand_case cases[] = {
        {NX_DT_INT8, 2.5, 2},          {NX_DT_INT8, 3.5, 4},
        {NX_DT_INT8, -2.5, 0xfe},      {NX_DT_INT8, -3.5, 0xfc},
        {NX_DT_INT8, 0.5, 0},          {NX_DT_INT8, 1.5, 2},
        {NX_DT_INT8, 0.49999997, 0},   {NX_DT_INT8, -0.5, 0},
        {NX_DT_INT8, 126.5, 126},      {NX_DT_INT8, 127.5, 127},
        {NX_DT_INT8, -128.5, 0x80},    {NX_DT_INT8, 300.0, 127},
        {NX_DT_INT8, -1e9, 0x80},      {NX_DT_INT8, NAN, 0},
        {NX_DT_INT8, INFINITY, 127},   {NX_DT_INT8, -INFINITY, 0x80},
        {NX_DT_INT8, -0.0, 0},         {NX_DT_INT8, -1.0, 0xff},
        {NX_DT_UINT8, -0.5, 0},        {NX_DT_UINT8, -0.7, 0},
        {NX_DT_UINT8, -1.0, 0},        {NX_DT_UINT8, 254.5, 254},
        {NX_DT_UINT8, 255.5, 255},     {NX_DT_UINT8, 256.0, 255},
        {NX_DT_UINT8, INFINITY, 255},  {NX_DT_UINT8, -INFINITY, 0},
        {NX_DT_UINT8, NAN, 0},         {NX_DT_UINT8, 0.5000001, 1},
        {NX_DT_INT16, 32767.5, 0x7fff}, {NX_DT_INT16, -32768.5, 0x8000},
        {NX_DT_INT16, 40000.0, 0x7fff}, {NX_DT_INT16, -1.0, 0xffff},
        {NX_DT_INT16, -32767.5, 0x8000},
        {NX_DT_UINT16, 65535.5, 0xffff}, {NX_DT_UINT16, 65534.5, 0xfffe},
        {NX_DT_UINT16, 70000.0, 0xffff}, {NX_DT_UINT16, -5.0, 0},
        {NX_DT_INT32, 2147483648.0, 0x7fffffffu}, {NX_DT_INT32, -2147483648.0, 0x80000000u},
        {NX_DT_INT32, -3e9, 0x80000000u},         {NX_DT_INT32, 1e10, 0x7fffffffu},
        {NX_DT_INT32, 2147483646.5, 0x7ffffffeu}, {NX_DT_INT32, 2147483647.5, 0x7fffffffu},
        {NX_DT_INT32, -2147483647.5, 0x80000000u}, {NX_DT_INT32, -2147483648.5, 0x80000000u},
        {NX_DT_INT32, 16777217.0, 16777217u},     {NX_DT_INT32, -7.5, 0xfffffff8u},
        {NX_DT_INT32, NAN, 0},                    {NX_DT_INT32, -INFINITY, 0x80000000u},
        {NX_DT_UINT32, 4294967296.0, 0xffffffffu}, {NX_DT_UINT32, 4294967294.5, 0xfffffffeu},
        {NX_DT_UINT32, 4294967295.5, 0xffffffffu}, {NX_DT_UINT32, -0.5, 0},
        {NX_DT_UINT32, 1e20, 0xffffffffu},         {NX_DT_UINT32, 2147483648.0, 0x80000000u},
        {NX_DT_UINT32, INFINITY, 0xffffffffu},     {NX_DT_UINT32, -INFINITY, 0},
    };
    check_hand_cases(cases, sizeof cases / sizeof cases[0]);

    /* integer -> integer through memory saturates */
    unsigned char in[4];
    put_le(in, 0xffffffffu, 32);
    assert_int_equal(store_bits(NX_DT_UINT8, nx_dtype_load(NX_DT_INT32, in)), 0);
    assert_int_equal(store_bits(NX_DT_INT32, nx_dtype_load(NX_DT_UINT32, in)), 0x7fffffffu);
    assert_int_equal(store_bits(NX_DT_UINT16, nx_dtype_load(NX_DT_UINT32, in)), 0xffff);
    put_le(in, 0x8000, 16);
    assert_int_equal(store_bits(NX_DT_INT8, nx_dtype_load(NX_DT_INT16, in)), 0x80);
    assert_int_equal(store_bits(NX_DT_UINT32, nx_dtype_load(NX_DT_INT16, in)), 0);
    put_le(in, 0xffff, 16);
    assert_int_equal(store_bits(NX_DT_INT16, nx_dtype_load(NX_DT_UINT16, in)), 0x7fff);
}

/* Little-endian layout, unaligned addresses, exact loads of literal bytes. */
static void test_memory_layout(void **state)
{
    (void)state;
    unsigned char buf[16];
    memset(buf, 0, sizeof buf);
    nx_dtype_store(NX_DT_INT32, buf + 1, 16909060.0); /* 0x01020304 */
    assert_int_equal(buf[1], 0x04);
    assert_int_equal(buf[2], 0x03);
    assert_int_equal(buf[3], 0x02);
    assert_int_equal(buf[4], 0x01);
    assert_true(nx_dtype_load(NX_DT_INT32, buf + 1) == 16909060.0);
    nx_dtype_store(NX_DT_FP32, buf + 3, 1.0);
    static const unsigned char one_fp32[4] = {0x00, 0x00, 0x80, 0x3f};
    assert_memory_equal(buf + 3, one_fp32, 4);
    nx_dtype_store(NX_DT_BF16, buf + 7, -2.0);
    assert_int_equal(buf[7], 0x00);
    assert_int_equal(buf[8], 0xc0);
    const unsigned char fp16_bytes[3] = {0xaa, 0x00, 0x3c}; /* 1.0 at offset 1 */
    assert_true(nx_dtype_load(NX_DT_FP16, fp16_bytes + 1) == 1.0);
    const unsigned char e4m3 = 0xfe, e5m2 = 0x7b, u16[2] = {0x34, 0x12};
    assert_true(nx_dtype_load(NX_DT_FP8_E4M3, &e4m3) == -448.0);
    assert_true(nx_dtype_load(NX_DT_FP8_E5M2, &e5m2) == 57344.0);
    assert_true(nx_dtype_load(NX_DT_UINT16, u16) == 4660.0);
    assert_true(nx_dtype_load(NX_DT_INT16, u16) == 4660.0);
    const unsigned char neg16[2] = {0x00, 0x80}, u32[4] = {0xff, 0xff, 0xff, 0xff};
    assert_true(nx_dtype_load(NX_DT_INT16, neg16) == -32768.0);
    assert_true(nx_dtype_load(NX_DT_UINT32, u32) == 4294967295.0);
    assert_true(nx_dtype_load(NX_DT_INT32, u32) == -1.0);
    const unsigned char i8 = 0x80;
    assert_true(nx_dtype_load(NX_DT_INT8, &i8) == -128.0);
    assert_true(nx_dtype_load(NX_DT_UINT8, &i8) == 128.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_sizes_predicates),
        cmocka_unit_test(test_invalid_code_is_harmless),
        cmocka_unit_test(test_reference_anchors),
        cmocka_unit_test(test_reference_self_check),
        cmocka_unit_test(test_all_pairs),
        cmocka_unit_test(test_boundaries_by_scan),
        cmocka_unit_test(test_exhaustive_round_trip),
        cmocka_unit_test(test_narrow_helpers_random),
        cmocka_unit_test(test_rne_ties),
        cmocka_unit_test(test_double_rounding_trap),
        cmocka_unit_test(test_overflow_and_saturation),
        cmocka_unit_test(test_integer_stores),
        cmocka_unit_test(test_memory_layout),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
