/* Composite kernels: orchestrators of the kernel inventory that `nxsim run`
 * and the C API reach by name although they are not registry keys (the
 * registry holds exactly the seed's 13 entries). A future top-k entry point
 * that picks its method leaf through the top-k method mapping, or a tutorial
 * matmul kernel, is a composite.
 *
 * A composite has the same parts as a registry entry: a config (its trace
 * function is config.kernel_func, an nx_leaf traced once per program id of
 * its grid exactly like a leaf, so it may call several leaves, dispatch on an
 * attribute, or declare scratch tensors through nx_kctx_builder), a family,
 * and the same rules (registry/rules.h).
 *
 * Lookup order (nx_kernel_lookup): the registry first, then the composites;
 * a name found in neither gets the registry's miss error verbatim
 * (registry.h), so a composite never changes what a registry lookup says.
 * A composite whose name is a registry key is unreachable: the registry
 * wins (tests/test_registry.c checks the inventory's table has none).
 *
 * Everything is static and read-only. */
#ifndef NXSIM_REGISTRY_COMPOSITES_H
#define NXSIM_REGISTRY_COMPOSITES_H

#include <stdint.h>

#include "registry.h"

typedef struct nx_composite {
    const char *name;         /* the func_name that reaches it, e.g. "topk" */
    const char *family;       /* "topk", "tutorial", ...: its record's name (a
                               * record's rows leave it out) */
    nx_kernel_config config;  /* kernel_func: the trace function (fn NULL: not implemented) */
    const nx_op_rules *rules; /* NULL: no rules yet */
    const char *via;          /* how it dispatches, for `nxsim kernels`, e.g.
                               * "attribute method (SupportedTopkMethods)" */
} nx_composite;

typedef struct nx_composite_table {
    const nx_composite *items;
    uint32_t count;
} nx_composite_table;

/* Room for the composites of all families (registry/catalog.c refuses
 * more). */
#define NX_MAX_COMPOSITES 64

/* The inventory's composites: every family record's (registry/families/),
 * in families.def's order, assembled once with the registry's tables
 * (registry/registry.c). */
const nx_composite_table *nx_composites(void);

/* The implemented composite named `name` in t (NULL = nx_composites()), or
 * NULL. */
const nx_composite *nx_composite_get(const nx_composite_table *t, const char *name);

/* ---- what a func_name reaches --------------------------------------------- */

typedef struct nx_kernel_target {
    const char *key;                /* the func_name */
    const nx_kernel_config *config;
    const char *family;
    const nx_op_rules *rules;       /* NULL: no rules yet */
    const nx_registry_entry *entry; /* the registry row, or NULL */
    const nx_composite *composite;  /* the composite, or NULL */
} nx_kernel_target;

/* Looks func_name up in reg (NULL = the live registry), then in comps
 * (NULL = nx_composites()). 0, or -1 with the registry's miss error for reg
 * verbatim. */
int nx_kernel_lookup(const nx_kernel_registry *reg, const nx_composite_table *comps,
                     const char *func_name, nx_kernel_target *out, nx_error *err);

/* call_args and additional_args of inst under the config of a target
 * already found (nx_kernel_lookup): what the lowering driver does, with no
 * lookup. Errors: fewer operands than operand_count; more call args than
 * NX_KERNEL_MAX_ARGS; the builder's error. *out is initialised either way. */
int nx_resolve_target(const nx_kernel_target *t, const nx_macro_op *inst, nx_resolved *out, nx_error *err);

/* nx_resolve_kernel_config for whatever nx_kernel_lookup finds: the same
 * call_args and additional_args from the target's config; out->entry is NULL
 * and out->composite set for a composite. Errors as both. */
int nx_resolve_op(const nx_kernel_registry *reg, const nx_composite_table *comps,
                  const nx_macro_op *inst, nx_resolved *out, nx_error *err);

#endif
