/* The ONNX MatMul reference (kernels/ref/ref.h): each result
 * matrix by OpenBLAS cblas_sgemm in fp32 over its broadcast A and B
 * matrices, rounded once to the dtype. */
#include <stdlib.h>

#include <cblas.h>

#include "ref.h"

int nx_ref_matmul(const nx_matmul_params *p, const void *a, const void *b, void *c, nx_error *err) {
    const uint64_t M = p->M, K = p->K, N = p->N;
    const size_t es = nx_dtype_size(p->dtype);
    const uint64_t mk = M * K, kn = K * N, mn = M * N;
    float *fa = malloc((size_t)(mk ? mk : 1) * sizeof *fa), *fb = malloc((size_t)(kn ? kn : 1) * sizeof *fb);
    float *fc = malloc((size_t)(mn ? mn : 1) * sizeof *fc);
    if (!fa || !fb || !fc) {
        free(fa), free(fb), free(fc);
        return nx_fail(err, "nx_ref_matmul: out of memory");
    }
    for (uint64_t i = 0; i < p->batches; i++) {
        const unsigned char *pa = (const unsigned char *)a + nx_matmul_a_index(p, i) * M * K * es;
        const unsigned char *pb = (const unsigned char *)b + nx_matmul_b_index(p, i) * K * N * es;
        for (uint64_t e = 0; e < M * K; e++) fa[e] = (float)nx_dtype_load(p->dtype, pa + e * es);
        for (uint64_t e = 0; e < K * N; e++) fb[e] = (float)nx_dtype_load(p->dtype, pb + e * es);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, fa, (int)K, fb, (int)N,
                    0.0f, fc, (int)N);
        unsigned char *pc = (unsigned char *)c + i * M * N * es;
        for (uint64_t e = 0; e < M * N; e++) nx_dtype_store(p->dtype, pc + e * es, (double)fc[e]);
    }
    free(fa), free(fb), free(fc);
    return 0;
}
