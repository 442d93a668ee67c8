/* activation dst in scale bias [acc_out] (ACT):
 *   y[p, e] = func(fp32(fp32(in[p, e] * scale[p]) + bias[p]))   (fp32 values;
 *             the multiply and the add are the ALU's, NaN rule included)
 *   dst[p, e] = y[p, e] converted to dst's dtype
 *   acc_out[p] = op0-reduction of y[p, 0..F-1] in element order (optional)
 * scale and bias are immediates or per-partition scalars (one element per
 * partition). Every input is read before any output is written; dst is
 * written before acc_out. Full contract: docs/parts/insns-act-pool.md. */
#include "insn_impl.h"

#include "../ew.h"

/* The reductions acc_out accepts (the arithmetic ones, not bitwise). */
static int acc_op_ok(unsigned op) {
    return op == NX_ALU_ADD || op == NX_ALU_MULTIPLY || op == NX_ALU_MAX || op == NX_ALU_MIN ||
           op == NX_ALU_ABS_MAX;
}

static const char *alu_label(unsigned op) {
    const char *name = nx_alu_name((nx_alu_op)op);
    return name ? name : "an unknown op";
}

/* A scale/bias/acc_out memory operand: one element in each of in's partitions. */
static int check_per_partition(const nx_operand *op, const nx_operand *in, const char *what,
                               nx_error *err) {
    if (!nx_operand_is_memory(op)) return 0;
    if (op->partition_count != in->partition_count)
        return nx_fail(err, "%s: has %u partitions but in has %u (one value per partition of in)",
                       what, op->partition_count, in->partition_count);
    uint64_t n = nx_operand_free_elems(op);
    if (n != 1)
        return nx_fail(err, "%s: has %llu elements per partition, must have exactly 1", what,
                       (unsigned long long)n);
    return 0;
}

int nx_validate_ACTIVATION(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                           nx_error *err) {
    (void)engine;
    (void)geo;
    const nx_operand *dst = &insn->op[0], *in = &insn->op[1];
    if (dst->partition_count != in->partition_count)
        return nx_fail(err, "dst: has %u partitions but in has %u", dst->partition_count,
                       in->partition_count);
    uint64_t fd = nx_operand_free_elems(dst), fi = nx_operand_free_elems(in);
    if (fd != fi)
        return nx_fail(err, "dst: has %llu elements per partition but in has %llu",
                       (unsigned long long)fd, (unsigned long long)fi);
    if (check_per_partition(&insn->op[2], in, "scale", err) ||
        check_per_partition(&insn->op[3], in, "bias", err))
        return -1;
    const nx_operand *acc = &insn->op[4];
    if (acc->kind == NX_OPK_NONE) {
        if (insn->alu0 != NX_ALU_BYPASS)
            return nx_fail(err, "op0: is %s but there is no acc_out (op0 must be bypass)",
                           alu_label(insn->alu0));
        return 0;
    }
    if (!acc_op_ok(insn->alu0))
        return nx_fail(err,
                       "op0: acc_out needs op0 = add, max, min, multiply or abs_max, got %s",
                       alu_label(insn->alu0));
    return check_per_partition(acc, in, "acc_out", err);
}

int nx_exec_ACTIVATION(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, in, scale, bias, acc;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&in, ctx, &insn->op[1]);
    nx_view_init(&scale, ctx, &insn->op[2]);
    nx_view_init(&bias, ctx, &insn->op[3]);
    int has_acc = insn->op[4].kind != NX_OPK_NONE;
    if (has_acc) nx_view_init(&acc, ctx, &insn->op[4]);

    /* identity without acc_out is the chain (in * scale) + bias: the fused
     * kernel when it reads every input before it is overwritten, as the
     * whole-instruction buffer below does (reads_first) */
    if (insn->func == NX_ACT_IDENTITY && !has_acc) {
        const nx_ew_step steps[2] = {{NX_ALU_MULTIPLY, 0, NULL, &scale}, {NX_ALU_ADD, 0, NULL, &bias}};
        if (nx_ew_fused(&dst, &in, steps, 2, 1)) return 0;
    }
    uint32_t parts = in.partitions;
    uint64_t n = in.free_elems;
    /* Whole-instruction buffer: dst may overlap in (or scale/bias) in other
     * partitions, so every input is loaded before anything is stored. Layout:
     * values [parts * n], then per partition scale, bias, reduction. */
    double *values = nx_buf_alloc((uint64_t)parts * n + 3u * (uint64_t)parts);
    if (!values)
        return nx_fail(ctx->err, "out of memory for %u x %llu activation values", parts,
                       (unsigned long long)n);
    double *s = values + (uint64_t)parts * n, *b = s + parts, *r = b + parts;
    for (uint32_t p = 0; p < parts; p++) {
        nx_view_load(&in, p, values + (uint64_t)p * n);
        s[p] = nx_fp32_round(nx_view_scalar(&scale, p));
        b[p] = nx_fp32_round(nx_view_scalar(&bias, p));
    }

    nx_act_func func = (nx_act_func)insn->func;
    nx_alu_op op = (nx_alu_op)insn->alu0;
    double identity = nx_alu_reduce_identity(op);
    for (uint32_t p = 0; p < parts; p++) {
        double *row = values + (uint64_t)p * n;
        /* the ALU's multiply and add: fp32 steps, and a NaN result that
         * does not depend on the host (docs/parts/insns-act-pool.md) */
        nx_alu_run_scalar(NX_ALU_MULTIPLY, row, row, s[p], 0, n);
        nx_alu_run_scalar(NX_ALU_ADD, row, row, b[p], 0, n);
        nx_act_apply_run(func, row, n);
        r[p] = has_acc ? nx_alu_fold(op, identity, row, n) : identity;
    }

    for (uint32_t p = 0; p < parts; p++) nx_view_store(&dst, p, values + (uint64_t)p * n);
    if (has_acc)
        for (uint32_t p = 0; p < parts; p++) nx_view_store(&acc, p, r + p);
    free(values);
    return 0;
}
