/* The backends a program runs on: the one way from registry/run to the
 * simulator. run_program.c picks a backend by nx_run_options.backend and
 * calls it; only the backend files include sim/ headers beyond the types
 * of run.h (the machine description and the model's result, sim/machine.h
 * and sim/model.h), so a new backend (another model, a device) is one more
 * file and one more row here, and the run path above it does not change.
 *
 *   NX_RUN_FUNCTIONAL  backend_functional.c: nx_exec_program (isa/exec.h),
 *                      results only; refuses the options only a model has
 *   NX_RUN_MODEL       backend_model.c: the SystemC model (sim/model.h) with
 *                      the model's or the RTL PE datapath, then with
 *                      race_check the race check over its log (sim/race.h)
 *
 * Contract of run: st is initialised for prog and holds its inputs; on
 * return it holds the results. *out was zeroed by the caller and is filled
 * as far as the run got (the caller frees it with release, safe either way).
 * Errors: 0, or -1 with one line in err and *failure saying which stage
 * refused (registry/run/run.h: NX_RUN_BAD_INPUT for options the backend
 * lacks, NX_RUN_FAULT for a fault or deadlock, NX_RUN_RACE for a race).
 * Units: log_record_bytes in bytes per instruction of the program (what
 * keep_log costs, for nx_run_memory; 0: no log). */
#ifndef NXSIM_REGISTRY_RUN_BACKEND_H
#define NXSIM_REGISTRY_RUN_BACKEND_H

#include <stdint.h>

#include "run.h"

typedef struct nx_run_backend_ops {
    const char *name; /* "functional", "model" */
    int (*run)(const nx_machine *m, const nx_program *prog, nx_state *st, const nx_run_options *opt,
               nx_run_trace *out, nx_run_failure *failure, nx_error *err);
    void (*release)(nx_run_trace *t); /* frees what run left in *t */
    uint64_t log_record_bytes;        /* with keep_log or race_check */
} nx_run_backend_ops;

extern const nx_run_backend_ops nx_run_backend_functional;
extern const nx_run_backend_ops nx_run_backend_model;

/* The backend `which` names (NX_RUN_MODEL for any value but NX_RUN_FUNCTIONAL,
 * as nx_run_options documents the model as the default). */
const nx_run_backend_ops *nx_run_backend_get(nx_run_backend which);

#endif
