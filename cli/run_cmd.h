/* The pieces of `nxsim run` (cli/cmd_run.c): its options, the op it builds
 * from them (cli/run_build.c) and its report (cli/run_report.c). The run
 * itself is registry/run/run.h. */
#ifndef NXSIM_CLI_RUN_CMD_H
#define NXSIM_CLI_RUN_CMD_H

#include <stdint.h>

#include "isa/npy.h"
#include "options.h"
#include "registry/composites.h"
#include "registry/lower.h"
#include "registry/macro_op.h"
#include "registry/prepare.h"
#include "registry/run/run.h"
#include "sim/machine.h"

typedef struct run_args {
    const char *key;
    const char *op_file;
    const char *machine;
    const char *profile;
    const char *timeline; /* --timeline FILE.svg */
    const char **ins, **outs;
    char **attrs; /* NAME=JSON, the '=' replaced by NUL */
    int n_in, n_out, n_attr;
    int check, json, by_source;
    cli_backend backend; /* seed, --functional, --pe, --vcd, --race-check */
} run_args;

/* The op being run and where its tensors come from / go to. */
typedef struct run_op {
    nx_macro_op given;                 /* what the command line or the op file says */
    nx_prepared prep;                  /* the op that runs and its target (nx_prepare_op) */
    nx_npy in[NX_OP_MAX_TENSORS];      /* loaded operands (data NULL: pseudo-random) */
    const char *in_path[NX_OP_MAX_TENSORS];
    char *out_path[NX_OP_MAX_TENSORS]; /* owned; NULL: summarise */
    nx_op_files files;                 /* --op file names (owned) */
    char *op_text;                     /* --op file contents */
} run_op;

void cli_run_op_free(run_op *r);

/* Fills r->given from the command line or the op file and prepares it
 * through L (registry/prepare.h: one lookup, the default op, the attribute
 * check, the results by the kernel's rule) into r->prep; r->prep.target is
 * set once the lookup succeeded. Returns an exit code (the message printed). */
int cli_run_build_op(const run_args *a, const nx_lowerer *L, run_op *r);

/* The report on stdout: text (with a summary line per result not written
 * to a file) or one JSON object. 0, or -1 on a write error. */
int cli_run_print_text(const run_args *a, const run_op *r, const nx_machine *m, const nx_run_result *res);
int cli_run_print_json(const run_args *a, const run_op *r, const nx_machine *m, const nx_run_result *res);

/* `nxsim run` with the given kernel tables (NULL, NULL: the live registry
 * and the inventory's composites, as cmd_run uses): lets a test binary run
 * test composites through the real command. */
int cli_run_with(int argc, char **argv, const nx_kernel_registry *reg, const nx_composite_table *comps);

#endif
