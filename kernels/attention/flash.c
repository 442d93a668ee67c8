/* attention: flash attention forward (context encoding) on the PE, after
 * FlashAttention (Dao et al., 2022, Algorithm 1) and the NKI flash
 * attention kernel (aws-neuron-sdk nki/kernels/attention.py, flash_fwd):
 * query tiles of up to 128 rows on the partitions, key blocks of up to 512
 * streamed past them, S = Q K^T on the PE into one PSUM bank, the online
 * softmax (kernels/attention/softmax_step.h) in fp32 on VectorE/ScalarE,
 * exp on ScalarE, P rounded to the input dtype and transposed on the PE for
 * the P V matmul, the output divided by the running sum at the end. Past
 * the public kernel: D up to 256 (Q K^T in two contraction passes, P V in
 * one pass of N = D + 1), grouped-query heads, sliding windows, sinks,
 * prefix-cache query positions, ragged lengths, and the row sum taken from
 * the P V matmul through a ones column of V (the sum of the rounded P).
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
 * Work: (batch, head, group of up to 8 query tiles) units; each unit
 * streams its key blocks once for its tiles (K and V loads, K^T by PE
 * transposes), so SBUF use is bounded by the tile and block sizes, not by
 * the lengths. Units are dealt to the VNC grid's cores by a greedy balance
 * of their key-block counts (causal units differ in cost). Per block and
 * tile, two stages are software-pipelined so the PE transposes one tile's
 * P while the next tile's scores are reduced:
 *   A  PE   S = Q^T-stationary x K^T (+ mask)        DVE max, nm   ACT exp
 *   B  PE   P^T chunks -> PSUM; DVE/ACT copy -> SBUF; PE o += P^T x [V | 1] */
#include <stdlib.h>
#include <string.h>

#include "flash.h"
#include "softmax_step.h"

#include "kernels/norms/rows.h"

#define FA_BK 512u
#define FA_GMAX 8u
#define FA_BUFS 3u
#define FA_BIG 3.0e38

typedef struct fa_tile {
    uint64_t b, h, r0;
    uint32_t n;
    int64_t lo, hi; /* the key range of the tile's rows */
    int64_t pos0;   /* position of row 0 */
    uint32_t nmi;   /* current nm column */
    int started, pv_started;
    uint32_t steps_left;
} fa_tile;

typedef struct fa_ctx {
    nx_kctx *k;
    nx_rows r;
    const nx_attention_params *p;
    const nx_tensor_ref *q, *kk, *v, *sink, *out;
    nx_dtype dt;
    uint32_t P, nd, G;
    uint64_t es;
    nx_tile ident, um, lm;
    nx_tile k_sb[FA_BUFS], v_sb[FA_BUFS], kt_sb[FA_BUFS][2], p_sb[FA_BUFS], pt_sb[FA_BUFS];
    nx_tile s_ps[2], pt_ps[2], kt_ps[2];
    nx_tile q_sb[2], out_sb[2], norm_sb[2];
    nx_tile qt[FA_GMAX][2], st[FA_GMAX], o_ps[FA_GMAX];
    uint64_t nsteps, nloads, nouts, ncopies;
} fa_ctx;

/* stats columns of st[g] */
enum { ST_NM0 = 0, ST_NM1 = 1, ST_NEGMAX = 2, ST_ALPHA0 = 3, ST_SINK = 4, ST_ALPHA1 = 5, ST_COLS = 8 };

static nx_operand col(const nx_tile *t, uint32_t n, uint32_t c) {
    const int32_t one = 1;
    const uint32_t c1 = 1;
    return nx_tile_view(t, NX_DT_FP32, 0, n, c, 1, &one, &c1);
}

static nx_operand view2(const nx_tile *t, nx_dtype as, uint32_t n, uint64_t off, uint32_t cols) {
    return nx_rows_view(t, as, n, off, cols);
}

static uint32_t dchunk(const fa_ctx *c, uint32_t dd) {
    uint32_t rest = (uint32_t)c->p->D - dd * c->P;
    return rest < c->P ? rest : c->P;
}

/* HBM rows [r0, r0 + n) of head `head` of a [B, H, S, D] tensor. */
static uint64_t head_base(const nx_tensor_ref *t, uint64_t b, uint64_t head, uint64_t H, uint64_t S, uint64_t D,
                          uint64_t es) {
    return t->hbm_offset + ((b * H + head) * S) * D * es;
}

/* One block's K (or V) rows [c0, c0 + w) into a [P, 4 chunks x cols] tile,
 * chunk c holding keys c0 + 128 c + partition. */
static int load_block(fa_ctx *c, const nx_tile *dst, uint32_t cols, uint64_t base, uint64_t c0, uint32_t w,
                      nx_error *err) {
    const uint64_t D = c->p->D;
    uint32_t full = w / c->P, tail = w % c->P;
    if (full) {
        const int32_t ds[2] = {(int32_t)cols, 1}, ss[2] = {(int32_t)(c->P * D), 1};
        const uint32_t cn[2] = {full, (uint32_t)D};
        nx_operand d = nx_tile_view(dst, c->dt, 0, c->P, 0, 2, ds, cn);
        nx_operand s = nx_ap(NX_OPK_HBM, c->dt, 0, c->P, (int32_t)D, base + c0 * D * c->es, 2, ss, cn);
        if (nx_rows_load(&c->r, &d, &s, err) != 0) return -1;
    }
    if (tail) {
        nx_operand d = view2(dst, c->dt, tail, (uint64_t)full * cols, (uint32_t)D);
        nx_operand s = nx_ap_hbm_rows(c->dt, base + (c0 + (uint64_t)full * c->P) * D * c->es, tail, (int32_t)D,
                                      (uint32_t)D);
        if (nx_rows_load(&c->r, &d, &s, err) != 0) return -1;
    }
    return 0;
}

/* K^T of a loaded block: per chunk and D-chunk a PE transpose into PSUM,
 * then one copy per D-chunk into kt (D-chunk rows x w keys). */
static int block_kt(fa_ctx *c, const nx_tile *ksb, nx_tile kt[2], uint32_t w, nx_error *err) {
    uint32_t nch = (w + c->P - 1) / c->P;
    for (uint32_t dd = 0; dd < c->nd; dd++) {
        uint32_t dc = dchunk(c, dd);
        const nx_tile *ps = &c->kt_ps[dd];
        for (uint32_t ch = 0; ch < nch; ch++) {
            uint32_t cw = w - ch * c->P < c->P ? w - ch * c->P : c->P;
            nx_operand src = view2(ksb, c->dt, cw, (uint64_t)ch * c->p->D + dd * c->P, dc);
            nx_operand dst = view2(ps, c->dt, dc, (uint64_t)ch * c->P, cw);
            if (nx_kctx_transpose(c->k, NX_ENG_PE, &dst, &src, err) != 0) return -1;
        }
        nx_operand from = view2(ps, c->dt, dc, 0, w), to = view2(&kt[dd], c->dt, dc, 0, w);
        if (nx_kctx_tensor_copy(c->k, (c->ncopies++ % 2) ? NX_ENG_ACT : NX_ENG_DVE, &to, &from, err) != 0)
            return -1;
    }
    return 0;
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
    const int32_t neg = -1, pos = 1;
    const uint32_t n1 = P, n2 = 2 * P;
    nx_insn a = nx_insn_make(NX_OP_AFFINE_SELECT);
    a.alu0 = NX_ALU_IS_EQUAL; /* identity: p - e == 0 */
    a.op[0] = id, a.op[1] = nx_pattern(0, 1, P, 1, &neg, &n1), a.op[2] = id, a.op[3] = nx_imm(0.0, NX_DT_BF16);
    if (nx_kctx_emit(c->k, NX_ENG_POOL, &a, err) != 0) return -1;
    a.alu0 = NX_ALU_IS_GE; /* causal: key t visible iff t <= row */
    a.op[0] = um, a.op[1] = nx_pattern(0, 1, P, 1, &neg, &n1), a.op[2] = um, a.op[3] = nx_imm(fill, NX_DT_BF16);
    if (nx_kctx_emit(c->k, NX_ENG_POOL, &a, err) != 0) return -1;
    a.op[0] = lm, a.op[1] = nx_pattern(-(int64_t)P, -1, P, 1, &pos, &n2), a.op[2] = lm; /* t - 128 >= row */
    return nx_kctx_emit(c->k, NX_ENG_POOL, &a, err);
}

static int alloc_all(fa_ctx *c, nx_error *err) {
    nx_kctx *k = c->k;
    const uint32_t P = c->P, D = (uint32_t)c->p->D;
    nx_dtype dt = c->dt;
    for (uint32_t i = 0; i < FA_BUFS; i++) {
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "k_block", dt, P, 4 * D, &c->k_sb[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "v_block", dt, P, 4 * (D + 1), &c->v_sb[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "p_block", dt, P, FA_BK, &c->p_sb[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "pt_block", dt, P, FA_BK, &c->pt_sb[i], err) != 0)
            return -1;
        for (uint32_t dd = 0; dd < c->nd; dd++)
            if (nx_kctx_alloc(k, NX_OPK_SBUF, "kt_block", dt, P, FA_BK, &c->kt_sb[i][dd], err) != 0) return -1;
        nx_operand ones = nx_tile_ap(&c->v_sb[i]); /* column D of each chunk stays 1 */
        if (nx_kctx_memset(k, NX_ENG_POOL, &ones, 1.0, err) != 0) return -1;
    }
    for (uint32_t i = 0; i < 2; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "q_rows", dt, P, D, &c->q_sb[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "out_rows", dt, P, D, &c->out_sb[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "row_sums", NX_DT_FP32, P, 2, &c->norm_sb[i], err) != 0)
            return -1;
    for (uint32_t g = 0; g < c->G; g++) {
        for (uint32_t dd = 0; dd < c->nd; dd++)
            if (nx_kctx_alloc(k, NX_OPK_SBUF, "q_t", dt, P, P, &c->qt[g][dd], err) != 0) return -1;
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "row_stats", NX_DT_FP32, P, ST_COLS, &c->st[g], err) != 0) return -1;
    }
    for (uint32_t i = 0; i < 2; i++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "scores", NX_DT_FP32, P, FA_BK, &c->s_ps[i], err) != 0) return -1;
    for (uint32_t i = 0; i < 2; i++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "p_t_psum", dt, P, FA_BK, &c->pt_ps[i], err) != 0) return -1;
    for (uint32_t dd = 0; dd < c->nd; dd++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "k_t_psum", dt, P, FA_BK, &c->kt_ps[dd], err) != 0) return -1;
    for (uint32_t g = 0; g < c->G; g++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "out_acc", NX_DT_FP32, P, D + 1, &c->o_ps[g], err) != 0) return -1;
    return 0;
}

/* How many o accumulators fit in PSUM beside the other tiles: a bump
 * allocator that never lets a tile of at most one bank straddle banks. */
static uint32_t group_size(const nx_geometry *g, nx_dtype dt, uint32_t nd, uint64_t D) {
    uint64_t bank = g->psum_bank_bytes ? g->psum_bank_bytes : g->psum_partition_bytes, at = 0;
    uint64_t sizes[5] = {FA_BK * 4, FA_BK * 4, FA_BK * nx_dtype_size(dt), FA_BK * nx_dtype_size(dt), 0};
    uint32_t ns = 4;
    for (uint32_t dd = 0; dd < nd; dd++) sizes[ns++] = FA_BK * nx_dtype_size(dt);
    for (uint32_t i = 0; i < ns; i++) {
        if (at / bank != (at + sizes[i] - 1) / bank) at = (at / bank + 1) * bank;
        at += sizes[i];
    }
    uint64_t o = (D + 1) * 4;
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

static void tile_at(const fa_ctx *c, uint64_t b, uint64_t h, uint64_t t, fa_tile *ft) {
    const nx_attention_params *p = c->p;
    memset(ft, 0, sizeof *ft);
    ft->b = b, ft->h = h, ft->r0 = t * c->P;
    ft->n = (uint32_t)(p->Sq - ft->r0 < c->P ? p->Sq - ft->r0 : c->P);
    int64_t lo0, hi0, lo1, hi1;
    nx_attention_keys(p, ft->r0, &lo0, &hi0);
    nx_attention_keys(p, ft->r0 + ft->n - 1, &lo1, &hi1);
    ft->lo = lo0, ft->hi = hi1;
    ft->pos0 = (int64_t)p->Skv - (int64_t)p->Sq + (int64_t)ft->r0;
}

/* Q^T of a tile (per D-chunk), its statistics initialised. */
static int tile_begin(fa_ctx *c, fa_tile *ft, uint32_t g, nx_error *err) {
    const nx_attention_params *p = c->p;
    const nx_tile *qs = &c->q_sb[c->nloads++ % 2];
    uint64_t base = head_base(c->q, ft->b, ft->h, p->Hq, p->Sq, p->D, c->es);
    nx_operand d = view2(qs, c->dt, ft->n, 0, (uint32_t)p->D);
    nx_operand s = nx_rows_hbm(c->dt, base, ft->r0, ft->n, p->D);
    if (nx_rows_load(&c->r, &d, &s, err) != 0) return -1;
    for (uint32_t dd = 0; dd < c->nd; dd++) {
        uint32_t dc = dchunk(c, dd);
        nx_operand src = view2(qs, c->dt, ft->n, dd * c->P, dc), ps = view2(&c->kt_ps[dd], c->dt, dc, 0, ft->n);
        nx_operand to = view2(&c->qt[g][dd], c->dt, dc, 0, ft->n);
        if (nx_kctx_transpose(c->k, NX_ENG_PE, &ps, &src, err) != 0 ||
            nx_kctx_tensor_copy(c->k, NX_ENG_DVE, &to, &ps, err) != 0)
            return -1;
    }
    nx_operand nm = col(&c->st[g], ft->n, ST_NM0);
    ft->nmi = ST_NM0;
    if (p->sink) {
        nx_operand sk = col(&c->st[g], ft->n, ST_SINK);
        nx_operand hs = nx_ap_hbm_rows(NX_DT_FP32, c->sink->hbm_offset + ft->h * 4, ft->n, 0, 1);
        nx_operand m1 = nx_imm(-1.0, NX_DT_FP32);
        if (nx_rows_load(&c->r, &sk, &hs, err) != 0 ||
            nx_kctx_tensor_scalar(c->k, NX_ENG_DVE, &nm, &sk, NX_ALU_MULTIPLY, &m1, NX_ALU_BYPASS, NULL, err) != 0)
            return -1;
        return 0;
    }
    return nx_kctx_memset(c->k, NX_ENG_DVE, &nm, 1e30, err);
}

typedef struct fa_step {
    uint32_t g, buf, jbuf;
    int64_t c0;    /* block start */
    uint32_t a_al; /* first block column computed (a multiple of 128) */
    uint32_t wa;   /* columns computed */
    uint32_t alpha; /* its alpha column (two, so stage B reads the step's own) */
} fa_step;

/* Stage A: scores, masks, the online-softmax step into p_sb[buf]. */
static int stage_a(fa_ctx *c, fa_tile *ft, fa_step *s, nx_error *err) {
    nx_kctx *k = c->k;
    const nx_attention_params *p = c->p;
    const uint32_t n = ft->n;
    nx_operand S = view2(&c->s_ps[s->buf % 2], NX_DT_FP32, n, 0, s->wa);
    for (uint32_t dd = 0; dd < c->nd; dd++) {
        uint32_t dc = dchunk(c, dd);
        nx_operand st = view2(&c->qt[s->g][dd], c->dt, dc, 0, n);
        nx_operand mv = view2(&c->kt_sb[s->jbuf][dd], c->dt, dc, s->a_al, s->wa);
        if (nx_kctx_load_stationary(k, &st, err) != 0 || nx_kctx_multiply_moving(k, &S, &mv, dd > 0, err) != 0)
            return -1;
    }
    /* mask regions, block-relative columns [x0, x1) of the mask tile from m0 */
    int64_t a = s->a_al, b = (int64_t)s->a_al + s->wa;
    struct { const nx_tile *t; int64_t start, width; int on; } m[2] = {
        {&c->um, ft->pos0 - s->c0, c->P, p->causal},
        {&c->lm, ft->pos0 - (int64_t)p->window + 1 - s->c0 - c->P, 2 * (int64_t)c->P, p->window > 0},
    };
    int ident_loaded = 0;
    for (int i = 0; i < 2; i++) {
        if (!m[i].on) continue;
        int64_t x0 = m[i].start > a ? m[i].start : a, x1 = m[i].start + m[i].width < b ? m[i].start + m[i].width : b;
        if (x0 >= x1) continue;
        if (!ident_loaded) {
            nx_operand id = view2(&c->ident, NX_DT_BF16, n, 0, n);
            if (nx_kctx_load_stationary(k, &id, err) != 0) return -1;
            ident_loaded = 1;
        }
        nx_operand mv = view2(m[i].t, NX_DT_BF16, n, (uint64_t)(x0 - m[i].start), (uint32_t)(x1 - x0));
        nx_operand dst = view2(&c->s_ps[s->buf % 2], NX_DT_FP32, n, (uint64_t)(x0 - a), (uint32_t)(x1 - x0));
        if (nx_kctx_multiply_moving(k, &dst, &mv, 1, err) != 0) return -1;
    }
    uint32_t nmo = ft->nmi, nmn = ft->nmi == ST_NM0 ? ST_NM1 : ST_NM0;
    s->alpha = nmn == ST_NM0 ? ST_ALPHA0 : ST_ALPHA1;
    nx_attn_step step = {
        .s = S,
        .scale = p->scale,
        .negmax = col(&c->st[s->g], n, ST_NEGMAX),
        .nm_old = col(&c->st[s->g], n, nmo),
        .nm_new = col(&c->st[s->g], n, nmn),
        .alpha = col(&c->st[s->g], n, s->alpha),
        .p = view2(&c->p_sb[s->buf % FA_BUFS], c->dt, n, 0, s->wa),
        .acc = NULL, /* rescaled in stage B, after the previous step's P V */
        .first = !ft->started,
    };
    if (nx_attn_softmax_step(k, &step, err) != 0) return -1;
    ft->nmi = nmn;
    ft->started = 1;
    return 0;
}

/* Stage B: P^T chunks on the PE, copied to SBUF, o += P^T x [V | 1]. */
static int stage_b(fa_ctx *c, fa_tile *ft, const fa_step *s, nx_error *err) {
    nx_kctx *k = c->k;
    const uint32_t n = ft->n, P = c->P, D = (uint32_t)c->p->D;
    const uint32_t nch = (s->wa + P - 1) / P, full = s->wa / P;
    const nx_tile *pb = &c->p_sb[s->buf % FA_BUFS], *ps = &c->pt_ps[s->buf % 2], *pt = &c->pt_sb[s->buf % FA_BUFS];
    for (uint32_t i = 0; i < nch; i++) {
        uint32_t cw = s->wa - i * P < P ? s->wa - i * P : P;
        nx_operand src = view2(pb, c->dt, n, (uint64_t)i * P, cw), dst = view2(ps, c->dt, cw, (uint64_t)i * P, n);
        if (nx_kctx_transpose(k, NX_ENG_PE, &dst, &src, err) != 0) return -1;
    }
    nx_engine ce = (c->ncopies++ % 2) ? NX_ENG_ACT : NX_ENG_DVE;
    if (full) {
        const int32_t str[2] = {(int32_t)P, 1};
        const uint32_t cn[2] = {full, n};
        nx_operand from = nx_tile_view(ps, c->dt, 0, P, 0, 2, str, cn), to = nx_tile_view(pt, c->dt, 0, P, 0, 2, str, cn);
        if (nx_kctx_tensor_copy(k, ce, &to, &from, err) != 0) return -1;
    }
    if (nch > full) {
        uint32_t cw = s->wa - full * P;
        nx_operand from = view2(ps, c->dt, cw, (uint64_t)full * P, n), to = view2(pt, c->dt, cw, (uint64_t)full * P, n);
        if (nx_kctx_tensor_copy(k, ce, &to, &from, err) != 0) return -1;
    }
    nx_operand acc = view2(&c->o_ps[s->g], NX_DT_FP32, n, 0, D + 1);
    if (ft->pv_started) {
        nx_insn r = nx_insn_make(NX_OP_ACTIVATION);
        r.func = NX_ACT_IDENTITY;
        r.op[0] = acc, r.op[1] = acc, r.op[2] = col(&c->st[s->g], n, s->alpha), r.op[3] = nx_imm(0.0, NX_DT_FP32);
        if (nx_kctx_emit(k, NX_ENG_ACT, &r, err) != 0) return -1;
    }
    for (uint32_t i = 0; i < nch; i++) {
        uint32_t cw = s->wa - i * P < P ? s->wa - i * P : P;
        uint32_t vch = s->a_al / P + i;
        nx_operand st = view2(pt, c->dt, cw, (uint64_t)i * P, n);
        nx_operand mv = view2(&c->v_sb[s->jbuf], c->dt, cw, (uint64_t)vch * (D + 1), D + 1);
        if (nx_kctx_load_stationary(k, &st, err) != 0 ||
            nx_kctx_multiply_moving(k, &acc, &mv, ft->pv_started || i > 0, err) != 0)
            return -1;
    }
    ft->pv_started = 1;
    return 0;
}

/* The tile's rows: o / l (0 for a tile that saw no key), stored. */
static int tile_end(fa_ctx *c, fa_tile *ft, uint32_t g, nx_error *err) {
    const nx_attention_params *p = c->p;
    const uint32_t n = ft->n, D = (uint32_t)p->D;
    uint64_t i = c->nouts++;
    const nx_tile *ob = &c->out_sb[i % 2];
    nx_operand out = view2(ob, c->dt, n, 0, D);
    if (!ft->pv_started) {
        if (nx_kctx_memset(c->k, NX_ENG_DVE, &out, 0.0, err) != 0) return -1;
    } else {
        nx_operand acc = view2(&c->o_ps[g], NX_DT_FP32, n, 0, D), l = view2(&c->o_ps[g], NX_DT_FP32, n, D, 1);
        nx_operand sk = col(&c->st[g], n, ST_SINK), nm = col(&c->st[g], n, ft->nmi);
        if (nx_attn_normalize(c->k, &acc, &l, p->sink ? &sk : NULL, &nm, &c->norm_sb[i % 2], &out, err) != 0)
            return -1;
    }
    uint64_t base = head_base(c->out, ft->b, ft->h, p->Hq, p->Sq, p->D, c->es);
    nx_operand hd = nx_rows_hbm(c->dt, base, ft->r0, n, p->D);
    return nx_rows_store(&c->r, &hd, &out, err);
}

/* One unit: tiles [t0, t0 + nt) of head h of batch b. */
static int run_unit(fa_ctx *c, uint64_t b, uint64_t h, uint64_t t0, uint32_t nt, nx_error *err) {
    const nx_attention_params *p = c->p;
    fa_tile ft[FA_GMAX];
    int64_t glo = INT64_MAX, ghi = INT64_MIN;
    for (uint32_t g = 0; g < nt; g++) {
        tile_at(c, b, h, t0 + g, &ft[g]);
        if (ft[g].lo < ft[g].hi) {
            if (ft[g].lo < glo) glo = ft[g].lo;
            if (ft[g].hi > ghi) ghi = ft[g].hi;
            if (tile_begin(c, &ft[g], g, err) != 0) return -1;
        }
    }
    const uint64_t hk = h / (p->Hq / p->Hkv);
    const uint64_t kbase = head_base(c->kk, b, hk, p->Hkv, p->Skv, p->D, c->es);
    const uint64_t vbase = head_base(c->v, b, hk, p->Hkv, p->Skv, p->D, c->es);
    uint64_t nblocks = glo < ghi ? ((uint64_t)(ghi - glo) + FA_BK - 1) / FA_BK : 0;
    /* steps per tile, for its end */
    for (uint32_t g = 0; g < nt; g++)
        for (uint64_t j = 0; j < nblocks; j++) {
            int64_t c0 = glo + (int64_t)(j * FA_BK), c1 = c0 + FA_BK < ghi ? c0 + FA_BK : ghi;
            if (ft[g].lo < c1 && ft[g].hi > c0) ft[g].steps_left++;
        }
    fa_step pend;
    int have_pend = 0;
    uint64_t jb0 = c->nsteps; /* block buffers rotate with a counter of their own */
    for (uint64_t j = 0; j <= nblocks; j++) {
        /* loads of block j (issued one block ahead of its use) */
        if (j < nblocks) {
            int64_t c0 = glo + (int64_t)(j * FA_BK);
            uint32_t w = (uint32_t)((ghi - c0) < FA_BK ? ghi - c0 : FA_BK);
            uint32_t jbuf = (uint32_t)((jb0 + j) % FA_BUFS);
            if (load_block(c, &c->k_sb[jbuf], (uint32_t)p->D, kbase, (uint64_t)c0, w, err) != 0 ||
                load_block(c, &c->v_sb[jbuf], (uint32_t)p->D + 1, vbase, (uint64_t)c0, w, err) != 0)
                return -1;
        }
        if (j == 0) continue;
        uint64_t jj = j - 1;
        int64_t c0 = glo + (int64_t)(jj * FA_BK);
        uint32_t w = (uint32_t)((ghi - c0) < FA_BK ? ghi - c0 : FA_BK);
        uint32_t jbuf = (uint32_t)((jb0 + jj) % FA_BUFS);
        if (block_kt(c, &c->k_sb[jbuf], c->kt_sb[jbuf], w, err) != 0) return -1;
        for (uint32_t g = 0; g < nt; g++) {
            fa_tile *t = &ft[g];
            if (!(t->lo < c0 + (int64_t)w && t->hi > c0)) continue;
            int64_t a = (t->lo > c0 ? t->lo : c0) - c0, e = (t->hi < c0 + (int64_t)w ? t->hi : c0 + (int64_t)w) - c0;
            fa_step s = {.g = g, .buf = (uint32_t)(c->nsteps++ % 6), .jbuf = jbuf, .c0 = c0};
            s.a_al = (uint32_t)(a / c->P * c->P);
            s.wa = (uint32_t)(e - s.a_al);
            if (stage_a(c, t, &s, err) != 0) return -1;
            if (have_pend) {
                fa_tile *pt = &ft[pend.g];
                if (stage_b(c, pt, &pend, err) != 0) return -1;
                if (--pt->steps_left == 0 && tile_end(c, pt, pend.g, err) != 0) return -1;
            }
            pend = s, have_pend = 1;
        }
    }
    if (have_pend) {
        fa_tile *pt = &ft[pend.g];
        if (stage_b(c, pt, &pend, err) != 0) return -1;
        if (--pt->steps_left == 0 && tile_end(c, pt, pend.g, err) != 0) return -1;
    }
    for (uint32_t g = 0; g < nt; g++)
        if (!(ft[g].lo < ft[g].hi) && tile_end(c, &ft[g], g, err) != 0) return -1;
    return 0;
}

/* Units dealt to the cores: the next unit (in order) to the core with the
 * least work so far, work = key columns of its tiles (ties to core 0). */
static uint64_t unit_cost(const fa_ctx *c, uint64_t t0, uint32_t nt) {
    uint64_t w = 0;
    for (uint32_t g = 0; g < nt; g++) {
        fa_tile ft;
        tile_at(c, 0, 0, t0 + g, &ft);
        if (ft.lo < ft.hi) w += (uint64_t)(ft.hi - ft.lo) + 256; /* + a tile's fixed work */
    }
    return w;
}

int nx_attention_flash(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    if (call->n_inputs < 3 || call->nargs != call->n_inputs + 1)
        return nx_fail(err, "attention: expects 3 or 4 operands and 1 result, got %u and %u", call->n_inputs,
                       call->nargs - call->n_inputs);
    nx_norm_tensor in[4];
    for (uint32_t i = 0; i < call->n_inputs && i < 4; i++)
        in[i] = (nx_norm_tensor){call->args[i].name, call->args[i].dtype, call->args[i].ndims, call->args[i].shape};
    nx_attention_params p;
    if (nx_attention_read(call->attrs, in, call->n_inputs, &p, err) != 0) return -1;
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
    const nx_geometry *geo = nx_kctx_geometry(k);
    c->P = geo->partitions < geo->pe_rows ? geo->partitions : geo->pe_rows;
    if (geo->pe_cols < c->P) c->P = geo->pe_cols;
    c->nd = (uint32_t)((p.D + c->P - 1) / c->P);
    c->G = group_size(geo, p.dtype, c->nd, p.D);
    int rc = -1;
    if (c->P < 128 || geo->pe_moving_free_max < FA_BK) {
        nx_fail(err, "attention: the plan needs 128 x 128 PE tiles and N = %u per multiply", FA_BK);
        goto done;
    }
    if (c->G == 0) {
        nx_fail(err, "operand 0 (%s): D = %llu leaves no PSUM for the output accumulators", c->q->name,
                (unsigned long long)p.D);
        goto done;
    }
    if (build_consts(c, err) != 0 || alloc_all(c, err) != 0) goto done;
    const uint64_t T = (p.Sq + c->P - 1) / c->P, per_head = (T + c->G - 1) / c->G;
    const uint32_t me = nx_kctx_program_id(k), np = nx_kctx_num_programs(k);
    uint64_t load[NX_MAX_CORES] = {0};
    for (uint64_t u = 0; u < p.B * p.Hq * per_head; u++) {
        uint64_t bh = u / per_head, t0 = (u % per_head) * c->G;
        uint32_t nt = (uint32_t)(T - t0 < c->G ? T - t0 : c->G);
        uint32_t who = 0;
        for (uint32_t i = 1; i < np && i < NX_MAX_CORES; i++)
            if (load[i] < load[who]) who = i;
        load[who] += unit_cost(c, t0, nt);
        if (who != me) continue;
        if (run_unit(c, bh / p.Hq, bh % p.Hq, t0, nt, err) != 0) goto done;
    }
    rc = 0;
done:
    free(c);
    return rc;
}
