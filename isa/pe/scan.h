/* Internal to isa/pe/: the magnitude range of a block of fp32 values, the
 * bound datapath.c uses to decide whether a tile's products are all exact.
 * Written once with GCC vector extensions; each kernel file compiles it for
 * its own instruction set (tiles_*.c wrap it under their target attribute),
 * so the scan runs at the kernel's vector width. */
#ifndef NXSIM_ISA_PE_SCAN_H
#define NXSIM_ISA_PE_SCAN_H

#include <stdint.h>
#include <string.h>

typedef uint32_t pe_scan_vu __attribute__((vector_size(64)));

/* Over rows x cols floats at x + r * ld (+ c): *lo = (smallest nonzero
 * |x| as fp32 bits) - 1, so UINT32_MAX when every value is zero (an Inf or
 * NaN counts as nonzero and as larger than any finite value); *hi = the
 * largest finite |x| as fp32 bits (0 when there is none). fp32 bit
 * patterns of non-negative values order as the values do. */
static inline __attribute__((always_inline)) void pe_scan(const float *x, uint32_t rows, uint32_t cols,
                                                          uint64_t ld, uint32_t *lo_out, uint32_t *hi_out) {
    pe_scan_vu lo = (pe_scan_vu){0} - 1u, hi = (pe_scan_vu){0};
    uint32_t slo = UINT32_MAX, shi = 0;
    for (uint32_t r = 0; r < rows; r++) {
        const float *row = x + r * ld;
        uint32_t j = 0;
        for (; j + 16 <= cols; j += 16) {
            pe_scan_vu u;
            memcpy(&u, row + j, sizeof u);
            u &= 0x7fffffffu;
            pe_scan_vu v = u & (pe_scan_vu)(u < 0x7f800000u);
            pe_scan_vu gt = (pe_scan_vu)(v > hi);
            hi = (v & gt) | (hi & ~gt);
            pe_scan_vu w = u - 1u;
            pe_scan_vu lt = (pe_scan_vu)(w < lo);
            lo = (w & lt) | (lo & ~lt);
        }
        for (; j < cols; j++) {
            uint32_t u;
            memcpy(&u, row + j, sizeof u);
            u &= 0x7fffffffu;
            if (u < 0x7f800000u && u > shi) shi = u;
            if (u - 1u < slo) slo = u - 1u;
        }
    }
    for (int i = 0; i < 16; i++) {
        if (lo[i] < slo) slo = lo[i];
        if (hi[i] > shi) shi = hi[i];
    }
    *lo_out = slo;
    *hi_out = shi;
}

#endif
