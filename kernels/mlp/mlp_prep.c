/* The mlp composite's token prep (kernels/mlp/mlp_impl.h): rows of x on
 * the partitions, the residual add and the RMSNorm as kernels/norms'
 * rmsnorm does them (its row pieces: the loads cut over the DMA engines,
 * gamma broadcast through the PE, the square-sum on ScalarE's accumulate
 * form, rsqrt, the products on GpSimd), then h^T for the PE: up to
 * bank / Tl transposes per PSUM bank and one copy out (ScalarE and VectorE
 * in turn), as the matmul composite's A prep does. */
#include "mlp_impl.h"

#include "isa/intmath.h"

#define MLP_RING_MAX (96u * 1024u)
#define MLP_RING_MIN (3u * 8192u)

int mlp_state_init(mlp_state *s, const nx_kernel_call *call, nx_error *err) {
    const nx_mlp_params *p = &s->p;
    const nx_geometry *g = nx_kctx_geometry(s->k);
    nx_rows_init(&s->r, s->k);
    s->es = nx_dtype_size(p->dtype);
    s->P = g->pe_rows < g->partitions ? g->pe_rows : g->partitions;
    s->TI = g->pe_cols;
    s->bank_elems = g->psum_bank_bytes / 4;
    s->nk = nx_cdiv_u64(p->H, s->P);
    s->ni = nx_cdiv_u64(p->inter, s->TI);
    s->x = call->args[0].hbm_offset;
    s->wg = call->args[1].hbm_offset;
    s->wu = call->args[2].hbm_offset;
    s->wd = call->args[3].hbm_offset;
    s->gamma_hbm = p->norm ? call->args[p->gamma_operand].hbm_offset : 0;
    s->r_hbm = p->residual ? call->args[p->r_operand].hbm_offset : 0;
    s->out = call->args[p->n_operands].hbm_offset;
    s->xo = p->residual ? call->args[p->n_operands + 1].hbm_offset : 0;
    if (p->H > INT32_MAX / s->P || p->inter > INT32_MAX / s->P || s->gu_ld > INT32_MAX / s->P)
        return nx_fail(err, "operand 1 (%s): H = %llu, I = %llu beyond the 32-bit strides of a weight slab",
                       call->args[1].name, (unsigned long long)p->H, (unsigned long long)p->inter);
    if (p->H > g->sbuf_free_elems_max)
        return nx_fail(err, "operand 0 (%s): H = %llu beyond the %u elements an engine streams per partition",
                       call->args[0].name, (unsigned long long)p->H, (unsigned)g->sbuf_free_elems_max);
    return 0;
}

uint64_t mlp_need(const mlp_state *s, uint32_t Tl) {
    const nx_mlp_params *p = &s->p;
    const nx_dtype dt = p->dtype;
    const uint64_t nsub = nx_cdiv_u64(Tl, s->TI), row = nx_rows_tile_bytes(p->H, dt);
    const uint64_t act = nx_min_u64(32ull * Tl, 4 * s->bank_elems); /* the piece's act tiles (G x Tl fp32) */
    /* x rows [and h rows] per sub-tile, r rows or squares, [gamma], stats;
     * x^T and a^T; the piece's act tiles and output staging; slack for
     * alignment and the gamma broadcast's row */
    return row * nsub * (1 + (uint64_t)p->norm) + nx_rows_tile_bytes(p->H, p->r_dtype) +
           (p->norm ? nx_rows_tile_bytes(p->H, p->gamma_dtype) + 64 : 0) + 64 + nx_rows_tile_bytes(s->nk * Tl, dt) +
           nx_rows_tile_bytes(s->ni * Tl, dt) + 2 * nx_rows_tile_bytes(act, NX_DT_FP32) +
           4 * nx_rows_tile_bytes(s->bank_elems, dt) + 2048;
}

int mlp_prep_alloc(mlp_state *s, int own_tp, nx_error *err) {
    const nx_mlp_params *p = &s->p;
    const nx_dtype dt = p->dtype;
    const uint64_t need = mlp_need(s, s->Tl), sbuf = s->r.sbuf_bytes;
    if (need + MLP_RING_MIN > sbuf)
        return nx_fail(err,
                       "operand 1 (w_gate): H = %llu, I = %llu with %u tokens per block need %llu bytes per partition "
                       "beside a weight ring of %u, SBUF has %llu",
                       (unsigned long long)p->H, (unsigned long long)p->inter, s->Tl, (unsigned long long)need,
                       MLP_RING_MIN, (unsigned long long)sbuf);
    s->ring_bytes = nx_min_u64(MLP_RING_MAX, sbuf - need);
    s->nsub = (uint32_t)nx_cdiv_u64(s->Tl, s->TI);
    nx_kctx *k = s->k;
    const uint32_t rows = s->Tl < s->r.partitions ? s->Tl : s->r.partitions; /* the most a sub-tile holds */
    if (p->norm && nx_rows_broadcast_rows(&s->r, "gamma", s->gamma_hbm, p->gamma_dtype, p->H, p->gamma_dtype, rows,
                                          &s->gamma, err) != 0)
        return -1;
    for (uint32_t u = 0; u < s->nsub; u++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "mlp_x_rows", dt, s->r.partitions, p->H, &s->xr[u], err) != 0 ||
            (p->norm && nx_kctx_alloc(k, NX_OPK_SBUF, "mlp_h_rows", dt, s->r.partitions, p->H, &s->hr[u], err) != 0))
            return -1;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "mlp_work_rows", p->r_dtype, s->r.partitions, p->H, &s->wr, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "mlp_row_stats", NX_DT_FP32, s->r.partitions, 2, &s->small, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "mlp_xT", dt, s->P, s->nk * s->Tl, &s->xT[0], err) != 0)
        return -1;
    if (own_tp) {
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "mlp_h_t_psum", NX_DT_FP32, s->P, s->bank_elems, &s->tp, err) != 0) return -1;
        s->tpp = &s->tp;
    }
    return 0;
}

int mlp_prep_transpose(mlp_state *s, uint32_t u, uint32_t n, nx_error *err) {
    const nx_dtype dt = s->p.dtype;
    const nx_tile *src = s->p.norm ? &s->hr[u] : &s->xr[u];
    const uint32_t Tl = s->Tl, per = (uint32_t)(s->bank_elems / s->TI);
    const uint64_t toff = (uint64_t)u * s->TI;
    for (uint64_t c = 0; c < s->nk;) {
        const uint32_t kw = (uint32_t)nx_min_u64(s->P, s->p.H - c * s->P);
        uint32_t g = 0; /* full K-chunks share a bank; a ragged one goes alone */
        while (g < per && c + g < s->nk && nx_min_u64(s->P, s->p.H - (c + g) * s->P) == kw) g++;
        const int32_t one = 1, sp[2] = {(int32_t)s->TI, 1}, sx[2] = {(int32_t)Tl, 1};
        const uint32_t c2[2] = {g, n};
        for (uint32_t j = 0; j < g; j++) {
            nx_operand from = nx_tile_view(src, dt, 0, n, (c + j) * s->P, 1, &one, &kw);
            nx_operand pt = nx_tile_view(s->tpp, NX_DT_FP32, 0, kw, (uint64_t)j * s->TI, 1, &one, &n);
            if (nx_kctx_transpose(s->k, NX_ENG_PE, &pt, &from, err) != 0) return -1;
        }
        nx_operand pv = nx_tile_view(s->tpp, NX_DT_FP32, 0, kw, 0, 2, sp, c2);
        nx_operand to = nx_tile_view(&s->xT[0], dt, 0, kw, c * Tl + toff, 2, sx, c2);
        if (nx_kctx_tensor_copy(s->k, s->trs++ % 2 ? NX_ENG_DVE : NX_ENG_ACT, &to, &pv, err) != 0) return -1;
        c += g;
    }
    return 0;
}

int mlp_prep_store_x(mlp_state *s, uint32_t u, uint64_t r0, uint32_t n, uint64_t slo, uint64_t shi, nx_error *err) {
    const nx_dtype dt = s->p.dtype;
    const uint64_t a = slo > r0 ? slo : r0, b = shi < r0 + n ? shi : r0 + n;
    if (!s->p.residual || a >= b) return 0;
    nx_operand xv = nx_rows_view(&s->xr[u], dt, n, 0, s->p.H);
    nx_operand part = nx_operand_rows(&xv, (uint32_t)(a - r0), (uint32_t)(b - a));
    nx_operand xo = nx_rows_hbm(dt, s->xo, a, (uint32_t)(b - a), s->p.H);
    return nx_rows_store(&s->r, &xo, &part, err);
}

int mlp_prep_rows(mlp_state *s, uint32_t u, uint64_t r0, uint32_t n, uint64_t slo, uint64_t shi, int defer_x,
                  nx_error *err) {
    nx_kctx *k = s->k;
    const nx_mlp_params *p = &s->p;
    const nx_dtype dt = p->dtype;
    const uint64_t H = p->H;
    /* loads on the store group: the weight stream owns the load queues */
    nx_operand xv = nx_rows_view(&s->xr[u], dt, n, 0, H), xs = nx_rows_hbm(dt, s->x, r0, n, H);
    if (nx_rows_store(&s->r, &xv, &xs, err) != 0) return -1;
    if (p->residual) {
        nx_operand rv = nx_rows_view(&s->wr, p->r_dtype, n, 0, H), rs = nx_rows_hbm(p->r_dtype, s->r_hbm, r0, n, H);
        if (nx_rows_store(&s->r, &rv, &rs, err) != 0 ||
            nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_ADD, &xv, &xv, &rv, err) != 0)
            return -1;
        if (!defer_x && mlp_prep_store_x(s, u, r0, n, slo, shi, err) != 0) return -1;
    }
    if (!p->norm) return 0;
    nx_operand wv = nx_rows_view(&s->wr, p->r_dtype, n, 0, H), hv = nx_rows_view(&s->hr[u], dt, n, 0, H);
    nx_operand ss = nx_rows_view(&s->small, NX_DT_FP32, n, 0, 1), rstd = nx_rows_view(&s->small, NX_DT_FP32, n, 1, 1);
    nx_operand gv = nx_rows_view(&s->gamma, p->gamma_dtype, n, 0, H), zero = nx_imm(0.0, NX_DT_FP32);
    if (nx_rows_activation_acc(k, NX_ACT_SQUARE, &wv, &xv, &zero, &ss, NX_ALU_ADD, err) != 0 ||
        nx_kctx_activation(k, NX_ACT_RSQRT, &rstd, &ss, 1.0 / (double)H, p->eps, err) != 0 ||
        nx_kctx_scalar_tensor_tensor(k, NX_ENG_POOL, &hv, &xv, NX_ALU_MULTIPLY, &rstd, NX_ALU_MULTIPLY, &gv, err) != 0)
        return -1;
    return 0;
}
