/* tensor_reduce: reduce in's free dims named by the `axes` bit mask (bit k =
 * dim k, dim 0 outermost) with alu0; dst holds the kept dims row-major.
 * Each output is r = identity; r = r op x for the reduced elements in
 * row-major order (= x0 normalised, then sequential fp32 steps); `negate`
 * stores -r (for the bitwise ops an integer negation, so 0 stays +0, and dst
 * gets the bit pattern: nx_alu_bits_for_dtype). docs/parts/insns-dve.md. */
#include <inttypes.h>

#include "insn_impl.h"

/* Elements per partition of in with the axes dims removed. */
static uint64_t kept_elems(const nx_operand *in, uint32_t axes) {
    uint64_t n = 1;
    for (uint32_t k = 0; k < in->ndims; k++)
        if (!(axes & (1u << k))) n *= in->count[k];
    return n;
}

int nx_validate_TENSOR_REDUCE(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                              nx_error *err) {
    (void)engine;
    (void)geo;
    const nx_operand *dst = &insn->op[0], *in = &insn->op[1];
    nx_alu_op op = (nx_alu_op)insn->alu0;
    if (isnan(nx_alu_reduce_identity(op)))
        return nx_fail(err,
                       "op0: must be add, multiply, max, min, abs_max, bitwise_and, bitwise_or "
                       "or bitwise_xor, got %s",
                       nx_alu_name(op));
    uint32_t axes = (uint32_t)insn->iparam[0];
    if (axes == 0) return nx_fail(err, "axes is 0: name at least one of in's free dims");
    for (uint32_t k = 0; k < 32; k++)
        if ((axes & (1u << k)) && k >= in->ndims)
            return nx_fail(err, "axes 0x%x names dim %u, in has %u free dims", axes, k,
                           in->ndims);
    if (in->partition_count != dst->partition_count)
        return nx_fail(err, "in has %u partitions, dst has %u", in->partition_count,
                       dst->partition_count);
    uint64_t want = kept_elems(in, axes), have = nx_operand_free_elems(dst);
    if (want != have)
        return nx_fail(err,
                       "dst has %" PRIu64 " elements per partition, in reduced over axes 0x%x "
                       "has %" PRIu64,
                       have, axes, want);
    return 0;
}

int nx_exec_TENSOR_REDUCE(const nx_exec_ctx *ctx, const nx_insn *insn) {
    const nx_operand *inop = &insn->op[1];
    nx_view dst, in;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&in, ctx, inop);
    nx_alu_op op = (nx_alu_op)insn->alu0;
    uint32_t axes = (uint32_t)insn->iparam[0];
    int negate = (insn->flags & NX_FLAG_NEGATE) != 0;
    double identity = nx_alu_reduce_identity(op);
    int bits = nx_alu_is_bitvec(op);

    /* Output index step per input dim: 0 for reduced dims, else the number of
     * kept elements inside it. */
    uint32_t nd = inop->ndims;
    uint64_t ostride[NX_MAX_FREE_DIMS] = {0}, step = 1;
    for (uint32_t k = nd; k-- > 0;) {
        if (axes & (1u << k)) continue;
        ostride[k] = step;
        step *= inop->count[k];
    }

    /* The innermost dims that are all reduced (or all kept) form one block
     * of consecutive elements: reduced, a fold into one output; kept, an
     * elementwise op into as many consecutive outputs. The dims outside it
     * advance an odometer; elements are still taken in row-major order, so
     * every output folds its elements in that order. */
    const int inner_reduced = (axes >> (nd - 1)) & 1u;
    uint32_t outer = nd;
    uint64_t block = 1;
    while (outer > 0 && (int)((axes >> (outer - 1)) & 1u) == inner_reduced) block *= inop->count[--outer];

    uint64_t n = in.free_elems, m = dst.free_elems;
    double *x = nx_buf_alloc(n + m);
    if (!x) return nx_fail(ctx->err, "out of memory for %" PRIu64 " elements", n + m);
    double *r = x + n;
    for (uint32_t p = 0; p < dst.partitions; p++) {
        nx_view_load(&in, p, x);
        for (uint64_t o = 0; o < m; o++) r[o] = identity;
        uint32_t idx[NX_MAX_FREE_DIMS] = {0};
        uint64_t o = 0;
        for (uint64_t e = 0; e < n; e += block) {
            if (inner_reduced) r[o] = nx_alu_fold(op, r[o], x + e, block);
            else nx_alu_run(op, r + o, r + o, x + e, block);
            for (uint32_t k = outer; k-- > 0;) { /* odometer over the outer dims */
                o += ostride[k];
                if (++idx[k] < inop->count[k]) break;
                o -= ostride[k] * inop->count[k];
                idx[k] = 0;
            }
        }
        if (negate && bits) /* integer negation: 0 stays +0, integers have no -0 */
            for (uint64_t i = 0; i < m; i++) r[i] = 0.0 - r[i];
        else if (negate)
            for (uint64_t i = 0; i < m; i++) r[i] = -r[i];
        if (bits) nx_alu_bits_for_dtype((nx_dtype)dst.dtype, r, m);
        nx_view_store(&dst, p, r);
    }
    free(x);
    return 0;
}
