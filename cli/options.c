/* Options shared by `run` and `exec` (cli/options.h). */
#include "options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "isa/workers.h"

static int is_hex_digit(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int cli_parse_seed(const char *s, uint64_t *out) {
    if (s[0] < '0' || s[0] > '9') return -1; /* no sign, no space */
    int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (hex && !is_hex_digit(s[2])) return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, hex ? 16 : 10);
    if (errno != 0 || *end != '\0') return -1;
    *out = (uint64_t)v;
    return 0;
}

int cli_backend_option(const char *cmd, int c, const char *arg, cli_backend *b, int *status) {
    switch (c) {
    case 's':
        if (cli_parse_seed(arg, &b->seed) != 0)
            *status = cli_usage_error(cmd, "--seed expects a non-negative integer, got '%s'", arg);
        return 1;
    case CLI_OPT_FUNCTIONAL: b->functional = 1; return 1;
    case CLI_OPT_RACE_CHECK: b->race_check = 1; return 1;
    case 'q': b->quiet = 1; return 1;
    case CLI_OPT_PE:
        if (strcmp(arg, "rtl") == 0 || strcmp(arg, "model") == 0)
            b->pe_rtl = strcmp(arg, "rtl") == 0;
        else
            *status = cli_usage_error(cmd, "--pe expects model or rtl, got '%s'", arg);
        return 1;
    case CLI_OPT_THREADS: {
        unsigned n;
        nx_error e;
        if (nx_workers_parse_threads(arg, "--threads", &n, &e) != 0)
            *status = cli_usage_error(cmd, "%s", e.msg);
        else
            b->threads = n;
        return 1;
    }
    case CLI_OPT_VCD:
        if (arg[0] == '\0')
            *status = cli_usage_error(cmd, "--vcd expects a file name");
        else
            b->vcd = arg;
        return 1;
    default: return 0;
    }
}

int cli_backend_validate(const char *cmd, const cli_backend *b) {
    if (b->vcd && !b->pe_rtl) return cli_usage_error(cmd, "--vcd needs --pe rtl (only the RTL has a waveform)");
    if (b->pe_rtl && b->functional)
        return cli_usage_error(cmd, "--pe rtl runs on the SystemC model; it cannot be combined with --functional");
    if (b->race_check && b->functional)
        return cli_usage_error(cmd, "--race-check needs the SystemC model's log: drop --functional");
    return CLI_EXIT_OK;
}

nx_run_options cli_backend_run_options(const cli_backend *b) {
    nx_run_options opt = {
        .backend = b->functional ? NX_RUN_FUNCTIONAL : NX_RUN_MODEL,
        .pe_rtl = b->pe_rtl,
        .vcd_path = b->vcd,
        .race_check = b->race_check,
        .seed = b->seed,
        .progress = !b->quiet && isatty(2),
        .threads = b->threads,
    };
    return opt;
}
