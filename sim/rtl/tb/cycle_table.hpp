// The cycle-fidelity table (docs/parts/rtl.md): the RTL's measured cycles for
// tile shapes and for whole GEMMs next to the SCALE-Sim v2 closed form.
// Shared by the rtl_cycles test (which pins the agreement) and rtl-bench
// (which prints it).
#ifndef NXSIM_RTL_CYCLE_TABLE_HPP
#define NXSIM_RTL_CYCLE_TABLE_HPP

#include <cstdint>
#include <cstdio>
#include <vector>

#include "array_driver.hpp"
#include "operands.hpp"

namespace nx_rtl_test {

// One nxsim tile: stationary [K, M], moving [K, N] (K <= R, M <= C).
struct tile_shape {
    unsigned K, M, N;
};

struct tile_cycles {
    tile_shape s;
    uint64_t closed;      // 2R + C + N - 2
    uint64_t rtl;         // load + multiply, first vector with the last stationary row
    uint64_t rtl_serial;  // load, then multiply (no overlap)
    uint64_t multiply;    // multiply alone: first vector .. last partial sum out
    uint64_t useful;      // .. column M-1's last partial sum out
    uint64_t psum;        // .. last PSUM write
};

inline std::vector<uint32_t> ordinary_tile(rng &r, size_t n) {
    std::vector<uint32_t> v(n);
    for (auto &x : v) x = tile_fp32(r, 0.0);
    return v;
}

template <class V>
tile_cycles measure_tile(array_driver<V> &d, tile_shape s, uint64_t seed) {
    rng r(seed);
    std::vector<uint32_t> st = ordinary_tile(r, (size_t)s.K * s.M), mv = ordinary_tile(r, (size_t)s.K * s.N);
    std::vector<uint32_t> out((size_t)s.M * s.N);
    tile_request q;
    q.st = st.data();
    q.mv = mv.data();
    q.K = s.K;
    q.M = s.M;
    q.N = s.N;
    tile_cycles c{};
    c.s = s;
    c.closed = closed_form_tile(d.rows(), d.cols(), s.N);
    tile_timing t = d.stream(q);
    c.rtl = t.array_cycles;
    c.useful = t.useful_cycles;
    c.psum = t.psum_cycles;
    q.overlap = false;
    c.rtl_serial = d.stream(q).array_cycles;
    q.load = false;
    c.multiply = d.stream(q).stream_cycles;
    return c;
}

// A SCALE-Sim GEMM, in its naming: A is M x K (streamed rows), B is K x N
// (stationary). On nxsim's array that is ceil(K/R) * ceil(N/C) tiles, each
// a stationary [min(R, .), min(C, .)] tile and a moving [., M] stream,
// folds back to back with no overlap (SCALE-Sim's assumption): a fold's
// load starts the edge after the previous fold's last partial sum leaves
// the array.
struct gemm_shape {
    unsigned M, K, N;
};

inline uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

inline uint64_t closed_form_gemm(uint64_t R, uint64_t C, gemm_shape g) {
    return ceil_div(g.K, R) * ceil_div(g.N, C) * (2 * R + C + g.M - 2);
}

// Measured RTL cycles, first load edge .. last partial sum out. The moving
// stream of a fold may exceed the PSUM depth: entries then wrap, which
// changes no timing (values are not checked here).
template <class V>
uint64_t measure_gemm(array_driver<V> &d, gemm_shape g, uint64_t seed) {
    rng r(seed);
    const unsigned R = d.rows(), C = d.cols();
    std::vector<uint32_t> st = ordinary_tile(r, (size_t)R * C), mv = ordinary_tile(r, (size_t)R * g.M);
    uint64_t first = d.edges(), last = first;
    for (unsigned k0 = 0; k0 < g.K; k0 += R) {
        for (unsigned n0 = 0; n0 < g.N; n0 += C) {
            tile_request q;
            q.st = st.data();
            q.mv = mv.data();
            q.K = g.K - k0 < R ? g.K - k0 : R;
            q.M = g.N - n0 < C ? g.N - n0 : C;
            q.N = g.M;
            q.acc = k0 > 0;
            uint64_t start = d.edges();
            tile_timing t = d.stream(q, false);
            last = start + t.array_cycles - 1;
        }
    }
    while (d.model().busy) d.tick();  // the last fold's PSUM write
    return last - first + 1;
}

inline const std::vector<tile_shape> &table_tiles() {
    static const std::vector<tile_shape> shapes = {
        {128, 128, 512}, {128, 128, 128}, {128, 128, 64}, {128, 128, 1}, {64, 128, 512},
        {128, 64, 512},  {1, 1, 1},       {100, 77, 33},  {17, 128, 200},
    };
    return shapes;
}

inline void print_tile_header(unsigned R, unsigned C) {
    std::printf("tile cycles on a %u x %u array (closed form 2R + C + N - 2 per tile)\n", R, C);
    std::printf("%5s %5s %5s | %8s %8s %8s | %10s %9s %8s %8s\n", "K", "M", "N", "closed", "rtl",
                "scalesim", "rtl-serial", "multiply", "useful", "psum");
}

inline void print_tile_row(const tile_cycles &c) {
    std::printf("%5u %5u %5u | %8llu %8llu %8llu | %10llu %9llu %8llu %8llu\n", c.s.K, c.s.M, c.s.N,
                (unsigned long long)c.closed, (unsigned long long)c.rtl,
                (unsigned long long)(c.closed - 1), (unsigned long long)c.rtl_serial,
                (unsigned long long)c.multiply, (unsigned long long)c.useful,
                (unsigned long long)c.psum);
}

}  // namespace nx_rtl_test

#endif
