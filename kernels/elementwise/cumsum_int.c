/* cumsum of int32, exact with two's-complement wrap (ONNX CumSum on int32),
 * on engines that add in fp32 (exact only below 2^24): each element is split
 * into its low and high 16 bits (bitvec and / shift on int32 tiles, exact:
 * bitvec ops take integer dtypes only), each half is
 * scanned by tensor_tensor_scan in segments of 255 elements, so a running
 * sum from a carry below 2^16 stays below 2^24, and between segments the
 * carries are reduced mod 2^16 (the low half's overflow moves into the high
 * half; the high half's overflow is a multiple of 2^32 and dropped). The
 * result is (high + (low >> 16)) << 16 | (low & 0xffff), whose 32-bit
 * pattern an int32 store keeps (docs/parts/insns-dve.md, "Bitvec ops").
 * Same tiling, chunking and exclusive / reverse views as the float scan
 * (kernels/elementwise/cumsum.c). */
#include "cumsum_int.h"

#include "kernels/norms/rows.h"

#define CI_CHUNK 4080 /* 16 segments */
#define CI_SEG 255
#define CI_BUFS 2

static nx_operand col(const nx_tile *t, uint32_t lines, uint64_t at) { return nx_rows_view(t, NX_DT_INT32, lines, at, 1); }

static int ts(nx_kctx *k, const nx_operand *dst, const nx_operand *in, nx_alu_op op0, double s0, nx_alu_op op1,
              double s1, nx_error *err) {
    nx_operand a = nx_imm(s0, NX_DT_INT32), b = nx_imm(s1, NX_DT_INT32);
    return nx_kctx_tensor_scalar(k, NX_ENG_DVE, dst, in, op0, &a, op1, op1 == NX_ALU_BYPASS ? NULL : &b, err);
}

int nx_cumsum_int32(nx_kctx *k, const nx_cumsum_params *p, const nx_tensor_ref *x, const nx_tensor_ref *y,
                    nx_error *err) {
    nx_rows r;
    nx_rows_init(&r, k);
    const uint32_t P = r.partitions;
    const uint64_t CH = p->A < CI_CHUNK ? p->A : CI_CHUNK, nchunks = (p->A + CH - 1) / CH;
    nx_tile xt[CI_BUFS], lo_t[CI_BUFS], hi_t[CI_BUFS], out_t[CI_BUFS], carry[CI_BUFS];
    for (uint32_t i = 0; i < CI_BUFS; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "x_chunk", NX_DT_INT32, P, CH, &xt[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "low_sums", NX_DT_INT32, P, CH + 1, &lo_t[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "high_sums", NX_DT_INT32, P, CH + 1, &hi_t[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "out_chunk", NX_DT_INT32, P, CH + 1, &out_t[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "carries", NX_DT_INT32, P, 4, &carry[i], err) != 0)
            return -1;
    const nx_lines ln = {NX_DT_INT32, p->outer, p->A, p->inner};
    uint64_t lo, hi;
    nx_kctx_rows(k, nx_lines_count(&ln, P), &lo, &hi);
    const uint64_t steps = (hi - lo) * nchunks;
    const int dir = p->reverse ? -1 : 1;
    for (uint64_t s = 0; s < steps; s++) {
        const uint32_t b = (uint32_t)(s % CI_BUFS), pb = (uint32_t)((s + CI_BUFS - 1) % CI_BUFS);
        const uint64_t kk = s % nchunks, ch = p->reverse ? nchunks - 1 - kk : kk, a0 = ch * CH;
        const uint64_t n = p->A - a0 < CH ? p->A - a0 : CH;
        nx_lines_tile tl = nx_lines_at(&ln, P, lo + s / nchunks);
        const uint32_t m = tl.n;
        nx_operand xd = nx_rows_view(&xt[b], NX_DT_INT32, m, 0, n);
        nx_operand src = nx_lines_hbm(&ln, NX_DT_INT32, x->hbm_offset, &tl, a0, n);
        if (nx_rows_load(&r, &xd, &src, err) != 0) return -1;
        /* the halves, integers in [0, 65536) (exact in the engines' fp32), in slots [e0, e0 + n) */
        const uint64_t e0 = !p->reverse && p->exclusive ? 1 : 0;
        nx_operand lv = nx_rows_view(&lo_t[b], NX_DT_INT32, m, e0, n), hv = nx_rows_view(&hi_t[b], NX_DT_INT32, m, e0, n);
        if (ts(k, &lv, &xd, NX_ALU_BITWISE_AND, 0xffff, NX_ALU_BYPASS, 0, err) != 0 ||
            ts(k, &hv, &xd, NX_ALU_SHIFT_RIGHT, 16, NX_ALU_BITWISE_AND, 0xffff, err) != 0)
            return -1;
        /* carries in: (low, high) from the previous chunk of the line, or 0 */
        nx_operand cl = kk ? col(&carry[pb], m, 0) : nx_imm(0.0, NX_DT_FP32);
        nx_operand chh = kk ? col(&carry[pb], m, 1) : nx_imm(0.0, NX_DT_FP32);
        if (p->exclusive) { /* the free slot holds the carry-in */
            uint64_t slot = p->reverse ? n : 0;
            nx_operand sl = col(&lo_t[b], m, slot), sh = col(&hi_t[b], m, slot);
            if (kk && (nx_kctx_tensor_copy(k, NX_ENG_DVE, &sl, &cl, err) != 0 ||
                       nx_kctx_tensor_copy(k, NX_ENG_DVE, &sh, &chh, err) != 0))
                return -1;
            if (!kk && (nx_kctx_memset(k, NX_ENG_DVE, &sl, 0.0, err) != 0 || nx_kctx_memset(k, NX_ENG_DVE, &sh, 0.0, err) != 0))
                return -1;
        }
        /* segments in scan order: elements [g, g + len) of the scan's order */
        for (uint64_t g = 0; g < n; g += CI_SEG) {
            uint64_t len = n - g < CI_SEG ? n - g : CI_SEG;
            /* in place over the halves' slots, backwards with reverse */
            uint64_t rd0 = p->reverse ? e0 + n - 1 - g : e0 + g;
            nx_operand lin = nx_rows_run(&lo_t[b], NX_DT_INT32, m, rd0, len, dir), hin = nx_rows_run(&hi_t[b], NX_DT_INT32, m, rd0, len, dir);
            nx_operand lout = lin, hout = hin;
            nx_insn sc = nx_insn_make(NX_OP_TENSOR_TENSOR_SCAN);
            sc.alu0 = NX_ALU_ADD;
            sc.op[0] = lout;
            sc.op[1] = sc.op[2] = lin;
            sc.op[3] = cl;
            nx_insn sh = sc;
            sh.op[0] = hout;
            sh.op[1] = sh.op[2] = hin;
            sh.op[3] = chh;
            if (nx_kctx_emit(k, NX_ENG_DVE, &sc, err) != 0 || nx_kctx_emit(k, NX_ENG_DVE, &sh, err) != 0) return -1;
            /* carries out, reduced mod 2^16: low & 0xffff; (high + (low >> 16)) & 0xffff */
            uint64_t last = p->reverse ? rd0 - (len - 1) : rd0 + len - 1;
            nx_operand ll = col(&lo_t[b], m, last), hl = col(&hi_t[b], m, last);
            nx_operand c0 = col(&carry[b], m, 0), c1 = col(&carry[b], m, 1), c2 = col(&carry[b], m, 2);
            if (ts(k, &c2, &ll, NX_ALU_SHIFT_RIGHT, 16, NX_ALU_BYPASS, 0, err) != 0 ||
                nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_ADD, &c2, &c2, &hl, err) != 0 ||
                ts(k, &c1, &c2, NX_ALU_BITWISE_AND, 0xffff, NX_ALU_BYPASS, 0, err) != 0 ||
                ts(k, &c0, &ll, NX_ALU_BITWISE_AND, 0xffff, NX_ALU_BYPASS, 0, err) != 0)
                return -1;
            cl = c0;
            chh = c1;
        }
        /* out = (high + (low >> 16)) << 16 | (low & 0xffff) over the output
         * slots: [0, n) forward (the exclusive carry-in at 0), [1, n + 1)
         * reverse exclusive, [0, n) reverse inclusive */
        const uint64_t o0 = p->reverse && p->exclusive ? 1 : 0;
        nx_operand L = nx_rows_view(&lo_t[b], NX_DT_INT32, m, o0, n), Hh = nx_rows_view(&hi_t[b], NX_DT_INT32, m, o0, n);
        nx_operand O = nx_rows_view(&out_t[b], NX_DT_INT32, m, 0, n);
        nx_operand to = nx_lines_hbm(&ln, NX_DT_INT32, y->hbm_offset, &tl, a0, n);
        if (ts(k, &O, &L, NX_ALU_SHIFT_RIGHT, 16, NX_ALU_BYPASS, 0, err) != 0 ||
            nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_ADD, &O, &O, &Hh, err) != 0 ||
            ts(k, &O, &O, NX_ALU_SHIFT_LEFT, 16, NX_ALU_BYPASS, 0, err) != 0 ||
            ts(k, &L, &L, NX_ALU_BITWISE_AND, 0xffff, NX_ALU_BYPASS, 0, err) != 0 ||
            nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_BITWISE_OR, &O, &O, &L, err) != 0 ||
            nx_rows_store(&r, &to, &O, err) != 0)
            return -1;
    }
    return 0;
}
