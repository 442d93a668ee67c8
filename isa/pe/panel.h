/* Internal to isa/pe/: two passes over operands that run at a kernel's
 * vector width, written once with GCC vector extensions; each kernel file
 * compiles them for its own instruction set (tiles_*.c wrap them under
 * their target attribute):
 *   pe_scan        the magnitude range of a block of fp32 values, the bound
 *                  datapath.c uses to decide whether a tile's products are
 *                  all exact;
 *   pe_pack_rows   PE input rows (contiguous fp32 or bf16) converted to fp32
 *                  panels;
 *   pe_pack_blocks the stationary tile cut into blocks of MR columns. */
#ifndef NXSIM_ISA_PE_PANEL_H
#define NXSIM_ISA_PE_PANEL_H

#include <stdint.h>
#include <string.h>

#include "../bytes.h"

/* The including file sets the vector width its instruction set handles
 * natively (GCC lowers wider generic vectors, and their compares, badly). */
#ifndef PE_PANEL_BYTES
#define PE_PANEL_BYTES 16
#endif

typedef int32_t pe_panel_vi __attribute__((vector_size(PE_PANEL_BYTES)));
typedef uint32_t pe_panel_vu __attribute__((vector_size(PE_PANEL_BYTES)));
enum { PE_PANEL_LANES = PE_PANEL_BYTES / 4 };

/* One vector's |x| bits into the running minimum of the nonzero ones and
 * maximum of the finite ones. */
static inline __attribute__((always_inline)) void pe_scan_vec(const pe_panel_vi *x, pe_panel_vi *lo,
                                                              pe_panel_vi *hi) {
    pe_panel_vi u = *x & INT32_MAX;
    pe_panel_vi v = u & (u < 0x7f800000);
    pe_panel_vi gt = v > *hi;
    *hi = (v & gt) | (*hi & ~gt);
    pe_panel_vi w = u | ((u == 0) & INT32_MAX);
    pe_panel_vi lt = w < *lo;
    *lo = (w & lt) | (*lo & ~lt);
}

static inline __attribute__((always_inline)) void pe_scan_one(int32_t u, int32_t *lo, int32_t *hi) {
    u &= INT32_MAX;
    if (u < 0x7f800000 && u > *hi) *hi = u;
    if (u != 0 && u < *lo) *lo = u;
}

static inline __attribute__((always_inline)) void pe_scan_end(const pe_panel_vi *lo, const pe_panel_vi *hi,
                                                              int32_t slo, int32_t shi, uint32_t *lo_out,
                                                              uint32_t *hi_out) {
    for (int i = 0; i < PE_PANEL_LANES; i++) {
        if ((*lo)[i] < slo) slo = (*lo)[i];
        if ((*hi)[i] > shi) shi = (*hi)[i];
    }
    *lo_out = (uint32_t)slo;
    *hi_out = (uint32_t)shi;
}

/* Over rows x cols floats at x + r * ld (+ c): *lo = the smallest nonzero
 * |x| as fp32 bits (INT32_MAX when every value is zero; an Inf or NaN
 * counts, as larger than any finite value); *hi = the largest finite |x|
 * as fp32 bits (0 when there is none). The bit patterns of non-negative
 * fp32 values order as the values do; |x| bits fit int32, so the compares
 * are signed ones every vector ISA has. */
static inline __attribute__((always_inline)) void pe_scan(const float *x, uint32_t rows, uint32_t cols,
                                                          uint64_t ld, uint32_t *lo_out, uint32_t *hi_out) {
    pe_panel_vi lo = (pe_panel_vi){0} + INT32_MAX, hi = (pe_panel_vi){0};
    int32_t slo = INT32_MAX, shi = 0;
    for (uint32_t r = 0; r < rows; r++) {
        const float *row = x + r * ld;
        uint32_t j = 0;
        for (; j + PE_PANEL_LANES <= cols; j += PE_PANEL_LANES) {
            pe_panel_vi u;
            memcpy(&u, row + j, sizeof u);
            pe_scan_vec(&u, &lo, &hi);
        }
        for (; j < cols; j++) {
            int32_t u;
            memcpy(&u, row + j, sizeof u);
            pe_scan_one(u, &slo, &shi);
        }
    }
    pe_scan_end(&lo, &hi, slo, shi, lo_out, hi_out);
}

enum { PE_PREFETCH_ROWS = 4 };

typedef uint16_t pe_panel_vh __attribute__((vector_size(PE_PANEL_BYTES / 2)));

/* PE_PANEL_LANES bf16 codes at src -> *out, fp32 bits as
 * nx_bf16_bits_to_f32 (isa/bytes.h) gives them: the code shifted up, a NaN
 * as the canonical quiet NaN with its sign. (Vectors pass by pointer: the
 * including file enables its instruction set per function only.) */
static inline __attribute__((always_inline)) void pe_bf16_widen(const uint8_t *src, pe_panel_vu *out) {
    pe_panel_vh h;
    memcpy(&h, src, sizeof h);
    pe_panel_vu u = __builtin_convertvector(h, pe_panel_vu) << 16;
    pe_panel_vu nan = (pe_panel_vu)((pe_panel_vi)(u & 0x7fffffffu) > 0x7f800000);
    *out = (u & ~nan) | (((u & 0x80000000u) | NX_F32_CANONICAL_NAN) & nan);
}

/* Moving rows k < K of `cols` elements at src + k * step (contiguous,
 * little-endian fp32, or bf16 when `bf16`) -> fp32 in panels of nr
 * columns: element (k, j) at out + (j / nr) * panel_stride + k * ld +
 * j % nr; the last panel is zero-padded to nr columns. Each row is read
 * front to back (one stream per row for the hardware prefetcher). */
static inline __attribute__((always_inline)) void pe_pack_rows(const uint8_t *src, int64_t step, int bf16,
                                                               uint32_t K, uint32_t cols, uint32_t nr,
                                                               uint64_t ld, uint64_t panel_stride,
                                                               float *out) {
    const uint32_t es = bf16 ? 2u : 4u, row_bytes = cols * es;
    for (uint32_t k = 0; k < K; k++) {
        const uint8_t *row = src + (int64_t)k * step;
        /* rows are partitions, far apart: the hardware prefetcher starts
         * over on each, so ask for a row a few rows ahead */
        if (k + PE_PREFETCH_ROWS < K)
            for (uint32_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(row + PE_PREFETCH_ROWS * step + b, 0, 3);
        float *panel = out + (uint64_t)k * ld;
        for (uint32_t j0 = 0; j0 < cols; j0 += nr, panel += panel_stride) {
            const uint32_t w = cols - j0 < nr ? cols - j0 : nr;
            const uint32_t full = w / PE_PANEL_LANES * PE_PANEL_LANES;
            const uint8_t *in = row + (uint64_t)j0 * es;
            for (uint32_t j = 0; j < full; j += PE_PANEL_LANES) {
                pe_panel_vu u;
                if (bf16) {
                    pe_bf16_widen(in + 2 * j, &u);
                } else {
                    memcpy(&u, in + 4 * j, sizeof u);
                }
                memcpy(panel + j, &u, sizeof u);
            }
            for (uint32_t j = full; j < nr; j++) {
                uint32_t bits = 0;
                if (j < w && bf16) bits = nx_f32_bits(nx_bf16_bits_to_f32((uint16_t)(in[2 * j] | in[2 * j + 1] << 8)));
                else if (j < w) memcpy(&bits, in + 4 * j, sizeof bits);
                memcpy(panel + j, &bits, sizeof bits);
            }
        }
    }
}

/* The stationary tile (K rows of M fp32 at st + k * ld) -> blocks of mr
 * columns, block b's row k at out + (b * K + k) * mr, zero past M. mr is a
 * constant of the calling kernel, so a block row is one fixed-size copy. */
static inline __attribute__((always_inline)) void pe_pack_blocks(const float *st, uint64_t ld, uint32_t K,
                                                                 uint32_t M, uint32_t mr, float *out) {
    const uint32_t full = M / mr, blocks = (M + mr - 1) / mr;
    for (uint32_t k = 0; k < K; k++) {
        const float *in = st + k * ld;
        for (uint32_t b = 0; b < full; b++)
            memcpy(out + ((uint64_t)b * K + k) * mr, in + b * mr, mr * sizeof(float));
        for (uint32_t b = full; b < blocks; b++) {
            float *o = out + ((uint64_t)b * K + k) * mr;
            for (uint32_t i = 0; i < mr; i++) o[i] = b * mr + i < M ? in[b * mr + i] : 0.0f;
        }
    }
}

#endif
