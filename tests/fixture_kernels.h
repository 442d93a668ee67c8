/* Test composites (registry/composites.h) for the run path's tests: a
 * well-synchronised copy and a deliberately racy one. They exist only in
 * tests (tests/test_run.c and the test binary tests/cli/nxsim_test_kernels.c
 * that runs them through `nxsim run`), never in the user-facing inventory.
 *
 *   synced_copy  operand 0 -> result 0 through SBUF, on the authoring layer
 *                (its semaphores order everything): race-free.
 *   racy_copy    operand 0 -> result 0 twice, HBM -> HBM on DMA queues 0 and
 *                1, emitted raw with no semaphore between them: the two
 *                writes of the result race (the values are right whatever
 *                the order, which is what makes the race silent).
 * Both have rules: results = operand 0's dtype and shape, a 4 x 8 fp32
 * default op, a copy reference, an exact tolerance. */
#ifndef NXSIM_TESTS_FIXTURE_KERNELS_H
#define NXSIM_TESTS_FIXTURE_KERNELS_H

#include "registry/composites.h"

extern const nx_composite_table fixture_composites;

#endif
