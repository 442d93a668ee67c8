/* tensor_tensor: dst[p,e] = in0[p,e] op0 in1[p,e]; a bitvec op0 stores its
 * bit patterns (nx_alu_bits_for_dtype). docs/parts/insns-dve.md. */
#include <inttypes.h>

#include "insn_impl.h"

#include "../ew.h"

/* a must have d's partitions and elements per partition. */
int nx_validate_TENSOR_TENSOR(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                              nx_error *err) {
    (void)geo;
    static const char *const names[3] = {"dst", "in0", "in1"};
    const nx_alu_op op = (nx_alu_op)insn->alu0;
    if (nx_check_bitvec(&op, 1, engine, insn->op, names, 3, err) != 0) return -1;
    if (nx_check_same_shape(&insn->op[1], "in0", &insn->op[0], "dst", err) != 0) return -1;
    return nx_check_same_shape(&insn->op[2], "in1", &insn->op[0], "dst", err);
}

int nx_exec_TENSOR_TENSOR(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, in0, in1;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&in0, ctx, &insn->op[1]);
    nx_view_init(&in1, ctx, &insn->op[2]);
    nx_alu_op op = (nx_alu_op)insn->alu0;
    const nx_ew_step step = {op, 0, &in1, NULL};
    if (nx_ew_fused(&dst, &in0, &step, 1, 0)) return 0;
    uint64_t n = dst.free_elems;
    double *a = nx_buf_alloc(2 * n);
    if (!a) return nx_fail(ctx->err, "out of memory for %" PRIu64 " elements", 2 * n);
    double *b = a + n;
    int bits = nx_alu_is_bitvec(op);
    for (uint32_t p = 0; p < dst.partitions; p++) {
        nx_view_load(&in0, p, a);
        nx_view_load(&in1, p, b);
        nx_alu_run(op, a, a, b, n);
        if (bits) nx_alu_bits_for_dtype((nx_dtype)dst.dtype, a, n);
        nx_view_store(&dst, p, a);
    }
    free(a);
    return 0;
}
