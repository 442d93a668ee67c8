/* nxsim asm: .nxs text -> validated .nxb binary. */
#include <getopt.h>
#include <stdlib.h>

#include "cli.h"
#include "io.h"
#include "paths.h"
#include "isa/asm.h"
#include "isa/encode.h"

void cmd_asm_help(FILE *f) {
    fputs("Usage: nxsim asm FILE.nxs -o FILE.nxb [--machine NAME|FILE.json]\n"
          "\n"
          "Assembles FILE.nxs (syntax: docs/parts/assembly.md), validates the program\n"
          "against its target machine and writes the binary container FILE.nxb\n"
          "atomically (nothing is written if any step fails).\n"
          "\n"
          "Options:\n"
          "  -o, --output FILE.nxb   where to write the program (required)\n"
          "  -m, --machine SPEC      validate against this machine instead of the\n"
          "                          program's .machine: a preset name (trn1, trn2)\n"
          "                          or a machine description file (JSON)\n"
          "  -h, --help              show this help and exit\n"
          "\n"
          "Exit status: 0 ok, 1 the output could not be written, 2 usage error,\n"
          "3 bad input (syntax or validation error, unknown machine).\n",
          f);
}

int cmd_asm(int argc, char **argv) {
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"machine", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL, *machine = NULL;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:m:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'm': machine = optarg; break;
        case 'h': cmd_asm_help(stdout); return CLI_EXIT_OK;
        default: return cli_option_error("asm", c, argc, argv);
        }
    }
    if (optind >= argc) return cli_usage_error("asm", "no input file given");
    if (argc - optind > 1) return cli_usage_error("asm", "expected one input file, got %d", argc - optind);
    if (!output) return cli_usage_error("asm", "no output file given (-o FILE.nxb)");
    const char *input = argv[optind];
    cli_paths paths = CLI_PATHS_INIT;
    cli_paths_input(&paths, input, "the input");
    cli_paths_machine(&paths, machine);
    cli_paths_output(&paths, output, "-o");
    int checked = cli_paths_check("asm", &paths);
    cli_paths_free(&paths);
    if (checked != CLI_EXIT_OK) return checked;

    nx_error err;
    uint8_t *text = NULL;
    size_t len = 0;
    if (nx_read_file_max(input, NX_PROGRAM_FILE_MAX, "the limit for a program file", &text, &len, &err) != 0) {
        cli_message("%s", err.msg);
        return CLI_EXIT_INPUT;
    }
    if (nx_program_is_nxb(text, len)) {
        free(text);
        cli_message("%s: is a .nxb binary program, not .nxs text (see nxsim disasm)", input);
        return CLI_EXIT_INPUT;
    }
    nx_program prog;
    int rc = nx_assemble(input, (const char *)text, len, &prog, &err);
    free(text);
    if (rc != 0) {
        cli_message("%s", err.msg);
        return CLI_EXIT_INPUT;
    }
    nx_machine m;
    int status = CLI_EXIT_OK;
    if (cli_load_machine(machine, &prog, input, &m, &err) != 0) {
        cli_message("%s", err.msg);
        status = CLI_EXIT_INPUT;
    } else if (nx_program_validate(&prog, &m.geo, &err) != 0) {
        cli_message("%s: %s", input, err.msg);
        status = CLI_EXIT_INPUT;
    } else if (nx_program_save_file(output, &prog, &err) != 0) {
        cli_message("%s", err.msg);
        status = CLI_EXIT_RUNTIME;
    }
    nx_program_free(&prog);
    return status;
}
