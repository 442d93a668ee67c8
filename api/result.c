/* libnxsim (include/nxsim/nxsim.h): what a result tells, through the
 * profile writers of sim/profile.h. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_impl.h"
#include "sim/profile.h"

const nx_run_trace *api_trace(const nx_result *r) { return r->is_op ? &r->run.trace : &r->trace; }

static const nx_sim_result *model_of(const nx_result *r) {
    const nx_run_trace *t = r ? api_trace(r) : NULL;
    return t && t->on_model ? &t->sim : NULL;
}

NXSIM_API void nx_result_free(nx_result *r) {
    if (!r) return;
    if (r->is_op) {
        nx_run_result_free(&r->run);
        nx_prepared_free(&r->prep);
    } else {
        nx_run_trace_free(&r->trace);
        if (r->have_state) nx_state_free(&r->state);
    }
    free(r->tensor);
    free(r->data);
    free(r);
}

NXSIM_API uint32_t nx_result_count(const nx_result *r) { return r ? r->count : 0; }

NXSIM_API const void *nx_result_data(const nx_result *r, uint32_t j) { return r && j < r->count ? r->data[j] : NULL; }

NXSIM_API const char *nx_result_kernel(const nx_result *r) {
    return r && r->is_op && r->run.target.config ? r->run.target.config->kernel_func->name : "";
}

NXSIM_API uint32_t nx_result_cores(const nx_result *r) { return r ? r->prog->cores : 0; }
NXSIM_API uint64_t nx_result_new_traces(const nx_result *r) { return r && r->is_op ? r->run.new_traces : 0; }
NXSIM_API uint64_t nx_result_cache_hits(const nx_result *r) { return r && r->is_op ? r->run.cache_hits : 0; }
NXSIM_API char *nx_result_op_json(const nx_result *r) { return r && r->is_op ? nx_macro_op_to_json(&r->prep.op) : NULL; }
NXSIM_API int nx_result_on_model(const nx_result *r) { return model_of(r) != NULL; }
NXSIM_API double nx_result_total_ns(const nx_result *r) { return model_of(r) ? model_of(r)->total_ns : 0.0; }
NXSIM_API uint64_t nx_result_instructions(const nx_result *r) { return model_of(r) ? model_of(r)->instructions : 0; }
NXSIM_API int nx_result_race_checked(const nx_result *r) { return r ? api_trace(r)->race_checked : 0; }

NXSIM_API nx_status nx_result_engine(const nx_result *r, uint32_t core, uint32_t engine, nx_engine_stats *out) {
    const nx_sim_result *m = model_of(r);
    if (!m || !out || core >= r->prog->cores || engine >= NX_ENG_COUNT) return NX_ERR_USAGE;
    const nx_sim_engine_stats *e = &m->engine[core][engine];
    out->instructions = e->instructions;
    out->busy_ns = e->busy_ns;
    out->stall_ns = e->stall_ns;
    out->busy_pct = m->total_ns > 0 ? 100.0 * e->busy_ns / m->total_ns : 0.0;
    out->clock_ghz = r->session->machine.clock_ghz[engine];
    return NX_OK;
}

/* Runs a FILE writer into a malloc'd string. */
static char *capture(int (*write)(FILE *, const nx_result *), const nx_result *r) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    int rc = write(f, r);
    if (fclose(f) != 0 || rc != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static int summary_text(FILE *f, const nx_result *r) {
    return nx_profile_summary(f, &r->session->machine, r->prog, model_of(r));
}
static int summary_json(FILE *f, const nx_result *r) {
    return nx_profile_summary_json(f, &r->session->machine, r->prog, model_of(r));
}
static int by_source_text(FILE *f, const nx_result *r) {
    nx_error err;
    return nx_profile_by_source(f, r->prog, model_of(r), 0, &err);
}

NXSIM_API char *nx_result_summary(const nx_result *r, int json) {
    if (!model_of(r)) return NULL;
    return capture(json ? summary_json : summary_text, r);
}

NXSIM_API char *nx_result_by_source(const nx_result *r, int json) {
    const nx_sim_result *m = model_of(r);
    if (!m || (!m->log && m->instructions)) return NULL;
    if (json) {
        nx_error err;
        return nx_profile_by_source_json(r->prog, m, &err);
    }
    return capture(by_source_text, r);
}

static nx_status writer_check(const nx_result *r, const char *path, const char *what, nx_message *msg) {
    if (!r || !path) return api_failf(msg, NX_ERR_USAGE, "%s: a required argument is NULL", what);
    const nx_sim_result *m = model_of(r);
    if (!m) return api_failf(msg, NX_ERR_USAGE, "%s %s: the run has no model profile (functional backend)", what, path);
    if (!m->log && m->instructions)
        return api_failf(msg, NX_ERR_USAGE, "%s %s: the run kept no log (nx_config.keep_log = 1)", what, path);
    return NX_OK;
}

NXSIM_API nx_status nx_result_write_trace(const nx_result *r, const char *path, nx_message *msg) {
    nx_status st = writer_check(r, path, "profile", msg);
    if (st != NX_OK) return st;
    nx_error err;
    if (nx_profile_write_trace(path, &r->session->machine, r->prog, model_of(r), &err) != 0)
        return api_fail(msg, NX_ERR_RUNTIME, &err);
    api_ok(msg);
    return NX_OK;
}

NXSIM_API nx_status nx_result_write_timeline(const nx_result *r, const char *path, nx_message *msg) {
    nx_status st = writer_check(r, path, "timeline", msg);
    if (st != NX_OK) return st;
    nx_error err;
    if (nx_profile_write_timeline(path, &r->session->machine, r->prog, model_of(r), &err) != 0)
        return api_fail(msg, NX_ERR_RUNTIME, &err);
    api_ok(msg);
    return NX_OK;
}

NXSIM_API int nx_result_checked(const nx_result *r) { return r && r->is_op ? r->run.checked : 0; }
NXSIM_API uint32_t nx_result_check_failures(const nx_result *r) { return r && r->is_op ? r->run.check_failures : 0; }

NXSIM_API nx_status nx_result_check(const nx_result *r, uint32_t j, nx_check_info *out) {
    if (!r || !out || !r->is_op || !r->run.checked || j >= r->count) return NX_ERR_USAGE;
    const nx_check_result *c = &r->run.check[j];
    const nx_tolerance *t = &r->run.tolerance[j];
    memset(out, 0, sizeof *out);
    out->max_abs_error = c->max_abs;
    out->max_rel_error = c->max_rel;
    out->mismatches = c->bad;
    out->first_mismatch = c->first_bad;
    out->tolerance_abs = t->abs;
    out->tolerance_rel = t->rel;
    snprintf(out->tolerance, sizeof out->tolerance, "%s", t->text);
    snprintf(out->reference, sizeof out->reference, "%s", r->run.target.rules->reference_name);
    return NX_OK;
}
