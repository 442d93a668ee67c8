/* The GEMM's reference of programs.h: OpenBLAS on the same values. */
#include <math.h>
#include <stdlib.h>

#include <cblas.h>

#include "programs.h"
#include "wall_clock.h"

static void sgemm(const bench_gemm *g, uint32_t M, const float *A, const float *B, float *C) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)M, (blasint)g->N, (blasint)g->K, 1.0f, A,
                (blasint)g->K, B, (blasint)g->N, 0.0f, C, (blasint)g->N);
}

int bench_gemm_check_values(const bench_gemm *g, const float *c_sim, bench_gemm_check *out, nx_error *err) {
    size_t nA = (size_t)g->M * g->K, nB = (size_t)g->K * g->N, nC = (size_t)g->M * g->N;
    float *A = malloc(nA * sizeof *A), *B = malloc(nB * sizeof *B), *C = malloc(nC * sizeof *C);
    float *D = malloc(nC * sizeof *D);
    int rc = 0;
    if (!A || !B || !C || !D) {
        rc = nx_fail(err, "reference of gemm %ux%ux%u: out of memory", g->M, g->K, g->N);
        goto out;
    }
    for (size_t i = 0; i < nA; i++) A[i] = bench_gemm_value(0, i, g->dtype);
    for (size_t i = 0; i < nB; i++) B[i] = bench_gemm_value(1, i, g->dtype);
    /* warm OpenBLAS up (thread start-up, buffers) on a few rows */
    sgemm(g, g->M < 64 ? g->M : 64, A, B, C);
    double t0 = nx_bench_now_s(), c0 = nx_bench_cpu_s();
    sgemm(g, g->M, A, B, C);
    out->blas_s = nx_bench_now_s() - t0;
    out->blas_cpu_s = nx_bench_cpu_s() - c0;
    for (size_t i = 0; i < nA; i++) A[i] = fabsf(A[i]);
    for (size_t i = 0; i < nB; i++) B[i] = fabsf(B[i]);
    sgemm(g, g->M, A, B, D);
    double worst = 0;
    int finite = 1;
    for (size_t i = 0; i < nC; i++) {
        if (!isfinite(c_sim[i])) finite = 0;
        double e = fabs((double)c_sim[i] - (double)C[i]) / (D[i] > 0 ? (double)D[i] : 1.0);
        if (e > worst) worst = e;
    }
    out->max_rel_err = worst;
    out->err_bound = 2.0 * g->K * ldexp(1.0, -24);
    out->ok = finite && worst <= out->err_bound;
out:
    free(A), free(B), free(C), free(D);
    return rc;
}
