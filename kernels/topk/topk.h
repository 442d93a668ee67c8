/* The top-k leaves (docs/parts/topk.md): the three methods of the top-k
 * method mapping (kernels/topk/topk_methods.h, SupportedTopkMethods), and what
 * the `topk` composite and the registry's rules share with them.
 *
 * Semantics (ONNX TopK along the last axis): for every row of x [..., n],
 * the k preferred elements in order, among equal ones the lower index
 * first; largest (default) prefers large values, largest = false small ones
 * (the k smallest, ascending). NaN is larger than +inf (all NaNs equal, as
 * numpy's sort and torch.topk order them), -0 equals +0. The kernels rank
 * by fp32 keys and knock found elements out with -inf, so a key below every
 * element is needed: the narrower types have room in fp32 and are exact;
 * fp32 has none below -inf, so there -inf ranks as -FLT_MAX (largest) and
 * FLT_MAX, +inf and NaN rank alike (largest = false), the lower index first
 * among them. Values are the selected input elements, bit for bit, in x's
 * dtype; indices are int32. Float types and the 8/16-bit integer types
 * (exact in fp32 keys) are accepted; rows of up to 2^24 elements (the
 * kernels compute indices in fp32).
 *
 * Leaf call (kernels/kernel.h): args[0] = x (input), args[1] = values
 * [..., k] (x's dtype), args[2] = indices [..., k] (int32); attributes k
 * (required, 1..n), largest (bool or 0/1, default true), axis (must name
 * the last axis; the `topk` composite serves the others by transposes),
 * plus the tuning knobs folds (CASCADED / ROTATIONAL: folds per row, a power
 * of two) and chunk (largest free size one max8 scan takes, 8..max8's
 * limit). Rows are split between the programs of the grid (contiguous
 * shares, nx_kctx_rows) when there is more than one; each program writes
 * only its rows. */
#ifndef NXSIM_KERNELS_TOPK_TOPK_H
#define NXSIM_KERNELS_TOPK_TOPK_H

#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/kernel.h"

/* SupportedTopkMethods.SCANNING: rows on partitions, rounds of max8 +
 * match_replace8 (kernels/topk/naive_scanning_topk.c). */
int naive_scanning_topk(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);
/* SupportedTopkMethods.CASCADED: a scanning top-k per fold of a row (folds
 * on partitions), then one over the folds' candidates
 * (kernels/topk/cascaded_2_stage_topk.c). */
int cascaded_2_stage_topk(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);
/* SupportedTopkMethods.ROTATIONAL: a top-k per fold, then candidate lists
 * moved between folds through PE transposes and merged until the last fold
 * holds the row's top-k (kernels/topk/rotational_topk.c). */
int rotational_topk(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);

/* The folds per row that cascaded_2_stage_topk (rotational 0) or
 * rotational_topk (rotational 1) choose for one program holding `rows` rows
 * of n elements on geo (without the folds attribute); 1 means the leaf runs
 * the scanning program. */
uint32_t nx_topk_folds(int rotational, const nx_geometry *geo, uint64_t rows, uint64_t n, uint64_t k);

/* ---- the scanning selection's pieces (kernels/topk/topk_tile.c) ----
 * What the leaves' rounds emit, for kernels that select from their own
 * tiles (the MoE router). Keys are fp32; -inf is the knock-out value. */

/* DVE max8: dst8 (8 fp32 per partition) <- the 8 largest of in, descending. */
int nx_topk_max8(struct nx_kctx *k, const nx_operand *dst8, const nx_operand *in, nx_error *err);
/* DVE match_replace8 dst <- in with the elements matching the 8 values at
 * columns [voff, voff + 8) of vt (descending, as max8 wrote them) replaced
 * by `replacement`, their positions into columns [ioff, ioff + 8) of it
 * (int32), partitions [0, P): through reversed views, so equal values take
 * ascending positions (the lower index first). */
int nx_topk_knockout(struct nx_kctx *k, const nx_operand *dst, const nx_operand *in, const nx_tile *vt, uint64_t voff,
                     const nx_tile *it, uint64_t ioff, uint32_t P, double replacement, nx_error *err);

/* One selection of the L best of n keys per partition, L <= 8 x rounds:
 * round r scans `in` (r = 0; SBUF or PSUM, fp32 [P x max(n, 8)], -inf
 * padded below 8) or the knocked-out keys (r > 0), max8 into vals, then
 * match_replace8 knocks the round's values out into `keys` and writes
 * their positions into idx. The last round's unused value slots are set to
 * -inf first, so afterwards `keys` holds -inf at exactly the L selected
 * positions (besides any -inf of the input): a mask of the selection. */
typedef struct nx_topk_rowsel_args {
    nx_operand in;        /* the keys, [P x max(n, 8)] fp32 */
    uint32_t P;
    uint64_t n, L;        /* n >= L */
    const nx_tile *keys;  /* SBUF fp32, columns [keys_off, + max(n, 8)): the knocked-out keys */
    uint64_t keys_off;
    const nx_tile *vals;  /* fp32, columns [vals_off, + 8 ceil(L/8)): the values, descending */
    uint64_t vals_off;
    const nx_tile *idx;   /* int32, columns [idx_off, + 8 ceil(L/8)): their positions */
    uint64_t idx_off;
    /* optional [P x 1] fp32: -(the largest key), on VectorE right after
     * the first max8, ahead of the knock-out (a softmax's shift at the
     * earliest) */
    const nx_operand *neg_max;
    /* optional: what the first knock-out reads instead of `in`, the same
     * keys elsewhere (an SBUF copy of PSUM keys: max8 alone holds the
     * bank) */
    const nx_operand *knock_in;
} nx_topk_rowsel_args;
int nx_topk_rowsel(struct nx_kctx *k, const nx_topk_rowsel_args *a, nx_error *err);

/* ---- the attributes and the problem ---------------------------------------------- */

#define NX_TOPK_METHOD_NAME_MAX 16

typedef struct nx_topk_attrs {
    uint64_t k;
    int largest;
    int32_t axis;          /* normalised: 0 .. ndims - 1 */
    char method[NX_TOPK_METHOD_NAME_MAX]; /* "AUTO" (default) or a member name, unchecked here */
    uint32_t folds;        /* 0 = the leaf's choice */
    uint32_t chunk;        /* 0 = the machine's max8 limit */
} nx_topk_attrs;

/* Reads k, largest, axis, method, folds, chunk from attrs for an input of
 * `ndims` dims of `shape` (named `x_name` in messages) and checks them: k
 * an int in 1..the axis length, largest a bool or 0/1, axis an int in
 * -ndims..ndims-1, method a string, folds a power of two, chunk an int >= 8.
 * Errors name the attribute: "attribute k: 9 is larger than the axis
 * length 8 of operand 0 (x)". */
int nx_topk_read_attrs(const nx_attrs *attrs, const char *x_name, nx_dtype dtype, uint32_t ndims,
                       const uint64_t *shape, nx_topk_attrs *out, nx_error *err);

/* The results' shape: x's shape with the axis replaced by k. */
void nx_topk_result_shape(uint32_t ndims, const uint64_t *shape, const nx_topk_attrs *a, uint64_t *out);

/* 1 if dt is a type the leaves take (floats and 8/16-bit integers). */
int nx_topk_dtype_ok(nx_dtype dt);

#endif
