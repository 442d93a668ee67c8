/* Shared test fixtures: preset machines and geometries, a state, operand
 * and instruction shorthands, "validate then execute one instruction" and
 * its expectations, value and byte helpers, opcode coverage, deterministic
 * random numbers. Tests link tests/support.c (library nxsim_test_support).
 * Every helper that can fail fails the running cmocka test with a message;
 * none returns an error. */
#ifndef NXSIM_TESTS_SUPPORT_H
#define NXSIM_TESTS_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "isa/builder.h"
#include "isa/exec.h"
#include "isa/opcodes.h"
#include "isa/program.h"
#include "isa/state.h"
#include "isa/validate.h"
#include "sim/machine.h"

/* A preset machine ("trn1" or "trn2") or machine file, and its geometry
 * (aborts the test on failure). */
nx_machine test_machine(const char *preset);
nx_geometry test_geometry(const char *preset);
/* nx_machine_of_geometry (aborts the test on failure): the description an
 * authoring context on a builder for geo gets (nx_kctx_new_machine). */
nx_machine test_machine_of(const nx_geometry *geo);

/* Initialises st for `cores` cores, hbm_bytes of HBM and sem_count
 * semaphores on the trn2 geometry (aborts the test on failure). */
void test_state(nx_state *st, uint32_t cores, uint64_t hbm_bytes, uint32_t sem_count);

/* cmocka group setup/teardown: *state = a 1-core trn2 state with 4096 HBM
 * bytes and 4 semaphores (test_malloc'd; freed by the teardown). */
int test_setup_state(void **state);
int test_teardown_state(void **state);

/* nx_insn_validate (with st's geometry/hbm/sems) then nx_insn_execute on
 * core 0 (or `core`). Returns 0 or -1 with err filled. */
int test_run(nx_state *st, uint32_t core, nx_engine engine, const nx_insn *insn, nx_error *err);
/* test_run on core 0, failing the test on any error. */
void test_run_ok(nx_state *st, nx_engine engine, const nx_insn *insn);
/* Fails the test unless the run fails with exactly `msg`. */
void test_run_fails(nx_state *st, nx_engine engine, const nx_insn *insn, const char *msg);
/* Fails the test unless validation alone rejects insn with a message
 * containing `part`. */
void test_invalid(nx_state *st, nx_engine engine, const nx_insn *insn, const char *part);

/* Operand and instruction shorthands: an SBUF / PSUM tile of partitions
 * [p0, p0 + np), n contiguous elements from byte `off`; an instruction with
 * op[0] = dst, op[1] = src; a dma_copy on `queue`. */
nx_operand test_sb(nx_dtype dt, uint32_t p0, uint32_t np, uint64_t off, uint32_t n);
nx_operand test_ps(nx_dtype dt, uint32_t p0, uint32_t np, uint64_t off, uint32_t n);
nx_insn test_insn2(nx_opcode op, nx_operand dst, nx_operand src);
nx_insn test_dma(nx_operand dst, nx_operand src, uint32_t queue);

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

/* Fails the test at the first element where got and want differ: same value,
 * -0 and +0 apart, any NaN matching any NaN. */
void test_assert_values(const double *got, const double *want, size_t n);

/* Little-endian integers of n bytes (1..8), written independently of the
 * library's helpers so tests of encoders do not check them against
 * themselves. */
void test_le_put(uint8_t *p, uint64_t v, int n);
uint64_t test_le_get(const uint8_t *p, int n);

/* Entries of a directory other than . and .. (0 if it cannot be read). */
int test_dir_entries(const char *dir);

/* The conformance traces: traces/ of the source tree (beside tests/);
 * visit(dir, ctx) for every directory under root in name order (the sum of
 * what it returned); dir/program.nxs assembled into p (1, or 0 if there is
 * none or it does not assemble, then err says why). */
void test_traces_dir(char *buf, size_t len);
int test_for_each_trace(const char *root, int (*visit)(const char *dir, void *ctx), void *ctx);
int test_assemble_trace(const char *dir, nx_program *p, nx_error *err);

/* Field-by-field comparison of operands and instructions, imm by its bits
 * (padding never): 0, or -1 with `why` saying what differs. */
int test_operand_diff(const nx_operand *a, const nx_operand *b, char *why, size_t len);
int test_insn_diff(const nx_insn *a, const nx_insn *b, char *why, size_t len);

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
/* n random bytes (each the top byte of one draw). */
void test_rng_bytes(test_rng *r, uint8_t *p, size_t n);

#endif
