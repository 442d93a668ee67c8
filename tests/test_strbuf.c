/* The one string builder (isa/strbuf.h) and the one JSON text writer
 * (isa/json_write.h): appends of every kind, long printf output, taking and
 * clearing, the sticky failure, JSON string escapes, the shortest
 * round-trip form of doubles, and the non-finite policy (null in JSON;
 * NaN/Infinity only in the repr form used by cache keys). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "isa/json_write.h"
#include "isa/strbuf.h"

static void test_appends_take_clear(void **state) {
    (void)state;
    nx_strbuf b = NX_STRBUF_INIT;
    assert_string_equal(nx_sb_str(&b), "");
    nx_sb_puts(&b, "ab");
    nx_sb_putc(&b, 'c');
    nx_sb_append(&b, "defXYZ", 3);
    nx_sb_printf(&b, "-%d-%s", 42, "x");
    assert_string_equal(nx_sb_str(&b), "abcdef-42-x");
    assert_int_equal(b.len, 11);
    /* printf output longer than any first guess: formatted again */
    char big[3000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    nx_sb_printf(&b, "[%s]", big);
    assert_int_equal(b.len, 11 + 2 + 2999);
    assert_int_equal(b.s[b.len], '\0');
    assert_int_equal(b.s[12], 'q');
    assert_int_equal(b.s[b.len - 1], ']');
    nx_sb_clear(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(nx_sb_str(&b), "");
    nx_sb_puts(&b, "again");
    char *s = nx_sb_take(&b);
    assert_string_equal(s, "again");
    free(s);
    assert_null(b.s);
    /* taking an empty buffer gives "" (never NULL unless something failed) */
    s = nx_sb_take(&b);
    assert_non_null(s);
    assert_string_equal(s, "");
    free(s);
}

static void test_failure_is_sticky(void **state) {
    (void)state;
    nx_strbuf b = NX_STRBUF_INIT;
    nx_sb_puts(&b, "start");
    nx_sb_append_grow(&b, "x", SIZE_MAX / 2); /* cannot be had: fails, nothing written */
    assert_true(b.failed);
    nx_sb_puts(&b, "more");
    assert_int_equal(b.len, 5);
    assert_null(nx_sb_take(&b));
    assert_false(b.failed); /* take resets */
    nx_sb_free(&b);
}

static char *json_of(void (*put)(nx_strbuf *, double), double v) {
    nx_strbuf b = NX_STRBUF_INIT;
    put(&b, v);
    return nx_sb_take(&b);
}

static void test_json_numbers(void **state) {
    (void)state;
    static const struct {
        double v;
        const char *text;
    } cases[] = {
        {0.0, "0.0"},        {-0.0, "-0.0"},      {2.0, "2.0"},          {0.1, "0.1"},
        {-1.5, "-1.5"},      {123456.0, "123456.0"}, {1e16, "1e+16"},    {1e15, "1000000000000000.0"},
        {1e20, "1e+20"},     {2.5e-7, "2.5e-07"}, {0.0001, "0.0001"},    {0.00001, "1e-05"},
        {1.0 / 3, "0.3333333333333333"},          {5e-324, "5e-324"},    {1.7976931348623157e308, "1.7976931348623157e+308"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *j = json_of(nx_json_double, cases[i].v);
        assert_string_equal(j, cases[i].text);
        /* the text reads back to the same double */
        assert_true(strtod(j, NULL) == cases[i].v);
        free(j);
        j = json_of(nx_json_repr_double, cases[i].v);
        assert_string_equal(j, cases[i].text);
        free(j);
    }
    /* JSON has no NaN or infinity: null. The repr form keeps them apart. */
    static const struct {
        double v;
        const char *repr;
    } nonfinite[] = {{NAN, "NaN"}, {INFINITY, "Infinity"}, {-INFINITY, "-Infinity"}};
    for (size_t i = 0; i < 3; i++) {
        char *j = json_of(nx_json_double, nonfinite[i].v);
        assert_string_equal(j, "null");
        free(j);
        j = json_of(nx_json_repr_double, nonfinite[i].v);
        assert_string_equal(j, nonfinite[i].repr);
        free(j);
    }
    nx_strbuf b = NX_STRBUF_INIT;
    nx_json_int(&b, INT64_MIN);
    nx_sb_putc(&b, ' ');
    nx_json_uint(&b, UINT64_MAX);
    assert_string_equal(nx_sb_str(&b), "-9223372036854775808 18446744073709551615");
    nx_sb_free(&b);
}

static void test_json_strings(void **state) {
    (void)state;
    nx_strbuf b = NX_STRBUF_INIT;
    nx_json_string(&b, "plain \"q\" back\\slash\nnl\ttab\rcr\x01\x1f caf\xc3\xa9");
    assert_string_equal(nx_sb_str(&b),
                        "\"plain \\\"q\\\" back\\\\slash\\nnl\\ttab\\rcr\\u0001\\u001f caf\xc3\xa9\"");
    nx_sb_clear(&b);
    nx_json_string(&b, "");
    assert_string_equal(nx_sb_str(&b), "\"\"");
    nx_sb_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_appends_take_clear),
        cmocka_unit_test(test_failure_is_sticky),
        cmocka_unit_test(test_json_numbers),
        cmocka_unit_test(test_json_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
