/* JSON text out (isa/json_write.h). */
#include "json_write.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void nx_json_string(nx_strbuf *b, const char *s) {
    nx_sb_putc(b, '"');
    const char *run = s;
    for (;; s++) {
        unsigned char c = (unsigned char)*s;
        if (c != '\0' && c != '"' && c != '\\' && c >= 0x20) continue;
        nx_sb_append(b, run, (size_t)(s - run));
        if (c == '\0') break;
        switch (c) {
        case '"': nx_sb_puts(b, "\\\""); break;
        case '\\': nx_sb_puts(b, "\\\\"); break;
        case '\n': nx_sb_puts(b, "\\n"); break;
        case '\t': nx_sb_puts(b, "\\t"); break;
        case '\r': nx_sb_puts(b, "\\r"); break;
        default: nx_sb_printf(b, "\\u%04x", c);
        }
        run = s + 1;
    }
    nx_sb_putc(b, '"');
}

/* The shortest digits that read back to f, laid out as Python's repr. */
static void shortest(nx_strbuf *b, double f) {
    char e[48];
    for (int prec = 0; prec <= 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec, f);
        if (strtod(e, NULL) == f) break;
    }
    /* e = [-]d[.ddd]e(+|-)XX */
    const char *p = e;
    if (*p == '-') {
        nx_sb_putc(b, '-');
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
            for (int i = 0; i <= exp10; i++) nx_sb_putc(b, i < nd ? digits[i] : '0');
            nx_sb_putc(b, '.');
            nx_sb_puts(b, nd > exp10 + 1 ? digits + exp10 + 1 : "0");
        } else {
            nx_sb_puts(b, "0.");
            for (int i = 0; i < -exp10 - 1; i++) nx_sb_putc(b, '0');
            nx_sb_puts(b, digits);
        }
    } else {
        nx_sb_putc(b, digits[0]);
        if (nd > 1) {
            nx_sb_putc(b, '.');
            nx_sb_puts(b, digits + 1);
        }
        nx_sb_printf(b, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    }
}

void nx_json_double(nx_strbuf *b, double v) {
    if (!isfinite(v))
        nx_sb_puts(b, "null");
    else
        shortest(b, v);
}

void nx_json_repr_double(nx_strbuf *b, double v) {
    if (isnan(v))
        nx_sb_puts(b, "NaN");
    else if (isinf(v))
        nx_sb_puts(b, v > 0 ? "Infinity" : "-Infinity");
    else
        shortest(b, v);
}

void nx_json_int(nx_strbuf *b, int64_t v) { nx_sb_printf(b, "%" PRId64, v); }

void nx_json_uint(nx_strbuf *b, uint64_t v) { nx_sb_printf(b, "%" PRIu64, v); }
