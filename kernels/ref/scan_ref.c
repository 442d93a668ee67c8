/* The selective scan's reference (kernels/ref/ref.h): the sequential
 * recurrence of the Mamba paper's selective_scan_ref (Gu and Dao, 2023),
 * per (batch, channel, state) in double, written from the semantics of
 * kernels/scan/scan.h; y rounded once to its dtype, h_final once to fp32. */
#include <math.h>
#include <stdlib.h>

#include "ref.h"

static double at(const void *base, nx_dtype dt, uint64_t i) {
    return nx_dtype_load(dt, (const uint8_t *)base + i * nx_dtype_size(dt));
}

/* softplus as torch.nn.functional.softplus computes it (threshold 20). */
static double softplus(double x) { return x > 20 ? x : log1p(exp(x)); }

int nx_ref_selective_scan(const nx_scan_params *p, const void *const *in, void *y, void *h_final, nx_error *err) {
    const uint64_t B = p->B, C = p->C, L = p->L, N = p->N;
    double *d = malloc(L * sizeof *d), *uu = malloc(L * sizeof *uu), *acc = malloc(L * sizeof *acc);
    double *bm = malloc(N * L * sizeof *bm), *cm = malloc(N * L * sizeof *cm);
    if (!d || !uu || !acc || !bm || !cm) {
        free(d), free(uu), free(acc), free(bm), free(cm);
        return nx_fail(err, "selective_scan reference: out of memory");
    }
    const void *u = in[0], *delta = in[1], *A = in[2], *Bm = in[3], *Cm = in[4];
    const void *D = p->skip ? in[p->d_operand] : NULL, *h0 = p->initial_state ? in[p->h0_operand] : NULL;
    const size_t ys = nx_dtype_size(p->dtype);
    for (uint64_t b = 0; b < B; b++) {
        for (uint64_t i = 0; i < N * L; i++) {
            bm[i] = at(Bm, p->dtype, b * N * L + i);
            cm[i] = at(Cm, p->dtype, b * N * L + i);
        }
        for (uint64_t c = 0; c < C; c++) {
            const uint64_t row = (b * C + c) * L;
            for (uint64_t t = 0; t < L; t++) {
                double x = at(delta, p->dtype, row + t);
                d[t] = p->delta_softplus ? softplus(x) : x;
                uu[t] = at(u, p->dtype, row + t);
                acc[t] = D ? at(D, p->d_dtype, c) * uu[t] : 0.0;
            }
            for (uint64_t n = 0; n < N; n++) {
                const double a = at(A, p->a_dtype, c * N + n);
                double h = h0 ? at(h0, NX_DT_FP32, (b * C + c) * N + n) : 0.0;
                const double *bn = bm + n * L, *cn = cm + n * L;
                for (uint64_t t = 0; t < L; t++) {
                    h = exp(d[t] * a) * h + d[t] * bn[t] * uu[t];
                    acc[t] += cn[t] * h;
                }
                nx_dtype_store(NX_DT_FP32, (uint8_t *)h_final + ((b * C + c) * N + n) * 4, h);
            }
            for (uint64_t t = 0; t < L; t++) nx_dtype_store(p->dtype, (uint8_t *)y + (row + t) * ys, acc[t]);
        }
    }
    free(d), free(uu), free(acc), free(bm), free(cm);
    return 0;
}
