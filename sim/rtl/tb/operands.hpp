// Random fp32 / bf16 operands for the RTL tests: ordinary values plus the
// cases IEEE arithmetic gets wrong most easily (signed zeros, subnormals,
// Inf, NaN, overflow and underflow, ties, cancellation). Bit patterns only.
#ifndef NXSIM_RTL_OPERANDS_HPP
#define NXSIM_RTL_OPERANDS_HPP

#include <cstdint>

namespace nx_rtl_test {

// xorshift64*: deterministic, seeded per test, no global state.
class rng {
public:
    explicit rng(uint64_t seed) : s_(seed ? seed : 0x9e3779b97f4a7c15ull) {}
    uint64_t next() {
        s_ ^= s_ >> 12;
        s_ ^= s_ << 25;
        s_ ^= s_ >> 27;
        return s_ * 0x2545f4914f6cdd1dull;
    }
    uint32_t below(uint32_t n) { return (uint32_t)(next() % n); }
    bool chance(double p) { return (double)(next() >> 11) * 0x1p-53 < p; }

private:
    uint64_t s_;
};

inline uint32_t pack(uint32_t sign, uint32_t exp, uint32_t frac) {
    return (sign << 31) | ((exp & 0xffu) << 23) | (frac & 0x7fffffu);
}

// A fraction biased towards the edges: 0, 1, all ones, top bit, random.
inline uint32_t edge_fraction(rng &r) {
    switch (r.below(6)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return 0x7fffffu;
    case 3: return 0x400000u;
    case 4: return 0x7fffffu ^ (1u << r.below(23));
    default: return (uint32_t)r.next() & 0x7fffffu;
    }
}

// Any fp32 pattern, with every class well represented: for the adder and
// multiplier unit tests.
inline uint32_t wide_fp32(rng &r) {
    uint32_t sign = (uint32_t)r.next() & 1u;
    switch (r.below(10)) {
    case 0: return (uint32_t)r.next();                          // uniform bits
    case 1: return pack(sign, 0, r.chance(0.2) ? 0 : edge_fraction(r)); // 0, subnormal
    case 2: return pack(sign, 1 + r.below(24), edge_fraction(r)); // small normals
    case 3: return pack(sign, 231 + r.below(24), edge_fraction(r)); // near overflow
    case 4: return pack(sign, 255, r.chance(0.5) ? 0 : edge_fraction(r) | 1u); // Inf, NaN
    case 5: return pack(sign, 64 + r.below(40), edge_fraction(r)); // products underflow
    case 6: return pack(sign, 150 + r.below(40), edge_fraction(r)); // products overflow
    default: return pack(sign, 112 + r.below(32), edge_fraction(r)); // ordinary
    }
}

// A second operand related to a: close in magnitude with either sign (so
// sums cancel or tie), or a few binades away (alignment shifts near 24).
inline uint32_t partner_fp32(rng &r, uint32_t a) {
    switch (r.below(4)) {
    case 0: return a ^ 0x80000000u;                                  // a + (-a)
    case 1: return (a ^ (r.chance(0.5) ? 0x80000000u : 0)) + (uint32_t)(int32_t)(r.below(9) - 4);
    case 2: {
        uint32_t e = (a >> 23) & 0xffu, d = r.below(30);
        uint32_t eb = e > d ? e - d : 0;
        return pack((uint32_t)r.next() & 1u, eb, edge_fraction(r));
    }
    default: return wide_fp32(r);
    }
}

// A matmul input element: mostly ordinary values of moderate magnitude, and
// with probability p_special one of the hard cases (so that a K-long dot
// product sees about 2 * K * p_special of them).
inline uint32_t tile_fp32(rng &r, double p_special) {
    uint32_t sign = (uint32_t)r.next() & 1u;
    if (!r.chance(p_special))
        return pack(sign, 121 + r.below(12), (uint32_t)r.next());
    switch (r.below(7)) {
    case 0: return pack(sign, 0, 0);                                 // +-0
    case 1: return pack(sign, 0, (uint32_t)r.next() | 1u);           // subnormal
    case 2: return pack(sign, 255, 0);                               // +-Inf
    case 3: return pack(sign, 255, ((uint32_t)r.next() | 0x400000u)); // NaN
    case 4: return pack(sign, 1 + r.below(30), (uint32_t)r.next());  // tiny: underflow
    case 5: return pack(sign, 230 + r.below(25), (uint32_t)r.next()); // huge: overflow
    default: return pack(sign, 50 + r.below(150), (uint32_t)r.next()); // any scale
    }
}

// bf16 versions: the same value classes, rounded down to 16 significant
// bits (bf16 values are fp32 values with the low 16 bits zero). A NaN keeps
// a nonzero bf16 fraction.
inline uint32_t to_bf16_pattern(uint32_t f) {
    uint32_t b = f & 0xffff0000u;
    if ((f & 0x7f800000u) == 0x7f800000u && (f & 0x7fffffu) != 0 && (b & 0x7fffffu) == 0)
        b |= 0x00400000u;
    return b;
}

}  // namespace nx_rtl_test

#endif
