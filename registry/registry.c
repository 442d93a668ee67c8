/* The live registry table (built once under pthread_once), lookup, the miss
 * error and nx_resolve_kernel_config. The catalogue itself is registry/catalog.c. */
#include "registry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* The seed's _INTERNAL_KERNEL_REGISTRY: storage for the live table, written
 * exactly once by build_live_table() under pthread_once and read-only after.
 * Sized by the catalogue: registry/catalog.c does not compile unless it has
 * exactly NX_SEED_ENTRIES rows. */
static nx_registry_entry live_entries[NX_SEED_ENTRIES];
static nx_kernel_registry live_table;
static pthread_once_t live_once = PTHREAD_ONCE_INIT;
static atomic_uint live_builds;

void nx_registry_filter_live(const nx_kernel_registry *cat, nx_registry_entry *out, uint32_t *count) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < cat->count; i++)
        if (cat->entries[i].config.kernel_func && cat->entries[i].config.kernel_func->fn)
            out[n++] = cat->entries[i];
    *count = n;
}

/* The seed's _build_internal_kernel_registry. */
static void build_live_table(void) {
    const nx_kernel_registry *cat = nx_registry_catalogue();
    uint32_t n = 0;
    nx_registry_filter_live(cat, live_entries, &n); /* cat->count == NX_SEED_ENTRIES */
    live_table.entries = live_entries;
    live_table.count = n;
    atomic_fetch_add(&live_builds, 1u);
}

const nx_kernel_registry *nx_get_internal_kernel_registry(void) {
    pthread_once(&live_once, build_live_table);
    return &live_table;
}

uint32_t nx_registry_build_count(void) { return atomic_load(&live_builds); }

const nx_registry_entry *nx_registry_get(const nx_kernel_registry *reg, const char *func_name) {
    if (!reg) reg = nx_get_internal_kernel_registry();
    for (uint32_t i = 0; func_name && i < reg->count; i++)
        if (strcmp(reg->entries[i].key, func_name) == 0) return &reg->entries[i];
    return NULL;
}

/* Python's repr of a str: single quotes unless the text holds a ' and no ". */
static size_t py_str_repr(char *buf, size_t len, const char *s) {
    char q = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
    size_t n = 0;
#define PUT(c)                          \
    do {                                \
        if (n + 1 < len) buf[n] = (c);  \
        n++;                            \
    } while (0)
    PUT(q);
    for (const char *p = s; *p; p++) {
        if (*p == q || *p == '\\') PUT('\\');
        PUT(*p);
    }
    PUT(q);
#undef PUT
    if (len) buf[n < len ? n : len - 1] = '\0';
    return n;
}

void nx_registry_keys_repr(const nx_kernel_registry *reg, char *buf, size_t len) {
    if (!reg) reg = nx_get_internal_kernel_registry();
    if (len == 0) return;
    size_t n = (size_t)snprintf(buf, len, "dict_keys([");
    for (uint32_t i = 0; i < reg->count && n < len; i++) {
        if (i) n += (size_t)snprintf(buf + n, len - n, ", ");
        if (n < len) n += py_str_repr(buf + n, len - n, reg->entries[i].key);
    }
    if (n < len) n += (size_t)snprintf(buf + n, len - n, "])");
    if (n >= len && len > 4) strcpy(buf + len - 4, "...");
}

int nx_registry_miss(const nx_kernel_registry *reg, const char *func_name, nx_error *err) {
    char keys[NX_ERROR_MAX];
    nx_registry_keys_repr(reg, keys, sizeof keys);
    return nx_fail(err, "Internal NKI kernel '%s' is not registered. Available kernels: %s",
                   func_name ? func_name : "None", keys);
}

const char *nx_operand_count_text(int32_t operand_count, char *buf, size_t len) {
    if (operand_count == NX_OPERANDS_ALL) return "all";
    snprintf(buf, len, "%d", operand_count);
    return buf;
}

static void tensor_ref(nx_tensor_ref *r, const nx_op_tensor *t) {
    memset(r, 0, sizeof *r);
    memcpy(r->name, t->name, sizeof r->name);
    r->name[sizeof r->name - 1] = '\0';
    r->dtype = t->dtype;
    r->ndims = t->ndims;
    memcpy(r->shape, t->shape, sizeof r->shape);
}

int nx_resolve_kernel_config(const nx_kernel_registry *reg, const nx_macro_op *inst, nx_resolved *out,
                             nx_error *err) {
    if (!reg) reg = nx_get_internal_kernel_registry();
    memset(out, 0, sizeof *out);
    nx_attrs_init(&out->additional_args);
    const nx_registry_entry *e = nx_registry_get(reg, inst->func_name);
    if (!e) return nx_registry_miss(reg, inst->func_name, err);
    const nx_kernel_config *cfg = &e->config;

    uint32_t n_in = inst->n_operands;
    if (cfg->operand_count != NX_OPERANDS_ALL) {
        if (inst->n_operands < (uint32_t)cfg->operand_count)
            return nx_fail(err, "%s: takes %d operands, the op has %u", e->key, cfg->operand_count,
                           inst->n_operands);
        n_in = (uint32_t)cfg->operand_count;
    }
    if (n_in + inst->n_results > NX_KERNEL_MAX_ARGS)
        return nx_fail(err, "%s: %u operands and %u results exceed the %d call arguments a leaf takes",
                       e->key, n_in, inst->n_results, NX_KERNEL_MAX_ARGS);
    for (uint32_t i = 0; i < n_in; i++) tensor_ref(&out->call_args[i], &inst->operands[i]);
    for (uint32_t j = 0; j < inst->n_results; j++)
        tensor_ref(&out->call_args[n_in + j], &inst->results[j]);
    out->nargs = n_in + inst->n_results;
    out->n_inputs = n_in;

    if (cfg->additional_args_builder &&
        cfg->additional_args_builder->build(inst, &out->additional_args, err) != 0) {
        nx_fail_prefix(err, "%s: %s", e->key, cfg->additional_args_builder->seed_name);
        nx_resolved_free(out);
        return -1;
    }
    out->key = e->key;
    out->entry = e;
    out->config = cfg;
    out->leaf = cfg->kernel_func;
    out->rules = e->rules;
    return 0;
}

void nx_resolved_free(nx_resolved *r) {
    if (!r) return;
    nx_attrs_free(&r->additional_args);
    memset(r, 0, sizeof *r);
}
