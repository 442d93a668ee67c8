/* nxsim-bench: runs the benchmark cases of docs/parts/bench.md, each in a
 * child process, and prints a table (and, with --json FILE, JSON).
 *
 *   nxsim-bench [--quick] [--case NAME]... [--machine trn1|trn2|FILE]
 *               [--json FILE] [--race-check] [--trace-dir DIR] [--summary] [--no-fork]
 *               [--threads N]
 *
 * Exit status: 0 when every case ran and its values are right; 1 when one
 * did not; 2 on a usage error (including an unusable --trace-dir,
 * NXSIM_MM_KERNEL or NXSIM_THREADS, found before any case runs). Times never decide it. */
#include <errno.h>
#include <getopt.h>
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
#include "leaf_benches.h"
#include "isa/workers.h"

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
    if (why) {
        fprintf(stderr, "nxsim-bench: %s (nxsim-bench --help lists the options)\n", why);
        return 2;
    }
    FILE *out = stdout;
    fprintf(out,
            "usage: nxsim-bench [--quick] [--case NAME]... [--machine trn1|trn2|FILE] [--json FILE]\n"
            "                   [--race-check] [--trace-dir DIR] [--summary] [--no-fork] [--threads N]\n"
            "--threads N: the model's large matmuls and DMA copies on N host threads (default\n"
            "NXSIM_THREADS, else the host's CPUs up to 8), against OpenBLAS on N threads\n"
            "       nxsim-bench LEAF [the leaf bench's options]   (LEAF below; --case LEAF[/SUB] also runs it)\n"
            "leaf benches ('tutorial', 'micro' and nki_matmul... as --case run the tutorial's):\n");
    nx_bench_leaf_list(out);
    fprintf(out, "cases (a NAME may also be a prefix: gemm, dve-chain, dma-copy):\n");
    for (size_t i = 0; i < sizeof full_cases / sizeof *full_cases; i++) fprintf(out, "  %s\n", full_cases[i].name);
    fprintf(out, "  with --quick:");
    for (size_t i = 0; i < sizeof quick_cases / sizeof *quick_cases; i++) fprintf(out, " %s", quick_cases[i].name);
    fprintf(out, "\n"
                 "environment: NXSIM_MM_KERNEL=avx512|avx2|vector|scalar forces the PE matmul kernel;\n"
                 "NXSIM_THREADS; OPENBLAS_CORETYPE (set here when unset and OpenBLAS fell back to\n"
                 "a core without the host's AVX2/AVX-512)\n");
    return 0;
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

static void print_header(const nx_machine *m, const bench_host *h, unsigned threads) {
    printf("nxsim-bench on machine %s\n", m->geo.name);
    printf("host: %s, %ld CPU%s, %s\n", h->cpu, h->cpus, h->cpus == 1 ? "" : "s",
           h->simd[0] ? h->simd : "no AVX2/AVX-512");
    printf("build: %s, C flags '%s', C++ flags '%s'%s%s%s; %s\n", h->build_type, h->c_flags, h->cxx_flags,
           h->sanitize_flags[0] ? ", sanitizers '" : "", h->sanitize_flags, h->sanitize_flags[0] ? "'" : "",
           h->compiler);
    if (strstr(h->c_flags, "-O3") == NULL || h->sanitize_flags[0])
        printf("  (not the optimised build: the default build is Release, -O3, without sanitizers)\n");
    printf("PE matmul kernel: %s (NXSIM_MM_KERNEL=%s)\n", h->pe_kernel, h->pe_kernel_env);
    printf("threads: %u for the model's large instructions (--threads, NXSIM_THREADS=%s)\n", threads,
           env_or("NXSIM_THREADS", "unset"));
    printf("OpenBLAS %s, core %s, %d thread%s (as --threads; OPENBLAS_NUM_THREADS=%s, OPENBLAS_CORETYPE=%s%s%s%s, "
           "OMP_NUM_THREADS=%s)\n",
           openblas_get_config(), openblas_get_corename(), openblas_get_num_threads(),
           openblas_get_num_threads() == 1 ? "" : "s", env_or("OPENBLAS_NUM_THREADS", "unset"),
           env_or("OPENBLAS_CORETYPE", "unset"), h->blas_fallback[0] ? " set by nxsim-bench: OpenBLAS chose " : "",
           h->blas_fallback, h->blas_fallback[0] ? " for this CPU" : "", env_or("OMP_NUM_THREADS", "unset"));
    printf("targets: GEMM sim/OpenBLAS wall time <= %.1f (bf16 inputs), <= %.1f (fp32 inputs); chain >= %.0f M "
           "simulated instructions per second; peak RSS <= %.0f x (program HBM + cores' SBUF + PSUM)\n\n",
           TARGET_GEMM_RATIO_BF16, TARGET_GEMM_RATIO_FP32, TARGET_CHAIN_IPS / 1e6, TARGET_RSS_FACTOR);
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
               r->blas_s, r->blas_cpu_s, r->ratio, r->target_ratio, verdict(r->ratio <= r->target_ratio),
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
        cJSON_AddNumberToObject(o, "target_ratio", r->target_ratio);
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

static int write_json(const char *path, const nx_machine *m, const bench_host *h, unsigned threads,
                      const case_result *res, int n) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "machine", m->geo.name);
    cJSON *host = cJSON_AddObjectToObject(root, "host");
    cJSON_AddStringToObject(host, "cpu", h->cpu);
    cJSON_AddNumberToObject(host, "cpus", (double)h->cpus);
    cJSON_AddStringToObject(host, "simd", h->simd);
    cJSON *build = cJSON_AddObjectToObject(root, "build");
    cJSON_AddStringToObject(build, "type", h->build_type);
    cJSON_AddStringToObject(build, "c_flags", h->c_flags);
    cJSON_AddStringToObject(build, "cxx_flags", h->cxx_flags);
    cJSON_AddStringToObject(build, "sanitize_flags", h->sanitize_flags);
    cJSON_AddStringToObject(build, "compiler", h->compiler);
    cJSON_AddStringToObject(build, "pe_kernel", h->pe_kernel);
    cJSON_AddStringToObject(build, "NXSIM_MM_KERNEL", h->pe_kernel_env);
    cJSON_AddNumberToObject(root, "threads", threads);
    cJSON *blas = cJSON_AddObjectToObject(root, "openblas");
    cJSON_AddStringToObject(blas, "config", openblas_get_config());
    cJSON_AddStringToObject(blas, "corename", openblas_get_corename());
    cJSON_AddNumberToObject(blas, "threads", openblas_get_num_threads());
    cJSON_AddStringToObject(blas, "OPENBLAS_NUM_THREADS", env_or("OPENBLAS_NUM_THREADS", ""));
    cJSON_AddStringToObject(blas, "OPENBLAS_CORETYPE", env_or("OPENBLAS_CORETYPE", ""));
    if (h->blas_fallback[0]) cJSON_AddStringToObject(blas, "fallback_core_replaced", h->blas_fallback);
    cJSON *targets = cJSON_AddObjectToObject(root, "targets");
    cJSON_AddNumberToObject(targets, "gemm_ratio_max_bf16", TARGET_GEMM_RATIO_BF16);
    cJSON_AddNumberToObject(targets, "gemm_ratio_max_fp32", TARGET_GEMM_RATIO_FP32);
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

/* The leaf benches are cases of their own (bench/leaf_benches.h): when
 * every --case names one ("conv", or "conv/SUB" for its own --case SUB) or
 * the tutorial's ("tutorial", "micro" or a prefix of a kernel,
 * "nki_matmul...": the NKI matmul tutorial and the micro-figures,
 * docs/parts/fidelity.md), nxsim-bench runs them in turn with --machine,
 * --quick and --summary. Returns -1 when the hand-off does not apply, else
 * the worst exit status. */
static int tutorial_case(const char *name) {
    return strcmp(name, "tutorial") == 0 || strcmp(name, "micro") == 0 || strncmp(name, "nki_matmul", 10) == 0;
}

/* The leaf bench of `name` ("conv" or "conv/SUB"; *sub gets SUB or NULL). */
static const nx_bench_leaf *leaf_case(const char *name, const char **sub) {
    char head[32];
    const char *slash = strchr(name, '/');
    size_t len = slash ? (size_t)(slash - name) : strlen(name);
    *sub = slash ? slash + 1 : NULL;
    if (len >= sizeof head) return NULL;
    memcpy(head, name, len);
    head[len] = 0;
    return nx_bench_leaf_find(head);
}

static int run_leaf_benches(const char *const *names, int n_names, const char *machine, int quick, int summary) {
    if (n_names == 0) return -1;
    int tutorial = 1, leaves = 1;
    for (int i = 0; i < n_names; i++) {
        const char *sub;
        tutorial &= tutorial_case(names[i]);
        leaves &= leaf_case(names[i], &sub) != NULL;
    }
    if (!tutorial && !leaves) return -1;
    int worst = 0;
    for (int i = 0; i < n_names; i++) {
        const char *sub = NULL;
        const nx_bench_leaf *l = tutorial ? nx_bench_leaf_find("tutorial") : leaf_case(names[i], &sub);
        char *args[2 * MAX_SELECT + 8];
        int n = 0;
        args[n++] = (char *)l->alias;
        for (int k = tutorial ? 0 : i; tutorial ? k < n_names : k == i && sub; k++) {
            args[n++] = (char *)"--case";
            args[n++] = (char *)(tutorial ? names[k] : sub);
        }
        if (machine) {
            args[n++] = (char *)"--machine";
            args[n++] = (char *)machine;
        }
        if (quick) args[n++] = (char *)"--quick";
        if (summary) args[n++] = (char *)"--summary";
        args[n] = NULL;
        int rc = nx_bench_leaf_run(l, n, args);
        fflush(NULL);
        if (rc > worst) worst = rc;
        if (tutorial) break;
    }
    return worst;
}


int main(int argc, char **argv) {
    bench_blas_core(argv);
    /* nxsim-bench NAME [its options]: a leaf bench */
    const nx_bench_leaf *leaf = argc > 1 ? nx_bench_leaf_find(argv[1]) : NULL;
    if (leaf) return nx_bench_leaf_run(leaf, argc - 1, argv + 1);
    const char *names[MAX_SELECT];
    int n_names = 0, quick = 0, fork_it = 1;
    const char *machine = NULL, *json = NULL;
    bench_options opt = {0, NULL, 0, 1};
    const char *threads_arg = NULL;
    enum { OPT_QUICK = 256, OPT_NO_FORK, OPT_RACE, OPT_SUMMARY, OPT_CASE, OPT_MACHINE, OPT_JSON, OPT_TRACE,
           OPT_THREADS };
    static const struct option longopts[] = {
        {"quick", no_argument, NULL, OPT_QUICK},         {"no-fork", no_argument, NULL, OPT_NO_FORK},
        {"race-check", no_argument, NULL, OPT_RACE},     {"summary", no_argument, NULL, OPT_SUMMARY},
        {"case", required_argument, NULL, OPT_CASE},     {"machine", required_argument, NULL, OPT_MACHINE},
        {"json", required_argument, NULL, OPT_JSON},     {"trace-dir", required_argument, NULL, OPT_TRACE},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"help", no_argument, NULL, 'h'},                {NULL, 0, NULL, 0}};
    opterr = 0;
    char why[160];
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_QUICK: quick = 1; break;
        case OPT_NO_FORK: fork_it = 0; break;
        case OPT_RACE: opt.race_check = 1; break;
        case OPT_SUMMARY: opt.summary = 1; break;
        case OPT_CASE:
            if (n_names == MAX_SELECT) {
                snprintf(why, sizeof why, "at most %d --case options", MAX_SELECT);
                return usage(why);
            }
            names[n_names++] = optarg;
            break;
        case OPT_MACHINE: machine = optarg; break;
        case OPT_JSON: json = optarg; break;
        case OPT_TRACE: opt.trace_dir = optarg; break;
        case OPT_THREADS: threads_arg = optarg; break;
        case 'h': return usage(NULL);
        case ':':
            snprintf(why, sizeof why, "option '%.60s' needs a value", argv[optind - 1]);
            return usage(why);
        default:
            snprintf(why, sizeof why, "unknown option '%.60s'", argv[optind - 1]);
            return usage(why);
        }
    }
    if (optind < argc) {
        snprintf(why, sizeof why, "unexpected argument '%.60s'", argv[optind]);
        return usage(why);
    }
    int handed = run_leaf_benches(names, n_names, machine, quick, opt.summary);
    if (handed >= 0) return handed;
    nx_machine m;
    nx_error err;
    if ((threads_arg ? nx_workers_parse_threads(threads_arg, "--threads", &opt.threads, &err)
                     : nx_workers_threads_from_env(&opt.threads, &err)) != 0)
        return usage(err.msg);
    /* OpenBLAS on as many threads as the model: N against N */
    openblas_set_num_threads((int)opt.threads);
    if (nx_machine_load(machine ? machine : nx_machine_default(), &m, &err) != 0) {
        fprintf(stderr, "nxsim-bench: %s\n", err.msg);
        return 2;
    }
    bench_host host;
    bench_host_info(&host);
    if (bench_pe_kernel(&host, &err) != 0) {
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
    if (opt.trace_dir && nx_bench_prepare_dir("nxsim-bench", "--trace-dir", opt.trace_dir,
                                              sizeof ((case_result *)0)->name + sizeof ".json") != 0)
        return 2;
    print_header(&m, &host, opt.threads);
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
    if (json && write_json(json, &m, &host, opt.threads, res, n) != 0) all_ok = 0;
    return all_ok ? 0 : 1;
}
