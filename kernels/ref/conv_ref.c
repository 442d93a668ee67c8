/* Reference convolution (XLA ConvGeneralDilated, kernels/conv/conv_params.h
 * states the semantics): im2col + OpenBLAS sgemm in fp32.
 *
 *  1. Both operands are converted to fp32 (nx_dtype_load: exact for every
 *     float dtype) and permuted into the canonical orders lhs [N][C][S..]
 *     and rhs [O][I][K..].
 *  2. For each output batch b and group g (feature or batch group): the
 *     patch matrix X[(i, k..)][p] holds the input element that tap k.. of
 *     in-feature i meets at output position p (0 where the dilated,
 *     padded index falls between dilated elements or outside the input),
 *     built in column chunks that keep X near 16 MiB; then
 *     out[b][g*Og .. +Og][p] = W_g[Og][I*K] @ X by cblas_sgemm.
 *  3. The canonical fp32 result is permuted into the output labels and
 *     stored as the output dtype (nx_dtype_store: RNE).
 * The sum order is sgemm's: results match any other fp32 evaluation to
 * within the usual fp32 dot-product error, not bit for bit. */
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "ref.h"

#define PATCH_FLOATS (UINT64_C(4) << 20) /* X chunk target: 16 MiB */

static int elems(uint32_t nd, const uint64_t *shape, uint64_t *n) {
    uint64_t t = 1;
    for (uint32_t i = 0; i < nd; i++)
        if (shape[i] == 0 || __builtin_mul_overflow(t, shape[i], &t) || t > (UINT64_C(1) << 40)) return -1;
    *n = t;
    return 0;
}

static void row_major_strides(uint32_t nd, const uint64_t *shape, uint64_t *st) {
    uint64_t s = 1;
    for (uint32_t d = nd; d-- > 0;) {
        st[d] = s;
        s *= shape[d];
    }
}

/* dst (fp32, canonical order: tensor dims order[0], order[1], ...) <- src
 * (dtype, row-major over `shape`): an odometer over the canonical index. */
static void to_canonical(const void *src, nx_dtype dt, uint32_t nd, const uint64_t *shape,
                         const uint32_t *order, float *dst, uint64_t total) {
    uint64_t st[NX_REF_MAX_DIMS], cs[NX_REF_MAX_DIMS], step[NX_REF_MAX_DIMS], idx[NX_REF_MAX_DIMS] = {0};
    row_major_strides(nd, shape, st);
    for (uint32_t k = 0; k < nd; k++) {
        cs[k] = shape[order[k]];
        step[k] = st[order[k]];
    }
    const unsigned char *s = src;
    size_t es = nx_dtype_size(dt);
    uint64_t from = 0;
    for (uint64_t o = 0; o < total; o++) {
        dst[o] = (float)nx_dtype_load(dt, s + from * es);
        for (uint32_t k = nd; k-- > 0;) {
            from += step[k];
            if (++idx[k] < cs[k]) break;
            from -= step[k] * cs[k];
            idx[k] = 0;
        }
    }
}

/* The inverse for the output: canonical fp32 src -> dst (dtype, row-major
 * over `shape`). */
static void from_canonical(const float *src, nx_dtype dt, uint32_t nd, const uint64_t *shape,
                           const uint32_t *order, void *dst, uint64_t total) {
    uint64_t st[NX_REF_MAX_DIMS], cs[NX_REF_MAX_DIMS], step[NX_REF_MAX_DIMS], idx[NX_REF_MAX_DIMS] = {0};
    row_major_strides(nd, shape, st);
    for (uint32_t k = 0; k < nd; k++) {
        cs[k] = shape[order[k]];
        step[k] = st[order[k]];
    }
    unsigned char *d = dst;
    size_t es = nx_dtype_size(dt);
    uint64_t to = 0;
    for (uint64_t o = 0; o < total; o++) {
        nx_dtype_store(dt, d + to * es, (double)src[o]);
        for (uint32_t k = nd; k-- > 0;) {
            to += step[k];
            if (++idx[k] < cs[k]) break;
            to -= step[k] * cs[k];
            idx[k] = 0;
        }
    }
}

typedef struct conv_geo {
    uint32_t ns;                              /* spatial dims */
    uint64_t in[NX_CONV_MAX_SPATIAL];         /* lhs spatial sizes */
    uint64_t k[NX_CONV_MAX_SPATIAL];          /* rhs spatial sizes */
    uint64_t out[NX_CONV_MAX_SPATIAL];        /* out spatial sizes */
    uint64_t in_plane, k_plane, out_plane;    /* products */
} conv_geo;

/* X[r][c - p0] for rows r = (i, k..) of one image `img` [I][in..] and
 * output positions c in [p0, p0 + np). Per row, tab[d][o] is the input
 * index that output coordinate o of spatial dim d meets at this tap, or -1
 * (between dilated elements or outside the input); the positions are then
 * walked with an odometer. `tab` has room for the sum of the out sizes. */
static void im2col(const conv_geo *g, const nx_conv_params *p, const float *img, uint64_t nin,
                   uint64_t p0, uint64_t np, float *X, int64_t *tab) {
    uint64_t rows = nin * g->k_plane, pitch[NX_CONV_MAX_SPATIAL];
    int64_t *t[NX_CONV_MAX_SPATIAL];
    uint64_t q = 1, toff = 0;
    for (uint32_t d = g->ns; d-- > 0;) {
        pitch[d] = q;
        q *= g->in[d];
    }
    for (uint32_t d = 0; d < g->ns; d++) {
        t[d] = tab + toff;
        toff += g->out[d];
    }
    for (uint64_t r = 0; r < rows; r++) {
        uint64_t i = r / g->k_plane, kr = r % g->k_plane;
        for (uint32_t d = g->ns; d-- > 0;) {
            int64_t kk = (int64_t)(kr % g->k[d]);
            kr /= g->k[d];
            for (uint64_t o = 0; o < g->out[d]; o++) {
                int64_t u = (int64_t)o * p->stride[d] - p->pad_lo[d] + kk * p->rhs_dilation[d];
                int64_t x = u >= 0 && u % p->lhs_dilation[d] == 0 ? u / p->lhs_dilation[d] : -1;
                t[d][o] = x < (int64_t)g->in[d] ? x : -1;
            }
        }
        const float *plane = img + i * g->in_plane;
        float *xr = X + r * np;
        uint64_t oc[NX_CONV_MAX_SPATIAL], rest = p0;
        for (uint32_t d = g->ns; d-- > 0;) {
            oc[d] = rest % g->out[d];
            rest /= g->out[d];
        }
        for (uint64_t c = 0; c < np; c++) {
            int64_t off = 0;
            for (uint32_t d = 0; d < g->ns && off >= 0; d++) {
                int64_t x = t[d][oc[d]];
                off = x < 0 ? -1 : off + x * (int64_t)pitch[d];
            }
            xr[c] = off >= 0 ? plane[off] : 0.0f;
            for (uint32_t d = g->ns; d-- > 0;) {
                if (++oc[d] < g->out[d]) break;
                oc[d] = 0;
            }
        }
    }
}

int nx_ref_conv(const char *labels, const nx_conv_params *p, const nx_ref_operand *lhs,
                const nx_ref_operand *rhs, void *out, nx_dtype out_dtype, uint32_t out_ndims,
                const uint64_t *out_shape, nx_error *err) {
    nx_conv_layout L;
    if (nx_conv_layout_parse(labels, &L, err) != 0) return -1;
    if (!nx_dtype_size(lhs->dtype) || !nx_dtype_size(rhs->dtype) || !nx_dtype_size(out_dtype))
        return nx_fail(err, "conv reference: invalid dtype code");
    uint64_t want[NX_KERNEL_MAX_DIMS];
    if (nx_conv_result_shape(&L, p, lhs->ndims, lhs->shape, rhs->ndims, rhs->shape, "conv reference lhs",
                             "conv reference rhs", want, err) != 0)
        return -1;
    uint32_t nd = L.spatial + 2;
    int same = out_ndims == nd;
    for (uint32_t i = 0; same && i < nd; i++) same = out_shape[i] == want[i];
    if (!same) return nx_fail(err, "conv reference: the output shape does not match the convolution's");

    uint64_t nl, nr, no;
    if (elems(nd, lhs->shape, &nl) || elems(nd, rhs->shape, &nr) || elems(nd, out_shape, &no))
        return nx_fail(err, "conv reference: a tensor has a zero dim or more than 2^40 elements");

    conv_geo g;
    memset(&g, 0, sizeof g);
    g.ns = L.spatial;
    g.in_plane = g.k_plane = g.out_plane = 1;
    uint32_t lord[NX_REF_MAX_DIMS], rord[NX_REF_MAX_DIMS], oord[NX_REF_MAX_DIMS];
    lord[0] = L.lhs_batch;
    lord[1] = L.lhs_feature;
    rord[0] = L.rhs_out;
    rord[1] = L.rhs_in;
    oord[0] = L.out_batch;
    oord[1] = L.out_feature;
    for (uint32_t d = 0; d < g.ns; d++) {
        lord[2 + d] = L.lhs_spatial[d];
        rord[2 + d] = L.rhs_spatial[d];
        oord[2 + d] = L.out_spatial[d];
        g.in[d] = lhs->shape[L.lhs_spatial[d]];
        g.k[d] = rhs->shape[L.rhs_spatial[d]];
        g.out[d] = out_shape[L.out_spatial[d]];
        g.in_plane *= g.in[d];
        g.k_plane *= g.k[d];
        g.out_plane *= g.out[d];
    }
    uint64_t nin = rhs->shape[L.rhs_in], nout = rhs->shape[L.rhs_out];
    uint64_t bout = out_shape[L.out_batch], cin = lhs->shape[L.lhs_feature];
    uint64_t groups = p->feature_group_count > 1 ? (uint64_t)p->feature_group_count
                                                 : (uint64_t)p->batch_group_count;
    uint64_t og = nout / groups, rows = nin * g.k_plane;
    uint64_t chunk = PATCH_FLOATS / (rows ? rows : 1);
    if (chunk < 1) chunk = 1;
    if (chunk > g.out_plane) chunk = g.out_plane;
    if (rows > INT32_MAX || chunk > INT32_MAX || og > INT32_MAX)
        return nx_fail(err, "conv reference: a matrix dimension exceeds the BLAS int range");

    float *L32 = malloc(nl * sizeof *L32), *R32 = malloc(nr * sizeof *R32);
    float *O32 = malloc(no * sizeof *O32), *X = malloc(rows * chunk * sizeof *X);
    float *T = malloc(og * chunk * sizeof *T);
    int64_t *tab = malloc((g.out[0] + g.out[1] + g.out[2]) * sizeof *tab);
    if (!L32 || !R32 || !O32 || !X || !T || !tab) {
        free(tab);
        free(L32);
        free(R32);
        free(O32);
        free(X);
        free(T);
        return nx_fail(err, "conv reference: out of memory (%llu + %llu + %llu elements)", (unsigned long long)nl,
                       (unsigned long long)nr, (unsigned long long)no);
    }
    to_canonical(lhs->data, lhs->dtype, nd, lhs->shape, lord, L32, nl);
    to_canonical(rhs->data, rhs->dtype, nd, rhs->shape, rord, R32, nr);

    for (uint64_t b = 0; b < bout; b++) {
        for (uint64_t gi = 0; gi < groups; gi++) {
            /* batch groups take lhs batch b + gi * bout and every feature;
             * feature groups take batch b and features [gi * nin, +nin) */
            uint64_t lb = p->batch_group_count > 1 ? b + gi * bout : b;
            uint64_t f0 = p->feature_group_count > 1 ? gi * nin : 0;
            const float *img = L32 + (lb * cin + f0) * g.in_plane;
            const float *W = R32 + gi * og * rows;
            float *dst = O32 + (b * nout + gi * og) * g.out_plane;
            for (uint64_t p0 = 0; p0 < g.out_plane; p0 += chunk) {
                uint64_t np = g.out_plane - p0 < chunk ? g.out_plane - p0 : chunk;
                im2col(&g, p, img, nin, p0, np, X, tab);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)og, (int)np, (int)rows, 1.0f, W,
                            (int)rows, X, (int)np, 0.0f, T, (int)np);
                for (uint64_t o = 0; o < og; o++) memcpy(dst + o * g.out_plane + p0, T + o * np, np * sizeof *T);
            }
        }
    }
    from_canonical(O32, out_dtype, nd, out_shape, oord, out, no);
    free(L32);
    free(R32);
    free(O32);
    free(X);
    free(T);
    free(tab);
    return 0;
}
