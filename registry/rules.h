/* nxsim's rules for one registry key or composite: what the seed's config
 * does not say but `nxsim run`, `--check`, the tests and the benches need.
 * The seed's config (registry.h) says which leaf traces an op and how its
 * arguments are marshalled; the rules say what the op's results are, which
 * default op `nxsim run KEY` runs, which reference checks it and how closely.
 *
 * One file per leaf family holds its rules and the rows that point at them
 * (registry/families/<family>.c, its record in registry/families/families.h).
 * Rules are per key: every row points at an nx_op_rules of its own or shares one (the two
 * transposes share nx_rules_transpose). A family whose keys differ (conv
 * layouts) gives each key its own nx_op_rules, or one set of functions that
 * reads op->func_name to find the key's data.
 *
 * Every function gets the op (func_name, operands, results, attributes),
 * returns 0 or -1 with one line in err naming the operand or attribute and
 * the rule ("operand 0 (x): permutation [0,0] is not a permutation of the 2
 * dims"). Nothing is kept: the functions are pure. */
#ifndef NXSIM_REGISTRY_RULES_H
#define NXSIM_REGISTRY_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "isa/dtype.h"
#include "isa/error.h"
#include "isa/geometry.h"
#include "macro_op.h"

/* The --check tolerance of one result: an element passes when
 *   |got - ref| <= max(abs, rel * |ref|)
 * (both 0: exact; NaN matches NaN, an infinity only the same infinity).
 * `text` says in a few words how it was derived, for the report
 * ("exact", "4 x eps(bf16)", "K=288 x eps(bf16)"). */
typedef struct nx_tolerance {
    double abs;
    double rel;
    char text[64];
} nx_tolerance;

/* The op's results from its operands and attributes (transposes: the operand
 * permuted). Appends them to op (which has none yet), named names[j] when
 * names and names[j] are non-NULL, else out0, out1, ... */
typedef int (*nx_infer_results_fn)(nx_macro_op *op, const char *const *names, nx_error *err);

/* The default op of `nxsim run KEY` without -i: appends operands and sets
 * attributes (deterministic; the caller then applies -a and infers the
 * results). Values of operands without a file are pseudo-random (--seed). */
typedef int (*nx_default_op_fn)(nx_macro_op *op, nx_error *err);

/* The reference (kernels/ref): results from the operands. inputs[i] and
 * outputs[j] are the bytes of operand i and result j in C order, in the
 * tensors' dtypes; outputs are zeroed by the caller. */
typedef int (*nx_reference_fn)(const nx_macro_op *op, const void *const *inputs,
                               void *const *outputs, nx_error *err);

/* The tolerance of result `result` of op, a function of the op (dtypes,
 * contraction length, attributes). */
typedef int (*nx_tolerance_fn)(const nx_macro_op *op, uint32_t result, nx_tolerance *out,
                               nx_error *err);

/* The same for a tolerance that depends on the machine the op runs on (a
 * kernel blocked by the partition count); geo may be NULL (callers without
 * a machine: the trn presets' 128 partitions). */
typedef int (*nx_tolerance_on_fn)(const nx_macro_op *op, const nx_geometry *geo, uint32_t result,
                                  nx_tolerance *out, nx_error *err);

/* Values of operand `operand` of an op run without a file for it (the
 * default op of `nxsim run KEY`, or an --op operand without "file"), for
 * operands whose values must mean something (a routing: token ids and
 * experts); data is the tensor's bytes in C order, filled deterministically
 * from seed. Returns 1 when it takes the operand (data NULL: only says
 * whether it would), 0 to leave the operand pseudo-random. */
typedef int (*nx_default_values_fn)(const nx_macro_op *op, uint32_t operand, void *data, uint64_t seed);

/* One line on how the kernel dispatches `op` on machine geometry `geo`
 * (a composite's method choice), for the run report, into buf. */
typedef int (*nx_explain_fn)(const nx_macro_op *op, const nx_geometry *geo, char *buf, size_t len,
                             nx_error *err);

/* The operand whose HBM tensor result `result` shares (XLA's
 * input_output_alias: the kernel updates it in place and writes only what
 * changes), or -1 for a result of its own. Called by
 * nx_op_rules_apply_results once the results are inferred; the pair must
 * have one dtype and shape (nx_macro_op_check). */
typedef int32_t (*nx_alias_fn)(const nx_macro_op *op, uint32_t result);

typedef struct nx_op_rules {
    /* The attribute names the leaf reads, NULL-terminated (NULL: none).
     * The run path refuses an op carrying any other name
     * (nx_op_rules_check_attrs), so a typo is an error, not a default. */
    const char *const *attrs;
    nx_infer_results_fn infer_results; /* NULL: results must be declared (--op) */
    nx_default_op_fn default_op;       /* NULL: operands must be given */
    nx_reference_fn reference;         /* NULL: --check is refused */
    const char *reference_name;        /* "nx_ref_transpose" (with reference) */
    nx_tolerance_fn tolerance;         /* NULL with reference means exact */
    nx_tolerance_on_fn tolerance_on;   /* when set, used instead of tolerance */
    nx_default_values_fn default_values; /* NULL: operands without a file are pseudo-random */
    nx_explain_fn explain;             /* NULL: nothing to say */
    nx_alias_fn aliases;               /* NULL: every result a tensor of its own */
} nx_op_rules;

/* ---- tolerances ready to use -------------------------------------------- */

/* Bit-exact comparison (moves: transposes, gathers). */
int nx_tolerance_exact(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err);

/* `multiple` units of the dtype's machine epsilon, relative above |ref| = 1
 * and absolute below it: abs = rel = multiple * eps(dt). text
 * "MULTIPLE x eps(DTYPE)". */
void nx_tolerance_eps(nx_tolerance *out, double multiple, nx_dtype dt);

/* The machine epsilon of a dtype: 2^-23 fp32, 2^-7 bf16, 2^-10 fp16,
 * 2^-3 fp8_e4m3, 2^-2 fp8_e5m2; 1 for integers. */
double nx_dtype_epsilon(nx_dtype dt);

/* The tolerance of result j under `rules` (exact when rules->tolerance is
 * NULL). */
int nx_op_rules_tolerance(const nx_op_rules *rules, const nx_macro_op *op, uint32_t result,
                          nx_tolerance *out, nx_error *err);
/* The same for the op on machine geometry geo (NULL: as above). */
int nx_op_rules_tolerance_on(const nx_op_rules *rules, const nx_macro_op *op, const nx_geometry *geo,
                             uint32_t result, nx_tolerance *out, nx_error *err);

/* Gives op its results by rules->infer_results, then each result's alias
 * by rules->aliases (nx_op_tensor.alias). Results op already has
 * (from an op file) keep their names, and a declared dtype (other than
 * NX_OP_DTYPE_UNSET) or shape (ndims != 0) must equal the rule's. Errors:
 * the rule's own (unprefixed); "KEY: nxsim has no result-shape rule for this
 * kernel yet"; and, prefixed with `source` (the op file) when non-NULL,
 * "N results given, KEY produces M" and "result 0 (y) is declared
 * fp32[2,4], but KEY produces fp32[4,2]". */
int nx_op_rules_apply_results(const nx_op_rules *rules, const char *key, const char *source,
                              nx_macro_op *op, nx_error *err);

/* Every attribute of `attrs` must be one rules->attrs names: otherwise
 * "KEY: unknown attribute 'stide' (did you mean 'stride'?); KEY reads:
 * stride, padding, ..." (or "KEY reads no attributes"). NULL rules (nothing
 * is known about the kernel) check nothing. */
int nx_op_rules_check_attrs(const nx_op_rules *rules, const char *key, const nx_attrs *attrs, nx_error *err);

/* The bytes of operand i of op (tensor t, at position `index` of its
 * program's table) when no file gives them: rules->default_values' built-in
 * values when it takes the operand, else isa/tensor_random.h's pseudo-random
 * ones from seed. nx_op_rules_builtin_values says which (1: built-in). */
void nx_op_rules_fill_operand(const nx_op_rules *rules, const nx_macro_op *op, uint32_t i,
                              const nx_tensor_decl *t, uint8_t *data, uint64_t seed, uint32_t index);
int nx_op_rules_builtin_values(const nx_op_rules *rules, const nx_macro_op *op, uint32_t i);

/* 1 if `name` is one of rules->attrs. */
int nx_op_rules_reads_attr(const nx_op_rules *rules, const char *name);

#endif
