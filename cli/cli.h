/* The nxsim command: shared pieces of the subcommands (exit codes, message
 * helpers, option-error reporting). Each subcommand lives in cli/cmd_*.c and
 * is reached through the table in cli/main.c. Messages go to stderr as one
 * line "nxsim: ..."; results go to stdout or files. */
#ifndef NXSIM_CLI_CLI_H
#define NXSIM_CLI_CLI_H

#include <stdio.h>

/* Exit codes: documented in `nxsim --help` and docs/parts/cli.md. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_RUNTIME = 1, /* fault/deadlock while running; an output could not be written */
    CLI_EXIT_USAGE = 2,   /* bad option or arguments */
    CLI_EXIT_INPUT = 3,   /* unreadable/malformed input, validation error, tensor mismatch */
};

/* One subcommand: `run` gets argv with argv[0] = the command name and
 * returns an exit code; `help` prints the full usage to f. */
typedef struct cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
    void (*help)(FILE *f);
} cli_command;

int cmd_asm(int argc, char **argv);
void cmd_asm_help(FILE *f);
int cmd_disasm(int argc, char **argv);
void cmd_disasm_help(FILE *f);
int cmd_exec(int argc, char **argv);
void cmd_exec_help(FILE *f);
int cmd_run(int argc, char **argv);
void cmd_run_help(FILE *f);
int cmd_list(int argc, char **argv);
void cmd_list_help(FILE *f);
int cmd_kernels(int argc, char **argv);
void cmd_kernels_help(FILE *f);
int cmd_nki(int argc, char **argv);
void cmd_nki_help(FILE *f);

/* Prints "nxsim: MESSAGE\n" to stderr. */
void cli_message(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Prints "nxsim: CMD: MESSAGE; try 'nxsim CMD --help'" and returns
 * CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Reports the option getopt_long rejected (it returned '?' or ':', with
 * opterr = 0 and an optstring starting with ':') and returns CLI_EXIT_USAGE. */
int cli_option_error(const char *cmd, int c, int argc, char **argv);

#endif
