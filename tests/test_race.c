/* The race detector (sim/race.h) on hand-built programs and hand-written
 * logs: each log states exactly which semaphore events the run had, so the
 * expected verdict follows from the happens-before rules alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "isa/builder.h"
#include "sim/machine.h"
#include "sim/model.h"
#include "sim/race.h"
#include "support.h"

enum { LOG_MAX = 64 };

typedef struct fixture {
    nx_builder *b;
    nx_program prog;
    nx_sim_record log[LOG_MAX];
    size_t n;
    uint64_t hbm; /* offset of a 128 KiB scratch tensor */
} fixture;

static void fixture_init(fixture *f, uint32_t cores, uint32_t sems) {
    memset(f, 0, sizeof *f);
    nx_geometry geo = test_geometry("trn2");
    f->b = nx_builder_new(&geo, cores);
    assert_non_null(f->b);
    nx_error err;
    uint64_t shape[1] = {32768};
    assert_int_equal(nx_builder_tensor(f->b, "scratch", NX_DT_FP32, 1, shape, NX_ROLE_SCRATCH, &f->hbm, &err), 0);
    for (uint32_t i = 0; i < sems; i++) {
        uint32_t s;
        assert_int_equal(nx_builder_semaphore(f->b, &s, &err), 0);
        assert_int_equal(s, i);
    }
}

static void fixture_finish(fixture *f) {
    nx_error err;
    if (nx_builder_finish(f->b, &f->prog, &err) != 0) fail_msg("%s", err.msg);
}

static void fixture_free(fixture *f) {
    nx_program_free(&f->prog);
    nx_builder_free(f->b);
}

static void emit(fixture *f, uint32_t core, nx_engine e, nx_insn insn) {
    nx_error err;
    if (nx_builder_emit(f->b, core, e, &insn, NULL, &err) != 0) fail_msg("%s", err.msg);
}

/* One log record for instruction (core, engine, index) of the finished
 * program, running [t0, t1) ns. */
static void log_rec(fixture *f, uint32_t core, nx_engine e, uint32_t index, double t0, double t1,
                    uint64_t wait_seq, uint64_t inc_seq, int queue) {
    assert_true(f->n < LOG_MAX);
    nx_sim_record *r = &f->log[f->n++];
    memset(r, 0, sizeof *r);
    r->index = index;
    r->core = (uint8_t)core;
    r->engine = (uint8_t)e;
    r->opcode = f->prog.stream[core][e].recs[index].opcode;
    r->waited = wait_seq != 0;
    r->queue = (int16_t)queue;
    r->t_ready_ns = t0;
    r->t_start_ns = t0;
    r->t_end_ns = t1;
    r->busy_ns = t1 - t0;
    r->wait_seq = wait_seq;
    r->inc_seq = inc_seq;
}

static nx_operand sb(uint32_t start, uint32_t parts, uint64_t off, uint32_t n) {
    return nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, start, parts, off, n);
}

static nx_insn nop(void) { return nx_insn_make(NX_OP_NOP); }

static void emit_checked(nx_builder *b, uint32_t core, nx_engine e, nx_insn insn) {
    nx_error err;
    if (nx_builder_emit(b, core, e, &insn, NULL, &err) != 0) fail_msg("%s", err.msg);
}

static nx_insn copy(nx_operand dst, nx_operand in) {
    nx_insn i = nx_insn_make(NX_OP_TENSOR_COPY);
    i.op[0] = dst;
    i.op[1] = in;
    return i;
}

static nx_insn act(nx_operand dst, nx_operand in) {
    nx_insn i = nx_insn_make(NX_OP_ACTIVATION);
    i.func = NX_ACT_IDENTITY;
    i.op[0] = dst;
    i.op[1] = in;
    i.op[2] = nx_imm(1.0, NX_DT_FP32);
    i.op[3] = nx_imm(0.0, NX_DT_FP32);
    return i;
}

static nx_insn with_wait(nx_insn i, uint32_t sem, uint32_t value) {
    nx_insn_wait(&i, sem, value);
    return i;
}

static nx_insn with_inc(nx_insn i, uint32_t sem) {
    nx_insn_inc(&i, sem, 1);
    return i;
}

static int check(fixture *f, nx_error *err) {
    memset(err->msg, 0, sizeof err->msg);
    return nx_race_check(&f->prog, f->log, f->n, err);
}

/* The racy pair of race.h's example: DVE writes sbuf[0:128]@[0, 256) and
 * ACT reads sbuf[0:64]@[128, 384) of the same core. `ordered` adds a
 * semaphore from the copy to the activation; `wait_seq` is what the log says
 * the activation's wait saw. */
static void build_pair(fixture *f, int ordered) {
    fixture_init(f, 1, 1);
    for (int k = 0; k < 3; k++) emit(f, 0, NX_ENG_DVE, nop());
    nx_insn c = copy(sb(0, 128, 0, 64), sb(0, 128, 8192, 64));
    emit(f, 0, NX_ENG_DVE, ordered ? with_inc(c, 0) : c);
    emit(f, 0, NX_ENG_ACT, nop());
    nx_insn a = act(sb(0, 64, 4096, 64), sb(0, 64, 128, 64));
    emit(f, 0, NX_ENG_ACT, ordered ? with_wait(a, 0, 1) : a);
    fixture_finish(f);
}

static void test_unordered_writes_and_reads_race(void **state) {
    (void)state;
    fixture f;
    build_pair(&f, 0);
    for (uint32_t k = 0; k < 3; k++) log_rec(&f, 0, NX_ENG_DVE, k, 10.0 * k, 10.0 * k + 5, 0, 0, -1);
    log_rec(&f, 0, NX_ENG_DVE, 3, 30, 40, 0, 0, -1);
    log_rec(&f, 0, NX_ENG_ACT, 0, 0, 20, 0, 0, -1);
    log_rec(&f, 0, NX_ENG_ACT, 1, 45, 60, 0, 0, -1);
    nx_error err;
    assert_int_equal(check(&f, &err), 1);
    assert_string_equal(err.msg,
                        "race: core 0 dve #3 (tensor_copy) writes sbuf[0:128]@[0, 256) and core 0 act #1 "
                        "(activation) reads sbuf[0:64]@[128, 384) with no semaphore ordering them");
    fixture_free(&f);
}

/* The times say the copy ended before the activation started; only the
 * semaphore makes that an ordering. */
static void test_semaphore_orders_the_pair(void **state) {
    (void)state;
    fixture f;
    build_pair(&f, 1);
    for (uint32_t k = 0; k < 3; k++) log_rec(&f, 0, NX_ENG_DVE, k, 10.0 * k, 10.0 * k + 5, 0, 0, -1);
    log_rec(&f, 0, NX_ENG_DVE, 3, 30, 40, 0, 1, -1);
    log_rec(&f, 0, NX_ENG_ACT, 0, 0, 20, 0, 0, -1);
    log_rec(&f, 0, NX_ENG_ACT, 1, 45, 60, 2, 0, -1);
    nx_error err;
    assert_int_equal(check(&f, &err), 0);
    fixture_free(&f);
}

/* A waiter at wait_seq w saw the increments numbered up to w and no later
 * one: a wait satisfied at 1 did not see the increment numbered 2. */
static void test_wait_before_increment_does_not_order(void **state) {
    (void)state;
    fixture f;
    build_pair(&f, 1);
    log_rec(&f, 0, NX_ENG_DVE, 3, 30, 40, 0, 2, -1);
    log_rec(&f, 0, NX_ENG_ACT, 1, 45, 60, 1, 0, -1);
    nx_error err;
    assert_int_equal(check(&f, &err), 1);
    assert_non_null(strstr(err.msg, "core 0 dve #3 (tensor_copy) writes"));
    fixture_free(&f);
    /* ... and one satisfied at 2 did */
    build_pair(&f, 1);
    log_rec(&f, 0, NX_ENG_DVE, 3, 30, 40, 0, 2, -1);
    log_rec(&f, 0, NX_ENG_ACT, 1, 45, 60, 2, 0, -1);
    assert_int_equal(check(&f, &err), 0);
    fixture_free(&f);
}

/* The log order of records does not matter, only their sequence numbers. */
static void test_log_order_is_irrelevant(void **state) {
    (void)state;
    fixture f;
    build_pair(&f, 1);
    log_rec(&f, 0, NX_ENG_ACT, 1, 45, 60, 2, 0, -1);
    log_rec(&f, 0, NX_ENG_ACT, 0, 0, 20, 0, 0, -1);
    log_rec(&f, 0, NX_ENG_DVE, 3, 30, 40, 0, 1, -1);
    for (uint32_t k = 3; k-- > 0;) log_rec(&f, 0, NX_ENG_DVE, k, 10.0 * k, 10.0 * k + 5, 0, 0, -1);
    nx_error err;
    assert_int_equal(check(&f, &err), 0);
    fixture_free(&f);
}

static void test_read_read_overlap_is_clean(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f, 1, 0);
    emit(&f, 0, NX_ENG_DVE, copy(sb(0, 128, 0, 64), sb(0, 128, 1024, 64)));
    emit(&f, 0, NX_ENG_ACT, act(sb(0, 128, 2048, 64), sb(0, 128, 1024, 64)));
    emit(&f, 0, NX_ENG_POOL, copy(sb(0, 128, 4096, 64), sb(0, 128, 1024, 64)));
    fixture_finish(&f);
    log_rec(&f, 0, NX_ENG_DVE, 0, 0, 10, 0, 0, -1);
    log_rec(&f, 0, NX_ENG_ACT, 0, 0, 10, 0, 0, -1);
    log_rec(&f, 0, NX_ENG_POOL, 0, 0, 10, 0, 0, -1);
    nx_error err;
    assert_int_equal(check(&f, &err), 0);
    fixture_free(&f);
}

/* Same addresses on both cores: SBUF is per core (no race), HBM is shared
 * (race, between the two cores' DMA queues). */
static void test_sbuf_is_per_core_hbm_is_shared(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f, 2, 0);
    for (uint32_t c = 0; c < 2; c++) {
        emit(&f, c, NX_ENG_DVE, copy(sb(0, 128, 0, 64), sb(0, 128, 1024, 64)));
        emit(&f, c, NX_ENG_SP, test_dma(nx_ap_hbm_rows(NX_DT_FP32, f.hbm, 128, 64, 64), sb(0, 128, 4096, 64), 0));
    }
    fixture_finish(&f);
    log_rec(&f, 0, NX_ENG_DVE, 0, 0, 10, 0, 0, -1);
    log_rec(&f, 1, NX_ENG_DVE, 0, 0, 10, 0, 0, -1);
    nx_error err;
    assert_int_equal(check(&f, &err), 0);
    log_rec(&f, 0, NX_ENG_SP, 0, 0, 1500, 0, 0, 0);
    log_rec(&f, 1, NX_ENG_SP, 0, 5, 1505, 0, 0, 0);
    assert_int_equal(check(&f, &err), 1);
    char want[256];
    snprintf(want, sizeof want,
             "race: core 0 sp #0 (dma_copy) on queue 0 writes hbm@[%llu, %llu) and core 1 sp #0 "
             "(dma_copy) on queue 0 writes hbm@[%llu, %llu) with no semaphore ordering them",
             (unsigned long long)f.hbm, (unsigned long long)(f.hbm + 128 * 64 * 4),
             (unsigned long long)f.hbm, (unsigned long long)(f.hbm + 128 * 64 * 4));
    assert_string_equal(err.msg, want);
    fixture_free(&f);
}

/* A load HBM -> SBUF on queue 3 and a DVE read of the tile: a race without
 * a semaphore, clean when the transfer's completion increments what the DVE
 * waits for. */
static void build_load_then_read(fixture *f, int ordered) {
    fixture_init(f, 1, 1);
    nx_insn load = test_dma(sb(0, 128, 0, 128), nx_ap_hbm_rows(NX_DT_FP32, f->hbm, 128, 128, 128), 3);
    emit(f, 0, NX_ENG_SP, ordered ? with_inc(load, 0) : load);
    nx_insn use = copy(sb(0, 128, 8192, 64), sb(0, 128, 256, 64));
    emit(f, 0, NX_ENG_DVE, ordered ? with_wait(use, 0, 1) : use);
    fixture_finish(f);
}

static void test_dma_transfer_vs_compute_read(void **state) {
    (void)state;
    fixture f;
    build_load_then_read(&f, 0);
    log_rec(&f, 0, NX_ENG_SP, 0, 0, 1400, 0, 0, 3);
    log_rec(&f, 0, NX_ENG_DVE, 0, 2000, 2100, 0, 0, -1);
    nx_error err;
    assert_int_equal(check(&f, &err), 1);
    assert_string_equal(err.msg,
                        "race: core 0 sp #0 (dma_copy) on queue 3 writes sbuf[0:128]@[0, 512) and core 0 dve "
                        "#0 (tensor_copy) reads sbuf[0:128]@[256, 512) with no semaphore ordering them");
    fixture_free(&f);

    build_load_then_read(&f, 1);
    log_rec(&f, 0, NX_ENG_SP, 0, 0, 1400, 0, 1, 3);
    log_rec(&f, 0, NX_ENG_DVE, 0, 1410, 1500, 2, 0, -1);
    assert_int_equal(check(&f, &err), 0);
    fixture_free(&f);
}

/* The model logs a DMA twice: the SP's issue (queue -1) and the transfer on
 * its queue, with the increment. The pair counts as one instruction whose
 * accesses are the transfer's. */
static void test_issue_and_transfer_records(void **state) {
    (void)state;
    for (int ordered = 0; ordered < 2; ordered++) {
        fixture f;
        build_load_then_read(&f, ordered);
        log_rec(&f, 0, NX_ENG_SP, 0, 0, 1, 0, 0, -1);
        log_rec(&f, 0, NX_ENG_DVE, 0, 1410, 1500, ordered ? 1 : 0, 0, -1);
        log_rec(&f, 0, NX_ENG_SP, 0, 1, 1400, 0, ordered ? 1 : 0, 3);
        nx_error err;
        if (ordered) {
            assert_int_equal(check(&f, &err), 0);
        } else {
            assert_int_equal(check(&f, &err), 1);
            assert_string_equal(err.msg,
                                "race: core 0 sp #0 (dma_copy) on queue 3 writes sbuf[0:128]@[0, 512) and core 0 "
                                "dve #0 (tensor_copy) reads sbuf[0:128]@[256, 512) with no semaphore ordering them");
        }
        /* a second transfer record for the same instruction is an error */
        log_rec(&f, 0, NX_ENG_SP, 0, 1, 1400, 0, 0, 3);
        assert_int_equal(check(&f, &err), -1);
        assert_string_equal(err.msg, "race check: core 0 sp #0 (transfer) appears twice in the log");
        fixture_free(&f);
    }
}

/* The SP does not wait for its transfers: a store issued after a load on a
 * different queue is not ordered after it (race); on the same queue it is
 * (queues run in order). */
static void test_dma_queues_order_only_themselves(void **state) {
    (void)state;
    for (int same_queue = 0; same_queue < 2; same_queue++) {
        fixture f;
        fixture_init(&f, 1, 0);
        emit(&f, 0, NX_ENG_SP, test_dma(sb(0, 128, 0, 128), nx_ap_hbm_rows(NX_DT_FP32, f.hbm, 128, 128, 128), 0));
        emit(&f, 0, NX_ENG_SP,
             test_dma(nx_ap_hbm_rows(NX_DT_FP32, f.hbm + 65536, 128, 128, 128), sb(0, 128, 0, 128), same_queue ? 0 : 1));
        fixture_finish(&f);
        log_rec(&f, 0, NX_ENG_SP, 0, 0, 1400, 0, 0, 0);
        log_rec(&f, 0, NX_ENG_SP, 1, 10, 1410, 0, 0, same_queue ? 0 : 1);
        nx_error err;
        if (same_queue) {
            assert_int_equal(check(&f, &err), 0);
        } else {
            assert_int_equal(check(&f, &err), 1);
            assert_string_equal(err.msg,
                                "race: core 0 sp #0 (dma_copy) on queue 0 writes sbuf[0:128]@[0, 512) and core 0 "
                                "sp #1 (dma_copy) on queue 1 reads sbuf[0:128]@[0, 512) with no semaphore "
                                "ordering them");
        }
        fixture_free(&f);
    }
}

/* Core 0 writes HBM by DMA, waits for it, and meets core 1 at a barrier;
 * core 1 passes the barrier, increments its own semaphore, and its SP then
 * reads the data back. Every arrow is a semaphore or barrier edge. */
static void build_exchange(fixture *f) {
    fixture_init(f, 2, 1);
    nx_operand rows = nx_ap_hbm_rows(NX_DT_FP32, f->hbm, 128, 64, 64);
    emit(f, 0, NX_ENG_SP, with_inc(test_dma(rows, sb(0, 128, 0, 64), 0), 0));
    emit(f, 0, NX_ENG_POOL, with_wait(nop(), 0, 1));
    emit(f, 0, NX_ENG_POOL, nx_insn_make(NX_OP_CORE_BARRIER));
    emit(f, 1, NX_ENG_POOL, with_inc(nx_insn_make(NX_OP_CORE_BARRIER), 0));
    emit(f, 1, NX_ENG_SP, with_wait(test_dma(sb(0, 128, 0, 64), rows, 0), 0, 1));
    fixture_finish(f);
}

static void test_barrier_orders_exchange(void **state) {
    (void)state;
    fixture f;
    build_exchange(&f);
    log_rec(&f, 0, NX_ENG_SP, 0, 0, 1400, 0, 1, 0);
    log_rec(&f, 0, NX_ENG_POOL, 0, 1410, 1411, 2, 0, -1);
    log_rec(&f, 0, NX_ENG_POOL, 1, 1411, 1700, 5, 3, -1);
    log_rec(&f, 1, NX_ENG_POOL, 0, 0, 1700, 5, 4, -1);
    log_rec(&f, 1, NX_ENG_SP, 0, 1710, 3000, 6, 0, 0);
    nx_error err;
    assert_int_equal(check(&f, &err), 0);
    fixture_free(&f);

    /* The same program, but core 1 passed the barrier before core 0 arrived
     * (as if core 1 used a barrier of its own): the read races the write. */
    build_exchange(&f);
    log_rec(&f, 0, NX_ENG_SP, 0, 0, 1400, 0, 1, 0);
    log_rec(&f, 0, NX_ENG_POOL, 0, 1410, 1411, 2, 0, -1);
    log_rec(&f, 0, NX_ENG_POOL, 1, 1411, 1700, 6, 5, -1);
    log_rec(&f, 1, NX_ENG_POOL, 0, 0, 10, 4, 3, -1);
    log_rec(&f, 1, NX_ENG_SP, 0, 20, 1500, 5, 0, 0);
    assert_int_equal(check(&f, &err), 1);
    char want[256];
    snprintf(want, sizeof want,
             "race: core 0 sp #0 (dma_copy) on queue 0 writes hbm@[%llu, %llu) and core 1 sp #0 "
             "(dma_copy) on queue 0 reads hbm@[%llu, %llu) with no semaphore ordering them",
             (unsigned long long)f.hbm, (unsigned long long)(f.hbm + 128 * 64 * 4),
             (unsigned long long)f.hbm, (unsigned long long)(f.hbm + 128 * 64 * 4));
    assert_string_equal(err.msg, want);
    fixture_free(&f);
}

/* Happens-before is transitive across engines: DVE -> ACT -> POOL through
 * two semaphores orders the DVE write before the POOL read. */
static void test_transitive_ordering(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f, 1, 2);
    emit(&f, 0, NX_ENG_DVE, with_inc(copy(sb(0, 128, 0, 64), sb(0, 128, 1024, 64)), 0));
    emit(&f, 0, NX_ENG_ACT, with_inc(with_wait(nop(), 0, 1), 1));
    emit(&f, 0, NX_ENG_POOL, with_wait(copy(sb(0, 128, 2048, 64), sb(0, 128, 0, 64)), 1, 1));
    fixture_finish(&f);
    log_rec(&f, 0, NX_ENG_DVE, 0, 0, 10, 0, 1, -1);
    log_rec(&f, 0, NX_ENG_ACT, 0, 20, 21, 1, 2, -1);
    log_rec(&f, 0, NX_ENG_POOL, 0, 30, 40, 2, 0, -1);
    nx_error err;
    assert_int_equal(check(&f, &err), 0);
    fixture_free(&f);
}

/* Many ordered accesses stream through: a producer/consumer ping-pong of
 * 20000 rounds stays clean (and exercises pruning of the live set). */
static void test_long_ordered_pipeline_is_clean(void **state) {
    (void)state;
    enum { ROUNDS = 20000 };
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 1);
    nx_error err;
    uint32_t full, empty;
    assert_int_equal(nx_builder_semaphore(b, &full, &err), 0);
    assert_int_equal(nx_builder_semaphore(b, &empty, &err), 0);
    for (uint32_t k = 0; k < ROUNDS; k++) {
        nx_insn w = with_inc(copy(sb(0, 128, 512u * (k % 2), 64), sb(0, 128, 4096, 64)), full);
        if (k >= 2) nx_insn_wait(&w, empty, k - 1);
        assert_int_equal(nx_builder_emit(b, 0, NX_ENG_DVE, &w, NULL, &err), 0);
        nx_insn r = with_inc(with_wait(copy(sb(0, 128, 8192, 64), sb(0, 128, 512u * (k % 2), 64)), full, k + 1), empty);
        assert_int_equal(nx_builder_emit(b, 0, NX_ENG_ACT, &r, NULL, &err), 0);
    }
    nx_program prog;
    if (nx_builder_finish(b, &prog, &err) != 0) fail_msg("%s", err.msg);
    nx_sim_record *log = calloc(2 * ROUNDS, sizeof *log);
    assert_non_null(log);
    /* Sequence numbers as the model gives them: writer k's increment is
     * event 2k+1, reader k's is 2k+2; reader k's wait saw event 2k+1 and
     * writer k's wait saw event 2k-2 (reader k-2's increment). */
    for (uint32_t k = 0; k < ROUNDS; k++) {
        nx_sim_record *w = &log[2 * k], *r = &log[2 * k + 1];
        w->index = r->index = k;
        w->engine = NX_ENG_DVE;
        r->engine = NX_ENG_ACT;
        w->opcode = r->opcode = NX_OP_TENSOR_COPY;
        w->queue = r->queue = -1;
        w->t_start_ns = 20.0 * k;
        r->t_start_ns = 20.0 * k + 10;
        w->inc_seq = 2 * (uint64_t)k + 1;
        w->wait_seq = k >= 2 ? 2 * (uint64_t)k - 2 : 0;
        r->wait_seq = 2 * (uint64_t)k + 1;
        r->inc_seq = 2 * (uint64_t)k + 2;
    }
    assert_int_equal(nx_race_check(&prog, log, 2 * ROUNDS, &err), 0);
    /* drop the writer's wait on round 7: its write races the reader of
     * round 5, which used the same buffer */
    log[14].wait_seq = 0;
    prog.stream[0][NX_ENG_DVE].recs[7].wait_sem = NX_SEM_NONE;
    assert_int_equal(nx_race_check(&prog, log, 2 * ROUNDS, &err), 1);
    assert_string_equal(err.msg,
                        "race: core 0 act #5 (tensor_copy) reads sbuf[0:128]@[512, 768) and core 0 dve #7 "
                        "(tensor_copy) writes sbuf[0:128]@[512, 768) with no semaphore ordering them");
    free(log);
    nx_program_free(&prog);
    nx_builder_free(b);
}

/* ---- real runs on the SystemC model ---- */

/* Runs prog on the trn2 model with the log kept; st is initialised here and
 * filled by `fill` before the run. */
static void run_on_model(const nx_program *prog, nx_state *st, nx_sim_result *r,
                         void (*fill)(nx_state *, const nx_program *)) {
    nx_machine m;
    nx_error err;
    if (nx_machine_load("trn2", &m, &err) != 0) fail_msg("%s", err.msg);
    if (nx_state_init(st, &m.geo, prog->cores, prog->hbm_bytes, prog->sem_count, &err) != 0) fail_msg("%s", err.msg);
    if (fill) fill(st, prog);
    nx_sim_options opt = {1, 0};
    if (nx_sim_run(&m, prog, st, &opt, r, &err) != 0) fail_msg("%s", err.msg);
    assert_non_null(r->log);
}

static void fill_input(nx_state *st, const nx_program *prog) {
    double v[128 * 64];
    for (int i = 0; i < 128 * 64; i++) v[i] = 0.5 * i;
    test_hbm_put(st, NX_DT_FP32, prog->tensors[0].offset, 128 * 64, v);
}

/* load -> DVE copy -> ACT activation -> store, each step waiting for the
 * previous one's semaphore; `racy` drops the ACT's wait. */
static void build_model_pipeline(nx_program *prog, int racy) {
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 1);
    nx_error err;
    uint64_t in, out, shape[2] = {128, 64};
    assert_int_equal(nx_builder_tensor(b, "in", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, &in, &err), 0);
    assert_int_equal(nx_builder_tensor(b, "out", NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, &out, &err), 0);
    for (uint32_t i = 0, s; i < 3; i++) assert_int_equal(nx_builder_semaphore(b, &s, &err), 0);
    nx_insn i0 = with_inc(test_dma(sb(0, 128, 0, 64), nx_ap_hbm_rows(NX_DT_FP32, in, 128, 64, 64), 0), 0);
    nx_insn i1 = with_inc(with_wait(copy(sb(0, 128, 1024, 64), sb(0, 128, 0, 64)), 0, 1), 1);
    nx_insn i2 = with_inc(act(sb(0, 128, 2048, 64), sb(0, 128, 1024, 64)), 2);
    if (!racy) nx_insn_wait(&i2, 1, 1);
    nx_insn i3 = with_wait(test_dma(nx_ap_hbm_rows(NX_DT_FP32, out, 128, 64, 64), sb(0, 128, 2048, 64), 1), 2, 1);
    assert_int_equal(nx_builder_emit(b, 0, NX_ENG_SP, &i0, NULL, &err), 0);
    assert_int_equal(nx_builder_emit(b, 0, NX_ENG_DVE, &i1, NULL, &err), 0);
    assert_int_equal(nx_builder_emit(b, 0, NX_ENG_ACT, &i2, NULL, &err), 0);
    assert_int_equal(nx_builder_emit(b, 0, NX_ENG_SP, &i3, NULL, &err), 0);
    if (nx_builder_finish(b, prog, &err) != 0) fail_msg("%s", err.msg);
    nx_builder_free(b);
}

static void test_model_pipeline(void **state) {
    (void)state;
    for (int racy = 0; racy < 2; racy++) {
        nx_program prog;
        nx_state st;
        nx_sim_result r;
        nx_error err;
        build_model_pipeline(&prog, racy);
        run_on_model(&prog, &st, &r, fill_input);
        int verdict = nx_race_check(&prog, r.log, r.log_count, &err);
        if (!racy) {
            if (verdict != 0) fail_msg("%s", err.msg);
            double got[128 * 64];
            test_hbm_get(&st, NX_DT_FP32, prog.tensors[1].offset, 128 * 64, got);
            for (int i = 0; i < 128 * 64; i++) assert_true(got[i] == 0.5 * i);
        } else {
            /* the ACT no longer waits: it starts at once, before the copy */
            assert_int_equal(verdict, 1);
            assert_string_equal(err.msg,
                                "race: core 0 act #0 (activation) reads sbuf[0:128]@[1024, 1280) and core 0 dve #0 "
                                "(tensor_copy) writes sbuf[0:128]@[1024, 1280) with no semaphore ordering them");
        }
        nx_sim_result_free(&r);
        nx_state_free(&st);
        nx_program_free(&prog);
    }
}

/* Two cores on the model: core 0 fills a tile, stores it to shared HBM and
 * meets core 1 at a barrier; core 1 passes it, then loads the data and
 * stores it to "out". `racy`: core 1 loads without waiting for the barrier. */
static void build_model_exchange(nx_program *prog, int racy) {
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 2);
    nx_error err;
    uint64_t x, out, shape[2] = {128, 64};
    assert_int_equal(nx_builder_tensor(b, "x", NX_DT_FP32, 2, shape, NX_ROLE_SCRATCH, &x, &err), 0);
    assert_int_equal(nx_builder_tensor(b, "out", NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, &out, &err), 0);
    for (uint32_t i = 0, s; i < 2; i++) assert_int_equal(nx_builder_semaphore(b, &s, &err), 0);
    nx_operand xr = nx_ap_hbm_rows(NX_DT_FP32, x, 128, 64, 64);
    nx_insn fill = nx_insn_make(NX_OP_MEMSET);
    fill.op[0] = sb(0, 128, 0, 64);
    fill.op[1] = nx_imm(7.0, NX_DT_FP32);
    emit_checked(b, 0, NX_ENG_POOL, with_inc(fill, 0));
    emit_checked(b, 0, NX_ENG_SP, with_inc(with_wait(test_dma(xr, sb(0, 128, 0, 64), 0), 0, 1), 1));
    emit_checked(b, 0, NX_ENG_POOL, with_wait(nop(), 1, 1));
    emit_checked(b, 0, NX_ENG_POOL, nx_insn_make(NX_OP_CORE_BARRIER));
    emit_checked(b, 1, NX_ENG_POOL, with_inc(nx_insn_make(NX_OP_CORE_BARRIER), 0));
    nx_insn load = with_inc(test_dma(sb(0, 128, 0, 64), xr, 0), 1);
    if (!racy) nx_insn_wait(&load, 0, 1);
    emit_checked(b, 1, NX_ENG_SP, load);
    emit_checked(b, 1, NX_ENG_SP, with_wait(test_dma(nx_ap_hbm_rows(NX_DT_FP32, out, 128, 64, 64), sb(0, 128, 0, 64), 0), 1, 1));
    if (nx_builder_finish(b, prog, &err) != 0) fail_msg("%s", err.msg);
    nx_builder_free(b);
}

static void test_model_barrier_exchange(void **state) {
    (void)state;
    for (int racy = 0; racy < 2; racy++) {
        nx_program prog;
        nx_state st;
        nx_sim_result r;
        nx_error err;
        build_model_exchange(&prog, racy);
        run_on_model(&prog, &st, &r, NULL);
        int verdict = nx_race_check(&prog, r.log, r.log_count, &err);
        if (!racy) {
            if (verdict != 0) fail_msg("%s", err.msg);
            double got[128 * 64];
            test_hbm_get(&st, NX_DT_FP32, prog.tensors[1].offset, 128 * 64, got);
            for (int i = 0; i < 128 * 64; i++) assert_true(got[i] == 7.0);
        } else {
            assert_int_equal(verdict, 1);
            char want[256];
            uint64_t x = prog.tensors[0].offset;
            snprintf(want, sizeof want,
                     "race: core 1 sp #0 (dma_copy) on queue 0 reads hbm@[%llu, %llu) and core 0 sp #0 "
                     "(dma_copy) on queue 0 writes hbm@[%llu, %llu) with no semaphore ordering them",
                     (unsigned long long)x, (unsigned long long)(x + 128 * 64 * 4), (unsigned long long)x,
                     (unsigned long long)(x + 128 * 64 * 4));
            assert_string_equal(err.msg, want);
        }
        nx_sim_result_free(&r);
        nx_state_free(&st);
        nx_program_free(&prog);
    }
}

/* The last core to reach a barrier passes at once, and the model numbers
 * its arrival later (when the other core sees it): core 0 stores x, meets
 * core 1 (which arrived long before) at a barrier that increments
 * semaphore 2, and loads x back on another queue waiting for that
 * increment. The load is ordered after the store through the barrier's
 * wait; `racy`: the load does not wait. */
static void build_model_last_arrival(nx_program *prog, int racy) {
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 2);
    nx_error err;
    uint64_t x, shape[2] = {128, 64};
    assert_int_equal(nx_builder_tensor(b, "x", NX_DT_FP32, 2, shape, NX_ROLE_SCRATCH, &x, &err), 0);
    for (uint32_t i = 0, s; i < 3; i++) assert_int_equal(nx_builder_semaphore(b, &s, &err), 0);
    nx_operand xr = nx_ap_hbm_rows(NX_DT_FP32, x, 128, 64, 64);
    nx_insn fill = nx_insn_make(NX_OP_MEMSET);
    fill.op[0] = sb(0, 128, 0, 64);
    fill.op[1] = nx_imm(7.0, NX_DT_FP32);
    emit_checked(b, 0, NX_ENG_POOL, with_inc(fill, 0));
    emit_checked(b, 0, NX_ENG_SP, with_inc(with_wait(test_dma(xr, sb(0, 128, 0, 64), 1), 0, 1), 1));
    emit_checked(b, 0, NX_ENG_POOL, with_inc(with_wait(nx_insn_make(NX_OP_CORE_BARRIER), 1, 1), 2));
    nx_insn load = test_dma(sb(0, 128, 256, 64), xr, 0);
    if (!racy) nx_insn_wait(&load, 2, 1);
    emit_checked(b, 0, NX_ENG_SP, load);
    emit_checked(b, 1, NX_ENG_POOL, nx_insn_make(NX_OP_CORE_BARRIER));
    if (nx_builder_finish(b, prog, &err) != 0) fail_msg("%s", err.msg);
    nx_builder_free(b);
}

static void test_model_last_arrival(void **state) {
    (void)state;
    for (int racy = 0; racy < 2; racy++) {
        nx_program prog;
        nx_state st;
        nx_sim_result r;
        nx_error err;
        build_model_last_arrival(&prog, racy);
        run_on_model(&prog, &st, &r, NULL);
        int verdict = nx_race_check(&prog, r.log, r.log_count, &err);
        if (!racy) {
            if (verdict != 0) fail_msg("%s", err.msg);
        } else {
            assert_int_equal(verdict, 1);
            assert_non_null(strstr(err.msg, "core 0 sp #1 (dma_copy) on queue 0 reads hbm@"));
        }
        nx_sim_result_free(&r);
        nx_state_free(&st);
        nx_program_free(&prog);
    }
}

/* Two cores that never synchronise, each storing 20000 times to its own
 * half of a tensor (7000 rows, rewritten in turn): nothing can be dropped as
 * "ordered before everyone", so this exercises the HBM index at size. Then
 * core 1's last store is aimed at row 5, which core 0 wrote at its stores
 * 5, 7005 and 14005: the race is reported against the latest of them (each
 * write replaced the one before it, which it was ordered after). */
static void test_many_unsynchronised_hbm_stores(void **state) {
    (void)state;
    enum { STORES = 20000, ROWS = 7000 };
    nx_geometry geo = test_geometry("trn2");
    nx_error err;
    for (int racy = 0; racy < 2; racy++) {
        nx_builder *b = nx_builder_new(&geo, 2);
        uint64_t t, shape[2] = {2 * ROWS, 4};
        assert_int_equal(nx_builder_tensor(b, "t", NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, &t, &err), 0);
        for (uint32_t c = 0; c < 2; c++)
            for (uint32_t k = 0; k < STORES; k++) {
                uint64_t row = c * ROWS + k % ROWS;
                if (racy && c == 1 && k == STORES - 1) row = 5;
                emit_checked(b, c, NX_ENG_SP, test_dma(nx_ap_hbm_rows(NX_DT_FP32, t + row * 16, 1, 4, 4), sb(0, 1, 0, 4), 0));
            }
        nx_program prog;
        if (nx_builder_finish(b, &prog, &err) != 0) fail_msg("%s", err.msg);
        nx_builder_free(b);
        nx_sim_record *log = calloc(2 * STORES, sizeof *log);
        assert_non_null(log);
        for (uint32_t c = 0; c < 2; c++)
            for (uint32_t k = 0; k < STORES; k++) {
                nx_sim_record *rec = &log[c * STORES + k];
                rec->index = k;
                rec->core = (uint8_t)c;
                rec->engine = NX_ENG_SP;
                rec->opcode = NX_OP_DMA_COPY;
                rec->queue = 0;
                rec->t_start_ns = k + 0.5 * c;
                rec->t_end_ns = k + 1;
            }
        int verdict = nx_race_check(&prog, log, 2 * STORES, &err);
        if (!racy) {
            if (verdict != 0) fail_msg("%s", err.msg);
        } else {
            assert_int_equal(verdict, 1);
            char want[256];
            snprintf(want, sizeof want,
                     "race: core 0 sp #14005 (dma_copy) on queue 0 writes hbm@[%llu, %llu) and core 1 sp #19999 "
                     "(dma_copy) on queue 0 writes hbm@[%llu, %llu) with no semaphore ordering them",
                     (unsigned long long)(t + 80), (unsigned long long)(t + 96), (unsigned long long)(t + 80),
                     (unsigned long long)(t + 96));
            assert_string_equal(err.msg, want);
        }
        free(log);
        nx_program_free(&prog);
    }
}

static void test_log_that_does_not_fit_the_program(void **state) {
    (void)state;
    fixture f;
    build_pair(&f, 0);
    nx_error err;
    log_rec(&f, 0, NX_ENG_DVE, 3, 30, 40, 0, 0, -1);
    f.log[0].index = 9;
    assert_int_equal(check(&f, &err), -1);
    assert_string_equal(err.msg,
                        "race check: log record 0 names core 0 dve #9; the stream has 4 instructions");
    f.log[0].index = 3;
    f.log[0].opcode = NX_OP_MEMSET;
    assert_int_equal(check(&f, &err), -1);
    assert_string_equal(err.msg, "race check: log record 0 is memset but core 0 dve #3 is tensor_copy");
    f.log[0].opcode = NX_OP_TENSOR_COPY;
    f.log[0].core = 1;
    assert_int_equal(check(&f, &err), -1);
    assert_string_equal(err.msg, "race check: log record 0 names core 1; the program has 1");
    f.log[0].core = 0;
    f.log[0].queue = 2;
    assert_int_equal(check(&f, &err), -1);
    assert_string_equal(err.msg, "race check: log record 0 (core 0 dve #3, tensor_copy) names DMA queue 2");
    f.log[0].queue = -1;
    log_rec(&f, 0, NX_ENG_DVE, 3, 30, 40, 0, 0, -1);
    assert_int_equal(check(&f, &err), -1);
    assert_string_equal(err.msg, "race check: core 0 dve #3 appears twice in the log");
    f.n = 0;
    assert_int_equal(check(&f, &err), 0);
    fixture_free(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unordered_writes_and_reads_race),
        cmocka_unit_test(test_semaphore_orders_the_pair),
        cmocka_unit_test(test_wait_before_increment_does_not_order),
        cmocka_unit_test(test_log_order_is_irrelevant),
        cmocka_unit_test(test_read_read_overlap_is_clean),
        cmocka_unit_test(test_sbuf_is_per_core_hbm_is_shared),
        cmocka_unit_test(test_dma_transfer_vs_compute_read),
        cmocka_unit_test(test_issue_and_transfer_records),
        cmocka_unit_test(test_dma_queues_order_only_themselves),
        cmocka_unit_test(test_barrier_orders_exchange),
        cmocka_unit_test(test_transitive_ordering),
        cmocka_unit_test(test_long_ordered_pipeline_is_clean),
        cmocka_unit_test(test_many_unsynchronised_hbm_stores),
        cmocka_unit_test(test_log_that_does_not_fit_the_program),
        cmocka_unit_test(test_model_pipeline),
        cmocka_unit_test(test_model_barrier_exchange),
        cmocka_unit_test(test_model_last_arrival),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
