/* The steps of adding a kernel (docs/parts/new-kernel.md), checked for every
 * kernel the family records register (registry/families/): a registry row
 * or a composite without one of its steps fails here, naming the kernel
 * and the step.
 *
 *  - rules (step 3): attrs, infer_results, default_op, reference and
 *    reference_name, and the default op infers its results;
 *  - kernel (step 1): the trace function is implemented, and its row in the
 *    inventory table of docs/parts/kernels.md names the function and a
 *    folder under kernels/ (not kernels/ref/) where a .c file defines it;
 *  - reference (step 2): reference_name is declared in kernels/ref/ref.h and
 *    defined in a .c file of kernels/ref/;
 *  - test (step 4): the kernel's name occurs in a file under tests/ other
 *    than this one, tests/test_registry.c (the seed listing) and the fuzz
 *    corpora, outside single quotes (the miss text's key list);
 *  - bench (step 5): its name or its trace function occurs under bench/;
 *  - docs (step 6): exactly one row in that table, with the record's family
 *    and how it is reached ("registry #N" or "composite"), linking a page of
 *    docs/parts/ that names the kernel; and no row for a kernel nothing
 *    registers.
 *
 * The tree is found relative to this file (as tests/test_isa_doc.c finds
 * docs/ISA.md); NXSIM_KERNELS_DOC overrides the path of kernels.md (to see
 * an edited copy fail). Every problem is printed before the test fails, so
 * one run lists all of them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "isa/fileio.h"
#include "registry/families/families.h"
#include "registry/macro_op.h"

#define MAX_KERNELS 128
#define MAX_FILES 2048

typedef struct kernel {
    const char *name;   /* key or composite name */
    const char *family; /* its record's */
    const nx_leaf *leaf;
    const nx_op_rules *rules;
    uint32_t seed_index; /* 0: a composite */
    int doc_rows;
} kernel;

/* The text of every file under a directory. */
typedef struct files {
    char *path[MAX_FILES];
    char *text[MAX_FILES];
    uint32_t n;
} files;

typedef struct check {
    char root[4096]; /* the source tree */
    kernel k[MAX_KERNELS];
    uint32_t nk;
    int problems;
} check;

static void problem(check *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("new kernel: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    c->problems++;
}

/* Not inlined: GCC 12 takes the returned buffer for a pointer to the local
 * it was read through (-Wdangling-pointer). */
__attribute__((noinline)) static char *slurp(const char *path) {
    uint8_t *buf = NULL;
    size_t len;
    nx_error err;
    if (nx_read_file(path, &buf, &len, &err) != 0) return NULL;
    return (char *)buf;
}

static int is_ident(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

/* 1 if word occurs in text as a whole identifier, not quoted in '...'. */
static int has_word(const char *text, const char *word) {
    size_t n = strlen(word);
    for (const char *p = text; (p = strstr(p, word)) != NULL; p++) {
        char before = p > text ? p[-1] : ' ', after = p[n];
        if (!is_ident(before) && !is_ident(after) && before != '\'') return 1;
    }
    return 0;
}

/* 1 if a line of text defines function fn: it starts in column 0 with a
 * type, names fn( and does not end in ';'. */
static int defines(const char *text, const char *fn) {
    size_t n = strlen(fn);
    for (const char *line = text; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line)) {
        if (!is_ident(*line)) continue;
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        for (const char *p = line; p + n < line + len; p++) {
            if (strncmp(p, fn, n) != 0 || p[n] != '(' || (p > line && p[-1] != ' ' && p[-1] != '*')) continue;
            const char *last = line + len;
            while (last > line && (last[-1] == ' ' || last[-1] == '\r')) last--;
            if (last > line && last[-1] != ';') return 1;
        }
    }
    return 0;
}

static int skipped(const char *name, const char *const *skip) {
    for (; skip && *skip; skip++)
        if (strcmp(name, *skip) == 0) return 1;
    return 0;
}

/* Every regular file under dir, recursively, but the names in skip. */
static void load(files *f, const char *dir, const char *const *skip) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || skipped(e->d_name, skip)) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            load(f, path, skip);
        } else if (S_ISREG(st.st_mode) && f->n < MAX_FILES) {
            char *t = slurp(path);
            if (!t) continue;
            f->path[f->n] = strdup(path);
            f->text[f->n++] = t;
        }
    }
    closedir(d);
}

static void unload(files *f) {
    for (uint32_t i = 0; i < f->n; i++) {
        free(f->path[i]);
        free(f->text[i]);
    }
    f->n = 0;
}

static int any_has_word(const files *f, const char *word) {
    for (uint32_t i = 0; i < f->n; i++)
        if (has_word(f->text[i], word)) return 1;
    return 0;
}

/* 1 if a .c file of f defines fn. */
static int any_defines(const files *f, const char *fn) {
    for (uint32_t i = 0; i < f->n; i++) {
        size_t n = strlen(f->path[i]);
        if (n > 2 && strcmp(f->path[i] + n - 2, ".c") == 0 && defines(f->text[i], fn)) return 1;
    }
    return 0;
}

static void collect(check *c) {
    uint32_t nf;
    const nx_family *const *fams = nx_families(&nf);
    for (uint32_t f = 0; f < nf; f++) {
        for (uint32_t i = 0; i < fams[f]->n_rows && c->nk < MAX_KERNELS; i++) {
            const nx_registry_entry *e = &fams[f]->rows[i];
            c->k[c->nk++] = (kernel){e->key, fams[f]->name, e->config.kernel_func, e->rules, e->seed_index, 0};
        }
        for (uint32_t i = 0; i < fams[f]->n_composites && c->nk < MAX_KERNELS; i++) {
            const nx_composite *x = &fams[f]->composites[i];
            c->k[c->nk++] = (kernel){x->name, fams[f]->name, x->config.kernel_func, x->rules, 0, 0};
        }
    }
}

/* ---- step 3: the rules ------------------------------------------------------ */

static void check_rules(check *c, const kernel *k) {
    const nx_op_rules *r = k->rules;
    const char *where = "(step 3: its rules in registry/families/)";
    if (!r) {
        problem(c, "%s: no rules %s", k->name, where);
        return;
    }
    if (!r->attrs) problem(c, "%s: its rules list no attrs %s", k->name, where);
    if (!r->infer_results) problem(c, "%s: its rules have no infer_results %s", k->name, where);
    if (!r->default_op) problem(c, "%s: its rules have no default_op %s", k->name, where);
    if (!r->reference || !r->reference_name) problem(c, "%s: its rules have no reference %s", k->name, where);
    if (!r->default_op || !r->infer_results) return;
    nx_macro_op op;
    nx_macro_op_init(&op);
    nx_error err;
    if (nx_macro_op_set_func_name(&op, k->name, &err) != 0 || r->default_op(&op, &err) != 0 ||
        nx_op_rules_apply_results(r, k->name, NULL, &op, &err) != 0)
        problem(c, "%s: its default op does not infer its results: %s %s", k->name, err.msg, where);
    nx_macro_op_free(&op);
}

/* ---- step 6: the inventory table of kernels.md -------------------------------- */

/* The cells of a table row "| a | b |" into cell[0..max), backticks and
 * spaces stripped, in place; the number of cells. */
static uint32_t cells(char *row, char **cell, uint32_t max) {
    uint32_t n = 0;
    char *p = strchr(row, '|');
    while (p && n < max) {
        char *q = strchr(p + 1, '|');
        if (!q) break;
        *q = '\0';
        char *s = p + 1;
        while (*s == ' ' || *s == '`') s++;
        char *e = s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '`')) *--e = '\0';
        cell[n++] = s;
        p = q;
    }
    return n;
}

static kernel *find(check *c, const char *name) {
    for (uint32_t i = 0; i < c->nk; i++)
        if (strcmp(c->k[i].name, name) == 0) return &c->k[i];
    return NULL;
}

static void check_row(check *c, const char *doc, size_t line, char **cell) {
    kernel *k = find(c, cell[0]);
    if (!k) {
        problem(c, "%s:%zu: a row for `%s`, which no family record registers", doc, line, cell[0]);
        return;
    }
    if (++k->doc_rows > 1) problem(c, "%s:%zu: a second row for `%s`", doc, line, k->name);
    if (strcmp(cell[1], k->family) != 0)
        problem(c, "%s:%zu: `%s` is of family %s, the row says %s", doc, line, k->name, k->family, cell[1]);
    char reached[32];
    if (k->seed_index) snprintf(reached, sizeof reached, "registry #%u", k->seed_index);
    else snprintf(reached, sizeof reached, "composite");
    if (strcmp(cell[2], reached) != 0)
        problem(c, "%s:%zu: `%s` is reached as %s, the row says %s", doc, line, k->name, reached, cell[2]);
    /* step 1: the trace function in its folder */
    if (k->seed_index && strcmp(cell[3], k->leaf->name) != 0)
        problem(c, "%s:%zu: `%s` traces %s, the row says %s", doc, line, k->name, k->leaf->name, cell[3]);
    if (strncmp(cell[4], "kernels/", 8) != 0 || strncmp(cell[4], "kernels/ref", 11) == 0) {
        problem(c, "%s:%zu: `%s`: folder %s is not a family folder under kernels/ (step 1)", doc, line, k->name,
                cell[4]);
    } else {
        char dir[4352];
        snprintf(dir, sizeof dir, "%s/%s", c->root, cell[4]);
        files f = {0};
        load(&f, dir, NULL);
        if (!any_defines(&f, cell[3]))
            problem(c, "%s:%zu: `%s`: no .c file under %s defines %s (step 1)", doc, line, k->name, cell[4], cell[3]);
        unload(&f);
    }
    /* the page: [name](page.md) */
    const char *open = strchr(cell[5], '('), *close = open ? strchr(open, ')') : NULL;
    char page[4608];
    char *text = NULL;
    if (open && close) {
        snprintf(page, sizeof page, "%s/docs/parts/%.*s", c->root, (int)(close - open - 1), open + 1);
        text = slurp(page);
    }
    if (!text) problem(c, "%s:%zu: `%s`: the page %s is not a page of docs/parts/ (step 6)", doc, line, k->name, cell[5]);
    else if (!has_word(text, k->name))
        problem(c, "%s:%zu: `%s`: its page %s does not name it (step 6)", doc, line, k->name, cell[5]);
    free(text);
}

static void check_doc(check *c) {
    char doc[4352];
    const char *env = getenv("NXSIM_KERNELS_DOC");
    if (env && *env) snprintf(doc, sizeof doc, "%s", env);
    else snprintf(doc, sizeof doc, "%s/docs/parts/kernels.md", c->root);
    char *text = slurp(doc);
    if (!text) {
        problem(c, "%s: cannot be read", doc);
        return;
    }
    const char *found = strstr(text, "\n### The inventory\n");
    if (!found) problem(c, "%s: no \"### The inventory\" section (step 6)", doc);
    size_t at = found ? (size_t)(found - text) + 1 : strlen(text), line = 1;
    for (size_t i = 0; i < at; i++) line += text[i] == '\n';
    int rows = 0;
    for (char *p = text + at; *p; line++) {
        char *end = strchr(p, '\n');
        if (end) *end = '\0';
        if (rows > 0 && strncmp(p, "### ", 4) == 0) break;
        if (p[0] == '|' && strncmp(p, "|---", 4) != 0 && strncmp(p, "| kernel |", 10) != 0) {
            char *cell[8];
            if (cells(p, cell, 8) != 6) problem(c, "%s:%zu: an inventory row needs 6 cells", doc, line);
            else check_row(c, doc, line, cell);
            rows++;
        }
        if (!end) break;
        p = end + 1;
    }
    for (uint32_t i = 0; i < c->nk; i++)
        if (c->k[i].doc_rows == 0)
            problem(c, "%s: no row in the inventory table of docs/parts/kernels.md (step 6)", c->k[i].name);
    free(text);
}

/* ---- all steps ---------------------------------------------------------------- */

static void every_kernel_has_every_step(void **state) {
    (void)state;
    static check c;
    memset(&c, 0, sizeof c);
    const char *file = __FILE__, *slash = strrchr(file, '/');
    snprintf(c.root, sizeof c.root, "%.*s/..", slash ? (int)(slash - file) : 1, slash ? file : ".");
    collect(&c);
    assert_true(c.nk >= 13 + 5); /* the seed's 13 rows, topk and the tutorial's four */

    char dir[4352];
    files tests = {0}, bench = {0}, refs = {0};
    static const char *const not_tests[] = {"test_new_kernel.c", "test_registry.c", "fuzz", NULL};
    snprintf(dir, sizeof dir, "%s/tests", c.root);
    load(&tests, dir, not_tests);
    snprintf(dir, sizeof dir, "%s/bench", c.root);
    load(&bench, dir, NULL);
    snprintf(dir, sizeof dir, "%s/kernels/ref", c.root);
    load(&refs, dir, NULL);
    snprintf(dir, sizeof dir, "%s/kernels/ref/ref.h", c.root);
    char *ref_h = slurp(dir);
    assert_non_null(ref_h);
    assert_true(tests.n > 10 && bench.n > 5 && refs.n > 5);

    for (uint32_t i = 0; i < c.nk; i++) {
        const kernel *k = &c.k[i];
        check_rules(&c, k);
        if (!k->leaf || !k->leaf->fn) problem(&c, "%s: its trace function is not implemented (step 1)", k->name);
        const char *ref = k->rules ? k->rules->reference_name : NULL;
        if (ref && (!has_word(ref_h, ref) || !any_defines(&refs, ref)))
            problem(&c, "%s: its reference %s is not declared in kernels/ref/ref.h and defined in kernels/ref/ "
                        "(step 2)", k->name, ref);
        if (!any_has_word(&tests, k->name)) problem(&c, "%s: no test under tests/ runs it by name (step 4)", k->name);
        if (!any_has_word(&bench, k->name) && !(k->leaf && any_has_word(&bench, k->leaf->name)))
            problem(&c, "%s: no bench case under bench/ (step 5)", k->name);
    }
    check_doc(&c);
    free(ref_h);
    unload(&tests);
    unload(&bench);
    unload(&refs);
    if (c.problems) fail_msg("%d step(s) of docs/parts/new-kernel.md missing (listed above)", c.problems);
}

/* The checker's own pieces, on text written here. */
static void the_matchers(void **state) {
    (void)state;
    assert_true(has_word("nxsim run topk -a k=8", "topk"));
    assert_false(has_word("nxsim run topk_auto", "topk"));
    assert_false(has_word("dict_keys(['topk'])", "topk"));
    assert_true(defines("int nx_ref_topk(const void *x,\n    int k) {\n", "nx_ref_topk"));
    assert_false(defines("int nx_ref_topk(const void *x, int k);\n", "nx_ref_topk"));
    assert_false(defines("    return nx_ref_topk(x, k);\n", "nx_ref_topk"));
    assert_false(defines("int nx_ref_topk_rows(int k) {\n", "nx_ref_topk"));
    char row[] = "| `topk` | topk | composite | `nx_topk_composite` | `kernels/topk/` | [topk](topk.md) |";
    char *cell[8];
    assert_int_equal(cells(row, cell, 8), 6);
    assert_string_equal(cell[0], "topk");
    assert_string_equal(cell[3], "nx_topk_composite");
    assert_string_equal(cell[5], "[topk](topk.md)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_matchers),
        cmocka_unit_test(every_kernel_has_every_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
