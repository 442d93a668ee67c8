/* Bytes and float bits: the one place that reads and writes little-endian
 * integers, reinterprets float bits, and widens the 16-bit float formats.
 * Everything in the tree that needs one of these uses this header (C and
 * C++; libc only, header-only so hot loops inline them).
 *
 * Little-endian access is byte-wise, so it is right on any host and at any
 * alignment; compilers turn each into one (unaligned) load or store on a
 * little-endian machine.
 *
 * Widening bf16 / fp16 to fp32 follows docs/parts/dtypes.md: every finite
 * value and +-Inf is exact; a NaN, quiet or signalling, becomes the
 * canonical quiet NaN 0x7fc00000 with the sign of the source (payload
 * dropped) - the rule "NaN -> any float". The element loads of isa/dtype.h
 * and the PE's input conversion (isa/pe_input.h) both call these, so a NaN
 * reads the same on every path. */
#ifndef NXSIM_ISA_BYTES_H
#define NXSIM_ISA_BYTES_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- little-endian integers (p: any alignment) ---- */

static inline uint16_t nx_load_le16(const void *p) {
    const uint8_t *b = (const uint8_t *)p;
    return (uint16_t)(b[0] | (b[1] << 8));
}

static inline uint32_t nx_load_le32(const void *p) {
    const uint8_t *b = (const uint8_t *)p;
    return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
}

static inline uint64_t nx_load_le64(const void *p) {
    const uint8_t *b = (const uint8_t *)p;
    return (uint64_t)nx_load_le32(b) | ((uint64_t)nx_load_le32(b + 4) << 32);
}

static inline void nx_store_le16(void *p, uint16_t v) {
    uint8_t *b = (uint8_t *)p;
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
}

static inline void nx_store_le32(void *p, uint32_t v) {
    uint8_t *b = (uint8_t *)p;
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
    b[2] = (uint8_t)(v >> 16);
    b[3] = (uint8_t)(v >> 24);
}

static inline void nx_store_le64(void *p, uint64_t v) {
    uint8_t *b = (uint8_t *)p;
    nx_store_le32(b, (uint32_t)v);
    nx_store_le32(b + 4, (uint32_t)(v >> 32));
}

/* ---- float bits (a reinterpretation, not a conversion) ---- */

static inline uint32_t nx_f32_bits(float f) {
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static inline float nx_f32_from_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static inline uint64_t nx_f64_bits(double d) {
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

static inline double nx_f64_from_bits(uint64_t b) {
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

/* ---- 16-bit floats -> fp32 (exact; NaN -> canonical quiet NaN, sign kept) ---- */

#define NX_F32_CANONICAL_NAN 0x7fc00000u

static inline float nx_bf16_bits_to_f32(uint16_t h) {
    const uint32_t b = (uint32_t)h << 16;
    if ((b & 0x7fffffffu) > 0x7f800000u) return nx_f32_from_bits((b & 0x80000000u) | NX_F32_CANONICAL_NAN);
    return nx_f32_from_bits(b);
}

static inline float nx_fp16_bits_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t man = h & 0x3ffu;
    if (exp == 0x1fu) return nx_f32_from_bits(sign | (man != 0 ? NX_F32_CANONICAL_NAN : 0x7f800000u));
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24, exact in fp32 */
        const float f = (float)man * (1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    return nx_f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

#ifdef __cplusplus
}
#endif

#endif
