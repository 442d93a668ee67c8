/* tensor_tensor_scan: per partition, acc = initial; for each element e in
 * order: acc = (acc op0 in0[e]) op1 in1[e]; dst[e] = acc (its bit patterns
 * when the last op is a bitvec op). docs/parts/insns-dve.md. */
#include <inttypes.h>

#include "insn_impl.h"

int nx_validate_TENSOR_TENSOR_SCAN(const nx_insn *insn, nx_engine engine,
                                   const nx_geometry *geo, nx_error *err) {
    (void)engine;
    (void)geo;
    const nx_operand *dst = &insn->op[0], *init = &insn->op[3];
    if (nx_check_same_shape(&insn->op[1], "in0", dst, "dst", err) != 0) return -1;
    if (nx_check_same_shape(&insn->op[2], "in1", dst, "dst", err) != 0) return -1;
    if (init->kind == NX_OPK_IMM) return 0;
    if (init->partition_count != dst->partition_count)
        return nx_fail(err, "initial has %u partitions, dst has %u", init->partition_count,
                       dst->partition_count);
    uint64_t n = nx_operand_free_elems(init);
    if (n != 1)
        return nx_fail(err, "initial has %" PRIu64 " elements per partition, a scalar has 1",
                       n);
    return 0;
}

int nx_exec_TENSOR_TENSOR_SCAN(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, in0, in1, init;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&in0, ctx, &insn->op[1]);
    nx_view_init(&in1, ctx, &insn->op[2]);
    nx_view_init(&init, ctx, &insn->op[3]);
    nx_alu_op op0 = (nx_alu_op)insn->alu0, op1 = (nx_alu_op)insn->alu1;
    int bits = nx_alu_is_bitvec(nx_alu_last(op0, op1));
    uint64_t n = dst.free_elems;
    double *a = nx_buf_alloc(2 * n);
    if (!a) return nx_fail(ctx->err, "out of memory for %" PRIu64 " elements", 2 * n);
    double *b = a + n;
    for (uint32_t p = 0; p < dst.partitions; p++) {
        double acc = nx_view_scalar(&init, p);
        nx_view_load(&in0, p, a);
        nx_view_load(&in1, p, b);
        for (uint64_t e = 0; e < n; e++) {
            acc = nx_alu_apply(op1, nx_alu_apply(op0, acc, a[e]), b[e]);
            a[e] = acc;
        }
        if (bits) nx_alu_bits_for_dtype((nx_dtype)dst.dtype, a, n);
        nx_view_store(&dst, p, a);
    }
    free(a);
    return 0;
}
