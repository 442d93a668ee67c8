/* The harness of the roster composites' tests (test_attention.c, test_norms.c,
 * ...): an op built by name through the run path's preparation step
 * (registry/prepare.h), run on the functional executor and on the SystemC
 * model with the race detector, each with --check against the rules'
 * reference, and the two compared bit for bit; refusals compared with their
 * exact one-line text. Failures are cmocka failures naming the op.
 *
 * Inputs: an operand's `values` (NULL: random, seeded from the op's shapes so
 * a case is the same on every run) are stored with nx_dtype_store, so int32
 * operands (lengths, indices, block tables) take exact values from doubles. */
#ifndef NXSIM_TESTS_ROSTER_CASE_H
#define NXSIM_TESTS_ROSTER_CASE_H

#include <stdint.h>

#include "isa/dtype.h"
#include "registry/macro_op.h"

#define ROSTER_MAX_DIMS 6
#define ROSTER_MAX_RESULTS 8

typedef struct roster_operand {
    const char *name;
    nx_dtype dt;
    uint32_t nd;
    uint64_t shape[ROSTER_MAX_DIMS];
    const double *values; /* NULL: random in [-2, 2) */
} roster_operand;

/* The functional executor's results, owned by the outcome. */
typedef struct roster_outcome {
    uint32_t n;
    uint8_t *bytes[ROSTER_MAX_RESULTS];
    uint64_t size[ROSTER_MAX_RESULTS]; /* bytes */
    nx_dtype dt[ROSTER_MAX_RESULTS];
} roster_outcome;

/* The prepared op (attributes "k=v;k=v" set and checked, results inferred by
 * the rules) into *op, owned by the caller (nx_macro_op_free); 0, or -1 with
 * the rules' message in *err (nothing to free). */
int roster_make_op(nx_macro_op *op, const char *func, const roster_operand *ops, uint32_t n, const char *attrs,
                   nx_error *err);

/* Both backends on the machine preset ("trn1", "trn2"), checked, equal bit
 * for bit; the functional results into *out (roster_outcome_free). */
void roster_run(const char *machine, const char *func, const roster_operand *ops, uint32_t n, const char *attrs,
                roster_outcome *out);
void roster_check(const char *machine, const char *func, const roster_operand *ops, uint32_t n, const char *attrs);

/* Refused with exactly msg (one line): when the op is prepared, or when it
 * runs on the functional executor (inputs from the operands' values). */
void roster_refused(const char *machine, const char *func, const roster_operand *ops, uint32_t n, const char *attrs,
                    const char *msg);

/* Element e of result j, as a double. */
double roster_value_at(const roster_outcome *o, uint32_t j, uint64_t e);
void roster_outcome_free(roster_outcome *o);

#endif
