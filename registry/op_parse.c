/* JSON text -> attribute values and macro-ops (registry/macro_op.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "macro_op.h"

static int value_from_json(const cJSON *n, const char *path, const nx_json_numbers *nums, nx_value *out,
                           nx_error *err) {
    nx_value v;
    memset(&v, 0, sizeof v);
    if (cJSON_IsNull(n)) {
        v.kind = NX_VAL_NONE;
    } else if (cJSON_IsBool(n)) {
        v = nx_value_bool(cJSON_IsTrue(n));
    } else if (cJSON_IsNumber(n)) {
        const nx_json_number *ni = nx_json_number_of(nums, n);
        if (ni && ni->is_int) {
            if (ni->overflow) return nx_fail(err, "%s: integer outside the int64 range", path);
            v = nx_value_int(ni->i);
        } else if (!isfinite(n->valuedouble)) {
            /* JSON has no infinity, and the JSON writers spell one as null */
            return nx_fail(err, "%s: number outside the double range", path);
        } else {
            v = nx_value_float(n->valuedouble);
        }
    } else if (cJSON_IsString(n)) {
        v.kind = NX_VAL_STRING;
        v.s = strdup(n->valuestring);
        if (!v.s) return nx_fail(err, "%s: out of memory", path);
    } else if (cJSON_IsArray(n)) {
        v.kind = NX_VAL_LIST;
        int count = cJSON_GetArraySize(n);
        if (count > 0) {
            v.items = calloc((size_t)count, sizeof *v.items);
            if (!v.items) return nx_fail(err, "%s: out of memory", path);
        }
        uint32_t k = 0;
        for (const cJSON *c = n->child; c; c = c->next, k++) {
            char sub[512];
            snprintf(sub, sizeof sub, "%.480s[%u]", path, k);
            if (value_from_json(c, sub, nums, &v.items[k], err) != 0) {
                v.count = k;
                nx_value_free(&v);
                return -1;
            }
        }
        v.count = k;
    } else {
        return nx_fail(err, "%s: a JSON object is not an attribute value "
                            "(use null, a boolean, a number, a string or a list)",
                       path);
    }
    *out = v;
    return 0;
}

static int attrs_from_json(const cJSON *obj, const char *path, const nx_json_numbers *nums,
                           nx_attrs *out, nx_error *err) {
    if (!cJSON_IsObject(obj)) return nx_fail(err, "%s must be a JSON object", path);
    nx_attrs a;
    nx_attrs_init(&a);
    for (const cJSON *c = obj->child; c; c = c->next) {
        char sub[512];
        nx_quoted q;
        snprintf(sub, sizeof sub, "%.240s.%s", path, nx_quote(&q, c->string, NX_QUOTE_NAME));
        if (nx_attrs_get(&a, c->string)) {
            nx_attrs_free(&a);
            return nx_fail(err, "%s is given twice", sub);
        }
        nx_value v;
        if (value_from_json(c, sub, nums, &v, err) != 0) {
            nx_attrs_free(&a);
            return -1;
        }
        if (nx_attrs_set(&a, c->string, &v, err) != 0) {
            nx_value_free(&v);
            nx_attrs_free(&a);
            return -1;
        }
    }
    *out = a;
    return 0;
}

int nx_value_parse(const char *source, const char *json, nx_value *out, nx_error *err) {
    nx_json_numbers nums;
    cJSON *root = nx_json_read(source, json, &nums, err);
    if (!root) return -1;
    int rc = value_from_json(root, source, &nums, out, err);
    free(nums.items);
    cJSON_Delete(root);
    return rc;
}

/* Checks that every member of obj is one of `allowed` (NULL-terminated) and
 * appears once. */
static int check_members(const cJSON *obj, const char *path, const char *const *allowed,
                         nx_error *err) {
    for (const cJSON *c = obj->child; c; c = c->next) {
        int known = 0;
        for (int k = 0; allowed[k] && !known; k++) known = strcmp(allowed[k], c->string) == 0;
        if (!known) {
            char list[200] = "";
            for (int k = 0; allowed[k]; k++) {
                strncat(list, k ? ", " : "", sizeof list - strlen(list) - 1);
                strncat(list, allowed[k], sizeof list - strlen(list) - 1);
            }
            nx_quoted q;
            return nx_fail(err, "%s: unknown key '%s' (expected %s)", path,
                           nx_quote(&q, c->string, NX_QUOTE_NAME), list);
        }
        for (const cJSON *d = obj->child; d != c; d = d->next)
            if (strcmp(d->string, c->string) == 0) {
                nx_quoted q;
                return nx_fail(err, "%s: key '%s' is given twice", path, nx_quote(&q, c->string, NX_QUOTE_NAME));
            }
    }
    return 0;
}

/* A shape entry: a positive integer spelt as one, by the rule integer
 * attributes follow (registry/json_read.h: 8 is an INT, 8.0 and 8e0 are
 * FLOATs), so [8.0, 6] is refused as stride=[2.0, 2] is. */
static int shape_dim(const cJSON *c, const nx_json_numbers *nums, uint64_t *out) {
    const nx_json_number *ni = cJSON_IsNumber(c) ? nx_json_number_of(nums, c) : NULL;
    if (!ni || !ni->is_int || ni->overflow || ni->i < 1 || ni->i > ((int64_t)1 << 53)) return -1;
    *out = (uint64_t)ni->i;
    return 0;
}

static int tensor_from_json(const cJSON *obj, const char *path, int is_result, uint32_t index,
                            const nx_json_numbers *nums, nx_op_tensor *t, char **file, nx_error *err) {
    static const char *const strict_keys[] = {"name", "shape", "dtype", NULL};
    static const char *const file_keys[] = {"name", "shape", "dtype", "file", NULL};
    if (!cJSON_IsObject(obj)) return nx_fail(err, "%s must be a JSON object", path);
    if (check_members(obj, path, file ? file_keys : strict_keys, err) != 0) return -1;
    memset(t, 0, sizeof *t);
    t->dtype = NX_OP_DTYPE_UNSET;

    const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "name");
    char defname[16];
    snprintf(defname, sizeof defname, "%s%u", is_result ? "out" : "in", index);
    if (name && !cJSON_IsString(name)) return nx_fail(err, "%s.name must be a string", path);
    const char *nm = name ? name->valuestring : defname;
    char what[300];
    snprintf(what, sizeof what, "%s.name", path);
    if (nx_op_tensor_name_check(what, nm, err) != 0) return -1;
    memcpy(t->name, nm, strlen(nm) + 1);

    const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, "file");
    if (f) {
        if (!cJSON_IsString(f) || !f->valuestring[0])
            return nx_fail(err, "%s.file must be a non-empty string", path);
        *file = strdup(f->valuestring);
        if (!*file) return nx_fail(err, "%s: out of memory", path);
    }

    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(obj, "shape");
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(obj, "dtype");
    int optional = file != NULL && (is_result || f != NULL);
    if (!shape && !optional) return nx_fail(err, "%s: missing \"shape\"", path);
    if (!dtype && !optional) return nx_fail(err, "%s: missing \"dtype\"", path);
    if (shape) {
        if (!cJSON_IsArray(shape)) return nx_fail(err, "%s.shape must be a list of positive integers", path);
        int nd = cJSON_GetArraySize(shape);
        if (nd < 1 || nd > NX_KERNEL_MAX_DIMS)
            return nx_fail(err, "%s.shape has %d dims, expected 1..%d", path, nd, NX_KERNEL_MAX_DIMS);
        uint32_t d = 0;
        for (const cJSON *c = shape->child; c; c = c->next, d++)
            if (shape_dim(c, nums, &t->shape[d]) != 0)
                return nx_fail(err, "%s.shape[%u] must be a positive integer (spelt as one: 8, not 8.0)", path, d);
        t->ndims = (uint32_t)nd;
    }
    if (dtype) {
        nx_dtype dt;
        if (!cJSON_IsString(dtype) || nx_dtype_from_name(dtype->valuestring, &dt) != 0)
            return nx_fail(err, "%s.dtype must be a dtype name (fp32, bf16, fp16, fp8_e4m3, "
                                "fp8_e5m2, int8, uint8, int16, uint16, int32, uint32)",
                           path);
        t->dtype = dt;
    }
    return 0;
}

static int tensors_from_json(const cJSON *arr, const char *source, const char *key, int is_result,
                             const nx_json_numbers *nums, nx_op_tensor *ts, uint32_t *n, char **files, nx_error *err) {
    if (!cJSON_IsArray(arr)) return nx_fail(err, "%s: %s must be a list of tensor objects", source, key);
    int count = cJSON_GetArraySize(arr);
    if (count > NX_OP_MAX_TENSORS)
        return nx_fail(err, "%s: %s has %d entries, at most %d are allowed", source, key, count,
                       NX_OP_MAX_TENSORS);
    uint32_t i = 0;
    for (const cJSON *c = arr->child; c; c = c->next, i++) {
        char path[256];
        snprintf(path, sizeof path, "%s: %s[%u]", source, key, i);
        if (tensor_from_json(c, path, is_result, i, nums, &ts[i], files ? &files[i] : NULL, err) != 0)
            return -1;
    }
    *n = i;
    return 0;
}

int nx_macro_op_parse(const char *source, const char *json, nx_macro_op *out, nx_op_files *files,
                      nx_error *err) {
    static const char *const top_keys[] = {"func_name", "operands", "results", "attrs", NULL};
    nx_json_numbers nums;
    cJSON *root = nx_json_read(source, json, &nums, err);
    if (!root) return -1;
    nx_macro_op op;
    nx_macro_op_init(&op);
    nx_op_files fl;
    memset(&fl, 0, sizeof fl);
    int rc = -1;
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(root, "func_name");
    const cJSON *opnds = cJSON_GetObjectItemCaseSensitive(root, "operands");
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(root, "results");
    const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(root, "attrs");
    char apath[256];
    snprintf(apath, sizeof apath, "%s: attrs", source);
    if (!cJSON_IsObject(root)) {
        nx_fail(err, "%s: the top level must be a JSON object", source);
    } else if (check_members(root, source, top_keys, err) != 0) {
        /* err set */
    } else if (!cJSON_IsString(fn) || !fn->valuestring[0]) {
        nx_fail(err, "%s: \"func_name\" must be a non-empty string (the registry key)", source);
    } else if (!opnds) {
        nx_fail(err, "%s: missing \"operands\"", source);
    } else if (nx_macro_op_set_func_name(&op, fn->valuestring, err) == 0 &&
               tensors_from_json(opnds, source, "operands", 0, &nums, op.operands, &op.n_operands,
                                 files ? fl.operand : NULL, err) == 0 &&
               (!res || tensors_from_json(res, source, "results", 1, &nums, op.results, &op.n_results,
                                          files ? fl.result : NULL, err) == 0) &&
               (!attrs || attrs_from_json(attrs, apath, &nums, &op.attrs, err) == 0)) {
        rc = 0;
    }
    free(nums.items);
    cJSON_Delete(root);
    if (rc != 0) {
        nx_macro_op_free(&op);
        nx_op_files_free(&fl);
        return -1;
    }
    if (!files) {
        if (nx_macro_op_check(&op, err) != 0) {
            nx_fail_prefix(err, "%s", source);
            nx_macro_op_free(&op);
            return -1;
        }
    } else {
        *files = fl;
    }
    *out = op;
    return 0;
}
