/* The static order check of a finished program, for tests of the authoring
 * layer and of leaves (independent of the layer's own bookkeeping): it
 * replays program order, DMA issue and queue order, semaphore waits ("sem >=
 * v" follows the first v increments; every semaphore must be incremented by
 * one agent in steps of 1) and core barriers, and hands every footprint box
 * to the happens-before core (isa/hb.h) the race detector uses.
 * Returns 0 if every conflicting pair is ordered; 1 with
 *   race: <insn> writes <box> and <insn> reads <box> with nothing ordering them
 * (the pair in memory order, then program order); -1 for a program outside
 * the check (shared semaphores, a deadlock) or on out of memory. */
#ifndef NXSIM_TESTS_KCHECK_H
#define NXSIM_TESTS_KCHECK_H

#include "isa/error.h"
#include "isa/program.h"

int test_kcheck_program(const nx_program *p, nx_error *err);

#endif
