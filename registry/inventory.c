/* The kernel inventory of `nxsim kernels`: every kernel of the environment,
 * tier by tier (references, leaves, composites). */
#include "composites.h"
#include "registry.h"
#include "kernels/topk/topk_methods.h"

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
    {"nx_ref_select_and_scatter", "select_and_scatter"},
    {"nx_ref_resize_nearest", "resize"},
    {"nx_ref_conv", "conv"},
    {"nx_ref_blockwise_mm", "blockwise_mm"},
    {"nx_ref_matmul_lhsT", "tutorial"},
    {"nx_ref_topk", "topk"},
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
    const nx_kernel_registry *cat = nx_registry_catalogue();
    for (uint32_t i = 0; i < cat->count; i++) {
        const nx_registry_entry *e = &cat->entries[i];
        ADD(e->config.kernel_func->name, NX_TIER_LEAF, e->family, e->key,
            e->config.kernel_func->fn != NULL, "internal kernel registry");
    }
    uint32_t nm;
    const nx_topk_method *m = nx_topk_method_mapping(&nm);
    for (uint32_t i = 0; i < nm; i++)
        ADD(m[i].function, NX_TIER_LEAF, "topk", NULL, m[i].fn != NULL, m[i].via);
    const nx_composite_table *comps = nx_composites();
    for (uint32_t i = 0; i < comps->count; i++) {
        const nx_composite *c = &comps->items[i];
        ADD(c->config.kernel_func->name, NX_TIER_COMPOSITE, c->family, NULL,
            c->config.kernel_func->fn != NULL, c->via);
    }
#undef ADD
    return n;
}
