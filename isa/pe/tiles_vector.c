/* The vector kernel (tile_vector.h): the separate multiply-and-add tile and
 * the kernel's table; its fused tile is tiles_vector_fused.c. */
#include "tile_vector.h"
#define PE_PANEL_BYTES PE_VEC_BYTES
#include "panel.h"

static void tile_separate(uint32_t K, const float *a, const float *b, uint64_t ldb, float *c, int64_t ldc,
                          int acc) {
    pe_tile_vector(K, a, b, ldb, c, ldc, acc);
}

static void scan(const float *x, uint32_t rows, uint32_t cols, uint64_t ld, uint32_t *lo, uint32_t *hi) {
    pe_scan(x, rows, cols, ld, lo, hi);
}

static void pack(const uint8_t *src, int64_t step, int bf16, uint32_t K, uint32_t cols, uint32_t nr, uint64_t ld,
                 uint64_t panel_stride, float *out) {
    pe_pack_rows(src, step, bf16, K, cols, nr, ld, panel_stride, out);
}

static void blocks(const float *st, uint64_t ld, uint32_t K, uint32_t M, float *out) {
    pe_pack_blocks(st, ld, K, M, PE_VEC_MR, out);
}

const nx_pe_tiles nx_pe_tiles_vector = {PE_VEC_MR, PE_VEC_NR, tile_separate, nx_pe_tile_vector_fused, NULL,
                                        scan,      pack,      blocks};
