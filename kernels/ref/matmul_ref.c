/* The matmul reference (kernels/ref/ref.h): result = lhsT^T @ rhs with the
 * left-hand side given transposed, as the NKI matmul tutorial takes it.
 * Both operands are read exactly as fp32 (nx_dtype_load), multiplied by
 * OpenBLAS cblas_sgemm (A transposed), and the fp32 result is stored as the
 * output dtype with round-to-nearest-even (nx_dtype_store). The sum order is
 * sgemm's: results match any other fp32 evaluation within fp32 rounding. */
#include <limits.h>
#include <stdlib.h>

#include <cblas.h>

#include "ref.h"

static float *to_f32(const nx_ref_operand *op, uint64_t n) {
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    if (!f) return NULL;
    const unsigned char *s = op->data;
    size_t es = nx_dtype_size(op->dtype);
    for (uint64_t i = 0; i < n; i++) f[i] = (float)nx_dtype_load(op->dtype, s + i * es);
    return f;
}

int nx_ref_matmul_lhsT(const nx_ref_operand *lhsT, const nx_ref_operand *rhs, void *out, nx_dtype out_dtype,
                       nx_error *err) {
    if (lhsT->ndims != 2 || rhs->ndims != 2)
        return nx_fail(err, "nx_ref_matmul_lhsT: lhsT and rhs must be 2-D (they have %u and %u dims)", lhsT->ndims,
                       rhs->ndims);
    uint64_t K = lhsT->shape[0], M = lhsT->shape[1], N = rhs->shape[1];
    if (rhs->shape[0] != K)
        return nx_fail(err, "nx_ref_matmul_lhsT: rhs has K = %llu rows, lhsT %llu", (unsigned long long)rhs->shape[0],
                       (unsigned long long)K);
    if (!nx_dtype_size(lhsT->dtype) || !nx_dtype_size(rhs->dtype) || !nx_dtype_size(out_dtype))
        return nx_fail(err, "nx_ref_matmul_lhsT: unknown dtype");
    if (K > INT_MAX || M > INT_MAX || N > INT_MAX)
        return nx_fail(err, "nx_ref_matmul_lhsT: sizes beyond a BLAS int");
    uint64_t mn = M * N;
    float *a = to_f32(lhsT, K * M), *b = to_f32(rhs, K * N), *c = malloc((size_t)(mn ? mn : 1) * sizeof *c);
    if (!a || !b || !c) {
        free(a), free(b), free(c);
        return nx_fail(err, "nx_ref_matmul_lhsT: out of memory");
    }
    if (mn) {
        if (K)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)M, b, (int)N,
                        0.0f, c, (int)N);
        else
            for (uint64_t i = 0; i < mn; i++) c[i] = 0.0f;
    }
    unsigned char *d = out;
    size_t es = nx_dtype_size(out_dtype);
    for (uint64_t i = 0; i < mn; i++) nx_dtype_store(out_dtype, d + i * es, (double)c[i]);
    free(a), free(b), free(c);
    return 0;
}
