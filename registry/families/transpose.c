/* The transpose family's rules (registry keys tiled_pf_transpose and
 * tiled_dve_transpose_10): np.transpose(x, permutation). The permutation is
 * read and checked by kernels/transpose/transpose_plan.c, the one home of that rule
 * (the leaves call the same function when they are traced); whether it
 * reduces to a swap of the last two dim groups is the leaves' own rule,
 * checked when they are traced. */
#include "families.h"

#include <stdio.h>

#include "kernels/ref/ref.h"
#include "kernels/transpose/transpose_plan.h"
#include "kernels/transpose/transpose.h"
#include "kernels/transpose/transpose_steps.h"
#include "sim/machine.h"

static const char *const transpose_attrs[] = {"permutation", NULL};

/* The one operand, its permutation (normalised) and the result shape. */
static int transpose_shape(const nx_macro_op *op, int64_t *perm, uint64_t *shape, nx_error *err) {
    if (op->n_operands != 1)
        return nx_fail(err, "%s takes one operand, the op has %u", op->func_name, op->n_operands);
    const nx_op_tensor *x = &op->operands[0];
    if (nx_transpose_out_shape(&op->attrs, x->ndims, x->shape, perm, shape, err) != 0)
        return nx_fail_prefix(err, "operand 0 (%s)", x->name);
    return 0;
}

/* Result = np.transpose(x, permutation): x's dtype, shape[k] = x.shape[perm[k]]. */
static int transpose_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    int64_t perm[NX_KERNEL_MAX_DIMS];
    uint64_t shape[NX_KERNEL_MAX_DIMS];
    if (transpose_shape(op, perm, shape, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", x->dtype, x->ndims,
                                  shape, err);
}

static int transpose_reference(const nx_macro_op *op, const void *const *inputs, void *const *outputs,
                               nx_error *err) {
    int64_t perm[NX_KERNEL_MAX_DIMS];
    uint64_t shape[NX_KERNEL_MAX_DIMS];
    if (transpose_shape(op, perm, shape, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    return nx_ref_transpose(inputs[0], x->dtype, x->ndims, x->shape, perm, outputs[0], err);
}

/* 512 x 384 fp32: a whole number of 128-row tiles per core on the grid and a
 * free size that is not a power of two; it traces and simulates in well
 * under a second. */
static int transpose_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t shape[2] = {512, 384};
    static const uint64_t perm[2] = {1, 0};
    if (nx_macro_op_add_operand(op, "in0", NX_DT_FP32, 2, shape, err) != 0) return -1;
    return nx_attrs_set_int_list(&op->attrs, "permutation", perm, 2, err);
}

/* A transpose moves bits: exact. */
const nx_op_rules nx_rules_transpose = {
    .attrs = transpose_attrs,
    .infer_results = transpose_infer,
    .default_op = transpose_default,
    .reference = transpose_reference,
    .reference_name = "nx_ref_transpose",
    .tolerance = nx_tolerance_exact,
};

/* The registry rows: the seed's #12 and #13, both on the VNC(2) grid. */
static const nx_registry_entry transpose_rows[] = {
    {.seed_index = 12, .key = "tiled_pf_transpose",
     .config = NX_CONFIG(NX_LEAF(tiled_pf_transpose), NX_OPERANDS_ALL, &nx_args_attrs, true), .rules = &nx_rules_transpose},
    {.seed_index = 13, .key = "tiled_dve_transpose_10",
     .config = NX_CONFIG(NX_LEAF(tiled_dve_transpose_10), NX_OPERANDS_ALL, &nx_args_attrs, true),
     .rules = &nx_rules_transpose},
};

/* ---- the `transpose` composite (ONNX Transpose, kernels/transpose/transpose_steps.h) ---- */

static const char *const general_attrs[] = {"perm", NULL};

static int general_shape(const nx_macro_op *op, int64_t *perm, uint64_t *shape, nx_error *err) {
    if (op->n_operands != 1) return nx_fail(err, "transpose takes one operand (data), the op has %u", op->n_operands);
    const nx_op_tensor *x = &op->operands[0];
    if (nx_transpose_out_shape_named(&op->attrs, "perm", x->ndims, x->shape, perm, shape, err) != 0) return -1;
    return 0;
}

static int general_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    int64_t perm[NX_KERNEL_MAX_DIMS];
    uint64_t shape[NX_KERNEL_MAX_DIMS];
    if (general_shape(op, perm, shape, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", x->dtype, x->ndims, shape, err);
}

static int general_reference(const nx_macro_op *op, const void *const *inputs, void *const *outputs, nx_error *err) {
    int64_t perm[NX_KERNEL_MAX_DIMS];
    uint64_t shape[NX_KERNEL_MAX_DIMS];
    if (general_shape(op, perm, shape, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    return nx_ref_transpose(inputs[0], x->dtype, x->ndims, x->shape, perm, outputs[0], err);
}

/* [6, 40, 96] fp32 with the default perm (reversed): two steps. */
static int general_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t shape[3] = {6, 40, 96};
    return nx_macro_op_add_operand(op, "data", NX_DT_FP32, 3, shape, err);
}

/* The steps the kernel runs (the plan is the kernel's own function; the
 * machine's DMA figures are the preset geo names, as the traced kernel's
 * are for a preset). */
static int general_explain(const nx_macro_op *op, const nx_geometry *geo, char *buf, size_t len, nx_error *err) {
    int64_t perm[NX_KERNEL_MAX_DIMS];
    uint64_t shape[NX_KERNEL_MAX_DIMS];
    if (general_shape(op, perm, shape, err) != 0) return -1;
    nx_machine m;
    if (nx_machine_of_geometry(geo, &m, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    nx_transpose_steps s;
    if (nx_transpose_steps_plan(&m, 2, x->ndims, x->shape, (uint32_t)nx_dtype_size(x->dtype), perm, &s, err) != 0)
        return -1;
    nx_transpose_steps_text(&s, buf, len);
    return 0;
}

static const nx_op_rules nx_rules_transpose_general = {
    .attrs = general_attrs,
    .infer_results = general_infer,
    .default_op = general_default,
    .reference = general_reference,
    .reference_name = "nx_ref_transpose",
    .tolerance = nx_tolerance_exact,
    .explain = general_explain,
};

/* On the VNC(2) grid, as the two registry rows its steps call. */
static const nx_composite transpose_composites[] = {
    {.name = "transpose", .config = NX_CONFIG(NX_LEAF(nx_transpose_general), NX_OPERANDS_ALL, &nx_args_attrs, true),
     .rules = &nx_rules_transpose_general,
     .via = "nxsim run transpose (ONNX Transpose: steps of the registry transposes and DMA)"},
};

const nx_family nx_family_transpose = {.name = "transpose", NX_FAMILY_ROWS(transpose_rows),
                                       NX_FAMILY_COMPOSITES(transpose_composites)};
