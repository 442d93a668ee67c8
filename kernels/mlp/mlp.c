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
 *  prefill: blocks of up to pe_cols tokens, the blocks split between the
 *    cores, each block through the same piece (gate/up, then down, the
 *    next block's norm and transposes under the current block's
 *    multiplies).
 *
 * Both start with the token prep (kernels/mlp/mlp_prep.c): x' = x + r
 * (stored), the RMSNorm with kernels/norms' row pieces, and h^T by PE
 * transposes. */
#include "mlp_impl.h"

#include <string.h>

#include "isa/intmath.h"

/* Tiles [t_a, t_b) of a^T between SBUF and the exchange tensor (to_hbm 1:
 * store, 0: load): the full tiles as one transfer per engine, a ragged last
 * tile (fewer rows) alone. */
static int xchg(mlp_state *s, int to_hbm, uint64_t t_a, uint64_t t_b, nx_error *err) {
    const uint64_t ni = s->ni, T = s->Tl, last_rows = s->p.inter - (ni - 1) * s->TI;
    const uint64_t nfull = last_rows == s->TI ? ni : ni - 1;
    for (int part = 0; part < 2; part++) {
        const uint64_t a = part ? (t_a > nfull ? t_a : nfull) : t_a, b = part ? t_b : (t_b < nfull ? t_b : nfull);
        if (a >= b) continue;
        const uint32_t rows = part ? (uint32_t)last_rows : s->TI;
        nx_operand sb = nx_rows_view(&s->aT[0], s->p.dtype, rows, a * T, (b - a) * T);
        nx_operand hb = nx_ap_hbm_rows(s->p.dtype, s->xoff + a * T * s->es, rows, (int32_t)(ni * T), (uint32_t)((b - a) * T));
        int rc = to_hbm ? nx_rows_store(&s->r, &hb, &sb, err) : nx_rows_store(&s->r, &sb, &hb, err);
        if (rc != 0) return -1;
    }
    return 0;
}

/* Before the down projection: this core's a^T rows out, the barrier, the
 * other core's in. */
static int exchange(void *ctx, nx_error *err) {
    mlp_state *s = ctx;
    if (xchg(s, 1, s->t_lo, s->t_hi, err) != 0 || nx_kctx_barrier(s->k, err) != 0) return -1;
    for (uint32_t q = 0; q < nx_kctx_num_programs(s->k); q++) {
        if (q == nx_kctx_program_id(s->k)) continue;
        const uint64_t per = nx_cdiv_u64(s->ni, nx_kctx_num_programs(s->k));
        const uint64_t a = q * per, b = (q + 1) * per < s->ni ? (q + 1) * per : s->ni;
        if (a < b && xchg(s, 0, a, b, err) != 0) return -1;
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
    if (mlp_prep(s, 0, (uint32_t)p->T, slo, shi, &s->xT[0], err) != 0) return -1;
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
        const uint64_t shape[2] = {s->TI, s->ni * s->Tl};
        if (nx_kctx_scratch(k, "mlp_aT_exchange", p->dtype, 2, shape, &s->xoff, err) != 0) goto out;
    }
    const uint64_t i_lo = s->t_lo * s->TI, i_hi = nx_min_u64(s->t_hi * s->TI, p->inter);
    if (i_lo < i_hi) {
        nx_mlp_dec_job gu = {.kind = NX_MLP_DEC_GATE_UP, .K = p->H, .n = i_hi - i_lo,
                             .w0 = {.base = s->wg + i_lo * s->es, .ld = p->inter},
                             .w1 = {.base = s->wu + i_lo * s->es, .ld = p->inter},
                             .xT = &s->xT[0], .aT = &s->aT[0], .a0 = s->t_lo};
        if (nx_mlp_dec_submit(d, &gu, err) != 0) goto out;
    }
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

static int prefill_plan(mlp_state *s, nx_error *err) {
    nx_kctx *k = s->k;
    const nx_mlp_params *p = &s->p;
    uint64_t lo, hi;
    nx_kctx_rows(k, p->T, &lo, &hi);
    s->Tl = (uint32_t)nx_min_u64(s->TI, hi > lo ? hi - lo : 1);
    if (mlp_prep_alloc(s, 2, err) != 0) return -1;
    const uint32_t banks = (uint32_t)(nx_kctx_geometry(k)->psum_partition_bytes / nx_kctx_geometry(k)->psum_bank_bytes);
    nx_mlp_dec_cfg cfg = {.dtype = p->dtype, .T = s->Tl, .act = p->act, .psum_banks = banks - 1,
                          .ring_bytes = s->ring_bytes};
    nx_mlp_dec *d;
    if (nx_mlp_dec_new(k, &cfg, &d, err) != 0) return -1;
    int rc = -1;
    for (uint32_t i = 0; i < 2; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "mlp_aT", p->dtype, s->TI, s->ni * s->Tl, &s->aT[i], err) != 0) goto out;
    for (uint64_t r0 = lo, b = 0; r0 < hi; r0 += s->Tl, b++) {
        const uint32_t n = (uint32_t)nx_min_u64(s->Tl, hi - r0);
        if (mlp_prep(s, r0, n, r0, r0 + n, &s->xT[b % 2], err) != 0) goto out;
        nx_mlp_dec_job gu = {.kind = NX_MLP_DEC_GATE_UP, .K = p->H, .n = p->inter, .T = n,
                             .w0 = {.base = s->wg, .ld = p->inter}, .w1 = {.base = s->wu, .ld = p->inter},
                             .xT = &s->xT[b % 2], .aT = &s->aT[b % 2]};
        nx_mlp_dec_job dn = {.kind = NX_MLP_DEC_DOWN, .K = p->inter, .n = p->H, .T = n,
                             .w0 = {.base = s->wd, .ld = p->H}, .aT = &s->aT[b % 2],
                             .out_hbm = s->out + r0 * p->H * s->es, .out_ld = p->H};
        if (nx_mlp_dec_submit(d, &gu, err) != 0 || nx_mlp_dec_submit(d, &dn, err) != 0) goto out;
    }
    if (nx_mlp_dec_flush(d, err) != 0) goto out;
    rc = 0;
out:
    nx_mlp_dec_free(d, rc == 0 ? err : NULL);
    return rc;
}

int nx_mlp(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
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
    if (mlp_state_init(&s, call, err) != 0) return -1;
    return plan == NX_MLP_PLAN_DECODE ? decode_plan(&s, err) : prefill_plan(&s, err);
}
