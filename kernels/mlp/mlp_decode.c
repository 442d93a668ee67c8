/* The decode plan's piece (kernels/mlp/mlp_decode.h): the weight stream of
 * the NKI LLM-inference MLP kernels for token generation (aws-neuron
 * nki-samples, the Llama decode MLP: weights streamed once from HBM, the
 * activations kept on chip) written against the authoring layer; it goes
 * past them in streaming across job boundaries (the next projection's and
 * the next expert's weights load under the current one's compute) and in
 * taking its weight rows from run-time offsets (the indirect DMA), so one
 * piece serves the dense MLP and the decode MoE experts.
 *
 * A job's weights are cut into slabs, one ring slot each: kc K-chunks of
 * up to P rows x a column group (GATE_UP: G I-tiles, DOWN: an H-block of
 * nb PSUM banks), at least dma_efficient_bytes_per_partition contiguous
 * per row where the block is that wide, loaded as one transfer per DMA
 * engine. Loads run the ring ahead of the PE: slab s + R is loaded as soon
 * as the compute of slab s is emitted, whatever job it belongs to. */
#include "mlp_decode.h"

#include <stdlib.h>
#include <string.h>

#include "isa/intmath.h"
#include "kernels/norms/rows.h"

#define DEC_RING_MAX 32
#define DEC_BANKS_MAX 16
#define DEC_STAGE 4
#define DEC_JOBS 4
#define DEC_SLAB_BYTES 8192u
#define DEC_RING_DEFAULT (96u * 1024u)

typedef struct dec_job {
    nx_mlp_dec_job j;
    uint32_t T;      /* its tokens */
    uint64_t first;  /* global index of its first slab */
    uint64_t nslabs;
    uint64_t nk, nfull, nkb; /* K-chunks, full ones, chunk blocks */
    uint32_t kc;             /* full chunks per block */
    uint64_t ncols, ngroups; /* GATE_UP: I-tiles and groups; DOWN: H-blocks in ngroups */
} dec_job;

struct nx_mlp_dec {
    nx_kctx *k;
    nx_rows r;
    nx_mlp_dec_cfg c;
    uint64_t es;
    uint32_t P, TI, bank_elems;
    uint32_t banks, spb, G, gb, gu_sets, nb, nsub, dn_sets, HB;
    uint32_t R;
    nx_tile ring[DEC_RING_MAX], psum[DEC_BANKS_MAX], tmp[2], stage[DEC_STAGE];
    uint32_t nring, npsum, ntmp, nstage;
    dec_job q[DEC_JOBS];
    uint64_t qhead, qtail;           /* jobs [qhead, qtail) queued; qhead's compute is next */
    uint64_t slabs_known, loaded, used;
    uint64_t gu_set, dn_set, tmps, stages, loads;
};

uint64_t nx_mlp_dec_tile_elems(uint64_t tiles, uint32_t T) { return tiles * T; }

const nx_tile *nx_mlp_dec_psum(const nx_mlp_dec *d) { return &d->psum[0]; }

static uint32_t clip32(uint64_t v, uint32_t cap) { return (uint32_t)(v < cap ? v : cap); }

/* ---- slabs ---- */

typedef struct dec_slab {
    const nx_mlp_dec_weight *w;
    uint64_t c0;    /* first K-chunk */
    uint32_t cnt;   /* chunks */
    uint32_t kw;    /* rows per chunk */
    uint64_t col0;  /* first column */
    uint32_t width; /* columns */
    uint32_t proj;  /* GATE_UP: 0 gate, 1 up */
} dec_slab;

/* K-chunk block kb of a job: chunks [c0, c0 + cnt), kw rows each. */
static void dec_block(const nx_mlp_dec *d, const dec_job *q, uint64_t kb, uint64_t *c0, uint32_t *cnt, uint32_t *kw) {
    const uint64_t nfb = q->nkb - (q->nk > q->nfull);
    if (kb < nfb) {
        *c0 = kb * q->kc;
        *cnt = clip32(q->nfull - *c0, q->kc);
        *kw = d->P;
    } else {
        *c0 = q->nfull;
        *cnt = 1;
        *kw = (uint32_t)(q->j.K - q->nfull * d->P);
    }
}

/* The first chunk block a DOWN job's contraction reads. */
static uint64_t dec_kb_first(const dec_job *q) {
    const uint64_t c = q->j.k_first < q->nk ? q->j.k_first : 0;
    return c >= q->nfull ? q->nkb - 1 : c / q->kc;
}

static void dec_slab_of(const nx_mlp_dec *d, const dec_job *q, uint64_t s, dec_slab *o) {
    memset(o, 0, sizeof *o);
    if (q->j.kind == NX_MLP_DEC_GATE_UP) {
        const uint64_t g = s / (q->nkb * 2), kb = s % q->nkb;
        o->proj = (uint32_t)((s / q->nkb) % 2);
        o->w = o->proj ? &q->j.w1 : &q->j.w0;
        dec_block(d, q, kb, &o->c0, &o->cnt, &o->kw);
        o->col0 = g * d->G * d->TI;
        o->width = clip32(q->j.n - o->col0, d->G * d->TI);
    } else {
        const uint64_t hb = s / q->nkb, kb = (s % q->nkb + dec_kb_first(q)) % q->nkb;
        o->w = &q->j.w0;
        dec_block(d, q, kb, &o->c0, &o->cnt, &o->kw);
        o->col0 = hb * d->HB;
        o->width = clip32(q->j.n - o->col0, d->HB);
    }
}

static dec_job *dec_job_of_slab(nx_mlp_dec *d, uint64_t s) {
    for (uint64_t i = d->qhead; i < d->qtail; i++) {
        dec_job *q = &d->q[i % DEC_JOBS];
        if (s >= q->first && s < q->first + q->nslabs) return q;
    }
    return NULL;
}

/* The slot view of a slab: [kw, cnt, width] contiguous. */
static nx_operand dec_slot(const nx_mlp_dec *d, uint64_t s, const dec_slab *sl) {
    const int32_t st[2] = {(int32_t)sl->width, 1};
    const uint32_t cn[2] = {sl->cnt, sl->width};
    return nx_tile_view(&d->ring[s % d->R], d->c.dtype, 0, sl->kw, 0, 2, st, cn);
}

static int dec_load(nx_mlp_dec *d, uint64_t s, nx_error *err) {
    const dec_job *q = dec_job_of_slab(d, s);
    dec_slab sl;
    dec_slab_of(d, q, s - q->first, &sl);
    const nx_mlp_dec_weight *w = sl.w;
    const uint64_t row0 = sl.c0 * d->P;
    const int32_t st[2] = {(int32_t)(d->P * w->ld), 1};
    const uint32_t cn[2] = {sl.cnt, sl.width};
    nx_operand dst = dec_slot(d, s, &sl);
    nx_operand src = nx_ap(NX_OPK_HBM, d->c.dtype, 0, sl.kw, (int32_t)w->ld,
                           w->base + (row0 * w->ld + sl.col0) * d->es, 2, st, cn);
    /* the load group (queue 0 of every engine): the stores, which wait for
     * compute, have the next queue (kernels/norms/rows.h) */
    const uint32_t E = d->r.engines, first = NX_ROWS_LOAD_LANE;
    if (!w->rows) return nx_kctx_dma_split(d->k, first, E, &dst, &src, err);
    /* The gather's bound counts the row offsets (from the slab's first
     * chunk) whose rows of every chunk of the slab lie inside the tensor:
     * an offset's pattern reads cnt chunks P rows apart, so its span ends
     * (cnt - 1) P rows past the offset. A valid offset (its block's rows
     * inside [0, w->bound)) is below that bound, and the span of the
     * bound's rows ends at the tensor's end, whatever lies after it. */
    const uint64_t reach = row0 + (uint64_t)(sl.cnt - 1) * d->P;
    if (w->bound <= reach) return 0; /* every offset past the tensor: nothing to read */
    const uint64_t bound = w->bound - reach;
    if (bound > INT32_MAX) return nx_fail(err, "mlp decode: a gather bound of %llu rows exceeds int32", (unsigned long long)bound);
    const uint32_t pieces = E < sl.kw ? E : sl.kw, base = sl.kw / pieces, extra = sl.kw % pieces;
    uint32_t r0 = 0;
    for (uint32_t i = 0; i < pieces; i++) {
        const uint32_t n = base + (i < extra);
        nx_insn ins = nx_insn_make(NX_OP_DMA_COPY);
        ins.op[0] = nx_operand_rows(&dst, r0, n);
        ins.op[1] = src;
        ins.op[1].partition_count = (uint8_t)n;
        ins.op[2] = nx_operand_rows(w->rows, r0, n);
        ins.iparam[1] = (int32_t)bound;
        ins.flags = NX_FLAG_OOB_SKIP;
        if (nx_kctx_dma_insn(d->k, first + i, &ins, err) != 0) return -1;
        r0 += n;
    }
    return 0;
}

/* Loads the ring ahead: every known slab below used + R. */
static int dec_fill(nx_mlp_dec *d, nx_error *err) {
    while (d->loaded < d->slabs_known && d->loaded < d->used + d->R)
        if (dec_load(d, d->loaded++, err) != 0) return -1;
    return 0;
}

/* Slabs [s, s + n) are about to be read: they must have been loaded. */
static int dec_take(nx_mlp_dec *d, uint64_t s, uint32_t n, nx_error *err) {
    while (d->loaded < s + n && d->loaded < d->slabs_known)
        if (dec_load(d, d->loaded++, err) != 0) return -1;
    return 0;
}

/* The compute of slabs up to s has been emitted: their slots refill. */
static int dec_release(nx_mlp_dec *d, uint64_t upto, nx_error *err) {
    if (upto > d->used) d->used = upto;
    return dec_fill(d, err);
}

/* ---- compute ---- */

static nx_operand dec_psum(const nx_mlp_dec *d, uint32_t bank, uint32_t parts, uint64_t e0, uint64_t n) {
    return nx_rows_view(&d->psum[bank], NX_DT_FP32, parts, e0, n);
}

/* The evacuation of tiles [j0, j0 + cnt) of a group (one bank of each
 * pass, iw rows each): proj 0 act(gate) -> tmp on ScalarE, proj 1
 * tmp * up -> a^T on VectorE, the one rounding. */
static int dec_gu_evac(nx_mlp_dec *d, const dec_job *q, uint32_t proj, uint32_t base, const nx_tile *tmp, uint64_t t0,
                       uint32_t j0, uint32_t cnt, uint32_t iw, nx_error *err) {
    const uint32_t T = d->c.T, Tj = q->T, bank = j0 / d->spb;
    const uint64_t e0 = (uint64_t)(j0 % d->spb) * T;
    const int32_t st[2] = {(int32_t)T, 1};
    const uint32_t cn[2] = {cnt, Tj};
    nx_operand ps = nx_tile_view(&d->psum[base + bank], NX_DT_FP32, 0, iw, e0, 2, st, cn);
    nx_operand tv = nx_tile_view(tmp, NX_DT_FP32, 0, iw, (uint64_t)j0 * T, 2, st, cn);
    if (proj == 0) return nx_kctx_activation(d->k, d->c.act, &tv, &ps, 1.0, 0.0, err);
    nx_operand av = nx_tile_view(q->j.aT, d->c.dtype, 0, iw, (q->j.a0 + t0 + j0) * T, 2, st, cn);
    return nx_kctx_tensor_tensor(d->k, NX_ENG_DVE, NX_ALU_MULTIPLY, &av, &tv, &ps, err);
}

/* Per group of G I-tiles: the gate pass into one bank set, act on
 * ScalarE while the up pass fills the next set, then the product: the PE
 * never waits for an evacuation (the sets rotate). */
static int dec_gate_up(nx_mlp_dec *d, const dec_job *q, nx_error *err) {
    const uint32_t T = d->c.T;
    uint64_t s = q->first;
    for (uint64_t g = 0; g < q->ngroups; g++) {
        const uint64_t t0 = g * d->G;
        const uint32_t gt = clip32(q->ncols - t0, d->G);
        const nx_tile *tmp = &d->tmp[d->tmps++ % 2];
        const uint32_t last_iw = clip32(q->j.n - (t0 + gt - 1) * d->TI, d->TI);
        const uint32_t full = last_iw == d->TI ? gt : gt - 1;
        for (uint32_t pr = 0; pr < 2; pr++) {
            const uint32_t base = (uint32_t)(d->gu_set++ % d->gu_sets) * d->gb;
            for (uint64_t kb = 0; kb < q->nkb; kb++, s++) {
                if (dec_take(d, s, 1, err) != 0) return -1;
                dec_slab sl;
                dec_slab_of(d, q, s - q->first, &sl);
                for (uint32_t ci = 0; ci < sl.cnt; ci++) {
                    const uint64_t c = sl.c0 + ci;
                    nx_operand mv = nx_rows_view(q->j.xT, d->c.dtype, sl.kw, c * T, q->T);
                    for (uint32_t j = 0; j < gt; j++) {
                        const uint32_t iw = clip32(q->j.n - (t0 + j) * d->TI, d->TI);
                        nx_operand st = nx_rows_view(&d->ring[s % d->R], d->c.dtype, sl.kw,
                                                     (uint64_t)ci * sl.width + (uint64_t)j * d->TI, iw);
                        nx_operand acc = dec_psum(d, base + j / d->spb, iw, (uint64_t)(j % d->spb) * T, q->T);
                        if (nx_kctx_load_stationary(d->k, &st, err) != 0 ||
                            nx_kctx_multiply_moving(d->k, &acc, &mv, c > 0, err) != 0)
                            return -1;
                    }
                }
                if (dec_release(d, s + 1, err) != 0) return -1;
            }
            /* per bank; a ragged last tile (fewer rows) alone */
            for (uint32_t j0 = 0; j0 < full; j0 += d->spb) {
                const uint32_t cnt = full - j0 < d->spb ? full - j0 : d->spb;
                if (dec_gu_evac(d, q, pr, base, tmp, t0, j0, cnt, d->TI, err) != 0) return -1;
            }
            if (full < gt && dec_gu_evac(d, q, pr, base, tmp, t0, gt - 1, 1, last_iw, err) != 0) return -1;
        }
    }
    return 0;
}

/* Per H-block of nb banks: for every K-tile, per token sub-tile of up to
 * pe_cols tokens, a^T stationary and the slab's columns moving, one bank
 * each; then the banks out (stored, or accumulated with the scale). */
static int dec_down(nx_mlp_dec *d, const dec_job *q, nx_error *err) {
    const uint32_t T = d->c.T, Tj = q->T, nsub = (uint32_t)nx_cdiv_u64(Tj, d->TI);
    uint64_t s = q->first;
    for (uint64_t hb = 0; hb < q->ngroups; hb++) {
        const uint32_t base = (uint32_t)(d->dn_set++ % d->dn_sets) * d->nb * d->nsub;
        const uint64_t h0 = hb * d->HB;
        const uint32_t hw = clip32(q->j.n - h0, d->HB), nbk = (uint32_t)nx_cdiv_u64(hw, d->bank_elems);
        for (uint64_t kbi = 0; kbi < q->nkb; kbi++, s++) {
            if (dec_take(d, s, 1, err) != 0) return -1;
            dec_slab sl;
            dec_slab_of(d, q, s - q->first, &sl);
            for (uint32_t ci = 0; ci < sl.cnt; ci++) {
                const uint64_t c = sl.c0 + ci;
                for (uint32_t u = 0; u < nsub; u++) {
                    const uint32_t tw = clip32(Tj - (uint64_t)u * d->TI, d->TI);
                    nx_operand st = nx_rows_view(q->j.aT, d->c.dtype, sl.kw, (q->j.a0 + c) * T + (uint64_t)u * d->TI, tw);
                    if (nx_kctx_load_stationary(d->k, &st, err) != 0) return -1;
                    for (uint32_t b = 0; b < nbk; b++) {
                        const uint32_t bw = clip32(hw - (uint64_t)b * d->bank_elems, d->bank_elems);
                        nx_operand mv = nx_rows_view(&d->ring[s % d->R], d->c.dtype, sl.kw,
                                                     (uint64_t)ci * sl.width + (uint64_t)b * d->bank_elems, bw);
                        nx_operand acc = dec_psum(d, base + u * d->nb + b, tw, 0, bw);
                        if (nx_kctx_multiply_moving(d->k, &acc, &mv, kbi > 0 || ci > 0, err) != 0) return -1;
                    }
                }
            }
            if (dec_release(d, s + 1, err) != 0) return -1;
        }
        for (uint32_t u = 0; u < nsub; u++)
            for (uint32_t b = 0; b < nbk; b++) {
                const uint32_t tw = clip32(Tj - (uint64_t)u * d->TI, d->TI);
                const uint64_t c0 = h0 + (uint64_t)b * d->bank_elems;
                const uint32_t bw = clip32(hw - (uint64_t)b * d->bank_elems, d->bank_elems);
                nx_operand acc = dec_psum(d, base + u * d->nb + b, tw, 0, bw);
                if (q->j.out_acc) {
                    nx_operand o = nx_rows_view(q->j.out_acc, NX_DT_FP32, tw, q->j.acc0 + c0, bw);
                    nx_operand sc = q->j.scale ? nx_operand_rows(q->j.scale, 0, tw) : nx_imm(1.0, NX_DT_FP32);
                    int rc = q->j.scale ? nx_kctx_scalar_tensor_tensor(d->k, NX_ENG_DVE, &o, &acc, NX_ALU_MULTIPLY, &sc,
                                                                       NX_ALU_ADD, &o, err)
                                        : nx_kctx_tensor_tensor(d->k, NX_ENG_DVE, NX_ALU_ADD, &o, &o, &acc, err);
                    if (rc != 0) return -1;
                    continue;
                }
                const uint64_t i = d->stages++;
                nx_operand sv = nx_rows_view(&d->stage[i % d->nstage], d->c.dtype, tw, 0, bw);
                nx_operand dst = nx_ap_hbm_rows(d->c.dtype, q->j.out_hbm + ((uint64_t)u * d->TI * q->j.out_ld + c0) * d->es,
                                                tw, (int32_t)q->j.out_ld, bw);
                if (nx_kctx_tensor_copy(d->k, i % 2 ? NX_ENG_DVE : NX_ENG_ACT, &sv, &acc, err) != 0) return -1;
                if (q->j.n == q->j.out_ld) {
                    if (nx_rows_store(&d->r, &dst, &sv, err) != 0) return -1;
                    continue;
                }
                /* a column range of the rows: one transfer per row, so the
                 * byte span of a transfer (the race check's unit) holds no
                 * other core's columns */
                for (uint32_t t = 0; t < tw; t++) {
                    nx_operand dr = nx_operand_rows(&dst, t, 1), sr = nx_operand_rows(&sv, t, 1);
                    if (nx_kctx_dma_on(d->k, d->r.store_lane + t % d->r.engines, &dr, &sr, err) != 0) return -1;
                }
            }
    }
    return 0;
}

static int dec_compute(nx_mlp_dec *d, nx_error *err) {
    const dec_job *q = &d->q[d->qhead % DEC_JOBS];
    if (q->j.before && q->j.before(q->j.before_ctx, err) != 0) return -1;
    int rc = q->j.kind == NX_MLP_DEC_GATE_UP ? dec_gate_up(d, q, err) : dec_down(d, q, err);
    if (rc != 0) return -1;
    d->qhead++;
    return 0;
}

/* ---- the public functions ---- */

int nx_mlp_dec_new(nx_kctx *k, const nx_mlp_dec_cfg *cfg, nx_mlp_dec **out, nx_error *err) {
    *out = NULL;
    const nx_geometry *g = nx_kctx_geometry(k);
    const nx_machine *m = nx_kctx_machine(k);
    const uint32_t P = g->pe_rows < g->partitions ? g->pe_rows : g->partitions;
    const uint32_t bank_elems = (uint32_t)(g->psum_bank_bytes / 4);
    const uint32_t tmax = bank_elems;
    if (cfg->dtype != NX_DT_FP32 && cfg->dtype != NX_DT_BF16)
        return nx_fail(err, "mlp decode: dtype %s is not fp32 or bf16", nx_dtype_name(cfg->dtype));
    if (cfg->T < 1 || cfg->T > tmax)
        return nx_fail(err, "mlp decode: T = %u tokens is outside [1, %u]", cfg->T, tmax);
    if (cfg->act != NX_ACT_SILU && cfg->act != NX_ACT_GELU && cfg->act != NX_ACT_GELU_TANH && cfg->act != NX_ACT_RELU)
        return nx_fail(err, "mlp decode: act %s is not silu, gelu, gelu_tanh or relu", nx_act_name(cfg->act));
    const uint32_t have = (uint32_t)(g->psum_partition_bytes / g->psum_bank_bytes);
    uint32_t banks = cfg->psum_banks ? cfg->psum_banks : have;
    if (banks > have) banks = have;
    if (banks > DEC_BANKS_MAX) banks = DEC_BANKS_MAX;
    nx_mlp_dec *d = calloc(1, sizeof *d);
    if (!d) return nx_fail(err, "mlp decode: out of memory");
    d->k = k;
    d->c = *cfg;
    nx_rows_init(&d->r, k);
    d->es = nx_dtype_size(cfg->dtype);
    d->P = P;
    d->TI = g->pe_cols;
    d->bank_elems = bank_elems;
    d->banks = banks;
    d->spb = bank_elems / cfg->T;
    /* a group is wide enough for full-rate DMA runs; its gate and up
     * accumulators take gb banks each, two sets when PSUM has them */
    const uint64_t run = m->dma_efficient_bytes_per_partition ? m->dma_efficient_bytes_per_partition : 2048;
    const uint32_t g_min = (uint32_t)nx_cdiv_u64(run, (uint64_t)d->TI * d->es);
    d->gb = (uint32_t)nx_cdiv_u64(g_min, d->spb);
    if (2 * d->gb > banks) d->gb = banks / 2;
    d->nsub = (uint32_t)nx_cdiv_u64(cfg->T, d->TI);
    if (d->gb < 1 || d->nsub > banks) {
        const uint32_t least = d->nsub > 2 ? d->nsub : 2;
        free(d);
        return nx_fail(err, "mlp decode: %u PSUM banks, T = %u needs at least %u", banks, cfg->T, least);
    }
    d->gu_sets = banks / d->gb;
    const uint32_t g_cap = (uint32_t)(DEC_SLAB_BYTES / ((uint64_t)d->TI * d->es));
    d->G = d->gb * d->spb < g_cap ? d->gb * d->spb : g_cap;
    /* down: nb banks per token sub-tile, two sets when they fit */
    d->nb = banks / 2 / d->nsub;
    if (d->nb > 4) d->nb = 4;
    if (d->nb < 1) d->nb = banks / d->nsub;
    d->dn_sets = banks >= 2 * d->nb * d->nsub ? 2 : 1;
    d->HB = d->nb * bank_elems;
    if ((uint64_t)d->HB * d->es > DEC_SLAB_BYTES) d->HB = (uint32_t)(DEC_SLAB_BYTES / d->es);
    uint64_t ring = cfg->ring_bytes ? cfg->ring_bytes : DEC_RING_DEFAULT;
    d->R = (uint32_t)(ring / DEC_SLAB_BYTES);
    if (d->R > DEC_RING_MAX) d->R = DEC_RING_MAX;
    if (d->R < 3) d->R = 3;
    const uint64_t slab_elems = DEC_SLAB_BYTES / d->es;
    for (uint32_t i = 0; i < d->R; i++, d->nring++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "mlp_w_ring", cfg->dtype, P, slab_elems, &d->ring[i], err) != 0) goto fail;
    for (uint32_t i = 0; i < banks; i++, d->npsum++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "mlp_acc", NX_DT_FP32, g->partitions, bank_elems, &d->psum[i], err) != 0)
            goto fail;
    for (uint32_t i = 0; i < 2; i++, d->ntmp++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "mlp_act", NX_DT_FP32, d->TI, (uint64_t)d->G * cfg->T, &d->tmp[i], err) != 0)
            goto fail;
    for (uint32_t i = 0; i < DEC_STAGE; i++, d->nstage++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "mlp_out", cfg->dtype, d->nsub > 1 ? d->TI : cfg->T, bank_elems, &d->stage[i],
                          err) != 0)
            goto fail;
    *out = d;
    return 0;
fail:
    nx_mlp_dec_free(d, NULL);
    return -1;
}

int nx_mlp_dec_submit(nx_mlp_dec *d, const nx_mlp_dec_job *job, nx_error *err) {
    if (job->K < 1 || job->n < 1) return nx_fail(err, "mlp decode: a job with K = %llu, n = %llu", (unsigned long long)job->K, (unsigned long long)job->n);
    if (job->w0.ld > INT32_MAX || job->w1.ld > INT32_MAX || job->out_ld > INT32_MAX ||
        (uint64_t)d->P * job->w0.ld > INT32_MAX || (uint64_t)d->P * job->w1.ld > INT32_MAX)
        return nx_fail(err, "mlp decode: a row pitch of %llu elements exceeds the 32-bit strides", (unsigned long long)job->w0.ld);
    if (job->kind == NX_MLP_DEC_DOWN && job->out_acc && d->c.T > d->TI)
        return nx_fail(err, "mlp decode: out_acc takes up to %u tokens, the piece holds %u", d->TI, d->c.T);
    if (job->kind == NX_MLP_DEC_DOWN && job->out_acc && job->scale && job->scale->partition_count < d->c.T)
        return nx_fail(err, "mlp decode: the scale column has %u partitions, T = %u", job->scale->partition_count, d->c.T);
    if (d->qtail - d->qhead >= DEC_JOBS - 1 && dec_compute(d, err) != 0) return -1;
    dec_job *q = &d->q[d->qtail % DEC_JOBS];
    memset(q, 0, sizeof *q);
    q->j = *job;
    q->T = job->T ? job->T : d->c.T;
    if (q->T > d->c.T) return nx_fail(err, "mlp decode: a job of %u tokens, the piece holds %u", q->T, d->c.T);
    q->nk = nx_cdiv_u64(job->K, d->P);
    q->nfull = job->K / d->P;
    const uint32_t width = job->kind == NX_MLP_DEC_GATE_UP ? d->G * d->TI : d->HB;
    const uint64_t w = job->n < width ? job->n : width;
    q->kc = (uint32_t)(DEC_SLAB_BYTES / (w * d->es));
    if (q->kc < 1) q->kc = 1;
    q->nkb = nx_cdiv_u64(q->nfull, q->kc) + (q->nk > q->nfull);
    if (job->kind == NX_MLP_DEC_GATE_UP) {
        q->ncols = nx_cdiv_u64(job->n, d->TI);
        q->ngroups = nx_cdiv_u64(q->ncols, d->G);
        q->nslabs = q->ngroups * q->nkb * 2;
    } else {
        q->ngroups = nx_cdiv_u64(job->n, d->HB);
        q->nslabs = q->ngroups * q->nkb;
    }
    q->first = d->slabs_known;
    d->slabs_known += q->nslabs;
    d->qtail++;
    if (dec_fill(d, err) != 0) return -1;
    /* the previous job's compute now, its loads running into this one's */
    while (d->qtail - d->qhead > 1)
        if (dec_compute(d, err) != 0) return -1;
    return 0;
}

int nx_mlp_dec_flush(nx_mlp_dec *d, nx_error *err) {
    while (d->qhead < d->qtail)
        if (dec_compute(d, err) != 0) return -1;
    return 0;
}

void nx_mlp_dec_free(nx_mlp_dec *d, nx_error *err) {
    if (!d) return;
    nx_error scratch;
    if (!err) err = &scratch;
    for (uint32_t i = 0; i < d->nstage; i++) nx_kctx_release(d->k, &d->stage[i], err);
    for (uint32_t i = 0; i < d->ntmp; i++) nx_kctx_release(d->k, &d->tmp[i], err);
    for (uint32_t i = 0; i < d->npsum; i++) nx_kctx_release(d->k, &d->psum[i], err);
    for (uint32_t i = 0; i < d->nring; i++) nx_kctx_release(d->k, &d->ring[i], err);
    free(d);
}
