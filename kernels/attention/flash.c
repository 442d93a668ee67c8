/* attention: flash attention forward (context encoding) on the PE, after
 * FlashAttention (Dao et al., 2022, Algorithm 1) and the NKI flash
 * attention kernel (aws-neuron-sdk nki/kernels/attention.py, flash_fwd):
 * query tiles of up to 128 rows on the partitions, key blocks of up to 512
 * streamed past them, S = Q K^T on the PE into one PSUM bank, the online
 * softmax (kernels/attention/softmax_step.h) in fp32 on VectorE/ScalarE,
 * exp on ScalarE, P rounded to the input dtype and transposed on the PE for
 * the P V matmul, the output divided by the running sum at the end. Past
 * the public kernel: D up to 256 (Q K^T in two contraction passes, P V in
 * one of N = D), grouped-query heads, sliding windows, sinks, prefix-cache
 * query positions, ragged lengths, and full key blocks loaded permuted
 * (partition p holds keys 4p .. 4p + 3: 4 D contiguous elements per
 * partition, where key-per-partition rows would move D at an eighth of
 * the DMA rate), undone in the K^T copy and matched by strided P^T chunks.
 * Operands and math: kernels/attention/flash.h; plan, numerics and figures:
 * docs/parts/attention.md.
 *
 * Skipping: a query tile's key range is the union of its rows' visible
 * keys (causal: up to its last row's position; window: from its first
 * row's window start), so blocks above the diagonal and outside the window
 * are never computed; the partial diagonal and window-edge columns are
 * masked on the PE by accumulating a constant triangle (0 or a huge
 * negative of the scale's sign) through an identity matmul into S.
 *
 * Work (kernels/attention/flash_plan.c): (batch, head, group of up to 8
 * query tiles) units; a unit streams its key blocks once for all its tiles
 * (K and V loads, K^T by PE transposes), so SBUF use is bounded by the tile
 * and block sizes, not by the lengths. Units are dealt to the VNC grid's
 * cores by a greedy balance of their key columns (causal units differ).
 *
 * The pipeline (this file): every (tile, block) step goes through eight
 * stages, each on its engine, emitted in slots: in slot i
 *   ACT  o *= alpha of step i-4 (first: ScalarE reaches it before the P V
 *        that reads it, which only waits for the tile's own previous P V)
 *   ACT  alpha, P = exp(...) of step i-2; GpSimd its row sum, the l update
 *   DVE  max of step i-1
 *   PE   S = Q K^T (+ masks) of step i; P^T chunks of step i-4
 *   DVE|ACT  copy P^T of step i-5 to SBUF (per 128-key chunk, the less
 *        loaded engine)
 *   DVE  nm of step i-1 (after the copy: DVE does not idle through the
 *        max's dependency latency)
 *   PE   o += P^T V of step i-8, then the tile's end if it was its last
 * so every stage reads what an earlier slot produced and the engines
 * overlap across steps and units (the lags were tuned on the model:
 * docs/parts/attention.md); the block loads run 6 steps ahead, K^T 3 (with
 * one K^T PSUM set: its transposes 4, its copies 3) and the next unit's Q^T
 * 2 steps ahead (stages: flash_stages.c). */
#include <stdlib.h>
#include <string.h>

#include "flash_impl.h"

/* A cache prefix's constants: the identity scaled by the mask's fill, the
 * key columns 0 .. FA_BK - 1 (fp32) and the lengths on every partition
 * (fp32: exact below 2^24). */
static int build_len_consts(fa_ctx *c, double fill, nx_error *err) {
    const uint32_t P = c->P, B = (uint32_t)c->p->B;
    if (nx_kctx_alloc(c->k, NX_OPK_SBUF, "fill_identity", NX_DT_BF16, P, P, &c->fill_ident, err) != 0 ||
        nx_kctx_alloc(c->k, NX_OPK_SBUF, "key_columns", NX_DT_FP32, P, FA_BK, &c->key_cols, err) != 0 ||
        nx_kctx_alloc(c->k, NX_OPK_SBUF, "lengths", NX_DT_FP32, P, 2 * B, &c->len_f, err) != 0)
        return -1;
    for (uint32_t i = 0; i < FA_KTBUFS; i++)
        if (nx_kctx_alloc(c->k, NX_OPK_SBUF, "length_mask", NX_DT_BF16, P, FA_BK, &c->len_mask[i], err) != 0) return -1;
    const int32_t neg = -1, one = 1;
    const uint32_t n1 = P, nk = FA_BK;
    nx_operand fi = nx_tile_ap(&c->fill_ident);
    if (nx_kctx_memset(c->k, NX_ENG_POOL, &fi, fill, err) != 0) return -1;
    nx_insn a = nx_insn_make(NX_OP_AFFINE_SELECT);
    a.alu0 = NX_ALU_IS_EQUAL; /* fill on the diagonal, 0 elsewhere */
    a.op[0] = fi, a.op[1] = nx_pattern(0, 1, P, 1, &neg, &n1), a.op[2] = fi, a.op[3] = nx_imm(0.0, NX_DT_BF16);
    if (nx_kctx_emit(c->k, NX_ENG_POOL, &a, err) != 0) return -1;
    nx_operand kc = nx_tile_ap(&c->key_cols), pat = nx_pattern(0, 0, P, 1, &one, &nk);
    pat.dtype = NX_DT_INT32;
    if (nx_kctx_iota(c->k, &kc, &pat, err) != 0) return -1;
    /* lengths [B] int32 broadcast to the partitions (row pitch 0), then fp32 */
    nx_operand li = fa_view(&c->len_f, NX_DT_INT32, P, B, B), lf = fa_view(&c->len_f, NX_DT_FP32, P, 0, B);
    nx_operand src = nx_ap_hbm_rows(NX_DT_INT32, c->cache->lengths, P, 0, B);
    if (nx_rows_load(&c->r, &li, &src, err) != 0) return -1;
    return nx_kctx_tensor_copy(c->k, NX_ENG_DVE, &lf, &li, err);
}

/* The masks and the identity, built once on GpSimd. */
static int build_consts(fa_ctx *c, nx_error *err) {
    const uint32_t P = c->P;
    double fill = c->p->scale > 0 ? -FA_BIG : FA_BIG;
    if (nx_kctx_alloc(c->k, NX_OPK_SBUF, "identity", NX_DT_BF16, P, P, &c->ident, err) != 0 ||
        nx_kctx_alloc(c->k, NX_OPK_SBUF, "causal_mask", NX_DT_BF16, P, P, &c->um, err) != 0 ||
        nx_kctx_alloc(c->k, NX_OPK_SBUF, "window_mask", NX_DT_BF16, P, 2 * P, &c->lm, err) != 0)
        return -1;
    nx_operand id = nx_tile_ap(&c->ident), um = nx_tile_ap(&c->um), lm = nx_tile_ap(&c->lm);
    if (nx_kctx_memset(c->k, NX_ENG_POOL, &id, 1.0, err) != 0 || nx_kctx_memset(c->k, NX_ENG_POOL, &um, 0.0, err) != 0 ||
        nx_kctx_memset(c->k, NX_ENG_POOL, &lm, 0.0, err) != 0)
        return -1;
    const int32_t neg = -1, inc = 1;
    const uint32_t n1 = P, n2 = 2 * P;
    nx_insn a = nx_insn_make(NX_OP_AFFINE_SELECT);
    a.alu0 = NX_ALU_IS_EQUAL; /* identity: row - t == 0 */
    a.op[0] = id, a.op[1] = nx_pattern(0, 1, P, 1, &neg, &n1), a.op[2] = id, a.op[3] = nx_imm(0.0, NX_DT_BF16);
    if (nx_kctx_emit(c->k, NX_ENG_POOL, &a, err) != 0) return -1;
    a.alu0 = NX_ALU_IS_GE; /* causal: column t visible iff row - t >= 0 */
    a.op[0] = um, a.op[1] = nx_pattern(0, 1, P, 1, &neg, &n1), a.op[2] = um, a.op[3] = nx_imm(fill, NX_DT_BF16);
    if (nx_kctx_emit(c->k, NX_ENG_POOL, &a, err) != 0) return -1;
    a.op[0] = lm, a.op[1] = nx_pattern(-(int64_t)P, -1, P, 1, &inc, &n2), a.op[2] = lm; /* t - 128 - row >= 0 */
    if (nx_kctx_emit(c->k, NX_ENG_POOL, &a, err) != 0) return -1;
    return c->cache && c->Sc ? build_len_consts(c, fill, err) : 0;
}

static int alloc_all(fa_ctx *c, nx_error *err) {
    nx_kctx *k = c->k;
    const uint32_t P = c->P, D = (uint32_t)c->p->D;
    const nx_dtype dt = c->dt;
    for (uint32_t i = 0; i < FA_KBUFS; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "k_block", dt, P, 4 * D, &c->k_sb[i], err) != 0) return -1;
    for (uint32_t i = 0; i < FA_VBUFS; i++) {
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "v_block", dt, P, 4 * D, &c->v_sb[i], err) != 0) return -1;
    }
    for (uint32_t i = 0; i < FA_KTBUFS; i++)
        for (uint32_t dd = 0; dd < c->nd; dd++)
            if (nx_kctx_alloc(k, NX_OPK_SBUF, "k_t_block", dt, P, FA_BK, &c->kt_sb[i][dd], err) != 0) return -1;
    for (uint32_t i = 0; i < FA_RING; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "p_block", dt, P, FA_BK, &c->p_sb[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "p_t_block", dt, P, FA_BK, &c->pt_sb[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "out_rows", dt, P, D, &c->out_sb[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "row_sums", NX_DT_FP32, P, 2, &c->norm_sb[i], err) != 0)
            return -1;
    for (uint32_t s = 0; s < 2; s++)
        for (uint32_t g = 0; g < c->G; g++) {
            if (nx_kctx_alloc(k, NX_OPK_SBUF, "row_stats", NX_DT_FP32, P, ST_COLS, &c->st[s][g], err) != 0) return -1;
            if (g % FA_QG) continue;
            if (nx_kctx_alloc(k, NX_OPK_SBUF, "q_rows", dt, P, FA_QG * D, &c->q_sb[s][g / FA_QG], err) != 0) return -1;
            for (uint32_t dd = 0; dd < c->nd; dd++)
                if (nx_kctx_alloc(k, NX_OPK_SBUF, "q_t", dt, P, FA_QG * P, &c->qt[s][g / FA_QG][dd], err) != 0)
                    return -1;
        }
    for (uint32_t i = 0; i < c->nS; i++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "scores", NX_DT_FP32, P, FA_BK, &c->s_ps[i], err) != 0) return -1;
    for (uint32_t i = 0; i < 2; i++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "p_t_psum", dt, P, FA_BK, &c->pt_ps[i], err) != 0) return -1;
    for (uint32_t i = 0; i < c->nkt; i++)
        for (uint32_t dd = 0; dd < c->nd; dd++)
            if (nx_kctx_alloc(k, NX_OPK_PSUM, "k_t_psum", dt, P, FA_BK, &c->kt_ps[i][dd], err) != 0) return -1;
    for (uint32_t g = 0; g < c->G; g++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "out_acc", NX_DT_FP32, P, D, &c->o_ps[g], err) != 0) return -1;
    return 0;
}

/* How many o accumulators fit in PSUM after nS score banks, the P^T and
 * K^T tiles: a bump allocator that never lets a tile of at most one bank
 * straddle banks (the layer's rule). */
static uint32_t group_size(const nx_geometry *g, nx_dtype dt, uint32_t nd, uint64_t D, uint32_t nS, uint32_t nkt) {
    uint64_t bank = g->psum_bank_bytes ? g->psum_bank_bytes : g->psum_partition_bytes, at = 0;
    uint64_t sizes[16];
    uint32_t ns = 0;
    for (uint32_t i = 0; i < nS; i++) sizes[ns++] = FA_BK * 4;
    for (uint32_t i = 0; i < 2 + nkt * nd; i++) sizes[ns++] = FA_BK * nx_dtype_size(dt);
    for (uint32_t i = 0; i < ns; i++) {
        if (at / bank != (at + sizes[i] - 1) / bank) at = (at / bank + 1) * bank;
        at += sizes[i];
    }
    const uint64_t o = D * 4;
    uint32_t G = 0;
    while (G < FA_GMAX) {
        uint64_t a = at;
        if (a / bank != (a + o - 1) / bank) a = (a / bank + 1) * bank;
        if (a + o > g->psum_partition_bytes) break;
        at = a + o;
        G++;
    }
    return G;
}

/* The emission order. Each stage of each step, each block's loads and
 * K^T and each unit's loads and start are emitted once, in order per kind;
 * `need` emits one (and first what it needs: the stage before it, and the
 * last use of the buffer it is about to overwrite, since the emission order
 * is the program's semantics). The slots of the opening comment call it
 * with their lags; when a buffer ring is short (units of one or two steps)
 * it drains the older steps early instead of reading a buffer too soon. */
enum { K_SCORES, K_STATS, K_NM, K_EXP, K_T, K_COPY, K_RESCALE, K_PV, K_BLOAD, K_BKT, K_BKTC, K_ULOAD, K_UBEGIN, K_KINDS };

typedef struct fa_pipe {
    fa_ctx *c;
    const fa_plan *pl;
    uint64_t next[K_KINDS];
} fa_pipe;

static uint64_t count_of(const fa_pipe *q, int kind) {
    return kind >= K_ULOAD ? q->pl->nunits : kind >= K_BLOAD ? q->pl->nblocks : q->pl->nsteps;
}

/* the last step of block b / unit u (UINT64_MAX: none before it) */
static uint64_t block_last(const fa_plan *pl, uint64_t b) {
    return (b + 1 < pl->nblocks ? pl->blocks[b + 1].first_step : pl->nsteps) - 1;
}
static uint64_t unit_end(const fa_plan *pl, uint64_t u) {
    return u + 1 < pl->nunits ? pl->units[u + 1].first_step : pl->nsteps;
}

static int need(fa_pipe *q, int kind, uint64_t x, nx_error *err);

static int emit_one(fa_pipe *q, int kind, uint64_t x, nx_error *err) {
    fa_ctx *c = q->c;
    const fa_plan *pl = q->pl;
    const fa_step *s = kind < K_BLOAD ? &pl->steps[x] : NULL;
    switch (kind) {
    case K_SCORES:
        if (need(q, K_UBEGIN, s->unit, err) != 0 || need(q, K_BKTC, s->block, err) != 0 ||
            (x >= c->nS && need(q, K_EXP, x - c->nS, err) != 0))
            return -1;
        return fa_scores(c, pl, s, err) != 0 ? -1 : fa_scores_len_mask(c, pl, s, err);
    case K_STATS:
        return need(q, K_SCORES, x, err) != 0 ? -1 : fa_softmax_stats(c, pl, s, err);
    case K_NM:
        return need(q, K_STATS, x, err) != 0 ? -1 : fa_softmax_nm(c, pl, s, err);
    case K_EXP:
        if (need(q, K_NM, x, err) != 0 || (x >= FA_RING && need(q, K_T, x - FA_RING, err) != 0)) return -1;
        return fa_softmax_exp(c, pl, x, err);
    case K_T:
        if (need(q, K_EXP, x, err) != 0 || (x >= 2 && need(q, K_COPY, x - 2, err) != 0)) return -1;
        return fa_transpose_p(c, pl, x, err);
    case K_COPY:
        if (need(q, K_T, x, err) != 0 || (x >= FA_RING && need(q, K_PV, x - FA_RING, err) != 0)) return -1;
        return fa_copy_pt(c, pl, x, err);
    case K_RESCALE:
        /* after the tile's previous P V only (o is the tile's own), so it
         * can run well before the P V of the step just before it */
        if (need(q, K_EXP, x, err) != 0 || (s->prev != UINT64_MAX && need(q, K_PV, s->prev, err) != 0)) return -1;
        return fa_rescale(c, pl, s, err);
    case K_PV:
        if (need(q, K_COPY, x, err) != 0 || need(q, K_RESCALE, x, err) != 0 || fa_pv(c, pl, x, err) != 0) return -1;
        return s->last ? fa_tile_end(c, &pl->units[s->unit], s->g, (int)s->nm_new, err) : 0;
    case K_BLOAD: {
        const fa_block *bl = &pl->blocks[x];
        if ((x >= FA_KBUFS && need(q, K_BKT, x - FA_KBUFS, err) != 0) ||
            (x >= FA_VBUFS && need(q, K_PV, block_last(pl, x - FA_VBUFS), err) != 0))
            return -1;
        return fa_block_load(c, bl, x, &pl->units[bl->unit], err);
    }
    case K_BKT: /* after the previous copy out of the K^T PSUM sets */
        if (need(q, K_BLOAD, x, err) != 0 || (x >= 1 && need(q, K_BKTC, x - 1, err) != 0)) return -1;
        return fa_block_kt(c, x, &pl->blocks[x], err);
    case K_BKTC:
        if (need(q, K_BKT, x, err) != 0 ||
            (x >= FA_KTBUFS && need(q, K_SCORES, block_last(pl, x - FA_KTBUFS), err) != 0))
            return -1;
        if (fa_block_kt_copy(c, x, &pl->blocks[x], err) != 0) return -1;
        return fa_block_len_mask(c, x, &pl->blocks[x], &pl->units[pl->blocks[x].unit], err);
    case K_ULOAD:
        if (x >= 2) { /* the state set of unit x - 2: its start and every step */
            uint64_t e = unit_end(pl, x - 2);
            if (need(q, K_UBEGIN, x - 2, err) != 0 || (e > pl->units[x - 2].first_step && need(q, K_PV, e - 1, err) != 0))
                return -1;
        }
        return fa_unit_load(c, &pl->units[x], err);
    default: /* K_UBEGIN; its Q^T shares the K^T PSUM sets: after the copies of every K^T begun */
        if (need(q, K_ULOAD, x, err) != 0 || (q->next[K_BKT] && need(q, K_BKTC, q->next[K_BKT] - 1, err) != 0))
            return -1;
        return fa_unit_begin(c, &pl->units[x], err);
    }
}

static int need(fa_pipe *q, int kind, uint64_t x, nx_error *err) {
    if (x >= count_of(q, kind)) return 0;
    while (q->next[kind] <= x) {
        uint64_t y = q->next[kind]++;
        if (emit_one(q, kind, y, err) != 0) return -1;
    }
    return 0;
}

/* The slots (see the opening comment). */
static int run_pipeline(fa_ctx *c, const fa_plan *pl, nx_error *err) {
    fa_pipe q = {.c = c, .pl = pl};
    const uint64_t N = pl->nsteps;
    static const struct { int kind, lag; } slot[] = {
        {K_RESCALE, 4}, {K_EXP, 2}, {K_STATS, 1}, {K_SCORES, 0}, {K_T, 4}, {K_COPY, 5}, {K_NM, 1}, {K_PV, 8},
    };
    /* with one K^T PSUM set (D > 128) the transposes run a step before
     * their copies, 4 and 3 steps ahead (1x8x4096x256 causal 748.2 ->
     * 743.0 us); with two, both 3 ahead (5 and 4: 1x32x4096x128 causal
     * 2086.2 -> 2095.2 us) */
    const uint64_t LT = c->nkt == 2 ? 3 : 4, LC = 3;
    for (uint64_t i = 0; i < N + 6; i++) {
        c->slot = i;
        if (fa_stores_due(c, i, err) != 0) return -1;
        /* block and Q loads in order of their first step, a unit's Q
         * before its first block: the load queues are FIFO, and the Q^T
         * transposes come before the unit's first K^T (a run's first Q
         * load queued behind two units' blocks held the PE 5 us) */
        for (;;) {
            const uint64_t bs = q.next[K_BLOAD] < pl->nblocks ? pl->blocks[q.next[K_BLOAD]].first_step : UINT64_MAX;
            const uint64_t us = q.next[K_ULOAD] < pl->nunits ? pl->units[q.next[K_ULOAD]].first_step : UINT64_MAX;
            const int unit = us <= bs;
            if ((unit ? us : bs) > i + 6) break;
            if (need(&q, unit ? K_ULOAD : K_BLOAD, q.next[unit ? K_ULOAD : K_BLOAD], err) != 0) return -1;
        }
        while (q.next[K_UBEGIN] < pl->nunits && pl->units[q.next[K_UBEGIN]].first_step <= i + 2)
            if (need(&q, K_UBEGIN, q.next[K_UBEGIN], err) != 0) return -1;
        while (q.next[K_BKT] < pl->nblocks && pl->blocks[q.next[K_BKT]].first_step <= i + LT)
            if (need(&q, K_BKT, q.next[K_BKT], err) != 0) return -1;
        while (q.next[K_BKTC] < pl->nblocks && pl->blocks[q.next[K_BKTC]].first_step <= i + LC)
            if (need(&q, K_BKTC, q.next[K_BKTC], err) != 0) return -1;
        for (size_t j = 0; j < sizeof slot / sizeof *slot; j++)
            if (i >= (uint64_t)slot[j].lag && need(&q, slot[j].kind, i - (uint64_t)slot[j].lag, err) != 0) return -1;
    }
    /* the last steps' late stages; units without steps (every tile saw
     * no key) still write their zeros */
    if (N && need(&q, K_PV, N - 1, err) != 0) return -1;
    if (pl->nunits && need(&q, K_UBEGIN, pl->nunits - 1, err) != 0) return -1;
    return fa_stores_due(c, UINT64_MAX, err);
}

static int flash_run(nx_kctx *k, const nx_kernel_call *call, const nx_attention_cache *cache, nx_error *err);

int nx_attention_flash(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    return flash_run(k, call, NULL, err);
}

int nx_attention_flash_cached(nx_kctx *k, const nx_kernel_call *call, const nx_attention_cache *cache,
                              nx_error *err) {
    return flash_run(k, call, cache, err);
}

static int flash_run(nx_kctx *k, const nx_kernel_call *call, const nx_attention_cache *cache, nx_error *err) {
    if (call->n_inputs < 3 || call->n_inputs > 4 || call->nargs != call->n_inputs + 1)
        return nx_fail(err, "attention: expects 3 or 4 operands and 1 result, got %u and %u", call->n_inputs,
                       call->nargs - call->n_inputs);
    nx_norm_tensor in[4];
    for (uint32_t i = 0; i < call->n_inputs; i++)
        in[i] = (nx_norm_tensor){call->args[i].name, call->args[i].dtype, call->args[i].ndims, call->args[i].shape};
    nx_attention_params p;
    if (nx_attention_read(call->attrs, in, call->n_inputs, &p, err) != 0) return -1;
    const uint64_t Skv_new = p.Skv;
    if (cache) { /* the keys: Sc cached columns, then the new ones */
        if (!p.causal || p.window)
            return nx_fail(err, "attention: a cache prefix takes causal attention without a window");
        p.Skv += cache->Sc;
    }
    const nx_geometry *geo = nx_kctx_geometry(k);
    if (geo->partitions < 128 || geo->pe_rows < 128 || geo->pe_cols < 128 || geo->pe_moving_free_max < FA_BK)
        return nx_fail(err, "attention: the plan needs 128 x 128 PE tiles and N = %u per multiply", FA_BK);
    fa_ctx *c = calloc(1, sizeof *c);
    if (!c) return nx_fail(err, "attention: out of memory");
    c->k = k;
    c->p = &p;
    nx_rows_init(&c->r, k);
    c->q = &call->args[0], c->kk = &call->args[1], c->v = &call->args[2];
    c->sink = p.sink ? &call->args[3] : NULL;
    c->out = &call->args[call->n_inputs];
    c->dt = p.dtype;
    c->es = nx_dtype_size(p.dtype);
    c->P = 128;
    c->cache = cache, c->Sc = cache ? cache->Sc : 0, c->Skv_new = Skv_new;
    c->nd = (uint32_t)((p.D + c->P - 1) / c->P);
    /* the most score banks that leave room for two output accumulators
     * (more score banks beat more tiles per unit on the model: D = 256
     * bf16 ran 2048 x 2048 in 106 us with 4 banks and 4 tiles, 132 us
     * with 2 banks and 8 tiles), else 2 banks */
    c->nS = 2;
    for (uint32_t ns = FA_SMAX; ns > 2; ns--)
        if (group_size(geo, p.dtype, c->nd, p.D, ns, 1) >= 2) {
            c->nS = ns;
            break;
        }
    c->G = group_size(geo, p.dtype, c->nd, p.D, c->nS, 1);
    /* a second K^T / Q^T PSUM set where it costs no accumulator (bf16
     * D <= 128): the next block's K^T transposes need not wait for the
     * previous copy out of PSUM */
    c->nkt = c->G && group_size(geo, p.dtype, c->nd, p.D, c->nS, 2) == c->G ? 2 : 1;
    fa_plan pl = {0};
    int rc = -1;
    if (c->G == 0) {
        nx_fail(err, "operand 0 (%s): D = %llu leaves no PSUM for the output accumulators", c->q->name,
                (unsigned long long)p.D);
        goto done;
    }
    if (build_consts(c, err) != 0 || alloc_all(c, err) != 0 || fa_plan_build(c, &pl, err) != 0 ||
        run_pipeline(c, &pl, err) != 0)
        goto done;
    rc = 0;
done:
    fa_plan_free(&pl);
    free(c);
    return rc;
}
