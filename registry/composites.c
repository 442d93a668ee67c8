/* The lookup that reaches the inventory's composites after the registry
 * (registry/composites.h); the composites themselves are the family
 * records' (registry/families/). */
#include "composites.h"

#include <string.h>

const nx_composite *nx_composite_get(const nx_composite_table *t, const char *name) {
    if (!t) t = nx_composites();
    for (uint32_t i = 0; name && i < t->count; i++) {
        const nx_composite *c = &t->items[i];
        if (strcmp(c->name, name) == 0 && c->config.kernel_func && c->config.kernel_func->fn) return c;
    }
    return NULL;
}

int nx_kernel_lookup(const nx_kernel_registry *reg, const nx_composite_table *comps,
                     const char *func_name, nx_kernel_target *out, nx_error *err) {
    memset(out, 0, sizeof *out);
    const nx_registry_entry *e = nx_registry_get(reg, func_name);
    if (e) {
        *out = (nx_kernel_target){e->key, &e->config, e->family, e->rules, e, NULL};
        return 0;
    }
    const nx_composite *c = nx_composite_get(comps, func_name);
    if (c) {
        *out = (nx_kernel_target){c->name, &c->config, c->family, c->rules, NULL, c};
        return 0;
    }
    return nx_registry_miss(reg, func_name, err);
}
