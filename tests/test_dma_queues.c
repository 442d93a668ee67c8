/* DMA queues follow the machine description end to end: a machine file of
 * 32 DMA engines x 16 queues (512 queues per core, twice trn2's) runs a
 * program with one transfer on every queue, and every layer sees all 512:
 * validation (queue 512 is refused), the model's per-queue statistics, the
 * text and JSON summaries and the trace's queue tracks (engine = q / 16,
 * slot = q % 16, docs/parts/machine.md), the race detector (a race between
 * queues 256 and 300 is found and named), and the authoring layer's lanes
 * (lane l on engine l mod 32). Expected bytes are worked out per queue: the
 * transfer on queue q moves 1 + q % 7 rows of 16 fp32. The opcode table's
 * DMA class is checked here too: the rows of class DMA are the ones that
 * name a queue. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "isa/builder.h"
#include "isa/exec.h"
#include "isa/fileio.h"
#include "isa/opcodes.h"
#include "kernels/author/author.h"
#include "sim/model.h"
#include "sim/profile.h"
#include "sim/race.h"
#include "support.h"

enum { ENGINES = 32, PER_ENGINE = 16, QUEUES = ENGINES * PER_ENGINE, COLS = 16 };

static uint32_t rows_of(uint32_t q) { return 1 + q % 7; }
static uint64_t bytes_of(uint32_t q) { return (uint64_t)rows_of(q) * COLS * 4; }

/* A machine file of `engines` x `per_engine` queues on trn2, written in the
 * test's working directory and loaded. */
static nx_machine dma_machine(uint32_t engines, uint32_t per_engine) {
    char path[64];
    snprintf(path, sizeof path, "dma%ux%u_%ld.json", engines, per_engine, (long)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"base\": \"trn2\", \"name\": \"dma%ux%u\",\n"
               " \"geometry\": {\"dma_queues\": %u},\n"
               " \"dma\": {\"engines\": %u, \"queues_per_engine\": %u}}\n",
            engines, per_engine, engines * per_engine, engines, per_engine);
    fclose(f);
    nx_machine m;
    nx_error err;
    int rc = nx_machine_load(path, &m, &err);
    unlink(path);
    if (rc != 0) fail_msg("%s", err.msg);
    assert_int_equal(nx_geometry_dma_queues(&m.geo), engines * per_engine);
    assert_int_equal(m.geo.dma_engines, engines);
    assert_int_equal(m.geo.dma_queues_per_engine, per_engine);
    return m;
}

static nx_machine wide_machine(void) { return dma_machine(ENGINES, PER_ENGINE); }

static nx_insn transfer(uint64_t src, uint32_t q, uint32_t sbuf_partition, uint64_t sbuf_off) {
    nx_insn d = nx_insn_make(NX_OP_DMA_COPY);
    d.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, sbuf_partition, rows_of(q), sbuf_off, COLS);
    d.op[1] = nx_ap_hbm_rows(NX_DT_FP32, src + (uint64_t)q * 8 * COLS * 4, rows_of(q), COLS, COLS);
    d.iparam[0] = (int32_t)q;
    return d;
}

/* One transfer per queue, queue q into SBUF bytes [64 q, 64 q + 64) of its
 * rows: no two transfers touch the same bytes. */
static void every_queue_program(const nx_machine *m, nx_program *p) {
    nx_builder *b = nx_builder_new(&m->geo, 1);
    assert_non_null(b);
    nx_error err;
    uint64_t shape[2] = {(uint64_t)QUEUES * 8, COLS}, src;
    if (nx_builder_tensor(b, "src", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, &src, &err) != 0) fail_msg("%s", err.msg);
    for (uint32_t q = 0; q < QUEUES; q++) {
        nx_insn d = transfer(src, q, 0, (uint64_t)q * COLS * 4);
        if (nx_builder_emit(b, 0, NX_ENG_SP, &d, NULL, &err) != 0) fail_msg("queue %u: %s", q, err.msg);
    }
    /* one past the last queue is refused, with the machine's count */
    if (nx_builder_finish(b, p, &err) != 0) fail_msg("%s", err.msg);
    nx_builder_free(b);
    nx_insn bad = transfer(src, 0, 0, 0);
    bad.iparam[0] = QUEUES;
    assert_int_equal(nx_insn_validate(&bad, NX_ENG_SP, &m->geo, p->hbm_bytes, p->sem_count, &err), -1);
    assert_string_equal(err.msg, "queue 512 is outside [0, 512)");
}

static void run(const nx_machine *m, const nx_program *p, nx_state *st, nx_sim_result *r) {
    nx_error err;
    test_rng rng = {7};
    if (nx_state_init(st, &m->geo, p->cores, p->hbm_bytes, p->sem_count, &err) != 0) fail_msg("%s", err.msg);
    for (uint64_t i = 0; i < p->hbm_bytes; i++) st->hbm[i] = (uint8_t)(test_rng_next(&rng) >> 56);
    nx_sim_options opt = {1, 0};
    if (nx_sim_run(m, p, st, &opt, r, &err) != 0) fail_msg("model: %s", err.msg);
}

/* Finishes b into p (freeing b) and runs p on the model. */
static void finish_and_run(nx_builder *b, const nx_machine *m, nx_program *p, nx_state *st, nx_sim_result *r) {
    nx_error err;
    if (nx_builder_finish(b, p, &err) != 0) fail_msg("%s", err.msg);
    nx_builder_free(b);
    run(m, p, st, r);
}

static void run_free(nx_sim_result *r, nx_state *st, nx_program *p) {
    nx_sim_result_free(r);
    nx_state_free(st);
    nx_program_free(p);
}

/* What a summary writer prints for run r, as a NUL-terminated heap string. */
static char *summary(int (*write)(FILE *, const nx_machine *, const nx_program *, const nx_sim_result *),
                     const nx_machine *m, const nx_program *p, const nx_sim_result *r) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(write(f, m, p, r), 0);
    fclose(f);
    return buf;
}

/* Writes the trace of r and returns how many DMA queue tracks it names,
 * checking each track's name (queue, engine, slot as the geometry numbers
 * them) and that it holds the queue's one transfer slice. */
static uint32_t queue_tracks(const nx_machine *m, const nx_program *p, const nx_sim_result *r) {
    char path[64];
    nx_error err;
    snprintf(path, sizeof path, "%s_%ld.trace.json", m->geo.name, (long)getpid());
    if (nx_profile_write_trace(path, m, p, r, &err) != 0) fail_msg("%s", err.msg);
    uint8_t *text;
    size_t len;
    if (nx_read_file(path, &text, &len, &err) != 0) fail_msg("%s", err.msg);
    unlink(path);
    cJSON *root = cJSON_Parse((const char *)text);
    free(text);
    assert_non_null(root);
    uint32_t tracks = 0, per = m->geo.dma_queues_per_engine;
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    for (const cJSON *e = events->child; e; e = e->next) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        int tid = cJSON_GetObjectItemCaseSensitive(e, "tid") ? cJSON_GetObjectItemCaseSensitive(e, "tid")->valueint : -1;
        if (tid < 16 || !cJSON_IsString(name)) continue;
        uint32_t tq = (uint32_t)tid - 16;
        if (strcmp(name->valuestring, "dma_copy") == 0) {
            /* a transfer slice on core 0's track of its own queue */
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
            assert_int_equal(cJSON_GetObjectItemCaseSensitive(e, "pid")->valueint, 1);
            assert_int_equal(cJSON_GetObjectItemCaseSensitive(args, "queue")->valueint, tq);
            continue;
        }
        if (strcmp(name->valuestring, "thread_name") != 0) continue;
        char want[64];
        snprintf(want, sizeof want, "dma q%u (engine %u, queue %u)", tq, tq / per, tq % per);
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(args, "name")->valuestring, want);
        tracks++;
    }
    cJSON_Delete(root);
    return tracks;
}

static void test_dma_class_rows_name_a_queue(void **state) {
    (void)state;
    unsigned dma_rows = 0;
    for (unsigned o = 0; o < NX_OP_COUNT; o++) {
        const nx_opcode_info *info = &nx_opcode_table[o];
        int names_queue = info->iparam_name[0] && strcmp(info->iparam_name[0], "queue") == 0;
        assert_int_equal(nx_opcode_is_dma(o), names_queue);
        if (!nx_opcode_is_dma(o)) continue;
        dma_rows++;
        assert_int_equal(info->engines, NX_ENG_BIT(NX_ENG_SP));
    }
    assert_int_equal(dma_rows, 2); /* dma_copy, dma_transpose */
    assert_false(nx_opcode_is_dma(NX_OP_COUNT));
    nx_insn in = nx_insn_make(NX_OP_DMA_TRANSPOSE);
    in.iparam[0] = 300;
    assert_int_equal(nx_insn_dma_queue(&in), 300);
    in.opcode = NX_OP_TENSOR_COPY;
    assert_int_equal(nx_insn_dma_queue(&in), -1);
}

/* The geometry's queue numbering on the wide machine and on trn2. */
static void test_queue_numbering(void **state) {
    (void)state;
    nx_machine m = wide_machine();
    assert_int_equal(nx_dma_queue_engine(&m.geo, 300), 18);
    assert_int_equal(nx_dma_queue_slot(&m.geo, 300), 12);
    assert_int_equal(nx_dma_queue_of(&m.geo, 18, 12), 300);
    for (uint32_t q = 0; q < QUEUES; q++)
        assert_int_equal(nx_dma_queue_of(&m.geo, nx_dma_queue_engine(&m.geo, q), nx_dma_queue_slot(&m.geo, q)), q);
    nx_geometry t = test_geometry("trn2");
    assert_int_equal(nx_geometry_dma_queues(&t), 256);
    assert_int_equal(nx_dma_queue_engine(&t, 255), 15);
}

static void test_every_queue_runs_and_is_reported(void **state) {
    (void)state;
    nx_machine m = wide_machine();
    nx_program p;
    every_queue_program(&m, &p);
    nx_state st, ref;
    nx_sim_result r;
    run(&m, &p, &st, &r);
    /* the model computes what the functional executor computes */
    nx_error err;
    if (nx_state_init(&ref, &m.geo, 1, p.hbm_bytes, p.sem_count, &err) != 0) fail_msg("%s", err.msg);
    memcpy(ref.hbm, st.hbm, p.hbm_bytes);
    if (nx_exec_program(&p, &ref, &err) != 0) fail_msg("functional: %s", err.msg);
    assert_memory_equal(st.core[0].sbuf, ref.core[0].sbuf, (size_t)m.geo.partitions * m.geo.sbuf_partition_bytes);

    /* statistics: every queue of the machine, each with its own transfer */
    assert_int_equal(r.dma_queues, QUEUES);
    for (uint32_t q = 0; q < QUEUES; q++) {
        if (nx_sim_queue_transfers(&r, 0, q) != 1 || nx_sim_queue_bytes(&r, 0, q) != bytes_of(q))
            fail_msg("queue %u: %llu transfers, %llu bytes; want 1, %llu", q,
                     (unsigned long long)nx_sim_queue_transfers(&r, 0, q),
                     (unsigned long long)nx_sim_queue_bytes(&r, 0, q), (unsigned long long)bytes_of(q));
        assert_int_equal(nx_sim_queue_transfers(&r, 1, q), 0);
    }
    assert_int_equal(nx_sim_queue_bytes(&r, 0, QUEUES), 0); /* outside: 0, not a read past the end */

    /* the JSON summary lists all 512, with engine q / 16 */
    char *text = summary(nx_profile_summary_json, &m, &p, &r);
    cJSON *root = cJSON_Parse(text);
    free(text);
    assert_non_null(root);
    const cJSON *core = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "per_core"), 0);
    const cJSON *queues = cJSON_GetObjectItemCaseSensitive(core, "dma_queues");
    assert_int_equal(cJSON_GetArraySize(queues), QUEUES);
    uint32_t q = 0;
    for (const cJSON *o = queues->child; o; o = o->next, q++) {
        assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "queue")->valuedouble, q);
        assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "engine")->valuedouble, q / PER_ENGINE);
        assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "transfers")->valuedouble, 1);
        assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "bytes")->valuedouble, bytes_of(q));
    }
    cJSON_Delete(root);

    /* the text summary names the queue's engine and slot */
    char *buf = summary(nx_profile_summary, &m, &p, &r);
    assert_non_null(strstr(buf, "q300 (engine 18.12)"));
    assert_non_null(strstr(buf, "q511 (engine 31.15)"));
    free(buf);

    /* the trace has one track per queue */
    assert_int_equal(queue_tracks(&m, &p, &r), QUEUES);

    /* no two transfers touch the same bytes: no race */
    if (nx_race_check(&p, r.log, r.log_count, &err) != 0) fail_msg("race check: %s", err.msg);
    nx_state_free(&ref);
    run_free(&r, &st, &p);
}

/* Two unordered transfers on queues 256 and 300 write the same bytes. */
static void test_race_between_high_queues(void **state) {
    (void)state;
    nx_machine m = wide_machine();
    nx_builder *b = nx_builder_new(&m.geo, 1);
    nx_error err;
    uint64_t shape[2] = {(uint64_t)QUEUES * 8, COLS}, src;
    if (nx_builder_tensor(b, "src", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, &src, &err) != 0) fail_msg("%s", err.msg);
    nx_insn a = transfer(src, 256, 0, 0), c = transfer(src, 300, 0, 0);
    if (nx_builder_emit(b, 0, NX_ENG_SP, &a, NULL, &err) != 0 || nx_builder_emit(b, 0, NX_ENG_SP, &c, NULL, &err) != 0)
        fail_msg("%s", err.msg);
    nx_program p;
    nx_state st;
    nx_sim_result r;
    finish_and_run(b, &m, &p, &st, &r);
    assert_int_equal(nx_race_check(&p, r.log, r.log_count, &err), 1);
    assert_non_null(strstr(err.msg, "core 0 sp #0 (dma_copy) on queue 256 writes sbuf[0:5]@[0, 64)"));
    assert_non_null(strstr(err.msg, "core 0 sp #1 (dma_copy) on queue 300 writes sbuf[0:7]@[0, 64)"));
    run_free(&r, &st, &p);
}

/* The authoring layer spreads its lanes over all 32 engines: lane l is
 * engine l's first queue (l < 32), so a 32-lane kernel reaches queues past
 * 255; the kernel runs race-free and its queues show in the statistics. */
static void test_author_lanes_use_every_engine(void **state) {
    (void)state;
    nx_machine m = wide_machine();
    nx_builder *b = nx_builder_new(&m.geo, 1);
    nx_kctx *k = nx_kctx_new_machine(b, &m, 0, 1);
    assert_non_null(k);
    assert_int_equal(nx_kctx_lanes(k), 32);
    for (uint32_t l = 0; l < 32; l++) assert_int_equal(nx_kctx_lane_queue(k, l), l * PER_ENGINE);
    nx_error err;
    uint64_t shape[2] = {128, 64}, x, y;
    if (nx_builder_tensor(b, "x", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, &x, &err) != 0 ||
        nx_builder_tensor(b, "y", NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, &y, &err) != 0)
        fail_msg("%s", err.msg);
    nx_tile t;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "t", NX_DT_FP32, 128, 64, &t, &err) != 0) fail_msg("%s", err.msg);
    nx_operand ta = nx_tile_ap(&t);
    nx_operand xin = nx_ap_hbm_rows(NX_DT_FP32, x, 128, 64, 64), yout = nx_ap_hbm_rows(NX_DT_FP32, y, 128, 64, 64);
    /* in over lanes 0..31 (4 rows each), out over the same lanes */
    if (nx_kctx_dma_split(k, 0, 32, &ta, &xin, &err) != 0 || nx_kctx_dma_split(k, 0, 32, &yout, &ta, &err) != 0 ||
        nx_kctx_finish(k, &err) != 0)
        fail_msg("%s", err.msg);
    nx_kctx_free(k);
    nx_program p;
    nx_state st;
    nx_sim_result r;
    finish_and_run(b, &m, &p, &st, &r);
    assert_memory_equal(st.hbm + y, st.hbm + x, 128 * 64 * 4);
    if (nx_race_check(&p, r.log, r.log_count, &err) != 0) fail_msg("race check: %s", err.msg);
    for (uint32_t l = 0; l < 32; l++) {
        assert_int_equal(nx_sim_queue_transfers(&r, 0, l * PER_ENGINE), 2);
        assert_int_equal(nx_sim_queue_bytes(&r, 0, l * PER_ENGINE), 2 * 4 * 64 * 4);
    }
    run_free(&r, &st, &p);
}

/* The largest count a machine file allows, 256 engines x 256 queues: the
 * last queues (65520 and up, whose trace tracks pass 65536) run and are
 * reported on their own tracks, apart from every other core's. */
static void test_largest_queue_count(void **state) {
    (void)state;
    nx_machine m = dma_machine(256, 256);
    nx_builder *b = nx_builder_new(&m.geo, 1);
    nx_error err;
    uint64_t shape[2] = {8 * 8, COLS}, src;
    if (nx_builder_tensor(b, "src", NX_DT_FP32, 2, shape, NX_ROLE_INPUT, &src, &err) != 0) fail_msg("%s", err.msg);
    const uint32_t queues[3] = {0, 65520, 65535};
    for (int i = 0; i < 3; i++) {
        nx_insn d = transfer(src, 0, 0, (uint64_t)i * COLS * 4);
        d.iparam[0] = (int32_t)queues[i];
        if (nx_builder_emit(b, 0, NX_ENG_SP, &d, NULL, &err) != 0) fail_msg("%s", err.msg);
    }
    nx_program p;
    nx_state st;
    nx_sim_result r;
    finish_and_run(b, &m, &p, &st, &r);
    assert_int_equal(r.dma_queues, 65536);
    for (int i = 0; i < 3; i++) assert_int_equal(nx_sim_queue_bytes(&r, 0, queues[i]), bytes_of(0));
    assert_int_equal(queue_tracks(&m, &p, &r), 3);
    char *text = summary(nx_profile_summary, &m, &p, &r);
    assert_non_null(strstr(text, "q65535 (engine 255.255)"));
    free(text);
    if (nx_race_check(&p, r.log, r.log_count, &err) != 0) fail_msg("race check: %s", err.msg);
    run_free(&r, &st, &p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dma_class_rows_name_a_queue),
        cmocka_unit_test(test_queue_numbering),
        cmocka_unit_test(test_every_queue_runs_and_is_reported),
        cmocka_unit_test(test_race_between_high_queues),
        cmocka_unit_test(test_author_lanes_use_every_engine),
        cmocka_unit_test(test_largest_queue_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
