/* nxsim-bench-transpose: both grid transposes (tiled_pf_transpose,
 * tiled_dve_transpose_10) on an N x N matrix (default 4096), fp32 and bf16,
 * traced on 1 core and on the VNC(2) grid and run on the SystemC model.
 * Prints per case: trace and simulation wall time, simulated time, the
 * 2-core speed-up in simulated time, and the DMA/HBM bound of the machine
 * description beside it. Figures only: never pass/fail on time (a wrong
 * result is reported and makes the exit status 1).
 *
 * The bound: a transpose reads and writes every byte once, 2 * N * N * size
 * bytes through DMA. The cores' DMA engines move at most
 * cores * dma_engines * dma_engine_bytes_per_ns, and all of them share HBM at
 * hbm_bytes_per_ns, so no schedule beats bytes / min(the two)
 * (bench/dma_bound.h). */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "leaf_benches.h"
#include "dma_bound.h"
#include "isa/state.h"
#include "registry/lower.h"
#include "registry/macro_op.h"
#include "registry/run/run.h"
#include "sim/machine.h"
#include "sim/model.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-transpose [--n N] [--machine NAME|FILE]\n"
          "Runs tiled_pf_transpose and tiled_dve_transpose_10 on an N x N matrix\n"
          "(default 4096) in fp32 and bf16, on 1 core and on the VNC(2) grid.\n",
          f);
}

typedef struct bench_case {
    double trace_wall_s, sim_wall_s, sim_ns;
    int ok;
} bench_case;

/* Pseudo-random bits with the float exponent kept away from NaN/Inf. */
static void fill(uint8_t *p, uint64_t n, size_t es, uint64_t seed) {
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (uint64_t i = 0; i < n; i++) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        uint64_t v = s * 0x2545f4914f6cdd1dull;
        memcpy(p + i * es, &v, es);
        p[i * es + es - 1] &= 0xbf;
    }
}

static int run_case(nx_lowerer *L, const nx_machine *m, const char *key, nx_dtype dt, uint64_t n,
                    uint32_t grid, bench_case *out, nx_error *err) {
    nx_macro_op given;
    nx_macro_op_init(&given);
    nx_prepared op;
    nx_prepared_init(&op);
    uint64_t shape[2] = {n, n};
    static const uint64_t perm[2] = {1, 0};
    nx_value v;
    int rc = -1;
    if (nx_macro_op_set_func_name(&given, key, err) != 0 ||
        nx_macro_op_add_operand(&given, "x", dt, 2, shape, err) != 0 ||
        nx_macro_op_add_result(&given, "y", dt, 2, shape, err) != 0 || nx_value_int_list(&v, perm, 2, err) != 0)
        goto out;
    if (nx_attrs_set(&given.attrs, "permutation", &v, err) != 0) {
        nx_value_free(&v);
        goto out;
    }
    if (nx_op_prepare(L, &given, NULL, &op, err) != 0) goto out;
    /* Traced first on its own, to time the trace; the run is then a cache hit. */
    double t0 = now_s();
    const nx_program *prog;
    if (nx_lower_on_grid(L, &op.target, &op.op, grid, &prog, err) != 0) goto out;
    out->trace_wall_s = now_s() - t0;

    size_t es = nx_dtype_size(dt);
    uint8_t *x = malloc(n * n * es);
    if (!x) {
        nx_fail(err, "out of memory for a %" PRIu64 " x %" PRIu64 " input", n, n);
        goto out;
    }
    fill(x, n * n, es, n + dt);
    const void *inputs[1] = {x};
    nx_run_options opt = {.backend = NX_RUN_MODEL, .grid = grid};
    nx_run_result res;
    t0 = now_s();
    if (nx_run_op(L, m, &op, inputs, &opt, &res, err) != 0) {
        nx_run_result_free(&res);
        free(x);
        goto out;
    }
    out->sim_wall_s = now_s() - t0;
    out->sim_ns = res.trace.sim.total_ns;
    out->ok = 1;
    const uint8_t *b = res.results[0];
    for (uint64_t i = 0; i < n && out->ok; i++)
        for (uint64_t j = 0; j < n && out->ok; j++)
            out->ok = memcmp(b + (j * n + i) * es, x + (i * n + j) * es, es) == 0;
    nx_run_result_free(&res);
    free(x);
    rc = 0;
out:
    nx_prepared_free(&op);
    nx_macro_op_free(&given);
    return rc;
}

int nx_bench_transpose_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_N | NX_BENCH_OPT_MACHINE, usage, &a);
    if (st >= 0) return st;
    uint64_t n = 4096;
    const char *machine = a.machine;
    if (a.n) {
        char *end;
        n = strtoull(a.n, &end, 10);
        if (*end || n == 0) {
            fprintf(stderr, "nxsim-bench-transpose: --n expects a positive integer\n");
            return 2;
        }
    }
    nx_error err;
    nx_machine m;
    if (nx_bench_machine(argv[0], machine, &m) != 0) return 2;
    nx_lowerer *L = nx_lowerer_new(&m.geo, NULL);
    if (!L) {
        fprintf(stderr, "nxsim-bench-transpose: out of memory\n");
        return 1;
    }
    static const char *const keys[] = {"tiled_pf_transpose", "tiled_dve_transpose_10"};
    static const nx_dtype dts[] = {NX_DT_FP32, NX_DT_BF16};
    double dma_core = m.geo.dma_engines * m.dma_engine_bytes_per_ns;
    printf("nxsim-bench-transpose: %llu x %llu, machine %s (DMA %.0f B/ns per core = %u engines x "
           "%.0f B/ns; HBM %.0f B/ns shared)\n",
           (unsigned long long)n, (unsigned long long)n, m.geo.name, dma_core, m.geo.dma_engines,
           m.dma_engine_bytes_per_ns, m.hbm_bytes_per_ns);
    printf("%-24s %-5s %5s %9s %9s %12s %12s %8s %8s %s\n", "kernel", "dtype", "cores", "trace_s",
           "sim_wall_s", "sim_us", "bound_us", "of_bound", "speedup", "result");
    int status = 0;
    for (int k = 0; k < 2; k++) {
        for (int d = 0; d < 2; d++) {
            double sim1 = 0;
            for (uint32_t grid = 1; grid <= 2; grid++) {
                bench_case c;
                memset(&c, 0, sizeof c);
                if (run_case(L, &m, keys[k], dts[d], n, grid, &c, &err) != 0) {
                    printf("%-24s %-5s %5u  error: %s\n", keys[k], nx_dtype_name(dts[d]), grid, err.msg);
                    status = 1;
                    continue;
                }
                double bytes = 2.0 * (double)n * (double)n * (double)nx_dtype_size(dts[d]);
                double bound_ns = nx_bench_dma_bound_ns(&m, grid, bytes);
                if (grid == 1) sim1 = c.sim_ns;
                char speedup[16] = "-";
                if (grid == 2 && sim1 > 0) snprintf(speedup, sizeof speedup, "%.2fx", sim1 / c.sim_ns);
                printf("%-24s %-5s %5u %9.2f %9.2f %12.1f %12.1f %7.0f%% %8s %s\n", keys[k],
                       nx_dtype_name(dts[d]), grid, c.trace_wall_s, c.sim_wall_s, c.sim_ns / 1e3,
                       bound_ns / 1e3, 100.0 * bound_ns / c.sim_ns, speedup, c.ok ? "ok" : "WRONG");
                fflush(stdout);
                if (!c.ok) status = 1;
            }
        }
    }
    printf("of_bound: the bound's share of the simulated time (100%% = at the DMA/HBM limit); "
           "speedup: 1-core / 2-core simulated time.\n");
    nx_lowerer_free(L);
    return status;
}
