/* The reference tier: plain C on host arrays, written for clarity, the
 * oracle for the kernel tests and `nxsim run --check`. No reference uses
 * the ISA, the authoring layer or the simulator. Arrays are C-contiguous
 * (row-major), little-endian elements of the given dtype; functions never
 * allocate what they return (the caller sizes `out`). Errors: -1 with a
 * one-line message naming the bad argument. */
#ifndef NXSIM_KERNELS_REF_REF_H
#define NXSIM_KERNELS_REF_REF_H

#include <stdint.h>

#include "isa/dtype.h"
#include "isa/error.h"
#include "kernels/attention/decode.h"
#include "kernels/blockwise_mm/blockwise_mm_params.h"
#include "kernels/conv/conv_params.h"
#include "kernels/conv/onnx/conv_onnx.h"
#include "kernels/elementwise/elementwise.h"
#include "kernels/matmul/matmul.h"
#include "kernels/mlp/mlp.h"
#include "kernels/moe/moe_decode.h"
#include "kernels/moe/router.h"
#include "kernels/norms/norms.h"
#include "kernels/resize/resize_rule.h"
#include "kernels/scan/scan.h"
#include "kernels/select_and_scatter/params.h"
#include "kernels/attention/flash.h"
#include "kernels/qkv/qkv.h"
#include "kernels/layer/layer.h"

#define NX_REF_MAX_DIMS 6

/* out = np.transpose(in, perm): out's dim k is in's dim perm[k], so
 * out[i_0..i_{n-1}] = in[j] with j[perm[k]] = i_k. perm NULL = reversed
 * dims (numpy's default); entries may be negative (counted from the end).
 * Elements are moved as bytes (bit-exact). ndims 1..NX_REF_MAX_DIMS; a zero
 * dim is an empty array. in and out must not overlap. */
int nx_ref_transpose(const void *in, nx_dtype dtype, uint32_t ndims, const uint64_t *shape,
                     const int64_t *perm, void *out, nx_error *err);

/* ResizeNearest: data [N, H, W, C] -> out [N, rule.axis[0].out,
 * rule.axis[1].out, C], out[b, oy, ox, :] = in[b, src_y(oy), src_x(ox), :]
 * with the axis rules of kernels/resize/resize_rule.h (in_shape[1..2] must be the
 * rule's inputs). Bytes are copied (bit-exact for every dtype). */
int nx_ref_resize_nearest(const void *in, nx_dtype dtype, const uint64_t in_shape[4],
                          const nx_resize_rule *rule, void *out, nx_error *err);
/* The source coordinate of output coordinate x on one axis (fp32 on the
 * host, exactly as kernels/resize/resize_rule.h defines it). */
uint64_t nx_ref_resize_src(const nx_resize_axis *ax, uint64_t x);

/* XLA SelectAndScatter with select = GE and scatter = add (semantics:
 * kernels/select_and_scatter/select_and_scatter.h) of `operand` (shape
 * shape[0 .. p->rank)) and `source` (the window counts of p), both of dtype:
 * out (the operand's shape) = init_value, then for each source element in
 * row-major order its window is scanned row-major, padding skipped, and
 * out[selected] += source (an fp32 add stored in dtype). Any rank and dtype. */
int nx_ref_select_and_scatter(const void *operand, const void *source, nx_dtype dtype, const uint64_t *shape,
                              const nx_sas_params *p, void *out, nx_error *err);

/* blockwise_mm (MoE prefill; semantics: kernels/blockwise_mm/blockwise_mm_params.h):
 * in[0..5] are the six operands in their order (hidden_states, affinities,
 * gate_up_proj_weight, down_proj_weight, token_position_to_id,
 * block_to_expert) with p's shapes and dtypes; out is (T+1, H) of
 * p->dtype. Projections are OpenBLAS sgemms in fp32 over each block's
 * valid tokens; x * a (PRE_SCALE) and h are rounded to p->dtype as the
 * semantics says; contributions accumulate in fp32 and the output is
 * rounded once. Allocates fp32 copies of one expert's weights and of one
 * block's activations, freed before returning. Errors: zero sizes, sizes
 * beyond a BLAS int, out of memory. */
int nx_ref_blockwise_mm(const nx_bwmm_params *p, const void *const in[NX_BWMM_OPERANDS], void *out,
                        nx_error *err);
/* An input array of a reference: C-contiguous elements of `dtype` over
 * shape[0 .. ndims). Borrowed. */
typedef struct nx_ref_operand {
    const void *data;
    nx_dtype dtype;
    uint32_t ndims;
    const uint64_t *shape;
} nx_ref_operand;

/* XLA ConvGeneralDilated (semantics, attributes and output-size formula:
 * kernels/conv/conv_params.h) of lhs and rhs under the dimension labels
 * `labels` ("bf01_oi01->bf01", "0f1b_0i1o->01fb", "bf0_oi0->bf0", ...;
 * 1..NX_CONV_MAX_SPATIAL spatial dims) and window/group attributes p
 * (p->spatial must equal the labels' spatial count; p->out_shape, if set,
 * must equal the result). Inputs of any dtype are read exactly as fp32
 * (every float dtype converts exactly), computed in fp32 (im2col + OpenBLAS
 * cblas_sgemm, so sums are in sgemm's order), and the result is stored as
 * out_dtype with round-to-nearest-even. out_shape must be the shape
 * nx_conv_result_shape gives. Allocates fp32 copies of all three tensors
 * plus a patch buffer of about 16 MiB (freed before returning). Errors:
 * bad labels, a shape/attribute rule (nx_conv_result_shape's messages), a
 * mismatched out_shape, out of memory. */
int nx_ref_conv(const char *labels, const nx_conv_params *p, const nx_ref_operand *lhs,
                const nx_ref_operand *rhs, void *out, nx_dtype out_dtype, uint32_t out_ndims,
                const uint64_t *out_shape, nx_error *err);

/* result[M, N] = lhsT[K, M]^T @ rhs[K, N] (the NKI matmul tutorial's
 * operands: the left-hand side delivered transposed, K first): inputs of
 * any dtype read exactly as fp32, OpenBLAS cblas_sgemm, stored as out_dtype
 * (round-to-nearest-even). out holds M x N elements of out_dtype, row-major.
 * Allocates fp32 copies of the three matrices (freed before returning).
 * Errors: not 2-D, K differs, unknown dtype, sizes beyond a BLAS int, out of
 * memory. */
int nx_ref_matmul_lhsT(const nx_ref_operand *lhsT, const nx_ref_operand *rhs, void *out, nx_dtype out_dtype,
                       nx_error *err);

/* ONNX TopK (docs/parts/topk.md) of `in` (C-contiguous, `ndims` dims of
 * `shape`) along `axis` (negative counts from the end): for every line
 * along the axis, the k preferred elements in order (largest != 0: the
 * largest first; else the smallest first), among equal ones the lower index
 * first. NaN is larger than +inf. fp32 only: -inf ranks as -FLT_MAX with
 * largest, and FLT_MAX, +inf and NaN rank alike without (the kernels'
 * knock-out needs a key below every element; fp32 has none below -inf).
 * values (in's dtype, the selected input elements copied as bytes) and
 * indices (int32) have in's shape with the axis replaced by k. 1 <= k <= the
 * axis length. Allocates one line of keys (freed before returning). */
int nx_ref_topk(const void *in, nx_dtype dtype, uint32_t ndims, const uint64_t *shape, int32_t axis,
                uint64_t k, int largest, void *values, int32_t *indices, nx_error *err);

/* ---- the norms family (kernels/norms/) ---- */

/* rmsnorm over p->rows rows of p->H: x, gamma [, r] [, scale] in the
 * dtypes of p; out[0 .. p->n_results) the results in their order
 * (nx_rmsnorm_result). x' = x + r is an fp32 add rounded to x's dtype (as
 * the result holds it) and y is computed from it; s = max(fp32(max|y| /
 * fp8_max), 1e-6) in fp32, q = fp8_e4m3(y / s) or fp8_e4m3(y / scale). */
int nx_ref_rmsnorm(const nx_rmsnorm_params *p, const void *x, const void *gamma, const void *r, const void *scale,
                   void *const *out, nx_error *err);

/* softmax along p->axis of x ([outer, A, inner] by p), y of x's dtype:
 * max, exp(x - max), its sum and the quotient in double, one rounding. A
 * NaN in a line makes the line NaN; +Inf gives NaN (Inf - Inf), as numpy. */
int nx_ref_softmax(const nx_softmax_params *p, const void *x, void *y, nx_error *err);

/* layernorm over p->rows rows of p->H (X, Scale [, B] in p's dtypes):
 * out[0] = Y, out[1] = Mean, out[2] = InvStdDev, all of X's dtype; mean and
 * variance by two passes in double. */
int nx_ref_layernorm(const nx_layernorm_params *p, const void *x, const void *scale, const void *bias,
                     void *const *out, nx_error *err);

/* ---- the elementwise family and matmul (kernels/elementwise/, kernels/matmul/) ---- */

/* cumsum along p's axis: for every line, an fp32 running sum from -0 in
 * axis order (last to first with reverse), as ONNX CumSum and numpy's
 * cumsum of float32 compute it; the element before the add with exclusive
 * (+0 for the first). Each y is rounded once to p->dtype. int32: the
 * exact sum modulo 2^32 (two's complement). */
int nx_ref_cumsum(const nx_cumsum_params *p, const void *x, void *y, nx_error *err);

/* rope (layout by p): x [B, H, S, D], cos and sin [S, D/2] or [B, S, D/2]
 * of p's dtypes; out of x's dtype, each element x_a cos - x_b sin (or + )
 * in double, rounded once. */
int nx_ref_rope(const nx_rope_params *p, const void *x, const void *cos_, const void *sin_, void *out, nx_error *err);

/* ONNX MatMul (kernels/matmul/matmul.h) of a and b into c (p->out_shape,
 * p->dtype): per result matrix an fp32 sgemm, rounded once. Allocates fp32
 * copies of one matrix each (freed before returning). */
int nx_ref_matmul(const nx_matmul_params *p, const void *a, const void *b, void *c, nx_error *err);

/* collective_matmul (kernels/collective/collective_matmul.h): A [M, K] @
 * B [K, N] over the whole K as one fp32 sgemm, rounded once to p->dtype
 * (the split over the cores plays no part). */
int nx_ref_collective_matmul(const nx_matmul_params *p, const void *a, const void *b, void *c, nx_error *err);

/* attention (kernels/attention/flash.h): q [B, Hq, Sq, D], k and v
 * [B, Hkv, Skv, D], sink [Hq] fp32 (NULL without), out of q's dtype: the
 * masked fp32 scores, a softmax in double with the sink logit, P rounded
 * to the dtype, P v in fp32 (OpenBLAS), rounded once; a row with no
 * visible key is 0. */
int nx_ref_attention(const nx_attention_params *p, const void *q, const void *k, const void *v, const float *sink,
                     void *out, nx_error *err);
/* ---- the state-space scan (kernels/scan/) ---- */

/* selective_scan (kernels/scan/scan.h): in[] the operands in order (u,
 * delta, A, Bm, Cm [, D] [, h0]); the recurrence per (batch, channel,
 * state) in double in sequence order, softplus(delta) as torch computes it
 * (threshold 20); y [B, C, L] rounded once to p->dtype, h_final [B, C, N]
 * once to fp32. */
int nx_ref_selective_scan(const nx_scan_params *p, const void *const *in, void *y, void *h_final, nx_error *err);
/* ONNX Conv (the `conv` composite, kernels/conv/onnx/conv_onnx.h) of x
 * (NCHW), w (OIHW) and b ([O], NULL: none) into y (NCHW), all of p->dtype:
 * a direct sum per output element in double, rounded to fp32 then to the
 * dtype, then + b[o] in fp32, rounded again. */
int nx_ref_conv_onnx(const nx_conv_onnx_params *p, const void *x, const void *w, const void *b, void *y, nx_error *err);
/* ---- attention_decode (kernels/attention/decode.h) ---- */

/* Decode attention: in = the operands of p (q, k_cache, v_cache, k_new,
 * v_new, lengths [, block_table] [, sink]), out = out, k_cache', v_cache'.
 * Per query row a softmax over the keys it reads in double, P rounded to
 * the dtype before P V; refuses lengths with L_b + s beyond S_max and
 * (paged) a used block id outside the cache. */
int nx_ref_attention_decode(const nx_decode_params *p, const void *const *in, void *const *out, nx_error *err);

/* ---- the MoE family (kernels/moe/) ---- */

/* router_topk (kernels/moe/router.h): x [T, H] and w [H, E] in p->dtype,
 * bias [E] in p->bias_dtype (when p->bias, else NULL); logits and
 * affinities [T, E] fp32, indices [T, k] int32 (descending logits, ties to
 * the lower index; NaN ranks above every number). Logits by cblas_sgemm
 * plus the bias in fp32, the activation and normalisation in double. */
int nx_ref_router_topk(const nx_router_params *p, const void *x, const void *w, const void *bias, float *logits,
                       float *affinities, int32_t *indices, nx_error *err);

/* ---- moe_decode (kernels/moe/moe_decode.h) ----
 * in = x, w_gate, w_up, w_down, affinities, indices; out = [T, H] of x's
 * dtype. Expert by expert (the ones some slot names, or all), the tokens
 * that use it gathered into an fp32 matrix: G = X Wg and U = X Wu by
 * OpenBLAS sgemm, h = act(G) (fp32) times U rounded to the dtype, Y = h Wd
 * by sgemm, out_t += coef(t, e) Y_t in fp32 (coef = affinities[t, e] times
 * the slots of t naming e; "all": affinities[t, e]); out rounded once.
 * Refuses an index outside [-1, E). */
int nx_ref_moe_decode(const nx_moe_decode_params *p, const void *const *in, void *out, nx_error *err);

/* ---- qkv (kernels/qkv/qkv.h) ----
 * in[] the operands in p's order (x, w [, gamma] [, bias] [, cos, sin]);
 * out[] the results (bsd: out [B, S, N]; heads: q, k, v). h = rmsnorm(x) *
 * gamma rounded to the dtype, the projection in fp32 (OpenBLAS), bias and
 * the rotate-half of the q and k heads in double, one rounding. */
int nx_ref_qkv(const nx_qkv_params *p, const void *const *in, void *const *out, nx_error *err);

/* ---- the dense MLP (kernels/mlp/) ---- */
/* mlp (kernels/mlp/mlp.h): in[] the operands in their order (x, w_gate,
 * w_up, w_down [, gamma] [, r]) with p's shapes and dtype; out[0] the
 * result of x's shape [, out[1] x' with residual]. fp32 sgemms, the
 * roundings of the definition (kernels/ref/mlp_ref.c). */
int nx_ref_mlp(const nx_mlp_params *p, const void *const *in, void *const *out, nx_error *err);

/* ---- decoder_layer (kernels/layer/layer.h) ----
 * in[] the 13 operands, out[] out, k_cache', v_cache'. The composition of
 * the references above, every intermediate rounded to the dtype as the
 * definition says: nx_ref_qkv (rms norm, rope, heads), nx_ref_attention_decode
 * per step of up to 8 new positions (lengths + 8 j; the steps' query rows
 * are independent, so the steps change nothing), nx_ref_matmul (w_o),
 * nx_ref_mlp (residual x + o, rms norm, silu), then h + mlp in fp32 rounded
 * once. tp plays no part (the unsplit math). */
int nx_ref_decoder_layer(const nx_layer_params *p, const void *const *in, void *const *out, nx_error *err);

#endif
