/* softmax: ONNX Softmax (opset 13) the way the public NKI kernels compute
 * it (the fused self-attention kernel of aws-neuron-sdk's NKI samples and
 * the NKI softmax tutorial step: row max on VectorE, exp(x - max) with the
 * row sum from ScalarE's accumulate form, then the division), with lines
 * on the partitions. Operands and math: kernels/norms/norms.h; plan and
 * figures: docs/parts/norms.md.
 *
 * Per tile of up to 128 lines, rotating over up to six buffer sets (a
 * tile's load-to-store latency spans more than three tiles of DMA time):
 *   DMA   x lines -> xt
 *   DVE   nm = -max(xt)                        (tensor_reduce, negate)
 *   ACT   et = exp(xt + nm) in fp32, sum = row sum (acc_out add)
 *   POOL  xt = et / sum                        (rounded once to x's dtype)
 *   DMA   xt -> y
 * The axis is the free dim: x viewed as [outer, A, inner], a line is one
 * (outer, inner) pair; with inner > 1 a tile takes up to 128 consecutive
 * inner indices of one outer index, each line A elements `inner` apart in
 * HBM (correct, but DMA moves one element per descriptor row: the last
 * axis is the fast one). */
#include "norms.h"
#include "rows.h"

#define SM_MAX_BUFS 6

int nx_softmax(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    if (call->n_inputs != 1 || call->nargs != 2)
        return nx_fail(err, "softmax: expects 1 operand and 1 result, got %u and %u", call->n_inputs,
                       call->nargs - call->n_inputs);
    const nx_tensor_ref *x = &call->args[0], *y = &call->args[1];
    nx_norm_tensor xt_desc = {x->name, x->dtype, x->ndims, x->shape};
    nx_softmax_params p;
    if (nx_softmax_read(call->attrs, &xt_desc, 1, &p, err) != 0) return -1;
    nx_rows r;
    nx_rows_init(&r, k);
    const nx_geometry *geo = nx_kctx_geometry(k);
    if (p.A > geo->sbuf_free_elems_max || p.A * p.inner > INT32_MAX)
        return nx_fail(err, "operand 0 (%s): axis %u of %llu elements beyond the %u an engine streams per partition",
                       x->name, p.axis, (unsigned long long)p.A, (unsigned)geo->sbuf_free_elems_max);
    uint64_t set = nx_rows_tile_bytes(p.A, p.dtype) + nx_rows_tile_bytes(p.A, NX_DT_FP32) + 64;
    if (set > r.sbuf_bytes)
        return nx_fail(err, "operand 0 (%s): axis %u of %llu elements needs %llu bytes per partition, SBUF has %llu",
                       x->name, p.axis, (unsigned long long)p.A, (unsigned long long)set,
                       (unsigned long long)r.sbuf_bytes);
    uint32_t nbufs = (uint32_t)(r.sbuf_bytes / set);
    if (nbufs > SM_MAX_BUFS) nbufs = SM_MAX_BUFS;
    nx_tile xt[SM_MAX_BUFS], et[SM_MAX_BUFS], st[SM_MAX_BUFS];
    for (uint32_t i = 0; i < nbufs; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "x_tile", p.dtype, r.partitions, p.A, &xt[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "exp_tile", NX_DT_FP32, r.partitions, p.A, &et[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "row_stats", NX_DT_FP32, r.partitions, 2, &st[i], err) != 0)
            return -1;
    const uint32_t P = r.partitions;
    const nx_lines ln = {p.dtype, p.outer, p.A, p.inner};
    uint64_t total = nx_lines_count(&ln, P), lo, hi;
    nx_kctx_rows(k, total, &lo, &hi);
    const uint64_t ntiles = hi - lo;
    for (uint64_t t = 0; t < ntiles + nbufs - 1; t++) {
        if (t < ntiles) {
            nx_lines_tile tl = nx_lines_at(&ln, P, lo + t);
            nx_operand d = nx_rows_view(&xt[t % nbufs], p.dtype, tl.n, 0, p.A);
            nx_operand s = nx_lines_hbm(&ln, p.dtype, x->hbm_offset, &tl, 0, p.A);
            if (nx_rows_load(&r, &d, &s, err) != 0) return -1;
        }
        if (t + 1 < nbufs) continue;
        uint64_t c = t + 1 - nbufs;
        uint32_t b = (uint32_t)(c % nbufs);
        nx_lines_tile tl = nx_lines_at(&ln, P, lo + c);
        nx_operand xv = nx_rows_view(&xt[b], p.dtype, tl.n, 0, p.A), ev = nx_rows_view(&et[b], NX_DT_FP32, tl.n, 0, p.A);
        nx_operand nm = nx_rows_view(&st[b], NX_DT_FP32, tl.n, 0, 1), sum = nx_rows_view(&st[b], NX_DT_FP32, tl.n, 1, 1);
        nx_insn red = nx_insn_make(NX_OP_TENSOR_REDUCE);
        red.alu0 = NX_ALU_MAX;
        red.iparam[0] = 1; /* axes: the one free dim */
        red.flags = NX_FLAG_NEGATE;
        red.op[0] = nm;
        red.op[1] = xv;
        nx_operand yd = nx_lines_hbm(&ln, p.dtype, y->hbm_offset, &tl, 0, p.A);
        if (nx_kctx_emit(k, NX_ENG_DVE, &red, err) != 0 || nx_rows_activation_acc(k, NX_ACT_EXP, &ev, &xv, &nm, &sum, NX_ALU_ADD, err) != 0 ||
            nx_kctx_tensor_scalar(k, NX_ENG_POOL, &xv, &ev, NX_ALU_DIVIDE, &sum, NX_ALU_BYPASS, NULL, err) != 0 ||
            nx_rows_store(&r, &yd, &xv, err) != 0)
            return -1;
    }
    return 0;
}
