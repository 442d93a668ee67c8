/* mlp: the dense gated MLP of the NKI LLM-inference samples (aws-neuron
 * nki-samples, the Llama MLP: RMSNorm fused in front, gate and up on the
 * PE into PSUM, the activation on ScalarE, the product on VectorE, the
 * down projection accumulated in PSUM), written against the authoring
 * layer, with two plans chosen by the token count (docs/parts/mlp.md):
 *
 *  decode (T <= pe_cols): the weights stream once from HBM through the
 *    decode piece (kernels/mlp/mlp_decode.h). The grid's cores split the
 *    weights, not the tokens: core p takes its half of I for gate/up (a^T of
 *    those rows), the halves are exchanged through HBM around one barrier,
 *    and core p takes its half of H for the down projection over all of I.
 *    Each weight byte is read once by one core, so the pair streams at the
 *    shared HBM rate; splitting the tokens instead would read every weight
 *    twice.
 *  prefill: the tokens split between the cores, each core's in blocks of
 *    Tb tokens (256 on trn2 in bf16: the most for which a gate/up group's
 *    weight rows stay 2 KiB runs with its PSUM banks), each block through
 *    the same piece; the next block's rows (x', the norm) run under the
 *    current block's down projection, its transposes between the two.
 *
 * Both start with the token prep (kernels/mlp/mlp_prep.c): x' = x + r
 * (stored), the RMSNorm with kernels/norms' row pieces, and h^T by PE
 * transposes. */
#include "mlp_impl.h"

#include <stdlib.h>
#include <string.h>

#include "isa/intmath.h"

/* Tiles [t_a, t_b) of a^T, core q's share, between SBUF and core q's
 * region of the exchange tensor (to_hbm 1: store, 0: load): each core's
 * region is contiguous in HBM, so the two cores' transfers never share a
 * byte span. The full tiles go as one transfer per engine, a ragged last
 * tile (fewer rows) alone. */
static int xchg(mlp_state *s, int to_hbm, uint32_t q, uint64_t t_a, uint64_t t_b, nx_error *err) {
    const uint64_t ni = s->ni, T = s->Tl, last_rows = s->p.inter - (ni - 1) * s->TI;
    const uint64_t nfull = last_rows == s->TI ? ni : ni - 1, per = nx_cdiv_u64(ni, nx_kctx_num_programs(s->k));
    const uint64_t region = s->xoff + (uint64_t)q * s->TI * per * T * s->es;
    for (int part = 0; part < 2; part++) {
        const uint64_t a = part ? (t_a > nfull ? t_a : nfull) : t_a, b = part ? t_b : (t_b < nfull ? t_b : nfull);
        if (a >= b) continue;
        const uint32_t rows = part ? (uint32_t)last_rows : s->TI;
        nx_operand sb = nx_rows_view(&s->aT[0], s->p.dtype, rows, a * T, (b - a) * T);
        nx_operand hb = nx_ap_hbm_rows(s->p.dtype, region + (a - (uint64_t)q * per) * T * s->es, rows, (int32_t)(per * T),
                                       (uint32_t)((b - a) * T));
        int rc = to_hbm ? nx_rows_store(&s->r, &hb, &sb, err) : nx_rows_store(&s->r, &sb, &hb, err);
        if (rc != 0) return -1;
    }
    return 0;
}

/* Before the down projection: this core's a^T rows out, the barrier, the
 * other core's in. */
static int exchange(void *ctx, nx_error *err) {
    mlp_state *s = ctx;
    const uint32_t np = nx_kctx_num_programs(s->k), me = nx_kctx_program_id(s->k);
    if (xchg(s, 1, me, s->t_lo, s->t_hi, err) != 0 || nx_kctx_barrier(s->k, err) != 0) return -1;
    const uint64_t per = nx_cdiv_u64(s->ni, np);
    for (uint32_t q = 0; q < np; q++) {
        const uint64_t a = q * per, b = nx_min_u64((q + 1) * per, s->ni);
        if (q != me && a < b && xchg(s, 0, q, a, b, err) != 0) return -1;
    }
    return 0;
}

static int decode_plan(mlp_state *s, nx_error *err) {
    nx_kctx *k = s->k;
    const nx_mlp_params *p = &s->p;
    s->Tl = (uint32_t)p->T;
    if (mlp_prep_alloc(s, 1, err) != 0) return -1;
    uint64_t slo, shi;
    nx_kctx_rows(k, p->T, &slo, &shi);
    if (mlp_prep_rows(s, 0, 0, (uint32_t)p->T, slo, shi, 1, err) != 0 || mlp_prep_transpose(s, 0, (uint32_t)p->T, err) != 0)
        return -1;
    /* the transposes' bank goes back to the pool: the piece takes every bank */
    if (nx_kctx_release(k, &s->tp, err) != 0) return -1;
    nx_mlp_dec_cfg cfg = {.dtype = p->dtype, .T = s->Tl, .act = p->act, .ring_bytes = s->ring_bytes};
    nx_mlp_dec *d;
    if (nx_mlp_dec_new(k, &cfg, &d, err) != 0) return -1;
    int rc = -1;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "mlp_aT", p->dtype, s->TI, s->ni * s->Tl, &s->aT[0], err) != 0) goto out;
    const uint32_t np = nx_kctx_num_programs(k);
    nx_kctx_rows(k, s->ni, &s->t_lo, &s->t_hi);
    if (np > 1) {
        const uint64_t shape[2] = {np, s->TI * nx_cdiv_u64(s->ni, np) * s->Tl};
        if (nx_kctx_scratch(k, "mlp_aT_exchange", p->dtype, 2, shape, &s->xoff, err) != 0) goto out;
    }
    const uint64_t i_lo = s->t_lo * s->TI, i_hi = nx_min_u64(s->t_hi * s->TI, p->inter);
    if (i_lo < i_hi) {
        nx_mlp_dec_job gu = {.kind = NX_MLP_DEC_GATE_UP, .K = p->H, .n = i_hi - i_lo,
                             .w0 = {.base = s->wg + i_lo * s->es, .ld = s->gu_ld},
                             .w1 = {.base = s->wu + i_lo * s->es, .ld = s->gu_ld},
                             .xT = &s->xT[0], .aT = &s->aT[0], .a0 = s->t_lo};
        if (nx_mlp_dec_submit(d, &gu, err) != 0) goto out;
    }
    /* x' after the gate/up stream's first loads (mlp_impl.h) */
    if (mlp_prep_store_x(s, 0, 0, (uint32_t)p->T, slo, shi, err) != 0) goto out;
    /* H in whole PSUM banks per core */
    const uint64_t bank = s->bank_elems, nhb = nx_cdiv_u64(p->H, bank);
    uint64_t b_lo, b_hi;
    nx_kctx_rows(k, nhb, &b_lo, &b_hi);
    const uint64_t h_lo = b_lo * bank, h_hi = nx_min_u64(b_hi * bank, p->H);
    if (h_lo < h_hi) {
        nx_mlp_dec_job dn = {.kind = NX_MLP_DEC_DOWN, .K = p->inter, .n = h_hi - h_lo,
                             .w0 = {.base = s->wd + h_lo * s->es, .ld = p->H},
                             .aT = &s->aT[0], .k_first = (uint32_t)s->t_lo,
                             .out_hbm = s->out + h_lo * s->es, .out_ld = p->H,
                             .before = np > 1 ? exchange : NULL, .before_ctx = s};
        if (nx_mlp_dec_submit(d, &dn, err) != 0 || nx_mlp_dec_flush(d, err) != 0) goto out;
    } else if (nx_mlp_dec_flush(d, err) != 0 || (np > 1 && exchange(s, err) != 0)) {
        goto out;
    }
    rc = 0;
out:
    nx_mlp_dec_free(d, rc == 0 ? err : NULL);
    return rc;
}

/* The prefill's blocks of this core: [lo, hi) in blocks of Tl. */
typedef struct pf_ctx {
    mlp_state *s;
    uint64_t lo, hi;
} pf_ctx;

static uint32_t pf_rows(const mlp_state *s, uint64_t r0, uint64_t hi, uint32_t u) {
    const uint64_t a = r0 + (uint64_t)u * s->TI;
    return a >= hi ? 0 : (uint32_t)nx_min_u64(s->TI, hi - a);
}

/* Block b's rows (x', the norm): run on ScalarE / GpSimd under the PE work
 * of the block before. */
static int pf_rows_of(pf_ctx *c, uint64_t b, nx_error *err) {
    mlp_state *s = c->s;
    const uint64_t r0 = c->lo + b * s->Tl, hi = nx_min_u64(r0 + s->Tl, c->hi);
    for (uint32_t u = 0; u < s->nsub; u++) {
        const uint32_t n = pf_rows(s, r0, hi, u);
        if (n && mlp_prep_rows(s, u, r0 + (uint64_t)u * s->TI, n, c->lo, c->hi, 0, err) != 0) return -1;
    }
    return 0;
}

static int pf_transposes(pf_ctx *c, uint64_t b, nx_error *err) {
    mlp_state *s = c->s;
    const uint64_t r0 = c->lo + b * s->Tl, hi = nx_min_u64(r0 + s->Tl, c->hi);
    for (uint32_t u = 0; u < s->nsub; u++) {
        const uint32_t n = pf_rows(s, r0, hi, u);
        if (n && mlp_prep_transpose(s, u, n, err) != 0) return -1;
    }
    return 0;
}

/* before GATE_UP(b): its h^T (the PE between DOWN(b - 1) and GATE_UP(b));
 * before DOWN(b): block b + 1's rows (x^T is free once GATE_UP(b) has
 * read it; the rows tiles once block b's transposes have). */
typedef struct pf_hook {
    pf_ctx *c;
    uint64_t b;
} pf_hook;
static int pf_before_gu(void *ctx, nx_error *err) {
    pf_hook *h = ctx;
    return pf_transposes(h->c, h->b, err);
}
static int pf_before_dn(void *ctx, nx_error *err) {
    pf_hook *h = ctx;
    const uint64_t nb = nx_cdiv_u64(h->c->hi - h->c->lo, h->c->s->Tl);
    return h->b + 1 < nb ? pf_rows_of(h->c, h->b + 1, err) : 0;
}

/* Tokens per block: the most that keeps the gate/up slabs at full DMA
 * runs (8 bank pairs x 512 / T >= the run's I-tiles) and fits SBUF. */
static uint32_t pf_block(const mlp_state *s, uint64_t rows) {
    const nx_machine *m = nx_kctx_machine(s->k);
    const uint64_t banks = nx_kctx_geometry(s->k)->psum_partition_bytes / nx_kctx_geometry(s->k)->psum_bank_bytes;
    const uint64_t run = m->dma_efficient_bytes_per_partition ? m->dma_efficient_bytes_per_partition : 2048;
    const uint64_t g_min = nx_cdiv_u64(run, s->TI * s->es);
    uint64_t tb = banks * s->bank_elems / (2 * g_min);
    if (tb > MLP_SUB_MAX * (uint64_t)s->TI) tb = MLP_SUB_MAX * (uint64_t)s->TI;
    if (tb > s->bank_elems) tb = s->bank_elems;
    tb = tb / s->TI * s->TI;
    if (tb < s->TI) tb = s->TI;
    /* a ring of 6 slabs (6 MiB in flight a core) is deep enough here: the
     * PE, not the DMA, sets the pace */
    while (tb > s->TI && mlp_need(s, (uint32_t)tb) + 48 * 1024 > s->r.sbuf_bytes) tb -= s->TI;
    return (uint32_t)nx_min_u64(tb, rows ? rows : 1);
}

static int prefill_plan(mlp_state *s, nx_error *err) {
    nx_kctx *k = s->k;
    const nx_mlp_params *p = &s->p;
    pf_ctx c = {.s = s};
    nx_kctx_rows(k, p->T, &c.lo, &c.hi);
    s->Tl = pf_block(s, c.hi - c.lo);
    if (mlp_prep_alloc(s, 0, err) != 0) return -1;
    nx_mlp_dec_cfg cfg = {.dtype = p->dtype, .T = s->Tl, .act = p->act, .ring_bytes = s->ring_bytes};
    nx_mlp_dec *d;
    if (nx_mlp_dec_new(k, &cfg, &d, err) != 0) return -1;
    s->tpp = nx_mlp_dec_psum(d);
    int rc = -1;
    const uint64_t nb = c.hi > c.lo ? nx_cdiv_u64(c.hi - c.lo, s->Tl) : 0;
    pf_hook *hooks = nb ? calloc((size_t)nb, sizeof *hooks) : NULL;
    if (nb && !hooks) {
        nx_fail(err, "mlp: out of memory");
        goto out;
    }
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "mlp_aT", p->dtype, s->TI, s->ni * s->Tl, &s->aT[0], err) != 0) goto out;
    if (nb && pf_rows_of(&c, 0, err) != 0) goto out;
    for (uint64_t b = 0; b < nb; b++) {
        const uint64_t r0 = c.lo + b * s->Tl;
        const uint32_t n = (uint32_t)nx_min_u64(s->Tl, c.hi - r0);
        hooks[b] = (pf_hook){&c, b};
        nx_mlp_dec_job gu = {.kind = NX_MLP_DEC_GATE_UP, .K = p->H, .n = p->inter, .T = n,
                             .w0 = {.base = s->wg, .ld = s->gu_ld}, .w1 = {.base = s->wu, .ld = s->gu_ld},
                             .xT = &s->xT[0], .aT = &s->aT[0], .before = pf_before_gu, .before_ctx = &hooks[b]};
        nx_mlp_dec_job dn = {.kind = NX_MLP_DEC_DOWN, .K = p->inter, .n = p->H, .T = n,
                             .w0 = {.base = s->wd, .ld = p->H}, .aT = &s->aT[0],
                             .out_hbm = s->out + r0 * p->H * s->es, .out_ld = p->H,
                             .before = pf_before_dn, .before_ctx = &hooks[b]};
        if (nx_mlp_dec_submit(d, &gu, err) != 0 || nx_mlp_dec_submit(d, &dn, err) != 0) goto out;
    }
    if (nx_mlp_dec_flush(d, err) != 0) goto out;
    rc = 0;
out:
    free(hooks);
    nx_mlp_dec_free(d, rc == 0 ? err : NULL);
    return rc;
}

int nx_mlp(nx_kctx *k, const nx_kernel_call *call, nx_error *err) { return nx_mlp_pitched(k, call, 0, err); }

int nx_mlp_pitched(nx_kctx *k, const nx_kernel_call *call, uint64_t gu_ld, nx_error *err) {
    mlp_state s;
    memset(&s, 0, sizeof s);
    s.k = k;
    nx_norm_tensor in[NX_KERNEL_MAX_ARGS];
    for (uint32_t i = 0; i < call->n_inputs && i < NX_KERNEL_MAX_ARGS; i++)
        in[i] = (nx_norm_tensor){call->args[i].name, call->args[i].dtype, call->args[i].ndims, call->args[i].shape};
    if (nx_mlp_read(call->attrs, in, call->n_inputs, &s.p, err) != 0) return -1;
    const nx_mlp_params *p = &s.p;
    if (call->nargs != p->n_operands + p->n_results)
        return nx_fail(err, "mlp: expects %u results, got %u", p->n_results, call->nargs - call->n_inputs);
    const nx_geometry *g = nx_kctx_geometry(k);
    const nx_mlp_plan plan = nx_mlp_plan_of(p, g);
    if (plan == NX_MLP_PLAN_DECODE && p->T > g->pe_cols)
        return nx_fail(err, "attribute plan: decode takes up to %u tokens, x has T = %llu", g->pe_cols,
                       (unsigned long long)p->T);
    s.gu_ld = gu_ld ? gu_ld : p->inter;
    if (mlp_state_init(&s, call, err) != 0) return -1;
    return plan == NX_MLP_PLAN_DECODE ? decode_plan(&s, err) : prefill_plan(&s, err);
}
