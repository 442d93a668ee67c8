/* The internal kernel registry (docs/parts/registry.md): which leaf serves a
 * macro-op, how its arguments are marshalled, and whether it runs on the
 * two-core VNC(2) grid; modelled on a real compiler's internal kernel
 * registry, whose table, config record and miss error it keeps.
 *
 * Two tables:
 *  - the CATALOGUE: all 13 seed entries (key, leaf name, 5-field config,
 *    family, rules), in the seed's insertion order, whether their leaf
 *    works yet or not, assembled from the family records
 *    (registry/families/families.h, registry/catalog.c);
 *  - the LIVE table: the catalogue entries whose leaf is implemented, in the
 *    same order. "An entry whose leaf does not work yet is simply not in the
 *    table": a lookup of such a key gets the miss error.
 *
 * The live table is built once, on first use, under pthread_once (the seed's
 * version relies on Python's interpreter lock; this one is safe when several
 * threads look up at once) and never changes afterwards: every call returns
 * the same pointer. Everything returned is static and read-only.
 *
 * Miss error, verbatim (the seed raises it with no fallback):
 *   Internal NKI kernel '<func_name>' is not registered. Available kernels: <keys>
 * where <keys> is rendered as Python renders str(dict.keys()) of the live
 * table, e.g. dict_keys(['tiled_pf_transpose', 'tiled_dve_transpose_10'])
 * (dict_keys([]) when the table is empty). */
#ifndef NXSIM_REGISTRY_REGISTRY_H
#define NXSIM_REGISTRY_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "isa/error.h"
#include "kernels/kernel.h"
#include "macro_op.h"
#include "rules.h"

/* operand_count value meaning the seed's None: use all operands. */
#define NX_OPERANDS_ALL (-1)
/* Cores of the seed's grid=(VNC(2),). */
#define NX_VNC_GRID 2

/* A leaf kernel function and its name (the seed's kernel_func). fn is NULL
 * in the catalogue while the leaf is not implemented. */
typedef struct nx_leaf {
    const char *name;
    nx_leaf_fn fn;
} nx_leaf;

/* A per-kernel argument-marshalling function (the seed's lambdas): builds
 * the extra keyword arguments of the leaf from the op into *out (which the
 * caller frees with nx_attrs_free). */
typedef struct nx_args_builder {
    const char *name; /* "attrs", "conv attrs + out_shape", "resize args" */
    const char *seed_name; /* "_get_attrs", ... */
    int (*build)(const nx_macro_op *inst, nx_attrs *out, nx_error *err);
} nx_args_builder;

/* The three live builders (registry/args_builders.c). The seed's fourth,
 * _get_conv_attrs, is built but bound by no entry: it is left out. */
extern const nx_args_builder nx_args_attrs;                 /* _get_attrs */
extern const nx_args_builder nx_args_conv_attrs_out_shape;  /* _get_conv_attrs_with_out_shape */
extern const nx_args_builder nx_args_resize;                /* _get_resize_args */

/* The seed's InternalKernelConfig: exactly these 5 fields. */
typedef struct nx_kernel_config {
    const nx_leaf *kernel_func;
    int32_t operand_count;                          /* NX_OPERANDS_ALL = None */
    const nx_args_builder *additional_args_builder; /* NULL = None: no extra args */
    bool requires_multicore_grid;                   /* grid=(VNC(2),) */
    bool output_is_parameter;                       /* see docs/parts/registry.md */
} nx_kernel_config;

/* Entries of the seed's builder listing: exactly 13 (the assembly of the
 * catalogue refuses any other count; the tables are sized by it). */
#define NX_SEED_ENTRIES 13

/* One registry entry: the seed's key and config, plus the family and the
 * rules nxsim keeps next to it (the seed has no equivalent; registry/rules.h). */
typedef struct nx_registry_entry {
    uint32_t seed_index;          /* 1..13: position in the seed's builder listing */
    const char *key;              /* = the macro-op's func_name */
    nx_kernel_config config;
    const char *family;           /* "transpose", "conv", ... */
    const nx_op_rules *rules;     /* NULL while the family has none (registry/families/) */
} nx_registry_entry;

typedef struct nx_kernel_registry {
    const nx_registry_entry *entries;
    uint32_t count;
} nx_kernel_registry;

/* All 13 seed entries in seed order (fn NULL where not implemented). */
const nx_kernel_registry *nx_registry_catalogue(void);

/* The seed's get_internal_kernel_registry(): the live table, built on first
 * use, the same pointer on every call. Never NULL. */
const nx_kernel_registry *nx_get_internal_kernel_registry(void);

/* How many times the live table has been built in this process (0 or 1):
 * lets tests prove the once-only build under racing threads. */
uint32_t nx_registry_build_count(void);

/* The entry for `func_name`, or NULL (the seed's .get()). */
const nx_registry_entry *nx_registry_get(const nx_kernel_registry *reg, const char *func_name);

/* The miss error for `func_name` against `reg` (NULL = the live table),
 * exactly as the header comment states. Returns -1. */
int nx_registry_miss(const nx_kernel_registry *reg, const char *func_name, nx_error *err);

/* Python's str(dict.keys()) of the table into buf (truncated with "..." if
 * it does not fit). */
void nx_registry_keys_repr(const nx_kernel_registry *reg, char *buf, size_t len);

/* Filters a catalogue the way the live table is built: the entries whose
 * leaf fn is non-NULL, in order, copied into out[0..*count) (out has room
 * for cat->count entries). Exposed so tests can build a private table of
 * test leaves (and a driver can be given one: registry/lower.h). */
void nx_registry_filter_live(const nx_kernel_registry *cat, nx_registry_entry *out, uint32_t *count);

/* ---- the kernel inventory (`nxsim kernels`, docs/parts/registry.md) ------- */

typedef enum nx_kernel_tier {
    NX_TIER_REFERENCE = 0, /* kernels/ref: readable plain-C references (oracles) */
    NX_TIER_LEAF = 1,      /* production leaves that emit a program */
    NX_TIER_COMPOSITE = 2, /* orchestrators composing leaves */
} nx_kernel_tier;
const char *nx_kernel_tier_name(nx_kernel_tier t); /* "reference", "leaf", "composite" */

typedef struct nx_inventory_item {
    const char *name;         /* C function name */
    nx_kernel_tier tier;
    const char *family;       /* "transpose", "conv", "topk", ... */
    const char *registry_key; /* NULL if no registry entry leads to it */
    bool implemented;         /* false: named by the seed, not written yet */
    const char *via;          /* how it is reached, e.g. "SupportedTopkMethods.SCANNING" */
} nx_inventory_item;

/* Every kernel of the environment, tier by tier (references, leaves in seed
 * order then the top-k leaves, composites). Fills out[0..min(max, total))
 * and returns the total. */
uint32_t nx_kernel_inventory(nx_inventory_item *out, uint32_t max);

/* ---- resolving an op (the seed's _resolve_kernel_config) ------------------ */

/* What the seed's _resolve_kernel_config returns: (config, leaf,
 * additional_args, call_args), plus the key and nxsim's rules. call_args
 * are operand descriptors (name, shape, dtype; hbm_offset 0 until the driver
 * places the tensors) for the first operand_count operands (all if
 * NX_OPERANDS_ALL), then the results. */
struct nx_composite; /* registry/composites.h */
typedef struct nx_resolved {
    const char *key;                /* the func_name that matched */
    const nx_registry_entry *entry; /* the registry row (NULL for a composite) */
    const struct nx_composite *composite; /* the composite (NULL for a registry row) */
    const nx_kernel_config *config;
    const nx_leaf *leaf;
    const char *family;
    const nx_op_rules *rules;       /* NULL: no rules yet */
    nx_attrs additional_args; /* owned (empty when the config has no builder) */
    nx_tensor_ref call_args[NX_KERNEL_MAX_ARGS];
    uint32_t nargs;
    uint32_t n_inputs;        /* call_args[0..n_inputs) are operands */
} nx_resolved;

/* Resolves `inst` against `reg` (NULL = the live table) only; nx_resolve_op
 * (registry/composites.h) also reaches composites. Errors: the miss error;
 * fewer operands than operand_count; more call args than
 * NX_KERNEL_MAX_ARGS; the builder's error. */
int nx_resolve_kernel_config(const nx_kernel_registry *reg, const nx_macro_op *inst, nx_resolved *out,
                             nx_error *err);
void nx_resolved_free(nx_resolved *r);

/* "all" or the decimal count. */
const char *nx_operand_count_text(int32_t operand_count, char *buf, size_t len);

#endif
