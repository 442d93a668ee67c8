/* collective_matmul's operand and attribute checks (collective_matmul.h). */
#include "collective_matmul.h"

int nx_collective_matmul_read(const nx_norm_tensor *in, uint32_t n_in, const nx_attrs *attrs, uint32_t cores,
                              nx_matmul_params *p, int *scatter, nx_error *err) {
    if (n_in != 2) return nx_fail(err, "collective_matmul: expects 2 operands (A, B), got %u", n_in);
    for (uint32_t i = 0; i < 2; i++)
        if (in[i].ndims != 2)
            return nx_fail(err, "operand %u (%s): rank %u; collective_matmul takes A [M, K] and B [K, N]", i,
                           in[i].name, in[i].ndims);
    if (nx_matmul_read(in, 2, p, err) != 0) return -1;
    if (p->dtype != NX_DT_FP32 && p->dtype != NX_DT_BF16)
        return nx_fail(err, "operand 0 (%s): dtype %s; collective_matmul takes fp32 or bf16", in[0].name,
                       nx_dtype_name(p->dtype));
    if (p->K < cores)
        return nx_fail(err, "operand 0 (%s): K = %llu is split over %u cores; K >= %u", in[0].name,
                       (unsigned long long)p->K, cores, cores);
    int64_t v = 1;
    int present = 0;
    if (nx_attrs_get_int(attrs, "reduce_scatter", &v, &present, err) != 0) return -1;
    if (v != 0 && v != 1) return nx_fail(err, "attribute reduce_scatter: %lld; 0 or 1", (long long)v);
    *scatter = (int)v;
    return 0;
}
