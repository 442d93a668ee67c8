/* Attribute values and attribute dictionaries (isa/values.h):
 * construction, copying, lookup, Python-dict assignment, typed reads. */
#include <stdlib.h>
#include <string.h>

#include "values.h"

void nx_value_free(nx_value *v) {
    if (!v) return;
    if (v->kind == NX_VAL_STRING) free(v->s);
    if (v->kind == NX_VAL_LIST) {
        for (uint32_t i = 0; i < v->count; i++) nx_value_free(&v->items[i]);
        free(v->items);
    }
    memset(v, 0, sizeof *v);
}

int nx_value_copy(nx_value *dst, const nx_value *src, nx_error *err) {
    nx_value v = *src;
    v.s = NULL;
    v.items = NULL;
    if (src->kind == NX_VAL_STRING) {
        v.s = strdup(src->s ? src->s : "");
        if (!v.s) return nx_fail(err, "out of memory copying an attribute value");
    } else if (src->kind == NX_VAL_LIST && src->count > 0) {
        v.items = calloc(src->count, sizeof *v.items);
        if (!v.items) return nx_fail(err, "out of memory copying an attribute value");
        for (uint32_t i = 0; i < src->count; i++) {
            if (nx_value_copy(&v.items[i], &src->items[i], err) != 0) {
                v.count = i;
                nx_value_free(&v);
                return -1;
            }
        }
    }
    *dst = v;
    return 0;
}

static nx_value scalar(nx_value_kind kind) {
    nx_value v;
    memset(&v, 0, sizeof v);
    v.kind = kind;
    return v;
}

nx_value nx_value_int(int64_t i) {
    nx_value v = scalar(NX_VAL_INT);
    v.i = i;
    return v;
}

nx_value nx_value_float(double f) {
    nx_value v = scalar(NX_VAL_FLOAT);
    v.f = f;
    return v;
}

nx_value nx_value_bool(int b) {
    nx_value v = scalar(NX_VAL_BOOL);
    v.i = b != 0;
    return v;
}

int nx_value_int_list(nx_value *out, const uint64_t *items, uint32_t count, nx_error *err) {
    nx_value v = scalar(NX_VAL_LIST);
    if (count > 0) {
        v.items = calloc(count, sizeof *v.items);
        if (!v.items) return nx_fail(err, "out of memory building an attribute list");
    }
    for (uint32_t k = 0; k < count; k++) v.items[k] = nx_value_int((int64_t)items[k]);
    v.count = count;
    *out = v;
    return 0;
}

int nx_value_get_int_list(const nx_value *v, const char *what, int64_t *items, uint32_t max,
                          uint32_t *count, nx_error *err) {
    if (!v || v->kind != NX_VAL_LIST) return nx_fail(err, "%s must be a list of integers", what);
    if (v->count > max)
        return nx_fail(err, "%s has %u items, at most %u are allowed", what, v->count, max);
    for (uint32_t k = 0; k < v->count; k++) {
        if (v->items[k].kind != NX_VAL_INT)
            return nx_fail(err, "%s[%u] must be an integer", what, k);
        items[k] = v->items[k].i;
    }
    *count = v->count;
    return 0;
}

/* ---- attribute dictionaries ---------------------------------------------- */

void nx_attrs_init(nx_attrs *a) { memset(a, 0, sizeof *a); }

void nx_attrs_free(nx_attrs *a) {
    if (!a) return;
    for (uint32_t i = 0; i < a->count; i++) {
        free(a->items[i].name);
        nx_value_free(&a->items[i].value);
    }
    free(a->items);
    memset(a, 0, sizeof *a);
}

const nx_value *nx_attrs_get(const nx_attrs *a, const char *name) {
    for (uint32_t i = 0; a && i < a->count; i++)
        if (strcmp(a->items[i].name, name) == 0) return &a->items[i].value;
    return NULL;
}

const nx_value *nx_attrs_get_given(const nx_attrs *a, const char *name) {
    const nx_value *v = nx_attrs_get(a, name);
    return v && v->kind != NX_VAL_NONE ? v : NULL;
}

int nx_attrs_get_int(const nx_attrs *a, const char *name, int64_t *out, int *present, nx_error *err) {
    const nx_value *v = nx_attrs_get(a, name);
    *present = v != NULL;
    if (!v) return 0;
    if (v->kind != NX_VAL_INT) return nx_fail(err, "attribute %s: must be an integer", name);
    *out = v->i;
    return 0;
}

int nx_attrs_set(nx_attrs *a, const char *name, nx_value *value, nx_error *err) {
    for (uint32_t i = 0; i < a->count; i++) {
        if (strcmp(a->items[i].name, name) == 0) {
            nx_value_free(&a->items[i].value);
            a->items[i].value = *value;
            memset(value, 0, sizeof *value);
            return 0;
        }
    }
    char *copy = strdup(name);
    nx_attr *items = copy ? realloc(a->items, ((size_t)a->count + 1) * sizeof *items) : NULL;
    if (!items) {
        free(copy);
        return nx_fail(err, "out of memory adding attribute '%s'", name);
    }
    a->items = items;
    a->items[a->count].name = copy;
    a->items[a->count].value = *value;
    a->count++;
    memset(value, 0, sizeof *value);
    return 0;
}

int nx_attrs_set_int_list(nx_attrs *a, const char *name, const uint64_t *items, uint32_t count, nx_error *err) {
    nx_value v;
    if (nx_value_int_list(&v, items, count, err) != 0) return -1;
    if (nx_attrs_set(a, name, &v, err) != 0) {
        nx_value_free(&v);
        return -1;
    }
    return 0;
}

int nx_attrs_copy(nx_attrs *dst, const nx_attrs *src, nx_error *err) {
    nx_attrs out;
    nx_attrs_init(&out);
    for (uint32_t i = 0; i < src->count; i++) {
        nx_value v;
        if (nx_value_copy(&v, &src->items[i].value, err) != 0 ||
            nx_attrs_set(&out, src->items[i].name, &v, err) != 0) {
            nx_value_free(&v);
            nx_attrs_free(&out);
            return -1;
        }
    }
    *dst = out;
    return 0;
}
