/* partition_all_reduce dst in (POOL): a reduction across partitions,
 * broadcast back to every partition:
 *   r[e] = identity(op0); for q over in's partitions in order: r[e] = r[e] op0 in[q, e]
 *   dst[p, e] = r[e] for every partition p of dst
 * op0 is add, multiply, max, min, abs_max, bitwise_and, bitwise_or or
 * bitwise_xor (each step through nx_alu_apply, so fp32 rounding at every step
 * for the arithmetic ops; a bitwise result stores its bit pattern,
 * nx_alu_bits_for_dtype). dst and in have the same partition count and
 * elements per partition. Contract: docs/parts/insns-act-pool.md. */
#include "insn_impl.h"

int nx_validate_PARTITION_ALL_REDUCE(const nx_insn *insn, nx_engine engine,
                                     const nx_geometry *geo, nx_error *err) {
    (void)engine;
    (void)geo;
    const nx_operand *dst = &insn->op[0], *in = &insn->op[1];
    if (isnan(nx_alu_reduce_identity((nx_alu_op)insn->alu0))) {
        const char *name = nx_alu_name((nx_alu_op)insn->alu0);
        return nx_fail(err,
                       "op0: must be add, multiply, max, min, abs_max, bitwise_and, bitwise_or "
                       "or bitwise_xor, got %s",
                       name ? name : "an unknown op");
    }
    if (dst->partition_count != in->partition_count)
        return nx_fail(err, "dst: has %u partitions but in has %u", dst->partition_count,
                       in->partition_count);
    uint64_t fd = nx_operand_free_elems(dst), fi = nx_operand_free_elems(in);
    if (fd != fi)
        return nx_fail(err, "dst: has %llu elements per partition but in has %llu",
                       (unsigned long long)fd, (unsigned long long)fi);
    return 0;
}

int nx_exec_PARTITION_ALL_REDUCE(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, in;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&in, ctx, &insn->op[1]);
    uint64_t n = in.free_elems;
    /* Reducing partition by partition reads all of in before dst is written,
     * so one row buffer plus the running result suffice. */
    double *acc = nx_buf_alloc(2 * n);
    if (!acc)
        return nx_fail(ctx->err, "out of memory for %llu partition_all_reduce values",
                       (unsigned long long)n);
    double *row = acc + n;
    nx_alu_op op = (nx_alu_op)insn->alu0;
    double identity = nx_alu_reduce_identity(op);
    for (uint64_t e = 0; e < n; e++) acc[e] = identity;
    for (uint32_t q = 0; q < in.partitions; q++) {
        nx_view_load(&in, q, row);
        for (uint64_t e = 0; e < n; e++) acc[e] = nx_alu_apply(op, acc[e], row[e]);
    }
    if (nx_alu_is_bitvec(op)) nx_alu_bits_for_dtype((nx_dtype)dst.dtype, acc, n);
    for (uint32_t p = 0; p < dst.partitions; p++) nx_view_store(&dst, p, acc);
    free(acc);
    return 0;
}
