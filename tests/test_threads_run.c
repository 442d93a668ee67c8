/* Worker threads on the run path (registry/run/run.h): a program of large
 * matmuls and copies run through nx_run_program on the SystemC model and the
 * functional executor gives the same results (equal to a reference computed
 * here) and the same simulated time for every thread count, NXSIM_THREADS
 * included; a bad NXSIM_THREADS refuses the run. (The pool and the split
 * instructions themselves: tests/test_threads.c, which needs only isa/, so
 * that it also runs under ThreadSanitizer; docs/parts/threads.md.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "isa/asm.h"
#include "isa/bytes.h"
#include "registry/run/run.h"
#include "support.h"

enum { MAX_THREADS = 4 };

/* ---- a program on the run path ---- */

/* K = M = 128, N = 512: c = a^T-stationary x b (fp32) + a x b16 (bf16
 * moving, accumulated); y = bf16(x) through SBUF, 127 rows of 3000. */
static const char program_text[] =
    ".machine trn2\n"
    ".semaphores 3\n"
    ".tensor a input fp32 [128,128]\n"
    ".tensor b input fp32 [128,512]\n"
    ".tensor b16 input bf16 [128,512]\n"
    ".tensor x input fp32 [127,3000]\n"
    ".tensor c output fp32 [128,512]\n"
    ".tensor y output bf16 [127,3000]\n"
    ".engine sp\n"
    "    dma_copy dst=sbuf:fp32[0:128]@0{1:128} src=hbm:fp32[128/128]@a{1:128} queue=0 bound=0 inc=sem0\n"
    "    dma_copy dst=sbuf:fp32[0:128]@512{1:512} src=hbm:fp32[128/512]@b{1:512} queue=1 bound=0 inc=sem0\n"
    "    dma_copy dst=sbuf:bf16[0:128]@2560{1:512} src=hbm:bf16[128/512]@b16{1:512} queue=2 bound=0 inc=sem0\n"
    "    dma_copy dst=sbuf:bf16[0:127]@4096{1:3000} src=hbm:fp32[127/3000]@x{1:3000} queue=3 bound=0 inc=sem0\n"
    "    dma_copy dst=hbm:bf16[127/3000]@y{1:3000} src=sbuf:bf16[0:127]@4096{1:3000} queue=4 bound=0 wait=sem0>=4\n"
    "    dma_copy dst=hbm:fp32[128/512]@c{1:512} src=sbuf:fp32[0:128]@12288{1:512} queue=0 bound=0 wait=sem2>=1\n"
    ".engine pe\n"
    "    load_stationary src=sbuf:fp32[0:128]@0{1:128} wait=sem0>=4\n"
    "    multiply_moving dst=psum:fp32[0:128]@0{1:512} moving=sbuf:fp32[0:128]@512{1:512}\n"
    "    multiply_moving dst=psum:fp32[0:128]@0{1:512} moving=sbuf:bf16[0:128]@2560{1:512} acc=1 inc=sem1\n"
    ".engine dve\n"
    "    tensor_copy dst=sbuf:fp32[0:128]@12288{1:512} in=psum:fp32[0:128]@0{1:512} wait=sem1>=1 inc=sem2\n";

typedef struct program_run {
    uint8_t *hbm;
    double total_ns;
} program_run;

/* threads 0: NXSIM_THREADS decides (set to env_threads). */
static program_run run_program(const nx_program *prog, const nx_machine *m, nx_run_backend backend, unsigned threads,
                               const char *env_threads) {
    nx_state st;
    nx_error err;
    if (nx_state_init(&st, &m->geo, prog->cores, prog->hbm_bytes, prog->sem_count, &err) != 0) fail_msg("%s", err.msg);
    test_rng r = {5};
    for (uint32_t i = 0; i < prog->tensor_count; i++) {
        const nx_tensor_decl *t = &prog->tensors[i];
        if (t->role != NX_ROLE_INPUT) continue;
        size_t es = nx_dtype_size((nx_dtype)t->dtype), n = nx_tensor_bytes(t) / es;
        for (size_t e = 0; e < n; e++) nx_dtype_store((nx_dtype)t->dtype, st.hbm + t->offset + e * es, test_rng_uniform(&r, -1, 1));
    }
    if (env_threads) assert_int_equal(setenv("NXSIM_THREADS", env_threads, 1), 0);
    nx_run_options opt = {.backend = backend, .threads = threads};
    nx_run_trace trace;
    nx_run_failure why;
    if (nx_run_program(m, prog, &st, &opt, &trace, &why, &err) != 0) fail_msg("%u threads: %s", threads, err.msg);
    if (env_threads) assert_int_equal(unsetenv("NXSIM_THREADS"), 0);
    assert_null(st.workers); /* the run's pool is gone with the run */
    program_run out = {malloc(st.hbm_bytes), trace.on_model ? trace.sim.total_ns : 0};
    assert_non_null(out.hbm);
    memcpy(out.hbm, st.hbm, st.hbm_bytes);
    nx_run_trace_free(&trace);
    nx_state_free(&st);
    return out;
}

static const nx_tensor_decl *tensor(const nx_program *p, const char *name) {
    int i = nx_program_find_tensor(p, name);
    assert_true(i >= 0);
    return &p->tensors[i];
}

/* c and y computed here from the inputs in `hbm` (multiply_moving's order
 * and roundings: products then sums in k order, each rounded to fp32). */
static void expect_reference(const nx_program *prog, const uint8_t *hbm) {
    const nx_tensor_decl *a = tensor(prog, "a"), *b = tensor(prog, "b"), *b16 = tensor(prog, "b16"), *x = tensor(prog, "x"),
                         *c = tensor(prog, "c"), *y = tensor(prog, "y");
    for (uint32_t m = 0; m < 128; m++)
        for (uint32_t n = 0; n < 512; n++) {
            float p = 0, q = 0;
            for (uint32_t k = 0; k < 128; k++) {
                float s = (float)nx_dtype_load(NX_DT_FP32, hbm + a->offset + 4 * (k * 128 + m));
                float u = (float)nx_dtype_load(NX_DT_FP32, hbm + b->offset + 4 * (k * 512 + n));
                float v = (float)nx_dtype_load(NX_DT_BF16, hbm + b16->offset + 2 * (k * 512 + n));
                float su = s * u, sv = s * v;
                p = k ? p + su : su;
                q = k ? q + sv : sv;
            }
            float want = p + q, got = (float)nx_dtype_load(NX_DT_FP32, hbm + c->offset + 4 * (m * 512 + n));
            if (nx_f32_bits(got) != nx_f32_bits(want)) fail_msg("c[%u][%u] = %.9g, reference %.9g", m, n, (double)got, (double)want);
        }
    for (uint32_t i = 0; i < 127 * 3000; i++) {
        uint8_t want[2];
        nx_dtype_store(NX_DT_BF16, want, nx_dtype_load(NX_DT_FP32, hbm + x->offset + 4 * i));
        if (memcmp(want, hbm + y->offset + 2 * i, 2) != 0) fail_msg("y element %u differs from bf16(x)", i);
    }
}

static void program_every_thread_count(void **state) {
    (void)state;
    nx_program prog;
    nx_error err;
    if (nx_assemble("threads.nxs", program_text, sizeof program_text - 1, &prog, &err) != 0) fail_msg("%s", err.msg);
    nx_machine m = test_machine("trn2");
    if (nx_program_validate(&prog, &m.geo, &err) != 0) fail_msg("%s", err.msg);
    program_run one = run_program(&prog, &m, NX_RUN_MODEL, 1, NULL);
    assert_true(one.total_ns > 0);
    expect_reference(&prog, one.hbm);
    for (int backend = 0; backend < 2; backend++)
        for (unsigned t = 0; t <= MAX_THREADS; t++) {
            /* t = 0: the environment's NXSIM_THREADS=3 */
            program_run run = run_program(&prog, &m, backend ? NX_RUN_FUNCTIONAL : NX_RUN_MODEL, t, t ? NULL : "3");
            if (memcmp(run.hbm, one.hbm, prog.hbm_bytes) != 0) fail_msg("backend %d, %u threads: other HBM bytes", backend, t);
            if (!backend && run.total_ns != one.total_ns)
                fail_msg("%u threads: %.3f ns simulated, one thread %.3f ns", t, run.total_ns, one.total_ns);
            free(run.hbm);
        }
    /* a bad NXSIM_THREADS refuses the run, naming the variable */
    assert_int_equal(setenv("NXSIM_THREADS", "0", 1), 0);
    nx_state st;
    if (nx_state_init(&st, &m.geo, prog.cores, prog.hbm_bytes, prog.sem_count, &err) != 0) fail_msg("%s", err.msg);
    nx_run_options opt = {.backend = NX_RUN_FUNCTIONAL};
    nx_run_trace trace;
    nx_run_failure why;
    assert_int_equal(nx_run_program(&m, &prog, &st, &opt, &trace, &why, &err), -1);
    assert_int_equal(why, NX_RUN_BAD_INPUT);
    assert_string_equal(err.msg, "NXSIM_THREADS '0': must be a thread count in [1, 64]");
    assert_int_equal(unsetenv("NXSIM_THREADS"), 0);
    nx_run_trace_free(&trace);
    nx_state_free(&st);
    free(one.hbm);
    nx_program_free(&prog);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(program_every_thread_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
