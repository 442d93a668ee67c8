/* resize_nearest_fixed_dma_kernel: out[b, oy, ox, :] = data[b, sy(oy), sx(ox), :]
 * by the coordinate rules of kernels/resize/resize_rule.h.
 *
 * Follows the public NKI vision kernel of the same name (aws-neuron
 * nki-samples, reference/vision.py): output pixels on partitions in tiles of
 * 128, channels on the free axis, the source row of every pixel computed on
 * chip from an iota (output row and column, times the scale, floored), the
 * rows fetched by an indirect DMA gather and stored back. Past it:
 *  - tiles run over the flattened N*OH*OW output pixels, not per image, so
 *    they stay full across image boundaries (the image of a pixel is computed
 *    on chip too), and any N;
 *  - every coordinate rule: the ONNX coordinate and nearest modes and the
 *    scales attribute, besides floor(x * in/out);
 *  - any C (channel chunks that fit the SBUF stages), any dtype, bit-exact;
 *  - exact index arithmetic in fp32 (below), checked against the host;
 *  - transfers cut into pieces over all DMA engines, gathers several tiles
 *    ahead of the stores, one block of index instructions for many tiles.
 *
 * Index arithmetic (GpSimd; every value an integer held exactly in fp32):
 *   l      = iota: the pixel's position in its chunk of output rows
 *   k      = floor(l / OW): round((l - (OW-1)/2) / OW), where the centred
 *            quotient is within 1/2 - 1/(2 OW) of k and its fp32 error
 *            below 1/(2 OW) for l < 2^23, so rounding gives k exactly;
 *            round(x) = (x + 1.5*2^23) - 1.5*2^23 for |x| < 2^22
 *   ox     = l - k * OW
 *   n_rel  = floor((oy0 + k) / OH), oy = oy0 + k - n_rel * OH (only when the
 *            chunk crosses an image boundary)
 *   s_axis = clamp(nearest(((x * a) + b) / d - e), 0, in - 1); floor(t) =
 *            round(t) - (round(t) > t), the fraction t - floor(t) decides
 *            ceil and the two roundings
 *   row    = n_rel * H * W + sy * W + sx   (int32 offsets of the gather)
 * Chunks of output rows keep l < 2^18 and every row index below 2^24. */
#include <stdlib.h>
#include <string.h>

#include "isa/opcodes.h"
#include "resize_nearest.h"
#include "resize_rule.h"

#define RZ_ROUND 12582912.0       /* 1.5 * 2^23 */
#define RZ_CHUNK_PIXELS (1u << 18) /* pixel positions per chunk (exact division below 2^21) */
#define RZ_ROW_INDEX_MAX (1u << 24) /* gather row indices stay exact in fp32 */
#define RZ_MAX_STAGES 32
#define RZ_BLOCK_TILES 512         /* tiles per block of index instructions */
#define RZ_PIECE_BYTES 98304       /* target bytes per DMA piece */
#define RZ_MAX_PIECES 8

enum { T_L, T_K, T_OX, T_NREL, T_R, T_U, T_V, T_SY, T_SX, T_COUNT };

typedef struct rz_unit {
    uint64_t q0;     /* first output pixel (flat over N*OH*OW) */
    uint32_t rows;   /* pixels in the tile */
    uint32_t col;    /* column of the offsets block */
    uint32_t block;  /* offsets buffer */
    uint64_t c0, cw; /* channel chunk */
    uint64_t img0;   /* image the row indices count from */
    uint64_t bound;  /* rows the gather may name */
    uint32_t stage;
} rz_unit;

typedef struct rz_state {
    nx_kctx *k;
    nx_dtype dt;
    uint64_t es;
    uint64_t n, h, w, c, oh, ow;
    uint64_t in_off, out_off;
    nx_resize_rule rule;
    uint32_t p;                   /* partitions per tile */
    uint64_t cc;                  /* channels per chunk */
    uint32_t stages, lag, tb;
    nx_tile stage[RZ_MAX_STAGES];
    nx_tile t[T_COUNT], offs[2];
    uint32_t lanes, gather_lanes, next_gather, next_store;
    rz_unit pending[RZ_MAX_STAGES];
    uint32_t npending, units;
} rz_state;

static nx_operand imm(double v) { return nx_imm(v, NX_DT_FP32); }

/* [p x cols] of tile t from its start. */
static nx_operand cols_of(const nx_tile *t, uint32_t p, uint32_t cols) {
    int32_t one = 1;
    return nx_tile_view(t, (nx_dtype)t->dtype, 0, p, 0, 1, &one, &cols);
}

static int ts2(rz_state *s, const nx_operand *dst, const nx_operand *in, nx_alu_op o0, double v0,
               nx_alu_op o1, double v1, nx_error *err) {
    nx_operand a = imm(v0), b = imm(v1);
    return nx_kctx_tensor_scalar(s->k, NX_ENG_POOL, dst, in, o0, &a, o1, o1 == NX_ALU_BYPASS ? NULL : &b, err);
}

static int stt(rz_state *s, const nx_operand *dst, const nx_operand *in0, nx_alu_op o0, double v,
               nx_alu_op o1, const nx_operand *in1, nx_error *err) {
    nx_operand a = imm(v);
    return nx_kctx_scalar_tensor_tensor(s->k, NX_ENG_POOL, dst, in0, o0, &a, o1, in1, err);
}

static int tt(rz_state *s, nx_alu_op op, const nx_operand *dst, const nx_operand *a, const nx_operand *b,
              nx_error *err) {
    return nx_kctx_tensor_tensor(s->k, NX_ENG_POOL, op, dst, a, b, err);
}

/* dst = floor(x / div) for integer 0 <= x < 2^23 held in fp32, x + add
 * first (add an integer, so that x + add stays in range). */
static int floor_div(rz_state *s, const nx_operand *dst, const nx_operand *x, double add, uint64_t div,
                     nx_error *err) {
    if (ts2(s, dst, x, NX_ALU_ADD, add - (double)(div - 1) / 2, NX_ALU_DIVIDE, (double)div, err) != 0) return -1;
    return ts2(s, dst, dst, NX_ALU_ADD, RZ_ROUND, NX_ALU_SUBTRACT, RZ_ROUND, err);
}

/* out = the source coordinate of output coordinate (x + off) on axis ax. */
static int axis_src(rz_state *s, const nx_resize_axis *ax, const nx_operand *x, double off,
                    const nx_operand *out, uint32_t cols, nx_error *err) {
    nx_operand r = cols_of(&s->t[T_R], s->p, cols), u = cols_of(&s->t[T_U], s->p, cols);
    nx_operand v = cols_of(&s->t[T_V], s->p, cols);
    const nx_operand *cur = x;
    /* t = ((x * a) + b) / d - e, every step in fp32; identity steps are
     * skipped (x is a non-negative integer: x * 1, + 0, / 1, - 0 are exact) */
    if (off != 0 || ax->a != 1.0f) {
        if (off != 0 ? ts2(s, &r, cur, NX_ALU_ADD, off, NX_ALU_MULTIPLY, ax->a, err)
                     : ts2(s, &r, cur, NX_ALU_MULTIPLY, ax->a, NX_ALU_BYPASS, 0, err))
            return -1;
        cur = &r;
    }
    if (ax->b != 0.0f || ax->d != 1.0f) {
        if (ts2(s, &r, cur, NX_ALU_ADD, ax->b, NX_ALU_DIVIDE, ax->d, err) != 0) return -1;
        cur = &r;
    }
    if (ax->e != 0.0f) {
        if (ts2(s, &r, cur, NX_ALU_SUBTRACT, ax->e, NX_ALU_BYPASS, 0, err) != 0) return -1;
        cur = &r;
    }
    /* u = floor(t) = round(t) - (round(t) > t) */
    if (ts2(s, &u, cur, NX_ALU_ADD, RZ_ROUND, NX_ALU_SUBTRACT, RZ_ROUND, err) != 0) return -1;
    if (tt(s, NX_ALU_IS_GT, &v, &u, cur, err) != 0 || tt(s, NX_ALU_SUBTRACT, &u, &u, &v, err) != 0) return -1;
    if (ax->nearest != NX_NEAREST_FLOOR) {
        /* u += (t - u) > 0 (ceil), > 0.5 (round_prefer_floor), >= 0.5 (round_prefer_ceil) */
        nx_alu_op cmp = ax->nearest == NX_NEAREST_ROUND_PREFER_CEIL ? NX_ALU_IS_GE : NX_ALU_IS_GT;
        double th = ax->nearest == NX_NEAREST_CEIL ? 0.0 : 0.5;
        if (tt(s, NX_ALU_SUBTRACT, &v, cur, &u, err) != 0 || stt(s, &u, &v, cmp, th, NX_ALU_ADD, &u, err) != 0)
            return -1;
    }
    return ts2(s, out, &u, NX_ALU_MAX, 0, NX_ALU_MIN, (double)(ax->in - 1), err);
}

/* Offsets (int32 gather rows) of tiles [t0, t0 + nt) of the chunk that
 * starts at output row g0 (global row = b * OH + oy), into offs[block]. */
static int index_block(rz_state *s, uint64_t g0, uint64_t grows, uint64_t t0, uint32_t nt, uint32_t block,
                       nx_error *err) {
    uint32_t p = s->p;
    nx_operand l = cols_of(&s->t[T_L], p, nt), kq = cols_of(&s->t[T_K], p, nt);
    nx_operand ox = cols_of(&s->t[T_OX], p, nt), nr = cols_of(&s->t[T_NREL], p, nt);
    nx_operand sy = cols_of(&s->t[T_SY], p, nt), sx = cols_of(&s->t[T_SX], p, nt);
    nx_operand off = cols_of(&s->offs[block], p, nt);
    int32_t stride = (int32_t)p;
    nx_operand pat = nx_pattern((int64_t)(t0 * p), 1, p, 1, &stride, &nt);
    if (nx_kctx_iota(s->k, &l, &pat, err) != 0) return -1;
    if (floor_div(s, &kq, &l, 0, s->ow, err) != 0) return -1;
    if (stt(s, &ox, &kq, NX_ALU_MULTIPLY, -(double)s->ow, NX_ALU_ADD, &l, err) != 0) return -1;
    uint64_t oy0 = g0 % s->oh;
    /* pixels past the chunk's end (in its last, partial tile) compute
     * indices nobody gathers */
    int crosses = oy0 + grows > s->oh;
    const nx_operand *oy = &kq;
    if (crosses) {
        if (floor_div(s, &nr, &kq, (double)oy0, s->oh, err) != 0) return -1;
        if (stt(s, &l, &nr, NX_ALU_MULTIPLY, -(double)s->oh, NX_ALU_ADD, &kq, err) != 0) return -1;
        oy = &l; /* oy - oy0 */
    }
    if (axis_src(s, &s->rule.axis[0], oy, (double)oy0, &sy, nt, err) != 0) return -1;
    if (axis_src(s, &s->rule.axis[1], &ox, 0, &sx, nt, err) != 0) return -1;
    if (!crosses) return stt(s, &off, &sy, NX_ALU_MULTIPLY, (double)s->w, NX_ALU_ADD, &sx, err);
    if (stt(s, &sy, &sy, NX_ALU_MULTIPLY, (double)s->w, NX_ALU_ADD, &sx, err) != 0) return -1;
    return stt(s, &off, &nr, NX_ALU_MULTIPLY, (double)(s->h * s->w), NX_ALU_ADD, &sy, err);
}

static uint32_t pieces_of(const rz_state *s, uint32_t rows, uint64_t cw) {
    uint64_t bytes = (uint64_t)rows * cw * s->es;
    uint64_t n = (bytes + RZ_PIECE_BYTES - 1) / RZ_PIECE_BYTES;
    if (n > RZ_MAX_PIECES) n = RZ_MAX_PIECES;
    if (n > rows) n = rows;
    return n ? (uint32_t)n : 1;
}

static int gather(rz_state *s, const rz_unit *u, nx_error *err) {
    int32_t one = 1;
    uint32_t cw = (uint32_t)u->cw, pieces = pieces_of(s, u->rows, u->cw);
    uint32_t base = u->rows / pieces, extra = u->rows % pieces, r0 = 0;
    uint64_t src_off = s->in_off + (u->img0 * s->h * s->w * s->c + u->c0) * s->es;
    for (uint32_t i = 0; i < pieces; i++) {
        uint32_t rows = base + (i < extra);
        nx_insn g = nx_insn_make(NX_OP_DMA_COPY);
        g.op[0] = nx_tile_view(&s->stage[u->stage], s->dt, r0, rows, 0, 1, &one, &cw);
        g.op[1] = nx_ap(NX_OPK_HBM, s->dt, 0, rows, (int32_t)s->c, src_off, 1, &one, &cw);
        g.op[2] = nx_tile_view(&s->offs[u->block], NX_DT_INT32, r0, rows, u->col, 0, NULL, NULL);
        g.iparam[1] = (int32_t)u->bound;
        if (nx_kctx_dma_insn(s->k, s->next_gather, &g, err) != 0) return -1;
        s->next_gather = (s->next_gather + 1) % s->gather_lanes;
        r0 += rows;
    }
    return 0;
}

static int store(rz_state *s, const rz_unit *u, nx_error *err) {
    int32_t one = 1;
    uint32_t cw = (uint32_t)u->cw, pieces = pieces_of(s, u->rows, u->cw);
    uint32_t base = u->rows / pieces, extra = u->rows % pieces, r0 = 0;
    uint32_t store_lanes = s->lanes - s->gather_lanes;
    for (uint32_t i = 0; i < pieces; i++) {
        uint32_t rows = base + (i < extra);
        nx_operand src = nx_tile_view(&s->stage[u->stage], s->dt, r0, rows, 0, 1, &one, &cw);
        nx_operand dst = nx_ap(NX_OPK_HBM, s->dt, 0, rows, (int32_t)s->c,
                               s->out_off + ((u->q0 + r0) * s->c + u->c0) * s->es, 1, &one, &cw);
        uint32_t lane = store_lanes ? s->gather_lanes + s->next_store % store_lanes : 0;
        s->next_store++;
        if (nx_kctx_dma_on(s->k, lane, &dst, &src, err) != 0) return -1;
        r0 += rows;
    }
    return 0;
}

/* Software pipeline. The SP issues in program order and a transfer's wait
 * stalls it, so a unit's store is emitted `lag` units after its gather (by
 * then the gather is likely done) and a stage is gathered into again
 * `stages - lag` units after its store was issued (by then the store is
 * likely done): half the stages each way. */
static int push_unit(rz_state *s, rz_unit *u, nx_error *err) {
    u->stage = s->units++ % s->stages;
    if (gather(s, u, err) != 0) return -1;
    s->pending[s->npending++] = *u;
    if (s->npending > s->lag) {
        if (store(s, &s->pending[0], err) != 0) return -1;
        memmove(s->pending, s->pending + 1, (s->npending - 1) * sizeof s->pending[0]);
        s->npending--;
    }
    return 0;
}

/* The call's tensors and the resize args builder's arguments. */
static int check_call(const nx_kernel_call *call, nx_error *err) {
    uint32_t outs = call->nargs >= call->n_inputs ? call->nargs - call->n_inputs : 0;
    if (call->nargs != 2 || call->n_inputs != 1)
        return nx_fail(err, "resize_nearest_fixed_dma_kernel: expects 1 input and 1 output, got %u input%s and %u output%s",
                       call->n_inputs, call->n_inputs == 1 ? "" : "s", outs, outs == 1 ? "" : "s");
    const nx_tensor_ref *x = &call->args[0], *y = &call->args[1];
    if (x->ndims != 4)
        return nx_fail(err, "operand 0 (%s): ResizeNearest takes a rank-4 [N, H, W, C] tensor, got %u dims", x->name,
                       x->ndims);
    if (y->ndims != 4)
        return nx_fail(err, "operand 1 (%s): the result must be rank 4 [N, OH, OW, C], got %u dims", y->name, y->ndims);
    if (y->dtype != x->dtype)
        return nx_fail(err, "operand 1 (%s): dtype %s differs from operand 0 (%s)'s %s", y->name,
                       nx_dtype_name(y->dtype), x->name, nx_dtype_name(x->dtype));
    if (y->shape[0] != x->shape[0] || y->shape[3] != x->shape[3])
        return nx_fail(err, "operand 1 (%s): shape [%llu,%llu,%llu,%llu] must keep N %llu and C %llu of operand 0 (%s)",
                       y->name, (unsigned long long)y->shape[0], (unsigned long long)y->shape[1],
                       (unsigned long long)y->shape[2], (unsigned long long)y->shape[3],
                       (unsigned long long)x->shape[0], (unsigned long long)x->shape[3], x->name);
    const nx_value *r = nx_attrs_get(call->additional_args, "result");
    if (r && (r->kind != NX_VAL_STRING || strcmp(r->s, y->name) != 0))
        return nx_fail(err, "argument result: must name the result tensor '%s'", y->name);
    const nx_value *as = nx_attrs_get(call->additional_args, "access_shape");
    if (as) {
        int ok = as->kind == NX_VAL_LIST && as->count == 4;
        for (uint32_t i = 0; ok && i < 4; i++)
            ok = as->items[i].kind == NX_VAL_INT && (uint64_t)as->items[i].i == y->shape[i];
        if (!ok)
            return nx_fail(err, "argument access_shape: must be the result's shape [%llu, %llu, %llu, %llu] (a partial "
                           "access is not supported)",
                           (unsigned long long)y->shape[0], (unsigned long long)y->shape[1],
                           (unsigned long long)y->shape[2], (unsigned long long)y->shape[3]);
    }
    return 0;
}

int resize_nearest_fixed_dma_kernel(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    if (check_call(call, err) != 0) return -1;
    const nx_tensor_ref *x = &call->args[0], *y = &call->args[1];
    rz_state s;
    memset(&s, 0, sizeof s);
    if (nx_resize_rule_read(call->additional_args, x->shape, y->shape, &s.rule, err) != 0)
        return nx_fail_prefix(err, "operand 0 (%s)", x->name);
    s.k = k;
    s.dt = x->dtype;
    s.es = nx_dtype_size(x->dtype);
    s.n = x->shape[0];
    s.h = x->shape[1];
    s.w = x->shape[2];
    s.c = x->shape[3];
    s.oh = y->shape[1];
    s.ow = y->shape[2];
    s.in_off = x->hbm_offset;
    s.out_off = y->hbm_offset;
    if (s.h * s.w > RZ_ROW_INDEX_MAX)
        return nx_fail(err, "operand 0 (%s): an image of %llu x %llu pixels exceeds 2^24: the gather's row indices "
                       "would not be exact in fp32",
                       x->name, (unsigned long long)s.h, (unsigned long long)s.w);
    if (s.c > INT32_MAX)
        return nx_fail(err, "operand 0 (%s): C %llu exceeds a 32-bit access-pattern stride", x->name,
                       (unsigned long long)s.c);
    const nx_geometry *geo = nx_kctx_geometry(k);
    s.p = geo->partitions;
    /* SBUF: half of a partition for the stages, at least 4 of them */
    uint64_t budget = geo->sbuf_partition_bytes / 2;
    s.cc = budget / (4 * s.es);
    if (s.cc > s.c) s.cc = s.c;
    if (s.cc > geo->sbuf_free_elems_max) s.cc = geo->sbuf_free_elems_max;
    uint64_t st = budget / (s.cc * s.es);
    s.stages = (uint32_t)(st > RZ_MAX_STAGES ? RZ_MAX_STAGES : st < 2 ? 2 : st);
    s.lag = s.stages / 2;
    uint64_t pixels = s.n * s.oh * s.ow;
    uint64_t tiles_total = (pixels + s.p - 1) / s.p;
    s.tb = (uint32_t)(tiles_total < RZ_BLOCK_TILES ? tiles_total : RZ_BLOCK_TILES);
    s.lanes = nx_kctx_lanes(k);
    s.gather_lanes = s.lanes > 1 ? s.lanes / 2 : 1;

    int rc = -1;
    uint32_t nst = 0, nt = 0, no = 0;
    for (; nst < s.stages; nst++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "rz_rows", s.dt, s.p, s.cc, &s.stage[nst], err) != 0) goto done;
    for (; nt < T_COUNT; nt++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "rz_index", NX_DT_FP32, s.p, s.tb, &s.t[nt], err) != 0) goto done;
    for (; no < 2; no++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "rz_offsets", NX_DT_INT32, s.p, s.tb, &s.offs[no], err) != 0) goto done;

    /* chunks of whole output rows: at most RZ_CHUNK_PIXELS pixel positions
     * and rows of few enough images that every row index stays below 2^24 */
    uint64_t grows_total = s.n * s.oh, rows_cap = RZ_CHUNK_PIXELS / s.ow;
    uint64_t images_cap = RZ_ROW_INDEX_MAX / (s.h * s.w);
    if (rows_cap < 1) rows_cap = 1;
    uint32_t blocks = 0;
    for (uint64_t g0 = 0; g0 < grows_total;) {
        uint64_t n0 = g0 / s.oh;
        uint64_t g1 = g0 + rows_cap;
        if (g1 > (n0 + images_cap) * s.oh) g1 = (n0 + images_cap) * s.oh;
        if (g1 > grows_total) g1 = grows_total;
        uint64_t cpix = (g1 - g0) * s.ow, ctiles = (cpix + s.p - 1) / s.p;
        uint64_t img_span = (g1 - 1) / s.oh - n0 + 1;
        for (uint64_t t0 = 0; t0 < ctiles; t0 += s.tb) {
            uint32_t nb = (uint32_t)(ctiles - t0 < s.tb ? ctiles - t0 : s.tb), block = blocks++ % 2;
            if (index_block(&s, g0, g1 - g0, t0, nb, block, err) != 0) goto done;
            for (uint32_t i = 0; i < nb; i++) {
                uint64_t q = (t0 + i) * s.p;
                for (uint64_t c0 = 0; c0 < s.c; c0 += s.cc) {
                    rz_unit u = {0};
                    u.q0 = g0 * s.ow + q;
                    u.rows = (uint32_t)(cpix - q < s.p ? cpix - q : s.p);
                    u.col = i;
                    u.block = block;
                    u.c0 = c0;
                    u.cw = s.c - c0 < s.cc ? s.c - c0 : s.cc;
                    u.img0 = n0;
                    u.bound = img_span * s.h * s.w;
                    if (push_unit(&s, &u, err) != 0) goto done;
                }
            }
        }
        g0 = g1;
    }
    for (uint32_t i = 0; i < s.npending; i++)
        if (store(&s, &s.pending[i], err) != 0) goto done;
    rc = 0;
done:;
    nx_error rerr;
    while (no > 0) nx_kctx_release(k, &s.offs[--no], &rerr);
    while (nt > 0) nx_kctx_release(k, &s.t[--nt], &rerr);
    while (nst > 0) nx_kctx_release(k, &s.stage[--nst], &rerr);
    return rc;
}
