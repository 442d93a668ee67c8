/* The phases of one blockwise_mm work item (kernels/blockwise_mm.c says
 * why the engines are used this way). Item w uses on-chip set w % BW_SETS. */
#include "blockwise_mm_impl.h"

static uint32_t min32(uint64_t a, uint64_t b) { return (uint32_t)(a < b ? a : b); }
static uint32_t cdiv32(uint64_t a, uint64_t b) { return (uint32_t)((a + b - 1) / b); }

/* ---- instructions the authoring layer has no helper for ---- */

/* dst = (in op0 s0) op1 s1, or in op0 s0 without s1 */
static int tensor_scalar2(bw *s, nx_engine eng, const nx_operand *dst, const nx_operand *in, nx_alu_op op0,
                          const nx_operand *s0, nx_alu_op op1, const nx_operand *s1, nx_error *err) {
    nx_insn i = nx_insn_make(NX_OP_TENSOR_SCALAR);
    i.alu0 = (uint8_t)op0;
    i.op[0] = *dst;
    i.op[1] = *in;
    i.op[2] = *s0;
    if (s1) {
        i.alu1 = (uint8_t)op1;
        i.op[3] = *s1;
    }
    return nx_kctx_emit(s->k, eng, &i, err);
}

static int tensor_scalar(bw *s, nx_engine eng, const nx_operand *dst, const nx_operand *in, nx_alu_op op0,
                         const nx_operand *s0, nx_error *err) {
    return tensor_scalar2(s, eng, dst, in, op0, s0, NX_ALU_BYPASS, NULL, err);
}

/* dst = (in0 op0 scalar) op1 in1 */
static int scalar_tensor_tensor(bw *s, nx_engine eng, const nx_operand *dst, const nx_operand *in0, nx_alu_op op0,
                                const nx_operand *scalar, nx_alu_op op1, const nx_operand *in1, nx_error *err) {
    nx_insn i = nx_insn_make(NX_OP_SCALAR_TENSOR_TENSOR);
    i.alu0 = (uint8_t)op0;
    i.alu1 = (uint8_t)op1;
    i.op[0] = *dst;
    i.op[1] = *in0;
    i.op[2] = *scalar;
    i.op[3] = *in1;
    return nx_kctx_emit(s->k, eng, &i, err);
}

static int select_(bw *s, const nx_operand *dst, const nx_operand *pred, const nx_operand *on_true,
                   const nx_operand *on_false, nx_error *err) {
    nx_insn i = nx_insn_make(NX_OP_SELECT);
    i.op[0] = *dst;
    i.op[1] = *pred;
    i.op[2] = *on_true;
    i.op[3] = *on_false;
    return nx_kctx_emit(s->k, NX_ENG_DVE, &i, err);
}

/* dst = func(in * scale) on ACT; scale an immediate or a per-partition scalar */
static int activation(bw *s, nx_act_func f, const nx_operand *dst, const nx_operand *in, const nx_operand *scale,
                      nx_error *err) {
    nx_insn a = nx_insn_make(NX_OP_ACTIVATION);
    a.func = (uint8_t)f;
    a.op[0] = *dst;
    a.op[1] = *in;
    a.op[2] = *scale;
    a.op[3] = nx_imm(0.0, NX_DT_FP32);
    return nx_kctx_emit(s->k, NX_ENG_ACT, &a, err);
}

static int dma_indirect(bw *s, uint32_t lane, const nx_operand *dst, const nx_operand *src, const nx_operand *off,
                        uint64_t bound, uint16_t flags, nx_error *err) {
    return nx_kctx_dma_ex(s->k, lane, dst, src, off, (uint32_t)bound, (uint16_t)(flags | NX_FLAG_OOB_SKIP), err);
}

/* A gather cut by rows into pieces of at most BW_GATHER_ROWS on successive
 * load lanes: a transfer's time grows with its rows (each a descriptor), so
 * pieces in parallel land sooner; the indexed src keeps its base (its rows
 * come from the offsets). */
static int gather_split(bw *s, const nx_operand *dst, const nx_operand *src, const nx_operand *off, uint64_t bound,
                        nx_error *err) {
    uint32_t rows = dst->partition_count;
    for (uint32_t r0 = 0; r0 < rows; r0 += BW_GATHER_ROWS) {
        uint32_t nr = min32(BW_GATHER_ROWS, rows - r0);
        nx_operand d = nx_operand_rows(dst, r0, nr), o = nx_operand_rows(off, r0, nr), sr = *src;
        sr.partition_count = (uint8_t)nr;
        if (dma_indirect(s, bw_load_lane(s), &d, &sr, &o, bound, 0, err) != 0) return -1;
    }
    return 0;
}

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
        uint32_t w = min32(blk, tp - p0);
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
    if (scalar_tensor_tensor(s, NX_ENG_POOL, &mo, &e, NX_ALU_MULTIPLY, &rows_imm, NX_ALU_ADD, &ip, err) != 0 ||
        tensor_scalar2(s, NX_ENG_POOL, &bo, pred, NX_ALU_SUBTRACT, &one, NX_ALU_MULTIPLY, &big, err) != 0 ||
        scalar_tensor_tensor(s, NX_ENG_POOL, &bo, &mo, NX_ALU_MULTIPLY, pred, NX_ALU_ADD, &bo, err) != 0)
        return -1;
    return tensor_scalar(s, NX_ENG_POOL, &o, &st, NX_ALU_ADD, &bo, err);
}

int bw_setup(bw *s, uint64_t w, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    const nx_bwmm_params *p = s->p;
    bw_set *q = &s->set[w % BW_SETS];
    uint32_t tp = pl->tp, E = (uint32_t)p->E;
    uint64_t n, pos0;
    uint32_t cnt;
    bw_item(pl, w, &n, &pos0, &cnt);
    uint32_t nt = cdiv32(cnt, tp);

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
    if (tensor_scalar(s, NX_ENG_POOL, &valid, &eu, NX_ALU_IS_LT, &Eimm, err) != 0) return -1;
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
    if (tensor_scalar(s, NX_ENG_POOL, &vm1, &valid, NX_ALU_SUBTRACT, &one, err) != 0 ||
        tensor_scalar2(s, NX_ENG_POOL, &sc, &ids, NX_ALU_MULTIPLY, &valid, NX_ALU_ADD, &vm1, err) != 0)
        return -1;

    /* mask[p, j] = (j == e) selects the expert's affinity column */
    nx_operand ie = bw_v(&s->iota_e, NX_DT_INT32, tp, 0, E), mask = bw_v(&q->mask, NX_DT_FP32, tp, 0, E);
    if (tensor_scalar(s, NX_ENG_POOL, &mask, &ie, NX_ALU_IS_EQUAL, &e, err) != 0) return -1;

    for (uint32_t t = 0; t < nt; t++) {
        uint32_t rows = min32(tp, cnt - t * tp);
        nx_operand off = bw_v(&q->ids, NX_DT_INT32, rows, t, 1);
        /* the tokens' affinity rows [tok*E, tok*E + E) */
        nx_operand asrc = nx_ap_hbm_rows(p->aff_dtype, s->aff, rows, (int32_t)E, E);
        nx_operand adst = bw_v(&q->affrow, p->aff_dtype, rows, (uint64_t)t * E, E);
        /* a row costs a DMA descriptor whatever its bytes: halves on the
         * two small lanes arrive in half the time */
        uint32_t half = rows > 1 && s->aff_lanes > 1 ? (rows + 1) / 2 : rows;
        for (uint32_t r0 = 0, h = 0; r0 < rows; r0 += half, h++) {
            uint32_t nr = min32(half, rows - r0);
            nx_operand d = nx_operand_rows(&adst, r0, nr), o = nx_operand_rows(&off, r0, nr);
            asrc.partition_count = (uint8_t)nr;
            if (dma_indirect(s, s->aff_lane + h % s->aff_lanes, &d, &asrc, &o, p->T, 0, err) != 0) return -1;
        }
        /* the hidden rows, in 2 KiB column pieces over the load lanes */
        for (uint64_t c0 = 0; c0 < p->H; c0 += pl->c) {
            uint32_t w_ = min32(pl->c, p->H - c0);
            nx_operand src = nx_ap_hbm_rows(s->dt, s->hs + c0 * pl->s, rows, (int32_t)p->H, w_);
            nx_operand dst = bw_v(&s->x, s->dt, rows, (uint64_t)t * p->H + c0, w_);
            if (gather_split(s, &dst, &src, &off, p->T, err) != 0) return -1;
        }
    }
    return 0;
}

int bw_affinities(bw *s, uint64_t w, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    const nx_bwmm_params *p = s->p;
    bw_set *q = &s->set[w % BW_SETS];
    uint32_t tp = pl->tp, E = (uint32_t)p->E;
    uint64_t n, pos0;
    uint32_t cnt;
    bw_item(pl, w, &n, &pos0, &cnt);
    uint32_t nt = cdiv32(cnt, tp);
    /* affinity = the masked row's sum (one nonzero term: exact; a NaN in
     * another expert's column does not leak, select copies) */
    int32_t ms[2] = {0, 1}, rs[2] = {(int32_t)E, 1};
    uint32_t mc[2] = {nt, E};
    nx_operand mask = nx_tile_view(&q->mask, NX_DT_FP32, 0, tp, 0, 2, ms, mc);
    nx_operand rows = nx_tile_view(&q->affrow, p->aff_dtype, 0, tp, 0, 2, rs, mc);
    nx_operand sel = nx_tile_view(&q->affsel, NX_DT_FP32, 0, tp, 0, 2, rs, mc);
    nx_operand zero = nx_imm(0.0, NX_DT_FP32);
    if (select_(s, &sel, &mask, &rows, &zero, err) != 0) return -1;
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
    uint64_t n, pos0;
    uint32_t cnt;
    bw_item(pl, w, &n, &pos0, &cnt);
    uint32_t nt = cdiv32(cnt, tp);
    /* x = x * a, rounded to the input dtype */
    uint32_t piece = pl->c * 8;
    for (uint32_t t = 0; t < nt; t++) {
        uint32_t rows_t = min32(tp, cnt - t * tp);
        nx_operand a = bw_v(&q->aff, NX_DT_FP32, rows_t, t, 1);
        for (uint64_t c0 = 0; c0 < p->H; c0 += piece) {
            nx_operand x = bw_v(&s->x, s->dt, rows_t, (uint64_t)t * p->H + c0, min32(piece, p->H - c0));
            if (tensor_scalar(s, NX_ENG_DVE, &x, &x, NX_ALU_MULTIPLY, &a, err) != 0) return -1;
        }
    }
    return 0;
}

/* ---- x -> x^T ---- */

int bw_transpose(bw *s, uint64_t w, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    uint32_t tp = pl->tp;
    uint64_t n, pos0;
    uint32_t cnt;
    bw_item(pl, w, &n, &pos0, &cnt);
    uint32_t nt = cdiv32(cnt, tp);
    for (uint32_t c = 0; c < pl->nh; c++) {
        uint32_t hw = min32(tp, s->p->H - (uint64_t)c * tp);
        uint32_t slot = bw_psum_take(s, cnt * pl->s);
        for (uint32_t t = 0; t < nt; t++) {
            uint32_t rows = min32(tp, cnt - t * tp);
            nx_operand src = bw_v(&s->x, s->dt, rows, (uint64_t)t * s->p->H + (uint64_t)c * tp, hw);
            nx_operand dst = bw_psum(s, s->dt, hw, slot + t * tp * pl->s, rows);
            if (nx_kctx_transpose(s->k, NX_ENG_PE, &dst, &src, err) != 0) return -1;
        }
        nx_operand from = bw_psum(s, s->dt, hw, slot, cnt);
        nx_operand to = bw_v(&s->xt, s->dt, hw, (uint64_t)c * pl->bs, cnt);
        if (nx_kctx_tensor_copy(s->k, bw_evac_engine(s), &to, &from, err) != 0) return -1;
    }
    return 0;
}

/* ---- gate/up: h^T = silu(W_g^T x^T) * (W_u^T x^T) ---- */

static void group_cols(const bw *s, uint32_t g, uint32_t *it0, uint32_t *it1, uint64_t *col0, uint32_t *width) {
    const nx_bwmm_plan *pl = s->pl;
    *it0 = g * pl->g_tiles;
    *it1 = *it0 + pl->g_tiles < pl->ni ? *it0 + pl->g_tiles : pl->ni;
    *col0 = (uint64_t)*it0 * pl->tp;
    uint64_t end = (uint64_t)*it1 * pl->tp < s->p->inter ? (uint64_t)*it1 * pl->tp : s->p->inter;
    *width = (uint32_t)(end - *col0);
}

/* Piece j of an item: group g, pass (split: 0 gate, 1 up; joint: 0) and h-chunk c. */
static void gu_piece(const nx_bwmm_plan *pl, uint32_t j, uint32_t *g, uint32_t *pass, uint32_t *c) {
    uint32_t passes = pl->gu_split ? 2 : 1;
    *c = j % pl->nh;
    *pass = (j / pl->nh) % passes;
    *g = j / pl->nh / passes;
}

int bw_load_gate_up(bw *s, uint64_t k, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    const nx_bwmm_params *p = s->p;
    if (k >= pl->items * pl->pg) return 0;
    uint64_t w = k / pl->pg;
    uint32_t g, pass, c, it0, it1, width;
    gu_piece(pl, (uint32_t)(k % pl->pg), &g, &pass, &c);
    uint64_t col0;
    group_cols(s, g, &it0, &it1, &col0, &width);
    uint32_t hw = min32(pl->tp, p->H - (uint64_t)c * pl->tp);
    const nx_tile *slot = &s->gu_ring[k % pl->rg];
    nx_operand dst, src;
    if (pl->gu_split) { /* one projection's columns of the rows */
        dst = bw_v(slot, s->dt, hw, 0, width);
        src = nx_ap_hbm_rows(s->dt, s->gu + ((uint64_t)pass * p->inter + col0) * pl->s, hw, (int32_t)(2 * p->inter),
                             width);
    } else if (width == p->inter) { /* gate and up of a row are one run */
        dst = bw_v(slot, s->dt, hw, 0, 2 * width);
        src = nx_ap_hbm_rows(s->dt, s->gu, hw, (int32_t)(2 * p->inter), (uint32_t)(2 * p->inter));
    } else {
        int32_t st[2] = {(int32_t)p->inter, 1};
        uint32_t cn[2] = {2, width};
        dst = bw_v(slot, s->dt, hw, 0, 2 * width);
        src = nx_ap(NX_OPK_HBM, s->dt, 0, hw, (int32_t)(2 * p->inter), s->gu + col0 * pl->s, 2, st, cn);
    }
    nx_operand off = bw_v(&s->set[w % BW_SETS].goff, NX_DT_INT32, hw, c, 1);
    return gather_split(s, &dst, &src, &off, p->E * p->H, err);
}

/* One pass over H of group g: the matmuls of the projections `first` ..
 * `last` (0 gate, 1 up) into acc[2 * i + projection], refilling the ring
 * behind them. */
static int gu_pass(bw *s, uint64_t w, uint32_t g, uint32_t pass, int first, int last, const uint32_t *acc,
                   uint32_t cnt, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    const nx_bwmm_params *p = s->p;
    uint32_t tp = pl->tp, it0, it1, width, passes = pl->gu_split ? 2 : 1;
    uint64_t col0;
    group_cols(s, g, &it0, &it1, &col0, &width);
    for (uint32_t c = 0; c < pl->nh; c++) {
        uint64_t k = w * pl->pg + ((uint64_t)g * passes + pass) * pl->nh + c;
        const nx_tile *slot = &s->gu_ring[k % pl->rg];
        uint32_t hw = min32(tp, p->H - (uint64_t)c * tp);
        nx_operand mv = bw_v(&s->xt, s->dt, hw, (uint64_t)c * pl->bs, cnt);
        for (uint32_t it = it0; it < it1; it++) {
            uint32_t iw = min32(tp, p->inter - (uint64_t)it * tp);
            for (int pr = first; pr <= last; pr++) {
                uint64_t col = (uint64_t)(pl->gu_split ? 0 : pr) * width + (it - it0) * tp;
                nx_operand st = bw_v(slot, s->dt, hw, col, iw);
                nx_operand dst = bw_psum(s, NX_DT_FP32, iw, acc[2 * (it - it0) + pr], cnt);
                if (nx_kctx_load_stationary(s->k, &st, err) != 0 ||
                    nx_kctx_multiply_moving(s->k, &dst, &mv, c > 0, err) != 0)
                    return -1;
            }
        }
        if (bw_load_gate_up(s, k + pl->rg, err) != 0) return -1;
    }
    return 0;
}

int bw_gate_up(bw *s, uint64_t w, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    const nx_bwmm_params *p = s->p;
    uint32_t tp = pl->tp;
    uint64_t n, pos0;
    uint32_t cnt;
    bw_item(pl, w, &n, &pos0, &cnt);
    uint32_t acc[2 * 128]; /* psum offsets of [gate, up] per i-tile of the group */
    if (pl->g_tiles > 128) return nx_fail(err, "blockwise_mm: %u i-tiles per group exceed 128", pl->g_tiles);
    nx_operand one = nx_imm(1.0, NX_DT_FP32);
    for (uint32_t g = 0; g < pl->ngroups; g++) {
        uint32_t it0, it1, width;
        uint64_t col0;
        group_cols(s, g, &it0, &it1, &col0, &width);
        if (pl->gu_split) {
            /* gate over all of H, silu into SBUF; then up, times silu(gate) */
            for (uint32_t it = it0; it < it1; it++) acc[2 * (it - it0)] = bw_psum_take(s, cnt * 4);
            if (gu_pass(s, w, g, 0, 0, 0, acc, cnt, err) != 0) return -1;
            for (uint32_t it = it0; it < it1; it++) {
                uint32_t iw = min32(tp, p->inter - (uint64_t)it * tp);
                nx_operand gate = bw_psum(s, NX_DT_FP32, iw, acc[2 * (it - it0)], cnt);
                nx_operand sgv = bw_v(&s->sg[it - it0], NX_DT_FP32, iw, 0, cnt);
                if (activation(s, NX_ACT_SILU, &sgv, &gate, &one, err) != 0) return -1;
            }
            for (uint32_t it = it0; it < it1; it++) acc[2 * (it - it0) + 1] = bw_psum_take(s, cnt * 4);
            if (gu_pass(s, w, g, 1, 1, 1, acc, cnt, err) != 0) return -1;
        } else {
            for (uint32_t it = it0; it < it1; it++)
                for (int pr = 0; pr < 2; pr++) acc[2 * (it - it0) + pr] = bw_psum_take(s, cnt * 4);
            if (gu_pass(s, w, g, 0, 0, 1, acc, cnt, err) != 0) return -1;
        }
        for (uint32_t it = it0; it < it1; it++) {
            uint32_t iw = min32(tp, p->inter - (uint64_t)it * tp);
            const nx_tile *sg = pl->gu_split ? &s->sg[it - it0] : &s->sg[s->next_sg++ % s->nsg];
            nx_operand up = bw_psum(s, NX_DT_FP32, iw, acc[2 * (it - it0) + 1], cnt);
            nx_operand sgv = bw_v(sg, NX_DT_FP32, iw, 0, cnt);
            nx_operand h = bw_v(&s->ht, s->dt, iw, (uint64_t)it * pl->bs, cnt);
            if (!pl->gu_split) {
                nx_operand gate = bw_psum(s, NX_DT_FP32, iw, acc[2 * (it - it0)], cnt);
                if (activation(s, NX_ACT_SILU, &sgv, &gate, &one, err) != 0) return -1;
            }
            if (nx_kctx_tensor_tensor(s->k, NX_ENG_DVE, NX_ALU_MULTIPLY, &h, &sgv, &up, err) != 0) return -1;
        }
    }
    return 0;
}

/* ---- down: out[tok] += (h Wd) * a, by 2 KiB column chunks ---- */

int bw_load_down(bw *s, uint64_t k, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    const nx_bwmm_params *p = s->p;
    if (k >= pl->items * pl->pd) return 0;
    uint64_t w = k / pl->pd;
    uint32_t j = (uint32_t)(k % pl->pd), wp = min32(pl->c, p->H - (uint64_t)j * pl->c);
    const nx_tile *slot = &s->dn_ring[k % pl->rd];
    for (uint32_t ic = 0; ic < pl->ni; ic++) {
        uint32_t iw = min32(pl->tp, p->inter - (uint64_t)ic * pl->tp);
        nx_operand dst = bw_v(slot, s->dt, iw, (uint64_t)ic * pl->c, wp);
        nx_operand src = nx_ap_hbm_rows(s->dt, s->dn + (uint64_t)j * pl->c * pl->s, iw, (int32_t)p->H, wp);
        nx_operand off = bw_v(&s->set[w % BW_SETS].doff, NX_DT_INT32, iw, ic, 1);
        if (gather_split(s, &dst, &src, &off, p->E * p->inter, err) != 0) return -1;
    }
    return 0;
}

/* Token tile t of item w against down piece j: matmuls, scale, scatter-add. */
static int down_tile(bw *s, uint64_t w, uint32_t t, uint32_t j, uint32_t cnt, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    const nx_bwmm_params *p = s->p;
    const bw_set *q = &s->set[w % BW_SETS];
    uint32_t tp = pl->tp, rows = min32(tp, cnt - t * tp), wp = min32(pl->c, p->H - (uint64_t)j * pl->c);
    uint32_t nb = cdiv32(wp, pl->bank_f32), acc[16];
    if (nb > 16) return nx_fail(err, "blockwise_mm: %u PSUM banks per output chunk exceed 16", nb);
    const nx_tile *slot = &s->dn_ring[(w * pl->pd + j) % pl->rd];
    for (uint32_t b = 0; b < nb; b++) acc[b] = bw_psum_take(s, min32(pl->bank_f32, wp - b * pl->bank_f32) * 4);
    for (uint32_t ic = 0; ic < pl->ni; ic++) {
        uint32_t iw = min32(tp, p->inter - (uint64_t)ic * tp);
        nx_operand st = bw_v(&s->ht, s->dt, iw, (uint64_t)ic * pl->bs + (uint64_t)t * tp, rows);
        if (nx_kctx_load_stationary(s->k, &st, err) != 0) return -1;
        for (uint32_t b = 0; b < nb; b++) {
            uint32_t wb = min32(pl->bank_f32, wp - b * pl->bank_f32);
            nx_operand mv = bw_v(slot, s->dt, iw, (uint64_t)ic * pl->c + (uint64_t)b * pl->bank_f32, wb);
            nx_operand dst = bw_psum(s, NX_DT_FP32, rows, acc[b], wb);
            if (nx_kctx_multiply_moving(s->k, &dst, &mv, ic > 0, err) != 0) return -1;
        }
    }
    const nx_tile *stage = &s->stage[s->next_stage++ % pl->nstage];
    nx_operand a = bw_v(&q->aff, NX_DT_FP32, rows, t, 1);
    for (uint32_t b = 0; b < nb; b++) {
        uint32_t wb = min32(pl->bank_f32, wp - b * pl->bank_f32);
        nx_operand from = bw_psum(s, NX_DT_FP32, rows, acc[b], wb);
        nx_operand to = bw_v(stage, s->dt, rows, (uint64_t)b * pl->bank_f32, wb);
        nx_engine eng = bw_evac_engine(s);
        int rc;
        if (p->scaling != NX_BWMM_POST_SCALE) rc = nx_kctx_tensor_copy(s->k, eng, &to, &from, err);
        else if (eng == NX_ENG_ACT) rc = activation(s, NX_ACT_IDENTITY, &to, &from, &a, err);
        else rc = tensor_scalar(s, NX_ENG_DVE, &to, &from, NX_ALU_MULTIPLY, &a, err);
        if (rc != 0) return -1;
    }
    /* scatter-add into chunk j of the accumulator: rows by token id */
    uint32_t rep = (uint32_t)(w % pl->nrep);
    nx_operand dst = nx_ap_hbm_rows(s->dt, bw_acc_row(s, rep, j, 0), rows, (int32_t)pl->c, wp);
    nx_operand src = bw_v(stage, s->dt, rows, 0, wp);
    nx_operand off = bw_v(&q->sc, NX_DT_INT32, rows, t, 1);
    return dma_indirect(s, bw_scatter_lane(s, rep, j), &dst, &src, &off, p->T, NX_FLAG_SCATTER | NX_FLAG_ACCUMULATE, err);
}

int bw_down(bw *s, uint64_t w, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    uint64_t n, pos0;
    uint32_t cnt;
    bw_item(pl, w, &n, &pos0, &cnt);
    uint32_t nt = cdiv32(cnt, pl->tp);
    if (pl->rd == pl->pd) {
        /* every piece in SBUF: token tiles outermost, so consecutive
         * scatters go to different chunks (different queues) */
        for (uint32_t t = 0; t < nt; t++)
            for (uint32_t j = 0; j < pl->pd; j++)
                if (down_tile(s, w, t, j, cnt, err) != 0) return -1;
        for (uint32_t j = 0; j < pl->pd; j++)
            if (bw_load_down(s, w * pl->pd + j + pl->rd, err) != 0) return -1;
        return 0;
    }
    for (uint32_t j = 0; j < pl->pd; j++) {
        for (uint32_t t = 0; t < nt; t++)
            if (down_tile(s, w, t, j, cnt, err) != 0) return -1;
        if (bw_load_down(s, w * pl->pd + j + pl->rd, err) != 0) return -1;
    }
    return 0;
}
