/* The scalar kernel: the PE datapath's arithmetic written as plain C loops,
 * one element's sum at a time in k order (tiles.h). It is the reference the
 * other kernels are tested against and the kernel of last resort. The
 * library builds with -ffp-contract=off, so `p + a * b` stays a rounded
 * multiply and a rounded add. It has no fused tile (nor a scan to decide
 * where one may run). */
#include <stddef.h>
#include <string.h>

#include "panel.h"
#include "tiles.h"

enum { MR = 8, NR = 32 };

static void tile_scalar(uint32_t K, const float *a, const float *b, uint64_t ldb, float *c, int64_t ldc,
                        int acc) {
    float part[MR][NR];
    for (uint32_t i = 0; i < MR; i++)
        for (uint32_t j = 0; j < NR; j++) part[i][j] = a[i] * b[j];
    for (uint32_t k = 1; k < K; k++) {
        const float *ak = a + (uint64_t)k * MR, *bk = b + (uint64_t)k * ldb;
        for (uint32_t i = 0; i < MR; i++)
            for (uint32_t j = 0; j < NR; j++) part[i][j] = part[i][j] + ak[i] * bk[j];
    }
    const uint32_t qnan = NX_PE_QNAN_BITS;
    for (uint32_t i = 0; i < MR; i++) {
        float *row = c + (int64_t)i * ldc;
        float out[NR];
        if (acc) {
            memcpy(out, row, sizeof out);
            for (uint32_t j = 0; j < NR; j++) out[j] = out[j] + part[i][j];
        } else {
            memcpy(out, part[i], sizeof out);
        }
        for (uint32_t j = 0; j < NR; j++)
            if (out[j] != out[j]) memcpy(&out[j], &qnan, sizeof qnan);
        memcpy(row, out, sizeof out);
    }
}

static void blocks(const float *st, uint64_t ld, uint32_t K, uint32_t M, float *out) {
    pe_pack_blocks(st, ld, K, M, MR, out);
}

const nx_pe_tiles nx_pe_tiles_scalar = {MR, NR, tile_scalar, NULL, NULL, NULL, NULL, blocks};
