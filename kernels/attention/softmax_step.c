/* The online-softmax step (kernels/attention/softmax_step.h). */
#include "softmax_step.h"

int nx_attn_softmax_max(nx_kctx *k, const nx_attn_step *st, nx_error *err) {
    nx_insn red = nx_insn_make(NX_OP_TENSOR_REDUCE);
    red.alu0 = st->scale >= 0 ? NX_ALU_MAX : NX_ALU_MIN;
    red.iparam[0] = 1; /* the one free dim */
    red.flags = NX_FLAG_NEGATE;
    red.op[0] = st->negmax;
    red.op[1] = st->s;
    return nx_kctx_emit(k, NX_ENG_DVE, &red, err);
}

int nx_attn_softmax_nm(nx_kctx *k, const nx_attn_step *st, nx_error *err) {
    nx_operand sc = nx_imm(st->scale, NX_DT_FP32);
    return nx_kctx_tensor_scalar(k, st->nm_on_pool ? NX_ENG_POOL : NX_ENG_DVE, &st->nm_new, &st->negmax, NX_ALU_MULTIPLY,
                                 &sc, NX_ALU_MIN, &st->nm_old, err);
}

int nx_attn_softmax_stats(nx_kctx *k, const nx_attn_step *st, nx_error *err) {
    return nx_attn_softmax_max(k, st, err) != 0 ? -1 : nx_attn_softmax_nm(k, st, err);
}

int nx_attn_softmax_exp(nx_kctx *k, const nx_attn_step *st, nx_error *err) {
    nx_operand sc = nx_imm(st->scale, NX_DT_FP32);
    if (!st->first) {
        nx_insn a = nx_insn_make(NX_OP_ACTIVATION);
        a.func = NX_ACT_EXP;
        a.op[0] = st->alpha;
        a.op[1] = st->nm_old;
        a.op[2] = nx_imm(-1.0, NX_DT_FP32);
        a.op[3] = st->nm_new;
        if (nx_kctx_emit(k, NX_ENG_ACT, &a, err) != 0) return -1;
    }
    nx_insn e = nx_insn_make(NX_OP_ACTIVATION);
    e.func = NX_ACT_EXP;
    e.op[0] = st->p;
    e.op[1] = st->s;
    e.op[2] = sc;
    e.op[3] = st->nm_new;
    if (st->rowsum.kind != NX_OPK_NONE) {
        e.alu0 = NX_ALU_ADD;
        e.op[4] = st->rowsum;
    }
    if (nx_kctx_emit(k, NX_ENG_ACT, &e, err) != 0) return -1;
    if (st->acc && !st->first) {
        nx_insn r = nx_insn_make(NX_OP_ACTIVATION);
        r.func = NX_ACT_IDENTITY;
        r.op[0] = *st->acc;
        r.op[1] = *st->acc;
        r.op[2] = st->alpha;
        r.op[3] = nx_imm(0.0, NX_DT_FP32);
        if (nx_kctx_emit(k, NX_ENG_ACT, &r, err) != 0) return -1;
    }
    return 0;
}

int nx_attn_softmax_step(nx_kctx *k, const nx_attn_step *st, nx_error *err) {
    return nx_attn_softmax_stats(k, st, err) != 0 ? -1 : nx_attn_softmax_exp(k, st, err);
}

int nx_attn_normalize(nx_kctx *k, const nx_operand *acc, const nx_operand *acc_l, const nx_operand *sink,
                      const nx_operand *nm, const nx_tile *scratch, const nx_operand *out, nx_error *err) {
    uint32_t n = acc->partition_count;
    const int32_t one = 1;
    const uint32_t c1 = 1;
    nx_operand l = nx_tile_view(scratch, NX_DT_FP32, 0, n, 0, 1, &one, &c1);
    nx_operand rl = nx_tile_view(scratch, NX_DT_FP32, 0, n, 1, 1, &one, &c1);
    const nx_operand *lsum = acc_l;
    if (sink) {
        nx_insn a = nx_insn_make(NX_OP_ACTIVATION);
        a.func = NX_ACT_EXP;
        a.op[0] = rl;
        a.op[1] = *sink;
        a.op[2] = nx_imm(1.0, NX_DT_FP32);
        a.op[3] = *nm;
        if (nx_kctx_emit(k, NX_ENG_ACT, &a, err) != 0 ||
            nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_ADD, &l, acc_l, &rl, err) != 0)
            return -1;
        lsum = &l;
    }
    nx_operand tiny = nx_imm(1e-30, NX_DT_FP32), unit = nx_imm(1.0, NX_DT_FP32);
    nx_insn d = nx_insn_make(NX_OP_TENSOR_SCALAR);
    d.alu0 = NX_ALU_MAX;
    d.alu1 = NX_ALU_DIVIDE;
    d.flags = NX_FLAG_REVERSE1; /* 1 / max(l, tiny) */
    d.op[0] = rl;
    d.op[1] = *lsum;
    d.op[2] = tiny;
    d.op[3] = unit;
    if (nx_kctx_emit(k, NX_ENG_DVE, &d, err) != 0) return -1;
    nx_insn r = nx_insn_make(NX_OP_ACTIVATION);
    r.func = NX_ACT_IDENTITY;
    r.op[0] = *out;
    r.op[1] = *acc;
    r.op[2] = rl;
    r.op[3] = nx_imm(0.0, NX_DT_FP32);
    return nx_kctx_emit(k, NX_ENG_ACT, &r, err);
}
