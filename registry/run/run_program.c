/* Running a program on a backend, then its race check (registry/run/run.h). */
#include <string.h>

#include "isa/exec.h"
#include "isa/workers.h"
#include "run.h"
#include "sim/race.h"

static int run_program(const nx_machine *m, const nx_program *prog, nx_state *st, const nx_run_options *opt,
                       nx_run_trace *out, nx_run_failure *failure, nx_error *err);

int nx_run_program(const nx_machine *m, const nx_program *prog, nx_state *st, const nx_run_options *opt,
                   nx_run_trace *out, nx_run_failure *failure, nx_error *err) {
    memset(out, 0, sizeof *out);
    *failure = NX_RUN_OK;
    unsigned threads = opt->threads;
    if (threads == 0 && nx_workers_threads_from_env(&threads, err) != 0) {
        *failure = NX_RUN_BAD_INPUT;
        return -1;
    }
    if (threads <= 1 || st->workers != NULL) return run_program(m, prog, st, opt, out, failure, err);
    nx_workers *pool;
    if (nx_workers_create(threads, &pool, err) != 0) {
        *failure = NX_RUN_BAD_INPUT;
        return nx_fail_prefix(err, "--threads");
    }
    st->workers = pool;
    int rc = run_program(m, prog, st, opt, out, failure, err);
    st->workers = NULL;
    nx_workers_destroy(pool);
    return rc;
}

static int run_program(const nx_machine *m, const nx_program *prog, nx_state *st, const nx_run_options *opt,
                       nx_run_trace *out, nx_run_failure *failure, nx_error *err) {
    if (opt->backend == NX_RUN_FUNCTIONAL) {
        if (opt->race_check || opt->pe_rtl || opt->vcd_path || opt->keep_log) {
            *failure = NX_RUN_BAD_INPUT;
            return nx_fail(err, "%s needs the SystemC model (the functional executor keeps no log "
                                "and has no PE datapath)",
                           opt->race_check ? "the race check" : opt->keep_log ? "a log" : "the RTL PE");
        }
        if (nx_exec_program(prog, st, err) != 0) {
            *failure = NX_RUN_FAULT;
            return -1;
        }
        return 0;
    }
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

void nx_run_trace_free(nx_run_trace *t) {
    if (!t) return;
    if (t->on_model) nx_sim_result_free(&t->sim);
    memset(t, 0, sizeof *t);
}
