/* GpSimd (POOL) instructions: iota, affine_select, local_gather,
 * partition_all_reduce, partition_broadcast. Every expected value comes from
 * a plain C loop in this file (integer formulas, float folds); results are
 * compared exactly (the semantics round each step to fp32, as float
 * arithmetic does here). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "isa/builder.h"
#include "isa/insn.h"
#include "support.h"

/* ---- helpers ---- */

static double bf16_round(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    u &= 0xFFFF0000u;
    float r;
    memcpy(&r, &u, sizeof r);
    return r;
}

/* ---- iota ---- */

static void iota_channel_multiplier_and_strides(void **state) {
    nx_state *st = *state;
    /* value = 5 + 3p + 2*i0 - i1 over [8] x {2:2, -1:3} into int32. */
    const int32_t s[2] = {2, -1};
    const uint32_t c[2] = {2, 3};
    nx_insn insn = test_insn2(NX_OP_IOTA, test_sb(NX_DT_INT32, 0, 8, 0, 6), nx_pattern(5, 3, 8, 2, s, c));
    test_run_ok(st, NX_ENG_POOL, &insn);
    for (uint32_t p = 0; p < 8; p++) {
        double got[6];
        test_sbuf_get(st, 0, NX_DT_INT32, p, 0, 6, got);
        for (int i0 = 0; i0 < 2; i0++)
            for (int i1 = 0; i1 < 3; i1++)
                assert_true(got[i0 * 3 + i1] == (double)(5 + 3 * (int)p + 2 * i0 - i1));
    }
    /* Negative channel multiplier and strides, 128 partitions, fp32. */
    const int32_t s2[2] = {-3, -1};
    const uint32_t c2[2] = {4, 5};
    insn = test_insn2(NX_OP_IOTA, test_sb(NX_DT_FP32, 0, 128, 64, 20), nx_pattern(1000, -7, 128, 2, s2, c2));
    test_run_ok(st, NX_ENG_POOL, &insn);
    for (uint32_t p = 0; p < 128; p++) {
        double got[20];
        test_sbuf_get(st, 0, NX_DT_FP32, p, 64, 20, got);
        for (int i0 = 0; i0 < 4; i0++)
            for (int i1 = 0; i1 < 5; i1++)
                assert_true(got[i0 * 5 + i1] == (double)(1000 - 7 * (int)p - 3 * i0 - i1));
    }
}

static void iota_converts_to_dst_dtype(void **state) {
    nx_state *st = *state;
    const int32_t one = 1;
    const uint32_t n16 = 16, n4 = 4;
    /* bf16 keeps 8 significant bits: 250..265 + p round to nearest even. */
    nx_insn insn = test_insn2(NX_OP_IOTA, test_sb(NX_DT_BF16, 0, 8, 0, 16), nx_pattern(250, 1, 8, 1, &one, &n16));
    test_run_ok(st, NX_ENG_POOL, &insn);
    int rounded = 0;
    for (uint32_t p = 0; p < 8; p++) {
        double got[16];
        test_sbuf_get(st, 0, NX_DT_BF16, p, 0, 16, got);
        for (int e = 0; e < 16; e++) {
            int v = 250 + (int)p + e;
            assert_true(got[e] == bf16_round((float)v));
            if (got[e] != v) rounded = 1;
        }
    }
    assert_true(rounded);
    /* uint8 saturates: p=0 gives -3..0 -> 0, p=3 gives 297..300 -> 255. */
    insn = test_insn2(NX_OP_IOTA, test_sb(NX_DT_UINT8, 0, 4, 64, 4), nx_pattern(-3, 100, 4, 1, &one, &n4));
    test_run_ok(st, NX_ENG_POOL, &insn);
    for (uint32_t p = 0; p < 4; p++) {
        double got[4];
        test_sbuf_get(st, 0, NX_DT_UINT8, p, 64, 4, got);
        for (int e = 0; e < 4; e++) {
            int v = -3 + 100 * (int)p + e;
            assert_true(got[e] == (double)(v < 0 ? 0 : v > 255 ? 255 : v));
        }
    }
}

static void iota_validation(void **state) {
    nx_state *st = *state;
    const int32_t one = 1;
    const uint32_t n5 = 5, n6 = 6;
    nx_insn insn = test_insn2(NX_OP_IOTA, test_sb(NX_DT_INT32, 0, 8, 0, 6), nx_pattern(0, 1, 4, 1, &one, &n6));
    test_run_fails(st, NX_ENG_POOL, &insn, "pattern: has 4 partitions but dst has 8");
    insn.op[1] = nx_pattern(0, 1, 8, 1, &one, &n5);
    test_run_fails(st, NX_ENG_POOL, &insn, "pattern: has 5 elements per partition but dst has 6");
}

/* ---- affine_select ---- */

/* The causal mask: pattern p - e (base 0, cm 1, stride -1), is_ge keeps
 * e <= p; in place on a 128 x 128 fp32 tile. */
static void affine_select_causal_mask(void **state) {
    nx_state *st = *state;
    for (uint32_t p = 0; p < 128; p++) {
        double row[128];
        for (int e = 0; e < 128; e++) row[e] = p * 1000.0 + e + 0.5;
        test_sbuf_put(st, 0, NX_DT_FP32, p, 0, 128, row);
    }
    const int32_t neg = -1;
    const uint32_t n = 128;
    nx_insn insn = nx_insn_make(NX_OP_AFFINE_SELECT);
    insn.alu0 = NX_ALU_IS_GE;
    insn.op[0] = test_sb(NX_DT_FP32, 0, 128, 0, 128);
    insn.op[1] = nx_pattern(0, 1, 128, 1, &neg, &n);
    insn.op[2] = test_sb(NX_DT_FP32, 0, 128, 0, 128);
    insn.op[3] = nx_imm(-INFINITY, NX_DT_FP32);
    test_run_ok(st, NX_ENG_POOL, &insn);
    for (uint32_t p = 0; p < 128; p++) {
        double row[128];
        test_sbuf_get(st, 0, NX_DT_FP32, p, 0, 128, row);
        for (uint32_t e = 0; e < 128; e++) {
            double want = e <= p ? p * 1000.0 + e + 0.5 : -INFINITY;
            if (row[e] != want) fail_msg("[%u, %u] = %g, want %g", p, e, row[e], want);
        }
    }
}

static int compare_ref(nx_alu_op op, int v) {
    switch (op) {
    case NX_ALU_IS_EQUAL: return v == 0;
    case NX_ALU_NOT_EQUAL: return v != 0;
    case NX_ALU_IS_GE: return v >= 0;
    case NX_ALU_IS_GT: return v > 0;
    case NX_ALU_IS_LE: return v <= 0;
    default: return v < 0; /* is_lt */
    }
}

static void affine_select_each_comparison(void **state) {
    nx_state *st = *state;
    /* in: int32 [4, 6] = 10p + e; dst: bf16; pattern 2e - p - 3 with dims {3:2, 1:3}... */
    for (uint32_t p = 0; p < 4; p++) {
        double row[6];
        for (int e = 0; e < 6; e++) row[e] = 10.0 * p + e;
        test_sbuf_put(st, 0, NX_DT_INT32, p, 0, 6, row);
    }
    const nx_alu_op ops[] = {NX_ALU_IS_EQUAL, NX_ALU_NOT_EQUAL, NX_ALU_IS_GE,
                             NX_ALU_IS_GT,    NX_ALU_IS_LE,     NX_ALU_IS_LT};
    /* pattern value at (p, i0, i1) = -4 + p + 3*i0 - i1 (both signs and 0). */
    const int32_t s[2] = {3, -1};
    const uint32_t c[2] = {2, 3};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        nx_insn insn = nx_insn_make(NX_OP_AFFINE_SELECT);
        insn.alu0 = (uint8_t)ops[k];
        insn.op[0] = test_sb(NX_DT_BF16, 0, 4, 64, 6);
        insn.op[1] = nx_pattern(-4, 1, 4, 2, s, c);
        insn.op[2] = test_sb(NX_DT_INT32, 0, 4, 0, 6);
        insn.op[3] = nx_imm(-7.0, NX_DT_FP32);
        test_run_ok(st, NX_ENG_POOL, &insn);
        int kept = 0, filled = 0;
        for (uint32_t p = 0; p < 4; p++) {
            double got[6];
            test_sbuf_get(st, 0, NX_DT_BF16, p, 64, 6, got);
            for (int i0 = 0; i0 < 2; i0++)
                for (int i1 = 0; i1 < 3; i1++) {
                    int e = i0 * 3 + i1;
                    int keep = compare_ref(ops[k], -4 + (int)p + 3 * i0 - i1);
                    double want = keep ? 10.0 * p + e : -7.0;
                    kept += keep;
                    filled += !keep;
                    if (got[e] != want)
                        fail_msg("%s [%u, %d] = %g, want %g", nx_alu_name(ops[k]), p, e, got[e], want);
                }
        }
        assert_true(kept > 0 && filled > 0);
    }
}

static void affine_select_validation(void **state) {
    nx_state *st = *state;
    const int32_t one = 1;
    const uint32_t n = 8;
    nx_insn insn = nx_insn_make(NX_OP_AFFINE_SELECT);
    insn.alu0 = NX_ALU_ADD;
    insn.op[0] = test_sb(NX_DT_FP32, 0, 4, 0, 8);
    insn.op[1] = nx_pattern(0, 1, 4, 1, &one, &n);
    insn.op[2] = test_sb(NX_DT_FP32, 0, 4, 64, 8);
    insn.op[3] = nx_imm(0.0, NX_DT_FP32);
    test_run_fails(st, NX_ENG_POOL, &insn,
                 "op0: must be a comparison (is_equal, not_equal, is_ge, is_gt, is_le, is_lt), "
                 "got add");
    insn.alu0 = NX_ALU_BYPASS;
    test_run_fails(st, NX_ENG_POOL, &insn,
                 "op0: must be a comparison (is_equal, not_equal, is_ge, is_gt, is_le, is_lt), "
                 "got bypass");
    insn.alu0 = NX_ALU_IS_LT;
    test_run_ok(st, NX_ENG_POOL, &insn);
    insn.op[1] = nx_pattern(0, 1, 2, 1, &one, &n);
    test_run_fails(st, NX_ENG_POOL, &insn, "pattern: has 2 partitions but dst has 4");
    insn.op[1] = nx_pattern(0, 1, 4, 1, &one, &n);
    insn.op[2] = test_sb(NX_DT_FP32, 0, 4, 64, 7);
    test_run_fails(st, NX_ENG_POOL, &insn, "in: has 7 elements per partition but dst has 8");
}

/* ---- local_gather ---- */

#define LG_F 4

/* in[p, e] = 100p + e over partitions [first, first + parts). */
static void lg_put_in(nx_state *st, uint32_t first, uint32_t parts) {
    for (uint32_t p = first; p < first + parts; p++) {
        double row[LG_F];
        for (int e = 0; e < LG_F; e++) row[e] = 100.0 * p + e;
        test_sbuf_put(st, 0, NX_DT_FP32, p, 0, LG_F, row);
    }
}

static nx_insn lg_insn(uint32_t first, uint32_t parts, uint32_t n, nx_dtype idx_dt) {
    nx_insn insn = nx_insn_make(NX_OP_LOCAL_GATHER);
    insn.op[0] = test_sb(NX_DT_FP32, first, parts, 256, n);
    insn.op[1] = test_sb(NX_DT_FP32, first, parts, 0, LG_F);
    insn.op[2] = test_sb(idx_dt, first, parts, 128, n);
    return insn;
}

static void local_gather_across_cores(void **state) {
    nx_state *st = *state;
    const uint32_t starts[2] = {0, 64};
    test_rng rng = {12345};
    for (int t = 0; t < 2; t++) {
        uint32_t first = starts[t];
        lg_put_in(st, first, 64);
        /* 64 partitions = 4 GpSimd cores of 16; each may index 16 * 4 = 64 values. */
        double idx[64][6];
        for (uint32_t p = 0; p < 64; p++) {
            for (int n = 0; n < 6; n++) idx[p][n] = (double)(test_rng_next(&rng) % 64);
            idx[p][0] = 0;  /* the core's first value */
            idx[p][1] = 63; /* the core's last value */
            test_sbuf_put(st, 0, NX_DT_UINT16, first + p, 128, 6, idx[p]);
        }
        nx_insn insn = lg_insn(first, 64, 6, NX_DT_UINT16);
        test_run_ok(st, NX_ENG_POOL, &insn);
        for (uint32_t p = 0; p < 64; p++) {
            uint32_t q = first + p, core = q / 16;
            double got[6];
            test_sbuf_get(st, 0, NX_DT_FP32, q, 256, 6, got);
            for (int n = 0; n < 6; n++) {
                int i = (int)idx[p][n];
                double want = 100.0 * (core * 16 + i / LG_F) + i % LG_F;
                if (got[n] != want)
                    fail_msg("dst[%u, %d] (index %d) = %g, want %g", q, n, i, got[n], want);
            }
        }
    }
}

/* dst overwrites the indices it was computed from (all read first). */
static void local_gather_in_place(void **state) {
    nx_state *st = *state;
    for (uint32_t p = 0; p < 32; p++) {
        double row[LG_F], ix[3] = {(p * 7) % 64, 5, 60 - p};
        for (int e = 0; e < LG_F; e++) row[e] = 100.0 * p + e;
        test_sbuf_put(st, 0, NX_DT_INT32, p, 0, LG_F, row);
        test_sbuf_put(st, 0, NX_DT_INT32, p, 128, 3, ix);
    }
    nx_insn insn = nx_insn_make(NX_OP_LOCAL_GATHER);
    insn.op[0] = test_sb(NX_DT_INT32, 0, 32, 128, 3);
    insn.op[1] = test_sb(NX_DT_INT32, 0, 32, 0, LG_F);
    insn.op[2] = test_sb(NX_DT_INT32, 0, 32, 128, 3);
    test_run_ok(st, NX_ENG_POOL, &insn);
    for (uint32_t p = 0; p < 32; p++) {
        double got[3];
        int ix[3] = {(int)((p * 7) % 64), 5, 60 - (int)p};
        test_sbuf_get(st, 0, NX_DT_INT32, p, 128, 3, got);
        for (int n = 0; n < 3; n++)
            assert_true(got[n] == 100.0 * ((p / 16) * 16 + ix[n] / LG_F) + ix[n] % LG_F);
    }
}

static void local_gather_out_of_range(void **state) {
    nx_state *st = *state;
    /* Partitions 64..103: cores 4 and 5 complete, core 6 has only 96..103. */
    lg_put_in(st, 64, 40);
    const double sentinel[5] = {7, 7, 7, 7, 7};
    for (uint32_t q = 64; q < 104; q++) {
        const double ix[5] = {0, 31, 3, 17, 30}; /* valid on every core */
        test_sbuf_put(st, 0, NX_DT_INT32, q, 128, 5, ix);
        test_sbuf_put(st, 0, NX_DT_FP32, q, 256, 5, sentinel);
    }
    nx_insn insn = lg_insn(64, 40, 5, NX_DT_INT32);
    test_run_ok(st, NX_ENG_POOL, &insn);
    double got[5];
    test_sbuf_get(st, 0, NX_DT_FP32, 103, 256, 5, got);
    assert_true(got[1] == 100.0 * 103 + 3); /* index 31: core 6's last value */

    /* One past core 6's data. */
    for (uint32_t q = 64; q < 104; q++) test_sbuf_put(st, 0, NX_DT_FP32, q, 256, 5, sentinel);
    const double bad = 32;
    test_sbuf_put(st, 0, NX_DT_INT32, 96, 128, 1, &bad);
    test_run_fails(st, NX_ENG_POOL, &insn,
                 "core 0 pool #0 (local_gather): indices[96, 0] = 32 is outside core 6's data "
                 "(in has partitions 96..103 of that core, 4 elements each: valid indices 0..31)");
    for (uint32_t q = 64; q < 104; q++) { /* nothing was written */
        test_sbuf_get(st, 0, NX_DT_FP32, q, 256, 5, got);
        for (int n = 0; n < 5; n++) assert_true(got[n] == 7.0);
    }
    /* 32 is fine for a complete core (the same index on partition 64). */
    const double ok = 0;
    test_sbuf_put(st, 0, NX_DT_INT32, 96, 128, 1, &ok);
    const double big = 63;
    test_sbuf_put(st, 0, NX_DT_INT32, 64, 128, 1, &big);
    test_run_ok(st, NX_ENG_POOL, &insn);
    test_sbuf_get(st, 0, NX_DT_FP32, 64, 256, 1, got);
    assert_true(got[0] == 100.0 * 79 + 3);
    /* Negative index. */
    const double neg = -1;
    test_sbuf_put(st, 0, NX_DT_INT32, 69, 128 + 2 * 4, 1, &neg);
    test_run_fails(st, NX_ENG_POOL, &insn,
                 "core 0 pool #0 (local_gather): indices[69, 2] = -1 is outside core 4's data "
                 "(in has partitions 64..79 of that core, 4 elements each: valid indices 0..63)");
}

static void local_gather_validation(void **state) {
    nx_state *st = *state;
    nx_insn insn = lg_insn(0, 32, 6, NX_DT_FP32);
    test_run_fails(st, NX_ENG_POOL, &insn, "indices: dtype fp32 is not an integer type");
    insn = lg_insn(32, 32, 6, NX_DT_INT32);
    insn.op[1] = test_sb(NX_DT_FP32, 0, 32, 0, LG_F);
    test_run_fails(st, NX_ENG_POOL, &insn,
                 "in: partitions 0..31 differ from dst's 32..63 (local_gather keeps each "
                 "partition on its GpSimd core)");
    insn = lg_insn(32, 32, 6, NX_DT_INT32);
    insn.op[2] = test_sb(NX_DT_INT32, 32, 16, 128, 6);
    test_run_fails(st, NX_ENG_POOL, &insn,
                 "indices: partitions 32..47 differ from dst's 32..63 (local_gather keeps each "
                 "partition on its GpSimd core)");
    insn = lg_insn(32, 32, 6, NX_DT_INT32);
    insn.op[2] = test_sb(NX_DT_INT32, 32, 32, 128, 3);
    test_run_fails(st, NX_ENG_POOL, &insn, "indices: has 3 elements per partition but dst has 6");
    /* With trn2's 16-partition cores the start-partition rule already makes
     * every start a multiple of 16; a machine with 64-partition cores does not. */
    insn = lg_insn(32, 32, 6, NX_DT_INT32);
    test_run_ok(st, NX_ENG_POOL, &insn);
    st->geo.pool_partitions_per_core = 64;
    test_run_fails(st, NX_ENG_POOL, &insn, "dst: start partition 32 is not a multiple of the GpSimd core width 64");
    st->geo.pool_partitions_per_core = 16;
}

/* ---- partition_all_reduce ---- */

static void put_random_fp32(nx_state *st, test_rng *rng, uint32_t first, uint32_t parts,
                            uint64_t off, uint32_t n, float vals[][16]) {
    for (uint32_t p = 0; p < parts; p++) {
        double row[16];
        for (uint32_t e = 0; e < n; e++) {
            vals[p][e] = (float)test_rng_uniform(rng, -4.0, 4.0);
            row[e] = vals[p][e];
        }
        test_sbuf_put(st, 0, NX_DT_FP32, first + p, off, n, row);
    }
}

static void check_all_reduce(nx_state *st, nx_alu_op op, uint32_t in_first, uint32_t dst_first,
                             uint32_t parts, uint32_t n, uint64_t dst_off, float vals[][16]) {
    float want[16];
    for (uint32_t e = 0; e < n; e++) {
        float r = vals[0][e];
        for (uint32_t q = 1; q < parts; q++) {
            float v = vals[q][e];
            if (op == NX_ALU_ADD) r = r + v;
            else if (op == NX_ALU_MAX) r = v > r ? v : r;
            else if (op == NX_ALU_MIN) r = v < r ? v : r;
            else if (op == NX_ALU_MULTIPLY) r = r * v;
            else r = fabsf(v) > fabsf(r) ? fabsf(v) : fabsf(r); /* abs_max */
        }
        want[e] = op == NX_ALU_ABS_MAX ? fabsf(r) : r;
    }
    nx_insn insn = test_insn2(NX_OP_PARTITION_ALL_REDUCE, test_sb(NX_DT_FP32, dst_first, parts, dst_off, n),
                         test_sb(NX_DT_FP32, in_first, parts, 0, n));
    insn.alu0 = (uint8_t)op;
    test_run_ok(st, NX_ENG_POOL, &insn);
    for (uint32_t p = 0; p < parts; p++) {
        double got[16];
        test_sbuf_get(st, 0, NX_DT_FP32, dst_first + p, dst_off, n, got);
        for (uint32_t e = 0; e < n; e++)
            if (got[e] != (double)want[e])
                fail_msg("%s dst[%u, %u] = %.9g, want %.9g", nx_alu_name(op), dst_first + p, e,
                         got[e], (double)want[e]);
    }
}

static void partition_all_reduce_128_and_32(void **state) {
    nx_state *st = *state;
    static float vals[128][16];
    test_rng rng = {777};
    put_random_fp32(st, &rng, 0, 128, 0, 16, vals);
    check_all_reduce(st, NX_ALU_ADD, 0, 0, 128, 16, 256, vals);
    check_all_reduce(st, NX_ALU_MAX, 0, 0, 128, 16, 256, vals);
    /* 32 partitions starting at 32, result in partitions 96..127. */
    put_random_fp32(st, &rng, 32, 32, 0, 8, vals);
    check_all_reduce(st, NX_ALU_ADD, 32, 96, 32, 8, 512, vals);
    check_all_reduce(st, NX_ALU_MAX, 32, 96, 32, 8, 512, vals);
    /* The other arithmetic ops on 4 partitions. */
    put_random_fp32(st, &rng, 0, 4, 0, 16, vals);
    check_all_reduce(st, NX_ALU_MIN, 0, 0, 4, 16, 256, vals);
    check_all_reduce(st, NX_ALU_MULTIPLY, 0, 0, 4, 16, 256, vals);
    check_all_reduce(st, NX_ALU_ABS_MAX, 0, 0, 4, 16, 256, vals);
    /* In place over 128 partitions (every partition read before any write). */
    put_random_fp32(st, &rng, 0, 128, 0, 16, vals);
    check_all_reduce(st, NX_ALU_ADD, 0, 0, 128, 16, 0, vals);
}

static void partition_all_reduce_bitwise(void **state) {
    nx_state *st = *state;
    const int32_t v[3][2] = {{0x0F0F, 6}, {-1, 3}, {0x00FF, 0x7FFF0000}};
    for (uint32_t p = 0; p < 3; p++) {
        double row[2] = {v[p][0], v[p][1]};
        test_sbuf_put(st, 0, NX_DT_INT32, p, 0, 2, row);
    }
    const nx_alu_op ops[3] = {NX_ALU_BITWISE_AND, NX_ALU_BITWISE_OR, NX_ALU_BITWISE_XOR};
    for (int k = 0; k < 3; k++) {
        nx_insn insn = test_insn2(NX_OP_PARTITION_ALL_REDUCE, test_sb(NX_DT_INT32, 0, 3, 64, 2),
                             test_sb(NX_DT_INT32, 0, 3, 0, 2));
        insn.alu0 = (uint8_t)ops[k];
        test_run_ok(st, NX_ENG_POOL, &insn);
        for (int e = 0; e < 2; e++) {
            uint32_t a = (uint32_t)v[0][e], b = (uint32_t)v[1][e], c = (uint32_t)v[2][e];
            uint32_t r = k == 0 ? (a & b & c) : k == 1 ? (a | b | c) : (a ^ b ^ c);
            double want = (double)(int32_t)r;
            for (uint32_t p = 0; p < 3; p++) {
                double got;
                test_sbuf_get(st, 0, NX_DT_INT32, p, 64 + 4 * (uint64_t)e, 1, &got);
                if (got != want)
                    fail_msg("%s e %d: %g, want %g", nx_alu_name(ops[k]), e, got, want);
            }
        }
    }
}

/* uint32 values with the top bit set stay unsigned through the fold. */
static void partition_all_reduce_bitwise_unsigned(void **state) {
    nx_state *st = *state;
    const double v[2] = {4026531840.0 /* 0xF0000000 */, 4278190095.0 /* 0xFF00000F */};
    for (uint32_t p = 0; p < 2; p++) test_sbuf_put(st, 0, NX_DT_UINT32, p, 0, 1, &v[p]);
    nx_insn insn = test_insn2(NX_OP_PARTITION_ALL_REDUCE, test_sb(NX_DT_UINT32, 0, 2, 64, 1),
                         test_sb(NX_DT_UINT32, 0, 2, 0, 1));
    insn.alu0 = NX_ALU_BITWISE_AND;
    test_run_ok(st, NX_ENG_POOL, &insn);
    double got;
    test_sbuf_get(st, 0, NX_DT_UINT32, 1, 64, 1, &got);
    assert_true(got == (double)(0xF0000000u & 0xFF00000Fu));
    insn.alu0 = NX_ALU_BITWISE_XOR;
    test_run_ok(st, NX_ENG_POOL, &insn);
    test_sbuf_get(st, 0, NX_DT_UINT32, 0, 64, 1, &got);
    assert_true(got == (double)(0xF0000000u ^ 0xFF00000Fu));
}

static void partition_all_reduce_validation(void **state) {
    nx_state *st = *state;
    nx_insn insn = test_insn2(NX_OP_PARTITION_ALL_REDUCE, test_sb(NX_DT_FP32, 0, 4, 64, 8),
                         test_sb(NX_DT_FP32, 0, 4, 0, 8));
    insn.alu0 = NX_ALU_SUBTRACT;
    test_run_fails(st, NX_ENG_POOL, &insn,
                 "op0: must be add, multiply, max, min, abs_max, bitwise_and, bitwise_or or "
                 "bitwise_xor, got subtract");
    insn.alu0 = NX_ALU_ADD;
    insn.op[0] = test_sb(NX_DT_FP32, 0, 2, 64, 8);
    test_run_fails(st, NX_ENG_POOL, &insn, "dst: has 2 partitions but in has 4");
    insn.op[0] = test_sb(NX_DT_FP32, 0, 4, 64, 4);
    test_run_fails(st, NX_ENG_POOL, &insn, "dst: has 4 elements per partition but in has 8");
}

/* ---- partition_broadcast ---- */

static void partition_broadcast_rows(void **state) {
    nx_state *st = *state;
    const double src[7] = {1.5, -2.0, 3.25, 1e10, -0.0, 65504.0, 0.3};
    test_sbuf_put(st, 0, NX_DT_BF16, 32, 0, 7, src);
    double in[7];
    test_sbuf_get(st, 0, NX_DT_BF16, 32, 0, 7, in);
    /* bf16 partition 32 -> fp32 in all 128 partitions. */
    nx_insn insn = test_insn2(NX_OP_PARTITION_BROADCAST, test_sb(NX_DT_FP32, 0, 128, 64, 7),
                         test_sb(NX_DT_BF16, 32, 1, 0, 7));
    test_run_ok(st, NX_ENG_POOL, &insn);
    for (uint32_t p = 0; p < 128; p++) {
        double got[7];
        test_sbuf_get(st, 0, NX_DT_FP32, p, 64, 7, got);
        for (int e = 0; e < 7; e++) {
            assert_true(got[e] == in[e]);
            assert_true(signbit(got[e]) == signbit(in[e]));
        }
    }
    /* Into 32 partitions at 96, as int16 (RNE then saturation). */
    insn = test_insn2(NX_OP_PARTITION_BROADCAST, test_sb(NX_DT_INT16, 96, 32, 128, 7),
                 test_sb(NX_DT_BF16, 32, 1, 0, 7));
    test_run_ok(st, NX_ENG_POOL, &insn);
    const double want16[7] = {2, -2, 3, 32767, 0, 32767, 0};
    for (uint32_t p = 96; p < 128; p++) {
        double got[7];
        test_sbuf_get(st, 0, NX_DT_INT16, p, 128, 7, got);
        for (int e = 0; e < 7; e++) assert_true(got[e] == want16[e]);
    }
    double untouched;
    test_sbuf_get(st, 0, NX_DT_INT16, 95, 128, 1, &untouched);
    assert_true(untouched == 0.0);
    /* Overlapping: partition 0's row broadcast onto partitions 0..127 in place. */
    const double row0[5] = {9, 8, 7, 6, 5};
    test_sbuf_put(st, 0, NX_DT_FP32, 0, 512, 5, row0);
    insn = test_insn2(NX_OP_PARTITION_BROADCAST, test_sb(NX_DT_FP32, 0, 128, 512, 5),
                 test_sb(NX_DT_FP32, 0, 1, 512, 5));
    test_run_ok(st, NX_ENG_POOL, &insn);
    for (uint32_t p = 0; p < 128; p++) {
        double got[5];
        test_sbuf_get(st, 0, NX_DT_FP32, p, 512, 5, got);
        for (int e = 0; e < 5; e++) assert_true(got[e] == row0[e]);
    }
}

static void partition_broadcast_validation(void **state) {
    nx_state *st = *state;
    nx_insn insn = test_insn2(NX_OP_PARTITION_BROADCAST, test_sb(NX_DT_FP32, 0, 128, 64, 7),
                         test_sb(NX_DT_FP32, 0, 2, 0, 7));
    test_run_fails(st, NX_ENG_POOL, &insn, "in: has 2 partitions, must have exactly 1");
    insn.op[1] = test_sb(NX_DT_FP32, 0, 1, 0, 4);
    test_run_fails(st, NX_ENG_POOL, &insn, "dst: has 7 elements per partition but in has 4");
    /* The one source partition obeys the start-partition rule of a 1-partition
     * operand: 0, 32, 64 or 96 (any other partition needs a DMA or a PE/DVE
     * move first). */
    const uint32_t ok[4] = {0, 32, 64, 96};
    for (int i = 0; i < 4; i++) {
        insn.op[1] = test_sb(NX_DT_FP32, ok[i], 1, 0, 7);
        test_run_ok(st, NX_ENG_POOL, &insn);
    }
    insn.op[1] = test_sb(NX_DT_FP32, 5, 1, 0, 7);
    test_run_fails(st, NX_ENG_POOL, &insn,
                   "in: start partition 5 not allowed for 1 partitions (> 64 partitions: 0; "
                   "> 32: a multiple of 64; else a multiple of 32)");
}

/* The p of an index pattern counts from dst's start partition: iota into
 * partitions 96..127 with channel multiplier 10 writes 0 at partition 96;
 * affine_select's causal mask at partitions 64..95 keeps e <= p - 64. */
static void pattern_p_relative_to_dst_start(void **state) {
    nx_state *st = *state;
    const int32_t one = 1;
    const uint32_t two = 2;
    nx_insn insn = test_insn2(NX_OP_IOTA, test_sb(NX_DT_INT32, 96, 32, 0, 2),
                              nx_pattern(0, 10, 32, 1, &one, &two));
    test_run_ok(st, NX_ENG_POOL, &insn);
    for (uint32_t p = 96; p < 128; p++) {
        double got[2];
        test_sbuf_get(st, 0, NX_DT_INT32, p, 0, 2, got);
        assert_true(got[0] == 10.0 * (p - 96) && got[1] == 10.0 * (p - 96) + 1);
    }
    for (uint32_t p = 64; p < 96; p++) {
        double row[32];
        for (int e = 0; e < 32; e++) row[e] = 1.0 + e;
        test_sbuf_put(st, 0, NX_DT_FP32, p, 64, 32, row);
    }
    const int32_t neg = -1;
    const uint32_t n = 32;
    nx_insn sel = nx_insn_make(NX_OP_AFFINE_SELECT);
    sel.alu0 = NX_ALU_IS_GE;
    sel.op[0] = test_sb(NX_DT_FP32, 64, 32, 256, 32);
    sel.op[1] = nx_pattern(0, 1, 32, 1, &neg, &n);
    sel.op[2] = test_sb(NX_DT_FP32, 64, 32, 64, 32);
    sel.op[3] = nx_imm(0.0, NX_DT_FP32);
    test_run_ok(st, NX_ENG_POOL, &sel);
    for (uint32_t p = 64; p < 96; p++) {
        double got[32];
        test_sbuf_get(st, 0, NX_DT_FP32, p, 256, 32, got);
        for (uint32_t e = 0; e < 32; e++) {
            double want = e <= p - 64 ? 1.0 + e : 0.0;
            if (got[e] != want) fail_msg("[%u, %u] = %g, want %g", p, e, got[e], want);
        }
    }
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, test_setup_state, test_teardown_state)
    const struct CMUnitTest tests[] = {
        T(iota_channel_multiplier_and_strides),
        T(iota_converts_to_dst_dtype),
        T(iota_validation),
        T(affine_select_causal_mask),
        T(affine_select_each_comparison),
        T(affine_select_validation),
        T(local_gather_across_cores),
        T(local_gather_in_place),
        T(local_gather_out_of_range),
        T(local_gather_validation),
        T(partition_all_reduce_128_and_32),
        T(partition_all_reduce_bitwise),
        T(partition_all_reduce_bitwise_unsigned),
        T(partition_all_reduce_validation),
        T(partition_broadcast_rows),
        T(partition_broadcast_validation),
        T(pattern_p_relative_to_dst_start),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
