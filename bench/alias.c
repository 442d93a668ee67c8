/* nxsim-bench-NAME: the old program name of a leaf bench, kept for scripts
 * and docs; runs `nxsim-bench NAME` (bench/leaf_benches.h). NX_BENCH_LEAF
 * is set per alias by bench/CMakeLists.txt. */
#include <stdio.h>

#include "leaf_benches.h"

int main(int argc, char **argv) {
    const nx_bench_leaf *l = nx_bench_leaf_find(NX_BENCH_LEAF);
    if (!l) {
        fprintf(stderr, "%s: no bench case %s\n", argv[0], NX_BENCH_LEAF);
        return 2;
    }
    return nx_bench_leaf_run(l, argc, argv);
}
