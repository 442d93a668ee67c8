/* The `decoder_layer` composite of the production roster (the inventory's
 * llama3_transformer block; docs/parts/decoder-layer.md): one Llama-style
 * decoder layer composed from the roster kernels on one authoring context
 * per core.
 *   operands  0 x [B, S, H], 1 gamma_attn [H], 2 w_qkv [H, (nq + 2 nkv) d],
 *             3 w_o [nq d, H], 4 gamma_mlp [H], 5 w_gate [H, I],
 *             6 w_up [H, I], 7 w_down [I, H], 8 cos, 9 sin [B, S, d/2],
 *             10 k_cache, 11 v_cache [B, nkv, S_max, d], 12 lengths [B] int32;
 *   h   = x + attention(rope(qkv(rmsnorm(x) gamma_attn))) w_o, the
 *         attention of attention_decode: query t of row b at position
 *         L_b + t reads the cached positions below L_b and the new ones up
 *         to its own (S from 1 to 8 in one step, larger S one flash
 *         attention over the cache and the new keys);
 *   out = h + mlp(rmsnorm(h) gamma_mlp) (silu-gated);
 *   results   out [B, S, H], k_cache and v_cache with the S new entries
 *             written at L_b .. L_b + S - 1 (every other entry unchanged).
 * Every intermediate a matmul reads is rounded to x's dtype (q, k, v, the
 * attention output, o = attn w_o, h, the normed rows, a = silu(g) u).
 * Attributes n_q_heads, n_kv_heads (n_q_heads), head_dim (w_qkv's width /
 * (nq + 2 nkv)), eps (1e-6), tp (1 | 2: heads and I split over the two
 * cores with an all-reduce after w_o and after w_down). */
#ifndef NXSIM_KERNELS_LAYER_LAYER_H
#define NXSIM_KERNELS_LAYER_LAYER_H

#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/kernel.h"
#include "kernels/norms/norms.h"

#define NX_LAYER_OPERANDS 13
#define NX_LAYER_STEP 8 /* new tokens per attention_decode step */

typedef struct nx_layer_params {
    nx_dtype dtype;
    uint64_t B, S, H, nq, nkv, d, inter, S_max; /* inter = I */
    double eps;
    uint32_t tp;
} nx_layer_params;

extern const char *const nx_layer_attrs[];

/* Reads attrs (NULL: defaults) and checks the operands in[0 .. n_in). */
int nx_layer_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_layer_params *p, nx_error *err);

/* The kernel: call->args = the 13 operands, then out, k_cache, v_cache. */
int nx_decoder_layer(nx_kctx *k, const nx_kernel_call *call, nx_error *err);

#endif
