/* libnxsim through its public header only (include/nxsim/nxsim.h), linked
 * against libnxsim.so: a registry leaf on given operands against a
 * transpose computed here, the default op, both backends giving the same
 * bits, checks, summaries, by-source rows and trace files, an ISA program
 * through nx_session_exec against values computed here, dtype conversion,
 * the errors (the registry's miss text verbatim, bad dtypes, bad
 * attributes, bad inputs), and two threads running the model at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <cmocka.h>

#include "nxsim/nxsim.h"

#define OK(call)                                                               \
    do {                                                                       \
        nx_status st_ = (call);                                                \
        if (st_ != NX_OK) fail_msg("%s: status %d: %s", #call, st_, msg.text); \
    } while (0)

static float *ramp(size_t n, float scale) {
    float *v = malloc(n * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++) v[i] = (float)((double)((i * 7919) % 1000) * scale - 1.0);
    return v;
}

static void test_transpose_on_given_operand(void **state) {
    (void)state;
    nx_message msg;
    nx_session *s;
    OK(nx_session_open("trn2", &s, &msg));
    assert_string_equal(nx_session_machine(s), "trn2");
    enum { R = 200, C = 136 };
    float *x = ramp((size_t)R * C, 0.002f);
    nx_call *call;
    OK(nx_call_new("tiled_pf_transpose", &call, &msg));
    uint64_t shape[2] = {R, C};
    OK(nx_call_add_operand(call, "fp32", 2, shape, x, &msg));
    OK(nx_call_set_attr(call, "permutation", "[1, 0]", &msg));
    nx_config cfg;
    nx_config_init(&cfg);
    cfg.check = 1;
    cfg.race_check = 1;
    nx_result *r;
    OK(nx_session_run(s, call, &cfg, &r, &msg));
    assert_int_equal(nx_result_count(r), 1);
    nx_tensor_info t;
    assert_int_equal(nx_result_tensor(r, 0, &t), NX_OK);
    assert_string_equal(t.dtype, "fp32");
    assert_int_equal(t.ndims, 2);
    assert_int_equal(t.shape[0], C);
    assert_int_equal(t.shape[1], R);
    assert_int_equal(t.bytes, (uint64_t)R * C * 4);
    const float *y = nx_result_data(r, 0);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++)
            if (memcmp(&y[(size_t)j * R + i], &x[(size_t)i * C + j], 4) != 0) fail_msg("y[%d][%d] != x[%d][%d]", j, i, i, j);
    assert_string_equal(nx_result_kernel(r), "tiled_pf_transpose");
    assert_int_equal(nx_result_cores(r), 2);
    assert_int_equal(nx_result_new_traces(r), 1);
    assert_true(nx_result_checked(r));
    assert_int_equal(nx_result_check_failures(r), 0);
    assert_true(nx_result_race_checked(r));
    nx_check_info ci;
    assert_int_equal(nx_result_check(r, 0, &ci), NX_OK);
    assert_string_equal(ci.tolerance, "exact");
    assert_string_equal(ci.reference, "nx_ref_transpose");
    assert_true(ci.max_abs_error == 0);
    assert_true(nx_result_on_model(r));
    double total = nx_result_total_ns(r);
    assert_true(total > 0);
    double busy_sum = 0;
    for (uint32_t e = 0; e < NX_ENGINE_COUNT; e++) {
        nx_engine_stats es;
        assert_int_equal(nx_result_engine(r, 1, e, &es), NX_OK);
        assert_true(es.busy_pct >= 0 && es.busy_pct <= 100);
        assert_true(es.clock_ghz > 0);
        busy_sum += es.busy_ns;
    }
    assert_true(busy_sum > 0);
    assert_string_equal(nx_engine_label(0), "pe");
    assert_null(nx_engine_label(NX_ENGINE_COUNT));
    nx_engine_stats es;
    assert_int_equal(nx_result_engine(r, 2, 0, &es), NX_ERR_USAGE);

    char *sum = nx_result_summary(r, 0);
    assert_non_null(sum);
    assert_non_null(strstr(sum, "simulated: "));
    nx_free(sum);
    char *js = nx_result_summary(r, 1);
    assert_non_null(js);
    assert_non_null(strstr(js, "\"total_ns\""));
    nx_free(js);
    char *bs = nx_result_by_source(r, 0);
    assert_non_null(bs);
    assert_non_null(strstr(bs, "kernels/transpose/tiled_pf_transpose.c:"));
    nx_free(bs);
    char *op = nx_result_op_json(r);
    assert_non_null(op);
    assert_non_null(strstr(op, "\"shape\": [136, 200]"));
    nx_free(op);

    char dir[] = "/tmp/nxsim-api-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char trace[64], svg[64];
    snprintf(trace, sizeof trace, "%s/t.json", dir);
    snprintf(svg, sizeof svg, "%s/t.svg", dir);
    OK(nx_result_write_trace(r, trace, &msg));
    OK(nx_result_write_timeline(r, svg, &msg));
    assert_int_equal(access(trace, R_OK), 0);
    assert_int_equal(access(svg, R_OK), 0);
    char bad[96];
    snprintf(bad, sizeof bad, "%s/no/such/dir/t.svg", dir);
    assert_int_equal(nx_result_write_timeline(r, bad, &msg), NX_ERR_RUNTIME);
    assert_non_null(strstr(msg.text, "timeline "));
    unlink(trace);
    unlink(svg);
    rmdir(dir);

    /* the same call again: a cache hit, the same bits */
    nx_result *again;
    OK(nx_session_run(s, call, &cfg, &again, &msg));
    assert_int_equal(nx_result_new_traces(again), 1);
    assert_true(nx_result_cache_hits(again) >= 1);
    assert_memory_equal(nx_result_data(again, 0), y, (size_t)R * C * 4);
    assert_true(nx_result_total_ns(again) == total);
    nx_result_free(again);

    /* the functional backend: same bits, no timing */
    cfg.backend = NX_BACKEND_FUNCTIONAL;
    cfg.race_check = 0;
    nx_result *f;
    OK(nx_session_run(s, call, &cfg, &f, &msg));
    assert_false(nx_result_on_model(f));
    assert_memory_equal(nx_result_data(f, 0), y, (size_t)R * C * 4);
    assert_null(nx_result_summary(f, 0));
    assert_int_equal(nx_result_write_trace(f, "/tmp/never.json", &msg), NX_ERR_USAGE);
    nx_result_free(f);

    nx_result_free(r);
    nx_call_free(call);
    nx_session_close(s);
    free(x);
}

static void test_default_op_and_errors(void **state) {
    (void)state;
    nx_message msg;
    nx_session *s;
    OK(nx_session_open(NULL, &s, &msg));
    nx_call *c;
    OK(nx_call_new("tiled_dve_transpose_10", &c, &msg));
    nx_result *r;
    OK(nx_session_run(s, c, NULL, &r, &msg));
    nx_tensor_info t;
    assert_int_equal(nx_result_tensor(r, 0, &t), NX_OK);
    assert_int_equal(t.shape[0], 384);
    assert_int_equal(t.shape[1], 512);
    assert_string_equal(t.name, "out0");
    nx_result_free(r);
    nx_call_free(c);

    OK(nx_call_new("NoSuchKernel", &c, &msg));
    assert_int_equal(nx_session_run(s, c, NULL, &r, &msg), NX_ERR_INPUT);
    assert_null(r);
    assert_true(strncmp(msg.text, "Internal NKI kernel 'NoSuchKernel' is not registered. Available kernels: dict_keys([",
                        strlen("Internal NKI kernel 'NoSuchKernel' is not registered. Available kernels: dict_keys([")) == 0);
    nx_call_free(c);

    OK(nx_call_new("tiled_pf_transpose", &c, &msg));
    uint64_t shape[2] = {4, 4};
    assert_int_equal(nx_call_add_operand(c, "fp64", 2, shape, NULL, &msg), NX_ERR_INPUT);
    assert_string_equal(msg.text, "operand 0: unknown dtype 'fp64'");
    assert_int_equal(nx_call_set_attr(c, "permutation", "[1,", &msg), NX_ERR_INPUT);
    assert_non_null(strstr(msg.text, "attribute permutation"));
    OK(nx_call_add_operand(c, "fp32", 2, shape, NULL, &msg));
    OK(nx_call_set_attr(c, "permutation", "[0, 0]", &msg));
    assert_int_equal(nx_session_run(s, c, NULL, &r, &msg), NX_ERR_INPUT);
    assert_true(strlen(msg.text) > 0 && strchr(msg.text, '\n') == NULL);
    nx_call_free(c);

    nx_session *bad;
    assert_int_equal(nx_session_open("no-such-machine", &bad, &msg), NX_ERR_INPUT);
    assert_null(bad);
    assert_non_null(strstr(msg.text, "no-such-machine"));
    nx_session_close(s);

    char *reg = nx_registry_json(0);
    assert_non_null(reg);
    assert_non_null(strstr(reg, "\"key\": \"tiled_pf_transpose\""));
    nx_free(reg);
    char *all = nx_registry_json(1);
    assert_non_null(strstr(all, "\"key\": \"SelectAndScatter\""));
    nx_free(all);
    char *k = nx_kernels_json();
    assert_non_null(strstr(k, "\"tier\": \"reference\""));
    nx_free(k);
    assert_string_equal(nx_version(), NXSIM_VERSION_STRING);
    int presets = 0;
    for (const char *const *p = nx_machine_presets_list(); *p; p++) presets += strcmp(*p, "trn1") == 0;
    assert_int_equal(presets, 1);
}

/* An ISA program: y = x * 2 + 1 on ACT, its values computed here. */
static const char program[] =
    ".machine trn2\n"
    ".semaphores 2\n"
    ".tensor x input fp32 [4,8]\n"
    ".tensor y output fp32 [4,8]\n"
    ".engine act\n"
    "    activation dst=sbuf:fp32[0:4]@64{1:8} in=sbuf:fp32[0:4]@0{1:8} scale=#2 bias=#1 func=identity wait=sem0>=1 inc=sem1\n"
    "    end\n"
    ".engine sp\n"
    "    dma_copy dst=sbuf:fp32[0:4]@0{1:8} src=hbm:fp32[4/8]@x{1:8} queue=0 bound=0 inc=sem0\n"
    "    dma_copy dst=hbm:fp32[4/8]@y{1:8} src=sbuf:fp32[0:4]@64{1:8} queue=0 bound=0 wait=sem1>=1\n"
    "    end\n";

static void test_exec_program(void **state) {
    (void)state;
    nx_message msg;
    nx_prog *p;
    if (nx_prog_assemble(program, "prog.nxs", &p, &msg) != NX_OK) fail_msg("%s", msg.text);
    assert_string_equal(nx_prog_machine(p), "trn2");
    assert_int_equal(nx_prog_tensor_count(p), 2);
    nx_tensor_info t;
    assert_int_equal(nx_prog_tensor(p, 1, &t), NX_OK);
    assert_string_equal(t.name, "y");
    assert_string_equal(t.role, "output");
    nx_session *s;
    OK(nx_session_open(nx_prog_machine(p), &s, &msg));
    float x[32];
    for (int i = 0; i < 32; i++) x[i] = (float)i * 0.25f - 3.0f;
    const char *names[] = {"x"};
    const void *data[] = {x};
    uint64_t bytes[] = {sizeof x};
    nx_result *r;
    OK(nx_session_exec(s, p, 1, names, data, bytes, NULL, &r, &msg));
    assert_int_equal(nx_result_count(r), 1);
    const float *y = nx_result_data(r, 0);
    for (int i = 0; i < 32; i++) assert_true(y[i] == x[i] * 2.0f + 1.0f);
    assert_true(nx_result_total_ns(r) > 0);
    assert_string_equal(nx_result_kernel(r), "");
    nx_result_free(r);
    uint64_t short_bytes[] = {16};
    assert_int_equal(nx_session_exec(s, p, 1, names, data, short_bytes, NULL, &r, &msg), NX_ERR_INPUT);
    assert_string_equal(msg.text, "input x: 16 bytes given, the tensor (fp32) has 128");
    const char *wrong[] = {"y"};
    assert_int_equal(nx_session_exec(s, p, 1, wrong, data, bytes, NULL, &r, &msg), NX_ERR_INPUT);
    assert_string_equal(msg.text, "input y: tensor 'y' has role output, not input");
    nx_session_close(s);
    nx_prog_free(p);
    assert_int_equal(nx_prog_assemble("bogus\n", "bad.nxs", &p, &msg), NX_ERR_INPUT);
    assert_non_null(strstr(msg.text, "bad.nxs:1:"));
    assert_int_equal(nx_prog_load("/no/such/file.nxs", &p, &msg), NX_ERR_INPUT);
}

/* The same computation in program order, no semaphores: the layer adds the
 * waits (without them the store would race the activation), keeps .src. */
static const char ordered[] =
    ".tensor x input fp32 [4,8]\n"
    ".tensor y output fp32 [4,8]\n"
    ".src kern.py:7 f\n"
    ".engine sp\n"
    "    dma_copy dst=sbuf:fp32[0:4]@0{1:8} src=hbm:fp32[4/8]@x{1:8} queue=0 bound=0\n"
    ".src kern.py:8 f\n"
    ".engine act\n"
    "    activation dst=sbuf:fp32[0:4]@64{1:8} in=sbuf:fp32[0:4]@0{1:8} scale=#2 bias=#1 func=identity\n"
    ".src kern.py:9 f\n"
    ".engine sp\n"
    "    dma_copy dst=hbm:fp32[4/8]@y{1:8} src=sbuf:fp32[0:4]@64{1:8} queue=1 bound=0\n";

static void test_ordered_program(void **state) {
    (void)state;
    nx_message msg;
    nx_session *s;
    OK(nx_session_open("trn2", &s, &msg));
    /* trn2's figures (docs/ISA.md, "Machine model") */
    assert_int_equal(nx_session_geometry(s, "sbuf_partition_bytes"), 229376);
    assert_int_equal(nx_session_geometry(s, "psum_bank_bytes"), 2048);
    assert_int_equal(nx_session_geometry(s, "cores"), 2);
    assert_int_equal(nx_session_geometry(s, "no_such_key"), 0);
    nx_prog *p;
    OK(nx_prog_assemble_ordered(s, ordered, "ordered.nxs", &p, &msg));
    float x[32];
    for (int i = 0; i < 32; i++) x[i] = (float)i * 0.5f - 7.0f;
    const char *names[] = {"x"};
    const void *data[] = {x};
    uint64_t bytes[] = {sizeof x};
    nx_config cfg;
    nx_config_init(&cfg);
    for (int backend = 0; backend < 2; backend++) {
        cfg.backend = backend;
        cfg.race_check = backend == 0; /* the model's race check: the waits are complete */
        nx_result *r;
        OK(nx_session_exec(s, p, 1, names, data, bytes, &cfg, &r, &msg));
        const float *y = nx_result_data(r, 0);
        for (int i = 0; i < 32; i++) assert_true(y[i] == x[i] * 2.0f + 1.0f);
        if (backend == 0) {
            char *src = nx_result_by_source(r, 0);
            assert_non_null(src);
            assert_non_null(strstr(src, "kern.py:8"));
            nx_free(src);
        }
        nx_result_free(r);
    }
    nx_prog_free(p);
    /* the same text assembled as it stands has no waits: the race check sees it */
    OK(nx_prog_assemble(ordered, "plain.nxs", &p, &msg));
    nx_result *raced = NULL;
    cfg.backend = 0;
    cfg.race_check = 1;
    assert_int_equal(nx_session_exec(s, p, 1, names, data, bytes, &cfg, &raced, &msg), NX_ERR_RACE);
    nx_result_free(raced);
    nx_prog_free(p);
    /* a semaphore in the text, and an instruction the machine refuses (named by its .src) */
    assert_int_equal(nx_prog_assemble_ordered(s, ".semaphores 1\n", "o.nxs", &p, &msg), NX_ERR_INPUT);
    assert_string_equal(msg.text, "o.nxs: .semaphores 1: an ordered program gets its semaphores from the layer");
    assert_int_equal(nx_prog_assemble_ordered(s,
                                              ".src kern.py:12\n.engine act\n"
                                              "    tensor_copy dst=sbuf:fp32[0:4]@229372{1:8} in=sbuf:fp32[0:4]@0{1:8}\n",
                                              "o.nxs", &p, &msg),
                     NX_ERR_INPUT);
    assert_true(strncmp(msg.text, "kern.py:12: ", 12) == 0);
    nx_session_close(s);
}

static void test_convert(void **state) {
    (void)state;
    nx_message msg;
    float in[4] = {1.0f, -2.5f, 3.00390625f, 1e30f};
    uint16_t bf[4];
    OK(nx_convert("fp32", in, "bf16", bf, 4, &msg));
    /* 1.0 = 0x3f80, -2.5 = 0xc020, 3.00390625 ties to even 3.0 = 0x4040 */
    assert_int_equal(bf[0], 0x3f80);
    assert_int_equal(bf[1], 0xc020);
    assert_int_equal(bf[2], 0x4040);
    float back[4];
    OK(nx_convert("bf16", bf, "fp32", back, 4, &msg));
    assert_true(back[1] == -2.5f);
    assert_int_equal(nx_dtype_bytes("fp8_e4m3"), 1);
    assert_int_equal(nx_dtype_bytes("nope"), 0);
    assert_int_equal(nx_convert("fp32", in, "nope", bf, 4, &msg), NX_ERR_INPUT);
}

/* A config whose size is no nx_config's, or whose backend or grid is out of
 * range, is the caller's error (NX_ERR_USAGE), on both entry points; an
 * older, shorter config that ends at a field still runs. */
static void test_config_checked(void **state) {
    (void)state;
    nx_message msg;
    nx_session *s;
    OK(nx_session_open("trn2", &s, &msg));
    nx_call *c;
    OK(nx_call_new("tiled_pf_transpose", &c, &msg));
    nx_prog *p;
    OK(nx_prog_assemble(program, "prog.nxs", &p, &msg));
    nx_config cfg;
    nx_result *r = NULL;
    const uint32_t bad_sizes[] = {0, 4, 6, 100000, (uint32_t)sizeof cfg + 8};
    for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
        nx_config_init(&cfg);
        cfg.size = bad_sizes[i];
        assert_int_equal(nx_session_run(s, c, &cfg, &r, &msg), NX_ERR_USAGE);
        assert_null(r);
        char want[160];
        snprintf(want, sizeof want,
                 "nx_session_run: nx_config.size %u is not the size of an nx_config (%u in this library; call "
                 "nx_config_init)",
                 bad_sizes[i], (unsigned)sizeof cfg);
        assert_string_equal(msg.text, want);
        assert_int_equal(nx_session_exec(s, p, 0, NULL, NULL, NULL, &cfg, &r, &msg), NX_ERR_USAGE);
        assert_non_null(strstr(msg.text, "nx_session_exec: nx_config.size"));
    }
    nx_config_init(&cfg);
    cfg.backend = 7;
    assert_int_equal(nx_session_run(s, c, &cfg, &r, &msg), NX_ERR_USAGE);
    assert_string_equal(msg.text, "nx_session_run: nx_config.backend 7 is not a backend (NX_BACKEND_MODEL 0, "
                                  "NX_BACKEND_FUNCTIONAL 1)");
    assert_int_equal(nx_session_exec(s, p, 0, NULL, NULL, NULL, &cfg, &r, &msg), NX_ERR_USAGE);
    cfg.backend = -1;
    assert_int_equal(nx_session_run(s, c, &cfg, &r, &msg), NX_ERR_USAGE);
    nx_config_init(&cfg);
    cfg.grid = 3;
    assert_int_equal(nx_session_run(s, c, &cfg, &r, &msg), NX_ERR_USAGE);
    assert_string_equal(msg.text, "nx_session_run: nx_config.grid 3 is not 0 (the kernel's), 1 or 2");
    /* a config of an older header that ends after grid: the rest are defaults */
    nx_config_init(&cfg);
    cfg.backend = NX_BACKEND_FUNCTIONAL;
    cfg.size = (uint32_t)offsetof(nx_config, seed);
    OK(nx_session_run(s, c, &cfg, &r, &msg));
    nx_result_free(r);
    nx_prog_free(p);
    nx_call_free(c);
    nx_session_close(s);
}

/* Two threads run the model at once on one session: both complete with the
 * right values (the runs are serialised inside). */
typedef struct job {
    nx_session *s;
    uint64_t seed;
    int ok;
    double total;
} job;

static void *worker(void *arg) {
    job *j = arg;
    nx_message msg;
    nx_call *c;
    if (nx_call_new("tiled_pf_transpose", &c, &msg) != NX_OK) return NULL;
    nx_config cfg;
    nx_config_init(&cfg);
    cfg.seed = j->seed;
    cfg.check = 1;
    for (int k = 0; k < 3; k++) {
        nx_result *r;
        if (nx_session_run(j->s, c, &cfg, &r, &msg) != NX_OK) break;
        j->ok += nx_result_checked(r) && nx_result_check_failures(r) == 0;
        j->total = nx_result_total_ns(r);
        nx_result_free(r);
    }
    nx_call_free(c);
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    nx_message msg;
    nx_session *s;
    OK(nx_session_open("trn2", &s, &msg));
    job jobs[2] = {{s, 5, 0, 0}, {s, 9, 0, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, worker, &jobs[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    assert_int_equal(jobs[0].ok, 3);
    assert_int_equal(jobs[1].ok, 3);
    assert_true(jobs[0].total == jobs[1].total); /* timing does not depend on the values */
    nx_session_close(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transpose_on_given_operand),
        cmocka_unit_test(test_default_op_and_errors),
        cmocka_unit_test(test_exec_program),
        cmocka_unit_test(test_ordered_program),
        cmocka_unit_test(test_convert),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_config_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
