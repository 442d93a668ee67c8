/* Profiles (sim/profile.h): the trace is parsed back with cJSON and checked
 * event by event against a hand-written log; the summaries are checked
 * against figures computed by hand from the trn2 machine description. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "isa/builder.h"
#include "sim/machine.h"
#include "sim/profile.h"
#include "support.h"

typedef struct fixture {
    nx_machine m;
    nx_program prog;
    nx_sim_result r;
    nx_sim_record log[16];
    uint64_t queue_bytes[NX_MAX_CORES * 256], queue_transfers[NX_MAX_CORES * 256]; /* trn2: 256 queues */
    char path[64];
} fixture;

static void emit(nx_builder *b, uint32_t core, nx_engine e, nx_insn insn) {
    nx_error err;
    if (nx_builder_emit(b, core, e, &insn, NULL, &err) != 0) fail_msg("%s", err.msg);
}

static nx_insn load(nx_dtype dt) {
    nx_insn i = nx_insn_make(NX_OP_LOAD_STATIONARY);
    i.op[0] = nx_ap_tile(NX_OPK_SBUF, dt, 0, 128, 0, 128);
    return i;
}

static nx_insn multiply(nx_dtype dt, int inc_sem) {
    nx_insn i = nx_insn_make(NX_OP_MULTIPLY_MOVING);
    i.op[0] = nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 128, 0, 512);
    i.op[1] = nx_ap_tile(NX_OPK_SBUF, dt, 0, 128, 4096, 512);
    if (inc_sem >= 0) nx_insn_inc(&i, (uint32_t)inc_sem, 1);
    return i;
}

static nx_sim_record rec(const nx_program *p, uint32_t core, nx_engine e, uint32_t index, double ready,
                         double start, double end, double busy) {
    nx_sim_record r;
    memset(&r, 0, sizeof r);
    r.index = index;
    r.core = (uint8_t)core;
    r.engine = (uint8_t)e;
    r.opcode = p->stream[core][e].recs[index].opcode;
    r.queue = -1;
    r.t_ready_ns = ready;
    r.t_start_ns = start;
    r.t_end_ns = end;
    r.busy_ns = busy;
    return r;
}

/* One core: PE load, multiply (increments sem0), background load, second
 * multiply; DVE copies the PSUM tile out (waits sem0, increments sem1); SP
 * stores it on queue 17 (waits sem1), logged as issue + transfer. */
static void build(fixture *f, nx_dtype dt) {
    memset(f, 0, sizeof *f);
    nx_error err;
    if (nx_machine_load("trn2", &f->m, &err) != 0) fail_msg("%s", err.msg);
    nx_builder *b = nx_builder_new(&f->m.geo, 1);
    uint64_t out;
    uint64_t shape[2] = {128, 512};
    assert_int_equal(nx_builder_tensor(b, "out", NX_DT_FP32, 2, shape, NX_ROLE_OUTPUT, &out, &err), 0);
    uint32_t s0, s1;
    assert_int_equal(nx_builder_semaphore(b, &s0, &err), 0);
    assert_int_equal(nx_builder_semaphore(b, &s1, &err), 0);
    emit(b, 0, NX_ENG_PE, load(dt));
    emit(b, 0, NX_ENG_PE, multiply(dt, (int)s0));
    emit(b, 0, NX_ENG_PE, load(dt));
    emit(b, 0, NX_ENG_PE, multiply(dt, -1));
    nx_insn copy = nx_insn_make(NX_OP_TENSOR_COPY);
    copy.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 128, 65536, 512);
    copy.op[1] = nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, 128, 0, 512);
    nx_insn_wait(&copy, s0, 1);
    nx_insn_inc(&copy, s1, 1);
    emit(b, 0, NX_ENG_DVE, copy);
    nx_insn store = nx_insn_make(NX_OP_DMA_COPY);
    store.op[0] = nx_ap_hbm_rows(NX_DT_FP32, out, 128, 512, 512);
    store.op[1] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 128, 65536, 512);
    store.iparam[0] = 17;
    nx_insn_wait(&store, s1, 1);
    emit(b, 0, NX_ENG_SP, store);
    if (nx_builder_finish(b, &f->prog, &err) != 0) fail_msg("%s", err.msg);
    nx_builder_free(b);

    const nx_program *p = &f->prog;
    nx_sim_record *L = f->log;
    L[0] = rec(p, 0, NX_ENG_PE, 0, 0, 0, 100, 100);
    L[1] = rec(p, 0, NX_ENG_PE, 1, 100, 100, 400, 1280.0 / 6);
    L[1].flops = 16777216;
    L[1].inc_seq = 1;
    L[2] = rec(p, 0, NX_ENG_PE, 2, 100, 150, 200, 0); /* under the multiply: nested */
    L[3] = rec(p, 0, NX_ENG_PE, 3, 1280.0 / 6 + 100, 1280.0 / 6 + 100, 600, 1280.0 / 6);
    L[3].flops = 16777216;
    L[4] = rec(p, 0, NX_ENG_DVE, 0, 0, 410, 950, 540);
    L[4].waited = 1;
    L[4].wait_seq = 1;
    L[4].inc_seq = 2;
    L[5] = rec(p, 0, NX_ENG_SP, 0, 0, 960, 961, 1);
    L[5].waited = 1;
    L[5].wait_seq = 2;
    L[6] = rec(p, 0, NX_ENG_SP, 0, 961, 961, 2461, 1500);
    L[6].queue = 17;
    L[6].bytes = 262144;
    L[6].wait_seq = 2;

    nx_sim_result *r = &f->r;
    r->start_ns = 5000;
    r->total_ns = 1000;
    r->instructions = 6;
    r->flops = 33554432;
    r->engine[0][NX_ENG_PE] = (nx_sim_engine_stats){4, 500, 50};
    r->engine[0][NX_ENG_DVE] = (nx_sim_engine_stats){1, 540, 410};
    r->engine[0][NX_ENG_SP] = (nx_sim_engine_stats){1, 1, 959};
    r->dma_queues = 256;
    r->dma_queue_bytes = f->queue_bytes;
    r->dma_queue_transfers = f->queue_transfers;
    r->dma_queue_bytes[17] = 262144; /* core 0, queue 17 */
    r->dma_queue_transfers[17] = 1;
    r->log = f->log;
    r->log_count = 7;
    snprintf(f->path, sizeof f->path, "test_profile_%ld.json", (long)getpid());
}

static void fixture_free(fixture *f) {
    if (!getenv("KEEP_TRACE")) unlink(f->path);
    nx_program_free(&f->prog);
}

static cJSON *parse_file(const char *path) {
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *text = malloc((size_t)len + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)len, fp), (size_t)len);
    text[len] = '\0';
    fclose(fp);
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root) fail_msg("%s is not valid JSON", path);
    return root;
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v)) fail_msg("missing number %s", key);
    return v->valuedouble;
}

/* The X slice named `name` on tid `tid` starting at ts (us). */
static const cJSON *find_slice(const cJSON *events, int tid, const char *name, double ts) {
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        if (strcmp(str(e, "ph"), "X") == 0 && (int)num(e, "tid") == tid && strcmp(str(e, "name"), name) == 0 &&
            num(e, "ts") > ts - 0.0005 && num(e, "ts") < ts + 0.0005)
            return e;
    }
    fail_msg("no slice %s at %.3f us on tid %d", name, ts, tid);
    return NULL;
}

static void test_trace_events(void **state) {
    (void)state;
    fixture f;
    build(&f, NX_DT_BF16);
    nx_error err;
    if (nx_profile_write_trace(f.path, &f.m, &f.prog, &f.r, &err) != 0) fail_msg("%s", err.msg);
    cJSON *root = parse_file(f.path);
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    assert_true(cJSON_IsArray(events));

    /* tracks: one per busy engine and per active queue, in one process */
    const char *want_tracks[] = {"pe", "dve", "sp", "dma q17 (engine 1, queue 1)"};
    int want_tids[] = {0, 1, 4, 33};
    int threads = 0, processes = 0, slices = 0, waits = 0, starts = 0, ends = 0;
    double flow_s[8] = {0}, flow_f[8] = {0};
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        const char *ph = str(e, "ph");
        if (strcmp(ph, "M") == 0 && strcmp(str(e, "name"), "thread_name") == 0) {
            const char *name = str(cJSON_GetObjectItemCaseSensitive(e, "args"), "name");
            int tid = (int)num(e, "tid"), known = 0;
            for (int k = 0; k < 4; k++) known |= strcmp(name, want_tracks[k]) == 0 && tid == want_tids[k];
            if (!known) fail_msg("unexpected track %s (tid %d)", name, tid);
            assert_int_equal((int)num(e, "pid"), 1);
            threads++;
        } else if (strcmp(ph, "M") == 0 && strcmp(str(e, "name"), "process_name") == 0) {
            assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(e, "args"), "name"), "core 0");
            processes++;
        } else if (strcmp(ph, "X") == 0) {
            if (strcmp(str(e, "cat"), "wait") == 0) waits++;
            else slices++;
        } else if (strcmp(ph, "s") == 0) {
            int id = (int)num(e, "id");
            assert_true(id >= 1 && id < 8);
            flow_s[id] = num(e, "ts");
            starts++;
        } else if (strcmp(ph, "f") == 0) {
            int id = (int)num(e, "id");
            assert_true(id >= 1 && id < 8);
            assert_string_equal(str(e, "bp"), "e");
            flow_f[id] = num(e, "ts");
            ends++;
        }
    }
    assert_int_equal(threads, 4);
    assert_int_equal(processes, 1);
    assert_int_equal(slices, 7);
    assert_int_equal(waits, 2);
    assert_int_equal(starts, 2);
    assert_int_equal(ends, 2);
    for (int id = 1; id <= 2; id++) assert_true(flow_s[id] > 0 && flow_f[id] > flow_s[id]);

    /* durations (us): the first multiply is cut where the second starts
     * (1280/6 ns later); the background load nests inside it */
    const cJSON *mm = find_slice(events, 0, "multiply_moving", 0.1);
    assert_true(num(mm, "dur") > 0.2125 && num(mm, "dur") < 0.2135);
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(mm, "args");
    assert_int_equal((int)num(args, "index"), 1);
    assert_string_equal(str(args, "moving"), "sbuf:bf16[0:128]@4096{1:512}");
    assert_string_equal(str(args, "dst"), "psum:fp32[0:128]@0{1:512}");
    assert_string_equal(str(args, "inc"), "sem0+1");
    assert_true(num(args, "cycles") == 720);       /* 300 ns at 2.4 GHz */
    assert_true(num(args, "busy_cycles") == 512);
    assert_true(num(args, "flops") == 16777216);
    assert_true(num(args, "end_ns") == 400);
    const cJSON *ls = find_slice(events, 0, "load_stationary", 0.15);
    assert_true(num(ls, "dur") > 0.0495 && num(ls, "dur") < 0.0505);
    const cJSON *mm2 = find_slice(events, 0, "multiply_moving", 0.313);
    assert_true(num(mm2, "dur") > 0.2862 && num(mm2, "dur") < 0.2872);
    const cJSON *wait = find_slice(events, 1, "wait sem0>=1", 0.0);
    assert_true(num(wait, "dur") > 0.4095 && num(wait, "dur") < 0.4105);
    const cJSON *cp = find_slice(events, 1, "tensor_copy", 0.41);
    assert_true(num(cp, "dur") > 0.5395 && num(cp, "dur") < 0.5405);
    assert_true(num(cJSON_GetObjectItemCaseSensitive(cp, "args"), "cycles") == 518); /* 540 ns at 0.96 GHz */
    find_slice(events, 4, "wait sem1>=1", 0.0);
    const cJSON *xfer = find_slice(events, 33, "dma_copy", 0.961);
    assert_true(num(xfer, "dur") > 1.4995 && num(xfer, "dur") < 1.5005);
    args = cJSON_GetObjectItemCaseSensitive(xfer, "args");
    assert_true(num(args, "bytes") == 262144);
    assert_true(num(args, "queue") == 17);
    assert_string_equal(str(xfer, "cat"), "dma");
    cJSON_Delete(root);

    /* no temporary file left beside it */
    char tmp_prefix[80];
    snprintf(tmp_prefix, sizeof tmp_prefix, "%s.tmp.", f.path);
    DIR *dir = opendir(".");
    assert_non_null(dir);
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) assert_null(strstr(entry->d_name, tmp_prefix));
    closedir(dir);
    fixture_free(&f);
}

/* Flows bind to the right ends: from the multiply (increment of sem0) to
 * the copy, and from the copy (sem1) to the SP's issue. */
static void test_trace_flows_link_increment_to_wait(void **state) {
    (void)state;
    fixture f;
    build(&f, NX_DT_BF16);
    nx_error err;
    if (nx_profile_write_trace(f.path, &f.m, &f.prog, &f.r, &err) != 0) fail_msg("%s", err.msg);
    cJSON *root = parse_file(f.path);
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    int seen = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, events) {
        if (strcmp(str(s, "ph"), "s") != 0) continue;
        const cJSON *fe;
        cJSON_ArrayForEach(fe, events) {
            if (strcmp(str(fe, "ph"), "f") != 0 || num(fe, "id") != num(s, "id")) continue;
            if (strcmp(str(s, "name"), "sem0") == 0) {
                assert_int_equal((int)num(s, "tid"), 0);  /* pe */
                /* bound before the nested load [150, 200) of the multiply [100, 313) */
                assert_true(num(s, "ts") == 0.125);
                assert_int_equal((int)num(fe, "tid"), 1); /* dve */
                seen |= 1;
            } else {
                assert_string_equal(str(s, "name"), "sem1");
                assert_int_equal((int)num(s, "tid"), 1);
                assert_int_equal((int)num(fe, "tid"), 4); /* sp issue, not the transfer */
                seen |= 2;
            }
        }
    }
    assert_int_equal(seen, 3);
    cJSON_Delete(root);
    fixture_free(&f);
}

static void test_trace_errors(void **state) {
    (void)state;
    fixture f;
    build(&f, NX_DT_BF16);
    nx_error err;
    assert_int_equal(nx_profile_write_trace("/nonexistent-dir/p.json", &f.m, &f.prog, &f.r, &err), -1);
    assert_string_equal(err.msg, "profile /nonexistent-dir/p.json: cannot create: No such file or directory");
    f.r.log = NULL;
    f.r.log_count = 0;
    assert_int_equal(nx_profile_write_trace(f.path, &f.m, &f.prog, &f.r, &err), -1);
    char want[160];
    snprintf(want, sizeof want, "profile %s: the run kept no log (run with keep_log = 1)", f.path);
    assert_string_equal(err.msg, want);
    assert_int_equal(access(f.path, F_OK), -1); /* nothing written */
    fixture_free(&f);
}

/* Summary figures by hand (trn2: pe 2.4 GHz, dve 0.96 GHz, act/pool/sp
 * 1.2 GHz; PE 128 x 128): PE busy 500 ns = 1200 cycles = 50.0 % of 1000 ns,
 * stall 50 ns = 120 cycles; DVE busy 540 ns = 518.4 -> 518 cycles, stall
 * 410 ns = 393.6 -> 394; peak 128*128*2*2.4 GHz = 78.6432 TFLOPS (bf16),
 * achieved 33554432 FLOP / 1000 ns = 33.554432 TFLOPS. */
static void test_summary_json(void **state) {
    (void)state;
    fixture f;
    build(&f, NX_DT_BF16);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    assert_non_null(mem);
    assert_int_equal(nx_profile_summary_json(mem, &f.m, &f.prog, &f.r), 0);
    fclose(mem);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    assert_string_equal(str(root, "machine"), "trn2");
    assert_true(num(root, "total_ns") == 1000);
    assert_true(num(root, "instructions") == 6);
    const cJSON *cyc = cJSON_GetObjectItemCaseSensitive(root, "total_cycles");
    assert_true(num(cyc, "pe") == 2400 && num(cyc, "dve") == 960 && num(cyc, "act") == 1200);
    const cJSON *core = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "per_core"), 0);
    const cJSON *eng = cJSON_GetObjectItemCaseSensitive(core, "engines");
    const cJSON *pe = cJSON_GetObjectItemCaseSensitive(eng, "pe");
    assert_true(num(pe, "instructions") == 4);
    assert_true(num(pe, "busy_cycles") == 1200);
    assert_true(num(pe, "busy_pct") == 50.0);
    assert_true(num(pe, "stall_cycles") == 120);
    const cJSON *dve = cJSON_GetObjectItemCaseSensitive(eng, "dve");
    assert_true(num(dve, "busy_cycles") == 518);
    assert_true(num(dve, "stall_cycles") == 394);
    assert_true(num(dve, "busy_pct") == 54.0);
    const cJSON *queues = cJSON_GetObjectItemCaseSensitive(core, "dma_queues");
    assert_int_equal(cJSON_GetArraySize(queues), 1);
    const cJSON *q = cJSON_GetArrayItem(queues, 0);
    assert_true(num(q, "queue") == 17 && num(q, "engine") == 1 && num(q, "bytes") == 262144);
    assert_true(num(q, "transfers") == 1 && num(q, "bytes_per_ns") == 262.144);
    assert_true(num(root, "flops") == 33554432);
    assert_true(num(root, "tflops_achieved") > 33.5544319 && num(root, "tflops_achieved") < 33.5544321);
    assert_true(num(root, "tflops_peak") > 78.6431999 && num(root, "tflops_peak") < 78.6432001);
    assert_string_equal(str(root, "peak_dtype"), "bf16");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(root, "peak_fp32_rate")));
    cJSON_Delete(root);
    free(text);
    fixture_free(&f);
}

/* fp32 matmuls run at 1/pe_fp32_factor (4): peak 19.6608 TFLOPS. */
static void test_summary_fp32_peak(void **state) {
    (void)state;
    fixture f;
    build(&f, NX_DT_FP32);
    nx_profile_peak peak;
    nx_profile_peak_of(&f.m, &f.prog, &peak);
    assert_string_equal(peak.dtype, "fp32");
    assert_int_equal(peak.fp32_rate, 1);
    assert_true(peak.tflops > 19.6607999 && peak.tflops < 19.6608001);
    fixture_free(&f);
}

static void test_summary_text(void **state) {
    (void)state;
    fixture f;
    build(&f, NX_DT_BF16);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    assert_non_null(mem);
    assert_int_equal(nx_profile_summary(mem, &f.m, &f.prog, &f.r), 0);
    fclose(mem);
    assert_non_null(strstr(text, "simulated: 1000.000 ns on trn2, 1 core, 6 instructions\n"));
    assert_non_null(strstr(text, "in engine cycles: pe 2400 (2.4 GHz), dve 960 (0.96 GHz), act 1200 (1.2 GHz)"));
    /* the pe and dve rows, read back as numbers */
    const char *row = strstr(text, "\n  pe ");
    assert_non_null(row);
    char name[16];
    unsigned long insns;
    double busy, pct, stall;
    assert_int_equal(sscanf(row, " %15s %lu %lf %lf%% %lf", name, &insns, &busy, &pct, &stall), 5);
    assert_string_equal(name, "pe");
    assert_true(insns == 4 && busy == 1200 && pct == 50.0 && stall == 120);
    row = strstr(text, "\n  dve ");
    assert_non_null(row);
    assert_int_equal(sscanf(row, " %15s %lu %lf %lf%% %lf", name, &insns, &busy, &pct, &stall), 5);
    assert_true(insns == 1 && busy == 518 && pct == 54.0 && stall == 394);
    row = strstr(text, "\n  q17 (engine 1.1)");
    assert_non_null(row);
    unsigned long transfers, bytes;
    double gbs;
    assert_int_equal(sscanf(row, " q17 (engine 1.1) %lu %lu %lf", &transfers, &bytes, &gbs), 3);
    assert_true(transfers == 1 && bytes == 262144 && gbs == 262.14);
    assert_non_null(strstr(text, "FLOPs 33554432: 33.554 TFLOPS achieved of 78.643 peak (42.7%)"));
    assert_non_null(strstr(text, "dominant matmul dtype bf16"));
    free(text);
    fixture_free(&f);
}

/* Two cores meeting at a barrier: one flow each way. */
static void test_trace_barrier_flows(void **state) {
    (void)state;
    nx_machine m;
    nx_error err;
    if (nx_machine_load("trn2", &m, &err) != 0) fail_msg("%s", err.msg);
    nx_builder *b = nx_builder_new(&m.geo, 2);
    emit(b, 0, NX_ENG_POOL, nx_insn_make(NX_OP_CORE_BARRIER));
    emit(b, 1, NX_ENG_POOL, nx_insn_make(NX_OP_CORE_BARRIER));
    nx_program prog;
    if (nx_builder_finish(b, &prog, &err) != 0) fail_msg("%s", err.msg);
    nx_builder_free(b);
    nx_sim_record log[2];
    log[0] = rec(&prog, 0, NX_ENG_POOL, 0, 0, 300, 301, 1);
    log[1] = rec(&prog, 1, NX_ENG_POOL, 0, 50, 300, 301, 1);
    log[0].waited = log[1].waited = 1;
    nx_sim_result r;
    memset(&r, 0, sizeof r);
    r.total_ns = 301;
    r.instructions = 2;
    r.log = log;
    r.log_count = 2;
    char path[64];
    snprintf(path, sizeof path, "test_profile_barrier_%ld.json", (long)getpid());
    if (nx_profile_write_trace(path, &m, &prog, &r, &err) != 0) fail_msg("%s", err.msg);
    cJSON *root = parse_file(path);
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    int flows = 0, waits = 0, processes = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        if (strcmp(str(e, "ph"), "s") == 0) {
            assert_string_equal(str(e, "name"), "barrier");
            flows++;
        }
        if (strcmp(str(e, "name"), "wait barrier") == 0) waits++;
        if (strcmp(str(e, "name"), "process_name") == 0) processes++;
    }
    assert_int_equal(flows, 2);
    assert_int_equal(waits, 2);
    assert_int_equal(processes, 2);
    cJSON_Delete(root);
    unlink(path);
    nx_program_free(&prog);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_events),
        cmocka_unit_test(test_trace_flows_link_increment_to_wait),
        cmocka_unit_test(test_trace_errors),
        cmocka_unit_test(test_summary_json),
        cmocka_unit_test(test_summary_fp32_peak),
        cmocka_unit_test(test_summary_text),
        cmocka_unit_test(test_trace_barrier_flows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
