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

#include "alu_elem.h"
#include "dtype.h"
#include "insn.h"

double nx_alu_apply(nx_alu_op op, double a, double b) { return alu_elem(op, a, b); }

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
