/* The attention reference (kernels/ref/ref.h): per batch, query head and
 * block of query rows, the scores q k^T by OpenBLAS cblas_sgemm in fp32,
 * scaled, the spec's masks (causal: keys after the query's position
 * Skv - Sq + i; window W: keys at positions <= p - W), a plain softmax in
 * double over the visible keys and the sink logit, P rounded to the input
 * dtype, then P v by cblas_sgemm in fp32, rounded once. A row with no
 * visible key is 0. Written from the semantics (docs/parts/attention.md),
 * independent of the kernel's tiling and online softmax. */
#include <math.h>
#include <stdlib.h>

#include <cblas.h>

#include "ref.h"

#define REF_ROWS 256u

static float *to_f32(nx_dtype dt, const void *src, uint64_t n) {
    float *f = malloc((size_t)n * sizeof *f);
    if (!f) return NULL;
    const size_t es = nx_dtype_size(dt);
    for (uint64_t i = 0; i < n; i++) f[i] = (float)nx_dtype_load(dt, (const unsigned char *)src + i * es);
    return f;
}

int nx_ref_attention(const nx_attention_params *p, const void *q, const void *k, const void *v, const float *sink,
                     void *out, nx_error *err) {
    const uint64_t D = p->D, Sq = p->Sq, Skv = p->Skv, G = p->Hq / p->Hkv;
    const size_t es = nx_dtype_size(p->dtype);
    const uint64_t rows = Sq < REF_ROWS ? Sq : REF_ROWS;
    float *kf = NULL, *vf = NULL, *qf = NULL, *s = malloc((size_t)(rows * Skv) * sizeof(float));
    float *o = malloc((size_t)(rows * D) * sizeof(float));
    int rc = -1;
    if (!s || !o) goto oom;
    for (uint64_t b = 0; b < p->B; b++)
        for (uint64_t h = 0; h < p->Hq; h++) {
            uint64_t hk = h / G;
            if (h % G == 0) {
                free(kf), free(vf);
                kf = to_f32(p->dtype, (const unsigned char *)k + (b * p->Hkv + hk) * Skv * D * es, Skv * D);
                vf = to_f32(p->dtype, (const unsigned char *)v + (b * p->Hkv + hk) * Skv * D * es, Skv * D);
                if (!kf || !vf) goto oom;
            }
            free(qf);
            qf = to_f32(p->dtype, (const unsigned char *)q + (b * p->Hq + h) * Sq * D * es, Sq * D);
            if (!qf) goto oom;
            for (uint64_t r0 = 0; r0 < Sq; r0 += rows) {
                uint64_t nr = Sq - r0 < rows ? Sq - r0 : rows;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nr, (int)Skv, (int)D, 1.0f, qf + r0 * D,
                            (int)D, kf, (int)D, 0.0f, s, (int)Skv);
                for (uint64_t i = 0; i < nr; i++) {
                    int64_t pos = (int64_t)Skv - (int64_t)Sq + (int64_t)(r0 + i);
                    float *row = s + i * Skv;
                    double m = -INFINITY, sum = 0;
                    for (uint64_t j = 0; j < Skv; j++) {
                        int masked = (p->causal && (int64_t)j > pos) ||
                                     (p->window && (int64_t)j <= pos - (int64_t)p->window);
                        double x = masked ? -INFINITY : (double)(float)((double)row[j] * p->scale);
                        row[j] = (float)x;
                        if (x > m) m = x;
                    }
                    if (p->sink && (double)sink[h] > m) m = sink[h];
                    if (m == -INFINITY) {
                        for (uint64_t j = 0; j < Skv; j++) row[j] = 0;
                        continue;
                    }
                    for (uint64_t j = 0; j < Skv; j++) sum += row[j] == -INFINITY ? 0 : exp((double)row[j] - m);
                    if (p->sink) sum += exp((double)sink[h] - m);
                    for (uint64_t j = 0; j < Skv; j++) {
                        double e = row[j] == -INFINITY ? 0 : exp((double)row[j] - m) / sum;
                        unsigned char buf[8];
                        nx_dtype_store(p->dtype, buf, e); /* P rounded to the input dtype */
                        row[j] = (float)nx_dtype_load(p->dtype, buf);
                    }
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nr, (int)D, (int)Skv, 1.0f, s, (int)Skv, vf,
                            (int)D, 0.0f, o, (int)D);
                unsigned char *dst = (unsigned char *)out + ((b * p->Hq + h) * Sq + r0) * D * es;
                for (uint64_t e = 0; e < nr * D; e++) nx_dtype_store(p->dtype, dst + e * es, o[e]);
            }
        }
    rc = 0;
    goto done;
oom:
    nx_fail(err, "nx_ref_attention: out of memory");
done:
    free(s), free(o), free(kf), free(vf), free(qf);
    return rc;
}
