/* The family records of the kernel inventory (docs/parts/new-kernel.md).
 * Each leaf family has one file, registry/families/<family>.c, holding its
 * rules (registry/rules.h) and its record: its registry rows (the seed's
 * config with the rules), its composites, and the leaves it reaches through
 * a mapping of its own. registry/families/families.def lists the records;
 * the catalogue, the composites table and the inventory of `nxsim kernels`
 * are assembled from them (registry/catalog.c), the references from the
 * rules' reference names. Nothing else names a family or repeats a row. */
#ifndef NXSIM_REGISTRY_FAMILIES_FAMILIES_H
#define NXSIM_REGISTRY_FAMILIES_FAMILIES_H

#include <stdint.h>

#include "registry/composites.h"
#include "registry/registry.h"
#include "registry/rules.h"

typedef struct nx_family {
    /* The family of its rows, composites and references ("conv": the three
     * conv records share it). */
    const char *name;
    /* Its registry rows: seed_index, key, config and rules; .family is left
     * out (the record's name). At most the seed's 13 over all families, each
     * seed index once (registry/catalog.c refuses anything else). */
    const nx_registry_entry *rows;
    uint32_t n_rows;
    /* Its composites (registry/composites.h); .family left out likewise. */
    const nx_composite *composites;
    uint32_t n_composites;
    /* Leaves the family reaches through a mapping of its own, not a
     * registry key (top-k: SupportedTopkMethods), for the inventory's leaf
     * tier: fills out[0..min(max, n)) and returns n. NULL: none. */
    uint32_t (*mapped_leaves)(nx_inventory_item *out, uint32_t max);
} nx_family;

/* ---- writing a record ------------------------------------------------------ */

/* A leaf function by its true name (never derived from a key). */
#define NX_LEAF(fn) (&(const nx_leaf){#fn, (fn)})
/* A leaf listed under another name (the topk composite is "topk"). */
#define NX_LEAF_NAMED(name, fn) (&(const nx_leaf){(name), (fn)})
/* The seed's five-field config (output_is_parameter is false for every
 * seed entry and composite). */
#define NX_CONFIG(leaf, count, builder, grid)                                                          \
    {.kernel_func = (leaf), .operand_count = (count), .additional_args_builder = (builder),            \
     .requires_multicore_grid = (grid), .output_is_parameter = false}
/* A record's arrays with their counts. */
#define NX_FAMILY_ROWS(a) .rows = (a), .n_rows = (uint32_t)(sizeof(a) / sizeof((a)[0]))
#define NX_FAMILY_COMPOSITES(a) .composites = (a), .n_composites = (uint32_t)(sizeof(a) / sizeof((a)[0]))

/* The records, one per line of families.def. */
#define NX_FAMILY(name) extern const nx_family nx_family_##name;
#include "registry/families/families.def"
#undef NX_FAMILY

/* The records in families.def's order (registry/catalog.c); *count gets
 * their number. */
const nx_family *const *nx_families(uint32_t *count);

/* ---- assembling (registry/catalog.c; the registry's build-once uses them,
 * the tests give them records of their own) -------------------------------- */

/* The catalogue of records fams[0..n): every row copied to
 * out[seed_index - 1] (out has NX_SEED_ENTRIES entries) with its record's
 * family. 0, or -1 when the rows are not the seed's 13: a seed index outside
 * 1..13, one claimed twice, or another total ("... never a 14th registry
 * row"). */
int nx_catalogue_assemble(const nx_family *const *fams, uint32_t n, nx_registry_entry *out, nx_error *err);

/* The records' composites in order into out[0..max), each with its
 * record's family; *count gets their number. 0, or -1 for a name that is a
 * key of `cat` (the registry would shadow it), a name twice, or more than
 * max. */
int nx_composites_assemble(const nx_family *const *fams, uint32_t n, const nx_kernel_registry *cat,
                           nx_composite *out, uint32_t max, uint32_t *count, nx_error *err);

/* ---- rules the tests use directly ------------------------------------------ */

/* transpose.c: tiled_pf_transpose (#12) and tiled_dve_transpose_10 (#13). */
extern const nx_op_rules nx_rules_transpose;
/* conv_pbp.c: Conv2d_pbp_0f1b_0i1o_01fb_experimental_1 (#3). */
extern const nx_op_rules nx_rules_conv_pbp_0f1b;

#endif
