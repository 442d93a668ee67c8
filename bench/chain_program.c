/* The chain of dependent tiny DVE instructions of programs.h (b). */
#include "isa/builder.h"
#include "programs.h"

int bench_chain_build(const nx_machine *m, uint32_t count, nx_program *out, uint64_t *x_offset,
                      nx_error *err) {
    nx_builder *b = nx_builder_new(&m->geo, 1);
    if (!b) return nx_fail(err, "chain: out of memory");
    int rc = nx_builder_sbuf_alloc(b, 0, 4, 4, x_offset, err);
    nx_operand x = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 1, rc == 0 ? *x_offset : 0, 1);
    nx_insn zero = nx_insn_make(NX_OP_MEMSET);
    zero.op[0] = x;
    zero.op[1] = nx_imm(0.0, NX_DT_FP32);
    if (rc == 0) rc = nx_builder_emit(b, 0, NX_ENG_DVE, &zero, NULL, err);
    nx_insn add = nx_insn_make(NX_OP_TENSOR_SCALAR);
    add.alu0 = NX_ALU_ADD;
    add.alu1 = NX_ALU_BYPASS;
    add.op[0] = x;
    add.op[1] = x;
    add.op[2] = nx_imm(1.0, NX_DT_FP32);
    for (uint32_t i = 0; i < count && rc == 0; i++) rc = nx_builder_emit(b, 0, NX_ENG_DVE, &add, NULL, err);
    if (rc == 0) rc = nx_builder_finish(b, out, err);
    nx_builder_free(b);
    return rc;
}
