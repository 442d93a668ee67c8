/* `nxsim run`'s report: text or one JSON object (cli/run_cmd.h). */
#define _POSIX_C_SOURCE 200809L /* open_memstream */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "isa/json_write.h"
#include "isa/strbuf.h"
#include "run_cmd.h"
#include "sim/profile.h"
#include "tensors.h"

static const char *kind(const nx_run_result *res) { return res->target.composite ? "composite" : "leaf"; }

/* The rules' dispatch line (a composite's method choice), if any. */
static int explain(const nx_run_result *res, const nx_macro_op *op, const nx_machine *m, char *buf, size_t len) {
    const nx_op_rules *rules = res->target.rules;
    nx_error err;
    return rules && rules->explain && rules->explain(op, &m->geo, buf, len, &err) == 0;
}

static const char *executor(const nx_run_result *res) {
    return res->trace.on_model ? "SystemC model" : "functional executor";
}

int cli_run_print_text(const run_args *a, const run_op *r, const nx_machine *m, const nx_run_result *res) {
    const nx_macro_op *op = &r->prep.op;
    const nx_program *prog = res->prog;
    char t[160];
    printf("nxsim run: %s -> %s %s on %s, machine %s, %s\n", op->func_name, kind(res),
           res->target.config->kernel_func->name, res->grid == 2 ? "VNC(2) (2 cores)" : "1 core", m->geo.name,
           executor(res));
    for (uint32_t i = 0; i < op->n_operands; i++) {
        nx_op_tensor_format(t, sizeof t, &op->operands[i]);
        if (r->in_path[i])
            printf("  operand %-10s %-20s from %s\n", op->operands[i].name, t, r->in_path[i]);
        else
            printf("  operand %-10s %-20s %s (seed %" PRIu64 ")\n", op->operands[i].name, t,
                   nx_op_rules_builtin_values(res->target.rules, op, i) ? "built-in values" : "pseudo-random",
                   a->backend.seed);
    }
    for (uint32_t j = 0; j < op->n_results; j++) {
        nx_op_tensor_format(t, sizeof t, &op->results[j]);
        printf("  result  %-10s %s%s%s%s%s\n", op->results[j].name, t,
               op->results[j].alias ? "  in place of " : "",
               op->results[j].alias ? op->operands[op->results[j].alias - 1].name : "", r->out_path[j] ? "  -> " : "",
               r->out_path[j] ? r->out_path[j] : "");
    }
    char *attrs = nx_attrs_to_json(&op->attrs);
    printf("  attrs   %s\n", attrs ? attrs : "?");
    free(attrs);
    char why[256];
    if (explain(res, op, m, why, sizeof why)) printf("  dispatch %s\n", why);
    if (res->trace.on_model) {
        fflush(stdout);
        if (nx_profile_summary(stdout, m, prog, &res->trace.sim) != 0) return -1;
        nx_error err;
        if (a->by_source && (nx_profile_by_source(stdout, prog, &res->trace.sim, 0, &err) != 0 ||
                             nx_profile_by_region(stdout, prog, &res->trace.sim, &err) != 0))
            return -1;
    } else {
        uint64_t n = 0;
        for (uint32_t c = 0; c < prog->cores; c++)
            for (int e = 0; e < NX_ENG_COUNT; e++) n += prog->stream[c][e].count;
        printf("functional run: %" PRIu64 " instructions (no timing; drop --functional for the "
               "SystemC model and a profile)\n",
               n);
    }
    printf("NEW_NKI_FE: %" PRIu64 " (new traces in this run; %" PRIu64 " from the trace cache)\n",
           res->new_traces, res->cache_hits);
    if (res->trace.race_checked)
        printf("race check: no race (%zu log records)\n", res->trace.sim.log_count);
    for (uint32_t j = 0; res->checked && j < op->n_results; j++) {
        const nx_check_result *c = &res->check[j];
        printf("check: %s vs %s: max abs error %.9g, max rel error %.9g (tolerance: %s): %s", op->results[j].name,
               res->target.rules->reference_name, c->max_abs, c->max_rel, res->tolerance[j].text,
               c->bad ? "FAILED" : "ok");
        if (c->bad) printf(", %" PRIu64 " elements differ, the first at flat index %" PRIu64, c->bad, c->first_bad);
        printf("\n");
    }
    for (uint32_t j = 0; j < op->n_results; j++) {
        if (r->out_path[j]) continue;
        nx_tensor_decl d = prog->tensors[res->result_tensor[j]]; /* an aliased result: its operand's tensor, its own name */
        snprintf(d.name, sizeof d.name, "%s", op->results[j].name);
        if (cli_tensor_summary(stdout, &d, res->results[j]) != 0) return -1;
    }
    return ferror(stdout) ? -1 : 0;
}

/* The profile summary JSON (without its trailing newline) into b. */
static int put_summary_json(nx_strbuf *b, const nx_machine *m, const nx_program *p, const nx_sim_result *res) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return -1;
    int rc = nx_profile_summary_json(f, m, p, res);
    if (fclose(f) != 0 || rc != 0) {
        free(buf);
        return -1;
    }
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) len--;
    nx_sb_append(b, buf, len);
    free(buf);
    return 0;
}

/* , "key": value */
static void put_number(nx_strbuf *b, const char *key, double v) {
    nx_sb_puts(b, ", ");
    nx_json_string(b, key);
    nx_sb_puts(b, ": ");
    nx_json_double(b, v);
}

static void put_check(nx_strbuf *b, const nx_run_result *res, uint32_t j) {
    const nx_check_result *c = &res->check[j];
    const nx_tolerance *t = &res->tolerance[j];
    nx_sb_puts(b, ", \"check\": {\"reference\": ");
    nx_json_string(b, res->target.rules->reference_name);
    put_number(b, "max_abs_error", c->max_abs);
    put_number(b, "max_rel_error", c->max_rel);
    nx_sb_puts(b, ", \"tolerance\": ");
    nx_json_string(b, t->text);
    put_number(b, "tolerance_abs", t->abs);
    put_number(b, "tolerance_rel", t->rel);
    nx_sb_puts(b, ", \"mismatches\": ");
    nx_json_uint(b, c->bad);
    nx_sb_puts(b, c->bad ? ", \"ok\": false}" : ", \"ok\": true}");
}

int cli_run_print_json(const run_args *a, const run_op *r, const nx_machine *m, const nx_run_result *res) {
    const nx_macro_op *op = &r->prep.op;
    nx_strbuf b = NX_STRBUF_INIT;
    nx_sb_puts(&b, "{\"kernel\": ");
    nx_json_string(&b, op->func_name);
    nx_sb_printf(&b, ", \"%s\": ", kind(res));
    nx_json_string(&b, res->target.config->kernel_func->name);
    nx_sb_puts(&b, ", \"machine\": ");
    nx_json_string(&b, m->geo.name);
    nx_sb_printf(&b, ", \"grid\": %u, \"executor\": \"%s\", \"new_nki_fe\": %" PRIu64 ", \"cache_hits\": %" PRIu64,
                 res->grid, res->trace.on_model ? "model" : "functional", res->new_traces, res->cache_hits);
    nx_sb_printf(&b, ", \"race_check\": %s", res->trace.race_checked ? "\"no race\"" : "null");
    char why[256];
    nx_sb_puts(&b, ", \"dispatch\": ");
    if (explain(res, op, m, why, sizeof why))
        nx_json_string(&b, why);
    else
        nx_sb_puts(&b, "null");
    char *opj = nx_macro_op_to_json(op);
    int rc = opj ? 0 : -1;
    nx_sb_puts(&b, ",\n\"op\": ");
    if (opj) nx_sb_puts(&b, opj);
    free(opj);
    nx_sb_puts(&b, ",\n\"profile\": ");
    if (res->trace.on_model)
        rc |= put_summary_json(&b, m, res->prog, &res->trace.sim);
    else
        nx_sb_puts(&b, "null");
    if (a->by_source && res->trace.on_model) {
        nx_error err;
        char *rows = nx_profile_by_source_json(res->prog, &res->trace.sim, &err);
        nx_sb_puts(&b, ",\n\"by_source\": ");
        if (rows) nx_sb_puts(&b, rows);
        else rc = -1;
        free(rows);
        char *regions = nx_profile_by_region_json(res->prog, &res->trace.sim, &err);
        nx_sb_puts(&b, ",\n\"by_region\": ");
        if (regions) nx_sb_puts(&b, regions);
        else rc = -1;
        free(regions);
    }
    nx_sb_puts(&b, ",\n\"results\": [");
    for (uint32_t j = 0; j < op->n_results; j++) {
        nx_sb_puts(&b, j ? ", {\"name\": " : "{\"name\": ");
        nx_json_string(&b, op->results[j].name);
        nx_sb_puts(&b, ", \"file\": ");
        if (r->out_path[j])
            nx_json_string(&b, r->out_path[j]);
        else
            nx_sb_puts(&b, "null");
        if (res->checked) put_check(&b, res, j);
        nx_sb_putc(&b, '}');
    }
    nx_sb_puts(&b, "]}\n");
    char *text = nx_sb_take(&b);
    if (!text || rc != 0) {
        free(text);
        return -1;
    }
    fputs(text, stdout);
    free(text);
    return ferror(stdout) ? -1 : 0;
}
