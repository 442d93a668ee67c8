/* Reading a run's log (nx_sim_record, sim/model.h): the helpers that the
 * race detector (sim/race.c) and the profile writer (sim/profile_trace.c) share.
 *
 * A DMA instruction may appear twice: as the SP's issue (queue -1) and as
 * the transfer on its queue (queue >= 0, same core and SP index). Slots of
 * instructions that never ran (after an `end`) stay zeroed: queue 0 on an
 * engine other than the SP, which no real record has, marks them. */
#ifndef NXSIM_SIM_LOG_H
#define NXSIM_SIM_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "../isa/error.h"
#include "../isa/program.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A DMA transfer on its queue (as opposed to the SP's issue of it). */
static inline int nx_sim_record_is_transfer(const nx_sim_record *rec) {
    return rec->engine == NX_ENG_SP && rec->queue >= 0;
}

/* The zeroed slot of an instruction that never ran: skipped everywhere. */
static inline int nx_sim_record_is_blank(const nx_sim_record *rec) {
    return rec->queue == 0 && rec->engine != NX_ENG_SP;
}

/* The instruction a record ran, copied to *scratch (the caller's), or NULL
 * for a blank record or one naming a core, engine or index the program does
 * not have. */
const nx_insn *nx_sim_record_insn(const nx_program *prog, const nx_sim_record *rec, nx_insn *scratch);

/* "core 0 dve #3 (tensor_copy)", and " on queue Q" for a transfer. */
void nx_sim_record_where(char *buf, size_t len, const nx_sim_record *rec);

/* Checks that the log fits the program: every record that is not blank
 * names an instruction of prog (core, engine, index) with its opcode, a
 * queue only as a DMA transfer of the SP (and below `queues` when queues >
 * 0), and semaphores within prog->sem_count. Returns 0, or -1 with a message
 * for the caller to prefix, e.g. "log record 0 names core 1; the program
 * has 1". Duplicates are the caller's business. */
int nx_sim_log_check(const nx_program *prog, const nx_sim_record *log, size_t n, uint32_t queues, nx_error *err);

#ifdef __cplusplus
}
#endif

#endif
