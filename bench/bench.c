/* nxsim-bench: runs the benchmark cases of docs/parts/bench.md, each in a
 * child process, and prints a table (and, with --json FILE, JSON).
 *
 *   nxsim-bench [--quick] [--case NAME]... [--machine trn1|trn2|FILE]
 *               [--json FILE] [--race-check] [--trace-dir DIR] [--summary] [--no-fork]
 *
 * Exit status: 0 when every case ran and its values are right; 1 when one
 * did not; 2 on a usage error. Times never decide it. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cblas.h>
#include <cjson/cJSON.h>

#include "bench.h"

static const bench_case full_cases[] = {
    {"gemm-1024x4096x1024-fp32", CASE_GEMM, 1024, 4096, 1024, NX_DT_FP32, 0},
    {"gemm-1024x4096x1024-bf16", CASE_GEMM, 1024, 4096, 1024, NX_DT_BF16, 0},
    {"gemm-4096x4096x4096-fp32", CASE_GEMM, 4096, 4096, 4096, NX_DT_FP32, 0},
    {"gemm-4096x4096x4096-bf16", CASE_GEMM, 4096, 4096, 4096, NX_DT_BF16, 0},
    {"dve-chain-1M", CASE_CHAIN, 0, 0, 0, NX_DT_FP32, 1000000},
    {"dma-copy-1GiB", CASE_COPY, 0, 0, 0, NX_DT_FP32, 1ull << 30},
};

static const bench_case quick_cases[] = {
    {"gemm-256x512x1024-fp32", CASE_GEMM, 256, 512, 1024, NX_DT_FP32, 0},
    {"gemm-256x512x1024-bf16", CASE_GEMM, 256, 512, 1024, NX_DT_BF16, 0},
    {"dve-chain-20k", CASE_CHAIN, 0, 0, 0, NX_DT_FP32, 20000},
    {"dma-copy-64MiB", CASE_COPY, 0, 0, 0, NX_DT_FP32, 64ull << 20},
};

#define MAX_SELECT 16

static int usage(const char *why) {
    if (why) fprintf(stderr, "nxsim-bench: %s\n", why);
    fprintf(stderr,
            "usage: nxsim-bench [--quick] [--case NAME]... [--machine trn1|trn2|FILE] [--json FILE]\n"
            "                   [--race-check] [--trace-dir DIR] [--summary] [--no-fork]\n"
            "cases (a NAME may also be a prefix: gemm, dve-chain, dma-copy; 'tutorial', 'micro' and\n"
            "nki_matmul... run nxsim-bench-tutorial, the NKI matmul tutorial and the micro-figures):\n");
    for (size_t i = 0; i < sizeof full_cases / sizeof *full_cases; i++) fprintf(stderr, "  %s\n", full_cases[i].name);
    fprintf(stderr, "  with --quick:");
    for (size_t i = 0; i < sizeof quick_cases / sizeof *quick_cases; i++) fprintf(stderr, " %s", quick_cases[i].name);
    fprintf(stderr, "\n");
    return 2;
}

static int selected(const bench_case *c, const char *const *names, int n) {
    if (n == 0) return 1;
    for (int i = 0; i < n; i++)
        if (strncmp(c->name, names[i], strlen(names[i])) == 0) return 1;
    return 0;
}

/* Runs the case in a child (its own peak RSS, and a crash stays a result). */
static void run_isolated(const nx_machine *m, const bench_case *c, const bench_options *opt, int fork_it,
                         case_result *out) {
    if (!fork_it) return bench_run_case(m, c, opt, out);
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", c->name);
    out->kind = c->kind;
    out->race_status = 2;
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(out->error, sizeof out->error, "pipe: %s", strerror(errno));
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(out->error, sizeof out->error, "fork: %s", strerror(errno));
        close(fds[0]), close(fds[1]);
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        case_result r;
        bench_run_case(m, c, opt, &r);
        const char *p = (const char *)&r;
        size_t left = sizeof r;
        while (left > 0) {
            ssize_t n = write(fds[1], p, left);
            if (n <= 0) _exit(3);
            p += n, left -= (size_t)n;
        }
        fflush(NULL);
        _exit(0);
    }
    close(fds[1]);
    case_result r;
    char *p = (char *)&r;
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t n = read(fds[0], p + got, sizeof r - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (got == sizeof r) {
        *out = r;
    } else if (WIFSIGNALED(status)) {
        snprintf(out->error, sizeof out->error, "the case's process died of signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    } else {
        snprintf(out->error, sizeof out->error, "the case's process exited with status %d without a result",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
}

static const char *env_or(const char *name, const char *fallback) {
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

static double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

static void print_header(const nx_machine *m) {
    printf("nxsim-bench on machine %s; OpenBLAS %s, core %s, %d thread%s "
           "(OPENBLAS_NUM_THREADS=%s, OPENBLAS_CORETYPE=%s, OMP_NUM_THREADS=%s)\n",
           m->geo.name, openblas_get_config(), openblas_get_corename(), openblas_get_num_threads(),
           openblas_get_num_threads() == 1 ? "" : "s", env_or("OPENBLAS_NUM_THREADS", "unset"),
           env_or("OPENBLAS_CORETYPE", "unset"), env_or("OMP_NUM_THREADS", "unset"));
    printf("targets: GEMM sim/OpenBLAS wall time <= %.1f; chain >= %.0f M simulated instructions per second; "
           "peak RSS <= %.0f x (program HBM + cores' SBUF + PSUM)\n\n",
           TARGET_GEMM_RATIO, TARGET_CHAIN_IPS / 1e6, TARGET_RSS_FACTOR);
}

static const char *verdict(int ok) { return ok ? "ok" : "MISSED"; }

static void print_result(const case_result *r) {
    printf("%s\n", r->name);
    if (!r->ran) {
        printf("  FAILED: %s\n\n", r->error[0] ? r->error : "no result");
        return;
    }
    printf("  model: %.3f s wall (%.3f s CPU), %" PRIu64 " instructions, %.0f simulated instructions/s, "
           "%.0f ns simulated",
           r->wall_s, r->cpu_s, r->instructions, r->insn_per_s, r->sim_ns);
    if (r->clock[0]) printf(" = %.0f %s cycles", r->sim_cycles, r->clock);
    printf("\n  peak RSS %.1f MiB, bound %.1f MiB (%s); program instructions %.1f MiB\n", mib(r->rss_bytes),
           mib(r->rss_bound_bytes), verdict(r->rss_bytes <= r->rss_bound_bytes), mib(r->program_bytes));
    switch (r->kind) {
    case CASE_GEMM:
        printf("  OpenBLAS sgemm %.3f s wall (%.3f s CPU); sim/OpenBLAS %.2f (target <= %.1f: %s); "
               "simulated %.2f of %.2f peak TFLOPS\n",
               r->blas_s, r->blas_cpu_s, r->ratio, TARGET_GEMM_RATIO, verdict(r->ratio <= TARGET_GEMM_RATIO),
               r->tflops_sim, r->tflops_peak);
        printf("  values: max |sim - sgemm| / (|A||B|) = %.3g (bound %.3g): %s\n", r->max_rel_err, r->err_bound,
               r->values_ok ? "right" : "WRONG");
        break;
    case CASE_CHAIN:
        printf("  %.2f M simulated instructions/s (target >= %.0f M: %s); %.1f DVE cycles per instruction\n",
               r->insn_per_s / 1e6, TARGET_CHAIN_IPS / 1e6, verdict(r->insn_per_s >= TARGET_CHAIN_IPS),
               r->instructions ? r->sim_cycles / (double)r->instructions : 0.0);
        printf("  values: x = %.0f: %s\n", r->final_value, r->values_ok ? "right" : "WRONG");
        break;
    case CASE_COPY:
        printf("  %.0f bytes through DMA: simulated %.0f ns vs bandwidth bound %.0f ns (%.2fx the bound)\n",
               r->moved_bytes, r->sim_ns, r->bound_ns, r->bound_ns > 0 ? r->sim_ns / r->bound_ns : 0.0);
        printf("  values: dst %s src\n", r->values_ok ? "equals" : "DIFFERS FROM");
        break;
    }
    if (r->race_status != 2)
        printf("  race check: %.3f s, %s\n", r->race_s,
               r->race_status == 0 ? "no race" : r->race_msg[0] ? r->race_msg : "failed");
    if (r->trace_s > 0) printf("  trace: %.1f MiB written in %.3f s\n", mib(r->trace_bytes), r->trace_s);
    if (!r->values_ok && r->error[0]) printf("  %s\n", r->error);
    printf("\n");
}

static cJSON *result_json(const case_result *r) {
    static const char *kinds[] = {"gemm", "chain", "copy"};
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", r->name);
    cJSON_AddStringToObject(o, "kind", kinds[r->kind]);
    cJSON_AddBoolToObject(o, "ran", r->ran);
    cJSON_AddBoolToObject(o, "values_ok", r->values_ok);
    if (r->error[0]) cJSON_AddStringToObject(o, "error", r->error);
    cJSON_AddNumberToObject(o, "wall_s", r->wall_s);
    cJSON_AddNumberToObject(o, "cpu_s", r->cpu_s);
    cJSON_AddNumberToObject(o, "instructions", (double)r->instructions);
    cJSON_AddNumberToObject(o, "instructions_per_s", r->insn_per_s);
    cJSON_AddNumberToObject(o, "sim_ns", r->sim_ns);
    if (r->clock[0]) {
        cJSON_AddNumberToObject(o, "sim_cycles", r->sim_cycles);
        cJSON_AddStringToObject(o, "cycles_clock", r->clock);
    }
    cJSON_AddNumberToObject(o, "peak_rss_bytes", r->rss_bytes);
    cJSON_AddNumberToObject(o, "rss_bound_bytes", r->rss_bound_bytes);
    cJSON_AddNumberToObject(o, "program_bytes", r->program_bytes);
    switch (r->kind) {
    case CASE_GEMM:
        cJSON_AddNumberToObject(o, "openblas_s", r->blas_s);
        cJSON_AddNumberToObject(o, "openblas_cpu_s", r->blas_cpu_s);
        cJSON_AddNumberToObject(o, "ratio_sim_openblas", r->ratio);
        cJSON_AddNumberToObject(o, "target_ratio", TARGET_GEMM_RATIO);
        cJSON_AddNumberToObject(o, "max_rel_err", r->max_rel_err);
        cJSON_AddNumberToObject(o, "err_bound", r->err_bound);
        cJSON_AddNumberToObject(o, "tflops_simulated", r->tflops_sim);
        cJSON_AddNumberToObject(o, "tflops_peak", r->tflops_peak);
        break;
    case CASE_CHAIN:
        cJSON_AddNumberToObject(o, "target_instructions_per_s", TARGET_CHAIN_IPS);
        cJSON_AddNumberToObject(o, "final_value", r->final_value);
        break;
    case CASE_COPY:
        cJSON_AddNumberToObject(o, "moved_bytes", r->moved_bytes);
        cJSON_AddNumberToObject(o, "bound_ns", r->bound_ns);
        cJSON_AddNumberToObject(o, "sim_over_bound", r->bound_ns > 0 ? r->sim_ns / r->bound_ns : 0.0);
        break;
    }
    if (r->race_status != 2) {
        cJSON_AddNumberToObject(o, "race_check_s", r->race_s);
        cJSON_AddBoolToObject(o, "race_free", r->race_status == 0);
        if (r->race_status != 0) cJSON_AddStringToObject(o, "race", r->race_msg);
    }
    if (r->trace_s > 0) {
        cJSON_AddNumberToObject(o, "trace_s", r->trace_s);
        cJSON_AddNumberToObject(o, "trace_bytes", r->trace_bytes);
    }
    return o;
}

static int write_json(const char *path, const nx_machine *m, const case_result *res, int n) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "machine", m->geo.name);
    cJSON *blas = cJSON_AddObjectToObject(root, "openblas");
    cJSON_AddStringToObject(blas, "config", openblas_get_config());
    cJSON_AddStringToObject(blas, "corename", openblas_get_corename());
    cJSON_AddNumberToObject(blas, "threads", openblas_get_num_threads());
    cJSON_AddStringToObject(blas, "OPENBLAS_NUM_THREADS", env_or("OPENBLAS_NUM_THREADS", ""));
    cJSON_AddStringToObject(blas, "OPENBLAS_CORETYPE", env_or("OPENBLAS_CORETYPE", ""));
    cJSON *targets = cJSON_AddObjectToObject(root, "targets");
    cJSON_AddNumberToObject(targets, "gemm_ratio_max", TARGET_GEMM_RATIO);
    cJSON_AddNumberToObject(targets, "chain_instructions_per_s_min", TARGET_CHAIN_IPS);
    cJSON_AddNumberToObject(targets, "rss_factor_max", TARGET_RSS_FACTOR);
    cJSON *cases = cJSON_AddArrayToObject(root, "cases");
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(cases, result_json(&res[i]));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    FILE *f = text ? fopen(path, "w") : NULL;
    int bad = !f || fputs(text, f) < 0 || fputc('\n', f) == EOF;
    if (f) bad |= fclose(f) != 0;
    cJSON_free(text);
    if (bad) fprintf(stderr, "nxsim-bench: cannot write %s: %s\n", path, strerror(errno));
    return bad ? -1 : 0;
}

/* The NKI matmul tutorial kernels and the documented micro-figures live in
 * nxsim-bench-tutorial (bench/tutorial_bench.c, docs/parts/fidelity.md):
 * when every --case names them ("tutorial", "micro" or a prefix of a kernel,
 * "nki_matmul..."), nxsim-bench runs that program, beside itself in the build
 * root, with the same --case, --machine, --quick and --summary options.
 * Returns only when the hand-off does not apply (or exec failed: 2). */
static int tutorial_case(const char *name) {
    return strcmp(name, "tutorial") == 0 || strcmp(name, "micro") == 0 || strncmp(name, "nki_matmul", 10) == 0;
}

static int run_tutorial_bench(int argc, char **argv, const char *const *names, int n_names) {
    if (n_names == 0) return -1;
    for (int i = 0; i < n_names; i++)
        if (!tutorial_case(names[i])) return -1;
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 32);
    if (len <= 0) {
        fprintf(stderr, "nxsim-bench: cannot find its own directory for nxsim-bench-tutorial: %s\n", strerror(errno));
        return 2;
    }
    exe[len] = 0;
    char *slash = strrchr(exe, '/');
    snprintf(slash ? slash + 1 : exe, sizeof exe - (size_t)(slash ? slash + 1 - exe : 0), "nxsim-bench-tutorial");
    char **args = calloc((size_t)argc + 1, sizeof *args);
    if (!args) {
        fprintf(stderr, "nxsim-bench: out of memory\n");
        return 2;
    }
    int n = 0;
    args[n++] = exe;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0 || strcmp(argv[i], "--summary") == 0) args[n++] = argv[i];
        else if ((strcmp(argv[i], "--case") == 0 || strcmp(argv[i], "--machine") == 0) && i + 1 < argc) {
            args[n++] = argv[i];
            args[n++] = argv[++i];
        }
    }
    fflush(NULL);
    execv(exe, args);
    fprintf(stderr, "nxsim-bench: cannot run %s: %s\n", exe, strerror(errno));
    free(args);
    return 2;
}

int main(int argc, char **argv) {
    const char *names[MAX_SELECT];
    int n_names = 0, quick = 0, fork_it = 1;
    const char *machine = NULL, *json = NULL;
    bench_options opt = {0, NULL, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (strcmp(a, "--quick") == 0) quick = 1;
        else if (strcmp(a, "--no-fork") == 0) fork_it = 0;
        else if (strcmp(a, "--race-check") == 0) opt.race_check = 1;
        else if (strcmp(a, "--summary") == 0) opt.summary = 1;
        else if (strcmp(a, "--case") == 0 && has_value && n_names < MAX_SELECT) names[n_names++] = argv[++i];
        else if (strcmp(a, "--machine") == 0 && has_value) machine = argv[++i];
        else if (strcmp(a, "--json") == 0 && has_value) json = argv[++i];
        else if (strcmp(a, "--trace-dir") == 0 && has_value) opt.trace_dir = argv[++i];
        else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(NULL);
            return 0;
        } else {
            char why[160];
            snprintf(why, sizeof why, "unknown or incomplete argument '%s'", a);
            return usage(why);
        }
    }
    int handed = run_tutorial_bench(argc, argv, names, n_names);
    if (handed >= 0) return handed;
    nx_machine m;
    nx_error err;
    if (nx_machine_load(machine ? machine : nx_machine_default(), &m, &err) != 0) {
        fprintf(stderr, "nxsim-bench: %s\n", err.msg);
        return 2;
    }
    const bench_case *list = quick ? quick_cases : full_cases;
    size_t count = quick ? sizeof quick_cases / sizeof *quick_cases : sizeof full_cases / sizeof *full_cases;
    case_result res[16];
    int n = 0;
    for (size_t i = 0; i < count; i++)
        if (selected(&list[i], names, n_names) && n < 16) n++;
    if (n == 0) return usage("no case matches");
    print_header(&m);
    n = 0;
    int all_ok = 1;
    for (size_t i = 0; i < count; i++) {
        if (!selected(&list[i], names, n_names)) continue;
        run_isolated(&m, &list[i], &opt, fork_it, &res[n]);
        print_result(&res[n]);
        fflush(stdout);
        all_ok &= res[n].ran && res[n].values_ok && (res[n].race_status == 2 || res[n].race_status == 0);
        n++;
    }
    if (json && write_json(json, &m, res, n) != 0) all_ok = 0;
    return all_ok ? 0 : 1;
}
