/* find_index8: for each of the 8 values of a partition, in order j = 0..7,
 * the index of the first element of in equal to it (numeric equality, -0 ==
 * +0, NaN matches NaN) that no earlier value already took, or 0xFFFFFFFF
 * (uint32 dst) / -1 (int32 dst) if none: duplicated values pair with
 * successive occurrences in ascending order, so max8 then find_index8 gives
 * tied values distinct indices, lowest first. docs/parts/insns-dve.md. */
#include <inttypes.h>

#include "insn_impl.h"

#define FIND_K 8

int nx_validate_FIND_INDEX8(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                            nx_error *err) {
    (void)engine;
    (void)geo;
    const nx_operand *dst = &insn->op[0], *in = &insn->op[1], *values = &insn->op[2];
    if (dst->dtype != NX_DT_INT32 && dst->dtype != NX_DT_UINT32)
        return nx_fail(err, "dst dtype is %s, find_index8 writes int32 or uint32",
                       nx_dtype_name((nx_dtype)dst->dtype));
    if (in->partition_count != dst->partition_count)
        return nx_fail(err, "in has %u partitions, dst has %u", in->partition_count,
                       dst->partition_count);
    if (values->partition_count != dst->partition_count)
        return nx_fail(err, "values has %u partitions, dst has %u", values->partition_count,
                       dst->partition_count);
    uint64_t nv = nx_operand_free_elems(values), nd = nx_operand_free_elems(dst);
    if (nv != FIND_K)
        return nx_fail(err, "values has %" PRIu64 " elements per partition, find_index8 takes 8",
                       nv);
    if (nd != FIND_K)
        return nx_fail(err, "dst has %" PRIu64 " elements per partition, find_index8 writes 8",
                       nd);
    return 0;
}

int nx_exec_FIND_INDEX8(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, in, values;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&in, ctx, &insn->op[1]);
    nx_view_init(&values, ctx, &insn->op[2]);
    double none = dst.dtype == NX_DT_UINT32 ? 4294967295.0 : -1.0;
    uint64_t n = in.free_elems;
    double *x = nx_buf_alloc(n);
    if (!x) return nx_fail(ctx->err, "out of memory for %" PRIu64 " elements", n);
    for (uint32_t p = 0; p < dst.partitions; p++) {
        double v[FIND_K], idx[FIND_K];
        nx_view_load(&in, p, x);
        nx_view_load(&values, p, v);
        uint64_t taken[FIND_K];
        int ntaken = 0;
        for (int j = 0; j < FIND_K; j++) {
            idx[j] = none;
            int nan = isnan(v[j]);
            for (uint64_t e = 0; e < n; e++) {
                if (!(x[e] == v[j] || (nan && isnan(x[e])))) continue;
                int seen = 0;
                for (int t = 0; t < ntaken && !seen; t++) seen = taken[t] == e;
                if (seen) continue;
                idx[j] = (double)e;
                taken[ntaken++] = e;
                break;
            }
        }
        nx_view_store(&dst, p, idx);
    }
    free(x);
    return 0;
}
