/* Runs that cannot finish on the model: deadlocks end with an error naming
 * every blocked engine (core, engine, index, mnemonic) and what it waits for,
 * in the functional executor's words, never a hang; faults carry the
 * executor's message. After either, the same process runs the next program
 * normally (the platform is elaborated once and reused). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <string.h>
#include <cmocka.h>

#include "isa/builder.h"
#include "isa/exec.h"
#include "sim/model.h"
#include "support.h"

static void emit(nx_builder *b, uint32_t core, nx_engine e, const nx_insn *in) {
    nx_error err;
    if (nx_builder_emit(b, core, e, in, NULL, &err) != 0) fail_msg("emit: %s", err.msg);
}

static nx_operand sb(uint32_t parts, uint64_t off, uint32_t n) {
    return nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, parts, off, n);
}

static nx_insn copy(uint64_t dst, uint64_t src) {
    nx_insn i = nx_insn_make(NX_OP_TENSOR_COPY);
    i.op[0] = sb(4, dst, 8);
    i.op[1] = sb(4, src, 8);
    return i;
}

/* Runs prog on the model and on the functional executor; both must fail
 * with the same message, which must contain `want`. */
static void both_fail(const nx_machine *m, const nx_program *prog, const char *want) {
    nx_state st, ref;
    nx_error err, ref_err;
    if (nx_state_init(&st, &m->geo, prog->cores, prog->hbm_bytes, prog->sem_count, &err) != 0 ||
        nx_state_init(&ref, &m->geo, prog->cores, prog->hbm_bytes, prog->sem_count, &err) != 0)
        fail_msg("%s", err.msg);
    nx_sim_options opt = {1, 0};
    nx_sim_result r;
    memset(&err, 0, sizeof err);
    assert_int_equal(nx_sim_run(m, prog, &st, &opt, &r, &err), -1);
    assert_int_equal(nx_exec_program(prog, &ref, &ref_err), -1);
    if (!strstr(err.msg, want)) fail_msg("model says '%s', want '%s'", err.msg, want);
    assert_string_equal(err.msg, ref_err.msg);
    assert_null(r.log);
    nx_state_free(&st);
    nx_state_free(&ref);
}

static nx_program finish(nx_builder *b) {
    nx_program p;
    nx_error err;
    if (nx_builder_finish(b, &p, &err) != 0) fail_msg("finish: %s", err.msg);
    nx_builder_free(b);
    return p;
}

/* A small program that must run normally, timed the same every time. */
static double healthy_run(const nx_machine *m) {
    nx_builder *b = nx_builder_new(&m->geo, 1);
    nx_error err;
    uint32_t s;
    assert_int_equal(nx_builder_semaphore(b, &s, &err), 0);
    nx_insn ms = nx_insn_make(NX_OP_MEMSET);
    ms.op[0] = sb(4, 0, 8);
    ms.op[1] = nx_imm(3.0, NX_DT_FP32);
    nx_insn_inc(&ms, s, 1);
    emit(b, 0, NX_ENG_POOL, &ms);
    nx_insn cp = copy(64, 0);
    nx_insn_wait(&cp, s, 1);
    emit(b, 0, NX_ENG_DVE, &cp);
    nx_program p = finish(b);
    nx_state st;
    if (nx_state_init(&st, &m->geo, 1, p.hbm_bytes, p.sem_count, &err) != 0) fail_msg("%s", err.msg);
    nx_sim_options opt = {0, 0};
    nx_sim_result r;
    if (nx_sim_run(m, &p, &st, &opt, &r, &err) != 0) fail_msg("healthy run: %s", err.msg);
    double v;
    test_sbuf_get(&st, 0, NX_DT_FP32, 3, 64 + 28, 1, &v);
    assert_true(v == 3.0);
    double t = r.total_ns;
    nx_sim_result_free(&r);
    nx_state_free(&st);
    nx_program_free(&p);
    return t;
}

static void wait_for_nothing(void **state) {
    (void)state;
    nx_machine m = test_machine("trn2");
    double before = healthy_run(&m);
    nx_builder *b = nx_builder_new(&m.geo, 1);
    nx_error err;
    uint32_t s;
    assert_int_equal(nx_builder_semaphore(b, &s, &err), 0);
    nx_insn ms = nx_insn_make(NX_OP_MEMSET);
    ms.op[0] = sb(4, 0, 8);
    ms.op[1] = nx_imm(1.0, NX_DT_FP32);
    emit(b, 0, NX_ENG_POOL, &ms);
    nx_insn cp = copy(64, 0);
    emit(b, 0, NX_ENG_DVE, &cp);
    nx_insn_wait(&cp, s, 1);
    emit(b, 0, NX_ENG_DVE, &cp);
    nx_program p = finish(b);
    both_fail(&m, &p, "deadlock: core 0 dve #1 (tensor_copy) waits for sem0 >= 1 (is 0)");
    nx_program_free(&p);
    /* the platform is reusable and times the same program the same */
    assert_true(healthy_run(&m) == before);
}

/* DVE waits for ACT's increment, ACT for DVE's: both are named. */
static void cycle_between_engines(void **state) {
    (void)state;
    nx_machine m = test_machine("trn2");
    nx_builder *b = nx_builder_new(&m.geo, 1);
    nx_error err;
    uint32_t s0, s1;
    assert_int_equal(nx_builder_semaphore(b, &s0, &err), 0);
    assert_int_equal(nx_builder_semaphore(b, &s1, &err), 0);
    nx_insn a = copy(64, 0), d = copy(128, 0);
    nx_insn_inc(&a, s1, 1);
    emit(b, 0, NX_ENG_ACT, &a); /* ACT #0 runs and bumps s1 to 1 */
    nx_insn_wait(&d, s1, 2);
    nx_insn_inc(&d, s0, 1);
    emit(b, 0, NX_ENG_DVE, &d);
    nx_insn_wait(&a, s0, 1);
    emit(b, 0, NX_ENG_ACT, &a);
    nx_program p = finish(b);
    both_fail(&m, &p,
              "deadlock: core 0 dve #0 (tensor_copy) waits for sem1 >= 2 (is 1); "
              "core 0 act #1 (tensor_copy) waits for sem0 >= 1 (is 0)");
    nx_program_free(&p);
}

/* Core 1 never reaches its barrier: core 0 waits at barrier 1. */
static void barrier_without_partner(void **state) {
    (void)state;
    nx_machine m = test_machine("trn2");
    nx_builder *b = nx_builder_new(&m.geo, 2);
    nx_error err;
    uint32_t s;
    assert_int_equal(nx_builder_semaphore(b, &s, &err), 0);
    nx_insn bar = nx_insn_make(NX_OP_CORE_BARRIER);
    emit(b, 0, NX_ENG_SP, &bar);
    nx_insn_wait(&bar, s, 1);
    emit(b, 1, NX_ENG_POOL, &bar);
    nx_program p = finish(b);
    both_fail(&m, &p,
              "deadlock: core 0 sp #0 (core_barrier) waits at barrier 1 for the other core; "
              "core 1 pool #0 (core_barrier) waits for sem0 >= 1 (is 0)");
    nx_program_free(&p);
    /* the same program with core 1's semaphore satisfied by its own DVE runs */
    b = nx_builder_new(&m.geo, 2);
    assert_int_equal(nx_builder_semaphore(b, &s, &err), 0);
    nx_insn free_bar = nx_insn_make(NX_OP_CORE_BARRIER);
    emit(b, 0, NX_ENG_SP, &free_bar);
    emit(b, 1, NX_ENG_POOL, &bar);
    nx_insn bump = nx_insn_make(NX_OP_NOP);
    nx_insn_inc(&bump, s, 1);
    emit(b, 1, NX_ENG_DVE, &bump);
    p = finish(b);
    nx_state st;
    if (nx_state_init(&st, &m.geo, 2, p.hbm_bytes, p.sem_count, &err) != 0) fail_msg("%s", err.msg);
    nx_sim_options opt = {0, 0};
    nx_sim_result r;
    if (nx_sim_run(&m, &p, &st, &opt, &r, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(st.core[0].barriers_done, 1);
    assert_int_equal(st.core[1].barriers_done, 1);
    nx_sim_result_free(&r);
    nx_state_free(&st);
    nx_program_free(&p);
}

/* A data-dependent fault (indirect DMA out of bounds) stops the run with the
 * executor's message, while other engines are busy and blocked. */
static void fault_in_a_transfer(void **state) {
    (void)state;
    nx_machine m = test_machine("trn2");
    double before = healthy_run(&m);
    nx_builder *b = nx_builder_new(&m.geo, 1);
    nx_error err;
    uint64_t off;
    uint64_t shape[2] = {10, 8};
    assert_int_equal(nx_builder_tensor(b, "table", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, &off, &err), 0);
    uint32_t s;
    assert_int_equal(nx_builder_semaphore(b, &s, &err), 0);
    /* offsets = 8 + p for p < 4: row 10 and 11 are out of bounds [0, 10) */
    const int32_t one = 1;
    const uint32_t n1 = 1;
    nx_insn io = nx_insn_make(NX_OP_IOTA);
    io.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_INT32, 0, 4, 4096, 1);
    io.op[1] = nx_pattern(8, 1, 4, 1, &one, &n1);
    nx_insn_inc(&io, s, 1);
    emit(b, 0, NX_ENG_POOL, &io);
    nx_insn g = nx_insn_make(NX_OP_DMA_COPY);
    g.op[0] = sb(4, 0, 8);
    g.op[1] = nx_ap_hbm_rows(NX_DT_FP32, off, 4, 8, 8);
    g.op[2] = nx_ap_tile(NX_OPK_SBUF, NX_DT_INT32, 0, 4, 4096, 1);
    g.iparam[0] = 5;
    g.iparam[1] = 10;
    nx_insn_wait(&g, s, 1);
    nx_insn_inc(&g, s, 1);
    emit(b, 0, NX_ENG_SP, &g);
    nx_insn cp = copy(64, 0);
    nx_insn_wait(&cp, s, 2); /* blocked until the gather's increment, which never comes */
    emit(b, 0, NX_ENG_DVE, &cp);
    /* a long independent chain on ACT keeps running past the fault time */
    for (int i = 0; i < 200; i++) {
        nx_insn a = copy(256 + 64 * (uint64_t)(i % 2), 256 + 64 * (uint64_t)((i + 1) % 2));
        emit(b, 0, NX_ENG_ACT, &a);
    }
    nx_program p = finish(b);
    both_fail(&m, &p, "core 0 sp #0 (dma_copy): offsets[2] = 10 is out of bounds [0, 10)");
    nx_program_free(&p);
    assert_true(healthy_run(&m) == before);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(wait_for_nothing),
        cmocka_unit_test(cycle_between_engines),
        cmocka_unit_test(barrier_without_partner),
        cmocka_unit_test(fault_in_a_transfer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
