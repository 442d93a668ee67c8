// Result comparison and failure counting for the RTL tests.
#ifndef NXSIM_RTL_CHECK_HPP
#define NXSIM_RTL_CHECK_HPP

#include <cstdarg>
#include <cstdint>
#include <cstdio>

namespace nx_rtl_test {

inline bool is_nan_bits(uint32_t x) { return (x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu) != 0; }

// The RTL's contract: bit-exact on every non-NaN result; every NaN result is
// the canonical quiet NaN 0x7fc00000 (x86's payloads and signs vary).
inline bool rtl_matches(uint32_t rtl, uint32_t ref) {
    return is_nan_bits(ref) ? rtl == 0x7fc00000u : rtl == ref;
}

// Two C-float computations (functional model vs reference): bit-exact, or
// both NaN.
inline bool c_matches(uint32_t a, uint32_t b) { return is_nan_bits(a) ? is_nan_bits(b) : a == b; }

// Counts checks and failures; prints the first few failures.
class checker {
public:
    explicit checker(const char *name) : name_(name) {}
    bool expect(bool ok, const char *fmt, ...) __attribute__((format(printf, 3, 4))) {
        checks_++;
        if (ok) return true;
        if (fails_++ < 20) {
            va_list ap;
            va_start(ap, fmt);
            std::fprintf(stderr, "FAIL %s: ", name_);
            std::vfprintf(stderr, fmt, ap);
            std::fputc('\n', stderr);
            va_end(ap);
        }
        return false;
    }
    long checks() const { return checks_; }
    long fails() const { return fails_; }
    int finish() const {
        std::printf("%s: %ld checks, %ld failures\n", name_, checks_, fails_);
        return fails_ == 0 && checks_ > 0 ? 0 : 1;
    }

private:
    const char *name_;
    long checks_ = 0, fails_ = 0;
};

}  // namespace nx_rtl_test

#endif
