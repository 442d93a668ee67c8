/* Preparing a macro-op: one lookup, the default op, one attribute check,
 * the results (registry/prepare.h). */
#include "prepare.h"

#include <string.h>

void nx_prepared_init(nx_prepared *p) {
    memset(p, 0, sizeof *p);
    nx_macro_op_init(&p->op);
}

void nx_prepared_free(nx_prepared *p) {
    if (!p) return;
    nx_macro_op_free(&p->op);
    nx_prepared_init(p);
}

static int fail_at(nx_prepared *p, nx_prepare_stage stage) {
    p->failed = stage;
    nx_macro_op_free(&p->op);
    nx_macro_op_init(&p->op);
    return -1;
}

int nx_prepare_target(const nx_lowerer *L, const char *func_name, nx_prepared *p, nx_error *err) {
    p->failed = NX_PREPARE_OK;
    if (nx_lowerer_lookup(L, func_name, &p->target, err) != 0) {
        p->failed = NX_PREPARE_MISS;
        return -1;
    }
    return 0;
}

/* The given attributes over the default op's (Python dict assignment:
 * an override keeps the default's position). */
static int attrs_over(nx_attrs *dst, const nx_attrs *over, nx_error *err) {
    for (uint32_t k = 0; k < over->count; k++) {
        nx_value v;
        if (nx_value_copy(&v, &over->items[k].value, err) != 0) return -1;
        if (nx_attrs_set(dst, over->items[k].name, &v, err) != 0) {
            nx_value_free(&v);
            return -1;
        }
    }
    return 0;
}

/* p->op's operands and attributes: the given ones, or the default op's with
 * the given attributes over them. */
static int operands_of(nx_prepared *p, const nx_macro_op *given, nx_prepare_operands how, nx_error *err) {
    const nx_kernel_target *t = &p->target;
    if (given->n_operands || how == NX_PREPARE_AS_GIVEN) {
        memcpy(p->op.operands, given->operands, sizeof p->op.operands);
        p->op.n_operands = given->n_operands;
        if (nx_attrs_copy(&p->op.attrs, &given->attrs, err) != 0) return fail_at(p, NX_PREPARE_ATTR_SET);
        return 0;
    }
    if (!t->rules || !t->rules->default_op) {
        nx_fail(err, "%s has no built-in default op: give its operands", t->key);
        return fail_at(p, NX_PREPARE_NO_DEFAULT);
    }
    if (t->rules->default_op(&p->op, err) != 0) {
        nx_fail_prefix(err, "%s: default op", t->key);
        return fail_at(p, NX_PREPARE_DEFAULT_OP);
    }
    if (attrs_over(&p->op.attrs, &given->attrs, err) != 0) return fail_at(p, NX_PREPARE_ATTR_SET);
    return 0;
}

int nx_prepare_op(nx_prepared *p, const nx_macro_op *given, nx_prepare_operands how, const char *source,
                  nx_error *err) {
    const nx_kernel_target *t = &p->target;
    p->failed = NX_PREPARE_OK;
    nx_macro_op_free(&p->op);
    nx_macro_op_init(&p->op);
    if (nx_macro_op_set_func_name(&p->op, t->key, err) != 0) return fail_at(p, NX_PREPARE_ATTR_SET);
    if (operands_of(p, given, how, err) != 0) return -1;
    /* before the rules read them: a typo ("stide") is an error, not a default */
    if (nx_op_rules_check_attrs(t->rules, t->key, &p->op.attrs, err) != 0) {
        if (source) {
            nx_quoted q;
            nx_fail_prefix(err, "%s", nx_quote(&q, source, NX_QUOTE_PATH));
        }
        return fail_at(p, NX_PREPARE_ATTRS);
    }
    memcpy(p->op.results, given->results, sizeof p->op.results);
    p->op.n_results = given->n_results;
    if (nx_op_rules_apply_results(t->rules, t->key, source, &p->op, err) != 0)
        return fail_at(p, NX_PREPARE_RESULTS);
    if (nx_macro_op_check(&p->op, err) != 0) {
        nx_fail_prefix(err, "%s", source ? source : t->key);
        return fail_at(p, NX_PREPARE_CHECK);
    }
    return 0;
}

int nx_op_prepare(const nx_lowerer *L, const nx_macro_op *given, const char *source, nx_prepared *p,
                  nx_error *err) {
    nx_prepared_init(p);
    if (nx_prepare_target(L, given->func_name, p, err) != 0) return -1;
    return nx_prepare_op(p, given, NX_PREPARE_DEFAULT_IF_NONE, source, err);
}
