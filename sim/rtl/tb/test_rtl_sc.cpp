// Test of nx_rtl_pe (the --sc verilated 128 x 128 array behind rtl_pe.hpp)
// inside a SystemC simulation:
//
//   test_rtl_sc FILE.vcd
//
// One SC_THREAD loads stationary tiles and multiplies through nx_rtl_pe and
// checks: results against the C reference (tb/ref_gemm.c, canonical NaN),
// including accumulate, partial tiles, specials and a second load; the
// cycles reported and the simulated time spent (load rows - 1, multiply
// N + rows + cols, so load + multiply = the closed form + 1: the PSUM write);
// the errors for bad calls; and that FILE.vcd is a VCD with value changes.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <systemc>

#include "check.hpp"
#include "operands.hpp"
#include "ref_gemm.h"
#include "sim/rtl/rtl_pe.hpp"

using namespace nx_rtl_test;

namespace {

const double k_period_ns = 1.0;

std::vector<float> floats_of(const std::vector<uint32_t> &bits) {
    std::vector<float> f(bits.size());
    std::memcpy(f.data(), bits.data(), bits.size() * sizeof(float));
    return f;
}

std::vector<uint32_t> bits_of(const std::vector<float> &f) {
    std::vector<uint32_t> b(f.size());
    std::memcpy(b.data(), f.data(), f.size() * sizeof(float));
    return b;
}

struct tester : sc_core::sc_module {
    SC_HAS_PROCESS(tester);
    tester(sc_core::sc_module_name name, checker &ck)
        : sc_core::sc_module(name), ck(ck), pe("rtl_pe", sc_core::sc_time(k_period_ns, sc_core::SC_NS)) {
        SC_THREAD(run);
    }

    // One load + multiply on random data against the reference.
    void tile(unsigned K, unsigned M, unsigned N, bool acc, bool bf16, double p, uint64_t seed) {
        char what[96];
        std::snprintf(what, sizeof what, "K=%u M=%u N=%u%s%s", K, M, N, acc ? " acc" : "", bf16 ? " bf16" : "");
        rng r(seed);
        std::vector<uint32_t> st((size_t)K * M), mv((size_t)K * N), prior((size_t)M * N, 0);
        for (auto &x : st) x = bf16 ? to_bf16_pattern(tile_fp32(r, p)) : tile_fp32(r, p);
        for (auto &x : mv) x = bf16 ? to_bf16_pattern(tile_fp32(r, p)) : tile_fp32(r, p);
        if (acc)
            for (auto &x : prior) x = tile_fp32(r, p);
        std::vector<uint32_t> ref = prior;
        nx_ref_gemm(st.data(), mv.data(), K, M, N, acc, ref.data());

        std::vector<float> w = floats_of(st), m = floats_of(mv), out = floats_of(prior);
        nx_error err;
        std::memset(&err, 0, sizeof err);
        uint64_t load_cycles = 0, mul_cycles = 0;
        sc_core::sc_time t0 = sc_core::sc_time_stamp();
        ck.expect(pe.load_stationary(w.data(), K, M, &load_cycles, &err) == 0, "%s: load: %s", what, err.msg);
        sc_core::sc_time t1 = sc_core::sc_time_stamp();
        ck.expect(pe.multiply(m.data(), K, N, out.data(), acc, &mul_cycles, &err) == 0, "%s: multiply: %s", what,
                  err.msg);
        sc_core::sc_time t2 = sc_core::sc_time_stamp();
        std::vector<uint32_t> got = bits_of(out);
        long bad = 0;
        for (size_t i = 0; i < ref.size(); i++)
            if (!rtl_matches(got[i], ref[i]) && bad++ == 0)
                ck.expect(false, "%s: out[%zu][%zu] rtl %08x, reference %08x", what, i / N, i % N, got[i], ref[i]);
        ck.expect(bad == 0, "%s: %ld of %zu results differ", what, bad, ref.size());

        const uint64_t R = nx_rtl_pe::rows, C = nx_rtl_pe::cols;
        ck.expect(load_cycles == R - 1, "%s: load took %llu cycles", what, (unsigned long long)load_cycles);
        ck.expect(mul_cycles == N + R + C, "%s: multiply took %llu cycles, expected %llu", what,
                  (unsigned long long)mul_cycles, (unsigned long long)(N + R + C));
        ck.expect(load_cycles + mul_cycles == (2 * R + C + N - 2) + 1, "%s: load + multiply != closed form + 1",
                  what);
        ck.expect(t1 - t0 == sc_core::sc_time(k_period_ns * (double)load_cycles, sc_core::SC_NS),
                  "%s: load advanced time by %s", what, (t1 - t0).to_string().c_str());
        ck.expect(t2 - t1 == sc_core::sc_time(k_period_ns * (double)mul_cycles, sc_core::SC_NS),
                  "%s: multiply advanced time by %s", what, (t2 - t1).to_string().c_str());
    }

    void errors() {
        nx_error err;
        std::vector<float> buf(128 * 600, 1.0f);
        std::memset(&err, 0, sizeof err);
        ck.expect(pe.load_stationary(buf.data(), 0, 4, nullptr, &err) == -1 &&
                      std::strstr(err.msg, "K = 0") != nullptr,
                  "K = 0: '%s'", err.msg);
        ck.expect(pe.load_stationary(buf.data(), 4, 129, nullptr, &err) == -1 &&
                      std::strstr(err.msg, "M = 129") != nullptr,
                  "M = 129: '%s'", err.msg);
        uint64_t cycles = 0;
        ck.expect(pe.load_stationary(buf.data(), 4, 4, &cycles, &err) == 0 && cycles == nx_rtl_pe::rows - 1,
                  "load: %s (%llu cycles)", err.msg, (unsigned long long)cycles);
        // a second load first clocks in the row the first left pending
        ck.expect(pe.load_stationary(buf.data(), 4, 4, &cycles, &err) == 0 && cycles == nx_rtl_pe::rows,
                  "second load: %s (%llu cycles)", err.msg, (unsigned long long)cycles);
        ck.expect(pe.multiply(buf.data(), 5, 8, buf.data(), false, nullptr, &err) == -1 &&
                      std::strstr(err.msg, "K = 5") != nullptr,
                  "K mismatch: '%s'", err.msg);
        ck.expect(pe.multiply(buf.data(), 4, 513, buf.data(), false, nullptr, &err) == -1 &&
                      std::strstr(err.msg, "N = 513") != nullptr,
                  "N = 513: '%s'", err.msg);
        std::vector<float> out(4 * 8, -1.0f);
        ck.expect(pe.multiply(buf.data(), 4, 8, out.data(), false, &cycles, &err) == 0, "multiply: %s", err.msg);
        ck.expect(out[0] == 4.0f && out[31] == 4.0f, "ones: %g %g, expected 4", out[0], out[31]);
    }

    void run() {
        errors();
        tile(5, 7, 9, false, false, 0.05, 1);      // small partial tile
        tile(5, 7, 9, true, false, 0.05, 2);       // accumulate
        tile(128, 128, 64, true, true, 0.002, 3);  // full bf16 tile
        tile(100, 77, 33, false, false, 0.3, 4);   // dense specials
        pe.flush_vcd();
        done = true;
    }

    checker &ck;
    nx_rtl_pe pe;
    bool done = false;
};

// A VCD header, at least one timestamp and value changes after it.
void check_vcd(checker &ck, const char *path) {
    std::FILE *f = std::fopen(path, "r");
    if (!ck.expect(f != nullptr, "VCD %s was not written", path)) return;
    std::string text;
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && text.size() < (64u << 20)) text.append(buf, n);
    std::fclose(f);
    size_t defs = text.find("$enddefinitions");
    ck.expect(defs != std::string::npos, "VCD %s: no $enddefinitions", path);
    ck.expect(text.find("$var") != std::string::npos && text.find("busy") != std::string::npos,
              "VCD %s: no traced signals (busy)", path);
    ck.expect(defs != std::string::npos && text.find("\n#", defs) != std::string::npos,
              "VCD %s: no timestamps", path);
    std::printf("VCD %s: %zu bytes\n", path, text.size());
}

}  // namespace

// Default visibility: the project compiles with hidden visibility (CMakeLists.txt)
// and libsystemc.so's main() must find it.
__attribute__((visibility("default"))) int sc_main(int argc, char **argv) {
    // the --sc model is verilated with 1 fs precision, the SystemC model's resolution
    sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
    checker ck("rtl_sc");
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s FILE.vcd\n", argv[0]);
        return 2;
    }
    try {
        tester t("tester", ck);
        nx_error err;
        std::memset(&err, 0, sizeof err);
        ck.expect(t.pe.trace_vcd("/nonexistent-dir/x.vcd", &err) == -1 && std::strstr(err.msg, "cannot open"),
                  "unwritable VCD path: '%s'", err.msg);
        ck.expect(t.pe.trace_vcd(argv[1], &err) == 0, "VCD: %s", err.msg);
        sc_core::sc_start();
        ck.expect(t.done, "the test thread did not finish");
    } catch (const std::exception &e) {
        ck.expect(false, "SystemC: %s", e.what());
    }
    check_vcd(ck, argv[1]);
    return ck.finish();
}
