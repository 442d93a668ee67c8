/* nxsim: the command-line entry point. Parses the global options, then hands
 * the rest of the command line to one subcommand (cli/cmd_*.c). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef NXSIM_VERSION
#error "NXSIM_VERSION must be defined by the build (cli/CMakeLists.txt)"
#endif

static const cli_command commands[] = {
    {"asm", "assemble a .nxs text program into a .nxb binary", cmd_asm, cmd_asm_help},
    {"disasm", "print a .nxb binary program as canonical .nxs text", cmd_disasm, cmd_disasm_help},
    {"exec", "run a program (.nxb or .nxs) on .npy inputs and write .npy outputs", cmd_exec,
     cmd_exec_help},
    {"run", "run a registered kernel (a macro-op) on the simulated machine", cmd_run, cmd_run_help},
    {"list", "list the internal kernel registry and the top-k methods", cmd_list, cmd_list_help},
    {"kernels", "list every kernel with its tier, family and registry key", cmd_kernels,
     cmd_kernels_help},
    {"nki", "trace and run an NKI-language kernel (FILE.py:KERNEL) on .npy inputs", cmd_nki, cmd_nki_help},
};
#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static const cli_command *find_command(const char *name) {
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

static void global_help(FILE *f) {
    fputs("Usage: nxsim [--help] [--version] COMMAND [ARGS...]\n"
          "\n"
          "nxsim assembles, inspects and runs programs for a simulated NeuronCore-like\n"
          "accelerator.\n"
          "\n"
          "Commands:\n",
          f);
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fputs("  help     show the help of a command: nxsim help COMMAND\n"
          "\n"
          "Options:\n"
          "  -h, --help     show this help and exit\n"
          "  -V, --version  show the version and exit\n"
          "\n"
          "Exit status (every command):\n"
          "  0  success\n"
          "  1  runtime failure: a fault or deadlock while running the program, or an\n"
          "     output file could not be written\n"
          "  2  usage error: unknown command or option, missing or extra argument\n"
          "  3  bad input: unreadable or malformed file (.nxs, .nxb, .npy, machine),\n"
          "     validation error, unknown machine, missing or mismatched tensors\n"
          "\n"
          "Errors are one line on stderr starting with 'nxsim: '. No command leaves a\n"
          "partial output file behind: outputs are written to a temporary file and\n"
          "renamed into place (devices, FIFOs and /dev/stdout are written through),\n"
          "and an output that is one of the inputs is refused.\n"
          "\n"
          "Run 'nxsim COMMAND --help' for a command's options.\n",
          f);
}

/* `nxsim help [COMMAND]` */
static int help_command(int argc, char **argv) {
    if (argc == 1) {
        global_help(stdout);
        return CLI_EXIT_OK;
    }
    if (argc > 2) return cli_usage_error("help", "expected one command name, got %d arguments", argc - 1);
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs("Usage: nxsim help [COMMAND]\n\nShows the help of COMMAND, or the global help.\n", stdout);
        return CLI_EXIT_OK;
    }
    const cli_command *c = find_command(argv[1]);
    if (!c) return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
    c->help(stdout);
    return CLI_EXIT_OK;
}

/* A result that could not be printed is a failure (e.g. `nxsim --help >&-`). */
static int finish(int rc) {
    if ((fflush(stdout) != 0 || ferror(stdout)) && rc == CLI_EXIT_OK) {
        cli_message("cannot write to standard output");
        return CLI_EXIT_RUNTIME;
    }
    return rc;
}

static int run_main(int argc, char **argv) {
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    int c;
    /* '+': stop at the command name; its options belong to the command. */
    while ((c = getopt_long(argc, argv, "+:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            global_help(stdout);
            return CLI_EXIT_OK;
        case 'V':
            printf("nxsim %s\n", NXSIM_VERSION);
            return CLI_EXIT_OK;
        default:
            return cli_option_error(NULL, c, argc, argv);
        }
    }
    if (optind >= argc) {
        cli_message("no command given; try 'nxsim --help'");
        return CLI_EXIT_USAGE;
    }
    char **sub_argv = argv + optind;
    int sub_argc = argc - optind;
    /* optind = 0 makes glibc's getopt start afresh for the command. */
    optind = 0;
    if (strcmp(sub_argv[0], "help") == 0) return help_command(sub_argc, sub_argv);
    const cli_command *cmd = find_command(sub_argv[0]);
    if (!cmd) return cli_usage_error(NULL, "unknown command '%s'", sub_argv[0]);
    return cmd->run(sub_argc, sub_argv);
}

int main(int argc, char **argv) { return finish(run_main(argc, argv)); }
