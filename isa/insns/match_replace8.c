/* match_replace8: dst = in where, for j = 7, 6, .., 0 in that order, the
 * first element equal to values[j] (find_index8's equality) that has not
 * been matched yet becomes `replacement`; the optional `indices` gets each
 * replaced index, or 0xFFFFFFFF (uint32) / -1 (int32) when values[j]
 * matched nothing. The reverse order is the one the NKI documentation of
 * nc_match_replace8 gives: duplicated values pair the first occurrence with
 * the highest j (find_index8 searches every value from the start instead).
 * docs/parts/insns-dve.md. */
#include <inttypes.h>

#include "insn_impl.h"

#define MATCH_K 8

static int check_eight(const nx_operand *op, const char *name, const nx_operand *dst,
                       nx_error *err) {
    if (op->partition_count != dst->partition_count)
        return nx_fail(err, "%s has %u partitions, dst has %u", name, op->partition_count,
                       dst->partition_count);
    uint64_t n = nx_operand_free_elems(op);
    if (n != MATCH_K)
        return nx_fail(err, "%s has %" PRIu64 " elements per partition, match_replace8 needs 8",
                       name, n);
    return 0;
}

int nx_validate_MATCH_REPLACE8(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                               nx_error *err) {
    (void)engine;
    (void)geo;
    const nx_operand *dst = &insn->op[0], *in = &insn->op[1], *indices = &insn->op[4];
    if (in->partition_count != dst->partition_count)
        return nx_fail(err, "in has %u partitions, dst has %u", in->partition_count,
                       dst->partition_count);
    uint64_t ei = nx_operand_free_elems(in), ed = nx_operand_free_elems(dst);
    if (ei != ed)
        return nx_fail(err, "in has %" PRIu64 " elements per partition, dst has %" PRIu64, ei,
                       ed);
    if (check_eight(&insn->op[2], "values", dst, err) != 0) return -1;
    if (indices->kind == NX_OPK_NONE) return 0;
    if (indices->dtype != NX_DT_INT32 && indices->dtype != NX_DT_UINT32)
        return nx_fail(err, "indices dtype is %s, match_replace8 writes int32 or uint32",
                       nx_dtype_name((nx_dtype)indices->dtype));
    return check_eight(indices, "indices", dst, err);
}

int nx_exec_MATCH_REPLACE8(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, in, values, indices;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&in, ctx, &insn->op[1]);
    nx_view_init(&values, ctx, &insn->op[2]);
    int has_indices = insn->op[4].kind != NX_OPK_NONE;
    if (has_indices) nx_view_init(&indices, ctx, &insn->op[4]);
    double none = has_indices && indices.dtype == NX_DT_UINT32 ? 4294967295.0 : -1.0;
    double replacement = insn->op[3].imm;
    uint64_t n = in.free_elems;
    double *x = nx_buf_alloc(n);
    if (!x) return nx_fail(ctx->err, "out of memory for %" PRIu64 " elements", n);
    for (uint32_t p = 0; p < dst.partitions; p++) {
        double v[MATCH_K], idx[MATCH_K];
        uint64_t hit[MATCH_K]; /* indices replaced so far */
        int hits = 0;
        nx_view_load(&in, p, x);
        nx_view_load(&values, p, v);
        for (int j = MATCH_K - 1; j >= 0; j--) {
            idx[j] = none;
            int nan = isnan(v[j]);
            for (uint64_t e = 0; e < n; e++) {
                if (!(x[e] == v[j] || (nan && isnan(x[e])))) continue;
                int done = 0;
                for (int h = 0; h < hits; h++) done |= hit[h] == e;
                if (done) continue;
                hit[hits++] = e;
                idx[j] = (double)e;
                break;
            }
        }
        /* Replace after matching so a replacement never matches a later value. */
        for (int h = 0; h < hits; h++) x[hit[h]] = replacement;
        nx_view_store(&dst, p, x);
        if (has_indices) nx_view_store(&indices, p, idx);
    }
    free(x);
    return 0;
}
