/* The `transpose` composite's dma step (transpose_steps.h): a reordering
 * of the dims that keeps the innermost one innermost, as HBM -> HBM
 * transfers of whole runs. The output rows (every dim but the last) are
 * split over the grid (nx_kctx_rows); each transfer is a box of them:
 * up to 128 indices of one dim on its partitions (the source's stride
 * there), the dims inside it whole as free dims (at most 4), the run last,
 * sized near a target of bytes that keeps every DMA lane busy. A run too
 * long for the target is cut into pieces. */
#include <string.h>

#include "transpose_plan.h"
#include "transpose_steps.h"

#include "isa/builder.h"

#define TD_MIN_BYTES (16u * 1024u)
#define TD_MAX_BYTES (256u * 1024u)

int nx_transpose_dma_step(nx_kctx *k, nx_dtype dt, uint64_t src_off, uint64_t dst_off, uint32_t ndims,
                          const uint64_t *shape, const int64_t *perm, nx_error *err) {
    uint32_t p[NX_KERNEL_MAX_DIMS] = {0}, nd;
    uint64_t size[NX_KERNEL_MAX_DIMS];
    int64_t gperm[NX_KERNEL_MAX_DIMS];
    for (uint32_t i = 0; i < ndims; i++) p[i] = (uint32_t)perm[i];
    nx_transpose_groups(ndims, shape, p, &nd, size, gperm);
    const uint64_t es = nx_dtype_size(dt);
    uint64_t elems = 1;
    for (uint32_t i = 0; i < ndims; i++) elems *= shape[i];
    if (nd <= 1) {
        nx_transpose_plan pl = {.batch = 1, .rows = elems, .cols = 1, .elems = elems, .copy = 1, .dtype = dt,
                                .in_offset = src_off, .out_offset = dst_off};
        return nx_transpose_emit_copy(k, &pl, err);
    }
    if (gperm[nd - 1] != (int64_t)nd - 1) return nx_fail(err, "transpose dma step: the last dim moves");
    /* output dims o[], the source's and the destination's strides */
    uint64_t o[NX_KERNEL_MAX_DIMS], in_stride[NX_KERNEL_MAX_DIMS], ss[NX_KERNEL_MAX_DIMS], ds[NX_KERNEL_MAX_DIMS];
    uint64_t acc = 1;
    for (uint32_t d = nd; d-- > 0;) {
        in_stride[d] = acc;
        acc *= size[d];
    }
    acc = 1;
    for (uint32_t d = nd; d-- > 0;) {
        o[d] = size[gperm[d]];
        ss[d] = in_stride[gperm[d]];
        ds[d] = acc;
        acc *= o[d];
    }
    for (uint32_t d = 0; d + 1 < nd; d++)
        if (ss[d] > INT32_MAX || ds[d] > INT32_MAX)
            return nx_fail(err, "transpose dma step: a stride of %llu elements exceeds 32-bit access patterns",
                           (unsigned long long)(ss[d] > ds[d] ? ss[d] : ds[d]));
    const uint64_t run = o[nd - 1];
    uint64_t inner[NX_KERNEL_MAX_DIMS]; /* output rows per index of dim d */
    inner[nd - 2] = 1;
    for (uint32_t d = nd - 2; d-- > 0;) inner[d] = inner[d + 1] * o[d + 1];
    const uint64_t rows = inner[0] * o[0];
    uint64_t lo, hi;
    nx_kctx_rows(k, rows, &lo, &hi);
    uint64_t target = (hi - lo) * run * es / (2ull * nx_kctx_lanes(k));
    target = target < TD_MIN_BYTES ? TD_MIN_BYTES : target > TD_MAX_BYTES ? TD_MAX_BYTES : target;
    /* the outermost partition dim whose rows fit the target (at most 4 free dims inside it) */
    uint32_t j0 = nd >= 5 ? nd - 5 : 0;
    while (j0 < nd - 2 && inner[j0] * run * es > target) j0++;
    const uint32_t parts = nx_kctx_geometry(k)->partitions;
    const uint64_t piece = run * es > target ? (target / es ? target / es : 1) : run;
    for (uint64_t pos = lo; pos < hi;) {
        uint64_t idx[NX_KERNEL_MAX_DIMS], r = pos;
        for (uint32_t d = nd - 1; d-- > 0;) {
            idx[d] = r % o[d];
            r /= o[d];
        }
        uint32_t j = j0;
        for (;; j++) {
            int aligned = pos + inner[j] <= hi;
            for (uint32_t d = j + 1; aligned && d + 1 < nd; d++) aligned = idx[d] == 0;
            if (aligned || j == nd - 2) break;
        }
        uint64_t c = o[j] - idx[j], fit = (hi - pos) / inner[j], by = target / (inner[j] * run * es);
        if (fit < c) c = fit;
        if (by < c) c = by ? by : 1;
        if (c > parts) c = parts;
        if (piece < run) c = 1; /* pieces of several rows would share footprint boxes */
        uint64_t s0 = 0, d0 = 0;
        for (uint32_t d = 0; d + 1 < nd; d++) {
            s0 += idx[d] * ss[d];
            d0 += idx[d] * ds[d];
        }
        for (uint64_t r0 = 0; r0 < run; r0 += piece) {
            uint32_t nf = 0;
            int32_t sst[NX_MAX_FREE_DIMS], dst_[NX_MAX_FREE_DIMS];
            uint32_t cnt[NX_MAX_FREE_DIMS];
            for (uint32_t d = j + 1; d + 1 < nd; d++, nf++) {
                sst[nf] = (int32_t)ss[d];
                dst_[nf] = (int32_t)ds[d];
                cnt[nf] = (uint32_t)o[d];
            }
            sst[nf] = dst_[nf] = 1;
            cnt[nf++] = (uint32_t)(run - r0 < piece ? run - r0 : piece);
            nx_operand src = nx_ap(NX_OPK_HBM, dt, 0, (uint32_t)c, (int32_t)ss[j], src_off + (s0 + r0) * es, nf, sst, cnt);
            nx_operand dst = nx_ap(NX_OPK_HBM, dt, 0, (uint32_t)c, (int32_t)ds[j], dst_off + (d0 + r0) * es, nf, dst_, cnt);
            if (nx_kctx_dma(k, &dst, &src, err) != 0) return -1;
        }
        pos += c * inner[j];
    }
    return 0;
}
