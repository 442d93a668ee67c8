/* tiled_dve_transpose_10's block route: the swap by the DVE's own transpose
 * of E x E blocks (E = geo.dve_transpose_max, 32 on trn1/trn2: "Transpose
 * on DVE is limited to 32x32 blocks", docs/parts/hardware.md), so that both
 * transfers move long runs. NKI's nc_transpose on the Vector engine is the
 * instruction; the tiling around it is this leaf's.
 *
 * The free-dim route (tiled_dve_transpose_10.c) keeps every element in its
 * partition, so a partition must hold a block closed under the transpose
 * and a transfer's runs are at most sqrt(tile elements) long (about 100
 * elements, 20% of the DMA rate for fp32). Here a tile is E J input rows
 * [r0, r0 + E J) by G E S input columns, G = P / E groups of E partitions:
 * partition k of group g holds rows r0 + k + E j (j < J) over the columns
 * c0 + g E S + [0, E S), free order (j, s, i), loaded as runs of E S
 * elements. One DVE transpose per (g, j, s) turns block (j, s) around
 * inside the group: partition i of group g then holds output row c0 + (g S
 * + s) E + i at free (s, j, k), i.e. runs of E J consecutive output
 * elements, stored as they lie, one transfer per block of E output rows (an
 * HBM interval of its own). S is chosen for an efficient load run
 * (dma.efficient_bytes_per_partition), J as a 32 KiB tile then allows.
 *
 * The price is the DVE: one instruction per E x E block at the DVE's
 * minimum initiation interval (64 cycles on trn2 for 1024 elements, against
 * 128 elements per cycle for a free-dim copy), so the route is taken only
 * where the machine's figures say it beats the free-dim route
 * (nx_dve_blocks_ns against nx_dve_free_ns). It needs R, C and the
 * program's share of output rows in whole blocks of E.
 *
 * Tiles rotate over two input and two output buffers; a tile's loads are
 * emitted before the previous tile's stores. Loads use the first half of
 * the lanes (each group's load cut into DB_PIECES pieces of partitions),
 * stores the second half, a block of output rows always on the same lane. */
#include "dve_blocks.h"

#include "isa/intmath.h"

#define DB_STAGES 2
#define DB_TILE_BYTES (32u * 1024u) /* per partition, per buffer */
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
} db_state;

int nx_dve_blocks_fit(const nx_geometry *geo, const nx_transpose_plan *pl, uint64_t lo, uint64_t hi) {
    uint32_t E = geo->dve_transpose_max, P = geo->partitions;
    if (E == 0 || P % E != 0 || pl->rows % E != 0 || pl->cols % E != 0) return 0;
    if ((uint64_t)E * pl->cols > INT32_MAX || (uint64_t)E * pl->rows > INT32_MAX) return 0;
    return lo % E == 0 && hi % E == 0 && hi > lo;
}

double nx_dve_blocks_ns(const nx_machine *m, const nx_transpose_plan *pl, uint64_t out_rows) {
    uint64_t E = m->geo.dve_transpose_max;
    uint64_t blocks = out_rows / E * (pl->rows / E);
    uint64_t per = E * m->dve_cycles_per_elem_one_input;
    double insn = (double)(per > m->dve_min_ii ? per : m->dve_min_ii) + (double)m->dve_fixed_overhead;
    double dve = (double)blocks * insn / m->clock_ghz[NX_ENG_DVE];
    double dma = 2.0 * (double)(out_rows * pl->rows * nx_dtype_size(pl->dtype)) / nx_machine_dma_engines_bytes_per_ns(m);
    return dve > dma ? dve : dma;
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

static int db_swap(db_state *s, const db_tile *t, const nx_tile *in, const nx_tile *out, nx_error *err) {
    uint32_t E = s->E;
    int32_t one = 1;
    for (uint32_t g = 0; g < s->G; g++)
        for (uint32_t j = 0; j < t->J; j++)
            for (uint32_t q = 0; q < db_blocks(t, g); q++) {
                nx_operand src = nx_tile_view(in, s->cp_dt, g * E, E, ((uint64_t)j * t->S + q) * E, 1, &one, &E);
                nx_operand dst = nx_tile_view(out, s->cp_dt, g * E, E, ((uint64_t)q * t->J + j) * E, 1, &one, &E);
                if (nx_kctx_transpose(s->k, NX_ENG_DVE, &dst, &src, err) != 0) return -1;
            }
    return 0;
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
    s.E = geo->dve_transpose_max;
    s.G = geo->partitions / s.E;
    uint32_t lanes = nx_kctx_lanes(k);
    s.in_lanes = lanes > 1 ? lanes / 2 : 1;
    /* runs of E S (load) and E J (store) elements: S for an efficient load
     * run, J as the tile then allows */
    uint64_t tile_elems = nx_min_u64(DB_TILE_BYTES / s.es, geo->sbuf_free_elems_max);
    uint64_t want = nx_cdiv_u64(nx_kctx_machine(k)->dma_efficient_bytes_per_partition, s.E * s.es);
    uint64_t S_max = nx_max_u64(1, nx_min_u64(want, tile_elems / s.E));
    uint64_t J_max = nx_max_u64(1, tile_elems / (s.E * S_max));
    uint32_t ni = 0, no = 0;
    int rc = -1;
    for (; ni < DB_STAGES; ni++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "dve_blk_in", pl->dtype, geo->partitions, s.E * S_max * J_max, &s.in[ni], err) != 0)
            goto done;
    for (; no < DB_STAGES; no++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "dve_blk_out", pl->dtype, geo->partitions, s.E * S_max * J_max, &s.out[no], err) != 0)
            goto done;
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
    while (no > 0) nx_kctx_release(k, &s.out[--no], &rerr);
    while (ni > 0) nx_kctx_release(k, &s.in[--ni], &rerr);
    return rc;
}
