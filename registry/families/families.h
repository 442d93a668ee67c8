/* The rules of every leaf family (registry/rules.h), one file per family in
 * registry/families/, pointed at by the catalogue rows (registry/catalog.c).
 * A family adds its declarations here, in a section of its own. */
#ifndef NXSIM_REGISTRY_FAMILIES_FAMILIES_H
#define NXSIM_REGISTRY_FAMILIES_FAMILIES_H

#include "registry/rules.h"

/* transpose.c: tiled_pf_transpose (#12) and tiled_dve_transpose_10 (#13). */
extern const nx_op_rules nx_rules_transpose;

/* select_and_scatter.c: SelectAndScatter (#1). */
extern const nx_op_rules nx_rules_select_and_scatter;

/* resize.c: ResizeNearest (#2). */
extern const nx_op_rules nx_rules_resize;

/* blockwise_mm.c: blockwise_mm (#10). */
extern const nx_op_rules nx_rules_blockwise_mm;
/* conv_pbp.c: the dense PE convolutions #3 (0f1b_0i1o->01fb) and #4
 * (fb01_io01->01bf). */
extern const nx_op_rules nx_rules_conv_pbp_0f1b;
extern const nx_op_rules nx_rules_conv_pbp_fb01;

/* conv_depthwise.c: the depthwise forward convs Conv1d_depthwise_bf01_oi01_bf01
 * (#6), conv2d_column_packing_1 (#9), conv2d_depthwise_f01b_o01i_bf01 (#11). */
extern const nx_op_rules nx_rules_conv1d_depthwise;
extern const nx_op_rules nx_rules_conv2d_column_packing_1;
extern const nx_op_rules nx_rules_conv2d_depthwise_f01b;

/* tutorial.c: the NKI matmul tutorial composites (registry/composites.c):
 * nki_matmul_tiled, nki_matmul_hoist_load, nki_matmul_block_free_dimension
 * share the first; nki_matmul_fully_optimized (SBUF accumulation,
 * meta-parameter attributes) has its own tolerance. */
extern const nx_op_rules nx_rules_tutorial_matmul;
extern const nx_op_rules nx_rules_tutorial_matmul_fully_optimized;

/* conv_wgrad.c: the weight-gradient convolutions #5
 * (Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh), #7 (conv2d_column_packing) and
 * #8 (conv2d_column_packing_io10). */
extern const nx_op_rules nx_rules_conv_wgrad_pcinh;
extern const nx_op_rules nx_rules_conv_column_packing;
extern const nx_op_rules nx_rules_conv_column_packing_io10;

/* topk.c: the `topk` composite (registry/topk_composite.h). */
extern const nx_op_rules nx_rules_topk;

/* norms.c: the row-wise composites of kernels/norms/ (registry/composites.c):
 * rmsnorm, softmax, layernorm. */
extern const nx_op_rules nx_rules_rmsnorm;
extern const nx_op_rules nx_rules_softmax;
extern const nx_op_rules nx_rules_layernorm;

/* elementwise.c: the elementwise and scan composites of kernels/elementwise/
 * (registry/composites.c): cumsum, rope, and matmul (ONNX MatMul,
 * kernels/matmul/). */
extern const nx_op_rules nx_rules_cumsum;
extern const nx_op_rules nx_rules_rope;
extern const nx_op_rules nx_rules_matmul;

#endif
