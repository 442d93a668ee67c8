/* Reference of ResizeNearest: per output pixel, the source row and column
 * by the axis rules of kernels/resize/resize_rule.h evaluated on the host in fp32
 * (float arithmetic, one rounding per step, no contraction: the project is
 * built as ISO C, where GCC does not fuse), then a byte copy of the C
 * channels. */
#include <math.h>
#include <string.h>

#include "ref.h"

uint64_t nx_ref_resize_src(const nx_resize_axis *ax, uint64_t x) {
    float t = (float)x * ax->a;
    t = t + ax->b;
    t = t / ax->d;
    t = t - ax->e;
    float fl = floorf(t), f = t - fl, idx = fl;
    switch (ax->nearest) {
    case NX_NEAREST_FLOOR: break;
    case NX_NEAREST_CEIL: idx = fl + (f > 0.0f); break;
    case NX_NEAREST_ROUND_PREFER_FLOOR: idx = fl + (f > 0.5f); break;
    case NX_NEAREST_ROUND_PREFER_CEIL: idx = fl + (f >= 0.5f); break;
    }
    if (!(idx > 0)) return 0; /* also NaN */
    if (idx > (float)(ax->in - 1)) return ax->in - 1;
    return (uint64_t)idx;
}

int nx_ref_resize_nearest(const void *in, nx_dtype dtype, const uint64_t in_shape[4],
                          const nx_resize_rule *rule, void *out, nx_error *err) {
    size_t es = nx_dtype_size(dtype);
    if (es == 0) return nx_fail(err, "resize reference: invalid dtype code %d", (int)dtype);
    uint64_t n = in_shape[0], h = in_shape[1], w = in_shape[2], c = in_shape[3];
    const nx_resize_axis *ay = &rule->axis[0], *ax = &rule->axis[1];
    if (ay->in != h || ax->in != w)
        return nx_fail(err, "resize reference: the rule is for %llu x %llu, the data is %llu x %llu",
                       (unsigned long long)ay->in, (unsigned long long)ax->in, (unsigned long long)h,
                       (unsigned long long)w);
    const uint8_t *src = in;
    uint8_t *dst = out;
    size_t row = (size_t)c * es;
    for (uint64_t b = 0; b < n; b++)
        for (uint64_t oy = 0; oy < ay->out; oy++) {
            uint64_t sy = nx_ref_resize_src(ay, oy);
            for (uint64_t ox = 0; ox < ax->out; ox++) {
                uint64_t sx = nx_ref_resize_src(ax, ox);
                memcpy(dst + ((b * ay->out + oy) * ax->out + ox) * row, src + ((b * h + sy) * w + sx) * row, row);
            }
        }
    return 0;
}
