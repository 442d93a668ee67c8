/* multiply_moving dst=PSUM[M, N] moving=SBUF[K, N] [acc]:
 *   partial[m][n] = sum_{k=0..K-1} stationary[k][m] * moving[k][n]
 * in fp32, each product rounded to fp32 and each sum rounded (a multiply
 * then an add, never a fused multiply-add that rounds once), summed
 * sequentially in k order starting from the k = 0 product; then
 * dst = acc ? dst + partial : partial (fp32).
 * A NaN result is stored as the canonical quiet NaN 0x7fc00000, as the RTL
 * array (sim/rtl) produces, so the two datapaths agree bit for bit.
 *
 * The arithmetic is the PE datapath's (isa/pe/datapath.h): SIMD kernels
 * chosen at run time (NXSIM_MM_KERNEL), each giving exactly these bits; a
 * kernel may fuse a multiply-add only where the product is exact, where
 * fusing changes no bit. With the state's worker threads (isa/workers.h) a
 * large multiply's output tiles are shared out: the same bits. */
#include "insn_impl.h"

#include "../pe/datapath.h"

int nx_validate_MULTIPLY_MOVING(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                                nx_error *err) {
    (void)engine;
    const nx_operand *dst = &insn->op[0], *mv = &insn->op[1];
    if (!nx_dtype_is_float((nx_dtype)mv->dtype))
        return nx_fail(err, "moving dtype %s is not a PE input type (fp32, bf16, fp16, fp8_e4m3, fp8_e5m2)",
                       nx_dtype_name((nx_dtype)mv->dtype));
    if (mv->partition_count > geo->pe_rows)
        return nx_fail(err, "moving has %u partitions (K), more than the PE's %u rows",
                       (unsigned)mv->partition_count, geo->pe_rows);
    uint64_t n = nx_operand_free_elems(mv);
    if (n > geo->pe_moving_free_max)
        return nx_fail(err, "moving has %llu elements per partition (N), more than the limit %u",
                       (unsigned long long)n, geo->pe_moving_free_max);
    if (dst->dtype != NX_DT_FP32)
        return nx_fail(err, "dst dtype %s must be fp32 (PSUM accumulates in fp32)",
                       nx_dtype_name((nx_dtype)dst->dtype));
    if (nx_operand_free_elems(dst) != n)
        return nx_fail(err, "dst has %llu elements per partition but moving has %llu (N)",
                       (unsigned long long)nx_operand_free_elems(dst), (unsigned long long)n);
    if (dst->partition_count > geo->pe_cols)
        return nx_fail(err, "dst has %u partitions (M), more than the PE's %u columns",
                       (unsigned)dst->partition_count, geo->pe_cols);
    uint64_t lo, hi;
    nx_operand_span(dst, &lo, &hi); /* bytes within each partition */
    if (geo->psum_bank_bytes == 0 || lo / geo->psum_bank_bytes != (hi - 1) / geo->psum_bank_bytes)
        return nx_fail(err, "dst bytes [%llu, %llu) of each partition straddle PSUM banks of %llu bytes",
                       (unsigned long long)lo, (unsigned long long)hi,
                       (unsigned long long)geo->psum_bank_bytes);
    return 0;
}

int nx_exec_MULTIPLY_MOVING(const nx_exec_ctx *ctx, const nx_insn *insn) {
    const nx_core_state *cs = &ctx->state->core[ctx->core];
    const nx_operand *dop = &insn->op[0], *mop = &insn->op[1];
    if (!cs->stationary_valid)
        return nx_fail(ctx->err, "no stationary tile is loaded (load_stationary must come first)");
    if (mop->partition_count != cs->stationary_k)
        return nx_fail(ctx->err, "moving has K = %u partitions but the stationary tile has K = %u",
                       (unsigned)mop->partition_count, cs->stationary_k);
    if (dop->partition_count != cs->stationary_m)
        return nx_fail(ctx->err, "dst has %u partitions but the stationary tile has M = %u columns",
                       (unsigned)dop->partition_count, cs->stationary_m);
    nx_pe_kernel kernel;
    if (nx_pe_kernel_active(&kernel, ctx->err) != 0) return -1;
    nx_view dst, mv;
    nx_view_init(&dst, ctx, dop);
    nx_view_init(&mv, ctx, mop);
    nx_pe_matmul mm = {cs->stationary, ctx->state->geo.pe_cols, (nx_dtype)cs->stationary_dtype, &mv, &dst,
                       (insn->flags & NX_FLAG_ACCUMULATE) != 0, ctx->state->workers};
    return nx_pe_matmul_run(kernel, &mm, ctx->err);
}
