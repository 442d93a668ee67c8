/* The catalogue and the composites table, assembled from the family records
 * (registry/families/families.h) that registry/families/families.def lists.
 *
 * The catalogue is the seed's 13 registry entries in its builder's
 * insertion order (docs/parts/registry.md): every record's rows placed by
 * their seed_index, so a family file may hold rows of any positions. Any
 * other count is refused: a kernel that is not one of the 13 keys is a
 * composite, never a 14th row, and a missing row never leaves the table
 * silently short. */
#include <stdio.h>
#include <string.h>

#include "registry/families/families.h"

static const nx_family *const family_list[] = {
#define NX_FAMILY(name) &nx_family_##name,
#include "registry/families/families.def"
#undef NX_FAMILY
};

const nx_family *const *nx_families(uint32_t *count) {
    *count = (uint32_t)(sizeof family_list / sizeof family_list[0]);
    return family_list;
}

#define NOT_A_14TH_ROW                                                                                     \
    "the seed's builder inserts exactly 13 entries: a kernel that is not one of them is a composite "     \
    "(docs/parts/registry.md), never a 14th registry row"

int nx_catalogue_assemble(const nx_family *const *fams, uint32_t n, nx_registry_entry *out, nx_error *err) {
    memset(out, 0, NX_SEED_ENTRIES * sizeof *out);
    uint32_t rows = 0;
    for (uint32_t f = 0; f < n; f++) {
        for (uint32_t i = 0; i < fams[f]->n_rows; i++) {
            const nx_registry_entry *e = &fams[f]->rows[i];
            rows++;
            if (e->seed_index < 1 || e->seed_index > NX_SEED_ENTRIES)
                return nx_fail(err, "family %s: row '%s' has seed index %u, outside 1..%d: " NOT_A_14TH_ROW,
                               fams[f]->name, e->key, e->seed_index, NX_SEED_ENTRIES);
            nx_registry_entry *slot = &out[e->seed_index - 1];
            if (slot->key)
                return nx_fail(err, "family %s: rows '%s' and '%s' both claim seed index %u", fams[f]->name,
                               slot->key, e->key, e->seed_index);
            *slot = *e;
            slot->family = fams[f]->name;
        }
    }
    if (rows != NX_SEED_ENTRIES)
        return nx_fail(err, "the families hold %u registry rows: " NOT_A_14TH_ROW, rows);
    return 0;
}

int nx_composites_assemble(const nx_family *const *fams, uint32_t n, const nx_kernel_registry *cat,
                           nx_composite *out, uint32_t max, uint32_t *count, nx_error *err) {
    uint32_t c = 0;
    *count = 0;
    for (uint32_t f = 0; f < n; f++) {
        for (uint32_t i = 0; i < fams[f]->n_composites; i++) {
            const nx_composite *x = &fams[f]->composites[i];
            if (nx_registry_get(cat, x->name))
                return nx_fail(err, "family %s: composite '%s' is a registry key (the registry would shadow it)",
                               fams[f]->name, x->name);
            for (uint32_t j = 0; j < c; j++)
                if (strcmp(out[j].name, x->name) == 0)
                    return nx_fail(err, "family %s: composite '%s' is also one of family %s", fams[f]->name,
                                   x->name, out[j].family);
            if (c == max)
                return nx_fail(err, "family %s: more than %u composites (NX_MAX_COMPOSITES)", fams[f]->name, max);
            out[c] = *x;
            out[c].family = fams[f]->name;
            c++;
        }
    }
    *count = c;
    return 0;
}
