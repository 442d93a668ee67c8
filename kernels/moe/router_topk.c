/* router_topk: the MoE router of token generation (kernels/moe/router.h,
 * docs/parts/moe.md), following the production inventory's router_topk
 * kernel (the AWS NKI library's MoE router: x w on the PE with the tokens
 * as PSUM partitions, the activation on ScalarE, the expert selection with
 * the VectorE max8 / match_replace8 instructions, k <= 8). Goes past it:
 * k up to 16 (two selection rounds, kernels/topk/topk_tile.c), ties to the
 * lower index, E up to 512, any H (ragged last K tile), w streamed when it
 * does not stay in SBUF, pre_norm / norm_topk in every combination, and the
 * tokens split over the VNC(2) grid.
 *
 * Layout. w [H, E] is read as [KP, R E]: partition p holds rows
 * p R .. p R + R - 1 (one contiguous run of R E elements), so the whole
 * matrix is one transfer of long rows whatever E is; main K tile j is then
 * h = p R + j (p < KP), and the x^T tiles are taken the same way: PE
 * transposes of the columns j, j + R, .. of a token tile of x (a strided
 * view of rows loaded whole). Rows R KP .. H - 1 form a last K tile of
 * their own.
 *
 * Per token tile of up to 128 tokens (tokens split contiguously between
 * the programs of the grid):
 *   DMA   x rows -> xt (all DMA engines), w chunks of >= 2 KiB per
 *         partition run (once when w stays in SBUF, behind the first x
 *         tile on the same queues so the transposes start early; else per
 *         tile, RT_WBUFS chunks in flight);
 *   PE    transposes of x columns -> PSUM, as many per bank as its 512
 *         fp32 columns hold (at most RT_TP_MAX), over up to RT_TP_BANKS
 *         banks, running that far
 *         ahead of the matmuls; DVE / ACT copy each bank -> xT (the x
 *         dtype, exact);
 *   PE    [bias: ones [1, T] x bias [1, E]], then per K tile
 *         load_stationary xT_j [K, T], multiply_moving w_j [K, E]
 *         accumulating logits [T, E] fp32 in one PSUM bank;
 *   then the selection (router_select.c). The next tile's x load is issued
 *   before this tile's matmuls and its transposes before this tile's
 *   selection, so the PE works on tile i + 1 while VectorE and ScalarE
 *   select tile i (two of every buffer). */
#include <math.h>
#include <string.h>

#include "router_impl.h"

/* Main K tiles [j0, j1) of w: from HBM [KP rows of R E, columns j0 E ..]. */
static nx_operand w_hbm(const rt_state *s, uint64_t j0, uint64_t j1) {
    const uint64_t E = s->p->E;
    return nx_ap_hbm_rows(s->p->dtype, s->w->hbm_offset + j0 * E * s->es, s->KP, (int32_t)(s->R * E),
                          (uint32_t)((j1 - j0) * E));
}

static int load_w_resident(rt_state *s, nx_error *err) {
    const uint64_t E = s->p->E;
    for (uint64_t j0 = 0; j0 < s->R; j0 += s->cj) {
        const uint64_t j1 = j0 + s->cj < s->R ? j0 + s->cj : s->R;
        nx_operand d = nx_rows_view(&s->wt, s->p->dtype, s->KP, j0 * E, (j1 - j0) * E), src = w_hbm(s, j0, j1);
        if (nx_kctx_dma_split(s->k, s->wlane, s->r.engines, &d, &src, err) != 0) return -1;
    }
    return 0;
}

static int load_w_tail(rt_state *s, nx_error *err) {
    if (!s->tail) return 0;
    nx_operand d = nx_rows_view(&s->wtail, s->p->dtype, s->tail, 0, s->p->E);
    nx_operand src = nx_rows_hbm(s->p->dtype, s->w->hbm_offset, s->R * s->KP, s->tail, s->p->E);
    return nx_kctx_dma_split(s->k, s->wlane, s->r.engines, &d, &src, err);
}

/* Streamed chunk q of the whole sequence (token tile q / chunks, chunk q % chunks). */
static int load_w_chunk(rt_state *s, uint64_t q, nx_error *err) {
    const uint64_t chunks = (s->R + s->cj - 1) / s->cj, c = q % chunks, j0 = c * s->cj;
    const uint64_t j1 = j0 + s->cj < s->R ? j0 + s->cj : s->R;
    nx_operand d = nx_rows_view(&s->wc[q % s->wbufs], s->p->dtype, s->KP, 0, (j1 - j0) * s->p->E), src = w_hbm(s, j0, j1);
    return nx_kctx_dma_split(s->k, s->wlane, s->r.engines, &d, &src, err);
}

/* x rows [t0, t0 + tw) -> xt[b], cut over the DMA engines by rows, or,
 * with fewer rows than engines (decode), each row by columns too (pieces
 * of at least the 2 KiB a DMA needs for its full rate), so a single token
 * does not sit on one engine ahead of its share of w. */
static int load_x(rt_state *s, uint64_t t0, uint32_t tw, uint32_t b, nx_error *err) {
    const uint64_t H = s->p->H, row = H * s->es;
    const uint32_t E = s->r.engines;
    const uint64_t run = nx_kctx_machine(s->k)->dma_efficient_bytes_per_partition;
    uint64_t q = tw < E ? E / tw : 1, most = run ? row / run : q;
    if (q > most) q = most;
    if (q <= 1) {
        nx_operand d = nx_rows_view(&s->xt[b], s->p->dtype, tw, 0, H);
        nx_operand src = nx_rows_hbm(s->p->dtype, s->x->hbm_offset, t0, tw, H);
        return nx_rows_load(&s->r, &d, &src, err);
    }
    for (uint32_t r = 0; r < tw; r++)
        for (uint64_t c = 0; c < q; c++) {
            const uint64_t c0 = c * H / q, c1 = (c + 1) * H / q;
            nx_operand d = nx_tile_view(&s->xt[b], s->p->dtype, r, 1, c0, 1, &(int32_t){1}, &(uint32_t){(uint32_t)(c1 - c0)});
            nx_operand src = nx_ap_hbm_rows(s->p->dtype, s->x->hbm_offset + ((t0 + r) * H + c0) * s->es, 1,
                                            (int32_t)(c1 - c0), (uint32_t)(c1 - c0));
            if (nx_kctx_dma_on(s->k, NX_ROWS_LOAD_LANE + (uint32_t)(r * q + c), &d, &src, err) != 0) return -1;
        }
    return 0;
}

/* PE transposes of a token tile (tw tokens in xt[b]) into xT[b], K tile
 * j's [kw, tw] at columns j TT, emitted group by group up to K tile jend
 * so that they interleave with the matmuls: full tiles share a PSUM bank
 * (as many as its 512 fp32 columns hold), the ragged one goes alone. */
static uint32_t tp_per_bank(const rt_state *s, uint32_t tw) {
    const uint64_t bank = nx_kctx_geometry(s->k)->psum_bank_bytes / 4;
    const uint64_t most = bank / tw < RT_TP_MAX ? bank / tw : RT_TP_MAX;
    /* the main tiles in groups of equal size: no short last group whose
     * copy's fixed latency buys nothing */
    const uint64_t groups = s->R ? (s->R + most - 1) / most : 1;
    return (uint32_t)(s->R ? (s->R + groups - 1) / groups : most);
}

/* K tiles the transposes run ahead of the matmuls: as many as the banks
 * hold, so the PE never waits for a copy while there is x to transpose. */
static uint64_t tp_ahead(const rt_state *s, const rt_prep *pp) {
    return (uint64_t)tp_per_bank(s, pp->tw) * (s->ntp - 1);
}

static int transposes_until(rt_state *s, rt_prep *pp, uint64_t jend, nx_error *err) {
    const int32_t one = 1;
    const uint32_t tw = pp->tw, b = pp->b, per = tp_per_bank(s, tw);
    if (jend > s->nk) jend = s->nk;
    while (pp->next_j < jend) {
        const uint64_t j = pp->next_j;
        const int main_tile = j < s->R;
        const uint32_t g = main_tile ? rt_clip32(s->R - j, per) : 1;
        const uint32_t kw = main_tile ? s->KP : s->tail;
        const nx_tile *tp = &s->tp[s->trs % s->ntp];
        for (uint32_t i = 0; i < g; i++) {
            const int32_t stride = main_tile ? (int32_t)s->R : 1;
            const uint64_t first = main_tile ? j + i : s->R * s->KP;
            nx_operand src = nx_tile_view(&s->xt[b], s->p->dtype, 0, tw, first, 1, &stride, &kw);
            nx_operand pt = nx_tile_view(tp, NX_DT_FP32, 0, kw, (uint64_t)i * tw, 1, &one, &tw);
            if (nx_kctx_transpose(s->k, NX_ENG_PE, &pt, &src, err) != 0) return -1;
        }
        const int32_t st2[2] = {(int32_t)tw, 1}, dt2[2] = {(int32_t)s->TT, 1};
        const uint32_t c2[2] = {g, tw};
        nx_operand from = nx_tile_view(tp, NX_DT_FP32, 0, kw, 0, 2, st2, c2);
        nx_operand to = nx_tile_view(&s->xT[b], s->p->dtype, 0, kw, j * s->TT, 2, dt2, c2);
        /* the copies alternate ScalarE / VectorE, the tile's last on
         * VectorE: ScalarE is then idle first and waiting when the logits
         * are complete, and its copy of them takes the PSUM bank before
         * max8 (one reader at a time: max8 waits the copy's N ACT cycles,
         * less than the copy, which the knock-out and the activation need,
         * would wait for max8) */
        const uint64_t left = j + g < s->R ? s->R - (j + g) : 0;
        const uint64_t after = main_tile ? (left + per - 1) / per + (s->tail ? 1 : 0) : 0;
        s->trs++;
        if (nx_kctx_tensor_copy(s->k, after % 2 ? NX_ENG_ACT : NX_ENG_DVE, &to, &from, err) != 0) return -1;
        pp->next_j = j + g;
    }
    return 0;
}

static int mm(rt_state *s, const nx_operand *acc, const nx_tile *xT, uint64_t col, uint32_t kw, uint32_t tw,
              const nx_operand *moving, int accumulate, nx_error *err) {
    nx_operand st = nx_rows_view(xT, s->p->dtype, kw, col, tw);
    if (nx_kctx_load_stationary(s->k, &st, err) != 0) return -1;
    return nx_kctx_multiply_moving(s->k, acc, moving, accumulate, err);
}

/* The router matmul of token tile (tw tokens, xT[b]) into acc[b], each
 * chunk's transposes (and the next group's) emitted just before it. */
static int matmuls(rt_state *s, rt_prep *pp, nx_error *err) {
    const uint32_t tw = pp->tw, b = pp->b;
    const uint64_t E = s->p->E;
    nx_operand acc = nx_rows_view(&s->acc[b], NX_DT_FP32, tw, 0, E);
    int started = 0;
    if (s->p->bias) {
        nx_operand on = nx_rows_view(&s->ones, s->p->bias_dtype, 1, 0, tw), bv = nx_rows_view(&s->brow, s->p->bias_dtype, 1, 0, E);
        if (nx_kctx_load_stationary(s->k, &on, err) != 0 || nx_kctx_multiply_moving(s->k, &acc, &bv, 0, err) != 0)
            return -1;
        started = 1;
    }
    const uint64_t chunks = s->R ? (s->R + s->cj - 1) / s->cj : 0;
    for (uint64_t c = 0; c < chunks; c++) {
        const uint64_t j0 = c * s->cj, j1 = j0 + s->cj < s->R ? j0 + s->cj : s->R;
        const nx_tile *wsrc = &s->wt;
        uint64_t wcol0 = j0 * E;
        if (!s->resident) {
            const uint64_t q = s->wused++;
            /* chunk loads run wbufs - 1 ahead, across token tiles */
            while (s->wq < s->wtotal && s->wq <= q + s->wbufs - 1)
                if (load_w_chunk(s, s->wq++, err) != 0) return -1;
            wsrc = &s->wc[q % s->wbufs];
            wcol0 = 0;
        }
        if (transposes_until(s, pp, j1 + tp_ahead(s, pp), err) != 0) return -1;
        for (uint64_t j = j0; j < j1; j++) {
            nx_operand mv = nx_rows_view(wsrc, s->p->dtype, s->KP, wcol0 + (j - j0) * E, E);
            if (mm(s, &acc, &s->xT[b], j * s->TT, s->KP, tw, &mv, started, err) != 0) return -1;
            started = 1;
        }
    }
    if (transposes_until(s, pp, s->nk, err) != 0) return -1;
    if (s->tail) {
        nx_operand mv = nx_rows_view(&s->wtail, s->p->dtype, s->tail, 0, E);
        if (mm(s, &acc, &s->xT[b], s->R * s->TT, s->tail, tw, &mv, started, err) != 0) return -1;
    }
    return 0;
}

int nx_router_topk(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_norm_tensor in[3];
    if (call->n_inputs > 3 || call->nargs != call->n_inputs + 3)
        return nx_fail(err, "router_topk: expects 2 or 3 operands and 3 results, got %u and %u", call->n_inputs,
                       call->nargs - call->n_inputs);
    for (uint32_t i = 0; i < call->n_inputs; i++)
        in[i] = (nx_norm_tensor){call->args[i].name, call->args[i].dtype, call->args[i].ndims, call->args[i].shape};
    nx_router_params p;
    if (nx_router_read(call->attrs, in, call->n_inputs, &p, err) != 0) return -1;
    rt_state s;
    memset(&s, 0, sizeof s);
    s.k = k;
    s.p = &p;
    s.x = &call->args[0];
    s.w = &call->args[1];
    s.b = p.bias ? &call->args[2] : NULL;
    s.lg = &call->args[p.n_operands];
    s.af = &call->args[p.n_operands + 1];
    s.ix = &call->args[p.n_operands + 2];
    s.es = nx_dtype_size(p.dtype);
    nx_rows_init(&s.r, k);
    nx_kctx_rows(k, p.T, &s.lo, &s.hi);
    if (s.hi <= s.lo) return 0;
    if (nx_router_plan(&s, err) != 0 || nx_router_alloc(&s, err) != 0 || nx_router_setup(&s, err) != 0) return -1;
    const uint64_t ntiles = (s.hi - s.lo + s.TT - 1) / s.TT;
    s.wtotal = s.resident ? 0 : ntiles * ((s.R + s.cj - 1) / s.cj);
    rt_prep pr[2] = {{rt_clip32(s.hi - s.lo, s.TT), 0, 0}, {0, 1, 0}};
    /* the first x tile ahead of w on the same queues: its transposes start first */
    if (load_x(&s, s.lo, pr[0].tw, 0, err) != 0 || (s.resident && load_w_resident(&s, err) != 0) ||
        load_w_tail(&s, err) != 0 || transposes_until(&s, &pr[0], tp_ahead(&s, &pr[0]), err) != 0)
        return -1;
    for (uint64_t i = 0; i < ntiles; i++) {
        const uint64_t t0 = s.lo + i * s.TT, t1 = t0 + s.TT;
        const uint32_t b = (uint32_t)(i % 2);
        const uint32_t tn = i + 1 < ntiles ? rt_clip32(s.hi - t1, s.TT) : 0;
        if (tn) {
            pr[1 - b] = (rt_prep){tn, 1 - b, 0};
            if (load_x(&s, t1, tn, 1 - b, err) != 0) return -1;
        }
        if (matmuls(&s, &pr[b], err) != 0) return -1;
        /* the next tile's transposes before this tile's selection: the PE
         * and the copies work on tile i + 1 while tile i is selected */
        if (tn && transposes_until(&s, &pr[1 - b], s.nk, err) != 0) return -1;
        if (nx_router_select(&s, t0, pr[b].tw, b, err) != 0) return -1;
    }
    return 0;
}
