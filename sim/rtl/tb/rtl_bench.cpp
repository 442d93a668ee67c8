// rtl-bench: the RTL PE array's cycle-fidelity table and its speed against
// the C models (docs/parts/rtl.md).
//
//   rtl-bench [--full]
//
// 1. Tile cycles on the 128 x 128 array for a table of shapes: the RTL's
//    measured cycles next to the closed form 2R + C + N - 2 (conventions in
//    docs/parts/rtl.md).
// 2. SCALE-Sim v2's three published GEMMs: published cycles, closed form,
//    and the RTL running every fold (the 1024 x 4096 x 1024 one, 359,936
//    cycles, only with --full: it takes minutes).
// 3. Wall time of one 128 x 128 x 512 fp32 tile: the RTL (load, multiply,
//    PSUM read-out) vs a plain C float loop (tb/ref_gemm.c) vs nxsim's
//    functional model (load_stationary + multiply_moving through
//    nx_insn_execute), and the ratios.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "Vnx_pe_128.h"
#include "array_driver.hpp"
#include "check.hpp"
#include "cycle_table.hpp"
#include "model_gemm.h"
#include "operands.hpp"
#include "ref_gemm.h"

using namespace nx_rtl_test;
using bench_clock = std::chrono::steady_clock;

static double seconds_since(bench_clock::time_point t0) {
    return std::chrono::duration<double>(bench_clock::now() - t0).count();
}

// Best of repeated runs of f, repeated until at least min_total seconds.
template <class F> static double best_time(F f, double min_total) {
    double best = 1e30, total = 0;
    int runs = 0;
    while (total < min_total || runs < 3) {
        auto t0 = bench_clock::now();
        f();
        double s = seconds_since(t0);
        best = std::min(best, s);
        total += s;
        runs++;
    }
    return best;
}

int main(int argc, char **argv) {
    bool full = argc > 1 && std::strcmp(argv[1], "--full") == 0;
    if (argc > 1 && !full) {
        std::fprintf(stderr, "usage: %s [--full]\n", argv[0]);
        return 2;
    }
    const unsigned R = 128, C = 128;
    std::unique_ptr<array_driver<Vnx_pe_128>> d(new array_driver<Vnx_pe_128>(R, C, 512));

    // 1. tile table
    print_tile_header(R, C);
    bool agree = true;
    uint64_t seed = 1;
    for (const tile_shape &s : table_tiles()) {
        tile_cycles c = measure_tile(*d, s, seed++);
        print_tile_row(c);
        agree = agree && c.rtl == c.closed;
    }
    std::printf("columns: closed = closed form; rtl = measured, load + multiply with the first moving\n"
                "vector in the last load cycle (first load edge .. last partial sum out of the array);\n"
                "scalesim = closed - 1 (SCALE-Sim's published convention); rtl-serial = load, then\n"
                "multiply; multiply = multiply alone (N + R + C - 1); useful = until column M-1's last\n"
                "result; psum = until the last PSUM write.\n");
    std::printf("rtl == closed form on every shape: %s\n\n", agree ? "yes" : "NO");

    // 2. SCALE-Sim GEMMs
    struct published {
        gemm_shape g;
        uint64_t cycles;
        bool slow;
    };
    const published pubs[] = {
        {{128, 128, 512}, 2039, false}, {{512, 512, 512}, 14303, false}, {{1024, 4096, 1024}, 359935, true}};
    std::printf("SCALE-Sim v2 GEMMs on %u x %u (M x K times K x N, SCALE-Sim's naming)\n", R, C);
    std::printf("%6s %6s %6s | %10s %10s %10s %9s\n", "M", "K", "N", "published", "closed", "rtl", "rtl wall");
    for (const published &p : pubs) {
        uint64_t closed = closed_form_gemm(R, C, p.g);
        if (p.slow && !full) {
            std::printf("%6u %6u %6u | %10llu %10llu %10s %9s\n", p.g.M, p.g.K, p.g.N, (unsigned long long)p.cycles,
                        (unsigned long long)closed, "(--full)", "");
            continue;
        }
        auto t0 = bench_clock::now();
        uint64_t rtl = measure_gemm(*d, p.g, seed++);
        double wall = seconds_since(t0);
        std::printf("%6u %6u %6u | %10llu %10llu %10llu %8.1fs\n", p.g.M, p.g.K, p.g.N, (unsigned long long)p.cycles,
                    (unsigned long long)closed, (unsigned long long)rtl, wall);
    }
    std::printf("\n");

    // 3. wall time on one 128 x 128 x 512 fp32 tile
    const unsigned K = 128, M = 128, N = 512;
    rng r(99);
    std::vector<uint32_t> st = ordinary_tile(r, (size_t)K * M), mv = ordinary_tile(r, (size_t)K * N);
    std::vector<uint32_t> out_rtl((size_t)M * N), out_ref((size_t)M * N), out_model((size_t)M * N);
    tile_request q;
    q.st = st.data();
    q.mv = mv.data();
    q.K = K;
    q.M = M;
    q.N = N;
    double t_rtl = best_time([&] { d->run(q, out_rtl.data()); }, 2.0);
    double t_ref = best_time([&] { nx_ref_gemm(st.data(), mv.data(), K, M, N, 0, out_ref.data()); }, 0.5);
    nx_error err;
    std::memset(&err, 0, sizeof err);
    nx_model_gemm *model = nx_model_gemm_new("trn2", &err);
    if (model == nullptr) {
        std::fprintf(stderr, "rtl-bench: functional model: %s\n", err.msg);
        return 1;
    }
    int model_rc = 0;
    double t_model = best_time(
        [&] { model_rc |= nx_model_gemm_run(model, st.data(), mv.data(), K, M, N, 0, 0, out_model.data(), &err); },
        0.5);
    nx_model_gemm_free(model);
    if (model_rc != 0) {
        std::fprintf(stderr, "rtl-bench: functional model: %s\n", err.msg);
        return 1;
    }
    long diff_ref = 0, diff_model = 0;
    for (size_t i = 0; i < out_ref.size(); i++) {
        diff_ref += !rtl_matches(out_rtl[i], out_ref[i]);
        diff_model += !c_matches(out_model[i], out_ref[i]);
    }
    std::printf("one %ux%ux%u fp32 tile (K x M x N), best of repeated runs\n", K, M, N);
    std::printf("  RTL (Verilator --cc, load + multiply + PSUM read) %10.6f s\n", t_rtl);
    std::printf("  C float reference loop (tb/ref_gemm.c)            %10.6f s   RTL / C loop = %.0fx\n", t_ref,
                t_rtl / t_ref);
    std::printf("  functional model (multiply_moving via nx_insn_execute) %.6f s   RTL / model = %.0fx\n",
                t_model, t_rtl / t_model);
    std::printf("  results differing from the C loop: RTL %ld, model %ld (of %zu)\n", diff_ref, diff_model,
                out_ref.size());
    return agree && diff_ref == 0 && diff_model == 0 ? 0 : 1;
}
