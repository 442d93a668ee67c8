/* partition_broadcast dst in (POOL): in has one partition of F elements; dst
 * has any partition count and F elements per partition:
 *   dst[p, e] = in[0, e]   (converted to dst's dtype)
 * in is read completely before dst is written, so they may overlap.
 * Contract: docs/parts/insns-act-pool.md. */
#include "insn_impl.h"

int nx_validate_PARTITION_BROADCAST(const nx_insn *insn, nx_engine engine,
                                    const nx_geometry *geo, nx_error *err) {
    (void)engine;
    (void)geo;
    const nx_operand *dst = &insn->op[0], *in = &insn->op[1];
    if (in->partition_count != 1)
        return nx_fail(err, "in: has %u partitions, must have exactly 1", in->partition_count);
    uint64_t fd = nx_operand_free_elems(dst), fi = nx_operand_free_elems(in);
    if (fd != fi)
        return nx_fail(err, "dst: has %llu elements per partition but in has %llu",
                       (unsigned long long)fd, (unsigned long long)fi);
    return 0;
}

int nx_exec_PARTITION_BROADCAST(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, in;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&in, ctx, &insn->op[1]);
    double *row = nx_buf_alloc(in.free_elems);
    if (!row)
        return nx_fail(ctx->err, "out of memory for %llu partition_broadcast values",
                       (unsigned long long)in.free_elems);
    nx_view_load(&in, 0, row);
    for (uint32_t p = 0; p < dst.partitions; p++) nx_view_store(&dst, p, row);
    free(row);
    return 0;
}
