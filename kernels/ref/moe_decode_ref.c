/* Reference moe_decode (kernels/moe/moe_decode.h), written from the
 * semantics (docs/parts/moe-decode.md): per expert, its tokens' rows
 * through gate and up (OpenBLAS sgemm in fp32), h = act(g) * u rounded to
 * the dtype (the rounding the semantics names), the down projection, and
 * the affinity-weighted sum in fp32 rounded once to the dtype. It shares no
 * code with the kernel (the parameter reader aside). */
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "ref.h"

static void to_f32(nx_dtype dt, const uint8_t *src, uint64_t n, float *dst) {
    const size_t es = nx_dtype_size(dt);
    if (dt == NX_DT_FP32) {
        memcpy(dst, src, n * sizeof *dst);
        return;
    }
    for (uint64_t i = 0; i < n; i++) dst[i] = (float)nx_dtype_load(dt, src + i * es);
}

static float round_to(nx_dtype dt, float v) {
    if (dt == NX_DT_FP32) return v;
    uint8_t b[8];
    nx_dtype_store(dt, b, v);
    return (float)nx_dtype_load(dt, b);
}

int nx_ref_moe_decode(const nx_moe_decode_params *p, const void *const *in, void *out, nx_error *err) {
    const uint64_t T = p->T, H = p->H, NI = p->inter, E = p->E, K = p->k;
    const size_t es = nx_dtype_size(p->dtype);
    const float *aff = in[4];
    const int32_t *idx = in[5];
    for (uint64_t t = 0; t < T; t++)
        for (uint64_t j = 0; j < K; j++) {
            const int32_t e = idx[t * K + j];
            if (e < -1 || e >= (int64_t)E)
                return nx_fail(err, "operand 5 (indices): indices[%llu, %llu] = %d is outside [-1, E = %llu)",
                               (unsigned long long)t, (unsigned long long)j, e, (unsigned long long)E);
        }
    if (H > INT32_MAX || NI > INT32_MAX) return nx_fail(err, "moe_decode reference: H and I must fit a BLAS int");
    float *coef = calloc(T * E, sizeof *coef), *acc = calloc(T * H, sizeof *acc);
    float *X = malloc(T * H * sizeof *X), *xe = malloc(T * H * sizeof *xe), *w = malloc(H * NI * sizeof *w);
    float *g = malloc(T * NI * sizeof *g), *u = malloc(T * NI * sizeof *u), *y = malloc(T * H * sizeof *y);
    uint64_t *tok = malloc(T * sizeof *tok);
    int rc = -1;
    if (!coef || !acc || !X || !xe || !w || !g || !u || !y || !tok) {
        nx_fail(err, "moe_decode reference: out of memory");
        goto out;
    }
    for (uint64_t t = 0; t < T; t++) {
        if (p->all)
            for (uint64_t e = 0; e < E; e++) coef[t * E + e] = aff[t * E + e];
        else
            for (uint64_t j = 0; j < K; j++) {
                const int32_t e = idx[t * K + j];
                if (e >= 0) coef[t * E + (uint64_t)e] += aff[t * E + (uint64_t)e];
            }
    }
    to_f32(p->dtype, in[0], T * H, X);
    const uint8_t *wg = in[1], *wu = in[2], *wd = in[3];
    for (uint64_t e = 0; e < E; e++) {
        /* the tokens through expert e: every token ("all"), else those with
         * a slot naming it */
        uint64_t n = 0;
        for (uint64_t t = 0; t < T; t++) {
            int uses = p->all;
            for (uint64_t j = 0; j < K && !uses; j++) uses = idx[t * K + j] == (int32_t)e;
            if (uses) tok[n++] = t;
        }
        if (n == 0) continue;
        for (uint64_t r = 0; r < n; r++) memcpy(xe + r * H, X + tok[r] * H, H * sizeof *xe);
        to_f32(p->dtype, wg + e * H * NI * es, H * NI, w);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)NI, (int)H, 1.0f, xe, (int)H, w, (int)NI,
                    0.0f, g, (int)NI);
        to_f32(p->dtype, wu + e * H * NI * es, H * NI, w);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)NI, (int)H, 1.0f, xe, (int)H, w, (int)NI,
                    0.0f, u, (int)NI);
        for (uint64_t i = 0; i < n * NI; i++) g[i] = round_to(p->dtype, (float)nx_act_apply(p->act, g[i]) * u[i]);
        to_f32(p->dtype, wd + e * NI * H * es, NI * H, w);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)H, (int)NI, 1.0f, g, (int)NI, w, (int)H,
                    0.0f, y, (int)H);
        for (uint64_t r = 0; r < n; r++) {
            const float c = coef[tok[r] * E + e];
            for (uint64_t h = 0; h < H; h++) acc[tok[r] * H + h] += c * y[r * H + h];
        }
    }
    for (uint64_t i = 0; i < T * H; i++) nx_dtype_store(p->dtype, (uint8_t *)out + i * es, acc[i]);
    rc = 0;
out:
    free(coef), free(acc), free(X), free(xe), free(w), free(g), free(u), free(y), free(tok);
    return rc;
}
