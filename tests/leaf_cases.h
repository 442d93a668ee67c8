/* The leaf-case suite: one leaf case (an op and what to expect of it) run
 * through the run path (registry/run/run.h nx_run_op, what `nxsim run`
 * does) on the functional executor, on the SystemC model with the race
 * check, and on the model with the RTL PE array (--pe rtl), then
 *   - every program passes the static order check (tests/kcheck.h);
 *   - every result is within the kernel's --check tolerance of its
 *     reference (the rules' reference and tolerance, registry/rules.h);
 *   - every backend's results equal the first backend's bit for bit;
 * or, for a refusal case, the first backend refuses with exactly the
 * expected message. The cases live as data in tests/cases/<family>/<case>.json
 * (test_leaf_cases runs every file); a C test builds a case with the
 * functions below when it loops over shapes.
 *
 * A case file (unknown keys are errors):
 *   {"what": "a few words",                        optional
 *    "op": {an op document, registry/macro_op.h},   results may be omitted; an operand
 *                                                  may name a .npy "file" (beside the case
 *                                                  file) instead of shape and dtype
 *    "machine": "trn2",                            optional (trn2)
 *    "seed": 1,                                    optional (1): pseudo-random operands
 *    "grid": 2,                                    optional (0: the kernel's own grid)
 *    "backends": ["functional", "model", "rtl"],   optional (functional, model)
 *    "fill": {"x": "ties"},                        optional: operand values of a kind
 *                                                  (leaf_fill_kind) instead of the rules' fill
 *    "expect": {"error": "exact message"}}         optional: the run must refuse so;
 *                                                  or {"grid": 2}: it must run on that
 *                                                  many cores
 *
 * Ownership: a leaf_case owns its op and strings (leaf_case_free). Errors:
 * the parse and run functions return 0, or -1 with one line in err naming
 * the case; leaf_case_check fails the running cmocka test instead. */
#ifndef NXSIM_TESTS_LEAF_CASES_H
#define NXSIM_TESTS_LEAF_CASES_H

#include <stdint.h>

#include "isa/dtype.h"
#include "isa/error.h"
#include "isa/insn.h"
#include "kernels/kernel.h"
#include "registry/macro_op.h"
#include "registry/registry.h"

enum {
    LEAF_FUNCTIONAL = 1,
    LEAF_MODEL = 2, /* with the race check */
    LEAF_RTL = 4,   /* the model with the RTL PE, with the race check */
};

/* Operand values other than the rules' pseudo-random ones. */
typedef enum leaf_fill_kind {
    LEAF_FILL_RULES = 0, /* the kernel's own fill from the seed (nx_op_rules_fill_operand) */
    LEAF_FILL_RANDOM,    /* uniform in [-1, 1) in the dtype (integers: -100..99) */
    LEAF_FILL_TIES,      /* values from a set of 5 */
    LEAF_FILL_EQUAL,     /* every element equal */
    LEAF_FILL_SPECIAL,   /* +-inf, NaN, +-0, the extreme finite values among random ones */
    LEAF_FILL_ASCENDING, /* 0, 1, 2, ... */
} leaf_fill_kind;

typedef struct leaf_case {
    char name[256];     /* names the case in failures */
    nx_macro_op op;
    char machine[512];  /* a preset or a machine file */
    uint64_t seed;
    uint32_t grid;
    unsigned backends;  /* LEAF_* */
    leaf_fill_kind fill[NX_OP_MAX_TENSORS];
    char *expect_error; /* owned; NULL: the results must pass the reference */
    uint32_t expect_grid; /* 0, or the cores the op must run on */
    const void *inputs[NX_OP_MAX_TENSORS]; /* operand i's bytes (C order): a C test's
                                            * (borrowed) or a case file's .npy; NULL: the fill */
    void *owned[NX_OP_MAX_TENSORS];        /* the .npy arrays read for inputs */
    const struct nx_kernel_registry *registry; /* borrowed; NULL: the live registry (a test's own
                                                * entry runs a pinned leaf under a kernel's rules) */
} leaf_case;

/* What a run reports beyond pass/fail (tests of the tiling). */
typedef struct leaf_case_report {
    uint64_t insns[NX_ENG_COUNT]; /* instructions per engine, all cores */
    double model_ns;              /* simulated time of the last model run (0 without one) */
    uint8_t *results[NX_OP_MAX_TENSORS]; /* the results' bytes (C order; every backend's are
                                          * equal), owned: leaf_case_report_free */
    nx_op_tensor result[NX_OP_MAX_TENSORS]; /* their names, dtypes and shapes */
    uint32_t n_results;
} leaf_case_report;

/* A case with defaults (trn2, seed 1, functional and model, results
 * inferred) for func_name, no operands yet. */
void leaf_case_init(leaf_case *c, const char *name, const char *func_name);
void leaf_case_free(leaf_case *c);
/* Appends an operand / a result (written results must equal the kernel's rule: registry/prepare.h). */
void leaf_case_operand(leaf_case *c, const char *name, nx_dtype dt, uint32_t ndims, const uint64_t *shape);
void leaf_case_result(leaf_case *c, const char *name, nx_dtype dt, uint32_t ndims, const uint64_t *shape);
/* Sets attributes from "name=JSON;name=JSON" (NULL or "" sets none). */
void leaf_case_attrs(leaf_case *c, const char *text);
/* The run must refuse with exactly msg. */
void leaf_case_expect_error(leaf_case *c, const char *msg);

/* A case file's text (`source` names it in errors) / a case file. */
int leaf_case_parse(const char *source, const char *json, leaf_case *c, nx_error *err);
int leaf_case_load(const char *path, leaf_case *c, nx_error *err);

/* Runs the case on its backends and checks it (see above); rep may be NULL. */
int leaf_case_run(const leaf_case *c, leaf_case_report *rep, nx_error *err);
/* leaf_case_run failing the cmocka test with its message. */
void leaf_case_check(const leaf_case *c, leaf_case_report *rep);
void leaf_case_report_free(leaf_case_report *rep);

/* Traces `leaf` directly on one core per program of c->grid (at least 1)
 * with the op's operands and results as written and its attributes, and
 * returns the leaf's rc (its message in err); nothing runs. For a leaf's
 * own refusals that the run path's checks reach first (a wrong result
 * shape, an attribute out of range), or leaves without a registry key. */
int leaf_case_trace_leaf(const leaf_case *c, nx_leaf_fn leaf, nx_error *err);

/* Fills n elements of dt with values of `kind` (deterministic from seed;
 * not LEAF_FILL_RULES). */
void leaf_fill(uint8_t *x, nx_dtype dt, uint64_t n, leaf_fill_kind kind, uint64_t seed);

#endif
