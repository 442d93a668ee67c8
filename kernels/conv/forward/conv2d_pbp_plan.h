/* The tiling plan of the dense pixel-by-pixel convolution (conv2d_pbp.h):
 * every size the emitter uses, derived from the problem and the machine
 * description: its geometry and its DMA row figure (kernels/conv/forward/
 * conv2d_pbp_plan.c; docs/parts/conv.md). Private
 * to kernels/conv/; tests read it to check the tiling. */
#ifndef NXSIM_KERNELS_CONV_CONV2D_PBP_PLAN_H
#define NXSIM_KERNELS_CONV_CONV2D_PBP_PLAN_H

#include <stdint.h>

#include "conv2d_pbp.h"
#include "isa/machine.h"

/* Output staging buffers at most (plan out_comb). */
#define PBP_MAX_STAGES 8
/* batch parts of a one-step (C, N, H, W) image (plan nph): at most 2 / 3 / 4
 * measured 15.5 / 15.1 / 15.1 us (bf16) and 36.9 / 33.9 / 35.2 us (fp32) at
 * 28x28x128 s2, batch 8 */
#define PBP_MAX_PARTS 3

typedef enum pbp_store_mode {
    PBP_STORE_DIRECT = 0,     /* C_out on partitions: runs of NB elements */
    PBP_STORE_TRANSPOSED = 1, /* PE-transposed: pixels on partitions, runs of k x mo x N */
} pbp_store_mode;

typedef struct pbp_plan {
    /* the problem (copied from nx_conv_pbp) */
    nx_dtype dt;
    uint64_t es;                  /* element bytes */
    uint64_t H, C, W, N, KH, KW, O, OH, OW;
    int64_t sy, sx, ply, plx, rdy, rdx;
    uint64_t G, Cg, Og;           /* groups, in- and out-features per group */

    /* machine */
    uint32_t PR, PC;              /* PE rows (contraction), PE cols (stationary width) */
    uint32_t FM;                  /* moving free size / PSUM tile: min(N max, one fp32 bank) */
    uint32_t lanes;               /* DMA lanes of the context */
    uint32_t pieces;              /* transfers a load or store is split into (one per DMA engine) */
    uint32_t dma_run;             /* bytes per partition a DMA moves at full speed from (machine
                                   * dma.efficient_bytes_per_partition, docs/parts/machine.md) */

    /* channel blocks: super-group s packs gp groups block-diagonally when
     * a group's features fit one PE tile several times (grouped/depthwise) */
    uint64_t gp, nsg;             /* groups per super-group, super-groups */
    uint32_t steps;               /* contraction steps per super-group */
    uint32_t kc;                  /* partitions of a full step */
    uint32_t mo;                  /* width of a full cout tile */
    uint32_t couts;               /* cout tiles per super-group */
    uint32_t chunk;               /* cout tiles whose filters are resident at once */
    uint32_t filt_bufs;           /* 1 or 2 filter buffers */
    uint64_t filt_elems;          /* per partition per filter buffer */
    int filt_iohw;                /* filter buffer [step][o][tap] as (C/G, O, KH, KW) holds it
                                   * (else [step][tap][t][m]); stationaries read o at stride taps */

    /* spatial blocking: bands of R output rows x CW output cols x NB batch */
    uint64_t R, CW, NB;
    uint64_t R0;                  /* rows of the first band (<= R) */
    uint64_t rows_in, cols_in;    /* band tile extents in padded input coords */
    uint64_t band_elems;          /* per partition per band buffer */
    int resident;                 /* 1: one tile holds the whole padded image (rows_in = all of it) */
    int rt;                       /* resident image loaded as rows (H on partitions, runs of C W N)
                                   * and PE-transposed onto C (short W N runs otherwise) */
    uint32_t rt_rows;             /* image rows per raw piece (<= PE rows) */
    uint32_t rt_spu;              /* contraction steps per raw unit, stacked on the partitions
                                   * (rt_spu x rows <= PE rows: one transpose serves them all) */
    uint32_t rt_pad;              /* PSUM block stride of a transposed column (pow2 >= rt_spu x rt_rows) */
    uint64_t rt_elems;            /* raw tile per partition: kc x W x N */
    uint32_t rt_bufs;             /* raw tiles (2 when several units follow each other and fit) */
    int cnhw;                     /* resident image read from (C, N, H, W): per step one raw tile
                                   * [kc, N x H x W] (one contiguous run per partition), reordered
                                   * into the band by ACT / DVE / POOL copies */
    uint64_t cn_elems;            /* raw tile per partition: N x H x W */
    uint32_t cn_bufs;             /* raw tiles (2 when several steps follow each other and fit) */
    uint32_t nph;                 /* cnhw, one step and cout tile: batch parts loaded and computed
                                   * one after the other over every band (> 1), else 1 */
    /* nph > 1: part k holds batch values [ph_n0[k], ph_n0[k + 1]) in a plane of its own at
     * element ph_base[k] of the band ((row, col, n) with n of the part only), so that a part's
     * reorder and the other parts' matmuls touch disjoint bytes and do not wait for each
     * other; its PSUM tiles are ph_q x ph_pw x ph_nb */
    uint64_t ph_n0[PBP_MAX_PARTS + 1], ph_base[PBP_MAX_PARTS], ph_q[PBP_MAX_PARTS], ph_pw[PBP_MAX_PARTS],
        ph_nb[PBP_MAX_PARTS];
    uint32_t band_bufs;

    /* PSUM tiles inside a band: q rows x pw cols x nb batch <= FM */
    uint64_t q, pw, nb;
    uint32_t psum_bufs;

    /* output */
    pbp_store_mode store;
    uint64_t stage_elems;         /* per partition per staging buffer: R x CW x NB */
    uint32_t stage_bufs;
    uint32_t kpack;               /* transposed: pixels per partition */
    uint32_t mo_pad;              /* transposed: PSUM block stride (pow2 >= mo) */
    uint64_t ns;                  /* transposed: batch values per PSUM pass */
    uint64_t tstore_elems;        /* transposed: store tile per partition */
    int out_01bf;                 /* transposed into (OH, OW, N, O): a pixel's [N, mo] per partition */
    int out_comb;                 /* out_01bf with several cout tiles: a band's tiles stage side by
                                   * side (stage_bufs = couts + 1) and one store writes each pixel's
                                   * whole [N, O] run */
} pbp_plan;

/* Builds the plan; -1 naming the limit when no tiling fits the machine
 * (e.g. a single filter tap row larger than SBUF). */
int pbp_plan_make(const nx_conv_pbp *pb, const nx_machine *m, uint32_t lanes, pbp_plan *pl,
                  nx_error *err);

#endif
