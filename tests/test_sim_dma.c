/* DMA on the model: fixed cost, per-engine bandwidth, the small-row
 * efficiency rule, indirect rows skipped by oob_skip moving nothing,
 * round-robin sharing of an engine by its queues, in-order
 * queues, and HBM bandwidth shared by the DMA engines of both cores (two
 * cores streaming at once contend). Expected times are worked out by hand
 * from the machine figures (trn2: 23 B/ns per engine, 1300 ns per transfer,
 * 2 KiB rows for full efficiency, 720 B/ns of HBM).
 *
 * The SP issues one transfer per SP cycle; the tests give the SP a 10^6 GHz
 * clock so that every transfer of a burst starts within femtoseconds and the
 * closed forms below hold (a real clock shifts them by a cycle each). */
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

#define NS_TOL 1e-3
enum { ROWS = 128, COLS = 512, BYTES = ROWS * COLS * 4 }; /* one 256 KiB transfer */

static nx_machine machine(void) {
    nx_machine m;
    nx_error err;
    if (nx_machine_load("trn2", &m, &err) != 0) fail_msg("%s", err.msg);
    m.clock_ghz[NX_ENG_SP] = 1e6;
    return m;
}

static void assert_ns(double got, double want) {
    if (fabs(got - want) > NS_TOL) fail_msg("%.6f ns, want %.6f ns", got, want);
}

typedef struct job {
    nx_builder *b;
    uint64_t src, dst; /* HBM tensors, [cores * n * ROWS, COLS] fp32 */
    uint32_t cores, n;
} job;

/* A program of `n` transfers per core; transfer i goes to queues[i]. kind:
 * 0 HBM -> SBUF (COLS fp32 per row), 1 SBUF -> SBUF, 2 HBM -> SBUF with rows
 * of `cols` elements. */
static void build(const nx_machine *m, job *j, uint32_t cores, uint32_t n, const uint32_t *queues,
                  int kind, uint32_t cols) {
    nx_error err;
    j->b = nx_builder_new(&m->geo, cores);
    j->cores = cores;
    j->n = n;
    uint64_t shape[2] = {(uint64_t)cores * n * ROWS, COLS};
    if (nx_builder_tensor(j->b, "src", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, &j->src, &err) != 0 ||
        nx_builder_tensor(j->b, "dst", NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, &j->dst, &err) != 0)
        fail_msg("%s", err.msg);
    for (uint32_t c = 0; c < cores; c++)
        for (uint32_t i = 0; i < n; i++) {
            nx_insn d = nx_insn_make(NX_OP_DMA_COPY);
            uint64_t row0 = ((uint64_t)c * n + i) * ROWS;
            d.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, ROWS, (uint64_t)i * COLS * 4, cols);
            if (kind == 1)
                d.op[1] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, ROWS, (uint64_t)(n + i) * COLS * 4, cols);
            else
                d.op[1] = nx_ap_hbm_rows(NX_DT_FP32, j->src + row0 * COLS * 4, ROWS, COLS, cols);
            d.iparam[0] = (int32_t)queues[i];
            if (nx_builder_emit(j->b, c, NX_ENG_SP, &d, NULL, &err) != 0) fail_msg("%s", err.msg);
        }
}

typedef struct done {
    nx_sim_result r;
    nx_state st;
    nx_program p;
} done;

static void run(const nx_machine *m, job *j, done *o) {
    nx_error err;
    if (nx_builder_finish(j->b, &o->p, &err) != 0) fail_msg("finish: %s", err.msg);
    nx_builder_free(j->b);
    if (nx_state_init(&o->st, &m->geo, o->p.cores, o->p.hbm_bytes, o->p.sem_count, &err) != 0)
        fail_msg("%s", err.msg);
    for (uint64_t i = 0; i < (uint64_t)j->cores * j->n * ROWS * COLS; i++) {
        float v = (float)(i % 1000) - 500.0f;
        memcpy(o->st.hbm + j->src + 4 * i, &v, 4);
    }
    nx_sim_options opt = {1, 0};
    if (nx_sim_run(m, &o->p, &o->st, &opt, &o->r, &err) != 0) fail_msg("run: %s", err.msg);
}

static void done_free(done *o) {
    nx_sim_result_free(&o->r);
    nx_state_free(&o->st);
    nx_program_free(&o->p);
}

/* End time of the transfer record of (core, SP index). */
static double xfer_end(const done *o, uint32_t core, uint32_t index) {
    for (size_t i = 0; i < o->r.log_count; i++) {
        const nx_sim_record *q = &o->r.log[i];
        if (q->queue >= 0 && q->core == core && q->index == index) return q->t_end_ns;
    }
    fail_msg("no transfer record for core %u #%u", core, index);
    return 0;
}

static void single_transfer_bandwidth(void **state) {
    (void)state;
    nx_machine m = machine();
    job j;
    done o;
    const uint32_t q[1] = {0};
    build(&m, &j, 1, 1, q, 0, COLS);
    run(&m, &j, &o);
    assert_ns(o.r.total_ns, 1300.0 + BYTES / 23.0);
    assert_int_equal(nx_sim_queue_bytes(&o.r, 0, 0), BYTES);
    assert_int_equal(nx_sim_queue_transfers(&o.r, 0, 0), 1);
    /* the data landed: row 5 of SBUF = row 5 of src */
    assert_memory_equal(nx_sbuf_at(&o.st, 0, 5, 0), o.st.hbm + j.src + 5 * COLS * 4, COLS * 4);
    /* two records: the SP's issue (queue -1) and the transfer (queue 0) */
    assert_int_equal(o.r.log_count, 2);
    int seen = 0;
    for (size_t i = 0; i < 2; i++) {
        const nx_sim_record *r = &o.r.log[i];
        assert_int_equal(r->engine, NX_ENG_SP);
        assert_int_equal(r->index, 0);
        if (r->queue == 0) {
            seen |= 1;
            assert_int_equal(r->bytes, BYTES);
            assert_ns(r->busy_ns, 1300.0 + BYTES / 23.0);
        } else {
            seen |= 2;
            assert_int_equal(r->queue, -1);
            assert_int_equal(r->bytes, 0);
        }
    }
    assert_int_equal(seen, 3);
    done_free(&o);
}

static void small_rows_efficiency(void **state) {
    (void)state;
    nx_machine m = machine();
    job j;
    done o;
    const uint32_t q[1] = {3};
    /* 16 fp32 = 64 bytes per row: 64/2048 of 23 B/ns */
    build(&m, &j, 1, 1, q, 2, 16);
    run(&m, &j, &o);
    assert_ns(o.r.total_ns, 1300.0 + ROWS * 64 / (23.0 * 64 / 2048));
    done_free(&o);
    /* at the threshold (512 fp32 = 2 KiB) the rule no longer applies; half of it halves the rate */
    const uint32_t q2[1] = {0};
    build(&m, &j, 1, 1, q2, 2, 256);
    run(&m, &j, &o);
    assert_ns(o.r.total_ns, 1300.0 + ROWS * 1024 / 11.5);
    done_free(&o);
}

/* An indirect gather with oob_skip moves only its rows in [0, bound): of
 * 128 rows with 32 in bounds the data phase is 32 rows' worth; with none,
 * only the fixed cost remains. */
static void skipped_rows_move_nothing(void **state) {
    (void)state;
    nx_machine m = machine();
    for (int moved = 32; moved >= 0; moved -= 32) {
        nx_error err;
        nx_builder *b = nx_builder_new(&m.geo, 1);
        uint64_t shape[2] = {ROWS, COLS}, src;
        if (nx_builder_tensor(b, "src", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, &src, &err) != 0) fail_msg("%s", err.msg);
        nx_insn d = nx_insn_make(NX_OP_DMA_COPY);
        d.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, ROWS, 0, COLS);
        d.op[1] = nx_ap_hbm_rows(NX_DT_FP32, src, ROWS, COLS, COLS);
        d.op[2] = nx_ap_tile(NX_OPK_SBUF, NX_DT_INT32, 0, ROWS, COLS * 4, 1);
        d.iparam[1] = ROWS;
        d.flags = NX_FLAG_OOB_SKIP;
        if (nx_builder_emit(b, 0, NX_ENG_SP, &d, NULL, &err) != 0) fail_msg("%s", err.msg);
        nx_program p;
        if (nx_builder_finish(b, &p, &err) != 0) fail_msg("%s", err.msg);
        nx_builder_free(b);
        nx_state st;
        if (nx_state_init(&st, &m.geo, 1, p.hbm_bytes, p.sem_count, &err) != 0) fail_msg("%s", err.msg);
        for (int32_t r = 0; r < ROWS; r++) {
            int32_t idx = r < moved ? r : (r % 2 ? -1 : ROWS + r); /* below and beyond the bound */
            memcpy(nx_sbuf_at(&st, 0, (uint32_t)r, COLS * 4), &idx, 4);
        }
        nx_sim_options opt = {1, 0};
        nx_sim_result res;
        memset(&res, 0, sizeof res);
        if (nx_sim_run(&m, &p, &st, &opt, &res, &err) != 0) fail_msg("run: %s", err.msg);
        assert_ns(res.total_ns, 1300.0 + (double)moved * COLS * 4 / 23.0);
        assert_int_equal(nx_sim_queue_bytes(&res, 0, 0), (uint64_t)moved * COLS * 4);
        nx_sim_result_free(&res);
        nx_state_free(&st);
        nx_program_free(&p);
    }
}

static void queues_share_their_engine(void **state) {
    (void)state;
    nx_machine m = machine();
    job j;
    done o;
    /* queues 0 and 1 are both on DMA engine 0: round-robin, 11.5 B/ns each */
    const uint32_t same[2] = {0, 1};
    build(&m, &j, 1, 2, same, 0, COLS);
    run(&m, &j, &o);
    assert_ns(xfer_end(&o, 0, 0), 1300.0 + 2.0 * BYTES / 23.0);
    assert_ns(xfer_end(&o, 0, 1), 1300.0 + 2.0 * BYTES / 23.0);
    done_free(&o);
    /* queues 0 and 16 are on engines 0 and 1: full rate each */
    const uint32_t other[2] = {0, 16};
    build(&m, &j, 1, 2, other, 0, COLS);
    run(&m, &j, &o);
    assert_ns(xfer_end(&o, 0, 0), 1300.0 + BYTES / 23.0);
    assert_ns(xfer_end(&o, 0, 1), 1300.0 + BYTES / 23.0);
    done_free(&o);
    /* one queue: in order, the second starts when the first ends */
    const uint32_t one[2] = {7, 7};
    build(&m, &j, 1, 2, one, 0, COLS);
    run(&m, &j, &o);
    assert_ns(xfer_end(&o, 0, 0), 1300.0 + BYTES / 23.0);
    assert_ns(xfer_end(&o, 0, 1), 2 * (1300.0 + BYTES / 23.0));
    done_free(&o);
}

/* The same DMA-bound program on one core, then mirrored on two cores: when
 * HBM is the bottleneck each core's throughput drops. */
static void hbm_contention_between_cores(void **state) {
    (void)state;
    uint32_t q[16];
    for (uint32_t i = 0; i < 16; i++) q[i] = 16 * i; /* one queue on each of 16 engines */
    /* a machine with 100 B/ns of HBM: 8 engines want 184 B/ns */
    nx_machine m = machine();
    m.hbm_bytes_per_ns = 100.0;
    job j;
    done o;
    build(&m, &j, 1, 8, q, 0, COLS);
    run(&m, &j, &o);
    double one_core = o.r.total_ns;
    assert_ns(one_core, 1300.0 + BYTES / 12.5);
    done_free(&o);
    build(&m, &j, 2, 8, q, 0, COLS);
    run(&m, &j, &o);
    double two_cores = o.r.total_ns;
    assert_ns(two_cores, 1300.0 + BYTES / 6.25);
    for (uint32_t c = 0; c < 2; c++)
        for (uint32_t i = 0; i < 8; i++) assert_ns(xfer_end(&o, c, i), two_cores);
    /* per-core data throughput halves */
    double per_core_1 = 8.0 * BYTES / (one_core - 1300.0), per_core_2 = 8.0 * BYTES / (two_cores - 1300.0);
    assert_true(fabs(per_core_1 - 100.0) < 1e-6 && fabs(per_core_2 - 50.0) < 1e-6);
    /* both cores' data landed */
    assert_memory_equal(nx_sbuf_at(&o.st, 1, 3, 7 * COLS * 4), o.st.hbm + j.src + ((8 + 7) * ROWS + 3) * COLS * 4,
                        COLS * 4);
    done_free(&o);
    /* SBUF to SBUF transfers do not use HBM: no contention */
    build(&m, &j, 2, 8, q, 1, COLS);
    run(&m, &j, &o);
    assert_ns(o.r.total_ns, 1300.0 + BYTES / 23.0);
    done_free(&o);

    /* trn2's figures: 16 engines x 23 = 368 B/ns per core fit in 720 B/ns, two
     * cores (736 B/ns) do not: 22.5 B/ns per engine */
    nx_machine t = machine();
    build(&t, &j, 1, 16, q, 0, COLS);
    run(&t, &j, &o);
    assert_ns(o.r.total_ns, 1300.0 + BYTES / 23.0);
    done_free(&o);
    build(&t, &j, 2, 16, q, 0, COLS);
    run(&t, &j, &o);
    assert_ns(o.r.total_ns, 1300.0 + BYTES / 22.5);
    done_free(&o);
}

/* A transfer's completion increments its semaphore; a waiter on another
 * engine starts semaphore_latency_ns later and sees the data. */
static void completion_signals_semaphore(void **state) {
    (void)state;
    nx_machine m = machine();
    nx_error err;
    job j;
    const uint32_t q[1] = {2};
    build(&m, &j, 1, 1, q, 0, COLS);
    uint32_t sem;
    assert_int_equal(nx_builder_semaphore(j.b, &sem, &err), 0);
    nx_insn first;
    assert_non_null(nx_builder_insn(j.b, 0, NX_ENG_SP, 0, &first));
    nx_insn_inc(&first, sem, 1);
    assert_int_equal(nx_builder_set_insn(j.b, 0, NX_ENG_SP, 0, &first, &err), 0);
    nx_insn cp = nx_insn_make(NX_OP_TENSOR_COPY);
    cp.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, ROWS, 65536, COLS);
    cp.op[1] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, ROWS, 0, COLS);
    nx_insn_wait(&cp, sem, 1);
    assert_int_equal(nx_builder_emit(j.b, 0, NX_ENG_DVE, &cp, NULL, &err), 0);
    done o;
    run(&m, &j, &o);
    double end = 1300.0 + BYTES / 23.0;
    for (size_t i = 0; i < o.r.log_count; i++) {
        const nx_sim_record *r = &o.r.log[i];
        if (r->engine != NX_ENG_DVE) continue;
        assert_ns(r->t_start_ns, end + 10.0);
    }
    assert_memory_equal(nx_sbuf_at(&o.st, 0, 77, 65536), o.st.hbm + j.src + 77 * COLS * 4, COLS * 4);
    assert_int_equal(o.st.core[0].sems[sem], 1);
    done_free(&o);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(single_transfer_bandwidth),
        cmocka_unit_test(small_rows_efficiency),
        cmocka_unit_test(skipped_rows_move_nothing),
        cmocka_unit_test(queues_share_their_engine),
        cmocka_unit_test(hbm_contention_between_cores),
        cmocka_unit_test(completion_signals_semaphore),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
