/* NaN rules of the compute engines, checked on the stored bits
 * (docs/parts/dtypes.md "Conversion rules", docs/parts/insns-dve.md "The
 * ALU"):
 *   - every store of an engine value to fp32 (tensor_copy on DVE/ACT/POOL,
 *     activation, the ALU instructions, into SBUF or PSUM) writes the
 *     canonical quiet NaN of the NaN's sign, 0x7fc00000 / 0xffc00000,
 *     whatever the payload: signalling, quiet with payload bits, negative;
 *   - bit copies (DMA between equal dtypes, transpose) keep the payload;
 *   - an arithmetic ALU op returns a's NaN if a is NaN, else b's, and an
 *     invalid operation on non-NaN inputs (0/0, Inf - Inf, 0 * Inf) the
 *     positive NaN, so the stored sign is fixed by the operands, not by the
 *     host (x86 makes 0/0 negative) or by the compiler's operand order.
 * Inputs are written as raw bits, since an engine value cannot carry a
 * payload through test_sbuf_put. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "isa/builder.h"
#include "isa/dtype.h"
#include "isa/insn.h"
#include "support.h"

enum { N = 6 };

/* Payload NaNs of both signs (signalling and quiet), and three ordinary
 * values whose bits must pass unchanged. */
static const uint32_t in_bits[N] = {0x7f812345u, 0xff812345u, 0x7fc12345u,
                                    0xffc00001u, 0x7f800000u, 0xbf800000u};
static const uint32_t canonical[N] = {0x7fc00000u, 0xffc00000u, 0x7fc00000u,
                                      0xffc00000u, 0x7f800000u, 0xbf800000u};

static void put_bits(uint8_t *at, const uint32_t *bits, size_t n) {
    memcpy(at, bits, n * sizeof *bits); /* little-endian host, like the memories */
}

static void check_bits(const uint8_t *at, const uint32_t *want, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++) {
        uint32_t got;
        memcpy(&got, at + 4 * i, sizeof got);
        if (got != want[i])
            fail_msg("%s: element %zu: got 0x%08x, want 0x%08x", what, i, got, want[i]);
    }
}

/* Every fp32 value store: tensor_copy on the three engines that run it (into
 * SBUF and, on DVE and ACT, PSUM), activation identity, tensor_scalar add 0,
 * tensor_tensor max with -inf, select, memset of the stored NaN. */
static void test_fp32_store_canonical_nan(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    for (uint32_t p = 0; p < 2; p++) put_bits(nx_sbuf_at(&st, 0, p, 0), in_bits, N);
    const nx_operand src = test_sb(NX_DT_FP32, 0, 2, 0, N);
    const nx_engine copy_engines[3] = {NX_ENG_DVE, NX_ENG_ACT, NX_ENG_POOL};
    for (int k = 0; k < 3; k++) {
        nx_insn c = nx_insn_make(NX_OP_TENSOR_COPY);
        c.op[0] = test_sb(NX_DT_FP32, 0, 2, 256, N);
        c.op[1] = src;
        memset(nx_sbuf_at(&st, 0, 1, 256), 0, 4 * N);
        test_run_ok(&st, copy_engines[k], &c);
        check_bits(nx_sbuf_at(&st, 0, 1, 256), canonical, N, "tensor_copy to SBUF");
        if (copy_engines[k] == NX_ENG_POOL) continue; /* POOL cannot reach PSUM */
        c.op[0] = nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 2, 64, N);
        test_run_ok(&st, copy_engines[k], &c);
        check_bits(nx_psum_at(&st, 0, 1, 64), canonical, N, "tensor_copy to PSUM");
    }

    /* A strided destination (stride -1: reversed) takes the element-wise
     * path of the fp32 store rather than the contiguous one. */
    {
        int32_t rev = -1;
        uint32_t cnt = N;
        nx_insn c = nx_insn_make(NX_OP_TENSOR_COPY);
        c.op[0] = nx_ap(NX_OPK_SBUF, NX_DT_FP32, 0, 2, 0, 1536 + 4 * (N - 1), 1, &rev, &cnt);
        c.op[1] = src;
        test_run_ok(&st, NX_ENG_DVE, &c);
        uint32_t reversed[N];
        for (int i = 0; i < N; i++) reversed[i] = canonical[N - 1 - i];
        check_bits(nx_sbuf_at(&st, 0, 1, 1536), reversed, N, "tensor_copy, reversed dst");
    }

    nx_insn a = nx_insn_make(NX_OP_ACTIVATION);
    a.func = NX_ACT_IDENTITY;
    a.op[0] = test_sb(NX_DT_FP32, 0, 2, 512, N);
    a.op[1] = src;
    a.op[2] = nx_imm(1.0, NX_DT_FP32);
    a.op[3] = nx_imm(0.0, NX_DT_FP32);
    test_run_ok(&st, NX_ENG_ACT, &a);
    check_bits(nx_sbuf_at(&st, 0, 0, 512), canonical, N, "activation identity");

    nx_insn ts = nx_insn_make(NX_OP_TENSOR_SCALAR);
    ts.alu0 = NX_ALU_ADD;
    ts.op[0] = test_sb(NX_DT_FP32, 0, 2, 768, N);
    ts.op[1] = src;
    ts.op[2] = nx_imm(0.0, NX_DT_FP32);
    test_run_ok(&st, NX_ENG_DVE, &ts);
    check_bits(nx_sbuf_at(&st, 0, 0, 768), canonical, N, "tensor_scalar add 0");

    nx_insn mx = nx_insn_make(NX_OP_TENSOR_SCALAR);
    mx.alu0 = NX_ALU_MAX;
    mx.op[0] = test_sb(NX_DT_FP32, 0, 2, 1024, N);
    mx.op[1] = src;
    mx.op[2] = nx_imm(-INFINITY, NX_DT_FP32);
    test_run_ok(&st, NX_ENG_POOL, &mx);
    check_bits(nx_sbuf_at(&st, 0, 1, 1024), canonical, N, "tensor_scalar max on POOL");

    nx_insn sel = nx_insn_make(NX_OP_SELECT);
    sel.op[0] = test_sb(NX_DT_FP32, 0, 2, 1280, N);
    sel.op[1] = src; /* every element is nonzero (NaN counts as true) */
    sel.op[2] = src;
    sel.op[3] = nx_imm(0.0, NX_DT_FP32);
    test_run_ok(&st, NX_ENG_DVE, &sel);
    check_bits(nx_sbuf_at(&st, 0, 0, 1280), canonical, N, "select");
    nx_state_free(&st);
}

/* Bit copies are not stores of engine values: DMA between equal dtypes and
 * the DVE transpose keep the payload. */
static void test_bit_copies_keep_payload(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    put_bits(nx_sbuf_at(&st, 0, 0, 0), in_bits, N);
    nx_insn d = nx_insn_make(NX_OP_DMA_COPY);
    d.op[0] = test_sb(NX_DT_FP32, 3, 1, 64, N);
    d.op[1] = test_sb(NX_DT_FP32, 0, 1, 0, N);
    test_run_ok(&st, NX_ENG_SP, &d);
    check_bits(nx_sbuf_at(&st, 0, 3, 64), in_bits, N, "dma_copy fp32 -> fp32");
    nx_insn t = nx_insn_make(NX_OP_TRANSPOSE);
    t.op[0] = test_sb(NX_DT_FP32, 0, N, 128, 1);
    t.op[1] = test_sb(NX_DT_FP32, 0, 1, 0, N);
    test_run_ok(&st, NX_ENG_DVE, &t);
    for (uint32_t p = 0; p < N; p++)
        check_bits(nx_sbuf_at(&st, 0, p, 128), &in_bits[p], 1, "DVE transpose");
    nx_state_free(&st);
}

/* The fp32 store of a whole row (contiguous runs take a 4-lane path,
 * strided ones an element-wise one) gives the bits of nx_dtype_store, the
 * store rule's reference (tested against an independent encoder in
 * test_dtype.c), for fp32 values with NaN payloads, infinities, signed
 * zeros and subnormals, and for int32 values that need one rounding. */
static void test_fp32_store_paths_agree(void **state) {
    (void)state;
    enum { P = 4, F = 1027 }; /* not a multiple of 4: a scalar tail */
    nx_state st;
    test_state(&st, 1, 4096, 1);
    test_rng r = {77};
    static uint32_t fbits[P][F];
    static int32_t ivals[P][F];
    static const uint32_t specials[] = {0x7f812345u, 0xff812345u, 0x7fc00001u, 0xffffffffu,
                                        0x7f800000u, 0xff800000u, 0x80000000u, 0x00000001u};
    for (uint32_t p = 0; p < P; p++) {
        for (int e = 0; e < F; e++) {
            uint64_t x = test_rng_next(&r);
            fbits[p][e] = (x & 7) == 0 ? specials[(x >> 3) & 7] : (uint32_t)(x >> 32);
            ivals[p][e] = (int32_t)(uint32_t)(x >> 16);
        }
        memcpy(nx_sbuf_at(&st, 0, p, 0), fbits[p], sizeof fbits[p]);
        memcpy(nx_sbuf_at(&st, 0, p, 8192), ivals[p], sizeof ivals[p]);
    }
    const int32_t stride2 = 2;
    const uint32_t count = F;
    const struct {
        nx_dtype src_dt;
        uint64_t src_off;
        int strided;
    } cases[] = {
        {NX_DT_FP32, 0, 0}, {NX_DT_FP32, 0, 1}, {NX_DT_INT32, 8192, 0}, {NX_DT_INT32, 8192, 1}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        nx_insn c = nx_insn_make(NX_OP_TENSOR_COPY);
        c.op[0] = cases[k].strided
                      ? nx_ap(NX_OPK_SBUF, NX_DT_FP32, 0, P, 0, 16384, 1, &stride2, &count)
                      : test_sb(NX_DT_FP32, 0, P, 16384, F);
        c.op[1] = test_sb(cases[k].src_dt, 0, P, cases[k].src_off, F);
        test_run_ok(&st, NX_ENG_DVE, &c);
        const uint64_t dst_step = cases[k].strided ? 8 : 4;
        for (uint32_t p = 0; p < P; p++)
            for (int e = 0; e < F; e++) {
                const uint8_t *src = nx_sbuf_at(&st, 0, p, cases[k].src_off + 4 * (uint64_t)e);
                uint8_t want[4];
                nx_dtype_store(NX_DT_FP32, want, nx_dtype_load(cases[k].src_dt, src));
                const uint8_t *got = nx_sbuf_at(&st, 0, p, 16384 + dst_step * (uint64_t)e);
                if (memcmp(got, want, 4) != 0)
                    fail_msg("case %zu [%u, %d]: bits differ from nx_dtype_store", k, p, e);
            }
    }
    nx_state_free(&st);
}

typedef struct nan_case {
    nx_alu_op op;
    double a, b;
    uint32_t want; /* the fp32 bits stored */
} nan_case;

/* Which NaN an arithmetic op returns, on the bits an fp32 store writes. */
static void test_alu_nan_choice(void **state) {
    (void)state;
    const double qn = NAN, nqn = -NAN;
    const nan_case c[] = {
        {NX_ALU_ADD, qn, nqn, 0x7fc00000u},       /* two NaNs: a's */
        {NX_ALU_ADD, nqn, qn, 0xffc00000u},
        {NX_ALU_MULTIPLY, nqn, qn, 0xffc00000u},
        {NX_ALU_SUBTRACT, 1.0, nqn, 0xffc00000u}, /* one NaN: that one */
        {NX_ALU_DIVIDE, nqn, 2.0, 0xffc00000u},
        {NX_ALU_DIVIDE, 0.0, 0.0, 0x7fc00000u},   /* invalid: +NaN (x86: -NaN) */
        {NX_ALU_DIVIDE, -0.0, 0.0, 0x7fc00000u},
        {NX_ALU_SUBTRACT, INFINITY, INFINITY, 0x7fc00000u},
        {NX_ALU_ADD, -INFINITY, INFINITY, 0x7fc00000u},
        {NX_ALU_MULTIPLY, 0.0, -INFINITY, 0x7fc00000u},
        {NX_ALU_DIVIDE, -INFINITY, INFINITY, 0x7fc00000u},
        {NX_ALU_MAX, nqn, qn, 0xffc00000u},
        {NX_ALU_MIN, 1.0, nqn, 0xffc00000u},
        {NX_ALU_ABS_MAX, nqn, qn, 0x7fc00000u},   /* |a|: the sign goes */
        {NX_ALU_POW, nqn, 2.0, 0xffc00000u},
        {NX_ALU_POW, 2.0, nqn, 0xffc00000u},
        {NX_ALU_POW, -8.0, 1.0 / 3.0, 0x7fc00000u}, /* invalid: +NaN */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        double r = nx_alu_apply(c[i].op, c[i].a, c[i].b);
        uint8_t out[4];
        nx_dtype_store(NX_DT_FP32, out, r);
        uint32_t got;
        memcpy(&got, out, sizeof got);
        if (got != c[i].want)
            fail_msg("case %zu: %s(%g, %g) stores 0x%08x, want 0x%08x", i, nx_alu_name(c[i].op),
                     c[i].a, c[i].b, got, c[i].want);
    }
}

/* The same rule through an instruction and the fast fp32 store: 0/0 and
 * Inf - Inf over a whole row store 0x7fc00000. */
static void test_alu_nan_through_tensor_tensor(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double a[4] = {0.0, INFINITY, -INFINITY, 0.0};
    const double b[4] = {0.0, INFINITY, -INFINITY, -0.0};
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 0, 4, a);
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 64, 4, b);
    nx_insn t = nx_insn_make(NX_OP_TENSOR_TENSOR);
    t.alu0 = NX_ALU_DIVIDE;
    t.op[0] = test_sb(NX_DT_FP32, 0, 1, 128, 4);
    t.op[1] = test_sb(NX_DT_FP32, 0, 1, 0, 4);
    t.op[2] = test_sb(NX_DT_FP32, 0, 1, 64, 4);
    test_run_ok(&st, NX_ENG_DVE, &t);
    const uint32_t want[4] = {0x7fc00000u, 0x7fc00000u, 0x7fc00000u, 0x7fc00000u};
    check_bits(nx_sbuf_at(&st, 0, 0, 128), want, 4, "divide");
    t.alu0 = NX_ALU_SUBTRACT;
    test_run_ok(&st, NX_ENG_DVE, &t);
    const uint32_t want_sub[4] = {0, 0x7fc00000u, 0x7fc00000u, 0};
    check_bits(nx_sbuf_at(&st, 0, 0, 128), want_sub, 4, "subtract");
    nx_state_free(&st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp32_store_canonical_nan),
        cmocka_unit_test(test_fp32_store_paths_agree),
        cmocka_unit_test(test_bit_copies_keep_payload),
        cmocka_unit_test(test_alu_nan_choice),
        cmocka_unit_test(test_alu_nan_through_tensor_tensor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
