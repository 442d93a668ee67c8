/* One work item of an expert pass (kernels/moe/decode_impl.h): MD_NIT
 * (the last up to 2 MD_NIT - 1) i-tiles (128 columns of I each) of this core's share of I, for pass s's
 * expert. The orientation follows the public NKI MoE decode kernels
 * (nkilib's expert MLPs for token generation) and blockwise_mm here:
 *  - gate and up with the weights stationary ([128 rows of H, 128 columns
 *    of I] per matmul) and x^T moving ([128, T]): a multiply costs
 *    max(T, 64) PE cycles for 32 KiB of bf16 weights, so for T <= 64 the PE
 *    consumes weights at 4x one core's DMA rate; the results land as h^T
 *    ([i, T], I on partitions), which is what the down projection contracts
 *    over, so no transpose is needed;
 *  - act on ACT straight from PSUM, the product with up on DVE into h^T of
 *    the dtype (the rounding the semantics names);
 *  - down with h^T stationary ([128 rows of I, T]) and the down rows moving
 *    ([128, 512] per PSUM bank), accumulated over the item's i-tiles, then
 *    out[t] += coef[t, s] psum on DVE (a per-partition scalar: tokens are
 *    the partitions), in fp32.
 * Weight tiles are rows of 2 KiB (the DMA's efficient run) cut by
 * partitions over 16 lanes, one lane group per stream (gate, up, down), in
 * rings of up to MD_RING_MAX tiles: a tile's load waits only for the
 * matmuls of the tile a ring before, so the streams run ahead of the PE. With a
 * run-time expert the loads are gathers by row offsets (skipped rows: an
 * unused pass moves no bytes). */
#include "decode_impl.h"

#include "isa/intmath.h"

static uint32_t min32(uint64_t a, uint64_t b) { return (uint32_t)(a < b ? a : b); }

/* Item w's pass, first column of I, width, i-tiles. */
void md_item(const md_plan *pl, uint64_t w, uint32_t *s, uint32_t *b) {
    const uint64_t full = pl->S / MD_GROUP, span = (uint64_t)MD_GROUP * pl->nblk, g = w / span;
    const uint64_t gs = g < full ? MD_GROUP : pl->S - full * MD_GROUP, r = w - g * span;
    *b = (uint32_t)(r / gs);
    *s = (uint32_t)(g * MD_GROUP + r % gs);
}

static void item(const md_plan *pl, uint64_t w, uint32_t *s, uint64_t *i0, uint32_t *bw, uint32_t *nt) {
    uint32_t b;
    md_item(pl, w, s, &b);
    *i0 = pl->ilo + (uint64_t)b * MD_NIT * pl->P;
    *bw = b + 1 == pl->nblk ? (uint32_t)(pl->ihi - *i0) : MD_NIT * pl->P; /* the last takes the rest */
    *nt = (uint32_t)nx_cdiv_u64(*bw, pl->P);
}

/* A weight tile: np rows cut over the engines on lanes lane0 + i; with
 * offsets each piece gathers its rows (a row outside [0, bound) skipped). */
static int load(md_core *c, uint32_t lane0, uint32_t np, const nx_operand *dst, const nx_operand *src,
                const nx_operand *off, uint64_t bound, nx_error *err) {
    const uint32_t engines = nx_kctx_geometry(c->k)->dma_engines;
    const uint32_t pieces = engines < np ? engines : np;
    for (uint32_t i = 0; i < pieces; i++) {
        const uint32_t p0 = np * i / pieces, p1 = np * (i + 1) / pieces;
        nx_insn d = nx_insn_make(NX_OP_DMA_COPY);
        d.op[0] = nx_operand_rows(dst, p0, p1 - p0);
        if (off) {
            d.op[1] = *src;
            d.op[1].partition_count = (uint8_t)(p1 - p0);
            d.op[2] = nx_operand_rows(off, p0, p1 - p0);
            d.iparam[1] = (int32_t)bound;
            d.flags = NX_FLAG_OOB_SKIP;
        } else {
            d.op[1] = nx_operand_rows(src, p0, p1 - p0);
        }
        if (nx_kctx_dma_insn(c->k, lane0 + i, &d, err) != 0) return -1;
    }
    return 0;
}

static uint64_t gu_base(const md_plan *pl, uint64_t w) { return pl->ps_gu + (w % pl->gu_sets) * 2ull * pl->nit * pl->stride; }

int md_gate_up(md_core *c, uint64_t w, nx_error *err) {
    const md_plan *pl = &c->pl;
    const nx_moe_decode_params *p = &pl->p;
    const uint32_t P = pl->P, T = (uint32_t)p->T, es = pl->es;
    uint32_t s, bw, nt;
    uint64_t i0;
    item(pl, w, &s, &i0, &bw, &nt);
    const uint64_t base = gu_base(pl, w);
    for (uint32_t hc = 0; hc < pl->nhc; hc++) {
        const uint32_t hw = min32(P, p->H - (uint64_t)hc * P);
        nx_operand mv = md_view(&c->xt, p->dtype, 0, hw, (uint64_t)hc * T, T);
        for (uint32_t pr = 0; pr < 2; pr++) {
            const nx_tensor_ref *W = &c->call->args[1 + pr];
            const nx_tile *tile = &c->gu[c->ngu++ % pl->ring];
            nx_operand dst = md_view(tile, p->dtype, 0, hw, 0, bw);
            const uint32_t lane = pr ? MD_LANE_UP : MD_LANE_GATE;
            int rc;
            if (pl->runtime) {
                nx_operand src = nx_ap_hbm_rows(p->dtype, W->hbm_offset + i0 * es, hw, (int32_t)p->inter, bw);
                nx_operand off = md_view(&c->offg[s % MD_OFFSETS], NX_DT_INT32, 0, hw, hc, 1);
                rc = load(c, lane, hw, &dst, &src, &off, p->E * p->H, err);
            } else {
                const uint64_t row = (uint64_t)s * p->H + (uint64_t)hc * P;
                nx_operand src = nx_ap_hbm_rows(p->dtype, W->hbm_offset + (row * p->inter + i0) * es, hw, (int32_t)p->inter, bw);
                rc = load(c, lane, hw, &dst, &src, NULL, 0, err);
            }
            if (rc != 0) return -1;
            for (uint32_t it = 0; it < nt; it++) {
                const uint32_t iw = min32(P, bw - (uint64_t)it * P);
                nx_operand st = md_view(tile, p->dtype, 0, hw, (uint64_t)it * P, iw);
                nx_operand ps = md_psum(c, base + ((uint64_t)pr * pl->nit + it) * pl->stride, iw, T);
                if (nx_kctx_load_stationary(c->k, &st, err) != 0 ||
                    nx_kctx_multiply_moving(c->k, &ps, &mv, hc > 0, err) != 0)
                    return -1;
            }
        }
    }
    return 0;
}

int md_act(md_core *c, uint64_t w, nx_error *err) {
    const md_plan *pl = &c->pl;
    const nx_moe_decode_params *p = &pl->p;
    const uint32_t P = pl->P, T = (uint32_t)p->T;
    uint32_t s, bw, nt;
    uint64_t i0;
    item(pl, w, &s, &i0, &bw, &nt);
    const uint64_t base = gu_base(pl, w);
    const uint32_t full = bw / P, rem = bw % P;
    /* the full i-tiles in one instruction each ([P] x [full, T] with the
     * accumulators' PSUM stride), the ragged one alone */
    for (uint32_t part = 0; part < 2; part++) {
        const uint32_t n = part ? (rem ? 1 : 0) : full, np = part ? rem : P, t0 = part ? full : 0;
        if (n == 0) continue;
        const int32_t pst[2] = {(int32_t)(pl->stride / 4), 1}, sst[2] = {(int32_t)T, 1};
        const uint32_t cn[2] = {n, T};
        nx_operand g = nx_tile_view(&c->psum, NX_DT_FP32, 0, np, (base + (uint64_t)t0 * pl->stride) / 4, 2, pst, cn);
        nx_operand u = nx_tile_view(&c->psum, NX_DT_FP32, 0, np, (base + ((uint64_t)pl->nit + t0) * pl->stride) / 4, 2, pst, cn);
        nx_operand sg = nx_tile_view(&c->sg, NX_DT_FP32, 0, np, (uint64_t)t0 * T, 2, sst, cn);
        nx_operand h = nx_tile_view(&c->ht[w % 2], p->dtype, 0, np, (uint64_t)t0 * T, 2, sst, cn);
        if (nx_kctx_activation(c->k, p->act, &sg, &g, 1.0, 0.0, err) != 0 ||
            nx_kctx_tensor_tensor(c->k, NX_ENG_DVE, NX_ALU_MULTIPLY, &h, &sg, &u, err) != 0)
            return -1;
    }
    return 0;
}

int md_down(md_core *c, uint64_t w, nx_error *err) {
    const md_plan *pl = &c->pl;
    const nx_moe_decode_params *p = &pl->p;
    const uint32_t P = pl->P, T = (uint32_t)p->T, es = pl->es, bank = 2048;
    const nx_tensor_ref *W = &c->call->args[3];
    uint32_t s, bw, nt;
    uint64_t i0;
    item(pl, w, &s, &i0, &bw, &nt);
    nx_operand coef = md_view(&c->coef, NX_DT_FP32, 0, T, s, 1);
    for (uint32_t dg = 0; dg < pl->ndc; dg++) {
        const uint64_t c0 = (uint64_t)dg * pl->dcols;
        const uint32_t cw = min32(pl->dcols, p->H - c0), nb = (uint32_t)nx_cdiv_u64(cw, 512);
        const uint64_t pd = pl->ps_d + (c->ndg++ % (4 / pl->d_banks)) * (uint64_t)pl->d_banks * bank;
        for (uint32_t it = 0; it < nt; it++) {
            const uint32_t iw = min32(P, bw - (uint64_t)it * P);
            const nx_tile *tile = &c->dn[c->nd++ % pl->ring];
            nx_operand dst = md_view(tile, p->dtype, 0, iw, 0, cw);
            int rc;
            if (pl->runtime) {
                const uint64_t ic = (i0 - pl->ilo) / P + it;
                nx_operand src = nx_ap_hbm_rows(p->dtype, W->hbm_offset + c0 * es, iw, (int32_t)p->H, cw);
                nx_operand off = md_view(&c->offd[s % MD_OFFSETS], NX_DT_INT32, 0, iw, ic, 1);
                rc = load(c, MD_LANE_DOWN, iw, &dst, &src, &off, p->E * p->inter, err);
            } else {
                const uint64_t row = (uint64_t)s * p->inter + i0 + (uint64_t)it * P;
                nx_operand src = nx_ap_hbm_rows(p->dtype, W->hbm_offset + (row * p->H + c0) * es, iw, (int32_t)p->H, cw);
                rc = load(c, MD_LANE_DOWN, iw, &dst, &src, NULL, 0, err);
            }
            if (rc != 0) return -1;
            nx_operand st = md_view(&c->ht[w % 2], p->dtype, 0, iw, (uint64_t)it * T, T);
            if (nx_kctx_load_stationary(c->k, &st, err) != 0) return -1;
            for (uint32_t n = 0; n < nb; n++) {
                const uint32_t nw = min32(512, cw - (uint64_t)n * 512);
                nx_operand mv = md_view(tile, p->dtype, 0, iw, (uint64_t)n * 512, nw);
                nx_operand ps = md_psum(c, pd + (uint64_t)n * bank, T, nw);
                if (nx_kctx_multiply_moving(c->k, &ps, &mv, it > 0, err) != 0) return -1;
            }
        }
        for (uint32_t n = 0; n < nb; n++) {
            const uint32_t nw = min32(512, cw - (uint64_t)n * 512);
            nx_operand ps = md_psum(c, pd + (uint64_t)n * bank, T, nw);
            nx_operand a = md_view(&c->acc, NX_DT_FP32, 0, T, c0 + (uint64_t)n * 512, nw);
            if (nx_kctx_scalar_tensor_tensor(c->k, NX_ENG_DVE, &a, &ps, NX_ALU_MULTIPLY, &coef, NX_ALU_ADD, &a, err) != 0)
                return -1;
        }
    }
    return 0;
}
