/* The select_and_scatter family's rules (registry key SelectAndScatter):
 * XLA SelectAndScatter with select = GE, scatter = add. The attributes are
 * read by kernels/select_and_scatter/params.c, the one home of that rule
 * (the leaf reads them with the same function when it is traced). */
#include "families.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/ref/ref.h"
#include "kernels/select_and_scatter/params.h"
#include "kernels/select_and_scatter/select_and_scatter.h"

static const char *const sas_attrs[] = {NX_SAS_ATTR_WINDOW, NX_SAS_ATTR_STRIDES, NX_SAS_ATTR_PADDING,
                                        NX_SAS_ATTR_INIT, NULL};

/* The operand, source and attributes; the source must have the window
 * counts' shape and the operand's dtype. */
static int sas_read(const nx_macro_op *op, nx_sas_params *p, nx_error *err) {
    if (op->n_operands != 2)
        return nx_fail(err, "%s takes 2 operands (operand, source), the op has %u", op->func_name, op->n_operands);
    const nx_op_tensor *x = &op->operands[0], *s = &op->operands[1];
    if (nx_sas_params_read(&op->attrs, x->ndims, p, err) != 0) return -1;
    uint64_t want[NX_SAS_MAX_DIMS];
    if (nx_sas_source_shape(p, x->shape, want, err) != 0) return nx_fail_prefix(err, "operand 0 (%s)", x->name);
    int same = s->ndims == x->ndims;
    for (uint32_t i = 0; same && i < x->ndims; i++) same = s->shape[i] == want[i];
    if (!same) {
        char w[160], g[160];
        nx_op_tensor t = *s;
        nx_op_tensor_format(g, sizeof g, &t);
        memcpy(t.shape, want, sizeof want);
        t.ndims = x->ndims;
        nx_op_tensor_format(w, sizeof w, &t);
        return nx_fail(err, "operand 1 (%s): is %s, the window counts of operand 0 (%s) are %s", s->name, g, x->name, w);
    }
    if (s->dtype != x->dtype)
        return nx_fail(err, "operand 1 (%s): dtype %s differs from operand 0 (%s)'s %s", s->name, nx_dtype_name(s->dtype),
                       x->name, nx_dtype_name(x->dtype));
    return 0;
}

/* Result = the operand's shape and dtype. */
static int sas_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_sas_params p;
    if (sas_read(op, &p, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", x->dtype, x->ndims, x->shape, err);
}

static int sas_reference(const nx_macro_op *op, const void *const *inputs, void *const *outputs, nx_error *err) {
    nx_sas_params p;
    if (sas_read(op, &p, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    return nx_ref_select_and_scatter(inputs[0], inputs[1], x->dtype, x->shape, &p, outputs[0], err);
}

/* The max-pool gradient of a 3x3 / stride 2 / pad 1 pool (ResNet's stem)
 * on [2, 64, 28, 28] fp32: one tile of 128 planes, traced and simulated in
 * about a second. */
static int sas_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t shape[4] = {2, 64, 28, 28}, source[4] = {2, 64, 14, 14};
    static const uint64_t window[4] = {1, 1, 3, 3}, strides[4] = {1, 1, 2, 2};
    static const uint64_t pad[4][2] = {{0, 0}, {0, 0}, {1, 1}, {1, 1}};
    if (nx_macro_op_add_operand(op, "operand", NX_DT_FP32, 4, shape, err) != 0 ||
        nx_macro_op_add_operand(op, "source", NX_DT_FP32, 4, source, err) != 0 ||
        nx_attrs_set_int_list(&op->attrs, NX_SAS_ATTR_WINDOW, window, 4, err) != 0 ||
        nx_attrs_set_int_list(&op->attrs, NX_SAS_ATTR_STRIDES, strides, 4, err) != 0)
        return -1;
    nx_value v = {.kind = NX_VAL_LIST, .count = 4};
    v.items = calloc(4, sizeof *v.items);
    if (!v.items) return nx_fail(err, "out of memory");
    for (int i = 0; i < 4; i++)
        if (nx_value_int_list(&v.items[i], pad[i], 2, err) != 0) {
            nx_value_free(&v);
            return -1;
        }
    if (nx_attrs_set(&op->attrs, NX_SAS_ATTR_PADDING, &v, err) != 0) {
        nx_value_free(&v);
        return -1;
    }
    return 0;
}

/* The leaf sums in XLA's order with the same fp32 adds: exact (a zero's
 * sign may differ only for an init_value other than +0, and the check
 * compares values). */
static const nx_op_rules nx_rules_select_and_scatter = {
    .attrs = sas_attrs,
    .infer_results = sas_infer,
    .default_op = sas_default,
    .reference = sas_reference,
    .reference_name = "nx_ref_select_and_scatter",
    .tolerance = nx_tolerance_exact,
};

/* The registry row: the seed's #1 (two operands, no argument builder: the
 * leaf reads the op's attributes from its call). */
static const nx_registry_entry select_and_scatter_rows[] = {
    {.seed_index = 1, .key = "SelectAndScatter", .config = NX_CONFIG(NX_LEAF(select_and_scatter_kernel), 2, NULL, false),
     .rules = &nx_rules_select_and_scatter},
};

const nx_family nx_family_select_and_scatter = {.name = "select_and_scatter", NX_FAMILY_ROWS(select_and_scatter_rows)};
