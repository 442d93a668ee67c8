/* tiled_dve_transpose_10's block route: elements move across partitions
 * inside groups of E partitions, so that both transfers move long runs.
 * The swap is one POOL `local_gather` per tile over the GpSimd cores'
 * groups (E = pool_partitions_per_core, 16: "Core i serves partitions [16i,
 * 16i+15]", docs/parts/hardware.md; 150 + N cycles for N elements per
 * partition, every partition at once). The DVE's own transpose of 32 x 32
 * blocks would do the same at 64 cycles per 1024 elements (its minimum
 * initiation interval): 1092 us of DVE for 4096^2 against a DMA bound of
 * 365 (fp32), measured 33% of the bound, so not that (docs/parts/kernels.md).
 * The gather is GpSimd's local_gather (NKI's nki.isa gather family); the
 * tiling around it is this leaf's.
 *
 * The free-dim route (tiled_dve_transpose_10.c) keeps every element in its
 * partition, so a partition must hold a block closed under the transpose
 * and a transfer's runs are at most sqrt(tile elements) long (about 100
 * elements, 20% of the DMA rate for fp32). Here a tile is E J input rows
 * [r0, r0 + E J) by G E S input columns, G = P / E groups of E partitions:
 * partition k of group g holds rows r0 + k + E j (j < J) over the columns
 * c0 + g E S + [0, E S), free order (j, s, i), loaded as runs of E S
 * elements. The swap turns each block (j, s) around inside its group:
 * partition i of group g then holds output row c0 + (g S + s) E + i at free
 * (s, j, k), i.e. runs of E J consecutive output elements, stored as they
 * lie, one transfer per block of E output rows (an HBM interval of its
 * own). The gather's indices (k F + (j S + s) E + i, F = E J S) are built
 * once per tile shape: an iota of the part common to all partitions plus p
 * mod E. S and J are the pair whose load and store runs move fastest
 * (dma.efficient_bytes_per_partition) within 7/8 of an SBUF partition.
 *
 * The leaf takes the route where the machine's figures say it beats the
 * free-dim route (nx_dve_blocks_ns against nx_dve_free_ns). It needs R, C
 * and the program's share of output rows in whole blocks of E.
 *
 * Tiles rotate over two input and two output buffers; a tile's loads are
 * emitted before the previous tile's stores. Loads use the first half of
 * the lanes (each group's load cut into DB_PIECES pieces of partitions),
 * stores the second half, a block of output rows always on the same lane. */
#include "dve_blocks.h"

#include "isa/intmath.h"

#define DB_STAGES 2
#define DB_PIECES 4u                /* transfers per group */

/* A tile: matrix b, input rows [r0, r0 + E J), output rows [c0, c0 + E
 * nblk) in G groups of up to S blocks of E (group g: blocks [g S, g S + S)). */
typedef struct db_tile {
    uint64_t b, r0, c0;
    uint32_t J, S, nblk;
} db_tile;

typedef struct db_state {
    nx_kctx *k;
    const nx_transpose_plan *pl;
    nx_dtype cp_dt;
    uint64_t es;
    uint32_t E, G, in_lanes, next_in, next_out;
    nx_tile in[DB_STAGES], out[DB_STAGES];
    nx_tile idx, pmod;       /* gather indices [P, E J S] and p mod E [P, 1] (int32) */
    uint32_t idx_J, idx_S;   /* the tile shape idx is built for (0: none) */
} db_state;

/* The group width on this machine: the GpSimd cores' partitions, when the
 * partitions split into them (a power of two: p mod W by a bitwise and);
 * 0: no block route. */
static uint32_t db_width(const nx_geometry *geo) {
    uint32_t W = geo->pool_partitions_per_core, P = geo->partitions;
    return W > 0 && (W & (W - 1)) == 0 && P % W == 0 ? W : 0;
}

/* The tile: S blocks of E input columns per group and J blocks of E input
 * rows, the pair whose transfers run fastest (the harmonic mean of the load
 * run's and the store run's efficiency) within the SBUF budget: two input
 * and two output buffers of E J S elements, and the gather's int32 indices. */
static void db_shape(const nx_machine *m, uint64_t es, uint64_t *Sp, uint64_t *Jp) {
    uint64_t E = db_width(&m->geo), budget = m->geo.sbuf_partition_bytes * 7 / 8;
    uint64_t per = 2 * DB_STAGES * es + 4, best_S = 1, best_J = 1;
    double best = -1;
    for (uint64_t S = 1; S <= 128; S++)
        for (uint64_t J = 1; J <= 128; J++) {
            uint64_t F = E * J * S;
            if (F * per > budget || F > m->geo.sbuf_free_elems_max) break;
            double el = nx_machine_dma_efficiency(m, (double)(E * S * es));
            double es_ = nx_machine_dma_efficiency(m, (double)(E * J * es));
            double h = 2.0 / (1.0 / el + 1.0 / es_) - 1e-9 * (double)F; /* ties: the smaller tile */
            if (h > best) best = h, best_S = S, best_J = J;
        }
    *Sp = best_S;
    *Jp = best_J;
}

int nx_dve_blocks_fit(const nx_geometry *geo, const nx_transpose_plan *pl, uint64_t lo, uint64_t hi) {
    uint32_t E = db_width(geo);
    if (E == 0 || pl->rows % E != 0 || pl->cols % E != 0) return 0;
    if ((uint64_t)E * pl->cols > INT32_MAX || (uint64_t)E * pl->rows > INT32_MAX) return 0;
    return lo % E == 0 && hi % E == 0 && hi > lo;
}

double nx_dve_blocks_ns(const nx_machine *m, const nx_transpose_plan *pl, uint64_t out_rows) {
    uint64_t E = db_width(&m->geo), S, J, es = nx_dtype_size(pl->dtype);
    db_shape(m, es, &S, &J);
    uint64_t elems = out_rows * pl->rows;
    /* one gather of E J S elements per partition and tile */
    uint64_t F = E * J * S, tiles = nx_cdiv_u64(elems, (uint64_t)m->geo.partitions * F);
    double eng = (double)(tiles * m->pool_startup + elems / m->geo.partitions) / m->clock_ghz[NX_ENG_POOL];
    double half = (double)(elems * es) / nx_machine_dma_engines_bytes_per_ns(m);
    double dma = half / nx_machine_dma_efficiency(m, (double)(E * S * es)) + half / nx_machine_dma_efficiency(m, (double)(E * J * es));
    return eng > dma ? eng : dma;
}

double nx_dve_free_ns(const nx_machine *m, const nx_transpose_plan *pl, uint64_t out_rows, uint64_t tile_elems) {
    uint64_t L = 1;
    while ((L + 1) * (L + 1) <= tile_elems) L++;
    uint64_t run = nx_min_u64(L, nx_min_u64(pl->rows, out_rows));
    double eff = nx_machine_dma_efficiency(m, (double)(run * nx_dtype_size(pl->dtype)));
    return 2.0 * (double)(out_rows * pl->rows * nx_dtype_size(pl->dtype)) / (nx_machine_dma_engines_bytes_per_ns(m) * eff);
}

/* Output-row blocks (of E) of group g in tile t. */
static uint32_t db_blocks(const db_tile *t, uint32_t g) {
    uint64_t first = (uint64_t)g * t->S;
    return first < t->nblk ? (uint32_t)nx_min_u64(t->S, t->nblk - first) : 0;
}

static int db_load(db_state *s, const db_tile *t, const nx_tile *tile, nx_error *err) {
    const nx_transpose_plan *pl = s->pl;
    uint32_t E = s->E;
    int32_t one = 1, st[2] = {(int32_t)(E * pl->cols), 1};
    for (uint32_t g = 0; g < s->G; g++) {
        uint32_t sg = db_blocks(t, g), f = t->J * t->S * E;
        if (sg == 0) break;
        uint32_t ct[2] = {t->J, sg * E};
        uint64_t col = t->c0 + (uint64_t)g * t->S * E;
        nx_operand src = nx_ap(NX_OPK_HBM, pl->dtype, 0, E, (int32_t)pl->cols,
                               pl->in_offset + ((t->b * pl->rows + t->r0) * pl->cols + col) * s->es, 2, st, ct);
        nx_operand dst;
        if (sg == t->S) {
            dst = nx_tile_view(tile, pl->dtype, g * E, E, 0, 1, &one, &f);
        } else {
            int32_t dst_st[2] = {(int32_t)(t->S * E), 1};
            dst = nx_tile_view(tile, pl->dtype, g * E, E, 0, 2, dst_st, ct);
        }
        if (nx_kctx_dma_split(s->k, s->next_in, DB_PIECES, &dst, &src, err) != 0) return -1;
        s->next_in = (s->next_in + DB_PIECES) % s->in_lanes;
    }
    return 0;
}

/* The swap of a tile: one gather over every partition (the blocks a group
 * lacks at an output tail read and write unused space). The gather indices
 * of a J x S tile: dst[E g + i, (s J + j) E + k] reads
 * in[E g + k, (j S + s) E + i], i.e. index k F + (j S + s) E + i of the
 * GpSimd core's partitions flattened (F = E J S): one iota of the part
 * common to every partition plus p mod E. */
static int db_indices(db_state *s, const db_tile *t, nx_error *err) {
    if (s->idx_J == t->J && s->idx_S == t->S) return 0;
    uint32_t E = s->E, P = s->G * E, F = E * t->J * t->S;
    int32_t st[3] = {(int32_t)E, (int32_t)(t->S * E), (int32_t)F};
    uint32_t ct[3] = {t->S, t->J, E};
    int32_t one = 1;
    nx_operand d = nx_tile_view(&s->idx, NX_DT_INT32, 0, P, 0, 1, &one, &F);
    nx_operand pat = nx_pattern(0, 0, P, 3, st, ct);
    nx_operand pm = nx_tile_view(&s->pmod, NX_DT_INT32, 0, P, 0, 0, NULL, NULL);
    if (nx_kctx_iota(s->k, &d, &pat, err) != 0 ||
        nx_kctx_tensor_scalar(s->k, NX_ENG_DVE, &d, &d, NX_ALU_ADD, &pm, NX_ALU_BYPASS, NULL, err) != 0)
        return -1;
    s->idx_J = t->J;
    s->idx_S = t->S;
    return 0;
}

static int db_swap(db_state *s, const db_tile *t, const nx_tile *in, const nx_tile *out, nx_error *err) {
    uint32_t E = s->E;
    int32_t one = 1;
    uint32_t P = s->G * E, F = E * t->J * t->S;
    if (db_indices(s, t, err) != 0) return -1;
    nx_insn g = nx_insn_make(NX_OP_LOCAL_GATHER);
    g.op[0] = nx_tile_view(out, s->cp_dt, 0, P, 0, 1, &one, &F);
    g.op[1] = nx_tile_view(in, s->cp_dt, 0, P, 0, 1, &one, &F);
    g.op[2] = nx_tile_view(&s->idx, NX_DT_INT32, 0, P, 0, 1, &one, &F);
    return nx_kctx_emit(s->k, NX_ENG_POOL, &g, err);
}

/* One transfer per block of E output rows: their HBM bytes are one
 * interval, disjoint from every other block's in the tile; the tiles over
 * the same rows (other input rows) write interleaved intervals, so a block
 * always takes the same lane, where they run in order. */
static int db_store(db_state *s, const db_tile *t, const nx_tile *tile, nx_error *err) {
    const nx_transpose_plan *pl = s->pl;
    uint32_t E = s->E, run = t->J * E, lanes = nx_kctx_lanes(s->k), out_lanes = lanes - s->in_lanes;
    int32_t one = 1;
    for (uint32_t g = 0; g < s->G; g++)
        for (uint32_t q = 0; q < db_blocks(t, g); q++) {
            uint64_t row = t->c0 + ((uint64_t)g * t->S + q) * E;
            nx_operand src = nx_tile_view(tile, pl->dtype, g * E, E, (uint64_t)q * run, 1, &one, &run);
            nx_operand dst = nx_ap(NX_OPK_HBM, pl->dtype, 0, E, (int32_t)pl->rows,
                                   pl->out_offset + ((t->b * pl->cols + row) * pl->rows + t->r0) * s->es, 1, &one, &run);
            uint32_t lane = out_lanes ? s->in_lanes + (uint32_t)((t->b * pl->cols + row) / E % out_lanes) : 0;
            if (nx_kctx_dma_on(s->k, lane, &dst, &src, err) != 0) return -1;
        }
    return 0;
}

int nx_dve_blocks_emit(nx_kctx *k, const nx_transpose_plan *pl, uint64_t lo, uint64_t hi, nx_error *err) {
    const nx_geometry *geo = nx_kctx_geometry(k);
    db_state s = {0};
    s.k = k;
    s.pl = pl;
    s.es = nx_dtype_size(pl->dtype);
    s.cp_dt = s.es == 4 ? NX_DT_UINT32 : s.es == 2 ? NX_DT_UINT16 : NX_DT_UINT8;
    s.E = db_width(geo);
    s.G = geo->partitions / s.E;
    uint32_t lanes = nx_kctx_lanes(k);
    s.in_lanes = lanes > 1 ? lanes / 2 : 1;
    uint64_t S_max, J_max;
    db_shape(nx_kctx_machine(k), s.es, &S_max, &J_max);
    uint64_t F = s.E * S_max * J_max;
    uint32_t ni = 0, no = 0, nidx = 0;
    int rc = -1;
    for (; ni < DB_STAGES; ni++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "dve_blk_in", pl->dtype, geo->partitions, F, &s.in[ni], err) != 0)
            goto done;
    for (; no < DB_STAGES; no++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "dve_blk_out", pl->dtype, geo->partitions, F, &s.out[no], err) != 0)
            goto done;
    {
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "blk_gather_idx", NX_DT_INT32, geo->partitions, F, &s.idx, err) != 0) goto done;
        nidx = 1;
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "blk_pmod", NX_DT_INT32, geo->partitions, 1, &s.pmod, err) != 0) goto done;
        nidx = 2;
        /* p mod E: an iota of p, then the bitvec and (on DVE, integer dtypes:
         * docs/parts/insns-dve.md, "Bitvec ops") */
        nx_operand d = nx_tile_ap(&s.pmod);
        nx_operand pat = nx_pattern(0, 1, geo->partitions, 0, NULL, NULL);
        nx_operand m = nx_imm(s.E - 1, NX_DT_INT32);
        if (nx_kctx_iota(k, &d, &pat, err) != 0 ||
            nx_kctx_tensor_scalar(k, NX_ENG_DVE, &d, &d, NX_ALU_BITWISE_AND, &m, NX_ALU_BYPASS, NULL, err) != 0)
            goto done;
    }
    {
        db_tile prev = {0};
        uint64_t n = 0;
        for (uint64_t u = lo; u < hi;) {
            uint64_t b = u / pl->cols, c_hi = nx_min_u64(hi - b * pl->cols, pl->cols);
            for (uint64_t c0 = u % pl->cols; c0 < c_hi; c0 += (uint64_t)s.G * s.E * S_max)
                for (uint64_t r0 = 0; r0 < pl->rows; r0 += (uint64_t)s.E * J_max) {
                    uint64_t nblk = nx_min_u64((uint64_t)s.G * S_max, (c_hi - c0) / s.E);
                    /* a short tail spreads its blocks over the groups */
                    db_tile t = {b, r0, c0, (uint32_t)nx_min_u64(J_max, (pl->rows - r0) / s.E),
                                 (uint32_t)nx_cdiv_u64(nblk, s.G), (uint32_t)nblk};
                    uint32_t slot = (uint32_t)(n % DB_STAGES);
                    if (db_load(&s, &t, &s.in[slot], err) != 0 || db_swap(&s, &t, &s.in[slot], &s.out[slot], err) != 0)
                        goto done;
                    if (n > 0 && db_store(&s, &prev, &s.out[(n - 1) % DB_STAGES], err) != 0) goto done;
                    prev = t;
                    n++;
                }
            u = b * pl->cols + c_hi;
        }
        if (n > 0 && db_store(&s, &prev, &s.out[(n - 1) % DB_STAGES], err) != 0) goto done;
    }
    rc = 0;
done:;
    nx_error rerr;
    if (nidx > 1) nx_kctx_release(k, &s.pmod, &rerr);
    if (nidx > 0) nx_kctx_release(k, &s.idx, &rerr);
    while (no > 0) nx_kctx_release(k, &s.out[--no], &rerr);
    while (ni > 0) nx_kctx_release(k, &s.in[--ni], &rerr);
    return rc;
}
