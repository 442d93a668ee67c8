/* `nxsim run`: the macro-op from the command line (KEY, -i, -a, -o) or from
 * an op file (--op), with its results by the kernel's rule (cli/run_cmd.h). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "isa/fileio.h"
#include "op_paths.h"
#include "run_cmd.h"

void cli_run_op_free(run_op *r) {
    nx_macro_op_free(&r->given);
    nx_prepared_free(&r->prep);
    for (int i = 0; i < NX_OP_MAX_TENSORS; i++) {
        nx_npy_free(&r->in[i]);
        free(r->out_path[i]);
    }
    nx_op_files_free(&r->files);
    free(r->op_text);
}

/* Loads an operand .npy and checks it can be a tensor. */
static int load_operand(const run_args *a, const char *path, uint32_t index, nx_npy *out, nx_error *err) {
    nx_run_options opt = cli_backend_run_options(&a->backend);
    if (nx_npy_load_max(path, opt.max_memory / 2, "half the memory limit: the file and its array", out, err) != 0)
        return -1;
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

/* The op's func_name, and for --op everything the file says. */
static int read_source(const run_args *a, run_op *r) {
    nx_error err;
    if (!a->op_file) {
        nx_macro_op_init(&r->given);
        if (nx_macro_op_set_func_name(&r->given, a->key, &err) == 0) return CLI_EXIT_OK;
        cli_message("%s", err.msg);
        return CLI_EXIT_RUNTIME;
    }
    size_t len;
    if (nx_read_file_max(a->op_file, NX_OP_FILE_MAX, "the limit for an op file", (uint8_t **)&r->op_text, &len,
                         &err) != 0) {
        cli_message("%s", err.msg);
        return CLI_EXIT_INPUT;
    }
    if (memchr(r->op_text, '\0', len)) {
        cli_message("%s: the op file holds a NUL byte", a->op_file);
        return CLI_EXIT_INPUT;
    }
    if (nx_macro_op_parse(a->op_file, r->op_text, &r->given, &r->files, &err) != 0) {
        cli_message("%s", err.msg);
        return CLI_EXIT_INPUT;
    }
    return CLI_EXIT_OK;
}

/* --op: the operands with a "file", whose .npy must agree with what the op
 * file declares. */
static int file_operands(const run_args *a, run_op *r) {
    nx_error err;
    nx_macro_op *op = &r->given;
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
        if (load_operand(a, path, i, &r->in[i], &err) != 0) {
            cli_message("%s", err.msg);
            return CLI_EXIT_INPUT;
        }
        nx_op_tensor *t = &op->operands[i];
        nx_op_tensor got = *t;
        got.dtype = r->in[i].dtype;
        got.ndims = r->in[i].ndims;
        memcpy(got.shape, r->in[i].shape, sizeof got.shape[0] * got.ndims);
        int same = t->dtype == got.dtype && t->ndims == got.ndims &&
                   memcmp(t->shape, got.shape, sizeof got.shape[0] * got.ndims) == 0;
        if (t->ndims && !same) {
            char want_s[128], got_s[128];
            nx_op_tensor_format(want_s, sizeof want_s, t);
            nx_op_tensor_format(got_s, sizeof got_s, &got);
            cli_message("%s: operand %u (%s) is declared %s but %s holds %s", a->op_file, i, t->name,
                        want_s, path, got_s);
            return CLI_EXIT_INPUT;
        }
        *t = got;
    }
    return CLI_EXIT_OK;
}

/* -i FILE...: operands in0, in1, ... */
static int cli_operands(const run_args *a, run_op *r) {
    nx_error err;
    for (int i = 0; i < a->n_in; i++) {
        if (load_operand(a, a->ins[i], (uint32_t)i, &r->in[i], &err) != 0) {
            cli_message("%s", err.msg);
            return CLI_EXIT_INPUT;
        }
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        if (nx_macro_op_add_operand(&r->given, name, r->in[i].dtype, r->in[i].ndims, r->in[i].shape, &err) != 0) {
            cli_message("%s: %s", a->ins[i], err.msg);
            return CLI_EXIT_INPUT;
        }
        r->in_path[i] = a->ins[i];
    }
    return CLI_EXIT_OK;
}

/* -a NAME=JSON, over the op file's attributes or (with no operands) the
 * default op's (nx_prepare_op). */
static int cli_attrs(const run_args *a, run_op *r) {
    nx_error err;
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
        if (nx_attrs_set(&r->given.attrs, name, &v, &err) != 0) {
            nx_value_free(&v);
            cli_message("%s", err.msg);
            return CLI_EXIT_RUNTIME;
        }
    }
    return CLI_EXIT_OK;
}

/* Where each result goes: -o in order, or the op file's "file"s (that no
 * two outputs are one file, and none is an input, cmd_run checks with
 * cli/paths.h). */
static int result_paths(const run_args *a, run_op *r) {
    for (uint32_t j = 0; j < r->prep.op.n_results; j++) {
        const char *p = a->op_file ? r->files.result[j] : (int)j < a->n_out ? a->outs[j] : NULL;
        if (!p) continue;
        if (a->op_file) { /* untrusted: confined to the op file's tree (cli/op_paths.h) */
            nx_error err;
            if (cli_op_result_path(a->op_file, p, &r->out_path[j], &err) != 0) {
                nx_quoted q, qn;
                cli_message("%s: result %u (%s): %s", nx_quote(&q, a->op_file, NX_QUOTE_PATH), j,
                            nx_quote(&qn, r->prep.op.results[j].name, NX_QUOTE_NAME), err.msg);
                return CLI_EXIT_INPUT;
            }
            continue;
        }
        r->out_path[j] = strdup(p);
        if (!r->out_path[j]) {
            cli_message("out of memory");
            return CLI_EXIT_RUNTIME;
        }
    }
    return CLI_EXIT_OK;
}

/* The exit status for the stage nx_prepare_op refused at. */
static int prepare_status(nx_prepare_stage stage) {
    switch (stage) {
    case NX_PREPARE_NO_DEFAULT: return CLI_EXIT_USAGE;
    case NX_PREPARE_DEFAULT_OP:
    case NX_PREPARE_ATTR_SET: return CLI_EXIT_RUNTIME;
    default: return CLI_EXIT_INPUT;
    }
}

int cli_run_build_op(const run_args *a, const nx_lowerer *L, run_op *r) {
    nx_error err;
    nx_prepared_init(&r->prep);
    int status = read_source(a, r);
    if (status != CLI_EXIT_OK) return status;
    /* The lookup, once and before any operand file is read. The registry
     * decides first, then the composites: a name that is neither gets the
     * registry's miss error, printed verbatim without the usual "nxsim: "
     * prefix (it is the registry's contract, docs/parts/registry.md, so
     * scripts can match it). */
    if (nx_prepare_target(L, r->given.func_name, &r->prep, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return CLI_EXIT_INPUT;
    }
    if (a->op_file)
        status = file_operands(a, r);
    else if (a->n_in > 0)
        status = cli_operands(a, r);
    if (status == CLI_EXIT_OK) status = cli_attrs(a, r);
    if (status != CLI_EXIT_OK) return status;
    /* KEY without -i: the default op (an op file is the whole op); then the
     * attribute check, the results by the kernel's rule and the op check */
    nx_prepare_operands how = a->op_file ? NX_PREPARE_AS_GIVEN : NX_PREPARE_DEFAULT_IF_NONE;
    if (nx_prepare_op(&r->prep, &r->given, how, a->op_file, &err) != 0) {
        if (r->prep.failed == NX_PREPARE_NO_DEFAULT)
            cli_message("%s with -i FILE.npy", err.msg);
        else
            cli_message("%s", err.msg);
        return prepare_status(r->prep.failed);
    }
    const nx_prepared *p = &r->prep;
    if (!a->op_file && (uint32_t)a->n_out > p->op.n_results) {
        cli_message("-o: %d results given, %s produces %u", a->n_out, p->target.key, p->op.n_results);
        return CLI_EXIT_USAGE;
    }
    return result_paths(a, r);
}
