/* The decode plan of the `mlp` composite as a reusable piece: projections
 * of a few tokens (T <= 128) against weights streamed from HBM, for the
 * dense MLP (kernels/mlp/mlp.c) and for callers that run the same
 * computation per expert with the weight rows chosen at run time (the
 * moe_decode composite: an expert index read from HBM picks the rows).
 * docs/parts/mlp.md describes the plan and its figures.
 *
 * The piece is a stream of jobs on one core. Two kinds:
 *
 *   GATE_UP  a^T[i, t] = round_dt(act(sum_k Wg[k, i] x^T[k, t]) *
 *                                 sum_k Wu[k, i] x^T[k, t])
 *            for i in [0, n): Wg and Wu are [K, n] blocks of HBM rows,
 *            x^T is in SBUF with K on the partitions (K-chunk c of up to
 *            P = min(pe_rows, partitions) rows at partitions [0, kw),
 *            elements [c * T, c * T + T) of the tile `xT`), and a^T lands
 *            in SBUF with i on the partitions: I-tile j (columns j * 128 ..
 *            of the block, pe_cols wide) at partitions [0, iw), elements
 *            [(a0 + j) * T, + T) of the tile `aT`, in the piece's dtype.
 *            The weights are the PE's stationary tiles ([kw, iw] each), x^T
 *            the moving one (T columns): the product comes out with i on
 *            the partitions, which is what the down projection contracts
 *            over, so no transpose is needed. Per group of I-tiles the gate
 *            pass fills one PSUM bank set and the up pass the next; act
 *            runs on ScalarE over whole banks (up to 512 / T I-tiles at
 *            once, 128 lanes) during the up pass, the product with up on
 *            VectorE during the next gate pass, one rounding.
 *   DOWN     y[t, h] = sum_k a^T[k, t] Wd[k, h] for h in [0, n): Wd a [K, n]
 *            block of HBM rows, a^T as GATE_UP writes it (K-tile j at
 *            elements [(a0 + j) * T, + T) of `aT`). a^T is stationary
 *            ([kw, T]), Wd moving ([kw, 512] per PSUM bank), y in PSUM with
 *            the tokens on the partitions, accumulated over all K in fp32,
 *            then either
 *              out_acc == NULL: rounded to the dtype and stored to HBM,
 *                               y[t, h] at byte out_hbm + (t * out_ld + h) * es
 *                               (n < out_ld: one transfer per row, so that
 *                               another core's columns of the same rows are
 *                               never inside a transfer's byte span);
 *              out_acc != NULL: out_acc[t, acc0 + h] += scale[t] * y[t, h]
 *                               in fp32 on VectorE (out_acc an fp32 SBUF tile
 *                               of >= T partitions; scale NULL: 1, else an
 *                               fp32 SBUF column [T, 1], one per token:
 *                               the router's affinity).
 *
 * Weights: nx_mlp_dec_weight names a [K, n] block by the HBM byte of its
 * element [0, 0] and its row pitch `ld` (elements). rows == NULL: static
 * rows (row k at base + k * ld elements). rows != NULL: the rows are chosen
 * at run time: `rows` is an SBUF int32 column [P, 1] with rows[p] = the
 * HBM row (counted from `base`, rows of ld elements) that row p of the
 * block's first K-chunk is, i.e. an expert's first row + p (e * K + p for
 * a stacked [E, K, n] tensor with base = its start); chunk c reads rows
 * rows[p] + c * P. `bound` is the number of rows `base` has (E * K):
 * the indirect DMA (docs/parts/insns-pe-dma.md, gather) skips rows out of
 * [0, bound) (oob_skip), leaving the ring slot's previous data; a slab's
 * gather (several chunks per offset) takes as its bound the offsets whose
 * every chunk's rows lie inside [0, bound), so the access pattern's span
 * ends at the tensor's end and the weight may be the program's last HBM
 * tensor (rows[p] of a block inside the tensor is always below it). A caller
 * that passes an index of -1 must give that job's tokens a zero scale or
 * skip the job. Loads are cut by partitions over the DMA engines and
 * rotate over the queues of each engine.
 *
 * Streaming: the piece owns a ring of SBUF slabs (each >= 2 KiB contiguous
 * per partition where the block is that wide) and loads the weights of the
 * job stream a ring ahead of the PE, across job boundaries. A job is
 * queued by nx_mlp_dec_submit; its compute (PE, ACT, DVE, its stores) is
 * emitted when the NEXT job is submitted or at nx_mlp_dec_flush, so the
 * loads of job j + 1 are emitted while job j's compute is, and run under
 * it. The authoring layer orders by emission (kernels/author/author.h), so:
 *   - the tiles a job reads (xT, aT for DOWN, rows, scale, out_acc) must hold
 *     their data when its compute is emitted, and keep it until then: write
 *     them before submitting, or in the job's `before` hook;
 *   - `before(before_ctx, err)`, when set, is called right before the job's
 *     compute is emitted (after the previous job's compute and after the
 *     weight loads ahead of it): the place for a barrier or an exchange
 *     between the grid's cores (the mlp's split) or the gather of the
 *     expert's tokens. Its emissions order after everything emitted before.
 *   - the weight loads never wait for a job's compute inputs; a ring slot is
 *     reloaded only after the compute that read it is emitted.
 *
 * Tokens: up to pe_cols (128) per job is the decode case (and the moe
 * experts'); more, up to a PSUM bank of fp32 (512), is the prefill block
 * of the mlp: GATE_UP streams all T as the moving tile, DOWN runs a^T in
 * sub-tiles of pe_cols tokens, each its own banks (y's rows t of sub-tile
 * u at HBM row u * pe_cols + t); out_acc needs T <= pe_cols.
 *
 * Limits (nx_mlp_dec_new refuses otherwise, naming the value and the
 * limit): T from 1 to psum bank / 4 bytes; dtype
 * fp32 or bf16; act silu, gelu, gelu_tanh or relu; K and n at least 1 per
 * job, ld and out_ld < 2^31. PSUM: the piece takes `psum_banks` banks (0:
 * every bank of the machine, at least 2) for its whole life; SBUF: the ring
 * (`ring_bytes` per partition, 0: a default that leaves most of SBUF) and
 * its staging tiles, allocated by nx_mlp_dec_new, released by
 * nx_mlp_dec_free.
 *
 * Contract stability: the moe_decode composite builds on this header. */
#ifndef NXSIM_KERNELS_MLP_MLP_DECODE_H
#define NXSIM_KERNELS_MLP_MLP_DECODE_H

#include <stdint.h>

#include "kernels/author/author.h"

typedef enum nx_mlp_dec_kind {
    NX_MLP_DEC_GATE_UP = 0,
    NX_MLP_DEC_DOWN = 1,
} nx_mlp_dec_kind;

typedef struct nx_mlp_dec_cfg {
    nx_dtype dtype;       /* x, the weights, a and y: fp32 or bf16 */
    uint32_t T;           /* tokens per job at most (1 .. a PSUM bank of fp32, 512 on trn2;
                             up to pe_cols with out_acc): the tiles' layout */
    nx_act_func act;      /* NX_ACT_SILU, GELU (erf), GELU_TANH or RELU */
    uint32_t psum_banks;  /* PSUM banks the piece may use (0: all) */
    uint64_t ring_bytes;  /* SBUF bytes per partition for the weight ring (0: default) */
} nx_mlp_dec_cfg;

typedef struct nx_mlp_dec_weight {
    uint64_t base;            /* HBM byte of the block's element [0, 0] */
    uint64_t ld;              /* row pitch, elements */
    const nx_operand *rows;   /* NULL: static rows; else SBUF int32 [P, 1] (above) */
    uint64_t bound;           /* with rows: rows `base` has (E * K) */
} nx_mlp_dec_weight;

typedef struct nx_mlp_dec_job {
    nx_mlp_dec_kind kind;
    uint64_t K;                  /* contraction: H (GATE_UP), an I range (DOWN) */
    uint64_t n;                  /* output columns: an I range (GATE_UP), an H range (DOWN) */
    nx_mlp_dec_weight w0;        /* GATE_UP: w_gate; DOWN: w_down */
    nx_mlp_dec_weight w1;        /* GATE_UP: w_up; DOWN: unused */
    const nx_tile *xT;           /* GATE_UP: x^T, K on the partitions (above) */
    const nx_tile *aT;           /* GATE_UP: written; DOWN: read */
    uint64_t a0;                 /* I-tile index of the block's first tile in aT */
    uint32_t k_first;            /* DOWN: the K-tile the contraction starts at (the
                                    order of the fp32 sum; a performance hint) */
    uint64_t out_hbm, out_ld;    /* DOWN, out_acc NULL: y stored here (dtype) */
    const nx_tile *out_acc;      /* DOWN: fp32 accumulator, or NULL */
    uint64_t acc0;               /* DOWN: its column of h = 0 */
    const nx_operand *scale;     /* DOWN with out_acc: fp32 [T, 1] per token, or NULL */
    int (*before)(void *before_ctx, nx_error *err); /* may be NULL */
    void *before_ctx;
    uint32_t T;                  /* tokens of this job, 1 .. cfg T (0: cfg T); the
                                    tiles keep cfg T's layout (token t of tile j at
                                    element j * cfg.T + t), y has T rows */
} nx_mlp_dec_job;

typedef struct nx_mlp_dec nx_mlp_dec;

/* Allocates the piece's PSUM banks, ring and staging tiles on k. */
int nx_mlp_dec_new(nx_kctx *k, const nx_mlp_dec_cfg *cfg, nx_mlp_dec **out, nx_error *err);
/* Queues a job (copied; the tiles and operands it points at are borrowed
 * until its compute is emitted) and emits the previous job's compute. */
int nx_mlp_dec_submit(nx_mlp_dec *d, const nx_mlp_dec_job *job, nx_error *err);
/* Emits the compute of the queued job (and any loads it still needs). */
int nx_mlp_dec_flush(nx_mlp_dec *d, nx_error *err);
/* Releases the tiles (after a flush; err may be NULL) and frees d. */
void nx_mlp_dec_free(nx_mlp_dec *d, nx_error *err);

/* PSUM bank 0 of the piece, [partitions x bank / 4] fp32, for a caller's
 * own PE work inside a `before` hook (the transposes of the next tokens):
 * the layer orders the piece's next use of the bank after it. */
const nx_tile *nx_mlp_dec_psum(const nx_mlp_dec *d);

/* Elements per partition of an x^T / a^T tile holding `tiles` 128-row
 * tiles of T tokens (a caller allocates xT and aT with this free size, in
 * the piece's dtype, >= the rows of its widest tile as partitions). */
uint64_t nx_mlp_dec_tile_elems(uint64_t tiles, uint32_t T);

#endif
