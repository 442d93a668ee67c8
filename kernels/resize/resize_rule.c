/* ResizeNearest's coordinate rules: attributes -> one fp32 operation
 * sequence per axis (kernels/resize/resize_rule.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "resize_rule.h"

static void shape_text(char *buf, size_t len, const uint64_t s[4]) {
    snprintf(buf, len, "[%llu, %llu, %llu, %llu]", (unsigned long long)s[0], (unsigned long long)s[1],
             (unsigned long long)s[2], (unsigned long long)s[3]);
}

static int read_out_shape(const nx_value *v, uint64_t out[4], nx_error *err) {
    if (v->kind != NX_VAL_LIST || v->count != 4)
        return nx_fail(err, "attribute out_shape: must be a list of 4 ints [N, OH, OW, C]");
    for (uint32_t i = 0; i < 4; i++) {
        if (v->items[i].kind != NX_VAL_INT || v->items[i].i < 1)
            return nx_fail(err, "attribute out_shape: must be a list of 4 ints >= 1 [N, OH, OW, C]");
        out[i] = (uint64_t)v->items[i].i;
    }
    return 0;
}

/* scales [1, sh, sw, 1] as fp32 (ONNX's scales tensor is float32). */
static int read_scales(const nx_value *v, float s[2], nx_error *err) {
    double d[4];
    if (v->kind != NX_VAL_LIST || v->count != 4)
        return nx_fail(err, "attribute scales: must be a list of 4 numbers [1, sh, sw, 1]");
    for (uint32_t i = 0; i < 4; i++) {
        const nx_value *e = &v->items[i];
        if (e->kind == NX_VAL_INT) d[i] = (double)e->i;
        else if (e->kind == NX_VAL_FLOAT) d[i] = e->f;
        else return nx_fail(err, "attribute scales: must be a list of 4 numbers [1, sh, sw, 1]");
    }
    if (d[0] != 1 || d[3] != 1)
        return nx_fail(err, "attribute scales [%g, %g, %g, %g]: must be [1, sh, sw, 1] (ResizeNearest keeps N and C)",
                       d[0], d[1], d[2], d[3]);
    for (int i = 0; i < 2; i++) {
        s[i] = (float)d[1 + i];
        if (!(s[i] > 0) || !isfinite(s[i]))
            return nx_fail(err, "attribute scales [%g, %g, %g, %g]: sh and sw must be finite and > 0", d[0], d[1],
                           d[2], d[3]);
    }
    return 0;
}

int nx_resize_out_shape(const nx_attrs *attrs, const uint64_t in[4], uint64_t out[4], nx_error *err) {
    const nx_value *os = nx_attrs_get_given(attrs, NX_RESIZE_ATTR_OUT_SHAPE), *sc = nx_attrs_get_given(attrs, NX_RESIZE_ATTR_SCALES);
    char a[96], b[96];
    uint64_t from_scales[4];
    if (sc) {
        float s[2];
        if (read_scales(sc, s, err) != 0) return -1;
        from_scales[0] = in[0];
        from_scales[3] = in[3];
        for (int i = 0; i < 2; i++) {
            double o = floor((double)in[1 + i] * (double)s[i]);
            if (o < 1 || o > 4e18)
                return nx_fail(err, "attribute scales: %s %g of an input %s of %llu gives an output size of %.0f",
                               i ? "sw" : "sh", (double)s[i], i ? "width" : "height",
                               (unsigned long long)in[1 + i], o);
            from_scales[1 + i] = (uint64_t)o;
        }
    }
    if (os) {
        if (read_out_shape(os, out, err) != 0) return -1;
        if (out[0] != in[0] || out[3] != in[3]) {
            shape_text(a, sizeof a, out);
            shape_text(b, sizeof b, in);
            return nx_fail(err, "attribute out_shape %s: N and C must be the data's (%s): ResizeNearest keeps N and C",
                           a, b);
        }
        if (sc && memcmp(out, from_scales, sizeof from_scales) != 0) {
            shape_text(a, sizeof a, out);
            shape_text(b, sizeof b, from_scales);
            return nx_fail(err, "attribute out_shape %s disagrees with attribute scales, which give %s", a, b);
        }
        return 0;
    }
    if (!sc) return nx_fail(err, "ResizeNearest needs attribute out_shape ([N, OH, OW, C]) or scales ([1, sh, sw, 1])");
    memcpy(out, from_scales, sizeof from_scales);
    return 0;
}

static int read_mode(const nx_value *v, const char *name, const char *const *names, int n, int *out,
                     nx_error *err) {
    if (v->kind == NX_VAL_STRING)
        for (int i = 0; i < n; i++)
            if (strcmp(v->s, names[i]) == 0) {
                *out = i;
                return 0;
            }
    char list[160] = "";
    for (int i = 0; i < n; i++) {
        strncat(list, names[i], sizeof list - strlen(list) - 1);
        if (i + 1 < n) strncat(list, ", ", sizeof list - strlen(list) - 1);
    }
    if (v->kind == NX_VAL_STRING) { /* the user's text, escaped: the message stays one line */
        nx_quoted q;
        return nx_fail(err, "attribute %s: '%s' is not one of %s", name, nx_quote(&q, v->s, NX_QUOTE_NAME), list);
    }
    return nx_fail(err, "attribute %s: must be a string, one of %s", name, list);
}

enum { COORD_ASYMMETRIC, COORD_HALF_PIXEL, COORD_ALIGN_CORNERS, COORD_PYTORCH_HALF_PIXEL, COORD_COUNT };
static const char *const coord_names[COORD_COUNT] = {"asymmetric", "half_pixel", "align_corners",
                                                     "pytorch_half_pixel"};
static const char *const nearest_names[4] = {"floor", "ceil", "round_prefer_floor", "round_prefer_ceil"};

/* The largest axis size the on-chip index arithmetic handles exactly: the
 * floor of a coordinate rounds through 1.5 * 2^23, exact below 2^22. */
#define RESIZE_AXIS_MAX ((1u << 22) - 2)

static void onnx_axis(nx_resize_axis *ax, int coord, int scales, float s) {
    uint64_t in = ax->in, out = ax->out;
    ax->a = 1;
    ax->b = 0;
    ax->d = 1;
    ax->e = 0;
    float len = scales ? (float)s * (float)in : (float)out; /* ONNX's output_width */
    int single = len == 1.0f;
    if ((coord == COORD_ALIGN_CORNERS || coord == COORD_PYTORCH_HALF_PIXEL) && single) {
        ax->a = 0; /* x_original = 0 */
        return;
    }
    if (!scales) {
        switch (coord) {
        case COORD_ASYMMETRIC: ax->a = (float)in; ax->d = (float)out; break;
        case COORD_ALIGN_CORNERS: ax->a = (float)(in - 1); ax->d = (float)(out - 1); break;
        default: /* half_pixel, pytorch_half_pixel: ((2x + 1) in - out) / (2 out) */
            ax->a = (float)(2 * in);
            ax->b = (float)in - (float)out;
            ax->d = (float)(2 * out);
            break;
        }
        return;
    }
    switch (coord) {
    case COORD_ASYMMETRIC: ax->d = s; break;
    case COORD_ALIGN_CORNERS: ax->a = (float)(in - 1); ax->d = len - 1.0f; break;
    default: ax->b = 0.5f; ax->d = s; ax->e = 0.5f; break;
    }
}

int nx_resize_rule_read(const nx_attrs *attrs, const uint64_t in[4], const uint64_t out[4],
                        nx_resize_rule *rule, nx_error *err) {
    memset(rule, 0, sizeof *rule);
    char a[96], b[96];
    if (out[0] != in[0] || out[3] != in[3]) {
        shape_text(a, sizeof a, out);
        shape_text(b, sizeof b, in);
        return nx_fail(err, "result shape %s: N and C must be the data's (%s): ResizeNearest keeps N and C", a, b);
    }
    for (int i = 1; i < 3; i++)
        if (in[i] > RESIZE_AXIS_MAX || out[i] > RESIZE_AXIS_MAX)
            return nx_fail(err, "%s %llu -> %llu: axes beyond %u pixels are not supported (the on-chip index "
                           "arithmetic is exact in fp32 below 2^22)",
                           i == 1 ? "height" : "width", (unsigned long long)in[i], (unsigned long long)out[i],
                           RESIZE_AXIS_MAX);
    uint64_t want[4];
    if (nx_resize_out_shape(attrs, in, want, err) != 0) return -1;
    if (memcmp(want, out, sizeof want) != 0) {
        shape_text(a, sizeof a, out);
        shape_text(b, sizeof b, want);
        return nx_fail(err, "result shape %s differs from the %s attribute's %s", a,
                       nx_attrs_get_given(attrs, NX_RESIZE_ATTR_OUT_SHAPE) ? "out_shape" : "scales", b);
    }
    const nx_value *sc = nx_attrs_get_given(attrs, NX_RESIZE_ATTR_SCALES);
    const nx_value *cm = nx_attrs_get_given(attrs, NX_RESIZE_ATTR_COORD), *nm = nx_attrs_get_given(attrs, NX_RESIZE_ATTR_NEAREST);
    float s[2] = {0, 0};
    if (sc && read_scales(sc, s, err) != 0) return -1;
    int coord = COORD_HALF_PIXEL, nearest = NX_NEAREST_ROUND_PREFER_FLOOR;
    if (cm && read_mode(cm, NX_RESIZE_ATTR_COORD, coord_names, COORD_COUNT, &coord, err) != 0) return -1;
    if (nm && read_mode(nm, NX_RESIZE_ATTR_NEAREST, nearest_names, 4, &nearest, err) != 0) return -1;
    rule->onnx = cm || nm;
    rule->scales = sc != NULL;
    for (int i = 0; i < 2; i++) {
        nx_resize_axis *ax = &rule->axis[i];
        ax->in = in[1 + i];
        ax->out = out[1 + i];
        if (!rule->onnx) {
            ax->a = (float)ax->in / (float)ax->out;
            ax->b = 0;
            ax->d = 1;
            ax->e = 0;
            ax->nearest = NX_NEAREST_FLOOR;
        } else {
            onnx_axis(ax, coord, rule->scales, s[i]);
            ax->nearest = (nx_nearest_mode)nearest;
        }
    }
    if (!rule->onnx)
        snprintf(rule->text, sizeof rule->text, "default: floor(x * fp32(in/out))");
    else
        snprintf(rule->text, sizeof rule->text, "%s + %s, from %s", coord_names[coord], nearest_names[nearest],
                 rule->scales ? "scales" : "out_shape");
    return 0;
}
