/* Options shared by `run` and `exec` (cli/options.h). */
#include "options.h"

#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "isa/fileio.h"
#include "outputs.h"
#include "sim/model.h"
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

int cli_parse_size(const char *s, uint64_t *out) {
    if (s[0] < '0' || s[0] > '9') return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || v == 0) return -1;
    static const char units[] = "KMGT";
    unsigned shift = 0;
    if (*end) {
        const char *u = strchr(units, *end);
        if (!u || *u == '\0') return -1;
        shift = 10 * (unsigned)(u - units + 1);
        end++;
        if (strcmp(end, "iB") == 0) end += 2;
        if (*end) return -1;
    }
    if (shift && v > (UINT64_MAX >> shift)) return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

/* The first unsigned number in a file ("max" and the like: 0). */
static uint64_t read_number(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    unsigned long long v = 0;
    if (fscanf(f, "%llu", &v) != 1) v = 0;
    fclose(f);
    return v;
}

uint64_t cli_default_max_memory(const char **from, uint64_t *of) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t best = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : (uint64_t)4 << 30;
    const char *why = "physical memory";
    const struct { const char *path; const char *what; } cgroups[] = {
        {"/sys/fs/cgroup/memory.max", "the cgroup's memory.max"},
        {"/sys/fs/cgroup/memory/memory.limit_in_bytes", "the cgroup's memory limit"},
    };
    for (size_t i = 0; i < sizeof cgroups / sizeof cgroups[0]; i++) {
        uint64_t v = read_number(cgroups[i].path);
        if (v && v < best) {
            best = v;
            why = cgroups[i].what;
        }
    }
    const struct { int res; const char *what; } limits[] = {{RLIMIT_AS, "RLIMIT_AS"}, {RLIMIT_DATA, "RLIMIT_DATA"}};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        struct rlimit rl;
        if (getrlimit(limits[i].res, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (uint64_t)rl.rlim_cur < best) {
            best = (uint64_t)rl.rlim_cur;
            why = limits[i].what;
        }
    }
    if (from) *from = why;
    if (of) *of = best;
    return best / 2;
}

int cli_limit_error(const cli_backend *b, const char *prefix, const char *msg) {
    (void)b;
    nx_quoted q;
    const char *pre = prefix ? nx_quote(&q, prefix, NX_QUOTE_PATH) : "";
    const char *sep = prefix ? ": " : "";
    if (strstr(msg, "fill limit")) {
        cli_message("%s%s%s; give those inputs as files, or allow more with --max-fill SIZE (default 1 GiB)",
                    pre, sep, msg);
    } else {
        const char *from;
        uint64_t of;
        char half[32], whole[32];
        nx_format_bytes(cli_default_max_memory(&from, &of), half, sizeof half);
        nx_format_bytes(of, whole, sizeof whole);
        cli_message("%s%s%s; allow more with --max-memory SIZE (default %s: half of the %s of %s)", pre, sep, msg,
                    half, whole, from);
    }
    return CLI_EXIT_INPUT;
}

int cli_backend_option(const char *cmd, int c, const char *arg, cli_backend *b, int *status) {
    switch (c) {
    case CLI_OPT_MAX_MEMORY:
    case CLI_OPT_MAX_FILL:
        if (cli_parse_size(arg, c == CLI_OPT_MAX_MEMORY ? &b->max_memory : &b->max_fill) != 0)
            *status = cli_usage_error(cmd, "--%s expects a size in bytes (e.g. 4G, 512MiB, 1048576), got '%s'",
                                      c == CLI_OPT_MAX_MEMORY ? "max-memory" : "max-fill", arg);
        return 1;
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
        .max_memory = b->max_memory ? b->max_memory : cli_default_max_memory(NULL, NULL),
        .max_fill = b->max_fill ? b->max_fill : CLI_DEFAULT_MAX_FILL,
        .threads = b->threads,
    };
    return opt;
}

int cli_stage_vcd(cli_outputs *o, const char *vcd, uint32_t cores, nx_run_options *opt) {
    if (!vcd) return 0;
    const char *tmp0 = cli_outputs_stage(o, vcd, NULL);
    if (!tmp0) return -1;
    opt->vcd_path = tmp0;
    for (uint32_t c = 1; c < cores && c < NX_MAX_CORES; c++) {
        char target[4096], tmp[4096];
        nx_sim_vcd_path(vcd, c, target, sizeof target);
        nx_sim_vcd_path(tmp0, c, tmp, sizeof tmp);
        if (!cli_outputs_stage(o, target, tmp)) return -1;
    }
    return 0;
}
