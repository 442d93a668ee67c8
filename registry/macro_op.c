/* The macro-op model and its attribute values: construction, copying,
 * JSON parsing (through cJSON) and JSON/canonical text output. */
#include "macro_op.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a growable string ---------------------------------------------------- */

typedef struct strbuf {
    char *s;
    size_t len, cap;
    int oom;
} strbuf;

static void sb_add(strbuf *b, const char *text, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->len, text, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_puts(strbuf *b, const char *text) { sb_add(b, text, strlen(text)); }

static void sb_printf(strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void sb_printf(strbuf *b, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        b->oom = 1; /* only short numbers are formatted this way */
        return;
    }
    sb_add(b, tmp, (size_t)n);
}

/* Returns the string (caller frees) or NULL if anything ran out of memory. */
static char *sb_take(strbuf *b) {
    if (b->oom) {
        free(b->s);
        return NULL;
    }
    if (!b->s) sb_add(b, "", 0);
    if (b->oom) return NULL;
    return b->s;
}

/* ---- values --------------------------------------------------------------- */

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

nx_value nx_value_int(int64_t i) {
    nx_value v;
    memset(&v, 0, sizeof v);
    v.kind = NX_VAL_INT;
    v.i = i;
    return v;
}

nx_value nx_value_float(double f) {
    nx_value v;
    memset(&v, 0, sizeof v);
    v.kind = NX_VAL_FLOAT;
    v.f = f;
    return v;
}

nx_value nx_value_bool(int b) {
    nx_value v;
    memset(&v, 0, sizeof v);
    v.kind = NX_VAL_BOOL;
    v.i = b != 0;
    return v;
}

int nx_value_int_list(nx_value *out, const uint64_t *items, uint32_t count, nx_error *err) {
    nx_value v;
    memset(&v, 0, sizeof v);
    v.kind = NX_VAL_LIST;
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

/* ---- JSON numbers: INT or FLOAT by their spelling -------------------------
 * cJSON keeps only a double per number, which cannot tell 2 from 2.0 nor hold
 * an int64 beyond 2^53. The text is therefore scanned once more: the number
 * tokens of valid JSON appear in the same order as the number nodes of a
 * pre-order walk of the tree, which pairs each node with its spelling. */

typedef struct num_info {
    const cJSON *node;
    int is_int;
    int overflow; /* an INT spelling outside int64 */
    int64_t i;
} num_info;

typedef struct num_table {
    num_info *items;
    size_t count, cap;
} num_table;

static int cmp_num_node(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const num_info *)a)->node;
    uintptr_t y = (uintptr_t)((const num_info *)b)->node;
    return x < y ? -1 : x > y;
}

static int collect_nodes(const cJSON *n, num_table *t) {
    if (cJSON_IsNumber(n)) {
        if (t->count == t->cap) {
            size_t cap = t->cap ? t->cap * 2 : 32;
            num_info *items = realloc(t->items, cap * sizeof *items);
            if (!items) return -1;
            t->items = items;
            t->cap = cap;
        }
        memset(&t->items[t->count], 0, sizeof t->items[0]);
        t->items[t->count++].node = n;
    }
    for (const cJSON *c = n->child; c; c = c->next)
        if (collect_nodes(c, t) != 0) return -1;
    return 0;
}

/* Fills t for the tree `root` parsed from `text`. -1 on out-of-memory or if
 * the spellings do not pair up with the nodes (cannot happen for text cJSON
 * accepted whole). */
static int num_table_build(const char *text, const cJSON *root, num_table *t) {
    memset(t, 0, sizeof *t);
    if (collect_nodes(root, t) != 0) return -1;
    size_t k = 0;
    for (size_t i = 0; text[i];) {
        char c = text[i];
        if (c == '"') {
            for (i++; text[i] && text[i] != '"'; i++)
                if (text[i] == '\\' && text[i + 1]) i++;
            if (text[i]) i++;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t start = i;
            int is_int = 1;
            while (text[i] && strchr("0123456789+-.eE", text[i])) {
                if (text[i] == '.' || text[i] == 'e' || text[i] == 'E') is_int = 0;
                i++;
            }
            if (k >= t->count) return -1;
            num_info *ni = &t->items[k++];
            ni->is_int = is_int;
            if (is_int) {
                char tok[32];
                size_t n = i - start;
                if (n >= sizeof tok) {
                    ni->overflow = 1;
                } else {
                    memcpy(tok, text + start, n);
                    tok[n] = '\0';
                    errno = 0;
                    long long v = strtoll(tok, NULL, 10);
                    ni->overflow = errno == ERANGE;
                    ni->i = (int64_t)v;
                }
            }
        } else {
            i++;
        }
    }
    if (k != t->count) return -1;
    if (t->count > 0) qsort(t->items, t->count, sizeof *t->items, cmp_num_node);
    return 0;
}

static const num_info *num_lookup(const num_table *t, const cJSON *node) {
    if (t->count == 0) return NULL;
    num_info key;
    key.node = node;
    return bsearch(&key, t->items, t->count, sizeof *t->items, cmp_num_node);
}

/* Parses NUL-terminated JSON text whole (trailing garbage is an error). */
static cJSON *parse_json(const char *source, const char *json, num_table *nums, nx_error *err) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &end, 1);
    if (!root) {
        size_t at = end && end >= json ? (size_t)(end - json) : 0;
        size_t line = 1, col = 1;
        for (size_t i = 0; i < at && json[i]; i++) {
            if (json[i] == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        nx_fail(err, "%s: invalid JSON at line %zu, column %zu", source, line, col);
        return NULL;
    }
    if (num_table_build(json, root, nums) != 0) {
        free(nums->items);
        cJSON_Delete(root);
        nx_fail(err, "%s: out of memory reading JSON numbers", source);
        return NULL;
    }
    return root;
}

/* ---- cJSON -> nx_value ------------------------------------------------------ */

static int value_from_json(const cJSON *n, const char *path, const num_table *nums, nx_value *out,
                           nx_error *err) {
    nx_value v;
    memset(&v, 0, sizeof v);
    if (cJSON_IsNull(n)) {
        v.kind = NX_VAL_NONE;
    } else if (cJSON_IsBool(n)) {
        v = nx_value_bool(cJSON_IsTrue(n));
    } else if (cJSON_IsNumber(n)) {
        const num_info *ni = num_lookup(nums, n);
        if (ni && ni->is_int) {
            if (ni->overflow) return nx_fail(err, "%s: integer outside the int64 range", path);
            v = nx_value_int(ni->i);
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

static int attrs_from_json(const cJSON *obj, const char *path, const num_table *nums,
                           nx_attrs *out, nx_error *err) {
    if (!cJSON_IsObject(obj)) return nx_fail(err, "%s must be a JSON object", path);
    nx_attrs a;
    nx_attrs_init(&a);
    for (const cJSON *c = obj->child; c; c = c->next) {
        char sub[512];
        snprintf(sub, sizeof sub, "%.240s.%.240s", path, c->string);
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
    num_table nums;
    cJSON *root = parse_json(source, json, &nums, err);
    if (!root) return -1;
    int rc = value_from_json(root, source, &nums, out, err);
    free(nums.items);
    cJSON_Delete(root);
    return rc;
}

/* ---- nx_value -> text ------------------------------------------------------- */

static void put_string(strbuf *b, const char *s) {
    sb_puts(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': sb_puts(b, "\\\""); break;
        case '\\': sb_puts(b, "\\\\"); break;
        case '\n': sb_puts(b, "\\n"); break;
        case '\t': sb_puts(b, "\\t"); break;
        case '\r': sb_puts(b, "\\r"); break;
        default:
            if (*p < 0x20)
                sb_printf(b, "\\u%04x", *p);
            else
                sb_add(b, (const char *)p, 1);
        }
    }
    sb_puts(b, "\"");
}

/* Python's repr of a float: the shortest digits that read back to the same
 * double, in fixed notation when the decimal exponent is in [-4, 16) (with
 * ".0" when integral), else as d.ddde+XX. */
static void put_float(strbuf *b, double f) {
    if (isnan(f)) {
        sb_puts(b, "NaN");
        return;
    }
    if (isinf(f)) {
        sb_puts(b, f > 0 ? "Infinity" : "-Infinity");
        return;
    }
    char e[48];
    for (int prec = 0; prec <= 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec, f);
        if (strtod(e, NULL) == f) break;
    }
    /* e = [-]d[.ddd]e(+|-)XX */
    const char *p = e;
    if (*p == '-') {
        sb_puts(b, "-");
        p++;
    }
    char digits[24];
    int nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.' && nd < (int)sizeof digits - 1) digits[nd++] = *p;
    digits[nd] = '\0';
    int exp10 = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') digits[--nd] = '\0';
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 >= 0) {
            for (int i = 0; i <= exp10; i++) sb_add(b, i < nd ? &digits[i] : "0", 1);
            sb_puts(b, ".");
            sb_puts(b, nd > exp10 + 1 ? digits + exp10 + 1 : "0");
        } else {
            sb_puts(b, "0.");
            for (int i = 0; i < -exp10 - 1; i++) sb_puts(b, "0");
            sb_puts(b, digits);
        }
    } else {
        sb_add(b, digits, 1);
        if (nd > 1) {
            sb_puts(b, ".");
            sb_puts(b, digits + 1);
        }
        sb_printf(b, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    }
}

static void put_value(strbuf *b, const nx_value *v, int compact) {
    switch (v->kind) {
    case NX_VAL_NONE: sb_puts(b, "null"); break;
    case NX_VAL_BOOL: sb_puts(b, v->i ? "true" : "false"); break;
    case NX_VAL_INT: sb_printf(b, "%lld", (long long)v->i); break;
    case NX_VAL_FLOAT: put_float(b, v->f); break;
    case NX_VAL_STRING: put_string(b, v->s ? v->s : ""); break;
    case NX_VAL_LIST:
        sb_puts(b, "[");
        for (uint32_t k = 0; k < v->count; k++) {
            if (k) sb_puts(b, compact ? "," : ", ");
            put_value(b, &v->items[k], compact);
        }
        sb_puts(b, "]");
        break;
    }
}

char *nx_value_to_json(const nx_value *v) {
    strbuf b = {0};
    put_value(&b, v, 0);
    return sb_take(&b);
}

static void put_attrs(strbuf *b, const nx_attrs *a, const uint32_t *order, int compact) {
    sb_puts(b, "{");
    for (uint32_t k = 0; k < a->count; k++) {
        const nx_attr *at = &a->items[order ? order[k] : k];
        if (k) sb_puts(b, compact ? "," : ", ");
        put_string(b, at->name);
        sb_puts(b, compact ? ":" : ": ");
        put_value(b, &at->value, compact);
    }
    sb_puts(b, "}");
}

char *nx_attrs_to_json(const nx_attrs *a) {
    strbuf b = {0};
    put_attrs(&b, a, NULL, 0);
    return sb_take(&b);
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
    strbuf b = {0};
    put_attrs(&b, a, order, 1);
    free(order);
    return sb_take(&b);
}

/* ---- macro-ops -------------------------------------------------------------- */

void nx_macro_op_init(nx_macro_op *op) {
    memset(op, 0, sizeof *op);
    nx_attrs_init(&op->attrs);
}

void nx_macro_op_free(nx_macro_op *op) {
    if (!op) return;
    free(op->func_name);
    nx_attrs_free(&op->attrs);
    memset(op, 0, sizeof *op);
}

int nx_macro_op_set_func_name(nx_macro_op *op, const char *name, nx_error *err) {
    char *copy = strdup(name);
    if (!copy) return nx_fail(err, "out of memory");
    free(op->func_name);
    op->func_name = copy;
    return 0;
}

static int check_tensor_name(const char *what, const char *name, nx_error *err) {
    size_t n = strlen(name);
    if (n == 0) return nx_fail(err, "%s: the name is empty", what);
    if (n >= NX_TENSOR_NAME_MAX)
        return nx_fail(err, "%s: name '%.40s...' is longer than %d characters", what, name,
                       NX_TENSOR_NAME_MAX - 1);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
                 (i > 0 && ((c >= '0' && c <= '9') || c == '.'));
        if (!ok)
            return nx_fail(err, "%s: name '%s' is not of the form [A-Za-z_][A-Za-z0-9_.]*", what,
                           name);
    }
    return 0;
}

static int set_tensor(nx_op_tensor *t, const char *what, const char *name, nx_dtype dtype,
                      uint32_t ndims, const uint64_t *shape, nx_error *err) {
    if (check_tensor_name(what, name, err) != 0) return -1;
    if (!nx_dtype_is_valid((int)dtype)) return nx_fail(err, "%s (%s): invalid dtype code %d", what, name, (int)dtype);
    if (ndims < 1 || ndims > NX_KERNEL_MAX_DIMS)
        return nx_fail(err, "%s (%s): %u dims, expected 1..%d", what, name, ndims, NX_KERNEL_MAX_DIMS);
    for (uint32_t d = 0; d < ndims; d++)
        if (shape[d] == 0) return nx_fail(err, "%s (%s): dim %u is 0", what, name, d);
    memset(t, 0, sizeof *t);
    memcpy(t->name, name, strlen(name) + 1);
    t->dtype = dtype;
    t->ndims = ndims;
    memcpy(t->shape, shape, ndims * sizeof *shape);
    return 0;
}

int nx_macro_op_add_operand(nx_macro_op *op, const char *name, nx_dtype dtype, uint32_t ndims,
                            const uint64_t *shape, nx_error *err) {
    char what[32];
    snprintf(what, sizeof what, "operand %u", op->n_operands);
    if (op->n_operands >= NX_OP_MAX_TENSORS)
        return nx_fail(err, "%s: an op takes at most %d operands", what, NX_OP_MAX_TENSORS);
    if (set_tensor(&op->operands[op->n_operands], what, name, dtype, ndims, shape, err) != 0) return -1;
    op->n_operands++;
    return 0;
}

int nx_macro_op_add_result(nx_macro_op *op, const char *name, nx_dtype dtype, uint32_t ndims,
                           const uint64_t *shape, nx_error *err) {
    char what[32];
    snprintf(what, sizeof what, "result %u", op->n_results);
    if (op->n_results >= NX_OP_MAX_TENSORS)
        return nx_fail(err, "%s: an op has at most %d results", what, NX_OP_MAX_TENSORS);
    if (set_tensor(&op->results[op->n_results], what, name, dtype, ndims, shape, err) != 0) return -1;
    op->n_results++;
    return 0;
}

int nx_macro_op_check(const nx_macro_op *op, nx_error *err) {
    if (!op->func_name || !op->func_name[0]) return nx_fail(err, "the op has no func_name");
    const nx_op_tensor *all[2 * NX_OP_MAX_TENSORS];
    char what[2 * NX_OP_MAX_TENSORS][24];
    uint32_t n = 0;
    if (op->n_operands > NX_OP_MAX_TENSORS || op->n_results > NX_OP_MAX_TENSORS)
        return nx_fail(err, "the op has %u operands and %u results, at most %d each", op->n_operands,
                       op->n_results, NX_OP_MAX_TENSORS);
    for (uint32_t i = 0; i < op->n_operands; i++, n++) {
        all[n] = &op->operands[i];
        snprintf(what[n], sizeof what[n], "operand %u", i);
    }
    for (uint32_t i = 0; i < op->n_results; i++, n++) {
        all[n] = &op->results[i];
        snprintf(what[n], sizeof what[n], "result %u", i);
    }
    for (uint32_t i = 0; i < n; i++) {
        const nx_op_tensor *t = all[i];
        if (check_tensor_name(what[i], t->name, err) != 0) return -1;
        if (t->ndims < 1 || t->ndims > NX_KERNEL_MAX_DIMS || !nx_dtype_is_valid((int)t->dtype))
            return nx_fail(err, "%s (%s): shape or dtype not set", what[i], t->name);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(all[j]->name, t->name) == 0)
                return nx_fail(err, "%s and %s are both named '%s'", what[j], what[i], t->name);
    }
    return 0;
}

void nx_op_files_free(nx_op_files *f) {
    if (!f) return;
    for (int i = 0; i < NX_OP_MAX_TENSORS; i++) {
        free(f->operand[i]);
        free(f->result[i]);
    }
    memset(f, 0, sizeof *f);
}

void nx_op_tensor_format(char *buf, size_t len, const nx_op_tensor *t) {
    const char *dt = nx_dtype_name(t->dtype);
    int n = snprintf(buf, len, "%s[", dt ? dt : "?");
    for (uint32_t d = 0; d < t->ndims && n >= 0 && (size_t)n < len; d++)
        n += snprintf(buf + n, len - (size_t)n, "%s%llu", d ? "," : "", (unsigned long long)t->shape[d]);
    if (n >= 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, "]");
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
            return nx_fail(err, "%s: unknown key '%s' (expected %s)", path, c->string, list);
        }
        for (const cJSON *d = obj->child; d != c; d = d->next)
            if (strcmp(d->string, c->string) == 0)
                return nx_fail(err, "%s: key '%s' is given twice", path, c->string);
    }
    return 0;
}

static int tensor_from_json(const cJSON *obj, const char *path, int is_result, uint32_t index,
                            nx_op_tensor *t, char **file, nx_error *err) {
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
    if (check_tensor_name(what, nm, err) != 0) return -1;
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
        for (const cJSON *c = shape->child; c; c = c->next, d++) {
            double v = cJSON_IsNumber(c) ? c->valuedouble : -1;
            if (!(v >= 1 && v <= 9007199254740992.0) || v != floor(v))
                return nx_fail(err, "%s.shape[%u] must be a positive integer", path, d);
            t->shape[d] = (uint64_t)v;
        }
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
                             nx_op_tensor *ts, uint32_t *n, char **files, nx_error *err) {
    if (!cJSON_IsArray(arr)) return nx_fail(err, "%s: %s must be a list of tensor objects", source, key);
    int count = cJSON_GetArraySize(arr);
    if (count > NX_OP_MAX_TENSORS)
        return nx_fail(err, "%s: %s has %d entries, at most %d are allowed", source, key, count,
                       NX_OP_MAX_TENSORS);
    uint32_t i = 0;
    for (const cJSON *c = arr->child; c; c = c->next, i++) {
        char path[256];
        snprintf(path, sizeof path, "%s: %s[%u]", source, key, i);
        if (tensor_from_json(c, path, is_result, i, &ts[i], files ? &files[i] : NULL, err) != 0)
            return -1;
    }
    *n = i;
    return 0;
}

int nx_macro_op_parse(const char *source, const char *json, nx_macro_op *out, nx_op_files *files,
                      nx_error *err) {
    static const char *const top_keys[] = {"func_name", "operands", "results", "attrs", NULL};
    num_table nums;
    cJSON *root = parse_json(source, json, &nums, err);
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
               tensors_from_json(opnds, source, "operands", 0, op.operands, &op.n_operands,
                                 files ? fl.operand : NULL, err) == 0 &&
               (!res || tensors_from_json(res, source, "results", 1, op.results, &op.n_results,
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

static void put_tensors(strbuf *b, const char *key, const nx_op_tensor *ts, uint32_t n) {
    sb_printf(b, "  \"%s\": [", key);
    for (uint32_t i = 0; i < n; i++) {
        sb_puts(b, i ? ",\n    {\"name\": " : "\n    {\"name\": ");
        put_string(b, ts[i].name);
        sb_puts(b, ", \"shape\": [");
        for (uint32_t d = 0; d < ts[i].ndims; d++)
            sb_printf(b, "%s%llu", d ? ", " : "", (unsigned long long)ts[i].shape[d]);
        sb_puts(b, "], \"dtype\": ");
        const char *dt = nx_dtype_name(ts[i].dtype);
        put_string(b, dt ? dt : "unset");
        sb_puts(b, "}");
    }
    sb_puts(b, n ? "\n  ]" : "]");
}

char *nx_macro_op_to_json(const nx_macro_op *op) {
    strbuf b = {0};
    sb_puts(&b, "{\n  \"func_name\": ");
    put_string(&b, op->func_name ? op->func_name : "");
    sb_puts(&b, ",\n");
    put_tensors(&b, "operands", op->operands, op->n_operands);
    sb_puts(&b, ",\n");
    put_tensors(&b, "results", op->results, op->n_results);
    sb_puts(&b, ",\n  \"attrs\": ");
    put_attrs(&b, &op->attrs, NULL, 0);
    sb_puts(&b, "\n}\n");
    return sb_take(&b);
}
