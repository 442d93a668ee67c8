/* Internal to isa/: groups of four lanes in GCC vector extensions, for the
 * run kernels of the functional semantics (dtype_run.c, alu_run.c,
 * actfn.c). Written once, they compile on any target: SSE2 on every
 * x86-64, NEON on aarch64, plain scalar code elsewhere, at -O2 as at -O3
 * (the auto-vectoriser is not needed).
 *
 * Arithmetic and compares use 16-byte vectors only (two doubles or four
 * floats / int32s): without AVX, GCC lowers the compares of wider vectors
 * to scalar code. A group of four doubles is therefore read as a 32-byte
 * vector only to convert it (cvtpd2ps / cvtps2pd pairs) and otherwise
 * handled as two halves. Vectors are never passed by value to a function
 * that is not inlined (32-byte vectors change the ABI without AVX). */
#ifndef NXSIM_ISA_VEC4_H
#define NXSIM_ISA_VEC4_H

#include <stdint.h>
#include <string.h>

typedef double nx_v2d __attribute__((vector_size(16)));
typedef int64_t nx_v2l __attribute__((vector_size(16)));
typedef float nx_v4f __attribute__((vector_size(16)));
typedef int32_t nx_v4i __attribute__((vector_size(16)));
typedef uint32_t nx_v4u __attribute__((vector_size(16)));
typedef uint16_t nx_v4h __attribute__((vector_size(8)));
typedef double nx_v4d __attribute__((vector_size(32))); /* conversions only */
typedef int32_t nx_v2i __attribute__((vector_size(8)));

#define NX_V4_INLINE static inline __attribute__((always_inline))

/* x in every lane. (Not {0} + x: that turns -0 into +0.) */
NX_V4_INLINE nx_v4f nx_v4f_splat(float x) { return (nx_v4f){x, x, x, x}; }

/* Four doubles at p rounded to float (the hardware conversion: RNE in the
 * default rounding mode; callers use it only where it is exact or where
 * the double arithmetic they replace rounds the same way). */
NX_V4_INLINE nx_v4f nx_v4_narrow(const double *p) {
    nx_v4d d;
    memcpy(&d, p, sizeof d);
    return __builtin_convertvector(d, nx_v4f);
}

/* Four floats widened (exactly) to doubles at p. */
NX_V4_INLINE void nx_v4_widen(double *p, nx_v4f f) {
    nx_v4d d = __builtin_convertvector(f, nx_v4d);
    memcpy(p, &d, sizeof d);
}

/* The OR of the bits of p[0..3] - (double)f[0..3]: zero exactly when every
 * p[i] is the float f[i] (x - y == 0 iff x == y for finite doubles); a
 * lane whose double is not a float, is NaN or is +-Inf (Inf - Inf is NaN)
 * makes it nonzero. The check that a group of engine values is plain
 * fp32 values. */
NX_V4_INLINE uint64_t nx_v4_inexact(const double *p, nx_v4f f) {
    nx_v4d d, w = __builtin_convertvector(f, nx_v4d);
    memcpy(&d, p, sizeof d);
    nx_v4d r = d - w;
    uint64_t b[4];
    memcpy(b, &r, sizeof b);
    return b[0] | b[1] | b[2] | b[3];
}

NX_V4_INLINE nx_v4i nx_v4f_bits(nx_v4f f) {
    nx_v4i b;
    memcpy(&b, &f, sizeof b);
    return b;
}

NX_V4_INLINE nx_v4f nx_v4f_from_bits(nx_v4i b) {
    nx_v4f f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* Nonzero when any lane of the mask m is set. */
NX_V4_INLINE int nx_v4i_any(nx_v4i m) {
    uint64_t w[2];
    memcpy(w, &m, sizeof w);
    return (w[0] | w[1]) != 0;
}

/* m ? a : b per lane, for a mask m of all-ones / all-zeros lanes. */
NX_V4_INLINE nx_v4i nx_v4i_select(nx_v4i m, nx_v4i a, nx_v4i b) { return (a & m) | (b & ~m); }

#endif
