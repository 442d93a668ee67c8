/* The registry's tables (built once under pthread_once), lookup and the
 * miss error. The catalogue and the composites are assembled from the
 * family records (registry/catalog.c); resolving an op is
 * registry/resolve.c. */
#include "registry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/strbuf.h"
#include "registry/families/families.h"

/* The registry's build-once tables, written exactly once by build_tables()
 * under pthread_once and read-only after: the catalogue (the seed's 13
 * rows), the composites and the seed's _INTERNAL_KERNEL_REGISTRY (the live
 * table). */
static nx_registry_entry catalogue_entries[NX_SEED_ENTRIES];
static nx_kernel_registry catalogue_table;
static nx_composite composite_items[NX_MAX_COMPOSITES];
static nx_composite_table composite_table;
static nx_registry_entry live_entries[NX_SEED_ENTRIES];
static nx_kernel_registry live_table;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;
static atomic_uint live_builds;

void nx_registry_filter_live(const nx_kernel_registry *cat, nx_registry_entry *out, uint32_t *count) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < cat->count; i++)
        if (cat->entries[i].config.kernel_func && cat->entries[i].config.kernel_func->fn)
            out[n++] = cat->entries[i];
    *count = n;
}

/* The catalogue and composites from the family records, then the seed's
 * _build_internal_kernel_registry. Records that are not the seed's 13 rows
 * are a defect of the tree, not of any input: it stops here, loudly, on
 * the first lookup (every test would), never with a short table. */
static void build_tables(void) {
    uint32_t nf, nc = 0;
    const nx_family *const *fams = nx_families(&nf);
    nx_error err;
    catalogue_table = (nx_kernel_registry){catalogue_entries, NX_SEED_ENTRIES};
    if (nx_catalogue_assemble(fams, nf, catalogue_entries, &err) != 0 ||
        nx_composites_assemble(fams, nf, &catalogue_table, composite_items, NX_MAX_COMPOSITES, &nc, &err) != 0) {
        fprintf(stderr, "nxsim: the kernel inventory is mis-built (registry/families/): %s\n", err.msg);
        abort();
    }
    composite_table = (nx_composite_table){composite_items, nc};
    uint32_t n = 0;
    nx_registry_filter_live(&catalogue_table, live_entries, &n);
    live_table.entries = live_entries;
    live_table.count = n;
    atomic_fetch_add(&live_builds, 1u);
}

const nx_kernel_registry *nx_registry_catalogue(void) {
    pthread_once(&tables_once, build_tables);
    return &catalogue_table;
}

const nx_composite_table *nx_composites(void) {
    pthread_once(&tables_once, build_tables);
    return &composite_table;
}

const nx_kernel_registry *nx_get_internal_kernel_registry(void) {
    pthread_once(&tables_once, build_tables);
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
