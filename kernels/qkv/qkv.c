/* qkv: the production inventory's dense QKV projection with the norm fused
 * (the roster's `qkv`: RMSNorm per token, one matmul against the q, k and v
 * weights concatenated [H, (nq + 2 nkv) d], bias, rotary embedding on q and
 * k in the rotate-half form of kernels/elementwise/rope.c), tiled as the NKI
 * matmul tutorial tiles a matmul (K on the partitions, stationary [K, M <=
 * 128], moving [K, N <= 512], PSUM accumulation) and written against the
 * authoring layer. Operands and math: kernels/qkv/qkv.h; plan, numerics and
 * figures: docs/parts/qkv.md.
 *
 * One PE orientation for both plans: the normed tokens, transposed on the
 * PE into K-major tiles, are the stationary operand [128 of H, <= 128
 * tokens]; the weights stream as the moving operand [128 of H, <= 512
 * columns] into PSUM [tokens, columns]. A 128 x 128 x 512 product costs
 * the PE 512 cycles in either orientation, and this one leaves tokens on
 * the partitions and a head's d columns along the free dim, so the bias is
 * one VectorE add per tile, RoPE's rotate-half is rope's own rotation of
 * the free dim (no cross-partition move), and both output layouts are
 * written by the stores' access patterns (d-element runs; no transpose pass).
 *
 *   decode (B S <= 128 tokens, one token tile): every weight byte is used
 *     once, so the plan is the weight stream: pieces [128 rows, G column
 *     tiles of 2 KiB and more per row] cut over the 16 DMA engines, up to
 *     128 in flight, each multiplied as it lands (one load_stationary of
 *     the token tile per chunk, G multiplies); the grid's cores take
 *     disjoint head ranges (the weights split in two, the tokens normed by
 *     both: a few us under the first pieces' arrival).
 *   prefill: blocks of up to 8 token tiles keep their transposed h in SBUF;
 *     per column tile the [H, 512] weight panel is loaded once per block
 *     (double-buffered: the next panel lands while this one is multiplied)
 *     and every token tile of the block streams through the PE against it;
 *     the cores take disjoint token ranges (measured faster than splitting
 *     heads: docs/parts/qkv.md). The norm and transposes of token tile m + 1
 *     are emitted around the multiplies of tile m in the first panel, so
 *     the PE does not wait for them. A core with one token tile streams as
 *     decode does. In the heads layout, 4 token tiles interleave
 *     (qkv_impl.h, qkv_tok0) so each head's store runs 4 d elements per
 *     partition instead of d (an eighth of the DMA's efficient run in bf16).
 * Where it goes past the public kernels: any H (ragged last chunk), any
 * head_dim up to one PSUM bank, GQA or MHA head counts, both cos/sin
 * shapes, both layouts, fp32 as well as bf16. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkv_impl.h"

static nx_norm_tensor as_norm(const nx_tensor_ref *t) { return (nx_norm_tensor){t->name, t->dtype, t->ndims, t->shape}; }

/* The HBM column (from w's start, rows of wv.ld) of head h's first column. */
static uint64_t qkv_head_col(const qkv_state *s, uint64_t h) {
    const nx_qkv_params *p = s->p;
    const uint32_t j = h < p->nq ? 0 : h < p->nq + p->nkv ? 1 : 2;
    const uint64_t first = j == 0 ? 0 : j == 1 ? p->nq : p->nq + p->nkv;
    return s->wv.col[j] + (h - first) * p->d;
}

/* Weight piece i of the stream: (block, group, chunk) -> ring slot i % R. */
static int load_piece(qkv_state *s, uint64_t i, nx_error *err) {
    const nx_qkv_params *p = s->p;
    const uint64_t kc = s->k_lo + i % s->nkc, g = (i / s->nkc) % s->ngroups;
    const uint64_t h0 = s->h_lo + g * s->G * s->hpt, h1 = h0 + s->G * s->hpt < s->h_hi ? h0 + s->G * s->hpt : s->h_hi;
    const uint32_t kw = qkv_clip(p->H - kc * s->P, s->P);
    /* heads [h0, h1) as runs of contiguous HBM columns (one run unless w
     * is a view of separate q, k and v column blocks) */
    for (uint64_t a = h0; a < h1;) {
        uint64_t b = h1;
        for (uint64_t e = a + 1; e < h1; e++)
            if (qkv_head_col(s, e) != qkv_head_col(s, a) + (e - a) * p->d) {
                b = e;
                break;
            }
        const uint32_t cols = (uint32_t)((b - a) * p->d);
        nx_operand dst = nx_rows_view(&s->ring[i % s->R], s->dt, kw, (a - h0) * p->d, cols);
        nx_operand src = nx_ap_hbm_rows(s->dt, s->w->hbm_offset + (kc * s->P * s->wv.ld + qkv_head_col(s, a)) * s->es,
                                        kw, (int32_t)s->wv.ld, cols);
        if (nx_kctx_dma_split(s->k, QKV_W_LANE, s->r.engines, &dst, &src, err) != 0) return -1;
        a = b;
    }
    return 0;
}

/* Emits the weight loads whose ring slots are free (their last use emitted). */
static int pump(qkv_state *s, nx_error *err) {
    while (s->loaded < s->pieces && s->loaded < s->released + s->R)
        if (load_piece(s, s->loaded++, err) != 0) return -1;
    return 0;
}

/* The multiplies of token tile tt (slot m) against group g's pieces (ring
 * slots from `piece0`), then the evacuation of each column tile. */
static int multiply(qkv_state *s, uint64_t tt, uint32_t m, uint64_t g, uint64_t piece0, int release_each,
                    int (*between)(qkv_state *, uint64_t, uint32_t, nx_error *), nx_error *err) {
    const nx_qkv_params *p = s->p;
    const uint32_t n = qkv_ntok(s, tt);
    const uint64_t t0 = g * s->G, t1 = t0 + s->G < s->ntiles ? t0 + s->G : s->ntiles;
    uint32_t bank[8];
    for (uint64_t t = t0; t < t1; t++) bank[t - t0] = (uint32_t)(s->accs++ % QKV_ACC_BANKS);
    for (uint32_t i = 0; i < s->nkc; i++) {
        const uint32_t kc = s->k_lo + i, kw = qkv_clip(p->H - (uint64_t)kc * s->P, s->P);
        /* the PE runs in order: a transpose group emitted here, not all of
         * them ahead, lets the first multiplies start on the first chunks
         * while GpSimd still scales the later ones */
        if (s->lazy_tp && g == 0 && i % QKV_TP_GROUP == 0 &&
            nx_qkv_prep_transpose_range(s, tt, m, kc, kc + QKV_TP_GROUP < s->k_lo + s->nkc ? kc + QKV_TP_GROUP
                                                                                        : s->k_lo + s->nkc,
                                        err) != 0)
            return -1;
        const nx_tile *piece = &s->ring[(piece0 + i) % s->R];
        nx_operand st = nx_tile_view(&s->hT[m], s->dt, 0, kw, (uint64_t)kc * s->P, 1, (const int32_t[]){1}, &n);
        if (nx_kctx_load_stationary(s->k, &st, err) != 0) return -1;
        for (uint64_t t = t0; t < t1; t++) {
            const uint64_t ha = s->h_lo + t * s->hpt, hb = ha + s->hpt < s->h_hi ? ha + s->hpt : s->h_hi;
            const uint64_t c0 = (t - t0) * s->TN, cw = (hb - ha) * p->d;
            nx_operand acc = nx_rows_view(&s->acc[bank[t - t0]], NX_DT_FP32, n, 0, cw);
            nx_operand mv = nx_rows_view(piece, s->dt, kw, c0, cw);
            if (nx_kctx_multiply_moving(s->k, &acc, &mv, i > 0, err) != 0) return -1;
        }
        if (release_each) {
            s->released++;
            if (pump(s, err) != 0) return -1;
        }
    }
    if (between && between(s, tt, m, err) != 0) return -1;
    if (s->split_k) return nx_qkv_exchange(s, tt, m, t0, t1, bank, err);
    for (uint64_t t = t0; t < t1; t++)
        if (nx_qkv_evacuate(s, tt, m, t, bank[t - t0], err) != 0) return -1;
    return 0;
}

/* The prep of the block's next token tile, emitted after the multiplies of
 * the current one (its loads and norm were emitted before them). */
static int next_transpose(qkv_state *s, uint64_t tt, uint32_t m, nx_error *err) {
    (void)m;
    const uint64_t nt = tt + 1, blk = tt / s->MB;
    if (nt >= s->ntt || nt / s->MB != blk) return 0;
    return nx_qkv_prep_transpose(s, nt, (uint32_t)(nt % s->MB), err);
}

static int run_block(qkv_state *s, uint64_t blk, nx_error *err) {
    const uint64_t tt0 = blk * s->MB, tt1 = tt0 + s->MB < s->ntt ? tt0 + s->MB : s->ntt;
    const uint32_t nm = (uint32_t)(tt1 - tt0);
    /* prefill: the first tiles' x ahead of the weight stream's first pieces
     * (their norms gate the PE); decode: the weights first (x is a few rows) */
    if (s->MB == 1 && pump(s, err) != 0) return -1;
    if (nx_qkv_prep_load(s, tt0, 0, err) != 0 || (nm > 1 && nx_qkv_prep_load(s, tt0 + 1, 1, err) != 0) ||
        pump(s, err) != 0 || nx_qkv_prep_norm(s, tt0, 0, err) != 0 ||
        (!s->lazy_tp && nx_qkv_prep_transpose(s, tt0, 0, err) != 0))
        return -1;
    for (uint64_t g = 0; g < s->ngroups; g++) {
        const uint64_t piece0 = (blk * s->ngroups + g) * s->nkc;
        for (uint32_t m = 0; m < nm; m++) {
            const uint64_t tt = tt0 + m;
            const int first = g == 0 && m + 1 < nm;
            if (first && (nx_qkv_prep_norm(s, tt + 1, m + 1, err) != 0 ||
                          (m + 2 < nm && nx_qkv_prep_load(s, tt + 2, m + 2, err) != 0)))
                return -1;
            if (multiply(s, tt, m, g, piece0, nm == 1, first ? next_transpose : NULL, err) != 0) return -1;
        }
        if (nm > 1) {
            s->released += s->nkc;
            if (pump(s, err) != 0) return -1;
        }
    }
    return 0;
}

/* Bytes per partition of the tiles the plan keeps whatever MB and R are. */
static uint64_t fixed_bytes(const qkv_state *s, uint64_t core_cols) {
    const nx_qkv_params *p = s->p;
    uint64_t b = 2 * nx_rows_tile_bytes(p->H, s->dt) + 2 * 64 + 4 * nx_rows_tile_bytes(s->P, NX_DT_FP32);
    if (p->norm) b += nx_rows_tile_bytes(p->H, p->gamma_dtype);
    if (p->bias) b += nx_rows_tile_bytes(core_cols, p->bias_dtype);
    /* the broadcasts' one-partition row and ones column, while they run */
    const uint64_t v = p->norm ? nx_rows_tile_bytes(p->H, p->gamma_dtype) : 0, c = p->bias ? nx_rows_tile_bytes(core_cols, p->bias_dtype) : 0;
    b += (v > c ? v : c) + nx_rows_tile_bytes(s->P, NX_DT_FP32);
    if (s->split_k) b += 2 * nx_rows_tile_bytes(core_cols, NX_DT_FP32); /* the partials' stage tiles */
    b += (s->KI > 1 ? 3 : QKV_OUT_BUFS) * nx_rows_tile_bytes((uint64_t)s->KI * s->TN, s->dt) +
         (p->rope ? QKV_ROT_BUFS * 3 * nx_rows_tile_bytes(s->TN, NX_DT_FP32) : 0);
    return b;
}

static uint64_t slot_bytes(const qkv_state *s) {
    const nx_qkv_params *p = s->p;
    uint64_t b = nx_rows_tile_bytes((uint64_t)s->nk * s->P, s->dt);
    if (p->rope) b += 2 * nx_rows_tile_bytes(p->d / 2, p->cs_dtype) + nx_rows_tile_bytes(p->d, p->cs_dtype);
    return b;
}

/* The split, the tile sizes, MB and R (0, or -1 with the refusal). */
static int plan(qkv_state *s, nx_error *err) {
    const nx_qkv_params *p = s->p;
    const nx_geometry *geo = nx_kctx_geometry(s->k);
    const nx_machine *mach = nx_kctx_machine(s->k);
    const uint64_t T = p->B * p->S, nh = p->nq + 2 * p->nkv;
    uint64_t bank = geo->psum_bank_bytes / 4;
    if (bank > geo->pe_moving_free_max) bank = geo->pe_moving_free_max;
    s->P = geo->partitions < geo->pe_rows ? geo->partitions : geo->pe_rows;
    if (s->P > geo->pe_cols) s->P = geo->pe_cols;
    if (p->d > bank)
        return nx_fail(err, "attribute head_dim: %llu beyond %llu (a head's columns fit one PSUM bank of fp32)",
                       (unsigned long long)p->d, (unsigned long long)bank);
    if (p->H > geo->sbuf_free_elems_max)
        return nx_fail(err, "operand 0 (%s): H = %llu beyond the %u elements an engine streams per partition",
                       s->x->name, (unsigned long long)p->H, (unsigned)geo->sbuf_free_elems_max);
    if (p->N > INT32_MAX || s->wv.ld > INT32_MAX || p->S * p->d > INT32_MAX)
        return nx_fail(err, "operand 1 (%s): width %llu (or S d) beyond 32-bit access-pattern strides", s->w->name,
                       (unsigned long long)(p->N > s->wv.ld ? p->N : s->wv.ld));
    s->KI = 1;
    const int decode = p->plan == NX_QKV_PLAN_DECODE || (p->plan == NX_QKV_PLAN_AUTO && T <= s->P);
    if (decode && T > s->P)
        return nx_fail(err, "attribute plan: decode takes up to %u tokens (B S), the op has %llu", s->P,
                       (unsigned long long)T);
    uint64_t lo, hi;
    if (decode) {
        nx_kctx_rows(s->k, nh, &lo, &hi);
        s->h_lo = lo, s->h_hi = hi, s->t_lo = 0, s->t_hi = T;
        s->split_cols = nx_kctx_num_programs(s->k) > 1;
    } else {
        /* heads layout: KI token tiles interleaved when whole super-tiles of
         * KI x 128 positions fit each batch (qkv_impl.h, qkv_tok0) */
        s->KI = 1;
        for (uint32_t ki = 4; p->heads && ki > 1 && s->KI == 1; ki /= 2)
            if (p->S % ((uint64_t)ki * s->P) == 0) s->KI = ki;
        const uint64_t unit = (uint64_t)s->KI * s->P;
        nx_kctx_rows(s->k, (T + unit - 1) / unit, &lo, &hi);
        s->t_lo = lo * unit, s->t_hi = hi * unit < T ? hi * unit : T, s->h_lo = 0, s->h_hi = nh;
        if (s->t_lo > s->t_hi) s->t_lo = s->t_hi;
    }
    s->nk = (uint32_t)((p->H + s->P - 1) / s->P);
    s->hpt = (uint32_t)(bank / p->d);
    s->TN = (uint32_t)(s->hpt * p->d);
    const uint64_t eff = mach->dma_efficient_bytes_per_partition;
    s->k_lo = 0, s->nkc = s->nk, s->f_lo = s->h_lo, s->f_hi = s->h_hi;
    /* decode on the grid whose core's heads are weight rows shorter than the
     * DMA's efficient run (the 70B-like TP-8 shard: 5 heads of 128, 1280
     * bytes, moved at 62% of the rate): the cores split K instead, every
     * row whole, when all heads' column tiles fit one group of banks, and
     * exchange the partial sums (nx_qkv_exchange) */
    if (decode && s->split_cols && nx_kctx_num_programs(s->k) == 2 && s->nk >= 2 &&
        (s->h_hi - s->h_lo) * p->d * s->es < eff && nh * p->d * s->es >= eff &&
        (nh + s->hpt - 1) / s->hpt <= QKV_ACC_BANKS / 2 && s->wv.col[1] == p->nq * p->d &&
        s->wv.col[2] == (p->nq + p->nkv) * p->d) {
        uint64_t klo, khi;
        nx_kctx_rows(s->k, s->nk, &klo, &khi);
        s->split_k = 1;
        s->k_lo = (uint32_t)klo, s->nkc = (uint32_t)(khi - klo);
        s->f_lo = s->h_lo, s->f_hi = s->h_hi, s->h_lo = 0, s->h_hi = nh;
    }
    /* streaming (decode, or one token tile per core): pieces of at least the
     * DMA's efficient run per row, within the PSUM banks; prefill: one
     * column tile per panel (SBUF holds two panels) */
    s->ntt = (s->t_hi - s->t_lo + s->P - 1) / s->P;
    s->lazy_tp = decode && s->ntt == 1;
    uint32_t G = 1;
    while (G < QKV_ACC_BANKS / 2 && (uint64_t)G * s->TN * s->es < eff) G++;
    if (s->split_k) G = (uint32_t)((s->h_hi - s->h_lo + s->hpt - 1) / s->hpt); /* one group: one exchange */
    const uint64_t hh = s->h_hi > s->h_lo ? s->h_hi - s->h_lo : 0;
    const uint64_t sbuf = geo->sbuf_partition_bytes, fixed = fixed_bytes(s, hh * p->d), slot = slot_bytes(s);
    /* prefill with few token tiles: the wide pieces too when every tile of
     * the core and two panels of them fit (the weights then read once, at
     * the full DMA rate); the interleaved heads stores need G = 1 */
    const uint64_t wide = nx_rows_tile_bytes((uint64_t)G * s->TN, s->dt);
    s->G = decode || s->ntt <= 1 ||
                   (s->KI == 1 && s->ntt <= QKV_MB_MAX && fixed + s->ntt * slot + 2 * s->nk * wide <= sbuf)
               ? G
               : 1;
    s->ntiles = (hh + s->hpt - 1) / s->hpt;
    s->ngroups = (s->ntiles + s->G - 1) / s->G;
    const uint64_t piece = nx_rows_tile_bytes((uint64_t)s->G * s->TN, s->dt);
    if (fixed + slot + 2 * piece > sbuf)
        return nx_fail(err,
                       "operand 0 (%s): H = %llu needs %llu bytes per partition (x, h and weight tiles of the "
                       "plan), SBUF has %llu",
                       s->x->name, (unsigned long long)p->H, (unsigned long long)(fixed + slot + 2 * piece),
                       (unsigned long long)sbuf);
    s->MB = 1;
    if (!decode) /* the most token tiles whose h fits beside two panels */
        while (s->MB < QKV_MB_MAX && s->MB < s->ntt && fixed + (s->MB + 1) * slot + 2 * s->nk * piece <= sbuf) s->MB++;
    if (s->KI > 1 && s->MB >= s->KI) s->MB = s->MB / s->KI * s->KI;
    else s->KI = 1;
    uint64_t R = (sbuf - fixed - s->MB * slot) / piece;
    if (R > QKV_RING_MAX) R = QKV_RING_MAX;
    if (s->MB > 1 && R < s->nk) s->MB = 1, R = (sbuf - fixed - slot) / piece; /* the panel does not fit: stream */
    if (R > QKV_RING_MAX) R = QKV_RING_MAX;
    s->R = (uint32_t)R;
    s->nblocks = (s->ntt + s->MB - 1) / s->MB;
    s->pieces = s->nblocks * s->ngroups * s->nkc;
    return 0;
}

static int alloc(qkv_state *s, nx_error *err) {
    const nx_qkv_params *p = s->p;
    nx_kctx *k = s->k;
    const uint32_t P = s->P;
    for (int i = 0; i < 2; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "x_tile", s->dt, P, p->H, &s->xt[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "row_stats", NX_DT_FP32, P, 2, &s->small[i], err) != 0)
            return -1;
    if (s->split_k) {
        const uint64_t width = (s->h_hi - s->h_lo) * p->d, shape[3] = {2, s->t_hi - s->t_lo, width};
        if (nx_kctx_scratch(k, "qkv_k_partials", NX_DT_FP32, 3, shape, &s->xoff, err) != 0) return -1;
        for (int i = 0; i < 2; i++)
            if (nx_kctx_alloc(k, NX_OPK_SBUF, "partials", NX_DT_FP32, P, width, &s->stage[i], err) != 0) return -1;
    }
    s->nout = s->KI > 1 ? 3 : QKV_OUT_BUFS;
    for (uint32_t i = 0; i < s->nout; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "out_tile", s->dt, P, (uint64_t)s->KI * s->TN, &s->ot[i], err) != 0) return -1;
    for (int i = 0; i < QKV_ROT_BUFS; i++)
        if ((p->rope && (nx_kctx_alloc(k, NX_OPK_SBUF, "p_tile", NX_DT_FP32, P, s->TN, &s->pf[i], err) != 0 ||
                         nx_kctx_alloc(k, NX_OPK_SBUF, "rot_a", NX_DT_FP32, P, s->TN, &s->at[i], err) != 0 ||
                         nx_kctx_alloc(k, NX_OPK_SBUF, "rot_b", NX_DT_FP32, P, s->TN, &s->bt[i], err) != 0)))
            return -1;
    for (uint32_t m = 0; m < s->MB; m++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "hT", s->dt, P, (uint64_t)s->nk * P, &s->hT[m], err) != 0 ||
            (p->rope && (nx_kctx_alloc(k, NX_OPK_SBUF, "cos", p->cs_dtype, P, p->d / 2, &s->cs[m], err) != 0 ||
                         nx_kctx_alloc(k, NX_OPK_SBUF, "sin", p->cs_dtype, P, p->d / 2, &s->sr[m], err) != 0 ||
                         nx_kctx_alloc(k, NX_OPK_SBUF, "sin_pm", p->cs_dtype, P, p->d, &s->sn[m], err) != 0)))
            return -1;
    for (uint32_t i = 0; i < s->R; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "w_piece", s->dt, P, (uint64_t)s->G * s->TN, &s->ring[i], err) != 0) return -1;
    /* the broadcasts last, so the space their temporaries leave is no x or
     * weight tile's (whose first loads would wait for them) */
    const uint32_t rows = s->KI > 1 ? P : qkv_clip(s->t_hi - s->t_lo, P); /* the most a token tile holds */
    if (p->norm && nx_rows_broadcast_rows(&s->r, "gamma", s->gamma->hbm_offset, p->gamma_dtype, p->H, p->gamma_dtype,
                                          rows, &s->gamma_t, err) != 0)
        return -1;
    if (p->bias &&
        nx_rows_broadcast_rows(&s->r, "bias", s->bias->hbm_offset + s->h_lo * p->d * nx_dtype_size(p->bias_dtype),
                               p->bias_dtype, (s->h_hi - s->h_lo) * p->d, p->bias_dtype, rows, &s->bias_t, err) != 0)
        return -1;
    /* PSUM after the broadcasts, which take two banks while they run */
    for (int i = 0; i < 2; i++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "transpose_psum", NX_DT_FP32, P, (uint64_t)P * QKV_TP_GROUP, &s->tp[i], err) !=
            0)
            return -1;
    for (int i = 0; i < QKV_ACC_BANKS; i++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "acc", NX_DT_FP32, P, s->TN, &s->acc[i], err) != 0) return -1;
    return 0;
}

int nx_qkv(nx_kctx *k, const nx_kernel_call *call, nx_error *err) { return nx_qkv_viewed(k, call, NULL, err); }

int nx_qkv_viewed(nx_kctx *k, const nx_kernel_call *call, const nx_qkv_wview *view, nx_error *err) {
    nx_norm_tensor in[NX_KERNEL_MAX_ARGS];
    for (uint32_t i = 0; i < call->n_inputs && i < NX_KERNEL_MAX_ARGS; i++) in[i] = as_norm(&call->args[i]);
    nx_qkv_params p;
    if (nx_qkv_read(call->attrs, in, call->n_inputs, &p, err) != 0) return -1;
    const uint32_t nres = nx_qkv_n_results(&p);
    if (call->nargs != p.n_operands + nres)
        return nx_fail(err, "qkv: expects %u results, got %u", nres, call->nargs - call->n_inputs);
    qkv_state *s = calloc(1, sizeof *s);
    if (!s) return nx_fail(err, "qkv: out of memory");
    s->k = k, s->p = &p, s->dt = p.dtype, s->es = nx_dtype_size(p.dtype);
    s->x = &call->args[0], s->w = &call->args[1];
    s->wv = view && view->ld ? *view : (nx_qkv_wview){p.N, {0, p.nq * p.d, (p.nq + p.nkv) * p.d}};
    s->gamma = p.norm ? &call->args[p.gamma_op] : NULL;
    s->bias = p.bias ? &call->args[p.bias_op] : NULL;
    s->cos = p.rope ? &call->args[p.cos_op] : NULL;
    s->sin = p.rope ? &call->args[p.cos_op + 1] : NULL;
    for (uint32_t j = 0; j < nres; j++) s->out[j] = &call->args[p.n_operands + j];
    nx_rows_init(&s->r, k);
    int rc = plan(s, err);
    if (rc == 0 && s->ntt > 0 && s->ntiles > 0) {
        rc = alloc(s, err);
        for (uint64_t b = 0; rc == 0 && b < s->nblocks; b++) rc = run_block(s, b, err);
    }
    free(s);
    return rc;
}
