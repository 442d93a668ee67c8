/* The catalogue: the seed's 13 registry entries in its builder's insertion
 * order (docs/parts/registry.md), each pointing at its leaf and at its
 * family's rules (registry/families/). Adding a leaf is setting its function
 * in the LEAF() line below and its row's .rules; a new kernel that is not
 * one of these 13 keys is a composite (docs/parts/registry.md), never a 14th
 * row: the static assertion below refuses any other count.
 *
 * Seed traps kept on purpose: key #4 has no "_kernel", its function does;
 * keys #3-#6 are capitalised, their functions are not; there is no MLP
 * entry (MLP is inlined by name elsewhere in the seed's compiler). */
#include "kernels/blockwise_mm/blockwise_mm.h"
#include "kernels/conv/forward/conv2d_pbp.h"
#include "kernels/conv/depthwise/depthwise.h"
#include "kernels/resize/resize_nearest.h"
#include "kernels/select_and_scatter/select_and_scatter.h"
#include "kernels/conv/wgrad/wgrad.h"
#include "kernels/transpose/transpose.h"
#include "registry.h"
#include "registry/families/families.h"

/* The leaves by their true names (never derived from the key); fn NULL while
 * the leaf is not implemented. */
#define LEAF(fname, fnptr) static const nx_leaf leaf_##fname = {#fname, fnptr}
LEAF(select_and_scatter_kernel, select_and_scatter_kernel);
LEAF(resize_nearest_fixed_dma_kernel, resize_nearest_fixed_dma_kernel);
LEAF(conv2d_pbp_0f1b_0i1o_01fb_experimental_1, conv2d_pbp_0f1b_0i1o_01fb_experimental_1);
LEAF(conv2d_pbp_fb01_io01_01bf_kernel_experimental_1, conv2d_pbp_fb01_io01_01bf_kernel_experimental_1);
LEAF(conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh, conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh);
LEAF(conv1d_depthwise_bf01_oi01_bf01, conv1d_depthwise_bf01_oi01_bf01);
LEAF(conv2d_column_packing, conv2d_column_packing);
LEAF(conv2d_column_packing_io10, conv2d_column_packing_io10);
LEAF(conv2d_column_packing_1, conv2d_column_packing_1);
LEAF(blockwise_mm, blockwise_mm);
LEAF(conv2d_depthwise_f01b_o01i_bf01, conv2d_depthwise_f01b_o01i_bf01);
LEAF(tiled_pf_transpose, tiled_pf_transpose);
LEAF(tiled_dve_transpose_10, tiled_dve_transpose_10);
#undef LEAF

/* A row's seed config: {kernel_func, operand_count, additional_args_builder,
 * requires_multicore_grid, output_is_parameter} (output_is_parameter is
 * False for every entry, as in the seed). */
#define CONFIG(leaf, count, builder, grid) \
    {.kernel_func = &leaf_##leaf, .operand_count = (count), .additional_args_builder = (builder), \
     .requires_multicore_grid = (grid), .output_is_parameter = false}
#define ALL NX_OPERANDS_ALL

static const nx_registry_entry seed_catalogue[] = {
    {.seed_index = 1, .key = "SelectAndScatter", .family = "select_and_scatter",
     .config = CONFIG(select_and_scatter_kernel, 2, NULL, false), .rules = &nx_rules_select_and_scatter},
    {.seed_index = 2, .key = "ResizeNearest", .family = "resize",
     .config = CONFIG(resize_nearest_fixed_dma_kernel, 1, &nx_args_resize, false), .rules = &nx_rules_resize},
    {.seed_index = 3, .key = "Conv2d_pbp_0f1b_0i1o_01fb_experimental_1", .family = "conv",
     .config = CONFIG(conv2d_pbp_0f1b_0i1o_01fb_experimental_1, ALL, &nx_args_attrs, false),
     .rules = &nx_rules_conv_pbp_0f1b},
    {.seed_index = 4, .key = "Conv2d_pbp_fb01_io01_01bf_experimental_1", .family = "conv",
     .config = CONFIG(conv2d_pbp_fb01_io01_01bf_kernel_experimental_1, ALL, &nx_args_attrs, false),
     .rules = &nx_rules_conv_pbp_fb01},
    {.seed_index = 5, .key = "Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh", .family = "conv",
     .config = CONFIG(conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh, 2, &nx_args_conv_attrs_out_shape, false),
     .rules = &nx_rules_conv_wgrad_pcinh},
    {.seed_index = 6, .key = "Conv1d_depthwise_bf01_oi01_bf01", .family = "conv",
     .config = CONFIG(conv1d_depthwise_bf01_oi01_bf01, 2, &nx_args_conv_attrs_out_shape, false),
     .rules = &nx_rules_conv1d_depthwise},
    {.seed_index = 7, .key = "conv2d_column_packing", .family = "conv",
     .config = CONFIG(conv2d_column_packing, 2, &nx_args_conv_attrs_out_shape, false),
     .rules = &nx_rules_conv_column_packing},
    {.seed_index = 8, .key = "conv2d_column_packing_io10", .family = "conv",
     .config = CONFIG(conv2d_column_packing_io10, 2, &nx_args_conv_attrs_out_shape, false),
     .rules = &nx_rules_conv_column_packing_io10},
    {.seed_index = 9, .key = "conv2d_column_packing_1", .family = "conv",
     .config = CONFIG(conv2d_column_packing_1, 2, &nx_args_conv_attrs_out_shape, false),
     .rules = &nx_rules_conv2d_column_packing_1},
    {.seed_index = 10, .key = "blockwise_mm", .family = "blockwise_mm",
     .config = CONFIG(blockwise_mm, ALL, &nx_args_attrs, false), .rules = &nx_rules_blockwise_mm},
    {.seed_index = 11, .key = "conv2d_depthwise_f01b_o01i_bf01", .family = "conv",
     .config = CONFIG(conv2d_depthwise_f01b_o01i_bf01, 2, &nx_args_conv_attrs_out_shape, false),
     .rules = &nx_rules_conv2d_depthwise_f01b},
    {.seed_index = 12, .key = "tiled_pf_transpose", .family = "transpose",
     .config = CONFIG(tiled_pf_transpose, ALL, &nx_args_attrs, true), .rules = &nx_rules_transpose},
    {.seed_index = 13, .key = "tiled_dve_transpose_10", .family = "transpose",
     .config = CONFIG(tiled_dve_transpose_10, ALL, &nx_args_attrs, true), .rules = &nx_rules_transpose},
};
#undef ALL
#undef CONFIG

#define CATALOGUE_ROWS (sizeof seed_catalogue / sizeof seed_catalogue[0])
_Static_assert(CATALOGUE_ROWS == NX_SEED_ENTRIES,
               "the seed's builder inserts exactly 13 entries: a kernel that is not one of "
               "them is a composite (docs/parts/registry.md), never a 14th registry row");

static const nx_kernel_registry catalogue = {seed_catalogue, (uint32_t)CATALOGUE_ROWS};

const nx_kernel_registry *nx_registry_catalogue(void) { return &catalogue; }
