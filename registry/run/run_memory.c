/* What a run will hold, checked against the limits before anything is
 * allocated or filled (registry/run/run.h). Sizes are estimates from above:
 * the state's buffers exactly, the model's log at its largest. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "isa/fileio.h"
#include "isa/intmath.h"
#include "isa/strbuf.h"
#include "backend.h"


static uint64_t onchip_bytes(const nx_geometry *g, uint32_t cores) {
    uint64_t core = nx_mul_sat_u64(g->partitions, nx_add_sat_u64(g->sbuf_partition_bytes, g->psum_partition_bytes));
    core = nx_add_sat_u64(core, nx_mul_sat_u64(nx_mul_sat_u64(g->pe_rows, g->pe_cols), sizeof(float)));
    return nx_mul_sat_u64(core, cores);
}

static uint64_t op_tensor_bytes(const nx_op_tensor *t) {
    uint64_t n = nx_dtype_size(t->dtype);
    for (uint32_t d = 0; d < t->ndims; d++) n = nx_mul_sat_u64(n, t->shape[d]);
    return n;
}

static void finish(nx_run_memory *m, const nx_run_options *opt) {
    m->held = opt->held_bytes;
    m->total = nx_add_sat_u64(nx_add_sat_u64(nx_add_sat_u64(m->hbm, m->onchip), nx_add_sat_u64(m->log, m->check)), m->held);
}

void nx_run_memory_of_program(const nx_machine *mach, const nx_program *prog, const nx_run_options *opt,
                              nx_run_memory *out) {
    memset(out, 0, sizeof *out);
    out->hbm = prog->hbm_bytes;
    out->onchip = onchip_bytes(&mach->geo, prog->cores);
    if (opt->keep_log || opt->race_check)
        out->log = nx_mul_sat_u64(nx_program_insn_count(prog), nx_run_backend_get(opt->backend)->log_record_bytes);
    for (uint32_t i = 0; i < prog->tensor_count; i++) {
        uint64_t b = nx_tensor_bytes(&prog->tensors[i]);
        if (b > out->largest_bytes) {
            out->largest_bytes = b;
            out->largest = prog->tensors[i].name;
        }
    }
    finish(out, opt);
}

void nx_run_memory_of_op(const nx_machine *mach, const nx_macro_op *op, const nx_run_options *opt,
                         nx_run_memory *out) {
    memset(out, 0, sizeof *out);
    for (uint32_t k = 0; k < op->n_operands + op->n_results; k++) {
        const nx_op_tensor *t = k < op->n_operands ? &op->operands[k] : &op->results[k - op->n_operands];
        uint64_t b = op_tensor_bytes(t);
        if (k < op->n_operands || !t->alias) out->hbm = nx_add_sat_u64(out->hbm, b); /* aliased: no HBM of its own */
        if (opt->check) out->check = nx_add_sat_u64(out->check, b);
        if (b > out->largest_bytes) {
            out->largest_bytes = b;
            out->largest = t->name;
        }
    }
    out->onchip = onchip_bytes(&mach->geo, mach->geo.cores);
    finish(out, opt);
}

static void part(nx_strbuf *b, int *first, const char *what, uint64_t bytes) {
    if (!bytes) return;
    char t[32];
    nx_sb_printf(b, "%s%s %s", *first ? "" : "; ", what, nx_format_bytes(bytes, t, sizeof t));
    *first = 0;
}

int nx_run_memory_check(const nx_run_memory *mem, const nx_run_options *opt, nx_error *err) {
    if (!opt->max_memory || mem->total <= opt->max_memory) return 0;
    char total[32], limit[32], largest[32];
    nx_strbuf b = NX_STRBUF_INIT;
    int first = 1;
    part(&b, &first, "HBM", mem->hbm);
    if (mem->largest) {
        nx_quoted q;
        nx_sb_printf(&b, ", the largest tensor '%s' %s", nx_quote(&q, mem->largest, NX_QUOTE_NAME),
                     nx_format_bytes(mem->largest_bytes, largest, sizeof largest));
    }
    part(&b, &first, "on-chip memories", mem->onchip);
    part(&b, &first, "the model's log", mem->log);
    part(&b, &first, "the reference's copies", mem->check);
    part(&b, &first, "loaded and serialised tensors", mem->held);
    nx_fail(err, "the run needs about %s (%s), more than the memory limit of %s",
            nx_format_bytes(mem->total, total, sizeof total), b.failed ? "..." : nx_sb_str(&b),
            nx_format_bytes(opt->max_memory, limit, sizeof limit));
    nx_sb_free(&b);
    return -1;
}

int nx_run_fill_check(uint64_t bytes, const char *what, const nx_run_options *opt, nx_error *err) {
    if (!opt->max_fill || bytes <= opt->max_fill) return 0;
    char got[32], limit[32];
    return nx_fail(err, "%s would get %s of pseudo-random values, more than the fill limit of %s", what,
                   nx_format_bytes(bytes, got, sizeof got), nx_format_bytes(opt->max_fill, limit, sizeof limit));
}
