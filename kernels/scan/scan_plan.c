/* selective_scan's plan (kernels/scan/scan.h): the sequence tile T, the
 * largest of 2048, 1024, ..., 64 (or L itself when shorter) whose buffers
 * fit one SBUF partition (docs/parts/scan.md, "Plan"):
 *   Bm and Cm broadcast to every partition   2 sets x 2 x N T (dtype)
 *   exp(delta A) and the state sequence h    2 sets x 2 x N T fp32
 *   u, delta                                 3 sets x 2 x T (dtype)
 *   delta u, y (and softplus(delta))         2 sets x (2 + 2 softplus) x T fp32
 *   A, D and the carried state per channel tile, 2 sets (one per batch
 *   segment in flight).
 * N T is also capped by the engines' free size (one instruction streams
 * the N rows of a tile). */
#include "scan.h"

static uint64_t rb(uint64_t elems, nx_dtype dt) { return (elems * nx_dtype_size(dt) + 63) / 64 * 64; }

static uint64_t plan_bytes(const nx_scan_params *p, uint64_t T, uint64_t ct_max) {
    const nx_dtype dt = p->dtype, f = NX_DT_FP32;
    uint64_t b = 2 * 2 * rb(p->N * T, dt) + 2 * 2 * rb(p->N * T, f);
    b += 3 * 2 * rb(T, dt) + 2 * (2 + (p->delta_softplus ? 2 : 0)) * rb(T, f);
    b += 2 * (rb(ct_max * p->N, p->a_dtype) + rb(ct_max, p->skip ? p->d_dtype : f) + rb(ct_max * p->N, f));
    return b;
}

int nx_scan_plan_make(const nx_scan_params *p, const nx_geometry *geo, uint32_t cores, const char *bm_name,
                      nx_scan_plan *out, nx_error *err) {
    const uint64_t P = geo->partitions, rows = p->B * p->C, share = (rows + cores - 1) / (cores ? cores : 1);
    const uint64_t seg = share < p->C ? share : p->C;
    /* a core's part of one batch is tiled from its first channel */
    out->ct_max = (seg + P - 1) / P;
    const uint64_t budget = geo->sbuf_partition_bytes;
    uint64_t T = 64, bytes = 0;
    for (uint64_t t = 2048; t >= 64; t /= 2) {
        T = t < p->L ? t : p->L;
        bytes = plan_bytes(p, T, out->ct_max);
        if (bytes <= budget && p->N * T <= geo->sbuf_free_elems_max) break;
    }
    if (bytes > budget || p->N * T > geo->sbuf_free_elems_max)
        return nx_fail(err,
                       "operand 3 (%s): N = %llu needs %llu bytes per partition and %llu elements per instruction at "
                       "the smallest tile (T = %llu), SBUF has %llu bytes and %u elements",
                       bm_name, (unsigned long long)p->N, (unsigned long long)bytes,
                       (unsigned long long)(p->N * T), (unsigned long long)T, (unsigned long long)budget,
                       geo->sbuf_free_elems_max);
    out->T = T;
    out->bytes = bytes;
    return 0;
}
