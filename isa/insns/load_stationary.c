/* load_stationary src=SBUF[K, M]: caches a tile in the PE as fp32 values.
 *
 * K = src partitions (<= pe_rows), M = src elements per partition
 * (<= pe_cols), src dtype one of the PE input types (fp32, bf16, fp16,
 * fp8_e4m3, fp8_e5m2). Every PE input type is exactly representable in fp32,
 * so the cached tile loses nothing (a 16-bit or fp8 NaN becomes the
 * canonical quiet NaN). The conversion is the PE's one input converter,
 * isa/pe_input.h, done for contiguous fp32 and bf16 rows by the active
 * matmul kernel's vectorised copy of it (nx_pe_convert, isa/pe/datapath.h),
 * which gives the same bits. */
#include "insn_impl.h"

#include "../pe/datapath.h"

int nx_validate_LOAD_STATIONARY(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                                nx_error *err) {
    (void)engine;
    const nx_operand *src = &insn->op[0];
    if (!nx_dtype_is_float((nx_dtype)src->dtype))
        return nx_fail(err, "src dtype %s is not a PE input type (fp32, bf16, fp16, fp8_e4m3, fp8_e5m2)",
                       nx_dtype_name((nx_dtype)src->dtype));
    if (src->partition_count > geo->pe_rows)
        return nx_fail(err, "src has %u partitions (K), more than the PE's %u rows",
                       (unsigned)src->partition_count, geo->pe_rows);
    uint64_t m = nx_operand_free_elems(src);
    if (m > geo->pe_cols)
        return nx_fail(err, "src has %llu elements per partition (M), more than the PE's %u columns",
                       (unsigned long long)m, geo->pe_cols);
    return 0;
}

int nx_exec_LOAD_STATIONARY(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_core_state *cs = &ctx->state->core[ctx->core];
    nx_pe_kernel kernel;
    if (nx_pe_kernel_active(&kernel, ctx->err) != 0) return -1;
    nx_view src;
    nx_view_init(&src, ctx, &insn->op[0]);
    nx_pe_convert(kernel, &src, src.partitions, cs->stationary, ctx->state->geo.pe_cols);
    cs->stationary_k = src.partitions;
    cs->stationary_m = (uint32_t)src.free_elems;
    cs->stationary_dtype = src.dtype;
    cs->stationary_valid = 1;
    return 0;
}
