/* The ALU shared by the compute engines: nx_alu_apply(op, a, b) on engine
 * values. The rules (docs/parts/insns-dve.md, "The ALU"):
 *   arithmetic  inputs and result rounded to fp32 (RNE, overflow -> Inf);
 *               a NaN result is a's NaN if a is NaN, else b's, else (an
 *               invalid operation such as 0/0) the positive quiet NaN;
 *   comparisons on the exact engine values, result 1.0 or 0.0;
 *   bitvec ops  (bitwise and/or/xor, shifts) on 32-bit patterns of the
 *               (integer-rounded, saturated) inputs; shift_right is logical;
 *               the pattern reads back as int32 if an input was negative,
 *               else as uint32, and nx_alu_bits_for_dtype() gives a store
 *               the pattern's bits instead of the saturating value rule.
 * Computing +, -, *, / of two fp32 values in double and rounding once to fp32
 * gives the correctly rounded fp32 result (double has >= 2*24+2 bits). */
#include <math.h>
#include <stdint.h>

#include "dtype.h"
#include "insn.h"

static double f32(double x) { return nx_fp32_round(x); }

/* The NaN an arithmetic op returns: the host's choice (x86 makes 0/0 a
 * negative NaN and may take either operand's NaN for a commutative op) is
 * replaced by a fixed rule, so the stored sign never depends on the host or
 * the compiler. Only called when the result is NaN. */
static double nan_result(double a, double b) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    return NAN; /* positive quiet NaN */
}

/* fp32 arithmetic result r of a op b, with the NaN rule above. */
static double arith(double r, double a, double b) { return isnan(r) ? nan_result(a, b) : r; }

/* IEEE max/min with NaN propagation (a's NaN first) and -0 < +0. */
static double alu_max(double a, double b) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    if (a == b) return signbit(a) ? b : a;
    return a > b ? a : b;
}
static double alu_min(double a, double b) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    if (a == b) return signbit(a) ? a : b;
    return a < b ? a : b;
}

/* Round to nearest integer, ties to even, without depending on the
 * floating-point environment's rounding mode. */
static double round_even(double v) {
    double r = floor(v);
    double d = v - r;
    if (d > 0.5 || (d == 0.5 && fmod(r, 2.0) != 0.0)) r += 1.0;
    return r;
}

/* The 32-bit pattern of an engine value; *neg says whether it was negative
 * (after rounding to an integer: -0.3 -> 0 is not negative). NaN -> 0. An
 * integer of an 8/16/32-bit dtype gives its two's-complement bits widened to
 * 32 (sign-extended for the signed dtypes). */
static uint32_t to_pattern(double v, int *neg) {
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

static double from_pattern(uint32_t bits, int as_signed) {
    if (as_signed && bits >= 0x80000000u) return (double)bits - 4294967296.0;
    return (double)bits;
}

static double bitwise(nx_alu_op op, double a, double b) {
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

double nx_alu_apply(nx_alu_op op, double a, double b) {
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

int nx_alu_is_bitvec(nx_alu_op op) {
    return op == NX_ALU_BITWISE_AND || op == NX_ALU_BITWISE_OR || op == NX_ALU_BITWISE_XOR ||
           op == NX_ALU_SHIFT_LEFT || op == NX_ALU_SHIFT_RIGHT;
}

/* The low `bits` bits of the exact integer v (mod 2^64 first, which keeps
 * them), read as a signed or unsigned integer of that width. */
static double low_bits(double v, unsigned bits, int is_signed) {
    if (!(fabs(v) < 9.0e18)) return v; /* not a bitvec result: leave it to the store */
    uint64_t mask = (UINT64_C(1) << bits) - 1;
    uint64_t w = (uint64_t)(int64_t)v & mask;
    if (is_signed && (w >> (bits - 1)))
        return -(double)((mask - w) + 1); /* two's complement: w - 2^bits */
    return (double)w;
}

/* Bitvec results are exact integers in (-2^33, 2^33) (patterns read as int32
 * or uint32, or their negation), so the low bits are the pattern's. */
void nx_alu_bits_for_dtype(nx_dtype dt, double *v, uint64_t n) {
    if (nx_dtype_is_float(dt)) return; /* the value rule (RNE) applies */
    unsigned bits = 8u * (unsigned)nx_dtype_size(dt);
    int is_signed = nx_dtype_is_signed_int(dt);
    if (bits == 0) return;
    for (uint64_t i = 0; i < n; i++) v[i] = low_bits(v[i], bits, is_signed);
}

double nx_alu_reduce_identity(nx_alu_op op) {
    switch (op) {
    case NX_ALU_ADD: return -0.0; /* -0 + x == x, also for x = -0 */
    case NX_ALU_MULTIPLY: return 1.0;
    case NX_ALU_MAX: return -INFINITY;
    case NX_ALU_MIN: return INFINITY;
    case NX_ALU_ABS_MAX: return 0.0;
    case NX_ALU_BITWISE_AND: return 4294967295.0; /* all 32 bits, unsigned */
    case NX_ALU_BITWISE_OR:
    case NX_ALU_BITWISE_XOR: return 0.0;
    default: return NAN;
    }
}
