/* The .nxs assembler: text -> nx_program, one statement per line, one pass.
 * Syntax, canonical form and messages: docs/parts/assembly.md.
 *
 * Every per-opcode rule (mnemonics, slot names, required slots, allowed
 * operand kinds, parameters, flags, integer parameter names) is read from the
 * opcode table, so adding a row to isa/opcodes.def needs no change here.
 *
 * What it builds is already in the encoder's canonical form (isa/encode.c):
 * fields an operand kind does not use are zero, immediates hold their value
 * converted to their dtype (NaN as the canonical quiet NaN of its sign),
 * patterns have integer dtypes, increments are >= 1, the tensor table is
 * valid against .hbm. So a program nx_assemble returns always encodes.
 *
 * Errors read "FILE:LINE:COL: MESSAGE" (1-based, COL at the offending token);
 * the first error stops assembly. */
#include "asm.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "dtype.h"
#include "encode.h"
#include "fileio.h"
#include "insn.h"
#include "opcodes.h"
#include "isa/intmath.h"

#define ASM_PARTITIONS NX_MAX_PARTITIONS
/* Placement of tensors without @OFFSET, and the default .hbm rounding. */
#define ASM_TENSOR_ALIGN 64u
#define ASM_MAX_TENSORS NX_NXB_MAX_TENSORS
/* Longest piece of input text quoted in a message. */
#define ASM_QUOTE_MAX 32
/* Machine names: 1..15 characters (nx_program.machine is 16 bytes). */
#define ASM_MACHINE_MAX ((int)sizeof(((nx_program *)0)->machine) - 1)

/* Operand kind prefixes, indexed by nx_operand_kind (immediates use '#'). */
static const char *const kind_names[NX_OPK_COUNT] = {"none", "hbm", "sbuf", "psum", "imm", "pat"};

enum { SEEN_MACHINE = 1, SEEN_CORES = 2, SEEN_SEMAPHORES = 4, SEEN_HBM = 8 };

typedef struct asm_state {
    const char *file;
    nx_error *err;
    nx_program *prog;
    /* the current line: [line, end) without its '\n'; p is the cursor */
    const char *line;
    const char *end;
    const char *p;
    size_t line_no;
    /* directive state */
    unsigned seen;          /* SEEN_* bits: header directives may appear once */
    uint32_t core;          /* current .core */
    int engine;             /* current .engine, -1 before one (and after .core) */
    uint64_t next_offset;   /* where a tensor without @OFFSET goes */
    uint64_t hbm;           /* explicit .hbm value ... */
    size_t hbm_line, hbm_col; /* ... and where it was written */
    uint32_t src;           /* 1 + the .src location following instructions carry, 0 none */
    nx_insn_ref *order;     /* nx_assemble_ordered: the instructions in text order ... */
    uint32_t order_count, order_capacity; /* ... (NULL: not recorded) */
    int record_order;
} asm_state;

/* ---- characters ---- */

static int is_space(int c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_word(int c) { return is_alpha(c) || is_digit(c); }
static int digit_value(int c, unsigned base) {
    int v = is_digit(c) ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : -1;
    return v >= 0 && (unsigned)v < base ? v : -1;
}

/* Character at `at`, or -1 at the end of the line (a ';' comment ends it). */
static int char_at(const asm_state *s, const char *at) {
    return at < s->end && *at != ';' ? (unsigned char)*at : -1;
}
static int peek(const asm_state *s) { return char_at(s, s->p); }
static int at_end(const asm_state *s) { return peek(s) < 0; }
static void skip_space(asm_state *s) {
    while (peek(s) >= 0 && is_space(peek(s))) s->p++;
}
/* Length of the run of word characters (and '.' if `dots`) at `at`. */
static size_t word_len(const asm_state *s, const char *at, int dots) {
    size_t n = 0;
    for (int c; (c = char_at(s, at + n)) >= 0 && (is_word(c) || (dots && c == '.'));) n++;
    return n;
}
static int quote_len(size_t n) { return n > ASM_QUOTE_MAX ? ASM_QUOTE_MAX : (int)n; }
static const char *quote_more(size_t n) { return n > ASM_QUOTE_MAX ? "..." : ""; }

/* ---- messages ---- */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail_at(asm_state *s, const char *at, const char *fmt, ...) {
    char msg[NX_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return nx_fail(s->err, "%s:%zu:%zu: %s", s->file, s->line_no, (size_t)(at - s->line) + 1, msg);
}

/* What is at `at`, for "found ...": the word or number there, one
 * punctuation character, "whitespace", "end of line" or a byte value. */
typedef struct found_text {
    char s[ASM_QUOTE_MAX + 16];
} found_text;

static found_text found(const asm_state *s, const char *at) {
    found_text f;
    int c = char_at(s, at);
    size_t n = 0;
    if (c >= 0 && (is_word(c) || c == '.' || c == '-' || c == '+')) {
        n = 1;
        n += word_len(s, at + 1, 1);
    }
    if (c < 0)
        snprintf(f.s, sizeof f.s, "end of line");
    else if (is_space(c))
        snprintf(f.s, sizeof f.s, "whitespace");
    else if (n > 0)
        snprintf(f.s, sizeof f.s, "'%.*s%s'", quote_len(n), at, quote_more(n));
    else if (c > 0x20 && c < 0x7f)
        snprintf(f.s, sizeof f.s, "'%c'", c);
    else
        snprintf(f.s, sizeof f.s, "byte 0x%02x", (unsigned)c);
    return f;
}

static int expected(asm_state *s, const char *at, const char *what) {
    return fail_at(s, at, "expected %s, found %s", what, found(s, at).s);
}

/* "INTRO (a, b, c)" from a name function over codes [0, count): the
 * "expected ..." text for a choice among named values. */
static void choices(char *buf, size_t len, const char *intro, const char *(*name)(unsigned),
                    unsigned count) {
    size_t used = 0;
    for (unsigned i = 0; i <= count && used < len; i++) {
        int n = i == 0       ? snprintf(buf, len, "%s (%s", intro, name(0))
                : i == count ? snprintf(buf + used, len - used, ")")
                             : snprintf(buf + used, len - used, ", %s", name(i));
        if (n < 0) break;
        used += (size_t)n;
    }
}
static const char *engine_name_u(unsigned i) { return nx_engine_name((nx_engine)i); }
static const char *alu_name_u(unsigned i) { return nx_alu_name((nx_alu_op)i); }
static const char *act_name_u(unsigned i) { return nx_act_name((nx_act_func)i); }
static const char *role_name_u(unsigned i) { return nx_role_name((nx_tensor_role)i); }

/* ---- tokens ---- */

static int accept(asm_state *s, int c) {
    if (peek(s) != c) return 0;
    s->p++;
    return 1;
}
static int expect_char(asm_state *s, char c) {
    if (accept(s, (unsigned char)c)) return 0;
    char what[8];
    snprintf(what, sizeof what, "'%c'", c);
    return expected(s, s->p, what);
}
/* Between arguments: whitespace, unless the line ends here. */
static int separator(asm_state *s) {
    if (!at_end(s) && !is_space(peek(s))) return expected(s, s->p, "whitespace");
    skip_space(s);
    return 0;
}
static int end_of_line(asm_state *s) {
    skip_space(s);
    return at_end(s) ? 0 : expected(s, s->p, "end of line");
}

/* Copies the word of `n` characters at `at` into buf (NUL-terminated);
 * returns 0, or -1 if it does not fit (so it names nothing). */
static int word_copy(char *buf, size_t len, const char *at, size_t n) {
    if (n >= len) return -1;
    memcpy(buf, at, n);
    buf[n] = '\0';
    return 0;
}

/* A word of [A-Za-z0-9_] naming one of `count` things; *code gets its
 * index. `what` is the "expected ..." text. */
static int parse_name(asm_state *s, int (*lookup)(const char *, unsigned *), const char *what,
                      unsigned *code) {
    char buf[64];
    size_t n = word_len(s, s->p, 0);
    if (n == 0 || word_copy(buf, sizeof buf, s->p, n) != 0 || lookup(buf, code) != 0)
        return expected(s, s->p, what);
    s->p += n;
    return 0;
}
static int lookup_dtype(const char *n, unsigned *c) {
    nx_dtype v = NX_DT_FP32;
    if (nx_dtype_from_name(n, &v) != 0) return -1;
    *c = (unsigned)v;
    return 0;
}
static int lookup_engine(const char *n, unsigned *c) {
    nx_engine v = NX_ENG_PE;
    if (nx_engine_from_name(n, &v) != 0) return -1;
    *c = (unsigned)v;
    return 0;
}
static int lookup_alu(const char *n, unsigned *c) {
    nx_alu_op v = NX_ALU_BYPASS;
    if (nx_alu_from_name(n, &v) != 0) return -1;
    *c = (unsigned)v;
    return 0;
}
static int lookup_act(const char *n, unsigned *c) {
    nx_act_func v = NX_ACT_IDENTITY;
    if (nx_act_from_name(n, &v) != 0) return -1;
    *c = (unsigned)v;
    return 0;
}
static int lookup_role(const char *n, unsigned *c) {
    nx_tensor_role v = NX_ROLE_INPUT;
    if (nx_role_from_name(n, &v) != 0) return -1;
    *c = (unsigned)v;
    return 0;
}

static int parse_dtype(asm_state *s, uint8_t *dtype) {
    unsigned code = 0;
    if (parse_name(s, lookup_dtype, "a dtype (fp32, bf16, ...)", &code) != 0) return -1;
    *dtype = (uint8_t)code;
    return 0;
}

/* ---- integers ---- */

/* An integer literal: optional '-', then decimal digits or 0x hex digits,
 * not followed by a word character or '.'. The magnitude saturates at
 * UINT64_MAX with `overflow` set; the caller range-checks. */
typedef struct int_lit {
    const char *at;
    size_t len;
    int neg;
    int overflow;
    uint64_t mag;
} int_lit;

static int scan_int(asm_state *s, int_lit *l) {
    const char *q = s->p;
    memset(l, 0, sizeof *l);
    l->at = q;
    if (char_at(s, q) == '-') {
        l->neg = 1;
        q++;
    }
    unsigned base = 10;
    if (char_at(s, q) == '0' && (char_at(s, q + 1) == 'x' || char_at(s, q + 1) == 'X')) {
        base = 16;
        q += 2;
    }
    const char *digits = q;
    for (int d; (d = digit_value(char_at(s, q), base)) >= 0; q++) {
        if (l->mag > (UINT64_MAX - (unsigned)d) / base)
            l->overflow = 1;
        else
            l->mag = l->mag * base + (unsigned)d;
    }
    int next = char_at(s, q);
    /* "A..B" (a wait's semaphore span) ends A at the first '.' */
    if (q == digits || (next >= 0 && (is_word(next) || (next == '.' && char_at(s, q + 1) != '.'))))
        return expected(s, l->at, "an integer");
    l->len = (size_t)(q - l->at);
    s->p = q;
    return 0;
}

static int out_of_range(asm_state *s, const int_lit *l, const char *what, const char *range) {
    return fail_at(s, l->at, "%s %.*s%s out of range (%s)", what, quote_len(l->len), l->at,
                   quote_more(l->len), range);
}

static int parse_uint(asm_state *s, const char *what, uint64_t min, uint64_t max, uint64_t *out) {
    int_lit l;
    if (scan_int(s, &l) != 0) return -1;
    if (l.overflow || (l.neg && l.mag != 0) || l.mag < min || l.mag > max) {
        char range[48];
        snprintf(range, sizeof range, "%llu..%llu", (unsigned long long)min,
                 (unsigned long long)max);
        return out_of_range(s, &l, what, range);
    }
    *out = l.mag;
    return 0;
}

static int parse_sint(asm_state *s, const char *what, int64_t min, int64_t max, int64_t *out) {
    int_lit l;
    if (scan_int(s, &l) != 0) return -1;
    const uint64_t min_mag = (uint64_t)INT64_MAX + 1; /* |INT64_MIN| */
    int64_t v = 0;
    int ok = !l.overflow && (l.neg ? l.mag <= min_mag : l.mag <= (uint64_t)INT64_MAX);
    if (ok) {
        if (!l.neg)
            v = (int64_t)l.mag;
        else if (l.mag == min_mag)
            v = INT64_MIN;
        else
            v = -(int64_t)l.mag;
        ok = v >= min && v <= max;
    }
    if (!ok) {
        char range[48];
        snprintf(range, sizeof range, "%lld..%lld", (long long)min, (long long)max);
        return out_of_range(s, &l, what, range);
    }
    *out = v;
    return 0;
}

/* ---- operands ---- */

/* {S0:C0,S1:C1,...}: up to NX_MAX_FREE_DIMS dims, outermost first. */
static int parse_dims(asm_state *s, nx_operand *op) {
    if (expect_char(s, '{') != 0) return -1;
    if (accept(s, '}')) return 0;
    for (;;) {
        if (op->ndims == NX_MAX_FREE_DIMS)
            return fail_at(s, s->p, "too many free dims (max %d)", NX_MAX_FREE_DIMS);
        int64_t stride;
        uint64_t count;
        if (parse_sint(s, "stride", INT32_MIN, INT32_MAX, &stride) != 0 ||
            expect_char(s, ':') != 0 || parse_uint(s, "count", 1, UINT32_MAX, &count) != 0)
            return -1;
        op->stride[op->ndims] = (int32_t)stride;
        op->count[op->ndims] = (uint32_t)count;
        op->ndims++;
        if (accept(s, '}')) return 0;
        if (!accept(s, ',')) return expected(s, s->p, "',' or '}'");
    }
}

/* SBUF/PSUM: [P0:P1] — partitions P0 .. P1-1. */
static int parse_partition_range(asm_state *s, nx_operand *op) {
    if (expect_char(s, '[') != 0) return -1;
    const char *at = s->p;
    uint64_t p0, p1;
    if (parse_uint(s, "partition", 0, UINT64_MAX, &p0) != 0 || expect_char(s, ':') != 0 ||
        parse_uint(s, "partition", 0, UINT64_MAX, &p1) != 0)
        return -1;
    if (p1 > ASM_PARTITIONS)
        return fail_at(s, at, "partition range %llu:%llu exceeds %u", (unsigned long long)p0,
                       (unsigned long long)p1, ASM_PARTITIONS);
    if (p0 >= p1)
        return fail_at(s, at, "partition range %llu:%llu is empty", (unsigned long long)p0,
                       (unsigned long long)p1);
    op->start_partition = (uint8_t)p0;
    op->partition_count = (uint8_t)(p1 - p0);
    return expect_char(s, ']');
}

static int parse_partition_count(asm_state *s, nx_operand *op) {
    uint64_t n;
    if (parse_uint(s, "partition count", 1, ASM_PARTITIONS, &n) != 0) return -1;
    op->partition_count = (uint8_t)n;
    return 0;
}

/* HBM offset after '@': BYTES, TENSOR or TENSOR+BYTES. */
static int parse_hbm_offset(asm_state *s, uint64_t *offset) {
    int c = peek(s);
    if (c >= 0 && (is_digit(c) || c == '-'))
        return parse_uint(s, "offset", 0, UINT64_MAX, offset);
    if (c < 0 || !is_alpha(c)) return expected(s, s->p, "an offset or a tensor name");
    const char *at = s->p;
    size_t n = word_len(s, at, 1);
    char name[NX_TENSOR_NAME_MAX];
    int index = word_copy(name, sizeof name, at, n) == 0 ? nx_program_find_tensor(s->prog, name) : -1;
    if (index < 0)
        return fail_at(s, at, "unknown tensor '%.*s%s'", quote_len(n), at, quote_more(n));
    s->p += n;
    uint64_t base = s->prog->tensors[index].offset, extra = 0;
    if (accept(s, '+')) {
        const char *extra_at = s->p;
        if (parse_uint(s, "offset", 0, UINT64_MAX, &extra) != 0) return -1;
        if (extra > UINT64_MAX - base)
            return fail_at(s, extra_at, "offset of tensor '%s' (%llu) + %llu overflows 64 bits",
                           name, (unsigned long long)base, (unsigned long long)extra);
    }
    *offset = base + extra;
    return 0;
}

/* A float literal: [-]inf, [-]nan, or [-]DIGITS[.DIGITS][e[+-]DIGITS]
 * (also [-].DIGITS...); or an integer in 0x hex. */
static int scan_real(asm_state *s, double *v) {
    const char *start = s->p, *q = s->p;
    int neg = char_at(s, q) == '-';
    if (neg) q++;
    size_t w = word_len(s, q, 0);
    if ((w == 3 && memcmp(q, "inf", 3) == 0) || (w == 3 && memcmp(q, "nan", 3) == 0)) {
        double x = q[0] == 'i' ? INFINITY : NAN;
        q += 3;
        if (char_at(s, q) == '.') return expected(s, start, "a number");
        *v = neg ? -x : x;
        s->p = q;
        return 0;
    }
    if (char_at(s, q) == '0' && (char_at(s, q + 1) == 'x' || char_at(s, q + 1) == 'X')) {
        int_lit l;
        if (scan_int(s, &l) != 0) return -1;
        if (l.overflow) return out_of_range(s, &l, "immediate", "exceeds 64 bits");
        *v = neg ? -(double)l.mag : (double)l.mag;
        return 0;
    }
    size_t digits = 0;
    for (; char_at(s, q) >= 0 && is_digit(char_at(s, q)); q++) digits++;
    if (char_at(s, q) == '.')
        for (q++; char_at(s, q) >= 0 && is_digit(char_at(s, q)); q++) digits++;
    if (digits > 0 && (char_at(s, q) == 'e' || char_at(s, q) == 'E')) {
        const char *e = q + 1;
        if (char_at(s, e) == '+' || char_at(s, e) == '-') e++;
        if (char_at(s, e) >= 0 && is_digit(char_at(s, e))) {
            while (char_at(s, e) >= 0 && is_digit(char_at(s, e))) e++;
            q = e;
        }
    }
    int next = char_at(s, q);
    if (digits == 0 || (next >= 0 && (is_word(next) || next == '.')))
        return expected(s, start, "a number");
    char buf[128];
    if (word_copy(buf, sizeof buf, start, (size_t)(q - start)) != 0)
        return fail_at(s, start, "number too long (max %zu characters)", sizeof buf - 1);
    /* strtod rounds correctly (glibc); overflow gives +-HUGE_VAL = +-inf and
     * underflow a subnormal or zero, both fine: the dtype conversion follows. */
    *v = strtod(buf, NULL);
    s->p = q;
    return 0;
}

/* #VALUE[:DTYPE]. The value is converted as a store to DTYPE then a load
 * would (floats round, e4m3 saturates), except that integer dtypes refuse
 * values that are not integers or not in range rather than round or
 * saturate them. NaN becomes the canonical quiet NaN of its sign. */
static int parse_imm(asm_state *s, nx_operand *op) {
    s->p++; /* '#' */
    const char *vat = s->p;
    double v = 0.0;
    if (scan_real(s, &v) != 0) return -1;
    size_t vlen = (size_t)(s->p - vat);
    uint8_t dt = NX_DT_FP32;
    if (accept(s, ':') && parse_dtype(s, &dt) != 0) return -1;
    const char *dname = nx_dtype_name((nx_dtype)dt);
    if (nx_dtype_is_float((nx_dtype)dt)) {
        if (isnan(v)) {
            v = nx_f64_from_bits(signbit(v) ? 0xfff8000000000000ull : 0x7ff8000000000000ull);
        } else {
            unsigned char buf[8];
            nx_dtype_store((nx_dtype)dt, buf, v);
            v = nx_dtype_load((nx_dtype)dt, buf);
        }
    } else {
        if (isnan(v) || (isfinite(v) && v != floor(v)))
            return fail_at(s, vat, "immediate %.*s%s is not an integer (%s)", quote_len(vlen), vat,
                           quote_more(vlen), dname);
        int bits = 8 * (int)nx_dtype_size((nx_dtype)dt);
        double lo = nx_dtype_is_signed_int((nx_dtype)dt) ? -ldexp(1.0, bits - 1) : 0.0;
        double hi = nx_dtype_is_signed_int((nx_dtype)dt) ? ldexp(1.0, bits - 1) - 1 : ldexp(1.0, bits) - 1;
        if (!(v >= lo && v <= hi))
            return fail_at(s, vat, "immediate %.*s%s out of range for %s (%.0f..%.0f)",
                           quote_len(vlen), vat, quote_more(vlen), dname, lo, hi);
        v += 0.0; /* -0 -> +0, as the store/load round trip gives */
    }
    op->kind = NX_OPK_IMM;
    op->dtype = dt;
    op->partition_count = 1;
    op->imm = v;
    return 0;
}

/* One operand: sbuf:/psum:/hbm:/pat: access pattern or #immediate. */
static int parse_operand(asm_state *s, nx_operand *op) {
    memset(op, 0, sizeof *op);
    if (peek(s) == '#') return parse_imm(s, op);
    size_t n = word_len(s, s->p, 0);
    unsigned kind = NX_OPK_COUNT;
    for (unsigned k = 0; k < NX_OPK_COUNT; k++)
        if (k != NX_OPK_NONE && k != NX_OPK_IMM && strlen(kind_names[k]) == n &&
            memcmp(s->p, kind_names[k], n) == 0)
            kind = k;
    if (kind == NX_OPK_COUNT)
        return expected(s, s->p, "an operand (sbuf:, psum:, hbm:, pat: or #VALUE)");
    s->p += n;
    op->kind = (uint8_t)kind;
    const char *dt_at = s->p + 1;
    if (expect_char(s, ':') != 0 || parse_dtype(s, &op->dtype) != 0) return -1;

    if (kind == NX_OPK_PATTERN) {
        /* The encoder only takes integer index patterns. */
        if (nx_dtype_is_float((nx_dtype)op->dtype))
            return fail_at(s, dt_at, "a pattern needs an integer dtype, found %s",
                           nx_dtype_name((nx_dtype)op->dtype));
        int64_t base, cm;
        if (expect_char(s, '[') != 0 || parse_partition_count(s, op) != 0 ||
            expect_char(s, ']') != 0 || expect_char(s, '(') != 0 ||
            parse_sint(s, "pattern base", INT64_MIN, INT64_MAX, &base) != 0 ||
            expect_char(s, ',') != 0 ||
            parse_sint(s, "channel multiplier", INT32_MIN, INT32_MAX, &cm) != 0 ||
            expect_char(s, ')') != 0)
            return -1;
        op->pattern_base = base;
        op->partition_stride = (int32_t)cm;
        return parse_dims(s, op);
    }
    if (kind == NX_OPK_HBM) {
        int64_t pstride;
        if (expect_char(s, '[') != 0 || parse_partition_count(s, op) != 0 ||
            expect_char(s, '/') != 0 ||
            parse_sint(s, "partition stride", INT32_MIN, INT32_MAX, &pstride) != 0 ||
            expect_char(s, ']') != 0)
            return -1;
        op->partition_stride = (int32_t)pstride;
        if (accept(s, '@') && parse_hbm_offset(s, &op->offset) != 0) return -1;
        return parse_dims(s, op);
    }
    if (parse_partition_range(s, op) != 0) return -1;
    if (accept(s, '@') && parse_uint(s, "offset", 0, UINT64_MAX, &op->offset) != 0) return -1;
    return parse_dims(s, op);
}

/* ---- instructions ---- */

/* Key bits for duplicate detection. */
enum {
    KEY_SLOT0 = 0, /* .. KEY_SLOT0 + NX_MAX_OPERANDS - 1 */
    KEY_OP0 = NX_MAX_OPERANDS,
    KEY_OP1,
    KEY_FUNC,
    KEY_IPARAM0,
    KEY_IPARAM1,
    KEY_WAIT,
    KEY_INC,
    KEY_FLAG0, /* .. KEY_FLAG0 + NX_FLAG_BITS - 1 */
};
_Static_assert(KEY_FLAG0 + NX_FLAG_BITS <= 64, "keys fit in a 64-bit mask");

static int key_is(const char *key, size_t n, const char *name) {
    return name != NULL && strlen(name) == n && memcmp(key, name, n) == 0;
}

/* Is `key` a parameter name of some row (so "has no parameter" is the
 * better message than "has no slot")? */
static int is_any_param(const char *key, size_t n) {
    if (key_is(key, n, "op0") || key_is(key, n, "op1") || key_is(key, n, "func")) return 1;
    for (unsigned b = 0; b < NX_FLAG_BITS; b++)
        if (key_is(key, n, nx_flag_name(b))) return 1;
    for (unsigned o = 0; nx_opcode_lookup(o) != NULL; o++)
        for (unsigned i = 0; i < 2; i++)
            if (key_is(key, n, nx_opcode_lookup(o)->iparam_name[i])) return 1;
    return 0;
}

static void append(char *buf, size_t len, const char *name) {
    size_t used = strlen(buf);
    if (used < len) snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name);
}

static int no_such_key(asm_state *s, const nx_opcode_info *row, const char *key, size_t n) {
    char list[256] = "";
    if (is_any_param(key, n)) {
        if (row->params & NX_PARAM_ALU0) append(list, sizeof list, "op0");
        if (row->params & NX_PARAM_ALU1) append(list, sizeof list, "op1");
        if (row->params & NX_PARAM_FUNC) append(list, sizeof list, "func");
        for (unsigned b = 0; b < NX_FLAG_BITS; b++)
            if ((row->flags >> b) & 1u) append(list, sizeof list, nx_flag_name(b));
        for (unsigned i = 0; i < 2; i++)
            if (row->iparam_name[i]) append(list, sizeof list, row->iparam_name[i]);
        append(list, sizeof list, "wait");
        append(list, sizeof list, "inc");
        return fail_at(s, key, "'%s' has no parameter '%.*s%s'; parameters: %s", row->mnemonic,
                       quote_len(n), key, quote_more(n), list);
    }
    for (unsigned i = 0; i < NX_MAX_OPERANDS; i++)
        if (row->slot[i].name) append(list, sizeof list, row->slot[i].name);
    return fail_at(s, key, "'%s' has no slot '%.*s%s'; slots: %s", row->mnemonic, quote_len(n),
                   key, quote_more(n), list[0] ? list : "(none)");
}

/* "semS": a semaphore index below .semaphores. */
static int parse_sem(asm_state *s, uint8_t *sem) {
    if (!(char_at(s, s->p) == 's' && char_at(s, s->p + 1) == 'e' && char_at(s, s->p + 2) == 'm' &&
          char_at(s, s->p + 3) >= 0 && is_digit(char_at(s, s->p + 3))))
        return expected(s, s->p, "semN");
    s->p += 3;
    const char *at = s->p;
    uint64_t v;
    if (parse_uint(s, "semaphore", 0, UINT64_MAX, &v) != 0) return -1;
    if (v >= s->prog->sem_count)
        return fail_at(s, at, "semaphore %.*s out of range (.semaphores %u)",
                       quote_len((size_t)(s->p - at)), at, s->prog->sem_count);
    *sem = (uint8_t)v;
    return 0;
}

static int parse_flag(asm_state *s, uint16_t *flags, unsigned bit) {
    int c = peek(s), next = char_at(s, s->p + 1);
    if ((c != '0' && c != '1') || (next >= 0 && (is_word(next) || next == '.')))
        return expected(s, s->p, "0 or 1");
    if (c == '1') *flags |= (uint16_t)(1u << bit);
    s->p++;
    return 0;
}

/* The value of `key` (n chars) for the row; sets the key's bit in *seen. */
static int parse_key_value(asm_state *s, const nx_opcode_info *row, const char *key, size_t n,
                           nx_insn *insn, uint64_t *seen) {
    int bit = -1;
    int slot = -1;
    for (unsigned i = 0; i < NX_MAX_OPERANDS && slot < 0; i++)
        if (key_is(key, n, row->slot[i].name)) slot = (int)i;
    if (slot >= 0) bit = KEY_SLOT0 + slot;
    if (bit < 0 && (row->params & NX_PARAM_ALU0) && key_is(key, n, "op0")) bit = KEY_OP0;
    if (bit < 0 && (row->params & NX_PARAM_ALU1) && key_is(key, n, "op1")) bit = KEY_OP1;
    if (bit < 0 && (row->params & NX_PARAM_FUNC) && key_is(key, n, "func")) bit = KEY_FUNC;
    for (unsigned i = 0; i < 2 && bit < 0; i++)
        if (key_is(key, n, row->iparam_name[i])) bit = KEY_IPARAM0 + (int)i;
    for (unsigned b = 0; b < NX_FLAG_BITS && bit < 0; b++)
        if (((row->flags >> b) & 1u) && key_is(key, n, nx_flag_name(b))) bit = KEY_FLAG0 + (int)b;
    if (bit < 0 && key_is(key, n, "wait")) bit = KEY_WAIT;
    if (bit < 0 && key_is(key, n, "inc")) bit = KEY_INC;
    if (bit < 0) return no_such_key(s, row, key, n);
    if (*seen & (1ull << bit))
        return fail_at(s, key, "duplicate key '%.*s'", quote_len(n), key);
    *seen |= 1ull << bit;

    unsigned code = 0;
    if (slot >= 0) {
        const char *at = s->p;
        nx_operand *op = &insn->op[slot];
        if (parse_operand(s, op) != 0) return -1;
        if (!(NX_KIND_BIT(op->kind) & row->slot[slot].kinds)) {
            char allowed[64] = "";
            for (unsigned k = 0; k < NX_OPK_COUNT; k++)
                if (NX_KIND_BIT(k) & row->slot[slot].kinds) append(allowed, sizeof allowed, kind_names[k]);
            return fail_at(s, at, "operand kind %s not allowed in slot '%s' of '%s' (allowed: %s)",
                           kind_names[op->kind], row->slot[slot].name, row->mnemonic, allowed);
        }
        return 0;
    }
    switch (bit) {
    case KEY_OP0:
    case KEY_OP1: {
        char what[320];
        choices(what, sizeof what, "an ALU op", alu_name_u, NX_ALU_COUNT);
        if (parse_name(s, lookup_alu, what, &code) != 0) return -1;
        *(bit == KEY_OP0 ? &insn->alu0 : &insn->alu1) = (uint8_t)code;
        return 0;
    }
    case KEY_FUNC: {
        char what[320];
        choices(what, sizeof what, "an activation function", act_name_u, NX_ACT_COUNT);
        if (parse_name(s, lookup_act, what, &code) != 0) return -1;
        insn->func = (uint8_t)code;
        return 0;
    }
    case KEY_IPARAM0:
    case KEY_IPARAM1: {
        int64_t v;
        unsigned i = (unsigned)(bit - KEY_IPARAM0);
        if (parse_sint(s, row->iparam_name[i], INT32_MIN, INT32_MAX, &v) != 0) return -1;
        insn->iparam[i] = (int32_t)v;
        return 0;
    }
    case KEY_WAIT: {
        uint64_t v;
        if (parse_sem(s, &insn->wait_sem) != 0) return -1;
        if (char_at(s, s->p) == '.' && char_at(s, s->p + 1) == '.') { /* semA..B: each of A..B */
            s->p += 2;
            const char *at = s->p;
            uint64_t last;
            if (parse_uint(s, "semaphore", 0, UINT64_MAX, &last) != 0) return -1;
            if (last <= insn->wait_sem || last >= s->prog->sem_count)
                return fail_at(s, at, "semaphore range %u..%.*s: the last must be above %u and below .semaphores %u",
                               insn->wait_sem, quote_len((size_t)(s->p - at)), at, insn->wait_sem,
                               s->prog->sem_count);
            insn->wait_span = (uint32_t)(last - insn->wait_sem + 1);
        }
        const char *ge = s->p;
        if (!(accept(s, '>') && accept(s, '='))) return expected(s, ge, "'>='");
        if (parse_uint(s, "wait value", 0, UINT32_MAX, &v) != 0) return -1;
        insn->wait_value = (uint32_t)v;
        return 0;
    }
    case KEY_INC: {
        uint64_t v = 1;
        if (parse_sem(s, &insn->inc_sem) != 0) return -1;
        /* an increment of 0 would be no increment: the encoder refuses it */
        if (accept(s, '+') && parse_uint(s, "increment", 1, UINT32_MAX, &v) != 0) return -1;
        insn->inc_amount = (uint32_t)v;
        return 0;
    }
    default:
        return parse_flag(s, &insn->flags, (unsigned)(bit - KEY_FLAG0));
    }
}

static int parse_insn(asm_state *s) {
    const char *mn_at = s->p;
    size_t n = word_len(s, mn_at, 0);
    if (s->engine < 0)
        return fail_at(s, mn_at, "expected '.engine' before instructions, found '%.*s%s'",
                       quote_len(n), mn_at, quote_more(n));
    char mnemonic[64];
    int opcode = word_copy(mnemonic, sizeof mnemonic, mn_at, n) == 0 ? nx_opcode_from_mnemonic(mnemonic) : -1;
    const nx_opcode_info *row = opcode >= 0 ? nx_opcode_lookup((unsigned)opcode) : NULL;
    if (row == NULL)
        return fail_at(s, mn_at, "unknown mnemonic '%.*s%s'", quote_len(n), mn_at, quote_more(n));
    s->p += n;

    nx_insn insn;
    memset(&insn, 0, sizeof insn);
    insn.opcode = (uint8_t)opcode;
    insn.wait_sem = NX_SEM_NONE;
    insn.inc_sem = NX_SEM_NONE;
    uint64_t seen = 0;
    for (;;) {
        if (separator(s) != 0) return -1;
        if (at_end(s)) break;
        const char *key = s->p;
        size_t kn = word_len(s, key, 0);
        if (kn == 0) return expected(s, key, "KEY=VALUE");
        s->p += kn;
        if (expect_char(s, '=') != 0) return -1;
        if (parse_key_value(s, row, key, kn, &insn, &seen) != 0) return -1;
        if (!at_end(s) && !is_space(peek(s)))
            return expected(s, s->p, "whitespace or end of line after the value");
    }
    for (unsigned i = 0; i < NX_MAX_OPERANDS; i++)
        if (row->slot[i].name && row->slot[i].required && !(seen & (1ull << (KEY_SLOT0 + i))))
            return fail_at(s, mn_at, "'%s' is missing required slot '%s'", row->mnemonic,
                           row->slot[i].name);
    if (nx_program_insn_count(s->prog) >= NX_PROGRAM_MAX_INSNS)
        return fail_at(s, mn_at, "too many instructions (a program holds at most %u)", NX_PROGRAM_MAX_INSNS);
    uint32_t index = s->prog->stream[s->core][s->engine].count;
    if (nx_program_append(s->prog, s->core, (nx_engine)s->engine, &insn, s->err) != 0 ||
        (s->src && nx_program_set_src(s->prog, s->core, (nx_engine)s->engine, index, s->src - 1, s->err) != 0))
        return nx_fail_prefix(s->err, "%s:%zu:%zu", s->file, s->line_no,
                              (size_t)(mn_at - s->line) + 1);
    if (!s->record_order) return 0;
    if (s->order_count == s->order_capacity) {
        uint32_t cap = s->order_capacity ? s->order_capacity * 2 : 256;
        nx_insn_ref *grown = realloc(s->order, (size_t)cap * sizeof *grown);
        if (!grown) return fail_at(s, mn_at, "out of memory recording the instruction order");
        s->order = grown;
        s->order_capacity = cap;
    }
    s->order[s->order_count++] = (nx_insn_ref){s->core, (uint32_t)s->engine, index};
    return 0;
}

/* ---- directives ---- */

static int once(asm_state *s, const char *at, unsigned bit, const char *name) {
    if (s->seen & bit) return fail_at(s, at, "duplicate directive '%s'", name);
    s->seen |= bit;
    return 0;
}

static int dir_machine(asm_state *s, const char *at) {
    if (once(s, at, SEEN_MACHINE, ".machine") != 0 || separator(s) != 0) return -1;
    const char *name = s->p;
    size_t n = 0;
    for (int c; (c = char_at(s, name + n)) >= 0 && (is_word(c) || c == '.' || c == '-');) n++;
    if (n == 0) return expected(s, name, "a machine name");
    if (n > (size_t)ASM_MACHINE_MAX)
        return fail_at(s, name, "machine name '%.*s%s' too long (max %d characters)", quote_len(n),
                       name, quote_more(n), ASM_MACHINE_MAX);
    memset(s->prog->machine, 0, sizeof s->prog->machine);
    memcpy(s->prog->machine, name, n);
    s->p += n;
    return end_of_line(s);
}

static int dir_cores(asm_state *s, const char *at) {
    uint64_t v;
    if (once(s, at, SEEN_CORES, ".cores") != 0 || separator(s) != 0 ||
        parse_uint(s, "cores", 1, NX_MAX_CORES, &v) != 0)
        return -1;
    s->prog->cores = (uint32_t)v;
    return end_of_line(s);
}

static int dir_semaphores(asm_state *s, const char *at) {
    uint64_t v;
    if (once(s, at, SEEN_SEMAPHORES, ".semaphores") != 0 || separator(s) != 0 ||
        parse_uint(s, "semaphores", 0, NX_MAX_SEMAPHORES, &v) != 0)
        return -1;
    s->prog->sem_count = (uint32_t)v;
    return end_of_line(s);
}

static int dir_hbm(asm_state *s, const char *at) {
    if (once(s, at, SEEN_HBM, ".hbm") != 0 || separator(s) != 0) return -1;
    s->hbm_line = s->line_no;
    s->hbm_col = (size_t)(s->p - s->line) + 1;
    if (parse_uint(s, "hbm bytes", 0, UINT64_MAX, &s->hbm) != 0) return -1;
    return end_of_line(s);
}

static int dir_core(asm_state *s) {
    const char *at;
    uint64_t v;
    if (separator(s) != 0) return -1;
    at = s->p;
    if (parse_uint(s, "core", 0, UINT64_MAX, &v) != 0) return -1;
    if (v >= s->prog->cores)
        return fail_at(s, at, "core %llu out of range (.cores %u)", (unsigned long long)v,
                       s->prog->cores);
    s->core = (uint32_t)v;
    s->engine = -1; /* a new core starts without an engine section */
    return end_of_line(s);
}

static int dir_engine(asm_state *s) {
    char what[96];
    choices(what, sizeof what, "an engine", engine_name_u, NX_ENG_COUNT);
    unsigned e = 0;
    if (separator(s) != 0 || parse_name(s, lookup_engine, what, &e) != 0) return -1;
    s->engine = (int)e;
    return end_of_line(s);
}

/* .src FILE:LINE [FUNC] (or .src - to forget it): the source location the
 * following instructions carry (isa/program.h nx_program_insn_src). FILE
 * is everything up to the last ':' of the first word. */
static int dir_src(asm_state *s) {
    if (separator(s) != 0) return -1;
    const char *at = s->p;
    size_t n = 0;
    while (char_at(s, at + n) >= 0 && !is_space(char_at(s, at + n))) n++;
    if (n == 1 && *at == '-') {
        s->p += n;
        s->src = 0;
        return end_of_line(s);
    }
    const char *colon = NULL;
    for (size_t i = 0; i < n; i++)
        if (at[i] == ':') colon = at + i;
    if (!colon || colon == at) return expected(s, at, "FILE:LINE or '-'");
    s->p = colon + 1;
    uint64_t line;
    if (parse_uint(s, "line", 0, UINT32_MAX, &line) != 0) return -1;
    if (s->p != at + n) return expected(s, s->p, "whitespace after the line number");
    char file[512], func[128] = "";
    if ((size_t)(colon - at) >= sizeof file) return fail_at(s, at, "source file name too long (max %zu bytes)", sizeof file - 1);
    memcpy(file, at, (size_t)(colon - at));
    file[colon - at] = '\0';
    skip_space(s);
    if (!at_end(s)) {
        const char *f = s->p;
        size_t fn = 0;
        while (char_at(s, f + fn) >= 0 && !is_space(char_at(s, f + fn))) fn++;
        if (word_copy(func, sizeof func, f, fn) != 0)
            return fail_at(s, f, "function name too long (max %zu bytes)", sizeof func - 1);
        s->p += fn;
    }
    if (end_of_line(s) != 0) return -1;
    uint32_t index;
    if (nx_program_src_intern(s->prog, file, (uint32_t)line, func, &index, s->err) != 0)
        return nx_fail_prefix(s->err, "%s:%zu:%zu", s->file, s->line_no, (size_t)(at - s->line) + 1);
    s->src = index + 1;
    return 0;
}

/* .tensor NAME ROLE DTYPE [D0,D1,...] [@OFFSET] */
static int dir_tensor(asm_state *s) {
    nx_program *prog = s->prog;
    nx_tensor_decl t;
    memset(&t, 0, sizeof t);
    if (separator(s) != 0) return -1;
    const char *name_at = s->p;
    if (peek(s) < 0 || !is_alpha(peek(s))) return expected(s, name_at, "a tensor name");
    size_t n = word_len(s, name_at, 1);
    if (word_copy(t.name, sizeof t.name, name_at, n) != 0)
        return fail_at(s, name_at, "tensor name '%.*s...' too long (max %d characters)",
                       ASM_QUOTE_MAX, name_at, NX_TENSOR_NAME_MAX - 1);
    if (nx_program_find_tensor(prog, t.name) >= 0)
        return fail_at(s, name_at, "duplicate tensor '%s'", t.name);
    if (prog->tensor_count >= ASM_MAX_TENSORS)
        return fail_at(s, name_at, "too many tensors (max %u)", ASM_MAX_TENSORS);
    s->p += n;

    char what[64];
    choices(what, sizeof what, "a role", role_name_u, NX_ROLE_COUNT);
    unsigned role = 0;
    if (separator(s) != 0 || parse_name(s, lookup_role, what, &role) != 0) return -1;
    t.role = (uint8_t)role;
    if (separator(s) != 0 || parse_dtype(s, &t.dtype) != 0) return -1;
    if (separator(s) != 0 || expect_char(s, '[') != 0) return -1;
    uint64_t bytes = nx_dtype_size((nx_dtype)t.dtype);
    for (;;) {
        if (t.ndims == NX_TENSOR_MAX_DIMS)
            return fail_at(s, s->p, "too many dims (max %d)", NX_TENSOR_MAX_DIMS);
        const char *dim_at = s->p;
        uint64_t d;
        if (parse_uint(s, "dim", 1, UINT64_MAX, &d) != 0) return -1;
        if (bytes > UINT64_MAX / d)
            return fail_at(s, dim_at, "tensor '%s' is too large (size overflows 64 bits)", t.name);
        bytes *= d;
        t.shape[t.ndims++] = d;
        if (accept(s, ']')) break;
        if (!accept(s, ',')) return expected(s, s->p, "',' or ']'");
    }

    const char *off_at = name_at;
    if (separator(s) != 0) return -1;
    if (accept(s, '@')) {
        off_at = s->p;
        if (parse_uint(s, "offset", 0, UINT64_MAX, &t.offset) != 0) return -1;
        size_t size = nx_dtype_size((nx_dtype)t.dtype);
        if (t.offset % size != 0)
            return fail_at(s, off_at, "offset %llu of tensor '%s' is not a multiple of %zu (%s)",
                           (unsigned long long)t.offset, t.name, size,
                           nx_dtype_name((nx_dtype)t.dtype));
    } else {
        t.offset = s->next_offset;
    }
    /* The end, rounded up to ASM_TENSOR_ALIGN, must fit in 64 bits: it is the
     * next default offset and may become the default .hbm. */
    if (t.offset > UINT64_MAX - bytes || t.offset + bytes > UINT64_MAX - (ASM_TENSOR_ALIGN - 1))
        return fail_at(s, off_at, "tensor '%s' ends past the 64-bit address space", t.name);
    uint64_t end = t.offset + bytes;
    for (uint32_t i = 0; i < prog->tensor_count; i++) {
        const nx_tensor_decl *u = &prog->tensors[i];
        uint64_t ub = nx_tensor_bytes(u);
        if (t.offset < u->offset + ub && u->offset < end)
            return fail_at(s, off_at,
                           "tensor '%s' bytes [%llu, %llu) overlap tensor '%s' bytes [%llu, %llu)",
                           t.name, (unsigned long long)t.offset, (unsigned long long)end, u->name,
                           (unsigned long long)u->offset, (unsigned long long)(u->offset + ub));
    }
    if (end_of_line(s) != 0) return -1;
    if (nx_program_add_tensor(prog, &t, s->err) != 0)
        return nx_fail_prefix(s->err, "%s:%zu:%zu", s->file, s->line_no,
                              (size_t)(name_at - s->line) + 1);
    s->next_offset = nx_round_up_u64(end, ASM_TENSOR_ALIGN);
    return 0;
}

static int parse_directive(asm_state *s) {
    const char *at = s->p;
    s->p++; /* '.' */
    size_t n = word_len(s, s->p, 0);
    const char *name = s->p;
    s->p += n;
    if (key_is(name, n, "machine")) return dir_machine(s, at);
    if (key_is(name, n, "cores")) return dir_cores(s, at);
    if (key_is(name, n, "semaphores")) return dir_semaphores(s, at);
    if (key_is(name, n, "hbm")) return dir_hbm(s, at);
    if (key_is(name, n, "tensor")) return dir_tensor(s);
    if (key_is(name, n, "core")) return dir_core(s);
    if (key_is(name, n, "engine")) return dir_engine(s);
    if (key_is(name, n, "src")) return dir_src(s);
    if (n == 0) return expected(s, at, "a directive (.machine, .tensor, .engine, ...)");
    return fail_at(s, at, "unknown directive '.%.*s%s'", quote_len(n), name, quote_more(n));
}

static int parse_line(asm_state *s) {
    skip_space(s);
    int c = peek(s);
    if (c < 0) return 0;
    if (c == '.') return parse_directive(s);
    if (is_alpha(c)) return parse_insn(s);
    return expected(s, s->p, "a directive or an instruction");
}

/* After the last line: .hbm covers every tensor (or defaults to their end). */
static int finish(asm_state *s) {
    nx_program *prog = s->prog;
    uint64_t end = 0;
    uint32_t last = 0;
    for (uint32_t i = 0; i < prog->tensor_count; i++) {
        uint64_t e = prog->tensors[i].offset + nx_tensor_bytes(&prog->tensors[i]);
        if (e > end) {
            end = e;
            last = i;
        }
    }
    if (!(s->seen & SEEN_HBM)) {
        prog->hbm_bytes = nx_round_up_u64(end, ASM_TENSOR_ALIGN);
        return 0;
    }
    if (s->hbm < end)
        return nx_fail(s->err, "%s:%zu:%zu: .hbm %llu is less than the end of tensor '%s' (%llu)",
                       s->file, s->hbm_line, s->hbm_col, (unsigned long long)s->hbm,
                       prog->tensors[last].name, (unsigned long long)end);
    prog->hbm_bytes = s->hbm;
    return 0;
}

static int assemble(const char *filename, const char *text, size_t len, nx_program *out,
                    nx_insn_ref **order_out, uint32_t *count_out, nx_error *err) {
    asm_state s;
    memset(&s, 0, sizeof s);
    s.record_order = order_out != NULL;
    s.file = filename ? filename : "<input>";
    s.err = err;
    s.prog = out;
    s.engine = -1;
    nx_program_init(out); /* machine "trn2", 1 core, no semaphores */
    if (text == NULL) len = 0;
    const char *p = len ? text : "", *end = p + len;
    int rc = 0;
    for (s.line_no = 1;; s.line_no++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        s.line = p;
        s.end = nl ? nl : end;
        s.p = p;
        if (parse_line(&s) != 0) {
            rc = -1;
            break;
        }
        if (nl == NULL) break;
        p = nl + 1;
    }
    if (rc == 0) rc = finish(&s);
    if (rc != 0) {
        nx_program_free(out); /* leaves *out empty and initialised */
        free(s.order);
        return rc;
    }
    if (order_out) {
        *order_out = s.order;
        *count_out = s.order_count;
    }
    return 0;
}

int nx_assemble(const char *filename, const char *text, size_t len, nx_program *out,
                nx_error *err) {
    return assemble(filename, text, len, out, NULL, NULL, err);
}

int nx_assemble_ordered(const char *filename, const char *text, size_t len, nx_program *out,
                        nx_insn_ref **order_out, uint32_t *count_out, nx_error *err) {
    *order_out = NULL;
    *count_out = 0;
    return assemble(filename, text, len, out, order_out, count_out, err);
}

int nx_assemble_file(const char *path, nx_program *out, nx_error *err) {
    nx_program_init(out);
    uint8_t *buf;
    size_t len;
    if (nx_read_file_max(path, NX_PROGRAM_FILE_MAX, "the limit for a program file", &buf, &len, err) != 0)
        return -1;
    int rc = nx_assemble(path, (const char *)buf, len, out, err);
    free(buf);
    return rc;
}
