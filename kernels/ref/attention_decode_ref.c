/* The attention_decode reference (kernels/ref/ref.h): for every query row a
 * plain softmax(scale q K^T) V over the keys it may read, in double, from
 * the semantics of kernels/attention/decode.h alone (no tiling, no online
 * softmax). P is rounded to the input dtype before P V, as the kernel does
 * and the roster says; the sink joins the normalisation. The caches are
 * copied and the new entries written at L_b .. L_b + s - 1. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

static double ld(nx_dtype dt, const void *base, uint64_t i) {
    return nx_dtype_load(dt, (const unsigned char *)base + i * nx_dtype_size(dt));
}

/* Element offset of position j, element 0, of kv head g of row b in a cache. */
static uint64_t cache_at(const nx_decode_params *p, const int32_t *bt, uint64_t b, uint64_t g, uint64_t j) {
    if (!p->paged) return ((b * p->Hkv + g) * p->S_max + j) * p->D;
    uint64_t blk = (uint64_t)bt[b * p->max_blocks + j / p->N];
    return ((blk * p->Hkv + g) * p->N + j % p->N) * p->D;
}

static int check_rows(const nx_decode_params *p, const int32_t *len, const int32_t *bt, nx_error *err) {
    for (uint64_t b = 0; b < p->B; b++) {
        if (len[b] < 0 || (uint64_t)len[b] + p->s > p->S_max)
            return nx_fail(err, "operand 5 (lengths): lengths[%llu] = %d, with s = %llu new tokens, beyond S_max = %llu",
                           (unsigned long long)b, len[b], (unsigned long long)p->s, (unsigned long long)p->S_max);
        if (!p->paged) continue;
        for (uint64_t j = 0; j * p->N < (uint64_t)len[b] + p->s; j++) {
            int32_t blk = bt[b * p->max_blocks + j];
            if (blk < 0 || (uint64_t)blk >= p->num_blocks)
                return nx_fail(err, "operand 6 (block_table): block_table[%llu][%llu] = %d is outside the cache's %llu blocks",
                               (unsigned long long)b, (unsigned long long)j, blk, (unsigned long long)p->num_blocks);
        }
    }
    return 0;
}

int nx_ref_attention_decode(const nx_decode_params *p, const void *const *in, void *const *out, nx_error *err) {
    const nx_dtype dt = p->dtype;
    const size_t es = nx_dtype_size(dt);
    const void *q = in[0], *kc = in[1], *vc = in[2], *kn = in[3], *vn = in[4];
    const int32_t *len = in[5], *bt = p->paged ? in[p->bt_operand] : NULL;
    const float *sink = p->sink ? in[p->sink_operand] : NULL;
    if (check_rows(p, len, bt, err) != 0) return -1;
    const uint64_t D = p->D, nkeys = p->S_max + p->s;
    double *sc = malloc(nkeys * sizeof *sc), *acc = malloc(D * sizeof *acc);
    uint64_t *at = malloc(nkeys * sizeof *at);
    uint8_t *isnew = malloc(nkeys);
    if (!sc || !acc || !at || !isnew) {
        free(sc), free(acc), free(at), free(isnew);
        return nx_fail(err, "nx_ref_attention_decode: out of memory");
    }
    for (uint64_t b = 0; b < p->B; b++)
        for (uint64_t h = 0; h < p->Hq; h++)
            for (uint64_t t = 0; t < p->s; t++) {
                const uint64_t g = h / p->G, L = (uint64_t)len[b], qp = L + t, qo = ((b * p->Hq + h) * p->s + t) * D;
                uint64_t n = 0;
                for (uint64_t j = 0; j < L + t + 1; j++) {
                    if (p->window && j + p->window <= qp) continue;
                    isnew[n] = j >= L;
                    at[n] = j < L ? cache_at(p, bt, b, g, j) : ((b * p->Hkv + g) * p->s + (j - L)) * D;
                    n++;
                }
                double m = sink ? (double)sink[h] : -INFINITY;
                for (uint64_t i = 0; i < n; i++) {
                    const void *kk = isnew[i] ? kn : kc;
                    double dot = 0;
                    for (uint64_t d = 0; d < D; d++) dot += ld(dt, q, qo + d) * ld(dt, kk, at[i] + d);
                    sc[i] = p->scale * dot;
                    if (sc[i] > m) m = sc[i];
                }
                double sum = sink ? exp((double)sink[h] - m) : 0;
                memset(acc, 0, D * sizeof *acc);
                for (uint64_t i = 0; i < n; i++) {
                    unsigned char pr[8];
                    nx_dtype_store(dt, pr, exp(sc[i] - m));
                    double w = nx_dtype_load(dt, pr);
                    const void *vv = isnew[i] ? vn : vc;
                    sum += w;
                    for (uint64_t d = 0; d < D; d++) acc[d] += w * ld(dt, vv, at[i] + d);
                }
                for (uint64_t d = 0; d < D; d++)
                    nx_dtype_store(dt, (unsigned char *)out[0] + (qo + d) * es, acc[d] / sum);
            }
    free(sc), free(acc), free(at), free(isnew);
    /* the caches: copied, then the new entries at L_b + t */
    uint64_t E = p->paged ? p->num_blocks * p->Hkv * p->N * D : p->B * p->Hkv * p->S_max * D;
    memcpy(out[1], kc, E * es);
    memcpy(out[2], vc, E * es);
    for (uint64_t b = 0; b < p->B; b++)
        for (uint64_t g = 0; g < p->Hkv; g++)
            for (uint64_t t = 0; t < p->s; t++) {
                uint64_t o = cache_at(p, bt, b, g, (uint64_t)len[b] + t), i = ((b * p->Hkv + g) * p->s + t) * D;
                memcpy((unsigned char *)out[1] + o * es, (const unsigned char *)kn + i * es, D * es);
                memcpy((unsigned char *)out[2] + o * es, (const unsigned char *)vn + i * es, D * es);
            }
    return 0;
}
