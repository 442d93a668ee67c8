/* Internal to isa/: the element routines of the data types (one dtype
 * fixed per call site, so the switch folds away) and the four-lane forms
 * of the float conversions, shared by the run converters (dtype_run.c) and
 * the fused elementwise kernels (ew_fused.c). Rules: docs/parts/dtypes.md;
 * every lane form gives the bits of its element routine
 * (tests/test_hot_paths.c). */
#ifndef NXSIM_ISA_DTYPE_LANES_H
#define NXSIM_ISA_DTYPE_LANES_H

#include <stdint.h>
#include <string.h>

#include "isa/bytes.h"
#include "isa/dtype.h"
#include "isa/dtype_codec.h"
#include "isa/vec4.h"

typedef uint8_t nx_v4b __attribute__((vector_size(4)));
typedef int8_t nx_v4sb __attribute__((vector_size(4)));
typedef int16_t nx_v4sh __attribute__((vector_size(8)));

/* ---- element routines (strided runs, tails, groups a kernel does not cover) */

static inline double elem_load(nx_dtype dt, const unsigned char *p) {
    switch (dt) {
    case NX_DT_FP32: return (double)nx_f32_from_bits(nx_load_le32(p));
    case NX_DT_BF16: return (double)nx_bf16_bits_to_f32(nx_load_le16(p));
    case NX_DT_FP16: return (double)nx_fp16_bits_to_f32(nx_load_le16(p));
    case NX_DT_FP8_E4M3: return (double)decode_binary(p[0], 4, 3, 0);
    case NX_DT_FP8_E5M2: return (double)decode_binary(p[0], 5, 2, 1);
    case NX_DT_INT8: return (double)(int8_t)p[0];
    case NX_DT_UINT8: return (double)p[0];
    case NX_DT_INT16: return (double)(int16_t)nx_load_le16(p);
    case NX_DT_UINT16: return (double)nx_load_le16(p);
    case NX_DT_INT32: return (double)(int32_t)nx_load_le32(p);
    case NX_DT_UINT32: return (double)nx_load_le32(p);
    case NX_DT_COUNT: break;
    }
    return 0.0;
}

static inline void elem_store(nx_dtype dt, unsigned char *p, double v) {
    switch (dt) {
    case NX_DT_FP32: nx_store_le32(p, store_bits_fp32(v)); return;
    case NX_DT_BF16: nx_store_le16(p, store_bits_bf16(v)); return;
    case NX_DT_FP16: nx_store_le16(p, (uint16_t)encode_fp16(v)); return;
    case NX_DT_FP8_E4M3: p[0] = (unsigned char)encode_e4m3(v); return;
    case NX_DT_FP8_E5M2: p[0] = (unsigned char)encode_e5m2(v); return;
    case NX_DT_INT8: p[0] = (unsigned char)round_saturate(v, INT8_MIN, INT8_MAX); return;
    case NX_DT_UINT8: p[0] = (unsigned char)round_saturate(v, 0, UINT8_MAX); return;
    case NX_DT_INT16: nx_store_le16(p, (uint16_t)round_saturate(v, INT16_MIN, INT16_MAX)); return;
    case NX_DT_UINT16: nx_store_le16(p, (uint16_t)round_saturate(v, 0, UINT16_MAX)); return;
    case NX_DT_INT32: nx_store_le32(p, (uint32_t)round_saturate(v, INT32_MIN, INT32_MAX)); return;
    case NX_DT_UINT32: nx_store_le32(p, (uint32_t)round_saturate(v, 0, UINT32_MAX)); return;
    case NX_DT_COUNT: return;
    }
}

/* The kernels below handle memory as little-endian lanes; a big-endian
 * host takes the element routines for everything. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NX_LANES_LE 1
#else
#define NX_LANES_LE 0
#endif

/* ---- four-lane float conversions ---------------------------------------- */

/* bf16 -> fp32 bits: the upper half; a NaN becomes the canonical quiet NaN
 * with its sign (nx_bf16_bits_to_f32). */
NX_V4_INLINE nx_v4i bf16_lanes(nx_v4i u) {
    u <<= 16;
    nx_v4i nan = (u & INT32_MAX) > 0x7f800000;
    return nx_v4i_select(nan, (u & INT32_MIN) | (int32_t)NX_F32_CANONICAL_NAN, u);
}

/* fp16 -> fp32 bits (nx_fp16_bits_to_f32): subnormals as the exact m * 2^-24. */
NX_V4_INLINE nx_v4i fp16_lanes(nx_v4i h) {
    const nx_v4i sign = (h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    const nx_v4i normal = sign | ((e + 112) << 23) | (m << 13);
    const nx_v4i special = sign | nx_v4i_select(m != 0, (nx_v4i){0} + (int32_t)NX_F32_CANONICAL_NAN,
                                                (nx_v4i){0} + 0x7f800000);
    const nx_v4i sub = sign | nx_v4f_bits(__builtin_convertvector(m, nx_v4f) * (1.0f / 16777216.0f));
    return nx_v4i_select(e == 0, sub, nx_v4i_select(e == 0x1f, special, normal));
}

/* e4m3 -> fp32 bits (decode_binary(b, 4, 3, 0)): 0x7f / 0xff are the NaNs. */
NX_V4_INLINE nx_v4i e4m3_lanes(nx_v4i b) {
    const nx_v4i sign = (b & 0x80) << 24, ef = (b >> 3) & 0xf, m = b & 7;
    const nx_v4i normal = sign | ((ef + 120) << 23) | (m << 20);
    const nx_v4i sub = sign | nx_v4f_bits(__builtin_convertvector(m, nx_v4f) * (1.0f / 512.0f));
    const nx_v4i nan = sign | (int32_t)NX_F32_CANONICAL_NAN;
    return nx_v4i_select((b & 0x7f) == 0x7f, nan, nx_v4i_select(ef == 0, sub, normal));
}

/* encode_binary(f, E, M, has_inf) for floats f of magnitude bits a that are
 * zero, +-Inf, or at least the format's smallest normal (not NaN): round to
 * nearest even on the fp32 bit pattern (as bf16_from_f32_bits does), then
 * rebias the exponent; a rounding carry moves into the exponent, and past
 * the largest finite value gives the format's overflow encoding (Inf, or
 * the saturated maximum of e4m3), as +-Inf does. *outside marks the lanes
 * it does not cover (magnitudes between zero and the smallest normal). */
NX_V4_INLINE nx_v4i narrow_lanes(nx_v4i bits, const int exp_bits, const int man_bits, const int has_inf,
                                 nx_v4i *outside) {
    const int32_t bias = (1 << (exp_bits - 1)) - 1;
    const int32_t man_mask = (1 << man_bits) - 1;
    const int32_t inf_bits = ((1 << exp_bits) - 1) << man_bits;
    const int32_t max_finite = has_inf ? inf_bits - 1 : (inf_bits | man_mask) - 1;
    const int32_t overflow_bits = has_inf ? inf_bits : max_finite;
    const int32_t min_normal = (127 + 1 - bias) << 23;
    const int shift = 23 - man_bits;
    const nx_v4i a = bits & INT32_MAX;
    const nx_v4u au = (nx_v4u)a;
    const nx_v4i q = (nx_v4i)((au + ((1u << (shift - 1)) - 1) + ((au >> shift) & 1u)) >> shift);
    const nx_v4i mag = q - ((127 - bias) << man_bits);
    nx_v4i r = nx_v4i_select(mag > max_finite, (nx_v4i){0} + overflow_bits, mag);
    r &= ~(a == 0);
    *outside = (a != 0) & (a < min_normal);
    return r | (nx_v4i)(((nx_v4u)bits >> 31) << (exp_bits + man_bits));
}

/* ---- four float-dtype elements <-> four fp32 lanes (the fused kernels) ---- */

static inline int nx_dtype_is_float_code(unsigned dt) { return dt <= NX_DT_FP8_E5M2; }

/* Four consecutive elements of a float dtype at p as fp32 lanes, each
 * lane its element's engine value, except that a NaN lane may hold another
 * NaN (callers redo a group with a NaN by the element routines). */
NX_V4_INLINE nx_v4f float_lanes_load(nx_dtype dt, const unsigned char *p) {
    nx_v4i x;
    switch (dt) {
    case NX_DT_FP32: {
        nx_v4f f;
        memcpy(&f, p, sizeof f);
        return f;
    }
    case NX_DT_BF16:
    case NX_DT_FP16: {
        nx_v4h h;
        memcpy(&h, p, sizeof h);
        x = __builtin_convertvector(h, nx_v4i);
        return nx_v4f_from_bits(dt == NX_DT_BF16 ? x << 16 : fp16_lanes(x));
    }
    default: { /* the fp8 formats */
        nx_v4b b;
        memcpy(&b, p, sizeof b);
        x = __builtin_convertvector(b, nx_v4i);
        return nx_v4f_from_bits(dt == NX_DT_FP8_E5M2 ? fp16_lanes(x << 8) : e4m3_lanes(x));
    }
    }
}

/* Four fp32 values, none NaN, stored as four consecutive elements of the
 * float dtype dt at p, as elem_store would. Returns nonzero, having
 * written nothing, when a lane needs elem_store (a magnitude between the
 * narrow format's subnormals). */
NX_V4_INLINE int float_lanes_store(nx_dtype dt, unsigned char *p, nx_v4f f) {
    const nx_v4i bits = nx_v4f_bits(f);
    nx_v4i r, outside;
    switch (dt) {
    case NX_DT_FP32: memcpy(p, &f, sizeof f); return 0;
    case NX_DT_BF16: {
        const nx_v4u u = (nx_v4u)bits;
        const nx_v4h h = __builtin_convertvector((u + 0x7fffu + ((u >> 16) & 1u)) >> 16, nx_v4h);
        memcpy(p, &h, sizeof h);
        return 0;
    }
    case NX_DT_FP16: r = narrow_lanes(bits, 5, 10, 1, &outside); break;
    case NX_DT_FP8_E5M2: r = narrow_lanes(bits, 5, 2, 1, &outside); break;
    default: r = narrow_lanes(bits, 4, 3, 0, &outside); break; /* e4m3 */
    }
    if (nx_v4i_any(outside)) return 1;
    if (dt == NX_DT_FP16) {
        const nx_v4h h = __builtin_convertvector(r, nx_v4h);
        memcpy(p, &h, sizeof h);
    } else {
        const nx_v4b b = __builtin_convertvector(r, nx_v4b);
        memcpy(p, &b, sizeof b);
    }
    return 0;
}

#endif /* NXSIM_ISA_DTYPE_LANES_H */
