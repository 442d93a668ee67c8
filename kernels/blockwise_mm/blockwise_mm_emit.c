/* The instructions blockwise_mm emits that the authoring layer has no
 * helper for, and its indirect DMA (kernels/blockwise_mm/blockwise_mm_phases.h). */
#include "blockwise_mm_phases.h"

int bw_select(bw *s, const nx_operand *dst, const nx_operand *pred, const nx_operand *on_true,
              const nx_operand *on_false, nx_error *err) {
    nx_insn i = nx_insn_make(NX_OP_SELECT);
    i.op[0] = *dst;
    i.op[1] = *pred;
    i.op[2] = *on_true;
    i.op[3] = *on_false;
    return nx_kctx_emit(s->k, NX_ENG_DVE, &i, err);
}

/* dst = func(in * scale) on ACT; scale an immediate or a per-partition scalar */
int bw_activation(bw *s, nx_act_func f, const nx_operand *dst, const nx_operand *in, const nx_operand *scale,
                  nx_error *err) {
    nx_insn a = nx_insn_make(NX_OP_ACTIVATION);
    a.func = (uint8_t)f;
    a.op[0] = *dst;
    a.op[1] = *in;
    a.op[2] = *scale;
    a.op[3] = nx_imm(0.0, NX_DT_FP32);
    return nx_kctx_emit(s->k, NX_ENG_ACT, &a, err);
}

int bw_dma(bw *s, uint32_t lane, const nx_operand *dst, const nx_operand *src, const nx_operand *off,
           uint64_t bound, uint16_t flags, nx_error *err) {
    nx_insn d = nx_insn_make(NX_OP_DMA_COPY);
    d.op[0] = *dst;
    d.op[1] = *src;
    if (off) {
        if (bound > INT32_MAX)
            return nx_fail(err, "blockwise_mm: a DMA bound of %llu rows exceeds int32",
                           (unsigned long long)bound);
        d.op[2] = *off;
        d.iparam[1] = (int32_t)bound;
    }
    d.flags = flags;
    return nx_kctx_dma_insn(s->k, lane, &d, err);
}

int bw_dma_indirect(bw *s, uint32_t lane, const nx_operand *dst, const nx_operand *src, const nx_operand *off,
                    uint64_t bound, uint16_t flags, nx_error *err) {
    return bw_dma(s, lane, dst, src, off, bound, (uint16_t)(flags | NX_FLAG_OOB_SKIP), err);
}

/* A gather cut by rows into pieces of at most BW_GATHER_ROWS on successive
 * load lanes: a transfer's time grows with its rows (each a descriptor), so
 * pieces in parallel land sooner; the indexed src keeps its base (its rows
 * come from the offsets). */
int bw_gather_split(bw *s, const nx_operand *dst, const nx_operand *src, const nx_operand *off,
                    uint64_t bound, nx_error *err) {
    uint32_t rows = dst->partition_count;
    for (uint32_t r0 = 0; r0 < rows; r0 += BW_GATHER_ROWS) {
        uint32_t nr = bw_min32(BW_GATHER_ROWS, rows - r0);
        nx_operand d = nx_operand_rows(dst, r0, nr), o = nx_operand_rows(off, r0, nr), sr = *src;
        sr.partition_count = (uint8_t)nr;
        if (bw_dma_indirect(s, bw_load_lane(s), &d, &sr, &o, bound, 0, err) != 0) return -1;
    }
    return 0;
}
