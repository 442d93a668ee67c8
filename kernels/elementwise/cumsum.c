/* cumsum: ONNX CumSum as a scan on VectorE: tensor_tensor_scan (acc = acc
 * + x, the accumulator an fp32 engine value) along lines on the
 * partitions, the carry between chunks of the axis passed as the next
 * scan's per-partition initial value, the way the NKI ISA's
 * tensor_tensor_scan is used for prefix sums and linear recurrences (the
 * Mamba prefix scan of the public NKI samples). Operands and math:
 * kernels/elementwise/elementwise.h; plan and figures: docs/parts/norms.md.
 *
 * Per step (a tile of up to 128 lines and a chunk of up to 4096 elements
 * of the axis; the lines' chunks in order, last to first with reverse),
 * over up to four buffer sets:
 *   DMA   x chunk -> xt
 *   DVE   yt = scan(xt) from the carry (-0 for a line's first chunk, so a
 *         first -0 stays -0, as numpy's cumsum keeps it); with
 *         exclusive the results sit one slot over and the carry (or 0)
 *         fills the free slot; with reverse both views run backwards
 *   DMA   yt -> y (fp32 in SBUF; a bf16 y is rounded once by the DMA) */
#include "cumsum_int.h"
#include "elementwise.h"
#include "kernels/norms/rows.h"

#define CS_MAX_BUFS 4
#define CS_CHUNK 4096

int nx_cumsum(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    if (call->n_inputs != 1 || call->nargs != 2)
        return nx_fail(err, "cumsum: expects 1 operand and 1 result, got %u and %u", call->n_inputs,
                       call->nargs - call->n_inputs);
    const nx_tensor_ref *x = &call->args[0], *y = &call->args[1];
    nx_norm_tensor xd = {x->name, x->dtype, x->ndims, x->shape};
    nx_cumsum_params p;
    if (nx_cumsum_read(call->attrs, &xd, 1, &p, err) != 0) return -1;
    if (p.dtype == NX_DT_INT32) return nx_cumsum_int32(k, &p, x, y, err);
    nx_rows r;
    nx_rows_init(&r, k);
    const uint32_t P = r.partitions;
    const uint64_t CH = p.A < CS_CHUNK ? p.A : CS_CHUNK, nchunks = (p.A + CH - 1) / CH;
    const uint32_t nbufs = CS_MAX_BUFS;
    nx_tile xt[CS_MAX_BUFS], yt[CS_MAX_BUFS];
    for (uint32_t i = 0; i < nbufs; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "x_chunk", p.dtype, P, CH, &xt[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "sum_chunk", NX_DT_FP32, P, CH + 1, &yt[i], err) != 0)
            return -1;
    const nx_lines ln = {p.dtype, p.outer, p.A, p.inner};
    uint64_t lo, hi;
    nx_kctx_rows(k, nx_lines_count(&ln, P), &lo, &hi);
    const uint64_t steps = (hi - lo) * nchunks;
    uint64_t carry_slot = 0; /* the previous step's carry-out element */
    for (uint64_t s = 0; s < steps + nbufs - 1; s++) {
        if (s < steps) {
            nx_lines_tile tl = nx_lines_at(&ln, P, lo + s / nchunks);
            uint64_t kk = s % nchunks, ch = p.reverse ? nchunks - 1 - kk : kk, a0 = ch * CH;
            uint64_t n = p.A - a0 < CH ? p.A - a0 : CH;
            nx_operand d = nx_rows_view(&xt[s % nbufs], p.dtype, tl.n, 0, n);
            nx_operand src = nx_lines_hbm(&ln, p.dtype, x->hbm_offset, &tl, a0, n);
            if (nx_rows_load(&r, &d, &src, err) != 0) return -1;
        }
        if (s + 1 < nbufs) continue;
        const uint64_t c = s + 1 - nbufs, kk = c % nchunks, ch = p.reverse ? nchunks - 1 - kk : kk, a0 = ch * CH;
        const uint64_t n = p.A - a0 < CH ? p.A - a0 : CH;
        const uint32_t b = (uint32_t)(c % nbufs), pb = (uint32_t)((c + nbufs - 1) % nbufs);
        nx_lines_tile tl = nx_lines_at(&ln, P, lo + c / nchunks);
        const int dir = p.reverse ? -1 : 1;
        /* where the scan writes, the output run, the carry-in slot (exclusive) and the carry out */
        uint64_t dst0, out0, slot = 0, cout;
        if (!p.reverse) {
            dst0 = p.exclusive ? 1 : 0, out0 = 0, slot = 0, cout = p.exclusive ? n : n - 1;
        } else {
            dst0 = n - 1, out0 = p.exclusive ? 1 : 0, slot = n, cout = 0;
        }
        nx_operand carry = kk ? nx_rows_view(&yt[pb], NX_DT_FP32, tl.n, carry_slot, 1) : nx_imm(-0.0, NX_DT_FP32);
        if (p.exclusive) {
            nx_operand sl = nx_rows_view(&yt[b], NX_DT_FP32, tl.n, slot, 1);
            int rc = kk ? nx_kctx_tensor_copy(k, NX_ENG_DVE, &sl, &carry, err)
                        : nx_kctx_memset(k, NX_ENG_DVE, &sl, 0.0, err);
            if (rc != 0) return -1;
        }
        nx_insn sc = nx_insn_make(NX_OP_TENSOR_TENSOR_SCAN);
        sc.alu0 = NX_ALU_ADD;
        sc.alu1 = NX_ALU_BYPASS;
        sc.op[0] = nx_rows_run(&yt[b], NX_DT_FP32, tl.n, dst0, n, dir);
        sc.op[1] = sc.op[2] = nx_rows_run(&xt[b], p.dtype, tl.n, p.reverse ? n - 1 : 0, n, dir);
        sc.op[3] = carry;
        nx_operand from = nx_rows_view(&yt[b], NX_DT_FP32, tl.n, out0, n);
        nx_operand to = nx_lines_hbm(&ln, p.dtype, y->hbm_offset, &tl, a0, n);
        if (nx_kctx_emit(k, NX_ENG_DVE, &sc, err) != 0 || nx_rows_store(&r, &to, &from, err) != 0) return -1;
        carry_slot = cout;
    }
    return 0;
}
