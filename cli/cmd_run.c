/* nxsim run: build a macro-op (from the command line or an op JSON file,
 * cli/run_build.c), run it through the run path (registry/run/run.h: lower,
 * run on the model or the functional executor, race check, reference
 * check), print the report (cli/run_report.c) and write the results.
 *
 * Order matters for "no partial output": everything that can fail (the op,
 * inputs, lowering, the run, the checks, serialising every output) happens
 * before the first file is written; if writing file k still fails, the files
 * this run already wrote are removed again (cli/outputs.h). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "outputs.h"
#include "paths.h"
#include "io.h"
#include "sim/model.h"
#include "run_cmd.h"
#include "sim/profile.h"

void cmd_run_help(FILE *f) {
    fputs("Usage: nxsim run KEY [-i FILE.npy]... [-o FILE.npy]... [-a NAME=JSON]...\n"
          "                 [--machine NAME|FILE] [--profile FILE.json] [--check] [--json]\n"
          "                 [--seed N] [--functional] [--race-check] [--pe model|rtl]\n"
          "                 [--vcd FILE.vcd] [--timeline FILE.svg] [--by-source] [--quiet]\n"
          "                 [--threads N] [--max-memory SIZE] [--max-fill SIZE]\n"
          "       nxsim run --op FILE.json [options as above but -i, -o, -a]\n"
          "\n"
          "Runs the kernel KEY (a macro-op func_name): a key of the internal kernel\n"
          "registry ('nxsim list'), or, when no registry entry has that name, a\n"
          "composite kernel of the inventory ('nxsim kernels', tier composite). The\n"
          "registry (or composite) resolves it to the function that traces it, which\n"
          "is traced once per core of its grid into a program, and the program runs\n"
          "on the SystemC model of the machine. Prints the op, the profile summary and\n"
          "NEW_NKI_FE (programs traced by this run rather than taken from the trace\n"
          "cache). A name that is neither gets the registry's 'is not registered'\n"
          "error, verbatim. The top-k entry point is the composite topk:\n"
          "  nxsim run topk -i x.npy -o values.npy -o indices.npy -a k=8\n"
          "      [-a largest=false] [-a axis=-1] [-a 'method=\"AUTO\"']\n"
          "(method SCANNING, CASCADED or ROTATIONAL, or AUTO: the method measured\n"
          "fastest; the report's 'dispatch' line says which and why).\n"
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
          "  -p, --profile FILE.json  write a Chrome/Perfetto trace of the run (each\n"
          "                           slice names the kernel line that emitted it)\n"
          "  -t, --timeline FILE.svg  write a picture of the run: a lane per engine and\n"
          "                           DMA queue of each core, time in us and cycles\n"
          "  -b, --by-source          after the summary, the busy time of every engine\n"
          "                           and DMA queue grouped by the kernel source line\n"
          "                           that emitted the instructions (with --json: key\n"
          "                           by_source)\n"
          "  -c, --check              compare every result with the kernel's reference\n"
          "                           (kernels/ref): print the max abs and rel error,\n"
          "                           exit 1 beyond the tolerance (transposes: exact)\n"
          "  -j, --json               print the report as one JSON object\n"
          "  -s, --seed N             seed of the pseudo-random inputs (default 1;\n"
          "                           decimal, or hexadecimal with 0x: 010 is ten)\n"
          "      --functional         use the functional executor (no timing, no\n"
          "                           profile) instead of the SystemC model\n"
          "      --race-check         check the run for races (sim/race.h): two\n"
          "                           accesses of the same memory, one a write, that\n"
          "                           nothing in the program orders; a race is an error\n"
          "                           (exit 1). Off by default: it keeps the model's\n"
          "                           per-instruction log and scans it (needs the model)\n"
          "      --pe model|rtl       the PE datapath on the SystemC model (default\n"
          "                           model; rtl: matmuls through the Verilated RTL PE\n"
          "                           array, exact, about 1 ms per array cycle)\n"
          "      --vcd FILE.vcd       with --pe rtl: the RTL waveform of the run\n"
          "      --threads N          host threads for the functional work of large\n"
          "                           matmuls and DMA copies (default NXSIM_THREADS,\n"
          "                           else the host's CPUs, at most 8): the same\n"
          "                           results and simulated times\n"
          "  -q, --quiet              no progress line (shown on a terminal for runs\n"
          "                           longer than a second: simulated time,\n"
          "                           instructions retired, wall time)\n"
          "      --max-memory SIZE    the most memory the run may hold, checked before\n"
          "                           anything is traced or allocated (4G, 512MiB;\n"
          "                           default: half of what this process may use)\n"
          "      --max-fill SIZE      the most pseudo-random operand values (default 1G)\n"
          "  -h, --help               show this help and exit\n"
          "\n"
          "Exit status: 0 ok; 1 fault or deadlock during the run, a race found by\n"
          "--race-check, a failed --check, or an output could not be written; 2 usage\n"
          "error (options, -a syntax or JSON, an output that is an input or another\n"
          "output); 3 bad input: an unknown KEY (the registry's 'is not registered'\n"
          "error), a malformed .npy or op file, an attribute the kernel does not\n"
          "read, an operand the leaf cannot take (the leaf's rule), an unknown\n"
          "machine, a run past --max-memory or --max-fill. No output file is\n"
          "written unless the whole run succeeds.\n",
          f);
}

enum { OPT_OP = 256 };

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
        {"timeline", required_argument, NULL, 't'},
        {"by-source", no_argument, NULL, 'b'},
        CLI_BACKEND_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, status = CLI_EXIT_OK;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":i:o:a:m:p:t:bcjs:qh", longopts, NULL)) != -1) {
        if (cli_backend_option("run", c, optarg, &a->backend, &status)) {
            if (status != CLI_EXIT_OK) return status;
            continue;
        }
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
        case 't': a->timeline = optarg; break;
        case 'b': a->by_source = 1; break;
        case 'c': a->check = 1; break;
        case 'j': a->json = 1; break;
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
        if (positional == 0) return cli_usage_error("run", "no kernel given (a registry key, see 'nxsim list', or a composite, see 'nxsim kernels')");
        if (positional > 1) return cli_usage_error("run", "expected one kernel, got %d arguments", positional);
        a->key = argv[optind];
    }
    if (a->backend.functional && (a->profile || a->timeline || a->by_source))
        return cli_usage_error("run", "%s needs the SystemC model: drop --functional",
                               a->profile ? "--profile" : a->timeline ? "--timeline" : "--by-source");
    status = cli_backend_validate("run", &a->backend);
    if (status != CLI_EXIT_OK) return status;
    if (a->n_in > NX_OP_MAX_TENSORS || a->n_out > NX_OP_MAX_TENSORS)
        return cli_usage_error("run", "at most %d operands and %d results", NX_OP_MAX_TENSORS,
                               NX_OP_MAX_TENSORS);
    return CLI_EXIT_OK;
}

/* ---- the run ------------------------------------------------------------------- */

static int exit_status(nx_run_failure f) {
    return f == NX_RUN_BAD_INPUT || f == NX_RUN_LIMIT ? CLI_EXIT_INPUT : CLI_EXIT_RUNTIME;
}

/* The report, the check verdict, then the files: results, the trace, the
 * timeline and the waveforms, committed together (cli/outputs.h). */
static int report_and_write(const run_args *a, const run_op *r, const nx_machine *m, const nx_run_result *res,
                            cli_outputs *outs) {
    const nx_macro_op *op = &r->prep.op;
    /* the results' files take the op's shapes (a 0-d result is a 1-element tensor of the program) */
    nx_tensor_decl decl[NX_OP_MAX_TENSORS]; /* outs borrows them until written, below */
    for (uint32_t j = 0; j < op->n_results && j < NX_OP_MAX_TENSORS; j++)
        if (r->out_path[j]) {
            decl[j] = res->prog->tensors[res->result_tensor[j]];
            if (op->results[j].ndims == 0) decl[j].ndims = 0;
            cli_outputs_add(outs, r->out_path[j], &decl[j], res->results[j]);
        }
    cli_profile_src src = {m, res->prog, &res->trace.sim};
    cli_outputs_add_profile(outs, a->profile, a->timeline, &src);
    int status = CLI_EXIT_OK;
    if (cli_outputs_serialize(outs) != 0) {
        status = CLI_EXIT_RUNTIME;
    } else if ((a->json ? cli_run_print_json(a, r, m, res) : cli_run_print_text(a, r, m, res)) != 0 ||
               fflush(stdout) != 0) {
        cli_message("cannot write the report to standard output");
        status = CLI_EXIT_RUNTIME;
    } else if (res->check_failures) {
        cli_message("%s: --check failed: results differ from %s beyond the tolerance; no output written",
                    op->func_name, res->target.rules->reference_name);
        status = CLI_EXIT_RUNTIME;
    } else if (cli_outputs_write(outs) != 0) {
        status = CLI_EXIT_RUNTIME;
    }
    return status;
}

/* Every file the run reads or writes: no output may be an input or another
 * output (cli/paths.h). `cores`: the waveforms are one file per core. */
static int check_paths(const run_args *a, const run_op *r, uint32_t cores) {
    cli_paths ps = CLI_PATHS_INIT;
    cli_paths_input(&ps, a->op_file, "--op");
    cli_paths_machine(&ps, a->machine);
    const char *where = a->op_file ? a->op_file : "-o";
    for (uint32_t i = 0; i < r->prep.op.n_operands; i++)
        if (r->in_path[i]) cli_paths_input(&ps, r->in_path[i], "operand %u (%s)", i, r->prep.op.operands[i].name);
    for (uint32_t j = 0; j < r->prep.op.n_results; j++)
        if (r->out_path[j]) cli_paths_output(&ps, r->out_path[j], "%s: result %u (%s)", where, j, r->prep.op.results[j].name);
    cli_paths_output(&ps, a->profile, "--profile");
    cli_paths_output(&ps, a->timeline, "--timeline");
    char vcd[NX_MAX_CORES][4096];
    for (uint32_t c = 0; a->backend.vcd && c < cores && c < NX_MAX_CORES; c++)
        cli_paths_output(&ps, nx_sim_vcd_path(a->backend.vcd, c, vcd[c], sizeof vcd[c]), "--vcd");
    int status = cli_paths_check("run", &ps);
    cli_paths_free(&ps);
    return status;
}

static int execute(const run_args *a, const nx_kernel_registry *reg, const nx_composite_table *comps) {
    nx_error err;
    nx_machine m;
    if (nx_machine_load(a->machine ? a->machine : nx_machine_default(), &m, &err) != 0) {
        cli_message("%s", err.msg);
        return CLI_EXIT_INPUT;
    }
    /* A fresh lowerer per run: NEW_NKI_FE counts this run's traces. */
    nx_lowerer *L = nx_lowerer_new_machine(&m, reg, comps);
    if (!L) {
        cli_message("out of memory");
        return CLI_EXIT_RUNTIME;
    }
    run_op r;
    memset(&r, 0, sizeof r);
    nx_macro_op_init(&r.given);
    nx_prepared_init(&r.prep);
    nx_run_result res;
    memset(&res, 0, sizeof res);
    cli_outputs outs;
    memset(&outs, 0, sizeof outs);
    int status = cli_run_build_op(a, L, &r);
    const nx_kernel_target *target = &r.prep.target;
    uint32_t cores = target->config && target->config->requires_multicore_grid ? NX_VNC_GRID : 1;
    if (status == CLI_EXIT_OK) status = check_paths(a, &r, cores);
    nx_run_options opt = cli_backend_run_options(&a->backend);
    if (status == CLI_EXIT_OK &&
        (cli_outputs_init(&outs, (int)r.prep.op.n_results + 2 + NX_MAX_CORES) != 0 ||
         cli_stage_vcd(&outs, a->backend.vcd, cores, &opt) != 0))
        status = CLI_EXIT_RUNTIME;
    if (status == CLI_EXIT_OK) {
        const void *inputs[NX_OP_MAX_TENSORS] = {0};
        for (uint32_t i = 0; i < r.prep.op.n_operands; i++) inputs[i] = r.in[i].data;
        opt.keep_log = a->profile || a->timeline || a->by_source;
        opt.check = a->check;
        /* what this command holds for the run: the loaded operands and the
         * results it serialises */
        for (uint32_t i = 0; i < r.prep.op.n_operands; i++) opt.held_bytes += r.in[i].nbytes;
        for (uint32_t j = 0; j < r.prep.op.n_results; j++) {
            if (!r.out_path[j]) continue;
            uint64_t b = nx_dtype_size(r.prep.op.results[j].dtype);
            for (uint32_t d = 0; d < r.prep.op.results[j].ndims; d++)
                b = b > UINT64_MAX / r.prep.op.results[j].shape[d] ? UINT64_MAX : b * r.prep.op.results[j].shape[d];
            if (opt.held_bytes > UINT64_MAX - b) b = UINT64_MAX - opt.held_bytes;
            opt.held_bytes += b;
        }
        if (nx_run_op(L, &m, &r.prep, inputs, &opt, &res, &err) != 0) {
            /* what the op says is wrong (an attribute, a shape a leaf
             * refuses): name the op file it came from */
            nx_quoted q;
            if (res.failure == NX_RUN_LIMIT)
                cli_limit_error(&a->backend, a->op_file, err.msg);
            else if (a->op_file && res.failure == NX_RUN_BAD_INPUT)
                cli_message("%s: %s", nx_quote(&q, a->op_file, NX_QUOTE_PATH), err.msg);
            else
                cli_message("%s", err.msg);
            status = exit_status(res.failure);
        } else {
            status = report_and_write(a, &r, &m, &res, &outs);
        }
    }
    cli_outputs_free(&outs); /* a failed run leaves no output behind */
    nx_run_result_free(&res);
    cli_run_op_free(&r);
    nx_lowerer_free(L);
    return status;
}

int cli_run_with(int argc, char **argv, const nx_kernel_registry *reg, const nx_composite_table *comps) {
    run_args a;
    memset(&a, 0, sizeof a);
    a.backend = (cli_backend)CLI_BACKEND_INIT;
    a.ins = calloc((size_t)argc, sizeof *a.ins);
    a.outs = calloc((size_t)argc, sizeof *a.outs);
    a.attrs = calloc((size_t)argc, sizeof *a.attrs);
    int status;
    if (!a.ins || !a.outs || !a.attrs) {
        cli_message("out of memory");
        status = CLI_EXIT_RUNTIME;
    } else {
        status = parse_args(argc, argv, &a);
        if (status < 0)
            status = CLI_EXIT_OK; /* --help */
        else if (status == CLI_EXIT_OK)
            status = execute(&a, reg, comps);
    }
    free(a.ins);
    free(a.outs);
    free(a.attrs);
    return status;
}

int cmd_run(int argc, char **argv) { return cli_run_with(argc, argv, NULL, NULL); }
