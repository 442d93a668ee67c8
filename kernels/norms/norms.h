/* The norms family: rmsnorm (and, following it, the other row-wise
 * composites of the production roster), written against the authoring layer
 * (kernels/author/author.h). docs/parts/norms.md describes the math, the
 * operands, the plan and what nxsim measures for each.
 *
 * rmsnorm (the public NKI RMSNorm tutorial's kernel, aws-neuron-sdk
 * general/nki/tutorials/rmsnorm.rst, nki_rmsnorm_kernel, extended with the
 * residual add and the fp8 quantisation of the production rmsnorm kernels):
 *   operands  x [..., H], gamma [H], [r [..., H] with residual=true],
 *             [scale [1] fp32 with quant="static"];
 *   x' = x + r (rounded to x's dtype);
 *   y  = x' / sqrt(mean(x'^2 over the last axis) + eps) * gamma;
 *   results   quant "none":   y (x's dtype) [, x'];
 *             quant "row":    q fp8_e4m3 [..., H], s fp32 [..., 1] with
 *                             s = max(max|y| / fp8_max, 1e-6) per row and
 *                             q = fp8_e4m3(y / s) [, x'];
 *             quant "static": q = fp8_e4m3(y / scale) [, x'].
 * Attributes: eps (float >= 0, default 1e-6), quant ("none" | "row" |
 * "static", default "none"), fp8_max (float > 0, default 240.0), residual
 * (bool, default false).
 *
 * Errors name the operand or attribute, the value and the limit; the same
 * function (nx_rmsnorm_read) checks an op for the rules and a call for the
 * kernel. */
#ifndef NXSIM_KERNELS_NORMS_NORMS_H
#define NXSIM_KERNELS_NORMS_NORMS_H

#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/kernel.h"

typedef enum nx_rmsnorm_quant {
    NX_RMSNORM_QUANT_NONE = 0,
    NX_RMSNORM_QUANT_ROW,
    NX_RMSNORM_QUANT_STATIC,
} nx_rmsnorm_quant;

/* A tensor as the norms read it: name (for errors), dtype, shape. */
typedef struct nx_norm_tensor {
    const char *name;
    nx_dtype dtype;
    uint32_t ndims;
    const uint64_t *shape;
} nx_norm_tensor;

typedef struct nx_rmsnorm_params {
    double eps;
    double fp8_max;
    nx_rmsnorm_quant quant;
    int residual;
    nx_dtype dtype;       /* x's (and r's, y's and x''s) */
    nx_dtype gamma_dtype;
    uint64_t rows;        /* product of x's leading dims */
    uint64_t H;           /* x's last dim */
    uint32_t n_operands;  /* 2 + residual + (quant == static) */
    uint32_t n_results;   /* none/static: 1, row: 2; + 1 with residual */
    uint32_t r_operand, scale_operand; /* operand positions (0 when absent) */
} nx_rmsnorm_params;

/* The attribute names rmsnorm reads, NULL-terminated. */
extern const char *const nx_rmsnorm_attrs[];

/* Reads attrs (NULL: defaults) and checks the operands in[0 .. n_in):
 * counts, ranks, shapes, dtypes. */
int nx_rmsnorm_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_rmsnorm_params *p,
                    nx_error *err);

/* Result j's dtype and shape (x's shape, or x's leading dims and 1 for s). */
void nx_rmsnorm_result(const nx_rmsnorm_params *p, const nx_norm_tensor *x, uint32_t j, nx_dtype *dtype,
                       uint32_t *ndims, uint64_t *shape);

/* The kernel: call->args = the operands above, then the results. */
int nx_rmsnorm(nx_kctx *k, const nx_kernel_call *call, nx_error *err);

/* rmsnorm's statistics of rows x (partitions [0, n), H elements each, on
 * ScalarE): sq = x^2 (scratch of x's size), ss = the fp32 sum of the
 * squares, rstd = 1 / sqrt(ss / H + eps) (one fp32 column each). */
int nx_rms_stats(nx_kctx *k, const nx_operand *sq, const nx_operand *x, const nx_operand *ss, const nx_operand *rstd,
                 uint64_t H, double eps, nx_error *err);

/* ---- softmax ----
 * ONNX Softmax (opset 13): y = exp(x - max) / sum(exp(x - max)) along
 * attribute `axis` (default -1, negative counts from the end), fp32 inside,
 * y of x's dtype and shape. The kernel follows the NKI softmax of the public
 * fused-attention kernels (max on VectorE, exp with its row sum on ScalarE's
 * accumulate form, the division on GpSimd). x is viewed as [outer, A,
 * inner]; with inner > 1 a tile's lines are `inner`-strided in HBM. */
typedef struct nx_softmax_params {
    nx_dtype dtype;
    uint32_t axis;   /* 0 .. rank-1 */
    uint64_t outer, A, inner;
} nx_softmax_params;

extern const char *const nx_softmax_attrs[];
int nx_softmax_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_softmax_params *p,
                    nx_error *err);
int nx_softmax(nx_kctx *k, const nx_kernel_call *call, nx_error *err);

/* ---- layernorm ----
 * ONNX LayerNormalization (opset 17): operands X, Scale [, B]; Scale and B
 * have X's dims axis .. rank-1. Attributes axis (-1), epsilon (1e-5), bias
 * (default: true when three operands are given), stash_type (1 only: fp32
 * statistics, ONNX's default). Normalises over dims axis .. rank-1:
 *   Mean = mean(X), InvStdDev = 1 / sqrt(mean((X - Mean)^2) + epsilon),
 *   Y = (X - Mean) * InvStdDev * Scale [+ B];
 * results Y (X's shape), Mean and InvStdDev (X.shape[:axis] followed by
 * rank - axis ones), all of X's dtype. The kernel follows the NKI
 * layernorm tutorial (aws-neuron-sdk general/nki/tutorials/layernorm.rst,
 * its bn_stats / bn_aggr version): statistics on VectorE in chunks of 512,
 * X - Mean on ScalarE, the products with Scale and the bias on GpSimd. */
typedef struct nx_layernorm_params {
    nx_dtype dtype, scale_dtype, bias_dtype;
    uint32_t axis;
    int bias;
    double epsilon;
    uint64_t rows, H;
} nx_layernorm_params;

extern const char *const nx_layernorm_attrs[];
int nx_layernorm_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_layernorm_params *p,
                      nx_error *err);
/* Result j's shape (0: Y, 1: Mean, 2: InvStdDev); its dtype is X's. */
void nx_layernorm_result(const nx_layernorm_params *p, const nx_norm_tensor *x, uint32_t j, uint32_t *ndims,
                         uint64_t *shape);
int nx_layernorm(nx_kctx *k, const nx_kernel_call *call, nx_error *err);

/* ---- attribute readers the norms share (errors name the attribute) ---- */

/* A number (INT or FLOAT) into *out, default when absent. */
int nx_norm_attr_number(const nx_attrs *attrs, const char *name, double dflt, double *out, nx_error *err);
/* A bool (true/false, or INT 0/1) into *out, default when absent. */
int nx_norm_attr_bool(const nx_attrs *attrs, const char *name, int dflt, int *out, nx_error *err);
/* An INT into *out, default when absent. */
int nx_norm_attr_int(const nx_attrs *attrs, const char *name, int64_t dflt, int64_t *out, nx_error *err);
/* Attribute `name` (INT, default dflt) as an axis of a rank-`rank` tensor:
 * [-rank, rank) with negatives from the end, into 0 .. rank-1. */
int nx_norm_attr_axis(const nx_attrs *attrs, const char *name, int64_t dflt, uint32_t rank, uint32_t *out,
                      nx_error *err);
/* Operand 0 of a kernel along one axis (`what` names the kernel): fp32 or
 * bf16, rank 1..NX_KERNEL_MAX_DIMS, attribute `axis` (default -1) in
 * range; x viewed as [outer, A, inner] around it. */
int nx_norm_axis_operand(const nx_attrs *attrs, const nx_norm_tensor *x, const char *what, uint32_t *axis,
                         uint64_t *outer, uint64_t *A, uint64_t *inner, nx_error *err);
/* operand i must be fp32 or bf16 (`what` names the kernel). */
int nx_norm_float_operand(const nx_norm_tensor *t, uint32_t i, const char *what, nx_error *err);

#endif
