/* The machine a program runs on, shared by the subcommands (programs load
 * through isa/program_load.h, which this header brings in). Every function
 * returns 0, or -1 with a one-line message naming the file in err. */
#ifndef NXSIM_CLI_IO_H
#define NXSIM_CLI_IO_H

#include <stddef.h>
#include <stdint.h>

#include "isa/error.h"
#include "isa/fileio.h"
#include "isa/program.h"
#include "isa/program_load.h"
#include "sim/machine.h"

/* 1 if `spec` (a --machine argument) is a preset name rather than a file. */
int cli_is_machine_preset(const char *spec);

/* Loads the machine to validate/run `p` against: `spec` (a preset name or a
 * JSON file, from --machine) if non-NULL, else the program's .machine, which
 * must then be a preset (a custom machine needs --machine FILE.json).
 * `prog_path` names the program in messages. */
int cli_load_machine(const char *spec, const nx_program *p, const char *prog_path, nx_machine *out,
                     nx_error *err);

#endif
