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

/* Length of the well-formed UTF-8 sequence at s (1..4), or 0 if the bytes
 * there are not one (overlong forms, surrogates, > U+10FFFF, C1 controls
 * and truncated sequences count as not). */
static size_t utf8_seq(const unsigned char *s) {
    unsigned c = s[0];
    size_t n;
    unsigned min;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        min = 0xa0; /* U+0080..U+009F are C1 controls: escaped */
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    unsigned cp = c & (0x3f >> (n - 1));
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0; /* also stops at the NUL */
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

const char *nx_msg_quote(const char *s, size_t max, char *out, size_t len) {
    if (!out || len == 0) return "";
    if (!s) s = "(null)";
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0, i = 0;
    /* room for the longest escape ("\\xNN", 4) or "..." and the NUL */
    while (p[i] != '\0') {
        if (max && i >= max) break;
        unsigned char c = p[i];
        size_t n = c >= 0x20 && c < 0x7f ? 1 : c >= 0x80 ? utf8_seq(p + i) : 0;
        size_t need = n ? n : 4;
        if (o + need + 4 > len) break;
        if (n) {
            memcpy(out + o, p + i, n);
            o += n;
            i += n;
            continue;
        }
        const char *esc = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
        if (esc) {
            memcpy(out + o, esc, 2);
            o += 2;
        } else {
            snprintf(out + o, 5, "\\x%02x", c);
            o += 4;
        }
        i++;
    }
    if (p[i] != '\0' && len >= 4) {
        if (o + 4 > len) o = len - 4;
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    return out;
}

const char *nx_quote(nx_quoted *q, const char *s, size_t max) {
    return nx_msg_quote(s, max, q->s, sizeof q->s);
}
