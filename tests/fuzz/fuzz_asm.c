/* Fuzzes the .nxs assembler (isa/asm.h). Oracles: every rejected text gets a
 * one-line message; an accepted one encodes, and asm -> encode -> decode ->
 * disasm -> asm -> encode gives the same bytes; it validates or gets a
 * one-line message, and runs on the functional executor when small. */
#include <stdlib.h>

#include "fuzz.h"
#include "isa/asm.h"
#include "roundtrip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nx_program p;
    nx_error err;
    if (nx_assemble("fuzz.nxs", (const char *)data, size, &p, &err) != 0) {
        nx_fuzz_check_message("assemble", err.msg);
        return 0;
    }
    size_t len;
    uint8_t *bytes = nx_fuzz_encode(&p, &len, "an assembled program");
    nx_fuzz_check_roundtrip(&p, bytes, len);
    nx_fuzz_validate_and_run(&p);
    free(bytes);
    nx_program_free(&p);
    return 0;
}
