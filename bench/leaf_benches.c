/* See leaf_benches.h: the table of leaf bench cases. */
#include "leaf_benches.h"

#include <getopt.h>
#include <string.h>

static const nx_bench_leaf leaf_benches[] = {
    {"conv", "nxsim-bench-conv", nx_bench_conv_main, "the dense PE convolutions #3/#4 on ResNet-50 stage shapes"},
    {"depthwise", "nxsim-bench-depthwise", nx_bench_depthwise_main, "the depthwise conv leaves #6, #9, #11"},
    {"wgrad", "nxsim-bench-wgrad", nx_bench_wgrad_main, "the weight-gradient convolutions #5, #7, #8"},
    {"moe", "nxsim-bench-moe", nx_bench_moe_main, "blockwise_mm on MoE prefill block sets"},
    {"topk", "nxsim-bench-topk", nx_bench_topk_main, "the top-k methods and the AUTO cost table"},
    {"transpose", "nxsim-bench-transpose", nx_bench_transpose_main, "both grid transposes on 1 and 2 cores"},
    {"tutorial", "nxsim-bench-tutorial", nx_bench_tutorial_main,
     "the NKI matmul tutorial's kernels and the micro-figures"},
    {"data-movement", "nxsim-bench-data-movement", nx_bench_data_movement_main,
     "the data-movement leaves against the DMA/HBM bound"},
};

const nx_bench_leaf *nx_bench_leaf_find(const char *name) {
    for (size_t i = 0; i < sizeof leaf_benches / sizeof leaf_benches[0]; i++)
        if (strcmp(name, leaf_benches[i].name) == 0 || strcmp(name, leaf_benches[i].alias) == 0)
            return &leaf_benches[i];
    return NULL;
}

int nx_bench_leaf_run(const nx_bench_leaf *l, int argc, char **argv) {
    argv[0] = (char *)l->alias;
    /* a case may parse with getopt after nxsim-bench did: start it afresh
     * (glibc: optind 0 reinitialises) */
    optind = 0;
    opterr = 1;
    return l->run(argc, argv);
}

void nx_bench_leaf_list(FILE *out) {
    for (size_t i = 0; i < sizeof leaf_benches / sizeof leaf_benches[0]; i++)
        fprintf(out, "  %-14s %s (also %s)\n", leaf_benches[i].name, leaf_benches[i].summary, leaf_benches[i].alias);
}

int nx_bench_machine(const char *prog, const char *spec, nx_machine *m) {
    nx_error err;
    if (nx_machine_load(spec ? spec : nx_machine_default(), m, &err) == 0) return 0;
    fprintf(stderr, "%s: %s\n", prog, err.msg);
    return 2;
}
