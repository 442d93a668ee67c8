/* The live registry table (built once under pthread_once), lookup and the
 * miss error. The catalogue itself is registry/catalog.c; resolving an op is
 * registry/resolve.c. */
#include "registry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "isa/strbuf.h"

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
static void py_str_repr(nx_strbuf *b, const char *s) {
    char q = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
    nx_sb_putc(b, q);
    for (const char *p = s; *p; p++) {
        if (*p == q || *p == '\\') nx_sb_putc(b, '\\');
        nx_sb_putc(b, *p);
    }
    nx_sb_putc(b, q);
}

void nx_registry_keys_repr(const nx_kernel_registry *reg, char *buf, size_t len) {
    if (!reg) reg = nx_get_internal_kernel_registry();
    if (len == 0) return;
    nx_strbuf b = NX_STRBUF_INIT;
    nx_sb_puts(&b, "dict_keys([");
    for (uint32_t i = 0; i < reg->count; i++) {
        if (i) nx_sb_puts(&b, ", ");
        py_str_repr(&b, reg->entries[i].key);
    }
    nx_sb_puts(&b, "])");
    snprintf(buf, len, "%s", b.failed ? "dict_keys(...)" : nx_sb_str(&b));
    if (!b.failed && b.len >= len && len > 4) strcpy(buf + len - 4, "...");
    nx_sb_free(&b);
}

int nx_registry_miss(const nx_kernel_registry *reg, const char *func_name, nx_error *err) {
    char keys[NX_ERROR_MAX];
    nx_registry_keys_repr(reg, keys, sizeof keys);
    /* the name is echoed escaped: one line whatever it holds */
    nx_quoted q;
    return nx_fail(err, "Internal NKI kernel '%s' is not registered. Available kernels: %s",
                   func_name ? nx_quote(&q, func_name, NX_QUOTE_NAME) : "None", keys);
}

const char *nx_operand_count_text(int32_t operand_count, char *buf, size_t len) {
    if (operand_count == NX_OPERANDS_ALL) return "all";
    snprintf(buf, len, "%d", operand_count);
    return buf;
}
