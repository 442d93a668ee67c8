/* The state-space scan family: selective_scan, the Mamba selective scan
 * (Gu and Dao, "Mamba: Linear-Time Sequence Modeling with Selective State
 * Spaces", 2023, its selective_scan_ref; the production inventory's
 * mamba_prefix_scan), written against the authoring layer. The kernel
 * follows the public NKI fused Mamba tutorial (aws-neuron-sdk
 * general/nki/tutorials/fused_mamba.rst, its sequence-tiled version).
 * docs/parts/scan.md has the plan, the tolerance and the figures.
 *
 * Operands, in order: u and delta [B, C, L], A [C, N], Bm and Cm [B, N, L],
 * [D [C] with skip=true], [h0 [B, C, N] fp32 with initial_state=true].
 * u, delta, Bm and Cm share one float dtype (fp32 or bf16); A and D are
 * fp32 or bf16. Attributes: delta_softplus (false), skip (false),
 * initial_state (false). Per batch b, channel c and state n:
 *   d_t = softplus(delta[c, t]) if delta_softplus else delta[c, t]
 *   h_t = exp(d_t A[c, n]) h_{t-1} + d_t Bm[n, t] u[c, t]   (h_0 = h0 or 0)
 *   y[c, t] = sum_n Cm[n, t] h_t[c, n] + D[c] u[c, t]
 * Results: y [B, C, L] of u's dtype, h_final [B, C, N] fp32 (h_L). */
#ifndef NXSIM_KERNELS_SCAN_SCAN_H
#define NXSIM_KERNELS_SCAN_SCAN_H

#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/kernel.h"
#include "kernels/norms/norms.h"

typedef struct nx_scan_params {
    nx_dtype dtype;            /* u, delta, Bm, Cm and y */
    nx_dtype a_dtype, d_dtype; /* A's, D's */
    int delta_softplus, skip, initial_state;
    uint64_t B, C, L, N;
    uint32_t n_operands;       /* 5 + skip + initial_state */
    uint32_t d_operand, h0_operand; /* positions (0 when absent) */
} nx_scan_params;

extern const char *const nx_scan_attrs[];

/* Reads attrs (NULL: defaults) and checks the operands in[0 .. n_in):
 * counts (the optional ones as the attributes ask), ranks, shapes, dtypes. */
int nx_scan_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_scan_params *p, nx_error *err);

/* The plan (kernels/scan/scan_plan.c): the sequence tile T, the states
 * per chunk (a step's unit of work) and the SBUF bytes per partition they
 * take, for machine geometry geo; -1 with "operand 3 (Bm): N = 9000
 * needs ... bytes per partition ... at the smallest tile (T = 64), SBUF
 * has ..." when nothing fits. */
typedef struct nx_scan_plan {
    uint64_t T;          /* sequence elements per tile */
    uint64_t nc, chunks; /* states per chunk, chunks per tile (ceil(N / nc)) */
    uint64_t ct_max;     /* channel tiles of one batch a core holds state for */
    uint64_t bytes;      /* SBUF bytes per partition */
    int pe_cm;           /* Cm broadcast by the PE (ones row x Cm rows), not by DMA */
} nx_scan_plan;
int nx_scan_plan_make(const nx_scan_params *p, const nx_geometry *geo, uint32_t cores, const char *bm_name,
                      nx_scan_plan *out, nx_error *err);

/* The kernel: call->args = the operands above, then y and h_final. */
int nx_selective_scan(nx_kctx *k, const nx_kernel_call *call, nx_error *err);

#endif
