/* Internal to isa/pe/: the vector kernel's tile (tiles.h), written once with
 * GCC vector extensions and compiled twice: by tiles_vector.c with the
 * library's -ffp-contract=off (separate multiply and add) and by
 * tiles_vector_fused.c with -ffp-contract=fast, where the compiler may fuse
 * `p + a * b` into the target's FMA (aarch64's fmla; a baseline x86-64 target
 * has none and keeps the two operations, which gives the same bits there).
 *
 * The vector width is the target's widest (16 bytes: SSE2, NEON; 32: AVX;
 * 64: AVX-512F), a tile is MR rows x 2 vectors, MR = 8 on targets with 32
 * vector registers (aarch64, AVX-512F) else 4, so the accumulators, two
 * moving vectors and a broadcast stay in registers. */
#ifndef NXSIM_ISA_PE_TILE_VECTOR_H
#define NXSIM_ISA_PE_TILE_VECTOR_H

#include <string.h>

#include "tiles.h"

#if defined(__AVX512F__)
#define PE_VEC_BYTES 64
#elif defined(__AVX__)
#define PE_VEC_BYTES 32
#else
#define PE_VEC_BYTES 16
#endif

#if defined(__aarch64__) || defined(__AVX512F__)
#define PE_VEC_MR 8
#define PE_VEC_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#else
#define PE_VEC_MR 4
#define PE_VEC_ROWS(X) X(0) X(1) X(2) X(3)
#endif

typedef float pe_vf __attribute__((vector_size(PE_VEC_BYTES)));
typedef int32_t pe_vi __attribute__((vector_size(PE_VEC_BYTES)));

enum { PE_VEC_LANES = PE_VEC_BYTES / 4, PE_VEC_NR = 2 * PE_VEC_LANES };

static inline pe_vf pe_vload(const float *p) {
    pe_vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* acc ? row + v : v, NaN lanes canonical, stored at row. */
static inline void pe_vstore(float *row, pe_vf v, int acc) {
    if (acc) v = pe_vload(row) + v;
    pe_vi nan = v != v;
    pe_vi bits = ((pe_vi)v & ~nan) | (nan & (int32_t)NX_PE_QNAN_BITS);
    memcpy(row, &bits, sizeof bits);
}

static inline void pe_tile_vector(uint32_t K, const float *a, const float *b, uint64_t ldb, float *c, int64_t ldc,
                                  int acc) {
    pe_vf b0 = pe_vload(b), b1 = pe_vload(b + PE_VEC_LANES);
#define PE_ROW_INIT(i) pe_vf c##i##0 = a[i] * b0, c##i##1 = a[i] * b1;
    PE_VEC_ROWS(PE_ROW_INIT)
#undef PE_ROW_INIT
    for (uint32_t k = 1; k < K; k++) {
        a += PE_VEC_MR;
        b += ldb;
        b0 = pe_vload(b);
        b1 = pe_vload(b + PE_VEC_LANES);
#define PE_ROW_STEP(i)              \
    {                               \
        float ai = a[i];            \
        c##i##0 = c##i##0 + ai * b0; \
        c##i##1 = c##i##1 + ai * b1; \
    }
        PE_VEC_ROWS(PE_ROW_STEP)
#undef PE_ROW_STEP
    }
#define PE_ROW_STORE(i)                                   \
    pe_vstore(c + (int64_t)(i) * ldc, c##i##0, acc);       \
    pe_vstore(c + (int64_t)(i) * ldc + PE_VEC_LANES, c##i##1, acc);
    PE_VEC_ROWS(PE_ROW_STORE)
#undef PE_ROW_STORE
}

#endif
