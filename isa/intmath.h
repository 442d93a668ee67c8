/* Integer helpers every layer uses (tiling arithmetic of the leaves and the
 * authoring layer, alignment in the assembler and the PE datapath): defined
 * once here, in the lowest layer, so no file keeps its own copy.
 *
 * Contract: b > 0 for every division. nx_cdiv_* is the tiling count
 * (a + b - 1) / b, for a >= 0 (with C's truncating division, exactly as the
 * copies it replaces computed it); nx_floor_div_i64 and nx_ceil_div_i64 round
 * toward minus and plus infinity for any sign of a (window arithmetic with
 * negative padding). No overflow checks: callers stay far below 2^63. */
#ifndef NXSIM_ISA_INTMATH_H
#define NXSIM_ISA_INTMATH_H

#include <stdint.h>

static inline uint64_t nx_min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static inline uint64_t nx_max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static inline int64_t nx_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t nx_max_i64(int64_t a, int64_t b) { return a > b ? a : b; }

static inline uint64_t nx_cdiv_u64(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
static inline int64_t nx_cdiv_i64(int64_t a, int64_t b) { return (a + b - 1) / b; }

static inline int64_t nx_floor_div_i64(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}
static inline int64_t nx_ceil_div_i64(int64_t a, int64_t b) { return -nx_floor_div_i64(-a, b); }

/* Saturating at UINT64_MAX (sizes that may not fit: a limit check reads
 * "too big", never a wrapped small number). */
static inline uint64_t nx_add_sat_u64(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static inline uint64_t nx_mul_sat_u64(uint64_t a, uint64_t b) { return b && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

/* v rounded up to a multiple of a. */
static inline uint64_t nx_round_up_u64(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* The smallest power of two >= v (1 for v <= 1). */
static inline uint32_t nx_pow2_ceil_u32(uint32_t v) {
    uint32_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

#endif
