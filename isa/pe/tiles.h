/* Internal to isa/pe/: the register-tile kernels the datapath driver
 * (datapath.c) calls, one set per kernel file (tiles_*.c).
 *
 * A tile kernel computes one full MR x NR block of outputs:
 *   a: the stationary block, packed a[k * MR + i] (i < MR), K rows;
 *   b: the moving panel, b[k * ldb + j] (j < NR), fp32;
 *   c: output row i at c + i * ldc (floats, host order, any alignment).
 * Per output element, exactly:
 *   p = a0 * b0;  p = p + ak * bk  for k = 1 .. K-1  (each product rounded,
 *                                                     each sum rounded)
 *   c = acc ? c + p : p;  a NaN c is stored as NX_PE_QNAN_BITS.
 * `separate` does each step as a rounded multiply then a rounded add.
 * `fused` may do p + ak * bk as one fused multiply-add: the driver calls it
 * only where every product ak * bk is exact in fp32 (neither rounded nor
 * outside the normal range), where fma(ak, bk, p) = p + (ak * bk) bit for
 * bit. Vectorising over j never reorders one element's sum, so every kernel
 * gives the scalar kernel's bits. K >= 1. */
#ifndef NXSIM_ISA_PE_TILES_H
#define NXSIM_ISA_PE_TILES_H

#include <stdint.h>

/* The PE's NaN result (the RTL array's, sim/rtl). */
#define NX_PE_QNAN_BITS 0x7fc00000u

typedef void nx_pe_tile_fn(uint32_t K, const float *a, const float *b, uint64_t ldb, float *c, int64_t ldc,
                           int acc);

/* The separate tile of a panel's first block, reading the moving panel
 * straight from its rows: row k's NR elements at src + k * step (contiguous,
 * little-endian fp32, or bf16 when `bf16`), converted, used, and stored to
 * panel[k * NR + j] for the panel's other blocks. It prefetches rows ahead
 * (they are SBUF partitions, far apart), so the conversion pass over the
 * moving tile disappears under the first block's arithmetic. */
typedef void nx_pe_load_tile_fn(uint32_t K, const float *a, const uint8_t *src, int64_t step, int bf16, float *panel,
                                float *c, int64_t ldc, int acc);

/* pe_scan (scan.h) compiled for the kernel's instruction set. A kernel
 * without a fused tile has neither (NULL). */
typedef void nx_pe_scan_fn(const float *x, uint32_t rows, uint32_t cols, uint64_t ld, uint32_t *lo,
                           uint32_t *hi);

/* pe_pack_rows (panel.h) compiled for the kernel's instruction set; NULL:
 * the kernel reads moving through the generic converter only. */
typedef void nx_pe_pack_fn(const uint8_t *src, int64_t step, int bf16, uint32_t K, uint32_t cols, uint32_t nr,
                           uint64_t ld, uint64_t panel_stride, float *out);

/* pe_pack_blocks (panel.h) with the kernel's MR. */
typedef void nx_pe_blocks_fn(const float *st, uint64_t ld, uint32_t K, uint32_t M, float *out);

typedef struct nx_pe_tiles {
    uint32_t mr, nr;          /* the tile: mr <= NX_PE_MR_MAX, nr <= NX_PE_NR_MAX */
    nx_pe_tile_fn *separate;
    nx_pe_tile_fn *fused;
    nx_pe_load_tile_fn *separate_load; /* NULL: the kernel has none */
    nx_pe_scan_fn *scan;
    nx_pe_pack_fn *pack;
    nx_pe_blocks_fn *blocks;
} nx_pe_tiles;

enum { NX_PE_MR_MAX = 16, NX_PE_NR_MAX = 64 };

/* NULL entries: not compiled in this build (not x86-64 GCC). */
extern const nx_pe_tiles nx_pe_tiles_scalar;
extern const nx_pe_tiles nx_pe_tiles_vector;
extern const nx_pe_tiles *const nx_pe_tiles_avx2;
extern const nx_pe_tiles *const nx_pe_tiles_avx512;

/* The vector kernel's fused tile lives in its own file, compiled with
 * -ffp-contract=fast (tiles_vector_fused.c). */
nx_pe_tile_fn nx_pe_tile_vector_fused;

#endif
