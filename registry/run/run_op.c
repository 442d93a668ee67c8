/* Running a macro-op: lower, place the operands, run, check
 * (registry/run/run.h). */
#include <stdlib.h>
#include <string.h>

#include "isa/intmath.h"
#include "isa/strbuf.h"
#include "run.h"

static int fail_as(nx_run_result *out, nx_run_failure why, int rc) {
    out->failure = why;
    return rc;
}

/* The operands in HBM: the given bytes, or the rules' built-in values, or
 * pseudo-random ones (nx_op_rules_fill_operand). The host's copy, outside
 * simulated time; for an operand an aliased result shares, it is what the
 * kernel updates in place, so the caller's bytes are never written. */
static void place_operands(const nx_macro_op *op, const void *const *inputs, uint64_t seed,
                           nx_run_result *out) {
    const nx_program *prog = out->prog;
    for (uint32_t i = 0; i < op->n_operands; i++) {
        const nx_tensor_decl *t = &prog->tensors[out->operand_tensor[i]];
        uint8_t *at = out->state.hbm + t->offset;
        if (inputs && inputs[i])
            memcpy(at, inputs[i], nx_tensor_bytes(t));
        else
            nx_op_rules_fill_operand(out->target.rules, op, i, t, at, seed, (uint32_t)out->operand_tensor[i]);
    }
}

/* The pseudo-random operands (those without bytes) within opt->max_fill. */
static int fill_check(const nx_macro_op *op, const void *const *inputs, const nx_run_options *opt,
                      nx_error *err) {
    uint64_t bytes = 0;
    uint32_t n = 0;
    nx_strbuf names = NX_STRBUF_INIT;
    for (uint32_t i = 0; i < op->n_operands; i++) {
        if (inputs && inputs[i]) continue;
        const nx_op_tensor *t = &op->operands[i];
        uint64_t b = nx_dtype_size(t->dtype);
        for (uint32_t d = 0; d < t->ndims; d++) b = nx_mul_sat_u64(b, t->shape[d]);
        bytes = nx_add_sat_u64(bytes, b);
        nx_sb_printf(&names, "%s%s", n++ ? ", " : "", t->name);
    }
    nx_strbuf what = NX_STRBUF_INIT;
    nx_sb_printf(&what, "%s %s", n == 1 ? "operand" : "operands", names.failed ? "..." : nx_sb_str(&names));
    int rc = nx_run_fill_check(bytes, what.failed ? "operands" : nx_sb_str(&what), opt, err);
    nx_sb_free(&names);
    nx_sb_free(&what);
    return rc;
}

/* --check's copies: operands made again (those without bytes) and results. */
static uint64_t check_bytes(const nx_macro_op *op, const nx_program *prog, const nx_run_options *opt,
                            const nx_run_result *out) {
    if (!opt->check) return 0;
    uint64_t b = 0;
    for (uint32_t i = 0; i < op->n_operands; i++) b += nx_tensor_bytes(&prog->tensors[out->operand_tensor[i]]);
    for (uint32_t j = 0; j < op->n_results; j++) b += nx_tensor_bytes(&prog->tensors[out->result_tensor[j]]);
    return b;
}

/* --check: the reference on the operands as given (built-in or
 * pseudo-random ones made again), each result compared under its tolerance. */
static int check_results(const nx_geometry *geo, const nx_macro_op *op, const void *const *inputs,
                         const nx_run_options *opt, nx_run_result *out, nx_error *err) {
    const nx_op_rules *rules = out->target.rules;
    const nx_program *prog = out->prog;
    const void *ins[NX_OP_MAX_TENSORS] = {0};
    void *outs[NX_OP_MAX_TENSORS] = {0};
    uint8_t *owned[2 * NX_OP_MAX_TENSORS] = {0};
    uint32_t n_owned = 0;
    int rc = -1;
    for (uint32_t i = 0; i < op->n_operands; i++) {
        if (inputs && inputs[i]) {
            ins[i] = inputs[i];
            continue;
        }
        const nx_tensor_decl *t = &prog->tensors[out->operand_tensor[i]];
        uint8_t *b = malloc(nx_tensor_bytes(t) + 1);
        if (!b) goto oom;
        owned[n_owned++] = b;
        nx_op_rules_fill_operand(rules, op, i, t, b, opt->seed, (uint32_t)out->operand_tensor[i]);
        ins[i] = b;
    }
    for (uint32_t j = 0; j < op->n_results; j++) {
        uint8_t *b = calloc(1, nx_tensor_bytes(&prog->tensors[out->result_tensor[j]]) + 1);
        if (!b) goto oom;
        owned[n_owned++] = b;
        outs[j] = b;
    }
    if (rules->reference(op, ins, outs, err) != 0) {
        nx_fail_prefix(err, "%s", rules->reference_name);
        out->failure = NX_RUN_FAULT;
        goto done;
    }
    for (uint32_t j = 0; j < op->n_results; j++) {
        const nx_tensor_decl *t = &prog->tensors[out->result_tensor[j]];
        if (nx_op_rules_tolerance_on(rules, op, geo, j, &out->tolerance[j], err) != 0) {
            nx_fail_prefix(err, "%s: tolerance", out->target.key);
            out->failure = NX_RUN_FAULT;
            goto done;
        }
        nx_dtype dt = (nx_dtype)t->dtype;
        nx_check_compare(dt, out->results[j], outs[j], nx_tensor_bytes(t) / nx_dtype_size(dt),
                         &out->tolerance[j], &out->check[j]);
        out->check_failures += out->check[j].bad != 0;
    }
    out->checked = 1;
    rc = 0;
    goto done;
oom:
    nx_fail(err, "out of memory for the reference of %s", out->target.key);
    out->failure = NX_RUN_FAULT;
done:
    for (uint32_t k = 0; k < n_owned; k++) free(owned[k]);
    return rc;
}

int nx_run_op(nx_lowerer *L, const nx_machine *m, const nx_prepared *p, const void *const *inputs,
              const nx_run_options *opt, nx_run_result *out, nx_error *err) {
    memset(out, 0, sizeof *out);
    const nx_macro_op *op = &p->op;
    out->target = p->target; /* looked up and checked by nx_prepare_op: no second lookup */
    /* the limits, before anything is traced, allocated or filled */
    nx_run_memory mem;
    nx_run_memory_of_op(m, op, opt, &mem);
    if (nx_run_memory_check(&mem, opt, err) != 0 || fill_check(op, inputs, opt, err) != 0) {
        nx_fail_prefix(err, "%s", op->func_name);
        return fail_as(out, NX_RUN_LIMIT, -1);
    }
    if (opt->check && (!out->target.rules || !out->target.rules->reference))
        return fail_as(out, NX_RUN_BAD_INPUT,
                       nx_fail(err, "%s: no reference implementation to check against yet", out->target.key));
    /* the trace itself stays within the limit beside the op's tensors */
    int limited = 0;
    if (nx_lower_within(L, &p->target, op, opt->grid, opt->max_memory, mem.total, &out->prog, &out->grid, &limited, err) != 0)
        return fail_as(out, limited ? NX_RUN_LIMIT : NX_RUN_BAD_INPUT, -1);
    if (opt->grid) out->grid = opt->grid;
    out->new_traces = nx_lowerer_new_traces(L);
    out->cache_hits = nx_lowerer_cache_hits(L);
    const nx_program *prog = out->prog;
    for (uint32_t i = 0; i < op->n_operands; i++)
        out->operand_tensor[i] = nx_program_find_tensor(prog, op->operands[i].name);
    for (uint32_t j = 0; j < op->n_results; j++) /* an aliased result is its operand's tensor */
        out->result_tensor[j] = op->results[j].alias ? out->operand_tensor[op->results[j].alias - 1]
                                                     : nx_program_find_tensor(prog, op->results[j].name);
    nx_run_memory_of_program(m, prog, opt, &mem);
    mem.check = check_bytes(op, prog, opt, out);
    mem.total += mem.check;
    if (nx_run_memory_check(&mem, opt, err) != 0) {
        nx_fail_prefix(err, "%s", op->func_name);
        return fail_as(out, NX_RUN_LIMIT, -1);
    }
    if (nx_state_init(&out->state, &m->geo, prog->cores, prog->hbm_bytes, prog->sem_count, err) != 0) {
        nx_fail_prefix(err, "%s", op->func_name);
        return fail_as(out, NX_RUN_FAULT, -1);
    }
    out->have_state = 1;
    place_operands(op, inputs, opt->seed, out);
    for (uint32_t j = 0; j < op->n_results; j++)
        out->results[j] = out->state.hbm + prog->tensors[out->result_tensor[j]].offset;
    if (nx_run_program(m, prog, &out->state, opt, &out->trace, &out->failure, err) != 0) {
        nx_fail_prefix(err, "%s", op->func_name);
        return -1;
    }
    if (opt->check && check_results(&m->geo, op, inputs, opt, out, err) != 0) return -1;
    return 0;
}

void nx_run_result_free(nx_run_result *r) {
    if (!r) return;
    nx_run_trace_free(&r->trace);
    if (r->have_state) nx_state_free(&r->state);
    memset(r, 0, sizeof *r);
}
