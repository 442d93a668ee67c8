/* The MoE references (kernels/ref/ref.h), from the semantics of
 * kernels/moe/router.h alone: no tiling, no knock-out, no mask.
 *
 * router_topk: logits = x w by OpenBLAS cblas_sgemm on the operands read
 * exactly as fp32, plus the bias in fp32; per token the k largest logits by
 * a plain selection (larger first, NaN above every number as max8 ranks
 * it, among equal logits the lower index); the activation in double:
 * softmax over all E shifted by the row max (pre_norm) or over the k
 * selected, sigmoid per logit; norm_topk divides the selected by their sum. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

static int ranks_above(float a, float b) {
    if (isnan(a)) return !isnan(b);
    if (isnan(b)) return 0;
    return a > b;
}

static float *as_f32(nx_dtype dt, const void *src, uint64_t n) {
    float *f = malloc((n ? n : 1) * sizeof *f);
    if (!f) return NULL;
    const size_t es = nx_dtype_size(dt);
    for (uint64_t i = 0; i < n; i++) f[i] = (float)nx_dtype_load(dt, (const unsigned char *)src + i * es);
    return f;
}

static double activate(const nx_router_params *p, float l, double shift) {
    return p->act == NX_ROUTER_SIGMOID ? 1.0 / (1.0 + exp(-(double)l)) : exp((double)l - shift);
}

int nx_ref_router_topk(const nx_router_params *p, const void *x, const void *w, const void *bias, float *logits,
                       float *affinities, int32_t *indices, nx_error *err) {
    const uint64_t T = p->T, H = p->H, E = p->E, K = p->k;
    float *xf = as_f32(p->dtype, x, T * H), *wf = as_f32(p->dtype, w, H * E);
    float *bf = p->bias ? as_f32(p->bias_dtype, bias, E) : NULL;
    uint8_t *taken = malloc(E);
    int rc = -1;
    if (!xf || !wf || (p->bias && !bf) || !taken) {
        nx_fail(err, "router_topk reference: out of memory for T = %llu, H = %llu, E = %llu", (unsigned long long)T,
                (unsigned long long)H, (unsigned long long)E);
        goto out;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, (int)E, (int)H, 1.0f, xf, (int)H, wf, (int)E, 0.0f,
                logits, (int)E);
    for (uint64_t t = 0; t < T; t++) {
        float *l = logits + t * E, *a = affinities + t * E;
        int32_t *ix = indices + t * K;
        if (bf)
            for (uint64_t e = 0; e < E; e++) l[e] = l[e] + bf[e];
        memset(taken, 0, E);
        for (uint64_t j = 0; j < K; j++) {
            uint64_t best = E;
            for (uint64_t e = 0; e < E; e++)
                if (!taken[e] && (best == E || ranks_above(l[e], l[best]))) best = e;
            taken[best] = 1;
            ix[j] = (int32_t)best;
        }
        const int softmax = p->act == NX_ROUTER_SOFTMAX, over_all = softmax && p->pre_norm && !p->norm_topk;
        const int normalise = p->norm_topk || (softmax && !p->pre_norm);
        double shift = l[ix[0]], z = 0, zs = 0;
        if (over_all) {
            shift = -INFINITY;
            for (uint64_t e = 0; e < E; e++) shift = l[e] > shift ? l[e] : shift;
            for (uint64_t e = 0; e < E; e++) z += activate(p, l[e], shift);
        }
        for (uint64_t j = 0; j < K; j++) zs += activate(p, l[ix[j]], shift);
        for (uint64_t e = 0; e < E; e++) a[e] = 0.0f;
        for (uint64_t j = 0; j < K; j++) {
            double v = activate(p, l[ix[j]], shift);
            a[ix[j]] = (float)(over_all ? v / z : normalise ? v / zs : v);
        }
    }
    rc = 0;
out:
    free(xf);
    free(wf);
    free(bf);
    free(taken);
    return rc;
}
