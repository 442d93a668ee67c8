/* Options shared by the subcommands that run programs (`run`, `exec`),
 * parsed and checked one way everywhere: the seed, the backend (--functional,
 * --pe, --vcd), --race-check and --threads. */
#ifndef NXSIM_CLI_OPTIONS_H
#define NXSIM_CLI_OPTIONS_H

#include <getopt.h>
#include <stdint.h>

#include "registry/run/run.h"

/* --seed N: a non-negative integer, decimal ("010" is ten, never octal) or
 * hexadecimal with 0x/0X ("0x10" is sixteen), fitting in 64 bits. 0, or -1
 * for anything else (the caller reports the usage error). */
int cli_parse_seed(const char *s, uint64_t *out);

/* getopt_long codes of the backend options (above any character). */
enum { CLI_OPT_FUNCTIONAL = 0x200, CLI_OPT_PE, CLI_OPT_VCD, CLI_OPT_RACE_CHECK, CLI_OPT_THREADS };

/* Their struct option rows (with 's' for --seed and 'q' for --quiet: a
 * command's optstring lists "s:q"), for a longopts table. */
#define CLI_BACKEND_LONGOPTS                                        \
    {"seed", required_argument, NULL, 's'},                         \
        {"functional", no_argument, NULL, CLI_OPT_FUNCTIONAL},      \
        {"pe", required_argument, NULL, CLI_OPT_PE},                \
        {"vcd", required_argument, NULL, CLI_OPT_VCD},              \
        {"race-check", no_argument, NULL, CLI_OPT_RACE_CHECK},      \
        {"threads", required_argument, NULL, CLI_OPT_THREADS},      \
        {"quiet", no_argument, NULL, 'q'}

typedef struct cli_backend {
    uint64_t seed;    /* default 1 */
    int functional;   /* --functional */
    int pe_rtl;       /* --pe rtl */
    const char *vcd;  /* --vcd FILE */
    int race_check;   /* --race-check */
    int quiet;        /* -q, --quiet: no progress line */
    uint32_t threads; /* --threads N; 0: NXSIM_THREADS (unset: 1) */
} cli_backend;

#define CLI_BACKEND_INIT {1, 0, 0, NULL, 0, 0, 0}

/* Handles getopt_long's code c if it is a backend option: returns 1 (with
 * *status CLI_EXIT_USAGE after printing the error for a bad value, else
 * unchanged), or 0 if c is not one. `cmd` names the command in messages. */
int cli_backend_option(const char *cmd, int c, const char *arg, cli_backend *b, int *status);
/* The combinations that cannot work: --vcd without --pe rtl, --pe rtl or
 * --race-check with --functional. CLI_EXIT_OK or the usage error's code. */
int cli_backend_validate(const char *cmd, const cli_backend *b);
/* The run options they give (seed, backend, PE, VCD, race check, threads,
 * and progress when stderr is a terminal and not --quiet). */
nx_run_options cli_backend_run_options(const cli_backend *b);

#endif
