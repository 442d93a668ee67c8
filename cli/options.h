/* Option values shared by the subcommands, parsed one way everywhere. */
#ifndef NXSIM_CLI_OPTIONS_H
#define NXSIM_CLI_OPTIONS_H

#include <stdint.h>

/* --seed N: a non-negative integer, decimal ("010" is ten, never octal) or
 * hexadecimal with 0x/0X ("0x10" is sixteen), fitting in 64 bits. 0, or -1
 * for anything else (the caller reports the usage error). */
int cli_parse_seed(const char *s, uint64_t *out);

/* --pe model|rtl: 0 for model, 1 for rtl; -1 for anything else. */
int cli_parse_pe(const char *s, int *pe_rtl);

#endif
