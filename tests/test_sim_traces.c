/* The conformance programs of traces/ on every backend, against the
 * functional executor: traces/NAME/program.nxs and the negative ones under
 * traces/errors/ run on the model, and the traces with PE instructions also
 * on the model with the RTL PE array (--pe rtl), each with the trace's own
 * inputs (in_TENSOR.npy); the memories must be byte-identical to the
 * functional executor's afterwards, or both runs must fail with the same
 * message, and the model's log of the run has no race (sim/race.h: equal
 * bytes are the contract only for race-free programs). (The traces'
 * expected outputs are checked against `nxsim exec`
 * on each backend by the conformance tests, tests/conformance/; this pins
 * backend == functional on the whole machine state.) The traces together
 * must also cover the opcode table (test_coverage_check): a new opcode needs
 * a trace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "isa/asm.h"
#include "isa/exec.h"
#include "isa/npy.h"
#include "sim/model.h"
#include "sim/race.h"
#include "support.h"

typedef enum backend { BACKEND_MODEL, BACKEND_RTL } backend;
static const char *const backend_names[] = {"model", "rtl"};

/* The traces the RTL backend runs: a PE stream with an instruction. */
static int has_pe_work(const nx_program *p) {
    for (uint32_t c = 0; c < p->cores; c++)
        if (p->stream[c][NX_ENG_PE].count > 0) return 1;
    return 0;
}

static void load_inputs(const char *dir, const nx_program *p, nx_state *a, nx_state *b) {
    for (uint32_t t = 0; t < p->tensor_count; t++) {
        const nx_tensor_decl *d = &p->tensors[t];
        if (d->role != NX_ROLE_INPUT) continue;
        char path[1024];
        if (snprintf(path, sizeof path, "%s/in_%s.npy", dir, d->name) >= (int)sizeof path)
            fail_msg("path too long: %s", dir);
        nx_npy arr;
        nx_error err;
        if (nx_npy_load(path, &arr, &err) != 0) continue; /* the trace leaves it zero */
        uint64_t bytes = nx_tensor_bytes(d);
        if (arr.nbytes == bytes) {
            memcpy(a->hbm + d->offset, arr.data, bytes);
            memcpy(b->hbm + d->offset, arr.data, bytes);
        }
        nx_npy_free(&arr);
    }
}

/* Returns 1 if the trace ran on backend b (0 if it does not assemble or
 * validate: that is the conformance tests' business; 0 on the RTL backend
 * for a trace without PE work). */
static int run_trace(const char *dir, backend b) {
    nx_program p;
    nx_error err;
    if (!test_assemble_trace(dir, &p, &err)) return 0;
    nx_machine m;
    if (nx_machine_load(p.machine[0] ? p.machine : "trn2", &m, &err) != 0 ||
        nx_program_validate(&p, &m.geo, &err) != 0 || (b == BACKEND_RTL && !has_pe_work(&p))) {
        nx_program_free(&p);
        return 0;
    }
    nx_state model, ref;
    if (nx_state_init(&model, &m.geo, p.cores, p.hbm_bytes, p.sem_count, &err) != 0 ||
        nx_state_init(&ref, &m.geo, p.cores, p.hbm_bytes, p.sem_count, &err) != 0)
        fail_msg("%s: %s", dir, err.msg);
    load_inputs(dir, &p, &model, &ref);
    nx_sim_options opt = {1, 0};
    nx_sim_pe_options pe = {b == BACKEND_RTL, NULL};
    nx_sim_result r;
    nx_error merr, ferr;
    int mrc = nx_sim_run_pe(&m, &p, &model, &opt, &pe, &r, &merr);
    int frc = nx_exec_program(&p, &ref, &ferr);
    if (mrc != frc)
        fail_msg("%s: %s %s, functional %s", dir, backend_names[b], mrc ? merr.msg : "ok", frc ? ferr.msg : "ok");
    if (mrc != 0) {
        assert_string_equal(merr.msg, ferr.msg);
    } else {
        if (memcmp(model.hbm, ref.hbm, p.hbm_bytes) != 0) fail_msg("%s: %s HBM differs", dir, backend_names[b]);
        for (uint32_t c = 0; c < p.cores; c++) {
            if (memcmp(model.core[c].sbuf, ref.core[c].sbuf, (size_t)m.geo.partitions * m.geo.sbuf_partition_bytes))
                fail_msg("%s: %s core %u SBUF differs", dir, backend_names[b], c);
            if (memcmp(model.core[c].psum, ref.core[c].psum, (size_t)m.geo.partitions * m.geo.psum_partition_bytes))
                fail_msg("%s: %s core %u PSUM differs", dir, backend_names[b], c);
            if (memcmp(model.core[c].sems, ref.core[c].sems, (p.sem_count ? p.sem_count : 1) * sizeof(uint32_t)))
                fail_msg("%s: %s core %u semaphores differ", dir, backend_names[b], c);
        }
        /* Equal bytes are only the contract for race-free programs: pin it. */
        int race = nx_race_check(&p, r.log, r.log_count, &merr);
        if (race != 0) fail_msg("%s: %s", dir, merr.msg);
        nx_sim_result_free(&r);
    }
    nx_state_free(&model);
    nx_state_free(&ref);
    nx_program_free(&p);
    return 1;
}

static int visit_run(const char *dir, void *ctx) { return run_trace(dir, *(const backend *)ctx); }

static void traces_model_equal_functional(void **state) {
    (void)state;
    char root[1024], errors[1100];
    test_traces_dir(root, sizeof root);
    if (snprintf(errors, sizeof errors, "%s/errors", root) >= (int)sizeof errors) fail_msg("path too long");
    backend b = BACKEND_MODEL;
    int n = test_for_each_trace(root, visit_run, &b), e = test_for_each_trace(errors, visit_run, &b);
    printf("%d traces and %d error traces: model == functional\n", n, e);
    /* traces/ ships with the source tree: finding none means the test ran nothing */
    if (n == 0) fail_msg("no traces found under %s", root);
}

static void pe_traces_rtl_equal_functional(void **state) {
    (void)state;
    char root[1024];
    test_traces_dir(root, sizeof root);
    backend b = BACKEND_RTL;
    int n = test_for_each_trace(root, visit_run, &b);
    printf("%d traces with PE work: model with the RTL PE array == functional\n", n);
    if (n == 0) fail_msg("no trace under %s has PE work", root);
}

static int visit_cover(const char *dir, void *ctx) {
    nx_program p;
    nx_error err;
    if (!test_assemble_trace(dir, &p, &err)) return 0; /* the conformance tests report it */
    test_coverage_add_program(ctx, &p);
    nx_program_free(&p);
    return 1;
}

/* Every opcode has a trace: compute and DMA opcodes on every engine their
 * row allows, control opcodes on one. */
static void traces_cover_the_opcode_table(void **state) {
    (void)state;
    char root[1024];
    test_traces_dir(root, sizeof root);
    test_coverage cov;
    memset(&cov, 0, sizeof cov);
    if (test_for_each_trace(root, visit_cover, &cov) == 0) fail_msg("no traces found under %s", root);
    test_coverage_check(&cov, "traces/");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(traces_model_equal_functional),
        cmocka_unit_test(pe_traces_rtl_equal_functional),
        cmocka_unit_test(traces_cover_the_opcode_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
