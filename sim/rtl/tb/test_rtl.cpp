// Unit tests of the RTL alone (Verilator --cc models, eval() driven here):
//
//   test_rtl fp           the fp32 adder and multiplier against C floats:
//                         hand-computed cases, a cross product of special
//                         values, 2 million random pairs (fp32 and bf16)
//   test_rtl array_small  4x4, 8x16 and 16x8 arrays: every partial-tile
//                         corner (K, M in {1, 2, edge-1, edge}), fp32 and
//                         bf16, accumulate or not, NaN/Inf/subnormal/-0
//                         inputs, back-to-back multiplies; RTL vs the C
//                         reference vs the functional model, and the cycle
//                         conventions on every tile
//   test_rtl array_128    the 128 x 128 array: a full 128x128x512 fp32 tile
//                         and partial bf16 tiles, same checks
//   test_rtl cycles       the cycle table (docs/parts/rtl.md) on 128 x 128,
//                         pinned against the closed form, plus multi-fold
//                         GEMMs on the small arrays and one on 128 x 128
//
// Exit status 0 only if every check passed (and at least one ran).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "Vnx_fp32_unit.h"
#include "Vnx_pe_128.h"
#include "Vnx_pe_16x8.h"
#include "Vnx_pe_4x4.h"
#include "Vnx_pe_8x16.h"
#include "array_driver.hpp"
#include "check.hpp"
#include "cycle_table.hpp"
#include "model_gemm.h"
#include "operands.hpp"
#include "ref_gemm.h"

using namespace nx_rtl_test;

// ---- fp -------------------------------------------------------------------

static const uint32_t k_specials[] = {
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x00000002, 0x00000003, 0x00400000,
    0x007fffff, 0x807fffff, 0x00800000, 0x80800000, 0x00800001, 0x01000000, 0x0c000000,
    0x33000000, 0x33800000, 0x34000000, 0x3effffff, 0x3f000000, 0x3f800000, 0xbf800000,
    0x3f800001, 0xbf800001, 0x3fffffff, 0x40000000, 0x4b7fffff, 0x4b800000, 0x73000000,
    0x7f000000, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
    0x7f800001, 0x7fbfffff, 0xffffffff,
};

struct fp_case {
    uint32_t a, b, expect;
    const char *what;
};

// Results worked out by hand from the IEEE 754 rules (independent of the C
// library): ties to even, subnormal results, overflow, signed zeros, NaN.
static const fp_case k_hand_add[] = {
    {0x3f800000, 0x33800000, 0x3f800000, "1 + 2^-24: tie, stays even 1"},
    {0x3f800001, 0x33800000, 0x3f800002, "(1 + 2^-23) + 2^-24: tie, rounds up to even"},
    {0x3f800000, 0x33800001, 0x3f800001, "1 + (2^-24 + tiny): above the tie"},
    {0x7f7fffff, 0x73000000, 0x7f800000, "max + half ulp: tie, rounds to even = overflow"},
    {0x7f7fffff, 0x72ffffff, 0x7f7fffff, "max + just under half ulp"},
    {0x00800000, 0x80000001, 0x007fffff, "min normal - min subnormal: subnormal result"},
    {0x00000001, 0x00000001, 0x00000002, "subnormal + subnormal"},
    {0x3f800000, 0xbf800000, 0x00000000, "1 + (-1) = +0"},
    {0x80000000, 0x80000000, 0x80000000, "(-0) + (-0) = -0"},
    {0x80000000, 0x00000000, 0x00000000, "(-0) + (+0) = +0"},
    {0xbf800000, 0x00000000, 0xbf800000, "-1 + 0"},
    {0x7f800000, 0xff800000, 0x7fc00000, "Inf - Inf = canonical NaN"},
    {0xffc00001, 0x3f800000, 0x7fc00000, "NaN payload and sign dropped"},
    {0x4b800000, 0x3f800000, 0x4b800000, "2^24 + 1: tie, stays even"},
    {0x4b800001, 0x3f800000, 0x4b800002, "(2^24 + 2) + 1: tie, rounds up to even"},
};

static const fp_case k_hand_mul[] = {
    {0x00800000, 0x3f000000, 0x00400000, "min normal * 0.5 = subnormal, exact"},
    {0x00000001, 0x3f000000, 0x00000000, "min subnormal * 0.5: tie, to even 0"},
    {0x00000003, 0x3f000000, 0x00000002, "3 * 2^-149 * 0.5: tie, to even 2"},
    {0x00000001, 0x3f400000, 0x00000001, "min subnormal * 0.75: rounds up"},
    {0x7f7fffff, 0x40000000, 0x7f800000, "max * 2 = Inf"},
    {0x80000000, 0x3f800000, 0x80000000, "-0 * 1 = -0"},
    {0x80000000, 0xbf800000, 0x00000000, "-0 * -1 = +0"},
    {0x7f800000, 0x00000000, 0x7fc00000, "Inf * 0 = canonical NaN"},
    {0x3f800001, 0x3f800001, 0x3f800002, "(1+u)^2 = 1 + 2u + u^2: rounds to 1 + 2u"},
    {0x3fc00000, 0x3fc00000, 0x40100000, "1.5 * 1.5 = 2.25"},
    {0x17800000, 0x17800000, 0x00000000, "2^-80 squared underflows to +0"},
    {0x20000000, 0x1f000000, 0x00200000, "2^-63 * 2^-65 = 2^-128, subnormal"},
};

static int test_fp() {
    checker ck("rtl_fp");
    VerilatedContext ctx;
    Vnx_fp32_unit u(&ctx);
    auto run = [&](uint32_t a, uint32_t b) {
        u.a = a;
        u.b = b;
        u.eval();
    };
    for (const fp_case &c : k_hand_add) {
        run(c.a, c.b);
        ck.expect(u.sum == c.expect, "%s: %08x + %08x = %08x, expected %08x", c.what, c.a, c.b, u.sum, c.expect);
        run(c.b, c.a);
        ck.expect(u.sum == c.expect, "%s (swapped): got %08x", c.what, u.sum);
    }
    for (const fp_case &c : k_hand_mul) {
        run(c.a, c.b);
        ck.expect(u.prod == c.expect, "%s: %08x * %08x = %08x, expected %08x", c.what, c.a, c.b, u.prod, c.expect);
    }
    auto against_c = [&](uint32_t a, uint32_t b) {
        run(a, b);
        uint32_t s = nx_ref_fadd(a, b), p = nx_ref_fmul(a, b);
        ck.expect(rtl_matches(u.sum, s), "%08x + %08x: rtl %08x, C %08x", a, b, u.sum, s);
        ck.expect(rtl_matches(u.prod, p), "%08x * %08x: rtl %08x, C %08x", a, b, u.prod, p);
    };
    for (uint32_t a : k_specials)
        for (uint32_t b : k_specials) {
            against_c(a, b);
            against_c(a ^ 0x80000000u, b);
        }
    rng r(0x5eed);
    for (long i = 0; i < 2000000; i++) {
        uint32_t a = wide_fp32(r);
        uint32_t b = (i & 1) ? partner_fp32(r, a) : wide_fp32(r);
        if (i % 3 == 0) {
            a = to_bf16_pattern(a);
            b = to_bf16_pattern(b);
        }
        against_c(a, b);
    }
    return ck.finish();
}

// ---- arrays ---------------------------------------------------------------

struct tile_case {
    unsigned K, M, N;
    bool bf16, acc, overlap;
    double p_special;  // chance that an input element is a special value
    uint64_t seed;
};

static std::vector<uint32_t> random_operand(rng &r, size_t n, double p, bool bf16) {
    std::vector<uint32_t> v(n);
    for (auto &x : v) x = bf16 ? to_bf16_pattern(tile_fp32(r, p)) : tile_fp32(r, p);
    return v;
}

// Compares RTL vs reference (canonical NaN) and model vs reference (C
// floats) for every element; reports the first mismatch of each kind.
static void compare_outputs(checker &ck, const char *what, const std::vector<uint32_t> &rtl,
                            const std::vector<uint32_t> &model, const std::vector<uint32_t> &ref,
                            unsigned N) {
    long bad_rtl = 0, bad_model = 0;
    for (size_t i = 0; i < ref.size(); i++) {
        if (!rtl_matches(rtl[i], ref[i]) && bad_rtl++ == 0)
            ck.expect(false, "%s: out[%zu][%zu] rtl %08x, reference %08x", what, i / N, i % N, rtl[i], ref[i]);
        if (!model.empty() && !c_matches(model[i], ref[i]) && bad_model++ == 0)
            ck.expect(false, "%s: out[%zu][%zu] model %08x, reference %08x", what, i / N, i % N, model[i], ref[i]);
    }
    ck.expect(bad_rtl == 0, "%s: %ld of %zu RTL results differ", what, bad_rtl, ref.size());
    ck.expect(bad_model == 0, "%s: %ld of %zu model results differ", what, bad_model, ref.size());
}

template <class V>
static void run_tile_case(checker &ck, array_driver<V> &d, nx_model_gemm *model, const tile_case &c) {
    char what[160];
    std::snprintf(what, sizeof what, "%ux%u array K=%u M=%u N=%u %s%s%s p=%.3f", d.rows(), d.cols(), c.K, c.M,
                  c.N, c.bf16 ? "bf16" : "fp32", c.acc ? " acc" : "", c.overlap ? "" : " serial", c.p_special);
    rng r(c.seed);
    std::vector<uint32_t> st = random_operand(r, (size_t)c.K * c.M, c.p_special, c.bf16);
    std::vector<uint32_t> mv = random_operand(r, (size_t)c.K * c.N, c.p_special, c.bf16);
    std::vector<uint32_t> prior((size_t)c.M * c.N, 0);
    if (c.acc) prior = random_operand(r, prior.size(), c.p_special, false);
    std::vector<uint32_t> rtl = prior, ref = prior, mod = prior;

    tile_request q;
    q.st = st.data();
    q.mv = mv.data();
    q.K = c.K;
    q.M = c.M;
    q.N = c.N;
    q.acc = c.acc;
    q.bf16 = c.bf16;
    q.overlap = c.overlap;
    tile_timing t = d.run(q, rtl.data());
    nx_ref_gemm(st.data(), mv.data(), c.K, c.M, c.N, c.acc, ref.data());
    nx_error err;
    std::memset(&err, 0, sizeof err);
    if (!ck.expect(nx_model_gemm_run(model, st.data(), mv.data(), c.K, c.M, c.N, c.acc, c.bf16, mod.data(),
                                     &err) == 0,
                   "%s: functional model failed: %s", what, err.msg))
        mod.clear();
    compare_outputs(ck, what, rtl, mod, ref, c.N);

    // cycle conventions (docs/parts/rtl.md, "Timing")
    const uint64_t R = d.rows(), C = d.cols(), closed = closed_form_tile(R, C, c.N);
    ck.expect(t.array_cycles == closed + (c.overlap ? 0 : 1), "%s: %llu cycles to the last partial sum, closed form %llu",
              what, (unsigned long long)t.array_cycles, (unsigned long long)closed);
    ck.expect(t.useful_cycles == t.array_cycles - (C - c.M), "%s: column M-1 done at %llu", what,
              (unsigned long long)t.useful_cycles);
    ck.expect(t.psum_cycles == t.array_cycles + 1 && t.busy_cycles == t.psum_cycles,
              "%s: PSUM write at %llu, busy falls at %llu", what, (unsigned long long)t.psum_cycles,
              (unsigned long long)t.busy_cycles);
    ck.expect(t.stream_cycles == c.N + R + C - 1, "%s: multiply took %llu cycles, expected N + R + C - 1 = %llu",
              what, (unsigned long long)t.stream_cycles, (unsigned long long)(c.N + R + C - 1));
    ck.expect(t.writes_ok, "%s: some column did not write exactly N results", what);
}

// Three multiplies on one stationary tile, streamed with no gap: A (N1,
// overwrite), B (N2 < N1, accumulate onto A), C (N3 < N2, overwrite). Their
// first/acc tags are in flight together; the PSUM must end as
//   [0, N3): C    [N3, N2): A + B    [N2, N1): A
template <class V>
static void run_back_to_back(checker &ck, array_driver<V> &d, uint64_t seed) {
    const unsigned K = d.rows() - 1, M = d.cols(), N1 = 9, N2 = 6, N3 = 2;
    rng r(seed);
    std::vector<uint32_t> st = random_operand(r, (size_t)K * M, 0.02, false);
    std::vector<uint32_t> a = random_operand(r, (size_t)K * N1, 0.02, false);
    std::vector<uint32_t> b = random_operand(r, (size_t)K * N2, 0.02, false);
    std::vector<uint32_t> c = random_operand(r, (size_t)K * N3, 0.02, false);
    tile_request q[3];
    const std::vector<uint32_t> *mv[3] = {&a, &b, &c};
    const unsigned n[3] = {N1, N2, N3};
    const bool acc[3] = {false, true, false};
    for (int i = 0; i < 3; i++) {
        q[i].st = st.data();
        q[i].mv = mv[i]->data();
        q[i].K = K;
        q[i].M = M;
        q[i].N = n[i];
        q[i].acc = acc[i];
        q[i].load = i == 0;
    }
    tile_timing t = d.stream_group(q, 3);
    std::vector<uint32_t> rtl((size_t)M * N1);
    d.psum_read(rtl.data(), M, N1);

    std::vector<uint32_t> ra((size_t)M * N1), rb((size_t)M * N2), rc((size_t)M * N3);
    nx_ref_gemm(st.data(), a.data(), K, M, N1, 0, ra.data());
    for (unsigned m = 0; m < M; m++)
        for (unsigned j = 0; j < N2; j++) rb[(size_t)m * N2 + j] = ra[(size_t)m * N1 + j];
    nx_ref_gemm(st.data(), b.data(), K, M, N2, 1, rb.data());
    nx_ref_gemm(st.data(), c.data(), K, M, N3, 0, rc.data());
    std::vector<uint32_t> ref((size_t)M * N1);
    for (unsigned m = 0; m < M; m++)
        for (unsigned j = 0; j < N1; j++)
            ref[(size_t)m * N1 + j] = j < N3 ? rc[(size_t)m * N3 + j] : j < N2 ? rb[(size_t)m * N2 + j]
                                                                                : ra[(size_t)m * N1 + j];
    char what[96];
    std::snprintf(what, sizeof what, "%ux%u array back-to-back multiplies", d.rows(), d.cols());
    compare_outputs(ck, what, rtl, {}, ref, N1);
    const uint64_t R = d.rows(), C = d.cols();
    ck.expect(t.array_cycles == closed_form_tile(R, C, N1 + N2 + N3), "%s: %llu cycles", what,
              (unsigned long long)t.array_cycles);
}

// The standard partial-tile sweep for an R x C array.
template <class V>
static void sweep_array(checker &ck, array_driver<V> &d, nx_model_gemm *model, uint64_t seed) {
    const unsigned R = d.rows(), C = d.cols(), NM = d.nmax();
    const unsigned ks[] = {1, 2, R - 1, R}, ms[] = {1, 2, C - 1, C}, ns[] = {1, 5, 17, NM};
    unsigned i = 0;
    for (unsigned K : ks)
        for (unsigned M : ms) {
            double sparse = 0.3 / K;  // about 0.6 special inputs per dot product
            tile_case cases[] = {
                {K, M, ns[i % 4], false, true, true, sparse, seed + i},
                {K, M, ns[(i + 1) % 4], true, false, false, sparse, seed + i + 1000},
                {K, M, ns[(i + 2) % 4], false, false, true, 0.5, seed + i + 2000},
                {K, M, ns[(i + 3) % 4], true, true, true, 0.02, seed + i + 3000},
            };
            for (const tile_case &c : cases) run_tile_case(ck, d, model, c);
            i++;
        }
    run_back_to_back(ck, d, seed + 77);
}

static nx_model_gemm *new_model(checker &ck) {
    nx_error err;
    std::memset(&err, 0, sizeof err);
    nx_model_gemm *m = nx_model_gemm_new("trn2", &err);
    ck.expect(m != nullptr, "functional model: %s", err.msg);
    return m;
}

static int test_array_small() {
    checker ck("rtl_array_small");
    nx_model_gemm *model = new_model(ck);
    if (model == nullptr) return ck.finish();
    {
        array_driver<Vnx_pe_4x4> d(4, 4, 64);
        sweep_array(ck, d, model, 100);
    }
    {
        array_driver<Vnx_pe_8x16> d(8, 16, 64);
        sweep_array(ck, d, model, 200);
    }
    {
        array_driver<Vnx_pe_16x8> d(16, 8, 32);
        sweep_array(ck, d, model, 300);
    }
    nx_model_gemm_free(model);
    return ck.finish();
}

static int test_array_128() {
    checker ck("rtl_array_128");
    nx_model_gemm *model = new_model(ck);
    if (model == nullptr) return ck.finish();
    std::unique_ptr<array_driver<Vnx_pe_128>> d(new array_driver<Vnx_pe_128>(128, 128, 512));
    const tile_case cases[] = {
        {128, 128, 512, false, true, true, 0.3 / 128, 1},  // a full tile, accumulating
        {100, 77, 33, true, false, false, 0.01, 2},         // partial bf16 tile, serial load
        {128, 128, 64, true, true, true, 0.0, 3},           // ordinary bf16 values
        {3, 128, 20, false, false, true, 0.3, 4},           // dense specials, short K
    };
    for (const tile_case &c : cases) run_tile_case(ck, *d, model, c);
    nx_model_gemm_free(model);
    return ck.finish();
}

// ---- cycles ---------------------------------------------------------------

template <class V>
static void check_gemm(checker &ck, array_driver<V> &d, gemm_shape g, uint64_t seed) {
    uint64_t rtl = measure_gemm(d, g, seed), closed = closed_form_gemm(d.rows(), d.cols(), g);
    std::printf("gemm M=%u K=%u N=%u on %ux%u: rtl %llu, closed form %llu\n", g.M, g.K, g.N, d.rows(), d.cols(),
                (unsigned long long)rtl, (unsigned long long)closed);
    ck.expect(rtl == closed, "gemm M=%u K=%u N=%u on %ux%u: rtl %llu cycles, closed form %llu", g.M, g.K, g.N,
              d.rows(), d.cols(), (unsigned long long)rtl, (unsigned long long)closed);
}

static int test_cycles() {
    checker ck("rtl_cycles");
    // SCALE-Sim v2's published 128 x 128 numbers are the closed form minus one
    ck.expect(closed_form_gemm(128, 128, {128, 128, 512}) - 1 == 2039, "2,039");
    ck.expect(closed_form_gemm(128, 128, {512, 512, 512}) - 1 == 14303, "14,303");
    ck.expect(closed_form_gemm(128, 128, {1024, 4096, 1024}) - 1 == 359935, "359,935");
    {
        array_driver<Vnx_pe_4x4> d(4, 4, 64);
        check_gemm(ck, d, {5, 9, 6}, 11);
        check_gemm(ck, d, {64, 4, 4}, 12);
    }
    {
        array_driver<Vnx_pe_8x16> d(8, 16, 64);
        check_gemm(ck, d, {20, 17, 33}, 13);
    }
    std::unique_ptr<array_driver<Vnx_pe_128>> d(new array_driver<Vnx_pe_128>(128, 128, 512));
    print_tile_header(128, 128);
    const uint64_t R = 128, C = 128;
    uint64_t seed = 20;
    for (const tile_shape &s : table_tiles()) {
        tile_cycles c = measure_tile(*d, s, seed++);
        print_tile_row(c);
        ck.expect(c.rtl == c.closed, "K=%u M=%u N=%u: rtl %llu, closed form %llu", s.K, s.M, s.N,
                  (unsigned long long)c.rtl, (unsigned long long)c.closed);
        ck.expect(c.rtl_serial == c.closed + 1, "serial %llu", (unsigned long long)c.rtl_serial);
        ck.expect(c.multiply == s.N + R + C - 1, "multiply %llu", (unsigned long long)c.multiply);
        ck.expect(c.useful == c.rtl - (C - s.M), "useful %llu", (unsigned long long)c.useful);
        ck.expect(c.psum == c.rtl + 1, "psum %llu", (unsigned long long)c.psum);
    }
    check_gemm(ck, *d, {128, 128, 512}, 30);
    return ck.finish();
}

int main(int argc, char **argv) {
    const char *part = argc > 1 ? argv[1] : "";
    if (std::strcmp(part, "fp") == 0) return test_fp();
    if (std::strcmp(part, "array_small") == 0) return test_array_small();
    if (std::strcmp(part, "array_128") == 0) return test_array_128();
    if (std::strcmp(part, "cycles") == 0) return test_cycles();
    std::fprintf(stderr, "usage: %s fp|array_small|array_128|cycles\n", argv[0]);
    return 2;
}
