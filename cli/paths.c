/* Same-file checks of a command line (cli/paths.h). */
#include "paths.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "io.h"
#include "isa/fileio.h"
#include "isa/strbuf.h"

static void add(cli_paths *ps, const char *path, int output, const char *fmt, va_list ap) {
    if (ps->failed || !path) return;
    if (ps->count == ps->cap) {
        int cap = ps->cap ? 2 * ps->cap : 8;
        cli_path *items = realloc(ps->items, (size_t)cap * sizeof *items);
        if (!items) {
            ps->failed = 1;
            return;
        }
        ps->items = items;
        ps->cap = cap;
    }
    nx_strbuf b = NX_STRBUF_INIT;
    nx_sb_vprintf(&b, fmt, ap);
    char *label = nx_sb_take(&b);
    if (!label) {
        ps->failed = 1;
        return;
    }
    ps->items[ps->count++] = (cli_path){label, path, output};
}

void cli_paths_input(cli_paths *ps, const char *path, const char *label, ...) {
    va_list ap;
    va_start(ap, label);
    add(ps, path, 0, label, ap);
    va_end(ap);
}

void cli_paths_output(cli_paths *ps, const char *path, const char *label, ...) {
    va_list ap;
    va_start(ap, label);
    add(ps, path, 1, label, ap);
    va_end(ap);
}

void cli_paths_machine(cli_paths *ps, const char *spec) {
    if (spec && !cli_is_machine_preset(spec)) cli_paths_input(ps, spec, "--machine");
}

int cli_paths_check(const char *cmd, const cli_paths *ps) {
    if (ps->failed) {
        cli_message("out of memory");
        return CLI_EXIT_RUNTIME;
    }
    nx_file_id *ids = calloc((size_t)ps->count + 1, sizeof *ids);
    int *known = calloc((size_t)ps->count + 1, sizeof *known);
    int status = CLI_EXIT_OK;
    if (!ids || !known) {
        cli_message("out of memory");
        status = CLI_EXIT_RUNTIME;
    }
    /* a path that cannot be resolved is left to the read or write that
     * reports it */
    for (int k = 0; status == CLI_EXIT_OK && k < ps->count; k++)
        known[k] = nx_file_identify(ps->items[k].path, &ids[k], NULL) == 0 && ids[k].regular;
    for (int k = 0; status == CLI_EXIT_OK && k < ps->count; k++) {
        const cli_path *o = &ps->items[k];
        if (!o->output || !known[k]) continue;
        for (int j = 0; j < ps->count && status == CLI_EXIT_OK; j++) {
            const cli_path *other = &ps->items[j];
            if (j == k || !known[j] || (other->output && j > k) || !nx_file_same(&ids[k], &ids[j])) continue;
            nx_quoted q1, q2;
            const char *p1 = nx_quote(&q1, o->path, NX_QUOTE_PATH), *p2 = nx_quote(&q2, other->path, NX_QUOTE_PATH);
            if (other->output)
                status = cli_usage_error(cmd, "%s '%s' and %s '%s' name the same file", other->label, p2,
                                         o->label, p1);
            else
                status = cli_usage_error(cmd, "%s '%s' is the same file as %s '%s': refusing to overwrite an input",
                                         o->label, p1, other->label, p2);
        }
    }
    free(ids);
    free(known);
    return status;
}

void cli_paths_free(cli_paths *ps) {
    for (int k = 0; k < ps->count; k++) free(ps->items[k].label);
    free(ps->items);
    *ps = (cli_paths)CLI_PATHS_INIT;
}
