/* The `attention` composite (context encoding, flash style): q [B, Hq, Sq, D],
 * k and v [B, Hkv, Skv, D], [sink [Hq] fp32 when sink=true]; attributes
 * causal (true), scale (1/sqrt(D)), sliding_window (0: none), sink (false).
 * Query head h reads kv head h / (Hq / Hkv); query i sits at position
 * Skv - Sq + i, key j at j; causal masks keys after the query, a window
 * W > 0 keys at positions <= p - W. softmax in fp32 with the sink as one
 * more logit (no value), P rounded to the input dtype before P V; out
 * [B, Hq, Sq, D] of q's dtype. A row that sees no key (causal with
 * Sq > Skv) is 0. docs/parts/attention.md: plan, numerics, figures. */
#ifndef NXSIM_KERNELS_ATTENTION_FLASH_H
#define NXSIM_KERNELS_ATTENTION_FLASH_H

#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/kernel.h"
#include "kernels/norms/norms.h"

#define NX_ATTN_D_MAX 256u

typedef struct nx_attention_params {
    nx_dtype dtype;
    uint64_t B, Hq, Hkv, Sq, Skv, D;
    int causal, sink;
    double scale;
    uint64_t window; /* 0: none */
} nx_attention_params;

extern const char *const nx_attention_attrs[];
/* Reads attrs (NULL: defaults) and checks the operands in[0 .. n_in). */
int nx_attention_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_attention_params *p,
                      nx_error *err);
/* The visible key range [*lo, *hi) of query row i (empty: *lo >= *hi). */
void nx_attention_keys(const nx_attention_params *p, uint64_t i, int64_t *lo, int64_t *hi);
int nx_attention_flash(nx_kctx *k, const nx_kernel_call *call, nx_error *err);

/* decoder_layer's prefill onto a cache (an internal entry, not an
 * attribute of `attention`): the keys are [cache ; new]. Key columns
 * [0, Sc) are rows 0 .. Sc - 1 of each kv head of the caches (kv head g of
 * batch row b at k / v + (b b_pitch + g S_max) D elements), visible to
 * every query of row b iff below L_b = lengths[b] (int32, read at run time,
 * L_b <= Sc: the trace bounds them by Sc and masks the rest); then the
 * call's k and v, the new keys, causal among themselves (query i sees new
 * key j iff j <= i). Causal, no window; the call is attention's (q, k, v
 * [, sink], out). docs/parts/decoder-layer.md. */
typedef struct nx_attention_cache {
    uint64_t k, v;    /* byte offsets of kv head 0 of batch row 0 */
    uint64_t b_pitch; /* elements between batch rows */
    uint64_t S_max;   /* rows between kv heads */
    uint64_t lengths; /* byte offset of lengths [B] int32 */
    uint64_t Sc;      /* the trace's bound on L_b: the cached key columns */
    uint64_t out_pitch; /* 0: out [B, Hq, Sq, D]; else the token layout: row i of
                         * head h of batch row b at ((b Sq + i) out_pitch + h D) */
} nx_attention_cache;
int nx_attention_flash_cached(nx_kctx *k, const nx_kernel_call *call, const nx_attention_cache *cache,
                              nx_error *err);

#endif
