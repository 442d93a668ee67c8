/* Reference blockwise_mm (kernels/blockwise_mm/blockwise_mm_params.h): block by block,
 * the valid tokens of the block are gathered into a dense fp32 matrix, the
 * three projections are OpenBLAS sgemms, contributions accumulate in fp32
 * and the output is rounded once to its dtype at the end. The rounding
 * points the semantics names (x * a and h rounded to the input dtype, the
 * PE's input) are applied with nx_dtype_store / nx_dtype_load. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "ref.h"

/* n elements of dtype at src -> fp32. */
static void to_f32(nx_dtype dt, const uint8_t *src, uint64_t n, float *dst) {
    size_t size = nx_dtype_size(dt);
    if (dt == NX_DT_FP32) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    if (dt == NX_DT_BF16) { /* the weights of the benches: skip the per-element switch */
        for (uint64_t i = 0; i < n; i++) {
            uint16_t b;
            memcpy(&b, src + 2 * i, 2);
            dst[i] = nx_bf16_to_f32(b);
        }
        return;
    }
    for (uint64_t i = 0; i < n; i++) dst[i] = (float)nx_dtype_load(dt, src + i * size);
}

/* v rounded to dtype and read back (what storing v as dtype keeps). */
static float round_to(nx_dtype dt, float v) {
    if (dt == NX_DT_FP32) return v;
    uint8_t b[8];
    nx_dtype_store(dt, b, v);
    return (float)nx_dtype_load(dt, b);
}

static int32_t load_i32(const uint8_t *p, uint64_t i) {
    int32_t v;
    memcpy(&v, p + 4 * i, 4);
    return v;
}

/* silu in double, rounded once to fp32 (as the ACT's activation table). */
static float silu(float g) { return (float)((double)g / (1.0 + exp(-(double)g))); }

int nx_ref_blockwise_mm(const nx_bwmm_params *p, const void *const in[NX_BWMM_OPERANDS], void *out,
                        nx_error *err) {
    const uint64_t T = p->T, H = p->H, NI = p->inter, E = p->E, B = p->B;
    if (H == 0 || NI == 0 || E == 0 || B == 0)
        return nx_fail(err, "blockwise_mm reference: H, NI, E and B must be >= 1");
    if (H > INT32_MAX || 2 * NI > INT32_MAX || B > INT32_MAX)
        return nx_fail(err, "blockwise_mm reference: H, 2*NI and B must fit in a BLAS int");
    const uint8_t *hs = in[0], *aff = in[1], *gu = in[2], *dn = in[3], *tpid = in[4], *bte = in[5];
    size_t s = nx_dtype_size(p->dtype), as = nx_dtype_size(p->aff_dtype);
    float *acc = calloc((T + 1) * H, sizeof *acc);
    float *wgu = malloc(H * 2 * NI * sizeof *wgu), *wd = malloc(NI * H * sizeof *wd);
    float *x = malloc(B * H * sizeof *x), *gup = malloc(B * 2 * NI * sizeof *gup);
    float *h = malloc(B * NI * sizeof *h), *y = malloc(B * H * sizeof *y), *a = malloc(B * sizeof *a);
    uint64_t *tok = malloc(B * sizeof *tok);
    int rc = -1;
    if (!acc || !wgu || !wd || !x || !gup || !h || !y || !a || !tok) {
        nx_fail(err, "blockwise_mm reference: out of memory");
        goto done;
    }
    int64_t loaded = -1; /* expert whose weights wgu / wd hold */
    for (uint64_t n = 0; n < p->NB; n++) {
        int64_t e = load_i32(bte, n);
        if (e < 0 || (uint64_t)e >= E) continue; /* not a block of any expert */
        uint64_t m = 0;
        for (uint64_t j = 0; j < B; j++) {
            int64_t id = load_i32(tpid, n * B + j);
            if (id >= 0 && (uint64_t)id < T) tok[m++] = (uint64_t)id;
        }
        if (m == 0) continue;
        if (e != loaded) {
            to_f32(p->dtype, gu + (uint64_t)e * H * 2 * NI * s, H * 2 * NI, wgu);
            to_f32(p->dtype, dn + (uint64_t)e * NI * H * s, NI * H, wd);
            loaded = e;
        }
        for (uint64_t r = 0; r < m; r++) {
            a[r] = (float)nx_dtype_load(p->aff_dtype, aff + (tok[r] * E + (uint64_t)e) * as);
            to_f32(p->dtype, hs + tok[r] * H * s, H, x + r * H);
            if (p->scaling == NX_BWMM_PRE_SCALE)
                for (uint64_t c = 0; c < H; c++) x[r * H + c] = round_to(p->dtype, x[r * H + c] * a[r]);
        }
        /* [m, 2I] = x [m, H] @ W [H, 2I]: gate in columns [0, NI), up in [NI, 2I) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)(2 * NI), (blasint)H,
                    1.0f, x, (blasint)H, wgu, (blasint)(2 * NI), 0.0f, gup, (blasint)(2 * NI));
        for (uint64_t r = 0; r < m; r++)
            for (uint64_t i = 0; i < NI; i++) {
                float g = gup[r * 2 * NI + i], u = gup[r * 2 * NI + NI + i];
                h[r * NI + i] = round_to(p->dtype, silu(g) * u);
            }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)H, (blasint)NI, 1.0f, h,
                    (blasint)NI, wd, (blasint)H, 0.0f, y, (blasint)H);
        for (uint64_t r = 0; r < m; r++) {
            float *o = acc + tok[r] * H;
            const float *yr = y + r * H;
            if (p->scaling == NX_BWMM_POST_SCALE)
                for (uint64_t c = 0; c < H; c++) o[c] += yr[c] * a[r];
            else
                for (uint64_t c = 0; c < H; c++) o[c] += yr[c];
        }
    }
    for (uint64_t i = 0; i < (T + 1) * H; i++) nx_dtype_store(p->dtype, (uint8_t *)out + i * s, acc[i]);
    rc = 0;
done:
    free(acc);
    free(wgu);
    free(wd);
    free(x);
    free(gup);
    free(h);
    free(y);
    free(a);
    free(tok);
    return rc;
}
