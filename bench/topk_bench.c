/* nxsim-bench-topk: the `topk` composite with each method (SCANNING,
 * CASCADED, ROTATIONAL) and AUTO on the SystemC model (VNC(2), through
 * nx_run_op), every result checked against nx_ref_topk.
 *
 *   nxsim-bench-topk                  the benchmark cases (rows, vocab, k) =
 *                                     (1,151936,8) (32,32000,50) (128,4096,8)
 *                                     (1024,128,64), bf16 on trn2
 *   nxsim-bench-topk --case R,V,K     one case (repeatable)
 *   nxsim-bench-topk --table          the AUTO cost table: every method over
 *                                     the grid below on trn2 and trn1, bf16
 *                                     and fp32, written as C source
 *                                     (kernels/topk/topk_cost_table.c)
 *
 * Per case it prints each method's simulated time, AUTO's choice, and the
 * public cost model's DVE estimate of a scanning top-k, ceil(k/8) * 2 *
 * (V + 144) DVE cycles (the NKI library's TopkConfig.cost_estimate; 144 is
 * its fixed DVE instruction overhead), in us at the machine's DVE clock,
 * with the ratio simulated / estimate. Figures only: never pass/fail on
 * time (a wrong result is reported and makes the exit status 1). */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "leaf_benches.h"
#include "bench/wall_clock.h"
#include "isa/dtype.h"
#include "registry/lower.h"
#include "registry/macro_op.h"
#include "registry/run/run.h"
#include "kernels/topk/topk_auto.h"
#include "kernels/topk/topk_methods.h"
#include "sim/machine.h"

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-topk [--case ROWS,VOCAB,K]... [--dtype DT] [--machine NAME|FILE]\n"
          "       nxsim-bench-topk --table [--commit TEXT] [--quick]\n"
          "Runs the topk composite with every method and AUTO on the SystemC model\n"
          "(default: the four benchmark cases, bf16 on trn2); --table measures the\n"
          "AUTO cost table and prints it as C source (kernels/topk/topk_cost_table.c).\n",
          f);
}

typedef struct run_out {
    double sim_ns, wall_s;
    int ok;
} run_out;

/* The composite on x [rows, n] (values uniform in [-1, 1) from the run
 * path's seeded operands) with method `method`; checked. */
static int run_one(nx_lowerer *L, const nx_machine *m, nx_dtype dt, uint64_t rows, uint64_t n, uint64_t k,
                   const char *method, run_out *out, nx_error *err) {
    nx_macro_op op;
    nx_macro_op_init(&op);
    uint64_t shape[2] = {rows, n};
    int rc = -1;
    nx_value kv = nx_value_int((int64_t)k), mv;
    if (nx_macro_op_set_func_name(&op, "topk", err) != 0 || nx_macro_op_add_operand(&op, "x", dt, 2, shape, err) != 0 ||
        nx_attrs_set(&op.attrs, "k", &kv, err) != 0)
        goto done;
    char json[32];
    snprintf(json, sizeof json, "\"%s\"", method);
    if (nx_value_parse("method", json, &mv, err) != 0 || nx_attrs_set(&op.attrs, "method", &mv, err) != 0) goto done;
    nx_prepared p;
    if (nx_op_prepare(L, &op, NULL, &p, err) != 0) {
        nx_prepared_free(&p);
        goto done;
    }
    nx_run_options opt = {.backend = NX_RUN_MODEL, .check = 1, .seed = rows * 31 + n};
    nx_run_result res;
    double t0 = nx_bench_now_s();
    int ran = nx_run_op(L, m, &p, NULL, &opt, &res, err);
    nx_prepared_free(&p);
    if (ran != 0) {
        nx_run_result_free(&res);
        goto done;
    }
    out->wall_s = nx_bench_now_s() - t0;
    out->sim_ns = res.trace.sim.total_ns;
    out->ok = res.check_failures == 0;
    nx_run_result_free(&res);
    rc = 0;
done:
    nx_macro_op_free(&op);
    return rc;
}

static double dve_estimate_cycles(uint64_t n, uint64_t k) { return ceil((double)k / 8) * 2 * ((double)n + 144); }

static int bench_cases(const nx_machine *m, nx_dtype dt, const uint64_t (*cases)[3], int ncases) {
    int bad = 0;
    nx_error err;
    nx_lowerer *L = nx_lowerer_new(&m->geo, NULL);
    if (!L) return 1;
    printf("nxsim-bench-topk: topk composite on %s, %s, VNC(2); simulated times (wall time of the simulation)\n",
           m->geo.name, nx_dtype_name(dt));
    printf("%-20s %-22s %-22s %-22s %-12s %-26s %s\n", "rows x vocab, k", "SCANNING", "CASCADED", "ROTATIONAL",
           "AUTO", "DVE model ceil(k/8)2(V+144)", "fastest / model");
    for (int c = 0; c < ncases; c++) {
        uint64_t rows = cases[c][0], n = cases[c][1], k = cases[c][2];
        double best = 0;
        char cell[NX_TOPK_METHOD_COUNT][48];
        for (int me = 0; me < NX_TOPK_METHOD_COUNT; me++) {
            run_out o;
            const char *name = nx_topk_method_get((nx_topk_method_id)me)->member;
            if (run_one(L, m, dt, rows, n, k, name, &o, &err) != 0) {
                fprintf(stderr, "nxsim-bench-topk: %s: %s\n", name, err.msg);
                snprintf(cell[me], sizeof cell[me], "refused");
                bad = 1;
                continue;
            }
            if (!o.ok) bad = 1;
            if (best == 0 || o.sim_ns < best) best = o.sim_ns;
            snprintf(cell[me], sizeof cell[me], "%9.1f us (%5.1fs)%s", o.sim_ns / 1e3, o.wall_s, o.ok ? "" : " WRONG");
        }
        nx_topk_choice ch;
        char autoc[32] = "?";
        if (nx_topk_choose("AUTO", &m->geo, dt, rows, n, k, &ch, &err) == 0)
            snprintf(autoc, sizeof autoc, "%s", nx_topk_method_get(ch.method)->member);
        double cyc = dve_estimate_cycles(n, k);
        double est_ns = cyc / m->clock_ghz[NX_ENG_DVE];
        char what[32], model[48];
        snprintf(what, sizeof what, "%" PRIu64 " x %" PRIu64 ", %" PRIu64, rows, n, k);
        snprintf(model, sizeof model, "%.0f cyc = %.1f us", cyc, est_ns / 1e3);
        printf("%-20s %-22s %-22s %-22s %-12s %-26s %.2f\n", what, cell[0], cell[1], cell[2], autoc, model,
               best / est_ns);
        if (nx_topk_choose("AUTO", &m->geo, dt, rows, n, k, &ch, &err) == 0) {
            char why[256];
            nx_topk_choice_text(&ch, why, sizeof why);
            printf("%-20s AUTO: %s\n", "", why);
        }
        fflush(stdout);
    }
    nx_lowerer_free(L);
    return bad;
}

/* ---- the AUTO cost table --------------------------------------------------------- */

static const uint64_t T_ROWS[] = {1, 4, 16, 64, 128};
static const uint64_t T_N[] = {128, 1024, 4096, 32000, 151936};
static const uint64_t T_K[] = {1, 8, 64, 512, 2048};
#define TR (sizeof T_ROWS / sizeof T_ROWS[0])
#define TN (sizeof T_N / sizeof T_N[0])
#define TK (sizeof T_K / sizeof T_K[0])
/* Points whose simulation would do more than this many element scans
 * (rows x n x ceil(k/8)) are not simulated: their times are the largest
 * simulated row count's at the same (n, k), scaled linearly in rows (the
 * rows of a program are tiles that run one after the other), marked
 * "x<factor>" in the table. */
#define WORK_CAP (1ull << 27)

static void cpu_model(char *buf, size_t len) {
    snprintf(buf, len, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[8192];
    char simd[64] = "";
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) == 0 && !simd[0]) {
            static const char *const fl[] = {"avx512f", "avx2", "fma"};
            for (int i = 0; i < 3; i++) {
                char pat[16];
                snprintf(pat, sizeof pat, " %s ", fl[i]);
                if (strstr(line, pat)) snprintf(simd + strlen(simd), sizeof simd - strlen(simd), "%s%s", simd[0] ? " " : "", fl[i]);
            }
            continue;
        }
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ') c++;
                c[strcspn(c, "\n")] = 0;
                snprintf(buf, len, "%s", c);
            }
        }
    }
    fclose(f);
    if (simd[0]) snprintf(buf + strlen(buf), len - strlen(buf), " (%s)", simd);
}

static int table(const char *commit, int quick) {
    static const char *const machines[] = {"trn2", "trn1"};
    static const nx_dtype dts[] = {NX_DT_BF16, NX_DT_FP32};
    char cpu[160];
    cpu_model(cpu, sizeof cpu);
    int bad = 0;
    uint32_t nr = quick ? 2 : (uint32_t)TR, nn = quick ? 2 : (uint32_t)TN, nk = quick ? 2 : (uint32_t)TK;
    printf("/* The measured cost table of the topk composite's AUTO dispatch\n"
           " * (kernels/topk/topk_auto.h). Generated by `nxsim-bench-topk --table`; do not\n"
           " * edit by hand: regenerate after a change to the top-k leaves. Simulated\n"
           " * ns on the SystemC model (VNC(2)), measured on %s, commit %s.\n"
           " * Entries marked x<f> were too long to simulate: f times the entry of\n"
           " * the largest simulated row count at the same (n, k). */\n"
           "#include \"topk_auto.h\"\n\n",
           cpu, commit ? commit : "unknown");
    printf("static const uint64_t rows[] = {");
    for (uint32_t i = 0; i < nr; i++) printf("%s%" PRIu64, i ? ", " : "", T_ROWS[i]);
    printf("};\nstatic const uint64_t n[] = {");
    for (uint32_t i = 0; i < nn; i++) printf("%s%" PRIu64, i ? ", " : "", T_N[i]);
    printf("};\nstatic const uint64_t k[] = {");
    for (uint32_t i = 0; i < nk; i++) printf("%s%" PRIu64, i ? ", " : "", T_K[i]);
    printf("};\n\n");
    for (size_t mi = 0; mi < sizeof machines / sizeof machines[0]; mi++) {
        nx_machine m;
        nx_error err;
        if (nx_machine_load(machines[mi], &m, &err) != 0) {
            fprintf(stderr, "nxsim-bench-topk: %s\n", err.msg);
            return 1;
        }
        nx_lowerer *L = nx_lowerer_new(&m.geo, NULL);
        for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
            printf("/* %s %s: [rows][n][k][SCANNING, CASCADED, ROTATIONAL] */\n", machines[mi], nx_dtype_name(dts[di]));
            printf("static const double ns_%s_%s[] = {\n", machines[mi], nx_dtype_name(dts[di]));
            /* the last measured rows per (n, k, method), for the points too
             * long to simulate (scaled linearly in rows) */
            double last[TN][TK][NX_TOPK_METHOD_COUNT] = {{{0}}};
            uint64_t last_rows[TN][TK] = {{0}};
            for (uint32_t r = 0; r < nr; r++)
                for (uint32_t i = 0; i < nn; i++) {
                    printf("   ");
                    for (uint32_t j = 0; j < nk; j++) {
                        uint64_t kk = T_K[j] < T_N[i] ? T_K[j] : T_N[i];
                        if (T_ROWS[r] * T_N[i] * ((kk + 7) / 8) > WORK_CAP && last_rows[i][j]) {
                            double f = (double)T_ROWS[r] / (double)last_rows[i][j];
                            for (int me = 0; me < NX_TOPK_METHOD_COUNT; me++) printf(" %.0f,", last[i][j][me] * f);
                            printf(" /* x%.0f */", f);
                            continue;
                        }
                        last_rows[i][j] = T_ROWS[r];
                        for (int me = 0; me < NX_TOPK_METHOD_COUNT; me++) {
                            run_out o = {0};
                            const char *name = nx_topk_method_get((nx_topk_method_id)me)->member;
                            if (run_one(L, &m, dts[di], T_ROWS[r], T_N[i], kk, name, &o, &err) != 0) {
                                fprintf(stderr, "nxsim-bench-topk: %s %s %" PRIu64 "x%" PRIu64 " k=%" PRIu64 " %s: %s\n",
                                        machines[mi], nx_dtype_name(dts[di]), T_ROWS[r], T_N[i], kk, name, err.msg);
                                bad = 1;
                                o.sim_ns = 1e12; /* refused: never chosen */
                            } else if (!o.ok) {
                                fprintf(stderr, "nxsim-bench-topk: WRONG result: %s %" PRIu64 "x%" PRIu64 " k=%" PRIu64 " %s\n",
                                        machines[mi], T_ROWS[r], T_N[i], kk, name);
                                bad = 1;
                            }
                            printf(" %.0f,", o.sim_ns);
                            last[i][j][me] = o.sim_ns;
                        }
                        fprintf(stderr, "  %s %s %" PRIu64 " x %" PRIu64 " k=%" PRIu64 " done\n", machines[mi],
                                nx_dtype_name(dts[di]), T_ROWS[r], T_N[i], kk);
                    }
                    printf("\n");
                    fflush(stdout);
                }
            printf("};\n\n");
        }
        nx_lowerer_free(L);
    }
    printf("const nx_topk_cost_table nx_topk_cost_tables[] = {\n");
    for (size_t mi = 0; mi < sizeof machines / sizeof machines[0]; mi++)
        for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
            printf("    {\"%s\", NX_DT_%s, \"nxsim-bench-topk --table%s, %s, commit %s\", rows, n, k, %u, %u, %u, ns_%s_%s},\n",
                   machines[mi], di == 0 ? "BF16" : "FP32", quick ? " --quick" : "", cpu, commit ? commit : "unknown",
                   nr, nn, nk, machines[mi], nx_dtype_name(dts[di]));
    printf("};\nconst uint32_t nx_topk_cost_table_count = sizeof nx_topk_cost_tables / sizeof nx_topk_cost_tables[0];\n");
    return bad;
}

int nx_bench_topk_main(int argc, char **argv) {
    uint64_t cases[16][3];
    int ncases = 0, want_table = 0, quick = 0;
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_CASE | NX_BENCH_OPT_DTYPE | NX_BENCH_OPT_MACHINE |
                                                 NX_BENCH_OPT_TABLE | NX_BENCH_OPT_QUICK | NX_BENCH_OPT_COMMIT, usage, &a);
    if (st >= 0) return st;
    const char *machine = a.machine ? a.machine : "trn2", *commit = a.commit;
    want_table = a.table;
    quick = a.quick;
    nx_dtype dt = NX_DT_BF16;
    for (int i = 0; i < a.n_cases; i++) {
        unsigned long long r, v, k;
        if (sscanf(a.cases[i], "%llu,%llu,%llu", &r, &v, &k) != 3 || !r || !v || !k || k > v) {
            fprintf(stderr, "nxsim-bench-topk: --case expects ROWS,VOCAB,K with 1 <= K <= VOCAB\n");
            return 2;
        }
        cases[ncases][0] = r;
        cases[ncases][1] = v;
        cases[ncases][2] = k;
        ncases++;
    }
    if (a.dtype && nx_dtype_from_name(a.dtype, &dt) != 0) {
        fprintf(stderr, "nxsim-bench-topk: --dtype: unknown dtype '%s'\n", a.dtype);
        return 2;
    }
    if (want_table) return table(commit, quick);
    static const uint64_t issue[4][3] = {{1, 151936, 8}, {32, 32000, 50}, {128, 4096, 8}, {1024, 128, 64}};
    if (ncases == 0) {
        memcpy(cases, issue, sizeof issue);
        ncases = 4;
    }
    nx_machine m;
    nx_error err;
    if (nx_machine_load(machine, &m, &err) != 0) {
        fprintf(stderr, "nxsim-bench-topk: %s\n", err.msg);
        return 2;
    }
    return bench_cases(&m, dt, (const uint64_t(*)[3])cases, ncases);
}
