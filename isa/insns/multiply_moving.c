/* multiply_moving dst=PSUM[M, N] moving=SBUF[K, N] [acc]:
 *   partial[m][n] = sum_{k=0..K-1} stationary[k][m] * moving[k][n]
 * in fp32, each product rounded, summed sequentially in k order starting
 * from the k = 0 product (no FMA: the isa library builds with
 * -ffp-contract=off); then dst = acc ? dst + partial : partial (fp32).
 * A NaN result is stored as the canonical quiet NaN 0x7fc00000, as the RTL
 * array (sim/rtl) produces, so the two datapaths agree bit for bit.
 *
 * This is the simulator's GEMM hot path. The moving tile is converted once
 * to a padded fp32 buffer B[K][ldb], the stationary tile is packed into
 * MR-column blocks A[K][MR], and the outputs are computed in MR x NR tiles
 * whose accumulators stay in registers across the whole k loop; a tile is
 * then added to (acc) or stored over dst directly when dst rows are
 * contiguous, else through a staging buffer. Every tile kernel does, per
 * output element, exactly: c = a0*b0; c = c + ak*bk for k = 1..K-1
 * (vectorising over n never reorders one element's sum), so all kernels give
 * bit-identical results. */
#include "insn_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MM_HAVE_AVX512 1
#endif

#include "../pe_input.h"

enum { MR = 8, NR = 32 };

int nx_validate_MULTIPLY_MOVING(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                                nx_error *err) {
    (void)engine;
    const nx_operand *dst = &insn->op[0], *mv = &insn->op[1];
    if (!nx_dtype_is_float((nx_dtype)mv->dtype))
        return nx_fail(err, "moving dtype %s is not a PE input type (fp32, bf16, fp16, fp8_e4m3, fp8_e5m2)",
                       nx_dtype_name((nx_dtype)mv->dtype));
    if (mv->partition_count > geo->pe_rows)
        return nx_fail(err, "moving has %u partitions (K), more than the PE's %u rows",
                       (unsigned)mv->partition_count, geo->pe_rows);
    uint64_t n = nx_operand_free_elems(mv);
    if (n > geo->pe_moving_free_max)
        return nx_fail(err, "moving has %llu elements per partition (N), more than the limit %u",
                       (unsigned long long)n, geo->pe_moving_free_max);
    if (dst->dtype != NX_DT_FP32)
        return nx_fail(err, "dst dtype %s must be fp32 (PSUM accumulates in fp32)",
                       nx_dtype_name((nx_dtype)dst->dtype));
    if (nx_operand_free_elems(dst) != n)
        return nx_fail(err, "dst has %llu elements per partition but moving has %llu (N)",
                       (unsigned long long)nx_operand_free_elems(dst), (unsigned long long)n);
    if (dst->partition_count > geo->pe_cols)
        return nx_fail(err, "dst has %u partitions (M), more than the PE's %u columns",
                       (unsigned)dst->partition_count, geo->pe_cols);
    uint64_t lo, hi;
    nx_operand_span(dst, &lo, &hi); /* bytes within each partition */
    if (geo->psum_bank_bytes == 0 || lo / geo->psum_bank_bytes != (hi - 1) / geo->psum_bank_bytes)
        return nx_fail(err, "dst bytes [%llu, %llu) of each partition straddle PSUM banks of %llu bytes",
                       (unsigned long long)lo, (unsigned long long)hi,
                       (unsigned long long)geo->psum_bank_bytes);
    return 0;
}

/* Stationary columns [m0, m0 + MR) of every k -> ap[m0 / MR][k][MR],
 * zero-padded past M. */
static void pack_stationary(const float *st, uint32_t ld, uint32_t K, uint32_t M, float *ap) {
    for (uint32_t m0 = 0; m0 < M; m0 += MR) {
        uint32_t w = M - m0 < MR ? M - m0 : MR;
        for (uint32_t k = 0; k < K; k++) {
            float *o = ap + (uint64_t)k * MR;
            memcpy(o, st + (uint64_t)k * ld + m0, w * sizeof(float));
            for (uint32_t i = w; i < MR; i++) o[i] = 0.0f;
        }
        ap += (uint64_t)K * MR;
    }
}

/* Output tiles: row i of a tile starts at c + i * ldc (bytes) and holds fp32
 * values in host order; acc: c = c + partial, else c = partial. */

/* Any tile up to MR x NR, plain C: the portable kernel and the edge tiles. */
static void tile_generic(uint32_t K, const float *a, const float *b, uint64_t ldb, uint8_t *c,
                         int64_t ldc, int acc, uint32_t rows, uint32_t cols) {
    float part[MR][NR];
    for (uint32_t i = 0; i < rows; i++)
        for (uint32_t j = 0; j < cols; j++) part[i][j] = a[i] * b[j];
    for (uint32_t k = 1; k < K; k++) {
        const float *ak = a + (uint64_t)k * MR, *bk = b + (uint64_t)k * ldb;
        for (uint32_t i = 0; i < rows; i++) {
            float ai = ak[i];
            for (uint32_t j = 0; j < cols; j++) part[i][j] = part[i][j] + ai * bk[j];
        }
    }
    for (uint32_t i = 0; i < rows; i++) {
        uint8_t *row = c + (int64_t)i * ldc;
        if (acc) {
            float prior[NR];
            memcpy(prior, row, cols * sizeof(float));
            for (uint32_t j = 0; j < cols; j++) part[i][j] = prior[j] + part[i][j];
        }
        memcpy(row, part[i], cols * sizeof(float));
    }
}

#ifdef MM_HAVE_AVX512
/* A full MR x NR tile with 16 zmm accumulators (separate multiply and add:
 * the same two roundings per step as tile_generic). */
__attribute__((target("avx512f"))) static void tile_avx512(uint32_t K, const float *a, const float *b,
                                                            uint64_t ldb, uint8_t *c, int64_t ldc,
                                                            int acc) {
    __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#define MM_ROW_INIT(i)                                        \
    __m512 c##i##0 = _mm512_mul_ps(_mm512_set1_ps(a[i]), b0); \
    __m512 c##i##1 = _mm512_mul_ps(_mm512_set1_ps(a[i]), b1);
    MM_ROW_INIT(0) MM_ROW_INIT(1) MM_ROW_INIT(2) MM_ROW_INIT(3)
    MM_ROW_INIT(4) MM_ROW_INIT(5) MM_ROW_INIT(6) MM_ROW_INIT(7)
#undef MM_ROW_INIT
    for (uint32_t k = 1; k < K; k++) {
        a += MR;
        b += ldb;
        b0 = _mm512_loadu_ps(b);
        b1 = _mm512_loadu_ps(b + 16);
#define MM_ROW_STEP(i)                                           \
    {                                                            \
        __m512 ai = _mm512_set1_ps(a[i]);                        \
        c##i##0 = _mm512_add_ps(c##i##0, _mm512_mul_ps(ai, b0)); \
        c##i##1 = _mm512_add_ps(c##i##1, _mm512_mul_ps(ai, b1)); \
    }
        MM_ROW_STEP(0) MM_ROW_STEP(1) MM_ROW_STEP(2) MM_ROW_STEP(3)
        MM_ROW_STEP(4) MM_ROW_STEP(5) MM_ROW_STEP(6) MM_ROW_STEP(7)
#undef MM_ROW_STEP
    }
#define MM_ROW_STORE(i)                                                     \
    {                                                                       \
        float *row = (float *)(void *)(c + (int64_t)(i) * ldc);             \
        if (acc) {                                                          \
            c##i##0 = _mm512_add_ps(_mm512_loadu_ps(row), c##i##0);         \
            c##i##1 = _mm512_add_ps(_mm512_loadu_ps(row + 16), c##i##1);    \
        }                                                                   \
        _mm512_storeu_ps(row, c##i##0);                                     \
        _mm512_storeu_ps(row + 16, c##i##1);                                \
    }
    MM_ROW_STORE(0) MM_ROW_STORE(1) MM_ROW_STORE(2) MM_ROW_STORE(3)
    MM_ROW_STORE(4) MM_ROW_STORE(5) MM_ROW_STORE(6) MM_ROW_STORE(7)
#undef MM_ROW_STORE
}

static int have_avx512(void) { return __builtin_cpu_supports("avx512f"); }
#endif

/* All M x N outputs, tile by tile: n panels outer so a K x NR panel of B
 * stays in L1 while every stationary block passes over it. */
static void compute_tiles(uint32_t K, uint32_t M, uint32_t N, const float *ap, const float *bp,
                          uint64_t ldb, uint8_t *c, int64_t ldc, int acc) {
#ifdef MM_HAVE_AVX512
    int fast = have_avx512();
#endif
    for (uint32_t n0 = 0; n0 < N; n0 += NR) {
        uint32_t cols = N - n0 < NR ? N - n0 : NR;
        for (uint32_t m0 = 0; m0 < M; m0 += MR) {
            uint32_t rows = M - m0 < MR ? M - m0 : MR;
            const float *a = ap + (uint64_t)(m0 / MR) * K * MR;
            uint8_t *ct = c + (int64_t)m0 * ldc + (int64_t)n0 * (int64_t)sizeof(float);
#ifdef MM_HAVE_AVX512
            if (fast && rows == MR && cols == NR) {
                tile_avx512(K, a, bp + n0, ldb, ct, ldc, acc);
                continue;
            }
#endif
            tile_generic(K, a, bp + n0, ldb, ct, ldc, acc, rows, cols);
        }
    }
}

/* 1 if every partition's elements are one contiguous run in order. */
static int row_is_contiguous(const nx_view *v) {
    int64_t expect = (int64_t)nx_dtype_size((nx_dtype)v->dtype);
    for (uint32_t k = v->ndims; k-- > 0;) {
        if (v->count[k] == 1) continue;
        if (v->stride_bytes[k] != expect) return 0;
        expect *= v->count[k];
    }
    return 1;
}

/* Copies dst row m (fp32, any AP) to or from c (host-order floats),
 * element order row-major. */
static void dst_row_xfer(const nx_view *dst, uint32_t m, float *c, int to_dst) {
    uint8_t *row = dst->base + (int64_t)m * dst->partition_step;
    int64_t step[NX_MAX_FREE_DIMS];
    uint32_t count[NX_MAX_FREE_DIMS];
    uint32_t pad = NX_MAX_FREE_DIMS - dst->ndims;
    for (uint32_t k = 0; k < NX_MAX_FREE_DIMS; k++) {
        step[k] = k < pad ? 0 : dst->stride_bytes[k - pad];
        count[k] = k < pad ? 1 : dst->count[k - pad];
    }
    uint64_t e = 0;
    for (uint32_t i0 = 0; i0 < count[0]; i0++)
        for (uint32_t i1 = 0; i1 < count[1]; i1++)
            for (uint32_t i2 = 0; i2 < count[2]; i2++)
                for (uint32_t i3 = 0; i3 < count[3]; i3++, e++) {
                    uint8_t *p = row + (int64_t)i0 * step[0] + (int64_t)i1 * step[1] +
                                 (int64_t)i2 * step[2] + (int64_t)i3 * step[3];
                    if (to_dst) nx_dtype_store(NX_DT_FP32, p, c[e]);
                    else c[e] = (float)nx_dtype_load(NX_DT_FP32, p);
                }
}

/* x86 keeps an input NaN's payload, or gives 0xffc00000 for an invalid
 * operation; the PE's result is always the canonical quiet NaN. */
static void canonical_nans(float *row, uint64_t n) {
    static const uint32_t quiet_nan = 0x7fc00000u;
    for (uint64_t i = 0; i < n; i++)
        if (row[i] != row[i]) memcpy(&row[i], &quiet_nan, sizeof quiet_nan);
}

int nx_exec_MULTIPLY_MOVING(const nx_exec_ctx *ctx, const nx_insn *insn) {
    const nx_core_state *cs = &ctx->state->core[ctx->core];
    const nx_operand *dop = &insn->op[0], *mop = &insn->op[1];
    if (!cs->stationary_valid)
        return nx_fail(ctx->err, "no stationary tile is loaded (load_stationary must come first)");
    if (mop->partition_count != cs->stationary_k)
        return nx_fail(ctx->err, "moving has K = %u partitions but the stationary tile has K = %u",
                       (unsigned)mop->partition_count, cs->stationary_k);
    if (dop->partition_count != cs->stationary_m)
        return nx_fail(ctx->err, "dst has %u partitions but the stationary tile has M = %u columns",
                       (unsigned)dop->partition_count, cs->stationary_m);

    nx_view dst, mv;
    nx_view_init(&dst, ctx, dop);
    nx_view_init(&mv, ctx, mop);
    uint32_t K = mv.partitions, M = dst.partitions, N = (uint32_t)mv.free_elems;
    int acc = (insn->flags & NX_FLAG_ACCUMULATE) != 0;
    /* PSUM rows hold host-order floats the kernels can update in place when
     * each row is one contiguous run on a little-endian host */
    int in_place = row_is_contiguous(&dst) && dst.partition_step % (int64_t)sizeof(float) == 0;
#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
    in_place = 0;
#endif
    uint32_t npad = (N + NR - 1) / NR * NR;
    uint32_t mpad = (M + MR - 1) / MR * MR;
    /* +16: keeps B rows off a power-of-two stride (L1 set conflicts) */
    uint64_t ldb = (uint64_t)npad + 16;
    uint64_t nb = (uint64_t)K * ldb, na = (uint64_t)K * mpad, nc = in_place ? 0 : (uint64_t)M * N;
    uint64_t bytes = (nb + na + nc) * sizeof(float);
    float *buf = malloc(bytes);
    if (buf == NULL)
        return nx_fail(ctx->err, "out of memory for %llu bytes of PE scratch", (unsigned long long)bytes);
    float *bp = buf, *ap = buf + nb, *cbuf = ap + na;

    /* all of moving is read (into bp) before dst is written */
    nx_pe_rows_to_f32(&mv, K, bp, ldb);
    for (uint32_t k = 0; k < K; k++)
        memset(bp + (uint64_t)k * ldb + N, 0, (ldb - N) * sizeof(float));
    pack_stationary(cs->stationary, ctx->state->geo.pe_cols, K, M, ap);
    if (in_place) {
        compute_tiles(K, M, N, ap, bp, ldb, dst.base, dst.partition_step, acc);
        for (uint32_t m = 0; m < M; m++)
            canonical_nans((float *)(void *)(dst.base + (int64_t)m * dst.partition_step), N);
    } else {
        if (acc)
            for (uint32_t m = 0; m < M; m++) dst_row_xfer(&dst, m, cbuf + (uint64_t)m * N, 0);
        compute_tiles(K, M, N, ap, bp, ldb, (uint8_t *)cbuf, (int64_t)N * (int64_t)sizeof(float), acc);
        canonical_nans(cbuf, (uint64_t)M * N);
        for (uint32_t m = 0; m < M; m++) dst_row_xfer(&dst, m, cbuf + (uint64_t)m * N, 1);
    }
    free(buf);
    return 0;
}
