/* nxsim-bench attention-decode (also nxsim-bench-attention-decode): the
 * attention_decode composite (docs/parts/attention-decode.md) on the decode
 * shapes of the production roster, through the registry and the SystemC
 * model (trn2 unless --machine): B = 8, 32 q heads, 8 kv heads, D = 128,
 * bf16, every row at cache length L = 1024 and 8192, s = 1 and 4,
 * contiguous (S_max = L + 64) and paged (blocks of 64 in a shuffled table).
 * Prints the simulated time beside two DMA bounds over both cores' DMA
 * rate (bench/dma_bound.h): the KV-streaming bound (the K and V bytes of
 * the L cached positions: what reading the cache costs) and the op's bound
 * (every byte the op must move: those reads, q, k_new and v_new read and
 * written into the caches, which are updated in place, and out);
 * the wall time of the model's run and of the reference on the same
 * operands; and the check (`ok` / `WRONG`). --quick: L = 256, B = 2 (the
 * ctest smoke). Figures only: times never decide the exit status. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dma_bound.h"
#include "isa/rng.h"
#include "leaf_benches.h"
#include "registry/check.h"
#include "registry/prepare.h"
#include "registry/rules.h"
#include "registry/run/run.h"
#include "sim/machine.h"
#include "wall_clock.h"

typedef struct dec_case {
    uint64_t B, L, s;
    int paged;
} dec_case;

enum { HQ = 32, HKV = 8, D = 128, N = 64 };

static uint64_t nelems(const nx_op_tensor *t) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < t->ndims; d++) n *= t->shape[d];
    return n;
}

static int run_case(const dec_case *c, const nx_machine *m, double *sim_ns, double *sim_s, double *ref_s, int *ok,
                    double *kv_bytes, double *op_bytes, nx_error *err) {
    const uint64_t S_max = c->L + 64, MB = S_max / N, NB = c->B * MB;
    nx_macro_op given;
    nx_macro_op_init(&given);
    const uint64_t q[4] = {c->B, HQ, c->s, D}, kc[4] = {c->B, HKV, S_max, D}, pc[4] = {NB, HKV, N, D},
                   kn[4] = {c->B, HKV, c->s, D}, len[1] = {c->B}, bt[2] = {c->B, MB};
    int rc = -1;
    nx_prepared p;
    nx_prepared_init(&p);
    nx_run_result res;
    memset(&res, 0, sizeof res);
    nx_lowerer *L = NULL;
    uint8_t *in[8] = {0};
    void *outs[3] = {0};
    if (nx_macro_op_set_func_name(&given, "attention_decode", err) != 0 ||
        nx_macro_op_add_operand(&given, "q", NX_DT_BF16, 4, q, err) != 0 ||
        nx_macro_op_add_operand(&given, "k_cache", NX_DT_BF16, 4, c->paged ? pc : kc, err) != 0 ||
        nx_macro_op_add_operand(&given, "v_cache", NX_DT_BF16, 4, c->paged ? pc : kc, err) != 0 ||
        nx_macro_op_add_operand(&given, "k_new", NX_DT_BF16, 4, kn, err) != 0 ||
        nx_macro_op_add_operand(&given, "v_new", NX_DT_BF16, 4, kn, err) != 0 ||
        nx_macro_op_add_operand(&given, "lengths", NX_DT_INT32, 1, len, err) != 0 ||
        (c->paged && nx_macro_op_add_operand(&given, "block_table", NX_DT_INT32, 2, bt, err) != 0))
        goto out;
    if (c->paged) {
        nx_value v = nx_value_int(N);
        if (nx_attrs_set(&given.attrs, "block_size", &v, err) != 0) goto out;
    }
    if (!(L = nx_lowerer_new(&m->geo, NULL))) {
        nx_fail(err, "out of memory");
        goto out;
    }
    if (nx_op_prepare(L, &given, NULL, &p, err) != 0) goto out;
    const nx_macro_op *op = &p.op;
    uint64_t st = 12345;
    for (uint32_t i = 0; i < op->n_operands; i++) {
        const uint64_t n = nelems(&op->operands[i]);
        const size_t es = nx_dtype_size(op->operands[i].dtype);
        if (!(in[i] = malloc(n * es))) goto oom;
        for (uint64_t e = 0; e < n; e++) {
            double v = nx_splitmix64_unit(&st) * 2 - 1;
            if (i == 5) v = (double)c->L;
            if (i == 6) v = (double)e; /* then shuffled */
            nx_dtype_store(op->operands[i].dtype, in[i] + e * es, v);
        }
        if (i == 6)
            for (uint64_t e = n; e-- > 1;) {
                uint64_t j = nx_splitmix64(&st) % (e + 1);
                int32_t *t = (int32_t *)in[i], x = t[e];
                t[e] = t[j], t[j] = x;
            }
    }
    nx_run_options opt = {.backend = NX_RUN_MODEL, .seed = 1};
    double t0 = nx_bench_now_s();
    if (nx_run_op(L, m, &p, (const void *const *)in, &opt, &res, err) != 0) goto out;
    *sim_s = nx_bench_now_s() - t0;
    *sim_ns = res.trace.sim.total_ns;
    for (uint32_t j = 0; j < 3; j++)
        if (!(outs[j] = calloc(1, nelems(&op->results[j]) * nx_dtype_size(op->results[j].dtype)))) goto oom;
    t0 = nx_bench_now_s();
    if (p.target.rules->reference(op, (const void *const *)in, outs, err) != 0) goto out;
    *ref_s = nx_bench_now_s() - t0;
    *ok = 1;
    for (uint32_t j = 0; j < 3; j++) {
        nx_tolerance tol;
        nx_check_result cr;
        if (nx_op_rules_tolerance(p.target.rules, op, j, &tol, err) != 0) goto out;
        nx_check_compare(op->results[j].dtype, res.results[j], outs[j], nelems(&op->results[j]), &tol, &cr);
        if (cr.bad) *ok = 0;
    }
    const double es = 2, kv = 2.0 * c->B * HKV * c->L * D * es;
    /* the caches are updated in place (aliased results): the new entries
     * are written once more (k_new, v_new read, then stored into them) */
    double moved = kv;
    moved += (double)(nelems(&op->operands[0]) + 4 * nelems(&op->operands[3]) + nelems(&op->results[0])) * es;
    *kv_bytes = kv, *op_bytes = moved;
    rc = 0;
    goto out;
oom:
    nx_fail(err, "out of memory");
out:
    for (int i = 0; i < 8; i++) free(in[i]);
    for (int j = 0; j < 3; j++) free(outs[j]);
    nx_run_result_free(&res);
    nx_lowerer_free(L);
    nx_prepared_free(&p);
    nx_macro_op_free(&given);
    return rc;
}

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-attention-decode [--quick] [--machine NAME|FILE]\n"
          "Runs attention_decode (B 8, 32 q heads, 8 kv heads, D 128, bf16; cache lengths 1024 and 8192;\n"
          "s 1 and 4; contiguous and paged) on the SystemC model (default trn2) against the KV-streaming\n"
          "and the op's DMA bounds and the reference's wall time. --quick: small shapes (the ctest smoke).\n",
          f);
}

int nx_bench_attention_decode_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_QUICK | NX_BENCH_OPT_MACHINE, usage, &a);
    if (st >= 0) return st;
    nx_machine m;
    if ((st = nx_bench_machine(argv[0], a.machine ? a.machine : "trn2", &m)) != 0) return st;
    dec_case cases[8];
    uint32_t n = 0;
    const uint64_t Ls[2] = {1024, 8192}, ss[2] = {1, 4};
    for (int l = 0; l < (a.quick ? 1 : 2); l++)
        for (int s = 0; s < 2; s++)
            for (int pg = 0; pg < 2; pg++) cases[n++] = (dec_case){a.quick ? 2 : 8, a.quick ? 256 : Ls[l], ss[s], pg};
    const double rate = nx_bench_dma_bytes_per_ns(&m, 2, m.geo.dma_engines);
    printf("%s: machine %s, two cores: DMA %.0f B/ns (bench/dma_bound.h)\n", argv[0], m.geo.name, rate);
    printf("%-34s %10s %10s %8s %10s %8s %8s %8s %8s %s\n", "case", "sim_us", "kv_us", "of_kv", "op_us", "of_op",
           "sim_s", "ref_s", "sim/ref", "result");
    int status = 0;
    for (uint32_t i = 0; i < n; i++) {
        char label[64];
        snprintf(label, sizeof label, "B%llu L%llu s%llu %s", (unsigned long long)cases[i].B,
                 (unsigned long long)cases[i].L, (unsigned long long)cases[i].s, cases[i].paged ? "paged/64" : "contiguous");
        double sim_ns = 0, sim_s = 0, ref_s = 0, kv = 0, opb = 0;
        int ok = 0;
        nx_error err;
        if (run_case(&cases[i], &m, &sim_ns, &sim_s, &ref_s, &ok, &kv, &opb, &err) != 0) {
            printf("%-34s error: %s\n", label, err.msg);
            status = 1;
            continue;
        }
        printf("%-34s %10.1f %10.1f %7.1f%% %10.1f %7.1f%% %8.3f %8.3f %8.2f %s\n", label, sim_ns / 1e3, kv / rate / 1e3,
               100.0 * kv / rate / sim_ns, opb / rate / 1e3, 100.0 * opb / rate / sim_ns, sim_s, ref_s,
               ref_s > 0 ? sim_s / ref_s : 0.0, ok ? "ok" : "WRONG");
        fflush(stdout);
        if (!ok) status = 1;
    }
    printf("kv: the K and V bytes of the L cached positions / both cores' DMA rate (the KV-streaming bound);\n"
           "op: every byte the op must move (those, q, k_new and v_new read and written into the caches,\n"
           "updated in place, and out) / the same rate; of_*: the bound's share of the simulated time (100%% = at the limit).\n");
    return status;
}
