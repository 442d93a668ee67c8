/* Loading a program file: the one loader of .nxb containers and .nxs
 * assembly, used by the CLI (`nxsim exec`, `asm`, `disasm`) and libnxsim
 * (nx_program_open). It lives here, with the container and the assembler,
 * so neither front end depends on the other.
 *
 * Ownership: on success *out is the caller's (nx_program_free).
 * Errors: 0, or -1 with a one-line message naming the file in err (the
 * file read, the size limit NX_PROGRAM_FILE_MAX, the container's or the
 * assembler's message). */
#ifndef NXSIM_ISA_PROGRAM_LOAD_H
#define NXSIM_ISA_PROGRAM_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "program.h"

/* 1 if the bytes start with the .nxb magic "NXSB". */
int nx_program_is_nxb(const uint8_t *buf, size_t len);

/* Loads a program from a .nxb (recognised by its magic, not its name) or
 * .nxs text file. */
int nx_program_load(const char *path, nx_program *out, nx_error *err);

#endif
