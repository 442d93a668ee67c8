/* scalar_tensor_tensor: t = rev0 ? (s op0 in0) : (in0 op0 s); dst = t op1 in1,
 * s an immediate or a per-partition scalar; a bitvec last op stores its bit
 * patterns (nx_alu_bits_for_dtype). docs/parts/insns-dve.md. */
#include <inttypes.h>

#include "insn_impl.h"

#include "../ew.h"

int nx_validate_SCALAR_TENSOR_TENSOR(const nx_insn *insn, nx_engine engine,
                                     const nx_geometry *geo, nx_error *err) {
    (void)engine;
    (void)geo;
    const nx_operand *dst = &insn->op[0], *in0 = &insn->op[1], *s = &insn->op[2];
    if (nx_check_same_shape(in0, "in0", dst, "dst", err) != 0) return -1;
    if (nx_check_same_shape(&insn->op[3], "in1", dst, "dst", err) != 0) return -1;
    if (s->kind == NX_OPK_IMM) return 0;
    if (s->partition_count != in0->partition_count)
        return nx_fail(err, "scalar has %u partitions, in0 has %u", s->partition_count,
                       in0->partition_count);
    uint64_t n = nx_operand_free_elems(s);
    if (n != 1)
        return nx_fail(err, "scalar has %" PRIu64 " elements per partition, a scalar has 1", n);
    return 0;
}

int nx_exec_SCALAR_TENSOR_TENSOR(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, in0, sv, in1;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&in0, ctx, &insn->op[1]);
    nx_view_init(&sv, ctx, &insn->op[2]);
    nx_view_init(&in1, ctx, &insn->op[3]);
    nx_alu_op op0 = (nx_alu_op)insn->alu0, op1 = (nx_alu_op)insn->alu1;
    int rev0 = (insn->flags & NX_FLAG_REVERSE0) != 0;
    int bits = nx_alu_is_bitvec(nx_alu_last(op0, op1));
    const nx_ew_step steps[2] = {{op0, rev0, NULL, &sv}, {op1, 0, &in1, NULL}};
    if (nx_ew_fused(&dst, &in0, steps, 2, 0)) return 0;
    uint64_t n = dst.free_elems;
    double *a = nx_buf_alloc(2 * n);
    if (!a) return nx_fail(ctx->err, "out of memory for %" PRIu64 " elements", 2 * n);
    double *b = a + n;
    for (uint32_t p = 0; p < dst.partitions; p++) {
        double s = nx_view_scalar(&sv, p);
        nx_view_load(&in0, p, a);
        nx_view_load(&in1, p, b);
        nx_alu_run_scalar(op0, a, a, s, rev0, n);
        nx_alu_run(op1, a, a, b, n);
        if (bits) nx_alu_bits_for_dtype((nx_dtype)dst.dtype, a, n);
        nx_view_store(&dst, p, a);
    }
    free(a);
    return 0;
}
