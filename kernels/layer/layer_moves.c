/* decoder_layer's glue (kernels/layer/layer_impl.h): the HBM moves between
 * the sub-kernels' layouts (the attention's heads layout to the o
 * projection's tokens, the caches' copy-through) and the layer's last
 * residual add. The moves are DMA only; the
 * residual is a DMA load of both, one VectorE add (fp32, one rounding to
 * the dtype) and a store, double-buffered over chunks of every partition. */
#include "layer_impl.h"

#include "isa/intmath.h"

#define LAYER_RUN 8192u    /* elements per flat-copy row */
#define LAYER_COLS 2048u   /* residual tile width (elements) */

int nx_layer_copy_rows(nx_kctx *k, nx_dtype dt, uint64_t dst, uint64_t dp, uint64_t src, uint64_t sp, uint64_t n,
                       uint64_t cols, nx_error *err) {
    const uint64_t es = nx_dtype_size(dt);
    for (uint64_t r = 0; r < n; r += 128) {
        const uint32_t rows = (uint32_t)nx_min_u64(128, n - r);
        nx_operand d = nx_ap_hbm_rows(dt, dst + r * dp * es, rows, (int32_t)dp, (uint32_t)cols);
        nx_operand s = nx_ap_hbm_rows(dt, src + r * sp * es, rows, (int32_t)sp, (uint32_t)cols);
        if (nx_kctx_dma(k, &d, &s, err) != 0) return -1;
    }
    return 0;
}

int nx_layer_copy_flat(nx_kctx *k, nx_dtype dt, uint64_t dst, uint64_t src, uint64_t n, nx_error *err) {
    const uint64_t es = nx_dtype_size(dt), full = n / LAYER_RUN, tail = n % LAYER_RUN;
    if (full && nx_layer_copy_rows(k, dt, dst, LAYER_RUN, src, LAYER_RUN, full, LAYER_RUN, err) != 0) return -1;
    if (tail) return nx_layer_copy_rows(k, dt, dst + full * LAYER_RUN * es, tail, src + full * LAYER_RUN * es, tail, 1, tail, err);
    return 0;
}

int nx_layer_heads_to_tokens(const layer_run *L, uint64_t src, uint64_t nh, uint64_t sc, uint64_t dst, uint64_t W,
                             uint64_t t0, uint64_t c0, uint64_t b0, uint64_t b1, nx_error *err) {
    const uint64_t d = L->p.d, S = L->p.S, es = L->es;
    for (uint64_t b = b0; b < b1; b++)
        for (uint64_t h = 0; h < nh; h += 128) {
            const uint32_t np = (uint32_t)nx_min_u64(128, nh - h);
            const uint32_t cnt[2] = {(uint32_t)sc, (uint32_t)d};
            const int32_t ss[2] = {(int32_t)d, 1}, ds[2] = {(int32_t)W, 1};
            nx_operand s = nx_ap(NX_OPK_HBM, L->dt, 0, np, (int32_t)(sc * d), src + ((b * nh + h) * sc * d) * es, 2, ss, cnt);
            nx_operand o = nx_ap(NX_OPK_HBM, L->dt, 0, np, (int32_t)d, dst + ((b * S + t0) * W + c0 + h * d) * es, 2, ds, cnt);
            if (nx_kctx_dma(L->k, &o, &s, err) != 0) return -1;
        }
    return 0;
}

/* The add is elementwise, so the rows' elements [r0 H, r1 H) (contiguous
 * in all three tensors) are laid over the partitions, not a row per
 * partition: decode's few rows (B 8: 8 partitions x H, each chunk on one
 * DMA engine in turn) took 21.9 us for the 70B-like shard's 128 KiB. A
 * partition takes at least LAYER_MIN_ROW bytes (a DMA row under 2 KiB
 * moves at a fraction of the rate, docs/parts/hardware.md), the transfers
 * are cut over every DMA engine, chunks of LAYER_COLS columns
 * double-buffered; the elements left over go on one partition. */
#define LAYER_MIN_ROW 2048u
static int residual_part(nx_kctx *k, nx_dtype dt, const nx_tile *th, const nx_tile *tm, uint64_t out, uint64_t h,
                         uint64_t m, uint32_t parts, uint64_t pitch, uint64_t *it, nx_error *err) {
    const uint64_t es = nx_dtype_size(dt);
    const uint32_t engines = nx_kctx_geometry(k)->dma_engines, pieces = parts < engines ? parts : engines;
    for (uint64_t c = 0; c < pitch; c += LAYER_COLS, (*it)++) {
        const uint32_t w = (uint32_t)nx_min_u64(LAYER_COLS, pitch - c);
        const nx_tile *a = &th[*it % 2], *b = &tm[*it % 2];
        nx_operand va = nx_ap_tile(NX_OPK_SBUF, dt, 0, parts, a->offset, w);
        nx_operand vb = nx_ap_tile(NX_OPK_SBUF, dt, 0, parts, b->offset, w);
        nx_operand sh = nx_ap_hbm_rows(dt, h + c * es, parts, (int32_t)pitch, w);
        nx_operand sm = nx_ap_hbm_rows(dt, m + c * es, parts, (int32_t)pitch, w);
        nx_operand so = nx_ap_hbm_rows(dt, out + c * es, parts, (int32_t)pitch, w);
        if (nx_kctx_dma_split(k, 0, pieces, &va, &sh, err) != 0 ||
            nx_kctx_dma_split(k, engines, pieces, &vb, &sm, err) != 0 ||
            nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_ADD, &va, &va, &vb, err) != 0 ||
            nx_kctx_dma_split(k, 0, pieces, &so, &va, err) != 0)
            return -1;
    }
    return 0;
}

int nx_layer_residual(const layer_run *L, uint64_t out, uint64_t h, uint64_t m, uint64_t r0, uint64_t r1, nx_error *err) {
    nx_kctx *k = L->k;
    const uint64_t es = L->es, E = (r1 - r0) * L->p.H, base = r0 * L->p.H * es;
    const uint32_t P = nx_kctx_geometry(k)->partitions;
    if (r0 >= r1) return 0;
    const uint64_t min_cols = nx_max_u64(1, LAYER_MIN_ROW / es);
    const uint64_t per = nx_max_u64(min_cols, E / P), parts = E / per, tail = E - parts * per;
    const uint64_t W = nx_min_u64(nx_max_u64(parts ? per : 0, tail), LAYER_COLS);
    nx_tile th[2], tm[2];
    for (int i = 0; i < 2; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "residual_h", L->dt, P, W, &th[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "residual_m", L->dt, P, W, &tm[i], err) != 0)
            return -1;
    uint64_t it = 0;
    if (parts && residual_part(k, L->dt, th, tm, out + base, h + base, m + base, (uint32_t)parts, per, &it, err) != 0)
        return -1;
    const uint64_t t0 = base + parts * per * es;
    return tail ? residual_part(k, L->dt, th, tm, out + t0, h + t0, m + t0, 1, tail, &it, err) : 0;
}
