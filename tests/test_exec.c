/* The functional executor's scheduling (semaphores, barriers, end, deadlock),
 * the generic validator (geometry, engine rules, start partitions, messages
 * naming the instruction) and the builder's allocators. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "isa/builder.h"
#include "isa/exec.h"
#include "isa/validate.h"
#include "support.h"

static nx_operand sbuf_row(uint32_t start, uint32_t parts, uint64_t off, uint32_t n) {
    return nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, start, parts, off, n);
}

static nx_insn memset_insn(nx_operand dst, double value) {
    nx_insn i = nx_insn_make(NX_OP_MEMSET);
    i.op[0] = dst;
    i.op[1] = nx_imm(value, NX_DT_FP32);
    return i;
}

/* Builds, validates and runs; returns the executor status and fills *st. */
static int build_and_run(nx_builder *b, nx_program *prog, nx_state *st, nx_error *err) {
    if (nx_builder_finish(b, prog, err) != 0) return -2;
    nx_geometry geo = test_geometry("trn2");
    if (nx_state_init(st, &geo, prog->cores, prog->hbm_bytes, prog->sem_count, err) != 0) return -3;
    return nx_exec_program(prog, st, err);
}

/* Stream order across engines is decided by semaphores only: the DVE copy is
 * listed in a stream the round-robin visits first, but must run after the
 * POOL memset it waits for. */
static void test_semaphore_orders_engines(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 1);
    nx_error err;
    uint32_t sem;
    uint64_t out_off;
    uint64_t shape[2] = {4, 8};
    assert_int_equal(nx_builder_tensor(b, "out", NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, &out_off, &err), 0);
    assert_int_equal(nx_builder_semaphore(b, &sem, &err), 0);

    nx_insn copy = test_insn2(NX_OP_TENSOR_COPY, sbuf_row(0, 4, 64, 8), sbuf_row(0, 4, 0, 8));
    nx_insn_wait(&copy, sem, 1);
    nx_insn_inc(&copy, sem, 1);
    assert_int_equal(nx_builder_emit(b, 0, NX_ENG_DVE, &copy, NULL, &err), 0);
    nx_insn fill = memset_insn(sbuf_row(0, 4, 0, 8), 3.5);
    nx_insn_inc(&fill, sem, 1);
    assert_int_equal(nx_builder_emit(b, 0, NX_ENG_POOL, &fill, NULL, &err), 0);
    nx_insn store = test_dma(nx_ap_hbm_rows(NX_DT_FP32, out_off, 4, 8, 8), sbuf_row(0, 4, 64, 8), 0);
    nx_insn_wait(&store, sem, 2);
    assert_int_equal(nx_builder_emit(b, 0, NX_ENG_SP, &store, NULL, &err), 0);

    nx_program prog;
    nx_state st;
    int rc = build_and_run(b, &prog, &st, &err);
    if (rc != 0) fail_msg("%s", err.msg);
    double got[32];
    test_hbm_get(&st, NX_DT_FP32, out_off, 32, got);
    for (int i = 0; i < 32; i++) assert_true(got[i] == 3.5);
    assert_int_equal(st.core[0].sems[sem], 2);
    nx_state_free(&st);
    nx_program_free(&prog);
    nx_builder_free(b);
}

/* Every engine waiting forever ends the run with an error naming each
 * blocked engine, the semaphore and the value. */
static void test_deadlock_names_blocked_engines(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 1);
    nx_error err;
    uint32_t s0, s1;
    assert_int_equal(nx_builder_semaphore(b, &s0, &err), 0);
    assert_int_equal(nx_builder_semaphore(b, &s1, &err), 0);
    nx_insn a = nx_insn_make(NX_OP_NOP);
    nx_insn_wait(&a, s0, 1);
    nx_insn_inc(&a, s1, 1);
    nx_insn c = nx_insn_make(NX_OP_NOP);
    nx_insn_wait(&c, s1, 1);
    nx_insn_inc(&c, s0, 1);
    assert_int_equal(nx_builder_emit(b, 0, NX_ENG_DVE, &a, NULL, &err), 0);
    assert_int_equal(nx_builder_emit(b, 0, NX_ENG_ACT, &c, NULL, &err), 0);
    nx_program prog;
    nx_state st;
    assert_int_equal(build_and_run(b, &prog, &st, &err), -1);
    assert_string_equal(err.msg,
                        "deadlock: core 0 dve #0 (nop) waits for sem0 >= 1 (is 0); "
                        "core 0 act #0 (nop) waits for sem1 >= 1 (is 0)");
    nx_state_free(&st);
    nx_program_free(&prog);
    nx_builder_free(b);
}

/* Two cores exchange data through shared HBM, ordered by core_barrier:
 * each writes its half, barriers, then reads the other core's half. */
static void test_barrier_orders_cores(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 2);
    nx_error err;
    uint64_t xoff, yoff;
    uint64_t shape[2] = {2, 16};
    assert_int_equal(nx_builder_tensor(b, "x", NX_DT_FP32, 2, shape, NX_ROLE_SCRATCH, &xoff, &err), 0);
    assert_int_equal(nx_builder_tensor(b, "y", NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, &yoff, &err), 0);
    uint32_t sem;
    assert_int_equal(nx_builder_semaphore(b, &sem, &err), 0);
    for (uint32_t c = 0; c < 2; c++) {
        uint64_t mine = xoff + c * 64, theirs = xoff + (1 - c) * 64;
        nx_insn fill = memset_insn(sbuf_row(0, 1, 0, 16), 10.0 + c);
        nx_insn_inc(&fill, sem, 1);
        nx_insn put = test_dma(nx_ap_hbm_rows(NX_DT_FP32, mine, 1, 16, 16), sbuf_row(0, 1, 0, 16), 0);
        nx_insn_wait(&put, sem, 1);
        nx_insn_inc(&put, sem, 1);
        nx_insn bar = nx_insn_make(NX_OP_CORE_BARRIER);
        nx_insn_wait(&bar, sem, 2);
        nx_insn_inc(&bar, sem, 1);
        nx_insn get = test_dma(sbuf_row(0, 1, 64, 16), nx_ap_hbm_rows(NX_DT_FP32, theirs, 1, 16, 16), 1);
        nx_insn_wait(&get, sem, 3);
        nx_insn_inc(&get, sem, 1);
        nx_insn out = test_dma(nx_ap_hbm_rows(NX_DT_FP32, yoff + c * 64, 1, 16, 16), sbuf_row(0, 1, 64, 16), 2);
        nx_insn_wait(&out, sem, 4);
        /* The executor visits core 0 before core 1, so without the barrier
         * core 0 would read core 1's half before core 1 has written it. */
        assert_int_equal(nx_builder_emit(b, c, NX_ENG_POOL, &fill, NULL, &err), 0);
        assert_int_equal(nx_builder_emit(b, c, NX_ENG_SP, &put, NULL, &err), 0);
        assert_int_equal(nx_builder_emit(b, c, NX_ENG_POOL, &bar, NULL, &err), 0);
        assert_int_equal(nx_builder_emit(b, c, NX_ENG_SP, &get, NULL, &err), 0);
        assert_int_equal(nx_builder_emit(b, c, NX_ENG_SP, &out, NULL, &err), 0);
    }
    nx_program prog;
    nx_state st;
    int rc = build_and_run(b, &prog, &st, &err);
    if (rc != 0) fail_msg("%s", err.msg);
    double got[32];
    test_hbm_get(&st, NX_DT_FP32, yoff, 32, got);
    for (int i = 0; i < 16; i++) assert_true(got[i] == 11.0);      /* core 0 got core 1's */
    for (int i = 16; i < 32; i++) assert_true(got[i] == 10.0);     /* and vice versa */
    assert_int_equal(st.core[0].barriers_done, 1);
    assert_int_equal(st.core[1].barriers_done, 1);
    nx_state_free(&st);
    nx_program_free(&prog);
    nx_builder_free(b);
}

/* A barrier one core never reaches is a deadlock, reported as such. */
static void test_barrier_deadlock(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 2);
    nx_error err;
    nx_insn bar = nx_insn_make(NX_OP_CORE_BARRIER);
    assert_int_equal(nx_builder_emit(b, 0, NX_ENG_POOL, &bar, NULL, &err), 0);
    nx_insn nop = nx_insn_make(NX_OP_NOP);
    assert_int_equal(nx_builder_emit(b, 1, NX_ENG_POOL, &nop, NULL, &err), 0);
    nx_program prog;
    nx_state st;
    assert_int_equal(build_and_run(b, &prog, &st, &err), -1);
    assert_string_equal(err.msg,
                        "deadlock: core 0 pool #0 (core_barrier) waits at barrier 1 for the other core");
    nx_state_free(&st);
    nx_program_free(&prog);
    nx_builder_free(b);
}

/* `end` stops a stream; it must be last. */
static void test_end_must_be_last(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 1);
    nx_error err;
    nx_insn end = nx_insn_make(NX_OP_END);
    nx_insn nop = nx_insn_make(NX_OP_NOP);
    assert_int_equal(nx_builder_emit(b, 0, NX_ENG_ACT, &end, NULL, &err), 0);
    assert_int_equal(nx_builder_emit(b, 0, NX_ENG_ACT, &nop, NULL, &err), 0);
    nx_program prog;
    assert_int_equal(nx_builder_finish(b, &prog, &err), -1);
    assert_string_equal(err.msg, "core 0 act #0 (end): 'end' must be the last instruction of its stream (1 follow)");
    nx_builder_free(b);
}

static void expect_invalid(nx_insn insn, nx_engine engine, uint64_t hbm, const char *msg) {
    nx_geometry geo = test_geometry("trn2");
    nx_error err;
    err.msg[0] = '\0';
    assert_int_equal(nx_insn_validate(&insn, engine, &geo, hbm, 2, &err), -1);
    assert_string_equal(err.msg, msg);
}

/* Geometry checks, each with its message. */
static void test_generic_validation(void **state) {
    (void)state;
    /* trn2: 224 KiB per partition = 229376 bytes. */
    expect_invalid(test_insn2(NX_OP_TENSOR_COPY, sbuf_row(0, 128, 229376 - 16, 8), sbuf_row(0, 128, 0, 8)), NX_ENG_DVE, 0,
                   "dst: bytes [229360, 229392) of each partition outside SBUF's 229376 bytes per partition");
    expect_invalid(test_insn2(NX_OP_TENSOR_COPY, sbuf_row(64, 65, 0, 8), sbuf_row(0, 65, 0, 8)), NX_ENG_DVE, 0,
                   "dst: partitions [64, 129) exceed the 128 partitions of SBUF");
    expect_invalid(test_insn2(NX_OP_TENSOR_COPY, sbuf_row(32, 64, 0, 8), sbuf_row(0, 64, 0, 8)), NX_ENG_DVE, 0,
                   "dst: start partition 32 not allowed for 64 partitions (> 64 partitions: 0; "
                   "> 32: a multiple of 64; else a multiple of 32)");
    expect_invalid(test_insn2(NX_OP_TENSOR_COPY, sbuf_row(0, 1, 0, 8), sbuf_row(5, 1, 0, 8)), NX_ENG_DVE, 0,
                   "in: start partition 5 not allowed for 1 partitions (> 64 partitions: 0; "
                   "> 32: a multiple of 64; else a multiple of 32)");
    /* The same start partition is fine for DMA, which is not a compute engine. */
    {
        nx_geometry geo = test_geometry("trn2");
        nx_error err;
        nx_insn ok = test_dma(sbuf_row(5, 1, 0, 8), nx_ap_hbm_rows(NX_DT_FP32, 0, 1, 8, 8), 0);
        if (nx_insn_validate(&ok, NX_ENG_SP, &geo, 64, 2, &err) != 0) fail_msg("%s", err.msg);
    }
    expect_invalid(test_insn2(NX_OP_TENSOR_COPY, nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 1, 0, 4097), sbuf_row(0, 1, 0, 4097)),
                   NX_ENG_DVE, 0,
                   "dst: bytes [0, 16388) of each partition outside PSUM's 16384 bytes per partition");
    expect_invalid(test_insn2(NX_OP_TENSOR_COPY, nx_ap_tile(NX_OPK_PSUM, NX_DT_BF16, 0, 1, 0, 4097), sbuf_row(0, 1, 0, 4097)),
                   NX_ENG_DVE, 0, "dst: 4097 elements per partition exceed the PSUM free-size limit of 4096");
    expect_invalid(test_insn2(NX_OP_TENSOR_COPY, sbuf_row(0, 1, 0, 8), nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 1, 0, 8)),
                   NX_ENG_POOL, 0, "operand 'in': engine pool cannot read psum");
    expect_invalid(test_dma(nx_ap_hbm_rows(NX_DT_FP32, 0, 4, 8, 8), sbuf_row(0, 4, 0, 8), 0), NX_ENG_SP, 64,
                   "dst: HBM bytes [0, 128) outside the program's HBM [0, 64)");
    expect_invalid(test_insn2(NX_OP_TENSOR_COPY, sbuf_row(0, 1, 2, 8), sbuf_row(0, 1, 0, 8)), NX_ENG_DVE, 0,
                   "dst: offset 2 is not a multiple of the fp32 element size 4");
    expect_invalid(test_insn2(NX_OP_TENSOR_COPY, sbuf_row(0, 1, 0, 8), sbuf_row(0, 1, 0, 8)), NX_ENG_PE, 0,
                   "'tensor_copy' cannot run on engine pe");
    nx_insn waits = test_insn2(NX_OP_TENSOR_COPY, sbuf_row(0, 1, 0, 8), sbuf_row(0, 1, 64, 8));
    nx_insn_wait(&waits, 7, 1);
    expect_invalid(waits, NX_ENG_DVE, 0, "waits on semaphore 7; the program has 2");
    nx_insn missing = nx_insn_make(NX_OP_TENSOR_COPY);
    missing.op[0] = sbuf_row(0, 1, 0, 8);
    expect_invalid(missing, NX_ENG_DVE, 0, "missing required operand 'in'");
    nx_insn negative = test_insn2(NX_OP_TENSOR_COPY, sbuf_row(0, 1, 0, 8), sbuf_row(0, 1, 0, 8));
    negative.op[1].stride[0] = -1;
    expect_invalid(negative, NX_ENG_DVE, 0, "in: bytes [-28, 4) of each partition outside SBUF's 229376 bytes per partition");
}

/* Index patterns are computed in 64-bit integers: a pattern whose values
 * leave the int64 range is invalid (it would overflow, undefined behaviour,
 * in isa/access.c), one that reaches the range's ends is fine; and a span
 * past 64 bits is printed whole, not cut to 64 bits. */
static void test_pattern_and_wide_bounds(void **state) {
    (void)state;
    nx_insn iota = nx_insn_make(NX_OP_IOTA);
    iota.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_INT32, 0, 1, 0, 2);
    int32_t down = -1;
    uint32_t two = 2;
    iota.op[1] = nx_pattern(INT64_MIN, 0, 1, 1, &down, &two);
    expect_invalid(iota, NX_ENG_POOL, 0,
                   "operand 'pattern': pattern values [-9223372036854775809, -9223372036854775808] "
                   "leave the signed 64-bit range");
    iota.op[1].pattern_base = INT64_MIN + 1; /* reaches INT64_MIN exactly */
    nx_geometry geo = test_geometry("trn2");
    nx_error err;
    if (nx_insn_validate(&iota, NX_ENG_POOL, &geo, 0, 2, &err) != 0) fail_msg("%s", err.msg);
    /* the channel multiplier counts too: p = 127 of cm = 2^31 - 1 */
    int32_t up = 1;
    iota.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_INT32, 0, 128, 0, 2);
    iota.op[1] = nx_pattern(INT64_MAX - 127 * (int64_t)INT32_MAX, INT32_MAX, 128, 1, &up, &two);
    expect_invalid(iota, NX_ENG_POOL, 0,
                   "operand 'pattern': pattern values [9223371764124352638, 9223372036854775808] "
                   "leave the signed 64-bit range");
    iota.op[1].pattern_base -= 1;
    if (nx_insn_validate(&iota, NX_ENG_POOL, &geo, 0, 2, &err) != 0) fail_msg("%s", err.msg);

    nx_insn far = test_dma(nx_ap_hbm_rows(NX_DT_FP32, 0, 1, 0, 4), sbuf_row(0, 1, 0, 4), 0);
    far.op[0].offset = 4294967296ull;
    far.op[0].stride[0] = INT32_MIN;
    far.op[0].count[0] = INT32_MAX;
    expect_invalid(far, NX_ENG_SP, 64,
                   "dst: HBM bytes [-18446744052234715136, 4294967300) outside the program's HBM [0, 64)");
}

/* nx_program_validate names core, engine, index and mnemonic. */
static void test_program_validate_names_instruction(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 2);
    nx_error err;
    nx_insn ok = memset_insn(sbuf_row(0, 128, 0, 8), 1.0);
    nx_insn bad = memset_insn(sbuf_row(0, 128, 229376, 8), 1.0);
    assert_int_equal(nx_builder_emit(b, 1, NX_ENG_DVE, &ok, NULL, &err), 0);
    assert_int_equal(nx_builder_emit(b, 1, NX_ENG_DVE, &bad, NULL, &err), 0);
    nx_program prog;
    assert_int_equal(nx_builder_finish(b, &prog, &err), -1);
    assert_string_equal(err.msg, "core 1 dve #1 (memset): dst: bytes [229376, 229408) of each partition "
                                 "outside SBUF's 229376 bytes per partition");
    nx_builder_free(b);
}

static void test_builder_allocators(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 1);
    nx_error err;
    uint64_t off;
    assert_int_equal(nx_builder_sbuf_alloc(b, 0, 200000, 64, &off, &err), 0);
    assert_int_equal(off, 0);
    assert_int_equal(nx_builder_sbuf_alloc(b, 0, 30000, 64, &off, &err), -1);
    assert_string_equal(err.msg, "SBUF overflow on core 0: 30000 bytes per partition requested, 29376 of 229376 left");
    /* PSUM: a bank-sized request never straddles two banks. */
    assert_int_equal(nx_builder_psum_alloc(b, 0, 1024, &off, &err), 0);
    assert_int_equal(off, 0);
    assert_int_equal(nx_builder_psum_alloc(b, 0, 2048, &off, &err), 0);
    assert_int_equal(off, 2048);
    assert_int_equal(nx_builder_psum_alloc(b, 0, 512, &off, &err), 0);
    assert_int_equal(off, 4096);
    assert_int_equal(nx_builder_psum_alloc(b, 0, 16384, &off, &err), -1);
    nx_builder_free(b);
}

/* Footprints: boxes per operand, accumulate makes dst read too, indirect
 * DMA widens the indexed operand to every row the offsets may name. */
static void test_footprint(void **state) {
    (void)state;
    nx_footprint fp[NX_MAX_OPERANDS];
    nx_insn c = test_insn2(NX_OP_TENSOR_COPY, sbuf_row(32, 32, 128, 16), nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 32, 0, 16));
    assert_int_equal(nx_insn_footprint(&c, fp), 2);
    assert_int_equal(fp[0].kind, NX_OPK_SBUF);
    assert_int_equal(fp[0].p_lo, 32);
    assert_int_equal(fp[0].p_hi, 64);
    assert_int_equal(fp[0].lo, 128);
    assert_int_equal(fp[0].hi, 192);
    assert_true(fp[0].write && !fp[0].read);
    assert_true(fp[1].read && !fp[1].write);

    nx_insn d = test_dma(nx_ap_hbm_rows(NX_DT_FP32, 1024, 4, 100, 10), sbuf_row(0, 4, 0, 10), 0);
    d.flags = NX_FLAG_ACCUMULATE;
    assert_int_equal(nx_insn_footprint(&d, fp), 2);
    assert_int_equal(fp[0].lo, 1024);
    assert_int_equal(fp[0].hi, 1024 + (3 * 100 + 10) * 4);
    assert_true(fp[0].read && fp[0].write);

    nx_insn g = test_dma(sbuf_row(0, 4, 0, 10), nx_ap_hbm_rows(NX_DT_FP32, 0, 4, 10, 10), 0);
    g.op[2] = nx_ap_tile(NX_OPK_SBUF, NX_DT_INT32, 0, 4, 4096, 1);
    g.iparam[1] = 50;
    assert_int_equal(nx_insn_footprint(&g, fp), 3);
    assert_int_equal(fp[1].lo, 0);
    assert_int_equal(fp[1].hi, 50 * 10 * 4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_semaphore_orders_engines),
        cmocka_unit_test(test_deadlock_names_blocked_engines),
        cmocka_unit_test(test_barrier_orders_cores),
        cmocka_unit_test(test_barrier_deadlock),
        cmocka_unit_test(test_end_must_be_last),
        cmocka_unit_test(test_generic_validation),
        cmocka_unit_test(test_pattern_and_wide_bounds),
        cmocka_unit_test(test_program_validate_names_instruction),
        cmocka_unit_test(test_builder_allocators),
        cmocka_unit_test(test_footprint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
