/* nop: does nothing; carries a semaphore wait and/or increment for pure
 * synchronisation. */
#include "insn_impl.h"

int nx_validate_NOP(const nx_insn *insn, nx_engine engine, const nx_geometry *geo, nx_error *err) {
    (void)insn, (void)engine, (void)geo, (void)err;
    return 0;
}

int nx_exec_NOP(const nx_exec_ctx *ctx, const nx_insn *insn) {
    (void)ctx, (void)insn;
    return 0;
}
