/* Internal to isa/dtype*.c: the element conversions of the data types
 * (docs/parts/dtypes.md), as static inline routines so that the element
 * load/store (dtype.c) and the run converters (dtype_run.c) share one copy
 * of every rule. Not a public header. */
#ifndef NXSIM_ISA_DTYPE_CODEC_H
#define NXSIM_ISA_DTYPE_CODEC_H

#include <stdint.h>

#include "isa/bytes.h"

/* ---- generic rounding to a binary float format ---------------------------- */

/* Rounds `value` once, to nearest with ties to even, to the binary float
 * format with `exp_bits` exponent bits (bias 2^(E-1)-1) and `man_bits`
 * stored mantissa bits, keeping subnormals, and returns its encoding
 * (sign at bit E+M). `has_inf` selects the format family:
 *   1: IEEE style (fp32, bf16, fp16, e5m2): exponent field all ones is Inf/NaN;
 *      a value that rounds past the largest finite goes to +-Inf;
 *      canonical NaN = exponent all ones, top mantissa bit set.
 *   0: OCP e4m3fn style: only exponent and mantissa all ones is NaN (that is
 *      also the canonical NaN); the all-ones exponent with a smaller mantissa
 *      is a normal binade; values past max finite and +-Inf saturate to it.
 * The parameters are compile-time constants at every call, so each call site
 * becomes a specialised straight-line routine. */
static inline uint32_t encode_binary(double value, const int exp_bits, const int man_bits,
                                     const int has_inf)
{
    const uint64_t d = nx_f64_bits(value);
    const uint32_t sign = (uint32_t)(d >> 63) << (exp_bits + man_bits);
    const uint32_t dexp = (uint32_t)(d >> 52) & 0x7ffu;
    const uint64_t dman = d & ((UINT64_C(1) << 52) - 1);
    const int bias = (1 << (exp_bits - 1)) - 1;
    const uint32_t man_mask = (1u << man_bits) - 1;
    const uint32_t inf_bits = ((1u << exp_bits) - 1) << man_bits;
    const uint32_t max_finite = has_inf ? inf_bits - 1 : (inf_bits | man_mask) - 1;
    const uint32_t nan_bits = has_inf ? inf_bits | (1u << (man_bits - 1)) : inf_bits | man_mask;
    const uint32_t overflow_bits = has_inf ? inf_bits : max_finite;

    if (dexp == 0x7ffu) return sign | (dman != 0 ? nan_bits : overflow_bits);
    /* Zero, or a double subnormal (< 2^-1022): far below half the smallest
     * subnormal of every target (fp32: 2^-149), so it rounds to a signed zero. */
    if (dexp == 0) return sign;

    const int e = (int)dexp - 1023; /* value = 1.dman * 2^e */
    /* 2^(bias+2) exceeds max finite of every family (IEEE max < 2^(bias+1),
     * e4m3fn max < 2^(bias+2)); bail out before the shifts below can overflow. */
    if (e > bias + 1) return sign | overflow_bits;

    const int emin = 1 - bias; /* exponent of the smallest normal */
    const uint64_t sig = dman | (UINT64_C(1) << 52);
    int shift = 52 - man_bits;      /* bits of sig below the target's last place */
    uint32_t exp_field_minus_1 = 0; /* subnormal results: the exponent field comes from the carry */
    if (e < emin) {
        shift += emin - e;
        /* sig < 2^53 <= half a unit in the last place: rounds to zero. */
        if (shift > 54) return sign;
    } else {
        exp_field_minus_1 = (uint32_t)(e + bias - 1);
    }
    /* Round to nearest even without branches: add just under half a unit in
     * the last place, plus one more when the kept part is odd (so an exact
     * half rounds up only to an even result), then drop the low bits. */
    const uint64_t half = UINT64_C(1) << (shift - 1);
    const uint64_t q = (sig + (half - 1) + ((sig >> shift) & 1)) >> shift;
    /* For normals q is 1.mantissa (2^M <= q <= 2^(M+1)), so adding it to
     * (field-1) << M yields the field plus mantissa, and a rounding carry moves
     * into the exponent. For subnormals q <= 2^M is the encoding itself
     * (q == 2^M is the smallest normal). */
    const uint64_t mag = ((uint64_t)exp_field_minus_1 << man_bits) + q;
    if (mag > max_finite) return sign | overflow_bits;
    return sign | (uint32_t)mag;
}

static inline uint32_t encode_fp32(double v) { return encode_binary(v, 8, 23, 1); }
static inline uint32_t encode_bf16(double v) { return encode_binary(v, 8, 7, 1); }
static inline uint32_t encode_fp16(double v) { return encode_binary(v, 5, 10, 1); }
static inline uint32_t encode_e4m3(double v) { return encode_binary(v, 4, 3, 0); }
static inline uint32_t encode_e5m2(double v) { return encode_binary(v, 5, 2, 1); }

/* fp32 store. An engine value that is already a float (the usual case) is
 * stored as is; only exact int32s beyond 2^24, NaNs and out-of-range doubles
 * take the generic rounding. The (float) conversion is only used where it is
 * exact, so the result does not depend on the FP rounding mode. */
static inline uint32_t store_bits_fp32(double v)
{
    const float f = (float)v;
    if ((double)f == v) return nx_f32_bits(f);
    return encode_fp32(v);
}

/* bf16 from an exact float: add just under half a bf16 ulp (plus one when the
 * kept part is odd, giving ties-to-even) and truncate. Carries propagate into
 * the exponent, so subnormals, binade changes and overflow to Inf all come out
 * right; this is encode_bf16() for fp32-representable inputs. */
static inline uint16_t bf16_from_f32_bits(uint32_t b)
{
    if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((b >> 16) & 0x8000u) | 0x7fc0u);
    return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

/* bf16 store. The bit trick is only a single rounding when the engine value is
 * exactly a float; other values (an int32 such as 16842753, NaN, anything
 * outside the float range) take the generic path from the exact double. */
static inline uint16_t store_bits_bf16(double v)
{
    const float f = (float)v;
    if ((double)f == v) return bf16_from_f32_bits(nx_f32_bits(f));
    return (uint16_t)encode_bf16(v);
}

/* ---- decoding narrow floats (exact) --------------------------------------- */

/* Widens an encoding of the format (E, M, family as in encode_binary) to the
 * float with the same value. A NaN comes back as the canonical quiet NaN
 * with its sign (docs/parts/dtypes.md, "NaN -> any float"), as the 16-bit
 * formats do in isa/bytes.h. Used for the fp8 formats. */
static inline float decode_binary(uint32_t bits, const int exp_bits, const int man_bits,
                                  const int has_inf)
{
    const int bias = (1 << (exp_bits - 1)) - 1;
    const uint32_t man_mask = (1u << man_bits) - 1;
    const uint32_t exp_all = (1u << exp_bits) - 1;
    const uint32_t sign = ((bits >> (exp_bits + man_bits)) & 1u) << 31;
    const uint32_t ef = (bits >> man_bits) & exp_all;
    const uint32_t man = bits & man_mask;

    if (ef == 0) {
        /* Subnormal: man * 2^(1-bias-M); the product is exact. The scale is a
         * power of two built from its float encoding. */
        const float scale = nx_f32_from_bits((uint32_t)(127 + 1 - bias - man_bits) << 23);
        const float mag = (float)man * scale;
        return sign ? -mag : mag;
    }
    if (ef == exp_all) {
        if (has_inf) return nx_f32_from_bits(sign | (man == 0 ? 0x7f800000u : NX_F32_CANONICAL_NAN));
        if (man == man_mask) return nx_f32_from_bits(sign | NX_F32_CANONICAL_NAN);
    }
    return nx_f32_from_bits(sign | ((ef + (uint32_t)(127 - bias)) << 23) | (man << (23 - man_bits)));
}

/* ---- integers -------------------------------------------------------------- */

/* Rounds to nearest, ties to even, then saturates to [lo, hi]; NaN -> 0.
 * Done in integer arithmetic so it does not depend on the FP rounding mode.
 * lo and hi are the int8..uint32 bounds, all exact doubles. */
static inline int64_t round_saturate(double v, int64_t lo, int64_t hi)
{
    if (v != v) return 0;
    if (v >= (double)hi + 1.0) return hi;
    if (v <= (double)lo - 1.0) return lo;
    /* Now |v| < 2^32 + 1: the truncation is exact and in range. */
    int64_t t = (int64_t)v;
    const double frac = v - (double)t; /* exact, in (-1, 1), same sign as v */
    const int64_t odd = t & 1;
    /* Written as sums of comparisons so it compiles without branches. */
    t += (int64_t)(frac > 0.5) + (odd & (int64_t)(frac == 0.5));
    t -= (int64_t)(frac < -0.5) + (odd & (int64_t)(frac == -0.5));
    return t < lo ? lo : (t > hi ? hi : t);
}

#endif
