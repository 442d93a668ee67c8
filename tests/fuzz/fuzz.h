/* The fuzz harnesses of tests/fuzz/ (one per parser, fuzz_*.c): each
 * defines LLVMFuzzerTestOneInput, the libFuzzer entry point, and is built
 * twice: with clang's libFuzzer (-fsanitize=fuzzer) when clang is there, and
 * with replay.c's main, which runs the inputs of the files and directories
 * on its command line once each (the seed corpora, as a ctest).
 *
 * A finding is an abort with a line on stderr saying what broke: a crash or
 * sanitizer report, an oracle that does not hold (a round trip that is not
 * the identity), or an error message that is empty or not one printable
 * line (every rejected input must get one). */
#ifndef NXSIM_TESTS_FUZZ_FUZZ_H
#define NXSIM_TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "isa/geometry.h"
#include "isa/program.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reports a finding and aborts. */
void nx_fuzz_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;

/* The message of a rejected input: non-empty, one line, no control byte
 * (no newline, ESC, ... : what reaches a terminal). `what` names the step. */
void nx_fuzz_check_message(const char *what, const char *msg);

/* data as a NUL-terminated string (malloc'd), or NULL if it holds a NUL
 * byte (text the command line or an op file cannot carry). */
char *nx_fuzz_text(const uint8_t *data, size_t size);

/* The geometry of a preset (loaded once). */
const nx_geometry *nx_fuzz_geometry(const char *preset);

/* A bound on the work of running p: partitions x elements over every memory
 * operand of every instruction (saturating). */
uint64_t nx_fuzz_work(const nx_program *p);

/* Runs a validated program on the functional executor when it is small
 * (instructions, HBM and work bounded), checking a failure's message. */
void nx_fuzz_exec_small(const nx_program *p, const nx_geometry *geo);

#endif
