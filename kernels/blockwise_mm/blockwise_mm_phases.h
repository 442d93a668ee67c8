/* The phases of the blockwise_mm leaf and the item state they share: what
 * the driver (kernels/blockwise_mm/blockwise_mm.c) and the phase files
 * (blockwise_mm_setup.c, blockwise_mm_mlp.c, blockwise_mm_emit.c,
 * blockwise_mm_state.c) include. Not a public interface (the leaf is
 * kernels/blockwise_mm/blockwise_mm.h), and it never includes the driver's
 * header: the driver calls the phases, the phases never call the driver. */
#ifndef NXSIM_KERNELS_BLOCKWISE_MM_PHASES_H
#define NXSIM_KERNELS_BLOCKWISE_MM_PHASES_H

#include "blockwise_mm_params.h"
#include "blockwise_mm_plan.h"
#include "kernels/author/author.h"
#include "isa/intmath.h"

/* [tp, 1] values derived from an item's expert (bw_set below). */
#define BW_ITEM_SCALARS 10
/* silu(gate) tiles in rotation. */
#define BW_SILU_TILES 2
#define BW_MAX_STAGES 32
/* rows per gather transfer (hidden rows, weight pieces) */
#define BW_GATHER_ROWS 32
/* the fp32 value of a row offset no DMA accepts (below 0 after adding any
 * row of H or I: those are < 2^24) */
#define BW_SKIP_ROW (-16777216.0)

/* What an item knows on chip: BW_SETS sets in rotation, so the next item's
 * preparation never waits for the transfers (scatters, weight loads) of
 * the item before this one that still read their set. */
#define BW_SETS 3
typedef struct bw_set {
    nx_tile ids;   /* int32 [tp, nt]: token id of position t*tp + p */
    nx_tile sc;    /* int32 [tp, nt]: ids, or -1 for every row of a block without a valid expert */
    nx_tile e1;    /* int32 [1, 1]: the block's expert as loaded */
    nx_tile e;     /* int32 [tp, 1]: the block's expert, on every partition */
    nx_tile valid; /* fp32: 1 if e is in [0, E) */
    nx_tile vm1;   /* fp32: valid - 1 */
    nx_tile
        load; /* fp32: 1 if the weights must be loaded (valid, and resident: e differs from the last item's) */
    nx_tile ne;     /* fp32: e != the last item's e */
    nx_tile mg, md; /* int32: e*H + p, e*I + p */
    nx_tile gb, db; /* int32: mg / md if load, else BW_SKIP_ROW */
    nx_tile goff;   /* int32 [tp, nh]: gate/up weight row of h-chunk c: gb + c*tp */
    nx_tile doff;   /* int32 [tp, ni]: down weight row of i-chunk c: db + c*tp */
    nx_tile mask;   /* fp32 [tp, E]: 1 in column e */
    nx_tile affrow; /* aff dtype [tp, nt, E]: the tokens' affinity rows */
    nx_tile affsel; /* fp32 [tp, nt, E]: the rows masked to the expert's column */
    nx_tile aff;    /* fp32 [tp, nt]: the tokens' affinity for e */
} bw_set;

typedef struct bw {
    nx_kctx *k;
    const nx_bwmm_plan *pl;
    const nx_bwmm_params *p;
    nx_dtype dt;
    /* HBM byte offsets of the operands, the output and the chunked accumulator */
    uint64_t hs, aff, gu, dn, tpid, bte, out, acc;
    /* constants: p, c*tp over H chunks, c*tp over I chunks, j over experts */
    nx_tile iota_p, hc, ic, iota_e;
    bw_set set[BW_SETS];
    nx_tile id_rows; /* int32 [nt, tp]: an item's ids as loaded, tile t in partition t */
    nx_tile x;       /* dt [tp, nt * H]: tile t of the item's gathered rows at t*H */
    nx_tile xt;      /* dt [tp, nh * bs]: x^T, h-chunk c at c*bs */
    nx_tile ht;      /* dt [tp, ni * bs]: h^T, i-chunk c at c*bs */
    nx_tile *sg;     /* silu(gate) fp32 [tp, bs]: BW_SILU_TILES in rotation, or g_tiles (split) */
    uint32_t nsg;
    nx_tile stage[BW_MAX_STAGES];
    nx_tile *gu_ring; /* rg slots of gu_slot bytes */
    nx_tile *dn_ring; /* rd slots of dn_slot bytes */
    nx_tile psum;     /* all of PSUM, handed out bank by bank (bw_psum_take) */
    uint32_t psum_bank, psum_used;
    uint32_t next_sg, next_stage, next_load, flip;
    uint32_t scatter_lanes, small_lane, aff_lane, aff_lanes;
    uint32_t load[64], nload; /* the bulk load lanes */
} bw;

/* ---- the item state's helpers (kernels/blockwise_mm/blockwise_mm_state.c) ---- */

/* The item's block, first position in token_position_to_id, and tokens. */
void bw_item(const nx_bwmm_plan *pl, uint64_t w, uint64_t *block, uint64_t *pos0, uint32_t *count);
static inline uint32_t bw_item_tokens(const nx_bwmm_plan *pl, uint64_t w) {
    uint64_t first = (w % pl->ns) * pl->bs, left = pl->p.B - first;
    return (uint32_t)(left < pl->bs ? left : pl->bs);
}

/* Byte offset in PSUM of `bytes` (<= one bank) taken round robin: the next
 * free part of the current bank, else the next bank. */
uint32_t bw_psum_take(bw *s, uint32_t bytes);

/* One-dimensional views. */
nx_operand bw_v(const nx_tile *t, nx_dtype dt, uint32_t np, uint64_t elem_off, uint32_t n);
nx_operand bw_psum(const bw *s, nx_dtype dt, uint32_t np, uint32_t byte_off, uint32_t n);

/* The lane of the scatters into chunk j of replica k, and the HBM byte
 * offset of its row r. */
uint32_t bw_scatter_lane(const bw *s, uint32_t k, uint32_t j);
uint64_t bw_acc_row(const bw *s, uint32_t k, uint32_t j, uint64_t r);
/* The next load lane (round robin over the load lanes). */
uint32_t bw_load_lane(bw *s);
/* ACT and DVE take turns copying out of PSUM. */
nx_engine bw_evac_engine(bw *s);

static inline uint32_t bw_min32(uint64_t a, uint64_t b) { return (uint32_t)nx_min_u64(a, b); }
static inline uint32_t bw_cdiv32(uint64_t a, uint64_t b) { return (uint32_t)nx_cdiv_u64(a, b); }

/* Instructions without an authoring-layer helper (kernels/blockwise_mm/blockwise_mm_emit.c):
 * dst = pred ? on_true : on_false (DVE); dst = func(in * scale) on ACT with
 * a per-partition scale. */
int bw_select(bw *s, const nx_operand *dst, const nx_operand *pred, const nx_operand *on_true,
              const nx_operand *on_false, nx_error *err);
int bw_activation(bw *s, nx_act_func f, const nx_operand *dst, const nx_operand *in, const nx_operand *scale,
                  nx_error *err);
/* A dma_copy on `lane` with flags (acc, scatter, oob_skip) and, with `off`,
 * indirect among `bound` rows; the same with oob_skip; a gather cut by rows
 * into pieces of BW_GATHER_ROWS over the load lanes. */
int bw_dma(bw *s, uint32_t lane, const nx_operand *dst, const nx_operand *src, const nx_operand *off,
           uint64_t bound, uint16_t flags, nx_error *err);
int bw_dma_indirect(bw *s, uint32_t lane, const nx_operand *dst, const nx_operand *src, const nx_operand *off,
                    uint64_t bound, uint16_t flags, nx_error *err);
int bw_gather_split(bw *s, const nx_operand *dst, const nx_operand *src, const nx_operand *off,
                    uint64_t bound, nx_error *err);

/* The phases of one item (kernels/blockwise_mm/blockwise_mm_setup.c, blockwise_mm_mlp.c). */
int bw_setup(bw *s, uint64_t w, nx_error *err);      /* ids, expert, offsets; gathers of x and affinities */
int bw_affinities(bw *s, uint64_t w, nx_error *err); /* the tokens' affinity for the item's expert */
int bw_pre_scale(bw *s, uint64_t w, nx_error *err);  /* PRE_SCALE: x = x * a */
int bw_transpose(bw *s, uint64_t w, nx_error *err);  /* x -> x^T through the PE */
int bw_gate_up(bw *s, uint64_t w, nx_error *err);    /* gate/up projections, silu * up -> h^T */
int bw_down(bw *s, uint64_t w, nx_error *err);       /* down projection, scale, scatter-add */
/* The weight pieces, global index k = item * pieces + piece. */
int bw_load_gate_up(bw *s, uint64_t k, nx_error *err);
int bw_load_down(bw *s, uint64_t k, nx_error *err);

#endif
