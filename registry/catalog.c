/* The seed's 13 registry entries (KERNELS.md section 1) with nxsim's
 * per-kernel rules beside them (result shapes, the default op of
 * `nxsim run`, the reference), and the kernel inventory of `nxsim kernels`.
 *
 * Seed traps kept on purpose: key #4 has no "_kernel", its function does;
 * keys #3-#6 are capitalised, their functions are not; there is no MLP
 * entry (MLP is name-inlined elsewhere in the seed's compiler). */
#include <stdio.h>
#include <string.h>

#include "kernels/ref/ref.h"
#include "kernels/transpose.h"
#include "kernels/transpose_plan.h"
#include "registry.h"
#include "topk_methods.h"

/* ---- transposes: tiled_pf_transpose (#12), tiled_dve_transpose_10 (#13) ---- */

/* The leaves' own reading of attribute `permutation` (absent = reversed
 * dims, negative entries counted from the end), checked to be a
 * permutation; in[k] = the input dim of output dim k. Whether it reduces to
 * a swap of the last two dim groups is the leaf's rule, checked when it is
 * traced. */
static int transpose_perm(const nx_macro_op *op, int64_t *perm, nx_error *err) {
    if (op->n_operands != 1)
        return nx_fail(err, "%s takes one operand, the op has %u", op->func_name, op->n_operands);
    const nx_op_tensor *x = &op->operands[0];
    if (nx_transpose_perm_attr(&op->attrs, x->ndims, perm, err) != 0)
        return nx_fail_prefix(err, "operand 0 (%s)", x->name);
    unsigned seen = 0;
    for (uint32_t i = 0; i < x->ndims; i++) {
        int64_t v = perm[i] < 0 ? perm[i] + (int64_t)x->ndims : perm[i];
        if (v < 0 || v >= (int64_t)x->ndims || (seen >> v & 1u)) {
            char ptxt[128];
            nx_format_i64_list(ptxt, sizeof ptxt, perm, x->ndims);
            return nx_fail(err, "operand 0 (%s): permutation %s is not a permutation of the %u dims",
                           x->name, ptxt, x->ndims);
        }
        seen |= 1u << v;
        perm[i] = v;
    }
    return 0;
}

/* Result = np.transpose(x, permutation): same dtype, shape[k] = x.shape[perm[k]]. */
static int transpose_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    int64_t perm[NX_KERNEL_MAX_DIMS];
    if (transpose_perm(op, perm, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    uint64_t shape[NX_KERNEL_MAX_DIMS];
    for (uint32_t i = 0; i < x->ndims; i++) shape[i] = x->shape[perm[i]];
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", x->dtype, x->ndims,
                                  shape, err);
}

static int transpose_reference(const nx_macro_op *op, const void *const *inputs, void *const *outputs,
                               nx_error *err) {
    int64_t perm[NX_KERNEL_MAX_DIMS];
    if (transpose_perm(op, perm, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    return nx_ref_transpose(inputs[0], x->dtype, x->ndims, x->shape, perm, outputs[0], err);
}

/* 512 x 384 fp32: a full 128-row tile count per core on the grid, and a free
 * size that is not a power of two; it traces and simulates in well under a
 * second. */
static int transpose_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t shape[2] = {512, 384};
    static const uint64_t perm[2] = {1, 0};
    nx_value v;
    if (nx_macro_op_add_operand(op, "in0", NX_DT_FP32, 2, shape, err) != 0) return -1;
    if (nx_value_int_list(&v, perm, 2, err) != 0) return -1;
    if (nx_attrs_set(&op->attrs, "permutation", &v, err) != 0) {
        nx_value_free(&v);
        return -1;
    }
    return 0;
}

/* ---- the seed's builder listing, in insertion order -------------------------- */

#define LEAF(fname, fnptr) static const nx_leaf leaf_##fname = {#fname, fnptr}
LEAF(select_and_scatter_kernel, NULL);
LEAF(resize_nearest_fixed_dma_kernel, NULL);
LEAF(conv2d_pbp_0f1b_0i1o_01fb_experimental_1, NULL);
LEAF(conv2d_pbp_fb01_io01_01bf_kernel_experimental_1, NULL);
LEAF(conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh, NULL);
LEAF(conv1d_depthwise_bf01_oi01_bf01, NULL);
LEAF(conv2d_column_packing, NULL);
LEAF(conv2d_column_packing_io10, NULL);
LEAF(conv2d_column_packing_1, NULL);
LEAF(blockwise_mm, NULL);
LEAF(conv2d_depthwise_f01b_o01i_bf01, NULL);
LEAF(tiled_pf_transpose, tiled_pf_transpose);
LEAF(tiled_dve_transpose_10, tiled_dve_transpose_10);
#undef LEAF

#define ALL NX_OPERANDS_ALL
/* {seed #, key, {kernel_func, operand_count, additional_args_builder,
 *   requires_multicore_grid, output_is_parameter}, family, rules...} */
static const nx_registry_entry seed_catalogue[] = {
    {1, "SelectAndScatter", {&leaf_select_and_scatter_kernel, 2, NULL, false, false},
     "select_and_scatter", NULL, NULL, NULL, NULL, 0},
    {2, "ResizeNearest", {&leaf_resize_nearest_fixed_dma_kernel, 1, &nx_args_resize, false, false},
     "resize", NULL, NULL, NULL, NULL, 0},
    {3, "Conv2d_pbp_0f1b_0i1o_01fb_experimental_1",
     {&leaf_conv2d_pbp_0f1b_0i1o_01fb_experimental_1, ALL, &nx_args_attrs, false, false}, "conv",
     NULL, NULL, NULL, NULL, 0},
    {4, "Conv2d_pbp_fb01_io01_01bf_experimental_1",
     {&leaf_conv2d_pbp_fb01_io01_01bf_kernel_experimental_1, ALL, &nx_args_attrs, false, false},
     "conv", NULL, NULL, NULL, NULL, 0},
    {5, "Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh",
     {&leaf_conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh, 2, &nx_args_conv_attrs_out_shape, false, false},
     "conv", NULL, NULL, NULL, NULL, 0},
    {6, "Conv1d_depthwise_bf01_oi01_bf01",
     {&leaf_conv1d_depthwise_bf01_oi01_bf01, 2, &nx_args_conv_attrs_out_shape, false, false}, "conv",
     NULL, NULL, NULL, NULL, 0},
    {7, "conv2d_column_packing",
     {&leaf_conv2d_column_packing, 2, &nx_args_conv_attrs_out_shape, false, false}, "conv", NULL,
     NULL, NULL, NULL, 0},
    {8, "conv2d_column_packing_io10",
     {&leaf_conv2d_column_packing_io10, 2, &nx_args_conv_attrs_out_shape, false, false}, "conv",
     NULL, NULL, NULL, NULL, 0},
    {9, "conv2d_column_packing_1",
     {&leaf_conv2d_column_packing_1, 2, &nx_args_conv_attrs_out_shape, false, false}, "conv", NULL,
     NULL, NULL, NULL, 0},
    {10, "blockwise_mm", {&leaf_blockwise_mm, ALL, &nx_args_attrs, false, false}, "blockwise_mm",
     NULL, NULL, NULL, NULL, 0},
    {11, "conv2d_depthwise_f01b_o01i_bf01",
     {&leaf_conv2d_depthwise_f01b_o01i_bf01, 2, &nx_args_conv_attrs_out_shape, false, false}, "conv",
     NULL, NULL, NULL, NULL, 0},
    {12, "tiled_pf_transpose", {&leaf_tiled_pf_transpose, ALL, &nx_args_attrs, true, false},
     "transpose", transpose_infer, transpose_default, transpose_reference, "nx_ref_transpose", 0},
    {13, "tiled_dve_transpose_10", {&leaf_tiled_dve_transpose_10, ALL, &nx_args_attrs, true, false},
     "transpose", transpose_infer, transpose_default, transpose_reference, "nx_ref_transpose", 0},
};
#undef ALL

static const nx_kernel_registry catalogue = {
    seed_catalogue, (uint32_t)(sizeof seed_catalogue / sizeof seed_catalogue[0])};

const nx_kernel_registry *nx_registry_catalogue(void) { return &catalogue; }

/* ---- the inventory ------------------------------------------------------------ */

const char *nx_kernel_tier_name(nx_kernel_tier t) {
    switch (t) {
    case NX_TIER_REFERENCE: return "reference";
    case NX_TIER_LEAF: return "leaf";
    case NX_TIER_COMPOSITE: return "composite";
    }
    return "?";
}

/* kernels/ref: the reference functions that exist, with their family. */
static const struct {
    const char *name;
    const char *family;
} references[] = {
    {"nx_ref_transpose", "transpose"},
};

uint32_t nx_kernel_inventory(nx_inventory_item *out, uint32_t max) {
    uint32_t n = 0;
#define ADD(...)                                              \
    do {                                                      \
        nx_inventory_item it_ = {__VA_ARGS__};                \
        if (n < max) out[n] = it_;                            \
        n++;                                                  \
    } while (0)
    for (size_t i = 0; i < sizeof references / sizeof references[0]; i++)
        ADD(references[i].name, NX_TIER_REFERENCE, references[i].family, NULL, true, "kernels/ref");
    for (uint32_t i = 0; i < catalogue.count; i++) {
        const nx_registry_entry *e = &catalogue.entries[i];
        ADD(e->config.kernel_func->name, NX_TIER_LEAF, e->family, e->key,
            e->config.kernel_func->fn != NULL, "internal kernel registry");
    }
    uint32_t nm;
    const nx_topk_method *m = nx_topk_method_mapping(&nm);
    static const char *const via[NX_TOPK_METHOD_COUNT] = {
        "SupportedTopkMethods.SCANNING", "SupportedTopkMethods.CASCADED",
        "SupportedTopkMethods.ROTATIONAL"};
    for (uint32_t i = 0; i < nm; i++)
        ADD(m[i].function, NX_TIER_LEAF, "topk", NULL, m[i].fn != NULL, via[m[i].method]);
    /* Composite (orchestrator) kernels: none exist yet. */
#undef ADD
    return n;
}
