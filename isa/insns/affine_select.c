/* affine_select dst pattern in fill (POOL):
 *   dst[p, e] = (pattern(p, e) op0 0) ? in[p, e] : fill
 * op0 is one of the six comparisons; pattern, in and dst have the same
 * partition count and elements per partition; the pattern has an integer
 * dtype. All of in is read before dst is written. The classic use is a causal
 * mask: pattern(p, e) = p - e with op0 = is_ge keeps the lower triangle.
 * Contract: docs/parts/insns-act-pool.md. */
#include "insn_impl.h"

static int is_comparison(unsigned op) {
    return op == NX_ALU_IS_EQUAL || op == NX_ALU_NOT_EQUAL || op == NX_ALU_IS_GE ||
           op == NX_ALU_IS_GT || op == NX_ALU_IS_LE || op == NX_ALU_IS_LT;
}

static int check_same_shape(const nx_operand *op, const nx_operand *dst, const char *what,
                            nx_error *err) {
    if (op->partition_count != dst->partition_count)
        return nx_fail(err, "%s: has %u partitions but dst has %u", what, op->partition_count,
                       dst->partition_count);
    uint64_t fo = nx_operand_free_elems(op), fd = nx_operand_free_elems(dst);
    if (fo != fd)
        return nx_fail(err, "%s: has %llu elements per partition but dst has %llu", what,
                       (unsigned long long)fo, (unsigned long long)fd);
    return 0;
}

int nx_validate_AFFINE_SELECT(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                              nx_error *err) {
    (void)engine;
    (void)geo;
    const nx_operand *dst = &insn->op[0], *pat = &insn->op[1];
    if (!is_comparison(insn->alu0)) {
        const char *name = nx_alu_name((nx_alu_op)insn->alu0);
        return nx_fail(err,
                       "op0: must be a comparison (is_equal, not_equal, is_ge, is_gt, is_le, "
                       "is_lt), got %s",
                       name ? name : "an unknown op");
    }
    if (check_same_shape(pat, dst, "pattern", err) ||
        check_same_shape(&insn->op[2], dst, "in", err))
        return -1;
    return 0;
}

int nx_exec_AFFINE_SELECT(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, pat, in;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&pat, ctx, &insn->op[1]);
    nx_view_init(&in, ctx, &insn->op[2]);
    double fill = insn->op[3].imm;
    uint32_t parts = dst.partitions;
    uint64_t n = dst.free_elems;
    /* values: all of in (it may overlap dst in other partitions), then one
     * partition of pattern values. */
    double *values = nx_buf_alloc((uint64_t)parts * n + n);
    if (!values)
        return nx_fail(ctx->err, "out of memory for %u x %llu affine_select values", parts,
                       (unsigned long long)n);
    double *pv = values + (uint64_t)parts * n;
    for (uint32_t p = 0; p < parts; p++) nx_view_load(&in, p, values + (uint64_t)p * n);
    nx_alu_op op = (nx_alu_op)insn->alu0;
    for (uint32_t p = 0; p < parts; p++) {
        double *row = values + (uint64_t)p * n;
        nx_view_load(&pat, p, pv);
        for (uint64_t e = 0; e < n; e++)
            if (nx_alu_apply(op, pv[e], 0.0) == 0.0) row[e] = fill;
        nx_view_store(&dst, p, row);
    }
    free(values);
    return 0;
}
