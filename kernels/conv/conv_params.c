/* Conv labels, attributes, output size and result shape (conv_params.h). */
#include "conv_params.h"

#include "isa/intmath.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- labels ---------------------------------------------------------------- */

/* Parses one part ("bf01", "oi01") of length len: `a` and `c` are the two
 * letters (b/f or o/i), spatial[d] = position of digit d. Returns the
 * spatial count or -1 (message names `what`). */
static int parse_part(const char *labels, const char *part, size_t len, char a, char c,
                      const char *what, uint32_t *pos_a, uint32_t *pos_c, uint32_t *spatial,
                      nx_error *err) {
    int seen_a = 0, seen_c = 0;
    uint32_t seen_d = 0, nd = 0;
    if (len < 3 || len > NX_CONV_MAX_SPATIAL + 2)
        return nx_fail(err, "conv labels \"%s\": %s \"%.*s\" must have 3..%d letters (%c, %c and 1..%d spatial digits)",
                       labels, what, (int)len, part, NX_CONV_MAX_SPATIAL + 2, a, c, NX_CONV_MAX_SPATIAL);
    for (size_t i = 0; i < len; i++) {
        char ch = part[i];
        if (ch == a && !seen_a) {
            seen_a = 1;
            *pos_a = (uint32_t)i;
        } else if (ch == c && !seen_c) {
            seen_c = 1;
            *pos_c = (uint32_t)i;
        } else if (ch >= '0' && ch < '0' + NX_CONV_MAX_SPATIAL && !(seen_d >> (ch - '0') & 1u)) {
            seen_d |= 1u << (ch - '0');
            spatial[ch - '0'] = (uint32_t)i;
            nd++;
        } else {
            return nx_fail(err, "conv labels \"%s\": %s \"%.*s\": '%c' is repeated or not one of %c, %c, 0..%d",
                           labels, what, (int)len, part, ch, a, c, NX_CONV_MAX_SPATIAL - 1);
        }
    }
    if (!seen_a || !seen_c)
        return nx_fail(err, "conv labels \"%s\": %s \"%.*s\" lacks '%c'", labels, what, (int)len, part,
                       seen_a ? c : a);
    if (seen_d != (1u << nd) - 1)
        return nx_fail(err, "conv labels \"%s\": %s \"%.*s\": spatial digits must be 0..%u", labels, what,
                       (int)len, part, nd - 1);
    return (int)nd;
}

int nx_conv_layout_parse(const char *labels, nx_conv_layout *out, nx_error *err) {
    memset(out, 0, sizeof *out);
    if (!labels) return nx_fail(err, "conv labels: none given");
    const char *us = strchr(labels, '_'), *arrow = strstr(labels, "->");
    if (!us || !arrow || us > arrow)
        return nx_fail(err, "conv labels \"%s\": expected LHS_RHS->OUT, e.g. bf01_oi01->bf01", labels);
    size_t llen = (size_t)(us - labels), rlen = (size_t)(arrow - us - 1), olen = strlen(arrow + 2);
    if (llen + rlen + olen + 3 >= sizeof out->text)
        return nx_fail(err, "conv labels \"%.40s\": too long", labels);
    int nl = parse_part(labels, labels, llen, 'b', 'f', "lhs", &out->lhs_batch, &out->lhs_feature,
                        out->lhs_spatial, err);
    if (nl < 0) return -1;
    int nr = parse_part(labels, us + 1, rlen, 'o', 'i', "rhs", &out->rhs_out, &out->rhs_in,
                        out->rhs_spatial, err);
    if (nr < 0) return -1;
    int no = parse_part(labels, arrow + 2, olen, 'b', 'f', "out", &out->out_batch, &out->out_feature,
                        out->out_spatial, err);
    if (no < 0) return -1;
    if (nr != nl || no != nl)
        return nx_fail(err, "conv labels \"%s\": lhs, rhs and out must have the same spatial dims (%d, %d, %d)",
                       labels, nl, nr, no);
    out->spatial = (uint32_t)nl;
    memcpy(out->text, labels, llen + rlen + olen + 3);
    out->text[llen + rlen + olen + 3] = 0;
    return 0;
}

/* ---- attributes ------------------------------------------------------------ */

void nx_conv_params_default(nx_conv_params *p, uint32_t spatial) {
    memset(p, 0, sizeof *p);
    p->spatial = spatial;
    for (uint32_t d = 0; d < NX_CONV_MAX_SPATIAL; d++) {
        p->stride[d] = 1;
        p->lhs_dilation[d] = 1;
        p->rhs_dilation[d] = 1;
    }
    p->feature_group_count = 1;
    p->batch_group_count = 1;
}

static const char *const known_attrs[] = {
    NX_CONV_ATTR_STRIDE,         NX_CONV_ATTR_PADDING,       NX_CONV_ATTR_LHS_DILATION,
    NX_CONV_ATTR_RHS_DILATION,   NX_CONV_ATTR_FEATURE_GROUPS, NX_CONV_ATTR_BATCH_GROUPS,
    NX_CONV_ATTR_OUT_SHAPE,      NULL};

/* A value as JSON for messages (nested lists of ints; other kinds by name). */
static void format_value(const nx_value *v, char *buf, size_t len) {
    size_t n = 0;
    if (len == 0) return;
    buf[0] = 0;
#define PUT(...)                                                                  \
    do {                                                                          \
        if (n < len) {                                                            \
            int w_ = snprintf(buf + n, len - n, __VA_ARGS__);                     \
            /* a cut write leaves n == len: the mark of truncation below */       \
            n = w_ < 0 ? n : nx_min_u64(n + (size_t)w_, len);                     \
        }                                                                         \
    } while (0)
    switch (v->kind) {
    case NX_VAL_NONE: PUT("null"); break;
    case NX_VAL_BOOL: PUT(v->i ? "true" : "false"); break;
    case NX_VAL_INT: PUT("%lld", (long long)v->i); break;
    case NX_VAL_FLOAT: {
        char f[40];
        snprintf(f, sizeof f, "%.17g", v->f);
        PUT("%s%s", f, strpbrk(f, ".eEn") ? "" : ".0"); /* 2.0 stays a float, as the user wrote it */
        break;
    }
    case NX_VAL_STRING: { /* from the user's op: escaped, so the message stays one line */
        char q[4 * 40 + 8];
        PUT("\"%s\"", nx_msg_quote(v->s ? v->s : "", 40, q, sizeof q));
        break;
    }
    case NX_VAL_LIST:
        PUT("[");
        for (uint32_t i = 0; i < v->count && n < len; i++) {
            if (i) PUT(",");
            if (n >= len) break; /* buf + n is past the end: nothing to measure */
            format_value(&v->items[i], buf + n, len - n);
            n += strlen(buf + n);
        }
        PUT("]");
        break;
    }
#undef PUT
    if (n >= len && len > 4) memcpy(buf + len - 4, "...", 4);
}

static int attr_fail(const nx_attr *a, nx_error *err, const char *rule) {
    char vt[160];
    format_value(&a->value, vt, sizeof vt);
    return nx_fail(err, "attribute %s=%s: %s", a->name, vt, rule);
}

/* stride / dilations: one int for every dim, or a list of `spatial` ints. */
static int read_per_dim(const nx_attr *a, uint32_t spatial, int64_t *dst, nx_error *err) {
    const nx_value *v = &a->value;
    char rule[96];
    if (v->kind == NX_VAL_INT) {
        if (v->i < 1) return attr_fail(a, err, "must be >= 1");
        for (uint32_t d = 0; d < spatial; d++) dst[d] = v->i;
        return 0;
    }
    snprintf(rule, sizeof rule, "must be a list of %u int%s >= 1 (one per spatial dim)", spatial,
             spatial == 1 ? "" : "s");
    if (v->kind != NX_VAL_LIST || v->count != spatial) return attr_fail(a, err, rule);
    for (uint32_t d = 0; d < spatial; d++) {
        if (v->items[d].kind != NX_VAL_INT) return attr_fail(a, err, rule);
        if (v->items[d].i < 1) return attr_fail(a, err, "entries must be >= 1");
    }
    for (uint32_t d = 0; d < spatial; d++) dst[d] = v->items[d].i;
    return 0;
}

static int read_padding(const nx_attr *a, uint32_t spatial, nx_conv_params *p, nx_error *err) {
    const nx_value *v = &a->value;
    char rule[128];
    snprintf(rule, sizeof rule, "must hold %u [lo, hi] pair%s of ints (one per spatial dim)", spatial,
             spatial == 1 ? "" : "s");
    if (v->kind != NX_VAL_LIST) return attr_fail(a, err, rule);
    int64_t flat[2 * NX_CONV_MAX_SPATIAL];
    if (v->count == 2 * spatial && v->items[0].kind == NX_VAL_INT) {
        for (uint32_t i = 0; i < 2 * spatial; i++) {
            if (v->items[i].kind != NX_VAL_INT) return attr_fail(a, err, rule);
            flat[i] = v->items[i].i;
        }
    } else if (v->count == spatial) {
        for (uint32_t d = 0; d < spatial; d++) {
            const nx_value *pr = &v->items[d];
            if (pr->kind != NX_VAL_LIST || pr->count != 2 || pr->items[0].kind != NX_VAL_INT ||
                pr->items[1].kind != NX_VAL_INT)
                return attr_fail(a, err, rule);
            flat[2 * d] = pr->items[0].i;
            flat[2 * d + 1] = pr->items[1].i;
        }
    } else {
        return attr_fail(a, err, rule);
    }
    for (uint32_t i = 0; i < 2 * spatial; i++)
        if (flat[i] < -(INT64_C(1) << 40) || flat[i] > (INT64_C(1) << 40))
            return attr_fail(a, err, "entries must lie within +-2^40");
    for (uint32_t d = 0; d < spatial; d++) {
        p->pad_lo[d] = flat[2 * d];
        p->pad_hi[d] = flat[2 * d + 1];
    }
    return 0;
}

static int read_count(const nx_attr *a, int64_t *dst, nx_error *err) {
    if (a->value.kind != NX_VAL_INT) return attr_fail(a, err, "must be an int >= 1");
    if (a->value.i < 1) return attr_fail(a, err, "must be >= 1");
    *dst = a->value.i;
    return 0;
}

static int read_out_shape(const nx_attr *a, nx_conv_params *p, nx_error *err) {
    const nx_value *v = &a->value;
    static const char rule[] = "must be a list of 1..6 ints >= 1";
    if (v->kind != NX_VAL_LIST || v->count < 1 || v->count > NX_KERNEL_MAX_DIMS)
        return attr_fail(a, err, rule);
    for (uint32_t i = 0; i < v->count; i++)
        if (v->items[i].kind != NX_VAL_INT || v->items[i].i < 1) return attr_fail(a, err, rule);
    p->out_ndims = v->count;
    for (uint32_t i = 0; i < v->count; i++) p->out_shape[i] = (uint64_t)v->items[i].i;
    return 0;
}

int nx_conv_params_read(const nx_attrs *attrs, uint32_t spatial, const char *const *extra,
                        nx_conv_params *p, nx_error *err) {
    nx_conv_params_default(p, spatial);
    if (spatial < 1 || spatial > NX_CONV_MAX_SPATIAL)
        return nx_fail(err, "conv: %u spatial dims (1..%d supported)", spatial, NX_CONV_MAX_SPATIAL);
    if (!attrs) return 0;
    for (uint32_t i = 0; i < attrs->count; i++) {
        const nx_attr *a = &attrs->items[i];
        int rc = 0;
        if (a->value.kind == NX_VAL_NONE) continue;
        if (strcmp(a->name, NX_CONV_ATTR_STRIDE) == 0) {
            rc = read_per_dim(a, spatial, p->stride, err);
        } else if (strcmp(a->name, NX_CONV_ATTR_PADDING) == 0) {
            rc = read_padding(a, spatial, p, err);
        } else if (strcmp(a->name, NX_CONV_ATTR_LHS_DILATION) == 0) {
            rc = read_per_dim(a, spatial, p->lhs_dilation, err);
        } else if (strcmp(a->name, NX_CONV_ATTR_RHS_DILATION) == 0) {
            rc = read_per_dim(a, spatial, p->rhs_dilation, err);
        } else if (strcmp(a->name, NX_CONV_ATTR_FEATURE_GROUPS) == 0) {
            rc = read_count(a, &p->feature_group_count, err);
        } else if (strcmp(a->name, NX_CONV_ATTR_BATCH_GROUPS) == 0) {
            rc = read_count(a, &p->batch_group_count, err);
        } else if (strcmp(a->name, NX_CONV_ATTR_OUT_SHAPE) == 0) {
            rc = read_out_shape(a, p, err);
        } else {
            int ok = 0;
            for (const char *const *e = extra; e && *e && !ok; e++) ok = strcmp(*e, a->name) == 0;
            if (!ok) {
                char names[256];
                size_t n = 0;
                names[0] = 0;
                for (const char *const *k = known_attrs; *k; k++)
                    n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", n ? ", " : "", *k);
                for (const char *const *e = extra; e && *e && n < sizeof names; e++)
                    n += (size_t)snprintf(names + n, sizeof names - n, ", %s", *e);
                return nx_fail(err, "attribute %s: not a conv attribute (%s)", a->name, names);
            }
        }
        if (rc != 0) return -1;
    }
    for (uint32_t d = 0; d < spatial; d++)
        if (p->stride[d] > (INT64_C(1) << 40) || p->lhs_dilation[d] > (INT64_C(1) << 40) ||
            p->rhs_dilation[d] > (INT64_C(1) << 40))
            return nx_fail(err, "conv: stride and dilations must be at most 2^40");
    if (p->feature_group_count > 1 && p->batch_group_count > 1)
        return nx_fail(err, "attributes feature_group_count=%lld and batch_group_count=%lld: at most one may exceed 1",
                       (long long)p->feature_group_count, (long long)p->batch_group_count);
    return 0;
}

/* ---- output size and result shape ----------------------------------------- */

uint64_t nx_conv_out_size(uint64_t in, uint64_t k, int64_t stride, int64_t lo, int64_t hi,
                          int64_t lhs_dilation, int64_t rhs_dilation) {
    const int64_t lim = INT64_C(1) << 40;
    if (in < 1 || k < 1 || stride < 1 || lhs_dilation < 1 || rhs_dilation < 1) return 0;
    if (in > (uint64_t)lim || k > (uint64_t)lim || lo < -lim || lo > lim || hi < -lim || hi > lim) return 0;
    /* every operand is below 2^40 in magnitude; only the products can overflow */
    int64_t din, dk;
    if (__builtin_mul_overflow((int64_t)in - 1, lhs_dilation, &din) ||
        __builtin_mul_overflow((int64_t)k - 1, rhs_dilation, &dk) || din > lim || dk > lim)
        return 0;
    int64_t padded = din + 1 + lo + hi;
    if (padded < dk + 1) return 0;
    return (uint64_t)((padded - dk - 1) / stride + 1);
}

/* ---- layout names ---------------------------------------------------------- */

/* The letters of one part: lhs/out b -> N, f -> C (out: O); rhs o -> O,
 * i -> C/G; spatial digits H, W (1 dim: W; 3: D, H, W), prefixed K (rhs)
 * or O (out). */
static size_t part_text(const char *part, size_t len, char kind, uint32_t spatial, char *buf, size_t cap) {
    static const char *const sp1[] = {"W"}, *const sp2[] = {"H", "W"}, *const sp3[] = {"D", "H", "W"};
    const char *const *names = spatial == 1 ? sp1 : spatial == 2 ? sp2 : sp3;
    size_t n = 0;
    for (size_t i = 0; i < len && n < cap; i++) {
        char ch = part[i];
        const char *t = "?", *pre = "";
        if (ch >= '0' && ch <= '9' && (uint32_t)(ch - '0') < spatial) {
            t = names[ch - '0'];
            pre = kind == 'r' ? "K" : kind == 'o' ? "O" : "";
        } else if (ch == 'b') {
            t = "N";
        } else if (ch == 'f') {
            t = kind == 'o' ? "O" : "C";
        } else if (ch == 'o') {
            t = "O";
        } else if (ch == 'i') {
            t = "C/G";
        }
        n += (size_t)snprintf(buf + n, cap - n, "%s%s%s", i ? "," : "", pre, t);
    }
    return n < cap ? n : cap;
}

void nx_conv_layout_text(const nx_conv_layout *L, const char *lhs_name, const char *rhs_name, char *buf, size_t len) {
    if (len == 0) return;
    const char *t = L->text, *us = strchr(t, '_'), *arrow = strstr(t, "->");
    char a[64], b[64], c[64];
    if (!us || !arrow) {
        snprintf(buf, len, "labels %s", t);
        return;
    }
    part_text(t, (size_t)(us - t), 'l', L->spatial, a, sizeof a);
    part_text(us + 1, (size_t)(arrow - us - 1), 'r', L->spatial, b, sizeof b);
    part_text(arrow + 2, strlen(arrow + 2), 'o', L->spatial, c, sizeof c);
    snprintf(buf, len, "layouts, labels %s: %s %s, %s %s, result %s", t, lhs_name, a, rhs_name, b, c);
}

/* nx_fail with " (the layouts)" after the message. */
static int layout_fail(nx_error *err, const nx_conv_layout *L, const char *lhs_name, const char *rhs_name,
                       const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static int layout_fail(nx_error *err, const nx_conv_layout *L, const char *lhs_name, const char *rhs_name,
                       const char *fmt, ...) {
    char msg[400], lay[240];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    nx_conv_layout_text(L, lhs_name, rhs_name, lay, sizeof lay);
    return nx_fail(err, "%s (%s)", msg, lay);
}

int nx_conv_result_shape(const nx_conv_layout *L, const nx_conv_params *p, uint32_t lhs_ndims,
                         const uint64_t *lhs_shape, uint32_t rhs_ndims, const uint64_t *rhs_shape,
                         const char *lhs_name, const char *rhs_name, uint64_t *out_shape,
                         nx_error *err) {
    uint32_t nd = L->spatial + 2;
    if (p->spatial != L->spatial)
        return nx_fail(err, "conv: attributes are for %u spatial dims, the labels %s have %u", p->spatial,
                       L->text, L->spatial);
    if (lhs_ndims != nd)
        return layout_fail(err, L, lhs_name, rhs_name, "%s: %u dims, the labels %s need %u", lhs_name, lhs_ndims,
                           L->text, nd);
    if (rhs_ndims != nd)
        return layout_fail(err, L, lhs_name, rhs_name, "%s: %u dims, the labels %s need %u", rhs_name, rhs_ndims,
                           L->text, nd);
    uint64_t batch = lhs_shape[L->lhs_batch], feat = lhs_shape[L->lhs_feature];
    uint64_t rin = rhs_shape[L->rhs_in], rout = rhs_shape[L->rhs_out];
    uint64_t fg = (uint64_t)p->feature_group_count, bg = (uint64_t)p->batch_group_count;
    if (feat % fg != 0)
        return layout_fail(err, L, lhs_name, rhs_name, "%s: dim %u (f) of %llu features is not divisible by feature_group_count %llu",
                       lhs_name, L->lhs_feature, (unsigned long long)feat, (unsigned long long)fg);
    if (rin != feat / fg)
        return layout_fail(err, L, lhs_name, rhs_name, "%s: dim %u (i) is %llu but %s features %llu / feature_group_count %llu = %llu",
                       rhs_name, L->rhs_in, (unsigned long long)rin, lhs_name, (unsigned long long)feat,
                       (unsigned long long)fg, (unsigned long long)(feat / fg));
    if (rout % fg != 0)
        return layout_fail(err, L, lhs_name, rhs_name, "%s: dim %u (o) of %llu output features is not divisible by feature_group_count %llu",
                       rhs_name, L->rhs_out, (unsigned long long)rout, (unsigned long long)fg);
    if (rout % bg != 0)
        return layout_fail(err, L, lhs_name, rhs_name, "%s: dim %u (o) of %llu output features is not divisible by batch_group_count %llu",
                       rhs_name, L->rhs_out, (unsigned long long)rout, (unsigned long long)bg);
    if (batch % bg != 0)
        return layout_fail(err, L, lhs_name, rhs_name, "%s: dim %u (b) of batch %llu is not divisible by batch_group_count %llu", lhs_name,
                       L->lhs_batch, (unsigned long long)batch, (unsigned long long)bg);
    uint64_t shape[NX_KERNEL_MAX_DIMS];
    shape[L->out_batch] = batch / bg;
    shape[L->out_feature] = rout;
    for (uint32_t d = 0; d < L->spatial; d++) {
        uint64_t in = lhs_shape[L->lhs_spatial[d]], k = rhs_shape[L->rhs_spatial[d]];
        uint64_t o = nx_conv_out_size(in, k, p->stride[d], p->pad_lo[d], p->pad_hi[d], p->lhs_dilation[d],
                                      p->rhs_dilation[d]);
        if (o == 0)
            return layout_fail(err, L, lhs_name, rhs_name, "conv spatial dim %u: the window (%llu taps, rhs_dilation %lld) does not fit the input "
                           "(%llu, lhs_dilation %lld, padding [%lld,%lld]): no output",
                           d, (unsigned long long)k, (long long)p->rhs_dilation[d], (unsigned long long)in,
                           (long long)p->lhs_dilation[d], (long long)p->pad_lo[d], (long long)p->pad_hi[d]);
        shape[L->out_spatial[d]] = o;
    }
    if (p->out_ndims) {
        int same = p->out_ndims == nd;
        for (uint32_t i = 0; same && i < nd; i++) same = p->out_shape[i] == shape[i];
        if (!same) {
            char want[128], got[128];
            size_t a = 0, b = 0;
            for (uint32_t i = 0; i < nd; i++)
                a += (size_t)snprintf(want + a, sizeof want - a, "%s%llu", i ? "," : "[", (unsigned long long)shape[i]);
            for (uint32_t i = 0; i < p->out_ndims; i++)
                b += (size_t)snprintf(got + b, sizeof got - b, "%s%llu", i ? "," : "[",
                                      (unsigned long long)p->out_shape[i]);
            return nx_fail(err, "attribute out_shape=%s]: the convolution gives %s]", got, want);
        }
    }
    memcpy(out_shape, shape, nd * sizeof *shape);
    return 0;
}

/* ---- refusals ------------------------------------------------------------- */

static void format_list(char *buf, size_t len, const int64_t *v, uint32_t n) {
    size_t k = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < n && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? "," : "[", (long long)v[i]);
    if (k < len) snprintf(buf + k, len - k, "]");
}

void nx_conv_format_attr(const nx_conv_params *p, unsigned which, char *buf, size_t len) {
    if (len == 0) return;
    buf[0] = 0;
    switch (which) {
    case NX_CONV_STRIDE: format_list(buf, len, p->stride, p->spatial); break;
    case NX_CONV_LHS_DILATION: format_list(buf, len, p->lhs_dilation, p->spatial); break;
    case NX_CONV_RHS_DILATION: format_list(buf, len, p->rhs_dilation, p->spatial); break;
    case NX_CONV_PADDING: {
        size_t k = 0;
        for (uint32_t d = 0; d < p->spatial && k < len; d++)
            k += (size_t)snprintf(buf + k, len - k, "%s[%lld,%lld]", d ? "," : "[", (long long)p->pad_lo[d],
                                  (long long)p->pad_hi[d]);
        if (k < len) snprintf(buf + k, len - k, "]");
        break;
    }
    case NX_CONV_FEATURE_GROUPS: snprintf(buf, len, "%lld", (long long)p->feature_group_count); break;
    case NX_CONV_BATCH_GROUPS: snprintf(buf, len, "%lld", (long long)p->batch_group_count); break;
    default: break;
    }
}

static const char *attr_name(unsigned which) {
    switch (which) {
    case NX_CONV_STRIDE: return NX_CONV_ATTR_STRIDE;
    case NX_CONV_PADDING: return NX_CONV_ATTR_PADDING;
    case NX_CONV_LHS_DILATION: return NX_CONV_ATTR_LHS_DILATION;
    case NX_CONV_RHS_DILATION: return NX_CONV_ATTR_RHS_DILATION;
    case NX_CONV_FEATURE_GROUPS: return NX_CONV_ATTR_FEATURE_GROUPS;
    case NX_CONV_BATCH_GROUPS: return NX_CONV_ATTR_BATCH_GROUPS;
    default: return "?";
    }
}

int nx_conv_require_default(const nx_conv_params *p, unsigned mask, const char *leaf,
                            nx_error *err) {
    static const unsigned order[] = {NX_CONV_STRIDE,        NX_CONV_PADDING,        NX_CONV_LHS_DILATION,
                                     NX_CONV_RHS_DILATION,  NX_CONV_FEATURE_GROUPS, NX_CONV_BATCH_GROUPS};
    char val[128], def[64];
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        unsigned w = order[i];
        if (!(mask & w)) continue;
        int is_default = 1;
        for (uint32_t d = 0; d < p->spatial; d++) {
            if (w == NX_CONV_STRIDE) is_default &= p->stride[d] == 1;
            if (w == NX_CONV_PADDING) is_default &= p->pad_lo[d] == 0 && p->pad_hi[d] == 0;
            if (w == NX_CONV_LHS_DILATION) is_default &= p->lhs_dilation[d] == 1;
            if (w == NX_CONV_RHS_DILATION) is_default &= p->rhs_dilation[d] == 1;
        }
        if (w == NX_CONV_FEATURE_GROUPS) is_default = p->feature_group_count == 1;
        if (w == NX_CONV_BATCH_GROUPS) is_default = p->batch_group_count == 1;
        if (is_default) continue;
        nx_conv_format_attr(p, w, val, sizeof val);
        nx_conv_params dp;
        nx_conv_params_default(&dp, p->spatial);
        nx_conv_format_attr(&dp, w, def, sizeof def);
        return nx_fail(err, "%s: attribute %s=%s is not supported (this leaf takes %s %s only)", leaf, attr_name(w),
                       val, attr_name(w), def);
    }
    if (mask & NX_CONV_NONNEG_PADDING) {
        for (uint32_t d = 0; d < p->spatial; d++)
            if (p->pad_lo[d] < 0 || p->pad_hi[d] < 0) {
                nx_conv_format_attr(p, NX_CONV_PADDING, val, sizeof val);
                return nx_fail(err, "%s: attribute padding=%s is not supported (this leaf takes padding >= 0 only)",
                               leaf, val);
            }
    }
    return 0;
}
