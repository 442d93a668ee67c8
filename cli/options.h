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

/* SIZE arguments (--max-memory, --max-fill): a positive integer of bytes,
 * or with a binary unit K, M, G, T (optionally KiB, MiB, GiB, TiB): "512M",
 * "4GiB", "1073741824". 0, or -1 for anything else. */
int cli_parse_size(const char *s, uint64_t *out);

/* The default --max-memory: half of what this process may use, the least of
 * the physical memory, the cgroup's memory.max and RLIMIT_AS / RLIMIT_DATA.
 * *from says which ("physical memory", "the cgroup limit", ...) and *of its
 * size. */
uint64_t cli_default_max_memory(const char **from, uint64_t *of);
/* The default --max-fill: pseudo-random inputs of more than this need the
 * option (or their files). */
#define CLI_DEFAULT_MAX_FILL ((uint64_t)1 << 30)

/* getopt_long codes of the backend options (above any character). */
enum { CLI_OPT_FUNCTIONAL = 0x200, CLI_OPT_PE, CLI_OPT_VCD, CLI_OPT_RACE_CHECK, CLI_OPT_THREADS, CLI_OPT_MAX_MEMORY,
       CLI_OPT_MAX_FILL };

/* Their struct option rows (with 's' for --seed and 'q' for --quiet: a
 * command's optstring lists "s:q"), for a longopts table. */
#define CLI_BACKEND_LONGOPTS                                        \
    {"seed", required_argument, NULL, 's'},                         \
        {"functional", no_argument, NULL, CLI_OPT_FUNCTIONAL},      \
        {"pe", required_argument, NULL, CLI_OPT_PE},                \
        {"vcd", required_argument, NULL, CLI_OPT_VCD},              \
        {"race-check", no_argument, NULL, CLI_OPT_RACE_CHECK},      \
        {"max-memory", required_argument, NULL, CLI_OPT_MAX_MEMORY}, \
        {"max-fill", required_argument, NULL, CLI_OPT_MAX_FILL},     \
        {"threads", required_argument, NULL, CLI_OPT_THREADS},      \
        {"quiet", no_argument, NULL, 'q'}

typedef struct cli_backend {
    uint64_t seed;    /* default 1 */
    int functional;   /* --functional */
    int pe_rtl;       /* --pe rtl */
    const char *vcd;  /* --vcd FILE */
    int race_check;   /* --race-check */
    int quiet;        /* -q, --quiet: no progress line */
    uint32_t threads; /* --threads N; 0: NXSIM_THREADS (unset: the host CPUs, at most 8) */
    uint64_t max_memory; /* --max-memory; 0: the default (cli_default_max_memory) */
    uint64_t max_fill;   /* --max-fill; 0: CLI_DEFAULT_MAX_FILL */
} cli_backend;

#define CLI_BACKEND_INIT {1, 0, 0, NULL, 0, 0, 0, 0, 0}

/* Handles getopt_long's code c if it is a backend option: returns 1 (with
 * *status CLI_EXIT_USAGE after printing the error for a bad value, else
 * unchanged), or 0 if c is not one. `cmd` names the command in messages. */
int cli_backend_option(const char *cmd, int c, const char *arg, cli_backend *b, int *status);
/* The combinations that cannot work: --vcd without --pe rtl, --pe rtl or
 * --race-check with --functional. CLI_EXIT_OK or the usage error's code. */
int cli_backend_validate(const char *cmd, const cli_backend *b);
/* The run options they give (seed, backend, PE, VCD, race check, threads,
 * the limits, and progress when stderr is a terminal and not --quiet). */
nx_run_options cli_backend_run_options(const cli_backend *b);
/* Prints a limit refusal (NX_RUN_LIMIT's message, prefixed by `prefix` if
 * non-NULL) with how to allow more; returns CLI_EXIT_INPUT. */
int cli_limit_error(const cli_backend *b, const char *prefix, const char *msg);

/* --vcd: stages the waveform of every core of a `cores`-core program
 * (sim/model.h nx_sim_vcd_path) as outputs of o, and points opt->vcd_path at
 * core 0's temporary, so the waveforms appear only when the run's outputs
 * are committed and a failed run leaves none. No-op without --vcd. 0, or -1
 * with the message printed. */
struct cli_outputs;
int cli_stage_vcd(struct cli_outputs *o, const char *vcd, uint32_t cores, nx_run_options *opt);

#endif
