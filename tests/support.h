/* Shared test helpers: the trn2 geometry, a state, and "validate then
 * execute one instruction". Tests link tests/support.c. */
#ifndef NXSIM_TESTS_SUPPORT_H
#define NXSIM_TESTS_SUPPORT_H

#include <stdint.h>

#include "isa/builder.h"
#include "isa/exec.h"
#include "isa/opcodes.h"
#include "isa/program.h"
#include "isa/state.h"
#include "isa/validate.h"

/* Geometry of a preset machine ("trn1" or "trn2"), loaded from its machine
 * description (aborts the test on failure). */
nx_geometry test_geometry(const char *preset);

/* Initialises st for `cores` cores, hbm_bytes of HBM and sem_count
 * semaphores on the trn2 geometry (aborts the test on failure). */
void test_state(nx_state *st, uint32_t cores, uint64_t hbm_bytes, uint32_t sem_count);

/* nx_insn_validate (with st's geometry/hbm/sems) then nx_insn_execute on
 * core 0 (or `core`). Returns 0 or -1 with err filled. */
int test_run(nx_state *st, uint32_t core, nx_engine engine, const nx_insn *insn, nx_error *err);

/* Raw element access for setting up inputs and reading outputs. */
void test_sbuf_put(nx_state *st, uint32_t core, nx_dtype dt, uint32_t partition,
                   uint64_t byte_offset, uint64_t n, const double *values);
void test_sbuf_get(nx_state *st, uint32_t core, nx_dtype dt, uint32_t partition,
                   uint64_t byte_offset, uint64_t n, double *values);
void test_psum_put(nx_state *st, uint32_t core, nx_dtype dt, uint32_t partition,
                   uint64_t byte_offset, uint64_t n, const double *values);
void test_psum_get(nx_state *st, uint32_t core, nx_dtype dt, uint32_t partition,
                   uint64_t byte_offset, uint64_t n, double *values);
void test_hbm_put(nx_state *st, nx_dtype dt, uint64_t byte_offset, uint64_t n, const double *values);
void test_hbm_get(nx_state *st, nx_dtype dt, uint64_t byte_offset, uint64_t n, double *values);

/* Opcode coverage that grows with the opcode table: one flag per (opcode,
 * engine). test_coverage_check fails the test, naming what is missing,
 * unless every compute and DMA row was seen on every engine its row allows
 * and every control row (core_barrier, nop, end) on at least one: so a new
 * row without coverage fails the tests that keep coverage. */
typedef struct test_coverage {
    uint8_t seen[NX_OP_COUNT][NX_ENG_COUNT];
} test_coverage;
void test_coverage_add(test_coverage *c, unsigned opcode, nx_engine engine);
void test_coverage_add_program(test_coverage *c, const nx_program *p);
void test_coverage_check(const test_coverage *c, const char *what);

/* Deterministic pseudo-random numbers (xorshift64*), no global state. */
typedef struct test_rng { uint64_t s; } test_rng;
uint64_t test_rng_next(test_rng *r);
double test_rng_uniform(test_rng *r, double lo, double hi); /* [lo, hi) */

#endif
