/* The conv composite's bias pass (conv_onnx.h nx_conv_onnx_bias): ONNX
 * Conv's Y = conv(X, W) + B[o], on the NCHW result, rows (n, o) on the
 * partitions and the OH x OW pixels on the free axis, B[o] a per-partition
 * fp32 scalar. With O < partitions a tile holds floor(P / O) whole images'
 * channels, so every tile starts at o = 0 and the scalars are loaded once.
 * Chunks of the free axis rotate over four SBUF buffers (load, add, store
 * overlap), each load split by rows over the first half of the DMA lanes
 * and each store over the second half (one transfer on one engine would
 * move at 1/16 of the core's rate), the add on DVE, POOL and ACT in turn
 * (the same fp32 add and one rounding to the result dtype on each). */
#include <string.h>

#include "conv_onnx.h"
#include "isa/builder.h"

#define NBUF 4

/* Loads B[o0 .. o0 + n) wrapping at O into rows [r, r + n) of tile t. */
static int load_bias(nx_kctx *k, nx_dtype dt, const nx_tile *t, uint32_t r, uint64_t o0, uint64_t n, uint64_t O,
                     uint64_t b, nx_error *err) {
    uint64_t es = nx_dtype_size(dt);
    while (n > 0) {
        uint64_t run = O - o0 < n ? O - o0 : n;
        nx_operand src = nx_ap_hbm_rows(dt, b + o0 * es, (uint32_t)run, 1, 1);
        nx_operand dst = nx_tile_view(t, dt, r, (uint32_t)run, 0, 1, (const int32_t[]){1}, (const uint32_t[]){1});
        if (nx_kctx_dma(k, &dst, &src, err) != 0) return -1;
        r += (uint32_t)run;
        n -= run;
        o0 = 0;
    }
    return 0;
}

static int add_bias(nx_kctx *k, int turn, const nx_operand *dst, const nx_operand *in, const nx_operand *bias,
                    nx_error *err) {
    if (turn % 3 == 2) {
        nx_insn a = nx_insn_make(NX_OP_ACTIVATION);
        a.func = NX_ACT_IDENTITY;
        a.op[0] = *dst;
        a.op[1] = *in;
        a.op[2] = nx_imm(1.0, NX_DT_FP32);
        a.op[3] = *bias;
        return nx_kctx_emit(k, NX_ENG_ACT, &a, err);
    }
    return nx_kctx_tensor_scalar(k, turn % 3 ? NX_ENG_POOL : NX_ENG_DVE, dst, in, NX_ALU_ADD, bias, NX_ALU_BYPASS,
                                 NULL, err);
}

int nx_conv_onnx_bias(nx_kctx *k, nx_dtype dt, uint64_t N, uint64_t O, uint64_t S, uint64_t src, uint64_t b,
                      uint64_t y, nx_error *err) {
    const nx_geometry *geo = nx_kctx_geometry(k);
    uint64_t P = geo->partitions, es = nx_dtype_size(dt), R = N * O;
    uint64_t rows = O < P ? (P / O) * O : P;
    if (rows > R) rows = R;
    if (S > INT32_MAX) return nx_fail(err, "conv: rows of %llu pixels exceed 32-bit access-pattern pitches",
                                      (unsigned long long)S);
    uint32_t half = nx_kctx_lanes(k) / 2 ? nx_kctx_lanes(k) / 2 : 1;
    /* free chunk: the buffers in at most half of a partition */
    uint64_t chunk = geo->sbuf_partition_bytes / 2 / NBUF / es;
    if (chunk > 8192) chunk = 8192;
    if (chunk > S) chunk = S;
    nx_tile braw, bias, buf[NBUF];
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "conv.bias_raw", dt, (uint32_t)rows, 1, &braw, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "conv.bias", NX_DT_FP32, (uint32_t)rows, 1, &bias, err) != 0)
        return -1;
    for (int i = 0; i < NBUF; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "conv.bias_io", dt, (uint32_t)rows, chunk, &buf[i], err) != 0) return -1;
    int turn = 0;
    for (uint64_t r0 = 0; r0 < R; r0 += rows) {
        uint32_t np = (uint32_t)(R - r0 < rows ? R - r0 : rows);
        if (r0 == 0 || O >= P) {
            if (load_bias(k, dt, &braw, 0, r0 % O, O < P ? rows : np, O, b, err) != 0) return -1;
            nx_operand s = nx_tile_ap(&braw), d = nx_tile_ap(&bias);
            if (nx_kctx_tensor_copy(k, NX_ENG_DVE, &d, &s, err) != 0) return -1;
        }
        nx_operand bs = nx_operand_rows((const nx_operand[]){nx_tile_ap(&bias)}, 0, np);
        for (uint64_t f0 = 0; f0 < S; f0 += chunk, turn++) {
            uint32_t nf = (uint32_t)(S - f0 < chunk ? S - f0 : chunk);
            const nx_tile *t = &buf[turn % NBUF];
            nx_operand v = nx_tile_view(t, dt, 0, np, 0, 1, (const int32_t[]){1}, (const uint32_t[]){nf});
            nx_operand in = nx_ap_hbm_rows(dt, src + (r0 * S + f0) * es, np, (int32_t)S, nf);
            nx_operand out = nx_ap_hbm_rows(dt, y + (r0 * S + f0) * es, np, (int32_t)S, nf);
            uint32_t pieces = np < half ? np : half;
            if (nx_kctx_dma_split(k, 0, pieces, &v, &in, err) != 0 || add_bias(k, turn, &v, &v, &bs, err) != 0 ||
                nx_kctx_dma_split(k, half, pieces, &out, &v, err) != 0)
                return -1;
        }
    }
    for (int i = 0; i < NBUF; i++)
        if (nx_kctx_release(k, &buf[i], err) != 0) return -1;
    if (nx_kctx_release(k, &bias, err) != 0 || nx_kctx_release(k, &braw, err) != 0) return -1;
    return 0;
}
