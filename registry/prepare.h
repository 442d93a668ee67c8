/* Preparing a macro-op: the one step between what a caller names (a
 * func_name, operands or none, attributes) and what lowering and running
 * take (docs/parts/registry.md). `nxsim run` (cli/run_build.c), libnxsim
 * (api/session.c, and through it the Python package), the tests and the
 * benches all prepare through here; nothing else looks a kernel up for a run.
 *
 *   nx_prepare_target  the lookup, ONCE: the lowerer's registry, then its
 *                      composites (nx_lowerer_lookup); the target is what
 *                      nx_lower and nx_run_op take, so they never look up again
 *   nx_prepare_op      operands as given, or (given none, when the caller
 *                      names only a kernel) the target's default op with
 *                      the given attributes over it
 *                      -> the attribute check, once (a typo is named as one,
 *                         before any rule reads it)
 *                      -> the results by the kernel's rule (declared ones
 *                         must agree) -> nx_macro_op_check
 *   nx_op_prepare      both, for callers with nothing to do in between (the
 *                      CLI loads its operand files after the lookup, so a
 *                      miss is reported before any file is read)
 *
 * Ownership: an nx_prepared owns its op (nx_prepared_free, safe on an
 * initialised, failed or freed one); its target points into the lowerer's
 * static tables. `given` is only read (copied). A prepared op is for the
 * lowerer (the tables) it was prepared with.
 *
 * Errors: 0, or -1 with one line in err and p->failed saying which stage
 * refused, so a caller maps it to its own exit status:
 *   NX_PREPARE_MISS        the registry's miss text, verbatim (registry.h)
 *   NX_PREPARE_NO_DEFAULT  "<key> has no built-in default op: give its operands"
 *                          (the CLI adds how: " with -i FILE.npy")
 *   NX_PREPARE_DEFAULT_OP  "<key>: default op: <the rule's message>"
 *   NX_PREPARE_ATTR_SET    an attribute could not be set over the default op
 *   NX_PREPARE_ATTRS       "<key>: unknown attribute '<name>' ..." (with a
 *                          source, "'<source>': " before it)
 *   NX_PREPARE_RESULTS     the result rule's message (with a source, prefixed by it)
 *   NX_PREPARE_CHECK       "<source or key>: <nx_macro_op_check's message>"
 * `source` (optional) is the op file the op came from, named in messages. */
#ifndef NXSIM_REGISTRY_PREPARE_H
#define NXSIM_REGISTRY_PREPARE_H

#include "isa/error.h"
#include "composites.h"
#include "lower.h"
#include "macro_op.h"

typedef enum nx_prepare_stage {
    NX_PREPARE_OK = 0,
    NX_PREPARE_MISS,
    NX_PREPARE_NO_DEFAULT,
    NX_PREPARE_DEFAULT_OP,
    NX_PREPARE_ATTR_SET,
    NX_PREPARE_ATTRS,
    NX_PREPARE_RESULTS,
    NX_PREPARE_CHECK,
} nx_prepare_stage;

typedef struct nx_prepared {
    nx_kernel_target target; /* what func_name reached (set by nx_prepare_target) */
    nx_macro_op op;          /* owned: complete and checked after nx_prepare_op */
    nx_prepare_stage failed; /* with -1: the stage that refused */
} nx_prepared;

void nx_prepared_init(nx_prepared *p);
void nx_prepared_free(nx_prepared *p);

/* Looks func_name up through L's tables into p->target (p initialised by
 * the caller). A NULL func_name is refused: "the op has no func_name". */
int nx_prepare_target(const nx_lowerer *L, const char *func_name, nx_prepared *p, nx_error *err);

/* How the operands are found. */
typedef enum nx_prepare_operands {
    NX_PREPARE_DEFAULT_IF_NONE = 0, /* given none: the target's default op (`nxsim run KEY`,
                                     * nx_session_run without operands) */
    NX_PREPARE_AS_GIVEN = 1,        /* exactly the given ones, none included (an op file
                                     * is the whole op) */
} nx_prepare_operands;

/* Builds p->op for p->target from `given` (its operands, declared results
 * and attributes; its func_name is not read) as the header says. p->op is
 * replaced; on failure it is left empty. */
int nx_prepare_op(nx_prepared *p, const nx_macro_op *given, nx_prepare_operands how, const char *source,
                  nx_error *err);

/* nx_prepare_target(given->func_name) then nx_prepare_op with
 * NX_PREPARE_DEFAULT_IF_NONE; p is initialised here. */
int nx_op_prepare(const nx_lowerer *L, const nx_macro_op *given, const char *source, nx_prepared *p,
                  nx_error *err);

#endif
