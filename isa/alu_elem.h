/* Internal to isa/alu*.c: the ALU's element rules (docs/parts/insns-dve.md,
 * "The ALU"), shared by nx_alu_apply (alu.c) and the run kernels
 * (alu_run.c), so each rule exists once. alu_elem(op, a, b) is
 * nx_alu_apply; with a constant op it folds to that op's rule. */
#ifndef NXSIM_ISA_ALU_ELEM_H
#define NXSIM_ISA_ALU_ELEM_H

#include <math.h>
#include <stdint.h>

#include "dtype.h"
#include "insn.h"

static inline double f32(double x) { return nx_fp32_round(x); }

/* The NaN an arithmetic op returns: the host's choice (x86 makes 0/0 a
 * negative NaN and may take either operand's NaN for a commutative op) is
 * replaced by a fixed rule, so the stored sign never depends on the host or
 * the compiler. Only called when the result is NaN. */
static inline double nan_result(double a, double b) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    return NAN; /* positive quiet NaN */
}

/* fp32 arithmetic result r of a op b, with the NaN rule above. */
static inline double arith(double r, double a, double b) { return isnan(r) ? nan_result(a, b) : r; }

/* IEEE max/min with NaN propagation (a's NaN first) and -0 < +0. */
static inline double alu_max(double a, double b) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    if (a == b) return signbit(a) ? b : a;
    return a > b ? a : b;
}
static inline double alu_min(double a, double b) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    if (a == b) return signbit(a) ? a : b;
    return a < b ? a : b;
}

/* Round to nearest integer, ties to even, without depending on the
 * floating-point environment's rounding mode. */
static inline double round_even(double v) {
    double r = floor(v);
    double d = v - r;
    if (d > 0.5 || (d == 0.5 && fmod(r, 2.0) != 0.0)) r += 1.0;
    return r;
}

/* The 32-bit pattern of an engine value; *neg says whether it was negative
 * (after rounding to an integer: -0.3 -> 0 is not negative). NaN -> 0. An
 * integer of an 8/16/32-bit dtype gives its two's-complement bits widened to
 * 32 (sign-extended for the signed dtypes). */
static inline uint32_t to_pattern(double v, int *neg) {
    *neg = 0;
    if (isnan(v)) return 0;
    double r = round_even(v);
    if (r < 0.0) {
        *neg = 1;
        if (r < -2147483648.0) r = -2147483648.0;
        return (uint32_t)(uint64_t)(int64_t)r; /* two's complement, mod 2^32 */
    }
    if (r > 4294967295.0) r = 4294967295.0;
    return (uint32_t)r;
}

static inline double from_pattern(uint32_t bits, int as_signed) {
    if (as_signed && bits >= 0x80000000u) return (double)bits - 4294967296.0;
    return (double)bits;
}

static inline double bitwise(nx_alu_op op, double a, double b) {
    int na, nb;
    uint32_t pa = to_pattern(a, &na), pb = to_pattern(b, &nb);
    uint32_t r;
    unsigned count = pb & 31u;
    switch (op) {
    case NX_ALU_BITWISE_AND: r = pa & pb; break;
    case NX_ALU_BITWISE_OR: r = pa | pb; break;
    case NX_ALU_BITWISE_XOR: r = pa ^ pb; break;
    case NX_ALU_SHIFT_LEFT: r = pa << count; break;
    default: r = pa >> count; break; /* NX_ALU_SHIFT_RIGHT: logical, zeros shift in */
    }
    return from_pattern(r, na || nb);
}

static inline __attribute__((always_inline)) double alu_elem(nx_alu_op op, double a, double b) {
    switch (op) {
    case NX_ALU_BYPASS: return a;
    case NX_ALU_ADD: return arith(f32(f32(a) + f32(b)), a, b);
    case NX_ALU_SUBTRACT: return arith(f32(f32(a) - f32(b)), a, b);
    case NX_ALU_MULTIPLY: return arith(f32(f32(a) * f32(b)), a, b);
    case NX_ALU_DIVIDE: return arith(f32(f32(a) / f32(b)), a, b);
    case NX_ALU_MAX: return alu_max(f32(a), f32(b));
    case NX_ALU_MIN: return alu_min(f32(a), f32(b));
    case NX_ALU_ABS_MAX: return alu_max(fabs(f32(a)), fabs(f32(b)));
    case NX_ALU_POW: return arith((double)powf((float)f32(a), (float)f32(b)), a, b);
    case NX_ALU_BITWISE_AND:
    case NX_ALU_BITWISE_OR:
    case NX_ALU_BITWISE_XOR:
    case NX_ALU_SHIFT_LEFT:
    case NX_ALU_SHIFT_RIGHT: return bitwise(op, a, b);
    case NX_ALU_IS_EQUAL: return a == b ? 1.0 : 0.0;
    case NX_ALU_NOT_EQUAL: return a != b ? 1.0 : 0.0;
    case NX_ALU_IS_GE: return a >= b ? 1.0 : 0.0;
    case NX_ALU_IS_GT: return a > b ? 1.0 : 0.0;
    case NX_ALU_IS_LE: return a <= b ? 1.0 : 0.0;
    case NX_ALU_IS_LT: return a < b ? 1.0 : 0.0;
    case NX_ALU_COUNT: break;
    }
    return NAN; /* not reached for validated instructions */
}

#endif
