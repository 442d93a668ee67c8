/* Macro-ops: construction, tensors, the well-formedness check
 * (registry/macro_op.h). Values are registry/values.c, JSON in
 * registry/op_parse.c, JSON out registry/op_write.c. */
#include "macro_op.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nx_macro_op_init(nx_macro_op *op) {
    memset(op, 0, sizeof *op);
    nx_attrs_init(&op->attrs);
}

void nx_macro_op_free(nx_macro_op *op) {
    if (!op) return;
    free(op->func_name);
    nx_attrs_free(&op->attrs);
    memset(op, 0, sizeof *op);
}

int nx_macro_op_set_func_name(nx_macro_op *op, const char *name, nx_error *err) {
    char *copy = strdup(name);
    if (!copy) return nx_fail(err, "out of memory");
    free(op->func_name);
    op->func_name = copy;
    return 0;
}

int nx_op_tensor_name_check(const char *what, const char *name, nx_error *err) {
    size_t n = strlen(name);
    nx_quoted q;
    if (n == 0) return nx_fail(err, "%s: the name is empty", what);
    if (n >= NX_TENSOR_NAME_MAX)
        return nx_fail(err, "%s: name '%s' is longer than %d characters", what, nx_quote(&q, name, 40),
                       NX_TENSOR_NAME_MAX - 1);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
                 (i > 0 && ((c >= '0' && c <= '9') || c == '.'));
        if (!ok)
            return nx_fail(err, "%s: name '%s' is not of the form [A-Za-z_][A-Za-z0-9_.]*", what,
                           nx_quote(&q, name, NX_QUOTE_NAME));
    }
    return 0;
}

/* min_dims: 1 for operands; 0 for results (a 0-d result: numpy.matmul of
 * two 1-D operands), which the lowerer places as one element. */
static int set_tensor(nx_op_tensor *t, const char *what, const char *name, nx_dtype dtype,
                      uint32_t ndims, const uint64_t *shape, uint32_t min_dims, nx_error *err) {
    if (nx_op_tensor_name_check(what, name, err) != 0) return -1;
    if (!nx_dtype_is_valid((int)dtype)) return nx_fail(err, "%s (%s): invalid dtype code %d", what, name, (int)dtype);
    if (ndims < min_dims || ndims > NX_KERNEL_MAX_DIMS)
        return nx_fail(err, "%s (%s): %u dims, expected %u..%d", what, name, ndims, min_dims, NX_KERNEL_MAX_DIMS);
    for (uint32_t d = 0; d < ndims; d++)
        if (shape[d] == 0) return nx_fail(err, "%s (%s): dim %u is 0", what, name, d);
    memset(t, 0, sizeof *t);
    memcpy(t->name, name, strlen(name) + 1);
    t->dtype = dtype;
    t->ndims = ndims;
    memcpy(t->shape, shape, ndims * sizeof *shape);
    return 0;
}

int nx_macro_op_add_operand(nx_macro_op *op, const char *name, nx_dtype dtype, uint32_t ndims,
                            const uint64_t *shape, nx_error *err) {
    char what[32];
    snprintf(what, sizeof what, "operand %u", op->n_operands);
    if (op->n_operands >= NX_OP_MAX_TENSORS)
        return nx_fail(err, "%s: an op takes at most %d operands", what, NX_OP_MAX_TENSORS);
    if (set_tensor(&op->operands[op->n_operands], what, name, dtype, ndims, shape, 1, err) != 0) return -1;
    op->n_operands++;
    return 0;
}

int nx_macro_op_add_result(nx_macro_op *op, const char *name, nx_dtype dtype, uint32_t ndims,
                           const uint64_t *shape, nx_error *err) {
    char what[32];
    snprintf(what, sizeof what, "result %u", op->n_results);
    if (op->n_results >= NX_OP_MAX_TENSORS)
        return nx_fail(err, "%s: an op has at most %d results", what, NX_OP_MAX_TENSORS);
    if (set_tensor(&op->results[op->n_results], what, name, dtype, ndims, shape, 0, err) != 0) return -1;
    op->n_results++;
    return 0;
}

int nx_macro_op_check(const nx_macro_op *op, nx_error *err) {
    if (!op->func_name || !op->func_name[0]) return nx_fail(err, "the op has no func_name");
    const nx_op_tensor *all[2 * NX_OP_MAX_TENSORS];
    char what[2 * NX_OP_MAX_TENSORS][24];
    uint32_t n = 0;
    if (op->n_operands > NX_OP_MAX_TENSORS || op->n_results > NX_OP_MAX_TENSORS)
        return nx_fail(err, "the op has %u operands and %u results, at most %d each", op->n_operands,
                       op->n_results, NX_OP_MAX_TENSORS);
    for (uint32_t i = 0; i < op->n_operands; i++, n++) {
        all[n] = &op->operands[i];
        snprintf(what[n], sizeof what[n], "operand %u", i);
    }
    for (uint32_t i = 0; i < op->n_results; i++, n++) {
        all[n] = &op->results[i];
        snprintf(what[n], sizeof what[n], "result %u", i);
    }
    for (uint32_t i = 0; i < n; i++) {
        const nx_op_tensor *t = all[i];
        if (nx_op_tensor_name_check(what[i], t->name, err) != 0) return -1;
        if (t->ndims < (i < op->n_operands ? 1u : 0u) || t->ndims > NX_KERNEL_MAX_DIMS || !nx_dtype_is_valid((int)t->dtype))
            return nx_fail(err, "%s (%s): shape or dtype not set", what[i], t->name);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(all[j]->name, t->name) == 0)
                return nx_fail(err, "%s and %s are both named '%s'", what[j], what[i], t->name);
    }
    for (uint32_t j = 0; j < op->n_results; j++) {
        const nx_op_tensor *r = &op->results[j];
        if (!r->alias) continue;
        if (r->alias > op->n_operands)
            return nx_fail(err, "result %u (%s) aliases operand %u, the op has %u", j, r->name, r->alias - 1,
                           op->n_operands);
        const nx_op_tensor *o = &op->operands[r->alias - 1];
        int same = o->dtype == r->dtype && o->ndims == r->ndims;
        for (uint32_t d = 0; same && d < r->ndims; d++) same = o->shape[d] == r->shape[d];
        if (!same) {
            char rs[128], os[128];
            nx_op_tensor_format(rs, sizeof rs, r);
            nx_op_tensor_format(os, sizeof os, o);
            return nx_fail(err, "result %u (%s) %s aliases operand %u (%s) %s: an aliased pair has one dtype and shape",
                           j, r->name, rs, r->alias - 1, o->name, os);
        }
        for (uint32_t i = 0; i < j; i++)
            if (op->results[i].alias == r->alias)
                return nx_fail(err, "results %u (%s) and %u (%s) both alias operand %u (%s)", i, op->results[i].name, j,
                               r->name, r->alias - 1, o->name);
    }
    return 0;
}

void nx_op_files_free(nx_op_files *f) {
    if (!f) return;
    for (int i = 0; i < NX_OP_MAX_TENSORS; i++) {
        free(f->operand[i]);
        free(f->result[i]);
    }
    memset(f, 0, sizeof *f);
}

void nx_op_tensor_format(char *buf, size_t len, const nx_op_tensor *t) {
    const char *dt = nx_dtype_name(t->dtype);
    int n = snprintf(buf, len, "%s[", dt ? dt : "?");
    for (uint32_t d = 0; d < t->ndims && n >= 0 && (size_t)n < len; d++)
        n += snprintf(buf + n, len - (size_t)n, "%s%llu", d ? "," : "", (unsigned long long)t->shape[d]);
    if (n >= 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, "]");
}
