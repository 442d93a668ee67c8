/* memset: every dst element = the immediate `value`, converted to dst's
 * dtype. docs/parts/insns-dve.md. */
#include <inttypes.h>

#include "insn_impl.h"

int nx_validate_MEMSET(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                       nx_error *err) {
    /* dst is any memory AP and value an immediate: the generic checks cover it. */
    (void)insn;
    (void)engine;
    (void)geo;
    (void)err;
    return 0;
}

int nx_exec_MEMSET(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst;
    nx_view_init(&dst, ctx, &insn->op[0]);
    uint64_t n = dst.free_elems;
    double *x = nx_buf_alloc(n);
    if (!x) return nx_fail(ctx->err, "out of memory for %" PRIu64 " elements", n);
    for (uint64_t e = 0; e < n; e++) x[e] = insn->op[1].imm;
    for (uint32_t p = 0; p < dst.partitions; p++) nx_view_store(&dst, p, x);
    free(x);
    return 0;
}
