/* Fuzzes the .npy reader (isa/npy.h). Oracles: a rejected file gets a
 * one-line message; an accepted one serialises, and parse -> write -> parse
 * gives the same dtype, shape and bytes, and writing that again the same
 * file (the writer's form is a fixed point). */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "isa/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nx_npy a;
    nx_error err;
    if (nx_npy_parse("fuzz.npy", data, size, &a, &err) != 0) {
        nx_fuzz_check_message("parse", err.msg);
        return 0;
    }
    uint8_t *w1, *w2;
    size_t n1, n2;
    if (nx_npy_serialize(&a, &w1, &n1, &err) != 0) nx_fuzz_fail("an accepted array does not serialise: %s", err.msg);
    nx_npy b;
    if (nx_npy_parse("written.npy", w1, n1, &b, &err) != 0) nx_fuzz_fail("the written array does not parse: %s", err.msg);
    if (a.dtype != b.dtype || a.ndims != b.ndims || memcmp(a.shape, b.shape, sizeof a.shape) != 0 ||
        a.nbytes != b.nbytes || (a.nbytes && memcmp(a.data, b.data, (size_t)a.nbytes) != 0))
        nx_fuzz_fail("parse -> write -> parse changed the array");
    if (nx_npy_serialize(&b, &w2, &n2, &err) != 0) nx_fuzz_fail("serialise again: %s", err.msg);
    if (n1 != n2 || memcmp(w1, w2, n1) != 0) nx_fuzz_fail("write -> parse -> write is not the identity");
    free(w1);
    free(w2);
    nx_npy_free(&a);
    nx_npy_free(&b);
    return 0;
}
