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
 *   inplace_bump result 0 aliases operand 0 (rules' `aliases`): row 0 + 1
 *                through SBUF, stored back in place, the other rows untouched.
 *   racy_inplace result 0 aliases operand 0: row 0 read on queue 0 while
 *                queue 1 copies row 1 over row 0, unordered: a race only
 *                because the two share one tensor.
 * All have rules: results = operand 0's dtype and shape, a 4 x 8 fp32
 * default op, a reference (a copy; the in-place ones' changes), an exact
 * tolerance. */
#ifndef NXSIM_TESTS_FIXTURE_KERNELS_H
#define NXSIM_TESTS_FIXTURE_KERNELS_H

#include "registry/composites.h"

extern const nx_composite_table fixture_composites;

#endif
