/* Errors are values: every fallible function returns 0 on success or -1 on
 * failure and, on failure, fills an nx_error with one line naming the
 * offending input and the problem (no trailing newline). The caller owns the
 * nx_error; functions never allocate it. */
#ifndef NXSIM_ISA_ERROR_H
#define NXSIM_ISA_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NX_ERROR_MAX 512

typedef struct nx_error {
    char msg[NX_ERROR_MAX];
} nx_error;

/* Formats into err (if non-NULL) and returns -1, so `return nx_fail(err, ...)`. */
int nx_fail(nx_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prepends "prefix: " to an existing message (used to add context such as
 * "core 0 dve #12 (tensor_tensor)"). Returns -1. */
int nx_fail_prefix(nx_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Text from an input (a name, a key, a path) made safe to echo in a
 * one-line message: bytes below 0x20 and 0x7f become \n, \r, \t or \xNN,
 * and so does every byte that is not part of well-formed UTF-8 or that
 * encodes a C1 control (U+0080..U+009F), so no newline, ESC or terminal
 * control sequence reaches the reader. Printable text is copied unchanged.
 * At most `max` bytes of `s` are shown, then "..." (max 0: no limit but the
 * buffer's). Writes into out (size len >= 8, always NUL-terminated) and
 * returns out. */
const char *nx_msg_quote(const char *s, size_t max, char *out, size_t len);

/* The usual sizes: a name or key (64 bytes shown), a path (200). */
#define NX_QUOTE_NAME 64
#define NX_QUOTE_PATH 200
typedef struct nx_quoted {
    char s[4 * NX_QUOTE_PATH + 8];
} nx_quoted;
/* nx_msg_quote into q with the given limit; returns q->s. */
const char *nx_quote(nx_quoted *q, const char *s, size_t max);

#ifdef __cplusplus
}
#endif

#endif
