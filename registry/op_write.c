/* Attribute values, attribute dictionaries and macro-ops -> JSON text and
 * canonical cache-key text (registry/macro_op.h), through the one JSON
 * writer (isa/json_write.h). */
#include <stdlib.h>
#include <string.h>

#include "isa/json_write.h"
#include "macro_op.h"

/* compact: the canonical text (no spaces; non-finite floats spelt NaN,
 * Infinity, -Infinity so they differ from null: it is a key, not JSON);
 * otherwise JSON with ", " and ": " (non-finite floats as null). */
static void put_value(nx_strbuf *b, const nx_value *v, int compact) {
    switch (v->kind) {
    case NX_VAL_NONE: nx_sb_puts(b, "null"); break;
    case NX_VAL_BOOL: nx_sb_puts(b, v->i ? "true" : "false"); break;
    case NX_VAL_INT: nx_json_int(b, v->i); break;
    case NX_VAL_FLOAT:
        if (compact)
            nx_json_repr_double(b, v->f);
        else
            nx_json_double(b, v->f);
        break;
    case NX_VAL_STRING: nx_json_string(b, v->s ? v->s : ""); break;
    case NX_VAL_LIST:
        nx_sb_putc(b, '[');
        for (uint32_t k = 0; k < v->count; k++) {
            if (k) nx_sb_puts(b, compact ? "," : ", ");
            put_value(b, &v->items[k], compact);
        }
        nx_sb_putc(b, ']');
        break;
    }
}

char *nx_value_to_json(const nx_value *v) {
    nx_strbuf b = NX_STRBUF_INIT;
    put_value(&b, v, 0);
    return nx_sb_take(&b);
}

static void put_attrs(nx_strbuf *b, const nx_attrs *a, const uint32_t *order, int compact) {
    nx_sb_putc(b, '{');
    for (uint32_t k = 0; k < a->count; k++) {
        const nx_attr *at = &a->items[order ? order[k] : k];
        if (k) nx_sb_puts(b, compact ? "," : ", ");
        nx_json_string(b, at->name);
        nx_sb_puts(b, compact ? ":" : ": ");
        put_value(b, &at->value, compact);
    }
    nx_sb_putc(b, '}');
}

char *nx_attrs_to_json(const nx_attrs *a) {
    nx_strbuf b = NX_STRBUF_INIT;
    put_attrs(&b, a, NULL, 0);
    return nx_sb_take(&b);
}

char *nx_attrs_canonical(const nx_attrs *a) {
    uint32_t *order = malloc(((size_t)a->count + 1) * sizeof *order);
    if (!order) return NULL;
    /* Insertion sort by name: dictionaries are small, and names are unique. */
    for (uint32_t k = 0; k < a->count; k++) {
        uint32_t j = k;
        while (j > 0 && strcmp(a->items[order[j - 1]].name, a->items[k].name) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = k;
    }
    nx_strbuf b = NX_STRBUF_INIT;
    put_attrs(&b, a, order, 1);
    free(order);
    return nx_sb_take(&b);
}

static void put_tensors(nx_strbuf *b, const char *key, const nx_op_tensor *ts, uint32_t n) {
    nx_sb_puts(b, "  ");
    nx_json_string(b, key);
    nx_sb_puts(b, ": [");
    for (uint32_t i = 0; i < n; i++) {
        nx_sb_puts(b, i ? ",\n    {\"name\": " : "\n    {\"name\": ");
        nx_json_string(b, ts[i].name);
        nx_sb_puts(b, ", \"shape\": [");
        for (uint32_t d = 0; d < ts[i].ndims; d++) {
            if (d) nx_sb_puts(b, ", ");
            nx_json_uint(b, ts[i].shape[d]);
        }
        nx_sb_puts(b, "], \"dtype\": ");
        const char *dt = nx_dtype_name(ts[i].dtype);
        nx_json_string(b, dt ? dt : "unset");
        nx_sb_putc(b, '}');
    }
    nx_sb_puts(b, n ? "\n  ]" : "]");
}

char *nx_macro_op_to_json(const nx_macro_op *op) {
    nx_strbuf b = NX_STRBUF_INIT;
    nx_sb_puts(&b, "{\n  \"func_name\": ");
    nx_json_string(&b, op->func_name ? op->func_name : "");
    nx_sb_puts(&b, ",\n");
    put_tensors(&b, "operands", op->operands, op->n_operands);
    nx_sb_puts(&b, ",\n");
    put_tensors(&b, "results", op->results, op->n_results);
    nx_sb_puts(&b, ",\n  \"attrs\": ");
    put_attrs(&b, &op->attrs, NULL, 0);
    nx_sb_puts(&b, "\n}\n");
    return nx_sb_take(&b);
}
