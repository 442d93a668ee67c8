/* The leaf benches as cases of nxsim-bench (docs/parts/bench.md): one table
 * row each (bench/leaf_benches.c) naming the case, the alias program that
 * keeps its old name (nxsim-bench-conv, ...: bench/alias.c) and the case
 * function, which takes the case's own options as a main() would (argv[0]
 * is the alias name, so messages and figures read as before) and returns
 * its exit status: 0, 1 for wrong values, 2 for a usage error. Adding a
 * bench case: a case function and a row. */
#ifndef NXSIM_BENCH_LEAF_BENCHES_H
#define NXSIM_BENCH_LEAF_BENCHES_H

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
int nx_bench_topk_main(int argc, char **argv);
int nx_bench_transpose_main(int argc, char **argv);
int nx_bench_tutorial_main(int argc, char **argv);
int nx_bench_wgrad_main(int argc, char **argv);

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

#endif
