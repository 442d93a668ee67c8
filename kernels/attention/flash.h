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

#endif
