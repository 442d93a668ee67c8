/* Fuzzes the machine description reader (sim/machine.h). Oracles: a
 * rejected text gets a one-line message; an accepted one gives the same
 * machine when read again, a geometry the validator and the state accept
 * (a tiny program validates and runs against it), and positive clocks. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "isa/asm.h"
#include "isa/exec.h"
#include "isa/state.h"
#include "sim/machine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = nx_fuzz_text(data, size);
    if (!text) return 0;
    nx_machine m, again;
    nx_error err;
    if (nx_machine_parse("fuzz.json", text, &m, &err) != 0) {
        nx_fuzz_check_message("parse", err.msg);
        free(text);
        return 0;
    }
    if (nx_machine_parse("fuzz.json", text, &again, &err) != 0 || memcmp(&m, &again, sizeof m) != 0)
        nx_fuzz_fail("reading the same machine twice differs");
    for (int e = 0; e < NX_ENG_COUNT; e++)
        if (!(m.clock_ghz[e] > 0.0)) nx_fuzz_fail("accepted a clock of %g GHz", m.clock_ghz[e]);
    /* one small tile copy on the machine's geometry */
    static const char prog[] = ".tensor x input fp32 [1,4]\n.engine sp\n"
                               "    dma_copy dst=sbuf:fp32[0:1]@0{1:4} src=hbm:fp32[1/4]@x{1:4} queue=0\n";
    nx_program p;
    if (nx_assemble("tiny.nxs", prog, sizeof prog - 1, &p, &err) != 0) nx_fuzz_fail("%s", err.msg);
    if (nx_program_validate(&p, &m.geo, &err) != 0) {
        nx_fuzz_check_message("validate", err.msg);
    } else if (m.geo.partitions <= 128 && m.geo.sbuf_partition_bytes <= (1u << 20) &&
               m.geo.psum_partition_bytes <= (1u << 20) && m.geo.pe_rows <= 512 && m.geo.pe_cols <= 512) {
        nx_state st;
        if (nx_state_init(&st, &m.geo, p.cores, p.hbm_bytes, p.sem_count, &err) != 0)
            nx_fuzz_check_message("state", err.msg);
        else {
            if (nx_exec_program(&p, &st, &err) != 0) nx_fuzz_check_message("exec", err.msg);
            nx_state_free(&st);
        }
    }
    nx_program_free(&p);
    free(text);
    return 0;
}
