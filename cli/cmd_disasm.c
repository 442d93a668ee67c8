/* nxsim disasm: .nxb binary -> canonical .nxs text. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "io.h"
#include "paths.h"
#include "isa/asm.h"
#include "isa/encode.h"

void cmd_disasm_help(FILE *f) {
    fputs("Usage: nxsim disasm FILE.nxb [-o FILE.nxs]\n"
          "\n"
          "Decodes the binary program FILE.nxb and prints its canonical assembly text\n"
          "(docs/parts/assembly.md) to standard output, or writes it atomically to\n"
          "FILE.nxs. Assembling that text gives back a byte-identical FILE.nxb.\n"
          "The program is decoded, not validated against a machine.\n"
          "\n"
          "Options:\n"
          "  -o, --output FILE.nxs   write the text here instead of standard output\n"
          "  -h, --help              show this help and exit\n"
          "\n"
          "Exit status: 0 ok, 1 the output could not be written, 2 usage error,\n"
          "3 bad input (unreadable or malformed .nxb).\n",
          f);
}

/* Disassembles into memory, then writes the file in one atomic step. */
static int save_text(const char *path, const nx_program *p, nx_error *err) {
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) return nx_fail(err, "%s: out of memory", path);
    int rc = nx_disassemble(p, mem, err);
    if (fclose(mem) != 0 && rc == 0) rc = nx_fail(err, "%s: out of memory", path);
    if (rc == 0) rc = nx_write_file_atomic(path, text, len, err);
    free(text);
    return rc;
}

int cmd_disasm(int argc, char **argv) {
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'h': cmd_disasm_help(stdout); return CLI_EXIT_OK;
        default: return cli_option_error("disasm", c, argc, argv);
        }
    }
    if (optind >= argc) return cli_usage_error("disasm", "no input file given");
    if (argc - optind > 1)
        return cli_usage_error("disasm", "expected one input file, got %d", argc - optind);
    const char *input = argv[optind];
    cli_paths paths = CLI_PATHS_INIT;
    cli_paths_input(&paths, input, "the input");
    cli_paths_output(&paths, output, "-o");
    int checked = cli_paths_check("disasm", &paths);
    cli_paths_free(&paths);
    if (checked != CLI_EXIT_OK) return checked;

    nx_error err;
    nx_program prog;
    if (nx_program_load_file(input, &prog, &err) != 0) {
        cli_message("%s", err.msg);
        return CLI_EXIT_INPUT;
    }
    int status = CLI_EXIT_OK;
    if (output) {
        if (save_text(output, &prog, &err) != 0) {
            cli_message("%s", err.msg);
            status = CLI_EXIT_RUNTIME;
        }
    } else if (nx_disassemble(&prog, stdout, &err) != 0 || fflush(stdout) != 0) {
        cli_message("cannot write the disassembly to standard output");
        status = CLI_EXIT_RUNTIME;
    }
    nx_program_free(&prog);
    return status;
}
