/* The online-softmax step of flash attention (Dao et al., FlashAttention,
 * 2022, Algorithm 1; the running max and sum of the NKI flash attention
 * kernel, aws-neuron-sdk nki/kernels/attention.py), shared by the attention
 * kernels of kernels/attention/. docs/parts/attention.md explains the plan.
 *
 * Scores are kept raw (q . k, fp32 in PSUM) and scaled inside ScalarE's
 * exp; the running max is kept negated and scaled, nm = -max(scale * s), so
 * that it is directly exp's per-partition bias. A step over a score tile S
 * of n rows (any columns; masked entries hold a huge negative value):
 *   DVE  r      = -max(S)  (min when scale < 0)           tensor_reduce
 *   DVE  nm_new = min(r * scale, nm_old)                  tensor_scalar (or POOL)
 *   ACT  alpha  = exp(nm_new - nm_old)                    (not on the first step)
 *   ACT  P      = exp(scale * S + nm_new), rounded to P's dtype
 *   ACT  acc    = acc * alpha                             (the rescale, if acc given)
 * The row sum of P comes from exp's accumulate output when `rowsum` is
 * given; folding it into the running sum (l = l alpha + rowsum) is the
 * caller's (flash attention does it on GpSimd). */
#ifndef NXSIM_KERNELS_ATTENTION_SOFTMAX_STEP_H
#define NXSIM_KERNELS_ATTENTION_SOFTMAX_STEP_H

#include "kernels/author/author.h"

typedef struct nx_attn_step {
    nx_operand s;        /* PSUM [n, w] fp32: raw scores */
    double scale;        /* nonzero, finite */
    nx_operand negmax;   /* SBUF [n, 1] fp32 scratch */
    nx_operand nm_old;   /* SBUF [n, 1] fp32: -max before the step */
    nx_operand nm_new;   /* SBUF [n, 1] fp32: -max after it (not nm_old) */
    nx_operand alpha;    /* SBUF [n, 1] fp32: exp(m_old - m_new) */
    nx_operand p;        /* SBUF [n, w]: the unnormalised probabilities */
    nx_operand rowsum;   /* SBUF [n, 1] fp32: their fp32 row sum (ACT accumulate), or kind NONE */
    const nx_operand *acc; /* PSUM [n, F] fp32 to rescale by alpha, or NULL */
    int first;           /* no alpha and no rescale */
    int nm_on_pool;      /* the nm update on GpSimd (SBUF operands), off VectorE */
} nx_attn_step;

int nx_attn_softmax_step(nx_kctx *k, const nx_attn_step *st, nx_error *err);
/* Its two halves, for a pipeline that emits them apart: the statistics
 * (DVE: r, nm_new) and the exponentials (ACT: alpha, P, the rescale). */
int nx_attn_softmax_stats(nx_kctx *k, const nx_attn_step *st, nx_error *err);
/* The statistics' two instructions apart (r = -max, then nm_new), so a
 * pipeline can put independent DVE work between them instead of idling
 * through the reduce's dependency latency. */
int nx_attn_softmax_max(nx_kctx *k, const nx_attn_step *st, nx_error *err);
int nx_attn_softmax_nm(nx_kctx *k, const nx_attn_step *st, nx_error *err);
int nx_attn_softmax_exp(nx_kctx *k, const nx_attn_step *st, nx_error *err);

/* The end of a row tile: l = acc_l (+ exp(sink + nm) when sink is given),
 * out = acc / max(l, 1e-30), rounded to out's dtype (a row that saw no
 * key has acc = l = 0 and gets 0). acc PSUM [n, D], acc_l [n, 1] (PSUM or
 * SBUF), sink / nm SBUF [n, 1] fp32 or NULL, scratch SBUF [n, 2] fp32. */
int nx_attn_normalize(nx_kctx *k, const nx_operand *acc, const nx_operand *acc_l, const nx_operand *sink,
                      const nx_operand *nm, const nx_tile *scratch, const nx_operand *out, nx_error *err);

#endif
