/* The model backend: the SystemC model, then the race check over its log
 * (registry/run/backend.h). The one file of the run path that calls into
 * sim/. */
#include "backend.h"

#include <string.h>

#include "sim/race.h"

static int run_model(const nx_machine *m, const nx_program *prog, nx_state *st, const nx_run_options *opt,
                     nx_run_trace *out, nx_run_failure *failure, nx_error *err) {
    nx_sim_options so = {opt->keep_log || opt->race_check, opt->progress};
    nx_sim_pe_options pe = {opt->pe_rtl, opt->vcd_path};
    if (nx_sim_run_pe(m, prog, st, &so, &pe, &out->sim, err) != 0) {
        *failure = NX_RUN_FAULT;
        return -1;
    }
    out->on_model = 1;
    if (opt->race_check) {
        int verdict = nx_race_check(prog, out->sim.log, out->sim.log_count, err);
        if (verdict != 0) {
            /* 1: a race (err is its report); -1: the log does not fit the program */
            *failure = verdict == 1 ? NX_RUN_RACE : NX_RUN_FAULT;
            return -1;
        }
        out->race_checked = 1;
    }
    return 0;
}

static void release_model(nx_run_trace *t) {
    if (t->on_model) nx_sim_result_free(&t->sim);
}

/* The model's log: 2 records per instruction, and their readers' copies. */
const nx_run_backend_ops nx_run_backend_model = {"model", run_model, release_model, 4 * sizeof(nx_sim_record)};

const nx_run_backend_ops *nx_run_backend_get(nx_run_backend which) {
    return which == NX_RUN_FUNCTIONAL ? &nx_run_backend_functional : &nx_run_backend_model;
}
