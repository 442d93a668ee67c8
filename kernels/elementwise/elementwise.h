/* The elementwise and scan composites of the production roster: cumsum
 * (and, following it, rope), written against the authoring layer with the
 * row tiling of kernels/norms/rows.h. docs/parts/norms.md describes the
 * math, the plans and what nxsim measures.
 *
 * cumsum: ONNX CumSum (attributes instead of the axis input: the trace needs
 * the axis, not a value): x of fp32, bf16 or int32, attributes axis (-1,
 * any axis), exclusive (0), reverse (0); y of x's dtype and shape:
 *   y[i] = sum of x[j] for j <= i (j < i exclusive; j >= i / j > i reverse)
 * accumulated in fp32 along the axis, each y rounded once; int32 exact with
 * two's-complement wrap (kernels/elementwise/cumsum_int.c). */
#ifndef NXSIM_KERNELS_ELEMENTWISE_ELEMENTWISE_H
#define NXSIM_KERNELS_ELEMENTWISE_ELEMENTWISE_H

#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/kernel.h"
#include "kernels/norms/norms.h"

typedef struct nx_cumsum_params {
    nx_dtype dtype;
    uint32_t axis;
    int exclusive, reverse;
    uint64_t outer, A, inner;
} nx_cumsum_params;

extern const char *const nx_cumsum_attrs[];
int nx_cumsum_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_cumsum_params *p,
                   nx_error *err);
int nx_cumsum(nx_kctx *k, const nx_kernel_call *call, nx_error *err);

/* rope: rotary position embedding (the production RoPE kernel's
 * interface): x [B, n_heads, S, D], cos and sin [S, D/2] or [B, S, D/2]
 * (both the same shape and dtype); attribute layout "half" (default,
 * rotate-half: out[..., :D/2] = x1 cos - x2 sin, out[..., D/2:] = x2 cos +
 * x1 sin, x1 = x[..., :D/2], x2 = x[..., D/2:]) or "interleaved" (pairs
 * (2i, 2i+1): out[2i] = x[2i] cos_i - x[2i+1] sin_i, out[2i+1] = x[2i+1]
 * cos_i + x[2i] sin_i). D even, up to 256. out of x's dtype and shape. */
typedef struct nx_rope_params {
    nx_dtype dtype, cs_dtype;
    int interleaved;
    int cs_batched; /* cos/sin [B, S, D/2] */
    uint64_t B, H, S, D;
} nx_rope_params;

extern const char *const nx_rope_attrs[];
int nx_rope_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_rope_params *p, nx_error *err);
int nx_rope(nx_kctx *k, const nx_kernel_call *call, nx_error *err);

/* rope's rotation as a piece (kernels/elementwise/rope_rotate.c; rope and
 * qkv call it): partitions [0, n) hold R rows of D each, contiguous; each
 * row has its own cos/sin position (cos [n, R D/2], signed sin [n, R D])
 * or, `shared`, the R rows of a partition share one (cos [n, D/2], signed
 * sin [n, D]: qkv's heads of one token). */
typedef struct nx_rope_rows {
    uint32_t n, R, D;
    int interleaved, shared;
} nx_rope_rows;
/* sn = [-sin, sin] per row (half) or the pairs (-sin_i, sin_i)
 * (interleaved), from sr's raw sin [n, R D/2] (shared: R = 1), on GpSimd. */
int nx_rope_signed_sin(nx_kctx *k, const nx_rope_rows *g, const nx_tile *sn, const nx_tile *sr, nx_dtype cdt,
                       nx_error *err);
/* The two products of the rows starting at element x0 of x (dtype dt):
 * a = x * [cos, cos] on VectorE, b = [x2, x1] * [-sin, sin] on GpSimd (a and
 * b of R D elements per partition); out = a + b is the caller's (rope lags
 * it behind the next tiles' products). */
int nx_rope_products(nx_kctx *k, const nx_rope_rows *g, const nx_tile *x, nx_dtype dt, uint64_t x0,
                     const nx_tile *cs, const nx_tile *sn, nx_dtype cdt, const nx_operand *a, const nx_operand *b,
                     nx_error *err);

#endif
