/* matmul: ONNX MatMul on the PE, tiled as the NKI matmul tutorial tiles it
 * (aws-neuron-sdk general/nki/tutorials/matrix_multiplication.rst: K on the
 * partitions, stationary [K <= 128, M <= 128], moving [K, N <= 512], PSUM
 * accumulation over the K tiles), for any M, K, N (ragged last tiles) and
 * broadcast batches. A arrives [M, K] (rows of K), so each row block is
 * loaded once and transposed on the PE into K-major tiles (an exact bit
 * move), which stay in SBUF while every N tile of B streams past them.
 *
 * Per batch, per block of 128 rows of A:
 *   DMA  A rows -> at; PE transpose of each 128-column piece -> PSUM -> aT
 *   per N tile of up to 512: per K tile: DMA B piece -> bt (rotating),
 *        load_stationary aT[k], multiply_moving into PSUM (accumulate);
 *        ACT copies PSUM -> SBUF in the result dtype; DMA -> C. */
#include "matmul.h"

#include "kernels/norms/rows.h"

#define MM_BUFS 4

int nx_matmul(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    if (call->n_inputs != 2 || call->nargs != 3)
        return nx_fail(err, "matmul: expects 2 operands and 1 result, got %u and %u", call->n_inputs,
                       call->nargs - call->n_inputs);
    nx_norm_tensor in[2];
    for (uint32_t i = 0; i < 2; i++)
        in[i] = (nx_norm_tensor){call->args[i].name, call->args[i].dtype, call->args[i].ndims, call->args[i].shape};
    nx_matmul_params p;
    if (nx_matmul_read(in, 2, &p, err) != 0) return -1;
    const nx_tensor_ref *A = &call->args[0], *Bt = &call->args[1], *C = &call->args[2];
    nx_rows r;
    nx_rows_init(&r, k);
    const nx_geometry *g = nx_kctx_geometry(k);
    const uint32_t TK = g->pe_rows < r.partitions ? g->pe_rows : r.partitions, TM = g->pe_cols;
    uint32_t TN = g->pe_moving_free_max;
    if ((uint64_t)TN * 4 > g->psum_bank_bytes) TN = (uint32_t)(g->psum_bank_bytes / 4);
    const nx_dtype dt = p.dtype;
    const uint64_t es = nx_dtype_size(dt), nk = (p.K + TK - 1) / TK;
    uint64_t need = nx_rows_tile_bytes(p.K, dt) + nk * nx_rows_tile_bytes(TM, dt) +
                    MM_BUFS * (nx_rows_tile_bytes(TN, dt) * 2);
    if (need > r.sbuf_bytes)
        return nx_fail(err, "operand 0 (%s): K = %llu needs %llu bytes per partition (a row block, its %llu transposed "
                            "tiles and the B and result buffers), SBUF has %llu",
                       A->name, (unsigned long long)p.K, (unsigned long long)need, (unsigned long long)nk,
                       (unsigned long long)r.sbuf_bytes);
    nx_tile at, aT[1024], bt[MM_BUFS], ot[MM_BUFS], ps[2], tp[2];
    if (nk > 1024) return nx_fail(err, "operand 0 (%s): K = %llu beyond 1024 K tiles", A->name, (unsigned long long)p.K);
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "a_rows", dt, TM, p.K, &at, err) != 0) return -1;
    for (uint64_t i = 0; i < nk; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "a_t", dt, TK, TM, &aT[i], err) != 0) return -1;
    for (uint32_t i = 0; i < MM_BUFS; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "b_tile", dt, TK, TN, &bt[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "c_tile", dt, TM, TN, &ot[i], err) != 0)
            return -1;
    for (uint32_t i = 0; i < 2; i++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "acc", NX_DT_FP32, TM, TN, &ps[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_PSUM, "a_t_psum", NX_DT_FP32, TK, TM, &tp[i], err) != 0)
            return -1;
    const uint64_t mtiles = (p.M + TM - 1) / TM, ntiles = (p.N + TN - 1) / TN;
    uint64_t lo, hi, step = 0, out = 0, tr = 0;
    nx_kctx_rows(k, p.batches * mtiles, &lo, &hi);
    for (uint64_t w = lo; w < hi; w++) {
        const uint64_t bi = w / mtiles, m0 = (w % mtiles) * TM;
        const uint32_t mw = (uint32_t)(p.M - m0 < TM ? p.M - m0 : TM);
        const uint64_t abase = A->hbm_offset + nx_matmul_a_index(&p, bi) * p.M * p.K * es;
        const uint64_t bbase = Bt->hbm_offset + nx_matmul_b_index(&p, bi) * p.K * p.N * es;
        const uint64_t cbase = C->hbm_offset + bi * p.M * p.N * es;
        nx_operand ad = nx_rows_view(&at, dt, mw, 0, p.K), as = nx_rows_hbm(dt, abase, m0, mw, p.K);
        if (nx_rows_load(&r, &ad, &as, err) != 0) return -1;
        for (uint64_t kt = 0; kt < nk; kt++, tr++) {
            const uint32_t kw = (uint32_t)(p.K - kt * TK < TK ? p.K - kt * TK : TK);
            const int32_t one = 1;
            nx_operand src = nx_tile_view(&at, dt, 0, mw, kt * TK, 1, &one, &kw);
            nx_operand pt = nx_rows_view(&tp[tr % 2], NX_DT_FP32, kw, 0, mw), dst = nx_rows_view(&aT[kt], dt, kw, 0, mw);
            if (nx_kctx_transpose(k, NX_ENG_PE, &pt, &src, err) != 0 ||
                nx_kctx_tensor_copy(k, NX_ENG_DVE, &dst, &pt, err) != 0)
                return -1;
        }
        for (uint64_t nt = 0; nt < ntiles; nt++, out++) {
            const uint64_t n0 = nt * TN;
            const uint32_t nw = (uint32_t)(p.N - n0 < TN ? p.N - n0 : TN);
            nx_operand acc = nx_rows_view(&ps[out % 2], NX_DT_FP32, mw, 0, nw);
            for (uint64_t kt = 0; kt < nk; kt++, step++) {
                const uint32_t kw = (uint32_t)(p.K - kt * TK < TK ? p.K - kt * TK : TK);
                const nx_tile *b = &bt[step % MM_BUFS];
                nx_operand bd = nx_rows_view(b, dt, kw, 0, nw);
                nx_operand bs = nx_ap_hbm_rows(dt, bbase + (kt * TK * p.N + n0) * es, kw, (int32_t)p.N, nw);
                nx_operand st = nx_rows_view(&aT[kt], dt, kw, 0, mw);
                if (nx_rows_load(&r, &bd, &bs, err) != 0 || nx_kctx_load_stationary(k, &st, err) != 0 ||
                    nx_kctx_multiply_moving(k, &acc, &bd, kt > 0, err) != 0)
                    return -1;
            }
            nx_operand od = nx_rows_view(&ot[out % MM_BUFS], dt, mw, 0, nw);
            nx_operand cd = nx_ap_hbm_rows(dt, cbase + (m0 * p.N + n0) * es, mw, (int32_t)p.N, nw);
            if (nx_kctx_tensor_copy(k, NX_ENG_ACT, &od, &acc, err) != 0 || nx_rows_store(&r, &cd, &od, err) != 0)
                return -1;
        }
    }
    return 0;
}
