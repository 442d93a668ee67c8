/* Emit helpers: build one instruction and hand it to k_emit, which adds the
 * synchronisation. */
#include <stdint.h>

#include "author_impl.h"
#include "isa/opcodes.h"

static int dma_common(nx_kctx *k, nx_opcode op, uint32_t lane, const nx_operand *dst,
                      const nx_operand *src, nx_error *err) {
    lane %= k->nlanes;
    nx_insn in = nx_insn_make(op);
    in.iparam[0] = (int32_t)nx_kctx_lane_queue(k, lane);
    in.op[0] = *dst;
    in.op[1] = *src;
    return k_emit(k, NX_ENG_SP, (int)lane, &in, NULL, err);
}

int nx_kctx_dma(nx_kctx *k, const nx_operand *dst, const nx_operand *src, nx_error *err) {
    uint32_t lane = k->next_lane;
    k->next_lane = (k->next_lane + 1) % k->nlanes;
    return dma_common(k, NX_OP_DMA_COPY, lane, dst, src, err);
}

int nx_kctx_dma_on(nx_kctx *k, uint32_t lane, const nx_operand *dst, const nx_operand *src,
                   nx_error *err) {
    return dma_common(k, NX_OP_DMA_COPY, lane, dst, src, err);
}

int nx_kctx_dma_split(nx_kctx *k, uint32_t first_lane, uint32_t pieces, const nx_operand *dst,
                      const nx_operand *src, nx_error *err) {
    uint32_t rows = dst->partition_count;
    if (src->partition_count != rows)
        return nx_fail(err, "sp dma_copy: dst has %u partitions but src has %u", rows,
                       (unsigned)src->partition_count);
    if (pieces < 1) pieces = 1;
    if (pieces > rows) pieces = rows;
    uint32_t base = rows / pieces, extra = rows % pieces, r0 = 0;
    for (uint32_t i = 0; i < pieces; i++) {
        uint32_t n = base + (i < extra);
        nx_operand d = nx_operand_rows(dst, r0, n), s = nx_operand_rows(src, r0, n);
        if (dma_common(k, NX_OP_DMA_COPY, first_lane + i, &d, &s, err) != 0) return -1;
        r0 += n;
    }
    return 0;
}

int nx_kctx_dma_insn(nx_kctx *k, uint32_t lane, const nx_insn *insn, nx_error *err) {
    if (insn->opcode != NX_OP_DMA_COPY && insn->opcode != NX_OP_DMA_TRANSPOSE)
        return nx_fail(err, "nx_kctx_dma_insn: opcode %u is not a DMA instruction", (unsigned)insn->opcode);
    lane %= k->nlanes;
    nx_insn in = *insn;
    in.iparam[0] = (int32_t)nx_kctx_lane_queue(k, lane);
    return k_emit(k, NX_ENG_SP, (int)lane, &in, NULL, err);
}

int nx_kctx_dma_transpose(nx_kctx *k, uint32_t lane, const nx_operand *dst,
                          const nx_operand *src, nx_error *err) {
    return dma_common(k, NX_OP_DMA_TRANSPOSE, lane, dst, src, err);
}

int nx_kctx_emit(nx_kctx *k, nx_engine engine, const nx_insn *insn, nx_error *err) {
    const char *mn = nx_opcode_mnemonic(insn->opcode);
    if ((unsigned)engine >= K_COMPUTE_AGENTS)
        return nx_fail(err, "%s %s: nx_kctx_emit takes compute engines only (DMA: nx_kctx_dma*)",
                       nx_engine_name(engine), mn);
    if (nx_opcode_is_dma(insn->opcode))
        return nx_fail(err, "%s %s: DMA goes through nx_kctx_dma*", nx_engine_name(engine), mn);
    switch (insn->opcode) {
    case NX_OP_CORE_BARRIER:
        return nx_fail(err, "%s %s: use nx_kctx_barrier", nx_engine_name(engine), mn);
    case NX_OP_END:
        return nx_fail(err, "%s %s: nx_kctx_finish ends the streams", nx_engine_name(engine), mn);
    default: break;
    }
    nx_insn in = *insn;
    return k_emit(k, engine, -1, &in, NULL, err);
}

static int two_operand(nx_kctx *k, nx_engine engine, nx_opcode op, const nx_operand *dst,
                       const nx_operand *src, nx_error *err) {
    nx_insn in = nx_insn_make(op);
    in.op[0] = *dst;
    in.op[1] = *src;
    return nx_kctx_emit(k, engine, &in, err);
}

int nx_kctx_tensor_copy(nx_kctx *k, nx_engine engine, const nx_operand *dst,
                        const nx_operand *src, nx_error *err) {
    return two_operand(k, engine, NX_OP_TENSOR_COPY, dst, src, err);
}

int nx_kctx_transpose(nx_kctx *k, nx_engine engine, const nx_operand *dst, const nx_operand *src,
                      nx_error *err) {
    return two_operand(k, engine, NX_OP_TRANSPOSE, dst, src, err);
}

int nx_kctx_load_stationary(nx_kctx *k, const nx_operand *src, nx_error *err) {
    nx_insn in = nx_insn_make(NX_OP_LOAD_STATIONARY);
    in.op[0] = *src;
    return nx_kctx_emit(k, NX_ENG_PE, &in, err);
}

int nx_kctx_multiply_moving(nx_kctx *k, const nx_operand *dst, const nx_operand *moving,
                            int accumulate, nx_error *err) {
    nx_insn in = nx_insn_make(NX_OP_MULTIPLY_MOVING);
    in.op[0] = *dst;
    in.op[1] = *moving;
    if (accumulate) in.flags |= NX_FLAG_ACCUMULATE;
    return nx_kctx_emit(k, NX_ENG_PE, &in, err);
}

int nx_kctx_memset(nx_kctx *k, nx_engine engine, const nx_operand *dst, double value,
                   nx_error *err) {
    nx_operand v = nx_imm(value, (nx_dtype)dst->dtype);
    return two_operand(k, engine, NX_OP_MEMSET, dst, &v, err);
}

int nx_kctx_iota(nx_kctx *k, const nx_operand *dst, const nx_operand *pattern, nx_error *err) {
    return two_operand(k, NX_ENG_POOL, NX_OP_IOTA, dst, pattern, err);
}

int nx_kctx_tensor_tensor(nx_kctx *k, nx_engine engine, nx_alu_op op, const nx_operand *dst,
                          const nx_operand *in0, const nx_operand *in1, nx_error *err) {
    nx_insn in = nx_insn_make(NX_OP_TENSOR_TENSOR);
    in.alu0 = (uint8_t)op;
    in.op[0] = *dst;
    in.op[1] = *in0;
    in.op[2] = *in1;
    return nx_kctx_emit(k, engine, &in, err);
}

int nx_kctx_tensor_scalar(nx_kctx *k, nx_engine engine, const nx_operand *dst, const nx_operand *in,
                          nx_alu_op op0, const nx_operand *s0, nx_alu_op op1, const nx_operand *s1,
                          nx_error *err) {
    nx_insn t = nx_insn_make(NX_OP_TENSOR_SCALAR);
    t.alu0 = (uint8_t)op0;
    t.alu1 = (uint8_t)op1;
    t.op[0] = *dst;
    t.op[1] = *in;
    t.op[2] = *s0;
    if (s1) t.op[3] = *s1;
    return nx_kctx_emit(k, engine, &t, err);
}

int nx_kctx_scalar_tensor_tensor(nx_kctx *k, nx_engine engine, const nx_operand *dst,
                                 const nx_operand *in0, nx_alu_op op0, const nx_operand *s,
                                 nx_alu_op op1, const nx_operand *in1, nx_error *err) {
    nx_insn t = nx_insn_make(NX_OP_SCALAR_TENSOR_TENSOR);
    t.alu0 = (uint8_t)op0;
    t.alu1 = (uint8_t)op1;
    t.op[0] = *dst;
    t.op[1] = *in0;
    t.op[2] = *s;
    t.op[3] = *in1;
    return nx_kctx_emit(k, engine, &t, err);
}

int nx_kctx_activation(nx_kctx *k, nx_act_func func, const nx_operand *dst, const nx_operand *in,
                       double scale, double bias, nx_error *err) {
    nx_insn a = nx_insn_make(NX_OP_ACTIVATION);
    a.func = (uint8_t)func;
    a.op[0] = *dst;
    a.op[1] = *in;
    a.op[2] = nx_imm(scale, NX_DT_FP32);
    a.op[3] = nx_imm(bias, NX_DT_FP32);
    return nx_kctx_emit(k, NX_ENG_ACT, &a, err);
}
