/* The leaf cases as data: every tests/cases/<family>/<case>.json through the
 * leaf-case suite (tests/leaf_cases.h: nx_run_op on the functional
 * executor, the model with the race check and, where the case names it,
 * the model with the RTL PE; the rules' reference; the backends bit for
 * bit). A case file that does not parse fails its test. Then the suite
 * itself: malformed case texts are refused with a message naming the
 * problem, and wrong expectations (a refusal that does not come, another
 * message) fail the run. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "leaf_cases.h"

#ifndef NXSIM_CASES_DIR
#error "NXSIM_CASES_DIR (tests/cases) is set by tests/CMakeLists.txt"
#endif

static void run_file(void **state) {
    const char *path = *state;
    leaf_case c;
    nx_error err;
    if (leaf_case_load(path, &c, &err) != 0) fail_msg("%s", err.msg);
    leaf_case_check(&c, NULL);
    leaf_case_free(&c);
}

static const char *const valid_op =
    "\"op\": {\"func_name\": \"tiled_pf_transpose\", \"operands\": [{\"name\": \"x\", \"shape\": [4, 6], "
    "\"dtype\": \"fp32\"}], \"attrs\": {\"permutation\": [1, 0]}}";

static void expect_parse_error(const char *body, const char *msg) {
    char text[1024];
    snprintf(text, sizeof text, "{%s%s%s}", valid_op, *body ? ", " : "", body);
    leaf_case c;
    nx_error err;
    if (leaf_case_parse("case.json", text, &c, &err) == 0) {
        leaf_case_free(&c);
        fail_msg("accepted %s, expected: %s", text, msg);
    }
    assert_string_equal(err.msg, msg);
}

static void malformed_files(void **state) {
    (void)state;
    expect_parse_error("\"seeds\": 1",
                       "case.json: unknown key seeds (what, op, machine, seed, grid, backends, fill, "
                       "expect)");
    expect_parse_error("\"backends\": [\"model\", \"fpga\"]", "case.json: backends: fpga is not functional, model or rtl");
    expect_parse_error("\"backends\": []",
                       "case.json: backends: expected a non-empty list of \"functional\", \"model\", \"rtl\"");
    expect_parse_error("\"fill\": {\"y\": \"ties\"}", "case.json: fill: y is not an operand of the op");
    expect_parse_error("\"fill\": {\"x\": \"noise\"}",
                       "case.json: fill.x: expected random, ties, equal, special or ascending");
    expect_parse_error("\"grid\": 3", "case.json: grid: expected 0, 1 or 2");
    expect_parse_error("\"seed\": -1", "case.json: seed: expected an integer >= 0");
    expect_parse_error("\"expect\": {\"error\": 1}",
                       "case.json: expect: expected {\"error\": \"the exact message\"} or {\"grid\": 1 or 2}");
    expect_parse_error("\"expect\": {\"grid\": 3}",
                       "case.json: expect: expected {\"error\": \"the exact message\"} or {\"grid\": 1 or 2}");
    leaf_case c;
    nx_error err;
    assert_int_equal(leaf_case_parse("case.json", "{\"seed\": 1}", &c, &err), -1);
    assert_string_equal(err.msg, "case.json: op: expected an op document (an object)");
    assert_int_equal(leaf_case_parse("case.json", "{\"op\": ", &c, &err), -1);
    assert_string_equal(err.msg, "case.json: not a JSON object");
    /* the op document's own errors, with the op parser's JSON path */
    assert_int_equal(leaf_case_parse("case.json", "{\"op\": {\"func_name\": \"k\", \"operands\": [{\"name\": \"x\"}]}}",
                                     &c, &err), -1);
    assert_non_null(strstr(err.msg, "case.json: op"));
    assert_int_equal(leaf_case_load(NXSIM_CASES_DIR "/no-such-family/none.json", &c, &err), -1);
}

/* A case that passes, then the same case with expectations it does not meet. */
static void wrong_expectations(void **state) {
    (void)state;
    char text[1024];
    snprintf(text, sizeof text, "{%s, \"backends\": [\"functional\"]}", valid_op);
    leaf_case c;
    nx_error err;
    assert_int_equal(leaf_case_parse("case.json", text, &c, &err), 0);
    assert_int_equal(leaf_case_run(&c, NULL, &err), 0);
    c.expect_grid = 1; /* the transpose runs on its VNC(2) grid */
    assert_int_equal(leaf_case_run(&c, NULL, &err), -1);
    assert_string_equal(err.msg, "case.json: ran on 2 cores, expected 1");
    c.expect_grid = 0;
    leaf_case_expect_error(&c, "a refusal that does not come");
    assert_int_equal(leaf_case_run(&c, NULL, &err), -1);
    assert_string_equal(err.msg, "case.json: the functional executor ran the op, expected the refusal: a refusal "
                                 "that does not come");
    leaf_case_free(&c);

    /* a result written with the wrong shape: the rule's message, not another */
    snprintf(text, sizeof text, "{%s, \"expect\": {\"error\": \"another message\"}}",
             "\"op\": {\"func_name\": \"tiled_pf_transpose\", \"operands\": [{\"name\": \"x\", \"shape\": [4, 6], "
             "\"dtype\": \"fp32\"}], \"results\": [{\"name\": \"y\", \"shape\": [4, 6], \"dtype\": \"fp32\"}], "
             "\"attrs\": {\"permutation\": [1, 0]}}");
    assert_int_equal(leaf_case_parse("case.json", text, &c, &err), 0);
    assert_int_equal(leaf_case_run(&c, NULL, &err), -1);
    assert_string_equal(err.msg, "case.json: refused with \"result 0 (y) is declared fp32[4,6], but tiled_pf_transpose "
                                 "produces fp32[6,4]\", expected \"another message\"");
    leaf_case_free(&c);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* tests/cases/<family>/<case>.json, sorted (one family, or all with NULL) */
static char **case_files(const char *family, size_t *n) {
    char **out = NULL;
    size_t cap = 0;
    *n = 0;
    DIR *top = opendir(NXSIM_CASES_DIR);
    if (!top) return NULL;
    for (struct dirent *f; (f = readdir(top));) {
        if (f->d_name[0] == '.' || (family && strcmp(f->d_name, family) != 0)) continue;
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", NXSIM_CASES_DIR, f->d_name);
        DIR *d = opendir(dir);
        if (!d) continue;
        for (struct dirent *e; (e = readdir(d));) {
            size_t len = strlen(e->d_name);
            if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
            if (*n == cap) {
                cap = cap ? 2 * cap : 64;
                char **grown = realloc(out, cap * sizeof *out);
                if (!grown) abort();
                out = grown;
            }
            size_t plen = strlen(dir) + len + 2;
            out[*n] = malloc(plen);
            if (!out[*n]) abort();
            snprintf(out[(*n)++], plen, "%s/%s", dir, e->d_name);
        }
        closedir(d);
    }
    closedir(top);
    if (*n) qsort(out, *n, sizeof *out, by_name);
    return out;
}

/* test_leaf_cases [FAMILY | --suite]: the cases of one family (ctest runs
 * one test per family, in parallel), the suite's own checks, or (no
 * argument) every case and the suite's checks. */
int main(int argc, char **argv) {
    const char *family = argc > 1 ? argv[1] : NULL;
    int suite = !family || strcmp(family, "--suite") == 0;
    size_t n = 0;
    char **files = family && suite ? NULL : case_files(family, &n);
    if (!n && !suite) {
        fprintf(stderr, "test_leaf_cases: no case files under %s%s%s\n", NXSIM_CASES_DIR, family ? "/" : "",
                family ? family : "");
        return 1;
    }
    if (!n && !family) {
        fprintf(stderr, "test_leaf_cases: no case files under %s\n", NXSIM_CASES_DIR);
        return 1;
    }
    struct CMUnitTest *tests = calloc(n + 2, sizeof *tests);
    if (!tests) abort();
    for (size_t i = 0; i < n; i++) {
        tests[i].name = files[i] + strlen(NXSIM_CASES_DIR) + 1;
        tests[i].test_func = run_file;
        tests[i].initial_state = files[i];
    }
    size_t total = n;
    if (suite) {
        tests[total++] = (struct CMUnitTest)cmocka_unit_test(malformed_files);
        tests[total++] = (struct CMUnitTest)cmocka_unit_test(wrong_expectations);
    }
    int rc = _cmocka_run_group_tests("leaf_cases", tests, total, NULL, NULL);
    for (size_t i = 0; i < n; i++) free(files[i]);
    free(files);
    free(tests);
    return rc;
}
