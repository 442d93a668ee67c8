/* The mlp reference (kernels/ref/ref.h): the Llama MLP of the roster
 * (docs/parts/mlp.md) row by row from its definition: x' = x + r (an fp32
 * add rounded to the dtype), h = x' / sqrt(mean(x'^2) + eps) * gamma in
 * double, rounded to the dtype, G = h Wg and U = h Wu and out = a Wd as
 * OpenBLAS sgemms (fp32 accumulation), a = act(G) * U from the activation's
 * definition (silu x sigmoid(x), gelu with erf, gelu's tanh form, relu) in
 * double, rounded to fp32 and then to the dtype, out rounded to the dtype.
 * Shares nothing with the kernel's tiling. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

#include <cblas.h>
#undef I /* complex.h's, through cblas.h */

static double act_of(nx_act_func f, double x) {
    switch (f) {
    case NX_ACT_SILU: return x / (1.0 + exp(-x));
    case NX_ACT_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case NX_ACT_GELU_TANH: return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    default: return x > 0 ? x : 0.0;
    }
}

static float *load_all(nx_dtype dt, const void *src, uint64_t n) {
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    if (!f) return NULL;
    const size_t es = nx_dtype_size(dt);
    for (uint64_t i = 0; i < n; i++) f[i] = (float)nx_dtype_load(dt, (const unsigned char *)src + i * es);
    return f;
}

/* v rounded to dt (and back to fp32). */
static float round_dt(nx_dtype dt, double v) {
    unsigned char b[8];
    nx_dtype_store(dt, b, (double)(float)v);
    return (float)nx_dtype_load(dt, b);
}

int nx_ref_mlp(const nx_mlp_params *p, const void *const *in, void *const *out, nx_error *err) {
    const uint64_t T = p->T, H = p->H, I = p->inter;
    const nx_dtype dt = p->dtype;
    const size_t es = nx_dtype_size(dt);
    if (T > INT32_MAX || H > INT32_MAX || I > INT32_MAX) return nx_fail(err, "nx_ref_mlp: dims beyond int32");
    float *h = load_all(dt, in[0], T * H), *wg = load_all(dt, in[1], H * I), *wu = load_all(dt, in[2], H * I);
    float *wd = load_all(dt, in[3], I * H), *gm = p->norm ? load_all(p->gamma_dtype, in[p->gamma_operand], H) : NULL;
    float *r = p->residual ? load_all(p->r_dtype, in[p->r_operand], T * H) : NULL;
    float *g = malloc((size_t)(T * I) * sizeof *g), *u = malloc((size_t)(T * I) * sizeof *u);
    float *o = malloc((size_t)(T * H) * sizeof *o);
    int rc = 0;
    if (!h || !wg || !wu || !wd || (p->norm && !gm) || (p->residual && !r) || !g || !u || !o) {
        rc = nx_fail(err, "nx_ref_mlp: out of memory");
        goto done;
    }
    for (uint64_t t = 0; t < T; t++) {
        float *row = h + t * H;
        if (p->residual)
            for (uint64_t j = 0; j < H; j++) {
                row[j] = round_dt(dt, (double)(row[j] + r[t * H + j]));
                nx_dtype_store(dt, (unsigned char *)out[1] + (t * H + j) * es, row[j]);
            }
        if (!p->norm) continue;
        double ss = 0;
        for (uint64_t j = 0; j < H; j++) ss += (double)row[j] * row[j];
        const double rstd = 1.0 / sqrt(ss / (double)H + p->eps);
        for (uint64_t j = 0; j < H; j++) row[j] = round_dt(dt, row[j] * rstd * gm[j]);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, (int)I, (int)H, 1.0f, h, (int)H, wg, (int)I, 0.0f,
                g, (int)I);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, (int)I, (int)H, 1.0f, h, (int)H, wu, (int)I, 0.0f,
                u, (int)I);
    for (uint64_t i = 0; i < T * I; i++) g[i] = round_dt(dt, (double)(float)act_of(p->act, g[i]) * u[i]);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, (int)H, (int)I, 1.0f, g, (int)I, wd, (int)H, 0.0f,
                o, (int)H);
    for (uint64_t i = 0; i < T * H; i++) nx_dtype_store(dt, (unsigned char *)out[0] + i * es, o[i]);
done:
    free(h), free(wg), free(wu), free(wd), free(gm), free(r), free(g), free(u), free(o);
    return rc;
}
