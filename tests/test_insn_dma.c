/* Tests for the DMA instructions (isa/insns/{dma_copy,dma_transpose}.c).
 *
 * Expected values come from independent address arithmetic written here
 * (element (p, i..) of an AP at offset + size * (partition_stride * p +
 * sum stride * i) for HBM, partition start + p for SBUF), raw byte
 * comparisons for same-dtype copies (bit-exact, NaN payloads included), the
 * dtype.c scalar converters for casts, float loops for accumulation (C float
 * arithmetic under -std=c11 is IEEE single precision), or literals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "isa/dtype.h"
#include "support.h"

#define HBM 65536

/* ---- helpers ---- */

static nx_operand hbm_rows(nx_dtype dt, uint64_t off, uint32_t rows, int32_t pitch, uint32_t cols) {
    return nx_ap_hbm_rows(dt, off, rows, pitch, cols);
}

static nx_insn dma(nx_operand dst, nx_operand src) {
    nx_insn insn = nx_insn_make(NX_OP_DMA_COPY);
    insn.op[0] = dst;
    insn.op[1] = src;
    return insn;
}

static nx_insn dma_indirect(nx_operand dst, nx_operand src, nx_operand offsets, int32_t bound,
                            uint16_t flags) {
    nx_insn insn = dma(dst, src);
    insn.op[2] = offsets;
    insn.iparam[1] = bound;
    insn.flags = flags;
    return insn;
}

static void put_i32(nx_state *st, uint32_t partition, uint64_t off, int64_t v) {
    double d = (double)v;
    test_sbuf_put(st, 0, NX_DT_INT32, partition, off, 1, &d);
}

static void put_u32(nx_state *st, uint32_t partition, uint64_t off, int64_t v) {
    double d = (double)v;
    test_sbuf_put(st, 0, NX_DT_UINT32, partition, off, 1, &d);
}

static float get_f32(const uint8_t *p) {
    float f;
    memcpy(&f, p, sizeof f);
    return f;
}

static void set_f32(uint8_t *p, float f) { memcpy(p, &f, sizeof f); }

/* ---- plain copies ---- */

/* Raw random bytes (NaNs with payloads included) move bit-exactly between
 * every pair of spaces. */
static void test_dma_every_space_pair(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, HBM, 0);
    test_rng r = {101};
    const uint32_t P = 6, F = 10;
    /* source rows: HBM rows at 0 (pitch 12 elements), SBUF partitions 0..5 */
    test_rng_bytes(&r, st.hbm, 4096);
    for (uint32_t p = 0; p < P; p++) test_rng_bytes(&r, nx_sbuf_at(&st, 0, p, 0), 64);
    uint8_t hsrc[6][40], ssrc[6][40];
    for (uint32_t p = 0; p < P; p++) {
        memcpy(hsrc[p], st.hbm + 48 * p, 40);
        memcpy(ssrc[p], nx_sbuf_at(&st, 0, p, 0), 40);
    }
    /* HBM -> SBUF (partitions 20..25 at byte 256) */
    nx_insn insn = dma(test_sb(NX_DT_FP32, 20, P, 256, F), hbm_rows(NX_DT_FP32, 0, P, 12, F));
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t p = 0; p < P; p++) assert_memory_equal(nx_sbuf_at(&st, 0, 20 + p, 256), hsrc[p], 40);
    /* SBUF -> HBM (rows at 8192, pitch 10: packed) */
    insn = dma(hbm_rows(NX_DT_FP32, 8192, P, 10, F), test_sb(NX_DT_FP32, 0, P, 0, F));
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t p = 0; p < P; p++) assert_memory_equal(st.hbm + 8192 + 40 * p, ssrc[p], 40);
    /* SBUF -> SBUF (partitions 0..5 -> 100..105) */
    insn = dma(test_sb(NX_DT_FP32, 100, P, 1024, F), test_sb(NX_DT_FP32, 0, P, 0, F));
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t p = 0; p < P; p++) assert_memory_equal(nx_sbuf_at(&st, 0, 100 + p, 1024), ssrc[p], 40);
    /* HBM -> HBM */
    insn = dma(hbm_rows(NX_DT_FP32, 16384, P, 16, F), hbm_rows(NX_DT_FP32, 0, P, 12, F));
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t p = 0; p < P; p++) assert_memory_equal(st.hbm + 16384 + 64 * p, hsrc[p], 40);
    /* the partition after the destination is unchanged */
    uint8_t zero[64] = {0};
    assert_memory_equal(nx_sbuf_at(&st, 0, 106, 1024), zero, 40);
    nx_state_free(&st);
}

/* fp32 -> bf16 (RNE), bf16 -> fp32 (exact), fp32 -> int8 (RNE, saturating). */
static void test_dma_casts(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, HBM, 0);
    test_rng r = {102};
    const uint32_t P = 4, F = 64;
    for (uint32_t i = 0; i < P * F; i++) {
        float v = (float)test_rng_uniform(&r, -1e4, 1e4);
        if (i % 7 == 0) { /* an exact bf16 tie */
            uint32_t bits;
            memcpy(&bits, &v, 4);
            bits = (bits & 0xffff0000u) | 0x8000u;
            memcpy(&v, &bits, 4);
        }
        set_f32(st.hbm + 4 * i, v);
    }
    nx_insn insn = dma(test_sb(NX_DT_BF16, 0, P, 0, F), hbm_rows(NX_DT_FP32, 0, P, F, F));
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t p = 0; p < P; p++)
        for (uint32_t f = 0; f < F; f++) {
            uint16_t got;
            memcpy(&got, nx_sbuf_at(&st, 0, p, 2 * f), 2);
            assert_int_equal(got, nx_f32_to_bf16(get_f32(st.hbm + 4 * (p * F + f))));
        }
    /* and back: bf16 -> fp32 widens exactly */
    insn = dma(hbm_rows(NX_DT_FP32, 4096, P, F, F), test_sb(NX_DT_BF16, 0, P, 0, F));
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t p = 0; p < P; p++)
        for (uint32_t f = 0; f < F; f++) {
            uint16_t b;
            memcpy(&b, nx_sbuf_at(&st, 0, p, 2 * f), 2);
            float got = get_f32(st.hbm + 4096 + 4 * (p * F + f));
            assert_true(memcmp(&got, &(float){nx_bf16_to_f32(b)}, 4) == 0);
        }
    /* fp32 -> int8: hand-computed */
    const float in[6] = {1.5f, 2.5f, -300.0f, 300.0f, NAN, -2.5f};
    const int8_t want[6] = {2, 2, -128, 127, 0, -2};
    for (int i = 0; i < 6; i++) set_f32(st.hbm + 8192 + 4 * i, in[i]);
    insn = dma(test_sb(NX_DT_INT8, 0, 1, 512, 6), hbm_rows(NX_DT_FP32, 8192, 1, 6, 6));
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (int i = 0; i < 6; i++) assert_int_equal((int8_t)*nx_sbuf_at(&st, 0, 0, 512 + i), want[i]);
    nx_state_free(&st);
}

/* Negative partition stride and a reversed, two-dim HBM source into a
 * strided SBUF destination of a different shape. */
static void test_dma_strided_negative_hbm(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, HBM, 0);
    for (uint32_t i = 0; i < 4096; i++) set_f32(st.hbm + 4 * i, (float)i);
    /* src: 3 rows, row p starts at element 1000 - 100 p; element (i0, i1)
     * is 10 * i0 + i1 below that (i0 < 3, i1 < 4) */
    int32_t ss[2] = {-10, -1};
    uint32_t sc[2] = {3, 4};
    nx_operand src = nx_ap(NX_OPK_HBM, NX_DT_FP32, 0, 3, -100, 4 * 1000, 2, ss, sc);
    /* dst: 3 partitions at 4, 12 elements as 2 x 6, every other element */
    int32_t ds[2] = {20, 2};
    uint32_t dc[2] = {2, 6};
    nx_operand dst = nx_ap(NX_OPK_SBUF, NX_DT_FP32, 4, 3, 0, 64, 2, ds, dc);
    nx_insn insn = dma(dst, src);
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t p = 0; p < 3; p++) {
        for (uint32_t e = 0; e < 12; e++) {
            int64_t src_elem = 1000 - 100 * (int64_t)p - 10 * (e / 4) - (e % 4);
            uint64_t dbyte = 64 + 4 * (20 * (e / 6) + 2 * (e % 6));
            float got = get_f32(nx_sbuf_at(&st, 0, 4 + p, dbyte));
            if (got != (float)src_elem)
                fail_msg("row %u element %u: got %g, want %lld", p, e, (double)got, (long long)src_elem);
        }
        /* the gaps of the strided destination are untouched */
        assert_true(get_f32(nx_sbuf_at(&st, 0, 4 + p, 64 + 4)) == 0.0f);
    }
    nx_state_free(&st);
}

/* Broadcast source (stride 0) into a contiguous destination. */
static void test_dma_broadcast_source(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, HBM, 0);
    set_f32(st.hbm + 40, 7.25f);
    set_f32(st.hbm + 44, -1.0f);
    int32_t ss[1] = {0};
    uint32_t sc[1] = {16};
    nx_operand src = nx_ap(NX_OPK_HBM, NX_DT_FP32, 0, 2, 1, 40, 1, ss, sc);
    nx_insn insn = dma(test_sb(NX_DT_FP32, 0, 2, 0, 16), src);
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t e = 0; e < 16; e++) {
        assert_true(get_f32(nx_sbuf_at(&st, 0, 0, 4 * e)) == 7.25f);
        assert_true(get_f32(nx_sbuf_at(&st, 0, 1, 4 * e)) == -1.0f);
    }
    nx_state_free(&st);
}

/* acc: dst = dst + src in fp32, then rounded to dst's dtype. */
static void test_dma_accumulate(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, HBM, 0);
    test_rng r = {103};
    const uint32_t P = 3, F = 50;
    float src[3][50], d32[3][50];
    uint16_t d16[3][50];
    for (uint32_t p = 0; p < P; p++)
        for (uint32_t f = 0; f < F; f++) {
            src[p][f] = (float)test_rng_uniform(&r, -10, 10);
            set_f32(st.hbm + 4 * (p * F + f), src[p][f]);
            d32[p][f] = (float)test_rng_uniform(&r, -10, 10);
            set_f32(nx_sbuf_at(&st, 0, p, 4 * f), d32[p][f]);
            d16[p][f] = nx_f32_to_bf16((float)test_rng_uniform(&r, -10, 10));
            memcpy(nx_sbuf_at(&st, 0, p, 1024 + 2 * f), &d16[p][f], 2);
        }
    nx_insn insn = dma(test_sb(NX_DT_FP32, 0, P, 0, F), hbm_rows(NX_DT_FP32, 0, P, F, F));
    insn.flags = NX_FLAG_ACCUMULATE;
    test_run_ok(&st, NX_ENG_SP, &insn);
    insn = dma(test_sb(NX_DT_BF16, 0, P, 1024, F), hbm_rows(NX_DT_FP32, 0, P, F, F));
    insn.flags = NX_FLAG_ACCUMULATE;
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t p = 0; p < P; p++)
        for (uint32_t f = 0; f < F; f++) {
            float want = d32[p][f] + src[p][f];
            float got = get_f32(nx_sbuf_at(&st, 0, p, 4 * f));
            assert_true(memcmp(&got, &want, 4) == 0);
            float sum = nx_bf16_to_f32(d16[p][f]) + src[p][f];
            uint16_t got16;
            memcpy(&got16, nx_sbuf_at(&st, 0, p, 1024 + 2 * f), 2);
            assert_int_equal(got16, nx_f32_to_bf16(sum));
        }
    nx_state_free(&st);
}

/* acc on integer dtypes goes through fp32: both operands are rounded to
 * fp32 and the sum is rounded once to fp32 before the store converts it, so
 * it is exact only while the operands and the sum fit in 24 bits: int32
 * 2^24 + 1 is 2^24, 2^24 + 2 + 1 rounds to even 2^24 + 4, 2147483647 + 0 is
 * 2^31 saturated to 2147483647, -2^24 - 1 is -2^24; small sums are exact and
 * a uint8 sum saturates at 255. */
static void test_dma_accumulate_integers(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, HBM, 0);
    enum { F = 6 };
    const double d[F] = {16777216.0, 16777218.0, 2147483647.0, -16777217.0, 1000, 16777215.0};
    const double s[F] = {1, 1, 0, 0, -2000, 1};
    const double want[F] = {16777216.0, 16777220.0, 2147483647.0, -16777216.0, -1000,
                            16777216.0};
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 0, F, d);
    test_sbuf_put(&st, 0, NX_DT_INT32, 1, 0, F, s);
    nx_insn insn = dma(test_sb(NX_DT_INT32, 0, 1, 0, F), test_sb(NX_DT_INT32, 1, 1, 0, F));
    insn.flags = NX_FLAG_ACCUMULATE;
    test_run_ok(&st, NX_ENG_SP, &insn);
    double got[F];
    test_sbuf_get(&st, 0, NX_DT_INT32, 0, 0, F, got);
    for (int i = 0; i < F; i++)
        if (got[i] != want[i]) fail_msg("int32 acc %d: got %.0f, want %.0f", i, got[i], want[i]);
    const double u8d[2] = {200, 3}, u8s[2] = {100, 4}, u8w[2] = {255, 7};
    test_sbuf_put(&st, 0, NX_DT_UINT8, 0, 64, 2, u8d);
    test_sbuf_put(&st, 0, NX_DT_UINT8, 1, 64, 2, u8s);
    insn = dma(test_sb(NX_DT_UINT8, 0, 1, 64, 2), test_sb(NX_DT_UINT8, 1, 1, 64, 2));
    insn.flags = NX_FLAG_ACCUMULATE;
    test_run_ok(&st, NX_ENG_SP, &insn);
    test_sbuf_get(&st, 0, NX_DT_UINT8, 0, 64, 2, got);
    for (int i = 0; i < 2; i++)
        if (got[i] != u8w[i]) fail_msg("uint8 acc %d: got %.0f, want %.0f", i, got[i], u8w[i]);
    nx_state_free(&st);
}

/* Overlapping source and destination: the source is read first. */
static void test_dma_overlap(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, HBM, 0);
    for (uint32_t i = 0; i < 64; i++) set_f32(st.hbm + 4 * i, (float)i);
    /* HBM: 4 rows of 16 at 0 -> the same rows shifted by one element */
    nx_insn insn = dma(hbm_rows(NX_DT_FP32, 4, 4, 16, 16), hbm_rows(NX_DT_FP32, 0, 4, 16, 16));
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t i = 0; i < 64; i++) assert_true(get_f32(st.hbm + 4 + 4 * i) == (float)i);
    /* SBUF: partitions 0..3 -> 1..4 (same bytes), a rotation by one row */
    for (uint32_t p = 0; p < 5; p++)
        for (uint32_t f = 0; f < 8; f++) set_f32(nx_sbuf_at(&st, 0, p, 4 * f), (float)(p * 100 + f));
    insn = dma(test_sb(NX_DT_FP32, 1, 4, 0, 8), test_sb(NX_DT_FP32, 0, 4, 0, 8));
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t p = 1; p < 5; p++)
        for (uint32_t f = 0; f < 8; f++)
            assert_true(get_f32(nx_sbuf_at(&st, 0, p, 4 * f)) == (float)((p - 1) * 100 + f));
    nx_state_free(&st);
}

/* A large contiguous copy (many rows, 64 KiB per row) stays exact. */
static void test_dma_large_copy(void **state) {
    (void)state;
    nx_state st;
    nx_geometry geo = test_geometry("trn2");
    uint64_t bytes = 128ull * 65536;
    nx_error err;
    if (nx_state_init(&st, &geo, 1, bytes, 0, &err) != 0) fail_msg("%s", err.msg);
    test_rng r = {104};
    test_rng_bytes(&r, st.hbm, bytes);
    nx_insn insn = dma(test_sb(NX_DT_BF16, 0, 128, 0, 32768), hbm_rows(NX_DT_BF16, 0, 128, 32768, 32768));
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t p = 0; p < 128; p++) assert_memory_equal(nx_sbuf_at(&st, 0, p, 0), st.hbm + 65536ull * p, 65536);
    nx_state_free(&st);
}

/* ---- indirect ---- */

/* Gather rows of an HBM table by int32 offsets. */
static void test_dma_gather_hbm(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, HBM, 0);
    for (uint32_t i = 0; i < 80; i++) set_f32(st.hbm + 4 * i, (float)i); /* table [10][8] */
    const int32_t idx[6] = {3, 0, 9, 3, 7, 1};
    for (uint32_t p = 0; p < 6; p++) put_i32(&st, p, 4000, idx[p]);
    nx_insn insn = dma_indirect(test_sb(NX_DT_FP32, 0, 6, 0, 8), hbm_rows(NX_DT_FP32, 0, 6, 8, 8),
                                test_sb(NX_DT_INT32, 0, 6, 4000, 1), 10, 0);
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t p = 0; p < 6; p++)
        for (uint32_t f = 0; f < 8; f++)
            assert_true(get_f32(nx_sbuf_at(&st, 0, p, 4 * f)) == (float)(idx[p] * 8 + f));
    nx_state_free(&st);
}

/* Gather from an SBUF table: row idx is partition start_partition + idx;
 * uint32 offsets; gather-with-accumulate. */
static void test_dma_gather_sbuf_accumulate(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, HBM, 0);
    for (uint32_t t = 0; t < 20; t++)
        for (uint32_t f = 0; f < 4; f++) set_f32(nx_sbuf_at(&st, 0, 16 + t, 4 * f), (float)(t * 10 + f));
    const uint32_t idx[4] = {19, 0, 5, 5};
    for (uint32_t p = 0; p < 4; p++) put_u32(&st, 64 + p, 0, idx[p]);
    for (uint32_t i = 0; i < 16; i++) set_f32(st.hbm + 4 * i, 0.5f);
    nx_insn insn = dma_indirect(hbm_rows(NX_DT_FP32, 0, 4, 4, 4), test_sb(NX_DT_FP32, 16, 4, 0, 4),
                                test_sb(NX_DT_UINT32, 64, 4, 0, 1), 20, NX_FLAG_ACCUMULATE);
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t p = 0; p < 4; p++)
        for (uint32_t f = 0; f < 4; f++)
            assert_true(get_f32(st.hbm + 4 * (4 * p + f)) == (float)(idx[p] * 10 + f) + 0.5f);
    nx_state_free(&st);
}

/* Out-of-range offsets: an error (nothing written) or, with oob_skip, the
 * row is left untouched. */
static void test_dma_gather_out_of_bounds(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, HBM, 0);
    for (uint32_t i = 0; i < 80; i++) set_f32(st.hbm + 4 * i, (float)i);
    for (uint32_t p = 0; p < 4; p++)
        for (uint32_t f = 0; f < 8; f++) set_f32(nx_sbuf_at(&st, 0, p, 4 * f), -7.0f);
    const int32_t idx[4] = {2, 10, 4, -1};
    for (uint32_t p = 0; p < 4; p++) put_i32(&st, p, 4000, idx[p]);
    nx_operand dst = test_sb(NX_DT_FP32, 0, 4, 0, 8), src = hbm_rows(NX_DT_FP32, 0, 4, 8, 8);
    nx_operand off = test_sb(NX_DT_INT32, 0, 4, 4000, 1);
    nx_insn insn = dma_indirect(dst, src, off, 10, 0);
    test_run_fails(&st, NX_ENG_SP, &insn, "core 0 sp #0 (dma_copy): offsets[1] = 10 is out of bounds [0, 10)");
    for (uint32_t p = 0; p < 4; p++)
        for (uint32_t f = 0; f < 8; f++) assert_true(get_f32(nx_sbuf_at(&st, 0, p, 4 * f)) == -7.0f);
    put_i32(&st, 1, 4000, 9);
    test_run_fails(&st, NX_ENG_SP, &insn, "core 0 sp #0 (dma_copy): offsets[3] = -1 is out of bounds [0, 10)");
    /* skip mode */
    put_i32(&st, 1, 4000, 10);
    insn = dma_indirect(dst, src, off, 10, NX_FLAG_OOB_SKIP);
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t p = 0; p < 4; p++)
        for (uint32_t f = 0; f < 8; f++) {
            float want = (p == 1 || p == 3) ? -7.0f : (float)(idx[p] * 8 + f);
            assert_true(get_f32(nx_sbuf_at(&st, 0, p, 4 * f)) == want);
        }
    /* a bound smaller than the table makes a valid row index out of bounds */
    put_i32(&st, 1, 4000, 5);
    put_i32(&st, 3, 4000, 0);
    insn = dma_indirect(dst, src, off, 5, 0);
    test_run_fails(&st, NX_ENG_SP, &insn, "core 0 sp #0 (dma_copy): offsets[1] = 5 is out of bounds [0, 5)");
    nx_state_free(&st);
}

/* Scatter SBUF rows to HBM rows offsets[p]; skipped rows write nothing. */
static void test_dma_scatter(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, HBM, 0);
    for (uint32_t p = 0; p < 5; p++)
        for (uint32_t f = 0; f < 4; f++) set_f32(nx_sbuf_at(&st, 0, p, 4 * f), (float)(p * 10 + f + 1));
    const int32_t idx[5] = {6, 2, 100, 0, 4};
    for (uint32_t p = 0; p < 5; p++) put_i32(&st, p, 2048, idx[p]);
    /* dst rows of 4 elements, pitch 6 elements (gaps stay zero) */
    nx_insn insn = dma_indirect(hbm_rows(NX_DT_FP32, 256, 5, 6, 4), test_sb(NX_DT_FP32, 0, 5, 0, 4),
                                test_sb(NX_DT_INT32, 0, 5, 2048, 1), 8, NX_FLAG_SCATTER | NX_FLAG_OOB_SKIP);
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t row = 0; row < 8; row++) {
        int from = -1;
        for (uint32_t p = 0; p < 5; p++)
            if (idx[p] == (int32_t)row) from = (int)p;
        for (uint32_t f = 0; f < 6; f++) {
            float want = (from >= 0 && f < 4) ? (float)(from * 10 + f + 1) : 0.0f;
            assert_true(get_f32(st.hbm + 256 + 4 * (6 * row + f)) == want);
        }
    }
    /* error mode names the bad entry */
    insn.flags = NX_FLAG_SCATTER;
    test_run_fails(&st, NX_ENG_SP, &insn, "core 0 sp #0 (dma_copy): offsets[2] = 100 is out of bounds [0, 8)");
    nx_state_free(&st);
}

/* scatter + acc: duplicate indices accumulate in order p = 0..P-1, each
 * step rounded to fp32 (1e8 + 1 - 1e8 = 0, not 1). */
static void test_dma_scatter_add_duplicates(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, HBM, 0);
    const int32_t idx[6] = {2, 0, 2, 2, 1, 0};
    const float val[6] = {1e8f, 3.0f, 1.0f, -1e8f, 0.25f, 0.5f};
    for (uint32_t p = 0; p < 6; p++) {
        put_i32(&st, p, 2048, idx[p]);
        for (uint32_t f = 0; f < 3; f++) set_f32(nx_sbuf_at(&st, 0, p, 4 * f), val[p] * (float)(f + 1));
    }
    float table[3][3];
    for (uint32_t t = 0; t < 3; t++)
        for (uint32_t f = 0; f < 3; f++) {
            table[t][f] = 2.0f;
            set_f32(st.hbm + 4 * (3 * t + f), 2.0f);
        }
    nx_insn insn = dma_indirect(hbm_rows(NX_DT_FP32, 0, 6, 3, 3), test_sb(NX_DT_FP32, 0, 6, 0, 3),
                                test_sb(NX_DT_INT32, 0, 6, 2048, 1), 3, NX_FLAG_SCATTER | NX_FLAG_ACCUMULATE);
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t p = 0; p < 6; p++)
        for (uint32_t f = 0; f < 3; f++) {
            float add = val[p] * (float)(f + 1);
            table[idx[p]][f] = table[idx[p]][f] + add;
        }
    for (uint32_t t = 0; t < 3; t++)
        for (uint32_t f = 0; f < 3; f++) {
            float got = get_f32(st.hbm + 4 * (3 * t + f));
            if (memcmp(&got, &table[t][f], 4) != 0)
                fail_msg("row %u element %u: got %.9g want %.9g", t, f, (double)got, (double)table[t][f]);
        }
    /* row 2 element 0 really depends on the order: ((2 + 1e8) + 1) - 1e8 */
    assert_true(table[2][0] == 0.0f);
    nx_state_free(&st);
}

static void test_dma_indirect_validation(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, HBM, 0);
    nx_operand dst = test_sb(NX_DT_FP32, 0, 4, 0, 8), src = hbm_rows(NX_DT_FP32, 0, 4, 8, 8);
    nx_operand off = test_sb(NX_DT_INT32, 0, 4, 4000, 1);
    nx_insn insn = dma_indirect(dst, src, off, 0, 0);
    test_invalid(&st, NX_ENG_SP, &insn, "bound 0 must be >= 1 with offsets");
    insn = dma(dst, src);
    insn.iparam[1] = 3;
    test_invalid(&st, NX_ENG_SP, &insn, "bound 3 must be 0 without offsets");
    insn = dma(dst, src);
    insn.flags = NX_FLAG_SCATTER;
    test_invalid(&st, NX_ENG_SP, &insn, "scatter needs an offsets operand");
    insn.flags = NX_FLAG_OOB_SKIP;
    test_invalid(&st, NX_ENG_SP, &insn, "oob_skip needs an offsets operand");
    insn = dma_indirect(dst, src, test_sb(NX_DT_FP32, 0, 4, 4000, 1), 4, 0);
    test_invalid(&st, NX_ENG_SP, &insn, "offsets dtype fp32 must be int32 or uint32");
    insn = dma_indirect(dst, src, test_sb(NX_DT_INT32, 0, 4, 4000, 2), 4, 0);
    test_invalid(&st, NX_ENG_SP, &insn, "offsets has 2 elements per partition, must have 1");
    insn = dma_indirect(dst, src, test_sb(NX_DT_INT32, 0, 3, 4000, 1), 4, 0);
    test_invalid(&st, NX_ENG_SP, &insn, "offsets has 3 partitions but the transfer has 4");
    /* HBM rows [0, bound): 8 rows of 8 fp32 fit in 64 KiB; 2048 rows do not */
    insn = dma_indirect(dst, src, off, 512, 0);
    nx_error err;
    assert_int_equal(nx_insn_validate(&insn, NX_ENG_SP, &st.geo, HBM, 0, &err), 0);
    /* the machine's HBM bounds the static check; the program's HBM
     * (64 KiB) is checked when the instruction runs */
    insn = dma_indirect(dst, src, off, 2049, 0);
    for (uint32_t p = 0; p < 4; p++) put_i32(&st, p, 4000, 0);
    test_run_fails(&st, NX_ENG_SP, &insn,
              "core 0 sp #0 (dma_copy): bound 2049: src rows [0, 2049) touch HBM bytes [0, 65568), outside [0, 65536)");
    nx_geometry small = st.geo;
    small.hbm_bytes = HBM;
    assert_int_equal(nx_insn_validate(&insn, NX_ENG_SP, &small, HBM, 0, &err), -1);
    assert_string_equal(err.msg, "bound 2049: src rows [0, 2049) touch HBM bytes [0, 65568), outside [0, 65536)");
    /* a one-row transfer may name any row pitch; the bound span must still
     * be computed without overflow */
    int32_t one = 1;
    uint32_t eight = 8;
    nx_operand far = nx_ap(NX_OPK_HBM, NX_DT_FP32, 0, 1, 2147483647, 0, 1, &one, &eight);
    insn = dma_indirect(test_sb(NX_DT_FP32, 0, 1, 0, 8), far, test_sb(NX_DT_INT32, 0, 1, 4000, 1), 2147483647, 0);
    test_invalid(&st, NX_ENG_SP, &insn, "bound 2147483647: src rows [0, 2147483647) overflow 64-bit byte addresses");
    /* SBUF rows [0, bound) are partitions start .. start + bound - 1 */
    insn = dma_indirect(dst, test_sb(NX_DT_FP32, 100, 4, 0, 8), off, 28, 0);
    assert_int_equal(nx_insn_validate(&insn, NX_ENG_SP, &st.geo, HBM, 0, &err), 0);
    insn = dma_indirect(dst, test_sb(NX_DT_FP32, 100, 4, 0, 8), off, 29, 0);
    test_invalid(&st, NX_ENG_SP, &insn, "bound 29: src rows [0, 29) are partitions 100..128, past the 128 partitions");
    /* with scatter the dst is the indexed operand */
    insn = dma_indirect(test_sb(NX_DT_FP32, 120, 4, 0, 8), src, off, 9, NX_FLAG_SCATTER);
    test_invalid(&st, NX_ENG_SP, &insn, "bound 9: dst rows [0, 9) are partitions 120..128");
    /* the indexed operand's own partition count does not address it: 8 rows
     * scatter into a 3-row table at the very end of HBM (8 rows of its
     * pitch would pass the end; rows [0, 3) do not) */
    nx_operand table = hbm_rows(NX_DT_FP32, HBM - 3 * 16, 8, 4, 4);
    for (uint32_t p = 0; p < 8; p++) {
        put_i32(&st, p, 4000, p < 3 ? (int32_t)(2 - p) : -1);
        for (uint32_t f = 0; f < 4; f++) set_f32(nx_sbuf_at(&st, 0, p, 4 * f), (float)(10 * p + f));
    }
    insn = dma_indirect(table, test_sb(NX_DT_FP32, 0, 8, 0, 4), test_sb(NX_DT_INT32, 0, 8, 4000, 1), 3,
                        NX_FLAG_SCATTER | NX_FLAG_OOB_SKIP);
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t row = 0; row < 3; row++)
        for (uint32_t f = 0; f < 4; f++)
            assert_true(get_f32(st.hbm + HBM - 3 * 16 + 16 * row + 4 * f) == (float)(10 * (2 - row) + f));
    /* a direct transfer of the same pattern is still refused */
    insn = dma(table, test_sb(NX_DT_FP32, 0, 8, 0, 4));
    test_invalid(&st, NX_ENG_SP, &insn, "outside the program's HBM");
    nx_state_free(&st);
}

static void test_dma_copy_validation(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, HBM, 0);
    nx_insn insn = dma(test_sb(NX_DT_FP32, 0, 4, 0, 8), hbm_rows(NX_DT_FP32, 0, 5, 8, 8));
    test_invalid(&st, NX_ENG_SP, &insn, "dst has 4 partitions but src has 5");
    insn = dma(test_sb(NX_DT_FP32, 0, 4, 0, 8), hbm_rows(NX_DT_FP32, 0, 4, 8, 9));
    test_invalid(&st, NX_ENG_SP, &insn, "dst has 8 elements per partition but src has 9");
    insn = dma(test_sb(NX_DT_FP32, 0, 4, 0, 8), hbm_rows(NX_DT_FP32, 0, 4, 8, 8));
    insn.iparam[0] = (int32_t)st.geo.dma_queues;
    char want[64];
    snprintf(want, sizeof want, "queue %u is outside [0, %u)", st.geo.dma_queues, st.geo.dma_queues);
    test_invalid(&st, NX_ENG_SP, &insn, want);
    insn.iparam[0] = -1;
    test_invalid(&st, NX_ENG_SP, &insn, "queue -1 is outside");
    insn.iparam[0] = (int32_t)st.geo.dma_queues - 1;
    nx_error err;
    assert_int_equal(nx_insn_validate(&insn, NX_ENG_SP, &st.geo, HBM, 0, &err), 0);
    /* generic rule: DMA does not reach PSUM */
    insn = dma(nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 4, 0, 8), hbm_rows(NX_DT_FP32, 0, 4, 8, 8));
    test_invalid(&st, NX_ENG_SP, &insn, "dst");
    nx_state_free(&st);
}

/* ---- dma_transpose ---- */

static nx_insn dma_transpose(nx_operand dst, nx_operand src) {
    nx_insn insn = nx_insn_make(NX_OP_DMA_TRANSPOSE);
    insn.op[0] = dst;
    insn.op[1] = src;
    return insn;
}

static void test_dma_transpose_2byte(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, HBM, 0);
    test_rng r = {105};
    /* bf16 HBM [5 x 7] (pitch 9) -> SBUF [7 x 5] */
    test_rng_bytes(&r, st.hbm, 1024);
    nx_insn insn = dma_transpose(test_sb(NX_DT_BF16, 8, 7, 64, 5), hbm_rows(NX_DT_BF16, 0, 5, 9, 7));
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t f = 0; f < 7; f++)
        for (uint32_t p = 0; p < 5; p++)
            assert_memory_equal(nx_sbuf_at(&st, 0, 8 + f, 64 + 2 * p), st.hbm + 2 * (9 * p + f), 2);
    /* int16 SBUF [128 x 3] -> HBM [3 x 128] */
    for (uint32_t p = 0; p < 128; p++) test_rng_bytes(&r, nx_sbuf_at(&st, 0, p, 0), 6);
    insn = dma_transpose(hbm_rows(NX_DT_INT16, 4096, 3, 128, 128), test_sb(NX_DT_INT16, 0, 128, 0, 3));
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t f = 0; f < 3; f++)
        for (uint32_t p = 0; p < 128; p++)
            assert_memory_equal(st.hbm + 4096 + 2 * (128 * f + p), nx_sbuf_at(&st, 0, p, 2 * f), 2);
    /* fp16 in place in SBUF (square) */
    for (uint32_t p = 0; p < 4; p++)
        for (uint32_t f = 0; f < 4; f++) {
            uint16_t v = (uint16_t)(p * 16 + f);
            memcpy(nx_sbuf_at(&st, 0, p, 2048 + 2 * f), &v, 2);
        }
    nx_operand sq = test_sb(NX_DT_FP16, 0, 4, 2048, 4);
    insn = dma_transpose(sq, sq);
    test_run_ok(&st, NX_ENG_SP, &insn);
    for (uint32_t f = 0; f < 4; f++)
        for (uint32_t p = 0; p < 4; p++) {
            uint16_t v;
            memcpy(&v, nx_sbuf_at(&st, 0, f, 2048 + 2 * p), 2);
            assert_int_equal(v, p * 16 + f);
        }
    nx_state_free(&st);
}

static void test_dma_transpose_validation(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, HBM, 0);
    nx_insn insn = dma_transpose(test_sb(NX_DT_FP32, 0, 7, 0, 5), hbm_rows(NX_DT_FP32, 0, 5, 7, 7));
    test_invalid(&st, NX_ENG_SP, &insn, "src dtype fp32 is not a 2-byte type (bf16, fp16, int16, uint16)");
    insn = dma_transpose(test_sb(NX_DT_FP16, 0, 7, 0, 5), hbm_rows(NX_DT_BF16, 0, 5, 7, 7));
    test_invalid(&st, NX_ENG_SP, &insn, "dst dtype fp16 must equal src dtype bf16");
    insn = dma_transpose(test_sb(NX_DT_BF16, 0, 6, 0, 5), hbm_rows(NX_DT_BF16, 0, 5, 7, 7));
    test_invalid(&st, NX_ENG_SP, &insn, "dst has 6 partitions but src has 7 elements per partition");
    insn = dma_transpose(test_sb(NX_DT_BF16, 0, 7, 0, 4), hbm_rows(NX_DT_BF16, 0, 5, 7, 7));
    test_invalid(&st, NX_ENG_SP, &insn, "dst has 4 elements per partition but src has 5 partitions");
    insn = dma_transpose(test_sb(NX_DT_BF16, 0, 7, 0, 5), hbm_rows(NX_DT_BF16, 0, 5, 7, 7));
    insn.iparam[0] = 100000;
    test_invalid(&st, NX_ENG_SP, &insn, "queue 100000 is outside");
    nx_state_free(&st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dma_every_space_pair),
        cmocka_unit_test(test_dma_casts),
        cmocka_unit_test(test_dma_strided_negative_hbm),
        cmocka_unit_test(test_dma_broadcast_source),
        cmocka_unit_test(test_dma_accumulate),
        cmocka_unit_test(test_dma_accumulate_integers),
        cmocka_unit_test(test_dma_overlap),
        cmocka_unit_test(test_dma_large_copy),
        cmocka_unit_test(test_dma_gather_hbm),
        cmocka_unit_test(test_dma_gather_sbuf_accumulate),
        cmocka_unit_test(test_dma_gather_out_of_bounds),
        cmocka_unit_test(test_dma_scatter),
        cmocka_unit_test(test_dma_scatter_add_duplicates),
        cmocka_unit_test(test_dma_indirect_validation),
        cmocka_unit_test(test_dma_copy_validation),
        cmocka_unit_test(test_dma_transpose_2byte),
        cmocka_unit_test(test_dma_transpose_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
