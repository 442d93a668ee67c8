/* The run path's steps for a fuzzed op (tests/fuzz/lower.h). */
#include "lower.h"

#include "fuzz.h"
#include "isa/intmath.h"
#include "registry/lower.h"
#include "registry/prepare.h"

static uint64_t tensor_bytes(const nx_op_tensor *t) {
    uint64_t n = nx_dtype_size(t->dtype);
    for (uint32_t d = 0; d < t->ndims; d++) {
        if (t->shape[d] > ((uint64_t)1 << 32)) return UINT64_MAX;
        n *= t->shape[d];
        if (n > ((uint64_t)1 << 40)) return UINT64_MAX;
    }
    return n;
}

/* The stage nx_op_prepare refused at, for the message check. */
static const char *stage_name(nx_prepare_stage s) {
    switch (s) {
    case NX_PREPARE_MISS: return "lookup";
    case NX_PREPARE_ATTRS: return "attributes";
    case NX_PREPARE_RESULTS: return "results";
    case NX_PREPARE_CHECK: return "check";
    default: return "prepare";
    }
}

uint64_t nx_fuzz_lower_and_run(const nx_macro_op *op, uint64_t max_bytes) {
    nx_error err;
    for (uint32_t i = 0; i < op->n_operands; i++)
        if (op->operands[i].dtype == NX_OP_DTYPE_UNSET || op->operands[i].ndims == 0) return UINT64_MAX; /* file mode */
    const nx_geometry *geo = nx_fuzz_geometry("trn2");
    nx_lowerer *L = nx_lowerer_new(geo, NULL);
    if (!L) nx_fuzz_fail("out of memory");
    nx_prepared p;
    uint64_t bytes = UINT64_MAX;
    if (nx_op_prepare(L, op, "fuzz.json", &p, &err) != 0) {
        nx_fuzz_check_message(stage_name(p.failed), err.msg);
        goto done;
    }
    bytes = 0;
    for (uint32_t i = 0; i < p.op.n_operands; i++) bytes = nx_add_sat_u64(bytes, tensor_bytes(&p.op.operands[i]));
    for (uint32_t j = 0; j < p.op.n_results; j++) bytes = nx_add_sat_u64(bytes, tensor_bytes(&p.op.results[j]));
    if (bytes > max_bytes) goto done;
    const nx_program *prog;
    uint32_t grid;
    if (nx_lower(L, &p.target, &p.op, &prog, &grid, &err) != 0)
        nx_fuzz_check_message("lower", err.msg);
    else
        nx_fuzz_exec_small(prog, geo);
done:
    nx_prepared_free(&p);
    nx_lowerer_free(L);
    return bytes;
}
