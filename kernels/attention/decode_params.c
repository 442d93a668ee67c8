/* attention_decode's operand and attribute rules (kernels/attention/decode.h):
 * one home for what the rules check on an op and the kernel on a call. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "decode.h"

const char *const nx_decode_attrs[] = {"scale", "sliding_window", "sink", "block_size", NULL};

static const char *const names_[] = {"q", "k_cache", "v_cache", "k_new", "v_new", "lengths"};

static int want_rank(const nx_norm_tensor *t, uint32_t i, uint32_t rank, const char *what, nx_error *err) {
    if (t->ndims == rank) return 0;
    return nx_fail(err, "operand %u (%s): rank %u, %s must be %s", i, t->name, t->ndims, names_[i < 6 ? i : 0], what);
}

static int want_dim(const nx_norm_tensor *t, uint32_t i, uint32_t d, uint64_t v, const char *what, nx_error *err) {
    if (t->shape[d] == v) return 0;
    return nx_fail(err, "operand %u (%s): dim %u is %llu, must be %llu (%s)", i, t->name, d,
                   (unsigned long long)t->shape[d], (unsigned long long)v, what);
}

static int read_attrs(const nx_attrs *attrs, nx_decode_params *p, nx_error *err) {
    int64_t w, n;
    if (nx_norm_attr_int(attrs, "sliding_window", 0, &w, err) != 0 ||
        nx_norm_attr_bool(attrs, "sink", 0, &p->sink, err) != 0 ||
        nx_norm_attr_int(attrs, "block_size", 0, &n, err) != 0)
        return -1;
    if (w < 0) return nx_fail(err, "attribute sliding_window: %lld is negative (0 = no window)", (long long)w);
    if (n < 0) return nx_fail(err, "attribute block_size: %lld is negative (0 = contiguous caches)", (long long)n);
    p->window = (uint64_t)w;
    p->paged = n > 0;
    p->N = (uint64_t)n;
    return 0;
}

int nx_decode_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_decode_params *p,
                   nx_error *err) {
    memset(p, 0, sizeof *p);
    if (read_attrs(attrs, p, err) != 0) return -1;
    p->n_operands = 6 + (uint32_t)p->paged + (uint32_t)p->sink;
    if (n_in != p->n_operands)
        return nx_fail(err,
                       "attention_decode takes %u operands (q, k_cache, v_cache, k_new, v_new, lengths%s%s), the op "
                       "has %u",
                       p->n_operands, p->paged ? ", block_table" : "", p->sink ? ", sink" : "", n_in);
    p->bt_operand = p->paged ? 6 : 0;
    p->sink_operand = p->sink ? 6 + (uint32_t)p->paged : 0;
    const nx_norm_tensor *q = &in[0];
    if (nx_norm_float_operand(q, 0, "attention_decode", err) != 0 || want_rank(q, 0, 4, "[B, Hq, s, D]", err) != 0)
        return -1;
    p->dtype = q->dtype;
    p->B = q->shape[0], p->Hq = q->shape[1], p->s = q->shape[2], p->D = q->shape[3];
    if (p->s > NX_DECODE_MAX_S)
        return nx_fail(err, "operand 0 (%s): s = %llu new tokens, attention_decode takes 1 to %d", q->name,
                       (unsigned long long)p->s, NX_DECODE_MAX_S);
    if (p->D % 2 != 0 || p->D > NX_DECODE_MAX_D)
        return nx_fail(err, "operand 0 (%s): head dim D = %llu, must be even and at most %d", q->name,
                       (unsigned long long)p->D, NX_DECODE_MAX_D);
    for (uint32_t i = 1; i < 5; i++) {
        const nx_norm_tensor *t = &in[i];
        if (t->dtype != p->dtype)
            return nx_fail(err, "operand %u (%s): dtype %s differs from operand 0 (%s)'s %s", i, t->name,
                           nx_dtype_name(t->dtype), q->name, nx_dtype_name(p->dtype));
        if (want_rank(t, i, 4, i < 3 ? (p->paged ? "[num_blocks, Hkv, N, D]" : "[B, Hkv, S_max, D]") : "[B, Hkv, s, D]",
                      err) != 0)
            return -1;
    }
    const nx_norm_tensor *kc = &in[1];
    p->Hkv = kc->shape[1];
    if (p->Hq % p->Hkv != 0)
        return nx_fail(err, "operand 1 (%s): Hkv = %llu kv heads do not divide operand 0 (%s)'s Hq = %llu", kc->name,
                       (unsigned long long)p->Hkv, q->name, (unsigned long long)p->Hq);
    p->G = p->Hq / p->Hkv;
    if (p->paged) {
        p->num_blocks = kc->shape[0];
        if (want_dim(kc, 1, 2, p->N, "block_size", err) != 0) return -1;
    } else {
        p->S_max = kc->shape[2];
        if (want_dim(kc, 1, 0, p->B, "q's B", err) != 0) return -1;
    }
    if (want_dim(kc, 1, 3, p->D, "q's D", err) != 0) return -1;
    for (uint32_t d = 0; d < 4; d++)
        if (in[2].shape[d] != kc->shape[d])
            return nx_fail(err, "operand 2 (%s): dim %u is %llu, differs from operand 1 (%s)'s %llu", in[2].name, d,
                           (unsigned long long)in[2].shape[d], kc->name, (unsigned long long)kc->shape[d]);
    const uint64_t nw[4] = {p->B, p->Hkv, p->s, p->D};
    static const char *const nwhat[4] = {"q's B", "the caches' Hkv", "q's s", "q's D"};
    for (uint32_t i = 3; i < 5; i++)
        for (uint32_t d = 0; d < 4; d++)
            if (want_dim(&in[i], i, d, nw[d], nwhat[d], err) != 0) return -1;
    const nx_norm_tensor *len = &in[5];
    if (len->dtype != NX_DT_INT32)
        return nx_fail(err, "operand 5 (%s): dtype %s, lengths must be int32", len->name, nx_dtype_name(len->dtype));
    if (len->ndims != 1 || len->shape[0] != p->B)
        return nx_fail(err, "operand 5 (%s): lengths must be [B] = [%llu]", len->name, (unsigned long long)p->B);
    if (p->paged) {
        const nx_norm_tensor *bt = &in[p->bt_operand];
        if (bt->dtype != NX_DT_INT32)
            return nx_fail(err, "operand %u (%s): dtype %s, block_table must be int32", p->bt_operand, bt->name,
                           nx_dtype_name(bt->dtype));
        if (bt->ndims != 2 || bt->shape[0] != p->B)
            return nx_fail(err, "operand %u (%s): block_table must be [B = %llu, max_blocks]", p->bt_operand, bt->name,
                           (unsigned long long)p->B);
        p->max_blocks = bt->shape[1];
        p->S_max = p->max_blocks * p->N;
    }
    if (p->sink) {
        const nx_norm_tensor *sk = &in[p->sink_operand];
        if (sk->dtype != NX_DT_FP32 || sk->ndims != 1 || sk->shape[0] != p->Hq)
            return nx_fail(err, "operand %u (%s): sink must be fp32 [Hq] = [%llu]", p->sink_operand, sk->name,
                           (unsigned long long)p->Hq);
    }
    if (p->S_max < p->s)
        return nx_fail(err, "operand 1 (%s): the caches hold %llu positions, fewer than the s = %llu new ones", kc->name,
                       (unsigned long long)p->S_max, (unsigned long long)p->s);
    if (nx_norm_attr_number(attrs, "scale", 1.0 / sqrt((double)p->D), &p->scale, err) != 0) return -1;
    if (!(p->scale > 0))
        return nx_fail(err, "attribute scale: %g must be positive", p->scale);
    return 0;
}
