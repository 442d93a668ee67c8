/* The bitvec ALU ops (bitwise_and/or/xor, shift_left, shift_right) as the
 * instructions store them (docs/parts/insns-dve.md, "Bitvec ops"): the
 * engines work on 32-bit patterns (the NKI ISA documentation: bitvec
 * operators treat the elements as bit patterns), shift_right is logical, and
 * an integer destination receives the pattern's bits, its low 8/16/32 bits,
 * never a saturated value. So integer hashing, masks and xorshift RNG
 * kernels compute what they do in C on uint32_t. References are C integer
 * expressions on uint32_t written here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "isa/builder.h"
#include "isa/insn.h"
#include "support.h"

/* The raw 32-bit words at SBUF partition p, byte off. */
static void get_words(nx_state *st, uint32_t p, uint64_t off, uint32_t *out, size_t n) {
    memcpy(out, nx_sbuf_at(st, 0, p, off), n * sizeof *out);
}

static void check_words(const uint32_t *got, const uint32_t *want, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("%s: element %zu: got 0x%08x, want 0x%08x", what, i, got[i], want[i]);
}

static nx_insn tt(nx_alu_op op, nx_operand dst, nx_operand in0, nx_operand in1) {
    nx_insn t = nx_insn_make(NX_OP_TENSOR_TENSOR);
    t.alu0 = op;
    t.op[0] = dst;
    t.op[1] = in0;
    t.op[2] = in1;
    return t;
}

/* The documented example (docs/parts/insns-dve.md): int32 shift_left of [1, 0x40000000, -1, 0x7fffffff]
 * by [31, 1, 0, 1] into int32 and uint32 stores 0x80000000, 0x80000000,
 * 0xffffffff, 0xfffffffe (not 2147483647 saturated). */
static void test_shift_left_bit31(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double a[4] = {1, 1073741824.0, -1, 2147483647.0};
    const double c[4] = {31, 1, 0, 1};
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 0, 4, a);
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 64, 4, c);
    const uint32_t want[4] = {0x80000000u, 0x80000000u, 0xffffffffu, 0xfffffffeu};
    uint32_t got[4];
    nx_insn t = tt(NX_ALU_SHIFT_LEFT, test_sb(NX_DT_INT32, 0, 1, 128, 4), test_sb(NX_DT_INT32, 0, 1, 0, 4),
                   test_sb(NX_DT_INT32, 0, 1, 64, 4));
    test_run_ok(&st, NX_ENG_DVE, &t);
    get_words(&st, 0, 128, got, 4);
    check_words(got, want, 4, "shift_left into int32");
    t.op[0] = test_sb(NX_DT_UINT32, 0, 1, 192, 4);
    test_run_ok(&st, NX_ENG_DVE, &t);
    get_words(&st, 0, 192, got, 4);
    check_words(got, want, 4, "shift_left into uint32");
    nx_state_free(&st);
}

/* shift_right is logical on the 32-bit pattern for every input dtype: an
 * int32 -256 >> 4 is 0x0ffffff0, 0x80000000 >> 31 is 1. */
static void test_shift_right_logical(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double a[5] = {-256, -2147483648.0, -1, 5, -1};
    const double c[5] = {4, 31, 0, 1, 28};
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 0, 5, a);
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 64, 5, c);
    uint32_t want[5], got[5];
    for (int i = 0; i < 5; i++)
        want[i] = (uint32_t)(int32_t)a[i] >> (unsigned)c[i];
    nx_insn t = tt(NX_ALU_SHIFT_RIGHT, test_sb(NX_DT_INT32, 0, 1, 128, 5), test_sb(NX_DT_INT32, 0, 1, 0, 5),
                   test_sb(NX_DT_INT32, 0, 1, 64, 5));
    test_run_ok(&st, NX_ENG_DVE, &t);
    get_words(&st, 0, 128, got, 5);
    check_words(got, want, 5, "shift_right into int32");
    const uint32_t hand[5] = {0x0ffffff0u, 1u, 0xffffffffu, 2u, 15u};
    check_words(want, hand, 5, "the C reference itself");
    nx_state_free(&st);
}

/* and / or / xor setting bit 31 into an int32 dst (uint32 inputs); bits
 * above the sign into uint32 from int32 inputs. */
static void test_and_or_xor_bit31(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double ua[4] = {2147483648.0, 4294967295.0, 4026531840.0 /* 0xF0000000 */, 1};
    const double ub[4] = {1, 65535, 4294967295.0, 2147483648.0};
    test_sbuf_put(&st, 0, NX_DT_UINT32, 0, 0, 4, ua);
    test_sbuf_put(&st, 0, NX_DT_UINT32, 0, 64, 4, ub);
    const nx_alu_op ops[3] = {NX_ALU_BITWISE_OR, NX_ALU_BITWISE_XOR, NX_ALU_BITWISE_AND};
    for (int k = 0; k < 3; k++) {
        uint32_t want[4], got[4];
        for (int i = 0; i < 4; i++) {
            uint32_t x = (uint32_t)ua[i], y = (uint32_t)ub[i];
            want[i] = k == 0 ? (x | y) : k == 1 ? (x ^ y) : (x & y);
        }
        nx_insn t = tt(ops[k], test_sb(NX_DT_INT32, 0, 1, 128, 4), test_sb(NX_DT_UINT32, 0, 1, 0, 4),
                       test_sb(NX_DT_UINT32, 0, 1, 64, 4));
        test_run_ok(&st, NX_ENG_DVE, &t);
        get_words(&st, 0, 128, got, 4);
        check_words(got, want, 4, nx_alu_name(ops[k]));
    }
    /* int32 -1 AND 0xFFFFFFFF into uint32: all ones (not saturated to 0). */
    const double m1 = -1;
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 256, 1, &m1);
    nx_insn s = nx_insn_make(NX_OP_TENSOR_SCALAR);
    s.alu0 = NX_ALU_BITWISE_AND;
    s.op[0] = test_sb(NX_DT_UINT32, 0, 1, 320, 1);
    s.op[1] = test_sb(NX_DT_INT32, 0, 1, 256, 1);
    s.op[2] = nx_imm(4294967295.0, NX_DT_UINT32);
    test_run_ok(&st, NX_ENG_DVE, &s);
    uint32_t w;
    get_words(&st, 0, 320, &w, 1);
    check_words(&w, (const uint32_t[]){0xffffffffu}, 1, "-1 AND all ones into uint32");
    nx_state_free(&st);
}

/* xorshift32 (Marsaglia: x ^= x << 13; x ^= x >> 17; x ^= x << 5), eight
 * steps on 128 partitions of uint32 and of int32 state, one tensor_scalar
 * shift and one tensor_tensor xor per sub-step, against C on uint32_t. */
static void test_xorshift32_rng(void **state) {
    (void)state;
    enum { P = 128, F = 16, STEPS = 8 };
    const nx_dtype dts[2] = {NX_DT_UINT32, NX_DT_INT32};
    for (int d = 0; d < 2; d++) {
        nx_state st;
        test_state(&st, 1, 4096, 1);
        static uint32_t ref[P][F];
        test_rng r = {2024 + (uint64_t)d};
        for (uint32_t p = 0; p < P; p++) {
            for (int e = 0; e < F; e++) ref[p][e] = (uint32_t)test_rng_next(&r) | 1u;
            memcpy(nx_sbuf_at(&st, 0, p, 0), ref[p], sizeof ref[p]);
        }
        const nx_operand x = test_sb(dts[d], 0, P, 0, F), tmp = test_sb(dts[d], 0, P, 64, F);
        const struct { nx_alu_op op; double count; } sub[3] = {
            {NX_ALU_SHIFT_LEFT, 13}, {NX_ALU_SHIFT_RIGHT, 17}, {NX_ALU_SHIFT_LEFT, 5}};
        for (int step = 0; step < STEPS; step++)
            for (int k = 0; k < 3; k++) {
                nx_insn s = nx_insn_make(NX_OP_TENSOR_SCALAR);
                s.alu0 = sub[k].op;
                s.op[0] = tmp;
                s.op[1] = x;
                s.op[2] = nx_imm(sub[k].count, NX_DT_INT32);
                test_run_ok(&st, NX_ENG_DVE, &s);
                nx_insn t = tt(NX_ALU_BITWISE_XOR, x, x, tmp);
                test_run_ok(&st, NX_ENG_DVE, &t);
            }
        for (uint32_t p = 0; p < P; p++) {
            for (int step = 0; step < STEPS; step++)
                for (int e = 0; e < F; e++) {
                    uint32_t v = ref[p][e];
                    v ^= v << 13;
                    v ^= v >> 17;
                    v ^= v << 5;
                    ref[p][e] = v;
                }
            uint32_t got[F];
            get_words(&st, p, 0, got, F);
            check_words(got, ref[p], F, d == 0 ? "xorshift32 on uint32" : "xorshift32 on int32");
        }
        nx_state_free(&st);
    }
}

/* Field extraction with two ops in one tensor_scalar: (x >> 24) & 0xff is
 * the top byte also for negative int32 x, and (x << 8) >> 8 keeps the low
 * 24 bits. A bitvec op followed by an arithmetic op is a value again. */
static void test_tensor_scalar_masks(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double x[4] = {-1, -2147483648.0, 305419896.0 /* 0x12345678 */, -19088744.0};
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 0, 4, x);
    nx_insn s = nx_insn_make(NX_OP_TENSOR_SCALAR);
    s.alu0 = NX_ALU_SHIFT_RIGHT;
    s.alu1 = NX_ALU_BITWISE_AND;
    s.op[0] = test_sb(NX_DT_INT32, 0, 1, 64, 4);
    s.op[1] = test_sb(NX_DT_INT32, 0, 1, 0, 4);
    s.op[2] = nx_imm(24, NX_DT_INT32);
    s.op[3] = nx_imm(255, NX_DT_INT32);
    test_run_ok(&st, NX_ENG_DVE, &s);
    uint32_t got[4], want[4];
    for (int i = 0; i < 4; i++) want[i] = ((uint32_t)(int32_t)x[i] >> 24) & 0xffu;
    get_words(&st, 0, 64, got, 4);
    check_words(got, want, 4, "(x >> 24) & 0xff");
    s.alu0 = NX_ALU_SHIFT_LEFT;
    s.alu1 = NX_ALU_SHIFT_RIGHT;
    s.op[2] = nx_imm(8, NX_DT_INT32);
    s.op[3] = nx_imm(8, NX_DT_INT32);
    test_run_ok(&st, NX_ENG_DVE, &s);
    for (int i = 0; i < 4; i++) want[i] = ((uint32_t)(int32_t)x[i] << 8) >> 8;
    get_words(&st, 0, 64, got, 4);
    check_words(got, want, 4, "(x << 8) >> 8");
    /* op1 arithmetic after a bitvec op0: refused (the public nki.isa rule:
     * both ops of a tensor_scalar are bitvec or both arithmetic) */
    s.alu0 = NX_ALU_SHIFT_LEFT;
    s.alu1 = NX_ALU_ADD;
    s.op[3] = nx_imm(1, NX_DT_INT32);
    test_run_fails(&st, NX_ENG_DVE, &s,
                   "op0 shift_left and op1 add: a bitvec and an arithmetic op do not mix in one instruction");
    nx_state_free(&st);
}

/* scalar_tensor_tensor (a << s) | b and a running xor (tensor_tensor_scan)
 * into int32, both setting bit 31. */
static void test_stt_and_scan(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double a[4] = {1, 3, 2, 1};
    const double b[4] = {5, 1, 0, 2147483647.0};
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 0, 4, a);
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 64, 4, b);
    nx_insn s = nx_insn_make(NX_OP_SCALAR_TENSOR_TENSOR);
    s.alu0 = NX_ALU_SHIFT_LEFT;
    s.alu1 = NX_ALU_BITWISE_OR;
    s.op[0] = test_sb(NX_DT_INT32, 0, 1, 128, 4);
    s.op[1] = test_sb(NX_DT_INT32, 0, 1, 0, 4);
    s.op[2] = nx_imm(31, NX_DT_INT32);
    s.op[3] = test_sb(NX_DT_INT32, 0, 1, 64, 4);
    test_run_ok(&st, NX_ENG_POOL, &s);
    uint32_t got[4], want[4];
    for (int i = 0; i < 4; i++) want[i] = ((uint32_t)a[i] << 31) | (uint32_t)b[i];
    get_words(&st, 0, 128, got, 4);
    check_words(got, want, 4, "(a << 31) | b");

    /* acc = 0; acc = (acc xor in0) bypass: running xor of 0x40000000,
     * 0xC0000000 (uint32), 1, 0x80000000. */
    const double u[4] = {1073741824.0, 3221225472.0, 1, 2147483648.0};
    test_sbuf_put(&st, 0, NX_DT_UINT32, 0, 192, 4, u);
    nx_insn sc = nx_insn_make(NX_OP_TENSOR_TENSOR_SCAN);
    sc.alu0 = NX_ALU_BITWISE_XOR;
    sc.alu1 = NX_ALU_BYPASS;
    sc.op[0] = test_sb(NX_DT_INT32, 0, 1, 256, 4);
    sc.op[1] = test_sb(NX_DT_UINT32, 0, 1, 192, 4);
    sc.op[2] = test_sb(NX_DT_UINT32, 0, 1, 192, 4);
    sc.op[3] = nx_imm(0, NX_DT_INT32);
    test_run_ok(&st, NX_ENG_DVE, &sc);
    uint32_t acc = 0;
    for (int i = 0; i < 4; i++) want[i] = acc ^= (uint32_t)u[i];
    get_words(&st, 0, 256, got, 4);
    check_words(got, want, 4, "running xor");
    nx_state_free(&st);
}

/* tensor_reduce and partition_all_reduce with bitwise ops into int32: an or
 * over uint32 inputs that sets bit 31. */
static void test_bitwise_reductions(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double u[2][3] = {{2147483648.0, 1, 4}, {65536, 2147483648.0, 3}};
    for (uint32_t p = 0; p < 2; p++) test_sbuf_put(&st, 0, NX_DT_UINT32, p, 0, 3, u[p]);
    nx_insn r = nx_insn_make(NX_OP_TENSOR_REDUCE);
    r.alu0 = NX_ALU_BITWISE_OR;
    r.iparam[0] = 1;
    r.op[0] = test_sb(NX_DT_INT32, 0, 2, 64, 1);
    r.op[1] = test_sb(NX_DT_UINT32, 0, 2, 0, 3);
    test_run_ok(&st, NX_ENG_DVE, &r);
    for (uint32_t p = 0; p < 2; p++) {
        uint32_t got, want = (uint32_t)u[p][0] | (uint32_t)u[p][1] | (uint32_t)u[p][2];
        get_words(&st, p, 64, &got, 1);
        check_words(&got, &want, 1, "tensor_reduce or");
    }
    nx_insn a = nx_insn_make(NX_OP_PARTITION_ALL_REDUCE);
    a.alu0 = NX_ALU_BITWISE_XOR;
    a.op[0] = test_sb(NX_DT_INT32, 0, 2, 128, 3);
    a.op[1] = test_sb(NX_DT_UINT32, 0, 2, 0, 3);
    test_run_ok(&st, NX_ENG_POOL, &a);
    for (uint32_t p = 0; p < 2; p++) {
        uint32_t got[3], want[3];
        for (int e = 0; e < 3; e++) want[e] = (uint32_t)u[0][e] ^ (uint32_t)u[1][e];
        get_words(&st, p, 128, got, 3);
        check_words(got, want, 3, "partition_all_reduce xor");
    }
    nx_state_free(&st);
}

/* tensor_reduce negate with a bitwise op is an integer negation: a result of
 * 0 stays +0 in fp32 and bf16 (integers have no -0), 5 gives -5, and into
 * int32 the two's complement (0x80000000 stays 0x80000000). */
static void test_reduce_negate_integer(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double x[4][2] = {{6, 9}, {7, 7}, {5, 0}, {-2147483648.0, 0}};
    for (uint32_t p = 0; p < 4; p++) test_sbuf_put(&st, 0, NX_DT_INT32, p, 0, 2, x[p]);
    const nx_alu_op ops[2] = {NX_ALU_BITWISE_AND, NX_ALU_BITWISE_XOR};
    /* and: 0, 7, 0, 0; xor: 15, 0, 5, 0x80000000 (read back signed) */
    const double want[2][4] = {{0.0, -7, 0.0, 0.0}, {-15, 0.0, -5, 2147483648.0}};
    for (int k = 0; k < 2; k++) {
        nx_insn r = nx_insn_make(NX_OP_TENSOR_REDUCE);
        r.alu0 = ops[k];
        r.iparam[0] = 1;
        r.flags = NX_FLAG_NEGATE;
        r.op[1] = test_sb(NX_DT_INT32, 0, 4, 0, 2);
        r.op[0] = test_sb(NX_DT_FP32, 0, 4, 64, 1);
        test_run_ok(&st, NX_ENG_DVE, &r);
        for (uint32_t p = 0; p < 4; p++) {
            double v;
            test_sbuf_get(&st, 0, NX_DT_FP32, p, 64, 1, &v);
            test_assert_values(&v, &want[k][p], 1);
            uint32_t w;
            get_words(&st, p, 64, &w, 1);
            if (want[k][p] == 0.0 && w != 0) fail_msg("partition %u: fp32 bits 0x%08x, want +0", p, w);
        }
        r.op[0] = test_sb(NX_DT_BF16, 0, 4, 96, 1);
        test_run_ok(&st, NX_ENG_POOL, &r);
        for (uint32_t p = 0; p < 4; p++) {
            uint16_t h;
            memcpy(&h, nx_sbuf_at(&st, 0, p, 96), sizeof h);
            if (want[k][p] == 0.0 && h != 0) fail_msg("partition %u: bf16 bits 0x%04x, want +0", p, h);
        }
        r.op[0] = test_sb(NX_DT_INT32, 0, 4, 128, 1);
        test_run_ok(&st, NX_ENG_DVE, &r);
        for (uint32_t p = 0; p < 4; p++) {
            uint32_t x0 = (uint32_t)(int32_t)x[p][0], x1 = (uint32_t)(int32_t)x[p][1];
            uint32_t w, expect = 0u - (k == 0 ? (x0 & x1) : (x0 ^ x1));
            get_words(&st, p, 128, &w, 1);
            check_words(&w, &expect, 1, "negated reduce into int32");
        }
    }
    nx_state_free(&st);
}

/* 8- and 16-bit destinations get the low bits of the pattern; 8/16-bit
 * inputs are widened by value (int8 -1 is 0xFFFFFFFF, so a logical shift
 * right by 4 leaves 0xFF in the low byte). A float destination is refused
 * (the public nki.isa rule: a bitvec tensor_scalar takes integer dtypes). */
static void test_narrow_and_float_destinations(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double u8[3] = {200, 255, 1};
    test_sbuf_put(&st, 0, NX_DT_UINT8, 0, 0, 3, u8);
    nx_insn s = nx_insn_make(NX_OP_TENSOR_SCALAR);
    s.alu0 = NX_ALU_SHIFT_LEFT;
    s.op[1] = test_sb(NX_DT_UINT8, 0, 1, 0, 3);
    s.op[2] = nx_imm(1, NX_DT_INT32);
    const struct {
        nx_dtype dt;
        double want[3];
    } shl[] = {
        {NX_DT_UINT8, {144, 254, 2}},  /* 400 = 0x190, 510 = 0x1FE: low byte */
        {NX_DT_INT8, {-112, -2, 2}},   /* 0x90, 0xFE as int8 */
        {NX_DT_INT16, {400, 510, 2}},
        {NX_DT_UINT16, {400, 510, 2}},
    };
    for (size_t k = 0; k < sizeof shl / sizeof shl[0]; k++) {
        s.op[0] = test_sb(shl[k].dt, 0, 1, 64, 3);
        test_run_ok(&st, NX_ENG_DVE, &s);
        double got[3];
        test_sbuf_get(&st, 0, shl[k].dt, 0, 64, 3, got);
        test_assert_values(got, shl[k].want, 3);
    }
    const double i8 = -1;
    test_sbuf_put(&st, 0, NX_DT_INT8, 0, 128, 1, &i8);
    s.alu0 = NX_ALU_SHIFT_RIGHT;
    s.op[1] = test_sb(NX_DT_INT8, 0, 1, 128, 1);
    s.op[2] = nx_imm(4, NX_DT_INT32);
    const struct {
        nx_dtype dt;
        double want;
    } shr[] = {
        {NX_DT_INT8, -1}, {NX_DT_UINT8, 255}, {NX_DT_INT16, -1},
        {NX_DT_INT32, 268435455.0},
    };
    for (size_t k = 0; k < sizeof shr / sizeof shr[0]; k++) {
        s.op[0] = test_sb(shr[k].dt, 0, 1, 192, 1);
        test_run_ok(&st, NX_ENG_DVE, &s);
        double got;
        test_sbuf_get(&st, 0, shr[k].dt, 0, 192, 1, &got);
        test_assert_values(&got, &shr[k].want, 1);
    }
    /* a float destination is refused (integer dtypes only) */
    s.op[0] = test_sb(NX_DT_FP32, 0, 1, 192, 1);
    test_run_fails(&st, NX_ENG_DVE, &s, "dst: dtype fp32: a bitvec op (shift_right) takes integer dtypes");
    nx_state_free(&st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shift_left_bit31),
        cmocka_unit_test(test_shift_right_logical),
        cmocka_unit_test(test_and_or_xor_bit31),
        cmocka_unit_test(test_xorshift32_rng),
        cmocka_unit_test(test_tensor_scalar_masks),
        cmocka_unit_test(test_stt_and_scan),
        cmocka_unit_test(test_bitwise_reductions),
        cmocka_unit_test(test_reduce_negate_integer),
        cmocka_unit_test(test_narrow_and_float_destinations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
