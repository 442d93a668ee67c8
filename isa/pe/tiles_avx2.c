/* The AVX2 kernel: 6 x 16 tiles, twelve ymm accumulators (tiles.h). The
 * separate tile is _mm256_mul_ps then _mm256_add_ps; GCC implements those
 * intrinsics as plain vector arithmetic, which the library's
 * -ffp-contract=off keeps from being fused. The fused tile uses
 * _mm256_fmadd_ps. Compiled for AVX2 + FMA by function attributes only, so
 * the rest of the library stays baseline x86-64; datapath.c calls it only
 * when the CPU has both. */
#define PE_PANEL_BYTES 32
#include "panel.h"
#include "tiles.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))
#define INLINE static inline __attribute__((always_inline))

enum { MR = 6, NR = 16 };

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

AVX2 INLINE __m256 step(__m256 p, __m256 a, __m256 b, int fused) {
    return fused ? _mm256_fmadd_ps(a, b, p) : _mm256_add_ps(p, _mm256_mul_ps(a, b));
}

/* acc ? row + v : v, NaN lanes canonical */
AVX2 INLINE void store(float *row, __m256 v, int acc) {
    if (acc) v = _mm256_add_ps(_mm256_loadu_ps(row), v);
    __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    v = _mm256_blendv_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32((int)NX_PE_QNAN_BITS)), nan);
    _mm256_storeu_ps(row, v);
}

/* Moving row k of the panel: from b (ldb floats apart), or with `src` from
 * the row itself (converted and kept in panel). */
typedef struct moving {
    const float *b;
    uint64_t ldb;
    const uint8_t *src;
    int64_t step;
    int bf16;
    float *panel;
    uint32_t rows;
} moving;

enum { PREFETCH_ROWS = 16 };

/* 8 bf16 codes -> fp32, shifted up. A NaN code stays a NaN (its payload
 * may differ from isa/pe_input.h's canonical one), which changes no result:
 * any NaN operand gives a NaN sum, stored as the canonical NaN. */
AVX2 INLINE __m256 bf16_widen(__m128i h) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

AVX2 INLINE void moving_row(const moving *mv, uint32_t k, __m256 *b0, __m256 *b1, int load) {
    if (!load) {
        *b0 = _mm256_loadu_ps(mv->b + k * mv->ldb);
        *b1 = _mm256_loadu_ps(mv->b + k * mv->ldb + 8);
        return;
    }
    const uint8_t *row = mv->src + (int64_t)k * mv->step;
    const int ahead = k + PREFETCH_ROWS < mv->rows;
    if (ahead) _mm_prefetch((const char *)(row + PREFETCH_ROWS * mv->step), _MM_HINT_T0);
    if (mv->bf16) {
        *b0 = bf16_widen(_mm_loadu_si128((const void *)row));
        *b1 = bf16_widen(_mm_loadu_si128((const void *)(row + 16)));
    } else {
        *b0 = _mm256_loadu_ps((const void *)row);
        *b1 = _mm256_loadu_ps((const void *)(row + 32));
    }
    _mm256_storeu_ps(mv->panel + k * NR, *b0);
    _mm256_storeu_ps(mv->panel + k * NR + 8, *b1);
}

AVX2 INLINE void tile(uint32_t K, const float *a, const moving *mv, float *c, int64_t ldc, int acc, int fused,
                      int load) {
    __m256 b0, b1;
    moving_row(mv, 0, &b0, &b1, load);
#define ROW_INIT(i)                               \
    __m256 c##i##0, c##i##1;                      \
    {                                             \
        __m256 ai = _mm256_broadcast_ss(a + (i)); \
        c##i##0 = _mm256_mul_ps(ai, b0);          \
        c##i##1 = _mm256_mul_ps(ai, b1);          \
    }
    ROWS(ROW_INIT)
#undef ROW_INIT
    for (uint32_t k = 1; k < K; k++) {
        a += MR;
        moving_row(mv, k, &b0, &b1, load);
#define ROW_STEP(i)                               \
    {                                             \
        __m256 ai = _mm256_broadcast_ss(a + (i)); \
        c##i##0 = step(c##i##0, ai, b0, fused);   \
        c##i##1 = step(c##i##1, ai, b1, fused);   \
    }
        ROWS(ROW_STEP)
#undef ROW_STEP
    }
#define ROW_STORE(i)                                \
    store(c + (int64_t)(i) * ldc, c##i##0, acc);     \
    store(c + (int64_t)(i) * ldc + 8, c##i##1, acc);
    ROWS(ROW_STORE)
#undef ROW_STORE
}

AVX2 static void tile_separate(uint32_t K, const float *a, const float *b, uint64_t ldb, float *c, int64_t ldc,
                               int acc) {
    const moving mv = {b, ldb, NULL, 0, 0, NULL, K};
    tile(K, a, &mv, c, ldc, acc, 0, 0);
}

AVX2 static void tile_fused(uint32_t K, const float *a, const float *b, uint64_t ldb, float *c, int64_t ldc,
                            int acc) {
    const moving mv = {b, ldb, NULL, 0, 0, NULL, K};
    tile(K, a, &mv, c, ldc, acc, 1, 0);
}

AVX2 static void tile_separate_load(uint32_t K, const float *a, const uint8_t *src, int64_t step, int bf16,
                                    float *panel, float *c, int64_t ldc, int acc) {
    const moving mv = {NULL, 0, src, step, bf16, panel, K};
    tile(K, a, &mv, c, ldc, acc, 0, 1);
}

AVX2 static void scan(const float *x, uint32_t rows, uint32_t cols, uint64_t ld, uint32_t *lo, uint32_t *hi) {
    pe_scan(x, rows, cols, ld, lo, hi);
}

AVX2 static void pack(const uint8_t *src, int64_t step, int bf16, uint32_t K, uint32_t cols, uint32_t nr, uint64_t ld,
                 uint64_t panel_stride, float *out) {
    pe_pack_rows(src, step, bf16, K, cols, nr, ld, panel_stride, out);
}

AVX2 static void blocks(const float *st, uint64_t ld, uint32_t K, uint32_t M, float *out) {
    pe_pack_blocks(st, ld, K, M, MR, out);
}

static const nx_pe_tiles tiles = {MR, NR, tile_separate, tile_fused, tile_separate_load, scan, pack, blocks};
const nx_pe_tiles *const nx_pe_tiles_avx2 = &tiles;
#else
const nx_pe_tiles *const nx_pe_tiles_avx2 = 0;
#endif
