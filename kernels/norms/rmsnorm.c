/* rmsnorm: the NKI RMSNorm tutorial's kernel (aws-neuron-sdk
 * general/nki/tutorials/rmsnorm.rst, nki_rmsnorm_kernel: rows on the
 * partitions, gamma broadcast to every partition, the square-sum on the
 * ScalarE with its accumulate form, rsqrt, then x * rstd * gamma), with the
 * residual add and the fp8_e4m3 quantisation of the production rmsnorm
 * kernels. Operands, results and math: kernels/norms/norms.h; the plan and
 * its figures: docs/parts/norms.md.
 *
 * Per tile of up to 128 rows (the last one ragged), rotating over up to
 * six buffer sets (as many as SBUF holds) so later tiles load while tile i
 * computes: a tile's load-to-store latency spans about three tiles of DMA
 * time, so three sets would leave the queues idle.
 *   DMA     x rows -> xt (cut over the 16 DMA engines) [, r rows -> wt]
 *   DVE     [xt = xt + wt; DMA xt -> x']                   (residual)
 *   ACT     wt = square(xt), ss = sum of the squares (acc_out, fp32)
 *   ACT     rstd = rsqrt(ss * (1 / H) + eps)
 *   POOL    y = (xt * rstd) * gamma           (one fp32 step per product)
 *   none:   DMA y -> out
 *   row:    ACT amax = max |y| (acc_out abs_max); DVE s = max(amax /
 *           fp8_max, 1e-6); DVE q = y / s -> fp8; DMA q -> out; s
 *           transposed on the PE into one row, stored as one transfer
 *   static: DVE rstd = rstd / scale first, so POOL writes q in fp8 itself.
 * GpSimd takes the final products: its cost (150 + N cycles) does not double
 * with a second input as VectorE's does, and ScalarE already holds the
 * reduction; each engine stays under the DMA time of a tile. */
#include <stdio.h>
#include <string.h>

#include "norms.h"
#include "rows.h"

#define RMS_MAX_BUFS 6

typedef struct rms_bufs {
    nx_tile xt, wt, qt, small; /* small: ss, rstd, amax, s (fp32 each) */
    nx_tile s_ps, s_sb;        /* s transposed into one row (row scale) */
} rms_bufs;

static nx_norm_tensor as_norm(const nx_tensor_ref *t) {
    return (nx_norm_tensor){t->name, t->dtype, t->ndims, t->shape};
}

/* One element per partition of column `c` of the small tile. */
static nx_operand small_col(const nx_tile *t, uint32_t n, uint32_t c) { return nx_rows_view(t, NX_DT_FP32, n, c, 1); }

/* quant "row" for the tile at row r0: amax = max |y| on ScalarE, s and q =
 * y / s on VectorE, q stored, s transposed into one row and stored. */
static int row_finish(nx_kctx *k, nx_rows *r, const nx_rmsnorm_params *p, const rms_bufs *B, const nx_tensor_ref *out,
                      const nx_tensor_ref *so, uint64_t r0, uint64_t hi, nx_error *err) {
    const uint64_t H = p->H;
    const uint32_t n = (uint32_t)(hi - r0 < r->partitions ? hi - r0 : r->partitions);
    const nx_dtype qdt = NX_DT_FP8_E4M3;
    nx_operand wv = nx_rows_view(&B->wt, NX_DT_FP32, n, 0, H), zero = nx_imm(0.0, NX_DT_FP32);
    nx_operand amax = small_col(&B->small, n, 2), s = small_col(&B->small, n, 3);
    nx_operand qv = nx_rows_view(&B->qt, qdt, n, 0, H), fm = nx_imm(p->fp8_max, NX_DT_FP32),
               floor_s = nx_imm(1e-6, NX_DT_FP32);
    nx_operand qo = nx_rows_hbm(qdt, out->hbm_offset, r0, n, H);
    const uint64_t s_at = so->hbm_offset + r0 * 4;
    if (nx_rows_activation_acc(k, NX_ACT_IDENTITY, &qv, &wv, &zero, &amax, NX_ALU_ABS_MAX, err) != 0 ||
        nx_kctx_tensor_scalar(k, NX_ENG_DVE, &s, &amax, NX_ALU_DIVIDE, &fm, NX_ALU_MAX, &floor_s, err) != 0 ||
        nx_kctx_tensor_scalar(k, NX_ENG_DVE, &qv, &wv, NX_ALU_DIVIDE, &s, NX_ALU_BYPASS, NULL, err) != 0 ||
        nx_rows_store(r, &qo, &qv, err) != 0 ||
        nx_rows_store_cols(r, &B->small, n, 3, 1, &B->s_ps, &B->s_sb, NX_DT_FP32, &s_at, err) != 0)
        return -1;
    return 0;
}

int nx_rmsnorm(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_norm_tensor in[NX_KERNEL_MAX_ARGS];
    for (uint32_t i = 0; i < call->n_inputs && i < NX_KERNEL_MAX_ARGS; i++) in[i] = as_norm(&call->args[i]);
    nx_rmsnorm_params p;
    if (nx_rmsnorm_read(call->attrs, in, call->n_inputs, &p, err) != 0) return -1;
    if (call->nargs != p.n_operands + p.n_results)
        return nx_fail(err, "rmsnorm: expects %u results, got %u", p.n_results, call->nargs - call->n_inputs);
    const nx_tensor_ref *x = &call->args[0], *g = &call->args[1], *out = &call->args[p.n_operands];
    const nx_tensor_ref *res = p.residual ? &call->args[p.r_operand] : NULL;
    const nx_tensor_ref *xo = p.residual ? &call->args[call->nargs - 1] : NULL;
    const nx_tensor_ref *so = p.quant == NX_RMSNORM_QUANT_ROW ? &call->args[p.n_operands + 1] : NULL;
    const uint64_t H = p.H;
    if (H > INT32_MAX) return nx_fail(err, "operand 0 (%s): H = %llu beyond a 32-bit row pitch", x->name, (unsigned long long)H);

    nx_rows r;
    nx_rows_init(&r, k);
    const nx_geometry *geo = nx_kctx_geometry(k);
    if (H > geo->sbuf_free_elems_max)
        return nx_fail(err, "operand 0 (%s): H = %llu beyond the %u elements an engine streams per partition", x->name,
                       (unsigned long long)H, (unsigned)geo->sbuf_free_elems_max);
    const nx_dtype dt = p.dtype;
    const int row = p.quant == NX_RMSNORM_QUANT_ROW, stat = p.quant == NX_RMSNORM_QUANT_STATIC;
    /* the work tile holds r, the squares and y: fp32 when y feeds the row scale */
    const nx_dtype wdt = row ? NX_DT_FP32 : dt;
    uint64_t gamma_bytes = nx_rows_tile_bytes(H, p.gamma_dtype);
    uint64_t set = nx_rows_tile_bytes(H, dt) + nx_rows_tile_bytes(H, wdt) + 64 +
                   (row ? nx_rows_tile_bytes(H, NX_DT_FP8_E4M3) + nx_rows_tile_bytes(r.partitions, NX_DT_FP32) : 0);
    uint64_t fixed = gamma_bytes + 64; /* gamma and the scale column */
    /* the broadcast's one-partition row and ones column, before the sets */
    if (fixed + set > r.sbuf_bytes || 2 * gamma_bytes + nx_rows_tile_bytes(r.partitions, p.gamma_dtype) > r.sbuf_bytes)
        return nx_fail(err,
                       "operand 0 (%s): H = %llu needs %llu bytes per partition (gamma and one buffer set), SBUF "
                       "has %llu",
                       x->name, (unsigned long long)H, (unsigned long long)(fixed + set),
                       (unsigned long long)r.sbuf_bytes);
    uint32_t nbufs = (uint32_t)((r.sbuf_bytes - fixed) / set);
    if (nbufs > RMS_MAX_BUFS) nbufs = RMS_MAX_BUFS;

    nx_tile gamma, scale_t;
    if (nx_rows_broadcast(&r, "gamma", g->hbm_offset, p.gamma_dtype, H, p.gamma_dtype, &gamma, err) != 0) return -1;
    if (stat) {
        /* the one scale value in every partition: HBM rows of pitch 0 */
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "scale", NX_DT_FP32, r.partitions, 1, &scale_t, err) != 0) return -1;
        nx_operand sd = nx_tile_ap(&scale_t);
        nx_operand ss = nx_ap_hbm_rows(NX_DT_FP32, call->args[p.scale_operand].hbm_offset, r.partitions, 0, 1);
        if (nx_kctx_dma_on(k, NX_ROWS_LOAD_LANE + 1, &sd, &ss, err) != 0) return -1;
    }
    rms_bufs b[RMS_MAX_BUFS];
    for (uint32_t i = 0; i < nbufs; i++) {
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "x_tile", dt, r.partitions, H, &b[i].xt, err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "work_tile", wdt, r.partitions, H, &b[i].wt, err) != 0 ||
            (row && nx_kctx_alloc(k, NX_OPK_SBUF, "q_tile", NX_DT_FP8_E4M3, r.partitions, H, &b[i].qt, err) != 0) ||
            (row && nx_kctx_alloc(k, NX_OPK_PSUM, "s_t", NX_DT_FP32, 1, r.partitions, &b[i].s_ps, err) != 0) ||
            (row && nx_kctx_alloc(k, NX_OPK_SBUF, "s_row", NX_DT_FP32, 1, r.partitions, &b[i].s_sb, err) != 0) ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "row_stats", NX_DT_FP32, r.partitions, 4, &b[i].small, err) != 0)
            return -1;
    }

    uint64_t lo, hi;
    nx_kctx_rows(k, p.rows, &lo, &hi);
    const uint64_t P = r.partitions, ntiles = (hi - lo + P - 1) / P;
    const nx_dtype qdt = NX_DT_FP8_E4M3;
    /* loads run nbufs - 1 tiles ahead of the compute */
    for (uint64_t t = 0; t < ntiles + nbufs - 1; t++) {
        if (t < ntiles) {
            const rms_bufs *L = &b[t % nbufs];
            uint64_t r0 = lo + t * P;
            uint32_t n = (uint32_t)(hi - r0 < P ? hi - r0 : P);
            nx_operand xd = nx_rows_view(&L->xt, dt, n, 0, H), xs = nx_rows_hbm(dt, x->hbm_offset, r0, n, H);
            if (nx_rows_load(&r, &xd, &xs, err) != 0) return -1;
            if (res) {
                nx_operand rd = nx_rows_view(&L->wt, dt, n, 0, H), rs = nx_rows_hbm(dt, res->hbm_offset, r0, n, H);
                if (nx_rows_load(&r, &rd, &rs, err) != 0) return -1;
            }
        }
        if (t + 1 < nbufs) continue;
        uint64_t c = t + 1 - nbufs; /* the tile to compute */
        const rms_bufs *B = &b[c % nbufs];
        uint64_t r0 = lo + c * P;
        uint32_t n = (uint32_t)(hi - r0 < P ? hi - r0 : P);
        nx_operand xv = nx_rows_view(&B->xt, dt, n, 0, H), wv = nx_rows_view(&B->wt, wdt, n, 0, H);
        nx_operand ss = small_col(&B->small, n, 0), rstd = small_col(&B->small, n, 1);
        if (res) {
            nx_operand rv = nx_rows_view(&B->wt, dt, n, 0, H), xod = nx_rows_hbm(dt, xo->hbm_offset, r0, n, H);
            if (nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_ADD, &xv, &xv, &rv, err) != 0 ||
                nx_rows_store(&r, &xod, &xv, err) != 0)
                return -1;
        }
        if (nx_rms_stats(k, &wv, &xv, &ss, &rstd, H, p.eps, err) != 0) return -1;
        nx_operand gv = nx_rows_view(&gamma, p.gamma_dtype, n, 0, H);
        if (stat) {
            nx_operand sc = nx_rows_view(&scale_t, NX_DT_FP32, n, 0, 1);
            nx_operand qv = nx_rows_view(&B->wt, qdt, n, 0, H), qo = nx_rows_hbm(qdt, out->hbm_offset, r0, n, H);
            if (nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_DIVIDE, &rstd, &rstd, &sc, err) != 0 ||
                nx_kctx_scalar_tensor_tensor(k, NX_ENG_POOL, &qv, &xv, NX_ALU_MULTIPLY, &rstd, NX_ALU_MULTIPLY, &gv,
                                             err) != 0 ||
                nx_rows_store(&r, &qo, &qv, err) != 0)
                return -1;
            continue;
        }
        if (nx_kctx_scalar_tensor_tensor(k, NX_ENG_POOL, &wv, &xv, NX_ALU_MULTIPLY, &rstd, NX_ALU_MULTIPLY, &gv, err) !=
            0)
            return -1;
        if (!row) {
            nx_operand yo = nx_rows_hbm(dt, out->hbm_offset, r0, n, H);
            if (nx_rows_store(&r, &yo, &wv, err) != 0) return -1;
            continue;
        }
        /* the row scale of tile c - 1 after the first stage of tile c, so
         * ScalarE squares the next tile while GpSimd makes this one's y */
        if (c > 0 && row_finish(k, &r, &p, &b[(c - 1) % nbufs], out, so, lo + (c - 1) * P, hi, err) != 0) return -1;
        if (c + 1 == ntiles && row_finish(k, &r, &p, B, out, so, r0, hi, err) != 0) return -1;
    }
    return 0;
}
