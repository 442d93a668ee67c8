/* Program round trips for the harnesses (tests/fuzz/roundtrip.h). */
#define _POSIX_C_SOURCE 200809L /* open_memstream */

#include "roundtrip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "isa/asm.h"
#include "isa/encode.h"

uint8_t *nx_fuzz_encode(const nx_program *p, size_t *len, const char *what) {
    uint8_t *buf;
    nx_error err;
    if (nx_program_encode(p, &buf, len, &err) != 0) nx_fuzz_fail("%s does not encode: %s", what, err.msg);
    return buf;
}

void nx_fuzz_check_roundtrip(const nx_program *p, const uint8_t *bytes, size_t len) {
    nx_error err;
    /* decode -> encode */
    nx_program q;
    if (nx_program_decode(bytes, len, &q, &err) != 0) nx_fuzz_fail("the encoding does not decode: %s", err.msg);
    size_t qlen;
    uint8_t *qb = nx_fuzz_encode(&q, &qlen, "the decoded program");
    if (qlen != len || memcmp(qb, bytes, len) != 0) nx_fuzz_fail("decode -> encode is not the identity");
    free(qb);
    nx_program_free(&q);
    /* disasm -> asm -> encode */
    char *text = NULL;
    size_t tlen = 0;
    FILE *mem = open_memstream(&text, &tlen);
    if (!mem) nx_fuzz_fail("out of memory");
    if (nx_disassemble(p, mem, &err) != 0) nx_fuzz_fail("disassemble: %s", err.msg);
    fclose(mem);
    nx_program r;
    if (nx_assemble("disasm.nxs", text, tlen, &r, &err) != 0)
        nx_fuzz_fail("the disassembly does not assemble: %s", err.msg);
    size_t rlen;
    uint8_t *rb = nx_fuzz_encode(&r, &rlen, "the reassembled program");
    if (rlen != len || memcmp(rb, bytes, len) != 0) nx_fuzz_fail("disasm -> asm -> encode is not the identity");
    free(rb);
    free(text);
    nx_program_free(&r);
}

void nx_fuzz_validate_and_run(const nx_program *p) {
    const nx_geometry *geo = nx_fuzz_geometry(strcmp(p->machine, "trn1") == 0 ? "trn1" : "trn2");
    nx_error err;
    if (nx_program_validate(p, geo, &err) != 0) {
        nx_fuzz_check_message("validate", err.msg);
        return;
    }
    nx_fuzz_exec_small(p, geo);
}
