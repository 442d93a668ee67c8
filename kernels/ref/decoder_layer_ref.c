/* decoder_layer's reference (kernels/ref/ref.h): the composition of the
 * roster references on host arrays, written from the layer's definition
 * (kernels/layer/layer.h); it shares no code with the kernel but the
 * parameter readers. */
#include <stdlib.h>
#include <string.h>

#include "ref.h"

static nx_norm_tensor tens(const char *name, nx_dtype dt, uint32_t nd, const uint64_t *shape) {
    return (nx_norm_tensor){name, dt, nd, shape};
}

static int set_int(nx_attrs *a, const char *n, int64_t v, nx_error *err) {
    nx_value x = nx_value_int(v);
    return nx_attrs_set(a, n, &x, err);
}

static int set_str(nx_attrs *a, const char *n, const char *v, nx_error *err) {
    nx_value x = {.kind = NX_VAL_STRING, .s = malloc(strlen(v) + 1)};
    if (!x.s) return nx_fail(err, "nx_ref_decoder_layer: out of memory");
    memcpy(x.s, v, strlen(v) + 1);
    return nx_attrs_set(a, n, &x, err);
}

static int set_flag(nx_attrs *a, const char *n, nx_error *err) {
    nx_value x = nx_value_bool(1);
    return nx_attrs_set(a, n, &x, err);
}

static int set_eps(nx_attrs *a, double eps, nx_error *err) {
    nx_value x = nx_value_float(eps);
    return nx_attrs_set(a, "eps", &x, err);
}

int nx_ref_decoder_layer(const nx_layer_params *p, const void *const *in, void *const *out, nx_error *err) {
    const nx_dtype dt = p->dtype;
    const uint64_t es = nx_dtype_size(dt), B = p->B, S = p->S, H = p->H, d = p->d, nq = p->nq, nkv = p->nkv;
    const uint64_t T = B * S, N = (nq + 2 * nkv) * d, cache = B * nkv * p->S_max * d;
    const uint64_t sx[3] = {B, S, H}, sw[2] = {H, N}, sg[1] = {H}, scs[3] = {B, S, d / 2};
    uint8_t *q = malloc(B * nq * S * d * es), *kn = malloc(B * nkv * S * d * es), *vn = malloc(B * nkv * S * d * es);
    uint8_t *att = malloc(T * nq * d * es), *o = malloc(T * H * es), *m = malloc(T * H * es), *h = malloc(T * H * es);
    uint8_t *qs = malloc(B * nq * 8 * d * es), *ks = malloc(B * nkv * 8 * d * es), *vs = malloc(B * nkv * 8 * d * es);
    uint8_t *ao = malloc(B * nq * 8 * d * es), *kc = malloc(cache * es), *vc = malloc(cache * es);
    int32_t *len = malloc(B * sizeof *len);
    nx_attrs a;
    nx_attrs_init(&a);
    int rc = -1;
    if (!q || !kn || !vn || !att || !o || !m || !h || !qs || !ks || !vs || !ao || !kc || !vc || !len) {
        nx_fail(err, "nx_ref_decoder_layer: out of memory");
        goto out;
    }
    { /* qkv: rms norm, projection, rope; heads layout */
        nx_norm_tensor t[5] = {tens("x", dt, 3, sx), tens("w_qkv", dt, 2, sw), tens("gamma_attn", dt, 1, sg),
                               tens("cos", dt, 3, scs), tens("sin", dt, 3, scs)};
        nx_qkv_params qp;
        if (set_int(&a, "n_q_heads", (int64_t)nq, err) != 0 || set_int(&a, "n_kv_heads", (int64_t)nkv, err) != 0 ||
            set_int(&a, "head_dim", (int64_t)d, err) != 0 || set_eps(&a, p->eps, err) != 0 ||
            set_str(&a, "layout", "heads", err) != 0 || set_flag(&a, "rope", err) != 0 ||
            nx_qkv_read(&a, t, 5, &qp, err) != 0)
            goto out;
        const void *qi[5] = {in[0], in[2], in[1], in[8], in[9]};
        void *qo[3] = {q, kn, vn};
        if (nx_ref_qkv(&qp, qi, qo, err) != 0) goto out;
    }
    memcpy(out[1], in[10], cache * es);
    memcpy(out[2], in[11], cache * es);
    for (uint64_t t0 = 0; t0 < S; t0 += 8) { /* attention, a step of up to 8 new positions */
        const uint64_t sc = S - t0 < 8 ? S - t0 : 8;
        for (uint64_t r = 0; r < B * nq; r++) memcpy(qs + r * sc * d * es, q + (r * S + t0) * d * es, sc * d * es);
        for (uint64_t r = 0; r < B * nkv; r++) {
            memcpy(ks + r * sc * d * es, kn + (r * S + t0) * d * es, sc * d * es);
            memcpy(vs + r * sc * d * es, vn + (r * S + t0) * d * es, sc * d * es);
        }
        for (uint64_t b = 0; b < B; b++) len[b] = ((const int32_t *)in[12])[b] + (int32_t)t0;
        const uint64_t s4q[4] = {B, nq, sc, d}, s4c[4] = {B, nkv, p->S_max, d}, s4k[4] = {B, nkv, sc, d}, sl[1] = {B};
        nx_norm_tensor t[6] = {tens("q", dt, 4, s4q), tens("k_cache", dt, 4, s4c), tens("v_cache", dt, 4, s4c),
                               tens("k_new", dt, 4, s4k), tens("v_new", dt, 4, s4k), tens("lengths", NX_DT_INT32, 1, sl)};
        nx_decode_params dp;
        if (nx_decode_read(NULL, t, 6, &dp, err) != 0) goto out;
        memcpy(kc, out[1], cache * es);
        memcpy(vc, out[2], cache * es);
        const void *di[6] = {qs, kc, vc, ks, vs, len};
        void *dout[3] = {ao, out[1], out[2]};
        if (nx_ref_attention_decode(&dp, di, dout, err) != 0) goto out;
        for (uint64_t b = 0; b < B; b++) /* heads -> tokens */
            for (uint64_t hh = 0; hh < nq; hh++)
                for (uint64_t t = 0; t < sc; t++)
                    memcpy(att + ((b * S + t0 + t) * nq + hh) * d * es, ao + ((b * nq + hh) * sc + t) * d * es, d * es);
    }
    { /* o = attn w_o */
        const uint64_t sa[2] = {T, nq * d}, so[2] = {nq * d, H};
        nx_norm_tensor t[2] = {tens("attn", dt, 2, sa), tens("w_o", dt, 2, so)};
        nx_matmul_params mp;
        if (nx_matmul_read(t, 2, &mp, err) != 0 || nx_ref_matmul(&mp, att, in[3], o, err) != 0) goto out;
    }
    { /* the mlp: h = x + o, rmsnorm(h) gamma_mlp, silu-gated */
        const uint64_t sgu[2] = {H, p->inter}, sd[2] = {p->inter, H};
        nx_norm_tensor t[6] = {tens("o", dt, 3, sx),         tens("w_gate", dt, 2, sgu), tens("w_up", dt, 2, sgu),
                               tens("w_down", dt, 2, sd),    tens("gamma_mlp", dt, 1, sg), tens("x", dt, 3, sx)};
        nx_attrs ma;
        nx_attrs_init(&ma);
        nx_mlp_params mp;
        int r = set_str(&ma, "norm", "rms", err) != 0 || set_eps(&ma, p->eps, err) != 0 ||
                        set_flag(&ma, "residual", err) != 0 || nx_mlp_read(&ma, t, 6, &mp, err) != 0
                    ? -1
                    : 0;
        nx_attrs_free(&ma);
        const void *mi[6] = {o, in[5], in[6], in[7], in[4], in[0]};
        void *mo[2] = {m, h};
        if (r != 0 || nx_ref_mlp(&mp, mi, mo, err) != 0) goto out;
    }
    for (uint64_t e = 0; e < T * H; e++) {
        const float s = (float)nx_dtype_load(dt, h + e * es) + (float)nx_dtype_load(dt, m + e * es);
        nx_dtype_store(dt, (uint8_t *)out[0] + e * es, s);
    }
    rc = 0;
out:
    nx_attrs_free(&a);
    free(q), free(kn), free(vn), free(att), free(o), free(m), free(h), free(qs), free(ks), free(vs), free(ao), free(kc), free(vc);
    free(len);
    return rc;
}
