/* The functional backend: nx_exec_program, results without timing
 * (registry/run/backend.h). */
#include "backend.h"

#include "isa/exec.h"

static int run_functional(const nx_machine *m, const nx_program *prog, nx_state *st, const nx_run_options *opt,
                          nx_run_trace *out, nx_run_failure *failure, nx_error *err) {
    (void)m, (void)out;
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

static void release_nothing(nx_run_trace *t) { (void)t; }

const nx_run_backend_ops nx_run_backend_functional = {"functional", run_functional, release_nothing, 0};
