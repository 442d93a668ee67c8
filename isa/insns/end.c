/* end: the engine's stream stops here. It must be the last instruction of
 * its stream (nx_program_validate checks that); its wait and increment, if
 * any, still apply. */
#include "insn_impl.h"

int nx_validate_END(const nx_insn *insn, nx_engine engine, const nx_geometry *geo, nx_error *err) {
    (void)insn, (void)engine, (void)geo, (void)err;
    return 0;
}

int nx_exec_END(const nx_exec_ctx *ctx, const nx_insn *insn) {
    (void)ctx, (void)insn;
    return 0;
}
