/* The qkv reference (kernels/ref/ref.h), from the roster's statement of the
 * math, independent of the kernel's tiling: per token the RMSNorm in double
 * (h rounded to the dtype once, as the PE reads it), the projection as one
 * OpenBLAS sgemm (fp32 accumulation), the bias and the rotate-half in
 * double, one rounding of each result element into its layout. The norm is
 * computed in fp32 steps (below): in double, an h element near a rounding
 * boundary of the dtype can round the other way, and one such element moves
 * a whole row of the projection by eps |h| |w|, more than the sum order
 * does. */
#include <math.h>
#include <stdlib.h>

#include <cblas.h>

#include "ref.h"

static double fp32(double v) { return (double)(float)v; }

/* v rounded to dt (h as the PE reads it). */
static double round_to(nx_dtype dt, double v) {
    unsigned char b[8];
    nx_dtype_store(dt, b, v);
    return nx_dtype_load(dt, b);
}

int nx_ref_qkv(const nx_qkv_params *p, const void *const *in, void *const *out, nx_error *err) {
    const uint64_t T = p->B * p->S, H = p->H, N = p->N, d = p->d, half = d / 2;
    if (T > INT32_MAX || H > INT32_MAX || N > INT32_MAX) return nx_fail(err, "nx_ref_qkv: dims beyond int32");
    const size_t es = nx_dtype_size(p->dtype);
    float *h = malloc((size_t)(T * H) * sizeof *h), *w = malloc((size_t)(H * N) * sizeof *w);
    float *y = malloc((size_t)(T * N) * sizeof *y);
    if (!h || !w || !y) {
        free(h), free(w), free(y);
        return nx_fail(err, "nx_ref_qkv: out of memory");
    }
    const unsigned char *x = in[0], *gm = p->norm ? in[p->gamma_op] : NULL, *bs = p->bias ? in[p->bias_op] : NULL;
    const unsigned char *co = p->rope ? in[p->cos_op] : NULL, *si = p->rope ? in[p->cos_op + 1] : NULL;
    const size_t ge = p->norm ? nx_dtype_size(p->gamma_dtype) : 0, be = p->bias ? nx_dtype_size(p->bias_dtype) : 0;
    const size_t ce = p->rope ? nx_dtype_size(p->cs_dtype) : 0;
    /* the norm in fp32 steps, as rmsnorm states it (each product and sum
     * rounded to fp32: a double product of two fp32 values is exact, so one
     * rounding per step), so h, which the projection multiplies, is the
     * same value the fp32 arithmetic of any plan gives; the projection's
     * own sum order is what the tolerance covers */
    const double inv_h = fp32(1.0 / (double)H), eps = fp32(p->eps);
    for (uint64_t t = 0; t < T; t++) {
        double rstd = 1.0;
        if (p->norm) {
            double ss = 0;
            for (uint64_t j = 0; j < H; j++) {
                double v = nx_dtype_load(p->dtype, x + (t * H + j) * es);
                ss = fp32(ss + fp32(v * v));
            }
            rstd = fp32(1.0 / sqrt(fp32(fp32(ss * inv_h) + eps)));
        }
        for (uint64_t j = 0; j < H; j++) {
            double v = nx_dtype_load(p->dtype, x + (t * H + j) * es);
            if (p->norm) v = fp32(fp32(v * rstd) * nx_dtype_load(p->gamma_dtype, gm + j * ge));
            h[t * H + j] = (float)round_to(p->dtype, v);
        }
    }
    for (uint64_t i = 0; i < H * N; i++) w[i] = (float)nx_dtype_load(p->dtype, (const unsigned char *)in[1] + i * es);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, (int)N, (int)H, 1.0f, h, (int)H, w, (int)N, 0.0f, y,
                (int)N);
    const uint64_t rot = p->rope ? (p->nq + p->nkv) * d : 0;
    double *row = malloc((size_t)N * sizeof *row);
    if (!row) {
        free(h), free(w), free(y);
        return nx_fail(err, "nx_ref_qkv: out of memory");
    }
    for (uint64_t t = 0; t < T; t++) {
        const uint64_t b = t / p->S, s = t % p->S;
        for (uint64_t c = 0; c < N; c++) row[c] = (double)y[t * N + c] + (bs ? nx_dtype_load(p->bias_dtype, bs + c * be) : 0);
        const uint64_t crow = ((p->cs_batched ? b * p->S : 0) + s) * half;
        for (uint64_t c0 = 0; c0 < rot; c0 += d)
            for (uint64_t i = 0; i < half; i++) {
                double c = nx_dtype_load(p->cs_dtype, co + (crow + i) * ce);
                double sn = nx_dtype_load(p->cs_dtype, si + (crow + i) * ce);
                double x1 = row[c0 + i], x2 = row[c0 + half + i];
                row[c0 + i] = x1 * c - x2 * sn;
                row[c0 + half + i] = x2 * c + x1 * sn;
            }
        for (uint64_t c = 0; c < N; c++) {
            const uint64_t head = c / d, j = c % d;
            size_t at;
            unsigned char *o;
            if (!p->heads) {
                o = out[0], at = t * N + c;
            } else {
                const uint64_t r = head < p->nq ? 0 : head < p->nq + p->nkv ? 1 : 2;
                const uint64_t hh = head - (r == 0 ? 0 : r == 1 ? p->nq : p->nq + p->nkv);
                const uint64_t nh = r == 0 ? p->nq : p->nkv;
                o = out[r], at = ((b * nh + hh) * p->S + s) * d + j;
            }
            nx_dtype_store(p->dtype, o + at * es, row[c]);
        }
    }
    free(h), free(w), free(y), free(row);
    return 0;
}
