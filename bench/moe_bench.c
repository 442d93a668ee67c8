/* nxsim-bench-moe: blockwise_mm (MoE prefill) on prefill-sized block sets,
 * bf16 on one core, run on the SystemC model, checked against the reference
 * (kernels/ref, OpenBLAS) in the same process. Figures only: never pass or
 * fail on time (a wrong result is reported and makes the exit status 1).
 *
 * Cases (a random top-k router, tokens grouped by expert into blocks of B
 * padded with -1, as a prefill dispatch does):
 *   mixtral  H = 4096, I = 1792 (one TP shard), E = 8, top-2, T = 2048, B = 512
 *   dbrx     H = 6144, I = 336, E = 16, top-4, T = 4224, B = 512
 *   small    H = 1024, I = 512, E = 4, top-2, T = 512, B = 128 (a quick look)
 *
 * Bounds beside the simulated time, from the machine description:
 *   PE busy:   every block position's 3 H I multiply-adds at 128 x 128 per
 *              PE cycle (bf16 rate), i.e. the work the routing hands the
 *              kernel (padding positions included; the bound over the
 *              routed tokens only is printed too);
 *   weights:   the weight bytes that must stream from HBM at the core's DMA
 *              bandwidth (min(engines x per-engine rate, HBM rate)): one
 *              expert's 3 H I elements per run of blocks with one expert
 *              when an expert fits the leaf's SBUF plan, else per work
 *              item (the plan says which);
 * and the achieved fraction = the larger bound / the simulated time. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "leaf_benches.h"
#include "isa/rng.h"
#include "isa/state.h"
#include "kernels/blockwise_mm/blockwise_mm.h"
#include "kernels/ref/ref.h"
#include "registry/lower.h"
#include "registry/macro_op.h"
#include "registry/rules.h"
#include "sim/machine.h"
#include "sim/model.h"
#include "sim/profile.h"
#include "sim/race.h"
#include "wall_clock.h"
#include "dma_bound.h"

typedef struct moe_case {
    const char *name;
    uint64_t T, H, I, E, topk, B;
} moe_case;

static const moe_case CASES[] = {
    {"mixtral", 2048, 4096, 1792, 8, 2, 512},
    {"dbrx", 4224, 6144, 336, 16, 4, 512},
    {"small", 512, 1024, 512, 4, 2, 128},
};

/* CPU time of the process so far (user + system, every thread). */
static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
}

static double peak_rss_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

/* The router: token t picks topk distinct experts uniformly, affinities
 * normalised to sum 1; then tokens are grouped by expert into blocks. */
typedef struct routing {
    uint64_t NB, routed;
    int32_t *tpid, *bte;
    float *aff; /* (T+1) * E */
} routing;

static int route(const moe_case *c, routing *r) {
    uint64_t T = c->T, E = c->E, k = c->topk, s = 2024;
    uint64_t *top = malloc(T * k * sizeof *top), *count = calloc(E, sizeof *count);
    r->aff = calloc((T + 1) * E, sizeof *r->aff);
    if (!top || !count || !r->aff) return -1;
    for (uint64_t t = 0; t < T; t++) {
        double w[16], sum = 0;
        for (uint64_t j = 0; j < k; j++) {
            uint64_t e;
            int dup;
            do {
                e = nx_splitmix64(&s) % E;
                dup = 0;
                for (uint64_t q = 0; q < j; q++) dup |= top[t * k + q] == e;
            } while (dup);
            top[t * k + j] = e;
            count[e]++;
            w[j] = 0.2 + nx_splitmix64_unit(&s);
            sum += w[j];
        }
        for (uint64_t j = 0; j < k; j++) r->aff[t * E + top[t * k + j]] = (float)(w[j] / sum);
    }
    r->NB = 0;
    for (uint64_t e = 0; e < E; e++) r->NB += (count[e] + c->B - 1) / c->B;
    r->tpid = malloc(r->NB * c->B * sizeof *r->tpid);
    r->bte = malloc(r->NB * sizeof *r->bte);
    if (!r->tpid || !r->bte) return -1;
    uint64_t n = 0;
    r->routed = T * k;
    for (uint64_t e = 0; e < E; e++) {
        uint64_t pos = 0;
        for (uint64_t t = 0; t < T; t++)
            for (uint64_t j = 0; j < k; j++)
                if (top[t * k + j] == e) {
                    if (pos % c->B == 0) r->bte[n + pos / c->B] = (int32_t)e;
                    r->tpid[n * c->B + pos++] = (int32_t)t;
                }
        for (; pos % c->B; pos++) r->tpid[n * c->B + pos] = -1;
        n += pos / c->B;
    }
    free(top);
    free(count);
    return 0;
}

static void fill_bf16(uint8_t *p, uint64_t n, double scale, uint64_t seed) {
    uint64_t s = seed;
    for (uint64_t i = 0; i < n; i++)
        nx_dtype_store(NX_DT_BF16, p + 2 * i, scale * (2.0 * nx_splitmix64_unit(&s) - 1.0));
}

static uint64_t checksum(const uint8_t *p, uint64_t n) {
    uint64_t h = 1469598103934665603ull;
    for (uint64_t i = 0; i < n; i += 8) {
        uint64_t v = 0;
        memcpy(&v, p + i, n - i < 8 ? n - i : 8);
        h = (h ^ v) * 1099511628211ull;
    }
    return h;
}

static int run_case(nx_lowerer *L, const nx_machine *m, const moe_case *c, int with_ref, int summary,
                    int race, nx_error *err) {
    routing r;
    memset(&r, 0, sizeof r);
    if (route(c, &r) != 0) return nx_fail(err, "out of memory routing");
    uint64_t T = c->T, H = c->H, I = c->I, E = c->E, B = c->B;
    nx_macro_op op;
    nx_macro_op_init(&op);
    const uint64_t s_hs[2] = {T + 1, H}, s_aff[2] = {(T + 1) * E, 1}, s_gu[4] = {E, H, 2, I},
                   s_dn[3] = {E, I, H};
    const uint64_t s_tp[1] = {r.NB * B}, s_be[2] = {r.NB, 1}, s_out[2] = {T + 1, H};
    nx_value bv = nx_value_int((int64_t)B);
    int rc = -1;
    nx_state st;
    int have_state = 0;
    uint8_t *ref = NULL;
    if (nx_macro_op_set_func_name(&op, "blockwise_mm", err) != 0 ||
        nx_macro_op_add_operand(&op, "hidden_states", NX_DT_BF16, 2, s_hs, err) != 0 ||
        nx_macro_op_add_operand(&op, "expert_affinities_masked", NX_DT_BF16, 2, s_aff, err) != 0 ||
        nx_macro_op_add_operand(&op, "gate_up_proj_weight", NX_DT_BF16, 4, s_gu, err) != 0 ||
        nx_macro_op_add_operand(&op, "down_proj_weight", NX_DT_BF16, 3, s_dn, err) != 0 ||
        nx_macro_op_add_operand(&op, "token_position_to_id", NX_DT_INT32, 1, s_tp, err) != 0 ||
        nx_macro_op_add_operand(&op, "block_to_expert", NX_DT_INT32, 2, s_be, err) != 0 ||
        nx_macro_op_add_result(&op, "output", NX_DT_BF16, 2, s_out, err) != 0 ||
        nx_attrs_set(&op.attrs, "block_size", &bv, err) != 0)
        goto out;
    nx_bwmm_params p = {T, H, I, E, r.NB, B, NX_DT_BF16, NX_DT_BF16, NX_BWMM_POST_SCALE};
    nx_bwmm_plan pl;
    if (nx_bwmm_plan_make(&p, &m->geo, &pl, err) != 0) goto out;

    double t0 = nx_bench_now_s();
    const nx_program *prog;
    nx_kernel_target target;
    if (nx_lowerer_lookup(L, op.func_name, &target, err) != 0 || nx_lower(L, &target, &op, &prog, NULL, err) != 0)
        goto out;
    double trace_s = nx_bench_now_s() - t0;
    if (nx_state_init(&st, &m->geo, prog->cores, prog->hbm_bytes, prog->sem_count, err) != 0) goto out;
    have_state = 1;
    uint8_t *in[NX_BWMM_OPERANDS];
    uint64_t bytes[NX_BWMM_OPERANDS];
    for (uint32_t i = 0; i < NX_BWMM_OPERANDS; i++) {
        const nx_tensor_decl *t = &prog->tensors[nx_program_find_tensor(prog, op.operands[i].name)];
        in[i] = st.hbm + t->offset;
        bytes[i] = nx_tensor_bytes(t);
    }
    const nx_tensor_decl *ot = &prog->tensors[nx_program_find_tensor(prog, "output")];
    fill_bf16(in[0], (T + 1) * H, 1.0, 1);
    for (uint64_t i = 0; i < (T + 1) * E; i++) nx_dtype_store(NX_DT_BF16, in[1] + 2 * i, r.aff[i]);
    fill_bf16(in[2], E * H * 2 * I, 1.0 / sqrt((double)H), 2);
    fill_bf16(in[3], E * I * H, 1.0 / sqrt((double)I), 3);
    memcpy(in[4], r.tpid, bytes[4]);
    memcpy(in[5], r.bte, bytes[5]);
    uint64_t sum_in = 0;
    for (uint32_t i = 0; i < NX_BWMM_OPERANDS; i++) sum_in ^= checksum(in[i], bytes[i]) * (i + 1);

    nx_sim_options so = {race, 0};
    nx_sim_result res;
    memset(&res, 0, sizeof res);
    t0 = nx_bench_now_s();
    double c0 = cpu_s();
    if (nx_sim_run(m, prog, &st, &so, &res, err) != 0) goto out;
    double sim_wall = nx_bench_now_s() - t0, sim_cpu = cpu_s() - c0;
    double rss_sim = peak_rss_mib();

    /* bounds */
    double mlp_macs = 3.0 * (double)H * (double)I;
    double pe_bound = nx_bench_pe_bound_ns(m, (double)r.NB * B * mlp_macs, NX_DT_BF16);
    double pe_routed = nx_bench_pe_bound_ns(m, (double)r.routed * mlp_macs, NX_DT_BF16);
    double dma_rate = nx_bench_core_dma_bytes_per_ns(m);
    uint64_t loads = 0;
    for (uint64_t n = 0; n < r.NB; n++) loads += pl.resident ? (n == 0 || r.bte[n] != r.bte[n - 1]) : pl.ns;
    double w_bytes = (double)loads * mlp_macs * 2.0, w_bound = w_bytes / dma_rate;
    double bound = pe_bound > w_bound ? pe_bound : w_bound;
    const nx_sim_engine_stats *pe = &res.engine[0][NX_ENG_PE];

    printf(
        "%s: T=%llu H=%llu I=%llu E=%llu top-%llu B=%llu bf16 -> %llu blocks (%llu positions, %llu routed)\n",
        c->name, (unsigned long long)T, (unsigned long long)H, (unsigned long long)I, (unsigned long long)E,
        (unsigned long long)c->topk, (unsigned long long)B, (unsigned long long)r.NB,
        (unsigned long long)(r.NB * B), (unsigned long long)r.routed);
    printf("  plan: items of %u tokens (%llu per block), gate/up groups of %u i-tiles (%u), %s weights: "
           "rings %u/%u "
           "gate/up and %u/%u down pieces, %u staging tiles, SBUF %llu of %llu bytes per partition\n",
           pl.bs, (unsigned long long)pl.ns, pl.g_tiles, pl.ngroups, pl.resident ? "resident" : "streamed",
           pl.rg, pl.pg, pl.rd, pl.pd, pl.nstage, (unsigned long long)pl.sbuf_used,
           (unsigned long long)m->geo.sbuf_partition_bytes);
    uint64_t n_insn = 0;
    for (uint32_t e2 = 0; e2 < NX_ENG_COUNT; e2++) n_insn += prog->stream[0][e2].count;
    printf(
        "  trace %.2f s (%llu instructions); model %.2f s wall (%.2f s CPU), %llu instructions simulated\n",
        trace_s, (unsigned long long)n_insn, sim_wall, sim_cpu, (unsigned long long)res.instructions);
    printf("  simulated %.1f us; PE busy %.1f us (%.0f%%)\n", res.total_ns * 1e-3, pe->busy_ns * 1e-3,
           100.0 * pe->busy_ns / res.total_ns);
    printf("  bounds: PE busy %.1f us (routed tokens only %.1f us), weight streaming %.1f us (%.1f MB at "
           "%.0f B/ns, "
           "%llu expert loads)\n",
           pe_bound * 1e-3, pe_routed * 1e-3, w_bound * 1e-3, w_bytes * 1e-6, dma_rate,
           (unsigned long long)loads);
    printf("  achieved: %.1f%% of the larger bound (%s); %.1f%% of the PE bound over routed tokens\n",
           100.0 * bound / res.total_ns, pe_bound >= w_bound ? "PE" : "weights",
           100.0 * pe_routed / res.total_ns);
    printf("  memory: program HBM %.1f MiB, peak RSS after the model %.1f MiB\n", prog->hbm_bytes / 1048576.0,
           rss_sim);
    if (summary) nx_profile_summary(stdout, m, prog, &res);
    if (race) {
        t0 = nx_bench_now_s();
        int verdict = nx_race_check(prog, res.log, res.log_count, err);
        printf("  race detector: %s (%.2f s)\n", verdict == 0 ? "race-free" : err->msg,
               nx_bench_now_s() - t0);
        if (verdict != 0) {
            nx_sim_result_free(&res);
            goto out;
        }
    }
    nx_sim_result_free(&res);

    if (with_ref) {
        uint64_t sum_after = 0;
        for (uint32_t i = 0; i < NX_BWMM_OPERANDS; i++) sum_after ^= checksum(in[i], bytes[i]) * (i + 1);
        if (sum_after != sum_in) {
            nx_fail(err, "the kernel changed its inputs");
            goto out;
        }
        ref = malloc(nx_tensor_bytes(ot));
        if (!ref) {
            nx_fail(err, "out of memory");
            goto out;
        }
        const void *ins[NX_BWMM_OPERANDS];
        for (uint32_t i = 0; i < NX_BWMM_OPERANDS; i++) ins[i] = in[i];
        t0 = nx_bench_now_s();
        c0 = cpu_s();
        if (nx_ref_blockwise_mm(&p, ins, ref, err) != 0) goto out;
        double ref_wall = nx_bench_now_s() - t0, ref_cpu = cpu_s() - c0;
        const nx_registry_entry *e = nx_registry_get(NULL, "blockwise_mm");
        nx_tolerance tol;
        if (nx_op_rules_tolerance(e->rules, &op, 0, &tol, err) != 0) goto out;
        double worst = 0, worst_rel = 0;
        uint64_t bad = 0;
        const uint8_t *got = st.hbm + ot->offset;
        for (uint64_t i = 0; i < (T + 1) * H; i++) {
            double g = nx_dtype_load(NX_DT_BF16, got + 2 * i), w = nx_dtype_load(NX_DT_BF16, ref + 2 * i);
            double d = fabs(g - w), lim = fmax(tol.abs, tol.rel * fabs(w));
            if (d > worst) worst = d;
            if (fabs(w) > 1e-3 && d / fabs(w) > worst_rel) worst_rel = d / fabs(w);
            if (!(d <= lim)) bad++;
        }
        printf("  reference: %.2f s wall (%.2f s CPU; OpenBLAS sgemm over the routed tokens); simulator / "
               "reference "
               "= %.2f wall, %.2f CPU\n",
               ref_wall, ref_cpu, sim_wall / ref_wall, sim_cpu / ref_cpu);
        printf("  values: max abs error %.3g, max rel error %.3g (|ref| > 1e-3), tolerance %s: %s\n", worst,
               worst_rel, tol.text, bad ? "FAILED" : "ok");
        if (bad) {
            nx_fail(err, "%llu elements outside the tolerance", (unsigned long long)bad);
            goto out;
        }
    }
    rc = 0;
out:
    free(ref);
    if (have_state) nx_state_free(&st);
    nx_macro_op_free(&op);
    free(r.tpid);
    free(r.bte);
    free(r.aff);
    return rc;
}

static void usage(FILE *f) {
    fputs(
        "Usage: nxsim-bench-moe [--case mixtral|dbrx|small]... [--machine NAME|FILE] [--no-ref] [--summary]\n"
        "                       [--race-check]\n"
        "Runs blockwise_mm on MoE prefill block sets (bf16, one core) on the SystemC model and\n"
        "prints simulated time beside the PE and weight-streaming bounds, and the simulator's\n"
        "wall time beside the OpenBLAS reference's. Default: mixtral and dbrx.\n",
        f);
}

int nx_bench_moe_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_CASE | NX_BENCH_OPT_MACHINE | NX_BENCH_OPT_NO_REF |
                                                 NX_BENCH_OPT_SUMMARY | NX_BENCH_OPT_RACE, usage, &a);
    if (st >= 0) return st;
    const char *machine = a.machine, *names[NX_BENCH_MAX_REPEAT];
    int n_names = a.n_cases, with_ref = !a.no_ref, summary = a.summary, race = a.race_check;
    for (int i = 0; i < n_names; i++) names[i] = a.cases[i];
    if (n_names == 0) {
        names[n_names++] = "mixtral";
        names[n_names++] = "dbrx";
    }
    nx_error err;
    nx_machine m;
    if (nx_bench_machine(argv[0], machine, &m) != 0) return 2;
    const char *threads = getenv("OPENBLAS_NUM_THREADS"), *core = getenv("OPENBLAS_CORETYPE");
    printf("nxsim-bench-moe on %s; OpenBLAS: OPENBLAS_NUM_THREADS=%s OPENBLAS_CORETYPE=%s\n", m.geo.name,
           threads ? threads : "(unset)", core ? core : "(unset)");
    int status = 0;
    for (int k = 0; k < n_names; k++) {
        const moe_case *c = NULL;
        for (size_t j = 0; j < sizeof CASES / sizeof CASES[0]; j++)
            if (strcmp(CASES[j].name, names[k]) == 0) c = &CASES[j];
        if (!c) {
            fprintf(stderr, "nxsim-bench-moe: no case '%s' (mixtral, dbrx, small)\n", names[k]);
            return 2;
        }
        nx_lowerer *L = nx_lowerer_new(&m.geo, NULL);
        if (!L) {
            fprintf(stderr, "nxsim-bench-moe: out of memory\n");
            return 1;
        }
        if (run_case(L, &m, c, with_ref, summary, race, &err) != 0) {
            printf("%s: FAILED: %s\n", c->name, err.msg);
            status = 1;
        }
        fflush(stdout);
        nx_lowerer_free(L);
    }
    return status;
}
