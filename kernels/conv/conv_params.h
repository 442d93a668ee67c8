/* The convolution vocabulary shared by every conv leaf, the conv reference
 * (kernels/ref/ref.h nx_ref_conv) and the registry's conv rules: dimension
 * labels, the window attributes, the output-size formula and the result
 * shape. Semantics are XLA's ConvGeneralDilated (docs/parts/conv.md):
 *
 *   out[b, o, y..] = sum_{i, k..} lhs[b', g*I + i, (y*s + k*rd - lo) / ld ..]
 *                                 * rhs[o, i, k..]
 *
 * with no kernel flip, zero padding (negative padding crops), lhs_dilation
 * `ld` inserting ld-1 zeros between input elements (terms whose dilated
 * index is not a multiple of ld, or that fall outside the input, are zero)
 * and rhs_dilation `rd` inserting rd-1 zeros between kernel taps. Groups:
 * feature_group_count G splits the lhs features and the rhs output features
 * into G groups (g = o / (O/G), the rhs holds I = C/G input features);
 * batch_group_count B splits the lhs batch into B groups (b' = b + bg *
 * (N/B), bg = o / (O/B)) and the output batch is N/B. At most one of the two
 * counts exceeds 1.
 *
 * Output size per spatial dim (XLA ShapeInference::InferConvolveShape):
 *   dilated_in  = (in - 1) * ld + 1
 *   dilated_k   = (k - 1) * rd + 1
 *   out         = floor((dilated_in + lo + hi - dilated_k) / s) + 1
 * and the window must fit the padded input (dilated_in + lo + hi >=
 * dilated_k), otherwise there is no output (refused: nxsim tensors have no
 * zero-sized dims).
 *
 * Everything here is plain data and pure functions (no allocation, no
 * global state). Errors: -1 with one line that names the attribute or
 * operand, its value and the rule, e.g.
 *   attribute stride=[0,1]: entries must be >= 1
 *   attribute padding=[[1,1]]: must hold 2 [lo, hi] pairs (one per spatial dim)
 *   operand 1 (filt): dim 1 (i) is 3 but lhs features 8 / feature_group_count 2 = 4
 */
#ifndef NXSIM_KERNELS_CONV_CONV_PARAMS_H
#define NXSIM_KERNELS_CONV_CONV_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "isa/error.h"
#include "kernels/kernel.h"

#define NX_CONV_MAX_SPATIAL 3

/* ---- dimension labels ------------------------------------------------- */

/* A parsed "lhs_rhs->out" label string (XLA's textual form): lhs over
 * {b, f, 0, 1, ..}, rhs over {o, i, 0, 1, ..}, out over {b, f, 0, 1, ..};
 * each letter once, the same spatial digits 0..n-1 in all three (n = 1..
 * NX_CONV_MAX_SPATIAL). Every field is a tensor dimension index: e.g.
 * "0f1b_0i1o->01fb" gives lhs_batch 3, lhs_feature 1, lhs_spatial {0, 2}. */
typedef struct nx_conv_layout {
    uint32_t spatial;                          /* spatial dims n */
    uint32_t lhs_batch, lhs_feature, lhs_spatial[NX_CONV_MAX_SPATIAL];
    uint32_t rhs_out, rhs_in, rhs_spatial[NX_CONV_MAX_SPATIAL];
    uint32_t out_batch, out_feature, out_spatial[NX_CONV_MAX_SPATIAL];
    char text[3 * (NX_CONV_MAX_SPATIAL + 2) + 4]; /* the labels as given */
} nx_conv_layout;

/* Parses `labels`; errors say which part is wrong:
 *   conv labels "bf01_oi0->bf01": rhs "oi0" has 1 spatial dim, lhs "bf01" has 2 */
int nx_conv_layout_parse(const char *labels, nx_conv_layout *out, nx_error *err);

/* The layouts of L in dimension names, for messages: "layouts, labels
 * 0f1b_0i1o->01fb: operand 0 (img) H,C,W,N, operand 1 (filt) KH,C/G,KW,O,
 * result OH,OW,O,N" (lhs_name / rhs_name as given). Every operand-shape
 * refusal of nx_conv_result_shape ends with it in parentheses, so a user
 * whose tensors are in another layout (ONNX's NCHW / OIHW: the `conv`
 * composite) sees which layout each operand must have. */
void nx_conv_layout_text(const nx_conv_layout *L, const char *lhs_name, const char *rhs_name, char *buf, size_t len);

/* ---- window attributes ------------------------------------------------ */

/* The attributes of a convolution, per spatial dim d < spatial. Defaults
 * (nx_conv_params_default): stride 1, padding [0, 0], dilations 1, group
 * counts 1, no out_shape. */
typedef struct nx_conv_params {
    uint32_t spatial;
    int64_t stride[NX_CONV_MAX_SPATIAL];       /* >= 1 */
    int64_t pad_lo[NX_CONV_MAX_SPATIAL];       /* any sign; negative crops */
    int64_t pad_hi[NX_CONV_MAX_SPATIAL];
    int64_t lhs_dilation[NX_CONV_MAX_SPATIAL]; /* >= 1 */
    int64_t rhs_dilation[NX_CONV_MAX_SPATIAL]; /* >= 1 */
    int64_t feature_group_count;               /* >= 1 */
    int64_t batch_group_count;                 /* >= 1 */
    uint32_t out_ndims;                        /* 0: no out_shape attribute */
    uint64_t out_shape[NX_KERNEL_MAX_DIMS];
} nx_conv_params;

void nx_conv_params_default(nx_conv_params *p, uint32_t spatial);

/* Attribute names, as the public kernels read them from the op's attribute
 * dictionary (and as the args builder adds out_shape). */
#define NX_CONV_ATTR_STRIDE "stride"
#define NX_CONV_ATTR_PADDING "padding"
#define NX_CONV_ATTR_LHS_DILATION "lhs_dilation"
#define NX_CONV_ATTR_RHS_DILATION "rhs_dilation"
#define NX_CONV_ATTR_FEATURE_GROUPS "feature_group_count"
#define NX_CONV_ATTR_BATCH_GROUPS "batch_group_count"
#define NX_CONV_ATTR_OUT_SHAPE "out_shape"

/* Reads the conv attributes of `attrs` (NULL = none) for `spatial` spatial
 * dims into *p (absent ones keep their defaults). Accepted forms:
 *   stride, lhs_dilation, rhs_dilation: [v0, v1, ..] (one int per spatial
 *     dim) or a single int for every dim; entries >= 1;
 *   padding: [[lo0, hi0], [lo1, hi1], ..] (one pair per spatial dim, any
 *     sign) or [lo0, hi0, lo1, hi1, ..] flat;
 *   feature_group_count, batch_group_count: an int >= 1, not both > 1;
 *   out_shape: a list of ints >= 1 (1..NX_KERNEL_MAX_DIMS of them).
 * A `none` value counts as absent. Any other attribute name is refused
 * ("attribute strides: not a conv attribute (stride, padding, ...)") unless
 * it is in `extra` (NULL-terminated, may be NULL): names a leaf reads
 * itself. Messages name the attribute, its value (as JSON) and the rule. */
int nx_conv_params_read(const nx_attrs *attrs, uint32_t spatial, const char *const *extra,
                        nx_conv_params *p, nx_error *err);

/* Output size of one spatial dim by the formula above; 0 when the window
 * does not fit the padded input, or when an input is out of range (in < 1,
 * k < 1, s/ld/rd < 1) or the result would overflow. */
uint64_t nx_conv_out_size(uint64_t in, uint64_t k, int64_t stride, int64_t lo, int64_t hi,
                          int64_t lhs_dilation, int64_t rhs_dilation);

/* The result shape of a convolution with layout L and params p from the
 * lhs and rhs shapes (each L->spatial + 2 dims), into out_shape[0 ..
 * spatial + 2). Checks: dim counts; rhs in-features * feature_group_count =
 * lhs features; rhs out-features divisible by both group counts; lhs batch
 * divisible by batch_group_count; the window fits (out size >= 1); and, if
 * p->out_ndims, that out_shape equals the result. `lhs_name` / `rhs_name`
 * name the operands in messages ("operand 0 (img)"). */
int nx_conv_result_shape(const nx_conv_layout *L, const nx_conv_params *p, uint32_t lhs_ndims,
                         const uint64_t *lhs_shape, uint32_t rhs_ndims, const uint64_t *rhs_shape,
                         const char *lhs_name, const char *rhs_name, uint64_t *out_shape,
                         nx_error *err);

/* ---- refusals ----------------------------------------------------------- */

/* Bits naming the attributes, for nx_conv_require_default. */
enum {
    NX_CONV_STRIDE = 1u << 0,
    NX_CONV_PADDING = 1u << 1,
    NX_CONV_LHS_DILATION = 1u << 2,
    NX_CONV_RHS_DILATION = 1u << 3,
    NX_CONV_FEATURE_GROUPS = 1u << 4,
    NX_CONV_BATCH_GROUPS = 1u << 5,
    NX_CONV_NONNEG_PADDING = 1u << 6, /* padding entries must be >= 0 */
};

/* For a leaf that cannot serve some attributes: refuses (-1) the first one
 * of `mask` whose value is not the default (padding: not all zero;
 * NX_CONV_NONNEG_PADDING: some entry negative), with
 *   LEAF: attribute lhs_dilation=[2,1] is not supported (this leaf takes
 *   lhs_dilation [1,1] only)
 * Returns 0 when every attribute of the mask is at its default. */
int nx_conv_require_default(const nx_conv_params *p, unsigned mask, const char *leaf,
                            nx_error *err);

/* JSON text of one attribute's value in *p (one of the NX_CONV_* bits but
 * NX_CONV_NONNEG_PADDING), e.g. "[2,1]", "[[1,1],[0,2]]", "3". */
void nx_conv_format_attr(const nx_conv_params *p, unsigned which, char *buf, size_t len);

#endif
