/* The live registry table (built once under pthread_once), lookup and the
 * miss error. The catalogue itself is registry/catalog.c; resolving an op is
 * registry/resolve.c. */
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
