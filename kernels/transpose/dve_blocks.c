/* tiled_dve_transpose_10's block route: elements move across partitions
 * inside groups of E partitions, so that both transfers move long runs.
 * The swap is one POOL `local_gather` per tile over the GpSimd cores'
 * groups (E = pool_partitions_per_core, 16: "Core i serves partitions [16i,
 * 16i+15]", docs/parts/hardware.md; 150 + N cycles for N elements per
 * partition, every partition at once). The DVE's own transpose of 32 x 32
 * blocks would do the same at 64 cycles per 1024 elements (its minimum
 * initiation interval): 1092 us of DVE for 4096^2 against a DMA bound of
 * 365 (fp32), measured 33% of the bound, so not that (docs/parts/kernels.md).
 * The gather is the ISA's local_gather (docs/ISA.md); the tiling around it
 * is this leaf's.
 *
 * The free-dim route (tiled_dve_transpose_10.c) keeps every element in its
 * partition, so a partition must hold a block closed under the transpose
 * and a transfer's runs are at most sqrt(tile elements) long (about 100
 * elements, 20% of the DMA rate for fp32). Here the G = P / E groups of E
 * partitions are Gr row groups x Gc column groups; group (gr, gc) of a tile
 * holds J blocks of E input rows by S blocks of E input columns: partition
 * k holds rows r0 + gr E J + k + E j (j < J) over the columns c0 + (gc S +
 * s) E + [0, E), free order (j, s, i), loaded as runs of E S elements. The
 * gather turns each block (j, s) around inside its group: partition i then
 * holds output row c0 + (gc S + s) E + i at free (s, j, k), i.e. runs of E
 * J consecutive output elements, stored as they lie, one transfer per group
 * and block of E output rows. The gather's indices (k F + (j S + s) E + i,
 * F = E J S) are built once per tile shape: an iota of the part common to
 * all partitions plus p mod E. Gr, Gc, S and J are the arrangement whose
 * load and store runs move fastest (dma.efficient_bytes_per_partition)
 * within 7/8 of an SBUF partition, the program's blocks cut evenly into
 * tiles (a short last tile would leave each group a few blocks: short runs).
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
#define DB_PIECES 4u /* transfers per group */

/* The groups' arrangement and the tile: Gr x Gc groups (group g: row group
 * g / Gc, column group g % Gc), each J blocks of E input rows by S blocks of
 * E input columns. */
typedef struct db_shape_t {
    uint32_t Gr, Gc, J, S;
} db_shape_t;

/* A tile: matrix b, input rows from r0 (row group gr: blocks [gr J, gr J +
 * J) of nr), output rows from c0 (column group gc: blocks [gc S, gc S + S)
 * of nc). */
typedef struct db_tile {
    uint64_t b, r0, c0;
    uint32_t J, S, nr, nc;
} db_tile;

typedef struct db_state {
    nx_kctx *k;
    const nx_transpose_plan *pl;
    nx_dtype cp_dt;
    uint64_t es;
    uint32_t E, G, in_lanes, next_in;
    db_shape_t sh;
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

/* Per-group blocks when n blocks are cut into tiles of at most G x B
 * blocks, as evenly as the tile count allows. */
static uint64_t db_even(uint64_t n, uint64_t G, uint64_t B) {
    uint64_t tiles = nx_cdiv_u64(n, G * B);
    return nx_cdiv_u64(nx_cdiv_u64(n, tiles), G);
}

/* The arrangement whose transfers run fastest (the harmonic mean of the
 * load run's E S and the store run's E J efficiency) within the SBUF budget
 * (two input and two output buffers of E J S elements and the gather's
 * int32 indices), for a program with nb blocks of output rows per matrix
 * and rb blocks of input rows, the blocks cut evenly into tiles: groups
 * split the columns (their output rows are disjoint) or, when the columns
 * run short, also the rows. */
static db_shape_t db_shape(const nx_machine *m, uint64_t es, uint64_t nb, uint64_t rb) {
    uint64_t E = db_width(&m->geo), G = m->geo.partitions / E, budget = m->geo.sbuf_partition_bytes * 7 / 8;
    uint64_t per = 2 * DB_STAGES * es + 4;
    db_shape_t best_sh = {1, (uint32_t)G, 1, 1};
    double best = -1;
    for (uint64_t Gc = G; Gc >= 1; Gc /= 2) {
        uint64_t Gr = G / Gc;
        for (uint64_t S0 = 1; S0 <= 128; S0++) {
            uint64_t S = db_even(nb, Gc, S0);
            for (uint64_t J0 = 1; J0 <= 128; J0++) {
                uint64_t J = db_even(rb, Gr, J0), F = E * J * S;
                if (F * per > budget || F > m->geo.sbuf_free_elems_max) break;
                double el = nx_machine_dma_efficiency(m, (double)(E * S * es));
                double st = nx_machine_dma_efficiency(m, (double)(E * J * es));
                double h = 2.0 / (1.0 / el + 1.0 / st) - 1e-9 * (double)F; /* ties: the smaller tile */
                if (h > best) best = h, best_sh = (db_shape_t){(uint32_t)Gr, (uint32_t)Gc, (uint32_t)J, (uint32_t)S};
            }
        }
        if (Gc == 1) break;
    }
    return best_sh;
}

int nx_dve_blocks_fit(const nx_geometry *geo, const nx_transpose_plan *pl, uint64_t lo, uint64_t hi) {
    uint32_t E = db_width(geo);
    if (E == 0 || pl->rows % E != 0 || pl->cols % E != 0) return 0;
    if ((uint64_t)E * pl->cols > INT32_MAX || (uint64_t)E * pl->rows > INT32_MAX) return 0;
    return lo % E == 0 && hi % E == 0 && hi > lo;
}

double nx_dve_blocks_ns(const nx_machine *m, const nx_transpose_plan *pl, uint64_t out_rows) {
    uint64_t E = db_width(&m->geo), es = nx_dtype_size(pl->dtype);
    db_shape_t sh = db_shape(m, es, nx_min_u64(out_rows, pl->cols) / E, pl->rows / E);
    uint64_t elems = out_rows * pl->rows;
    /* one gather of E J S elements per partition and tile */
    uint64_t F = E * sh.J * sh.S, tiles = nx_cdiv_u64(elems, (uint64_t)m->geo.partitions * F);
    double eng = (double)(tiles * m->pool_startup + elems / m->geo.partitions) / m->clock_ghz[NX_ENG_POOL];
    double half = (double)(elems * es) / nx_machine_dma_engines_bytes_per_ns(m);
    double dma = half / nx_machine_dma_efficiency(m, (double)(E * sh.S * es)) +
                 half / nx_machine_dma_efficiency(m, (double)(E * sh.J * es));
    return eng > dma ? eng : dma;
}

double nx_dve_free_ns(const nx_machine *m, const nx_transpose_plan *pl, uint64_t out_rows, uint64_t tile_elems) {
    uint64_t L = 1;
    while ((L + 1) * (L + 1) <= tile_elems) L++;
    uint64_t run = nx_min_u64(L, nx_min_u64(pl->rows, out_rows));
    double eff = nx_machine_dma_efficiency(m, (double)(run * nx_dtype_size(pl->dtype)));
    return 2.0 * (double)(out_rows * pl->rows * nx_dtype_size(pl->dtype)) / (nx_machine_dma_engines_bytes_per_ns(m) * eff);
}

/* Blocks of group g's row group (input rows) and column group (output rows). */
static uint32_t db_rows(const db_state *s, const db_tile *t, uint32_t g) {
    uint64_t first = (uint64_t)(g / s->sh.Gc) * t->J;
    return first < t->nr ? (uint32_t)nx_min_u64(t->J, t->nr - first) : 0;
}
static uint32_t db_cols(const db_state *s, const db_tile *t, uint32_t g) {
    uint64_t first = (uint64_t)(g % s->sh.Gc) * t->S;
    return first < t->nc ? (uint32_t)nx_min_u64(t->S, t->nc - first) : 0;
}

static int db_load(db_state *s, const db_tile *t, const nx_tile *tile, nx_error *err) {
    const nx_transpose_plan *pl = s->pl;
    uint32_t E = s->E;
    int32_t st[2] = {(int32_t)(E * pl->cols), 1}, dst_st[2] = {(int32_t)(t->S * E), 1};
    for (uint32_t g = 0; g < s->G; g++) {
        uint32_t jr = db_rows(s, t, g), sc = db_cols(s, t, g);
        if (jr == 0 || sc == 0) continue;
        uint32_t ct[2] = {jr, sc * E};
        uint64_t row = t->r0 + (uint64_t)(g / s->sh.Gc) * t->J * E, col = t->c0 + (uint64_t)(g % s->sh.Gc) * t->S * E;
        nx_operand src = nx_ap(NX_OPK_HBM, pl->dtype, 0, E, (int32_t)pl->cols,
                               pl->in_offset + ((t->b * pl->rows + row) * pl->cols + col) * s->es, 2, st, ct);
        nx_operand dst = nx_tile_view(tile, pl->dtype, g * E, E, 0, 2, dst_st, ct);
        if (nx_kctx_dma_split(s->k, s->next_in, DB_PIECES, &dst, &src, err) != 0) return -1;
        s->next_in = (s->next_in + DB_PIECES) % s->in_lanes;
    }
    return 0;
}

/* The swap of a tile: one gather over every partition (the blocks a group
 * lacks at a tail read and write unused space). The gather indices of a J
 * x S tile: dst[E g + i, (s J + j) E + k] reads in[E g + k, (j S + s) E +
 * i], i.e. index k F + (j S + s) E + i of the GpSimd core's partitions
 * flattened (F = E J S): one iota of the part common to every partition
 * plus p mod E. */
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
    int32_t one = 1;
    uint32_t P = s->G * s->E, F = s->E * t->J * t->S;
    if (db_indices(s, t, err) != 0) return -1;
    nx_insn g = nx_insn_make(NX_OP_LOCAL_GATHER);
    g.op[0] = nx_tile_view(out, s->cp_dt, 0, P, 0, 1, &one, &F);
    g.op[1] = nx_tile_view(in, s->cp_dt, 0, P, 0, 1, &one, &F);
    g.op[2] = nx_tile_view(&s->idx, NX_DT_INT32, 0, P, 0, 1, &one, &F);
    return nx_kctx_emit(s->k, NX_ENG_POOL, &g, err);
}

/* One transfer per group and block of E output rows: within a column
 * group the rows' HBM bytes are an interval of their own; the row groups
 * and the tiles over the same output rows (other input rows) write
 * interleaved intervals, so a block of output rows always takes the same
 * lane, where they run in order. */
static int db_store(db_state *s, const db_tile *t, const nx_tile *tile, nx_error *err) {
    const nx_transpose_plan *pl = s->pl;
    uint32_t E = s->E, lanes = nx_kctx_lanes(s->k), out_lanes = lanes - s->in_lanes;
    int32_t one = 1;
    for (uint32_t g = 0; g < s->G; g++) {
        uint32_t run = db_rows(s, t, g) * E, sc = db_cols(s, t, g);
        uint64_t col = t->r0 + (uint64_t)(g / s->sh.Gc) * t->J * E;
        for (uint32_t q = 0; q < sc && run > 0; q++) {
            uint64_t row = t->c0 + ((uint64_t)(g % s->sh.Gc) * t->S + q) * E;
            nx_operand src = nx_tile_view(tile, pl->dtype, g * E, E, (uint64_t)q * t->J * E, 1, &one, &run);
            nx_operand dst = nx_ap(NX_OPK_HBM, pl->dtype, 0, E, (int32_t)pl->rows,
                                   pl->out_offset + ((t->b * pl->cols + row) * pl->rows + col) * s->es, 1, &one, &run);
            uint32_t lane = out_lanes ? s->in_lanes + (uint32_t)((t->b * pl->cols + row) / E % out_lanes) : 0;
            if (nx_kctx_dma_on(s->k, lane, &dst, &src, err) != 0) return -1;
        }
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
    s.sh = db_shape(nx_kctx_machine(k), s.es, nx_min_u64(hi - lo, pl->cols) / s.E, pl->rows / s.E);
    uint64_t F = (uint64_t)s.E * s.sh.S * s.sh.J;
    uint64_t rows_tile = (uint64_t)s.sh.Gr * s.sh.J * s.E, cols_tile = (uint64_t)s.sh.Gc * s.sh.S * s.E;
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
            for (uint64_t c0 = u % pl->cols; c0 < c_hi; c0 += cols_tile)
                for (uint64_t r0 = 0; r0 < pl->rows; r0 += rows_tile) {
                    /* short tails spread their blocks over the groups */
                    uint64_t nr = nx_min_u64(rows_tile, pl->rows - r0) / s.E, nc = nx_min_u64(cols_tile, c_hi - c0) / s.E;
                    db_tile t = {b, r0, c0, (uint32_t)nx_cdiv_u64(nr, s.sh.Gr), (uint32_t)nx_cdiv_u64(nc, s.sh.Gc),
                                 (uint32_t)nr, (uint32_t)nc};
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
