/* The blockwise_mm plan (kernels/blockwise_mm/blockwise_mm_plan.h): item size, gate/up groups,
 * output chunks and the weight rings, from the machine geometry and the SBUF
 * budget. The leaf allocates exactly the tiles counted by sbuf_bytes(), in
 * 64-byte aligned pieces (kernels/author/author.h), so the plan's sum is what the
 * allocator will be asked for. */
#include <string.h>

#include "blockwise_mm_phases.h" /* the tiles the phases allocate */
#include "isa/intmath.h"

#define EXACT_INDEX (1u << 24) /* integers up to 2^24 are exact in fp32 */
#define RING_G_GOOD 16         /* gate/up pieces in flight: one per load lane */
#define STAGES_GOOD 8          /* staging tiles of its own */
#define STAGES_MIN_X 4         /* staging in x when x holds at least this many banks */
#define SCATTER_QUEUES 4       /* output queues kept busy */
#define MAX_REPLICAS 4

static uint64_t al64(uint64_t b) { return (b + 63) & ~(uint64_t)63; }

/* The fixed tiles (everything but the rings), per partition. */
static uint64_t fixed_bytes(const nx_bwmm_plan *pl) {
    uint64_t E = pl->p.E, H = pl->p.H, s = pl->s, nt = pl->nt, bs = pl->bs;
    uint64_t b = 0;
    /* constants: partition index, 128-row steps of H and of I, expert index;
     * the ids as loaded */
    b += al64(4) + al64(4 * pl->nh) + al64(4 * pl->ni) + al64(4 * E) + al64(4 * (uint64_t)pl->tp);
    /* per item, BW_SETS sets in rotation */
    uint64_t item = al64(4 * nt) * 2                      /* ids, scatter rows */
                    + al64(4) * BW_ITEM_SCALARS           /* e and its derived values */
                    + al64(4 * pl->nh) + al64(4 * pl->ni) /* weight row offsets */
                    + al64(4 * E) + al64(nx_dtype_size(pl->p.aff_dtype) * nt * E) + al64(4 * nt * E) +
                    al64(4 * nt); /* mask, rows, masked rows, affinities */
    b += BW_SETS * item;
    b += al64(nt * H * s);                                            /* x: the gathered rows */
    b += al64((uint64_t)pl->nh * bs * s);                             /* x^T */
    b += al64((uint64_t)pl->ni * bs * s);                             /* h^T */
    b += (pl->gu_split ? pl->g_tiles : BW_SILU_TILES) * al64(4 * bs); /* silu(gate) in fp32 */
    if (!pl->stage_in_x) b += pl->nstage * al64(pl->bank_bytes);      /* output staging */
    return b;
}

static uint64_t sbuf_bytes(const nx_bwmm_plan *pl) {
    return fixed_bytes(pl) + pl->rg * al64(pl->gu_slot) + pl->rd * al64(pl->dn_slot);
}

/* Item size and what follows from it. */
static void shape_items(nx_bwmm_plan *pl, uint32_t bs) {
    const nx_bwmm_params *p = &pl->p;
    pl->bs = bs;
    pl->ns = nx_cdiv_u64(p->B, bs);
    pl->items = p->NB * pl->ns;
    pl->nt = (uint32_t)nx_cdiv_u64(bs, pl->tp);
    /* accumulator slots [i-tile, bs] fp32 packed into banks; two banks stay
     * free so transposes, the down projection and the next group's first
     * accumulators do not wait for this group's evacuation */
    uint64_t per_bank = pl->bank_bytes / (4 * (uint64_t)bs);
    uint64_t acc_banks = pl->nbanks > 2 ? pl->nbanks - 2 : pl->nbanks, slots = acc_banks * per_bank;
    if (slots < 2) slots = 2;
    /* joint: gate and up of a group accumulate together, a weight row's
     * [gate | up] is one run when the group is all of I; split: gate over
     * all of H, then up, twice the columns per group and one run per row
     * and pass. A run shorter than 2 KiB costs DMA in proportion to its
     * count, so split when joint needs more than one group. */
    uint64_t g = slots / 2;
    pl->gu_split = g < pl->ni;
    if (pl->gu_split) g = slots;
    if (g > pl->ni) g = pl->ni;
    pl->g_tiles = (uint32_t)g;
    pl->ngroups = (uint32_t)nx_cdiv_u64(pl->ni, g);
    uint64_t gw = g * pl->tp;
    pl->gw = (uint32_t)(gw < p->inter ? gw : p->inter);
    pl->gu_slot = (pl->gu_split ? 1 : 2) * (uint64_t)pl->gw * pl->s;
    pl->pg = pl->ngroups * pl->nh * (pl->gu_split ? 2 : 1);
    /* the output staging lives in x's bytes when they hold enough banks:
     * x is idle from the next item's transposes to its next gather, which is
     * when the down projection stages (kernels/blockwise_mm/blockwise_mm.c) */
    uint64_t in_x = al64((uint64_t)pl->nt * p->H * pl->s) / pl->bank_bytes;
    pl->stage_in_x = in_x >= STAGES_MIN_X;
    if (pl->stage_in_x) pl->nstage = (uint32_t)(in_x < BW_MAX_STAGES ? in_x : BW_MAX_STAGES);
}

/* The best plan at this item size: the weights resident with as many
 * staging tiles as fit (8 down to 2), else streamed with rings of at least
 * rg_min / rd_min pieces. */
static int try_plan(nx_bwmm_plan *pl, uint64_t sbuf, uint32_t rg_min, uint32_t rd_min) {
    uint32_t st_hi = pl->stage_in_x ? pl->nstage : STAGES_GOOD, st_lo = pl->stage_in_x ? pl->nstage : 2;
    for (uint32_t st = st_hi; st >= st_lo; st--) {
        pl->nstage = st;
        pl->rg = pl->pg;
        pl->rd = pl->pd;
        pl->resident = 1;
        if (sbuf_bytes(pl) <= sbuf) return 1;
    }
    pl->resident = 0;
    for (uint32_t st = st_hi; st >= st_lo; st = st > 2 ? st / 2 : 0) {
        pl->nstage = st < st_lo ? st_lo : st;
        uint32_t want_rg = rg_min < pl->pg ? rg_min : pl->pg, want_rd = rd_min < pl->pd ? rd_min : pl->pd;
        pl->rd = want_rd;
        pl->rg = 0;
        uint64_t fixed = fixed_bytes(pl) + pl->rd * al64(pl->dn_slot);
        if (fixed > sbuf) continue;
        uint64_t fit = (sbuf - fixed) / al64(pl->gu_slot);
        if (fit > pl->pg) fit = pl->pg;
        if (fit < want_rg) continue;
        pl->rg = (uint32_t)fit;
        return 1;
    }
    return 0;
}

int nx_bwmm_plan_make(const nx_bwmm_params *p, const nx_geometry *geo, nx_bwmm_plan *pl, nx_error *err) {
    memset(pl, 0, sizeof *pl);
    pl->p = *p;
    pl->s = (uint32_t)nx_dtype_size(p->dtype);
    pl->tp = geo->partitions;
    if (geo->pe_rows < pl->tp) pl->tp = geo->pe_rows;
    if (geo->pe_cols < pl->tp) pl->tp = geo->pe_cols;
    pl->bank_bytes = (uint32_t)geo->psum_bank_bytes;
    pl->nbanks = (uint32_t)(geo->psum_partition_bytes / geo->psum_bank_bytes);
    pl->bank_f32 = pl->bank_bytes / 4;
    if (geo->pe_moving_free_max < pl->bank_f32) pl->bank_f32 = geo->pe_moving_free_max;
    if (pl->tp == 0 || pl->nbanks == 0 || pl->bank_f32 == 0)
        return nx_fail(err, "blockwise_mm: machine '%.16s' has no PE tile or PSUM bank", geo->name);
    /* row indices are computed on the DVE in fp32 (docs/ISA.md, engine values) */
    if (p->E * p->H >= EXACT_INDEX || p->E * p->inter >= EXACT_INDEX)
        return nx_fail(err,
                       "blockwise_mm: E*H = %llu and E*I = %llu must be below 2^24 (weight rows are "
                       "indexed in fp32)",
                       (unsigned long long)(p->E * p->H), (unsigned long long)(p->E * p->inter));
    if (p->T >= INT32_MAX / 2 || p->B > INT32_MAX)
        return nx_fail(err, "blockwise_mm: T = %llu and B = %llu must fit in 31-bit indices",
                       (unsigned long long)p->T, (unsigned long long)p->B);
    pl->nh = (uint32_t)nx_cdiv_u64(p->H, pl->tp);
    pl->ni = (uint32_t)nx_cdiv_u64(p->inter, pl->tp);
    pl->c = pl->bank_bytes / pl->s;
    pl->nc = (uint32_t)nx_cdiv_u64(p->H, pl->c);
    pl->pd = pl->nc;
    /* at least SCATTER_QUEUES queues scatter (one per chunk and replica) */
    pl->nrep = (uint32_t)nx_cdiv_u64(SCATTER_QUEUES, pl->nc);
    if (pl->nrep > MAX_REPLICAS) pl->nrep = MAX_REPLICAS;
    pl->dn_slot = (uint64_t)pl->ni * pl->c * pl->s;
    if ((p->T + 1) * (uint64_t)pl->c * MAX_REPLICAS * pl->nc > INT32_MAX || 2 * p->inter > INT32_MAX)
        return nx_fail(err, "blockwise_mm: (T+1) * %u and 2*I must fit in 32-bit access-pattern strides",
                       pl->c);

    uint64_t sbuf = geo->sbuf_partition_bytes;
    /* an item's ids are transposed onto partitions in DVE blocks: at most
     * dve_transpose_max token tiles (4 of 128 on trn2, as a bank holds) */
    if (geo->dve_transpose_max == 0)
        return nx_fail(err, "blockwise_mm: machine '%.16s' has no DVE transpose", geo->name);
    uint64_t cap = (uint64_t)pl->tp * geo->dve_transpose_max;
    if (pl->bank_f32 < cap) cap = pl->bank_f32;
    uint32_t bs0 = (uint32_t)(p->B < cap ? p->B : cap);
    /* first choice: the largest item that fits resident or with good rings;
     * last resort: the smallest rings */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t bs = bs0; bs >= 1; bs = bs > 1 ? (bs + 1) / 2 : 0) {
            shape_items(pl, bs);
            int ok = pass == 0 ? try_plan(pl, sbuf, RING_G_GOOD, 2) : try_plan(pl, sbuf, 2, 1);
            if (ok) {
                pl->sbuf_used = sbuf_bytes(pl);
                return 0;
            }
        }
    }
    return nx_fail(err,
                   "blockwise_mm: H = %llu, I = %llu, E = %llu in %s: even one token's working set "
                   "does not fit %llu bytes of SBUF per partition",
                   (unsigned long long)p->H, (unsigned long long)p->inter, (unsigned long long)p->E,
                   nx_dtype_name(p->dtype), (unsigned long long)sbuf);
}
