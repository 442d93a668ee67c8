/* The race detector: finds pairs of instructions that touch the same memory,
 * at least one of them writing, on different agents, with nothing in the
 * program ordering them.
 *
 * Input: a program and the per-instruction log of one run of it on the model
 * (nx_sim_run with keep_log = 1, sim/model.h). An agent is one engine stream
 * of one core, or one DMA queue of one core (a DMA transfer is the agent of
 * the queue it ran on, not of the SP that issued it). A DMA may be logged
 * twice, as the SP's issue (queue -1) and as the transfer (queue >= 0, same
 * core and SP index, carrying the increment); or once, as the transfer.
 * Zeroed slots of instructions that never ran (queue 0 on an engine other
 * than SP, which no real record has) are skipped.
 *
 * Happens-before is built from what the program guarantees, not from the
 * times the run happened to produce:
 *   - program order within each engine stream and within each DMA queue;
 *   - a DMA transfer happens after its issue, i.e. after everything its SP
 *     did before issuing it (the SP's later instructions do NOT wait for it);
 *   - semaphores: an instruction whose wait was satisfied at wait_seq w
 *     happens after every increment of the semaphore it waits on (read from
 *     the program: insn.wait_sem, on the record's core) whose inc_seq <= w
 *     (the model numbers an increment with the count of semaphore events once
 *     it is visible, and gives a waiter the count it has seen; model.h says
 *     "< w", which differs only by the increment numbered w: joining it can
 *     hide a race, never invent one);
 *   - core_barrier: its inc_seq is the core's arrival and its wait_seq the
 *     pass; a pass happens after every arrival (of any core) numbered <= w.
 *     The last core to arrive passes before its own arrival is numbered
 *     (inc_seq > wait_seq): its pass is replayed at wait_seq, with the
 *     barrier's increment (which happens at the pass), and publishes the
 *     arrival then.
 * Vector clocks over the agents; memory is tracked as the boxes of
 * nx_insn_footprint (SBUF/PSUM per core, HBM shared by the cores). Both are
 * the happens-before core of isa/hb.h, which the tests' static order check
 * (tests/kcheck.h) shares: only where the ordering comes from differs.
 *
 * Where the log is weaker than this contract the detector leans towards
 * fewer false reports: an instruction with a wait whose record has
 * wait_seq 0 joins every increment processed so far; an increment with
 * inc_seq 0 is published as soon as its instruction is processed; within a
 * stream, sequence numbers are raised to be monotone in program order.
 *
 * Cost: O(n log n) for the ordering plus, per access, a scan of the still
 * live accesses of its memory; an access is dropped as soon as every agent
 * that still has work is ordered after it, or a later ordered access covers
 * it, so the live set stays small for synchronised programs.
 *
 * The check is optional: a caller that wants speed simply does not call it
 * (the CLI's --race-check turns it on; off by default, docs/parts/race.md). */
#ifndef NXSIM_SIM_RACE_H
#define NXSIM_SIM_RACE_H

#include <stddef.h>

#include "../isa/error.h"
#include "../isa/program.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns 0 if the run has no race; 1 if it has one, with err holding one
 * line naming both instructions, the earlier-starting first:
 *   race: core 0 dve #3 (tensor_copy) writes sbuf[0:128]@[0, 256) and
 *   core 0 act #1 (activation) reads sbuf[0:64]@[128, 384) with no semaphore
 *   ordering them
 * (one line; boxes are partitions [lo:hi] and bytes [lo, hi) within each
 * partition, or hbm@[lo, hi); a DMA transfer reads "core 0 sp #5 (dma_copy)
 * on queue 3"). Only the first race found is reported.
 * Returns -1 with a message when the log does not fit the program (a record
 * naming a core, engine, instruction or opcode the program does not have,
 * or the same instruction twice) or on out of memory. */
int nx_race_check(const nx_program *prog, const nx_sim_record *log, size_t n, nx_error *err);

#ifdef __cplusplus
}
#endif

#endif
