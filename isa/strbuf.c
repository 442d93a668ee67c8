/* The growable string (isa/strbuf.h). */
#include "strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes and the NUL. */
static int reserve(nx_strbuf *b, size_t n) {
    if (b->failed) return -1;
    if (n > SIZE_MAX / 2 - b->len) {
        b->failed = 1;
        return -1;
    }
    size_t need = b->len + n + 1;
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->failed = 1;
        return -1;
    }
    b->s = s;
    b->cap = cap;
    return 0;
}

void nx_sb_append_grow(nx_strbuf *b, const void *data, size_t n) {
    if (reserve(b, n) != 0) return;
    if (n) memcpy(b->s + b->len, data, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void nx_sb_puts(nx_strbuf *b, const char *text) { nx_sb_append(b, text, strlen(text)); }

void nx_sb_putc(nx_strbuf *b, char c) { nx_sb_append(b, &c, 1); }

void nx_sb_vprintf(nx_strbuf *b, const char *fmt, va_list ap) {
    if (reserve(b, 0) != 0) return;
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    if (n < 0) {
        b->failed = 1;
    } else if ((size_t)n >= b->cap - b->len) {
        if (reserve(b, (size_t)n) == 0) {
            vsnprintf(b->s + b->len, b->cap - b->len, fmt, again);
            b->len += (size_t)n;
        }
    } else {
        b->len += (size_t)n;
    }
    va_end(again);
}

void nx_sb_printf(nx_strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    nx_sb_vprintf(b, fmt, ap);
    va_end(ap);
}

const char *nx_sb_str(const nx_strbuf *b) { return b->s ? b->s : ""; }

void nx_sb_clear(nx_strbuf *b) {
    b->len = 0;
    b->failed = 0;
    if (b->s) b->s[0] = '\0';
}

char *nx_sb_take(nx_strbuf *b) {
    if (!b->s && reserve(b, 0) == 0) b->s[0] = '\0'; /* an empty text is "" */
    char *s = b->failed ? NULL : b->s;
    if (!s) free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
    return s;
}

void nx_sb_free(nx_strbuf *b) {
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
}
