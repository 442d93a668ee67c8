/* layernorm: ONNX LayerNormalization (opset 17) as the NKI layernorm
 * tutorial computes it (aws-neuron-sdk general/nki/tutorials/layernorm.rst,
 * the bn_stats / bn_aggr version: rows on the partitions, statistics on
 * VectorE over chunks of BN_STATS_FMAX = 512, then the shift and scale),
 * with Scale and B broadcast to every partition through the PE. Operands
 * and math: kernels/norms/norms.h; plan and figures: docs/parts/norms.md.
 *
 * Per tile of up to 128 rows, over up to six buffer sets:
 *   DMA   X rows -> xt
 *   DVE   bn_stats per 512-chunk, bn_aggr -> (mean, var); nm = -mean
 *   ACT   rstd = rsqrt(var + epsilon); ct = xt + nm (fp32, one rounding)
 *   POOL  ct = (ct * rstd) * Scale; [xt = ct + B]   (xt in X's dtype)
 *   DMA   xt -> Y; (mean, rstd) transposed on the PE into two rows of
 *         X's dtype -> Mean, InvStdDev (contiguous rows, not 128 one-element
 *         transfers) */
#include "norms.h"
#include "rows.h"

#define LN_MAX_BUFS 6
#define LN_CHUNK 512

int nx_layernorm(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_norm_tensor in[3];
    if (call->n_inputs < 2 || call->n_inputs > 3 || call->nargs != call->n_inputs + 3)
        return nx_fail(err, "layernorm: expects 2 or 3 operands and 3 results, got %u and %u", call->n_inputs,
                       call->nargs - call->n_inputs);
    for (uint32_t i = 0; i < call->n_inputs; i++)
        in[i] = (nx_norm_tensor){call->args[i].name, call->args[i].dtype, call->args[i].ndims, call->args[i].shape};
    nx_layernorm_params p;
    if (nx_layernorm_read(call->attrs, in, call->n_inputs, &p, err) != 0) return -1;
    const nx_tensor_ref *x = &call->args[0], *yo = &call->args[call->n_inputs];
    const nx_tensor_ref *mo = yo + 1, *ro = yo + 2;
    const uint64_t H = p.H;
    nx_rows r;
    nx_rows_init(&r, k);
    const nx_geometry *geo = nx_kctx_geometry(k);
    if (H > geo->sbuf_free_elems_max)
        return nx_fail(err, "operand 0 (%s): %llu elements from axis %u beyond the %u an engine streams per partition",
                       x->name, (unsigned long long)H, p.axis, (unsigned)geo->sbuf_free_elems_max);
    const nx_dtype dt = p.dtype;
    const uint64_t nchunks = (H + LN_CHUNK - 1) / LN_CHUNK;
    uint64_t fixed = nx_rows_tile_bytes(H, p.scale_dtype) + (p.bias ? nx_rows_tile_bytes(H, p.bias_dtype) : 0);
    uint64_t set = nx_rows_tile_bytes(H, dt) + nx_rows_tile_bytes(H, NX_DT_FP32) +
                   nx_rows_tile_bytes(6 * nchunks + 4, NX_DT_FP32);
    if (fixed + set > r.sbuf_bytes || fixed + 2 * nx_rows_tile_bytes(H, NX_DT_FP32) > r.sbuf_bytes)
        return nx_fail(err,
                       "operand 0 (%s): %llu elements from axis %u need %llu bytes per partition (Scale%s and one "
                       "buffer set), SBUF has %llu",
                       x->name, (unsigned long long)H, p.axis, (unsigned long long)(fixed + set), p.bias ? ", B" : "",
                       (unsigned long long)r.sbuf_bytes);
    uint32_t nbufs = (uint32_t)((r.sbuf_bytes - fixed) / set);
    if (nbufs > LN_MAX_BUFS) nbufs = LN_MAX_BUFS;
    nx_tile gamma, beta;
    if (nx_rows_broadcast(&r, "scale", call->args[1].hbm_offset, p.scale_dtype, H, p.scale_dtype, &gamma, err) != 0)
        return -1;
    if (p.bias &&
        nx_rows_broadcast(&r, "bias", call->args[2].hbm_offset, p.bias_dtype, H, p.bias_dtype, &beta, err) != 0)
        return -1;
    nx_tile xt[LN_MAX_BUFS], ct[LN_MAX_BUFS], st[LN_MAX_BUFS], sp[LN_MAX_BUFS], so[LN_MAX_BUFS];
    for (uint32_t i = 0; i < nbufs; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "x_tile", dt, r.partitions, H, &xt[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "centred_tile", NX_DT_FP32, r.partitions, H, &ct[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "row_stats", NX_DT_FP32, r.partitions, 6 * nchunks + 4, &st[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_PSUM, "stats_t", NX_DT_FP32, 2, r.partitions, &sp[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "stats_out", dt, 2, r.partitions, &so[i], err) != 0)
            return -1;
    uint64_t lo, hi;
    nx_kctx_rows(k, p.rows, &lo, &hi);
    const uint64_t P = r.partitions, ntiles = (hi - lo + P - 1) / P;
    const nx_operand one = nx_imm(1.0, NX_DT_FP32), minus = nx_imm(-1.0, NX_DT_FP32);
    for (uint64_t t = 0; t < ntiles + nbufs - 1; t++) {
        if (t < ntiles) {
            uint64_t r0 = lo + t * P;
            uint32_t n = (uint32_t)(hi - r0 < P ? hi - r0 : P);
            nx_operand d = nx_rows_view(&xt[t % nbufs], dt, n, 0, H), s = nx_rows_hbm(dt, x->hbm_offset, r0, n, H);
            if (nx_rows_load(&r, &d, &s, err) != 0) return -1;
        }
        if (t + 1 < nbufs) continue;
        uint64_t c = t + 1 - nbufs, r0 = lo + c * P;
        uint32_t b = (uint32_t)(c % nbufs), n = (uint32_t)(hi - r0 < P ? hi - r0 : P);
        nx_operand xv = nx_rows_view(&xt[b], dt, n, 0, H), cv = nx_rows_view(&ct[b], NX_DT_FP32, n, 0, H);
        for (uint64_t j = 0; j < nchunks; j++) {
            uint64_t c0 = j * LN_CHUNK, w = H - c0 < LN_CHUNK ? H - c0 : LN_CHUNK;
            nx_insn bs = nx_insn_make(NX_OP_BN_STATS);
            bs.op[0] = nx_rows_view(&st[b], NX_DT_FP32, n, 6 * j, 6);
            bs.op[1] = nx_rows_view(&xt[b], dt, n, c0, w);
            if (nx_kctx_emit(k, NX_ENG_DVE, &bs, err) != 0) return -1;
        }
        const uint64_t m = 6 * nchunks; /* mean, var then rstd in its place, -mean */
        nx_operand mv = nx_rows_view(&st[b], NX_DT_FP32, n, m, 2), mean = nx_rows_view(&st[b], NX_DT_FP32, n, m, 1);
        nx_operand rstd = nx_rows_view(&st[b], NX_DT_FP32, n, m + 1, 1), nm = nx_rows_view(&st[b], NX_DT_FP32, n, m + 2, 1);
        nx_insn ag = nx_insn_make(NX_OP_BN_AGGR);
        ag.op[0] = mv;
        ag.op[1] = nx_rows_view(&st[b], NX_DT_FP32, n, 0, m);
        if (nx_kctx_emit(k, NX_ENG_DVE, &ag, err) != 0 ||
            nx_kctx_tensor_scalar(k, NX_ENG_DVE, &nm, &mean, NX_ALU_MULTIPLY, &minus, NX_ALU_BYPASS, NULL, err) != 0 ||
            nx_kctx_activation(k, NX_ACT_RSQRT, &rstd, &rstd, 1.0, p.epsilon, err) != 0)
            return -1;
        nx_insn sh = nx_insn_make(NX_OP_ACTIVATION);
        sh.op[0] = cv;
        sh.op[1] = xv;
        sh.op[2] = one;
        sh.op[3] = nm;
        nx_operand gv = nx_rows_view(&gamma, p.scale_dtype, n, 0, H);
        nx_operand first = p.bias ? cv : xv;
        if (nx_kctx_emit(k, NX_ENG_ACT, &sh, err) != 0 ||
            nx_kctx_scalar_tensor_tensor(k, NX_ENG_POOL, &first, &cv, NX_ALU_MULTIPLY, &rstd, NX_ALU_MULTIPLY, &gv,
                                         err) != 0)
            return -1;
        if (p.bias) {
            nx_operand bv = nx_rows_view(&beta, p.bias_dtype, n, 0, H);
            if (nx_kctx_tensor_tensor(k, NX_ENG_POOL, NX_ALU_ADD, &xv, &cv, &bv, err) != 0) return -1;
        }
        nx_operand yd = nx_rows_hbm(dt, yo->hbm_offset, r0, n, H);
        const uint64_t es = nx_dtype_size(dt), cols[2] = {mo->hbm_offset + r0 * es, ro->hbm_offset + r0 * es};
        if (nx_rows_store(&r, &yd, &xv, err) != 0 ||
            nx_rows_store_cols(&r, &st[b], n, m, 2, &sp[b], &so[b], dt, cols, err) != 0)
            return -1;
    }
    return 0;
}
