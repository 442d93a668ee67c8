/* ResizeNearest's coordinate rules (docs/parts/kernels.md "ResizeNearest"):
 * which source row and column every output pixel copies, shared by the leaf
 * (kernels/resize/resize_nearest.c, which evaluates the rule on chip), the
 * reference (kernels/ref/ref.h nx_ref_resize_nearest) and the registry's
 * result-shape rule.
 *
 * data [N, H, W, C] -> out [N, OH, OW, C]; N and C are never resized. Per
 * spatial axis (in -> out) a rule is one fixed sequence of fp32 operations on
 * the output coordinate x (an exact integer), each rounded to fp32:
 *
 *   t = ((x * a) + b) / d - e            (every step an fp32 operation)
 *   src = clamp(nearest(t), 0, in - 1)
 *
 * where nearest() is floor, ceil, or a rounding on the fraction
 * f = t - floor(t): round_prefer_floor takes floor(t) + (f > 0.5),
 * round_prefer_ceil floor(t) + (f >= 0.5), ceil floor(t) + (f > 0).
 *
 * The rules (attribute values as the ONNX Resize operator names them):
 *  - default (neither coordinate_transformation_mode nor nearest_mode given):
 *    PyTorch's `nearest`, the public leaf's rule: a = fp32(in / out), floor.
 *  - ONNX, from out_shape (sizes): the quotient of exact integers rounded once,
 *    so exact boundaries (integers, halves) are exact:
 *      asymmetric          a = in,      d = out           (x * in / out)
 *      half_pixel          a = 2 in, b = in - out, d = 2 out
 *                          ((x + 0.5) * in / out - 0.5)
 *      pytorch_half_pixel  as half_pixel, but 0 when out == 1
 *      align_corners       a = in - 1, d = out - 1; 0 when out == 1
 *  - ONNX, from scales s (fp32; ONNX's scale = out / in): the given scale:
 *      asymmetric          d = s                          (x / s)
 *      half_pixel          b = 0.5, d = s, e = 0.5        ((x + 0.5) / s - 0.5)
 *      pytorch_half_pixel  as half_pixel, 0 when fp32(s * in) == 1
 *      align_corners       a = in - 1, d = fp32(fp32(s * in) - 1); 0 when
 *                          fp32(s * in) == 1
 *    and the output size is floor(in * s) (in double precision of the fp32
 *    scale, as ONNX computes it from a float32 scales tensor).
 *  ONNX's defaults fill the attribute not given: half_pixel,
 *  round_prefer_floor.
 *
 * Attributes: out_shape ([N, OH, OW, C]; the resize args builder adds it),
 * scales ([1, sh, sw, 1]), coordinate_transformation_mode, nearest_mode.
 * Errors name the attribute, its value and the rule, e.g.
 *   attribute scales [1, 2, 2, 3]: must be [1, sh, sw, 1] (ResizeNearest keeps N and C) */
#ifndef NXSIM_KERNELS_RESIZE_RULE_H
#define NXSIM_KERNELS_RESIZE_RULE_H

#include <stdint.h>

#include "isa/error.h"
#include "kernels/kernel.h"

typedef enum nx_nearest_mode {
    NX_NEAREST_FLOOR = 0,
    NX_NEAREST_CEIL,
    NX_NEAREST_ROUND_PREFER_FLOOR,
    NX_NEAREST_ROUND_PREFER_CEIL
} nx_nearest_mode;

/* One spatial axis of a resize: t = fp32(fp32(fp32(fp32(x * a) + b) / d) - e),
 * src = clamp(nearest(t), 0, in - 1). */
typedef struct nx_resize_axis {
    uint64_t in, out;
    float a, b, d, e;
    nx_nearest_mode nearest;
} nx_resize_axis;

/* The coordinate rule of both spatial axes (axis[0] = H, axis[1] = W). */
typedef struct nx_resize_rule {
    nx_resize_axis axis[2];
    int onnx;      /* 0: the default (PyTorch) rule */
    int scales;    /* 1: from the scales attribute */
    char text[96]; /* "default (floor(x * in/out))", "half_pixel + round_prefer_floor, scales" */
} nx_resize_rule;

/* Attribute names the rule reads. */
#define NX_RESIZE_ATTR_OUT_SHAPE "out_shape"
#define NX_RESIZE_ATTR_SCALES "scales"
#define NX_RESIZE_ATTR_COORD "coordinate_transformation_mode"
#define NX_RESIZE_ATTR_NEAREST "nearest_mode"

/* The result shape of data of shape in[4] under attrs: out_shape if given,
 * else floor(in * scales) per spatial dim, else an error. With both, they must
 * agree. N and C must stay. */
int nx_resize_out_shape(const nx_attrs *attrs, const uint64_t in[4], uint64_t out[4], nx_error *err);

/* The rule for data in[4] -> out[4] under attrs (out is the result tensor's
 * shape; a scales attribute must produce it). */
int nx_resize_rule_read(const nx_attrs *attrs, const uint64_t in[4], const uint64_t out[4],
                        nx_resize_rule *rule, nx_error *err);

#endif
