/* See leaf_benches.h: the table of leaf bench cases. */
#include "leaf_benches.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    {"roster", "nxsim-bench-roster", nx_bench_roster_main,
     "rmsnorm, layernorm, softmax, rope, cumsum, matmul against their bounds"},
    {"attention", "nxsim-bench-attention", nx_bench_attention_main, "flash attention (context encoding) against the PE bound"},
    {"scan", "nxsim-bench-scan", nx_bench_scan_main, "selective_scan (Mamba) against its engine and DMA bounds"},
    {"conv-onnx", "nxsim-bench-conv-onnx", nx_bench_conv_onnx_main,
     "the conv composite (ONNX Conv) on ResNet-50 and MobileNet shapes"},
    {"attention-decode", "nxsim-bench-attention-decode", nx_bench_attention_decode_main,
     "attention_decode against the KV-streaming bound"},
    {"layer", "nxsim-bench-layer", nx_bench_layer_main,
     "decoder_layer (the Llama-3-8B layer and a shrunk one) against the weight-streaming and PE bounds, time by sub-kernel"},
    {"mlp", "nxsim-bench-mlp", nx_bench_mlp_main, "the dense MLP (decode and prefill plans) against its bounds"},
    {"qkv", "nxsim-bench-qkv", nx_bench_qkv_main, "qkv (fused RMSNorm, QKV projection, RoPE) against the weight-streaming and PE bounds"},
    {"collective", "nxsim-bench-collective", nx_bench_collective_main,
     "collective_matmul on the two cores against matmul on one and the PE bound"},
    {"router", "nxsim-bench-router", nx_bench_router_main, "router_topk (MoE router) against the DMA bound"},
    {"moe-decode", "nxsim-bench-moe-decode", nx_bench_moe_decode_main,
     "moe_decode (decode expert MLPs) against the weight-streaming bound"},
    {"scaling", "nxsim-bench-scaling", nx_bench_scaling_main,
     "host time per simulated instruction and per MAC/insn/byte at four sizes, plotted"},
};

const nx_bench_leaf *nx_bench_leaf_find(const char *name) {
    for (size_t i = 0; i < sizeof leaf_benches / sizeof leaf_benches[0]; i++)
        if (strcmp(name, leaf_benches[i].name) == 0 || strcmp(name, leaf_benches[i].alias) == 0)
            return &leaf_benches[i];
    return NULL;
}

int nx_bench_leaf_run(const nx_bench_leaf *l, int argc, char **argv) {
    argv[0] = (char *)l->alias;
    return l->run(argc, argv);
}

void nx_bench_leaf_list(FILE *out) {
    for (size_t i = 0; i < sizeof leaf_benches / sizeof leaf_benches[0]; i++)
        fprintf(out, "  %-14s %s (also %s)\n", leaf_benches[i].name, leaf_benches[i].summary, leaf_benches[i].alias);
}

int nx_bench_parse_args(int argc, char **argv, unsigned accepted, nx_bench_args *out) {
    static const struct option all[] = {
        {"machine", required_argument, NULL, NX_BENCH_OPT_MACHINE}, {"case", required_argument, NULL, NX_BENCH_OPT_CASE},
        {"quick", no_argument, NULL, NX_BENCH_OPT_QUICK},         {"summary", no_argument, NULL, NX_BENCH_OPT_SUMMARY},
        {"race-check", no_argument, NULL, NX_BENCH_OPT_RACE},
        {"trace-dir", required_argument, NULL, NX_BENCH_OPT_TRACE_DIR},
        {"dump", required_argument, NULL, NX_BENCH_OPT_DUMP},     {"dtype", required_argument, NULL, NX_BENCH_OPT_DTYPE},
        {"no-ref", no_argument, NULL, NX_BENCH_OPT_NO_REF},       {"table", no_argument, NULL, NX_BENCH_OPT_TABLE},
        {"commit", required_argument, NULL, NX_BENCH_OPT_COMMIT}, {"n", required_argument, NULL, NX_BENCH_OPT_N},
        {"out-dir", required_argument, NULL, NX_BENCH_OPT_OUT_DIR},
    };
    struct option longopts[sizeof all / sizeof all[0] + 2];
    size_t k = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (accepted & (unsigned)all[i].val) longopts[k++] = all[i];
    longopts[k++] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[k] = (struct option){NULL, 0, NULL, 0};
    memset(out, 0, sizeof *out);
    optind = 0; /* glibc: reinitialise (nxsim-bench may have parsed before) */
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case NX_BENCH_OPT_MACHINE:
        case NX_BENCH_OPT_CASE: {
            int *n = c == NX_BENCH_OPT_CASE ? &out->n_cases : &out->n_machines;
            if (*n == NX_BENCH_MAX_REPEAT) {
                fprintf(stderr, "%s: at most %d --%s options (%s --help lists the options)\n", argv[0],
                        NX_BENCH_MAX_REPEAT, c == NX_BENCH_OPT_CASE ? "case" : "machine", argv[0]);
                return 2;
            }
            (c == NX_BENCH_OPT_CASE ? out->cases : out->machines)[(*n)++] = optarg;
            if (c == NX_BENCH_OPT_MACHINE) out->machine = optarg;
            break;
        }
        case NX_BENCH_OPT_QUICK: out->quick = 1; break;
        case NX_BENCH_OPT_SUMMARY: out->summary = 1; break;
        case NX_BENCH_OPT_RACE: out->race_check = 1; break;
        case NX_BENCH_OPT_NO_REF: out->no_ref = 1; break;
        case NX_BENCH_OPT_TABLE: out->table = 1; break;
        case NX_BENCH_OPT_TRACE_DIR: out->trace_dir = optarg; break;
        case NX_BENCH_OPT_DUMP: out->dump = optarg; break;
        case NX_BENCH_OPT_DTYPE: out->dtype = optarg; break;
        case NX_BENCH_OPT_COMMIT: out->commit = optarg; break;
        case NX_BENCH_OPT_N: out->n = optarg; break;
        case NX_BENCH_OPT_OUT_DIR: out->out_dir = optarg; break;
        case 'h': return 1;
        case ':':
            fprintf(stderr, "%s: option '%s' needs a value (%s --help lists the options)\n", argv[0], argv[optind - 1],
                    argv[0]);
            return 2;
        default:
            fprintf(stderr, "%s: unknown option '%s' (%s --help lists the options)\n", argv[0], argv[optind - 1],
                    argv[0]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s' (%s --help lists the options)\n", argv[0], argv[optind], argv[0]);
        return 2;
    }
    return 0;
}

int nx_bench_args_or_usage(int argc, char **argv, unsigned accepted, void (*usage)(FILE *f), nx_bench_args *out) {
    int st = nx_bench_parse_args(argc, argv, accepted, out);
    if (st != 1) return st == 0 ? -1 : st;
    usage(stdout);
    return 0;
}

int nx_bench_machine(const char *prog, const char *spec, nx_machine *m) {
    nx_error err;
    if (nx_machine_load(spec ? spec : nx_machine_default(), m, &err) == 0) return 0;
    fprintf(stderr, "%s: %s\n", prog, err.msg);
    return 2;
}

int nx_bench_prepare_dir(const char *prog, const char *flag, const char *dir, size_t longest_name) {
    char path[4096];
    size_t len = strlen(dir);
    if (len == 0 || len + 1 + longest_name > sizeof path) {
        fprintf(stderr, "%s: %s '%.64s%s': %s\n", prog, flag, dir, len > 64 ? "..." : "",
                len == 0 ? "empty path" : "path too long");
        return -1;
    }
    memcpy(path, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != 0) continue;
        char keep = path[i];
        path[i] = 0;
        struct stat sb;
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "%s: %s %s: cannot create %s: %s\n", prog, flag, dir, path, strerror(errno));
            return -1;
        }
        if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "%s: %s %s: %s is not a directory\n", prog, flag, dir, path);
            return -1;
        }
        path[i] = keep;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "%s: %s %s: cannot write there: %s\n", prog, flag, dir, strerror(errno));
        return -1;
    }
    return 0;
}
