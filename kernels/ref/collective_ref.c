/* The collective_matmul reference (kernels/ref/ref.h): the product of the
 * whole contraction on the host, independent of how the kernel splits K
 * over the cores: A and B read exactly as fp32, one OpenBLAS sgemm
 * (nx_ref_matmul), the fp32 result rounded once to the dtype. */
#include "ref.h"

int nx_ref_collective_matmul(const nx_matmul_params *p, const void *a, const void *b, void *c, nx_error *err) {
    if (p->batch_ndims != 0 || p->out_ndims != 2)
        return nx_fail(err, "nx_ref_collective_matmul: A and B must be 2-D");
    return nx_ref_matmul(p, a, b, c, err);
}
