/* attention's operand and attribute rules (kernels/attention/flash.h),
 * shared by the rules, the reference and the kernel. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "flash.h"

const char *const nx_attention_attrs[] = {"causal", "scale", "sliding_window", "sink", NULL};

static const char *const op_names[4] = {"q", "k", "v", "sink"};

int nx_attention_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_attention_params *p,
                      nx_error *err) {
    memset(p, 0, sizeof *p);
    int64_t w;
    if (nx_norm_attr_bool(attrs, "causal", 1, &p->causal, err) != 0 ||
        nx_norm_attr_bool(attrs, "sink", 0, &p->sink, err) != 0 ||
        nx_norm_attr_int(attrs, "sliding_window", 0, &w, err) != 0)
        return -1;
    if (w < 0) return nx_fail(err, "attribute sliding_window: %lld is negative (0 = none)", (long long)w);
    p->window = (uint64_t)w;
    uint32_t want = 3 + (uint32_t)p->sink;
    if (n_in != want)
        return nx_fail(err, "attention takes %u operands (q, k, v%s), the op has %u", want,
                       p->sink ? ", sink (sink=true)" : "", n_in);
    for (uint32_t i = 0; i < 3; i++) {
        if (nx_norm_float_operand(&in[i], i, "attention", err) != 0) return -1;
        if (in[i].ndims != 4)
            return nx_fail(err, "operand %u (%s): rank %u, attention takes %s [B, H, S, D]", i, in[i].name,
                           in[i].ndims, op_names[i]);
    }
    const nx_norm_tensor *q = &in[0], *kk = &in[1], *v = &in[2];
    p->dtype = q->dtype;
    p->B = q->shape[0], p->Hq = q->shape[1], p->Sq = q->shape[2], p->D = q->shape[3];
    p->Hkv = kk->shape[1], p->Skv = kk->shape[2];
    for (uint32_t i = 1; i < 3; i++)
        if (in[i].dtype != q->dtype)
            return nx_fail(err, "operand %u (%s): dtype %s differs from operand 0 (%s)'s %s", i, in[i].name,
                           nx_dtype_name(in[i].dtype), q->name, nx_dtype_name(q->dtype));
    if (kk->shape[0] != p->B || kk->shape[3] != p->D)
        return nx_fail(err, "operand 1 (%s): k must be [%llu, Hkv, Skv, %llu] (q's B and D), got [%llu, %llu, %llu, %llu]",
                       kk->name, (unsigned long long)p->B, (unsigned long long)p->D, (unsigned long long)kk->shape[0],
                       (unsigned long long)kk->shape[1], (unsigned long long)kk->shape[2],
                       (unsigned long long)kk->shape[3]);
    if (memcmp(v->shape, kk->shape, 4 * sizeof *kk->shape) != 0)
        return nx_fail(err, "operand 2 (%s): v must have k's shape [%llu, %llu, %llu, %llu]", v->name,
                       (unsigned long long)kk->shape[0], (unsigned long long)kk->shape[1],
                       (unsigned long long)kk->shape[2], (unsigned long long)kk->shape[3]);
    if (p->B == 0 || p->Hq == 0 || p->Sq == 0 || p->D == 0 || p->Hkv == 0 || p->Skv == 0)
        return nx_fail(err, "operand 0 (%s): every dim of q, k and v must be > 0", q->name);
    if (p->Hq % p->Hkv)
        return nx_fail(err, "operand 1 (%s): Hkv = %llu does not divide Hq = %llu", kk->name,
                       (unsigned long long)p->Hkv, (unsigned long long)p->Hq);
    if (p->D % 2) return nx_fail(err, "operand 0 (%s): D = %llu must be even", q->name, (unsigned long long)p->D);
    if (p->D > NX_ATTN_D_MAX)
        return nx_fail(err, "operand 0 (%s): D = %llu beyond %u", q->name, (unsigned long long)p->D, NX_ATTN_D_MAX);
    if (p->Sq > INT32_MAX / 2 || p->Skv > INT32_MAX / 2)
        return nx_fail(err, "operand 0 (%s): sequence lengths beyond 2^30", q->name);
    if (nx_norm_attr_number(attrs, "scale", 1.0 / sqrt((double)p->D), &p->scale, err) != 0) return -1;
    if (p->scale == 0) return nx_fail(err, "attribute scale: must be nonzero");
    if (p->sink) {
        const nx_norm_tensor *s = &in[3];
        if (s->dtype != NX_DT_FP32)
            return nx_fail(err, "operand 3 (%s): dtype %s, the sink is fp32", s->name, nx_dtype_name(s->dtype));
        if (s->ndims != 1 || s->shape[0] != p->Hq)
            return nx_fail(err, "operand 3 (%s): the sink must be [%llu] (Hq)", s->name, (unsigned long long)p->Hq);
    }
    return 0;
}

void nx_attention_keys(const nx_attention_params *p, uint64_t i, int64_t *lo, int64_t *hi) {
    int64_t pos = (int64_t)p->Skv - (int64_t)p->Sq + (int64_t)i;
    *lo = 0, *hi = (int64_t)p->Skv;
    if (p->causal && pos + 1 < *hi) *hi = pos + 1;
    if (p->window && pos - (int64_t)p->window + 1 > *lo) *lo = pos - (int64_t)p->window + 1;
}
