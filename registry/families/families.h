/* The rules of every leaf family (registry/rules.h), one file per family in
 * registry/families/, pointed at by the catalogue rows (registry/catalog.c).
 * A family adds its declarations here, in a section of its own. */
#ifndef NXSIM_REGISTRY_FAMILIES_FAMILIES_H
#define NXSIM_REGISTRY_FAMILIES_FAMILIES_H

#include "registry/rules.h"

/* transpose.c: tiled_pf_transpose (#12) and tiled_dve_transpose_10 (#13). */
extern const nx_op_rules nx_rules_transpose;

/* conv_depthwise.c: the depthwise forward convs Conv1d_depthwise_bf01_oi01_bf01
 * (#6), conv2d_column_packing_1 (#9), conv2d_depthwise_f01b_o01i_bf01 (#11). */
extern const nx_op_rules nx_rules_conv1d_depthwise;
extern const nx_op_rules nx_rules_conv2d_column_packing_1;
extern const nx_op_rules nx_rules_conv2d_depthwise_f01b;

#endif
