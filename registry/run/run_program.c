/* Running a program on a backend (registry/run/run.h): the host threads
 * for the run, then the backend the options name (registry/run/backend.h). */
#include <string.h>

#include "backend.h"
#include "isa/workers.h"

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
    return nx_run_backend_get(opt->backend)->run(m, prog, st, opt, out, failure, err);
}

void nx_run_trace_free(nx_run_trace *t) {
    if (!t) return;
    /* what a model run leaves: on_model says a model ran */
    if (t->on_model) nx_run_backend_model.release(t);
    memset(t, 0, sizeof *t);
}
