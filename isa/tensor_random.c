/* Deterministic pseudo-random tensor values (isa/tensor_random.h). */
#include "tensor_random.h"

#include "dtype.h"
#include "rng.h"

/* Values are made a chunk at a time and stored by the run converter (the
 * same bytes as one nx_dtype_store each, vectorised): for a large operand of
 * `nxsim run` the fill was a sixth of the run's host time. */
enum { FILL_CHUNK = 1024 };

void nx_tensor_fill_random(const nx_tensor_decl *t, uint8_t *data, uint64_t seed, uint32_t index) {
    nx_dtype dt = (nx_dtype)t->dtype;
    size_t size = nx_dtype_size(dt);
    uint64_t n = nx_tensor_bytes(t) / size;
    uint64_t s = seed;
    uint64_t mix = (uint64_t)index + 1;
    s ^= nx_splitmix64(&mix);
    const int is_float = nx_dtype_is_float(dt), is_signed = nx_dtype_is_signed_int(dt);
    double v[FILL_CHUNK];
    for (uint64_t i0 = 0; i0 < n; i0 += FILL_CHUNK) {
        uint64_t len = n - i0 < FILL_CHUNK ? n - i0 : FILL_CHUNK;
        for (uint64_t i = 0; i < len; i++) {
            uint64_t r = nx_splitmix64(&s);
            if (is_float)
                v[i] = -1.0 + 2.0 * ((double)(r >> 11) * 0x1.0p-53);
            else if (is_signed)
                v[i] = (double)(int)(r % 17) - 8.0;
            else
                v[i] = (double)(r % 17);
        }
        nx_dtype_store_run(dt, data + i0 * size, (int64_t)size, len, v);
    }
}
