/* The lowering driver (registry/lower.h): traces with test leaves from a
 * private registry table (cache hits and misses by every part of the key,
 * NEW_NKI_FE counts, grid 1 vs VNC(2), leaf errors passed on, the miss text,
 * one trace under racing threads), a test composite reached after a
 * registry miss (registry/composites.h), then the two real transposes on
 * the grid checked element by element against a transpose written here. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "isa/exec.h"
#include "isa/state.h"
#include "kernels/author/author.h"
#include "registry/lower.h"
#include "registry/macro_op.h"
#include "registry/registry.h"
#include "support.h"

/* ---- test leaves ---------------------------------------------------------------- */

/* This program's contiguous share [lo, hi) of operand 0's rows (nx_kctx_rows)
 * as HBM access patterns of operand 0 (src) and result 0 (dst); its rows. */
static uint64_t row_share(struct nx_kctx *k, const nx_kernel_call *call, nx_operand *src, nx_operand *dst,
                          uint64_t *cols_out) {
    const nx_tensor_ref *x = &call->args[0], *y = &call->args[call->n_inputs];
    uint64_t rows = x->shape[0], cols = 1;
    for (uint32_t d = 1; d < x->ndims; d++) cols *= x->shape[d];
    uint64_t lo, hi;
    nx_kctx_rows(k, rows, &lo, &hi);
    size_t es = nx_dtype_size(x->dtype);
    *src = nx_ap_hbm_rows(x->dtype, x->hbm_offset + lo * cols * es, (uint32_t)(hi - lo), (int32_t)cols,
                          (uint32_t)cols);
    *dst = nx_ap_hbm_rows(y->dtype, y->hbm_offset + lo * cols * es, (uint32_t)(hi - lo), (int32_t)cols,
                          (uint32_t)cols);
    *cols_out = cols;
    return hi > lo ? hi - lo : 0;
}

/* Copies operand 0 to result 0 through SBUF; program p of n takes its
 * contiguous share of the rows, so the output is complete only if every
 * program of the grid was traced. */
static int leaf_copy_rows(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_operand src, dst;
    uint64_t cols, rows = row_share(k, call, &src, &dst, &cols);
    if (rows == 0) return 0;
    nx_tile t;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "rows", call->args[0].dtype, (uint32_t)rows, cols, &t, err) != 0) return -1;
    nx_operand tile = nx_tile_ap(&t);
    if (nx_kctx_dma(k, &tile, &src, err) != 0) return -1;
    return nx_kctx_dma(k, &dst, &tile, err);
}

static int leaf_fail(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    (void)k;
    return nx_fail(err, "operand 0 (%s): the test leaf refuses every shape", call->args[0].name);
}

static const nx_leaf copy_leaf = {"copy_rows", leaf_copy_rows};
static const nx_leaf fail_leaf = {"always_fails", leaf_fail};

static const nx_registry_entry test_entries[] = {
    {.seed_index = 1, .key = "CopyGrid", .family = "test",
     .config = {&copy_leaf, NX_OPERANDS_ALL, &nx_args_attrs, true, false}},
    {.seed_index = 2, .key = "CopyOne", .family = "test",
     .config = {&copy_leaf, 1, NULL, false, false}},
    {.seed_index = 3, .key = "Fails", .family = "test",
     .config = {&fail_leaf, NX_OPERANDS_ALL, NULL, false, false}},
};
static const nx_kernel_registry test_reg = {test_entries, 3};

static void copy_op(nx_macro_op *op, const char *func, nx_dtype dt, uint64_t rows, uint64_t cols,
                    const char *in_name) {
    nx_error err;
    nx_macro_op_init(op);
    assert_int_equal(nx_macro_op_set_func_name(op, func, &err), 0);
    uint64_t shape[2] = {rows, cols};
    assert_int_equal(nx_macro_op_add_operand(op, in_name, dt, 2, shape, &err), 0);
    assert_int_equal(nx_macro_op_add_result(op, "out0", dt, 2, shape, &err), 0);
}

/* The target of op's func_name through L (the one lookup of a run,
 * registry/prepare.h), then nx_lower / nx_lower_on_grid on it: these ops
 * are built whole here, results included, for test leaves without rules. */
static int lower(nx_lowerer *L, const nx_macro_op *op, const nx_program **prog, uint32_t *grid, nx_error *err) {
    nx_kernel_target t;
    if (nx_lowerer_lookup(L, op->func_name, &t, err) != 0) return -1;
    return nx_lower(L, &t, op, prog, grid, err);
}

static int lower_on_grid(nx_lowerer *L, const nx_macro_op *op, uint32_t grid, const nx_program **prog,
                         nx_error *err) {
    nx_kernel_target t;
    if (nx_lowerer_lookup(L, op->func_name, &t, err) != 0) return -1;
    return nx_lower_on_grid(L, &t, op, grid, prog, err);
}

static void set_attr(nx_macro_op *op, const char *name, const char *json) {
    nx_error err;
    nx_value v;
    assert_int_equal(nx_value_parse(name, json, &v, &err), 0);
    assert_int_equal(nx_attrs_set(&op->attrs, name, &v, &err), 0);
}

/* Runs prog functionally on inputs from a fixed pattern; returns the output
 * bytes of tensor `out` (malloc'd) and fills *in_bytes with the input. */
static uint8_t *run_functional(const nx_program *prog, const nx_geometry *geo, const char *in,
                               const char *out, uint8_t **in_copy) {
    nx_error err;
    nx_state st;
    assert_int_equal(nx_state_init(&st, geo, prog->cores, prog->hbm_bytes, prog->sem_count, &err), 0);
    int ti = nx_program_find_tensor(prog, in), to = nx_program_find_tensor(prog, out);
    assert_true(ti >= 0 && to >= 0);
    const nx_tensor_decl *a = &prog->tensors[ti], *b = &prog->tensors[to];
    uint64_t n = nx_tensor_bytes(a);
    test_rng rng = {0x1234567u + n};
    for (uint64_t i = 0; i < n; i++) st.hbm[a->offset + i] = (uint8_t)(test_rng_next(&rng) >> 56);
    /* keep floats finite and non-NaN: clear the top exponent bit of each element's high byte */
    size_t es = nx_dtype_size((nx_dtype)a->dtype);
    if (nx_dtype_is_float((nx_dtype)a->dtype))
        for (uint64_t i = es - 1; i < n; i += es) st.hbm[a->offset + i] &= 0xbf;
    if (nx_exec_program(prog, &st, &err) != 0) fail_msg("exec: %s", err.msg);
    *in_copy = malloc(n);
    memcpy(*in_copy, st.hbm + a->offset, n);
    uint8_t *res = malloc(nx_tensor_bytes(b));
    memcpy(res, st.hbm + b->offset, nx_tensor_bytes(b));
    nx_state_free(&st);
    return res;
}

/* ---- the cache ------------------------------------------------------------------- */

static void test_cache_hits_and_misses(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_lowerer *L = nx_lowerer_new(&geo, &test_reg);
    assert_non_null(L);
    nx_error err;
    nx_macro_op op;
    const nx_program *p1, *p;
    uint32_t grid = 0;
    copy_op(&op, "CopyGrid", NX_DT_FP32, 10, 7, "in0");
    set_attr(&op, "a", "1");
    set_attr(&op, "b", "[2.0, \"x\"]");
    assert_int_equal(lower(L, &op, &p1, &grid, &err), 0);
    assert_int_equal(grid, 2);
    assert_int_equal(p1->cores, 2);
    assert_int_equal(nx_lowerer_new_traces(L), 1);
    assert_int_equal(nx_lowerer_cache_hits(L), 0);
    /* Tensor table mirrors the op: operand (input) then result (output). */
    assert_int_equal(p1->tensor_count, 2);
    assert_string_equal(p1->tensors[0].name, "in0");
    assert_int_equal(p1->tensors[0].role, NX_ROLE_INPUT);
    assert_string_equal(p1->tensors[1].name, "out0");
    assert_int_equal(p1->tensors[1].role, NX_ROLE_OUTPUT);
    /* Both programs of the grid were traced: each core has work. */
    for (uint32_t c = 0; c < 2; c++) assert_true(p1->stream[c][NX_ENG_SP].count > 0);

    /* Same op again: a hit, the same program. */
    assert_int_equal(lower(L, &op, &p, NULL, &err), 0);
    assert_ptr_equal(p, p1);
    assert_int_equal(nx_lowerer_new_traces(L), 1);
    assert_int_equal(nx_lowerer_cache_hits(L), 1);

    /* Attribute order does not matter (canonical text). */
    nx_macro_op op2;
    copy_op(&op2, "CopyGrid", NX_DT_FP32, 10, 7, "in0");
    set_attr(&op2, "b", "[2.0, \"x\"]");
    set_attr(&op2, "a", "1");
    assert_int_equal(lower(L, &op2, &p, NULL, &err), 0);
    assert_ptr_equal(p, p1);
    assert_int_equal(nx_lowerer_new_traces(L), 1);
    /* Every other part of the key makes a new trace. */
    set_attr(&op2, "a", "1.0"); /* INT 1 -> FLOAT 1.0 */
    assert_int_equal(lower(L, &op2, &p, NULL, &err), 0);
    assert_ptr_not_equal(p, p1);
    assert_int_equal(nx_lowerer_new_traces(L), 2);
    nx_macro_op_free(&op2);

    copy_op(&op2, "CopyGrid", NX_DT_BF16, 10, 7, "in0"); /* dtype */
    set_attr(&op2, "a", "1");
    set_attr(&op2, "b", "[2.0, \"x\"]");
    assert_int_equal(lower(L, &op2, &p, NULL, &err), 0);
    assert_int_equal(nx_lowerer_new_traces(L), 3);
    nx_macro_op_free(&op2);

    copy_op(&op2, "CopyGrid", NX_DT_FP32, 10, 8, "in0"); /* shape */
    set_attr(&op2, "a", "1");
    set_attr(&op2, "b", "[2.0, \"x\"]");
    assert_int_equal(lower(L, &op2, &p, NULL, &err), 0);
    assert_int_equal(nx_lowerer_new_traces(L), 4);
    nx_macro_op_free(&op2);

    copy_op(&op2, "CopyGrid", NX_DT_FP32, 10, 7, "x"); /* tensor name */
    set_attr(&op2, "a", "1");
    set_attr(&op2, "b", "[2.0, \"x\"]");
    assert_int_equal(lower(L, &op2, &p, NULL, &err), 0);
    assert_int_equal(nx_lowerer_new_traces(L), 5);
    nx_macro_op_free(&op2);

    /* grid: the same op on one core is another program. */
    assert_int_equal(lower_on_grid(L, &op, 1, &p, &err), 0);
    assert_int_equal(p->cores, 1);
    assert_int_equal(nx_lowerer_new_traces(L), 6);
    assert_int_equal(lower_on_grid(L, &op, 2, &p, &err), 0);
    assert_ptr_equal(p, p1); /* explicit 2 = the config's VNC(2) */
    assert_int_equal(nx_lowerer_new_traces(L), 6);
    assert_int_equal(lower_on_grid(L, &op, 3, &p, &err), -1);
    assert_string_equal(err.msg, "grid must be 1 or 2, got 3");
    assert_int_equal(nx_lowerer_cached(L), 6);
    assert_int_equal(nx_lowerer_cache_hits(L), 3);

    /* A non-grid entry runs on one core. */
    nx_macro_op_free(&op);
    copy_op(&op, "CopyOne", NX_DT_FP32, 10, 7, "in0");
    assert_int_equal(lower(L, &op, &p, &grid, &err), 0);
    assert_int_equal(grid, 1);
    assert_int_equal(p->cores, 1);
    assert_int_equal(nx_lowerer_new_traces(L), 7);
    nx_macro_op_free(&op);
    nx_lowerer_free(L);
}

static void test_cache_key_text(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_macro_op op;
    copy_op(&op, "CopyGrid", NX_DT_BF16, 3, 4, "x");
    set_attr(&op, "z", "[1, 0]");
    set_attr(&op, "a", "0.5");
    char *k = nx_lower_cache_key(&op, 2, &geo);
    assert_string_equal(k, "CopyGrid#8|x:bf16[3,4];|out0:bf16[3,4];|{\"a\":0.5,\"z\":[1,0]}|grid=2|machine=trn2");
    free(k);
    nx_macro_op_free(&op);
}

/* The copy leaf's output equals its input: both grid programs ran, on both
 * the 2-core and the 1-core trace. */
static void test_grid_programs_cover_all_rows(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_lowerer *L = nx_lowerer_new(&geo, &test_reg);
    nx_error err;
    nx_macro_op op;
    copy_op(&op, "CopyGrid", NX_DT_FP32, 13, 5, "in0");
    for (uint32_t grid = 1; grid <= 2; grid++) {
        const nx_program *p;
        assert_int_equal(lower_on_grid(L, &op, grid, &p, &err), 0);
        uint8_t *in;
        uint8_t *out = run_functional(p, &geo, "in0", "out0", &in);
        assert_memory_equal(out, in, 13 * 5 * 4);
        free(in);
        free(out);
    }
    nx_macro_op_free(&op);
    nx_lowerer_free(L);
}

/* ---- composites: reached after a registry miss ------------------------------------- */

/* A test composite with a method dispatch, like the top-k entry point's:
 * attribute "method" picks the leaf that traces the op ("rows": the SBUF
 * round trip of copy_rows; "direct": one HBM -> HBM DMA of this program's
 * rows). Both copy operand 0 to result 0. */
static int leaf_copy_direct(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_operand src, dst;
    uint64_t cols;
    if (row_share(k, call, &src, &dst, &cols) == 0) return 0;
    return nx_kctx_dma(k, &dst, &src, err);
}

static int composite_pick_copy(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    const nx_value *m = nx_attrs_get(call->additional_args, "method");
    if (!m || m->kind != NX_VAL_STRING) return nx_fail(err, "attribute method: must be \"rows\" or \"direct\"");
    if (strcmp(m->s, "rows") == 0) return leaf_copy_rows(k, call, err);
    if (strcmp(m->s, "direct") == 0) return leaf_copy_direct(k, call, err);
    return nx_fail(err, "attribute method: unknown method '%s' (rows, direct)", m->s);
}

static const nx_leaf pick_copy_leaf = {"pick_copy", composite_pick_copy};
static const nx_leaf unimplemented_leaf = {"not_yet", NULL};
static const nx_composite test_composite_items[] = {
    {.name = "PickCopy", .family = "test", .via = "attribute method",
     .config = {.kernel_func = &pick_copy_leaf, .operand_count = NX_OPERANDS_ALL,
                .additional_args_builder = &nx_args_attrs, .requires_multicore_grid = true}},
    /* a composite named like a registry key is shadowed by the registry */
    {.name = "CopyOne", .family = "test", .via = "shadowed",
     .config = {.kernel_func = &pick_copy_leaf, .operand_count = NX_OPERANDS_ALL}},
    /* not implemented: unreachable */
    {.name = "NotYet", .family = "test", .via = "none",
     .config = {.kernel_func = &unimplemented_leaf, .operand_count = NX_OPERANDS_ALL}},
};
static const nx_composite_table test_composites = {test_composite_items, 3};

static void test_composites_after_a_registry_miss(void **state) {
    (void)state;
    nx_error err;
    nx_kernel_target t;
    assert_int_equal(nx_kernel_lookup(&test_reg, &test_composites, "PickCopy", &t, &err), 0);
    assert_ptr_equal(t.composite, &test_composite_items[0]);
    assert_null(t.entry);
    assert_string_equal(t.key, "PickCopy");
    assert_string_equal(t.family, "test");
    /* the registry first */
    assert_int_equal(nx_kernel_lookup(&test_reg, &test_composites, "CopyOne", &t, &err), 0);
    assert_ptr_equal(t.entry, &test_entries[1]);
    assert_null(t.composite);
    /* neither, or an unimplemented composite: the registry's miss text, verbatim */
    static const char *const misses[] = {"Nope", "NotYet"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(nx_kernel_lookup(&test_reg, &test_composites, misses[i], &t, &err), -1);
        char want[256];
        snprintf(want, sizeof want,
                 "Internal NKI kernel '%s' is not registered. Available kernels: "
                 "dict_keys(['CopyGrid', 'CopyOne', 'Fails'])",
                 misses[i]);
        assert_string_equal(err.msg, want);
    }
    /* The registry's own resolution never reaches a composite. */
    nx_macro_op op;
    nx_resolved r;
    copy_op(&op, "PickCopy", NX_DT_FP32, 4, 4, "in0");
    assert_int_equal(nx_resolve_kernel_config(&test_reg, &op, &r, &err), -1);
    assert_string_equal(err.msg, "Internal NKI kernel 'PickCopy' is not registered. Available kernels: "
                                 "dict_keys(['CopyGrid', 'CopyOne', 'Fails'])");
    set_attr(&op, "method", "\"rows\"");
    assert_int_equal(nx_resolve_op(&test_reg, &test_composites, &op, &r, &err), 0);
    assert_ptr_equal(r.composite, &test_composite_items[0]);
    assert_null(r.entry);
    assert_ptr_equal(r.leaf, &pick_copy_leaf);
    assert_int_equal(r.nargs, 2);
    nx_resolved_free(&r);
    nx_macro_op_free(&op);

    /* The inventory's own composites: none shadowed by a registry key. */
    const nx_composite_table *inv = nx_composites();
    for (uint32_t i = 0; i < inv->count; i++)
        assert_null(nx_registry_get(nx_registry_catalogue(), inv->items[i].name));
}

/* The composite lowers like a leaf: on its grid, cached, counted; each
 * method's program copies the input; a bad method is its own error. */
static void test_composite_lowers_and_dispatches(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_lowerer *L = nx_lowerer_new_with(&geo, &test_reg, &test_composites);
    nx_error err;
    static const char *const methods[] = {"\"rows\"", "\"direct\""};
    uint32_t sp_count[2];
    for (int i = 0; i < 2; i++) {
        nx_macro_op op;
        copy_op(&op, "PickCopy", NX_DT_BF16, 9, 6, "in0");
        set_attr(&op, "method", methods[i]);
        const nx_program *p;
        uint32_t grid;
        assert_int_equal(lower(L, &op, &p, &grid, &err), 0);
        assert_int_equal(grid, 2);
        assert_int_equal(nx_lowerer_new_traces(L), (uint64_t)i + 1);
        sp_count[i] = p->stream[0][NX_ENG_SP].count;
        uint8_t *in;
        uint8_t *out = run_functional(p, &geo, "in0", "out0", &in);
        assert_memory_equal(out, in, 9 * 6 * 2);
        free(in);
        free(out);
        const nx_program *again;
        assert_int_equal(lower(L, &op, &again, NULL, &err), 0);
        assert_ptr_equal(again, p);
        nx_macro_op_free(&op);
    }
    assert_int_equal(nx_lowerer_cache_hits(L), 2);
    /* "rows" goes through SBUF (a DMA in and a DMA out), "direct" does not */
    assert_true(sp_count[0] > sp_count[1]);
    nx_macro_op op;
    copy_op(&op, "PickCopy", NX_DT_BF16, 9, 6, "in0");
    set_attr(&op, "method", "\"scan\"");
    const nx_program *p;
    assert_int_equal(lower(L, &op, &p, NULL, &err), -1);
    assert_string_equal(err.msg, "attribute method: unknown method 'scan' (rows, direct)");
    nx_macro_op_free(&op);
    /* nx_lowerer_new reaches the inventory's composites, not the test ones */
    nx_lowerer_free(L);
    L = nx_lowerer_new(&geo, &test_reg);
    copy_op(&op, "PickCopy", NX_DT_BF16, 9, 6, "in0");
    assert_int_equal(lower(L, &op, &p, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "Internal NKI kernel 'PickCopy' is not registered."));
    nx_macro_op_free(&op);
    nx_lowerer_free(L);
}

/* ---- errors ---------------------------------------------------------------------- */

static void test_errors(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_lowerer *L = nx_lowerer_new(&geo, &test_reg);
    nx_error err;
    nx_macro_op op;
    const nx_program *p;
    copy_op(&op, "NoSuchKernel", NX_DT_FP32, 4, 4, "in0");
    assert_int_equal(lower(L, &op, &p, NULL, &err), -1);
    assert_string_equal(err.msg, "Internal NKI kernel 'NoSuchKernel' is not registered. Available kernels: "
                                 "dict_keys(['CopyGrid', 'CopyOne', 'Fails'])");
    nx_macro_op_free(&op);

    copy_op(&op, "Fails", NX_DT_FP32, 4, 4, "x");
    assert_int_equal(lower(L, &op, &p, NULL, &err), -1);
    assert_string_equal(err.msg, "operand 0 (x): the test leaf refuses every shape");
    assert_int_equal(nx_lowerer_new_traces(L), 0); /* failures are not traces */
    assert_int_equal(nx_lowerer_cached(L), 0);
    nx_macro_op_free(&op);

    /* An op without a func_name is refused by the lookup. */
    nx_macro_op_init(&op);
    assert_int_equal(lower(L, &op, &p, NULL, &err), -1);
    assert_string_equal(err.msg, "the op has no func_name");
    nx_macro_op_free(&op);
    nx_lowerer_free(L);

    /* The live registry's miss text. */
    L = nx_lowerer_new(&geo, NULL);
    copy_op(&op, "MLP", NX_DT_FP32, 4, 4, "x");
    assert_int_equal(lower(L, &op, &p, NULL, &err), -1);
    assert_string_equal(err.msg, "Internal NKI kernel 'MLP' is not registered. Available kernels: "
                                 "dict_keys(['SelectAndScatter', 'ResizeNearest', "
                                 "'Conv2d_pbp_0f1b_0i1o_01fb_experimental_1', 'Conv2d_pbp_fb01_io01_01bf_experimental_1', "
                                 "'Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh', 'Conv1d_depthwise_bf01_oi01_bf01', "
                                 "'conv2d_column_packing', 'conv2d_column_packing_io10', 'conv2d_column_packing_1', 'blockwise_mm', "
                                 "'conv2d_depthwise_f01b_o01i_bf01', 'tiled_pf_transpose', 'tiled_dve_transpose_10'])");
    nx_macro_op_free(&op);

    /* A real leaf's refusal reaches the caller unchanged. */
    nx_macro_op_init(&op);
    uint64_t s3[3] = {4, 5, 6}, o3[3] = {5, 4, 6};
    assert_int_equal(nx_macro_op_set_func_name(&op, "tiled_pf_transpose", &err), 0);
    assert_int_equal(nx_macro_op_add_operand(&op, "x", NX_DT_FP32, 3, s3, &err), 0);
    assert_int_equal(nx_macro_op_add_result(&op, "y", NX_DT_FP32, 3, o3, &err), 0);
    set_attr(&op, "permutation", "[1, 0, 2]");
    assert_int_equal(lower(L, &op, &p, NULL, &err), -1);
    assert_string_equal(err.msg, "operand 0 (x): permutation [1,0,2] does not reduce to a swap of the "
                                 "last two dim groups (merged: shape [4,5,6], permutation [1,0,2])");
    assert_int_equal(nx_lowerer_new_traces(L), 0);
    nx_macro_op_free(&op);
    nx_lowerer_free(L);
}

/* ---- one trace when 8 threads ask at once ---------------------------------------- */

typedef struct racer {
    nx_lowerer *L;
    pthread_barrier_t *start;
    const nx_program *got;
    int rc;
} racer;

static void *race_lower(void *arg) {
    racer *r = arg;
    nx_macro_op op;
    nx_error err;
    copy_op(&op, "CopyGrid", NX_DT_FP32, 64, 32, "in0");
    pthread_barrier_wait(r->start);
    r->rc = lower(r->L, &op, &r->got, NULL, &err);
    nx_macro_op_free(&op);
    return NULL;
}

static void test_concurrent_lowering_traces_once(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_lowerer *L = nx_lowerer_new(&geo, &test_reg);
    enum { N = 8 };
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, N);
    pthread_t th[N];
    racer r[N];
    for (int i = 0; i < N; i++) {
        r[i] = (racer){L, &start, NULL, -1};
        assert_int_equal(pthread_create(&th[i], NULL, race_lower, &r[i]), 0);
    }
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < N; i++) {
        assert_int_equal(r[i].rc, 0);
        assert_ptr_equal(r[i].got, r[0].got);
    }
    assert_int_equal(nx_lowerer_new_traces(L), 1);
    assert_int_equal(nx_lowerer_cache_hits(L), N - 1);
    nx_lowerer_free(L);
}

/* ---- the real transposes on the VNC(2) grid ---------------------------------------- */

/* out = np.transpose(in, perm), written here by index arithmetic. */
static void transpose_ref(const uint8_t *in, uint8_t *out, size_t es, uint32_t nd,
                          const uint64_t *shape, const uint32_t *perm) {
    uint64_t oshape[6], istride[6], total = 1;
    for (uint32_t d = 0; d < nd; d++) oshape[d] = shape[perm[d]];
    for (int d = (int)nd - 1; d >= 0; d--) {
        istride[d] = total;
        total *= shape[d];
    }
    for (uint64_t o = 0; o < total; o++) {
        uint64_t rem = o, src = 0;
        for (int d = (int)nd - 1; d >= 0; d--) {
            uint64_t idx = rem % oshape[d];
            rem /= oshape[d];
            src += idx * istride[perm[d]];
        }
        memcpy(out + o * es, in + src * es, es);
    }
}

static void check_transpose(nx_lowerer *L, const nx_geometry *geo, const char *key, nx_dtype dt,
                            uint32_t nd, const uint64_t *shape, const uint32_t *perm) {
    nx_error err;
    nx_macro_op op;
    nx_macro_op_init(&op);
    assert_int_equal(nx_macro_op_set_func_name(&op, key, &err), 0);
    assert_int_equal(nx_macro_op_add_operand(&op, "x", dt, nd, shape, &err), 0);
    uint64_t oshape[6];
    uint64_t p64[6];
    for (uint32_t d = 0; d < nd; d++) {
        oshape[d] = shape[perm[d]];
        p64[d] = perm[d];
    }
    assert_int_equal(nx_macro_op_add_result(&op, "y", dt, nd, oshape, &err), 0);
    nx_value v;
    assert_int_equal(nx_value_int_list(&v, p64, nd, &err), 0);
    assert_int_equal(nx_attrs_set(&op.attrs, "permutation", &v, &err), 0);
    const nx_program *p;
    uint32_t grid;
    if (lower(L, &op, &p, &grid, &err) != 0) fail_msg("%s: %s", key, err.msg);
    assert_int_equal(grid, 2);
    assert_int_equal(p->cores, 2);
    uint8_t *in;
    uint8_t *out = run_functional(p, geo, "x", "y", &in);
    uint64_t n = 1;
    for (uint32_t d = 0; d < nd; d++) n *= shape[d];
    size_t es = nx_dtype_size(dt);
    uint8_t *want = malloc(n * es);
    transpose_ref(in, want, es, nd, shape, perm);
    assert_memory_equal(out, want, n * es);
    free(want);
    free(in);
    free(out);
    nx_macro_op_free(&op);
}

static void test_real_transposes_on_grid(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_lowerer *L = nx_lowerer_new(&geo, NULL);
    static const char *const keys[] = {"tiled_pf_transpose", "tiled_dve_transpose_10"};
    static const uint64_t s2[][2] = {{129, 257}, {1, 1}, {1, 70}, {70, 1}, {200, 33}};
    static const uint32_t p2[2] = {1, 0};
    for (int k = 0; k < 2; k++) {
        uint64_t before = nx_lowerer_new_traces(L);
        for (size_t s = 0; s < sizeof s2 / sizeof s2[0]; s++) {
            check_transpose(L, &geo, keys[k], NX_DT_FP32, 2, s2[s], p2);
            check_transpose(L, &geo, keys[k], NX_DT_BF16, 2, s2[s], p2);
        }
        /* 10 distinct (shape, dtype) ops: 10 new traces */
        assert_int_equal(nx_lowerer_new_traces(L), before + 10);
    }
    /* A 4-D permutation that reduces to a swap of the last two groups. */
    static const uint64_t s4[4] = {4, 5, 6, 7};
    static const uint32_t p4[4] = {2, 3, 0, 1};
    check_transpose(L, &geo, "tiled_dve_transpose_10", NX_DT_FP32, 4, s4, p4);
    nx_lowerer_free(L);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_hits_and_misses),
        cmocka_unit_test(test_cache_key_text),
        cmocka_unit_test(test_grid_programs_cover_all_rows),
        cmocka_unit_test(test_composites_after_a_registry_miss),
        cmocka_unit_test(test_composite_lowers_and_dispatches),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_concurrent_lowering_traces_once),
        cmocka_unit_test(test_real_transposes_on_grid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
