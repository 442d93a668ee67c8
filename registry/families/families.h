/* The rules of every leaf family (registry/rules.h), one file per family in
 * registry/families/, pointed at by the catalogue rows (registry/catalog.c).
 * A family adds its declarations here, in a section of its own. */
#ifndef NXSIM_REGISTRY_FAMILIES_FAMILIES_H
#define NXSIM_REGISTRY_FAMILIES_FAMILIES_H

#include "registry/rules.h"

/* transpose.c: tiled_pf_transpose (#12) and tiled_dve_transpose_10 (#13). */
extern const nx_op_rules nx_rules_transpose;

/* conv_pbp.c: the dense PE convolutions #3 (0f1b_0i1o->01fb) and #4
 * (fb01_io01->01bf). */
extern const nx_op_rules nx_rules_conv_pbp_0f1b;
extern const nx_op_rules nx_rules_conv_pbp_fb01;

/* topk.c: the `topk` composite (registry/topk_composite.h). */
extern const nx_op_rules nx_rules_topk;

#endif
