/* splitmix64: a tiny, well-mixed, seedable pseudo-random generator with no
 * global state (the caller owns the 64-bit state), for deterministic test
 * and default-input values. Not for anything that needs unpredictability. */
#ifndef NXSIM_ISA_RNG_H
#define NXSIM_ISA_RNG_H

#include <stdint.h>

/* Advances *s and returns the next 64 random bits. */
static inline uint64_t nx_splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A double in [0, 1) from the next 53 bits. */
static inline double nx_splitmix64_unit(uint64_t *s) { return (double)(nx_splitmix64(s) >> 11) * 0x1p-53; }

#endif
