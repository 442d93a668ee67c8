/* The leaf benches as cases of nxsim-bench (docs/parts/bench.md): one table
 * row each (bench/leaf_benches.c) naming the case, the alias program that
 * keeps its old name (nxsim-bench-conv, ...: bench/alias.c) and the case
 * function, which takes the case's own options as a main() would (argv[0]
 * is the alias name, so messages and figures read as before) and returns
 * its exit status: 0, 1 for wrong values, 2 for a usage error. Adding a
 * bench case: a case function and a row. */
#ifndef NXSIM_BENCH_LEAF_BENCHES_H
#define NXSIM_BENCH_LEAF_BENCHES_H

#include <stdint.h>
#include <stdio.h>

#include "sim/machine.h"

typedef int (*nx_bench_case_fn)(int argc, char **argv);

typedef struct nx_bench_leaf {
    const char *name;    /* `nxsim-bench NAME ...`, `nxsim-bench --case NAME[/SUB]` */
    const char *alias;   /* the program name kept for scripts: nxsim-bench-NAME */
    nx_bench_case_fn run;
    const char *summary; /* one line for --help */
} nx_bench_leaf;

int nx_bench_conv_main(int argc, char **argv);
int nx_bench_data_movement_main(int argc, char **argv);
int nx_bench_depthwise_main(int argc, char **argv);
int nx_bench_moe_main(int argc, char **argv);
int nx_bench_roster_main(int argc, char **argv);
int nx_bench_conv_onnx_main(int argc, char **argv);
int nx_bench_topk_main(int argc, char **argv);
int nx_bench_transpose_main(int argc, char **argv);
int nx_bench_tutorial_main(int argc, char **argv);
int nx_bench_wgrad_main(int argc, char **argv);
int nx_bench_attention_main(int argc, char **argv);
int nx_bench_scan_main(int argc, char **argv);
int nx_bench_mlp_main(int argc, char **argv);

/* A composite's op on the SystemC model (bench/roster_bench.c): `given`
 * prepared for m (results inferred), run with nxsim run's pseudo-random
 * operands (seed 1), then the rules' reference on the same operands, timed,
 * every result compared under the rules' tolerance; bounds(op as prepared,
 * the grid's cores, ctx) is called before the run is freed (may be NULL). */
typedef struct nx_bench_run {
    double sim_ns, sim_s, ref_s; /* simulated time; wall time of the run and of the reference */
    uint32_t grid;               /* cores it ran on */
    int ok;                      /* every result within tolerance */
} nx_bench_run;
struct nx_macro_op;
typedef void (*nx_bench_bounds_fn)(const struct nx_macro_op *op, uint32_t grid, void *ctx);
int nx_bench_run_op(const struct nx_macro_op *given, const nx_machine *m, nx_bench_bounds_fn bounds, void *ctx,
                    nx_bench_run *out, struct nx_error *err);
/* The same, and inspect(res, ctx) on the run's result with its log kept
 * (profiles: sim/profile.h) before it is freed. */
struct nx_run_result;
typedef void (*nx_bench_inspect_fn)(const struct nx_run_result *res, void *ctx);
int nx_bench_run_op_inspect(const struct nx_macro_op *given, const nx_machine *m, nx_bench_bounds_fn bounds,
                            nx_bench_inspect_fn inspect, void *ctx, nx_bench_run *out, struct nx_error *err);
int nx_bench_attention_decode_main(int argc, char **argv);
int nx_bench_layer_main(int argc, char **argv);
int nx_bench_qkv_main(int argc, char **argv);
int nx_bench_collective_main(int argc, char **argv);
int nx_bench_router_main(int argc, char **argv);
int nx_bench_moe_decode_main(int argc, char **argv);
int nx_bench_scaling_main(int argc, char **argv);

/* The options of the leaf bench cases, parsed in one place (getopt_long);
 * a case names the ones it takes (NX_BENCH_OPT_*) and reads the rest of
 * its meaning itself. Repeatable: --case (up to NX_BENCH_MAX_REPEAT) and
 * --machine (the last one is `machine`). */
#define NX_BENCH_MAX_REPEAT 16
enum {
    NX_BENCH_OPT_MACHINE = 1u << 0,    /* --machine NAME|FILE */
    NX_BENCH_OPT_CASE = 1u << 1,       /* --case X */
    NX_BENCH_OPT_QUICK = 1u << 2,      /* --quick */
    NX_BENCH_OPT_SUMMARY = 1u << 3,    /* --summary */
    NX_BENCH_OPT_RACE = 1u << 4,       /* --race-check */
    NX_BENCH_OPT_TRACE_DIR = 1u << 5,  /* --trace-dir DIR */
    NX_BENCH_OPT_DUMP = 1u << 6,       /* --dump FILE.nxs */
    NX_BENCH_OPT_DTYPE = 1u << 7,      /* --dtype NAME */
    NX_BENCH_OPT_NO_REF = 1u << 8,     /* --no-ref */
    NX_BENCH_OPT_TABLE = 1u << 9,      /* --table */
    NX_BENCH_OPT_COMMIT = 1u << 10,    /* --commit HASH */
    NX_BENCH_OPT_N = 1u << 11,         /* --n N */
    NX_BENCH_OPT_OUT_DIR = 1u << 12,   /* --out-dir DIR (files a case writes besides its table) */
};

typedef struct nx_bench_args {
    const char *machine; /* the last --machine, or NULL */
    const char *machines[NX_BENCH_MAX_REPEAT];
    int n_machines;
    const char *cases[NX_BENCH_MAX_REPEAT];
    int n_cases;
    int quick, summary, race_check, no_ref, table;
    const char *trace_dir, *dump, *dtype, *commit, *n, *out_dir;
} nx_bench_args;

/* Parses argv[1..argc) with the options in `accepted`: 0; 1 for --help/-h
 * (the caller prints its usage); 2 after one line on stderr, "PROG: unknown
 * option '--x' (PROG --help lists the options)" (or a missing value, an
 * extra argument, too many repeats). */
int nx_bench_parse_args(int argc, char **argv, unsigned accepted, nx_bench_args *out);
/* nx_bench_parse_args, and the case's usage on stdout for --help: -1 to go
 * on, else the exit status (0 or 2). */
int nx_bench_args_or_usage(int argc, char **argv, unsigned accepted, void (*usage)(FILE *f), nx_bench_args *out);

/* The row named `name` (its name or its alias), or NULL. */
const nx_bench_leaf *nx_bench_leaf_find(const char *name);
/* Runs the case with argv[1..argc) as its options (argv[0] is replaced by
 * the alias name). */
int nx_bench_leaf_run(const nx_bench_leaf *l, int argc, char **argv);
/* The rows for a usage text, one "  NAME  summary" line each. */
void nx_bench_leaf_list(FILE *out);
/* Loads the machine `spec` (NULL: the default preset) for case `prog`: 0,
 * or 2 with "PROG: message" on stderr. */
int nx_bench_machine(const char *prog, const char *spec, nx_machine *m);
/* Readies the output directory `dir` given by option `flag` of case `prog`
 * before any work: DIR and any missing parents are created (mode 0777 less
 * the umask); it must end up a writable directory, with room in a path of
 * 4096 bytes for "DIR/" plus `longest_name` bytes (the longest file name the
 * case writes there, its NUL included). 0, or -1 with "PROG: FLAG DIR:
 * problem" on stderr. */
int nx_bench_prepare_dir(const char *prog, const char *flag, const char *dir, size_t longest_name);

#endif
