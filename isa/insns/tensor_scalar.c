/* tensor_scalar: two chained ALU ops against per-partition scalars:
 *   t = rev0 ? (s0 op0 x) : (x op0 s0);  dst = rev1 ? (s1 op1 t) : (t op1 s1)
 * (the second step only when scalar1 is present). When the last op that
 * produced t is a bitvec op, dst gets its bit patterns (nx_alu_bits_for_dtype).
 * docs/parts/insns-dve.md. */
#include <inttypes.h>

#include "insn_impl.h"

#include "../ew.h"

int nx_validate_TENSOR_SCALAR(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                              nx_error *err) {
    (void)geo;
    const nx_operand *dst = &insn->op[0], *in = &insn->op[1];
    if (nx_check_same_shape(in, "in", dst, "dst", err) != 0) return -1;
    static const char *const names[4] = {"dst", "in", "scalar0", "scalar1"};
    const nx_alu_op ops[2] = {(nx_alu_op)insn->alu0, (nx_alu_op)insn->alu1};
    if (nx_check_bitvec(ops, 2, engine, insn->op, names, 4, err) != 0) return -1;
    if (nx_check_scalar(&insn->op[2], "scalar0", in, err) != 0) return -1;
    if (insn->op[3].kind == NX_OPK_NONE) {
        if (insn->alu1 != NX_ALU_BYPASS)
            return nx_fail(err, "op1: is %s without scalar1 (must be bypass)",
                           nx_alu_name((nx_alu_op)insn->alu1));
        if (insn->flags & NX_FLAG_REVERSE1) return nx_fail(err, "rev1: is set without scalar1");
        return 0;
    }
    return nx_check_scalar(&insn->op[3], "scalar1", in, err);
}

int nx_exec_TENSOR_SCALAR(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, in, s0v, s1v;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&in, ctx, &insn->op[1]);
    nx_view_init(&s0v, ctx, &insn->op[2]);
    int two = insn->op[3].kind != NX_OPK_NONE;
    if (two) nx_view_init(&s1v, ctx, &insn->op[3]);
    nx_alu_op op0 = (nx_alu_op)insn->alu0, op1 = (nx_alu_op)insn->alu1;
    int rev0 = (insn->flags & NX_FLAG_REVERSE0) != 0;
    int rev1 = (insn->flags & NX_FLAG_REVERSE1) != 0;
    int bits = nx_alu_is_bitvec(two ? nx_alu_last(op0, op1) : op0);
    const nx_ew_step steps[2] = {{op0, rev0, NULL, &s0v}, {op1, rev1, NULL, &s1v}};
    if (nx_ew_fused(&dst, &in, steps, two ? 2 : 1, 0)) return 0;
    uint64_t n = dst.free_elems;
    double *x = nx_buf_alloc(n);
    if (!x) return nx_fail(ctx->err, "out of memory for %" PRIu64 " elements", n);
    for (uint32_t p = 0; p < dst.partitions; p++) {
        double s0 = nx_view_scalar(&s0v, p);
        double s1 = two ? nx_view_scalar(&s1v, p) : 0.0;
        nx_view_load(&in, p, x);
        nx_alu_run_scalar(op0, x, x, s0, rev0, n);
        if (two) nx_alu_run_scalar(op1, x, x, s1, rev1, n);
        if (bits) nx_alu_bits_for_dtype((nx_dtype)dst.dtype, x, n);
        nx_view_store(&dst, p, x);
    }
    free(x);
    return 0;
}
