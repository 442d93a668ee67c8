/* The cases of nxsim-bench: build the program, fill its inputs, run it on the
 * SystemC model, measure, then check the values against an independent
 * reference (OpenBLAS sgemm; the arithmetic of a counter; the source bytes). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"
#include "dma_bound.h"
#include "isa/workers.h"
#include "programs.h"
#include "sim/model.h"
#include "sim/profile.h"
#include "sim/race.h"
#include "wall_clock.h"


static double peak_rss_bytes(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss * 1024.0; /* Linux: KiB */
}

static void fail(case_result *out, const char *what, const char *msg) {
    snprintf(out->error, sizeof out->error, "%s: %s", what, msg);
}

/* TARGET_RSS_FACTOR x (the program's HBM + every core's SBUF and PSUM). */
static double rss_bound(const nx_machine *m, const nx_program *p) {
    double on_chip = (double)m->geo.partitions * (double)(m->geo.sbuf_partition_bytes + m->geo.psum_partition_bytes);
    return TARGET_RSS_FACTOR * ((double)p->hbm_bytes + p->cores * on_chip);
}

/* Runs the program on the model and fills the common figures; then the
 * optional race check and trace, timed apart. Returns 0 or -1. */
static int simulate(const nx_machine *m, const bench_case *c, const bench_options *opt, const nx_program *prog,
                    nx_state *st, case_result *out) {
    nx_sim_options so = {opt->race_check || opt->trace_dir, 0};
    nx_sim_result r;
    memset(&r, 0, sizeof r);
    nx_error err;
    nx_workers *pool = NULL;
    if (opt->threads > 1 && nx_workers_create(opt->threads, &pool, &err) != 0) {
        fail(out, "threads", err.msg);
        return -1;
    }
    st->workers = pool;
    double t0 = nx_bench_now_s(), c0 = nx_bench_cpu_s();
    int rc = nx_sim_run(m, prog, st, &so, &r, &err);
    out->wall_s = nx_bench_now_s() - t0;
    out->cpu_s = nx_bench_cpu_s() - c0;
    st->workers = NULL;
    nx_workers_destroy(pool);
    out->rss_bytes = peak_rss_bytes();
    if (rc != 0) {
        fail(out, "nx_sim_run", err.msg);
        nx_sim_result_free(&r);
        return -1;
    }
    out->sim_ns = r.total_ns;
    out->instructions = r.instructions;
    out->insn_per_s = out->wall_s > 0 ? (double)r.instructions / out->wall_s : 0;
    out->program_bytes = (double)nx_program_insn_bytes(prog);
    out->rss_bound_bytes = rss_bound(m, prog);
    nx_profile_peak peak;
    nx_profile_peak_of(m, prog, &peak);
    out->tflops_peak = peak.tflops;
    out->tflops_sim = r.total_ns > 0 ? (double)r.flops / r.total_ns / 1000.0 : 0;
    if (opt->summary) {
        printf("--- profile summary of %s\n", c->name);
        nx_profile_summary(stdout, m, prog, &r);
        printf("---\n");
        fflush(stdout);
    }
    if (opt->race_check) {
        t0 = nx_bench_now_s();
        out->race_status = nx_race_check(prog, r.log, r.log_count, &err);
        out->race_s = nx_bench_now_s() - t0;
        if (out->race_status != 0) snprintf(out->race_msg, sizeof out->race_msg, "%s", err.msg);
    }
    if (opt->trace_dir) {
        char path[BENCH_PATH_MAX];
        snprintf(path, sizeof path, "%s/%s.json", opt->trace_dir, c->name);
        t0 = nx_bench_now_s();
        if (nx_profile_write_trace(path, m, prog, &r, &err) != 0) {
            fail(out, "trace", err.msg);
            nx_sim_result_free(&r);
            return -1;
        }
        out->trace_s = nx_bench_now_s() - t0;
        FILE *f = fopen(path, "rb");
        if (f) {
            fseek(f, 0, SEEK_END);
            out->trace_bytes = (double)ftell(f);
            fclose(f);
        }
    }
    nx_sim_result_free(&r);
    return 0;
}

/* ---- (a) GEMM ---- */

/* The reference's figures and the values' verdict (bench/gemm_reference.c). */
static int check_gemm(const bench_gemm *g, const float *c_sim, case_result *out) {
    bench_gemm_check chk;
    nx_error err;
    if (bench_gemm_check_values(g, c_sim, &chk, &err) != 0) {
        fail(out, "reference", err.msg);
        return -1;
    }
    out->blas_s = chk.blas_s;
    out->blas_cpu_s = chk.blas_cpu_s;
    out->ratio = out->blas_s > 0 ? out->wall_s / out->blas_s : 0;
    out->target_ratio = g->dtype == NX_DT_BF16 ? TARGET_GEMM_RATIO_BF16 : TARGET_GEMM_RATIO_FP32;
    out->max_rel_err = chk.max_rel_err;
    out->err_bound = chk.err_bound;
    out->values_ok = chk.ok;
    if (!out->values_ok)
        snprintf(out->error, sizeof out->error, "values: max |sim - sgemm| / (|A||B|) = %.3g > %.3g", chk.max_rel_err,
                 chk.err_bound);
    return 0;
}

static void run_gemm(const nx_machine *m, const bench_case *c, const bench_options *opt, case_result *out) {
    bench_gemm g = {.M = c->M, .K = c->K, .N = c->N, .dtype = c->dtype, .dma_engines = 16};
    nx_program prog;
    nx_state st;
    nx_error err;
    snprintf(out->clock, sizeof out->clock, "pe");
    if (bench_gemm_build(m, &g, &prog, &err) != 0) return fail(out, "build", err.msg);
    if (nx_state_init(&st, &m->geo, prog.cores, prog.hbm_bytes, prog.sem_count, &err) != 0) {
        nx_program_free(&prog);
        return fail(out, "state", err.msg);
    }
    bench_gemm_put_inputs(&g, &st);
    float *c_sim = NULL;
    if (simulate(m, c, opt, &prog, &st, out) == 0) {
        out->sim_cycles = out->sim_ns * m->clock_ghz[NX_ENG_PE];
        c_sim = malloc((size_t)g.M * g.N * sizeof *c_sim);
        if (!c_sim)
            fail(out, "result", "out of memory");
        else
            bench_gemm_get_output(&g, &st, c_sim);
    }
    /* the reference's matrices replace the state, not add to it */
    nx_state_free(&st);
    nx_program_free(&prog);
    if (c_sim && check_gemm(&g, c_sim, out) == 0) out->ran = 1;
    free(c_sim);
}

/* ---- (b) chain of dependent DVE instructions ---- */

static void run_chain(const nx_machine *m, const bench_case *c, const bench_options *opt, case_result *out) {
    nx_program prog;
    nx_state st;
    nx_error err;
    uint64_t x_off;
    snprintf(out->clock, sizeof out->clock, "dve");
    if (bench_chain_build(m, (uint32_t)c->size, &prog, &x_off, &err) != 0) return fail(out, "build", err.msg);
    if (nx_state_init(&st, &m->geo, prog.cores, prog.hbm_bytes, prog.sem_count, &err) != 0) {
        nx_program_free(&prog);
        return fail(out, "state", err.msg);
    }
    if (simulate(m, c, opt, &prog, &st, out) == 0) {
        out->sim_cycles = out->sim_ns * m->clock_ghz[NX_ENG_DVE];
        out->final_value = nx_dtype_load(NX_DT_FP32, nx_sbuf_at(&st, 0, 0, x_off));
        out->values_ok = out->final_value == (double)c->size;
        if (!out->values_ok)
            snprintf(out->error, sizeof out->error, "values: x = %.17g after %llu increments", out->final_value,
                     (unsigned long long)c->size);
        out->ran = 1;
    }
    nx_state_free(&st);
    nx_program_free(&prog);
}

/* ---- (c) DMA-bound copy ---- */

static void run_copy(const nx_machine *m, const bench_case *c, const bench_options *opt, case_result *out) {
    bench_copy cp = {.bytes = c->size, .cores = m->geo.cores < NX_MAX_CORES ? m->geo.cores : NX_MAX_CORES,
                     .dma_engines = 16};
    nx_program prog;
    nx_state st;
    nx_error err;
    if (bench_copy_build(m, &cp, &prog, &err) != 0) return fail(out, "build", err.msg);
    if (nx_state_init(&st, &m->geo, prog.cores, prog.hbm_bytes, prog.sem_count, &err) != 0) {
        nx_program_free(&prog);
        return fail(out, "state", err.msg);
    }
    uint32_t *src = (uint32_t *)(void *)(st.hbm + cp.src_off);
    for (uint64_t i = 0; i < cp.bytes / 4; i++) src[i] = (uint32_t)(i * 2654435761u) ^ 0x5bd1e995u;
    if (simulate(m, c, opt, &prog, &st, out) == 0) {
        /* every byte crosses a DMA engine twice (HBM -> SBUF -> HBM) */
        out->moved_bytes = 2.0 * (double)cp.bytes;
        out->bound_ns = out->moved_bytes / nx_bench_dma_bytes_per_ns(m, cp.cores, cp.dma_engines);
        out->values_ok = memcmp(st.hbm + cp.dst_off, st.hbm + cp.src_off, cp.bytes) == 0;
        if (!out->values_ok) snprintf(out->error, sizeof out->error, "values: dst differs from src");
        out->ran = 1;
    }
    nx_state_free(&st);
    nx_program_free(&prog);
}

void bench_run_case(const nx_machine *m, const bench_case *c, const bench_options *opt, case_result *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", c->name);
    out->kind = c->kind;
    out->race_status = 2;
    switch (c->kind) {
    case CASE_GEMM: run_gemm(m, c, opt, out); break;
    case CASE_CHAIN: run_chain(m, c, opt, out); break;
    case CASE_COPY: run_copy(m, c, opt, out); break;
    }
}
