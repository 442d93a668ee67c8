/* The router kernel's plan (kernels/moe/router_impl.h): the K-tile layout
 * from the machine geometry, w resident or streamed from the SBUF it
 * leaves, the w chunk size from the DMA's efficient run, the lane groups;
 * the tiles; the once-per-program setup. */
#include <math.h>

#include "router_impl.h"

/* SBUF bytes per partition of everything but w. */
static uint64_t fixed_bytes(const rt_state *s) {
    const nx_dtype dt = s->p->dtype;
    uint64_t b = 2 * nx_rows_tile_bytes(s->p->H, dt) + 2 * nx_rows_tile_bytes(s->nk * s->TT, dt);
    b += nx_router_select_bytes(s);
    if (s->p->bias) b += nx_rows_tile_bytes(s->TT, s->p->bias_dtype) + nx_rows_tile_bytes(s->p->E, s->p->bias_dtype);
    if (s->tail) b += nx_rows_tile_bytes(s->p->E, dt);
    return b;
}

int nx_router_plan(rt_state *s, nx_error *err) {
    const nx_geometry *g = nx_kctx_geometry(s->k);
    const nx_router_params *p = s->p;
    const uint64_t E = p->E, sbuf = s->r.sbuf_bytes;
    s->KP = g->pe_rows < g->partitions ? g->pe_rows : g->partitions;
    s->TT = g->pe_cols < g->partitions ? g->pe_cols : g->partitions;
    s->R = p->H / s->KP;
    s->tail = (uint32_t)(p->H - s->R * s->KP);
    s->nk = s->R + (s->tail ? 1 : 0);
    s->Epad = (uint32_t)(E < 8 ? 8 : E);
    if (s->Epad * 4 > g->psum_bank_bytes)
        return nx_fail(err, "operand 1 (%s): E = %llu fp32 logits per token exceed a PSUM bank of %llu bytes", s->w->name,
                       (unsigned long long)E, (unsigned long long)g->psum_bank_bytes);
    if (p->H > g->sbuf_free_elems_max || s->R * E > INT32_MAX)
        return nx_fail(err, "operand 0 (%s): H = %llu is beyond the %u elements an engine streams per partition",
                       s->x->name, (unsigned long long)p->H, (unsigned)g->sbuf_free_elems_max);
    /* a w chunk: whole K tiles, at least the 2 KiB run a DMA needs for its full rate */
    const double run = (double)nx_kctx_machine(s->k)->dma_efficient_bytes_per_partition;
    s->cj = (uint64_t)ceil((run > 0 ? run : 1.0) / (double)(E * s->es));
    if (s->cj < 1) s->cj = 1;
    if (s->R && s->cj > s->R) s->cj = s->R;
    const uint64_t fixed = fixed_bytes(s), wres = nx_rows_tile_bytes(s->R * E, p->dtype);
    const uint64_t chunk = nx_rows_tile_bytes(s->cj * E, p->dtype);
    s->resident = fixed + wres <= sbuf;
    if (!s->resident) {
        s->wbufs = RT_WBUFS;
        while (s->wbufs > 2 && fixed + s->wbufs * chunk > sbuf) s->wbufs--;
        if (fixed + s->wbufs * chunk > sbuf)
            return nx_fail(err, "operand 0 (%s): H = %llu needs %llu bytes per partition (x rows, their transposes, "
                                "two w chunks and the selection), SBUF has %llu",
                           s->x->name, (unsigned long long)p->H, (unsigned long long)(fixed + 2 * chunk),
                           (unsigned long long)sbuf);
    }
    /* the transposes' banks: what the two logits accumulators leave, up
     * to RT_TP_BANKS (at least 2; the allocation fails where PSUM lacks them) */
    const uint64_t banks = g->psum_bank_bytes ? g->psum_partition_bytes / g->psum_bank_bytes : 0;
    s->ntp = banks >= RT_TP_BANKS + 2 ? RT_TP_BANKS : banks > 4 ? (uint32_t)(banks - 2) : 2;
    const uint32_t lanes = nx_kctx_lanes(s->k);
    /* streamed chunks wait for their buffers: on a group of their own
     * where the context has one, so no x load waits behind them */
    s->wlane = s->resident ? 0 : (lanes >= 3 * s->r.engines ? 2 * s->r.engines : 0);
    s->aff_lane = lanes >= 4 * s->r.engines ? 3 * s->r.engines : s->r.store_lane;
    return 0;
}

int nx_router_alloc(rt_state *s, nx_error *err) {
    const nx_router_params *p = s->p;
    nx_kctx *k = s->k;
    if (s->resident) {
        if (s->R && nx_kctx_alloc(k, NX_OPK_SBUF, "router_w", p->dtype, s->KP, s->R * p->E, &s->wt, err) != 0) return -1;
    } else {
        for (uint32_t i = 0; i < s->wbufs; i++)
            if (nx_kctx_alloc(k, NX_OPK_SBUF, "router_w_chunk", p->dtype, s->KP, s->cj * p->E, &s->wc[i], err) != 0)
                return -1;
    }
    if (s->tail && nx_kctx_alloc(k, NX_OPK_SBUF, "router_w_tail", p->dtype, s->tail, p->E, &s->wtail, err) != 0)
        return -1;
    const uint64_t bank = nx_kctx_geometry(k)->psum_bank_bytes / 4;
    for (uint32_t i = 0; i < s->ntp; i++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "router_xT_psum", NX_DT_FP32, s->KP, bank, &s->tp[i], err) != 0) return -1;
    for (uint32_t i = 0; i < 2; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "router_x", p->dtype, s->TT, p->H, &s->xt[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "router_xT", p->dtype, s->KP, s->nk * s->TT, &s->xT[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_PSUM, "router_logits", NX_DT_FP32, s->TT, s->Epad, &s->acc[i], err) != 0)
            return -1;
    if (p->bias && (nx_kctx_alloc(k, NX_OPK_SBUF, "router_ones", p->bias_dtype, 1, s->TT, &s->ones, err) != 0 ||
                    nx_kctx_alloc(k, NX_OPK_SBUF, "router_bias", p->bias_dtype, 1, p->E, &s->brow, err) != 0))
        return -1;
    return nx_router_select_alloc(s, err);
}

/* Once per program: w (resident), the bias row and its ones column, the
 * -inf padding of logits below 8 experts. */
int nx_router_setup(rt_state *s, nx_error *err) {
    const nx_router_params *p = s->p;
    if (p->bias) {
        nx_operand on = nx_tile_ap(&s->ones), bd = nx_tile_ap(&s->brow);
        nx_operand bs = nx_ap_hbm_rows(p->bias_dtype, s->b->hbm_offset, 1, (int32_t)p->E, (uint32_t)p->E);
        if (nx_kctx_memset(s->k, NX_ENG_DVE, &on, 1.0, err) != 0 ||
            nx_kctx_dma_on(s->k, s->r.store_lane, &bd, &bs, err) != 0)
            return -1;
    }
    if (p->E < 8)
        for (uint32_t i = 0; i < 2; i++) {
            nx_operand pad = nx_rows_view(&s->acc[i], NX_DT_FP32, s->TT, p->E, 8 - p->E);
            if (nx_kctx_memset(s->k, NX_ENG_DVE, &pad, -INFINITY, err) != 0) return -1;
        }
    return 0;
}

