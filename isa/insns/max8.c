/* max8: the 8 largest values of each partition's elements, in descending
 * order (duplicates kept; NaN above +Inf; equal values, including -0/+0, in
 * element order). docs/parts/insns-dve.md. */
#include <inttypes.h>

#include "insn_impl.h"

#define MAX8_K 8

int nx_validate_MAX8(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                     nx_error *err) {
    (void)engine;
    const nx_operand *dst = &insn->op[0], *in = &insn->op[1];
    if (in->partition_count != dst->partition_count)
        return nx_fail(err, "in has %u partitions, dst has %u", in->partition_count,
                       dst->partition_count);
    uint64_t n = nx_operand_free_elems(in);
    if (n < geo->max8_min_elems || n > geo->max8_max_elems)
        return nx_fail(err, "in has %" PRIu64 " elements per partition, max8 takes %u..%u", n,
                       geo->max8_min_elems, geo->max8_max_elems);
    uint64_t d = nx_operand_free_elems(dst);
    if (d != MAX8_K)
        return nx_fail(err, "dst has %" PRIu64 " elements per partition, max8 writes 8", d);
    return 0;
}

/* Strict order used by max8: NaN ranks above every number. */
static int ranks_above(double a, double b) {
    if (isnan(a)) return !isnan(b);
    if (isnan(b)) return 0;
    return a > b;
}

int nx_exec_MAX8(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, in;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&in, ctx, &insn->op[1]);
    uint64_t n = in.free_elems;
    double *x = nx_buf_alloc(n);
    if (!x) return nx_fail(ctx->err, "out of memory for %" PRIu64 " elements", n);
    for (uint32_t p = 0; p < dst.partitions; p++) {
        nx_view_load(&in, p, x);
        double top[MAX8_K];
        uint32_t cnt = 0;
        for (uint64_t e = 0; e < n; e++) {
            uint32_t j;
            if (cnt < MAX8_K) {
                j = cnt++;
            } else if (ranks_above(x[e], top[MAX8_K - 1])) {
                j = MAX8_K - 1;
            } else {
                continue;
            }
            /* Insertion: move past strictly lower values only, so an earlier
             * equal value stays first. */
            for (; j > 0 && ranks_above(x[e], top[j - 1]); j--) top[j] = top[j - 1];
            top[j] = x[e];
        }
        /* Fewer than 8 inputs only on a machine whose max8_min_elems < 8. */
        for (; cnt < MAX8_K; cnt++) top[cnt] = -INFINITY;
        nx_view_store(&dst, p, top);
    }
    free(x);
    return 0;
}
