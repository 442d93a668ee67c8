/* The setup of one blockwise_mm work item: its token ids, expert, weight
 * row offsets, scatter rows and affinities, and the gathers of its hidden
 * rows (kernels/blockwise_mm/blockwise_mm.c says why the engines are used this way).
 * Item w uses on-chip set w % BW_SETS. */
#include "blockwise_mm_phases.h"

/* ---- setup: what item w needs before its compute ---- */

/* The item's token ids into ids[p, t] = id of position t*tp + p: each tile's
 * ids arrive as one row of the id_rows tile (a DMA of a few contiguous rows;
 * spread over 128 partitions, 4-byte rows would cost a descriptor each),
 * then the DVE transposes them in blocks of dve_transpose_max. */
static int load_ids(bw *s, const bw_set *q, uint64_t pos0, uint32_t cnt, nx_error *err) {
    const nx_geometry *geo = nx_kctx_geometry(s->k);
    uint32_t tp = s->pl->tp, full = cnt / tp, rem = cnt % tp, nt = full + (rem > 0);
    uint64_t base = s->tpid + pos0 * 4;
    if (full > 0) {
        nx_operand src = nx_ap_hbm_rows(NX_DT_INT32, base, full, (int32_t)tp, tp);
        nx_operand dst = bw_v(&s->id_rows, NX_DT_INT32, full, 0, tp);
        if (nx_kctx_dma_on(s->k, s->small_lane, &dst, &src, err) != 0) return -1;
    }
    if (rem > 0) {
        nx_operand src = nx_ap_hbm_rows(NX_DT_INT32, base + (uint64_t)full * tp * 4, 1, (int32_t)tp, rem);
        nx_operand dst = nx_tile_view(&s->id_rows, NX_DT_INT32, full, 1, 0, 1, (const int32_t[]){1}, &rem);
        if (nx_kctx_dma_on(s->k, s->small_lane, &dst, &src, err) != 0) return -1;
    }
    uint32_t blk = geo->dve_transpose_max;
    for (uint32_t p0 = 0; p0 < cnt && p0 < tp; p0 += blk) {
        uint32_t w = bw_min32(blk, tp - p0);
        nx_operand src = nx_tile_view(&s->id_rows, NX_DT_INT32, 0, nt, p0, 1, (const int32_t[]){1}, &w);
        nx_operand dst = nx_tile_view(&q->ids, NX_DT_INT32, p0, w, 0, 1, (const int32_t[]){1}, &nt);
        if (nx_kctx_transpose(s->k, NX_ENG_DVE, &dst, &src, err) != 0) return -1;
    }
    return 0;
}

/* Weight row offsets of the item: off[p, c] = (load ? e*rows + p : skip) + c*tp. */
static int weight_rows(bw *s, bw_set *q, const nx_operand *pred, uint64_t rows, nx_tile *m, nx_tile *b,
                       const nx_tile *steps, nx_tile *off, uint32_t n, nx_error *err) {
    uint32_t tp = s->pl->tp;
    nx_operand e = bw_v(&q->e, NX_DT_INT32, tp, 0, 1), ip = bw_v(&s->iota_p, NX_DT_INT32, tp, 0, 1);
    nx_operand mo = bw_v(m, NX_DT_INT32, tp, 0, 1), bo = bw_v(b, NX_DT_INT32, tp, 0, 1);
    nx_operand rows_imm = nx_imm((double)rows, NX_DT_FP32);
    nx_operand st = bw_v(steps, NX_DT_INT32, tp, 0, n), o = bw_v(off, NX_DT_INT32, tp, 0, n);
    /* b = load ? m : skip = m * load + (load - 1) * 2^24 (exact: |m| < 2^24)
     * on POOL, so the in-order DVE never waits for an expert's load */
    nx_operand one = nx_imm(1.0, NX_DT_FP32), big = nx_imm(-BW_SKIP_ROW, NX_DT_FP32);
    if (nx_kctx_scalar_tensor_tensor(s->k, NX_ENG_POOL, &mo, &e, NX_ALU_MULTIPLY, &rows_imm, NX_ALU_ADD, &ip,
                                     err) != 0 ||
        nx_kctx_tensor_scalar(s->k, NX_ENG_POOL, &bo, pred, NX_ALU_SUBTRACT, &one, NX_ALU_MULTIPLY, &big,
                              err) != 0 ||
        nx_kctx_scalar_tensor_tensor(s->k, NX_ENG_POOL, &bo, &mo, NX_ALU_MULTIPLY, pred, NX_ALU_ADD, &bo,
                                     err) != 0)
        return -1;
    return nx_kctx_tensor_scalar(s->k, NX_ENG_POOL, &o, &st, NX_ALU_ADD, &bo, NX_ALU_BYPASS, NULL, err);
}

int bw_setup(bw *s, uint64_t w, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    const nx_bwmm_params *p = s->p;
    bw_set *q = &s->set[w % BW_SETS];
    uint32_t tp = pl->tp, E = (uint32_t)p->E;
    uint64_t n, pos0;
    uint32_t cnt;
    bw_item(pl, w, &n, &pos0, &cnt);
    uint32_t nt = bw_cdiv32(cnt, tp);

    if (load_ids(s, q, pos0, cnt, err) != 0) return -1;
    /* the block's expert: one element, then on every partition */
    nx_operand esrc = nx_ap_hbm_rows(NX_DT_INT32, s->bte + n * 4, 1, 1, 1);
    nx_operand e1 = bw_v(&q->e1, NX_DT_INT32, 1, 0, 1), e = bw_v(&q->e, NX_DT_INT32, tp, 0, 1);
    if (nx_kctx_dma_on(s->k, s->small_lane, &e1, &esrc, err) != 0) return -1;
    nx_insn bc = nx_insn_make(NX_OP_PARTITION_BROADCAST);
    bc.op[0] = e;
    bc.op[1] = e1;
    if (nx_kctx_emit(s->k, NX_ENG_POOL, &bc, err) != 0) return -1;

    /* valid = e in [0, E): as uint32, a negative e is beyond E */
    nx_operand eu = bw_v(&q->e, NX_DT_UINT32, tp, 0, 1), valid = bw_v(&q->valid, NX_DT_FP32, tp, 0, 1);
    nx_operand Eimm = nx_imm((double)E, NX_DT_FP32);
    if (nx_kctx_tensor_scalar(s->k, NX_ENG_POOL, &valid, &eu, NX_ALU_IS_LT, &Eimm, NX_ALU_BYPASS, NULL,
                              err) != 0)
        return -1;
    nx_operand pred = valid;
    if (pl->resident && w > 0) { /* resident weights stay when the expert does */
        nx_operand prev = bw_v(&s->set[(w - 1) % BW_SETS].e, NX_DT_INT32, tp, 0, 1);
        nx_operand ne = bw_v(&q->ne, NX_DT_FP32, tp, 0, 1), load = bw_v(&q->load, NX_DT_FP32, tp, 0, 1);
        if (nx_kctx_tensor_tensor(s->k, NX_ENG_POOL, NX_ALU_NOT_EQUAL, &ne, &e, &prev, err) != 0 ||
            nx_kctx_tensor_tensor(s->k, NX_ENG_POOL, NX_ALU_MULTIPLY, &load, &valid, &ne, err) != 0)
            return -1;
        pred = load;
    }
    if (weight_rows(s, q, &pred, p->H, &q->mg, &q->gb, &s->hc, &q->goff, pl->nh, err) != 0 ||
        weight_rows(s, q, &pred, p->inter, &q->md, &q->db, &s->ic, &q->doff, pl->ni, err) != 0)
        return -1;

    /* scatter rows: the ids, or -1 (skipped) for a block of no valid expert:
     * id * valid + (valid - 1), exact for |id| < 2^24 (T is below it, and a
     * larger id stays at or above T once rounded: still skipped) */
    nx_operand ids = bw_v(&q->ids, NX_DT_INT32, tp, 0, nt), sc = bw_v(&q->sc, NX_DT_INT32, tp, 0, nt);
    nx_operand vm1 = bw_v(&q->vm1, NX_DT_FP32, tp, 0, 1), one = nx_imm(1.0, NX_DT_FP32);
    if (nx_kctx_tensor_scalar(s->k, NX_ENG_POOL, &vm1, &valid, NX_ALU_SUBTRACT, &one, NX_ALU_BYPASS, NULL,
                              err) != 0 ||
        nx_kctx_tensor_scalar(s->k, NX_ENG_POOL, &sc, &ids, NX_ALU_MULTIPLY, &valid, NX_ALU_ADD, &vm1, err) !=
            0)
        return -1;

    /* mask[p, j] = (j == e) selects the expert's affinity column */
    nx_operand ie = bw_v(&s->iota_e, NX_DT_INT32, tp, 0, E), mask = bw_v(&q->mask, NX_DT_FP32, tp, 0, E);
    if (nx_kctx_tensor_scalar(s->k, NX_ENG_POOL, &mask, &ie, NX_ALU_IS_EQUAL, &e, NX_ALU_BYPASS, NULL, err) !=
        0)
        return -1;

    for (uint32_t t = 0; t < nt; t++) {
        uint32_t rows = bw_min32(tp, cnt - t * tp);
        nx_operand off = bw_v(&q->ids, NX_DT_INT32, rows, t, 1);
        /* the tokens' affinity rows [tok*E, tok*E + E) */
        nx_operand asrc = nx_ap_hbm_rows(p->aff_dtype, s->aff, rows, (int32_t)E, E);
        nx_operand adst = bw_v(&q->affrow, p->aff_dtype, rows, (uint64_t)t * E, E);
        /* a row costs a DMA descriptor whatever its bytes: halves on the
         * two small lanes arrive in half the time */
        uint32_t half = rows > 1 && s->aff_lanes > 1 ? (rows + 1) / 2 : rows;
        for (uint32_t r0 = 0, h = 0; r0 < rows; r0 += half, h++) {
            uint32_t nr = bw_min32(half, rows - r0);
            nx_operand d = nx_operand_rows(&adst, r0, nr), o = nx_operand_rows(&off, r0, nr);
            asrc.partition_count = (uint8_t)nr;
            if (bw_dma_indirect(s, s->aff_lane + h % s->aff_lanes, &d, &asrc, &o, p->T, 0, err) != 0)
                return -1;
        }
        /* the hidden rows, in 2 KiB column pieces over the load lanes */
        for (uint64_t c0 = 0; c0 < p->H; c0 += pl->c) {
            uint32_t w_ = bw_min32(pl->c, p->H - c0);
            nx_operand src = nx_ap_hbm_rows(s->dt, s->hs + c0 * pl->s, rows, (int32_t)p->H, w_);
            nx_operand dst = bw_v(&s->x, s->dt, rows, (uint64_t)t * p->H + c0, w_);
            if (bw_gather_split(s, &dst, &src, &off, p->T, err) != 0) return -1;
        }
    }
    return 0;
}

int bw_affinities(bw *s, uint64_t w, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    const nx_bwmm_params *p = s->p;
    bw_set *q = &s->set[w % BW_SETS];
    uint32_t tp = pl->tp, E = (uint32_t)p->E;
    uint32_t cnt = bw_item_tokens(pl, w);
    uint32_t nt = bw_cdiv32(cnt, tp);
    /* affinity = the masked row's sum (one nonzero term: exact; a NaN in
     * another expert's column does not leak, select copies) */
    int32_t ms[2] = {0, 1}, rs[2] = {(int32_t)E, 1};
    uint32_t mc[2] = {nt, E};
    nx_operand mask = nx_tile_view(&q->mask, NX_DT_FP32, 0, tp, 0, 2, ms, mc);
    nx_operand rows = nx_tile_view(&q->affrow, p->aff_dtype, 0, tp, 0, 2, rs, mc);
    nx_operand sel = nx_tile_view(&q->affsel, NX_DT_FP32, 0, tp, 0, 2, rs, mc);
    nx_operand zero = nx_imm(0.0, NX_DT_FP32);
    if (bw_select(s, &sel, &mask, &rows, &zero, err) != 0) return -1;
    nx_operand aff = bw_v(&q->aff, NX_DT_FP32, tp, 0, nt);
    nx_insn r = nx_insn_make(NX_OP_TENSOR_REDUCE);
    r.alu0 = NX_ALU_ADD;
    r.iparam[0] = 2; /* dim 1: the experts */
    r.op[0] = aff;
    r.op[1] = sel;
    return nx_kctx_emit(s->k, NX_ENG_POOL, &r, err);
}

int bw_pre_scale(bw *s, uint64_t w, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    const nx_bwmm_params *p = s->p;
    bw_set *q = &s->set[w % BW_SETS];
    uint32_t tp = pl->tp;
    uint32_t cnt = bw_item_tokens(pl, w);
    uint32_t nt = bw_cdiv32(cnt, tp);
    /* x = x * a, rounded to the input dtype */
    uint32_t piece = pl->c * 8;
    for (uint32_t t = 0; t < nt; t++) {
        uint32_t rows_t = bw_min32(tp, cnt - t * tp);
        nx_operand a = bw_v(&q->aff, NX_DT_FP32, rows_t, t, 1);
        for (uint64_t c0 = 0; c0 < p->H; c0 += piece) {
            nx_operand x = bw_v(&s->x, s->dt, rows_t, (uint64_t)t * p->H + c0, bw_min32(piece, p->H - c0));
            if (nx_kctx_tensor_scalar(s->k, NX_ENG_DVE, &x, &x, NX_ALU_MULTIPLY, &a, NX_ALU_BYPASS, NULL,
                                      err) != 0)
                return -1;
        }
    }
    return 0;
}
