/* Executing instructions: the reference semantics.
 *
 * nx_insn_execute() runs one validated instruction to completion on the state
 * (semaphores are NOT touched: waits and increments are the scheduler's job,
 * so the functional executor and the SystemC model share this code and differ
 * only in when they call it).
 *
 * nx_exec_program() is the functional executor: it runs every engine stream
 * of every core in an order the semaphores and barriers allow (round-robin,
 * deterministic), each instruction completing instantly. */
#ifndef NXSIM_ISA_EXEC_H
#define NXSIM_ISA_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "insn.h"
#include "program.h"
#include "state.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where an instruction runs; used by the semantics and for messages. */
typedef struct nx_exec_ctx {
    nx_state *state;
    uint32_t core;
    nx_engine engine;
    uint32_t index;   /* position in its stream */
    nx_error *err;
} nx_exec_ctx;

/* Runs `insn` (already validated). On a data-dependent fault returns -1 with
 * a message prefixed "core C ENGINE #I (mnemonic): ". */
int nx_insn_execute(const nx_exec_ctx *ctx, const nx_insn *insn);

/* Runs the whole program on `st` (which the caller has initialised for it
 * and loaded inputs into). Returns 0, or -1 naming the faulting instruction,
 * or -1 "deadlock: ..." naming every blocked engine, the semaphore and value it
 * waits for (or the barrier). Never hangs. */
int nx_exec_program(const nx_program *prog, nx_state *st, nx_error *err);

/* Formats "core C ENGINE #I (mnemonic)" into buf (for messages). */
void nx_insn_where(char *buf, size_t len, uint32_t core, nx_engine engine,
                   uint32_t index, const nx_insn *insn);

#ifdef __cplusplus
}
#endif

#endif
