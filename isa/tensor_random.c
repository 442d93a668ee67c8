/* Deterministic pseudo-random tensor values (isa/tensor_random.h). */
#include "tensor_random.h"

#include "dtype.h"
#include "rng.h"

void nx_tensor_fill_random(const nx_tensor_decl *t, uint8_t *data, uint64_t seed, uint32_t index) {
    nx_dtype dt = (nx_dtype)t->dtype;
    size_t size = nx_dtype_size(dt);
    uint64_t n = nx_tensor_bytes(t) / size;
    uint64_t s = seed;
    uint64_t mix = (uint64_t)index + 1;
    s ^= nx_splitmix64(&mix);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t r = nx_splitmix64(&s);
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
