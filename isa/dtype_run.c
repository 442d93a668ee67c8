/* Run converters (isa/dtype.h): the element rules of docs/parts/dtypes.md
 * applied to n elements at once, bit for bit what nx_dtype_load and
 * nx_dtype_store give element by element.
 *
 * The dtype switch is outside the loops. Contiguous runs go through
 * four-lane kernels (isa/vec4.h); strided runs and the last n % 4 elements
 * through the element routines of dtype_lanes.h, the ones nx_dtype_store
 * uses. A store kernel converts a group of four engine values with a rule
 * that is exact for plain fp32 values (and, for the 8/16-bit floats, those
 * of magnitude zero or at least the format's smallest normal); a group with
 * any other value (NaN, +-Inf, an integer beyond 2^24, a value between the
 * format's subnormals, a double outside fp32's range) is redone by the
 * element routine. The kernels use the hardware double -> float conversion
 * only to test exactness or where it is exact, and integer arithmetic for
 * every rounding, so no result depends on the FP rounding mode. */
#include <string.h>

#include "isa/bytes.h"
#include "isa/dtype.h"
#include "isa/dtype_codec.h"
#include "isa/dtype_lanes.h"
#include "isa/vec4.h"

/* ---- element routines (strided runs, tails) --------------------------------- */

/* The element loop with the dtype fixed at each call site (the switch in
 * elem_load folds away once inlined). */
#define LOAD_ELEMS(DT, FROM)                                                                  \
    for (uint64_t i_ = (FROM); i_ < n; i_++) out[i_] = elem_load(DT, s + (int64_t)i_ * step)

#define STORE_ELEMS(DT, FROM, TO)                                                             \
    for (uint64_t i_ = (FROM); i_ < (TO); i_++) elem_store(DT, d + (int64_t)i_ * step, in[i_])

/* ---- load kernels: four elements -> four engine values (all exact) ---------- */

NX_V4_INLINE void widen_i32_lanes(double *out, nx_v4i x) {
    nx_v4d d = __builtin_convertvector(x, nx_v4d);
    memcpy(out, &d, sizeof d);
}

/* Loads groups of four from a contiguous run; returns how many it did. */
NX_V4_INLINE uint64_t load_lanes(nx_dtype dt, const unsigned char *s, uint64_t n, double *out) {
    const uint64_t full = n & ~(uint64_t)3;
    if (!NX_LANES_LE) return 0;
    switch (dt) {
    case NX_DT_FP32:
        for (uint64_t i = 0; i < full; i += 4) {
            nx_v4f f;
            memcpy(&f, s + 4 * i, sizeof f);
            nx_v4_widen(out + i, f);
        }
        return full;
    case NX_DT_BF16:
    case NX_DT_FP16:
    case NX_DT_INT16:
    case NX_DT_UINT16:
        for (uint64_t i = 0; i < full; i += 4) {
            nx_v4h h;
            memcpy(&h, s + 2 * i, sizeof h);
            nx_v4i x;
            if (dt == NX_DT_INT16) {
                nx_v4sh sh;
                memcpy(&sh, &h, sizeof sh);
                x = __builtin_convertvector(sh, nx_v4i);
            } else {
                x = __builtin_convertvector(h, nx_v4i);
            }
            if (dt == NX_DT_BF16) nx_v4_widen(out + i, nx_v4f_from_bits(bf16_lanes(x)));
            else if (dt == NX_DT_FP16) nx_v4_widen(out + i, nx_v4f_from_bits(fp16_lanes(x)));
            else widen_i32_lanes(out + i, x);
        }
        return full;
    case NX_DT_FP8_E4M3:
    case NX_DT_FP8_E5M2:
    case NX_DT_INT8:
    case NX_DT_UINT8:
        for (uint64_t i = 0; i < full; i += 4) {
            nx_v4b b;
            memcpy(&b, s + i, sizeof b);
            nx_v4i x;
            if (dt == NX_DT_INT8) {
                nx_v4sb sb;
                memcpy(&sb, &b, sizeof sb);
                x = __builtin_convertvector(sb, nx_v4i);
            } else {
                x = __builtin_convertvector(b, nx_v4i);
            }
            /* e5m2 is the top byte of an fp16 */
            if (dt == NX_DT_FP8_E5M2) nx_v4_widen(out + i, nx_v4f_from_bits(fp16_lanes(x << 8)));
            else if (dt == NX_DT_FP8_E4M3) nx_v4_widen(out + i, nx_v4f_from_bits(e4m3_lanes(x)));
            else widen_i32_lanes(out + i, x);
        }
        return full;
    case NX_DT_INT32:
    case NX_DT_UINT32:
        for (uint64_t i = 0; i < full; i += 4) {
            nx_v4i x;
            memcpy(&x, s + 4 * i, sizeof x);
            if (dt == NX_DT_INT32) {
                widen_i32_lanes(out + i, x);
            } else {
                /* u = (u - 2^31) + 2^31, both steps exact in double */
                nx_v4d d = __builtin_convertvector(x ^ INT32_MIN, nx_v4d) + 2147483648.0;
                memcpy(out + i, &d, sizeof d);
            }
        }
        return full;
    case NX_DT_COUNT: break;
    }
    return 0;
}

/* ---- walks: the dtype fixed per instantiation --------------------------------- */

/* The dims of a walk padded to four, innermost last. */
typedef struct walk4 {
    uint64_t count[4];
    int64_t step[4];
} walk4;

static walk4 walk_pad(uint32_t nd, const uint64_t *count, const int64_t *step) {
    walk4 w = {{1, 1, 1, 1}, {0, 0, 0, 0}};
    if (nd > 4) nd = 4;
    for (uint32_t k = 0; k < nd; k++) {
        w.count[4 - nd + k] = count[k];
        w.step[4 - nd + k] = step[k];
    }
    return w;
}

/* One run of the walk: the lanes when contiguous, the element routine for
 * the rest. */
NX_V4_INLINE void load_one_run(nx_dtype dt, const unsigned char *s, int64_t step, uint64_t n, double *out) {
    const uint64_t done = step == (int64_t)nx_dtype_size(dt) && n >= 4 ? load_lanes(dt, s, n, out) : 0;
    LOAD_ELEMS(dt, done);
}

NX_V4_INLINE void load_walk_dt(nx_dtype dt, const unsigned char *base, const walk4 *w, double *out) {
    for (uint64_t a = 0; a < w->count[0]; a++)
        for (uint64_t b = 0; b < w->count[1]; b++)
            for (uint64_t c = 0; c < w->count[2]; c++) {
                const unsigned char *s = base + (int64_t)a * w->step[0] + (int64_t)b * w->step[1] + (int64_t)c * w->step[2];
                load_one_run(dt, s, w->step[3], w->count[3], out);
                out += w->count[3];
            }
}

/* The switch that fixes the dtype of an instantiation. */
#define FOR_DTYPE(CALL)                                                                       \
    switch (dt) {                                                                             \
    case NX_DT_FP32: CALL(NX_DT_FP32); return;                                                \
    case NX_DT_BF16: CALL(NX_DT_BF16); return;                                                \
    case NX_DT_FP16: CALL(NX_DT_FP16); return;                                                \
    case NX_DT_FP8_E4M3: CALL(NX_DT_FP8_E4M3); return;                                        \
    case NX_DT_FP8_E5M2: CALL(NX_DT_FP8_E5M2); return;                                        \
    case NX_DT_INT8: CALL(NX_DT_INT8); return;                                                \
    case NX_DT_UINT8: CALL(NX_DT_UINT8); return;                                              \
    case NX_DT_INT16: CALL(NX_DT_INT16); return;                                              \
    case NX_DT_UINT16: CALL(NX_DT_UINT16); return;                                            \
    case NX_DT_INT32: CALL(NX_DT_INT32); return;                                              \
    case NX_DT_UINT32: CALL(NX_DT_UINT32); return;                                            \
    case NX_DT_COUNT: break;                                                                  \
    }

void nx_dtype_load_walk(nx_dtype dt, const void *base, uint32_t nd, const uint64_t *count, const int64_t *step,
                        double *out) {
    const walk4 w = walk_pad(nd, count, step);
#define LOAD_WALK(DT) load_walk_dt(DT, base, &w, out)
    FOR_DTYPE(LOAD_WALK)
#undef LOAD_WALK
    uint64_t total = 1;
    for (int k = 0; k < 4; k++) total *= w.count[k];
    for (uint64_t i = 0; i < total; i++) out[i] = 0.0; /* invalid code, as nx_dtype_load */
}

void nx_dtype_load_run(nx_dtype dt, const void *src, int64_t step, uint64_t n, double *out) {
    nx_dtype_load_walk(dt, src, 1, &n, &step, out);
}

/* ---- store kernels: four engine values -> four elements --------------------- */

/* round_saturate(x, lo, hi) for two lanes whose values lie in [lo, hi]
 * (integers within int32's range): the truncation is exact and in range,
 * the fraction exact, and ties go to even as in round_saturate. Returns
 * nonzero, leaving *out alone, when a lane is outside [lo, hi] or NaN (the
 * caller takes the element routine): |x - mid| <= half is one compare,
 * false for NaN. */
NX_V4_INLINE int round_lanes(nx_v2d x, double lo, double hi, nx_v2i *out) {
    const double mid = (lo + hi) / 2, half = (hi - lo) / 2; /* exact */
    nx_v2d c = x - mid;
    nx_v2l cb;
    memcpy(&cb, &c, sizeof cb);
    cb &= INT64_MAX;
    memcpy(&c, &cb, sizeof c);
    const nx_v2l in = c <= half;
    uint64_t w[2];
    memcpy(w, &in, sizeof w);
    if ((w[0] & w[1]) != UINT64_MAX) return 1;
    const nx_v2i t = __builtin_convertvector(x, nx_v2i);
    const nx_v2d frac = x - __builtin_convertvector(t, nx_v2d);
    const nx_v2i odd = t & 1;
    *out = t - __builtin_convertvector(frac > 0.5, nx_v2i) + (odd & __builtin_convertvector(frac == 0.5, nx_v2i)) +
           __builtin_convertvector(frac < -0.5, nx_v2i) - (odd & __builtin_convertvector(frac == -0.5, nx_v2i));
    return 0;
}

/* Four engine values rounded and saturated to [lo, hi] (within int32);
 * `bias` is subtracted first and its pattern added back (uint32: lanes
 * shifted by 2^31 into int32's range). Nonzero when a lane needs the
 * element routine. */
NX_V4_INLINE int round_group(const double *in, double lo, double hi, double bias, nx_v4i *out) {
    nx_v2d x0, x1;
    memcpy(&x0, in, sizeof x0);
    memcpy(&x1, in + 2, sizeof x1);
    nx_v2i t0, t1;
    if (round_lanes(x0 - bias, lo, hi, &t0) | round_lanes(x1 - bias, lo, hi, &t1)) return 1;
    *out = (nx_v4i){t0[0], t0[1], t1[0], t1[1]};
    return 0;
}

/* Stores groups of four into a contiguous run; returns how many it did
 * (the rest, from there on, is the element routines'). A group with a
 * value the kernel does not cover is stored element by element. */
NX_V4_INLINE uint64_t store_lanes(nx_dtype dt, unsigned char *d, uint64_t n, const double *in) {
    const uint64_t full = n & ~(uint64_t)3;
    const int64_t step = (int64_t)nx_dtype_size(dt); /* for STORE_ELEMS */
    if (!NX_LANES_LE) return 0;
    switch (dt) {
    case NX_DT_FP32:
        for (uint64_t i = 0; i < full; i += 4) {
            const nx_v4f f = nx_v4_narrow(in + i);
            if (nx_v4_inexact(in + i, f)) {
                STORE_ELEMS(NX_DT_FP32, i, i + 4);
                continue;
            }
            memcpy(d + 4 * i, &f, sizeof f);
        }
        return full;
    case NX_DT_BF16:
        for (uint64_t i = 0; i < full; i += 4) {
            const nx_v4f f = nx_v4_narrow(in + i);
            if (nx_v4_inexact(in + i, f)) {
                STORE_ELEMS(NX_DT_BF16, i, i + 4);
                continue;
            }
            const nx_v4u u = (nx_v4u)nx_v4f_bits(f);
            const nx_v4h h = __builtin_convertvector((u + 0x7fffu + ((u >> 16) & 1u)) >> 16, nx_v4h);
            memcpy(d + 2 * i, &h, sizeof h);
        }
        return full;
    case NX_DT_FP16:
    case NX_DT_FP8_E4M3:
    case NX_DT_FP8_E5M2:
        for (uint64_t i = 0; i < full; i += 4) {
            const nx_v4f f = nx_v4_narrow(in + i);
            nx_v4i outside, r;
            const nx_v4i bits = nx_v4f_bits(f);
            if (dt == NX_DT_FP16) r = narrow_lanes(bits, 5, 10, 1, &outside);
            else if (dt == NX_DT_FP8_E5M2) r = narrow_lanes(bits, 5, 2, 1, &outside);
            else r = narrow_lanes(bits, 4, 3, 0, &outside);
            if (nx_v4_inexact(in + i, f) || nx_v4i_any(outside)) {
                STORE_ELEMS(dt, i, i + 4);
                continue;
            }
            if (dt == NX_DT_FP16) {
                const nx_v4h h = __builtin_convertvector(r, nx_v4h);
                memcpy(d + 2 * i, &h, sizeof h);
            } else {
                const nx_v4b b = __builtin_convertvector(r, nx_v4b);
                memcpy(d + i, &b, sizeof b);
            }
        }
        return full;
    case NX_DT_INT8:
    case NX_DT_UINT8:
    case NX_DT_INT16:
    case NX_DT_UINT16:
    case NX_DT_INT32:
    case NX_DT_UINT32: {
        double lo, hi, bias = 0.0;
        switch (dt) {
        case NX_DT_INT8: lo = INT8_MIN, hi = INT8_MAX; break;
        case NX_DT_UINT8: lo = 0, hi = UINT8_MAX; break;
        case NX_DT_INT16: lo = INT16_MIN, hi = INT16_MAX; break;
        case NX_DT_UINT16: lo = 0, hi = UINT16_MAX; break;
        case NX_DT_INT32: lo = INT32_MIN, hi = INT32_MAX; break;
        default: lo = INT32_MIN, hi = INT32_MAX, bias = 2147483648.0; break; /* uint32 */
        }
        const int32_t flip = bias != 0.0 ? INT32_MIN : 0;
        for (uint64_t i = 0; i < full; i += 4) {
            nx_v4i t;
            if (round_group(in + i, lo, hi, bias, &t)) {
                STORE_ELEMS(dt, i, i + 4);
                continue;
            }
            t ^= flip;
            if (step == 1) {
                const nx_v4b b = __builtin_convertvector(t, nx_v4b);
                memcpy(d + i, &b, sizeof b);
            } else if (step == 2) {
                const nx_v4h h = __builtin_convertvector(t, nx_v4h);
                memcpy(d + 2 * i, &h, sizeof h);
            } else {
                memcpy(d + 4 * i, &t, sizeof t);
            }
        }
        return full;
    }
    case NX_DT_COUNT: break;
    }
    return 0;
}

NX_V4_INLINE void store_one_run(nx_dtype dt, unsigned char *d, int64_t step, uint64_t n, const double *in) {
    const uint64_t done = step == (int64_t)nx_dtype_size(dt) && n >= 4 ? store_lanes(dt, d, n, in) : 0;
    STORE_ELEMS(dt, done, n);
}

NX_V4_INLINE void store_walk_dt(nx_dtype dt, unsigned char *base, const walk4 *w, const double *in) {
    for (uint64_t a = 0; a < w->count[0]; a++)
        for (uint64_t b = 0; b < w->count[1]; b++)
            for (uint64_t c = 0; c < w->count[2]; c++) {
                unsigned char *d = base + (int64_t)a * w->step[0] + (int64_t)b * w->step[1] + (int64_t)c * w->step[2];
                store_one_run(dt, d, w->step[3], w->count[3], in);
                in += w->count[3];
            }
}

void nx_dtype_store_walk(nx_dtype dt, void *base, uint32_t nd, const uint64_t *count, const int64_t *step,
                         const double *in) {
    const walk4 w = walk_pad(nd, count, step);
#define STORE_WALK(DT) store_walk_dt(DT, base, &w, in)
    FOR_DTYPE(STORE_WALK)
#undef STORE_WALK
    /* invalid code: nothing is written, as nx_dtype_store */
}

void nx_dtype_store_run(nx_dtype dt, void *dst, int64_t step, uint64_t n, const double *in) {
    nx_dtype_store_walk(dt, dst, 1, &n, &step, in);
}

NX_V4_INLINE void store_where_dt(nx_dtype dt, unsigned char *base, const walk4 *w, const double *in,
                                 const double *pred) {
    uint64_t i = 0;
    for (uint64_t a = 0; a < w->count[0]; a++)
        for (uint64_t b = 0; b < w->count[1]; b++)
            for (uint64_t c = 0; c < w->count[2]; c++) {
                unsigned char *d = base + (int64_t)a * w->step[0] + (int64_t)b * w->step[1] + (int64_t)c * w->step[2];
                for (uint64_t e = 0; e < w->count[3]; e++, i++)
                    if (pred[i] != 0.0) elem_store(dt, d + (int64_t)e * w->step[3], in[i]);
            }
}

void nx_dtype_store_walk_where(nx_dtype dt, void *base, uint32_t nd, const uint64_t *count, const int64_t *step,
                               const double *in, const double *pred) {
    const walk4 w = walk_pad(nd, count, step);
#define STORE_WHERE(DT) store_where_dt(DT, base, &w, in, pred)
    FOR_DTYPE(STORE_WHERE)
#undef STORE_WHERE
}

/* ---- the same-dtype round trip -------------------------------------------- */

void nx_dtype_canonical_nans(nx_dtype dt, void *packed, uint64_t n) {
    unsigned char *b = packed;
    switch (dt) {
    case NX_DT_FP32:
        for (uint64_t i = 0; i < n; i++) {
            const uint32_t u = nx_load_le32(b + 4 * i);
            if ((u & 0x7fffffffu) > 0x7f800000u) nx_store_le32(b + 4 * i, (u & 0x80000000u) | NX_F32_CANONICAL_NAN);
        }
        return;
    case NX_DT_BF16:
    case NX_DT_FP16: {
        const uint32_t inf = dt == NX_DT_BF16 ? 0x7f80u : 0x7c00u, nan = dt == NX_DT_BF16 ? 0x7fc0u : 0x7e00u;
        for (uint64_t i = 0; i < n; i++) {
            const uint32_t h = nx_load_le16(b + 2 * i);
            if ((h & 0x7fffu) > inf) nx_store_le16(b + 2 * i, (uint16_t)((h & 0x8000u) | nan));
        }
        return;
    }
    case NX_DT_FP8_E5M2:
        for (uint64_t i = 0; i < n; i++)
            if ((b[i] & 0x7fu) > 0x7cu) b[i] = (unsigned char)((b[i] & 0x80u) | 0x7eu);
        return;
    default: return; /* e4m3 (its only NaNs are the canonical ones) and the integers: exact */
    }
}
