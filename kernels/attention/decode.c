/* attention_decode: token generation against a KV cache, after the public
 * NKI decode attention kernels (aws-neuron-sdk nki-samples "token gen"
 * attention: q rows of all the heads sharing a kv head as one stationary
 * block, K^T streamed past it, softmax in fp32, P transposed for P V) and
 * the flash-decoding online softmax (Dao et al., "Flash-Decoding for
 * long-context inference", 2023). Past them: s = 1..8 new tokens with their
 * causal mask, run-time ragged lengths, paged caches in any block order
 * (indirect gathers of page chunks, chunks past L_b skipped), sliding
 * windows, sinks, D up to 256 (two PE passes) and the cache results written
 * in place of a separate update kernel. docs/parts/attention-decode.md.
 *
 * Work item: (b, kv head g, chunk of gh q heads): R = gh x s rows (row
 * jh s + t). Per item: Q^T and K_new^T by PE transposes, the new block's
 * scores first, then per cache tile of Pt partitions x c positions (one DMA
 * run of c D elements per partition):
 *   PE   K^T pieces by transposes into PSUM; ACT copies them out;
 *   PE   S = Q K^T [R, F] (stationary Q^T, moving K^T 512 columns);
 *   DVE  running max; ACT P = exp(scale S - m) rounded to the dtype;
 *   PE   P^T per sub-block; DVE copies it out times the 0/1 mask
 *        (position < L_b, window), one instruction a tile;
 *   PE   O += P^T' V, l += P^T' 1 (PSUM); DVE O_acc = O_acc a + O, l = l a + l'.
 * The last tile of a row covers only the partitions below S_max. Emission
 * order A(q + 2), B1(q + 1), B2(q) (stage_a, stage_b1, stage_b2), items
 * split over the grid's cores, tiles loaded DEC_BUFS - 1 steps ahead on
 * DMA queues apart from the cache copy's (decode_impl.h, DEC_LANES). */
#include <math.h>
#include <string.h>

#include "decode_impl.h"

static int act(nx_kctx *k, nx_act_func f, const nx_operand *dst, const nx_operand *in, const nx_operand *scale,
               const nx_operand *bias, nx_error *err) {
    nx_insn a = nx_insn_make(NX_OP_ACTIVATION);
    a.func = (uint8_t)f;
    a.op[0] = *dst;
    a.op[1] = *in;
    a.op[2] = *scale;
    a.op[3] = *bias;
    return nx_kctx_emit(k, NX_ENG_ACT, &a, err);
}

static int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

static int plan(dec_plan *pl, const nx_geometry *geo, const char *kname, nx_error *err) {
    const nx_decode_params *p = &pl->p;
    pl->es = (uint32_t)nx_dtype_size(p->dtype);
    pl->Pt = geo->partitions < geo->pe_rows ? geo->partitions : geo->pe_rows;
    if (pl->Pt > geo->pe_cols) pl->Pt = geo->pe_cols;
    pl->nd = p->D > pl->Pt ? 2 : 1;
    pl->Dp = (uint32_t)(p->D / pl->nd);
    if (pl->Dp > pl->Pt) return nx_fail(err, "operand 0 (q): D = %llu beyond two PE passes", (unsigned long long)p->D);
    uint32_t rmax = geo->pe_cols < pl->Pt ? geo->pe_cols : pl->Pt;
    pl->gh = 0;
    for (uint64_t gh = p->G; gh >= 1; gh--)
        if (p->G % gh == 0 && gh * p->s <= rmax) {
            pl->gh = (uint32_t)gh;
            break;
        }
    pl->R = pl->gh * (uint32_t)p->s;
    pl->nhc = (uint32_t)(p->G / pl->gh);
    pl->items = p->B * p->Hkv * pl->nhc;
    const uint64_t bank = geo->psum_bank_bytes, banks = geo->psum_partition_bytes / bank;
    uint32_t ct = (uint32_t)(2048 / (p->D * pl->es));
    if (ct < 1) ct = 1;
    if (ct * pl->Pt > 1024) ct = 1024 / pl->Pt;
    for (uint32_t c = ct; c >= 1; c--) {
        if (p->paged && (p->N % c != 0 || p->N / c > pl->Pt || !is_pow2(p->N / c))) continue;
        uint64_t Ft = (uint64_t)pl->Pt * c;
        uint64_t kt = (pl->nd * Ft * pl->es + bank - 1) / bank, sb = (Ft * 4 + bank - 1) / bank;
        uint64_t pt = (c * pl->R * pl->es + bank - 1) / bank;
        if (c * pl->R * pl->es > bank || kt + sb + pt + 1 > banks) continue;
        /* the Q^T and K_new^T transposes share the K^T banks */
        if (pl->nd * (pl->R + p->s) * pl->es > kt * bank) continue;
        pl->c = c;
        pl->Ft = Ft;
        pl->ps_kt = 0, pl->ps_s = kt * bank, pl->ps_s_step = sb * bank;
        /* three score buffers (the five-stage pipeline, stage_a1..stage_b2)
         * when P^T, O and l share one bank beside them */
        const uint64_t pt_b = (c * pl->R * pl->es + 15) / 16 * 16;
        pl->nsets = 2;
        /* lanes: the scores of chunk group g in partitions 32 g.. (a PE
         * result starts at a multiple of 32), each score buffer [32 lg,
         * cg Pt] fp32 in a bank of its own (DVE's max and ACT's
         * exponentials of neighbouring steps never share one), then P^T /
         * O / l, then the merge's two banks */
        uint32_t lg = pl->Pt / DEC_LANE_Q < c ? pl->Pt / DEC_LANE_Q : c;
        while (lg > 1 && c % lg) lg--;
        const uint32_t lanes = lg * DEC_LANE_Q, cg = lg ? c / lg : 0;
        const uint64_t ptl = (uint64_t)(c * pl->R > cg * lanes ? c * pl->R : cg * lanes) * pl->es;
        const uint64_t pt_l = (ptl + 15) / 16 * 16, fin_b = ((p->D + 1) * 4 + 15) / 16 * 16;
        const uint64_t m_b = ((uint64_t)lanes * 4 + 15) / 16 * 16 + ((uint64_t)pl->R * 4 + 15) / 16 * 16;
        if (pt == 1 && lg >= 2 && pl->R <= DEC_LANE_Q && (uint64_t)cg * pl->Pt * 4 <= bank && ptl <= bank &&
            pt_l + p->D * 4 + 4 <= bank && fin_b <= bank && m_b <= bank && kt + 6 <= banks) {
            pl->lanes = lanes, pl->lg = lg, pl->cg = cg;
            pl->s_bufs = 3, pl->nsets = DEC_SETS;
            pl->ps_s_step = bank;
            pl->ps_pt = (kt + 3) * bank, pl->ps_o = pl->ps_pt + pt_l;
            pl->ps_fin = (kt + 4) * bank, pl->ps_m = (kt + 5) * bank, pl->fin_b = fin_b, pl->m_b = m_b;
            pl->nm = (uint32_t)(bank / fin_b < bank / m_b ? bank / fin_b : bank / m_b);
            if (pl->nm > DEC_MERGES) pl->nm = DEC_MERGES;
            /* K^T by step parity when the banks allow: the PE's transposes
             * of the next tile need not wait for ACT's copy of this one */
            if (2 * kt + 6 <= banks) pl->ps_kt2 = (kt + 6) * bank;
        } else if (pt == 1 && pt_b + p->D * 4 + 4 <= bank && kt + 3 * sb + 1 <= banks) {
            pl->s_bufs = 3;
            pl->ps_pt = (kt + 3 * sb) * bank, pl->ps_o = pl->ps_pt + pt_b;
        } else {
            pl->s_bufs = kt + 2 * sb + pt + 1 <= banks ? 2 : 1;
            pl->ps_pt = (kt + pl->s_bufs * sb) * bank, pl->ps_o = (kt + pl->s_bufs * sb + pt) * bank;
        }
        pl->ps_l = pl->ps_o + p->D * 4;
        break;
    }
    if (pl->c == 0) {
        if (p->paged)
            return nx_fail(err, "attribute block_size: N = %llu must be c x 2^k with c <= %u and 2^k <= %u", (unsigned long long)p->N,
                           ct, pl->Pt);
        return nx_fail(err, "%s: no cache tile fits PSUM", kname);
    }
    if (p->paged) {
        pl->cpb = (uint32_t)(p->N / pl->c);
        pl->nb = pl->Pt / pl->cpb;
        pl->T = (p->max_blocks + pl->nb - 1) / pl->nb;
        /* the table rows' PSUM pieces ([nb or Pt, <= 128] fp32) behind the
         * merge's sets when they fit, else P^T's bank (then the lanes' P^T
         * and the rows' spread wait for each other) */
        const uint64_t bt_b = 4 * (pl->T < 128 ? pl->T : 128);
        pl->ps_bt = pl->lanes && pl->nm * pl->fin_b + bt_b <= bank ? pl->ps_fin + pl->nm * pl->fin_b : pl->ps_pt;
        pl->ps_bt2 = pl->lanes && pl->nm * pl->m_b + bt_b <= bank ? pl->ps_m + pl->nm * pl->m_b : pl->ps_pt;
        if ((double)p->num_blocks * p->Hkv * p->N >= 0x1p24)
            return nx_fail(err, "operand 1 (k_cache): %llu x %llu x %llu rows, beyond the 2^24 an index holds exactly",
                           (unsigned long long)p->num_blocks, (unsigned long long)p->Hkv, (unsigned long long)p->N);
    } else {
        pl->T = (p->S_max + pl->Ft - 1) / pl->Ft;
        /* the last tile in fewer chunks (still lg groups of them) when its
         * positions fit: its loads' rows get shorter, its PE work smaller */
        const uint64_t rem = p->S_max - (pl->T - 1) * pl->Ft;
        for (uint32_t cc = pl->lg; pl->lanes && rem < pl->Ft && cc < pl->c; cc *= 2)
            if (pl->c % cc == 0 && rem <= (uint64_t)pl->Pt * cc) {
                pl->cn = cc;
                break;
            }
        if ((double)p->B * p->Hkv * p->S_max >= 0x1p24)
            return nx_fail(err, "operand 1 (k_cache): %llu x %llu x %llu rows, beyond the 2^24 an index holds exactly",
                           (unsigned long long)p->B, (unsigned long long)p->Hkv, (unsigned long long)p->S_max);
    }
    return 0;
}

#define ALLOC(t, mem, name, dt, parts, n) \
    if (nx_kctx_alloc(k, mem, name, dt, parts, n, t, err) != 0) return -1

static int alloc_all(dec_core *c, nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const nx_dtype dt = p->dtype;
    const uint32_t Pt = pl->Pt, R = pl->R, s = (uint32_t)p->s, c_ = pl->c;
    const nx_geometry *g = nx_kctx_geometry(k);
    ALLOC(&c->psum, NX_OPK_PSUM, "psum", NX_DT_FP32, Pt, g->psum_partition_bytes / 4);
    ALLOC(&c->lf, NX_OPK_SBUF, "lengths", NX_DT_FP32, Pt, p->B);
    ALLOC(&c->posmap, NX_OPK_SBUF, "posmap", NX_DT_FP32, Pt, c_);
    if (pl->cn) ALLOC(&c->posmap_n, NX_OPK_SBUF, "posmap_last", NX_DT_FP32, Pt, pl->cn);
    ALLOC(&c->ucol, NX_OPK_SBUF, "ucol", NX_DT_FP32, Pt, 1);
    ALLOC(&c->tpat, NX_OPK_SBUF, "tpat", NX_DT_FP32, Pt, R);
    ALLOC(&c->newmask, NX_OPK_SBUF, "newmask", NX_DT_FP32, s, R);
    ALLOC(&c->ones, NX_OPK_SBUF, "ones", dt, Pt, 1);
    for (uint32_t i = 0; i < DEC_BUFS; i++) {
        ALLOC(&c->kt[i], NX_OPK_SBUF, "k_tile", dt, Pt, (uint64_t)c_ * p->D);
        ALLOC(&c->vt[i], NX_OPK_SBUF, "v_tile", dt, Pt, (uint64_t)c_ * p->D);
    }
    if (p->paged)
        for (uint32_t i = 0; i < DEC_PROBES; i++) {
            ALLOC(&c->prb_id[i], NX_OPK_SBUF, "probe_ids", NX_DT_INT32, Pt, 1);
            ALLOC(&c->prb_f[i], NX_OPK_SBUF, "probe_math", NX_DT_FP32, Pt, 2);
            ALLOC(&c->prb_sink[i], NX_OPK_SBUF, "block_probe", dt, Pt, 1);
        }
    for (uint32_t i = 0; i < DEC_ISETS; i++) {
        ALLOC(&c->qt[i], NX_OPK_SBUF, "q_rows", dt, R, p->D);
        ALLOC(&c->kn[i], NX_OPK_SBUF, "k_new", dt, s, p->D);
        ALLOC(&c->vn[i], NX_OPK_SBUF, "v_new", dt, s, p->D);
        ALLOC(&c->sk[i], NX_OPK_SBUF, "sink", NX_DT_FP32, R, 1);
        if (p->paged) {
            ALLOC(&c->bt[i], NX_OPK_SBUF, "block_table", NX_DT_FP32, 128, (pl->T + 127) / 128 * pl->nb);
            ALLOC(&c->btf[i], NX_OPK_SBUF, "block_ids_f", NX_DT_FP32, Pt, pl->T);
            ALLOC(&c->rix[i], NX_OPK_SBUF, "rows", NX_DT_INT32, Pt, pl->T);
        }
    }
    if (p->paged) {
        ALLOC(&c->btx, NX_OPK_SBUF, "block_ids_t", NX_DT_FP32, pl->nb, pl->T);
        ALLOC(&c->rmath, NX_OPK_SBUF, "row_math", NX_DT_FP32, Pt, 3 * pl->T);
        ALLOC(&c->pgrid, NX_OPK_SBUF, "tile_positions", NX_DT_FP32, Pt, pl->T);
        ALLOC(&c->sel, NX_OPK_SBUF, "block_select", NX_DT_FP32, pl->nb, Pt);
    }
    for (uint32_t i = 0; i < 2; i++) {
        ALLOC(&c->qT[i], NX_OPK_SBUF, "q_t", dt, pl->Dp, (uint64_t)pl->nd * R);
        ALLOC(&c->knT[i], NX_OPK_SBUF, "k_new_t", dt, pl->Dp, (uint64_t)pl->nd * s);
    }
    const uint32_t rows = pl->lanes > R ? pl->lanes : R; /* lanes: every lane's statistics */
    for (uint32_t i = 0; i < 2; i++) {
        ALLOC(&c->ktT_s[i], NX_OPK_SBUF, "k_t", dt, pl->Dp, pl->nd * pl->Ft);
        /* lanes: chunk e's R columns at e DEC_LANE_Q (dec_lane_pt), the rest zeros */
        ALLOC(&c->ptb_s[i], NX_OPK_SBUF, "p_t", dt, Pt, (uint64_t)c_ * (pl->lanes ? DEC_LANE_Q : R));
    }
    for (uint32_t i = 0; i < pl->nsets; i++) {
        ALLOC(&c->stat_s[i], NX_OPK_SBUF, "stats", NX_DT_FP32, rows, 11);
        ALLOC(&c->oacc_s[i], NX_OPK_SBUF, "o_acc", NX_DT_FP32, rows, p->D);
    }
    ALLOC(&c->pb[0], NX_OPK_SBUF, "p", dt, rows, pl->Ft);
    ALLOC(&c->pb[1], NX_OPK_SBUF, "p", dt, rows, pl->Ft);
    if (pl->lanes && dec_lane_alloc(c, err) != 0) return -1;
    for (uint32_t i = 0; i < DEC_OUTS; i++) ALLOC(&c->osb[i], NX_OPK_SBUF, "o_out", dt, R, p->D);
    ALLOC(&c->thr, NX_OPK_SBUF, "window_lo", NX_DT_FP32, Pt, R);
    ALLOC(&c->posabs, NX_OPK_SBUF, "positions", NX_DT_FP32, Pt, c_);
    ALLOC(&c->m01, NX_OPK_SBUF, "valid", NX_DT_FP32, Pt, c_);
    ALLOC(&c->mw, NX_OPK_SBUF, "window_mask", NX_DT_FP32, Pt, (uint64_t)c_ * R);
    return 0;
}

static int iota(nx_kctx *k, const nx_operand *dst, int64_t base, int32_t cm, uint32_t nd, const int32_t *st,
                const uint32_t *cn, nx_error *err) {
    nx_operand pat = nx_pattern(base, cm, dst->partition_count, nd, st, cn);
    pat.dtype = NX_DT_INT32;
    return nx_kctx_iota(k, dst, &pat, err);
}

/* Constants: lengths as fp32 in every partition, position maps, row tokens,
 * the new block's mask, ones. */
static int constants(dec_core *c, nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const uint32_t Pt = pl->Pt, s = (uint32_t)p->s, R = pl->R;
    /* the lengths in every partition: one row loaded (one run), as fp32,
     * times a ones column on the PE (exact: 1 x L) */
    nx_tile li, lr, on1;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "lengths_i", NX_DT_INT32, 1, p->B, &li, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "lengths_f", NX_DT_FP32, 1, p->B, &lr, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "ones_row", NX_DT_FP32, 1, Pt, &on1, err) != 0)
        return -1;
    nx_operand lid = nx_tile_ap(&li), lrd = nx_tile_ap(&lr), o1 = nx_tile_ap(&on1);
    nx_operand lsrc = nx_ap_hbm_rows(NX_DT_INT32, c->call->args[5].hbm_offset, 1, (int32_t)p->B, (uint32_t)p->B);
    if (nx_kctx_dma_on(k, NX_ROWS_LOAD_LANE + 2, &lid, &lsrc, err) != 0 ||
        nx_kctx_tensor_copy(k, NX_ENG_DVE, &lrd, &lid, err) != 0 || nx_kctx_memset(k, NX_ENG_DVE, &o1, 1.0, err) != 0 ||
        nx_kctx_load_stationary(k, &o1, err) != 0)
        return -1;
    for (uint64_t b0 = 0; b0 < p->B; b0 += 512) {
        const uint64_t nbb = p->B - b0 < 512 ? p->B - b0 : 512;
        nx_operand ps = dec_psum(c, NX_DT_FP32, pl->ps_pt, Pt, nbb), mv = dec_view(&lr, NX_DT_FP32, 0, 1, b0, nbb);
        nx_operand dst = dec_view(&c->lf, NX_DT_FP32, 0, Pt, b0, nbb);
        if (nx_kctx_multiply_moving(k, &ps, &mv, 0, err) != 0 || nx_kctx_tensor_copy(k, NX_ENG_DVE, &dst, &ps, err) != 0)
            return -1;
    }
    if (p->paged) { /* sel[k][j cpb + u] = (k == j) */
        const int32_t st[2] = {1, 0};
        const uint32_t cn[2] = {pl->nb, pl->cpb};
        nx_operand sl = nx_tile_ap(&c->sel), z0 = nx_imm(0.0, NX_DT_FP32);
        if (iota(k, &sl, 0, -1, 2, st, cn, err) != 0 ||
            nx_kctx_tensor_scalar(k, NX_ENG_POOL, &sl, &sl, NX_ALU_IS_EQUAL, &z0, NX_ALU_BYPASS, NULL, err) != 0)
            return -1;
    }
    const int32_t one = 1, zero = 0;
    const int32_t st2[2] = {0, 1};
    const uint32_t cn2[2] = {pl->gh, s}, cc = pl->c, c1 = 1;
    nx_operand pm = nx_tile_ap(&c->posmap);
    if (iota(k, &pm, 0, (int32_t)pl->c, 1, &one, &cc, err) != 0) return -1;
    if (pl->cn) {
        nx_operand pn = nx_tile_ap(&c->posmap_n);
        if (iota(k, &pn, 0, (int32_t)pl->cn, 1, &one, &pl->cn, err) != 0) return -1;
    }
    if (p->paged) {
        /* block-major tiles: partition p = j cpb + u holds chunk u of the
         * tile's block j, so its positions start at j N + u c = p c (as
         * for a contiguous tile) and a tile of fewer blocks is a prefix of
         * partitions (pgrid: p c + tau Ft for every tile tau); u = p -
         * cpb floor(p / cpb) (the rounding of (p - (cpb - 1) / 2) / cpb to
         * an integer is the floor) */
        nx_operand uc = nx_tile_ap(&c->ucol);
        nx_operand ui = dec_view(&c->mw, NX_DT_INT32, 0, Pt, 0, 1), qf = dec_view(&c->mw, NX_DT_FP32, 0, Pt, 1, 1);
        nx_operand pp = dec_view(&c->mw, NX_DT_FP32, 0, Pt, 2, 1);
        nx_operand half = nx_imm((pl->cpb - 1) / 2.0, NX_DT_FP32), cpv = nx_imm((double)pl->cpb, NX_DT_FP32);
        nx_operand mcp = nx_imm(-(double)pl->cpb, NX_DT_FP32);
        nx_operand pg = nx_tile_ap(&c->pgrid);
        const int32_t ft = (int32_t)pl->Ft;
        const uint32_t tn = (uint32_t)pl->T;
        if (iota(k, &pg, 0, (int32_t)pl->c, 1, &ft, &tn, err) != 0) return -1;
        if (iota(k, &pp, 0, 1, 1, &zero, &c1, err) != 0 ||
            nx_kctx_tensor_scalar(k, NX_ENG_POOL, &ui, &pp, NX_ALU_SUBTRACT, &half, NX_ALU_DIVIDE, &cpv, err) != 0 ||
            nx_kctx_tensor_copy(k, NX_ENG_POOL, &qf, &ui, err) != 0 ||
            nx_kctx_scalar_tensor_tensor(k, NX_ENG_POOL, &uc, &qf, NX_ALU_MULTIPLY, &mcp, NX_ALU_ADD, &pp, err) != 0)
            return -1;
    }
    nx_operand tp = nx_tile_ap(&c->tpat), nm = nx_tile_ap(&c->newmask);
    /* new key u is visible to token t when v = t - u is in [0, W - 1]
     * (no window: v >= 0): |v - (W - 1) / 2| <= (W - 1) / 2 */
    const double hw = p->window ? (double)(p->window - 1) / 2 : 0;
    nx_operand z = nx_imm(0.0, NX_DT_FP32), hv = nx_imm(hw, NX_DT_FP32);
    if (iota(k, &tp, 0, 0, 2, st2, cn2, err) != 0 || iota(k, &nm, 0, -1, 2, st2, cn2, err) != 0) return -1;
    if (p->window) {
        if (nx_kctx_tensor_scalar(k, NX_ENG_POOL, &nm, &nm, NX_ALU_SUBTRACT, &hv, NX_ALU_ABS_MAX, &z, err) != 0 ||
            nx_kctx_tensor_scalar(k, NX_ENG_POOL, &nm, &nm, NX_ALU_IS_LE, &hv, NX_ALU_BYPASS, NULL, err) != 0)
            return -1;
    } else if (nx_kctx_tensor_scalar(k, NX_ENG_POOL, &nm, &nm, NX_ALU_IS_GE, &z, NX_ALU_BYPASS, NULL, err) != 0)
        return -1;
    (void)R;
    nx_operand on = nx_tile_ap(&c->ones);
    if (nx_kctx_memset(k, NX_ENG_POOL, &on, 1.0, err) != 0) return -1;
    /* paged: every item's table row lands in the same region of its set;
     * the rest keeps -1 (dec_load_blocks) */
    for (uint32_t i = 0; p->paged && i < DEC_ISETS; i++) {
        nx_operand b = nx_tile_ap(&c->bt[i]);
        if (nx_kctx_memset(k, NX_ENG_POOL, &b, -1.0, err) != 0) return -1;
    }
    /* the tile buffers zeroed (what a partial tile or a skipped chunk
     * leaves stays finite under the mask) as fp32: the same zero bits in
     * half the elements a partition of a 2-byte dtype (they hold POOL's
     * stream, the first loads and the lanes' constants behind them) */
    const uint64_t n32 = (uint64_t)pl->c * p->D * pl->es / 4;
    for (uint32_t i = 0; i < DEC_BUFS; i++) {
        nx_operand a = dec_view(&c->kt[i], NX_DT_FP32, 0, Pt, 0, n32), b = dec_view(&c->vt[i], NX_DT_FP32, 0, Pt, 0, n32);
        if (nx_kctx_memset(k, NX_ENG_POOL, &a, 0.0, err) != 0 || nx_kctx_memset(k, NX_ENG_DVE, &b, 0.0, err) != 0) return -1;
    }
    if (pl->lanes && dec_lane_constants(c, err) != 0) return -1;
    return 0;
}

/* Paged: the pending probe's check (dec_probe_blocks part 1) once the
 * loads of step q are due (UINT64_MAX: now). */
static int probe_check(dec_core *c, uint64_t q, nx_error *err) {
    if (c->probe_row == UINT64_MAX || q < c->probe_due) return 0;
    const uint64_t b = c->probe_row;
    c->probe_row = UINT64_MAX;
    return dec_probe_blocks(c, b, 1, err);
}

/* Item-level loads (those of step q): q rows, k_new / v_new, the sinks,
 * the block ids. */
static int load_item(dec_core *c, const dec_item *it, uint64_t i, uint32_t set, uint64_t q, nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const nx_kernel_call *call = c->call;
    const uint64_t es = pl->es, D = p->D, s = p->s;
    nx_operand qd = nx_tile_ap(&c->qt[set]);
    nx_operand qs = nx_ap_hbm_rows(p->dtype, call->args[0].hbm_offset + (it->b * p->Hq + it->h0) * s * D * es, pl->R,
                                   (int32_t)D, (uint32_t)D);
    /* on the store queue (decode_impl.h, DEC_LANES): not behind the K
     * tiles issued ahead of them */
    if (nx_kctx_dma_split(k, c->r.store_lane, pl->R < 4 ? pl->R : 4, &qd, &qs, err) != 0) return -1;
    for (uint32_t kv = 0; kv < 2; kv++) {
        nx_operand d = nx_tile_ap(kv ? &c->vn[set] : &c->kn[set]);
        nx_operand sr = nx_ap_hbm_rows(p->dtype, call->args[3 + kv].hbm_offset + (it->b * p->Hkv + it->g) * s * D * es,
                                       (uint32_t)s, (int32_t)D, (uint32_t)D);
        if (nx_kctx_dma_on(k, c->r.store_lane + 8 + kv, &d, &sr, err) != 0) return -1;
    }
    if (p->sink) {
        const uint64_t so = call->args[p->sink_operand].hbm_offset;
        for (uint32_t jh = 0; jh < pl->gh; jh++) {
            nx_operand d = dec_view(&c->sk[set], NX_DT_FP32, jh * (uint32_t)s, (uint32_t)s, 0, 1);
            nx_operand sr = nx_ap_hbm_rows(NX_DT_FP32, so + (it->h0 + jh) * 4, (uint32_t)s, 0, 1);
            if (nx_kctx_dma_on(k, c->r.store_lane + jh % 4, &d, &sr, err) != 0) return -1;
        }
    }
    if (!p->paged) return 0;
    /* the table row's probe with the row's first item on this core (items
     * run b-major) */
    if (it->b != c->probed) {
        if (probe_check(c, UINT64_MAX, err) != 0 || dec_probe_blocks(c, it->b, 0, err) != 0) return -1;
        c->probe_row = it->b, c->probe_due = q + DEC_PROBE_LAG;
    }
    c->probed = it->b;
    /* the table rows three items ahead, their transpose two, the spread and
     * the gather rows one (the first items' at once): no engine's stream
     * waits for a row's load, nor the PE for DVE's copy between, nor a
     * gather for rows POOL computes behind its masks */
    const uint64_t n = c->hi - c->lo;
    for (; c->bt_a < n && c->bt_a <= i + 3; c->bt_a++) {
        const dec_item a = dec_item_at(pl, c->lo + c->bt_a);
        if (dec_load_blocks(c, &a, (uint32_t)(c->bt_a % DEC_ISETS), 0, err) != 0) return -1;
    }
    for (; c->bt_c < n && c->bt_c <= i + 1; c->bt_c++) {
        const dec_item b = dec_item_at(pl, c->lo + c->bt_c);
        const uint32_t bs = (uint32_t)(c->bt_c % DEC_ISETS);
        for (; c->bt_b <= c->bt_c; c->bt_b++) {
            const dec_item x = dec_item_at(pl, c->lo + c->bt_b);
            if (dec_load_blocks(c, &x, (uint32_t)(c->bt_b % DEC_ISETS), 1, err) != 0) return -1;
        }
        if (dec_load_blocks(c, &b, bs, 2, err) != 0 || dec_tile_rows(c, &b, bs, err) != 0) return -1;
    }
    if (c->bt_b == i + 2 && c->bt_b < n) {
        const dec_item b = dec_item_at(pl, c->lo + c->bt_b);
        if (dec_load_blocks(c, &b, (uint32_t)(c->bt_b++ % DEC_ISETS), 1, err) != 0) return -1;
    }
    return 0;
}

enum { MASK_NEW, MASK_CACHE };

/* The online-softmax step in two halves, so the first of step q + 1
 * (DVE/ACT on its scores) overlaps the second of step q (PE). Stats
 * columns: 0, 1 the running max (m_old = par), 2 the block max, 3 + ps the
 * negated new max, 5 l, 6 + ps the rescale alpha; ps = the step's parity.
 *
 * Half 1 on S [R, F] (PSUM): m_new = max(m_old, scale max S), alpha =
 * exp(m_old - m_new), P = exp(scale S - m_new) rounded to the dtype. */

static int block1(dec_core *c, uint64_t s_off, uint32_t F, uint32_t ps, uint32_t *par, nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const uint32_t R = pl->R;
    nx_operand S = dec_psum(c, NX_DT_FP32, s_off, R, F);
    nx_operand mo = dec_view(&c->stat, NX_DT_FP32, 0, R, *par, 1), mn = dec_view(&c->stat, NX_DT_FP32, 0, R, 1 - *par, 1);
    nx_operand cm = dec_view(&c->stat, NX_DT_FP32, 0, R, 2, 1), ng = dec_view(&c->stat, NX_DT_FP32, 0, R, 3 + ps, 1);
    nx_operand al = dec_view(&c->stat, NX_DT_FP32, 0, R, 6 + ps, 1);
    nx_operand sc = nx_imm(p->scale, NX_DT_FP32), one = nx_imm(1.0, NX_DT_FP32), m1 = nx_imm(-1.0, NX_DT_FP32);
    nx_insn red = nx_insn_make(NX_OP_TENSOR_REDUCE);
    red.alu0 = NX_ALU_MAX;
    red.iparam[0] = 1;
    red.op[0] = cm;
    red.op[1] = S;
    nx_operand P = dec_view(&c->pb[ps], p->dtype, 0, R, 0, F);
    if (nx_kctx_emit(k, NX_ENG_DVE, &red, err) != 0 ||
        nx_kctx_scalar_tensor_tensor(k, NX_ENG_DVE, &mn, &cm, NX_ALU_MULTIPLY, &sc, NX_ALU_MAX, &mo, err) != 0 ||
        nx_kctx_tensor_scalar(k, NX_ENG_DVE, &ng, &mn, NX_ALU_MULTIPLY, &m1, NX_ALU_BYPASS, NULL, err) != 0 ||
        act(k, NX_ACT_EXP, &P, &S, &sc, &ng, err) != 0 || act(k, NX_ACT_EXP, &al, &mo, &one, &ng, err) != 0)
        return -1;
    *par = 1 - *par;
    return 0;
}

/* Softmax half 1 split in two for the five-stage pipeline, the same
 * instructions as block1 on the step's own columns of the statistics: the
 * running max of step j in column 8 + (j + 1) % 3, the one before it in
 * 8 + j % 3 (three, so step j + 1's max never overwrites what step j's
 * exponentials still read). block1a on DVE: the tile max, the new running
 * max and its negation; block1b on ACT: P and alpha. */
static int block1a(dec_core *c, const dec_step *st, uint32_t R, uint32_t F, nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const uint32_t ps = st->ps, jo = 8 + (uint32_t)(st->j % 3), jn = 8 + (uint32_t)((st->j + 1) % 3);
    nx_operand S = dec_psum(c, NX_DT_FP32, st->soff, R, F);
    nx_operand mo = dec_view(&c->stat, NX_DT_FP32, 0, R, jo, 1), mn = dec_view(&c->stat, NX_DT_FP32, 0, R, jn, 1);
    nx_operand cm = dec_view(&c->stat, NX_DT_FP32, 0, R, 2, 1), ng = dec_view(&c->stat, NX_DT_FP32, 0, R, 3 + ps, 1);
    nx_operand sc = nx_imm(pl->p.scale, NX_DT_FP32), m1 = nx_imm(-1.0, NX_DT_FP32);
    nx_insn red = nx_insn_make(NX_OP_TENSOR_REDUCE);
    red.alu0 = NX_ALU_MAX;
    red.iparam[0] = 1;
    red.op[0] = cm;
    red.op[1] = S;
    if (nx_kctx_emit(k, NX_ENG_DVE, &red, err) != 0 ||
        nx_kctx_scalar_tensor_tensor(k, NX_ENG_DVE, &mn, &cm, NX_ALU_MULTIPLY, &sc, NX_ALU_MAX, &mo, err) != 0)
        return -1;
    return nx_kctx_tensor_scalar(k, NX_ENG_DVE, &ng, &mn, NX_ALU_MULTIPLY, &m1, NX_ALU_BYPASS, NULL, err);
}

static int block1b(dec_core *c, const dec_step *st, uint32_t R, uint32_t F, nx_error *err) {
    const dec_plan *pl = &c->pl;
    const uint32_t ps = st->ps, jo = 8 + (uint32_t)(st->j % 3);
    nx_operand S = dec_psum(c, NX_DT_FP32, st->soff, R, F);
    nx_operand mo = dec_view(&c->stat, NX_DT_FP32, 0, R, jo, 1), ng = dec_view(&c->stat, NX_DT_FP32, 0, R, 3 + ps, 1);
    nx_operand al = dec_view(&c->stat, NX_DT_FP32, 0, R, 6 + ps, 1);
    nx_operand sc = nx_imm(pl->p.scale, NX_DT_FP32), one = nx_imm(1.0, NX_DT_FP32);
    nx_operand P = dec_view(&c->pb[ps], pl->p.dtype, 0, R, 0, F);
    if (act(c->k, NX_ACT_EXP, &P, &S, &sc, &ng, err) != 0) return -1;
    return act(c->k, NX_ACT_EXP, &al, &mo, &one, &ng, err);
}

/* Half 2 on P (ne sub-blocks of w columns) against V (ne sub-blocks of w
 * rows): P^T by PE transposes, copied out times the 0/1 mask, O = P^T' V
 * and l' = P^T' 1 in PSUM, O_acc = O_acc alpha + O, l = l alpha + l'. */
enum { B2_PT = 1, B2_PV = 2 }; /* block2's parts: P^T times the mask; P V and the update */

static int block2(dec_core *c, uint32_t ne, uint32_t w, const nx_tile *V, int mask, uint32_t ps, int parts,
                  nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const nx_dtype dt = p->dtype;
    const uint32_t R = pl->R;
    const uint64_t D = p->D, es = pl->es;
    nx_operand al = dec_view(&c->stat, NX_DT_FP32, 0, R, 6 + ps, 1), l = dec_view(&c->stat, NX_DT_FP32, 0, R, 5, 1);
    for (uint32_t e = 0; e < ne && (parts & B2_PT); e++) {
        nx_operand src = dec_view(&c->pb[ps], dt, 0, R, (uint64_t)e * w, w);
        nx_operand dst = dec_psum(c, dt, pl->ps_pt + (uint64_t)e * R * es, w, R);
        if (nx_kctx_transpose(k, NX_ENG_PE, &dst, &src, err) != 0) return -1;
    }
    /* P^T' = P^T x the 0/1 mask, one DVE instruction for the ne sub-blocks
     * (ACT has the K^T copies and the exponentials): [w, ne x R] with the
     * per-position mask m01 [w, ne] repeated over the R rows */
    if (parts & B2_PT) {
        const int32_t rs[2] = {(int32_t)R, 1}, bs[2] = {1, 0};
        const uint32_t cn[2] = {ne, R};
        nx_operand pt = nx_tile_view(&c->psum, dt, 0, w, pl->ps_pt / es, 2, rs, cn);
        nx_operand pd = nx_tile_view(&c->ptb, dt, 0, w, 0, 2, rs, cn);
        nx_operand m = dec_mask_view(c, w, ne, mask == MASK_NEW);
        (void)bs;
        if (nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_MULTIPLY, &pd, &pt, &m, err) != 0) return -1;
    }
    if (!(parts & B2_PV)) return 0;
    nx_operand O = dec_psum(c, NX_DT_FP32, pl->ps_o, R, D), Ls = dec_psum(c, NX_DT_FP32, pl->ps_l, R, 1);
    nx_operand on = dec_view(&c->ones, dt, 0, w, 0, 1);
    for (uint32_t e = 0; e < ne; e++) {
        nx_operand st = dec_view(&c->ptb, dt, 0, w, (uint64_t)e * R, R);
        nx_operand v = dec_view(V, dt, 0, w, (uint64_t)e * D, D);
        if (nx_kctx_load_stationary(k, &st, err) != 0 || nx_kctx_multiply_moving(k, &O, &v, e > 0, err) != 0 ||
            nx_kctx_multiply_moving(k, &Ls, &on, e > 0, err) != 0)
            return -1;
    }
    nx_operand oa = dec_view(&c->oacc, NX_DT_FP32, 0, R, 0, D);
    if (nx_kctx_scalar_tensor_tensor(k, NX_ENG_DVE, &oa, &oa, NX_ALU_MULTIPLY, &al, NX_ALU_ADD, &O, err) != 0 ||
        nx_kctx_scalar_tensor_tensor(k, NX_ENG_DVE, &l, &l, NX_ALU_MULTIPLY, &al, NX_ALU_ADD, &Ls, err) != 0)
        return -1;
    return 0;
}


/* Partitions of cache tile tau that hold positions below S_max (paged: of
 * blocks below max_blocks): the last tile's compute covers only those. */
static uint32_t tile_rows(const dec_plan *pl, uint64_t tau) {
    const nx_decode_params *p = &pl->p;
    if (p->paged) {
        uint64_t blocks = p->max_blocks - tau * pl->nb;
        return blocks < pl->nb ? (uint32_t)blocks * pl->cpb : pl->Pt;
    }
    const uint64_t rem = p->S_max - tau * pl->Ft, cc = dec_tile_chunks(pl, tau);
    return rem < pl->Ft ? (uint32_t)((rem + cc - 1) / cc) : pl->Pt;
}

static dec_step step_of(const dec_core *c, uint64_t q) {
    const uint64_t per = c->pl.T + 1, i = q / per;
    dec_step s;
    s.it = dec_item_at(&c->pl, c->lo + i);
    s.j = q % per;
    s.set = (uint32_t)(i % DEC_ISETS), s.ip = (uint32_t)(i % 2), s.sidx = (uint32_t)(i % c->pl.nsets);
    s.buf = s.j ? (uint32_t)((i * c->pl.T + s.j - 1) % DEC_BUFS) : 0;
    s.soff = c->pl.ps_s + (q % c->pl.s_bufs) * c->pl.ps_s_step;
    s.ps = (uint32_t)(q % 2);
    s.np = s.j ? tile_rows(&c->pl, s.j - 1) : 0;
    s.cc = s.j ? dec_tile_chunks(&c->pl, s.j - 1) : c->pl.c;
    s.cg = c->pl.lg ? s.cc / c->pl.lg : 0;
    return s;
}

/* The buffer sets a step's stages use: K^T and P^T by step parity (so the
 * PE fills the next tile's while DVE / ACT read this one's), the running
 * statistics and O_acc by item parity (so consecutive items overlap). */
static void dec_use(dec_core *c, const dec_step *st) {
    c->ktT = c->ktT_s[st->ps], c->ptb = c->ptb_s[st->ps];
    c->stat = c->stat_s[st->sidx], c->oacc = c->oacc_s[st->sidx];
}

/* An item's end: O / l into the next output buffer on DVE; its store is
 * issued DEC_STORE_LAG steps later (store_due), after those steps' loads,
 * so the SP's in-order stream never holds a tile load behind a store that
 * waits for this division. */
static int store_due(dec_core *c, uint64_t q, int all, nx_error *err);

static int item_end(dec_core *c, const dec_item *it, uint64_t q, nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    if (pl->lanes) { /* the lanes' merge, one stage an iteration from the next (dec_lane_merge) */
        dec_merge *m = &c->mq[c->nmq % DEC_MQ];
        m->it = *it;
        m->sidx = (uint32_t)((q / (pl->T + 1)) % pl->nsets);
        m->mcol = 8 + (uint32_t)((pl->T + 1) % 3);
        m->mset = (uint32_t)(c->nmq % pl->nm);
        m->q_end = q;
        c->nmq++;
        return 0;
    }
    if (c->nends - c->nstores == DEC_OUTS && store_due(c, 0, 1, err) != 0) return -1;
    nx_operand l = dec_view(&c->stat, NX_DT_FP32, 0, pl->R, 5, 1), oa = nx_tile_ap(&c->oacc);
    nx_operand os = nx_tile_ap(&c->osb[c->nends % DEC_OUTS]);
    if (nx_kctx_tensor_scalar(k, NX_ENG_DVE, &os, &oa, NX_ALU_DIVIDE, &l, NX_ALU_BYPASS, NULL, err) != 0) return -1;
    c->due[c->nends % DEC_OUTS] = *it;
    c->due_q[c->nends++ % DEC_OUTS] = q;
    return 0;
}

/* The pending stores of items that ended DEC_STORE_LAG steps before q
 * (all: every pending one). */
static int store_due(dec_core *c, uint64_t q, int all, nx_error *err) {
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const uint64_t es = pl->es, D = p->D;
    const nx_tensor_ref *out = &c->call->args[p->n_operands];
    while (c->nstores < c->nends && (all || c->due_q[c->nstores % DEC_OUTS] + DEC_STORE_LAG <= q)) {
        const dec_item *it = &c->due[c->nstores % DEC_OUTS];
        nx_operand os = nx_tile_ap(&c->osb[c->nstores++ % DEC_OUTS]);
        nx_operand od = nx_ap_hbm_rows(p->dtype, out->hbm_offset + (it->b * p->Hq + it->h0) * p->s * D * es, pl->R,
                                       (int32_t)D, (uint32_t)D);
        if (nx_kctx_dma_split(c->k, c->r.store_lane + 4, pl->R < 4 ? pl->R : 4, &od, &os, err) != 0) return -1;
    }
    return 0;
}

int dec_store_all(dec_core *c, nx_error *err) { return store_due(c, 0, 1, err); }

/* Stage A1 of a step: what its scores need on the PE's moving side, in
 * SBUF: the new block's Q^T and K_new^T, or a cache tile's K^T, by PE
 * transposes into PSUM (the step's K^T bank) copied out by ACT. Emitted
 * one step ahead of its stage A2, so the PE never waits for the copy. */
static int stage_a1(dec_core *c, const dec_step *st, nx_error *err) {
    const uint32_t set = st->set, ip = st->ip, buf = st->buf;
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const nx_dtype dt = p->dtype;
    const uint32_t R = pl->R, s = (uint32_t)p->s, Dp = pl->Dp, cc = st->cc;
    const uint64_t es = pl->es, Ft = pl->Ft, D = p->D, kt = st->ps && pl->ps_kt2 ? pl->ps_kt2 : pl->ps_kt;
    if (st->j == 0) {
        for (uint32_t d = 0; d < pl->nd; d++) {
            nx_operand qs = dec_view(&c->qt[set], dt, 0, R, (uint64_t)d * Dp, Dp);
            nx_operand qp = dec_psum(c, dt, kt + (uint64_t)d * R * es, Dp, R);
            nx_operand qd = dec_view(&c->qT[ip], dt, 0, Dp, (uint64_t)d * R, R);
            nx_operand ks = dec_view(&c->kn[set], dt, 0, s, (uint64_t)d * Dp, Dp);
            nx_operand kp = dec_psum(c, dt, kt + ((uint64_t)pl->nd * R + (uint64_t)d * s) * es, Dp, s);
            nx_operand kd = dec_view(&c->knT[ip], dt, 0, Dp, (uint64_t)d * s, s);
            if (nx_kctx_transpose(k, NX_ENG_PE, &qp, &qs, err) != 0 || nx_kctx_transpose(k, NX_ENG_PE, &kp, &ks, err) != 0 ||
                nx_kctx_tensor_copy(k, NX_ENG_ACT, &qd, &qp, err) != 0 || nx_kctx_tensor_copy(k, NX_ENG_ACT, &kd, &kp, err) != 0)
                return -1;
            /* lanes: Q^T again in each chunk group's columns of its stationary (POOL, idle) */
            for (uint32_t g = 0; g < pl->lg && pl->lanes; g++) {
                nx_operand zd = dec_view(&c->zq[ip][d][g], dt, 0, Dp, (uint64_t)g * DEC_LANE_Q, R);
                if (nx_kctx_tensor_copy(k, NX_ENG_POOL, &zd, &qd, err) != 0) return -1;
            }
        }
        return 0;
    }
    const uint32_t np = st->np;
    const uint64_t F = (uint64_t)cc * np; /* column e np + p: position p c + e */
    for (uint32_t d = 0; d < pl->nd; d++) {
        for (uint32_t e = 0; e < cc; e++) {
            nx_operand src = dec_view(&c->kt[buf], dt, 0, np, (uint64_t)e * D + (uint64_t)d * Dp, Dp);
            nx_operand dst = dec_psum(c, dt, kt + ((uint64_t)d * Ft + (uint64_t)e * np) * es, Dp, np);
            if (nx_kctx_transpose(k, NX_ENG_PE, &dst, &src, err) != 0) return -1;
        }
        nx_operand kp = dec_psum(c, dt, kt + (uint64_t)d * Ft * es, Dp, F);
        nx_operand kd = dec_view(&c->ktT, dt, 0, Dp, (uint64_t)d * Ft, F);
        if (nx_kctx_tensor_copy(k, NX_ENG_ACT, &kd, &kp, err) != 0) return -1;
    }
    return 0;
}

/* Stage A2: the step's scores S (PSUM buffer soff) from A1's operands:
 * S_new = Q K_new^T or S = Q K^T (stationary Q^T, 512 moving columns a
 * multiply). */
static int stage_a2(dec_core *c, const dec_step *st, nx_error *err) {
    const uint32_t ip = st->ip;
    const uint64_t s_off = st->soff;
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const nx_dtype dt = p->dtype;
    const uint32_t R = pl->R, s = (uint32_t)p->s, Dp = pl->Dp;
    const uint64_t Ft = pl->Ft;
    if (st->j == 0) {
        nx_operand S = dec_psum(c, NX_DT_FP32, s_off, R, s);
        for (uint32_t d = 0; d < pl->nd; d++) {
            nx_operand sv = dec_view(&c->qT[ip], dt, 0, Dp, (uint64_t)d * R, R);
            nx_operand mv = dec_view(&c->knT[ip], dt, 0, Dp, (uint64_t)d * s, s);
            if (nx_kctx_load_stationary(k, &sv, err) != 0 || nx_kctx_multiply_moving(k, &S, &mv, d > 0, err) != 0) return -1;
        }
        return 0;
    }
    if (pl->lanes) return dec_lane_scores(c, st, err);
    const uint64_t F = (uint64_t)st->cc * st->np;
    for (uint32_t d = 0; d < pl->nd; d++) {
        nx_operand sv = dec_view(&c->qT[ip], dt, 0, Dp, (uint64_t)d * R, R);
        if (nx_kctx_load_stationary(k, &sv, err) != 0) return -1;
        for (uint64_t n0 = 0; n0 < F; n0 += 512) {
            uint64_t nw = F - n0 < 512 ? F - n0 : 512;
            nx_operand S = dec_psum(c, NX_DT_FP32, s_off + n0 * 4, R, nw);
            nx_operand mv = dec_view(&c->ktT, dt, 0, Dp, (uint64_t)d * Ft + n0, nw);
            if (nx_kctx_multiply_moving(k, &S, &mv, d > 0, err) != 0) return -1;
        }
    }
    return 0;
}

static int stage_a(dec_core *c, const dec_step *st, nx_error *err) {
    return stage_a1(c, st, err) != 0 ? -1 : stage_a2(c, st, err);
}

/* Stage B1: the running max's start (new block) and softmax half 1. */
static int stage_b1(dec_core *c, const dec_step *st, uint32_t *par, nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const uint32_t R = pl->R;
    if (st->j == 0) {
        *par = 0;
        nx_operand m0 = dec_view(&c->stat, NX_DT_FP32, 0, R, 0, 1);
        if (p->sink) {
            nx_operand sk = nx_tile_ap(&c->sk[st->set]);
            if (nx_kctx_tensor_copy(k, NX_ENG_DVE, &m0, &sk, err) != 0) return -1;
        } else if (nx_kctx_memset(k, NX_ENG_DVE, &m0, DEC_NEG_INIT, err) != 0)
            return -1;
        return block1(c, st->soff, (uint32_t)p->s, st->ps, par, err);
    }
    return block1(c, st->soff, st->cc * st->np, st->ps, par, err);
}

/* The five-stage pipeline's B1a (DVE): the running max's start (new
 * block: column 8, the sink or -inf) and block1a; B1b (ACT): block1b. */
static uint32_t b1_width(const dec_core *c, const dec_step *st) {
    return st->j == 0 ? (uint32_t)c->pl.p.s : c->pl.lanes ? st->cg * st->np : st->cc * st->np;
}
/* The rows half 1 runs on: R (the new block; without lanes every step),
 * or every lane. */
static uint32_t b1_rows(const dec_core *c, const dec_step *st) {
    return st->j && c->pl.lanes ? c->pl.lanes : c->pl.R;
}

static int stage_b1a(dec_core *c, const dec_step *st, nx_error *err) {
    nx_kctx *k = c->k;
    const nx_decode_params *p = &c->pl.p;
    if (st->j == 0) {
        nx_operand m0 = dec_view(&c->stat, NX_DT_FP32, 0, c->pl.R, 8, 1);
        if (c->pl.lanes) { /* every lane starts empty: the new block is lane group 0's */
            nx_operand m01 = dec_view(&c->stat, NX_DT_FP32, 0, c->pl.lanes, 8, 2);
            if (nx_kctx_memset(k, NX_ENG_DVE, &m01, DEC_NEG_INIT, err) != 0) return -1;
            if (!p->sink) return block1a(c, st, b1_rows(c, st), b1_width(c, st), err);
        }
        if (p->sink) {
            nx_operand sk = nx_tile_ap(&c->sk[st->set]);
            if (nx_kctx_tensor_copy(k, NX_ENG_DVE, &m0, &sk, err) != 0) return -1;
        } else if (nx_kctx_memset(k, NX_ENG_DVE, &m0, DEC_NEG_INIT, err) != 0)
            return -1;
    }
    return block1a(c, st, b1_rows(c, st), b1_width(c, st), err);
}

static int stage_b1b(dec_core *c, const dec_step *st, nx_error *err) {
    return block1b(c, st, b1_rows(c, st), b1_width(c, st), err);
}

/* The 0/1 mask P^T is multiplied by: [w, ne x R], the per-position mask
 * m01 [w, ne] repeated over the R rows (the window's mw and the new
 * block's mask hold every row). */
nx_operand dec_mask_view(const dec_core *c, uint32_t w, uint32_t ne, int is_new) {
    const uint32_t R = c->pl.R;
    const int32_t rs[2] = {(int32_t)R, 1}, bs[2] = {1, 0};
    const uint32_t cn[2] = {ne, R};
    if (is_new) return nx_tile_view(&c->newmask, NX_DT_FP32, 0, w, 0, 2, rs, cn);
    if (c->pl.p.window) return nx_tile_view(&c->mw, NX_DT_FP32, 0, w, 0, 2, rs, cn);
    return nx_tile_view(&c->m01, NX_DT_FP32, 0, w, 0, 2, bs, cn);
}

/* Cache tile tau's masks on POOL: m01 = position < L_b, mw = m01 and inside
 * the window. */
int dec_tile_mask(dec_core *c, const dec_step *st, nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const uint32_t R = pl->R, Pt = pl->Pt, cc = st->cc;
    const uint64_t tau = st->j - 1;
    nx_operand L = dec_view(&c->lf, NX_DT_FP32, 0, Pt, st->it.b, 1);
    nx_operand pa = dec_view(&c->posabs, NX_DT_FP32, 0, Pt, 0, cc), m01 = dec_view(&c->m01, NX_DT_FP32, 0, Pt, 0, cc);
    nx_operand pm = nx_tile_ap(cc == pl->c ? &c->posmap : &c->posmap_n);
    nx_operand base = nx_imm((double)(tau * pl->Ft), NX_DT_FP32);
    if (nx_kctx_tensor_scalar(k, NX_ENG_POOL, &pa, &pm, NX_ALU_ADD, &base, NX_ALU_BYPASS, NULL, err) != 0 ||
        nx_kctx_tensor_scalar(k, NX_ENG_POOL, &m01, &pa, NX_ALU_IS_LT, &L, NX_ALU_BYPASS, NULL, err) != 0)
        return -1;
    if (p->window)
        for (uint32_t e = 0; e < cc; e++) {
            nx_operand mw = dec_view(&c->mw, NX_DT_FP32, 0, Pt, (uint64_t)e * R, R), th = nx_tile_ap(&c->thr);
            nx_operand pe = dec_view(&c->posabs, NX_DT_FP32, 0, Pt, e, 1), me = dec_view(&c->m01, NX_DT_FP32, 0, Pt, e, 1);
            if (nx_kctx_tensor_scalar(k, NX_ENG_POOL, &mw, &th, NX_ALU_IS_LE, &pe, NX_ALU_MULTIPLY, &me, err) != 0) return -1;
        }
    return 0;
}

/* Stage B2: l and O_acc's start (new block), the masks (cache tile: position
 * < L_b, the window), softmax half 2. */
static int stage_b2(dec_core *c, const dec_step *st, nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const uint32_t R = pl->R, Pt = pl->Pt;
    if (st->j == 0) {
        nx_operand L = dec_view(&c->lf, NX_DT_FP32, 0, Pt, st->it.b, 1);
        nx_operand l = dec_view(&c->stat, NX_DT_FP32, 0, R, 5, 1), oa = nx_tile_ap(&c->oacc);
        if (pl->lanes) { /* lanes past the first R start with l = 0 (the sink counts once) */
            nx_operand la = dec_view(&c->stat, NX_DT_FP32, 0, pl->lanes, 5, 1);
            if (nx_kctx_memset(k, NX_ENG_DVE, &la, 0.0, err) != 0) return -1;
        }
        if ((!pl->lanes || p->sink) && nx_kctx_memset(k, NX_ENG_DVE, &l, p->sink ? 1.0 : 0.0, err) != 0) return -1;
        if (nx_kctx_memset(k, NX_ENG_POOL, &oa, 0.0, err) != 0) return -1;
        if (p->window) {
            nx_operand th = nx_tile_ap(&c->thr), tp = nx_tile_ap(&c->tpat);
            nx_operand w1 = nx_imm(1.0 - (double)p->window, NX_DT_FP32);
            if (nx_kctx_tensor_scalar(k, NX_ENG_POOL, &th, &tp, NX_ALU_ADD, &L, NX_ALU_ADD, &w1, err) != 0) return -1;
        }
        /* lanes: its P^T in stage_b2a, an iteration before */
        return block2(c, 1, (uint32_t)p->s, &c->vn[st->set], MASK_NEW, st->ps, pl->lanes ? B2_PV : B2_PT | B2_PV, err);
    }
    if (pl->lanes) return dec_lane_pv(c, st, err); /* its mask and P^T: stage_b2a, an iteration before */
    if (dec_tile_mask(c, st, err) != 0) return -1;
    return block2(c, st->cc, st->np, &c->vt[st->buf], MASK_CACHE, st->ps, B2_PT | B2_PV, err);
}

/* Lanes: B2a, the mask (POOL; the new block's is constant) and P^T times
 * it (PE, DVE), emitted after B2(q - 1) so P V (B2(q), the next
 * iteration) finds P^T copied out. */
static int stage_b2a(dec_core *c, const dec_step *st, nx_error *err) {
    if (!c->pl.lanes) return 0;
    if (st->j == 0) return block2(c, 1, (uint32_t)c->pl.p.s, &c->vn[st->set], MASK_NEW, st->ps, B2_PT, err);
    return dec_tile_mask(c, st, err) != 0 ? -1 : dec_lane_pt(c, st, err);
}

static int step_loads(dec_core *c, uint64_t q, nx_error *err) {
    const uint64_t per = c->pl.T + 1, i = q / per, j = q % per;
    dec_item it = dec_item_at(&c->pl, c->lo + i);
    uint32_t set = (uint32_t)(i % DEC_ISETS);
    if (probe_check(c, q, err) != 0) return -1;
    if (j == 0) return load_item(c, &it, i, set, q, err);
    uint64_t tile = i * c->pl.T + (j - 1);
    return dec_load_tile(c, &it, set, j - 1, (uint32_t)(tile % DEC_BUFS), err);
}

/* The new entries' scatters (program 0) after every cache access of both
 * cores before them (the tile loads, the probes, a copy-through): a
 * barrier on the caches' HBM only, so the engines keep running across it
 * (POOL waits there for the other core) and the scatters, slow (rows of D
 * elements, one after another into a tensor), overlap the last steps
 * instead of trailing the run. */
static int write_new(dec_core *c, nx_error *err) {
    if (probe_check(c, UINT64_MAX, err) != 0) return -1;
    if (nx_kctx_num_programs(c->k) > 1) {
        const uint32_t n = c->pl.p.n_operands, ts[4] = {1, 2, n + 1, n + 2};
        uint64_t lo = UINT64_MAX, hi = 0;
        for (uint32_t i = 0; i < 4; i++) {
            const nx_tensor_ref *t = &c->call->args[ts[i]];
            uint64_t bytes = c->pl.es;
            for (uint32_t d = 0; d < t->ndims; d++) bytes *= t->shape[d];
            if (t->hbm_offset < lo) lo = t->hbm_offset;
            if (t->hbm_offset + bytes > hi) hi = t->hbm_offset + bytes;
        }
        if (nx_kctx_barrier_hbm(c->k, lo, hi, err) != 0) return -1;
    }
    return nx_kctx_program_id(c->k) == 0 ? dec_write_new(c, err) : 0;
}

int nx_attention_decode(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_norm_tensor in[NX_KERNEL_MAX_ARGS];
    for (uint32_t i = 0; i < call->n_inputs && i < NX_KERNEL_MAX_ARGS; i++)
        in[i] = (nx_norm_tensor){call->args[i].name, call->args[i].dtype, call->args[i].ndims, call->args[i].shape};
    dec_core c;
    memset(&c, 0, sizeof c);
    if (nx_decode_read(call->attrs, in, call->n_inputs, &c.pl.p, err) != 0) return -1;
    if (call->nargs != c.pl.p.n_operands + 3)
        return nx_fail(err, "attention_decode: expects 3 results (out, k_cache, v_cache), got %u",
                       call->nargs - call->n_inputs);
    if (plan(&c.pl, nx_kctx_geometry(k), "attention_decode", err) != 0) return -1;
    c.k = k;
    c.call = call;
    c.probed = c.probe_row = UINT64_MAX;
    if (nx_kctx_set_lanes(k, DEC_LANES, err) != 0) return -1;
    nx_rows_init(&c.r, k);
    nx_kctx_rows(k, c.pl.items, &c.lo, &c.hi);
    if (alloc_all(&c, err) != 0 || constants(&c, err) != 0 || dec_copy_caches(&c, err) != 0) return -1;
    const uint64_t per = c.pl.T + 1, nsteps = (c.hi - c.lo) * per, ahead = DEC_BUFS - 1;
    for (uint64_t q = 0; q < nsteps && q < ahead; q++)
        if (step_loads(&c, q, err) != 0) return -1;
    uint32_t par = 0;
    int written = 0; /* the new entries scattered (write_new) */
    const int writer = nx_kctx_program_id(k) == 0;
    if (writer && (dec_write_rows(&c, err) != 0 || dec_group_rows(&c, err) != 0)) return -1;
    /* emission: one stage at a time (one score buffer), A(q + 2), B1(q + 1),
     * B2(q) (two), or the five stages (three; with or without lanes) */
    if (c.pl.s_bufs == 1) {
        for (uint64_t q = 0; q < nsteps; q++) {
            dec_step cur = step_of(&c, q);
            if (q + ahead < nsteps && step_loads(&c, q + ahead, err) != 0) return -1;
            if (store_due(&c, q, 0, err) != 0) return -1;
            dec_use(&c, &cur);
            if (stage_a(&c, &cur, err) != 0 || stage_b1(&c, &cur, &par, err) != 0 || stage_b2(&c, &cur, err) != 0)
                return -1;
            if (cur.j == c.pl.T && item_end(&c, &cur.it, q, err) != 0) return -1;
        }
    } else if (c.pl.s_bufs == 2) {
        /* emission order A(q + 2), B1(q + 1), B2(q): the PE streams the
         * tile after next's K^T and scores and this tile's P V while DVE and
         * ACT run the next tile's softmax */
        for (uint64_t q = 0; q < 2 && q < nsteps; q++) {
            dec_step a = step_of(&c, q);
            dec_use(&c, &a);
            if (stage_a(&c, &a, err) != 0) return -1;
        }
        if (nsteps) {
            dec_step b = step_of(&c, 0);
            dec_use(&c, &b);
            if (stage_b1(&c, &b, &par, err) != 0) return -1;
        }
        for (uint64_t q = 0; q < nsteps; q++) {
            if (q + ahead < nsteps && step_loads(&c, q + ahead, err) != 0) return -1;
            if (store_due(&c, q, 0, err) != 0) return -1;
            if (q + 2 < nsteps) {
                dec_step a = step_of(&c, q + 2);
                dec_use(&c, &a);
                if (stage_a(&c, &a, err) != 0) return -1;
            }
            if (q + 1 < nsteps) {
                dec_step b = step_of(&c, q + 1);
                dec_use(&c, &b);
                if (stage_b1(&c, &b, &par, err) != 0) return -1;
            }
            dec_step cur = step_of(&c, q);
            dec_use(&c, &cur);
            if (stage_b2(&c, &cur, err) != 0) return -1;
            if (cur.j == c.pl.T && item_end(&c, &cur.it, q, err) != 0) return -1;
        }
    } else {
        /* five stages, each engine's work in an iteration fed by the
         * iteration before: iteration q emits B1b(q + 1) (ACT: P, alpha),
         * A1(q + 4) (PE: K^T transposes, ACT: their copy), B1a(q + 2) (DVE:
         * the max), A2(q + 3) (PE: the scores) and B2(q) (PE: P^T and P V,
         * DVE: the mask and O_acc; lanes: P V only, then B2a(q + 1), the
         * next tile's P^T times its mask), so the PE never waits for ACT's
         * copy or exponentials of the same iteration, nor ACT for DVE's max,
         * nor (lanes) for DVE's copy of P^T */
        const int64_t tail = c.pl.lanes ? DEC_MERGE_STAGES : 0;
        for (int64_t q = -4; q < (int64_t)nsteps + tail; q++) {
            if (q >= 0 && (uint64_t)q + ahead < nsteps && step_loads(&c, (uint64_t)q + ahead, err) != 0) return -1;
            if (q >= 0 && store_due(&c, (uint64_t)q, 0, err) != 0) return -1;
            /* every tile load is issued by now (DEC_BUFS - 1 steps ahead) */
            if (!written && q == (int64_t)nsteps - DEC_WRITE_LEAD) {
                if (write_new(&c, err) != 0) return -1;
                written = 1;
            }
            /* lanes: the pending merges' stages, first in every engine's
             * iteration (each fed by the iteration before) */
            for (uint64_t mi = c.nmdone; mi < c.nmq; mi++) {
                const dec_merge *m = &c.mq[mi % DEC_MQ];
                const uint64_t stage = (uint64_t)q - m->q_end;
                if (stage >= 1 && stage <= DEC_MERGE_STAGES && dec_lane_merge(&c, m, (uint32_t)stage, err) != 0) return -1;
                if (stage == DEC_MERGE_STAGES) c.nmdone = mi + 1;
            }
            dec_step x;
            if (q + 1 >= 0 && (uint64_t)(q + 1) < nsteps) {
                x = step_of(&c, (uint64_t)(q + 1));
                dec_use(&c, &x);
                if (stage_b1b(&c, &x, err) != 0) return -1;
            }
            if ((uint64_t)(q + 4) < nsteps) {
                x = step_of(&c, (uint64_t)(q + 4));
                dec_use(&c, &x);
                if (stage_a1(&c, &x, err) != 0) return -1;
            }
            if (q + 2 >= 0 && (uint64_t)(q + 2) < nsteps) {
                x = step_of(&c, (uint64_t)(q + 2));
                dec_use(&c, &x);
                if (stage_b1a(&c, &x, err) != 0) return -1;
            }
            if (q + 3 >= 0 && (uint64_t)(q + 3) < nsteps) {
                x = step_of(&c, (uint64_t)(q + 3));
                dec_use(&c, &x);
                if (stage_a2(&c, &x, err) != 0) return -1;
            }
            if (q >= 0 && (uint64_t)q < nsteps) {
                x = step_of(&c, (uint64_t)q);
                dec_use(&c, &x);
                if (stage_b2(&c, &x, err) != 0) return -1;
                if (x.j == c.pl.T && item_end(&c, &x.it, (uint64_t)q, err) != 0) return -1;
            }
            if (q + 1 >= 0 && (uint64_t)(q + 1) < nsteps) {
                x = step_of(&c, (uint64_t)(q + 1));
                dec_use(&c, &x);
                if (stage_b2a(&c, &x, err) != 0) return -1;
            }
        }
    }
    if (store_due(&c, 0, 1, err) != 0) return -1;
    return written ? 0 : write_new(&c, err);
}
