/* The stages of the flash attention pipeline (kernels/attention/flash_impl.h):
 * block loads and K^T, a unit's Q^T and statistics, and per step the
 * scores with their masks, the online-softmax statistics and exp
 * (kernels/attention/softmax_step.h), the P^T transposes and copies, the
 * rescale and the P V matmul; a tile's normalisation and store. */
#include "flash_impl.h"
#include "softmax_step.h"

static uint32_t dchunk(const fa_ctx *c, uint32_t dd) {
    uint32_t rest = (uint32_t)c->p->D - dd * c->P;
    return rest < c->P ? rest : c->P;
}

/* Keys [c0, c0 + w) of K or V into a [P, 4 x D] tile: a full block
 * permuted (partition p holds keys c0 + 4p + j at j D: 4 D contiguous
 * elements per partition in HBM), else natural chunks (chunk c at c D holds
 * keys c0 + 128 c + partition). */
static int load_rows(fa_ctx *c, const nx_tile *dst, uint64_t base, const fa_block *bl, nx_error *err) {
    const uint64_t D = c->p->D, c0 = (uint64_t)bl->c0;
    const uint32_t w = bl->w, full = w / c->P, tail = w % c->P;
    if (bl->perm) {
        nx_operand d = nx_tile_ap(dst);
        nx_operand s = nx_ap_hbm_rows(c->dt, base + c0 * D * c->es, c->P, (int32_t)(4 * D), (uint32_t)(4 * D));
        return nx_rows_load(&c->r, &d, &s, err);
    }
    if (full) {
        const int32_t ds[2] = {(int32_t)D, 1}, ss[2] = {(int32_t)(c->P * D), 1};
        const uint32_t cn[2] = {full, (uint32_t)D};
        nx_operand d = nx_tile_view(dst, c->dt, 0, c->P, 0, 2, ds, cn);
        nx_operand s = nx_ap(NX_OPK_HBM, c->dt, 0, c->P, (int32_t)D, base + c0 * D * c->es, 2, ss, cn);
        if (nx_rows_load(&c->r, &d, &s, err) != 0) return -1;
    }
    if (tail) {
        nx_operand d = fa_view(dst, c->dt, tail, (uint64_t)full * D, (uint32_t)D);
        nx_operand s = nx_ap_hbm_rows(c->dt, base + (c0 + (uint64_t)full * c->P) * D * c->es, tail, (int32_t)D,
                                      (uint32_t)D);
        if (nx_rows_load(&c->r, &d, &s, err) != 0) return -1;
    }
    return 0;
}

static uint64_t kv_base(const fa_ctx *c, const nx_tensor_ref *t, const fa_unit *u) {
    const nx_attention_params *p = c->p;
    return fa_head_base(c, t, u->b, u->h / (p->Hq / p->Hkv), p->Hkv, p->Skv);
}

/* With a cache prefix: a cached block's head in the cache; a new block's
 * base is where key column 0 would sit (the new keys start at column Sc;
 * load_rows adds c0 rows, so the offset is only ever used past Sc). */
static uint64_t block_base(const fa_ctx *c, const fa_block *bl, const fa_unit *u, int is_v) {
    const nx_attention_params *p = c->p;
    const uint64_t g = u->h / (p->Hq / p->Hkv);
    if (!c->cache) return kv_base(c, is_v ? c->v : c->kk, u);
    if (bl->c0 < (int64_t)c->Sc)
        return (is_v ? c->cache->v : c->cache->k) + (u->b * c->cache->b_pitch + g * c->cache->S_max * p->D) * c->es;
    return fa_head_base(c, is_v ? c->v : c->kk, u->b, g, p->Hkv, c->Skv_new) - c->Sc * p->D * c->es;
}

int fa_block_load(fa_ctx *c, const fa_block *bl, uint64_t bi, const fa_unit *u, nx_error *err) {
    if (load_rows(c, &c->k_sb[bi % FA_KBUFS], block_base(c, bl, u, 0), bl, err) != 0) return -1;
    return load_rows(c, &c->v_sb[bi % FA_VBUFS], block_base(c, bl, u, 1), bl, err);
}

int fa_block_len_mask(fa_ctx *c, uint64_t bi, const fa_block *bl, const fa_unit *u, nx_error *err) {
    if (!c->cache || bl->c0 >= (int64_t)c->Sc) return 0;
    /* on GpSimd (VectorE and ScalarE carry the softmax and the copies):
     * (column + c0 >= L_b), L_b broadcast to every partition */
    nx_operand m = fa_view(&c->len_mask[bi % FA_KTBUFS], NX_DT_BF16, c->P, 0, bl->w);
    nx_operand col = fa_view(&c->key_cols, NX_DT_FP32, c->P, 0, bl->w);
    nx_operand L = fa_col(&c->len_f, c->P, (uint32_t)u->b), c0 = nx_imm((double)bl->c0, NX_DT_FP32);
    return nx_kctx_tensor_scalar(c->k, NX_ENG_POOL, &m, &col, NX_ALU_ADD, &c0, NX_ALU_IS_GE, &L, err);
}

/* S += fill_identity x mask over the step's columns: the masked keys'
 * scores get the huge negative (of the scale's sign) before the max, as
 * the static masks do (fa_scores). */
int fa_scores_len_mask(fa_ctx *c, const fa_plan *pl, const fa_step *s, nx_error *err) {
    const fa_block *bl = &pl->blocks[s->block];
    if (!c->cache || bl->c0 >= (int64_t)c->Sc) return 0;
    fa_tile ft;
    fa_tile_at(c, pl->units[s->unit].t0 + s->g, &ft);
    const nx_tile *sp = &c->s_ps[(s - pl->steps) % c->nS];
    nx_operand S = fa_view(sp, NX_DT_FP32, ft.n, 0, s->wa);
    nx_operand id = fa_view(&c->fill_ident, NX_DT_BF16, ft.n, 0, ft.n);
    nx_operand mv = fa_view(&c->len_mask[s->block % FA_KTBUFS], NX_DT_BF16, ft.n, s->a_al, s->wa);
    if (nx_kctx_load_stationary(c->k, &id, err) != 0) return -1;
    return nx_kctx_multiply_moving(c->k, &S, &mv, 1, err);
}

/* The transpose of rows loaded by load_rows (w rows of D): a PE transpose
 * per 128-row chunk and D-chunk into the K^T / Q^T PSUM set `set`, then
 * (rows_t_copy) one copy per D-chunk into dst[dd] (D-chunk rows x w
 * columns in row order: a permuted tile's copy puts column j 128 + p at
 * row 4 p + j). K^T of a block and Q^T of a group of query tiles. */
static int rows_t_pe(fa_ctx *c, const nx_tile *src_sb, uint32_t w, uint32_t set, nx_error *err) {
    const uint32_t nch = (w + c->P - 1) / c->P, P = c->P;
    for (uint32_t dd = 0; dd < c->nd; dd++) {
        uint32_t dc = dchunk(c, dd);
        for (uint32_t ch = 0; ch < nch; ch++) {
            uint32_t cw = w - ch * P < P ? w - ch * P : P;
            nx_operand src = fa_view(src_sb, c->dt, cw, (uint64_t)ch * c->p->D + dd * P, dc);
            nx_operand pd = fa_view(&c->kt_ps[set][dd], c->dt, dc, (uint64_t)ch * P, cw);
            if (nx_kctx_transpose(c->k, NX_ENG_PE, &pd, &src, err) != 0) return -1;
        }
    }
    return 0;
}

static int rows_t_copy(fa_ctx *c, uint32_t w, int perm, uint32_t set, nx_tile *const dst_dd[2], nx_error *err) {
    const uint32_t P = c->P;
    for (uint32_t dd = 0; dd < c->nd; dd++) {
        uint32_t dc = dchunk(c, dd);
        const nx_tile *ps = &c->kt_ps[set][dd], *dst = dst_dd[dd];
        nx_operand from = fa_view(ps, c->dt, dc, 0, w), to = fa_view(dst, c->dt, dc, 0, w);
        if (perm) {
            const int32_t fs[2] = {(int32_t)P, 1}, ts[2] = {1, 4};
            const uint32_t cn[2] = {4, P};
            from = nx_tile_view(ps, c->dt, 0, dc, 0, 2, fs, cn);
            to = nx_tile_view(dst, c->dt, 0, dc, 0, 2, ts, cn);
        }
        if (nx_kctx_tensor_copy(c->k, fa_copy_engine(c, w), &to, &from, err) != 0) return -1;
    }
    return 0;
}

static int rows_t(fa_ctx *c, const nx_tile *src_sb, uint32_t w, int perm, nx_tile *const dst_dd[2], nx_error *err) {
    const uint32_t set = (uint32_t)(c->nrt++ % c->nkt);
    return rows_t_pe(c, src_sb, w, set, err) != 0 ? -1 : rows_t_copy(c, w, perm, set, dst_dd, err);
}

/* K^T of a loaded block (key order in kt_sb): the transposes, then
 * (fa_block_kt_copy, emitted later) the copies out of PSUM, so VectorE
 * and ScalarE do not reach a copy before the PE has reached its
 * transposes. */
int fa_block_kt(fa_ctx *c, uint64_t bi, const fa_block *bl, nx_error *err) {
    const uint32_t set = (uint32_t)(c->nrt++ % c->nkt);
    c->kt_set[bi % FA_KTBUFS] = set;
    return rows_t_pe(c, &c->k_sb[bi % FA_KBUFS], bl->w, set, err);
}

int fa_block_kt_copy(fa_ctx *c, uint64_t bi, const fa_block *bl, nx_error *err) {
    nx_tile *dst[2] = {&c->kt_sb[bi % FA_KTBUFS][0], &c->kt_sb[bi % FA_KTBUFS][1]};
    return rows_t_copy(c, bl->w, bl->perm, c->kt_set[bi % FA_KTBUFS], dst, err);
}

/* A unit's query rows in groups of FA_QG tiles, each group loaded like a
 * key block (a full group of 512 rows permuted: 4 D contiguous elements per
 * partition instead of D, four times the DMA rate), so a unit's Q arrives
 * in a quarter of the time and its Q^T takes one PSUM round trip per group
 * and D-chunk rather than one per tile. Groups whose tiles see no key are
 * not loaded. */
static int q_group(const fa_ctx *c, const fa_unit *u, uint32_t k, fa_block *qb) {
    const nx_attention_params *p = c->p;
    uint32_t nt = u->nt - k * FA_QG < FA_QG ? u->nt - k * FA_QG : FA_QG, any = 0;
    for (uint32_t g = k * FA_QG; g < k * FA_QG + nt; g++) {
        fa_tile ft;
        fa_tile_at(c, u->t0 + g, &ft);
        any |= ft.lo < ft.hi;
    }
    uint64_t r0 = (u->t0 + (uint64_t)k * FA_QG) * c->P, w = (uint64_t)nt * c->P;
    if (r0 + w > p->Sq) w = p->Sq - r0;
    *qb = (fa_block){.c0 = (int64_t)r0, .w = (uint32_t)w, .perm = w == (uint64_t)FA_QG * c->P};
    return any;
}

int fa_unit_load(fa_ctx *c, const fa_unit *u, nx_error *err) {
    const nx_attention_params *p = c->p;
    uint64_t base = fa_head_base(c, c->q, u->b, u->h, p->Hq, p->Sq);
    for (uint32_t k = 0; k * FA_QG < u->nt; k++) {
        fa_block qb;
        if (q_group(c, u, k, &qb) && load_rows(c, &c->q_sb[u->par][k], base, &qb, err) != 0) return -1;
    }
    if (!p->sink) return 0;
    for (uint32_t g = 0; g < u->nt; g++) {
        fa_tile ft;
        fa_tile_at(c, u->t0 + g, &ft);
        if (ft.lo >= ft.hi) continue;
        nx_operand sk = fa_col(&c->st[u->par][g], ft.n, ST_SINK);
        nx_operand hs = nx_ap_hbm_rows(NX_DT_FP32, c->sink->hbm_offset + u->h * 4, ft.n, 0, 1);
        if (nx_rows_load(&c->r, &sk, &hs, err) != 0) return -1;
    }
    return 0;
}

/* Q^T per group and D-chunk, the running max initialised (-sink or -1e30
 * negated), and the zero rows of tiles that see no key. */
int fa_unit_begin(fa_ctx *c, const fa_unit *u, nx_error *err) {
    const nx_attention_params *p = c->p;
    for (uint32_t k = 0; k * FA_QG < u->nt; k++) {
        fa_block qb;
        nx_tile *dst[2] = {&c->qt[u->par][k][0], &c->qt[u->par][k][1]};
        if (q_group(c, u, k, &qb) && rows_t(c, &c->q_sb[u->par][k], qb.w, qb.perm, dst, err) != 0)
            return -1;
    }
    for (uint32_t g = 0; g < u->nt; g++) {
        fa_tile ft;
        fa_tile_at(c, u->t0 + g, &ft);
        if (ft.lo >= ft.hi) {
            if (fa_tile_end(c, u, g, -1, err) != 0) return -1;
            continue;
        }
        nx_operand nm = fa_col(&c->st[u->par][g], ft.n, ST_NM), l = fa_col(&c->st[u->par][g], ft.n, ST_L);
        if (nx_kctx_memset(c->k, NX_ENG_POOL, &l, 0.0, err) != 0) return -1;
        if (p->sink) {
            nx_operand sk = fa_col(&c->st[u->par][g], ft.n, ST_SINK), m1 = nx_imm(-1.0, NX_DT_FP32);
            if (nx_kctx_tensor_scalar(c->k, NX_ENG_DVE, &nm, &sk, NX_ALU_MULTIPLY, &m1, NX_ALU_BYPASS, NULL, err) != 0)
                return -1;
        } else if (nx_kctx_memset(c->k, NX_ENG_DVE, &nm, 1e30, err) != 0) {
            return -1;
        }
    }
    return 0;
}

static void step_tile(const fa_ctx *c, const fa_plan *pl, const fa_step *s, const fa_unit **u, fa_tile *ft) {
    *u = &pl->units[s->unit];
    fa_tile_at(c, (*u)->t0 + s->g, ft);
}

/* S = Q K^T over the step's columns, plus the masks on the PE. */
int fa_scores(fa_ctx *c, const fa_plan *pl, const fa_step *s, nx_error *err) {
    nx_kctx *k = c->k;
    const nx_attention_params *p = c->p;
    const fa_unit *u;
    fa_tile ft;
    step_tile(c, pl, s, &u, &ft);
    const fa_block *bl = &pl->blocks[s->block];
    const uint32_t n = ft.n;
    const nx_tile *sp = &c->s_ps[(s - pl->steps) % c->nS];
    nx_operand S = fa_view(sp, NX_DT_FP32, n, 0, s->wa);
    for (uint32_t dd = 0; dd < c->nd; dd++) {
        uint32_t dc = dchunk(c, dd);
        nx_operand st = fa_view(&c->qt[u->par][s->g / FA_QG][dd], c->dt, dc, (uint64_t)(s->g % FA_QG) * c->P, n);
        nx_operand mv = fa_view(&c->kt_sb[s->block % FA_KTBUFS][dd], c->dt, dc, s->a_al, s->wa);
        if (nx_kctx_load_stationary(k, &st, err) != 0 || nx_kctx_multiply_moving(k, &S, &mv, dd > 0, err) != 0)
            return -1;
    }
    /* the causal triangle starts at the diagonal of row 0; the window
     * mask's 128 fully masked columns end where row 0's window starts */
    const int64_t a = s->a_al, b = (int64_t)s->a_al + s->wa;
    struct { const nx_tile *t; int64_t start, width; int on; } m[2] = {
        {&c->um, ft.pos0 - bl->c0, c->P, p->causal},
        {&c->lm, ft.pos0 - (int64_t)p->window + 1 - bl->c0 - c->P, 2 * (int64_t)c->P, p->window > 0},
    };
    int ident = 0;
    for (int i = 0; i < 2; i++) {
        if (!m[i].on) continue;
        int64_t x0 = m[i].start > a ? m[i].start : a, x1 = m[i].start + m[i].width < b ? m[i].start + m[i].width : b;
        if (x0 >= x1) continue;
        if (!ident) {
            nx_operand id = fa_view(&c->ident, NX_DT_BF16, n, 0, n);
            if (nx_kctx_load_stationary(k, &id, err) != 0) return -1;
            ident = 1;
        }
        nx_operand mv = fa_view(m[i].t, NX_DT_BF16, n, (uint64_t)(x0 - m[i].start), (uint32_t)(x1 - x0));
        nx_operand dst = fa_view(sp, NX_DT_FP32, n, (uint64_t)(x0 - a), (uint32_t)(x1 - x0));
        if (nx_kctx_multiply_moving(k, &dst, &mv, 1, err) != 0) return -1;
    }
    return 0;
}

static nx_attn_step softmax_of(const fa_ctx *c, const fa_plan *pl, const fa_step *s, uint32_t n) {
    const fa_unit *u = &pl->units[s->unit];
    const nx_tile *st = &c->st[u->par][s->g];
    uint64_t si = (uint64_t)(s - pl->steps);
    return (nx_attn_step){
        .s = fa_view(&c->s_ps[si % c->nS], NX_DT_FP32, n, 0, s->wa),
        .scale = c->p->scale,
        .negmax = fa_col(st, n, ST_NEGMAX),
        .nm_old = fa_col(st, n, s->nm_old),
        .nm_new = fa_col(st, n, s->nm_new),
        .alpha = fa_col(st, n, s->alpha),
        .p = fa_view(&c->p_sb[si % FA_RING], c->dt, n, s->a_al, s->wa),
        .rowsum = fa_col(st, n, s->rs),
        .acc = NULL, /* rescaled later, after the tile's previous P V */
        .first = 0,  /* alpha also on the first step: exp(-inf-ish) = 0 for l */
        .nm_on_pool = 0,
    };
}

/* The statistics half of the online-softmax step (DVE) ... */
int fa_softmax_stats(fa_ctx *c, const fa_plan *pl, const fa_step *s, nx_error *err) {
    const fa_unit *u;
    fa_tile ft;
    step_tile(c, pl, s, &u, &ft);
    nx_attn_step st = softmax_of(c, pl, s, ft.n);
    c->dve_ns += (double)s->wa / 0.96;
    return nx_attn_softmax_max(c->k, &st, err);
}

int fa_softmax_nm(fa_ctx *c, const fa_plan *pl, const fa_step *s, nx_error *err) {
    const fa_unit *u;
    fa_tile ft;
    step_tile(c, pl, s, &u, &ft);
    nx_attn_step st = softmax_of(c, pl, s, ft.n);
    c->dve_ns += 64 / 0.96;
    return nx_attn_softmax_nm(c->k, &st, err);
}

/* ... and its exponentials (ACT). */
int fa_softmax_exp(fa_ctx *c, const fa_plan *pl, uint64_t si, nx_error *err) {
    const fa_step *s = &pl->steps[si];
    const fa_unit *u;
    fa_tile ft;
    step_tile(c, pl, s, &u, &ft);
    nx_attn_step st = softmax_of(c, pl, s, ft.n);
    const nx_tile *pb = &c->p_sb[si % FA_RING];
    if (pl->blocks[s->block].perm) { /* the P^T chunks read all 512 columns: zero the others */
        nx_operand z0 = fa_view(pb, c->dt, ft.n, 0, s->a_al), z1 = fa_view(pb, c->dt, ft.n, s->a_al + s->wa, 0);
        uint32_t rest = FA_BK - s->a_al - s->wa;
        if (rest) z1 = fa_view(pb, c->dt, ft.n, s->a_al + s->wa, rest);
        if ((s->a_al && nx_kctx_memset(c->k, NX_ENG_POOL, &z0, 0.0, err) != 0) ||
            (rest && nx_kctx_memset(c->k, NX_ENG_POOL, &z1, 0.0, err) != 0))
            return -1;
    }
    /* the row sum on GpSimd from the rounded P in SBUF, not ScalarE's
     * accumulate (64 more ACT cycles a step on the busiest engine pair:
     * 1x2x4096x128 causal 155.8 -> 151.2 us) */
    const nx_operand rowsum = st.rowsum;
    st.rowsum.kind = NX_OPK_NONE;
    c->act_ns += ((double)s->wa + 64) / 1.2;
    if (nx_attn_softmax_exp(c->k, &st, err) != 0) return -1;
    nx_insn red = nx_insn_make(NX_OP_TENSOR_REDUCE);
    red.alu0 = NX_ALU_ADD;
    red.iparam[0] = 1;
    red.op[0] = rowsum;
    red.op[1] = st.p;
    if (nx_kctx_emit(c->k, NX_ENG_POOL, &red, err) != 0) return -1;
    st.rowsum = rowsum;
    /* l = l alpha + the step's row sum, on GpSimd */
    const nx_tile *t = &c->st[u->par][s->g];
    nx_operand l = fa_col(t, ft.n, ST_L), al = fa_col(t, ft.n, s->alpha);
    return nx_kctx_scalar_tensor_tensor(c->k, NX_ENG_POOL, &l, &l, NX_ALU_MULTIPLY, &al, NX_ALU_ADD, &st.rowsum, err);
}

/* The P^T chunks of a step: a permuted block's chunk j is P's columns
 * j, j + 4, ... (the keys of V's slice j); natural chunks are the step's
 * 128-column pieces. */
typedef struct fa_chunks {
    uint32_t first, count; /* block chunks */
} fa_chunks;

static fa_chunks chunks_of(const fa_ctx *c, const fa_plan *pl, const fa_step *s) {
    if (pl->blocks[s->block].perm) return (fa_chunks){0, 4};
    return (fa_chunks){s->a_al / c->P, (s->wa + c->P - 1) / c->P};
}

static uint32_t chunk_rows(const fa_ctx *c, const fa_plan *pl, const fa_step *s, uint32_t ch) {
    if (pl->blocks[s->block].perm) return c->P;
    uint32_t end = s->a_al + s->wa;
    return end - ch * c->P < c->P ? end - ch * c->P : c->P;
}

int fa_transpose_p(fa_ctx *c, const fa_plan *pl, uint64_t si, nx_error *err) {
    const fa_step *s = &pl->steps[si];
    const fa_unit *u;
    fa_tile ft;
    step_tile(c, pl, s, &u, &ft);
    const uint32_t P = c->P;
    const fa_chunks ch = chunks_of(c, pl, s);
    const int perm = pl->blocks[s->block].perm;
    for (uint32_t i = 0; i < ch.count; i++) {
        uint32_t cc = ch.first + i, cw = chunk_rows(c, pl, s, cc);
        const int32_t stride = perm ? 4 : 1;
        nx_operand src = nx_tile_view(&c->p_sb[si % FA_RING], c->dt, 0, ft.n, perm ? cc : (uint64_t)cc * P, 1, &stride, &cw);
        nx_operand dst = fa_view(&c->pt_ps[si % 2], c->dt, cw, (uint64_t)i * P, ft.n);
        if (nx_kctx_transpose(c->k, NX_ENG_PE, &dst, &src, err) != 0) return -1;
    }
    return 0;
}

int fa_copy_pt(fa_ctx *c, const fa_plan *pl, uint64_t si, nx_error *err) {
    const fa_step *s = &pl->steps[si];
    const fa_unit *u;
    fa_tile ft;
    step_tile(c, pl, s, &u, &ft);
    const uint32_t P = c->P, n = ft.n;
    const fa_chunks ch = chunks_of(c, pl, s);
    const uint32_t nch = ch.count, last = chunk_rows(c, pl, s, ch.first + nch - 1), full = last == P ? nch : nch - 1;
    const nx_tile *ps = &c->pt_ps[si % 2], *pt = &c->pt_sb[si % FA_RING];
    /* one copy per 128-key chunk, each to the engine with less work so far:
     * finer than a whole step's copy on one engine, it keeps DVE and ACT
     * level (measured on the model: 1x2x4096x128 causal 161.6 us with one
     * copy a step, 166.1 with two, 155.8 with one a chunk) */
    nx_engine ce = NX_ENG_DVE;
    for (uint32_t g0 = 0; g0 < full; g0++) {
        const uint32_t gn = 1;
        const int32_t str[2] = {(int32_t)P, 1};
        const uint32_t cn[2] = {gn, n};
        ce = fa_copy_engine(c, (uint64_t)gn * n);
        nx_operand from = nx_tile_view(ps, c->dt, 0, P, (uint64_t)g0 * P, 2, str, cn), to = nx_tile_view(pt, c->dt, 0, P, (uint64_t)g0 * P, 2, str, cn);
        if (nx_kctx_tensor_copy(c->k, ce, &to, &from, err) != 0) return -1;
    }
    if (nch > full) {
        if (!full) ce = fa_copy_engine(c, n);
        uint32_t cw = last;
        nx_operand from = fa_view(ps, c->dt, cw, (uint64_t)full * P, n), to = fa_view(pt, c->dt, cw, (uint64_t)full * P, n);
        if (nx_kctx_tensor_copy(c->k, ce, &to, &from, err) != 0) return -1;
    }
    return 0;
}

/* o *= alpha (ACT), after the tile's previous P V and before this one's. */
int fa_rescale(fa_ctx *c, const fa_plan *pl, const fa_step *s, nx_error *err) {
    if (s->first) return 0;
    const fa_unit *u;
    fa_tile ft;
    step_tile(c, pl, s, &u, &ft);
    nx_operand acc = fa_view(&c->o_ps[s->g], NX_DT_FP32, ft.n, 0, (uint32_t)c->p->D);
    nx_insn r = nx_insn_make(NX_OP_ACTIVATION);
    r.func = NX_ACT_IDENTITY;
    r.op[0] = acc, r.op[1] = acc, r.op[2] = fa_col(&c->st[u->par][s->g], ft.n, s->alpha);
    r.op[3] = nx_imm(0.0, NX_DT_FP32);
    c->act_ns += (double)(c->p->D > 64 ? c->p->D : 64) / 1.2;
    return nx_kctx_emit(c->k, NX_ENG_ACT, &r, err);
}

/* o (+)= P^T x V per chunk. */
int fa_pv(fa_ctx *c, const fa_plan *pl, uint64_t si, nx_error *err) {
    const fa_step *s = &pl->steps[si];
    const fa_unit *u;
    fa_tile ft;
    step_tile(c, pl, s, &u, &ft);
    const uint32_t P = c->P, D = (uint32_t)c->p->D;
    const fa_chunks ch = chunks_of(c, pl, s);
    nx_operand acc = fa_view(&c->o_ps[s->g], NX_DT_FP32, ft.n, 0, D);
    for (uint32_t i = 0; i < ch.count; i++) {
        uint32_t cc = ch.first + i, cw = chunk_rows(c, pl, s, cc);
        nx_operand st = fa_view(&c->pt_sb[si % FA_RING], c->dt, cw, (uint64_t)i * P, ft.n);
        nx_operand mv = fa_view(&c->v_sb[s->block % FA_VBUFS], c->dt, cw, (uint64_t)cc * D, D);
        if (nx_kctx_load_stationary(c->k, &st, err) != 0 ||
            nx_kctx_multiply_moving(c->k, &acc, &mv, !s->first || i > 0, err) != 0)
            return -1;
    }
    return 0;
}

static int store_one(fa_ctx *c, nx_error *err) {
    const nx_attention_params *p = c->p;
    const uint64_t i = c->nstored++;
    const struct fa_pending *pd = &c->pend[i % FA_RING];
    const fa_unit *u = pd->u;
    fa_tile ft;
    fa_tile_at(c, u->t0 + pd->g, &ft);
    nx_operand out = fa_view(&c->out_sb[i % FA_RING], c->dt, ft.n, 0, (uint32_t)p->D);
    uint64_t base = fa_head_base(c, c->out, u->b, u->h, p->Hq, p->Sq);
    nx_operand hd = nx_rows_hbm(c->dt, base, ft.r0, ft.n, p->D);
    if (c->cache && c->cache->out_pitch) { /* the token layout (the layer's o projection reads it) */
        const uint64_t W = c->cache->out_pitch;
        hd = nx_ap_hbm_rows(c->dt, c->out->hbm_offset + ((u->b * p->Sq + ft.r0) * W + u->h * p->D) * c->es, ft.n,
                            (int32_t)W, (uint32_t)p->D);
    }
    return nx_rows_store(&c->r, &hd, &out, err);
}

int fa_stores_due(fa_ctx *c, uint64_t slot, nx_error *err) {
    while (c->nstored < c->nouts && c->pend[c->nstored % FA_RING].due <= slot)
        if (store_one(c, err) != 0) return -1;
    return 0;
}

int fa_tile_end(fa_ctx *c, const fa_unit *u, uint32_t g, int nm_col, nx_error *err) {
    const nx_attention_params *p = c->p;
    fa_tile ft;
    fa_tile_at(c, u->t0 + g, &ft);
    const uint32_t n = ft.n, D = (uint32_t)p->D;
    /* the ring slot's previous rows go out before they are overwritten */
    if (c->nouts - c->nstored == FA_RING && store_one(c, err) != 0) return -1;
    uint64_t i = c->nouts++;
    const nx_tile *ob = &c->out_sb[i % FA_RING];
    nx_operand out = fa_view(ob, c->dt, n, 0, D);
    if (nm_col < 0) {
        if (nx_kctx_memset(c->k, NX_ENG_POOL, &out, 0.0, err) != 0) return -1;
    } else {
        const nx_tile *st = &c->st[u->par][g];
        nx_operand acc = fa_view(&c->o_ps[g], NX_DT_FP32, n, 0, D), l = fa_col(&c->st[u->par][g], n, ST_L);
        nx_operand sk = fa_col(st, n, ST_SINK), nm = fa_col(st, n, (uint32_t)nm_col);
        c->act_ns += ((double)D + 32) / 1.2;
        if (nx_attn_normalize(c->k, &acc, &l, p->sink ? &sk : NULL, &nm, &c->norm_sb[i % FA_RING], &out, err) != 0)
            return -1;
    }
    c->pend[i % FA_RING] = (struct fa_pending){u, g, c->slot + FA_STORE_LAG};
    return 0;
}
