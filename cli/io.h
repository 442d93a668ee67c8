/* File and program I/O shared by the subcommands. Every function returns 0,
 * or -1 with a one-line message naming the file in err. */
#ifndef NXSIM_CLI_IO_H
#define NXSIM_CLI_IO_H

#include <stddef.h>
#include <stdint.h>

#include "isa/error.h"
#include "isa/program.h"
#include "sim/machine.h"

/* Reads a whole file into a malloc'd buffer (caller frees; NUL-terminated
 * one byte past len for text use). */
int cli_read_file(const char *path, uint8_t **buf, size_t *len, nx_error *err);

/* Writes buf to path atomically: a temporary file in the same directory,
 * then rename. On failure the temporary is removed and path is untouched. */
int cli_write_atomic(const char *path, const void *buf, size_t len, nx_error *err);

/* 1 if the bytes start with the .nxb magic "NXSB". */
int cli_is_nxb(const uint8_t *buf, size_t len);

/* Loads a program from a .nxb (recognised by its magic, not its name) or
 * .nxs text file. On success the caller frees with nx_program_free. */
int cli_load_program(const char *path, nx_program *out, nx_error *err);

/* Loads the machine to validate/run `p` against: `spec` (a preset name or a
 * JSON file, from --machine) if non-NULL, else the program's .machine, which
 * must then be a preset (a custom machine needs --machine FILE.json).
 * `prog_path` names the program in messages. */
int cli_load_machine(const char *spec, const nx_program *p, const char *prog_path, nx_machine *out,
                     nx_error *err);

#endif
