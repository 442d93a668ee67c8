/* nxsim run: build a macro-op (from the command line or an op JSON file),
 * lower it through the internal kernel registry, run the program on the
 * SystemC model (or the functional executor), print the profile summary and
 * NEW_NKI_FE, optionally check against the reference and write results.
 *
 * Order matters for "no partial output": everything that can fail (the op,
 * inputs, lowering, the run, the check, serialising every output) happens
 * before the first file is written; if writing file k still fails, the files
 * this run already wrote are removed again. */
#define _POSIX_C_SOURCE 200809L /* open_memstream, unlink */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "io.h"
#include "isa/exec.h"
#include "isa/npy.h"
#include "isa/state.h"
#include "registry/check.h"
#include "registry/lower.h"
#include "registry/macro_op.h"
#include "registry/registry.h"
#include "sim/machine.h"
#include "sim/model.h"
#include "sim/profile.h"
#include "tensors.h"

void cmd_run_help(FILE *f) {
    fputs("Usage: nxsim run KEY [-i FILE.npy]... [-o FILE.npy]... [-a NAME=JSON]...\n"
          "                 [--machine NAME|FILE] [--profile FILE.json] [--check] [--json]\n"
          "                 [--seed N] [--functional]\n"
          "       nxsim run --op FILE.json [options as above but -i, -o, -a]\n"
          "\n"
          "Runs the registered kernel KEY (a macro-op func_name, see 'nxsim list'):\n"
          "the registry resolves it to its leaf, the leaf is traced once per core of\n"
          "its grid into a program, and the program runs on the SystemC model of the\n"
          "machine. Prints the op, the profile summary and NEW_NKI_FE (programs\n"
          "traced by this run rather than taken from the trace cache).\n"
          "\n"
          "Operands come from the -i files, in order (named in0, in1, ...). Without\n"
          "-i the kernel runs on its built-in default op: deterministic pseudo-random\n"
          "inputs (--seed) of a default shape, with default attributes (transposes:\n"
          "512x384 fp32, permutation [1, 0]). Attributes are given as JSON values,\n"
          "e.g. -a 'permutation=[1,0]'; they override the defaults. Result shapes\n"
          "and dtypes follow the kernel's rule (transposes: the operand permuted).\n"
          "Results named with -o (in order) are written as .npy files; the others are\n"
          "summarised on standard output.\n"
          "\n"
          "--op FILE.json describes the whole op instead:\n"
          "  {\"func_name\": \"tiled_pf_transpose\",\n"
          "   \"operands\": [{\"name\": \"x\", \"file\": \"x.npy\"}],\n"
          "   \"results\":  [{\"name\": \"y\", \"file\": \"y.npy\"}],\n"
          "   \"attrs\":    {\"permutation\": [1, 0]}}\n"
          "An operand without \"file\" needs \"shape\" and \"dtype\" and gets pseudo-random\n"
          "values; a result's shape and dtype, if given, must match the kernel's rule.\n"
          "Relative file names are relative to the directory of FILE.json.\n"
          "\n"
          "Options:\n"
          "  -i, --in FILE.npy        next operand\n"
          "  -o, --out FILE.npy       write the next result to FILE.npy\n"
          "  -a, --attr NAME=JSON     set attribute NAME to a JSON value\n"
          "      --op FILE.json       the op as a JSON document\n"
          "  -m, --machine SPEC       a preset (trn1, trn2; default trn2) or a JSON file\n"
          "  -p, --profile FILE.json  write a Chrome/Perfetto trace of the run\n"
          "  -c, --check              compare every result with the kernel's reference\n"
          "                           (kernels/ref): print the max abs and rel error,\n"
          "                           exit 1 beyond the tolerance (transposes: exact)\n"
          "  -j, --json               print the report as one JSON object\n"
          "  -s, --seed N             seed of the pseudo-random inputs (default 1)\n"
          "      --functional         use the functional executor (no timing, no\n"
          "                           profile) instead of the SystemC model\n"
          "  -h, --help               show this help and exit\n"
          "\n"
          "Exit status: 0 ok; 1 fault or deadlock during the run, a failed --check,\n"
          "or an output could not be written; 2 usage error (options, -a syntax or\n"
          "JSON); 3 bad input: an unregistered KEY (the registry's 'is not\n"
          "registered' error), a malformed .npy or op file, an operand the leaf\n"
          "cannot take (the leaf's rule), an unknown machine. No output file is\n"
          "written unless the whole run succeeds.\n",
          f);
}

typedef struct run_args {
    const char *key;
    const char *op_file;
    const char *machine;
    const char *profile;
    const char **ins, **outs;
    char **attrs; /* NAME=JSON, the '=' replaced by NUL */
    int n_in, n_out, n_attr;
    int check, json, functional;
    uint64_t seed;
} run_args;

/* The op being run and where its tensors come from / go to. */
typedef struct run_op {
    nx_macro_op op;
    nx_npy in[NX_OP_MAX_TENSORS];   /* loaded operands (data NULL: pseudo-random) */
    const char *in_path[NX_OP_MAX_TENSORS];
    char *out_path[NX_OP_MAX_TENSORS]; /* owned; NULL: summarise */
    nx_op_files files;              /* --op file names (owned) */
    char *op_text;                  /* --op file contents */
} run_op;

static void run_op_free(run_op *r) {
    nx_macro_op_free(&r->op);
    for (int i = 0; i < NX_OP_MAX_TENSORS; i++) {
        nx_npy_free(&r->in[i]);
        free(r->out_path[i]);
    }
    nx_op_files_free(&r->files);
    free(r->op_text);
}

/* ---- options ------------------------------------------------------------------- */

static int parse_seed(const char *s, uint64_t *out) {
    if (s[0] < '0' || s[0] > '9') return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno != 0 || *end != '\0') return -1;
    *out = (uint64_t)v;
    return 0;
}

enum { OPT_OP = 256, OPT_FUNCTIONAL };

static int parse_args(int argc, char **argv, run_args *a) {
    static const struct option longopts[] = {
        {"in", required_argument, NULL, 'i'},
        {"out", required_argument, NULL, 'o'},
        {"attr", required_argument, NULL, 'a'},
        {"op", required_argument, NULL, OPT_OP},
        {"machine", required_argument, NULL, 'm'},
        {"profile", required_argument, NULL, 'p'},
        {"check", no_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},
        {"seed", required_argument, NULL, 's'},
        {"functional", no_argument, NULL, OPT_FUNCTIONAL},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":i:o:a:m:p:cjs:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'i': a->ins[a->n_in++] = optarg; break;
        case 'o':
            for (int k = 0; k < a->n_out; k++)
                if (strcmp(a->outs[k], optarg) == 0)
                    return cli_usage_error("run", "-o '%s' is given twice", optarg);
            a->outs[a->n_out++] = optarg;
            break;
        case 'a': {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg)
                return cli_usage_error("run", "-a expects NAME=JSON, got '%s'", optarg);
            *eq = '\0';
            for (int k = 0; k < a->n_attr; k++)
                if (strcmp(a->attrs[k], optarg) == 0)
                    return cli_usage_error("run", "-a %s is given twice", optarg);
            a->attrs[a->n_attr++] = optarg;
            break;
        }
        case OPT_OP: a->op_file = optarg; break;
        case 'm': a->machine = optarg; break;
        case 'p': a->profile = optarg; break;
        case 'c': a->check = 1; break;
        case 'j': a->json = 1; break;
        case 's':
            if (parse_seed(optarg, &a->seed) != 0)
                return cli_usage_error("run", "--seed expects a non-negative integer, got '%s'", optarg);
            break;
        case OPT_FUNCTIONAL: a->functional = 1; break;
        case 'h': cmd_run_help(stdout); return -1;
        default: return cli_option_error("run", c, argc, argv);
        }
    }
    int positional = argc - optind;
    if (a->op_file) {
        if (positional > 0)
            return cli_usage_error("run", "--op names the kernel: no KEY argument expected, got '%s'",
                                   argv[optind]);
        if (a->n_in || a->n_out || a->n_attr)
            return cli_usage_error("run", "--op describes operands, results and attributes: "
                                          "-i, -o and -a cannot be combined with it");
    } else {
        if (positional == 0) return cli_usage_error("run", "no kernel given (a registry key, see 'nxsim list')");
        if (positional > 1) return cli_usage_error("run", "expected one kernel, got %d arguments", positional);
        a->key = argv[optind];
    }
    if (a->functional && a->profile)
        return cli_usage_error("run", "--profile needs the SystemC model: drop --functional");
    if (a->n_in > NX_OP_MAX_TENSORS || a->n_out > NX_OP_MAX_TENSORS)
        return cli_usage_error("run", "at most %d operands and %d results", NX_OP_MAX_TENSORS,
                               NX_OP_MAX_TENSORS);
    for (int k = 0; a->profile && k < a->n_out; k++)
        if (strcmp(a->outs[k], a->profile) == 0)
            return cli_usage_error("run", "--profile and -o name the same file '%s'", a->profile);
    return CLI_EXIT_OK;
}

/* ---- building the op --------------------------------------------------------------- */

/* Loads an operand .npy and checks it can be a tensor. */
static int load_operand(const char *path, uint32_t index, nx_npy *out, nx_error *err) {
    if (nx_npy_load(path, out, err) != 0) return -1;
    if (out->ndims < 1 || out->ndims > NX_KERNEL_MAX_DIMS) {
        nx_fail(err, "%s: operand %u has %u dims, a tensor has 1..%d", path, index, out->ndims,
                NX_KERNEL_MAX_DIMS);
        nx_npy_free(out);
        return -1;
    }
    for (uint32_t d = 0; d < out->ndims; d++) {
        if (out->shape[d] == 0) {
            nx_fail(err, "%s: operand %u has an empty dim %u", path, index, d);
            nx_npy_free(out);
            return -1;
        }
    }
    return 0;
}

/* `rel` relative to the directory of `base` (unless absolute). */
static char *path_beside(const char *base, const char *rel) {
    const char *slash = strrchr(base, '/');
    size_t dir = rel[0] == '/' || !slash ? 0 : (size_t)(slash - base) + 1;
    char *p = malloc(dir + strlen(rel) + 1);
    if (!p) return NULL;
    memcpy(p, base, dir);
    strcpy(p + dir, rel);
    return p;
}

static int same_type(const nx_op_tensor *t, nx_dtype dt, uint32_t nd, const uint64_t *shape) {
    if (t->dtype != dt || t->ndims != nd) return 0;
    for (uint32_t d = 0; d < nd; d++)
        if (t->shape[d] != shape[d]) return 0;
    return 1;
}

/* Fills r->op from the command line or the op file, up to and including
 * the results. Returns an exit code. */
static int build_op(const run_args *a, run_op *r, const nx_registry_entry **entry_out) {
    nx_error err;
    nx_macro_op *op = &r->op;
    if (a->op_file) {
        size_t len;
        if (nx_read_file(a->op_file, (uint8_t **)&r->op_text, &len, &err) != 0) {
            cli_message("%s", err.msg);
            return CLI_EXIT_INPUT;
        }
        if (memchr(r->op_text, '\0', len)) {
            cli_message("%s: the op file holds a NUL byte", a->op_file);
            return CLI_EXIT_INPUT;
        }
        if (nx_macro_op_parse(a->op_file, r->op_text, op, &r->files, &err) != 0) {
            cli_message("%s", err.msg);
            return CLI_EXIT_INPUT;
        }
    } else {
        nx_macro_op_init(op);
        if (nx_macro_op_set_func_name(op, a->key, &err) != 0) {
            cli_message("%s", err.msg);
            return CLI_EXIT_RUNTIME;
        }
    }

    /* The registry decides first: an unregistered name is its miss error. */
    const nx_registry_entry *e = nx_registry_get(NULL, op->func_name);
    if (!e) {
        /* Printed verbatim, without the usual "nxsim: " prefix: this line is
         * the registry's contract (docs/parts/registry.md), so scripts can match it. */
        nx_registry_miss(NULL, op->func_name, &err);
        fprintf(stderr, "%s\n", err.msg);
        return CLI_EXIT_INPUT;
    }
    *entry_out = e;

    /* Operands. */
    if (a->op_file) {
        for (uint32_t i = 0; i < op->n_operands; i++) {
            if (!r->files.operand[i]) continue;
            char *path = path_beside(a->op_file, r->files.operand[i]);
            if (!path) {
                cli_message("out of memory");
                return CLI_EXIT_RUNTIME;
            }
            free(r->files.operand[i]);
            r->files.operand[i] = path;
            r->in_path[i] = path;
            nx_op_tensor *t = &op->operands[i];
            if (load_operand(path, i, &r->in[i], &err) != 0) {
                cli_message("%s", err.msg);
                return CLI_EXIT_INPUT;
            }
            if (t->ndims && !same_type(t, r->in[i].dtype, r->in[i].ndims, r->in[i].shape)) {
                nx_op_tensor got = *t;
                got.dtype = r->in[i].dtype;
                got.ndims = r->in[i].ndims;
                memcpy(got.shape, r->in[i].shape, sizeof got.shape);
                char want_s[128], got_s[128];
                nx_op_tensor_format(want_s, sizeof want_s, t);
                nx_op_tensor_format(got_s, sizeof got_s, &got);
                cli_message("%s: operand %u (%s) is declared %s but %s holds %s", a->op_file, i,
                            t->name, want_s, path, got_s);
                return CLI_EXIT_INPUT;
            }
            t->dtype = r->in[i].dtype;
            t->ndims = r->in[i].ndims;
            memcpy(t->shape, r->in[i].shape, sizeof t->shape[0] * t->ndims);
        }
    } else if (a->n_in > 0) {
        for (int i = 0; i < a->n_in; i++) {
            if (load_operand(a->ins[i], (uint32_t)i, &r->in[i], &err) != 0) {
                cli_message("%s", err.msg);
                return CLI_EXIT_INPUT;
            }
            char name[16];
            snprintf(name, sizeof name, "in%d", i);
            if (nx_macro_op_add_operand(op, name, r->in[i].dtype, r->in[i].ndims, r->in[i].shape, &err) != 0) {
                cli_message("%s: %s", a->ins[i], err.msg);
                return CLI_EXIT_INPUT;
            }
            r->in_path[i] = a->ins[i];
        }
    } else {
        if (!e->rules || !e->rules->default_op) {
            cli_message("%s has no built-in default op: give its operands with -i FILE.npy", e->key);
            return CLI_EXIT_USAGE;
        }
        if (e->rules->default_op(op, &err) != 0) {
            cli_message("%s: default op: %s", e->key, err.msg);
            return CLI_EXIT_RUNTIME;
        }
    }

    /* Attributes from -a override the defaults. */
    for (int k = 0; k < a->n_attr; k++) {
        const char *name = a->attrs[k];
        const char *json = name + strlen(name) + 1;
        char source[128];
        snprintf(source, sizeof source, "-a %.100s", name);
        nx_value v;
        if (nx_value_parse(source, json, &v, &err) != 0) {
            cli_message("%s", err.msg);
            return CLI_EXIT_USAGE;
        }
        if (nx_attrs_set(&op->attrs, name, &v, &err) != 0) {
            nx_value_free(&v);
            cli_message("%s", err.msg);
            return CLI_EXIT_RUNTIME;
        }
    }

    /* Results: the kernel's rule, checked against what the op file declares. */
    if (!e->rules || !e->rules->infer_results) {
        cli_message("%s: nxsim has no result-shape rule for this kernel yet", e->key);
        return CLI_EXIT_INPUT;
    }
    nx_op_tensor declared[NX_OP_MAX_TENSORS];
    uint32_t n_declared = op->n_results;
    memcpy(declared, op->results, sizeof declared);
    const char *names[NX_OP_MAX_TENSORS] = {0};
    for (uint32_t j = 0; j < n_declared; j++) names[j] = declared[j].name;
    op->n_results = 0;
    if (e->rules->infer_results(op, names, &err) != 0) {
        cli_message("%s", err.msg);
        return CLI_EXIT_INPUT;
    }
    const char *where = a->op_file ? a->op_file : "-o";
    if (a->op_file ? n_declared > op->n_results : (uint32_t)a->n_out > op->n_results) {
        cli_message("%s: %u results given, %s produces %u", where,
                    a->op_file ? n_declared : (uint32_t)a->n_out, e->key, op->n_results);
        return a->op_file ? CLI_EXIT_INPUT : CLI_EXIT_USAGE;
    }
    for (uint32_t j = 0; j < n_declared; j++) {
        const nx_op_tensor *d = &declared[j], *t = &op->results[j];
        if (d->dtype != NX_OP_DTYPE_UNSET && d->dtype != t->dtype) {
            cli_message("%s: result %u (%s) is declared %s, but %s produces %s", a->op_file, j, t->name,
                        nx_dtype_name(d->dtype), e->key, nx_dtype_name(t->dtype));
            return CLI_EXIT_INPUT;
        }
        if (d->ndims != 0 && !same_type(d, t->dtype, t->ndims, t->shape)) {
            nx_op_tensor want = *d;
            want.dtype = t->dtype;
            char want_s[128], got_s[128];
            nx_op_tensor_format(want_s, sizeof want_s, &want);
            nx_op_tensor_format(got_s, sizeof got_s, t);
            cli_message("%s: result %u (%s) is declared %s, but %s produces %s", a->op_file, j,
                        t->name, want_s, e->key, got_s);
            return CLI_EXIT_INPUT;
        }
    }
    for (uint32_t j = 0; j < op->n_results; j++) {
        const char *p = a->op_file ? r->files.result[j] : (int)j < a->n_out ? a->outs[j] : NULL;
        if (!p) continue;
        r->out_path[j] = a->op_file ? path_beside(a->op_file, p) : strdup(p);
        if (!r->out_path[j]) {
            cli_message("out of memory");
            return CLI_EXIT_RUNTIME;
        }
        if (a->profile && strcmp(r->out_path[j], a->profile) == 0) {
            cli_message("%s: result %u and --profile name the same file '%s'", where, j, a->profile);
            return CLI_EXIT_USAGE;
        }
        for (uint32_t k = 0; k < j; k++) {
            if (r->out_path[k] && strcmp(r->out_path[k], r->out_path[j]) == 0) {
                cli_message("%s: results %u and %u name the same file '%s'", where, k, j, r->out_path[j]);
                return CLI_EXIT_USAGE;
            }
        }
    }
    if (nx_macro_op_check(op, &err) != 0) {
        cli_message("%s: %s", a->op_file ? a->op_file : e->key, err.msg);
        return CLI_EXIT_INPUT;
    }
    return CLI_EXIT_OK;
}

/* ---- the report ---------------------------------------------------------------------- */

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void json_number(FILE *f, double v) {
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fputs("null", f);
}

/* The profile summary JSON as a string (without its trailing newline). */
static char *summary_json(const nx_machine *m, const nx_program *p, const nx_sim_result *res) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    int rc = nx_profile_summary_json(f, m, p, res);
    if (fclose(f) != 0 || rc != 0) {
        free(buf);
        return NULL;
    }
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) buf[--len] = '\0';
    return buf;
}

typedef struct run_report {
    const nx_registry_entry *entry;
    const nx_machine *machine;
    const nx_program *prog;
    uint32_t grid;
    const nx_sim_result *sim; /* NULL: functional */
    uint64_t new_traces, cache_hits;
    const nx_check_result *checks; /* NULL: no --check */
    const nx_tolerance *tolerances; /* with checks */
    const uint8_t *const *result_data;
    uint64_t seed;
} run_report;

static int print_text(const run_report *rr, const run_op *r) {
    const nx_macro_op *op = &r->op;
    char t[160];
    printf("nxsim run: %s -> leaf %s on %s, machine %s, %s\n", op->func_name,
           rr->entry->config.kernel_func->name, rr->grid == 2 ? "VNC(2) (2 cores)" : "1 core",
           rr->machine->geo.name, rr->sim ? "SystemC model" : "functional executor");
    for (uint32_t i = 0; i < op->n_operands; i++) {
        nx_op_tensor_format(t, sizeof t, &op->operands[i]);
        if (r->in_path[i])
            printf("  operand %-10s %-20s from %s\n", op->operands[i].name, t, r->in_path[i]);
        else
            printf("  operand %-10s %-20s pseudo-random (seed %" PRIu64 ")\n", op->operands[i].name, t,
                   rr->seed);
    }
    for (uint32_t j = 0; j < op->n_results; j++) {
        nx_op_tensor_format(t, sizeof t, &op->results[j]);
        printf("  result  %-10s %s%s%s\n", op->results[j].name, t, r->out_path[j] ? "  -> " : "",
               r->out_path[j] ? r->out_path[j] : "");
    }
    char *attrs = nx_attrs_to_json(&op->attrs);
    printf("  attrs   %s\n", attrs ? attrs : "?");
    free(attrs);
    if (rr->sim) {
        fflush(stdout);
        if (nx_profile_summary(stdout, rr->machine, rr->prog, rr->sim) != 0) return -1;
    } else {
        uint64_t n = 0;
        for (uint32_t c = 0; c < rr->prog->cores; c++)
            for (int e = 0; e < NX_ENG_COUNT; e++) n += rr->prog->stream[c][e].count;
        printf("functional run: %" PRIu64 " instructions (no timing; drop --functional for the "
               "SystemC model and a profile)\n",
               n);
    }
    printf("NEW_NKI_FE: %" PRIu64 " (new traces in this run; %" PRIu64 " from the trace cache)\n",
           rr->new_traces, rr->cache_hits);
    for (uint32_t j = 0; rr->checks && j < op->n_results; j++) {
        const nx_check_result *c = &rr->checks[j];
        printf("check: %s vs %s: max abs error %.9g, max rel error %.9g (tolerance: %s): %s", op->results[j].name,
               rr->entry->rules->reference_name, c->max_abs, c->max_rel, rr->tolerances[j].text,
               c->bad ? "FAILED" : "ok");
        if (c->bad) printf(", %" PRIu64 " elements differ, the first at flat index %" PRIu64, c->bad, c->first_bad);
        printf("\n");
    }
    return 0;
}

static int print_json(const run_report *rr, const run_op *r) {
    const nx_macro_op *op = &r->op;
    FILE *f = stdout;
    fputs("{\"kernel\": ", f);
    json_string(f, op->func_name);
    fputs(", \"leaf\": ", f);
    json_string(f, rr->entry->config.kernel_func->name);
    fputs(", \"machine\": ", f);
    json_string(f, rr->machine->geo.name);
    fprintf(f, ", \"grid\": %u, \"executor\": \"%s\", \"new_nki_fe\": %" PRIu64 ", \"cache_hits\": %" PRIu64,
            rr->grid, rr->sim ? "model" : "functional", rr->new_traces, rr->cache_hits);
    char *opj = nx_macro_op_to_json(op);
    if (!opj) return -1;
    fprintf(f, ",\n\"op\": %s", opj);
    free(opj);
    if (rr->sim) {
        char *s = summary_json(rr->machine, rr->prog, rr->sim);
        if (!s) return -1;
        fprintf(f, ",\n\"profile\": %s", s);
        free(s);
    } else {
        fputs(",\n\"profile\": null", f);
    }
    fputs(",\n\"results\": [", f);
    for (uint32_t j = 0; j < op->n_results; j++) {
        fputs(j ? ", {\"name\": " : "{\"name\": ", f);
        json_string(f, op->results[j].name);
        fputs(", \"file\": ", f);
        if (r->out_path[j])
            json_string(f, r->out_path[j]);
        else
            fputs("null", f);
        if (rr->checks) {
            const nx_check_result *c = &rr->checks[j];
            fputs(", \"check\": {\"reference\": ", f);
            json_string(f, rr->entry->rules->reference_name);
            fputs(", \"max_abs_error\": ", f);
            json_number(f, c->max_abs);
            fputs(", \"max_rel_error\": ", f);
            json_number(f, c->max_rel);
            fputs(", \"tolerance\": ", f);
            json_string(f, rr->tolerances[j].text);
            fputs(", \"tolerance_abs\": ", f);
            json_number(f, rr->tolerances[j].abs);
            fputs(", \"tolerance_rel\": ", f);
            json_number(f, rr->tolerances[j].rel);
            fprintf(f, ", \"mismatches\": %" PRIu64 ", \"ok\": %s}", c->bad, c->bad ? "false" : "true");
        }
        fputs("}", f);
    }
    fputs("]}\n", f);
    return 0;
}

/* ---- the run ---------------------------------------------------------------------------- */

static int execute(const run_args *a, run_op *r) {
    nx_error err;
    const nx_registry_entry *e = NULL;
    int status = build_op(a, r, &e);
    if (status != CLI_EXIT_OK) return status;
    nx_macro_op *op = &r->op;

    nx_machine m;
    if (nx_machine_load(a->machine ? a->machine : nx_machine_default(), &m, &err) != 0) {
        cli_message("%s", err.msg);
        return CLI_EXIT_INPUT;
    }
    nx_lowerer *L = nx_lowerer_new(&m.geo, NULL);
    if (!L) {
        cli_message("out of memory");
        return CLI_EXIT_RUNTIME;
    }
    const nx_program *prog;
    uint32_t grid;
    nx_state st;
    int have_state = 0, have_sim = 0;
    nx_sim_result res;
    memset(&res, 0, sizeof res);
    nx_check_result checks[NX_OP_MAX_TENSORS];
    nx_tolerance tols[NX_OP_MAX_TENSORS];
    uint8_t *ref_out[NX_OP_MAX_TENSORS] = {0};
    uint8_t *ref_in[NX_OP_MAX_TENSORS] = {0};
    int check_failed = 0;
    uint8_t *bufs[NX_OP_MAX_TENSORS] = {0};
    size_t lens[NX_OP_MAX_TENSORS] = {0};
    const uint8_t *result_data[NX_OP_MAX_TENSORS] = {0};
    int written = 0;
    int tin[NX_OP_MAX_TENSORS], tout[NX_OP_MAX_TENSORS];

    if (nx_lower(L, op, &prog, &grid, &err) != 0) {
        cli_message("%s", err.msg);
        status = CLI_EXIT_INPUT;
        goto done;
    }
    if (nx_state_init(&st, &m.geo, prog->cores, prog->hbm_bytes, prog->sem_count, &err) != 0) {
        cli_message("%s: %s", op->func_name, err.msg);
        status = CLI_EXIT_RUNTIME;
        goto done;
    }
    have_state = 1;
    for (uint32_t i = 0; i < op->n_operands; i++) {
        tin[i] = nx_program_find_tensor(prog, op->operands[i].name);
        const nx_tensor_decl *t = &prog->tensors[tin[i]];
        if (r->in[i].data)
            memcpy(st.hbm + t->offset, r->in[i].data, nx_tensor_bytes(t));
        else
            cli_tensor_fill_random(t, st.hbm + t->offset, a->seed, (uint32_t)tin[i]);
    }
    for (uint32_t j = 0; j < op->n_results; j++) {
        tout[j] = nx_program_find_tensor(prog, op->results[j].name);
        result_data[j] = st.hbm + prog->tensors[tout[j]].offset;
    }

    if (a->functional) {
        if (nx_exec_program(prog, &st, &err) != 0) {
            cli_message("%s: %s", op->func_name, err.msg);
            status = CLI_EXIT_RUNTIME;
            goto done;
        }
    } else {
        nx_sim_options opt = {a->profile != NULL, isatty(2)};
        if (nx_sim_run(&m, prog, &st, &opt, &res, &err) != 0) {
            cli_message("%s: %s", op->func_name, err.msg);
            status = CLI_EXIT_RUNTIME;
            goto done;
        }
        have_sim = 1;
    }

    if (a->check) {
        if (!e->rules || !e->rules->reference) {
            cli_message("%s: no reference implementation to check against yet", e->key);
            status = CLI_EXIT_INPUT;
            goto done;
        }
        /* The reference reads the inputs as given (the .npy data, or the
         * same pseudo-random values regenerated), not the HBM after the run:
         * a leaf that wrote into its input cannot hide it. */
        const void *ins[NX_OP_MAX_TENSORS];
        void *outs[NX_OP_MAX_TENSORS];
        for (uint32_t i = 0; i < op->n_operands; i++) {
            if (r->in[i].data) {
                ins[i] = r->in[i].data;
                continue;
            }
            const nx_tensor_decl *t = &prog->tensors[tin[i]];
            ref_in[i] = malloc(nx_tensor_bytes(t) + 1);
            if (!ref_in[i]) {
                cli_message("out of memory");
                status = CLI_EXIT_RUNTIME;
                goto done;
            }
            cli_tensor_fill_random(t, ref_in[i], a->seed, (uint32_t)tin[i]);
            ins[i] = ref_in[i];
        }
        for (uint32_t j = 0; j < op->n_results; j++) {
            ref_out[j] = calloc(1, nx_tensor_bytes(&prog->tensors[tout[j]]) + 1);
            if (!ref_out[j]) {
                cli_message("out of memory");
                status = CLI_EXIT_RUNTIME;
                goto done;
            }
            outs[j] = ref_out[j];
        }
        if (e->rules->reference(op, ins, outs, &err) != 0) {
            cli_message("%s: %s", e->rules->reference_name, err.msg);
            status = CLI_EXIT_RUNTIME;
            goto done;
        }
        for (uint32_t j = 0; j < op->n_results; j++) {
            const nx_tensor_decl *t = &prog->tensors[tout[j]];
            if (nx_op_rules_tolerance(e->rules, op, j, &tols[j], &err) != 0) {
                cli_message("%s: tolerance: %s", e->key, err.msg);
                status = CLI_EXIT_RUNTIME;
                goto done;
            }
            nx_check_compare((nx_dtype)t->dtype, result_data[j], ref_out[j],
                             nx_tensor_bytes(t) / nx_dtype_size((nx_dtype)t->dtype), &tols[j], &checks[j]);
            check_failed |= checks[j].bad != 0;
        }
    }

    /* Serialise every output before writing anything. */
    for (uint32_t j = 0; j < op->n_results; j++) {
        if (!r->out_path[j]) continue;
        nx_npy view = cli_tensor_view(&prog->tensors[tout[j]], result_data[j]);
        if (nx_npy_serialize(&view, &bufs[j], &lens[j], &err) != 0) {
            cli_message("%s: %s", r->out_path[j], err.msg);
            status = CLI_EXIT_RUNTIME;
            goto done;
        }
    }

    run_report rr = {e,         &m,     prog,      grid, have_sim ? &res : NULL, nx_lowerer_new_traces(L),
                     nx_lowerer_cache_hits(L), a->check ? checks : NULL, tols, result_data, a->seed};
    if ((a->json ? print_json(&rr, r) : print_text(&rr, r)) != 0) {
        cli_message("cannot write the report to standard output");
        status = CLI_EXIT_RUNTIME;
        goto done;
    }
    if (!a->json) {
        for (uint32_t j = 0; j < op->n_results; j++) {
            if (r->out_path[j]) continue;
            if (cli_tensor_summary(stdout, &prog->tensors[tout[j]], result_data[j]) != 0) {
                cli_message("cannot write to standard output");
                status = CLI_EXIT_RUNTIME;
                goto done;
            }
        }
    }
    if (fflush(stdout) != 0) {
        cli_message("cannot write to standard output");
        status = CLI_EXIT_RUNTIME;
        goto done;
    }
    if (check_failed) {
        cli_message("%s: --check failed: results differ from %s beyond the tolerance; no output written",
                    op->func_name, e->rules->reference_name);
        status = CLI_EXIT_RUNTIME;
        goto done;
    }

    /* Write: results, then the trace; undo on failure. */
    for (uint32_t j = 0; j < op->n_results; j++) {
        if (!r->out_path[j]) continue;
        if (nx_write_file_atomic(r->out_path[j], bufs[j], lens[j], &err) != 0) {
            cli_message("%s", err.msg);
            status = CLI_EXIT_RUNTIME;
            goto undo;
        }
        written = (int)j + 1;
    }
    if (a->profile && nx_profile_write_trace(a->profile, &m, prog, &res, &err) != 0) {
        cli_message("%s", err.msg);
        status = CLI_EXIT_RUNTIME;
        goto undo;
    }
    goto done;
undo:
    for (int j = 0; j < written; j++)
        if (r->out_path[j]) unlink(r->out_path[j]);
done:
    for (int j = 0; j < NX_OP_MAX_TENSORS; j++) {
        free(ref_out[j]);
        free(ref_in[j]);
        free(bufs[j]);
    }
    if (have_sim) nx_sim_result_free(&res);
    if (have_state) nx_state_free(&st);
    nx_lowerer_free(L);
    return status;
}

int cmd_run(int argc, char **argv) {
    run_args a;
    memset(&a, 0, sizeof a);
    a.seed = 1;
    a.ins = calloc((size_t)argc, sizeof *a.ins);
    a.outs = calloc((size_t)argc, sizeof *a.outs);
    a.attrs = calloc((size_t)argc, sizeof *a.attrs);
    int status;
    if (!a.ins || !a.outs || !a.attrs) {
        cli_message("out of memory");
        status = CLI_EXIT_RUNTIME;
    } else {
        status = parse_args(argc, argv, &a);
        if (status < 0) {
            status = CLI_EXIT_OK; /* --help */
        } else if (status == CLI_EXIT_OK) {
            run_op r;
            memset(&r, 0, sizeof r);
            nx_macro_op_init(&r.op);
            status = execute(&a, &r);
            run_op_free(&r);
        }
    }
    free(a.ins);
    free(a.outs);
    free(a.attrs);
    return status;
}
