/* Test composites (tests/fixture_kernels.h). */
#include "fixture_kernels.h"

#include <string.h>

#include "isa/builder.h"
#include "kernels/author/author.h"

/* This program's contiguous rows of tensor t as one HBM access pattern. */
static nx_operand share(struct nx_kctx *k, const nx_tensor_ref *t, uint64_t *rows_out) {
    uint64_t rows = t->shape[0], cols = 1;
    for (uint32_t d = 1; d < t->ndims; d++) cols *= t->shape[d];
    uint64_t lo, hi;
    nx_kctx_rows(k, rows, &lo, &hi);
    *rows_out = hi - lo;
    return nx_ap_hbm_rows(t->dtype, t->hbm_offset + lo * cols * nx_dtype_size(t->dtype), (uint32_t)(hi - lo),
                          (int32_t)cols, (uint32_t)cols);
}

/* The program's share of operand 0 (src) and of result 0 (dst); its rows. */
static uint64_t endpoints(struct nx_kctx *k, const nx_kernel_call *call, nx_operand *src, nx_operand *dst) {
    uint64_t rows;
    *src = share(k, &call->args[0], &rows);
    *dst = share(k, &call->args[call->n_inputs], &rows);
    return rows;
}

static int synced_copy(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_operand src, dst;
    uint64_t rows = endpoints(k, call, &src, &dst);
    if (rows == 0) return 0;
    nx_tile t;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "copy", call->args[0].dtype, (uint32_t)rows, nx_operand_free_elems(&src),
                      &t, err) != 0)
        return -1;
    nx_operand tile = nx_tile_ap(&t);
    if (nx_kctx_dma(k, &tile, &src, err) != 0) return -1;
    return nx_kctx_dma(k, &dst, &tile, err);
}

static int racy_copy(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_operand src, dst;
    if (endpoints(k, call, &src, &dst) == 0) return 0;
    for (int queue = 0; queue < 2; queue++) {
        nx_insn i = nx_insn_make(NX_OP_DMA_COPY);
        i.op[0] = dst;
        i.op[1] = src;
        i.iparam[0] = queue;
        if (nx_builder_emit(nx_kctx_builder(k), nx_kctx_program_id(k), NX_ENG_SP, &i, NULL, err) != 0) return -1;
    }
    return 0;
}

/* Result 0 shares operand 0's tensor (the rules' alias): row 0 + 1
 * through SBUF, written back in place; every other row left as loaded. */
static int inplace_bump(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    const nx_tensor_ref *x = &call->args[0], *y = &call->args[call->n_inputs];
    const uint32_t cols = (uint32_t)x->shape[1];
    nx_tile t;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "row", x->dtype, 1, cols, &t, err) != 0) return -1;
    nx_operand tile = nx_tile_ap(&t), one = nx_imm(1.0, (nx_dtype)x->dtype);
    nx_operand src = nx_ap_hbm_rows(x->dtype, x->hbm_offset, 1, (int32_t)cols, cols);
    nx_operand dst = nx_ap_hbm_rows(x->dtype, y->hbm_offset, 1, (int32_t)cols, cols);
    if (nx_kctx_dma(k, &tile, &src, err) != 0 ||
        nx_kctx_tensor_scalar(k, NX_ENG_DVE, &tile, &tile, NX_ALU_ADD, &one, NX_ALU_BYPASS, NULL, err) != 0)
        return -1;
    return nx_kctx_dma(k, &dst, &tile, err);
}

/* The same tensor shared, raced: row 0 read into SBUF on queue 0 while
 * queue 1 writes row 1 over row 0 of the result, with nothing ordering
 * them. Two tensors of their own would not race; the shared one does. */
static int racy_inplace(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    const nx_tensor_ref *x = &call->args[0], *y = &call->args[call->n_inputs];
    const uint32_t cols = (uint32_t)x->shape[1];
    const uint64_t row = cols * nx_dtype_size(x->dtype);
    nx_tile t;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "row", x->dtype, 1, cols, &t, err) != 0) return -1;
    nx_insn i = nx_insn_make(NX_OP_DMA_COPY);
    i.op[0] = nx_tile_ap(&t);
    i.op[1] = nx_ap_hbm_rows(x->dtype, x->hbm_offset, 1, (int32_t)cols, cols);
    i.iparam[0] = 0;
    if (nx_builder_emit(nx_kctx_builder(k), nx_kctx_program_id(k), NX_ENG_SP, &i, NULL, err) != 0) return -1;
    i.op[0] = nx_ap_hbm_rows(x->dtype, y->hbm_offset, 1, (int32_t)cols, cols);
    i.op[1] = nx_ap_hbm_rows(x->dtype, x->hbm_offset + row, 1, (int32_t)cols, cols);
    i.iparam[0] = 1;
    return nx_builder_emit(nx_kctx_builder(k), nx_kctx_program_id(k), NX_ENG_SP, &i, NULL, err);
}

/* ---- the rules both share ---- */

static int same_as_operand(nx_macro_op *op, const char *const *names, nx_error *err) {
    if (op->n_operands != 1) return nx_fail(err, "%s takes one operand, the op has %u", op->func_name, op->n_operands);
    const nx_op_tensor *x = &op->operands[0];
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", x->dtype, x->ndims, x->shape, err);
}

static int default_4x8(nx_macro_op *op, nx_error *err) {
    static const uint64_t shape[2] = {4, 8};
    return nx_macro_op_add_operand(op, "in0", NX_DT_FP32, 2, shape, err);
}

static int copy_reference(const nx_macro_op *op, const void *const *inputs, void *const *outputs, nx_error *err) {
    (void)err;
    const nx_op_tensor *x = &op->operands[0];
    size_t n = nx_dtype_size(x->dtype);
    for (uint32_t d = 0; d < x->ndims; d++) n *= x->shape[d];
    memcpy(outputs[0], inputs[0], n);
    return 0;
}

static const nx_op_rules copy_rules = {
    .attrs = (const char *const[]){NULL},
    .infer_results = same_as_operand,
    .default_op = default_4x8,
    .reference = copy_reference,
    .reference_name = "memcpy",
    .tolerance = nx_tolerance_exact,
};

/* The in-place fixtures: result 0 aliases operand 0. */
static int32_t alias_first(const nx_macro_op *op, uint32_t result) {
    (void)op;
    return result == 0 ? 0 : -1;
}

/* rows(x) = x; then row 0 + 1 (bump) or row 1 over row 0 (racy). */
static int bump_reference(const nx_macro_op *op, const void *const *inputs, void *const *outputs, nx_error *err) {
    if (copy_reference(op, inputs, outputs, err) != 0) return -1;
    float *y = outputs[0];
    for (uint64_t c = 0; c < op->operands[0].shape[1]; c++) y[c] += 1.0f;
    return 0;
}
static int racy_reference(const nx_macro_op *op, const void *const *inputs, void *const *outputs, nx_error *err) {
    if (copy_reference(op, inputs, outputs, err) != 0) return -1;
    float *y = outputs[0];
    const uint64_t cols = op->operands[0].shape[1];
    memcpy(y, y + cols, cols * sizeof *y);
    return 0;
}

static const nx_op_rules bump_rules = {
    .attrs = (const char *const[]){NULL},
    .infer_results = same_as_operand,
    .default_op = default_4x8,
    .reference = bump_reference,
    .reference_name = "bump",
    .tolerance = nx_tolerance_exact,
    .aliases = alias_first,
};
static const nx_op_rules racy_inplace_rules = {
    .attrs = (const char *const[]){NULL},
    .infer_results = same_as_operand,
    .default_op = default_4x8,
    .reference = racy_reference,
    .reference_name = "row_1_over_row_0",
    .tolerance = nx_tolerance_exact,
    .aliases = alias_first,
};

static const nx_leaf synced_leaf = {"fixture_synced_copy", synced_copy};
static const nx_leaf racy_leaf = {"fixture_racy_copy", racy_copy};
static const nx_leaf bump_leaf = {"fixture_inplace_bump", inplace_bump};
static const nx_leaf racy_inplace_leaf = {"fixture_racy_inplace", racy_inplace};

static const nx_composite items[] = {
    {.name = "synced_copy", .family = "test", .rules = &copy_rules, .via = "tests/fixture_kernels.c",
     .config = {.kernel_func = &synced_leaf, .operand_count = NX_OPERANDS_ALL, .requires_multicore_grid = true}},
    {.name = "racy_copy", .family = "test", .rules = &copy_rules, .via = "tests/fixture_kernels.c",
     .config = {.kernel_func = &racy_leaf, .operand_count = NX_OPERANDS_ALL}},
    {.name = "inplace_bump", .family = "test", .rules = &bump_rules, .via = "tests/fixture_kernels.c",
     .config = {.kernel_func = &bump_leaf, .operand_count = NX_OPERANDS_ALL}},
    {.name = "racy_inplace", .family = "test", .rules = &racy_inplace_rules, .via = "tests/fixture_kernels.c",
     .config = {.kernel_func = &racy_inplace_leaf, .operand_count = NX_OPERANDS_ALL}},
};

const nx_composite_table fixture_composites = {items, sizeof items / sizeof items[0]};
