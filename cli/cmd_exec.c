/* nxsim exec: load a program and a machine, fill the input tensors, run,
 * write or summarise the outputs.
 *
 * Order matters for "no partial output": everything that can fail (loading,
 * validation, inputs, the run, the race check, serialising every output)
 * happens before the first output file is written; if writing output k
 * still fails, outputs 0..k-1 written by this run are removed again
 * (cli/outputs.h). The run itself is registry/run/run.h's nx_run_program. */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "io.h"
#include "isa/npy.h"
#include "isa/state.h"
#include "isa/strbuf.h"
#include "isa/tensor_random.h"
#include "options.h"
#include "outputs.h"
#include "paths.h"
#include "sim/model.h"
#include "registry/run/run.h"
#include "sim/profile.h"
#include "tensors.h"

void cmd_exec_help(FILE *f) {
    fputs("Usage: nxsim exec PROGRAM [--in NAME=FILE.npy]... [--out NAME=FILE.npy]...\n"
          "                  [--machine NAME|FILE.json] [--seed N] [--functional]\n"
          "                  [--pe model|rtl] [--vcd FILE.vcd] [--race-check]\n"
          "                  [--profile FILE.json] [--timeline FILE.svg] [--by-source]\n"
          "                  [--quiet] [--threads N] [--max-memory SIZE] [--max-fill SIZE]\n"
          "\n"
          "Runs PROGRAM, a .nxb binary or .nxs text program (recognised by the .nxb\n"
          "magic, not by the file name), on the machine it targets.\n"
          "\n"
          "Input tensors named with --in are loaded from .npy files, whose dtype and\n"
          "shape must equal the tensor's declaration. Inputs not given are filled with\n"
          "deterministic pseudo-random values from --seed (floats uniform in [-1, 1),\n"
          "signed integers in [-8, 8], unsigned integers in [0, 16]); a note on stderr\n"
          "names them. Tensors named with --out (any role) are written as .npy files\n"
          "after the run; every output tensor not named with --out is summarised on\n"
          "standard output as\n"
          "  NAME DTYPE [SHAPE] checksum=SUM min=MIN max=MAX first=[V0, V1, ...]\n"
          "If anything fails, no --out, --profile, --timeline or --vcd file is\n"
          "written. An output that is one of the inputs (the program, an --in file,\n"
          "the machine file) or another output is refused (exit 2).\n"
          "\n"
          "Options:\n"
          "  -i, --in NAME=FILE.npy    load input tensor NAME from FILE.npy\n"
          "  -o, --out NAME=FILE.npy   write tensor NAME to FILE.npy after the run\n"
          "  -m, --machine SPEC        run on this machine instead of the program's\n"
          "                            .machine: a preset (trn1, trn2) or a JSON file\n"
          "  -s, --seed N              seed for the pseudo-random inputs (default 1;\n"
          "                            decimal, or hexadecimal with 0x: 010 is ten)\n"
          "      --functional          use the functional executor (instructions run\n"
          "                            instantly in a dependency-respecting order)\n"
          "                            instead of the cycle-approximate SystemC model,\n"
          "                            the default; both compute the same results\n"
          "      --pe model|rtl        the PE's datapath on the SystemC model: model\n"
          "                            (default) uses the functional semantics and the\n"
          "                            cost formulas; rtl sends every load_stationary\n"
          "                            and multiply_moving through the Verilated RTL\n"
          "                            PE array (values and PE cycles from the RTL;\n"
          "                            exact, about 1 ms per array cycle)\n"
          "      --vcd FILE.vcd        with --pe rtl: write the RTL waveform of the run\n"
          "                            (GTKWave); a second core's goes to\n"
          "                            FILE.core1.vcd\n"
          "      --threads N           host threads for the functional work of large\n"
          "                            matmuls and DMA copies (default NXSIM_THREADS,\n"
          "                            else the host's CPUs, at most 8): the same\n"
          "                            results and simulated times\n"
          "      --race-check          check the run for races (sim/race.h): two\n"
          "                            accesses of the same memory, one a write, that\n"
          "                            no semaphore or barrier orders; a race is an\n"
          "                            error (exit 1, no --out written). Off by\n"
          "                            default: it keeps the model's per-instruction\n"
          "                            log and scans it (needs the SystemC model)\n"
          "  -p, --profile FILE.json   write a Chrome/Perfetto trace of the run\n"
          "  -t, --timeline FILE.svg   write a picture of the run: a lane per engine\n"
          "                            and DMA queue of each core, time in us and cycles\n"
          "  -b, --by-source           print the profile summary and the busy time\n"
          "                            grouped by the source line that emitted each\n"
          "                            instruction (programs built through the kernel\n"
          "                            authoring layer; a .nxs/.nxb file has none)\n"
          "  -q, --quiet               no progress line (shown on a terminal for runs\n"
          "                            longer than a second)\n"
          "      --max-memory SIZE     the most memory the run may hold (HBM, on-chip\n"
          "                            memories, log, loaded and written tensors),\n"
          "                            checked before anything is allocated; SIZE in\n"
          "                            bytes or with K/M/G/T (4G, 512MiB); default:\n"
          "                            half of what this process may use\n"
          "      --max-fill SIZE       the most pseudo-random input values the run may\n"
          "                            make (default 1G)\n"
          "  -h, --help                show this help and exit\n"
          "\n"
          "Exit status: 0 ok; 1 fault or deadlock during the run, a race found by\n"
          "--race-check, or an output could not be written; 2 usage error; 3 bad\n"
          "input (malformed program or .npy, validation error, unknown tensor, --in\n"
          "for a non-input tensor, dtype or shape mismatch, unknown machine).\n",
          f);
}

typedef struct binding {
    const char *name; /* points into argv (the '=' is replaced by NUL) */
    const char *path;
    int tensor; /* index in the program's tensor table */
} binding;

typedef struct exec_args {
    const char *program;
    const char *machine;
    binding *ins, *outs;
    int n_in, n_out;
    const char *profile, *timeline;
    int by_source;
    cli_backend backend; /* seed, --functional, --pe, --vcd, --race-check */
} exec_args;

/* Splits NAME=FILE in place. */
static int split_binding(const char *opt, char *arg, binding *b) {
    char *eq = strchr(arg, '=');
    if (!eq || eq == arg || eq[1] == '\0')
        return cli_usage_error("exec", "%s expects NAME=FILE.npy, got '%s'", opt, arg);
    *eq = '\0';
    b->name = arg;
    b->path = eq + 1;
    b->tensor = -1;
    return 0;
}

static int parse_args(int argc, char **argv, exec_args *a) {
    static const struct option longopts[] = {
        {"in", required_argument, NULL, 'i'},
        {"out", required_argument, NULL, 'o'},
        {"machine", required_argument, NULL, 'm'},
        {"profile", required_argument, NULL, 'p'},
        {"timeline", required_argument, NULL, 't'},
        {"by-source", no_argument, NULL, 'b'},
        CLI_BACKEND_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, status = CLI_EXIT_OK;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":i:o:m:p:t:bs:qh", longopts, NULL)) != -1) {
        if (cli_backend_option("exec", c, optarg, &a->backend, &status)) {
            if (status != CLI_EXIT_OK) return status;
            continue;
        }
        switch (c) {
        case 'i':
            if (split_binding("--in", optarg, &a->ins[a->n_in]) != 0) return CLI_EXIT_USAGE;
            for (int k = 0; k < a->n_in; k++)
                if (strcmp(a->ins[k].name, optarg) == 0)
                    return cli_usage_error("exec", "--in %s is given twice", optarg);
            a->n_in++;
            break;
        case 'o':
            if (split_binding("--out", optarg, &a->outs[a->n_out]) != 0) return CLI_EXIT_USAGE;
            for (int k = 0; k < a->n_out; k++)
                if (strcmp(a->outs[k].name, optarg) == 0)
                    return cli_usage_error("exec", "--out %s is given twice", optarg);
            a->n_out++;
            break;
        case 'm': a->machine = optarg; break;
        case 'p': a->profile = optarg; break;
        case 't': a->timeline = optarg; break;
        case 'b': a->by_source = 1; break;
        case 'h': cmd_exec_help(stdout); return -1;
        default: return cli_option_error("exec", c, argc, argv);
        }
    }
    status = cli_backend_validate("exec", &a->backend);
    if (status != CLI_EXIT_OK) return status;
    if (a->backend.functional && (a->profile || a->timeline || a->by_source))
        return cli_usage_error("exec", "%s needs the SystemC model: drop --functional",
                               a->profile ? "--profile" : a->timeline ? "--timeline" : "--by-source");
    if (optind >= argc) return cli_usage_error("exec", "no program given");
    if (argc - optind > 1) return cli_usage_error("exec", "expected one program, got %d", argc - optind);
    a->program = argv[optind];
    return CLI_EXIT_OK;
}

/* Resolves every --in/--out name to a tensor; --in only for inputs. */
static int resolve_bindings(const nx_program *p, exec_args *a) {
    for (int k = 0; k < a->n_in; k++) {
        binding *b = &a->ins[k];
        b->tensor = nx_program_find_tensor(p, b->name);
        if (b->tensor < 0) {
            cli_message("%s: --in %s: the program has no tensor '%s'", a->program, b->name, b->name);
            return -1;
        }
        const nx_tensor_decl *t = &p->tensors[b->tensor];
        if (t->role != NX_ROLE_INPUT) {
            cli_message("%s: --in %s: tensor '%s' has role %s, not input", a->program, b->name,
                        b->name, nx_role_name((nx_tensor_role)t->role));
            return -1;
        }
    }
    for (int k = 0; k < a->n_out; k++) {
        binding *b = &a->outs[k];
        b->tensor = nx_program_find_tensor(p, b->name);
        if (b->tensor < 0) {
            cli_message("%s: --out %s: the program has no tensor '%s'", a->program, b->name, b->name);
            return -1;
        }
    }
    return 0;
}

/* Loads --in files and fills the other inputs with pseudo-random values. */
static int load_inputs(const nx_program *p, const exec_args *a, nx_state *st) {
    nx_error err;
    for (int k = 0; k < a->n_in; k++) {
        const nx_tensor_decl *t = &p->tensors[a->ins[k].tensor];
        if (cli_tensor_load(a->ins[k].path, t, st->hbm + t->offset, &err) != 0) {
            cli_message("%s", err.msg);
            return -1;
        }
    }
    nx_strbuf names = NX_STRBUF_INIT;
    int filled = 0;
    for (uint32_t i = 0; i < p->tensor_count; i++) {
        const nx_tensor_decl *t = &p->tensors[i];
        if (t->role != NX_ROLE_INPUT) continue;
        int given = 0;
        for (int k = 0; k < a->n_in && !given; k++) given = a->ins[k].tensor == (int)i;
        if (given) continue;
        nx_tensor_fill_random(t, st->hbm + t->offset, a->backend.seed, i);
        nx_sb_printf(&names, "%s%s", filled ? ", " : "", t->name);
        filled++;
    }
    if (filled)
        cli_message("note: %s %s not given with --in: filled with pseudo-random values (seed %" PRIu64 ")",
                    filled == 1 ? "input" : "inputs", names.failed ? "..." : nx_sb_str(&names), a->backend.seed);
    nx_sb_free(&names);
    return 0;
}

/* Serialises every --out, prints the summaries, then writes the files
 * (cli/outputs.h: nothing is left half written). */
static int write_outputs(const nx_program *p, const exec_args *a, const nx_state *st, const nx_machine *m,
                         const nx_run_trace *trace, cli_outputs *outs) {
    for (int k = 0; k < a->n_out; k++) {
        const nx_tensor_decl *t = &p->tensors[a->outs[k].tensor];
        cli_outputs_add(outs, a->outs[k].path, t, st->hbm + t->offset);
    }
    cli_profile_src src = {m, p, &trace->sim};
    if (trace->on_model) cli_outputs_add_profile(outs, a->profile, a->timeline, &src);
    int status = cli_outputs_serialize(outs) == 0 ? CLI_EXIT_OK : CLI_EXIT_RUNTIME;
    for (uint32_t i = 0; i < p->tensor_count && status == CLI_EXIT_OK; i++) {
        const nx_tensor_decl *t = &p->tensors[i];
        if (t->role != NX_ROLE_OUTPUT) continue;
        int named = 0;
        for (int k = 0; k < a->n_out && !named; k++) named = a->outs[k].tensor == (int)i;
        if (named) continue;
        if (cli_tensor_summary(stdout, t, st->hbm + t->offset) != 0) {
            cli_message("cannot write to standard output");
            status = CLI_EXIT_RUNTIME;
        }
    }
    if (status == CLI_EXIT_OK && a->by_source && trace->on_model) {
        nx_error err;
        if (nx_profile_summary(stdout, m, p, &trace->sim) != 0 ||
            nx_profile_by_source(stdout, p, &trace->sim, 0, &err) != 0) {
            cli_message("cannot write to standard output");
            status = CLI_EXIT_RUNTIME;
        }
    }
    if (status == CLI_EXIT_OK && fflush(stdout) != 0) {
        cli_message("cannot write to standard output");
        status = CLI_EXIT_RUNTIME;
    }
    if (status == CLI_EXIT_OK && cli_outputs_write(outs) != 0) status = CLI_EXIT_RUNTIME;
    return status;
}

/* Before anything is allocated or filled: what the run will hold within
 * --max-memory (the state, the log, each --in file while it loads, the
 * serialised --out files) and the inputs left pseudo-random within
 * --max-fill. */
static int check_limits(const nx_machine *m, const nx_program *p, const exec_args *a) {
    nx_run_options opt = cli_backend_run_options(&a->backend);
    opt.keep_log = a->profile || a->timeline || a->by_source;
    uint64_t largest_in = 0, outs = 0, filled = 0;
    for (int k = 0; k < a->n_in; k++) {
        uint64_t b = nx_tensor_bytes(&p->tensors[a->ins[k].tensor]);
        if (b > largest_in) largest_in = b;
    }
    for (int k = 0; k < a->n_out; k++) outs += nx_tensor_bytes(&p->tensors[a->outs[k].tensor]);
    opt.held_bytes = 2 * largest_in + outs; /* a .npy is read whole, then parsed */
    nx_strbuf names = NX_STRBUF_INIT;
    int n = 0;
    for (uint32_t i = 0; i < p->tensor_count; i++) {
        const nx_tensor_decl *t = &p->tensors[i];
        int given = t->role != NX_ROLE_INPUT;
        for (int k = 0; k < a->n_in && !given; k++) given = a->ins[k].tensor == (int)i;
        if (given) continue;
        filled += nx_tensor_bytes(t);
        nx_sb_printf(&names, "%s%s", n++ ? ", " : "", t->name);
    }
    nx_run_memory mem;
    nx_run_memory_of_program(m, p, &opt, &mem);
    nx_error err;
    nx_strbuf what = NX_STRBUF_INIT;
    nx_sb_printf(&what, "%s %s not given with --in", n == 1 ? "input" : "inputs",
                 names.failed ? "..." : nx_sb_str(&names));
    int rc = 0;
    if (nx_run_memory_check(&mem, &opt, &err) != 0 ||
        nx_run_fill_check(filled, what.failed ? "inputs" : nx_sb_str(&what), &opt, &err) != 0)
        rc = cli_limit_error(&a->backend, a->program, err.msg) == CLI_EXIT_OK ? 0 : -1;
    nx_sb_free(&names);
    nx_sb_free(&what);
    return rc;
}

/* Every file the command line names: no output may be an input or another
 * output (cli/paths.h). The waveforms are one file per core of the program. */
static int check_paths(const nx_program *p, const exec_args *a) {
    cli_paths ps = CLI_PATHS_INIT;
    cli_paths_input(&ps, a->program, "the program");
    cli_paths_machine(&ps, a->machine);
    for (int k = 0; k < a->n_in; k++) cli_paths_input(&ps, a->ins[k].path, "--in %s", a->ins[k].name);
    for (int k = 0; k < a->n_out; k++) cli_paths_output(&ps, a->outs[k].path, "--out %s", a->outs[k].name);
    cli_paths_output(&ps, a->profile, "--profile");
    cli_paths_output(&ps, a->timeline, "--timeline");
    char vcd[NX_MAX_CORES][4096];
    for (uint32_t c = 0; a->backend.vcd && c < p->cores && c < NX_MAX_CORES; c++)
        cli_paths_output(&ps, nx_sim_vcd_path(a->backend.vcd, c, vcd[c], sizeof vcd[c]), "--vcd");
    int status = cli_paths_check("exec", &ps);
    cli_paths_free(&ps);
    return status;
}

static int run(exec_args *a) {
    nx_error err;
    nx_program prog;
    if (nx_program_load(a->program, &prog, &err) != 0) {
        cli_message("%s", err.msg);
        return CLI_EXIT_INPUT;
    }
    int status = check_paths(&prog, a);
    nx_machine m;
    nx_state st;
    int have_state = 0;
    cli_outputs outs;
    memset(&outs, 0, sizeof outs);
    if (status != CLI_EXIT_OK) {
        /* printed */
    } else if (cli_load_machine(a->machine, &prog, a->program, &m, &err) != 0) {
        cli_message("%s", err.msg);
        status = CLI_EXIT_INPUT;
    } else if (nx_program_validate(&prog, &m.geo, &err) != 0) {
        cli_message("%s: %s", a->program, err.msg);
        status = CLI_EXIT_INPUT;
    } else if (resolve_bindings(&prog, a) != 0) {
        status = CLI_EXIT_INPUT;
    } else if (check_limits(&m, &prog, a) != 0) {
        status = CLI_EXIT_INPUT;
    } else if (nx_state_init(&st, &m.geo, prog.cores, prog.hbm_bytes, prog.sem_count, &err) != 0) {
        cli_message("%s: %s", a->program, err.msg);
        status = CLI_EXIT_RUNTIME;
    } else {
        have_state = 1;
        /* The SystemC model (sim/model.h) by default, the functional executor
         * with --functional: the same results, the same error messages. */
        nx_run_options opt = cli_backend_run_options(&a->backend);
        nx_run_trace trace;
        memset(&trace, 0, sizeof trace);
        nx_run_failure why = NX_RUN_OK;
        opt.keep_log = a->profile || a->timeline || a->by_source;
        if (cli_outputs_init(&outs, a->n_out + 2 + NX_MAX_CORES) != 0 ||
            cli_stage_vcd(&outs, a->backend.vcd, prog.cores, &opt) != 0) {
            status = CLI_EXIT_RUNTIME;
        } else if (load_inputs(&prog, a, &st) != 0) {
            status = CLI_EXIT_INPUT;
        } else if (nx_run_program(&m, &prog, &st, &opt, &trace, &why, &err) != 0) {
            cli_message("%s: %s", a->program, err.msg);
            status = why == NX_RUN_BAD_INPUT ? CLI_EXIT_USAGE : CLI_EXIT_RUNTIME;
        } else {
            if (trace.race_checked)
                cli_message("note: race check: no race in %zu log records", trace.sim.log_count);
            status = write_outputs(&prog, a, &st, &m, &trace, &outs);
        }
        nx_run_trace_free(&trace);
    }
    cli_outputs_free(&outs); /* a failed run leaves no waveform behind */
    if (have_state) nx_state_free(&st);
    nx_program_free(&prog);
    return status;
}

int cmd_exec(int argc, char **argv) {
    exec_args a;
    memset(&a, 0, sizeof a);
    a.backend = (cli_backend)CLI_BACKEND_INIT;
    /* At most one binding per argument. */
    a.ins = calloc((size_t)argc, sizeof *a.ins);
    a.outs = calloc((size_t)argc, sizeof *a.outs);
    int status;
    if (!a.ins || !a.outs) {
        cli_message("out of memory");
        status = CLI_EXIT_RUNTIME;
    } else {
        status = parse_args(argc, argv, &a);
        if (status < 0)
            status = CLI_EXIT_OK; /* --help */
        else if (status == CLI_EXIT_OK)
            status = run(&a);
    }
    free(a.ins);
    free(a.outs);
    return status;
}
