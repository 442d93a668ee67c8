/* nxsim-bench layer (also nxsim-bench-layer): the `decoder_layer` composite
 * (kernels/layer/layer.h, docs/parts/decoder-layer.md), bf16, through the
 * registry and the SystemC model (trn2 unless --machine) on both cores of
 * the VNC grid. Cases: the Llama-3-8B layer shape (H 4096, 32 q heads, 8 kv
 * heads, d 128, I 14336) decode B 1 and 8 at cache length 2048 (S_max
 * 2049), tp 1; the TP-8 shard of a 70B-like layer (H 8192, 8 q
 * heads, 1 kv head, d 128, I 3584) decode B 8 at cache length 8192, tp 1
 * (one kv head: tp 2 would split the heads, which it cannot); then the layer shrunk in H and I so that the whole bench
 * simulates within a minute on the bench host: H 2048, I 7168 (halved; the
 * heads, d, the GQA ratio and I / H = 3.5 kept), decode B 1 tp 1 and tp 2,
 * and a prefill S 256 onto a cache of 256 (S_max 512), tp 1 and tp 2; then
 * the Llama-3-8B prefill S 2048 from an empty cache, tp 1 (about
 * 30 s of simulation and 75 s of reference on the bench host). Per case:
 * the simulated per-layer time; its bound
 * (decode: the layer's weight bytes streamed once over both cores' DMA
 * engines, HBM-capped, bench/dma_bound.h; prefill: the layer's MACs,
 * attention included, on both cores' PE arrays); the sum of the
 * sub-kernels' own bounds (qkv, attention with its cache reads, o-proj,
 * mlp; decode: bytes, prefill: MACs); the wall time of
 * the run and of the reference; then the time by region (each sub-kernel's
 * span and share: sim/profile.h nx_profile_by_region). Figures only: times
 * never decide the exit status. --quick: the default op's layer (H 256, 4/2
 * heads, d 64, I 512), S 1 at length 100 and S 64 (the ctest smoke). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "dma_bound.h"
#include "leaf_benches.h"
#include "registry/macro_op.h"
#include "registry/run/run.h"
#include "sim/profile.h"

typedef struct layer_case {
    uint64_t B, S, H, nq, nkv, d, I, L, S_max;
    int tp;
} layer_case;

static void usage(FILE *f) {
    fputs("Usage: nxsim-bench-layer [--quick] [--machine NAME|FILE]\n"
          "Runs decoder_layer (bf16): the Llama-3-8B layer decode B 1 and 8 at cache length 2048, a TP-8 shard of\n"
          "a 70B-like layer (H 8192, 8 q / 1 kv heads, I 3584) decode B 8 at cache length 8192, and the layer\n"
          "shrunk to H 2048, I 7168 (32 q / 8 kv heads, d 128) decode B 1 and prefill S 256 with tp 1 and 2,\n"
          "against the weight-streaming (decode) and PE (prefill) bounds, on the SystemC model (default trn2,\n"
          "both cores), with the time by sub-kernel; then the Llama-3-8B prefill S 2048 (about 2 minutes).\n"
          "--quick: the default op's small layer (the ctest smoke run).\n",
          f);
}

static int add(nx_macro_op *op, const char *name, nx_dtype dt, uint32_t nd, uint64_t a, uint64_t b, uint64_t c,
               uint64_t d, nx_error *err) {
    const uint64_t s[4] = {a, b, c, d};
    return nx_macro_op_add_operand(op, name, dt, nd, s, err);
}

static int build(const layer_case *c, nx_macro_op *op, nx_error *err) {
    const nx_dtype t = NX_DT_BF16;
    const uint64_t N = (c->nq + 2 * c->nkv) * c->d;
    nx_macro_op_init(op);
    nx_value nq = nx_value_int((int64_t)c->nq), nkv = nx_value_int((int64_t)c->nkv), hd = nx_value_int((int64_t)c->d),
             tp = nx_value_int(c->tp);
    return nx_macro_op_set_func_name(op, "decoder_layer", err) != 0 || add(op, "x", t, 3, c->B, c->S, c->H, 0, err) != 0 ||
                   add(op, "gamma_attn", t, 1, c->H, 0, 0, 0, err) != 0 || add(op, "w_qkv", t, 2, c->H, N, 0, 0, err) != 0 ||
                   add(op, "w_o", t, 2, c->nq * c->d, c->H, 0, 0, err) != 0 ||
                   add(op, "gamma_mlp", t, 1, c->H, 0, 0, 0, err) != 0 || add(op, "w_gate", t, 2, c->H, c->I, 0, 0, err) != 0 ||
                   add(op, "w_up", t, 2, c->H, c->I, 0, 0, err) != 0 || add(op, "w_down", t, 2, c->I, c->H, 0, 0, err) != 0 ||
                   add(op, "cos", t, 3, c->B, c->S, c->d / 2, 0, err) != 0 ||
                   add(op, "sin", t, 3, c->B, c->S, c->d / 2, 0, err) != 0 ||
                   add(op, "k_cache", t, 4, c->B, c->nkv, c->S_max, c->d, err) != 0 ||
                   add(op, "v_cache", t, 4, c->B, c->nkv, c->S_max, c->d, err) != 0 ||
                   add(op, "lengths", NX_DT_INT32, 1, c->B, 0, 0, 0, err) != 0 ||
                   nx_attrs_set(&op->attrs, "n_q_heads", &nq, err) != 0 ||
                   nx_attrs_set(&op->attrs, "n_kv_heads", &nkv, err) != 0 ||
                   nx_attrs_set(&op->attrs, "head_dim", &hd, err) != 0 || nx_attrs_set(&op->attrs, "tp", &tp, err) != 0
               ? -1
               : 0;
}

static void inspect(const nx_run_result *res, void *ctx) {
    (void)ctx;
    nx_error err;
    if (nx_profile_by_region(stdout, res->prog, &res->trace.sim, &err) != 0) printf("  (regions: %s)\n", err.msg);
}

int nx_bench_layer_main(int argc, char **argv) {
    nx_bench_args a;
    int st = nx_bench_args_or_usage(argc, argv, NX_BENCH_OPT_QUICK | NX_BENCH_OPT_MACHINE, usage, &a);
    if (st >= 0) return st;
    nx_machine m;
    if ((st = nx_bench_machine(argv[0], a.machine ? a.machine : "trn2", &m)) != 0) return st;
    static const layer_case full[] = {
        {1, 1, 4096, 32, 8, 128, 14336, 2048, 2049, 1}, {8, 1, 4096, 32, 8, 128, 14336, 2048, 2049, 1},
        {8, 1, 8192, 8, 1, 128, 3584, 8192, 8193, 1},
        {1, 1, 2048, 32, 8, 128, 7168, 2048, 2049, 1},  {1, 1, 2048, 32, 8, 128, 7168, 2048, 2049, 2},
        {1, 256, 2048, 32, 8, 128, 7168, 256, 512, 1},  {1, 256, 2048, 32, 8, 128, 7168, 256, 512, 2},
        {1, 2048, 4096, 32, 8, 128, 14336, 0, 2048, 1},
    };
    static const layer_case quick[] = {{1, 1, 256, 4, 2, 64, 512, 100, 101, 1}, {1, 64, 256, 4, 2, 64, 512, 100, 164, 2}};
    const layer_case *cases = a.quick ? quick : full;
    const size_t n = a.quick ? sizeof quick / sizeof *quick : sizeof full / sizeof *full;
    const uint32_t cores = m.geo.cores ? m.geo.cores : 1;
    printf("%s: machine %s, %u cores: PE %ux%u at %.2f GHz each, DMA %.0f B/ns (both cores, HBM-capped)\n", argv[0],
           m.geo.name, cores, m.geo.pe_rows, m.geo.pe_cols, m.clock_ghz[NX_ENG_PE],
           nx_bench_dma_bytes_per_ns(&m, cores, m.geo.dma_engines));
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        const layer_case *c = &cases[i];
        const int decode = c->S <= 8;
        const double T = (double)(c->B * c->S), N = (double)((c->nq + 2 * c->nkv) * c->d), H = (double)c->H,
                     I = (double)c->I, qd = (double)(c->nq * c->d), kvd = (double)(c->nkv * c->d);
        const double w_qkv = H * N * 2, w_o = qd * H * 2, w_mlp = 3 * H * I * 2;
        /* the attention's bytes: the cache rows it reads (the caches are
         * updated in place: aliased results, no copy-through) */
        const double kv_read = (double)c->B * (double)(c->L + c->S) * kvd * 2 * 2;
        const double m_qkv = T * H * N, m_o = T * qd * H, m_mlp = 3 * T * H * I,
                     m_att = 2.0 * (double)c->B * (double)c->nq * (double)c->S * ((double)c->L + (double)(c->S + 1) / 2) *
                             (double)c->d;
        double bound, subs;
        if (decode) {
            bound = nx_bench_dma_bound_ns(&m, cores, w_qkv + w_o + w_mlp);
            subs = nx_bench_dma_bound_ns(&m, cores, w_qkv) + nx_bench_dma_bound_ns(&m, cores, kv_read) +
                   nx_bench_dma_bound_ns(&m, cores, w_o) + nx_bench_dma_bound_ns(&m, cores, w_mlp);
        } else {
            bound = nx_bench_pe_bound_ns(&m, m_qkv + m_o + m_mlp + m_att, NX_DT_BF16) / cores;
            subs = (nx_bench_pe_bound_ns(&m, m_qkv, NX_DT_BF16) + nx_bench_pe_bound_ns(&m, m_att, NX_DT_BF16) +
                    nx_bench_pe_bound_ns(&m, m_o, NX_DT_BF16) + nx_bench_pe_bound_ns(&m, m_mlp, NX_DT_BF16)) /
                   cores;
        }
        printf("\n== decoder_layer B=%llu S=%llu H=%llu %llu/%llu/%llu I=%llu L=%llu S_max=%llu tp=%d (%s)\n",
               (unsigned long long)c->B, (unsigned long long)c->S, (unsigned long long)c->H,
               (unsigned long long)c->nq, (unsigned long long)c->nkv, (unsigned long long)c->d,
               (unsigned long long)c->I, (unsigned long long)c->L, (unsigned long long)c->S_max, c->tp,
               decode ? "decode" : "prefill");
        nx_macro_op op;
        nx_error err;
        nx_bench_run r;
        int rc = build(c, &op, &err);
        if (rc == 0) {
            /* lengths: the rules' built-in values, every row at S_max - S = L */
            rc = nx_bench_run_op_inspect(&op, &m, NULL, inspect, NULL, &r, &err);
        }
        nx_macro_op_free(&op);
        if (rc != 0) {
            printf("  error: %s\n", err.msg);
            status = 1;
            continue;
        }
        printf("  simulated %.1f us; %s bound %.1f us (%.1f%% of it); the sub-kernels' bounds sum to %.1f us; "
               "sim wall %.2f s, reference %.2f s; %s\n",
               r.sim_ns / 1e3, decode ? "weight-streaming" : "PE", bound / 1e3, 100.0 * bound / r.sim_ns, subs / 1e3,
               r.sim_s, r.ref_s, r.ok ? "ok" : "WRONG");
        fflush(stdout);
        if (!r.ok) status = 1;
    }
    printf("\nbound: decode, the layer's weight bytes (w_qkv, w_o, w_gate, w_up, w_down) over both cores' DMA engines\n"
           "capped by HBM; prefill, its MACs (projections and attention) on both cores' PE arrays. The sub-kernels'\n"
           "bounds: the same per sub-kernel, the attention's with its cache reads (the caches updated in place).\n");
    return status;
}
