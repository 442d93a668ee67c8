/* Line plots (sim/profile.h, nx_profile_write_plot): the SVG is read back
 * and every point's value and position checked against the values written
 * and the plot's own linear scale (y = top + height * (1 - v / y_top), the
 * plot area 320 px high from y = 70); bad plots are refused with a message
 * naming the path and no file is left behind. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sim/profile.h"

#define AREA_TOP 70.0
#define AREA_H 320.0

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

/* The number after `key="` in s, or NAN when the key is missing. */
static double attr(const char *s, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "%s=\"", key);
    const char *p = strstr(s, pat);
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

static void path_of(char *buf, size_t len, const char *what) {
    snprintf(buf, len, "test_profile_plot_%s_%ld.svg", what, (long)getpid());
}

static void test_plot_points(void **state) {
    (void)state;
    const double a[4] = {0.5, 1.25, 2.0, 0.75}, b[3] = {3.0, 0.0, 1.5};
    const nx_plot_series s[2] = {{"first <a&b>", 4, a}, {"second", 3, b}};
    nx_plot p = {"title", "sub", "step", "ns", s, 2, 0.4, 0.6};
    char path[96];
    path_of(path, sizeof path, "points");
    nx_error err;
    if (nx_profile_write_plot(path, &p, &err) != 0) fail_msg("%s", err.msg);
    const char *svg = slurp(path);
    assert_true(attr(svg, "data-steps") == 4);
    double ytop = attr(svg, "data-y-top");
    assert_true(ytop >= 3.0 && ytop <= 3.0 * 1.5); /* covers the largest value, not far above it */
    assert_non_null(strstr(svg, "first &lt;a&amp;b&gt;")); /* legend text escaped */
    assert_null(strstr(svg, "<a&b>"));
    int seen[2][4] = {{0}};
    size_t points = 0;
    for (const char *c = strstr(svg, "<circle class=\"pt\""); c; c = strstr(c + 1, "<circle class=\"pt\"")) {
        int series = (int)attr(c, "data-series"), step = (int)attr(c, "data-step");
        assert_true(series >= 0 && series < 2 && step >= 0 && step < (series ? 3 : 4));
        double want = series ? b[step] : a[step];
        assert_true(fabs(attr(c, "data-value") - want) <= 1e-6 * want);
        /* cy printed to 0.01 px */
        assert_true(fabs(attr(c, "cy") - (AREA_TOP + AREA_H * (1 - want / ytop))) <= 0.006);
        seen[series][step]++;
        points++;
    }
    assert_int_equal(points, 7);
    for (int i = 0; i < 4; i++) assert_int_equal(seen[0][i], 1);
    for (int i = 0; i < 3; i++) assert_int_equal(seen[1][i], 1);
    const char *band = strstr(svg, "<rect class=\"band\"");
    assert_non_null(band);
    assert_true(attr(band, "data-lo") == 0.4 && attr(band, "data-hi") == 0.6);
    assert_true(fabs(attr(band, "y") - (AREA_TOP + AREA_H * (1 - 0.6 / ytop))) <= 0.006);
    unlink(path);
}

static void refused(const nx_plot *p, const char *what, const char *want_tail) {
    char path[96], want[256];
    path_of(path, sizeof path, what);
    nx_error err;
    assert_int_equal(nx_profile_write_plot(path, p, &err), -1);
    snprintf(want, sizeof want, "plot %s: %s", path, want_tail);
    assert_string_equal(err.msg, want);
    assert_int_equal(access(path, F_OK), -1); /* nothing written */
}

static void test_plot_errors(void **state) {
    (void)state;
    double y[2] = {1, -1};
    nx_plot_series s = {"s", 2, y};
    nx_plot p = {"t", NULL, NULL, NULL, &s, 1, 0, 0};
    refused(&p, "negative", "series 0 point 1 is -1 (finite, >= 0 expected)");
    y[1] = NAN;
    refused(&p, "nan", "series 0 point 1 is nan (finite, >= 0 expected)");
    y[1] = 2;
    s.n = 0;
    refused(&p, "empty", "series 0 has 0 points (1 to 64)");
    s.n = NX_PLOT_MAX_STEPS + 1;
    refused(&p, "long", "series 0 has 65 points (1 to 64)");
    s.n = 2;
    p.n_series = 0;
    refused(&p, "none", "0 series (1 to 8)");
    p.n_series = 1;
    nx_error err;
    assert_int_equal(nx_profile_write_plot("/nonexistent-dir/p.svg", &p, &err), -1);
    assert_string_equal(err.msg, "plot /nonexistent-dir/p.svg: cannot create: No such file or directory");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plot_points),
        cmocka_unit_test(test_plot_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
