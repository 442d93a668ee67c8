/* The run path's steps for a fuzzed op (tests/fuzz/lower.h). */
#include "lower.h"

#include "fuzz.h"
#include "registry/composites.h"
#include "registry/lower.h"
#include "registry/rules.h"

static uint64_t tensor_bytes(const nx_op_tensor *t) {
    uint64_t n = nx_dtype_size(t->dtype);
    for (uint32_t d = 0; d < t->ndims; d++) {
        if (t->shape[d] > ((uint64_t)1 << 32)) return UINT64_MAX;
        n *= t->shape[d];
        if (n > ((uint64_t)1 << 40)) return UINT64_MAX;
    }
    return n;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

uint64_t nx_fuzz_lower_and_run(nx_macro_op *op, uint64_t max_bytes) {
    nx_error err;
    nx_kernel_target t;
    if (nx_kernel_lookup(NULL, NULL, op->func_name, &t, &err) != 0) {
        nx_fuzz_check_message("lookup", err.msg);
        return UINT64_MAX;
    }
    if (nx_op_rules_check_attrs(t.rules, t.key, &op->attrs, &err) != 0) {
        nx_fuzz_check_message("attributes", err.msg);
        return UINT64_MAX;
    }
    for (uint32_t i = 0; i < op->n_operands; i++)
        if (op->operands[i].dtype == NX_OP_DTYPE_UNSET || op->operands[i].ndims == 0) return UINT64_MAX; /* file mode */
    if (nx_op_rules_apply_results(t.rules, t.key, "fuzz.json", op, &err) != 0) {
        nx_fuzz_check_message("results", err.msg);
        return UINT64_MAX;
    }
    if (nx_macro_op_check(op, &err) != 0) {
        nx_fuzz_check_message("check", err.msg);
        return UINT64_MAX;
    }
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < op->n_operands; i++) bytes = sat_add(bytes, tensor_bytes(&op->operands[i]));
    for (uint32_t j = 0; j < op->n_results; j++) bytes = sat_add(bytes, tensor_bytes(&op->results[j]));
    if (bytes > max_bytes) return bytes;
    const nx_geometry *geo = nx_fuzz_geometry("trn2");
    nx_lowerer *L = nx_lowerer_new(geo, NULL);
    if (!L) nx_fuzz_fail("out of memory");
    const nx_program *prog;
    uint32_t grid;
    if (nx_lower(L, op, &prog, &grid, &err) != 0)
        nx_fuzz_check_message("lower", err.msg);
    else
        nx_fuzz_exec_small(prog, geo);
    nx_lowerer_free(L);
    return bytes;
}
