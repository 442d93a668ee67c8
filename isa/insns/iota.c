/* iota dst pattern (POOL): dst[p, e] = the pattern's integer value at (p, e)
 *   base + channel_multiplier * p + sum_k(stride[k] * i_k)
 * converted to dst's dtype (nx_dtype_store rules: RNE, integer saturation).
 * The pattern has dst's partition count and elements per partition and an
 * integer dtype. Contract: docs/parts/insns-act-pool.md. */
#include "insn_impl.h"

int nx_validate_IOTA(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                     nx_error *err) {
    (void)engine;
    (void)geo;
    const nx_operand *dst = &insn->op[0], *pat = &insn->op[1];
    if (pat->partition_count != dst->partition_count)
        return nx_fail(err, "pattern: has %u partitions but dst has %u", pat->partition_count,
                       dst->partition_count);
    uint64_t fp = nx_operand_free_elems(pat), fd = nx_operand_free_elems(dst);
    if (fp != fd)
        return nx_fail(err, "pattern: has %llu elements per partition but dst has %llu",
                       (unsigned long long)fp, (unsigned long long)fd);
    return 0;
}

int nx_exec_IOTA(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, pat;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&pat, ctx, &insn->op[1]);
    /* The pattern reads no memory, so partitions can be done one at a time. */
    double *row = nx_buf_alloc(dst.free_elems);
    if (!row)
        return nx_fail(ctx->err, "out of memory for %llu iota values",
                       (unsigned long long)dst.free_elems);
    for (uint32_t p = 0; p < dst.partitions; p++) {
        nx_view_load(&pat, p, row);
        nx_view_store(&dst, p, row);
    }
    free(row);
    return 0;
}
