/* Worker threads (isa/workers.h): the pool runs every task exactly once
 * and refuses bad thread counts with one-line errors; dma_copy split by rows
 * gives, for 1, 2, 3 and 4 threads (odd splits of 127 rows), the bytes a
 * plain element loop written here gives (casts, accumulate into strided
 * rows, HBM destination rows that overlap, where the last row must win, and
 * a gather). Needs only isa/ (and the machine presets), so that it also
 * runs under ThreadSanitizer; a program on the run path with threads:
 * tests/test_threads_run.c. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "isa/bytes.h"
#include "isa/workers.h"
#include "support.h"

enum { MAX_THREADS = 4 };

/* ---- the pool ---- */

typedef struct tally {
    unsigned runs[100];
    unsigned long long value[100];
} tally;

static void count_task(void *arg, unsigned i) {
    tally *t = arg;
    t->runs[i]++;
    t->value[i] = (unsigned long long)i * i + 7;
}

static void pool_runs_every_task_once(void **state) {
    (void)state;
    nx_error err;
    for (unsigned threads = 1; threads <= MAX_THREADS; threads++) {
        nx_workers *w;
        if (nx_workers_create(threads, &w, &err) != 0) fail_msg("%s", err.msg);
        assert_int_equal(nx_workers_threads(w), threads);
        for (unsigned tasks = 0; tasks <= 100; tasks += 11) {
            for (int rep = 0; rep < 3; rep++) {
                tally t;
                memset(&t, 0, sizeof t);
                nx_workers_run(w, tasks, count_task, &t);
                for (unsigned i = 0; i < 100; i++) {
                    assert_int_equal(t.runs[i], i < tasks ? 1 : 0);
                    assert_int_equal(t.value[i], i < tasks ? (unsigned long long)i * i + 7 : 0);
                }
            }
        }
        /* batches back to back (the helpers still polling from the last
         * one) and after a pause longer than the poll (the helpers asleep
         * on the condition variable): every task once, every time */
        for (int rep = 0; rep < 2000; rep++) {
            tally t;
            memset(&t, 0, sizeof t);
            if (rep % 500 == 499) usleep(2000);
            nx_workers_run(w, 1 + rep % 9, count_task, &t);
            for (unsigned i = 0; i < 10; i++) assert_int_equal(t.runs[i], i < 1u + rep % 9 ? 1 : 0);
        }
        nx_workers_destroy(w);
    }
    /* a pool that never ran a batch starts no thread and is destroyed clean */
    nx_workers *idle;
    if (nx_workers_create(MAX_THREADS, &idle, &err) != 0) fail_msg("%s", err.msg);
    nx_workers_destroy(idle);
    assert_int_equal(nx_workers_threads(NULL), 1);
    tally t;
    memset(&t, 0, sizeof t);
    nx_workers_run(NULL, 5, count_task, &t);
    assert_int_equal(t.runs[4], 1);
    nx_workers_destroy(NULL);
}

static void thread_counts_refused(void **state) {
    (void)state;
    nx_error err;
    nx_workers *w = (nx_workers *)&err;
    assert_int_equal(nx_workers_create(0, &w, &err), -1);
    assert_null(w);
    assert_string_equal(err.msg, "0 threads: must be in [1, 64]");
    assert_int_equal(nx_workers_create(65, &w, &err), -1);
    unsigned n = 0;
    static const char *const bad[] = {"", "0", "-2", " 2", "+2", "2x", "65", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(nx_workers_parse_threads(bad[i], "--threads", &n, &err), -1);
        char want[128];
        snprintf(want, sizeof want, "--threads '%s': must be a thread count in [1, 64]", bad[i]);
        assert_string_equal(err.msg, want);
    }
    assert_int_equal(nx_workers_parse_threads("64", "--threads", &n, &err), 0);
    assert_int_equal(n, 64);
    /* unset: the CPUs this process may use, at most NX_WORKERS_DEFAULT_MAX */
    assert_int_equal(unsetenv("NXSIM_THREADS"), 0);
    cpu_set_t mine, one;
    assert_int_equal(sched_getaffinity(0, sizeof mine, &mine), 0);
    unsigned cpus = (unsigned)CPU_COUNT(&mine);
    assert_int_equal(nx_workers_threads_from_env(&n, &err), 0);
    assert_int_equal(n, cpus < NX_WORKERS_DEFAULT_MAX ? cpus : NX_WORKERS_DEFAULT_MAX);
    /* pinned to one CPU, the default is one thread */
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &mine)) {
            CPU_SET(c, &one);
            break;
        }
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
    assert_int_equal(nx_workers_threads_from_env(&n, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(setenv("NXSIM_THREADS", "", 1), 0);
    assert_int_equal(nx_workers_threads_from_env(&n, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(sched_setaffinity(0, sizeof mine, &mine), 0);
    assert_int_equal(setenv("NXSIM_THREADS", "3", 1), 0);
    assert_int_equal(nx_workers_threads_from_env(&n, &err), 0);
    assert_int_equal(n, 3);
    assert_int_equal(setenv("NXSIM_THREADS", "many", 1), 0);
    assert_int_equal(nx_workers_threads_from_env(&n, &err), -1);
    assert_string_equal(err.msg, "NXSIM_THREADS 'many': must be a thread count in [1, 64]");
    assert_int_equal(unsetenv("NXSIM_THREADS"), 0);
}

/* ---- dma_copy split by rows ---- */

/* Element e of row p of an operand: its HBM or SBUF address in st. */
static uint8_t *elem_at(nx_state *st, const nx_operand *op, uint32_t p, uint32_t e) {
    size_t es = nx_dtype_size((nx_dtype)op->dtype);
    if (op->kind == NX_OPK_HBM)
        return st->hbm + op->offset + ((int64_t)op->partition_stride * p + (int64_t)op->stride[0] * e) * (int64_t)es;
    return nx_sbuf_at(st, 0, op->start_partition + p, op->offset + (uint64_t)op->stride[0] * e * es);
}

typedef struct dma_case {
    const char *what;
    nx_operand dst, src;
    int acc;
    int gather;  /* src row p is src row rows - 1 - p, through an offsets operand at SBUF byte 0 */
} dma_case;

/* Finite fp32 values in [-4, 4) with varied low bits (cheap to make). */
static float scrambled(uint64_t i) {
    return (float)((i * 2654435761u) % 1000003u) / 125000.0f - 4.0f;
}

/* The case on a state whose HBM and SBUF hold finite fp32 values, run on
 * `threads` threads (or, with `reference`, by the loop here); returns
 * a copy of HBM followed by SBUF after the copy. */
static uint8_t *run_dma(const dma_case *c, unsigned threads, int reference, size_t *bytes) {
    nx_state st;
    test_state(&st, 1, 4u << 20, 0);
    const uint64_t sbuf = (uint64_t)st.geo.partitions * st.geo.sbuf_partition_bytes;
    for (uint64_t i = 0; i < st.hbm_bytes / 4; i++) nx_store_le32(st.hbm + 4 * i, nx_f32_bits(scrambled(i)));
    for (uint64_t i = 0; i < sbuf / 4; i++) nx_store_le32(st.core[0].sbuf + 4 * i, nx_f32_bits(scrambled(i + 12345)));
    const uint32_t rows = c->dst.partition_count, cols = c->dst.count[0];
    nx_insn insn = test_dma(c->dst, c->src, 1);
    if (c->acc) insn.flags |= NX_FLAG_ACCUMULATE;
    if (c->gather) {
        for (uint32_t p = 0; p < rows; p++) nx_store_le32(nx_sbuf_at(&st, 0, p, 0), rows - 1 - p);
        insn.op[2] = test_sb(NX_DT_INT32, 0, rows, 0, 1);
        insn.iparam[1] = (int32_t)rows;
    }
    if (reference) {
        /* row by row, element by element: src read whole first (no overlap here) */
        const nx_dtype sd = (nx_dtype)c->src.dtype, dd = (nx_dtype)c->dst.dtype;
        double *v = malloc((size_t)rows * cols * sizeof *v);
        assert_non_null(v);
        for (uint32_t p = 0; p < rows; p++)
            for (uint32_t e = 0; e < cols; e++)
                v[(size_t)p * cols + e] = nx_dtype_load(sd, elem_at(&st, &c->src, c->gather ? rows - 1 - p : p, e));
        for (uint32_t p = 0; p < rows; p++)
            for (uint32_t e = 0; e < cols; e++) {
                uint8_t *q = elem_at(&st, &c->dst, p, e);
                double x = v[(size_t)p * cols + e];
                if (c->acc) {
                    float a = (float)nx_dtype_load(dd, q), b = (float)x;
                    float sum = a + b;
                    x = sum;
                }
                nx_dtype_store(dd, q, x);
            }
        free(v);
    } else {
        nx_workers *w = NULL;
        nx_error err;
        if (threads > 1 && nx_workers_create(threads, &w, &err) != 0) fail_msg("%s", err.msg);
        st.workers = w;
        if (test_run(&st, 0, NX_ENG_SP, &insn, &err) != 0) fail_msg("%s, %u threads: %s", c->what, threads, err.msg);
        st.workers = NULL;
        nx_workers_destroy(w);
    }
    *bytes = st.hbm_bytes + sbuf;
    uint8_t *out = malloc(*bytes);
    assert_non_null(out);
    memcpy(out, st.hbm, st.hbm_bytes);
    memcpy(out + st.hbm_bytes, st.core[0].sbuf, sbuf);
    nx_state_free(&st);
    return out;
}

static nx_operand hbm_strided(nx_dtype dt, uint64_t offset, uint32_t rows, int32_t pitch, int32_t step, uint32_t cols) {
    const int32_t strides[1] = {step};
    const uint32_t counts[1] = {cols};
    return nx_ap(NX_OPK_HBM, dt, 0, rows, pitch, offset, 1, strides, counts);
}

static void dma_every_thread_count(void **state) {
    (void)state;
    const dma_case cases[] = {
        /* fp32 HBM -> bf16 SBUF, 127 rows (uneven over 2, 3, 4 threads) */
        {"cast", test_sb(NX_DT_BF16, 0, 127, 4096, 3000), nx_ap_hbm_rows(NX_DT_FP32, 0, 127, 3000, 3000), 0, 0},
        /* fp32 SBUF accumulated into every other element of HBM rows */
        {"accumulate, strided dst", hbm_strided(NX_DT_FP32, 8, 125, 4500, 2, 2200), test_sb(NX_DT_FP32, 3, 125, 64, 2200),
         1, 0},
        /* HBM rows 1000 elements apart, 4000 long: each dst row overlaps the
         * next three, so rows must land in order (not split) */
        {"overlapping dst rows", nx_ap_hbm_rows(NX_DT_FP32, 2u << 20, 120, 1000, 4000),
         nx_ap_hbm_rows(NX_DT_FP32, 0, 120, 4000, 4000), 0, 0},
        /* gather: SBUF row p from HBM row 126 - p, fp32 -> bf16 */
        {"gather", test_sb(NX_DT_BF16, 0, 127, 256, 2100), nx_ap_hbm_rows(NX_DT_FP32, 64, 127, 2100, 2100), 0, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        assert_true((uint64_t)cases[c].dst.partition_count * cases[c].dst.count[0] >= 1u << 18); /* split size */
        size_t n, m;
        uint8_t *want = run_dma(&cases[c], 1, 1, &n);
        for (unsigned t = 1; t <= MAX_THREADS; t++) {
            uint8_t *got = run_dma(&cases[c], t, 0, &m);
            assert_int_equal(m, n);
            for (size_t i = 0; i < n; i++)
                if (got[i] != want[i]) fail_msg("%s, %u threads: byte %zu is 0x%02x, reference 0x%02x", cases[c].what, t, i, got[i], want[i]);
            free(got);
        }
        free(want);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pool_runs_every_task_once),
        cmocka_unit_test(thread_counts_refused),
        cmocka_unit_test(dma_every_thread_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
