/* The rules of every leaf family (registry/rules.h), one file per family in
 * registry/families/, pointed at by the catalogue rows (registry/catalog.c).
 * A family adds its declarations here, in a section of its own. */
#ifndef NXSIM_REGISTRY_FAMILIES_FAMILIES_H
#define NXSIM_REGISTRY_FAMILIES_FAMILIES_H

#include "registry/rules.h"

/* transpose.c: tiled_pf_transpose (#12) and tiled_dve_transpose_10 (#13). */
extern const nx_op_rules nx_rules_transpose;

#endif
