/* Deterministic pseudo-random tensor values (isa/tensor_random.h). */
#include "tensor_random.h"

#include "dtype.h"

/* splitmix64: a tiny, well-mixed, seedable generator (no global state). */
static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void nx_tensor_fill_random(const nx_tensor_decl *t, uint8_t *data, uint64_t seed, uint32_t index) {
    nx_dtype dt = (nx_dtype)t->dtype;
    size_t size = nx_dtype_size(dt);
    uint64_t n = nx_tensor_bytes(t) / size;
    uint64_t s = seed;
    uint64_t mix = (uint64_t)index + 1;
    s ^= splitmix64(&mix);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t r = splitmix64(&s);
        double v;
        if (nx_dtype_is_float(dt))
            v = -1.0 + 2.0 * ((double)(r >> 11) * 0x1.0p-53);
        else if (nx_dtype_is_signed_int(dt))
            v = (double)(int)(r % 17) - 8.0;
        else
            v = (double)(r % 17);
        nx_dtype_store(dt, data + i * size, v);
    }
}
