/* The kernel inventory of `nxsim kernels`: every kernel of the environment,
 * tier by tier (references, leaves, composites), generated from the family
 * records (registry/families/families.h): nothing here names a kernel. */
#include <string.h>

#include "composites.h"
#include "registry.h"
#include "registry/families/families.h"

const char *nx_kernel_tier_name(nx_kernel_tier t) {
    switch (t) {
    case NX_TIER_REFERENCE: return "reference";
    case NX_TIER_LEAF: return "leaf";
    case NX_TIER_COMPOSITE: return "composite";
    }
    return "?";
}

/* An inventory being filled: out[0..min(max, n)), n counts every item;
 * refs: the reference names listed so far (at most one per row and
 * composite). */
typedef struct listing {
    nx_inventory_item *out;
    uint32_t max, n;
    const char *refs[NX_SEED_ENTRIES + NX_MAX_COMPOSITES];
    uint32_t nrefs;
} listing;

static void add(listing *l, nx_inventory_item it) {
    if (l->n < l->max) l->out[l->n] = it;
    l->n++;
}

/* The reference of `rules` (kernels/ref), unless an earlier row or
 * composite named it already. */
static void add_reference(listing *l, const nx_op_rules *rules, const char *family) {
    if (!rules || !rules->reference || !rules->reference_name) return;
    for (uint32_t i = 0; i < l->nrefs; i++)
        if (strcmp(l->refs[i], rules->reference_name) == 0) return;
    if (l->nrefs < sizeof l->refs / sizeof l->refs[0]) l->refs[l->nrefs++] = rules->reference_name;
    add(l, (nx_inventory_item){rules->reference_name, NX_TIER_REFERENCE, family, NULL, true, "kernels/ref"});
}

uint32_t nx_kernel_inventory(nx_inventory_item *out, uint32_t max) {
    listing l = {.out = out, .max = out ? max : 0};
    uint32_t nf;
    const nx_family *const *fams = nx_families(&nf);
    /* references: every family's rows' and composites' rules, in order */
    for (uint32_t f = 0; f < nf; f++) {
        for (uint32_t i = 0; i < fams[f]->n_rows; i++) add_reference(&l, fams[f]->rows[i].rules, fams[f]->name);
        for (uint32_t i = 0; i < fams[f]->n_composites; i++)
            add_reference(&l, fams[f]->composites[i].rules, fams[f]->name);
    }
    /* leaves: the catalogue in seed order, then the families' mapped leaves */
    const nx_kernel_registry *cat = nx_registry_catalogue();
    for (uint32_t i = 0; i < cat->count; i++) {
        const nx_registry_entry *e = &cat->entries[i];
        add(&l, (nx_inventory_item){e->config.kernel_func->name, NX_TIER_LEAF, e->family, e->key,
                                    e->config.kernel_func->fn != NULL, "internal kernel registry"});
    }
    for (uint32_t f = 0; f < nf; f++) {
        if (!fams[f]->mapped_leaves) continue;
        uint32_t room = l.n < l.max ? l.max - l.n : 0;
        l.n += fams[f]->mapped_leaves(room ? l.out + l.n : NULL, room);
    }
    /* composites */
    const nx_composite_table *comps = nx_composites();
    for (uint32_t i = 0; i < comps->count; i++) {
        const nx_composite *c = &comps->items[i];
        add(&l, (nx_inventory_item){c->config.kernel_func->name, NX_TIER_COMPOSITE, c->family, NULL,
                                    c->config.kernel_func->fn != NULL, c->via});
    }
    return l.n;
}
