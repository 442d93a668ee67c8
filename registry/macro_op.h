/* The macro-op: what the lowering driver receives, mirroring the seed's
 * InternalNativeNkiKernel instruction: a func_name (the registry key),
 * operands and results (name, shape, dtype) and an attribute dictionary
 * (what get_attrs_dict() returns: nx_attrs, isa/values.h).
 *
 * JSON in and out. The op document is
 *   {"func_name": "tiled_pf_transpose",
 *    "operands": [{"name": "x", "shape": [512, 384], "dtype": "fp32"}],
 *    "results":  [{"name": "y", "shape": [384, 512], "dtype": "fp32"}],
 *    "attrs":    {"permutation": [1, 0]}}
 * Attribute values are JSON: null, true/false, numbers, strings, and lists
 * (nested to any depth). A number written with '.', 'e' or 'E' is a FLOAT,
 * any other number an INT (as Python's json module decides); INTs must fit
 * in int64, FLOATs must be finite doubles (1e999 is refused). JSON objects
 * are not attribute values.
 *
 * Ownership: an nx_macro_op owns its func_name and attrs (nx_macro_op_free).
 * Every function returning char* returns a malloc'd string the caller frees.
 * Errors: 0, or -1 with one line naming the source, the JSON path
 * (e.g. "op.json: operands[1].shape[2]") and the problem. */
#ifndef NXSIM_REGISTRY_MACRO_OP_H
#define NXSIM_REGISTRY_MACRO_OP_H

#include <stddef.h>
#include <stdint.h>

#include "isa/dtype.h"
#include "isa/error.h"
#include "isa/program.h"
#include "kernels/kernel.h"

#define NX_OP_MAX_TENSORS NX_KERNEL_MAX_ARGS /* operands (and results) per op */
#define NX_OP_DTYPE_UNSET NX_DT_COUNT        /* see nx_macro_op_parse(files) */
#define NX_OP_FILE_MAX ((uint64_t)16 << 20)  /* bytes of an op document read from a file */

/* One operand or result. ndims == 0 and dtype == NX_OP_DTYPE_UNSET only
 * while a parser in file mode leaves them to be filled (see below). */
typedef struct nx_op_tensor {
    char name[NX_TENSOR_NAME_MAX]; /* a program tensor name: [A-Za-z_][A-Za-z0-9_.]* */
    nx_dtype dtype;
    uint32_t ndims;                /* 1..NX_KERNEL_MAX_DIMS */
    uint64_t shape[NX_KERNEL_MAX_DIMS];
    /* Results only: 1 + the operand whose HBM tensor this result shares
     * (XLA's input_output_alias; set by the rules' `aliases`,
     * nx_op_rules_apply_results), 0 for a tensor of its own. An aliased
     * result has its operand's dtype and shape; the program holds one
     * tensor for both, which the run loads with the operand's bytes and
     * reads back as the result (docs/parts/registry.md, "Aliased results"). */
    uint32_t alias;
} nx_op_tensor;

typedef struct nx_macro_op {
    char *func_name;               /* owned */
    nx_op_tensor operands[NX_OP_MAX_TENSORS];
    uint32_t n_operands;
    nx_op_tensor results[NX_OP_MAX_TENSORS];
    uint32_t n_results;
    nx_attrs attrs;                /* owned, insertion order kept */
} nx_macro_op;

/* ---- attribute values: construction and dictionaries are isa/values.h --- */

/* Parses one attribute value from JSON text (`source` names it in errors,
 * e.g. "-a permutation"). */
int nx_value_parse(const char *source, const char *json, nx_value *out, nx_error *err);

/* JSON text of a value / of the attribute dictionary in insertion order,
 * with ", " and ": " separators (Python's json.dumps style; floats in the
 * shortest form that reads back exactly, always with a '.' or exponent;
 * non-finite floats as null: isa/json_write.h). NULL on out-of-memory. */
char *nx_value_to_json(const nx_value *v);
char *nx_attrs_to_json(const nx_attrs *a);
/* Canonical text for cache keys: names sorted (byte order), compact
 * separators, so equal dictionaries give equal text whatever the insertion
 * order, and INT 2 differs from FLOAT 2.0. Non-finite floats are spelt NaN,
 * Infinity, -Infinity (not JSON: a key must tell them from null). NULL on
 * out-of-memory. */
char *nx_attrs_canonical(const nx_attrs *a);

/* ---- macro-ops -------------------------------------------------------- */

void nx_macro_op_init(nx_macro_op *op);
void nx_macro_op_free(nx_macro_op *op);
int nx_macro_op_set_func_name(nx_macro_op *op, const char *name, nx_error *err);
/* Appends an operand / result; checks the name syntax, the dtype and the
 * shape (1..NX_KERNEL_MAX_DIMS dims; zero-sized dims are refused). */
int nx_macro_op_add_operand(nx_macro_op *op, const char *name, nx_dtype dtype, uint32_t ndims,
                            const uint64_t *shape, nx_error *err);
int nx_macro_op_add_result(nx_macro_op *op, const char *name, nx_dtype dtype, uint32_t ndims,
                           const uint64_t *shape, nx_error *err);
/* Checks a whole op: func_name set, tensors typed, names unique across
 * operands and results; an aliased result names an operand of its dtype
 * and shape, and no operand is aliased by two results. */
int nx_macro_op_check(const nx_macro_op *op, nx_error *err);
/* Checks a tensor name's syntax ([A-Za-z_][A-Za-z0-9_.]*, shorter than
 * NX_TENSOR_NAME_MAX); `what` names it in the message ("operand 0"). */
int nx_op_tensor_name_check(const char *what, const char *name, nx_error *err);

/* File paths named by an op document in file mode (owned; nx_op_files_free). */
typedef struct nx_op_files {
    char *operand[NX_OP_MAX_TENSORS];
    char *result[NX_OP_MAX_TENSORS];
} nx_op_files;
void nx_op_files_free(nx_op_files *f);

/* Parses an op document (`json` is NUL-terminated, `source` names it).
 * With files == NULL every tensor needs "name", "shape" and "dtype", and
 * unknown keys are errors. With files != NULL (the CLI's --op), a tensor may
 * also carry "file": an operand with a file may omit shape and dtype (the
 * .npy supplies them), and a result may omit them (the kernel's rule
 * supplies them); omitted ones are left ndims 0 / NX_OP_DTYPE_UNSET.
 * "results" and "attrs" may be absent; "name" defaults to in<i> / out<i>. */
int nx_macro_op_parse(const char *source, const char *json, nx_macro_op *out, nx_op_files *files,
                      nx_error *err);
/* The op document (indented, insertion order), or NULL on out-of-memory. */
char *nx_macro_op_to_json(const nx_macro_op *op);

/* "fp32[512,384]" into buf. */
void nx_op_tensor_format(char *buf, size_t len, const nx_op_tensor *t);

#endif
