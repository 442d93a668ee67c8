/* attention_decode's cache pieces (kernels/attention/decode_impl.h): the
 * copy-through of the caches into the results, the rows the new entries go
 * to (from the run-time lengths and, paged, the block table), their
 * scatters, and the cache tiles' loads: plain DMAs of c positions per
 * partition for a contiguous cache, indirect gathers of page chunks for a
 * paged one (any block order; chunks at or past L_b skipped, a block id
 * outside the cache a fault). docs/parts/attention-decode.md. */
#include "decode_impl.h"

nx_operand dec_view(const nx_tile *t, nx_dtype as, uint32_t p0, uint32_t np, uint64_t e0, uint64_t n) {
    const int32_t one = 1;
    const uint32_t cnt = (uint32_t)n;
    return nx_tile_view(t, as, p0, np, e0, 1, &one, &cnt);
}

nx_operand dec_psum(const dec_core *c, nx_dtype as, uint64_t byte_off, uint32_t np, uint64_t n) {
    return dec_view(&c->psum, as, 0, np, byte_off / nx_dtype_size(as), n);
}

uint32_t dec_tile_chunks(const dec_plan *pl, uint64_t tau) { return pl->cn && tau + 1 == pl->T ? pl->cn : pl->c; }

dec_item dec_item_at(const dec_plan *pl, uint64_t i) {
    dec_item it;
    it.hc = i % pl->nhc;
    it.g = (i / pl->nhc) % pl->p.Hkv;
    it.b = i / (pl->nhc * pl->p.Hkv);
    it.h0 = it.g * pl->p.G + it.hc * pl->gh;
    return it;
}

static int emit_dma(nx_kctx *k, uint32_t lane, const nx_operand *dst, const nx_operand *src, const nx_operand *off,
                    uint64_t bound, uint16_t flags, nx_error *err) {
    nx_insn d = nx_insn_make(NX_OP_DMA_COPY);
    d.op[0] = *dst;
    d.op[1] = *src;
    if (off) {
        d.op[2] = *off;
        d.iparam[1] = (int32_t)bound;
    }
    d.flags = flags;
    return nx_kctx_dma_insn(k, lane, &d, err);
}

/* One tensor's share, cut into one piece per DMA engine, each piece rows
 * of up to CH contiguous elements (at most 128 rows a transfer). */
static int copy_share(dec_core *c, const nx_tensor_ref *src, const nx_tensor_ref *dst, uint32_t *lane, nx_error *err) {
    const uint64_t CH = 8192;
    if (src->hbm_offset == dst->hbm_offset) return 0; /* updated in place (decoder_layer's steps): nothing to copy */
    uint64_t E = 1;
    for (uint32_t d = 0; d < src->ndims; d++) E *= src->shape[d];
    const uint32_t np = nx_kctx_num_programs(c->k), pid = nx_kctx_program_id(c->k), pieces = c->r.engines;
    const uint64_t lo = E * pid / np, hi = E * (pid + 1) / np, es = c->pl.es;
    for (uint32_t i = 0; i < pieces; i++) {
        uint64_t a = lo + (hi - lo) * i / pieces, b = lo + (hi - lo) * (i + 1) / pieces;
        const uint32_t ln = DEC_COPY_LANE + (*lane)++ % c->r.engines;
        while (a < b) {
            uint64_t rows = (b - a) / CH;
            if (rows > 128) rows = 128;
            uint64_t cols = CH;
            if (rows == 0) rows = 1, cols = b - a;
            nx_operand s = nx_ap_hbm_rows(c->pl.p.dtype, src->hbm_offset + a * es, (uint32_t)rows, (int32_t)cols, (uint32_t)cols);
            nx_operand d = nx_ap_hbm_rows(c->pl.p.dtype, dst->hbm_offset + a * es, (uint32_t)rows, (int32_t)cols, (uint32_t)cols);
            if (emit_dma(c->k, ln, &d, &s, NULL, 0, 0, err) != 0) return -1;
            a += rows * cols;
        }
    }
    return 0;
}

int dec_copy_caches(dec_core *c, nx_error *err) {
    const nx_kernel_call *call = c->call;
    const uint32_t n = c->pl.p.n_operands;
    uint32_t lane = 0;
    if (copy_share(c, &call->args[1], &call->args[n + 1], &lane, err) != 0) return -1;
    return copy_share(c, &call->args[2], &call->args[n + 2], &lane, err);
}

/* The rows (of D elements) of the results where the new entries go, for
 * every (b, kv head g, token t), on partitions (g - g0) s + t of a chunk of
 * hg kv heads, column ch B + b of c->woff; and the checks that make a bad
 * length a fault before anything is written. Vector work over all rows at
 * once: a few instructions, not a few per row. */
int dec_write_rows(dec_core *c, nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const uint32_t s = (uint32_t)p->s, B = (uint32_t)p->B;
    const uint32_t hg = (uint32_t)(p->Hkv < pl->Pt / s ? p->Hkv : pl->Pt / s), nch = (uint32_t)((p->Hkv + hg - 1) / hg);
    const uint32_t Pw = hg * s;
    c->whg = hg, c->wch = nch;
    nx_tile wf, wi;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "write_rows", NX_DT_INT32, Pw, (uint64_t)nch * B, &c->woff, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "write_math", NX_DT_FP32, Pw, 4 + 4 * (uint64_t)B, &wf, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "write_ints", NX_DT_INT32, Pw, 2 * (uint64_t)B, &wi, err) != 0)
        return -1;
    /* per partition: t = p - s floor(p / s), the chunk-local head p / s */
    const int32_t zero = 0;
    const uint32_t one = 1;
    nx_operand pp = dec_view(&wf, NX_DT_FP32, 0, Pw, 0, 1), gl = dec_view(&wf, NX_DT_FP32, 0, Pw, 1, 1);
    nx_operand tt = dec_view(&wf, NX_DT_FP32, 0, Pw, 2, 1), cp = dec_view(&wf, NX_DT_FP32, 0, Pw, 3, 1);
    nx_operand gi = dec_view(&wi, NX_DT_INT32, 0, Pw, 0, 1);
    nx_operand hs = nx_imm((s - 1) / 2.0, NX_DT_FP32), sv = nx_imm((double)s, NX_DT_FP32), msv = nx_imm(-(double)s, NX_DT_FP32);
    nx_operand pat = nx_pattern(0, 1, Pw, 1, &zero, &one);
    pat.dtype = NX_DT_INT32;
    if (nx_kctx_iota(k, &pp, &pat, err) != 0 ||
        nx_kctx_tensor_scalar(k, NX_ENG_DVE, &gi, &pp, NX_ALU_SUBTRACT, &hs, NX_ALU_DIVIDE, &sv, err) != 0 ||
        nx_kctx_tensor_copy(k, NX_ENG_DVE, &gl, &gi, err) != 0 ||
        nx_kctx_scalar_tensor_tensor(k, NX_ENG_DVE, &tt, &gl, NX_ALU_MULTIPLY, &msv, NX_ALU_ADD, &pp, err) != 0)
        return -1;
    nx_operand L = dec_view(&c->lf, NX_DT_FP32, 0, Pw, 0, B);
    nx_operand x = dec_view(&wf, NX_DT_FP32, 0, Pw, 4, B);
    if (nx_kctx_tensor_scalar(k, NX_ENG_DVE, &x, &L, NX_ALU_ADD, &tt, NX_ALU_BYPASS, NULL, err) != 0) return -1;
    if (!p->paged) {
        /* row (b Hkv + g) S_max + L_b + t of the whole cache; L_b + s - 1 <
         * S_max and L_b >= 0 checked by two probes that fault otherwise */
        nx_tile pt;
        const uint32_t nb_ = B < pl->Pt ? B : pl->Pt;
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "length_probe", NX_DT_FP32, nb_, 4, &pt, err) != 0) return -1;
        for (uint32_t pr = 0; pr < 2; pr++)
            for (uint32_t b0 = 0; b0 < B; b0 += nb_) {
                uint32_t n = B - b0 < nb_ ? B - b0 : nb_;
                nx_operand li = dec_view(&pt, NX_DT_INT32, 0, n, 0, 1), lfv = dec_view(&pt, NX_DT_FP32, 0, n, 1, 1);
                nx_operand lv = dec_view(&pt, NX_DT_INT32, 0, n, 2, 1), probe = dec_view(&pt, NX_DT_FP32, 0, n, 3, 1);
                nx_operand ls = nx_ap_hbm_rows(NX_DT_INT32, c->call->args[5].hbm_offset + (uint64_t)b0 * 4, n, 1, 1);
                nx_operand add = nx_imm(pr ? (double)(s - 1) : 0.0, NX_DT_FP32);
                nx_operand src = nx_ap_hbm_rows(NX_DT_FP32, c->call->args[5].hbm_offset, n, 1, 1);
                /* a probe row of the lengths tensor itself, S_max rows deep:
                 * only its bound matters */
                if (nx_kctx_dma_on(k, NX_ROWS_LOAD_LANE + 4, &li, &ls, err) != 0 ||
                    nx_kctx_tensor_copy(k, NX_ENG_DVE, &lfv, &li, err) != 0 ||
                    nx_kctx_tensor_scalar(k, NX_ENG_DVE, &lv, &lfv, NX_ALU_ADD, &add, NX_ALU_BYPASS, NULL, err) != 0)
                    return -1;
                src.partition_stride = 0;
                if (emit_dma(k, NX_ROWS_LOAD_LANE + 5, &probe, &src, &lv, p->S_max, 0, err) != 0) return -1;
            }
        for (uint32_t ch = 0; ch < nch; ch++) {
            /* per partition: (g0 + p / s) S_max; per column b: b Hkv S_max */
            const int32_t bst = (int32_t)(p->Hkv * p->S_max);
            const uint32_t bc = B;
            nx_operand bp = dec_view(&wf, NX_DT_FP32, 0, Pw, 4 + B, B);
            nx_operand bpat = nx_pattern(0, 0, Pw, 1, &bst, &bc);
            bpat.dtype = NX_DT_INT32;
            nx_operand sm = nx_imm((double)p->S_max, NX_DT_FP32), g0 = nx_imm((double)ch * hg * p->S_max, NX_DT_FP32);
            nx_operand w = dec_view(&c->woff, NX_DT_INT32, 0, Pw, (uint64_t)ch * B, B);
            if (nx_kctx_scalar_tensor_tensor(k, NX_ENG_DVE, &cp, &gl, NX_ALU_MULTIPLY, &sm, NX_ALU_ADD, &tt, err) != 0 ||
                nx_kctx_iota(k, &bp, &bpat, err) != 0 ||
                nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_ADD, &bp, &bp, &L, err) != 0 ||
                nx_kctx_tensor_scalar(k, NX_ENG_DVE, &w, &bp, NX_ALU_ADD, &cp, NX_ALU_ADD, &g0, err) != 0)
                return -1;
        }
        return 0;
    }
    /* paged: position x = L_b + t: block column x / N (the rounding of
     * (x - (N-1)/2) / N to an integer is the floor: the fraction stays below
     * 1/2), offset x mod N; the block id gathered from the table (a column
     * past max_blocks faults); row (blk Hkv + g) N + offset (a block id
     * outside the cache faults in the scatter) */
    const double N = (double)p->N;
    nx_operand kq = dec_view(&wi, NX_DT_INT32, 0, Pw, 0, B), kf = dec_view(&wf, NX_DT_FP32, 0, Pw, 4 + B, B);
    nx_operand off = dec_view(&wf, NX_DT_FP32, 0, Pw, 4 + 2 * (uint64_t)B, B);
    nx_operand blk = dec_view(&wi, NX_DT_INT32, 0, Pw, B, B), bf = dec_view(&wf, NX_DT_FP32, 0, Pw, 4 + 3 * (uint64_t)B, B);
    nx_operand half = nx_imm((N - 1) / 2, NX_DT_FP32), nn = nx_imm(N, NX_DT_FP32), mn = nx_imm(-N, NX_DT_FP32);
    nx_operand hn = nx_imm((double)(p->Hkv * p->N), NX_DT_FP32);
    const nx_tensor_ref *bt = &c->call->args[p->bt_operand];
    if (nx_kctx_tensor_scalar(k, NX_ENG_DVE, &kq, &x, NX_ALU_SUBTRACT, &half, NX_ALU_DIVIDE, &nn, err) != 0 ||
        nx_kctx_tensor_copy(k, NX_ENG_DVE, &kf, &kq, err) != 0 ||
        nx_kctx_scalar_tensor_tensor(k, NX_ENG_DVE, &off, &kf, NX_ALU_MULTIPLY, &mn, NX_ALU_ADD, &x, err) != 0)
        return -1;
    for (uint32_t b = 0; b < B; b++) {
        nx_operand bd = dec_view(&wi, NX_DT_INT32, 0, Pw, B + b, 1), ko = dec_view(&wi, NX_DT_INT32, 0, Pw, b, 1);
        nx_operand bs = nx_ap_hbm_rows(NX_DT_INT32, bt->hbm_offset + (uint64_t)b * p->max_blocks * 4, Pw, 1, 1);
        if (emit_dma(k, NX_ROWS_LOAD_LANE + 4 + b % 8, &bd, &bs, &ko, p->max_blocks, 0, err) != 0) return -1;
    }
    if (nx_kctx_tensor_copy(k, NX_ENG_DVE, &bf, &blk, err) != 0 ||
        nx_kctx_scalar_tensor_tensor(k, NX_ENG_DVE, &bf, &bf, NX_ALU_MULTIPLY, &hn, NX_ALU_ADD, &off, err) != 0)
        return -1;
    for (uint32_t ch = 0; ch < nch; ch++) {
        nx_operand gn = nx_imm(N, NX_DT_FP32), g0 = nx_imm((double)ch * hg * N, NX_DT_FP32);
        nx_operand w = dec_view(&c->woff, NX_DT_INT32, 0, Pw, (uint64_t)ch * B, B);
        if (nx_kctx_tensor_scalar(k, NX_ENG_DVE, &cp, &gl, NX_ALU_MULTIPLY, &gn, NX_ALU_ADD, &g0, err) != 0 ||
            nx_kctx_tensor_scalar(k, NX_ENG_DVE, &w, &bf, NX_ALU_ADD, &cp, NX_ALU_BYPASS, NULL, err) != 0)
            return -1;
    }
    return 0;
}

int dec_group_rows(dec_core *c, nx_error *err) {
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const uint32_t Pw = c->whg * (uint32_t)p->s, B = (uint32_t)p->B;
    c->wg = 0;
    if (c->wch != 1 || Pw > pl->Pt) return 0;
    const uint32_t G = pl->Pt / Pw < B ? pl->Pt / Pw : B, ng = (B + G - 1) / G;
    if (nx_kctx_alloc(c->k, NX_OPK_SBUF, "write_rows_grouped", NX_DT_INT32, G * Pw, ng, &c->wgrp, err) != 0) return -1;
    /* SBUF -> SBUF: column b of woff to partitions (b mod G) Pw of column b / G */
    for (uint32_t b = 0; b < B; b++) {
        nx_operand d = dec_view(&c->wgrp, NX_DT_INT32, (b % G) * Pw, Pw, b / G, 1);
        nx_operand s = dec_view(&c->woff, NX_DT_INT32, 0, Pw, b, 1);
        if (nx_kctx_dma_on(c->k, NX_ROWS_LOAD_LANE + 4 + b % 8, &d, &s, err) != 0) return -1;
    }
    c->wg = G;
    return 0;
}

int dec_write_new(dec_core *c, nx_error *err) {
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const nx_kernel_call *call = c->call;
    const uint32_t s = (uint32_t)p->s, n = p->n_operands, B = (uint32_t)p->B;
    const uint64_t es = pl->es, D = p->D;
    const uint64_t bound = p->paged ? p->num_blocks * p->Hkv * p->N : p->B * p->Hkv * p->S_max;
    uint32_t lane = 0;
    if (c->wg) { /* G batch rows of every kv head a scatter: rows (b Hkv + g) s + t of k_new */
        const uint32_t Pw = (uint32_t)(p->Hkv * p->s);
        for (uint32_t b0 = 0; b0 < B; b0 += c->wg) {
            const uint32_t nb = B - b0 < c->wg ? B - b0 : c->wg;
            nx_operand w = dec_view(&c->wgrp, NX_DT_INT32, 0, nb * Pw, b0 / c->wg, 1);
            for (uint32_t kv = 0; kv < 2; kv++) {
                const nx_tensor_ref *src = &call->args[3 + kv], *dst = &call->args[n + 1 + kv];
                nx_operand so = nx_ap_hbm_rows(p->dtype, src->hbm_offset + (uint64_t)b0 * Pw * D * es, nb * Pw, (int32_t)D,
                                               (uint32_t)D);
                nx_operand d = nx_ap_hbm_rows(p->dtype, dst->hbm_offset, nb * Pw, (int32_t)D, (uint32_t)D);
                if (emit_dma(c->k, c->r.store_lane + lane++ % c->r.engines, &d, &so, &w, bound, NX_FLAG_SCATTER, err) != 0)
                    return -1;
            }
        }
        return 0;
    }
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t ch = 0; ch < c->wch; ch++) {
            const uint64_t g0 = (uint64_t)ch * c->whg, hg = p->Hkv - g0 < c->whg ? p->Hkv - g0 : c->whg;
            const uint32_t rows = (uint32_t)(hg * s);
            nx_operand w = dec_view(&c->woff, NX_DT_INT32, 0, rows, (uint64_t)ch * B + b, 1);
            for (uint32_t kv = 0; kv < 2; kv++) {
                const nx_tensor_ref *src = &call->args[3 + kv], *dst = &call->args[n + 1 + kv];
                nx_operand so = nx_ap_hbm_rows(p->dtype, src->hbm_offset + (b * p->Hkv + g0) * p->s * D * es, rows,
                                               (int32_t)D, (uint32_t)D);
                nx_operand d = nx_ap_hbm_rows(p->dtype, dst->hbm_offset, rows, (int32_t)D, (uint32_t)D);
                if (emit_dma(c->k, c->r.store_lane + lane++ % c->r.engines, &d, &so, &w, bound, NX_FLAG_SCATTER, err) != 0)
                    return -1;
            }
        }
    return 0;
}

int dec_probe_blocks(dec_core *c, uint64_t b, int part, nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const uint64_t row = c->call->args[p->bt_operand].hbm_offset + b * p->max_blocks * 4;
    const nx_tensor_ref *kc = &c->call->args[1];
    for (uint64_t j0 = 0, ci = 0; j0 < p->max_blocks; j0 += pl->Pt, ci++) {
        const uint32_t n = (uint32_t)(p->max_blocks - j0 < pl->Pt ? p->max_blocks - j0 : pl->Pt);
        const uint32_t s = (uint32_t)((c->nprobes + ci) % DEC_PROBES);
        const int early = ci < DEC_PROBES; /* its ids loaded in part 0 */
        nx_operand id = dec_view(&c->prb_id[s], NX_DT_INT32, 0, n, 0, 1), idf = dec_view(&c->prb_f[s], NX_DT_FP32, 0, n, 0, 1);
        nx_operand used = dec_view(&c->prb_f[s], NX_DT_FP32, 0, n, 1, 1), L = dec_view(&c->lf, NX_DT_FP32, 0, n, b, 1);
        nx_operand src = nx_ap_hbm_rows(NX_DT_INT32, row + j0 * 4, n, 1, 1);
        /* used = (j N < L_b) for the row's block column j on partition j - j0 */
        const int32_t zero = 0;
        const uint32_t c1 = 1;
        nx_operand pat = nx_pattern((int64_t)(j0 * p->N), (int32_t)p->N, n, 1, &zero, &c1);
        pat.dtype = NX_DT_INT32;
        if (part == 0) {
            if (early && nx_kctx_dma_on(k, c->r.store_lane + 12 + s, &id, &src, err) != 0) return -1;
            continue;
        }
        if (!early && nx_kctx_dma_on(k, c->r.store_lane + 12 + s, &id, &src, err) != 0) return -1;
        if (nx_kctx_iota(k, &used, &pat, err) != 0 ||
            nx_kctx_tensor_scalar(k, NX_ENG_POOL, &used, &used, NX_ALU_IS_LT, &L, NX_ALU_BYPASS, NULL, err) != 0 ||
            nx_kctx_tensor_copy(k, NX_ENG_POOL, &idf, &id, err) != 0 ||
            nx_kctx_tensor_tensor(k, NX_ENG_POOL, NX_ALU_MULTIPLY, &id, &idf, &used, err) != 0)
            return -1;
        nx_operand vd = dec_view(&c->prb_sink[s], p->dtype, 0, n, 0, 1);
        nx_operand vs = nx_ap_hbm_rows(p->dtype, kc->hbm_offset, n, (int32_t)(p->Hkv * p->N * p->D), 1);
        if (emit_dma(k, c->r.store_lane + 12 + s, &vd, &vs, &id, p->num_blocks, 0, err) != 0) return -1;
    }
    if (part) c->nprobes += (uint32_t)((p->max_blocks + pl->Pt - 1) / pl->Pt);
    return 0;
}

int dec_load_blocks(dec_core *c, const dec_item *it, uint32_t set, int part, nx_error *err) {
    /* row b of the table arrives as [T, nb] fp32 (tile tau's blocks in
     * partition tau: runs of nb ids, not single ids; the DMA converts, exact
     * for ids < 2^24; what it never writes holds -1 from the start),
     * turned by a PE transpose into [nb, T] and spread to the tile layout
     * (partition j cpb + u holds block tau nb + j) by a one-hot matmul:
     * exact in fp32 */
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const nx_tensor_ref *bt = &c->call->args[p->bt_operand];
    const uint64_t row = bt->hbm_offset + it->b * p->max_blocks * 4, T = pl->T, nb = pl->nb;
    for (uint64_t t0 = 0; t0 < T; t0 += 128) {
        const uint32_t nt = (uint32_t)(T - t0 < 128 ? T - t0 : 128);
        const uint64_t first = t0 * nb, have = p->max_blocks - first; /* blocks from first on */
        const uint32_t full = (uint32_t)(have / nb < nt ? have / nb : nt), rem = (uint32_t)(full < nt ? have % nb : 0);
        nx_operand d = dec_view(&c->bt[set], NX_DT_FP32, 0, full, t0 / 128 * nb, nb);
        if (part == 0 && full) {
            nx_operand s = nx_ap_hbm_rows(NX_DT_INT32, row + first * 4, full, (int32_t)nb, (uint32_t)nb);
            if (nx_kctx_dma_on(k, c->r.store_lane + 10, &d, &s, err) != 0) return -1;
        }
        if (part == 0 && rem) {
            nx_operand dr = dec_view(&c->bt[set], NX_DT_FP32, full, 1, t0 / 128 * nb, rem);
            nx_operand sr = nx_ap_hbm_rows(NX_DT_INT32, row + (first + (uint64_t)full * nb) * 4, 1, (int32_t)rem, rem);
            if (nx_kctx_dma_on(k, c->r.store_lane + 11, &dr, &sr, err) != 0) return -1;
        }
        nx_operand bf = dec_view(&c->bt[set], NX_DT_FP32, 0, nt, t0 / 128 * nb, nb);
        nx_operand tp = dec_psum(c, NX_DT_FP32, pl->ps_bt, (uint32_t)nb, nt);
        nx_operand xs = dec_view(&c->btx, NX_DT_FP32, 0, (uint32_t)nb, t0, nt);
        nx_operand sel = nx_tile_ap(&c->sel);
        nx_operand sp = dec_psum(c, NX_DT_FP32, pl->ps_bt2, pl->Pt, nt);
        nx_operand out = dec_view(&c->btf[set], NX_DT_FP32, 0, pl->Pt, t0, nt);
        if (part == 1 && (nx_kctx_transpose(k, NX_ENG_PE, &tp, &bf, err) != 0 ||
                          nx_kctx_tensor_copy(k, NX_ENG_DVE, &xs, &tp, err) != 0))
            return -1;
        if (part == 2 && (nx_kctx_load_stationary(k, &sel, err) != 0 || nx_kctx_multiply_moving(k, &sp, &xs, 0, err) != 0 ||
                          nx_kctx_tensor_copy(k, NX_ENG_DVE, &out, &sp, err) != 0))
            return -1;
    }
    return 0;
}

int dec_tile_rows(dec_core *c, const dec_item *it, uint32_t set, nx_error *err) {
    /* partition j cpb + u of tile tau is chunk u of block bt[b][tau nb + j]:
     * cache row (of c D elements) bt (Hkv cpb) + g cpb + u; a chunk starting
     * at or past L_b gets row -1 (skipped) */
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const uint32_t Pt = pl->Pt;
    const uint64_t T = pl->T;
    nx_operand vt = dec_view(&c->rmath, NX_DT_FP32, 0, Pt, 0, T), t1 = dec_view(&c->rmath, NX_DT_FP32, 0, Pt, T, T);
    nx_operand t2 = dec_view(&c->rmath, NX_DT_FP32, 0, Pt, 2 * T, T), pg = nx_tile_ap(&c->pgrid);
    nx_operand uc = dec_view(&c->ucol, NX_DT_FP32, 0, Pt, 0, 1), L = dec_view(&c->lf, NX_DT_FP32, 0, Pt, it->b, 1);
    nx_operand bf = nx_tile_ap(&c->btf[set]), ix = nx_tile_ap(&c->rix[set]);
    nx_operand hc = nx_imm((double)(p->Hkv * pl->cpb), NX_DT_FP32), gc = nx_imm((double)(it->g * pl->cpb), NX_DT_FP32);
    nx_operand one = nx_imm(1.0, NX_DT_FP32), mone = nx_imm(-1.0, NX_DT_FP32);
    if (nx_kctx_tensor_scalar(k, NX_ENG_POOL, &vt, &pg, NX_ALU_IS_LT, &L, NX_ALU_BYPASS, NULL, err) != 0 ||
        nx_kctx_tensor_scalar(k, NX_ENG_POOL, &t1, &bf, NX_ALU_MULTIPLY, &hc, NX_ALU_ADD, &gc, err) != 0 ||
        nx_kctx_tensor_scalar(k, NX_ENG_POOL, &t1, &t1, NX_ALU_ADD, &uc, NX_ALU_ADD, &one, err) != 0 ||
        nx_kctx_tensor_tensor(k, NX_ENG_POOL, NX_ALU_MULTIPLY, &t2, &t1, &vt, err) != 0)
        return -1;
    return nx_kctx_tensor_scalar(k, NX_ENG_POOL, &ix, &t2, NX_ALU_ADD, &mone, NX_ALU_BYPASS, NULL, err);
}

/* A transfer cut by partitions into pieces on consecutive load lanes; with
 * offsets, each piece takes its rows' offsets. */
static int load_split(dec_core *c, uint32_t np, const nx_operand *dst, const nx_operand *src, const nx_operand *off,
                      uint64_t bound, uint16_t flags, uint32_t lane0, nx_error *err) {
    uint32_t pieces = c->r.engines < np ? c->r.engines : np;
    for (uint32_t i = 0; i < pieces; i++) {
        uint32_t p0 = np * i / pieces, p1 = np * (i + 1) / pieces;
        nx_operand d = nx_operand_rows(dst, p0, p1 - p0);
        nx_operand s = off ? *src : nx_operand_rows(src, p0, p1 - p0);
        if (off) s.partition_count = (uint8_t)(p1 - p0);
        nx_operand o;
        if (off) o = nx_operand_rows(off, p0, p1 - p0);
        if (emit_dma(c->k, NX_ROWS_LOAD_LANE + lane0 + i, &d, &s, off ? &o : NULL, bound, flags, err) != 0) return -1;
    }
    return 0;
}

int dec_load_tile(dec_core *c, const dec_item *it, uint32_t set, uint64_t tau, uint32_t buf, nx_error *err) {
    const dec_plan *pl = &c->pl;
    const nx_decode_params *p = &pl->p;
    const nx_kernel_call *call = c->call;
    const uint64_t es = pl->es, D = p->D, cc = dec_tile_chunks(pl, tau), cD = cc * D;
    const nx_tensor_ref *kc = &call->args[1], *vc = &call->args[2];
    nx_kctx *k = c->k;
    if (!p->paged) {
        const uint64_t base = ((it->b * p->Hkv + it->g) * p->S_max + tau * pl->Ft) * D;
        uint64_t rem = p->S_max - tau * pl->Ft;
        if (rem > pl->Ft) rem = pl->Ft;
        const uint32_t nfull = (uint32_t)(rem / cc), part = (uint32_t)(rem % cc);
        for (uint32_t kv = 0; kv < 2; kv++) {
            const nx_tensor_ref *t = kv ? vc : kc;
            const nx_tile *dt = kv ? &c->vt[buf] : &c->kt[buf];
            if (nfull) {
                nx_operand d = dec_view(dt, p->dtype, 0, nfull, 0, cD);
                nx_operand s = nx_ap_hbm_rows(p->dtype, t->hbm_offset + base * es, nfull, (int32_t)cD, (uint32_t)cD);
                if (load_split(c, nfull, &d, &s, NULL, 0, 0, kv ? DEC_V_LANE : 0, err) != 0) return -1;
            }
            if (part) {
                nx_operand d = dec_view(dt, p->dtype, nfull, 1, 0, (uint64_t)part * D);
                nx_operand s = nx_ap_hbm_rows(p->dtype, t->hbm_offset + (base + (uint64_t)nfull * cD) * es, 1,
                                              (int32_t)(part * D), (uint32_t)(part * D));
                if (nx_kctx_dma_on(k, kv ? DEC_V_LANE + 1 : NX_ROWS_LOAD_LANE + 1, &d, &s, err) != 0) return -1;
            }
        }
        return 0;
    }
    /* paged: the rows dec_tile_rows computed for the item */
    const uint32_t Pt = pl->Pt;
    nx_operand ix = dec_view(&c->rix[set], NX_DT_INT32, 0, Pt, tau, 1);
    (void)it;
    const uint64_t rows = p->num_blocks * p->Hkv * pl->cpb;
    for (uint32_t kv = 0; kv < 2; kv++) {
        const nx_tensor_ref *t = kv ? vc : kc;
        const nx_tile *dt = kv ? &c->vt[buf] : &c->kt[buf];
        nx_operand d = dec_view(dt, p->dtype, 0, Pt, 0, cD);
        nx_operand s = nx_ap_hbm_rows(p->dtype, t->hbm_offset, Pt, (int32_t)cD, (uint32_t)cD);
        if (load_split(c, Pt, &d, &s, &ix, rows, NX_FLAG_OOB_SKIP, kv ? DEC_V_LANE : 0, err) != 0) return -1;
    }
    return 0;
}
