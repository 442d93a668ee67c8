/* transpose dst src: src [P partitions, F elements] -> dst [F partitions,
 * P elements], dst[f][p] = src[p][f].
 *
 * PE: src SBUF, dst PSUM (generic engine rules), P <= pe_rows, F <= pe_cols,
 *     src a PE input type, dst dtype == src dtype (bit-exact move) or fp32
 *     (exact widening), dst inside one PSUM bank per partition (it is a
 *     matmul against an identity). The stationary tile is not changed.
 * DVE: P, F <= dve_transpose_max, SBUF or PSUM on either side, dst dtype ==
 *     src dtype (bit-exact move of any dtype).
 * The whole source is read before anything is written, so src and dst may
 * overlap. */
#include "insn_impl.h"

int nx_validate_TRANSPOSE(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                          nx_error *err) {
    const nx_operand *dst = &insn->op[0], *src = &insn->op[1];
    uint64_t p = src->partition_count, f = nx_operand_free_elems(src);
    nx_dtype sdt = (nx_dtype)src->dtype, ddt = (nx_dtype)dst->dtype;
    if (engine == NX_ENG_PE) {
        if (!nx_dtype_is_float(sdt))
            return nx_fail(err, "src dtype %s is not a PE input type (fp32, bf16, fp16, fp8_e4m3, fp8_e5m2)",
                           nx_dtype_name(sdt));
        if (ddt != sdt && ddt != NX_DT_FP32)
            return nx_fail(err, "dst dtype %s must equal src dtype %s or be fp32 on the PE",
                           nx_dtype_name(ddt), nx_dtype_name(sdt));
        if (p > geo->pe_rows)
            return nx_fail(err, "src has %llu partitions, more than the PE's %u rows",
                           (unsigned long long)p, geo->pe_rows);
        if (f > geo->pe_cols)
            return nx_fail(err, "src has %llu elements per partition, more than the PE's %u columns",
                           (unsigned long long)f, geo->pe_cols);
    } else {
        if (ddt != sdt)
            return nx_fail(err, "dst dtype %s must equal src dtype %s on %s",
                           nx_dtype_name(ddt), nx_dtype_name(sdt), nx_engine_name(engine));
        if (p > geo->dve_transpose_max || f > geo->dve_transpose_max)
            return nx_fail(err, "src is %llu x %llu, more than the %u x %u block %s can transpose",
                           (unsigned long long)p, (unsigned long long)f, geo->dve_transpose_max,
                           geo->dve_transpose_max, nx_engine_name(engine));
    }
    if (dst->partition_count != f)
        return nx_fail(err, "dst has %u partitions but src has %llu elements per partition",
                       (unsigned)dst->partition_count, (unsigned long long)f);
    if (nx_operand_free_elems(dst) != p)
        return nx_fail(err, "dst has %llu elements per partition but src has %llu partitions",
                       (unsigned long long)nx_operand_free_elems(dst), (unsigned long long)p);
    if (engine == NX_ENG_PE && dst->kind == NX_OPK_PSUM) {
        uint64_t lo, hi, bank = geo->psum_bank_bytes;
        nx_operand_span(dst, &lo, &hi); /* bytes within each partition */
        if (bank == 0 || lo / bank != (hi - 1) / bank)
            return nx_fail(err, "dst bytes [%llu, %llu) of each partition straddle PSUM banks of %llu bytes",
                           (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)bank);
    }
    return 0;
}

int nx_exec_TRANSPOSE(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, src;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&src, ctx, &insn->op[1]);
    uint32_t p_count = src.partitions;
    uint64_t f_count = src.free_elems;
    size_t ssize = nx_dtype_size((nx_dtype)src.dtype);
    /* raw source bytes, [p][f], then one dst row of raw bytes; the
     * converted row is a buffer of engine values */
    uint8_t *raw = malloc((size_t)p_count * f_count * ssize + (size_t)p_count * ssize);
    int convert = dst.dtype != src.dtype;
    double *values = convert ? nx_buf_alloc(p_count) : NULL;
    if (raw == NULL || (convert && values == NULL)) {
        free(raw);
        free(values);
        return nx_fail(ctx->err, "out of memory for the transpose buffer");
    }
    uint8_t *row = raw + (size_t)p_count * f_count * ssize;
    for (uint32_t p = 0; p < p_count; p++) nx_view_load_bits(&src, p, raw + (uint64_t)p * f_count * ssize);
    const int64_t column_step = (int64_t)(f_count * ssize); /* raw[p][f] to raw[p + 1][f] */
    /* dst row f is column f, written element p = 0, 1, ... */
    for (uint64_t f = 0; f < f_count; f++) {
        const uint8_t *column = raw + f * ssize;
        if (convert) {
            nx_dtype_load_run((nx_dtype)src.dtype, column, column_step, p_count, values);
            nx_view_store(&dst, (uint32_t)f, values);
        } else {
            for (uint32_t p = 0; p < p_count; p++) memcpy(row + p * ssize, column + (int64_t)p * column_step, ssize);
            nx_view_store_bits(&dst, (uint32_t)f, row);
        }
    }
    free(values);
    free(raw);
    return 0;
}
