/* Fuzzes the .nxb decoder (isa/encode.h). Oracles: a rejected file gets a
 * one-line message; an accepted one re-encodes to the same bytes (decode ->
 * encode is the identity), its disassembly assembles back to them, and it
 * validates or gets a one-line message, and runs on the functional executor
 * when small. */
#include "fuzz.h"
#include "isa/encode.h"
#include "roundtrip.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nx_program p;
    nx_error err;
    if (nx_program_decode(data, size, &p, &err) != 0) {
        nx_fuzz_check_message("decode", err.msg);
        return 0;
    }
    size_t len;
    uint8_t *bytes = nx_fuzz_encode(&p, &len, "a decoded program");
    if (len != size || memcmp(bytes, data, size) != 0) nx_fuzz_fail("decode -> encode is not the identity");
    nx_fuzz_check_roundtrip(&p, bytes, len);
    nx_fuzz_validate_and_run(&p);
    free(bytes);
    nx_program_free(&p);
    return 0;
}
