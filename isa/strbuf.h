/* The one growable string of nxsim (the Redis sds idea on a plain struct):
 * every file that builds text appends to an nx_strbuf. Appends never fail
 * loudly: running out of memory (or a size past SIZE_MAX / 2) sets `failed`,
 * later appends do nothing, and nx_sb_take returns NULL, so a writer checks
 * once at the end.
 *
 * Ownership: the buffer owns `s` (nx_sb_free, or nx_sb_take hands it over).
 * `s` is NUL-terminated whenever it is non-NULL; `len` excludes the NUL.
 * A zeroed struct (NX_STRBUF_INIT) is an empty buffer. */
#ifndef NXSIM_ISA_STRBUF_H
#define NXSIM_ISA_STRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

typedef struct nx_strbuf {
    char *s;
    size_t len;
    size_t cap;
    int failed; /* an append ran out of memory: the text is incomplete */
} nx_strbuf;

#define NX_STRBUF_INIT {NULL, 0, 0, 0}

/* Appends n bytes. Inline when they fit (the hot path of the profile
 * writer); nx_sb_append_grow makes room otherwise. */
void nx_sb_append_grow(nx_strbuf *b, const void *data, size_t n);
static inline void nx_sb_append(nx_strbuf *b, const void *data, size_t n) {
    if (b->s && !b->failed && b->cap - b->len > n) {
        memcpy(b->s + b->len, data, n);
        b->len += n;
        b->s[b->len] = '\0';
        return;
    }
    nx_sb_append_grow(b, data, n);
}
void nx_sb_puts(nx_strbuf *b, const char *text);
void nx_sb_putc(nx_strbuf *b, char c);
/* Any length (formats twice when the first try does not fit). */
void nx_sb_printf(nx_strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void nx_sb_vprintf(nx_strbuf *b, const char *fmt, va_list ap);

/* The text so far ("" when empty; never NULL). */
const char *nx_sb_str(const nx_strbuf *b);
/* Empties the buffer, keeping its memory (and clearing `failed`). */
void nx_sb_clear(nx_strbuf *b);
/* Hands the text over (the caller frees it) and resets b; NULL if any
 * append failed (the memory is released). */
char *nx_sb_take(nx_strbuf *b);
void nx_sb_free(nx_strbuf *b);

#endif
