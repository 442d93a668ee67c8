/* tensor_scalar: two chained ALU ops against per-partition scalars:
 *   t = rev0 ? (s0 op0 x) : (x op0 s0);  dst = rev1 ? (s1 op1 t) : (t op1 s1)
 * (the second step only when scalar1 is present). docs/parts/insns-dve.md. */
#include <inttypes.h>

#include "insn_impl.h"

static int check_same_shape(const nx_operand *a, const char *an, const nx_operand *d,
                            const char *dn, nx_error *err) {
    if (a->partition_count != d->partition_count)
        return nx_fail(err, "%s has %u partitions, %s has %u", an, a->partition_count, dn,
                       d->partition_count);
    uint64_t ea = nx_operand_free_elems(a), ed = nx_operand_free_elems(d);
    if (ea != ed)
        return nx_fail(err, "%s has %" PRIu64 " elements per partition, %s has %" PRIu64, an,
                       ea, dn, ed);
    return 0;
}

/* A scalar slot: an immediate, or one element per partition of `in`. */
static int check_scalar(const nx_operand *s, const char *sn, const nx_operand *in,
                        nx_error *err) {
    if (s->kind == NX_OPK_IMM) return 0;
    if (s->partition_count != in->partition_count)
        return nx_fail(err, "%s has %u partitions, in has %u", sn, s->partition_count,
                       in->partition_count);
    uint64_t n = nx_operand_free_elems(s);
    if (n != 1)
        return nx_fail(err, "%s has %" PRIu64 " elements per partition, a scalar has 1", sn, n);
    return 0;
}

int nx_validate_TENSOR_SCALAR(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                              nx_error *err) {
    (void)engine;
    (void)geo;
    const nx_operand *dst = &insn->op[0], *in = &insn->op[1];
    if (check_same_shape(in, "in", dst, "dst", err) != 0) return -1;
    if (check_scalar(&insn->op[2], "scalar0", in, err) != 0) return -1;
    if (insn->op[3].kind == NX_OPK_NONE) {
        if (insn->alu1 != NX_ALU_BYPASS)
            return nx_fail(err, "op1: is %s without scalar1 (must be bypass)",
                           nx_alu_name((nx_alu_op)insn->alu1));
        if (insn->flags & NX_FLAG_REVERSE1) return nx_fail(err, "rev1: is set without scalar1");
        return 0;
    }
    return check_scalar(&insn->op[3], "scalar1", in, err);
}

int nx_exec_TENSOR_SCALAR(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, in, s0v, s1v;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&in, ctx, &insn->op[1]);
    nx_view_init(&s0v, ctx, &insn->op[2]);
    int two = insn->op[3].kind != NX_OPK_NONE;
    if (two) nx_view_init(&s1v, ctx, &insn->op[3]);
    nx_alu_op op0 = (nx_alu_op)insn->alu0, op1 = (nx_alu_op)insn->alu1;
    int rev0 = (insn->flags & NX_FLAG_REVERSE0) != 0;
    int rev1 = (insn->flags & NX_FLAG_REVERSE1) != 0;
    uint64_t n = dst.free_elems;
    double *x = nx_buf_alloc(n);
    if (!x) return nx_fail(ctx->err, "out of memory for %" PRIu64 " elements", n);
    for (uint32_t p = 0; p < dst.partitions; p++) {
        double s0 = nx_view_scalar(&s0v, p);
        double s1 = two ? nx_view_scalar(&s1v, p) : 0.0;
        nx_view_load(&in, p, x);
        for (uint64_t e = 0; e < n; e++) {
            double t = rev0 ? nx_alu_apply(op0, s0, x[e]) : nx_alu_apply(op0, x[e], s0);
            if (two) t = rev1 ? nx_alu_apply(op1, s1, t) : nx_alu_apply(op1, t, s1);
            x[e] = t;
        }
        nx_view_store(&dst, p, x);
    }
    free(x);
    return 0;
}
