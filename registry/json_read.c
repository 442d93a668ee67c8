/* Reading JSON text with cJSON, keeping each number's spelling
 * (registry/json_read.h). */
#include "json_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- JSON numbers: INT or FLOAT by their spelling -------------------------
 * cJSON keeps only a double per number, which cannot tell 2 from 2.0 nor hold
 * an int64 beyond 2^53. The text is therefore scanned once more: the number
 * tokens of valid JSON appear in the same order as the number nodes of a
 * pre-order walk of the tree, which pairs each node with its spelling. */

static int cmp_num_node(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const nx_json_number *)a)->node;
    uintptr_t y = (uintptr_t)((const nx_json_number *)b)->node;
    return x < y ? -1 : x > y;
}

static int collect_nodes(const cJSON *n, nx_json_numbers *t) {
    if (cJSON_IsNumber(n)) {
        if (t->count == t->cap) {
            size_t cap = t->cap ? t->cap * 2 : 32;
            nx_json_number *items = realloc(t->items, cap * sizeof *items);
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
static int numbers_build(const char *text, const cJSON *root, nx_json_numbers *t) {
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
            nx_json_number *ni = &t->items[k++];
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

const nx_json_number *nx_json_number_of(const nx_json_numbers *t, const cJSON *node) {
    if (t->count == 0) return NULL;
    nx_json_number key;
    key.node = node;
    return bsearch(&key, t->items, t->count, sizeof *t->items, cmp_num_node);
}

/* Line and column (1-based) of byte `at` of text. */
static void line_col(const char *text, size_t at, size_t *line, size_t *col) {
    *line = *col = 1;
    for (size_t i = 0; i < at && text[i]; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

/* Byte offset of the first "\u0000" escape inside a string, or -1: cJSON
 * would end the C string there, so "a\u0000b" would read as "a". */
static long find_nul_escape(const char *text) {
    int in_string = 0;
    for (size_t i = 0; text[i]; i++) {
        if (!in_string) {
            in_string = text[i] == '"';
            continue;
        }
        if (text[i] == '"') {
            in_string = 0;
        } else if (text[i] == '\\' && text[i + 1]) {
            if (text[i + 1] == 'u' && strncmp(text + i + 2, "0000", 4) == 0) return (long)i;
            i++;
        }
    }
    return -1;
}

cJSON *nx_json_read(const char *source, const char *json, nx_json_numbers *nums, nx_error *err) {
    long nul = find_nul_escape(json);
    if (nul >= 0) {
        size_t line, col;
        line_col(json, (size_t)nul, &line, &col);
        nx_fail(err, "%s: line %zu, column %zu: a string holds \\u0000 (NUL), which no name or value may hold",
                source, line, col);
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &end, 1);
    if (!root) {
        size_t at = end && end >= json ? (size_t)(end - json) : 0;
        size_t line, col;
        line_col(json, at, &line, &col);
        nx_fail(err, "%s: invalid JSON at line %zu, column %zu", source, line, col);
        return NULL;
    }
    if (numbers_build(json, root, nums) != 0) {
        free(nums->items);
        cJSON_Delete(root);
        nx_fail(err, "%s: out of memory reading JSON numbers", source);
        return NULL;
    }
    return root;
}
