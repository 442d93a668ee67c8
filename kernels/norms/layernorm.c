/* layernorm: ONNX LayerNormalization (opset 17) as the NKI layernorm
 * tutorial computes it (aws-neuron-sdk general/nki/tutorials/layernorm.rst,
 * the bn_stats / bn_aggr version: rows on the partitions, statistics on
 * VectorE over chunks of BN_STATS_FMAX = 512, then the shift and scale),
 * with Scale and B broadcast to every partition through the PE. Operands
 * and math: kernels/norms/norms.h; plan and figures: docs/parts/norms.md.
 * Past the tutorial: the centred values stay fp32 (one rounding), bf16 X's
 * columns are centred in chunks with a quarter of the + B on VectorE
 * (ln_chunked), and Mean/InvStdDev are stored as rows.
 *
 * Per tile of up to 128 rows, over up to eight buffer sets:
 *   DMA   X rows -> xt
 *   DVE   bn_stats per 512-chunk, bn_aggr -> (mean, var); nm = -mean
 *   ACT   rstd = rsqrt(var + epsilon); ct = xt + nm (fp32, one rounding)
 *   POOL  ct = (ct * rstd) * Scale; [xt = ct + B]   (xt in X's dtype; part
 *         of the + B on DVE, below)
 *   DMA   xt -> Y; (mean, rstd) transposed on the PE into two rows of
 *         X's dtype -> Mean, InvStdDev (contiguous rows, not 128 one-element
 *         transfers)
 * fp32 X does this in place on whole row tiles (every fourth tile's + B on
 * DVE); bf16 X through fp32 column chunks (ln_chunked). */
#include "norms.h"
#include "rows.h"

#define LN_MAX_BUFS 6
#define LN_CHUNK 512

/* With B, GpSimd carries two passes a tile (the scale, + B) and VectorE one
 * (bn_stats): the + B of tiles 0, LN_DVE_EVERY, ... goes to VectorE (not the
 * last tile: its deferred add would lengthen the drain). VectorE runs
 * in order, so that add (and the tile's store) is emitted LN_DVE_LAG tiles
 * later, after those tiles' statistics (else VectorE would wait there for
 * GpSimd's scale of its own tile); loads then run LN_DVE_LAG fewer tiles
 * ahead. Measured (docs/parts/norms.md): [2048,4096] bf16 131.0 -> 129.3 us,
 * fp32 200.0 -> 200.9 us; every third tile, or a lag of 1 or 3, is slower. */
#define LN_DVE_EVERY 4
#define LN_DVE_LAG 2
static int ln_on_dve(uint64_t c, uint64_t ntiles) { return c % LN_DVE_EVERY == 0 && c + 1 < ntiles; }

static uint32_t ln_rows(uint64_t lo, uint64_t hi, uint64_t c, uint64_t P) {
    uint64_t r0 = lo + c * P;
    return (uint32_t)(hi - r0 < P ? hi - r0 : P);
}

/* Tile statistics: bn_stats per 512-chunk and bn_aggr (VectorE) into
 * (mean, var), -mean (VectorE), rstd = rsqrt(var + epsilon) (ScalarE) in
 * var's place. */
static int ln_stats(nx_kctx *k, const nx_layernorm_params *p, const nx_tile *st, const nx_tile *xt, uint32_t n,
                    uint64_t nchunks, nx_operand minus, nx_error *err) {
    const uint64_t H = p->H, m = 6 * nchunks;
    for (uint64_t j = 0; j < nchunks; j++) {
        uint64_t c0 = j * LN_CHUNK, w = H - c0 < LN_CHUNK ? H - c0 : LN_CHUNK;
        nx_insn bs = nx_insn_make(NX_OP_BN_STATS);
        bs.op[0] = nx_rows_view(st, NX_DT_FP32, n, 6 * j, 6);
        bs.op[1] = nx_rows_view(xt, p->dtype, n, c0, w);
        if (nx_kctx_emit(k, NX_ENG_DVE, &bs, err) != 0) return -1;
    }
    nx_operand mv = nx_rows_view(st, NX_DT_FP32, n, m, 2), mean = nx_rows_view(st, NX_DT_FP32, n, m, 1);
    nx_operand rstd = nx_rows_view(st, NX_DT_FP32, n, m + 1, 1), nm = nx_rows_view(st, NX_DT_FP32, n, m + 2, 1);
    nx_insn ag = nx_insn_make(NX_OP_BN_AGGR);
    ag.op[0] = mv;
    ag.op[1] = nx_rows_view(st, NX_DT_FP32, n, 0, m);
    if (nx_kctx_emit(k, NX_ENG_DVE, &ag, err) != 0 ||
        nx_kctx_tensor_scalar(k, NX_ENG_DVE, &nm, &mean, NX_ALU_MULTIPLY, &minus, NX_ALU_BYPASS, NULL, err) != 0)
        return -1;
    return nx_kctx_activation(k, NX_ACT_RSQRT, &rstd, &rstd, 1.0, p->epsilon, err);
}

/* Columns [c0, c0 + w) of the tile: ct = xt - mean (ScalarE, fp32, into
 * ct's columns [cc, cc + w)), then (ct * rstd) * Scale (GpSimd) into ct
 * (with B) or straight into xt in X's dtype. */
static int ln_normalize(nx_kctx *k, const nx_layernorm_params *p, const nx_tile *xt, const nx_tile *ct,
                        const nx_tile *st, const nx_tile *gamma, uint32_t n, uint64_t nchunks, uint64_t c0,
                        uint64_t cc, uint64_t w, nx_operand one, nx_error *err) {
    const uint64_t m = 6 * nchunks;
    nx_operand xv = nx_rows_view(xt, p->dtype, n, c0, w), cv = nx_rows_view(ct, NX_DT_FP32, n, cc, w);
    nx_operand rstd = nx_rows_view(st, NX_DT_FP32, n, m + 1, 1), nm = nx_rows_view(st, NX_DT_FP32, n, m + 2, 1);
    nx_insn sh = nx_insn_make(NX_OP_ACTIVATION);
    sh.op[0] = cv;
    sh.op[1] = xv;
    sh.op[2] = one;
    sh.op[3] = nm;
    nx_operand gv = nx_rows_view(gamma, p->scale_dtype, n, c0, w);
    nx_operand first = p->bias ? cv : xv;
    if (nx_kctx_emit(k, NX_ENG_ACT, &sh, err) != 0) return -1;
    return nx_kctx_scalar_tensor_tensor(k, NX_ENG_POOL, &first, &cv, NX_ALU_MULTIPLY, &rstd, NX_ALU_MULTIPLY, &gv, err);
}

/* Columns [c0, c0 + w) of the tile: xt = ct (columns [cc, cc + w)) + B, on
 * `eng`, rounded once into X's dtype. */
static int ln_add_bias(nx_kctx *k, const nx_layernorm_params *p, nx_engine eng, const nx_tile *xt, const nx_tile *ct,
                       const nx_tile *beta, uint32_t n, uint64_t c0, uint64_t cc, uint64_t w, nx_error *err) {
    nx_operand xv = nx_rows_view(xt, p->dtype, n, c0, w), cv = nx_rows_view(ct, NX_DT_FP32, n, cc, w);
    nx_operand bv = nx_rows_view(beta, p->bias_dtype, n, c0, w);
    return nx_kctx_tensor_tensor(k, eng, NX_ALU_ADD, &xv, &cv, &bv, err);
}

/* The stores of the tile's Y and of (Mean, InvStdDev). */
static int ln_store(nx_rows *r, const nx_layernorm_params *p, const nx_kernel_call *call,
                    const nx_tile *xt, const nx_tile *st, const nx_tile *sp, const nx_tile *so, uint64_t r0,
                    uint32_t n, uint64_t nchunks, nx_error *err) {
    const uint64_t H = p->H, m = 6 * nchunks;
    const nx_dtype dt = p->dtype;
    const nx_tensor_ref *yo = &call->args[call->n_inputs], *mo = yo + 1, *ro = yo + 2;
    nx_operand xv = nx_rows_view(xt, dt, n, 0, H), yd = nx_rows_hbm(dt, yo->hbm_offset, r0, n, H);
    const uint64_t es = nx_dtype_size(dt), cols[2] = {mo->hbm_offset + r0 * es, ro->hbm_offset + r0 * es};
    if (nx_rows_store(r, &yd, &xv, err) != 0) return -1;
    return nx_rows_store_cols(r, st, n, m, 2, sp, so, dt, cols, err);
}

/* [xt = ct + B on `add_on`]; the stores of Y and of (Mean, InvStdDev). */
static int ln_finish(nx_kctx *k, nx_rows *r, const nx_layernorm_params *p, const nx_kernel_call *call,
                     const nx_tile *xt, const nx_tile *ct, const nx_tile *st, const nx_tile *sp, const nx_tile *so,
                     const nx_tile *beta, uint64_t r0, uint32_t n, uint64_t nchunks, nx_engine add_on,
                     nx_error *err) {
    if (p->bias && ln_add_bias(k, p, add_on, xt, ct, beta, n, 0, 0, p->H, err) != 0) return -1;
    return ln_store(r, p, call, xt, st, sp, so, r0, n, nchunks, err);
}

/* Scale (and B) broadcast to every partition (nx_rows_broadcast: the PE). */
static int ln_broadcasts(nx_rows *r, const nx_layernorm_params *p, const nx_kernel_call *call, nx_tile *gamma,
                         nx_tile *beta, nx_error *err) {
    if (nx_rows_broadcast(r, "scale", call->args[1].hbm_offset, p->scale_dtype, p->H, p->scale_dtype, gamma, err) != 0)
        return -1;
    return p->bias ? nx_rows_broadcast(r, "bias", call->args[2].hbm_offset, p->bias_dtype, p->H, p->bias_dtype, beta,
                                       err)
                   : 0;
}

/* bf16 (and fp16) X: the centred fp32 values live in column-chunk tiles, not
 * a full fp32 row tile per buffer set, so a set is X's tile and its
 * statistics and more sets fit ([2048,8192] with B: seven, not three): loads
 * run further ahead. Per tile, columns [0, H - Hd) go in chunks of
 * LN_COL_CHUNK through a ring of LN_CT_RING fp32 tiles: shift (ScalarE),
 * scale (GpSimd), + B (GpSimd); the last Hd = H/4 columns through an fp32
 * tile of their own (one per tile in flight): shift, scale, and the + B on
 * VectorE, emitted LN_COL_LAG tiles later, after those tiles' statistics
 * (VectorE runs in order). Hd balances GpSimd (two passes over H - Hd, one
 * over Hd, a cycle an element) against VectorE (bn_stats over H, a cycle an
 * element, and the + B over Hd: two streamed inputs, two cycles); measured
 * best of H x 8/40 .. 14/40 and chunks of 1024 .. 4096 (docs/parts/norms.md).
 * The same instructions as the row-tile plan, so Y is bit for bit the same.
 * When three sets do not fit beside Hd's tiles, GpSimd does the whole + B
 * (no lag: one set is enough). */
#define LN_COL_CHUNK 2048
#define LN_CT_RING 2
#define LN_COL_LAG 1
#define LN_MAX_SETS 8

typedef struct ln_plan {
    uint64_t hd;    /* columns whose + B VectorE does (0: none) */
    uint64_t lag;   /* tiles VectorE's + B runs behind (0 without hd) */
    uint64_t width; /* columns of a ring chunk */
    uint64_t fixed; /* bytes per partition of Scale, B and the fp32 chunks */
    uint64_t set;   /* bytes per partition of a buffer set */
    uint64_t nbufs; /* buffer sets */
} ln_plan;

static ln_plan ln_plan_for(const nx_layernorm_params *p, uint64_t hd, uint64_t lag, uint64_t sbuf_bytes) {
    const uint64_t H = p->H, nchunks = (H + LN_CHUNK - 1) / LN_CHUNK, hp = H - hd;
    ln_plan pl = {hd, hd ? lag : 0, hp < LN_COL_CHUNK ? hp : LN_COL_CHUNK, 0, 0, 0};
    pl.fixed = nx_rows_tile_bytes(H, p->scale_dtype) + (p->bias ? nx_rows_tile_bytes(H, p->bias_dtype) : 0) +
               LN_CT_RING * nx_rows_tile_bytes(pl.width, NX_DT_FP32) +
               (hd ? (pl.lag + 1) * nx_rows_tile_bytes(hd, NX_DT_FP32) : 0);
    pl.set = nx_rows_tile_bytes(H, p->dtype) + nx_rows_tile_bytes(6 * nchunks + 4, NX_DT_FP32);
    pl.nbufs = pl.fixed < sbuf_bytes ? (sbuf_bytes - pl.fixed) / pl.set : 0;
    if (pl.nbufs > LN_MAX_SETS) pl.nbufs = LN_MAX_SETS;
    return pl;
}

static int ln_chunked(nx_kctx *k, nx_rows *r, const nx_layernorm_params *p, const nx_kernel_call *call,
                      nx_error *err) {
    const nx_tensor_ref *x = &call->args[0];
    const uint64_t H = p->H, nchunks = (H + LN_CHUNK - 1) / LN_CHUNK;
    const nx_dtype dt = p->dtype;
    ln_plan pl = ln_plan_for(p, p->bias && H >= 1024 ? H / 4 / 64 * 64 : 0, LN_COL_LAG, r->sbuf_bytes);
    if (pl.hd && pl.nbufs < pl.lag + 2) pl = ln_plan_for(p, 0, 0, r->sbuf_bytes);
    if (pl.nbufs < 1)
        return nx_fail(err,
                       "operand 0 (%s): %llu elements from axis %u need %llu bytes per partition (Scale%s, the "
                       "centred chunks and one buffer set), SBUF has %llu",
                       x->name, (unsigned long long)H, p->axis, (unsigned long long)(pl.fixed + pl.set),
                       p->bias ? ", B" : "", (unsigned long long)r->sbuf_bytes);
    const uint64_t hd = pl.hd, hp = H - hd, W = pl.width, lag = pl.lag, nbufs = pl.nbufs;
    const nx_dtype vdt = p->bias && nx_dtype_size(p->bias_dtype) > nx_dtype_size(p->scale_dtype) ? p->bias_dtype
                                                                                               : p->scale_dtype;
    const uint64_t temps = nx_rows_tile_bytes(H, vdt) + nx_rows_tile_bytes(r->partitions, vdt);
    /* the broadcasts after the tiles when their temporaries fit (as in
     * nx_layernorm's row-tile plan) */
    const int after = pl.fixed + nbufs * pl.set + temps <= r->sbuf_bytes;
    nx_tile gamma, beta;
    if (!after && ln_broadcasts(r, p, call, &gamma, &beta, err) != 0) return -1;
    nx_tile xt[LN_MAX_SETS], st[LN_MAX_SETS], sp[LN_MAX_SETS], so[LN_MAX_SETS], ring[LN_CT_RING], dv[LN_COL_LAG + 1];
    for (uint64_t i = 0; i < nbufs; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "x_tile", dt, r->partitions, H, &xt[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "row_stats", NX_DT_FP32, r->partitions, 6 * nchunks + 4, &st[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_PSUM, "stats_t", NX_DT_FP32, 2, r->partitions, &sp[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "stats_out", dt, 2, r->partitions, &so[i], err) != 0)
            return -1;
    for (uint64_t i = 0; i < LN_CT_RING; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "centred_chunk", NX_DT_FP32, r->partitions, W, &ring[i], err) != 0) return -1;
    for (uint64_t i = 0; hd && i < lag + 1; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "centred_dve", NX_DT_FP32, r->partitions, hd, &dv[i], err) != 0) return -1;
    if (after && ln_broadcasts(r, p, call, &gamma, &beta, err) != 0) return -1;
    uint64_t lo, hi;
    nx_kctx_rows(k, p->rows, &lo, &hi);
    const uint64_t P = r->partitions, ntiles = (hi - lo + P - 1) / P, ahead = nbufs - 1 - lag;
    const nx_operand one = nx_imm(1.0, NX_DT_FP32), minus = nx_imm(-1.0, NX_DT_FP32);
    uint64_t slot = 0;
    for (uint64_t t = 0; t < ntiles + ahead + lag; t++) {
        if (t < ntiles) {
            uint64_t r0 = lo + t * P;
            nx_operand d = nx_rows_view(&xt[t % nbufs], dt, ln_rows(lo, hi, t, P), 0, H),
                       s = nx_rows_hbm(dt, x->hbm_offset, r0, ln_rows(lo, hi, t, P), H);
            if (nx_rows_load(r, &d, &s, err) != 0) return -1;
        }
        if (t < ahead) continue;
        const uint64_t c = t - ahead;
        if (c < ntiles && ln_stats(k, p, &st[c % nbufs], &xt[c % nbufs], ln_rows(lo, hi, c, P), nchunks, minus,
                                   err) != 0)
            return -1;
        if (hd && c >= lag && c - lag < ntiles) {
            const uint64_t d = c - lag, b = d % nbufs;
            const uint32_t n = ln_rows(lo, hi, d, P);
            if (ln_add_bias(k, p, NX_ENG_DVE, &xt[b], &dv[d % (lag + 1)], &beta, n, hp, 0, hd, err) != 0 ||
                ln_store(r, p, call, &xt[b], &st[b], &sp[b], &so[b], lo + d * P, n, nchunks, err) != 0)
                return -1;
        }
        if (c >= ntiles) continue;
        const uint64_t b = c % nbufs;
        const uint32_t n = ln_rows(lo, hi, c, P);
        if (hd && ln_normalize(k, p, &xt[b], &dv[c % (lag + 1)], &st[b], &gamma, n, nchunks, hp, 0, hd, one, err) != 0)
            return -1;
        for (uint64_t c0 = 0; c0 < hp; c0 += W) {
            const uint64_t w = hp - c0 < W ? hp - c0 : W;
            const nx_tile *ct = &ring[slot++ % LN_CT_RING];
            if (ln_normalize(k, p, &xt[b], ct, &st[b], &gamma, n, nchunks, c0, 0, w, one, err) != 0 ||
                (p->bias && ln_add_bias(k, p, NX_ENG_POOL, &xt[b], ct, &beta, n, c0, 0, w, err) != 0))
                return -1;
        }
        if (!hd && ln_store(r, p, call, &xt[b], &st[b], &sp[b], &so[b], lo + c * P, n, nchunks, err) != 0)
            return -1;
    }
    return 0;
}

int nx_layernorm(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_norm_tensor in[3];
    if (call->n_inputs < 2 || call->n_inputs > 3 || call->nargs != call->n_inputs + 3)
        return nx_fail(err, "layernorm: expects 2 or 3 operands and 3 results, got %u and %u", call->n_inputs,
                       call->nargs - call->n_inputs);
    for (uint32_t i = 0; i < call->n_inputs; i++)
        in[i] = (nx_norm_tensor){call->args[i].name, call->args[i].dtype, call->args[i].ndims, call->args[i].shape};
    nx_layernorm_params p;
    if (nx_layernorm_read(call->attrs, in, call->n_inputs, &p, err) != 0) return -1;
    const nx_tensor_ref *x = &call->args[0];
    const uint64_t H = p.H;
    nx_rows r;
    nx_rows_init(&r, k);
    const nx_geometry *geo = nx_kctx_geometry(k);
    if (H > geo->sbuf_free_elems_max)
        return nx_fail(err, "operand 0 (%s): %llu elements from axis %u beyond the %u an engine streams per partition",
                       x->name, (unsigned long long)H, p.axis, (unsigned)geo->sbuf_free_elems_max);
    if (p.dtype != NX_DT_FP32) return ln_chunked(k, &r, &p, call, err);
    const nx_dtype dt = p.dtype;
    const uint64_t nchunks = (H + LN_CHUNK - 1) / LN_CHUNK;
    uint64_t fixed = nx_rows_tile_bytes(H, p.scale_dtype) + (p.bias ? nx_rows_tile_bytes(H, p.bias_dtype) : 0);
    /* fp32 X: the centred values overwrite x in place (the shift, the scale
     * and + B each read a tile element before writing it), so a buffer set
     * is one fp32 tile ([2048,8192]: 4 sets, not 2) */
    uint64_t set = nx_rows_tile_bytes(H, dt) + nx_rows_tile_bytes(6 * nchunks + 4, NX_DT_FP32);
    if (fixed + set > r.sbuf_bytes || fixed + 2 * nx_rows_tile_bytes(H, NX_DT_FP32) > r.sbuf_bytes)
        return nx_fail(err,
                       "operand 0 (%s): %llu elements from axis %u need %llu bytes per partition (Scale%s and one "
                       "buffer set), SBUF has %llu",
                       x->name, (unsigned long long)H, p.axis, (unsigned long long)(fixed + set), p.bias ? ", B" : "",
                       (unsigned long long)r.sbuf_bytes);
    uint32_t nbufs = (uint32_t)((r.sbuf_bytes - fixed) / set);
    if (nbufs > LN_MAX_BUFS) nbufs = LN_MAX_BUFS;
    /* The broadcasts after the tiles when their temporaries (the vector's
     * row, the ones) fit beside them: released, they leave a hole no tile
     * reuses, so the first loads need not wait for the PE to have read them.
     * Otherwise before (the tiles reuse that room; a longer start). */
    const nx_dtype vdt = p.bias && nx_dtype_size(p.bias_dtype) > nx_dtype_size(p.scale_dtype) ? p.bias_dtype
                                                                                              : p.scale_dtype;
    const uint64_t temps = nx_rows_tile_bytes(H, vdt) + nx_rows_tile_bytes(r.partitions, vdt);
    const int after = fixed + nbufs * set + temps <= r.sbuf_bytes;
    nx_tile gamma, beta;
    if (!after && ln_broadcasts(&r, &p, call, &gamma, &beta, err) != 0) return -1;
    nx_tile xt[LN_MAX_BUFS], ct[LN_MAX_BUFS], st[LN_MAX_BUFS], sp[LN_MAX_BUFS], so[LN_MAX_BUFS];
    for (uint32_t i = 0; i < nbufs; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "x_tile", dt, r.partitions, H, &xt[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "row_stats", NX_DT_FP32, r.partitions, 6 * nchunks + 4, &st[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_PSUM, "stats_t", NX_DT_FP32, 2, r.partitions, &sp[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "stats_out", dt, 2, r.partitions, &so[i], err) != 0)
            return -1;
    for (uint32_t i = 0; i < nbufs; i++) ct[i] = xt[i];
    if (after && ln_broadcasts(&r, &p, call, &gamma, &beta, err) != 0) return -1;
    uint64_t lo, hi;
    nx_kctx_rows(k, p.rows, &lo, &hi);
    const uint64_t P = r.partitions, ntiles = (hi - lo + P - 1) / P;
    const nx_operand one = nx_imm(1.0, NX_DT_FP32), minus = nx_imm(-1.0, NX_DT_FP32);
    /* With B, GpSimd carries two passes a tile (the scale, + B) and VectorE
     * one (bn_stats): every third tile's + B goes to VectorE, so the two
     * engines' work over three tiles is about equal (docs/parts/norms.md).
     * VectorE runs in order, so that add (and the tile's store) is emitted
     * one tile later, after the next tile's statistics: loads then run
     * nbufs - 2 tiles ahead, keeping the deferred tile's buffers. */
    const uint64_t lag = LN_DVE_LAG;
    const int split = p.bias && nbufs >= 2 + lag;
    const uint64_t ahead = split ? nbufs - 1 - lag : nbufs - 1;
    for (uint64_t t = 0; t < ntiles + ahead + (split ? lag : 0); t++) {
        if (t < ntiles) {
            uint64_t r0 = lo + t * P;
            uint32_t n = (uint32_t)(hi - r0 < P ? hi - r0 : P);
            nx_operand d = nx_rows_view(&xt[t % nbufs], dt, n, 0, H), s = nx_rows_hbm(dt, x->hbm_offset, r0, n, H);
            if (nx_rows_load(&r, &d, &s, err) != 0) return -1;
        }
        if (t < ahead) continue;
        const uint64_t c = t - ahead;
        if (c < ntiles && ln_stats(k, &p, &st[c % nbufs], &xt[c % nbufs], ln_rows(lo, hi, c, P), nchunks, minus,
                                   err) != 0)
            return -1;
        if (split && c >= lag && ln_on_dve(c - lag, ntiles) && c - lag < ntiles) {
            const uint64_t d = c - lag;
            const uint32_t b = (uint32_t)(d % nbufs);
            if (ln_finish(k, &r, &p, call, &xt[b], &ct[b], &st[b], &sp[b], &so[b], &beta, lo + d * P,
                          ln_rows(lo, hi, d, P), nchunks, NX_ENG_DVE, err) != 0)
                return -1;
        }
        if (c >= ntiles) continue;
        const uint32_t b = (uint32_t)(c % nbufs), n = ln_rows(lo, hi, c, P);
        if (ln_normalize(k, &p, &xt[b], &ct[b], &st[b], &gamma, n, nchunks, 0, 0, H, one, err) != 0) return -1;
        if (!(split && ln_on_dve(c, ntiles)) && ln_finish(k, &r, &p, call, &xt[b], &ct[b], &st[b], &sp[b], &so[b], &beta,
                                                  lo + c * P, n, nchunks, NX_ENG_POOL, err) != 0)
            return -1;
    }
    return 0;
}
