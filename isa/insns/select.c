/* select: dst[p,e] = pred[p,e] != 0 ? on_true[p,e] : on_false[p,e] (NaN pred
 * counts as nonzero); on_true/on_false may be immediates. Without on_false,
 * only the elements whose pred is nonzero are written (predicated copy).
 * docs/parts/insns-dve.md. */
#include <inttypes.h>

#include "insn_impl.h"

int nx_validate_SELECT(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                       nx_error *err) {
    (void)engine;
    (void)geo;
    const nx_operand *dst = &insn->op[0];
    if (nx_check_same_shape(&insn->op[1], "pred", dst, "dst", err) != 0) return -1;
    if (nx_operand_is_memory(&insn->op[2]) &&
        nx_check_same_shape(&insn->op[2], "on_true", dst, "dst", err) != 0)
        return -1;
    if (nx_operand_is_memory(&insn->op[3]) &&
        nx_check_same_shape(&insn->op[3], "on_false", dst, "dst", err) != 0)
        return -1;
    return 0;
}

/* Partition p of a memory view, or n copies of an immediate. */
static void load_row(const nx_view *v, uint32_t p, double *out, uint64_t n) {
    if (v->kind == NX_OPK_IMM) {
        for (uint64_t e = 0; e < n; e++) out[e] = v->imm;
    } else {
        nx_view_load(v, p, out);
    }
}

int nx_exec_SELECT(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, pred, on_true, on_false;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&pred, ctx, &insn->op[1]);
    nx_view_init(&on_true, ctx, &insn->op[2]);
    int has_false = insn->op[3].kind != NX_OPK_NONE;
    if (has_false) nx_view_init(&on_false, ctx, &insn->op[3]);
    uint64_t n = dst.free_elems;
    double *c = nx_buf_alloc(3 * n);
    if (!c) return nx_fail(ctx->err, "out of memory for %" PRIu64 " elements", 3 * n);
    double *t = c + n, *f = t + n;
    for (uint32_t p = 0; p < dst.partitions; p++) {
        nx_view_load(&pred, p, c);
        load_row(&on_true, p, t, n);
        if (has_false) {
            load_row(&on_false, p, f, n);
            for (uint64_t e = 0; e < n; e++) f[e] = c[e] != 0.0 ? t[e] : f[e];
            nx_view_store(&dst, p, f);
        } else {
            /* Element by element so unselected elements are never rewritten
             * (and a broadcast dst keeps the last selected write). */
            nx_view_store_where(&dst, p, t, c);
        }
    }
    free(c);
    return 0;
}
