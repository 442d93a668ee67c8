/* bn_stats: per partition, (count, mean, m2) of each half of the free
 * elements, A = [0, ceil(F/2)) and B = [ceil(F/2), F), by Welford's algorithm
 * in fp32 in element order; dst gets (count_a, mean_a, m2_a, count_b, mean_b,
 * m2_b). An empty half gives (0, 0, 0). docs/parts/insns-dve.md. */
#include <inttypes.h>

#include "insn_impl.h"

#define BN_STATS_OUT 6

int nx_validate_BN_STATS(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                         nx_error *err) {
    (void)engine;
    (void)geo;
    const nx_operand *dst = &insn->op[0], *in = &insn->op[1];
    if (in->partition_count != dst->partition_count)
        return nx_fail(err, "in has %u partitions, dst has %u", in->partition_count,
                       dst->partition_count);
    uint64_t d = nx_operand_free_elems(dst);
    if (d != BN_STATS_OUT)
        return nx_fail(err, "dst has %" PRIu64 " elements per partition, bn_stats writes 6", d);
    return 0;
}

/* Welford over x[0..n) with every operation rounded to fp32 (float
 * arithmetic; the library builds with -ffp-contract=off, so no FMA). */
static void welford(const double *x, uint64_t n, double out[3]) {
    float count = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (uint64_t i = 0; i < n; i++) {
        float v = (float)nx_fp32_round(x[i]);
        count = count + 1.0f;
        float delta = v - mean;
        mean = mean + delta / count;
        m2 = m2 + delta * (v - mean);
    }
    out[0] = count;
    out[1] = mean;
    out[2] = m2;
}

int nx_exec_BN_STATS(const nx_exec_ctx *ctx, const nx_insn *insn) {
    nx_view dst, in;
    nx_view_init(&dst, ctx, &insn->op[0]);
    nx_view_init(&in, ctx, &insn->op[1]);
    uint64_t n = in.free_elems, half = (n + 1) / 2;
    double *x = nx_buf_alloc(n);
    if (!x) return nx_fail(ctx->err, "out of memory for %" PRIu64 " elements", n);
    for (uint32_t p = 0; p < dst.partitions; p++) {
        double out[BN_STATS_OUT];
        nx_view_load(&in, p, x);
        welford(x, half, out);
        welford(x + half, n - half, out + 3);
        nx_view_store(&dst, p, out);
    }
    free(x);
    return 0;
}
