/* The program round trips shared by the .nxs and .nxb harnesses. */
#ifndef NXSIM_TESTS_FUZZ_ROUNDTRIP_H
#define NXSIM_TESTS_FUZZ_ROUNDTRIP_H

#include <stddef.h>
#include <stdint.h>

#include "isa/program.h"

/* p's .nxb bytes (malloc'd); a program that does not encode is a finding. */
uint8_t *nx_fuzz_encode(const nx_program *p, size_t *len, const char *what);
/* disasm(p) -> asm -> encode must give exactly `bytes`; decode(bytes) ->
 * encode too. */
void nx_fuzz_check_roundtrip(const nx_program *p, const uint8_t *bytes, size_t len);
/* Validates p against its machine's preset (trn2 if it names another) and
 * runs it when small (fuzz.h). */
void nx_fuzz_validate_and_run(const nx_program *p);

#endif
