/* core_barrier: every core of the grid waits until all cores have reached
 * their matching barrier (the hardware bumps the other core's semaphore and
 * waits on its own). The waiting is the scheduler's job (exec.c, and the
 * SystemC model); there is no data effect and nothing opcode-specific to
 * validate beyond the generic checks. */
#include "insn_impl.h"

int nx_validate_CORE_BARRIER(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                             nx_error *err) {
    (void)insn, (void)engine, (void)geo, (void)err;
    return 0;
}

int nx_exec_CORE_BARRIER(const nx_exec_ctx *ctx, const nx_insn *insn) {
    (void)ctx, (void)insn;
    return 0;
}
