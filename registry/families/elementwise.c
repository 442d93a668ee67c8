/* The elementwise family's rules (kernels/elementwise/elementwise.h):
 * cumsum.
 *   results    y of x's dtype and shape;
 *   reference  nx_ref_cumsum (the fp32 running sum along the axis);
 *   tolerance  exact: the kernel's scan adds the same fp32 values in the
 *              same order from the same -0 (the accumulator is an fp32
 *              engine value, carried exactly between chunks), and both
 *              round each result once;
 *   default    x [512, 2048] bf16, the last axis. */
#include "families.h"

#include <string.h>

#include "kernels/elementwise/elementwise.h"
#include "kernels/ref/elementwise_ref.h"

static int cs_read(const nx_macro_op *op, nx_cumsum_params *p, nx_error *err) {
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    for (uint32_t i = 0; i < op->n_operands && i < NX_OP_MAX_TENSORS; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    return nx_cumsum_read(&op->attrs, in, op->n_operands, p, err);
}

static int cs_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_cumsum_params p;
    if (cs_read(op, &p, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", x->dtype, x->ndims, x->shape, err);
}

static int cs_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_cumsum_params p;
    if (cs_read(op, &p, err) != 0) return -1;
    return nx_ref_cumsum(&p, in[0], out[0], err);
}

static int cs_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t x[2] = {512, 2048};
    return nx_macro_op_add_operand(op, "x", NX_DT_BF16, 2, x, err);
}

const nx_op_rules nx_rules_cumsum = {
    .attrs = nx_cumsum_attrs,
    .infer_results = cs_infer,
    .default_op = cs_default,
    .reference = cs_reference,
    .reference_name = "nx_ref_cumsum",
    .tolerance = nx_tolerance_exact,
};
