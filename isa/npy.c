/* .npy read/write (contract: isa/npy.h).
 *
 * Format (numpy.lib.format, "NEP 1"): the magic "\x93NUMPY", a major and a
 * minor version byte, the header length (uint16 LE for 1.0, uint32 LE for 2.0
 * and 3.0), then the header: a Python dict literal with exactly the keys
 * 'descr', 'fortran_order' and 'shape', padded with spaces and ended by '\n'
 * so that the data starts on a 64-byte boundary. 3.0 differs from 2.0 only in
 * allowing UTF-8 in the header, which matters only for structured field names
 * none of ours use. The data follows: product(shape) elements in C order.
 *
 * The header is parsed by a small dedicated parser for exactly the literal
 * subset numpy writes (strings, True/False, tuples of ints, the one-field
 * structured descr list), never by pattern matching, so "'shape': (3)" (an
 * int, not a tuple) or a duplicate key is rejected the way numpy rejects it.
 *
 * The writer produces what numpy >= 1.24 writes for the same array
 * (sorted keys, spare room to grow shape[0] up to GROWTH_AXIS_MAX_DIGITS = 21
 * digits, space padding to ARRAY_ALIGN = 64), always format 1.0 (see
 * nx_npy_serialize for why 2.0 is never needed). */
#define _POSIX_C_SOURCE 200809L /* open/write/fsync/unlink/getpid */

#include "npy.h"

#include "bytes.h"
#include "fileio.h"
#include "strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
#define NPY_GROWTH_DIGITS 21
#define NPY_DICT_MAX 511 /* the longest header dict we write */
#define NPY_STR_MAX 64 /* longest string literal we keep (descrs, keys) */

/* ---- dtype <-> descr -------------------------------------------------- */

/* Plain descrs numpy writes for the types it has. One-byte types carry the
 * "not applicable" byte order '|'; we also accept '<' for them. */
static const struct {
    nx_dtype dt;
    const char *descr;
} plain_descrs[] = {
    {NX_DT_FP32, "<f4"},  {NX_DT_FP16, "<f2"},   {NX_DT_INT8, "|i1"},
    {NX_DT_UINT8, "|u1"}, {NX_DT_INT16, "<i2"},  {NX_DT_UINT16, "<u2"},
    {NX_DT_INT32, "<i4"}, {NX_DT_UINT32, "<u4"},
};

/* Types numpy lacks: a one-field structured type [('FIELD', 'RAW')]. */
static const struct {
    nx_dtype dt;
    const char *field;
    const char *raw;
} struct_descrs[] = {
    {NX_DT_BF16, "bf16", "<u2"},
    {NX_DT_FP8_E4M3, "fp8_e4m3", "|u1"},
    {NX_DT_FP8_E5M2, "fp8_e5m2", "|u1"},
};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Matches a plain descr string, also accepting '<' for a one-byte '|'. */
static int descr_matches(const char *found, const char *want) {
    if (strcmp(found, want) == 0) return 1;
    return want[0] == '|' && found[0] == '<' && strcmp(found + 1, want + 1) == 0;
}

/* ---- header parser ------------------------------------------------------ */

typedef struct hdr_parser {
    const char *name; /* file name for messages */
    const char *s;    /* header text (not NUL-terminated) */
    size_t len;
    size_t pos;
    size_t base; /* file offset of s[0], so messages give file byte offsets */
    nx_error *err;
} hdr_parser;

static void skip_ws(hdr_parser *p) {
    while (p->pos < p->len &&
           (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' ||
            p->s[p->pos] == '\r'))
        p->pos++;
}

/* "expected X, found 'c'" at the current position (whitespace skipped). */
static int expected(hdr_parser *p, const char *what) {
    size_t at = p->base + p->pos;
    if (p->pos >= p->len)
        return nx_fail(p->err, "%s: bad .npy header: expected %s at byte %zu, found the end of the header",
                       p->name, what, at);
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c >= 0x20 && c < 0x7f && c != '\'')
        return nx_fail(p->err, "%s: bad .npy header: expected %s at byte %zu, found '%c'", p->name,
                       what, at, c);
    return nx_fail(p->err, "%s: bad .npy header: expected %s at byte %zu, found byte 0x%02x", p->name,
                   what, at, c);
}

static int accept_char(hdr_parser *p, char c) {
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == c) {
        p->pos++;
        return 1;
    }
    return 0;
}

static int expect_char(hdr_parser *p, char c, const char *what) {
    if (accept_char(p, c)) return 0;
    return expected(p, what);
}

/* A Python string literal in single or double quotes, without escapes or
 * control characters (numpy never writes any in the parts we read). */
static int parse_string(hdr_parser *p, char out[NPY_STR_MAX], const char *what) {
    skip_ws(p);
    if (p->pos >= p->len || (p->s[p->pos] != '\'' && p->s[p->pos] != '"')) return expected(p, what);
    char quote = p->s[p->pos];
    size_t start = ++p->pos;
    while (p->pos < p->len && p->s[p->pos] != quote) {
        char c = p->s[p->pos];
        if (c == '\\')
            return nx_fail(p->err, "%s: bad .npy header: escape sequence in a string at byte %zu",
                           p->name, p->base + p->pos);
        if (c == '\n')
            return nx_fail(p->err, "%s: bad .npy header: unterminated string at byte %zu", p->name,
                           p->base + start - 1);
        /* Strings end up in messages, which must stay one printable line. */
        if ((unsigned char)c < 0x20 || c == 0x7f)
            return nx_fail(p->err, "%s: bad .npy header: control character 0x%02x in a string at byte %zu",
                           p->name, (unsigned char)c, p->base + p->pos);
        p->pos++;
    }
    if (p->pos >= p->len)
        return nx_fail(p->err, "%s: bad .npy header: unterminated string at byte %zu", p->name,
                       p->base + start - 1);
    size_t n = p->pos - start;
    p->pos++; /* closing quote */
    if (n >= NPY_STR_MAX)
        return nx_fail(p->err, "%s: bad .npy header: string at byte %zu is too long (%zu characters)",
                       p->name, p->base + start - 1, n);
    memcpy(out, p->s + start, n);
    out[n] = '\0';
    return 0;
}

/* Python True / False. */
static int parse_bool(hdr_parser *p, int *out) {
    skip_ws(p);
    size_t rest = p->len - p->pos;
    if (rest >= 4 && memcmp(p->s + p->pos, "True", 4) == 0) {
        p->pos += 4;
        *out = 1;
        return 0;
    }
    if (rest >= 5 && memcmp(p->s + p->pos, "False", 5) == 0) {
        p->pos += 5;
        *out = 0;
        return 0;
    }
    return expected(p, "True or False");
}

/* A non-negative decimal int (Python 2 headers may carry an 'L' suffix). */
static int parse_dim(hdr_parser *p, uint64_t *out) {
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == '-')
        return nx_fail(p->err, "%s: bad .npy header: negative dimension in shape at byte %zu", p->name,
                       p->base + p->pos);
    if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
        return expected(p, "a dimension (a non-negative integer)");
    size_t start = p->pos;
    uint64_t v = 0;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
        unsigned d = (unsigned)(p->s[p->pos] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return nx_fail(p->err, "%s: bad .npy header: dimension at byte %zu does not fit 64 bits",
                           p->name, p->base + start);
        v = v * 10 + d;
        p->pos++;
    }
    if (p->pos < p->len && p->s[p->pos] == 'L') p->pos++;
    *out = v;
    return 0;
}

/* A tuple of dims: "()", "(N,)", "(N, M)", "(N, M,)". "(N)" is an int in
 * Python, not a tuple, and is rejected as numpy rejects it. */
static int parse_shape(hdr_parser *p, uint32_t *ndims, uint64_t shape[NX_NPY_MAX_DIMS]) {
    if (expect_char(p, '(', "'(' starting the shape tuple") != 0) return -1;
    uint32_t n = 0;
    if (accept_char(p, ')')) {
        *ndims = 0;
        return 0;
    }
    for (;;) {
        uint64_t d = 0;
        if (parse_dim(p, &d) != 0) return -1;
        if (n == NX_NPY_MAX_DIMS)
            return nx_fail(p->err, "%s: shape has more than %d dimensions", p->name, NX_NPY_MAX_DIMS);
        shape[n++] = d;
        int comma = accept_char(p, ',');
        if (accept_char(p, ')')) {
            if (n == 1 && !comma)
                return nx_fail(p->err, "%s: bad .npy header: shape must be a tuple; '(N)' is an int, write '(N,)'",
                               p->name);
            break;
        }
        if (!comma) return expected(p, "',' or ')' in the shape tuple");
    }
    *ndims = n;
    return 0;
}

/* The descr: a string, or a list of (name, type) tuples. We keep the raw
 * text to name it in messages and decode only the forms in the tables. */
typedef struct parsed_descr {
    char text[NPY_STR_MAX * 2 + 16]; /* as written (trimmed), for messages */
    int structured;
    char plain[NPY_STR_MAX];  /* the string form */
    char field[NPY_STR_MAX];  /* structured: first field name ... */
    char raw[NPY_STR_MAX];    /* ... and type */
    uint32_t fields;          /* structured: number of fields */
    int field_has_shape;      /* a field carried a subarray shape */
} parsed_descr;

static int parse_descr(hdr_parser *p, parsed_descr *d) {
    memset(d, 0, sizeof *d);
    skip_ws(p);
    size_t start = p->pos;
    if (p->pos < p->len && p->s[p->pos] == '[') {
        p->pos++;
        d->structured = 1;
        while (!accept_char(p, ']')) {
            if (d->fields > 0 && expect_char(p, ',', "',' or ']' in the descr list") != 0) return -1;
            if (accept_char(p, ']')) break; /* trailing comma */
            char name[NPY_STR_MAX], type[NPY_STR_MAX];
            if (expect_char(p, '(', "'(' starting a (name, type) field") != 0) return -1;
            if (parse_string(p, name, "a field name string") != 0) return -1;
            if (expect_char(p, ',', "',' after the field name") != 0) return -1;
            if (parse_string(p, type, "a field type string") != 0) return -1;
            if (accept_char(p, ',')) {
                if (!accept_char(p, ')')) {
                    /* (name, type, shape): a subarray field; parse it for
                     * well-formedness, then reject the dtype below. */
                    uint32_t nd;
                    uint64_t sh[NX_NPY_MAX_DIMS];
                    if (parse_shape(p, &nd, sh) != 0) return -1;
                    d->field_has_shape = 1;
                    accept_char(p, ',');
                    if (expect_char(p, ')', "')' closing the field") != 0) return -1;
                }
            } else if (expect_char(p, ')', "')' closing the field") != 0) {
                return -1;
            }
            if (d->fields == 0) {
                memcpy(d->field, name, sizeof name);
                memcpy(d->raw, type, sizeof type);
            }
            d->fields++;
        }
    } else {
        if (parse_string(p, d->plain, "the descr (a string or a list of fields)") != 0) return -1;
    }
    size_t n = p->pos - start;
    if (n >= sizeof d->text) {
        n = sizeof d->text - 4;
        memcpy(d->text, p->s + start, n);
        memcpy(d->text + n, "...", 4);
    } else {
        memcpy(d->text, p->s + start, n);
        d->text[n] = '\0';
    }
    /* Messages print it on one line. */
    for (char *c = d->text; *c; c++)
        if (*c == '\n' || *c == '\r' || *c == '\t') *c = ' ';
    return 0;
}

/* NumPy's 64-bit defaults (float64, int64) are what users bring most: the
 * refusal gives the NumPy call that makes the file one nxsim reads (a
 * decision: no silent narrowing; docs/parts/cli.md, "Input arrays"). */
static int wide_default(const char *name, const char *descr, nx_error *err) {
    static const struct {
        const char *descr, *numpy, *to, *nx;
    } wide[] = {{"<f8", "float64", "float32", "fp32"}, {"<i8", "int64", "int32", "int32"},
                {"<u8", "uint64", "uint32", "uint32"}};
    for (size_t i = 0; i < COUNT_OF(wide); i++) {
        if (strcmp(descr, wide[i].descr) != 0) continue;
        const char *f = strpbrk(name, "'\\") ? "FILE" : name; /* a Python literal as typed */
        return nx_fail(err, "%s: dtype %s ('%s') is not an nxsim type; convert it to %s with NumPy: "
                            "np.save('%s', np.load('%s').astype(np.%s))",
                       name, wide[i].numpy, descr, wide[i].nx, f, f, wide[i].to);
    }
    return 0;
}

static int descr_to_dtype(const char *name, const parsed_descr *d, nx_dtype *out, nx_error *err) {
    if (!d->structured) {
        if (wide_default(name, d->plain, err) != 0) return -1;
        for (size_t i = 0; i < COUNT_OF(plain_descrs); i++)
            if (descr_matches(d->plain, plain_descrs[i].descr)) {
                *out = plain_descrs[i].dt;
                return 0;
            }
        if (d->plain[0] == '>')
            return nx_fail(err, "%s: big-endian dtype '%s' is not supported (little-endian only)", name,
                           d->plain);
        return nx_fail(err, "%s: unsupported dtype '%s'", name, d->plain);
    }
    if (d->fields == 1 && !d->field_has_shape)
        for (size_t i = 0; i < COUNT_OF(struct_descrs); i++)
            if (strcmp(d->field, struct_descrs[i].field) == 0 &&
                descr_matches(d->raw, struct_descrs[i].raw)) {
                *out = struct_descrs[i].dt;
                return 0;
            }
    if (d->fields == 1 && d->raw[0] == '>')
        return nx_fail(err, "%s: big-endian dtype %s is not supported (little-endian only)", name, d->text);
    return nx_fail(err, "%s: unsupported dtype %s", name, d->text);
}

typedef struct parsed_header {
    parsed_descr descr;
    int fortran_order;
    uint32_t ndims;
    uint64_t shape[NX_NPY_MAX_DIMS];
} parsed_header;

static int parse_header(hdr_parser *p, parsed_header *h) {
    enum { K_DESCR = 1, K_FORTRAN = 2, K_SHAPE = 4 };
    unsigned seen = 0;
    if (expect_char(p, '{', "'{' starting the header dict") != 0) return -1;
    for (;;) {
        if (accept_char(p, '}')) break;
        char key[NPY_STR_MAX];
        skip_ws(p);
        size_t key_at = p->base + p->pos;
        if (parse_string(p, key, "a key string or '}'") != 0) return -1;
        if (expect_char(p, ':', "':' after the key") != 0) return -1;
        unsigned bit;
        int rc;
        if (strcmp(key, "descr") == 0) {
            bit = K_DESCR;
            rc = parse_descr(p, &h->descr);
        } else if (strcmp(key, "fortran_order") == 0) {
            bit = K_FORTRAN;
            rc = parse_bool(p, &h->fortran_order);
        } else if (strcmp(key, "shape") == 0) {
            bit = K_SHAPE;
            rc = parse_shape(p, &h->ndims, h->shape);
        } else {
            return nx_fail(p->err, "%s: bad .npy header: unexpected key '%s' at byte %zu", p->name, key,
                           key_at);
        }
        if (seen & bit)
            return nx_fail(p->err, "%s: bad .npy header: duplicate key '%s' at byte %zu", p->name, key,
                           key_at);
        if (rc != 0) return -1;
        seen |= bit;
        if (accept_char(p, '}')) break;
        if (expect_char(p, ',', "',' or '}' after a value") != 0) return -1;
    }
    skip_ws(p);
    if (p->pos != p->len)
        return nx_fail(p->err, "%s: bad .npy header: unexpected text after the dict at byte %zu", p->name,
                       p->base + p->pos);
    static const char *const names[] = {"descr", "fortran_order", "shape"};
    for (unsigned i = 0; i < 3; i++)
        if (!(seen & (1u << i)))
            return nx_fail(p->err, "%s: bad .npy header: missing key '%s'", p->name, names[i]);
    return 0;
}

/* ---- sizes ---------------------------------------------------------------- */

/* product(shape) * itemsize, or -1 if it does not fit 64 bits (a zero
 * dimension makes the product 0 however large the others are). */
static int shape_bytes(uint32_t ndims, const uint64_t *shape, uint64_t itemsize, uint64_t *elems,
                       uint64_t *bytes) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < ndims; i++)
        if (shape[i] == 0) {
            *elems = 0;
            *bytes = 0;
            return 0;
        }
    for (uint32_t i = 0; i < ndims; i++) {
        if (n > UINT64_MAX / shape[i]) return -1;
        n *= shape[i];
    }
    if (itemsize != 0 && n > UINT64_MAX / itemsize) return -1;
    *elems = n;
    *bytes = n * itemsize;
    return 0;
}

uint64_t nx_npy_elems(const nx_npy *a) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < a->ndims && i < NX_NPY_MAX_DIMS; i++) n *= a->shape[i];
    return n;
}

void nx_npy_free(nx_npy *a) {
    if (!a) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* ---- parse ---------------------------------------------------------------- */

int nx_npy_parse(const char *name, const uint8_t *buf, size_t len, nx_npy *out, nx_error *err) {
    memset(out, 0, sizeof *out);
    nx_quoted qname; /* a name (a path from an op file) is echoed in every message */
    name = nx_quote(&qname, name ? name : "<npy>", NX_QUOTE_PATH);
    if (len < NPY_MAGIC_LEN || memcmp(buf, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return nx_fail(err, "%s: not a .npy file (bad magic)", name);
    if (len < 8) return nx_fail(err, "%s: truncated: file ends inside the .npy version bytes", name);
    unsigned major = buf[6], minor = buf[7];
    if (major < 1 || major > 3 || minor != 0)
        return nx_fail(err, "%s: unsupported .npy format version %u.%u (1.0, 2.0 and 3.0 are supported)",
                       name, major, minor);
    size_t prefix = major == 1 ? 10 : 12;
    if (len < prefix)
        return nx_fail(err, "%s: truncated: file ends inside the .npy header length (%zu bytes)", name, len);
    uint64_t hlen = major == 1 ? (uint64_t)nx_load_le16(buf + 8) : (uint64_t)nx_load_le32(buf + 8);
    if (hlen > len - prefix)
        return nx_fail(err, "%s: truncated: header says %" PRIu64 " header bytes, file has %zu", name, hlen,
                       len - prefix);

    parsed_header h;
    memset(&h, 0, sizeof h);
    hdr_parser p = {name, (const char *)buf + prefix, (size_t)hlen, 0, prefix, err};
    if (parse_header(&p, &h) != 0) return -1;

    nx_dtype dt = NX_DT_FP32;
    if (descr_to_dtype(name, &h.descr, &dt, err) != 0) return -1;
    if (h.fortran_order)
        return nx_fail(err, "%s: fortran_order True is not supported (C order only)", name);

    uint64_t elems = 0, nbytes = 0;
    if (shape_bytes(h.ndims, h.shape, nx_dtype_size(dt), &elems, &nbytes) != 0)
        return nx_fail(err, "%s: shape is too large (its byte size does not fit 64 bits)", name);
    size_t data_off = prefix + (size_t)hlen;
    size_t have = len - data_off;
    if (nbytes > have)
        return nx_fail(err, "%s: truncated: header says %" PRIu64 " data bytes, file has %zu", name, nbytes,
                       have);
    if (nbytes < have)
        return nx_fail(err, "%s: trailing data: header says %" PRIu64 " data bytes, file has %zu", name,
                       nbytes, have);

    /* malloc(0) may return NULL: keep data non-NULL for empty arrays. */
    uint8_t *data = malloc(nbytes ? (size_t)nbytes : 1);
    if (!data) return nx_fail(err, "%s: out of memory for %" PRIu64 " data bytes", name, nbytes);
    if (nbytes) memcpy(data, buf + data_off, (size_t)nbytes);
    out->dtype = dt;
    out->ndims = h.ndims;
    memcpy(out->shape, h.shape, sizeof out->shape);
    out->data = data;
    out->nbytes = nbytes;
    return 0;
}

int nx_npy_load_max(const char *path, uint64_t max, const char *what, nx_npy *out, nx_error *err) {
    memset(out, 0, sizeof *out);
    uint8_t *buf = NULL;
    size_t len = 0;
    if (nx_read_file_max(path, max, what, &buf, &len, err) != 0) return -1;
    int rc = nx_npy_parse(path, buf, len, out, err);
    free(buf);
    return rc;
}

int nx_npy_load(const char *path, nx_npy *out, nx_error *err) {
    return nx_npy_load_max(path, NX_READ_MAX_DEFAULT, "the read limit", out, err);
}

/* ---- serialize -------------------------------------------------------------- */

int nx_npy_serialize(const nx_npy *a, uint8_t **out, size_t *len, nx_error *err) {
    *out = NULL;
    *len = 0;
    if (!nx_dtype_is_valid((int)a->dtype))
        return nx_fail(err, "cannot write .npy: invalid dtype code %d", (int)a->dtype);
    if (a->ndims > NX_NPY_MAX_DIMS)
        return nx_fail(err, "cannot write .npy: %u dimensions (at most %d)", a->ndims, NX_NPY_MAX_DIMS);
    uint64_t elems = 0, nbytes = 0;
    if (shape_bytes(a->ndims, a->shape, nx_dtype_size(a->dtype), &elems, &nbytes) != 0)
        return nx_fail(err, "cannot write .npy: shape is too large");
    if (nbytes != a->nbytes)
        return nx_fail(err, "cannot write .npy: shape needs %" PRIu64 " data bytes, array has %" PRIu64,
                       nbytes, a->nbytes);
    if (nbytes && !a->data) return nx_fail(err, "cannot write .npy: array has no data");

    /* The dict, as numpy writes it (keys sorted, repr of each value). */
    nx_strbuf t = NX_STRBUF_INIT;
    nx_sb_puts(&t, "{'descr': ");
    int found = 0;
    for (size_t i = 0; i < COUNT_OF(plain_descrs) && !found; i++)
        if (plain_descrs[i].dt == a->dtype) {
            nx_sb_printf(&t, "'%s'", plain_descrs[i].descr);
            found = 1;
        }
    for (size_t i = 0; i < COUNT_OF(struct_descrs) && !found; i++)
        if (struct_descrs[i].dt == a->dtype) {
            nx_sb_printf(&t, "[('%s', '%s')]", struct_descrs[i].field, struct_descrs[i].raw);
            found = 1;
        }
    nx_sb_puts(&t, ", 'fortran_order': False, 'shape': (");
    for (uint32_t i = 0; i < a->ndims; i++) nx_sb_printf(&t, i ? ", %" PRIu64 : "%" PRIu64, a->shape[i]);
    nx_sb_puts(&t, a->ndims == 1 ? ",), }" : "), }");
    if (a->ndims > 0) {
        /* numpy leaves room to grow shape[0] in place. */
        char digits[32];
        int nd = snprintf(digits, sizeof digits, "%" PRIu64, a->shape[0]);
        for (int i = nd; i < NPY_GROWTH_DIGITS; i++) nx_sb_putc(&t, ' ');
    }
    /* Version 1.0: its uint16 header length always suffices (8 dims of at
     * most 20 digits need about 300 bytes). Version 2.0 exists for headers
     * longer than 65535 bytes, which only huge structured dtypes produce; we
     * never write one. */
    if (t.failed || t.len > NPY_DICT_MAX) {
        const char *why = t.failed ? "out of memory" : "header too long";
        nx_sb_free(&t);
        return nx_fail(err, "cannot write .npy: %s", why);
    }
    _Static_assert(NPY_DICT_MAX + NPY_ALIGN < 0xffff, "the header length fits .npy 1.0");
    const size_t prefix = 10;
    size_t hlen = t.len + 1; /* + '\n' */
    size_t pad = NPY_ALIGN - (prefix + hlen) % NPY_ALIGN; /* 1..64, as numpy pads */
    size_t head = prefix + hlen + pad;
    if (nbytes > SIZE_MAX - head) {
        nx_sb_free(&t);
        return nx_fail(err, "cannot write .npy: array too large");
    }
    size_t total = head + (size_t)nbytes;
    uint8_t *buf = malloc(total);
    if (!buf) {
        nx_sb_free(&t);
        return nx_fail(err, "cannot write .npy: out of memory for %zu bytes", total);
    }
    memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
    size_t field = hlen + pad;
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (uint8_t)field;
    buf[9] = (uint8_t)(field >> 8);
    memcpy(buf + prefix, t.s, t.len);
    memset(buf + prefix + t.len, ' ', pad);
    nx_sb_free(&t);
    buf[head - 1] = '\n';
    if (nbytes) memcpy(buf + head, a->data, (size_t)nbytes);
    *out = buf;
    *len = total;
    return 0;
}

/* ---- atomic save ------------------------------------------------------------ */

int nx_npy_save(const char *path, const nx_npy *a, nx_error *err) {
    uint8_t *buf = NULL;
    size_t len = 0;
    if (nx_npy_serialize(a, &buf, &len, err) != 0) return nx_fail_prefix(err, "%s", path);
    int rc = nx_write_file_atomic(path, buf, len, err);
    free(buf);
    return rc;
}
