/* Every conformance program in traces/ (traces/NAME/program.nxs and the
 * negative ones under traces/errors/) runs on the model and on the
 * functional executor with the trace's own inputs (in_TENSOR.npy): the
 * memories must be byte-identical afterwards, or both runs must fail with
 * the same message, and the model's log of a run has no race (the race
 * detector, sim/race.h). (The traces' expected outputs are checked against
 * `nxsim exec` by the conformance tests; this pins model == functional.) */
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

/* traces/ beside tests/, found from this file's path. */
static void traces_dir(char *buf, size_t len) {
    const char *here = __FILE__;
    const char *slash = strrchr(here, '/');
    size_t n = slash ? (size_t)(slash - here) : 0;
    snprintf(buf, len, "%.*s/../traces", (int)n, n ? here : ".");
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

/* Returns 1 if the trace ran (0 if it does not assemble or validate: that
 * is the conformance tests' business). */
static int run_trace(const char *dir) {
    char path[1024];
    if (snprintf(path, sizeof path, "%s/program.nxs", dir) >= (int)sizeof path) fail_msg("path too long: %s", dir);
    struct stat sb;
    if (stat(path, &sb) != 0) return 0;
    nx_program p;
    nx_error err;
    if (nx_assemble_file(path, &p, &err) != 0) return 0;
    nx_machine m;
    if (nx_machine_load(p.machine[0] ? p.machine : "trn2", &m, &err) != 0 ||
        nx_program_validate(&p, &m.geo, &err) != 0) {
        nx_program_free(&p);
        return 0;
    }
    nx_state model, ref;
    if (nx_state_init(&model, &m.geo, p.cores, p.hbm_bytes, p.sem_count, &err) != 0 ||
        nx_state_init(&ref, &m.geo, p.cores, p.hbm_bytes, p.sem_count, &err) != 0)
        fail_msg("%s: %s", dir, err.msg);
    load_inputs(dir, &p, &model, &ref);
    nx_sim_options opt = {1, 0};
    nx_sim_result r;
    nx_error merr, ferr;
    int mrc = nx_sim_run(&m, &p, &model, &opt, &r, &merr);
    int frc = nx_exec_program(&p, &ref, &ferr);
    if (mrc != frc)
        fail_msg("%s: model %s, functional %s", dir, mrc ? merr.msg : "ok", frc ? ferr.msg : "ok");
    if (mrc != 0) {
        assert_string_equal(merr.msg, ferr.msg);
    } else {
        if (memcmp(model.hbm, ref.hbm, p.hbm_bytes) != 0) fail_msg("%s: HBM differs", dir);
        for (uint32_t c = 0; c < p.cores; c++) {
            if (memcmp(model.core[c].sbuf, ref.core[c].sbuf, (size_t)m.geo.partitions * m.geo.sbuf_partition_bytes))
                fail_msg("%s: core %u SBUF differs", dir, c);
            if (memcmp(model.core[c].psum, ref.core[c].psum, (size_t)m.geo.partitions * m.geo.psum_partition_bytes))
                fail_msg("%s: core %u PSUM differs", dir, c);
            if (memcmp(model.core[c].sems, ref.core[c].sems, (p.sem_count ? p.sem_count : 1) * sizeof(uint32_t)))
                fail_msg("%s: core %u semaphores differ", dir, c);
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

static int run_all(const char *root) {
    DIR *d = opendir(root);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    char names[256][256];
    int count = 0;
    while ((e = readdir(d)) != NULL && count < 256) {
        if (e->d_name[0] == '.') continue;
        snprintf(names[count++], sizeof names[0], "%s", e->d_name);
    }
    closedir(d);
    for (int i = 0; i < count; i++) {
        char dir[1024];
        if (snprintf(dir, sizeof dir, "%s/%s", root, names[i]) >= (int)sizeof dir)
            fail_msg("path too long: %s", root);
        n += run_trace(dir);
    }
    return n;
}

static void traces_equal_functional(void **state) {
    (void)state;
    char root[1024], errors[1100];
    traces_dir(root, sizeof root);
    if (snprintf(errors, sizeof errors, "%s/errors", root) >= (int)sizeof errors) fail_msg("path too long");
    int n = run_all(root), e = run_all(errors);
    printf("%d traces and %d error traces: model == functional\n", n, e);
    /* traces/ ships with the source tree: finding none means the test ran nothing */
    if (n == 0) fail_msg("no traces found under %s", root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(traces_equal_functional),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
