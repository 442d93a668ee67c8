/* The conv composite's outer-dim swap (conv_onnx.h nx_conv_onnx_swap):
 * [A][B][E] -> [B][A][E], X NCHW -> CNHW (A = N, B = C, E = H x W) and W
 * OIHW -> IOHW (A = O, B = C/group, E = KH x KW). Two routes, the cheaper
 * by the machine's figures (docs/parts/machine.md):
 *
 * - DMA: strided HBM -> HBM transfers of whole b rows (disjoint destination
 *   spans, two per lane), each row A runs of E elements; costed by the
 *   model at min(1, E x bytes / the efficient run) of the engines' rate, so
 *   close to a copy for an image's H x W runs;
 * - SBUF: an a-tile loaded as it lies ([A rows, B x E], long runs; q
 *   consecutive a's per partition when B x E is short), for
 *   every e a PE transpose of its [a, b] slice into PSUM (several e's per
 *   bank), copied by DVE and ACT in turn (as same-size unsigned ints: bit
 *   exact) into a [b, (a, e)] tile, stored with runs of A x E elements: a
 *   3x3 filter's 9-element runs would otherwise move at 1/100 of the rate.
 *   The PE transposes are those of tiled_pf_transpose (the same-size PE
 *   dtype trick). */
#include <string.h>

#include "conv_onnx.h"
#include "isa/builder.h"
#include "isa/intmath.h"
#include "kernels/conv/conv_ap.h"


static int swap_dma(nx_kctx *k, nx_dtype dt, uint64_t A, uint64_t B, uint64_t E, uint64_t src, uint64_t dst,
                    nx_error *err) {
    uint64_t es = nx_dtype_size(dt), P = nx_kctx_geometry(k)->partitions, lanes = nx_kctx_lanes(k);
    uint64_t rows = nx_min_u64(nx_cdiv_u64(B, 2 * lanes), P);
    for (uint64_t b0 = 0; b0 < B; b0 += rows) {
        uint32_t nb = (uint32_t)nx_min_u64(B - b0, rows);
        int32_t st[2] = {(int32_t)(B * E), 1};
        uint32_t ct[2] = {(uint32_t)A, (uint32_t)E};
        nx_operand s = nx_conv_hbm_view(dt, src + b0 * E * es, nb, (int64_t)E, 2, st, ct);
        int32_t dst_st[1] = {1};
        uint32_t dst_ct[1] = {(uint32_t)(A * E)};
        nx_operand d = nx_conv_hbm_view(dt, dst + b0 * A * E * es, nb, (int64_t)(A * E), 1, dst_st, dst_ct);
        if (nx_kctx_dma(k, &d, &s, err) != 0) return -1;
    }
    return 0;
}

typedef struct sbuf_plan {
    uint64_t ta, tb; /* partitions of an a-tile, b-tile size (<= partitions) */
    uint64_t q;      /* a's per partition of an a-tile (consecutive: one contiguous load) */
    uint64_t m;      /* e's per PSUM bank */
} sbuf_plan;

/* 0 when the SBUF route fits: an a-tile's rows (q x B x E) and a b-tile's
 * rows (ta x q x E) in a quarter of a partition each. q > 1 when one a's
 * B x E run is shorter than an efficient DMA row (a result's [N O] pixel
 * rows): then q consecutive a's share a partition, the loads and stores
 * get q times longer runs, and each of the q gets its own transposes. */
static int sbuf_fits(const nx_kctx *k, nx_dtype dt, uint64_t A, uint64_t B, uint64_t E, sbuf_plan *pl) {
    const nx_geometry *g = nx_kctx_geometry(k);
    uint64_t es = nx_dtype_size(dt), P = g->partitions, quarter = g->sbuf_partition_bytes / 4;
    uint64_t eff = nx_kctx_machine(k)->dma_efficient_bytes_per_partition;
    pl->ta = nx_min_u64(A, P);
    pl->tb = nx_min_u64(B, P);
    pl->q = 1;
    if (B * E * es < eff && A >= 2 * P) {
        pl->q = nx_cdiv_u64(eff, B * E * es);
        while (pl->q > 1 && (pl->q * P > A || pl->q * B * E * es > quarter || P * pl->q * E * es > quarter)) pl->q--;
    }
    uint64_t bank = g->psum_bank_bytes ? g->psum_bank_bytes : 2048;
    pl->m = bank / 4 / pl->ta;
    if (pl->m < 1) pl->m = 1;
    if (pl->m > E) pl->m = E;
    return pl->q * B * E * es <= quarter && pl->ta * pl->q * E * es <= quarter && (es == 2 || es == 4) ? 0 : -1;
}

/* The a's [a_lo, a_hi) of the swap, a-tiles of pl->ta partitions x q a's
 * (the caller makes the range a multiple of ta x q, or q = 1). */
static int swap_sbuf_range(nx_kctx *k, nx_dtype dt, uint64_t A, uint64_t B, uint64_t E, uint64_t src, uint64_t dst,
                           const sbuf_plan *pl, uint64_t a_lo, uint64_t a_hi, nx_error *err) {
    uint64_t es = nx_dtype_size(dt), q = pl->q;
    nx_dtype pe_dt = es == 4 ? NX_DT_FP32 : NX_DT_BF16, cp_dt = es == 4 ? NX_DT_UINT32 : NX_DT_UINT16;
    nx_tile in[2], out[2], ps[2];
    for (int i = 0; i < 2; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "conv.swap_in", dt, (uint32_t)pl->ta, q * B * E, &in[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "conv.swap_out", dt, (uint32_t)pl->tb, pl->ta * q * E, &out[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_PSUM, "conv.swap_psum", pe_dt, (uint32_t)pl->tb, pl->m * pl->ta, &ps[i], err) != 0)
            return -1;
    uint32_t lanes = nx_kctx_lanes(k), half = lanes / 2 ? lanes / 2 : 1, turn = 0, tiles = 0, atiles = 0;
    for (uint64_t a0 = a_lo; a0 < a_hi; a0 += pl->ta * q, atiles++) {
        uint32_t np = (uint32_t)nx_min_u64(nx_cdiv_u64(a_hi - a0, q), pl->ta); /* partitions; q divides the rest when q > 1 */
        uint64_t na = nx_min_u64(a_hi - a0, (uint64_t)np * q);
        const nx_tile *ti = &in[atiles % 2];
        nx_operand s = nx_ap_hbm_rows(dt, src + a0 * B * E * es, np, (int32_t)(q * B * E), (uint32_t)(q * B * E));
        nx_operand d =
            nx_tile_view(ti, dt, 0, np, 0, 1, (const int32_t[]){1}, (const uint32_t[]){(uint32_t)(q * B * E)});
        if (nx_kctx_dma_split(k, 0, np < half ? np : half, &d, &s, err) != 0) return -1;
        for (uint64_t b0 = 0; b0 < B; b0 += pl->tb, tiles++) {
            uint32_t nb = (uint32_t)nx_min_u64(B - b0, pl->tb);
            const nx_tile *to = &out[tiles % 2];
            for (uint64_t j = 0; j < q; j++)
                for (uint64_t e0 = 0; e0 < E; e0 += pl->m, turn++) {
                    uint32_t me = (uint32_t)nx_min_u64(E - e0, pl->m);
                    const nx_tile *tp = &ps[turn % 2];
                    for (uint32_t jj = 0; jj < me; jj++) {
                        /* the [a, b] slice of a = a0 + p q + j at e: in[p][j B E + b E + e] */
                        nx_operand v = nx_tile_view(ti, pe_dt, 0, np, j * B * E + b0 * E + e0 + jj, 1,
                                                    (const int32_t[]){(int32_t)E}, (const uint32_t[]){nb});
                        nx_operand pv = nx_tile_view(tp, pe_dt, 0, nb, (uint64_t)jj * np, 1, (const int32_t[]){1},
                                                     (const uint32_t[]){np});
                        if (nx_kctx_transpose(k, NX_ENG_PE, &pv, &v, err) != 0) return -1;
                    }
                    /* psum [b][jj][p] -> out[b][(p q + j) E + e0 + jj] */
                    nx_operand from = nx_tile_view(tp, cp_dt, 0, nb, 0, 2, (const int32_t[]){(int32_t)np, 1},
                                                   (const uint32_t[]){me, np});
                    nx_operand into = nx_tile_view(to, cp_dt, 0, nb, j * E + e0, 2,
                                                   (const int32_t[]){1, (int32_t)(q * E)}, (const uint32_t[]){me, np});
                    if (nx_kctx_tensor_copy(k, turn % 2 ? NX_ENG_ACT : NX_ENG_DVE, &into, &from, err) != 0) return -1;
                }
            nx_operand sv = nx_tile_view(to, dt, 0, nb, 0, 1, (const int32_t[]){1}, (const uint32_t[]){(uint32_t)(na * E)});
            nx_operand dv = nx_ap_hbm_rows(dt, dst + (b0 * A + a0) * E * es, nb, (int32_t)(A * E), (uint32_t)(na * E));
            if (nx_kctx_dma_split(k, half, nb < half ? nb : half, &dv, &sv, err) != 0) return -1;
        }
    }
    for (int i = 0; i < 2; i++)
        if (nx_kctx_release(k, &ps[i], err) != 0 || nx_kctx_release(k, &out[i], err) != 0 ||
            nx_kctx_release(k, &in[i], err) != 0)
            return -1;
    return 0;
}

static int swap_sbuf(nx_kctx *k, nx_dtype dt, uint64_t A, uint64_t B, uint64_t E, uint64_t src, uint64_t dst,
                     const sbuf_plan *pl, nx_error *err) {
    uint64_t whole = pl->q > 1 ? A / (pl->ta * pl->q) * (pl->ta * pl->q) : A;
    if (whole > 0 && swap_sbuf_range(k, dt, A, B, E, src, dst, pl, 0, whole, err) != 0) return -1;
    if (whole == A) return 0;
    sbuf_plan one = *pl;
    one.q = 1;
    return swap_sbuf_range(k, dt, A, B, E, src, dst, &one, whole, A, err);
}

int nx_conv_onnx_swap(nx_kctx *k, nx_dtype dt, uint64_t A, uint64_t B, uint64_t E, uint64_t src, uint64_t dst,
                      int allow_dma, int *via_sbuf, nx_error *err) {
    *via_sbuf = 0;
    if (B * E > INT32_MAX || A * E > INT32_MAX)
        return nx_fail(err, "%llu x %llu x %llu elements exceed 32-bit access-pattern strides", (unsigned long long)A,
                       (unsigned long long)B, (unsigned long long)E);
    const nx_machine *m = nx_kctx_machine(k);
    double es = (double)nx_dtype_size(dt), bytes = (double)(A * B * E) * es;
    double bw = nx_machine_dma_engines_bytes_per_ns(m);
    double dma_ns = bytes / (bw * nx_machine_dma_efficiency(m, (double)E * es));
    sbuf_plan pl;
    if (sbuf_fits(k, dt, A, B, E, &pl) == 0) {
        double tiles = (double)(nx_cdiv_u64(A, pl.ta) * nx_cdiv_u64(B, pl.tb));
        tiles = (double)(nx_cdiv_u64(A, pl.ta * pl.q) * nx_cdiv_u64(B, pl.tb)) * (double)pl.q;
        double pe_ns = tiles * (double)E * (double)m->pe_mm_init_latency / m->clock_ghz[NX_ENG_PE];
        double cp_ns = tiles * (double)nx_cdiv_u64(E, pl.m) * (double)(pl.m * pl.ta > 64 ? pl.m * pl.ta : 64) /
                       m->clock_ghz[NX_ENG_DVE] / 2;
        double sb_ns = 2 * bytes / bw + 2 * m->dma_fixed_ns + (pe_ns > cp_ns ? pe_ns : cp_ns);
        if (sb_ns < dma_ns) {
            *via_sbuf = 1;
            return swap_sbuf(k, dt, A, B, E, src, dst, &pl, err);
        }
    }
    if (!allow_dma) return 1;
    return swap_dma(k, dt, A, B, E, src, dst, err);
}
