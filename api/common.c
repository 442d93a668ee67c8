/* libnxsim (include/nxsim/nxsim.h): messages, versions, configs, dtypes and
 * the registry listings. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_impl.h"
#include "isa/dtype.h"
#include "isa/json_write.h"
#include "isa/strbuf.h"
#include "registry/composites.h"
#include "registry/registry.h"

nx_status api_fail(nx_message *msg, nx_status st, const nx_error *err) {
    if (msg) snprintf(msg->text, sizeof msg->text, "%s", err ? err->msg : "");
    return st;
}

nx_status api_failf(nx_message *msg, nx_status st, const char *fmt, ...) {
    if (msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg->text, sizeof msg->text, fmt, ap);
        va_end(ap);
    }
    return st;
}

void api_ok(nx_message *msg) {
    if (msg) msg->text[0] = '\0';
}

NXSIM_API const char *nx_version(void) { return NXSIM_VERSION_STRING; }

NXSIM_API void nx_free(void *p) { free(p); }

NXSIM_API void nx_config_init(nx_config *cfg) {
    if (!cfg) return;
    memset(cfg, 0, sizeof *cfg);
    cfg->size = sizeof *cfg;
    cfg->backend = NX_BACKEND_MODEL;
    cfg->keep_log = 1;
    cfg->seed = 1;
}

/* The sizes a caller's nx_config may have: this header's, or an older one
 * that ends after one of the fields (fields are only ever added at the end). */
static int config_size_ok(uint32_t size) {
    static const size_t ends[] = {offsetof(nx_config, pe_rtl),   offsetof(nx_config, race_check),
                                  offsetof(nx_config, check),    offsetof(nx_config, keep_log),
                                  offsetof(nx_config, progress), offsetof(nx_config, grid),
                                  offsetof(nx_config, seed),     sizeof(nx_config)};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
        if (size == ends[i]) return 1;
    return 0;
}

nx_status api_run_options(const nx_config *cfg, const char *fn, nx_run_options *out, nx_message *msg) {
    nx_config c;
    nx_config_init(&c);
    if (cfg) {
        if (!config_size_ok(cfg->size))
            return api_failf(msg, NX_ERR_USAGE,
                             "%s: nx_config.size %u is not the size of an nx_config (%u in this library; "
                             "call nx_config_init)",
                             fn, cfg->size, (unsigned)sizeof c);
        /* a caller built against an older header passes a shorter struct */
        memcpy(&c, cfg, cfg->size);
    }
    if (c.backend != NX_BACKEND_MODEL && c.backend != NX_BACKEND_FUNCTIONAL)
        return api_failf(msg, NX_ERR_USAGE,
                         "%s: nx_config.backend %d is not a backend (NX_BACKEND_MODEL 0, NX_BACKEND_FUNCTIONAL 1)", fn,
                         c.backend);
    if (c.grid > 2)
        return api_failf(msg, NX_ERR_USAGE, "%s: nx_config.grid %u is not 0 (the kernel's), 1 or 2", fn, c.grid);
    nx_run_options o = {
        .backend = c.backend == NX_BACKEND_FUNCTIONAL ? NX_RUN_FUNCTIONAL : NX_RUN_MODEL,
        .pe_rtl = c.pe_rtl,
        .keep_log = c.keep_log && c.backend != NX_BACKEND_FUNCTIONAL,
        .race_check = c.race_check,
        .check = c.check,
        .grid = c.grid,
        .seed = c.seed,
        .progress = c.progress,
    };
    *out = o;
    return NX_OK;
}

NXSIM_API const char *nx_engine_label(uint32_t i) { return i < NX_ENG_COUNT ? nx_engine_name((nx_engine)i) : NULL; }

NXSIM_API size_t nx_dtype_bytes(const char *dtype) {
    nx_dtype dt;
    return dtype && nx_dtype_from_name(dtype, &dt) == 0 ? nx_dtype_size(dt) : 0;
}

NXSIM_API nx_status nx_convert(const char *from, const void *src, const char *to, void *dst, uint64_t count,
                               nx_message *msg) {
    nx_dtype a, b;
    if (!from || nx_dtype_from_name(from, &a) != 0)
        return api_failf(msg, NX_ERR_INPUT, "nx_convert: unknown dtype '%s'", from ? from : "(null)");
    if (!to || nx_dtype_from_name(to, &b) != 0)
        return api_failf(msg, NX_ERR_INPUT, "nx_convert: unknown dtype '%s'", to ? to : "(null)");
    if (count && (!src || !dst)) return api_failf(msg, NX_ERR_USAGE, "nx_convert: NULL buffer");
    size_t sa = nx_dtype_size(a), sb = nx_dtype_size(b);
    const uint8_t *s = src;
    uint8_t *d = dst;
    for (uint64_t i = 0; i < count; i++) nx_dtype_store(b, d + i * sb, nx_dtype_load(a, s + i * sa));
    api_ok(msg);
    return NX_OK;
}

/* ---- registry listings ---- */

static void put_key(nx_strbuf *b, const char *key, const char *value) {
    nx_sb_puts(b, ", ");
    nx_json_string(b, key);
    nx_sb_puts(b, ": ");
    if (value)
        nx_json_string(b, value);
    else
        nx_sb_puts(b, "null");
}

NXSIM_API char *nx_registry_json(int all) {
    const nx_kernel_registry *reg = all ? nx_registry_catalogue() : nx_get_internal_kernel_registry();
    nx_strbuf b = NX_STRBUF_INIT;
    nx_sb_putc(&b, '[');
    for (uint32_t i = 0; i < reg->count; i++) {
        const nx_registry_entry *e = &reg->entries[i];
        nx_sb_printf(&b, "%s{\"index\": %u", i ? ",\n " : "", e->seed_index);
        put_key(&b, "key", e->key);
        put_key(&b, "kernel_func", e->config.kernel_func->name);
        if (e->config.operand_count == NX_OPERANDS_ALL)
            nx_sb_puts(&b, ", \"operand_count\": null");
        else
            nx_sb_printf(&b, ", \"operand_count\": %d", (int)e->config.operand_count);
        put_key(&b, "args_builder", e->config.additional_args_builder ? e->config.additional_args_builder->name : NULL);
        nx_sb_printf(&b, ", \"grid\": %u, \"output_is_parameter\": %s, \"registered\": %s",
                     e->config.requires_multicore_grid ? NX_VNC_GRID : 1,
                     e->config.output_is_parameter ? "true" : "false", e->config.kernel_func->fn ? "true" : "false");
        put_key(&b, "family", e->family);
        nx_sb_putc(&b, '}');
    }
    nx_sb_putc(&b, ']');
    return nx_sb_take(&b);
}

NXSIM_API char *nx_kernels_json(void) {
    uint32_t n = nx_kernel_inventory(NULL, 0);
    nx_inventory_item *items = calloc(n ? n : 1, sizeof *items);
    if (!items) return NULL;
    nx_kernel_inventory(items, n);
    nx_strbuf b = NX_STRBUF_INIT;
    nx_sb_putc(&b, '[');
    for (uint32_t i = 0; i < n; i++) {
        const nx_inventory_item *it = &items[i];
        nx_sb_puts(&b, i ? ",\n {\"name\": " : "{\"name\": ");
        nx_json_string(&b, it->name);
        put_key(&b, "tier", nx_kernel_tier_name(it->tier));
        put_key(&b, "family", it->family);
        put_key(&b, "registry_key", it->registry_key);
        nx_sb_printf(&b, ", \"implemented\": %s", it->implemented ? "true" : "false");
        put_key(&b, "via", it->via);
        nx_sb_putc(&b, '}');
    }
    nx_sb_putc(&b, ']');
    free(items);
    return nx_sb_take(&b);
}
