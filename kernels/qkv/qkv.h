/* The `qkv` composite (the production roster's dense QKV projection,
 * docs/parts/qkv.md): x [B, S, H], w [H, (nq + 2 nkv) d], [gamma [H] with
 * norm="rms" (the default)], [bias [(nq + 2 nkv) d] with bias=true],
 * [cos, sin [S, d/2] or [B, S, d/2] with rope=true]. Attributes n_q_heads,
 * n_kv_heads (default n_q_heads), head_dim (default w's width / (nq + 2 nkv)),
 * norm ("rms" | "none"), eps (1e-6), layout ("bsd" | "heads"), bias, rope
 * (when not given: what the operand count beyond x, w [, gamma] says, 1 the
 * bias, 2 cos and sin, 3 all three; else false), and nxsim's plan ("auto" |
 * "decode" | "prefill": which tiling and core split; the results do not
 * depend on it).
 *   h = rmsnorm(x) * gamma (or x), rounded to x's dtype (the PE's input);
 *   p = h w (+ bias), fp32;
 *   the q and k heads (columns [0, (nq + nkv) d)) rotated (rotate-half):
 *     out[:d/2] = p1 cos - p2 sin, out[d/2:] = p2 cos + p1 sin;
 *   results: bsd   out [B, S, (nq + 2 nkv) d] (q heads, k heads, v heads);
 *            heads q [B, nq, S, d], k [B, nkv, S, d], v [B, nkv, S, d];
 *   of x's dtype, one rounding of the fp32 value. */
#ifndef NXSIM_KERNELS_QKV_QKV_H
#define NXSIM_KERNELS_QKV_QKV_H

#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/kernel.h"
#include "kernels/norms/norms.h"

typedef enum nx_qkv_plan { NX_QKV_PLAN_AUTO = 0, NX_QKV_PLAN_DECODE, NX_QKV_PLAN_PREFILL } nx_qkv_plan;

typedef struct nx_qkv_params {
    nx_dtype dtype;                         /* x's, w's and the results' */
    nx_dtype gamma_dtype, bias_dtype, cs_dtype;
    uint64_t B, S, H, nq, nkv, d, N;        /* N = (nq + 2 nkv) d */
    int norm, bias, rope, heads, cs_batched; /* heads: layout "heads" */
    double eps;
    nx_qkv_plan plan;
    uint32_t n_operands;                    /* 2 + norm + bias + 2 rope */
    uint32_t gamma_op, bias_op, cos_op;     /* operand positions (0: absent); sin is cos_op + 1 */
} nx_qkv_params;

extern const char *const nx_qkv_attrs[];

/* Reads attrs (NULL: defaults) and checks the operands in[0 .. n_in). */
int nx_qkv_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_qkv_params *p, nx_error *err);

/* Results: 1 (bsd) or 3 (heads); result j's shape. */
uint32_t nx_qkv_n_results(const nx_qkv_params *p);
void nx_qkv_result_shape(const nx_qkv_params *p, uint32_t j, uint32_t *ndims, uint64_t *shape);

/* The kernel (kernels/qkv/qkv.c): call->args = the operands, then the results. */
int nx_qkv(nx_kctx *k, const nx_kernel_call *call, nx_error *err);

/* Where w's columns are in HBM when w is a column selection of a wider
 * weight (decoder_layer's tp 2 shard of the unsharded w_qkv: its q heads,
 * k heads and v heads, three column blocks of the full rows): w's element
 * [r, c] of head block j (0 q, 1 k, 2 v) is at element r * ld + col[j] +
 * (c - the block's first column of w) from w's hbm_offset. ld 0: w as it
 * is ([H, N] packed, nx_qkv's layout). Internal to the composites (not an
 * attribute): the caller's w operand keeps the shard's shape. */
typedef struct nx_qkv_wview {
    uint64_t ld;     /* row pitch, elements */
    uint64_t col[3]; /* first column of the q, k and v heads */
} nx_qkv_wview;

/* nx_qkv reading w through a view (NULL: as nx_qkv). */
int nx_qkv_viewed(nx_kctx *k, const nx_kernel_call *call, const nx_qkv_wview *view, nx_error *err);

#endif
