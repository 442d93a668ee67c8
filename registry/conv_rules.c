/* The conv registry rules (conv_rules.h). */
#include "conv_rules.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/ref/ref.h"

int nx_conv_rule_read(const nx_macro_op *op, const char *labels, nx_conv_layout *L,
                      nx_conv_params *p, uint64_t *out_shape, nx_error *err) {
    if (nx_conv_layout_parse(labels, L, err) != 0) return -1;
    if (op->n_operands != 2)
        return nx_fail(err, "%s takes two operands (image %.*s, filter), the op has %u", op->func_name,
                       (int)(L->spatial + 2), labels, op->n_operands);
    if (nx_conv_params_read(&op->attrs, L->spatial, NULL, p, err) != 0) return -1;
    char ln[96], rn[96];
    snprintf(ln, sizeof ln, "operand 0 (%s)", op->operands[0].name);
    snprintf(rn, sizeof rn, "operand 1 (%s)", op->operands[1].name);
    return nx_conv_result_shape(L, p, op->operands[0].ndims, op->operands[0].shape, op->operands[1].ndims,
                                op->operands[1].shape, ln, rn, out_shape, err);
}

int nx_conv_rule_infer(nx_macro_op *op, const char *labels, const char *const *names,
                       nx_error *err) {
    nx_conv_layout L;
    nx_conv_params p;
    uint64_t shape[NX_KERNEL_MAX_DIMS];
    if (nx_conv_rule_read(op, labels, &L, &p, shape, err) != 0) return -1;
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", op->operands[0].dtype, L.spatial + 2,
                                  shape, err);
}

int nx_conv_rule_reference(const nx_macro_op *op, const char *labels, const void *const *inputs,
                           void *const *outputs, nx_error *err) {
    nx_conv_layout L;
    nx_conv_params p;
    uint64_t shape[NX_KERNEL_MAX_DIMS];
    if (nx_conv_rule_read(op, labels, &L, &p, shape, err) != 0) return -1;
    if (op->n_results < 1) return nx_fail(err, "%s: the op has no result", op->func_name);
    const nx_op_tensor *a = &op->operands[0], *b = &op->operands[1], *o = &op->results[0];
    nx_ref_operand lhs = {inputs[0], a->dtype, a->ndims, a->shape};
    nx_ref_operand rhs = {inputs[1], b->dtype, b->ndims, b->shape};
    return nx_ref_conv(labels, &p, &lhs, &rhs, outputs[0], o->dtype, o->ndims, o->shape, err);
}

uint64_t nx_conv_rule_contraction(const nx_macro_op *op, const char *labels) {
    nx_conv_layout L;
    nx_error err;
    if (nx_conv_layout_parse(labels, &L, &err) != 0 || op->n_operands < 2 ||
        op->operands[1].ndims != L.spatial + 2)
        return 0;
    const nx_op_tensor *r = &op->operands[1];
    uint64_t k = r->shape[L.rhs_in];
    for (uint32_t d = 0; d < L.spatial; d++) k *= r->shape[L.rhs_spatial[d]];
    return k;
}

double nx_conv_rule_tolerance_eps(uint64_t K, nx_dtype result_dtype) {
    double k = (double)(K ? K : 1);
    return 1.0 + 2.0 * k * sqrt(k) * 0x1p-24 / nx_dtype_epsilon(result_dtype);
}

int nx_conv_rule_tolerance(const nx_macro_op *op, const char *labels, uint32_t result, nx_tolerance *out,
                           nx_error *err) {
    (void)err;
    nx_dtype dt = result < op->n_results ? op->results[result].dtype : op->operands[0].dtype;
    uint64_t K = nx_conv_rule_contraction(op, labels);
    nx_tolerance_eps(out, nx_conv_rule_tolerance_eps(K, dt), dt);
    char text[sizeof out->text];
    snprintf(text, sizeof text, "K=%llu: %.3g x eps(%s)", (unsigned long long)K, nx_conv_rule_tolerance_eps(K, dt),
             nx_dtype_name(dt));
    memcpy(out->text, text, sizeof text);
    return 0;
}

const char *const nx_conv_rule_attrs[] = {
    NX_CONV_ATTR_STRIDE,         NX_CONV_ATTR_PADDING,       NX_CONV_ATTR_LHS_DILATION, NX_CONV_ATTR_RHS_DILATION,
    NX_CONV_ATTR_FEATURE_GROUPS, NX_CONV_ATTR_BATCH_GROUPS, NX_CONV_ATTR_OUT_SHAPE,    NULL};
