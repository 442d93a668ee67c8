/* rope: rotary position embedding as the production RoPE kernels apply it
 * (the rotate-half form of the NKI Llama samples' apply_rotary_embedding,
 * and its interleaved-pairs variant): rows (b, h, s) on the partitions, D
 * along the free dim, cos and sin loaded once per block of positions and
 * reused by every head. Operands and math: kernels/elementwise/
 * elementwise.h; plan and figures: docs/parts/norms.md.
 *
 * The rotation is three elementwise products over whole rows, with views
 * instead of copies (the piece kernels/elementwise/rope_rotate.c, which qkv
 * calls too): cos is read twice per row through a stride-0 dim,
 * x's halves (or pair members) are read swapped through a negative stride,
 * and sin is prepared once per block as [-sin, sin] (or pairs -sin_i,
 * sin_i):
 *   DVE   a = x * [cos, cos]
 *   POOL  b = [x2, x1] * [-sin, sin]
 *   DVE   out = a + b  (GpSimd on 4 of 7 tiles, so the two engines share
 *                       the three products evenly; a, b in x's dtype)
 * With S < 128 one tile packs the rows of 128 / S heads (cos and sin
 * copied into each head's partitions); otherwise a tile is 128 positions of
 * one head. Each row of x is contiguous in HBM, so every transfer is. */
#include "elementwise.h"
#include "kernels/norms/rows.h"

#define ROPE_BUFS 6
#define ROPE_LAG 2 /* a tile's sum is emitted after the products of the ROPE_LAG tiles after it */

typedef struct rope_step {
    uint64_t b, s0, h0;
    uint32_t sn, hp; /* partitions per head and heads in the tile */
    int first;       /* first tile of its (b, s-block): loads cos/sin */
    uint64_t group;  /* (b, s-block) index */
} rope_step;

/* Positions per partition: up to 8 when S fills whole tiles of them, so
 * each instruction and transfer covers more than one row. */
static uint32_t rows_per_partition(const nx_rope_params *p, uint32_t P) {
    for (uint32_t R = 8; R > 1; R /= 2)
        if (p->S % ((uint64_t)P * R) == 0) return R;
    return 1;
}

static rope_step step_at(const nx_rope_params *p, uint32_t P, uint32_t R, uint64_t t) {
    /* blocks of sb positions: P * R, or all S heads-packed when S < P */
    uint64_t sb = p->S < P ? p->S : (uint64_t)P * R, hp = p->S < P ? P / p->S : 1;
    if (hp > p->H) hp = p->H;
    uint64_t nsb = (p->S + sb - 1) / sb, nhg = (p->H + hp - 1) / hp;
    rope_step s;
    s.group = t / nhg;
    s.b = s.group / nsb;
    s.s0 = (s.group % nsb) * sb;
    s.h0 = (t % nhg) * hp;
    s.sn = (uint32_t)((p->S - s.s0 < sb ? p->S - s.s0 : sb) / R);
    s.hp = (uint32_t)(p->H - s.h0 < hp ? p->H - s.h0 : hp);
    s.first = t % nhg == 0;
    return s;
}

/* A tile's second stage: out = a + b into a, stored. */
typedef struct rope_sum_step {
    int valid;
    nx_engine engine;
    nx_operand a, b, y;
} rope_sum_step;

static int rope_sum(nx_kctx *k, nx_rows *r, const rope_sum_step *s, nx_error *err) {
    if (nx_kctx_tensor_tensor(k, s->engine, NX_ALU_ADD, &s->a, &s->a, &s->b, err) != 0) return -1;
    return nx_rows_store(r, &s->y, &s->a, err);
}

int nx_rope(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    if (call->n_inputs != 3 || call->nargs != 4)
        return nx_fail(err, "rope: expects 3 operands and 1 result, got %u and %u", call->n_inputs,
                       call->nargs - call->n_inputs);
    nx_norm_tensor in[3];
    for (uint32_t i = 0; i < 3; i++)
        in[i] = (nx_norm_tensor){call->args[i].name, call->args[i].dtype, call->args[i].ndims, call->args[i].shape};
    nx_rope_params p;
    if (nx_rope_read(call->attrs, in, 3, &p, err) != 0) return -1;
    const nx_tensor_ref *x = &call->args[0], *co = &call->args[1], *si = &call->args[2], *y = &call->args[3];
    nx_rows r;
    nx_rows_init(&r, k);
    const uint32_t P = r.partitions, R = rows_per_partition(&p, P);
    const uint64_t D = p.D, half = D / 2, ce = nx_dtype_size(p.cs_dtype);
    const nx_dtype dt = p.dtype, cdt = p.cs_dtype;
    const uint32_t RD = (uint32_t)(R * D), RH = (uint32_t)(R * half);
    nx_tile xt[ROPE_BUFS], at[ROPE_BUFS], bt[ROPE_BUFS], cs[ROPE_BUFS], sn[ROPE_BUFS], sr[ROPE_BUFS];
    for (uint32_t i = 0; i < ROPE_BUFS; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "x_tile", dt, P, RD, &xt[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "a_tile", dt, P, RD, &at[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "b_tile", dt, P, RD, &bt[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "cos", cdt, P, RH, &cs[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "sin_pm", cdt, P, RD, &sn[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "sin", cdt, P, RH, &sr[i], err) != 0)
            return -1;
    uint64_t sb = p.S < P ? p.S : (uint64_t)P * R, hp = p.S < P ? P / p.S : 1;
    if (hp > p.H) hp = p.H;
    const uint64_t total = p.B * ((p.S + sb - 1) / sb) * ((p.H + hp - 1) / hp);
    uint64_t lo, hi;
    nx_kctx_rows(k, total, &lo, &hi);
    const uint64_t steps = hi - lo;
    rope_sum_step pend[ROPE_LAG] = {{0}};
    for (uint64_t t = 0; t < steps + ROPE_BUFS - 1; t++) {
        if (t < steps) {
            rope_step s = step_at(&p, P, R, lo + t);
            uint32_t b = (uint32_t)(t % ROPE_BUFS), n = s.hp * s.sn;
            if (s.first || t == 0) {
                uint32_t g = (uint32_t)(s.group % ROPE_BUFS);
                uint64_t crow = (p.cs_batched ? s.b * p.S : 0) + s.s0;
                for (uint32_t hh = 0; hh < s.hp; hh++) {
                    const int32_t one = 1;
                    nx_operand cd = nx_tile_view(&cs[g], cdt, hh * s.sn, s.sn, 0, 1, &one, &RH);
                    nx_operand sd = nx_tile_view(&sr[g], cdt, hh * s.sn, s.sn, 0, 1, &one, &RH);
                    nx_operand cs_src = nx_ap_hbm_rows(cdt, co->hbm_offset + crow * half * ce, s.sn, (int32_t)RH, RH);
                    nx_operand sn_src = nx_ap_hbm_rows(cdt, si->hbm_offset + crow * half * ce, s.sn, (int32_t)RH, RH);
                    /* one head group (S >= P): a table block of up to P rows,
                     * cut over every DMA engine like the x tiles (on one
                     * engine the second block's load stalled the pipeline
                     * about 15 us); several groups: a transfer per group,
                     * each on its own lanes */
                    if (s.hp == 1 ? nx_rows_load(&r, &cd, &cs_src, err) != 0 || nx_rows_load(&r, &sd, &sn_src, err) != 0
                                  : nx_kctx_dma_on(k, NX_ROWS_LOAD_LANE + 2 * hh, &cd, &cs_src, err) != 0 ||
                                        nx_kctx_dma_on(k, NX_ROWS_LOAD_LANE + 2 * hh + 1, &sd, &sn_src, err) != 0)
                        return -1;
                }
                /* [-sin, sin] per row (half) or pairs (-sin_i, sin_i) (interleaved) */
                const nx_rope_rows rg = {n, R, (uint32_t)D, p.interleaved, 0};
                if (nx_rope_signed_sin(k, &rg, &sn[g], &sr[g], cdt, err) != 0) return -1;
            }
            uint64_t row0 = ((s.b * p.H + s.h0) * p.S + s.s0);
            nx_operand xd = nx_rows_view(&xt[b], dt, n, 0, RD), xs = nx_ap_hbm_rows(dt, x->hbm_offset + row0 * D *
                                                                                            nx_dtype_size(dt),
                                                                                    n, (int32_t)RD, RD);
            if (nx_rows_load(&r, &xd, &xs, err) != 0) return -1;
        }
        if (t + 1 < ROPE_BUFS) continue;
        const uint64_t c = t + 1 - ROPE_BUFS;
        rope_step s = step_at(&p, P, R, lo + c);
        uint32_t b = (uint32_t)(c % ROPE_BUFS), g = (uint32_t)(s.group % ROPE_BUFS), n = s.hp * s.sn;
        const nx_rope_rows rg = {n, R, (uint32_t)D, p.interleaved, 0};
        nx_operand av = nx_rows_view(&at[b], dt, n, 0, RD), bv = nx_rows_view(&bt[b], dt, n, 0, RD);
        uint64_t row0 = ((s.b * p.H + s.h0) * p.S + s.s0);
        nx_operand yd = nx_ap_hbm_rows(dt, y->hbm_offset + row0 * D * nx_dtype_size(dt), n, (int32_t)RD, RD);
        /* the sum goes into a (stored from there), so the next load into x
         * waits only for this tile's reads of it, not for the store; the sum
         * of a tile is emitted after the next tile's products, so neither
         * engine waits for the other's product of the same tile */
        if (nx_rope_products(k, &rg, &xt[b], dt, 0, &cs[g], &sn[g], cdt, &av, &bv, err) != 0) return -1;
        rope_sum_step *q = &pend[c % ROPE_LAG];
        if (q->valid && rope_sum(k, &r, q, err) != 0) return -1;
        /* the sums: 3 of 7 tiles on VectorE (its bf16 products are slower than GpSimd's) */
        *q = (rope_sum_step){1, c % 7 < 3 ? NX_ENG_DVE : NX_ENG_POOL, av, bv, yd};
    }
    for (uint64_t i = 0; i < ROPE_LAG; i++) {
        rope_sum_step *q = &pend[(steps + i) % ROPE_LAG];
        if (q->valid && rope_sum(k, &r, q, err) != 0) return -1;
    }
    return 0;
}
