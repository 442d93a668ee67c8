/* nxsim nki FILE.py:KERNEL -i A.npy ...: runs an NKI-language kernel. The
 * tracer is Python (python/nxsim/nki, docs/parts/nki.md), so this command
 * replaces itself with `python3 -m nxsim.nki ARGS...`: the options, the
 * messages and the exit codes are that module's, which keeps the ones of
 * every nxsim command (docs/parts/cli.md).
 *
 * Which python3: $NXSIM_PYTHON if set; else the python3 beside this command
 * (a venv that `pip install .` made holds both, and the package in its own
 * site-packages); else the interpreter this build found with NumPy; else
 * python3 on PATH. Which package: the first of <dir of this command>/python
 * (the build tree) and <dir>/NXSIM_NKI_BIN_TO_PY (a `cmake --install`
 * prefix) that holds nxsim/nki/__main__.py goes first on PYTHONPATH;
 * otherwise the interpreter's own (pip's site-packages, Debian's
 * dist-packages). */
#define _GNU_SOURCE /* readlink, setenv */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "isa/error.h"

#ifndef NXSIM_NKI_PYTHON
#error "NXSIM_NKI_PYTHON must be defined by the build (cli/CMakeLists.txt)"
#endif
#ifndef NXSIM_NKI_BIN_TO_PY
#error "NXSIM_NKI_BIN_TO_PY must be defined by the build (cli/CMakeLists.txt)"
#endif

void cmd_nki_help(FILE *f) {
    fputs("Usage: nxsim nki FILE.py:KERNEL [-i A.npy]... [-o OUT.npy]... [OPTIONS]\n"
          "\n"
          "Traces the NKI kernel KERNEL of FILE.py on the .npy inputs (in the\n"
          "kernel's parameter order) and runs it on the simulated machine: values,\n"
          "simulated time and profiles keyed by the kernel's own file:line.\n"
          "\n"
          "Options (all of python3 -m nxsim.nki; 'nxsim nki --help' lists them):\n"
          "  -i, --input A.npy     an input array (repeat)\n"
          "  -o, --output OUT.npy  where to write a result, in order (repeat)\n"
          "  --grid N[,M]          the launch grid\n"
          "  --machine M           a preset (trn2, trn1) or a machine file\n"
          "  --functional          the functional executor (values, no time)\n"
          "  --profile T.json      the Perfetto trace;  --timeline R.svg  the SVG timeline\n"
          "  --summary             the profile summary;  --by-source  busy time per source line\n"
          "  --check FUNCTION      compare with a NumPy function of FILE.py\n"
          "  --save P.nxs          the traced program (.nxs or .nxb) for 'nxsim exec'\n"
          "\n"
          "Environment: NXSIM_PYTHON names the python3 to use (it needs NumPy).\n"
          "Exit status as every command's: 0 ok, 1 runtime failure or failed --check,\n"
          "2 usage, 3 bad input (a mistake in the kernel names its file and line).\n",
          f);
}

/* The directory of the running executable, or "" if /proc cannot say. */
static void exe_dir(char *dir, size_t size) {
    ssize_t n = readlink("/proc/self/exe", dir, size - 1);
    if (n <= 0) {
        dir[0] = 0;
        return;
    }
    dir[n] = 0;
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else dir[0] = 0;
}

static int has_package(const char *dir) {
    char probe[PATH_MAX + 64];
    int w = snprintf(probe, sizeof probe, "%s/nxsim/nki/__main__.py", dir);
    return w > 0 && (size_t)w < sizeof probe && access(probe, R_OK) == 0;
}

/* Puts dir first on PYTHONPATH; 0, or -1 (out of memory). */
static int prepend_pythonpath(const char *dir) {
    const char *old = getenv("PYTHONPATH");
    size_t len = strlen(dir) + (old && old[0] ? strlen(old) + 1 : 0) + 1;
    char *value = malloc(len);
    if (!value) return -1;
    snprintf(value, len, "%s%s%s", dir, old && old[0] ? ":" : "", old && old[0] ? old : "");
    int rc = setenv("PYTHONPATH", value, 1);
    free(value);
    return rc;
}

int cmd_nki(int argc, char **argv) {
    char dir[PATH_MAX];
    exe_dir(dir, sizeof dir);

    char python[PATH_MAX + 16];
    const char *env_python = getenv("NXSIM_PYTHON");
    if (env_python && env_python[0]) snprintf(python, sizeof python, "%s", env_python);
    else if (dir[0] && snprintf(python, sizeof python, "%s/python3", dir) > 0 && access(python, X_OK) == 0) {
        /* a venv's python3 beside its nxsim */
    } else if (NXSIM_NKI_PYTHON[0] && access(NXSIM_NKI_PYTHON, X_OK) == 0)
        snprintf(python, sizeof python, "%s", NXSIM_NKI_PYTHON);
    else snprintf(python, sizeof python, "python3");

    if (dir[0]) {
        const char *rels[] = {"python", NXSIM_NKI_BIN_TO_PY};
        for (size_t i = 0; i < sizeof rels / sizeof rels[0]; i++) {
            char pkg[PATH_MAX + 64];
            int w = snprintf(pkg, sizeof pkg, "%s/%s", dir, rels[i]);
            if (w <= 0 || (size_t)w >= sizeof pkg || !has_package(pkg)) continue;
            if (prepend_pythonpath(pkg) != 0) {
                cli_message("nki: out of memory setting PYTHONPATH");
                return CLI_EXIT_RUNTIME;
            }
            break;
        }
    }
    if (setenv("NXSIM_NKI_PROG", "nxsim nki", 1) != 0) {
        cli_message("nki: out of memory setting the environment");
        return CLI_EXIT_RUNTIME;
    }

    /* python3 -m nxsim.nki ARGS... (argv[0] is "nki") */
    char **args = calloc((size_t)argc + 3, sizeof *args);
    if (!args) {
        cli_message("nki: out of memory");
        return CLI_EXIT_RUNTIME;
    }
    args[0] = python;
    args[1] = (char *)"-m";
    args[2] = (char *)"nxsim.nki";
    for (int i = 1; i < argc; i++) args[i + 2] = argv[i];
    fflush(stdout);
    execvp(python, args);
    int e = errno;
    free(args);
    nx_quoted q;
    cli_message("nki: cannot run %s: %s (the NKI front end is Python: install python3-numpy, or set "
                "NXSIM_PYTHON to a python3 that has NumPy)",
                nx_quote(&q, python, NX_QUOTE_PATH), strerror(e));
    return CLI_EXIT_RUNTIME;
}
