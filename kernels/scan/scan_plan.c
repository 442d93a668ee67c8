/* selective_scan's plan (kernels/scan/scan.h, docs/parts/scan.md "Plan").
 * A step is one chunk of nc states of one channel tile over one sequence
 * tile of T elements. Per partition:
 *   Bm and Cm broadcast to every partition   2 sets x 2 x N T (dtype)
 *   exp(delta A) of a chunk and the sum of
 *   the chunks before it                     3 sets x (nc + 1) T fp32
 *   the states h of a chunk                  2 sets x nc T fp32
 *   u, delta                                 3 sets x 2 x T (dtype)
 *   delta u, y (and softplus(delta))         2 sets x (2 (+ 2)) x T fp32
 *   [y in a 16-bit dtype, with skip]          2 sets x T (dtype)
 *   A, D and the carried state per channel tile, 2 sets (one per batch
 *   segment in flight).
 * T: 2048 bytes of the dtype (a DMA row at full efficiency), or L when
 * shorter, halved until the buffers fit with some nc; nc: up to 8 states
 * (instructions of 8 T elements), fewer when a core has few tiles, so that
 * it still has about 16 steps to pipeline (the first step's loads and the
 * last step's reduction are not overlapped: a step's time each), but at
 * least 2 (each instruction pays its engine's fixed start); the most that
 * fit. With 4 or more channel tiles per core (the broadcasts shared, the
 * engines bound) chunks of at least 4 states come first, at a shorter T if
 * need be. nc T is capped by the engines' free size. */
#include "scan.h"

#define SC_NC_MAX 8
#define SC_STEPS_WANTED 16
#define SC_CT_ENGINE 4
#define SC_NC_ENGINE 4

static uint64_t rb(uint64_t elems, nx_dtype dt) { return (elems * nx_dtype_size(dt) + 63) / 64 * 64; }

/* Cm through the PE: with one channel tile per core the broadcasts serve
 * one tile each, and in fp32 (8 N T bytes per partition per sequence
 * tile) they, not the engines, bound the step; the PE is idle. */
static int pe_cm(const nx_scan_params *p, const nx_geometry *geo, uint64_t T, uint64_t ct_max) {
    return ct_max == 1 && p->dtype == NX_DT_FP32 && T <= geo->pe_moving_free_max && T * 4 <= geo->psum_bank_bytes;
}

/* pe: the partitions of the PE's ones row (0: Cm broadcast by DMA) */
static uint64_t plan_bytes(const nx_scan_params *p, uint64_t T, uint64_t nc, uint64_t ct_max, uint64_t pe) {
    const nx_dtype dt = p->dtype, f = NX_DT_FP32;
    uint64_t b = 2 * 2 * rb(p->N * T, dt) + 3 * rb((nc + 1) * T, f) + 2 * rb(nc * T, f);
    b += 3 * 2 * rb(T, dt) + 2 * (2 + (p->delta_softplus ? 2 : 0)) * rb(T, f);
    if (p->skip && dt != f) b += 2 * rb(T, dt); /* y in its dtype (the skip term writes it) */
    b += 2 * (rb(ct_max * p->N, p->a_dtype) + rb(ct_max, p->skip ? p->d_dtype : f) + rb(ct_max * p->N, f));
    if (pe) b += 3 * rb(nc * T, dt) + rb(pe, f); /* a chunk's Cm rows (one partition), 3 sets; the ones row */
    return b;
}

int nx_scan_plan_make(const nx_scan_params *p, const nx_geometry *geo, uint32_t cores, const char *bm_name,
                      nx_scan_plan *out, nx_error *err) {
    const uint64_t P = geo->partitions, rows = p->B * p->C, share = (rows + cores - 1) / (cores ? cores : 1);
    const uint64_t seg = share < p->C ? share : p->C;
    /* a core's part of one batch is tiled from its first channel */
    out->ct_max = (seg + P - 1) / P;
    const uint64_t budget = geo->sbuf_partition_bytes, fmax = geo->sbuf_free_elems_max;
    /* With several channel tiles per core the broadcasts are shared and the
     * engines bound: first keep chunks of at least SC_NC_ENGINE states
     * (fewer instructions, each with its fixed start) at a shorter T; then
     * (or with few channel tiles, DMA-heavy) the longest T with any nc. */
    for (int pass = out->ct_max >= SC_CT_ENGINE ? 0 : 1; pass < 2; pass++) {
    uint64_t T = 2048 / nx_dtype_size(p->dtype);
    if (T > p->L) T = p->L;
    for (;;) {
        const uint64_t tiles = (p->L + T - 1) / T * out->ct_max;
        uint64_t want = p->N * tiles / SC_STEPS_WANTED;
        want = want < 2 ? 2 : want > SC_NC_MAX ? SC_NC_MAX : want;
        const uint64_t top = p->N < want ? p->N : want, floor = pass ? 1 : top < SC_NC_ENGINE ? top : SC_NC_ENGINE;
        for (uint64_t nc = top; nc >= floor; nc--) {
            uint64_t pe = pe_cm(p, geo, T, out->ct_max) ? P : 0;
            uint64_t bytes = plan_bytes(p, T, nc, out->ct_max, pe);
            if (bytes > budget && pe) bytes = plan_bytes(p, T, nc, out->ct_max, pe = 0);
            if (bytes <= budget && nc * T <= fmax && p->N * T <= fmax) {
                /* as many chunks, of even sizes (16 = 4 x 4, not 5 + 5 + 5 + 1) */
                out->chunks = (p->N + nc - 1) / nc;
                out->nc = (p->N + out->chunks - 1) / out->chunks;
                out->T = T, out->pe_cm = pe != 0, out->bytes = plan_bytes(p, T, out->nc, out->ct_max, pe);
                return 0;
            }
        }
        if (T <= 64) break;
        T = T / 2 < 64 ? 64 : T / 2;
    }
    }
    const uint64_t T = p->L < 64 ? p->L : 64;
    return nx_fail(err,
                   "operand 3 (%s): N = %llu needs %llu bytes per partition and %llu elements per instruction at "
                   "the smallest tile (T = %llu), SBUF has %llu bytes and %llu elements",
                   bm_name, (unsigned long long)p->N, (unsigned long long)plan_bytes(p, T, 1, out->ct_max, 0),
                   (unsigned long long)(p->N * T), (unsigned long long)T, (unsigned long long)budget,
                   (unsigned long long)fmax);
}
