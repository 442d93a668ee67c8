/* One-line diagnostics on stderr (see cli/cli.h). */
#include "cli.h"

#include <getopt.h>
#include <stdarg.h>
#include <string.h>

void cli_message(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("nxsim: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (cmd)
        cli_message("%s: %s; try 'nxsim %s --help'", cmd, msg, cmd);
    else
        cli_message("%s; try 'nxsim --help'", msg);
    return CLI_EXIT_USAGE;
}

int cli_option_error(const char *cmd, int c, int argc, char **argv) {
    /* A long option has advanced optind past itself; a short one (possibly in
     * a cluster such as -xo) is named by optopt. */
    const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
    char shortopt[3] = {'-', (char)optopt, '\0'};
    const char *name = strncmp(arg, "--", 2) == 0 || optopt == 0 ? arg : shortopt;
    if (c == ':') return cli_usage_error(cmd, "option '%s' needs an argument", name);
    if (strncmp(arg, "--", 2) == 0 && strchr(arg, '=') && optopt != 0)
        return cli_usage_error(cmd, "option '%s' takes no argument", name);
    return cli_usage_error(cmd, "unknown option '%s'", name);
}
