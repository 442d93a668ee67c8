#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int nx_fail(nx_error *err, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int nx_fail_prefix(nx_error *err, const char *fmt, ...) {
    if (!err) return -1;
    char prefix[NX_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* Joined in a buffer big enough for both, then cut to the message size. */
    char joined[2 * NX_ERROR_MAX + 2];
    size_t plen = strnlen(prefix, NX_ERROR_MAX - 1);
    size_t mlen = strnlen(err->msg, NX_ERROR_MAX - 1);
    memcpy(joined, prefix, plen);
    memcpy(joined + plen, ": ", 2);
    memcpy(joined + plen + 2, err->msg, mlen);
    joined[plen + 2 + mlen] = '\0';
    memcpy(err->msg, joined, NX_ERROR_MAX - 1);
    err->msg[NX_ERROR_MAX - 1] = '\0';
    return -1;
}
