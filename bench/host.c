/* What a figure of nxsim-bench depends on besides the code: the build (type,
 * flags, compiler, sanitizers), the host CPU and its vector units, the PE
 * matmul kernel (isa/pe/datapath.h), and OpenBLAS's core type. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cblas.h>

#include "bench.h"
#include "isa/pe/datapath.h"

/* Set by bench/CMakeLists.txt from the configured build. */
#ifndef NXSIM_BUILD_TYPE
#define NXSIM_BUILD_TYPE "unknown"
#endif
#ifndef NXSIM_C_FLAGS
#define NXSIM_C_FLAGS ""
#endif
#ifndef NXSIM_CXX_FLAGS
#define NXSIM_CXX_FLAGS ""
#endif
#ifndef NXSIM_SANITIZE_FLAGS
#define NXSIM_SANITIZE_FLAGS ""
#endif

/* The vector level of x86-64 code: 0 SSE, 1 AVX, 2 AVX2 + FMA, 3 the
 * AVX-512 subset OpenBLAS's SkylakeX kernels use. */
static int host_level(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512cd"))
        return 3;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 2;
    if (__builtin_cpu_supports("avx")) return 1;
#endif
    return 0;
}

/* OpenBLAS 0.3.21 core names and the vector level of their kernels; -1 for
 * a name not listed (left alone). */
static int core_level(const char *core) {
    static const struct {
        const char *name;
        int level;
    } cores[] = {{"Prescott", 0},   {"Core2", 0},   {"Penryn", 0},  {"Dunnington", 0}, {"Nehalem", 0},
                 {"Atom", 0},       {"Sandybridge", 1}, {"Haswell", 2}, {"Zen", 2},     {"SkylakeX", 3},
                 {"Cooperlake", 3}, {"SapphireRapids", 3}};
    for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++)
        if (strcasecmp(core, cores[i].name) == 0) return cores[i].level;
    return -1;
}

void bench_blas_core(char **argv) {
    if (getenv("OPENBLAS_CORETYPE") != NULL) return; /* the user's choice, even an empty one */
    int host = host_level(), have = core_level(openblas_get_corename());
    if (host < 2 || have < 0 || have >= host) return;
    /* OpenBLAS reads OPENBLAS_CORETYPE once, when it is loaded: start again */
    setenv("OPENBLAS_CORETYPE", host == 3 ? "SkylakeX" : "Haswell", 1);
    setenv("NXSIM_BENCH_BLAS_FALLBACK", openblas_get_corename(), 1);
    fflush(NULL);
    execv("/proc/self/exe", argv);
    /* could not: carry on with the fallback core, which the header shows */
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("NXSIM_BENCH_BLAS_FALLBACK");
}

static void cpu_model(char *out, size_t size) {
    snprintf(out, size, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *v = strchr(line, ':');
        if (!v) break;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        snprintf(out, size, "%.*s", (int)strcspn(v, "\n"), v);
        break;
    }
    fclose(f);
}

void bench_host_info(bench_host *h) {
    memset(h, 0, sizeof *h);
    cpu_model(h->cpu, sizeof h->cpu);
    h->cpus = sysconf(_SC_NPROCESSORS_ONLN);
#if defined(__x86_64__) && defined(__GNUC__)
    snprintf(h->simd, sizeof h->simd, "%s%s%s", __builtin_cpu_supports("avx512f") ? "avx512f " : "",
             __builtin_cpu_supports("avx2") ? "avx2 " : "", __builtin_cpu_supports("fma") ? "fma" : "");
#endif
    h->build_type = NXSIM_BUILD_TYPE;
    h->c_flags = NXSIM_C_FLAGS;
    h->cxx_flags = NXSIM_CXX_FLAGS;
    h->sanitize_flags = NXSIM_SANITIZE_FLAGS;
#if defined(__clang__)
    h->compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
    h->compiler = "GCC " __VERSION__;
#else
    h->compiler = "unknown compiler";
#endif
    const char *forced = getenv("NXSIM_MM_KERNEL");
    snprintf(h->pe_kernel_env, sizeof h->pe_kernel_env, "%s", forced && *forced ? forced : "unset");
    const char *fallback = getenv("NXSIM_BENCH_BLAS_FALLBACK");
    if (fallback) snprintf(h->blas_fallback, sizeof h->blas_fallback, "%s", fallback);
}

int bench_pe_kernel(bench_host *h, nx_error *err) {
    nx_pe_kernel k;
    if (nx_pe_kernel_active(&k, err) != 0) return -1;
    snprintf(h->pe_kernel, sizeof h->pe_kernel, "%s", nx_pe_kernel_name(k));
    return 0;
}
