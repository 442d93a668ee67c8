/* The `attention_decode` composite (token generation against a KV cache),
 * as docs/parts/attention-decode.md defines it:
 *   operands  q [B, Hq, s, D], k_cache, v_cache [B, Hkv, S_max, D] (paged:
 *             [num_blocks, Hkv, N, D]), k_new, v_new [B, Hkv, s, D],
 *             lengths [B] int32, [block_table [B, max_blocks] int32 when
 *             block_size = N > 0], [sink [Hq] fp32 when sink = true];
 *   results   out [B, Hq, s, D], then k_cache and v_cache with k_new / v_new
 *             written at positions L_b .. L_b + s - 1 (every other entry
 *             unchanged); out of q's dtype, the caches of theirs.
 * Query t of row b sits at position L_b + t and reads the cached positions
 * below L_b and the new ones up to its own; sliding_window W > 0 also masks a
 * key at position <= p - W; the sink is one extra logit per head in the
 * softmax's normalisation. Attributes: scale (1/sqrt(D)), sliding_window
 * (0), sink (false), block_size (0 = contiguous caches).
 *
 * One reader (nx_decode_read) checks an op for the rules and a call for the
 * kernel; errors name the operand or attribute, the value and the limit. */
#ifndef NXSIM_KERNELS_ATTENTION_DECODE_H
#define NXSIM_KERNELS_ATTENTION_DECODE_H

#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/kernel.h"
#include "kernels/norms/norms.h"

#define NX_DECODE_MAX_S 8
#define NX_DECODE_MAX_D 256
/* DMA lanes the kernel takes (nx_kctx_set_lanes): a composite that calls it
 * sets them before its own first instruction. */
#define NX_DECODE_LANES 64u

typedef struct nx_decode_params {
    nx_dtype dtype;             /* q's, the caches' and the new entries' */
    uint64_t B, Hq, Hkv, G, s, D;
    uint64_t S_max;             /* positions a row can hold (paged: max_blocks x N) */
    int paged;
    uint64_t N, num_blocks, max_blocks; /* paged only */
    int sink;
    uint64_t window;            /* 0: none */
    double scale;
    uint32_t n_operands;        /* 6 + paged + sink */
    uint32_t bt_operand, sink_operand; /* positions (0 when absent) */
} nx_decode_params;

extern const char *const nx_decode_attrs[];

/* Reads attrs (NULL: defaults) and checks the operands in[0 .. n_in). */
int nx_decode_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_decode_params *p,
                   nx_error *err);

/* The kernel: call->args = the operands above, then out, k_cache', v_cache'. */
int nx_attention_decode(nx_kctx *k, const nx_kernel_call *call, nx_error *err);

#endif
