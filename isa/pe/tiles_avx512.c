/* The AVX-512 kernel: 8 x 32 tiles, sixteen zmm accumulators (tiles.h). The
 * separate tile is _mm512_mul_ps then _mm512_add_ps (plain vector arithmetic
 * in GCC, kept unfused by the library's -ffp-contract=off); the fused tile
 * uses _mm512_fmadd_ps. Compiled for AVX-512F by function attributes only;
 * datapath.c calls it only when the CPU has AVX-512F. */
#define PE_PANEL_BYTES 64
#include "panel.h"
#include "tiles.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))
#define INLINE static inline __attribute__((always_inline))

enum { MR = 8, NR = 32 };

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

AVX512 INLINE __m512 step(__m512 p, __m512 a, __m512 b, int fused) {
    return fused ? _mm512_fmadd_ps(a, b, p) : _mm512_add_ps(p, _mm512_mul_ps(a, b));
}

/* acc ? row + v : v, NaN lanes canonical */
AVX512 INLINE void store(float *row, __m512 v, int acc) {
    if (acc) v = _mm512_add_ps(_mm512_loadu_ps(row), v);
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    v = _mm512_mask_blend_ps(nan, v, _mm512_castsi512_ps(_mm512_set1_epi32((int)NX_PE_QNAN_BITS)));
    _mm512_storeu_ps(row, v);
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

/* 16 bf16 codes -> fp32, shifted up. A NaN code stays a NaN (its payload
 * may differ from isa/pe_input.h's canonical one), which changes no result:
 * any NaN operand gives a NaN sum, stored as the canonical NaN. */
AVX512 INLINE __m512 bf16_widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

AVX512 INLINE void moving_row(const moving *mv, uint32_t k, __m512 *b0, __m512 *b1, int load) {
    if (!load) {
        *b0 = _mm512_loadu_ps(mv->b + k * mv->ldb);
        *b1 = _mm512_loadu_ps(mv->b + k * mv->ldb + 16);
        return;
    }
    const uint8_t *row = mv->src + (int64_t)k * mv->step;
    const int ahead = k + PREFETCH_ROWS < mv->rows;
    if (ahead) _mm_prefetch((const char *)(row + PREFETCH_ROWS * mv->step), _MM_HINT_T0);
    if (mv->bf16) {
        *b0 = bf16_widen(_mm256_loadu_si256((const void *)row));
        *b1 = bf16_widen(_mm256_loadu_si256((const void *)(row + 32)));
    } else {
        if (ahead) _mm_prefetch((const char *)(row + PREFETCH_ROWS * mv->step + 64), _MM_HINT_T0);
        *b0 = _mm512_loadu_ps((const void *)row);
        *b1 = _mm512_loadu_ps((const void *)(row + 64));
    }
    _mm512_storeu_ps(mv->panel + k * NR, *b0);
    _mm512_storeu_ps(mv->panel + k * NR + 16, *b1);
}

AVX512 INLINE void tile(uint32_t K, const float *a, const moving *mv, float *c, int64_t ldc, int acc, int fused,
                        int load) {
    __m512 b0, b1;
    moving_row(mv, 0, &b0, &b1, load);
#define ROW_INIT(i)                             \
    __m512 c##i##0, c##i##1;                    \
    {                                           \
        __m512 ai = _mm512_set1_ps(a[i]);       \
        c##i##0 = _mm512_mul_ps(ai, b0);        \
        c##i##1 = _mm512_mul_ps(ai, b1);        \
    }
    ROWS(ROW_INIT)
#undef ROW_INIT
    for (uint32_t k = 1; k < K; k++) {
        a += MR;
        moving_row(mv, k, &b0, &b1, load);
#define ROW_STEP(i)                             \
    {                                           \
        __m512 ai = _mm512_set1_ps(a[i]);       \
        c##i##0 = step(c##i##0, ai, b0, fused); \
        c##i##1 = step(c##i##1, ai, b1, fused); \
    }
        ROWS(ROW_STEP)
#undef ROW_STEP
    }
#define ROW_STORE(i)                                 \
    store(c + (int64_t)(i) * ldc, c##i##0, acc);      \
    store(c + (int64_t)(i) * ldc + 16, c##i##1, acc);
    ROWS(ROW_STORE)
#undef ROW_STORE
}

AVX512 static void tile_separate(uint32_t K, const float *a, const float *b, uint64_t ldb, float *c,
                                 int64_t ldc, int acc) {
    const moving mv = {b, ldb, NULL, 0, 0, NULL, K};
    tile(K, a, &mv, c, ldc, acc, 0, 0);
}

AVX512 static void tile_fused(uint32_t K, const float *a, const float *b, uint64_t ldb, float *c, int64_t ldc,
                              int acc) {
    const moving mv = {b, ldb, NULL, 0, 0, NULL, K};
    tile(K, a, &mv, c, ldc, acc, 1, 0);
}

AVX512 static void tile_separate_load(uint32_t K, const float *a, const uint8_t *src, int64_t step, int bf16,
                                      float *panel, float *c, int64_t ldc, int acc) {
    const moving mv = {NULL, 0, src, step, bf16, panel, K};
    tile(K, a, &mv, c, ldc, acc, 0, 1);
}

AVX512 static void scan(const float *x, uint32_t rows, uint32_t cols, uint64_t ld, uint32_t *lo, uint32_t *hi) {
    pe_scan(x, rows, cols, ld, lo, hi);
}

AVX512 static void pack(const uint8_t *src, int64_t step, int bf16, uint32_t K, uint32_t cols, uint32_t nr, uint64_t ld,
                 uint64_t panel_stride, float *out) {
    pe_pack_rows(src, step, bf16, K, cols, nr, ld, panel_stride, out);
}

AVX512 static void blocks(const float *st, uint64_t ld, uint32_t K, uint32_t M, float *out) {
    pe_pack_blocks(st, ld, K, M, MR, out);
}

static const nx_pe_tiles tiles = {MR, NR, tile_separate, tile_fused, tile_separate_load, scan, pack, blocks};
const nx_pe_tiles *const nx_pe_tiles_avx512 = &tiles;
#else
const nx_pe_tiles *const nx_pe_tiles_avx512 = 0;
#endif
