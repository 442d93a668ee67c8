/* Resolving an op against the registry (the seed's _resolve_kernel_config)
 * or, after a registry miss, the composites (registry/composites.h). */
#include <string.h>

#include "composites.h"
#include "registry.h"

static void tensor_ref(nx_tensor_ref *r, const nx_op_tensor *t) {
    memset(r, 0, sizeof *r);
    memcpy(r->name, t->name, sizeof r->name);
    r->name[sizeof r->name - 1] = '\0';
    r->dtype = t->dtype;
    r->ndims = t->ndims;
    memcpy(r->shape, t->shape, sizeof r->shape);
}

static void resolved_init(nx_resolved *out) {
    memset(out, 0, sizeof *out);
    nx_attrs_init(&out->additional_args);
}

int nx_resolve_target(const nx_kernel_target *t, const nx_macro_op *inst, nx_resolved *out, nx_error *err) {
    resolved_init(out);
    const nx_kernel_config *cfg = t->config;
    uint32_t n_in = inst->n_operands;
    if (cfg->operand_count != NX_OPERANDS_ALL) {
        if (inst->n_operands < (uint32_t)cfg->operand_count)
            return nx_fail(err, "%s: takes %d operands, the op has %u", t->key, cfg->operand_count,
                           inst->n_operands);
        n_in = (uint32_t)cfg->operand_count;
    }
    if (n_in + inst->n_results > NX_KERNEL_MAX_ARGS)
        return nx_fail(err, "%s: %u operands and %u results exceed the %d call arguments a leaf takes",
                       t->key, n_in, inst->n_results, NX_KERNEL_MAX_ARGS);
    for (uint32_t i = 0; i < n_in; i++) tensor_ref(&out->call_args[i], &inst->operands[i]);
    for (uint32_t j = 0; j < inst->n_results; j++)
        tensor_ref(&out->call_args[n_in + j], &inst->results[j]);
    out->nargs = n_in + inst->n_results;
    out->n_inputs = n_in;

    if (cfg->additional_args_builder &&
        cfg->additional_args_builder->build(inst, &out->additional_args, err) != 0) {
        nx_fail_prefix(err, "%s: %s", t->key, cfg->additional_args_builder->seed_name);
        nx_resolved_free(out);
        return -1;
    }
    out->key = t->key;
    out->entry = t->entry;
    out->composite = t->composite;
    out->config = cfg;
    out->leaf = cfg->kernel_func;
    out->rules = t->rules;
    out->family = t->family;
    return 0;
}

/* A failed lookup leaves *out initialised (safe to free). */
static int resolved_fail(nx_resolved *out) {
    resolved_init(out);
    return -1;
}

int nx_resolve_kernel_config(const nx_kernel_registry *reg, const nx_macro_op *inst, nx_resolved *out,
                             nx_error *err) {
    nx_kernel_target t;
    static const nx_composite_table none = {NULL, 0};
    if (nx_kernel_lookup(reg, &none, inst->func_name, &t, err) != 0) return resolved_fail(out);
    return nx_resolve_target(&t, inst, out, err);
}

int nx_resolve_op(const nx_kernel_registry *reg, const nx_composite_table *comps,
                  const nx_macro_op *inst, nx_resolved *out, nx_error *err) {
    nx_kernel_target t;
    if (nx_kernel_lookup(reg, comps, inst->func_name, &t, err) != 0) return resolved_fail(out);
    return nx_resolve_target(&t, inst, out, err);
}

void nx_resolved_free(nx_resolved *r) {
    if (!r) return;
    nx_attrs_free(&r->additional_args);
    memset(r, 0, sizeof *r);
}
