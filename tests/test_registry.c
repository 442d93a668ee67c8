/* The internal kernel registry (docs/parts/registry.md): the 13 seed
 * entries and their configs against the seed's builder listing written out
 * by hand below, every transcription trap, the live table (once-only build
 * under racing threads, same pointer), the exact miss text, the three live
 * argument builders, resolve_kernel_config, the top-k method mapping, and
 * the macro-op model's JSON handling. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "registry/check.h"
#include "registry/families/families.h"
#include "registry/macro_op.h"
#include "registry/registry.h"
#include "kernels/topk/topk_methods.h"

/* ---- the seed's listing, copied from docs/parts/registry.md --------------- */

enum { B_NONE, B_ATTRS, B_CONV_OUT, B_RESIZE };
typedef struct expected_entry {
    const char *key;
    const char *func;
    int operand_count; /* -1 = all */
    int builder;
    int grid;
} expected_entry;

static const expected_entry seed[13] = {
    {"SelectAndScatter", "select_and_scatter_kernel", 2, B_NONE, 0},
    {"ResizeNearest", "resize_nearest_fixed_dma_kernel", 1, B_RESIZE, 0},
    {"Conv2d_pbp_0f1b_0i1o_01fb_experimental_1", "conv2d_pbp_0f1b_0i1o_01fb_experimental_1", -1,
     B_ATTRS, 0},
    {"Conv2d_pbp_fb01_io01_01bf_experimental_1", "conv2d_pbp_fb01_io01_01bf_kernel_experimental_1",
     -1, B_ATTRS, 0},
    {"Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh", "conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh", 2,
     B_CONV_OUT, 0},
    {"Conv1d_depthwise_bf01_oi01_bf01", "conv1d_depthwise_bf01_oi01_bf01", 2, B_CONV_OUT, 0},
    {"conv2d_column_packing", "conv2d_column_packing", 2, B_CONV_OUT, 0},
    {"conv2d_column_packing_io10", "conv2d_column_packing_io10", 2, B_CONV_OUT, 0},
    {"conv2d_column_packing_1", "conv2d_column_packing_1", 2, B_CONV_OUT, 0},
    {"blockwise_mm", "blockwise_mm", -1, B_ATTRS, 0},
    {"conv2d_depthwise_f01b_o01i_bf01", "conv2d_depthwise_f01b_o01i_bf01", 2, B_CONV_OUT, 0},
    {"tiled_pf_transpose", "tiled_pf_transpose", -1, B_ATTRS, 1},
    {"tiled_dve_transpose_10", "tiled_dve_transpose_10", -1, B_ATTRS, 1},
};

static const nx_args_builder *builder_of(int b) {
    switch (b) {
    case B_ATTRS: return &nx_args_attrs;
    case B_CONV_OUT: return &nx_args_conv_attrs_out_shape;
    case B_RESIZE: return &nx_args_resize;
    default: return NULL;
    }
}

/* ---- the live table: first use under 8 racing threads ------------------------
 * Must run first in this process: nothing before it may touch the table. */

#define RACERS 8
typedef struct racer {
    pthread_barrier_t *start;
    const nx_kernel_registry *got;
} racer;

static void *race_lookup(void *arg) {
    racer *r = arg;
    pthread_barrier_wait(r->start);
    r->got = nx_get_internal_kernel_registry();
    return NULL;
}

static void test_build_once_under_race(void **state) {
    (void)state;
    assert_int_equal(nx_registry_build_count(), 0); /* really first use */
    pthread_barrier_t start;
    assert_int_equal(pthread_barrier_init(&start, NULL, RACERS), 0);
    pthread_t th[RACERS];
    racer r[RACERS];
    for (int i = 0; i < RACERS; i++) {
        r[i].start = &start;
        r[i].got = NULL;
        assert_int_equal(pthread_create(&th[i], NULL, race_lookup, &r[i]), 0);
    }
    for (int i = 0; i < RACERS; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&start);
    assert_int_equal(nx_registry_build_count(), 1);
    for (int i = 0; i < RACERS; i++) {
        assert_non_null(r[i].got);
        assert_ptr_equal(r[i].got, r[0].got);
    }
    /* ... and every later call returns that same table, without a rebuild. */
    for (int i = 0; i < 100; i++) assert_ptr_equal(nx_get_internal_kernel_registry(), r[0].got);
    assert_int_equal(nx_registry_build_count(), 1);
}

/* ---- the catalogue against the seed -------------------------------------- */

static void test_catalogue_is_the_seed_listing(void **state) {
    (void)state;
    const nx_kernel_registry *cat = nx_registry_catalogue();
    assert_int_equal(cat->count, 13);
    for (uint32_t i = 0; i < 13; i++) {
        const nx_registry_entry *e = &cat->entries[i];
        assert_int_equal(e->seed_index, i + 1);
        assert_string_equal(e->key, seed[i].key);
        assert_non_null(e->config.kernel_func);
        assert_string_equal(e->config.kernel_func->name, seed[i].func);
        assert_int_equal(e->config.operand_count, seed[i].operand_count);
        assert_ptr_equal(e->config.additional_args_builder, builder_of(seed[i].builder));
        assert_int_equal(e->config.requires_multicore_grid, seed[i].grid);
        assert_false(e->config.output_is_parameter); /* default False for every entry */
    }
}

/* The catalogue is assembled from the family records and refuses anything
 * but the seed's 13 rows: a 14th row, a missing row, a seed index claimed
 * twice; the composites refuse a name twice and a registry key. */
static int assemble_with(const nx_family *extra, const char *drop, nx_error *err) {
    uint32_t nf;
    const nx_family *const *real = nx_families(&nf);
    const nx_family *fams[32];
    uint32_t n = 0;
    for (uint32_t i = 0; i < nf && n < 31; i++)
        if (!drop || strcmp(real[i]->name, drop) != 0) fams[n++] = real[i];
    if (extra) fams[n++] = extra;
    nx_registry_entry out[NX_SEED_ENTRIES];
    return nx_catalogue_assemble(fams, n, out, err);
}

static void test_catalogue_assembly_refuses_other_than_13_rows(void **state) {
    (void)state;
    nx_error err;
    uint32_t nf;
    const nx_family *const *real = nx_families(&nf);
    nx_registry_entry out[NX_SEED_ENTRIES];
    assert_int_equal(nx_catalogue_assemble(real, nf, out, &err), 0);
    for (uint32_t i = 0; i < NX_SEED_ENTRIES; i++) assert_int_equal(out[i].seed_index, i + 1);

    const nx_registry_entry *pf = nx_registry_get(nx_registry_catalogue(), "tiled_pf_transpose");
    nx_registry_entry fourteenth = *pf;
    fourteenth.seed_index = 14;
    fourteenth.key = "fourteenth";
    nx_family extra = {.name = "test", .rows = &fourteenth, .n_rows = 1};
    assert_int_equal(assemble_with(&extra, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "never a 14th registry row"));
    assert_non_null(strstr(err.msg, "row 'fourteenth' has seed index 14"));

    nx_registry_entry again = *pf;
    again.key = "again";
    extra.rows = &again;
    assert_int_equal(assemble_with(&extra, NULL, &err), -1);
    assert_string_equal(err.msg, "family test: rows 'tiled_pf_transpose' and 'again' both claim seed index 12");

    /* the two transposes gone, one back: 12 rows */
    nx_registry_entry one = *pf;
    extra.rows = &one;
    assert_int_equal(assemble_with(&extra, "transpose", &err), -1);
    assert_non_null(strstr(err.msg, "the families hold 12 registry rows: the seed's builder inserts exactly 13 entries"));

    nx_composite comps[NX_MAX_COMPOSITES];
    uint32_t nc;
    assert_int_equal(nx_composites_assemble(real, nf, nx_registry_catalogue(), comps, NX_MAX_COMPOSITES, &nc, &err), 0);
    assert_int_equal(nc, nx_composites()->count);
    nx_composite shadow = nx_composites()->items[0];
    shadow.name = "blockwise_mm";
    nx_family bad = {.name = "test", .composites = &shadow, .n_composites = 1};
    const nx_family *fb[1] = {&bad};
    assert_int_equal(nx_composites_assemble(fb, 1, nx_registry_catalogue(), comps, NX_MAX_COMPOSITES, &nc, &err), -1);
    assert_string_equal(err.msg, "family test: composite 'blockwise_mm' is a registry key (the registry would shadow it)");
    shadow.name = "topk";
    const nx_family *twice[2] = {&nx_family_topk, &bad};
    assert_int_equal(nx_composites_assemble(twice, 2, nx_registry_catalogue(), comps, NX_MAX_COMPOSITES, &nc, &err), -1);
    assert_string_equal(err.msg, "family test: composite 'topk' is also one of family topk");
    assert_int_equal(nx_composites_assemble(twice, 2, nx_registry_catalogue(), comps, 0, &nc, &err), -1);
    assert_string_equal(err.msg, "family topk: more than 0 composites (NX_MAX_COMPOSITES)");
}

static void test_trap_key4_has_no_kernel_but_function_does(void **state) {
    (void)state;
    const nx_registry_entry *e =
        nx_registry_get(nx_registry_catalogue(), "Conv2d_pbp_fb01_io01_01bf_experimental_1");
    assert_non_null(e);
    assert_int_equal(e->seed_index, 4);
    assert_string_equal(e->config.kernel_func->name, "conv2d_pbp_fb01_io01_01bf_kernel_experimental_1");
    assert_null(strstr(e->key, "_kernel"));
    /* The function name is not a key, and #3 keeps key == lowercased function. */
    assert_null(nx_registry_get(nx_registry_catalogue(), "conv2d_pbp_fb01_io01_01bf_kernel_experimental_1"));
    assert_null(nx_registry_get(nx_registry_catalogue(), "Conv2d_pbp_fb01_io01_01bf_kernel_experimental_1"));
    const nx_registry_entry *e3 = &nx_registry_catalogue()->entries[2];
    assert_string_equal(e3->config.kernel_func->name, "conv2d_pbp_0f1b_0i1o_01fb_experimental_1");
}

static void test_trap_capitalised_keys_lowercase_functions(void **state) {
    (void)state;
    const nx_kernel_registry *cat = nx_registry_catalogue();
    for (uint32_t i = 0; i < 13; i++) {
        const char *key = cat->entries[i].key;
        const char *fn = cat->entries[i].config.kernel_func->name;
        int capital_key = key[0] >= 'A' && key[0] <= 'Z';
        /* Capitalised keys: #1, #2 (op names) and #3-#6 (conv macro names). */
        assert_int_equal(capital_key, i <= 5);
        assert_true(fn[0] >= 'a' && fn[0] <= 'z'); /* every function is lowercase-initial */
        if (i >= 2 && i <= 5) {
            assert_true(key[0] == 'C');
            assert_true(fn[0] == 'c');
            /* and the lowercase form of the key is not itself a key */
            char lower[128];
            snprintf(lower, sizeof lower, "%s", key);
            lower[0] = 'c';
            assert_null(nx_registry_get(cat, lower));
        }
    }
}

static void test_trap_no_mlp_entry(void **state) {
    (void)state;
    const nx_kernel_registry *cat = nx_registry_catalogue();
    static const char *const absent[] = {"MLP", "mlp", "Mlp", "fused_mlp_isa_kernel",
                                         "resize_nearest_kernel", "conv2d_column_packing_2", NULL};
    for (int k = 0; absent[k]; k++) assert_null(nx_registry_get(cat, absent[k]));
    for (uint32_t i = 0; i < cat->count; i++) {
        char low[128];
        size_t n = strlen(cat->entries[i].key);
        for (size_t j = 0; j <= n; j++)
            low[j] = (char)((cat->entries[i].key[j] >= 'A' && cat->entries[i].key[j] <= 'Z')
                                ? cat->entries[i].key[j] + 32
                                : cat->entries[i].key[j]);
        assert_null(strstr(low, "mlp"));
        assert_null(strstr(cat->entries[i].config.kernel_func->name, "mlp"));
    }
}

static void test_three_live_builders_and_no_plain_conv_attrs(void **state) {
    (void)state;
    const nx_kernel_registry *cat = nx_registry_catalogue();
    int used[4] = {0};
    for (uint32_t i = 0; i < cat->count; i++) {
        const nx_args_builder *b = cat->entries[i].config.additional_args_builder;
        if (!b) used[0]++;
        else if (b == &nx_args_attrs) used[1]++;
        else if (b == &nx_args_conv_attrs_out_shape) used[2]++;
        else if (b == &nx_args_resize) used[3]++;
        else fail_msg("entry %u binds an unknown builder '%s'", i + 1, b->seed_name);
        if (b) assert_string_not_equal(b->seed_name, "_get_conv_attrs");
    }
    assert_int_equal(used[0], 1);  /* SelectAndScatter */
    assert_int_equal(used[1], 5);  /* #3, #4, #10, #12, #13 */
    assert_int_equal(used[2], 6);
    assert_int_equal(used[3], 1);
    assert_string_equal(nx_args_attrs.seed_name, "_get_attrs");
    assert_string_equal(nx_args_conv_attrs_out_shape.seed_name, "_get_conv_attrs_with_out_shape");
    assert_string_equal(nx_args_resize.seed_name, "_get_resize_args");
}

/* ---- the live table ------------------------------------------------------------ */

static void test_live_table_is_implemented_catalogue_in_seed_order(void **state) {
    (void)state;
    const nx_kernel_registry *live = nx_get_internal_kernel_registry();
    const nx_kernel_registry *cat = nx_registry_catalogue();
    uint32_t j = 0;
    for (uint32_t i = 0; i < cat->count; i++) {
        if (!cat->entries[i].config.kernel_func->fn) {
            assert_null(nx_registry_get(live, cat->entries[i].key));
            continue;
        }
        assert_true(j < live->count);
        assert_string_equal(live->entries[j].key, cat->entries[i].key);
        assert_ptr_equal(live->entries[j].config.kernel_func, cat->entries[i].config.kernel_func);
        j++;
    }
    assert_int_equal(j, live->count);
    /* Today every seed entry is implemented. */
    static const char *const keys[] = {"SelectAndScatter", "ResizeNearest",
                                       "Conv2d_pbp_0f1b_0i1o_01fb_experimental_1",
                                       "Conv2d_pbp_fb01_io01_01bf_experimental_1",
                                       "Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh",
                                       "Conv1d_depthwise_bf01_oi01_bf01", "conv2d_column_packing",
                                       "conv2d_column_packing_io10", "conv2d_column_packing_1", "blockwise_mm",
                                       "conv2d_depthwise_f01b_o01i_bf01", "tiled_pf_transpose",
                                       "tiled_dve_transpose_10"};
    static const uint32_t seed[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
    assert_int_equal(live->count, 13);
    for (uint32_t i = 0; i < 13; i++) {
        assert_string_equal(live->entries[i].key, keys[i]);
        assert_int_equal(live->entries[i].seed_index, seed[i]);
    }
}

static void test_miss_text_is_verbatim(void **state) {
    (void)state;
    nx_error err;
    assert_int_equal(nx_registry_miss(NULL, "NoSuchKernel", &err), -1);
    assert_string_equal(err.msg,
                        "Internal NKI kernel 'NoSuchKernel' is not registered. Available kernels: "
                        "dict_keys(['SelectAndScatter', 'ResizeNearest', "
                        "'Conv2d_pbp_0f1b_0i1o_01fb_experimental_1', 'Conv2d_pbp_fb01_io01_01bf_experimental_1', "
                        "'Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh', 'Conv1d_depthwise_bf01_oi01_bf01', "
                        "'conv2d_column_packing', 'conv2d_column_packing_io10', 'conv2d_column_packing_1', 'blockwise_mm', "
                        "'conv2d_depthwise_f01b_o01i_bf01', 'tiled_pf_transpose', 'tiled_dve_transpose_10'])");
    /* The live table leaves out catalogue entries without a leaf function
     * (checked in test_live_table_is_implemented_catalogue_in_seed_order), so
     * such a key gets this same miss text. */
}

/* Python's str(dict.keys()) rendering for other tables, via the test hook. */
static void test_keys_repr_like_python(void **state) {
    (void)state;
    char buf[256];
    nx_kernel_registry empty = {NULL, 0};
    nx_registry_keys_repr(&empty, buf, sizeof buf);
    assert_string_equal(buf, "dict_keys([])");
    static const nx_leaf l = {"leaf", NULL};
    nx_registry_entry e[3];
    memset(e, 0, sizeof e);
    e[0].key = "a";
    e[1].key = "it's";  /* repr switches to double quotes */
    e[2].key = "b\\c";  /* backslash escaped */
    for (int i = 0; i < 3; i++) e[i].config.kernel_func = &l;
    nx_kernel_registry reg = {e, 3};
    nx_registry_keys_repr(&reg, buf, sizeof buf);
    assert_string_equal(buf, "dict_keys(['a', \"it's\", 'b\\\\c'])");
    reg.count = 1;
    nx_error err;
    nx_registry_miss(&reg, "x", &err);
    assert_string_equal(err.msg, "Internal NKI kernel 'x' is not registered. Available kernels: dict_keys(['a'])");
}

/* ---- resolve_kernel_config with a private table of test leaves ------------- */

static int leaf_noop(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    (void)k;
    (void)call;
    (void)err;
    return 0;
}
static const nx_leaf test_leaf_a = {"test_leaf_a", leaf_noop};
static const nx_leaf test_leaf_unimpl = {"test_leaf_unimpl", NULL};

static nx_registry_entry test_cat_entries[] = {
    {.seed_index = 1, .key = "Two", .family = "test",
     .config = {&test_leaf_a, 2, &nx_args_conv_attrs_out_shape, false, false}},
    {.seed_index = 2, .key = "Unimpl", .family = "test",
     .config = {&test_leaf_unimpl, NX_OPERANDS_ALL, NULL, false, false}},
    {.seed_index = 3, .key = "All", .family = "test",
     .config = {&test_leaf_a, NX_OPERANDS_ALL, &nx_args_attrs, true, false}},
    {.seed_index = 4, .key = "Resize", .family = "test",
     .config = {&test_leaf_a, 1, &nx_args_resize, false, false}},
};

static void make_op(nx_macro_op *op, const char *name, uint32_t n_operands) {
    nx_error err;
    nx_macro_op_init(op);
    assert_int_equal(nx_macro_op_set_func_name(op, name, &err), 0);
    for (uint32_t i = 0; i < n_operands; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "in%u", i);
        uint64_t shape[2] = {i + 2, 3};
        assert_int_equal(nx_macro_op_add_operand(op, nm, i == 1 ? NX_DT_BF16 : NX_DT_FP32, 2, shape, &err), 0);
    }
    uint64_t rshape[3] = {7, 8, 9};
    assert_int_equal(nx_macro_op_add_result(op, "out0", NX_DT_INT32, 3, rshape, &err), 0);
    nx_value v = nx_value_int(5);
    assert_int_equal(nx_attrs_set(&op->attrs, "stride", &v, &err), 0);
}

static void test_resolve_call_args_and_builders(void **state) {
    (void)state;
    nx_registry_entry live[4];
    uint32_t n;
    nx_kernel_registry cat = {test_cat_entries, 4};
    nx_registry_filter_live(&cat, live, &n);
    assert_int_equal(n, 3);
    assert_string_equal(live[0].key, "Two");
    assert_string_equal(live[1].key, "All");
    assert_string_equal(live[2].key, "Resize");
    nx_kernel_registry reg = {live, n};
    nx_error err;
    nx_resolved r;
    nx_macro_op op;

    /* operand_count 2 of 3 operands: in0, in1, then the result. */
    make_op(&op, "Two", 3);
    assert_int_equal(nx_resolve_kernel_config(&reg, &op, &r, &err), 0);
    assert_ptr_equal(r.leaf, &test_leaf_a);
    assert_ptr_equal(r.config, &reg.entries[0].config);
    assert_int_equal(r.nargs, 3);
    assert_int_equal(r.n_inputs, 2);
    assert_string_equal(r.call_args[0].name, "in0");
    assert_string_equal(r.call_args[1].name, "in1");
    assert_int_equal(r.call_args[1].dtype, NX_DT_BF16);
    assert_int_equal(r.call_args[1].shape[0], 3);
    assert_string_equal(r.call_args[2].name, "out0");
    assert_int_equal(r.call_args[2].ndims, 3);
    assert_int_equal(r.call_args[2].shape[2], 9);
    /* conv attrs + out_shape: stride kept first, out_shape appended. */
    char *j = nx_attrs_to_json(&r.additional_args);
    assert_string_equal(j, "{\"stride\": 5, \"out_shape\": [7, 8, 9]}");
    free(j);
    nx_resolved_free(&r);
    /* An existing out_shape keeps its position (Python {**d, 'out_shape': x}). */
    nx_value v = nx_value_int(0);
    assert_int_equal(nx_attrs_set(&op.attrs, "out_shape", &v, &err), 0);
    v = nx_value_bool(1);
    assert_int_equal(nx_attrs_set(&op.attrs, "flag", &v, &err), 0);
    assert_int_equal(nx_resolve_kernel_config(&reg, &op, &r, &err), 0);
    j = nx_attrs_to_json(&r.additional_args);
    assert_string_equal(j, "{\"stride\": 5, \"out_shape\": [7, 8, 9], \"flag\": true}");
    free(j);
    nx_resolved_free(&r);
    nx_macro_op_free(&op);

    /* Too few operands for operand_count 2. */
    make_op(&op, "Two", 1);
    assert_int_equal(nx_resolve_kernel_config(&reg, &op, &r, &err), -1);
    assert_string_equal(err.msg, "Two: takes 2 operands, the op has 1");
    nx_macro_op_free(&op);

    /* operand_count None: all operands; attrs builder copies the dict. */
    make_op(&op, "All", 3);
    assert_int_equal(nx_resolve_kernel_config(&reg, &op, &r, &err), 0);
    assert_int_equal(r.nargs, 4);
    assert_int_equal(r.n_inputs, 3);
    assert_string_equal(r.call_args[2].name, "in2");
    assert_string_equal(r.call_args[3].name, "out0");
    assert_true(r.config->requires_multicore_grid);
    j = nx_attrs_to_json(&r.additional_args);
    assert_string_equal(j, "{\"stride\": 5}");
    free(j);
    nx_resolved_free(&r);
    nx_macro_op_free(&op);

    /* Resize args: result, access_shape, out_shape, then the op's attrs. */
    make_op(&op, "Resize", 2);
    assert_int_equal(nx_resolve_kernel_config(&reg, &op, &r, &err), 0);
    assert_int_equal(r.nargs, 2);
    assert_int_equal(r.n_inputs, 1);
    j = nx_attrs_to_json(&r.additional_args);
    assert_string_equal(j, "{\"result\": \"out0\", \"access_shape\": [7, 8, 9], \"out_shape\": [7, 8, 9], "
                           "\"stride\": 5}");
    free(j);
    nx_resolved_free(&r);
    nx_macro_op_free(&op);

    /* A not-implemented entry is not in the private live table either. */
    make_op(&op, "Unimpl", 1);
    assert_int_equal(nx_resolve_kernel_config(&reg, &op, &r, &err), -1);
    assert_string_equal(err.msg, "Internal NKI kernel 'Unimpl' is not registered. Available kernels: "
                                 "dict_keys(['Two', 'All', 'Resize'])");
    nx_macro_op_free(&op);
}

/* ---- the families' rules -------------------------------------------------- */

static void test_rules_are_per_row_and_complete_for_live_entries(void **state) {
    (void)state;
    const nx_kernel_registry *cat = nx_registry_catalogue();
    /* Both transposes point at the transpose family's rules. */
    assert_ptr_equal(cat->entries[11].rules, &nx_rules_transpose);
    assert_ptr_equal(cat->entries[12].rules, &nx_rules_transpose);
    assert_string_equal(cat->entries[11].family, "transpose");
    /* Every live entry has every rule `nxsim run` needs. */
    const nx_kernel_registry *live = nx_get_internal_kernel_registry();
    for (uint32_t i = 0; i < live->count; i++) {
        const nx_op_rules *r = live->entries[i].rules;
        assert_non_null(r);
        assert_non_null(r->infer_results);
        assert_non_null(r->default_op);
        assert_non_null(r->reference);
        assert_non_null(r->reference_name);
        assert_non_null(r->tolerance);
        assert_non_null(r->attrs);
    }
    /* The attribute names the transposes read. */
    assert_string_equal(nx_rules_transpose.attrs[0], "permutation");
    assert_null(nx_rules_transpose.attrs[1]);
    assert_true(nx_op_rules_reads_attr(&nx_rules_transpose, "permutation"));
    assert_false(nx_op_rules_reads_attr(&nx_rules_transpose, "perm"));
    assert_false(nx_op_rules_reads_attr(NULL, "permutation"));
}

/* The transpose rule: results, its errors (the transpose_plan.c messages),
 * the default op, the reference and an exact tolerance. */
static void test_transpose_rules(void **state) {
    (void)state;
    nx_error err;
    nx_macro_op op;
    nx_macro_op_init(&op);
    assert_int_equal(nx_macro_op_set_func_name(&op, "tiled_pf_transpose", &err), 0);
    assert_int_equal(nx_rules_transpose.default_op(&op, &err), 0);
    assert_int_equal(op.n_operands, 1);
    assert_int_equal(op.operands[0].dtype, NX_DT_FP32);
    assert_int_equal(op.operands[0].shape[0], 512);
    assert_int_equal(op.operands[0].shape[1], 384);
    char *j = nx_attrs_to_json(&op.attrs);
    assert_string_equal(j, "{\"permutation\": [1, 0]}");
    free(j);
    nx_macro_op_free(&op);

    /* [2,3,4] with permutation [-1, 0, 1] -> [4,2,3], named by the caller. */
    nx_macro_op_init(&op);
    assert_int_equal(nx_macro_op_set_func_name(&op, "tiled_pf_transpose", &err), 0);
    uint64_t shape[3] = {2, 3, 4};
    assert_int_equal(nx_macro_op_add_operand(&op, "x", NX_DT_INT16, 3, shape, &err), 0);
    nx_value v;
    assert_int_equal(nx_value_parse("p", "[-1, 0, 1]", &v, &err), 0);
    assert_int_equal(nx_attrs_set(&op.attrs, "permutation", &v, &err), 0);
    const char *names[1] = {"y"};
    assert_int_equal(nx_rules_transpose.infer_results(&op, names, &err), 0);
    assert_int_equal(op.n_results, 1);
    assert_string_equal(op.results[0].name, "y");
    assert_int_equal(op.results[0].dtype, NX_DT_INT16);
    assert_int_equal(op.results[0].ndims, 3);
    assert_int_equal(op.results[0].shape[0], 4);
    assert_int_equal(op.results[0].shape[1], 2);
    assert_int_equal(op.results[0].shape[2], 3);
    /* The reference on 24 int16 values: y[k][i][j] = x[i][j][k]. */
    int16_t x[24], y[24];
    for (int i = 0; i < 24; i++) x[i] = (int16_t)(i * 3 - 7);
    const void *ins[1] = {x};
    void *outs[1] = {y};
    assert_int_equal(nx_rules_transpose.reference(&op, ins, outs, &err), 0);
    for (int i = 0; i < 2; i++)
        for (int jj = 0; jj < 3; jj++)
            for (int k = 0; k < 4; k++) assert_int_equal(y[(k * 2 + i) * 3 + jj], x[(i * 3 + jj) * 4 + k]);
    nx_tolerance tol;
    assert_int_equal(nx_op_rules_tolerance(&nx_rules_transpose, &op, 0, &tol, &err), 0);
    assert_true(tol.abs == 0 && tol.rel == 0);
    assert_string_equal(tol.text, "exact");

    /* Errors name the operand and come from kernels/transpose/transpose_plan.c. */
    assert_int_equal(nx_value_parse("p", "[0, 0, 1]", &v, &err), 0);
    assert_int_equal(nx_attrs_set(&op.attrs, "permutation", &v, &err), 0);
    op.n_results = 0;
    assert_int_equal(nx_rules_transpose.infer_results(&op, NULL, &err), -1);
    assert_string_equal(err.msg, "operand 0 (x): permutation [0,0,1] is not a permutation of the 3 dims");
    assert_int_equal(nx_value_parse("p", "[1, 0]", &v, &err), 0);
    assert_int_equal(nx_attrs_set(&op.attrs, "permutation", &v, &err), 0);
    assert_int_equal(nx_rules_transpose.infer_results(&op, NULL, &err), -1);
    assert_string_equal(err.msg, "operand 0 (x): attribute permutation: has 2 entries, the input has 3 dims");
    assert_int_equal(nx_macro_op_add_operand(&op, "z", NX_DT_INT16, 3, shape, &err), 0);
    assert_int_equal(nx_rules_transpose.infer_results(&op, NULL, &err), -1);
    assert_string_equal(err.msg, "tiled_pf_transpose takes one operand, the op has 2");
    nx_macro_op_free(&op);
}

static void test_tolerances_and_compare(void **state) {
    (void)state;
    nx_tolerance t;
    nx_tolerance_eps(&t, 4, NX_DT_BF16);
    assert_true(t.abs == 4.0 / 128 && t.rel == 4.0 / 128);
    assert_string_equal(t.text, "4 x eps(bf16)");
    assert_true(nx_dtype_epsilon(NX_DT_FP32) == 1.0 / 8388608);
    assert_true(nx_dtype_epsilon(NX_DT_FP16) == 1.0 / 1024);
    assert_true(nx_dtype_epsilon(NX_DT_FP8_E4M3) == 0.125);
    assert_true(nx_dtype_epsilon(NX_DT_FP8_E5M2) == 0.25);
    assert_true(nx_dtype_epsilon(NX_DT_INT32) == 1);

    /* fp32, tolerance 1 x eps(fp32) = 2^-23: absolute below |ref| = 1,
     * relative above. */
    nx_tolerance_eps(&t, 1, NX_DT_FP32);
    const double e = 1.0 / 8388608;
    float ref[6] = {0.5f, 1024.0f, 0.0f, NAN, INFINITY, 3.0f};
    float got[6] = {(float)(0.5 + e), 1024.0f + 1024.0f * (float)e, (float)(2 * e), NAN, INFINITY, 3.0f};
    nx_check_result c;
    nx_check_compare(NX_DT_FP32, (const uint8_t *)got, (const uint8_t *)ref, 6, &t, &c);
    assert_int_equal(c.bad, 1); /* only 2 eps away from 0 fails */
    assert_int_equal(c.first_bad, 2);
    assert_true(c.max_abs == 1024 * e); /* within 1024 x eps relative to 1024 */
    assert_true(isinf(c.max_rel));      /* 2 eps against 0 */
    /* a NaN against a number, and -inf against +inf, are infinitely wrong */
    got[5] = NAN;
    got[4] = -INFINITY;
    nx_check_compare(NX_DT_FP32, (const uint8_t *)got, (const uint8_t *)ref, 6, &t, &c);
    assert_int_equal(c.bad, 3);
    assert_true(isinf(c.max_abs) && isinf(c.max_rel));
    /* exact: one ulp of 1024 is a mismatch */
    nx_tolerance exact;
    nx_error err;
    assert_int_equal(nx_tolerance_exact(NULL, 0, &exact, &err), 0);
    nx_check_compare(NX_DT_FP32, (const uint8_t *)got, (const uint8_t *)ref, 2, &exact, &c);
    assert_int_equal(c.bad, 2);
    assert_int_equal(c.first_bad, 0);
}

/* ---- top-k ---------------------------------------------------------------------- */

static void test_topk_mapping(void **state) {
    (void)state;
    assert_int_equal(NX_TOPK_SCANNING, 0);
    assert_int_equal(NX_TOPK_CASCADED, 1);
    assert_int_equal(NX_TOPK_ROTATIONAL, 2);
    uint32_t n;
    const nx_topk_method *m = nx_topk_method_mapping(&n);
    assert_int_equal(n, 3);
    assert_string_equal(m[0].member, "SCANNING");
    assert_string_equal(m[0].function, "naive_scanning_topk");
    assert_string_equal(m[0].via, "SupportedTopkMethods.SCANNING");
    assert_string_equal(m[2].via, "SupportedTopkMethods.ROTATIONAL");
    assert_string_equal(m[1].member, "CASCADED");
    assert_string_equal(m[1].function, "cascaded_2_stage_topk");
    assert_string_equal(m[2].member, "ROTATIONAL");
    assert_string_equal(m[2].function, "rotational_topk");
    assert_string_equal(nx_topk_method_get(NX_TOPK_SCANNING)->function, "naive_scanning_topk");
    nx_topk_method_id got;
    nx_error err;
    assert_int_equal(nx_topk_method_from_name("SCANNING", &got, &err), 0);
    assert_int_equal(got, NX_TOPK_SCANNING);
    assert_int_equal(nx_topk_method_from_name("NAIVE_SCANNING", &got, &err), -1);
    assert_string_equal(err.msg, "unknown top-k method 'NAIVE_SCANNING' (SupportedTopkMethods: "
                                 "SCANNING, CASCADED, ROTATIONAL)");
    assert_null(nx_topk_method_get((nx_topk_method_id)3));
}

/* ---- the inventory ------------------------------------------------------------ */

static void test_inventory(void **state) {
    (void)state;
    nx_inventory_item items[64];
    uint32_t n = nx_kernel_inventory(items, 64);
    assert_true(n >= 1 + 13 + 3);
    uint32_t leaves = 0, refs = 0, live = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (items[i].tier == NX_TIER_REFERENCE) refs++;
        if (items[i].tier == NX_TIER_LEAF) leaves++;
        if (items[i].registry_key && items[i].implemented) {
            live++;
            assert_non_null(nx_registry_get(NULL, items[i].registry_key));
        }
    }
    assert_int_equal(leaves, 16);
    assert_true(refs >= 1);
    assert_int_equal(live, nx_get_internal_kernel_registry()->count);
    assert_string_equal(nx_kernel_tier_name(NX_TIER_COMPOSITE), "composite");
}

/* ---- the macro-op model ------------------------------------------------------- */

static void test_attr_json_int_float_nested(void **state) {
    (void)state;
    nx_error err;
    nx_value v;
    assert_int_equal(nx_value_parse("-a x", "[1, 2.0, -3e2, [true, null, \"s\\\"q\"], 9223372036854775807]", &v, &err), 0);
    assert_int_equal(v.kind, NX_VAL_LIST);
    assert_int_equal(v.count, 5);
    assert_int_equal(v.items[0].kind, NX_VAL_INT);
    assert_int_equal(v.items[1].kind, NX_VAL_FLOAT);
    assert_true(v.items[1].f == 2.0);
    assert_int_equal(v.items[2].kind, NX_VAL_FLOAT);
    assert_true(v.items[2].f == -300.0);
    assert_int_equal(v.items[3].kind, NX_VAL_LIST);
    assert_int_equal(v.items[3].items[0].kind, NX_VAL_BOOL);
    assert_int_equal(v.items[3].items[1].kind, NX_VAL_NONE);
    assert_string_equal(v.items[3].items[2].s, "s\"q");
    assert_int_equal(v.items[4].kind, NX_VAL_INT);
    assert_true(v.items[4].i == INT64_MAX); /* exact beyond 2^53 */
    char *j = nx_value_to_json(&v);
    assert_string_equal(j, "[1, 2.0, -300.0, [true, null, \"s\\\"q\"], 9223372036854775807]");
    free(j);
    nx_value_free(&v);

    assert_int_equal(nx_value_parse("-a big", "9223372036854775808", &v, &err), -1);
    assert_string_equal(err.msg, "-a big: integer outside the int64 range");
    assert_int_equal(nx_value_parse("-a obj", "{\"k\": 1}", &v, &err), -1);
    assert_string_equal(err.msg, "-a obj: a JSON object is not an attribute value (use null, a boolean, "
                                 "a number, a string or a list)");
    assert_int_equal(nx_value_parse("-a p", "[1, 0", &v, &err), -1);
    assert_string_equal(err.msg, "-a p: invalid JSON at line 1, column 6");
    assert_int_equal(nx_value_parse("-a p", "[1] x", &v, &err), -1);
    /* Floats print in their shortest exact form. */
    assert_int_equal(nx_value_parse("f", "[0.1, 1e20, 2.5e-7, 123456.0]", &v, &err), 0);
    j = nx_value_to_json(&v);
    assert_string_equal(j, "[0.1, 1e+20, 2.5e-07, 123456.0]");
    free(j);
    nx_value_free(&v);
}

/* One JSON number policy (isa/json_write.h): JSON documents spell a
 * non-finite float as null, the canonical cache-key text keeps NaN and
 * infinities apart from null, and reading refuses a number beyond the
 * double range instead of turning it into an infinity. */
static void test_json_non_finite_policy(void **state) {
    (void)state;
    nx_error err;
    nx_value v = nx_value_float(NAN);
    char *j = nx_value_to_json(&v);
    assert_string_equal(j, "null");
    free(j);
    nx_attrs a, b;
    nx_attrs_init(&a);
    nx_attrs_init(&b);
    assert_int_equal(nx_attrs_set(&a, "x", &v, &err), 0);
    nx_value inf = nx_value_float(-INFINITY);
    assert_int_equal(nx_attrs_set(&a, "y", &inf, &err), 0);
    nx_value none;
    memset(&none, 0, sizeof none);
    assert_int_equal(nx_attrs_set(&b, "x", &none, &err), 0);
    j = nx_attrs_to_json(&a);
    assert_string_equal(j, "{\"x\": null, \"y\": null}");
    free(j);
    char *ca = nx_attrs_canonical(&a), *cb = nx_attrs_canonical(&b);
    assert_string_equal(ca, "{\"x\":NaN,\"y\":-Infinity}");
    assert_string_equal(cb, "{\"x\":null}");
    free(ca);
    free(cb);
    nx_attrs_free(&a);
    nx_attrs_free(&b);
    assert_int_equal(nx_value_parse("-a big", "[1e999]", &v, &err), -1);
    assert_string_equal(err.msg, "-a big[0]: number outside the double range");
    assert_int_equal(nx_value_parse("-a big", "-1e400", &v, &err), -1);
    assert_string_equal(err.msg, "-a big: number outside the double range");
}

static void test_canonical_attrs(void **state) {
    (void)state;
    nx_error err;
    nx_attrs a, b;
    nx_attrs_init(&a);
    nx_attrs_init(&b);
    nx_value v;
    assert_int_equal(nx_value_parse("x", "[1, 0]", &v, &err), 0);
    assert_int_equal(nx_attrs_set(&a, "permutation", &v, &err), 0);
    v = nx_value_float(2.0);
    assert_int_equal(nx_attrs_set(&a, "alpha", &v, &err), 0);
    v = nx_value_float(2.0);
    assert_int_equal(nx_attrs_set(&b, "alpha", &v, &err), 0);
    assert_int_equal(nx_value_parse("x", "[1,0]", &v, &err), 0);
    assert_int_equal(nx_attrs_set(&b, "permutation", &v, &err), 0);
    char *ca = nx_attrs_canonical(&a), *cb = nx_attrs_canonical(&b);
    assert_string_equal(ca, "{\"alpha\":2.0,\"permutation\":[1,0]}");
    assert_string_equal(ca, cb);
    free(ca);
    free(cb);
    /* INT 2 is not FLOAT 2.0 */
    v = nx_value_int(2);
    assert_int_equal(nx_attrs_set(&b, "alpha", &v, &err), 0);
    cb = nx_attrs_canonical(&b);
    assert_string_equal(cb, "{\"alpha\":2,\"permutation\":[1,0]}");
    free(cb);
    /* copies are deep */
    nx_attrs c;
    assert_int_equal(nx_attrs_copy(&c, &a, &err), 0);
    nx_attrs_free(&a);
    ca = nx_attrs_to_json(&c);
    assert_string_equal(ca, "{\"permutation\": [1, 0], \"alpha\": 2.0}");
    free(ca);
    nx_attrs_free(&b);
    nx_attrs_free(&c);
}

static void test_op_json_round_trip_and_errors(void **state) {
    (void)state;
    nx_error err;
    nx_macro_op op;
    const char *doc =
        "{\"func_name\": \"tiled_pf_transpose\",\n"
        " \"operands\": [{\"name\": \"x\", \"shape\": [4, 6], \"dtype\": \"bf16\"}],\n"
        " \"results\": [{\"name\": \"y\", \"shape\": [6, 4], \"dtype\": \"bf16\"}],\n"
        " \"attrs\": {\"permutation\": [1, 0], \"scale\": 0.5, \"mode\": \"floor\"}}";
    assert_int_equal(nx_macro_op_parse("op.json", doc, &op, NULL, &err), 0);
    assert_string_equal(op.func_name, "tiled_pf_transpose");
    assert_int_equal(op.n_operands, 1);
    assert_int_equal(op.operands[0].dtype, NX_DT_BF16);
    assert_int_equal(op.operands[0].shape[1], 6);
    assert_int_equal(op.n_results, 1);
    assert_string_equal(op.results[0].name, "y");
    char *j = nx_macro_op_to_json(&op);
    nx_macro_op back;
    assert_int_equal(nx_macro_op_parse("again", j, &back, NULL, &err), 0);
    char *j2 = nx_macro_op_to_json(&back);
    assert_string_equal(j, j2);
    assert_non_null(strstr(j, "\"attrs\": {\"permutation\": [1, 0], \"scale\": 0.5, \"mode\": \"floor\"}"));
    free(j);
    free(j2);
    nx_macro_op_free(&back);
    nx_macro_op_free(&op);

    static const struct {
        const char *doc, *msg;
    } bad[] = {
        {"[]", "op.json: the top level must be a JSON object"},
        {"{\"operands\": []}", "op.json: \"func_name\" must be a non-empty string (the registry key)"},
        {"{\"func_name\": \"k\"}", "op.json: missing \"operands\""},
        {"{\"func_name\": \"k\", \"operands\": [], \"extra\": 1}",
         "op.json: unknown key 'extra' (expected func_name, operands, results, attrs)"},
        {"{\"func_name\": \"k\", \"operands\": [{\"shape\": [0], \"dtype\": \"fp32\"}]}",
         "op.json: operands[0].shape[0] must be a positive integer (spelt as one: 8, not 8.0)"},
        /* the rule of integer attributes: 8.0 and 8e0 are floats */
        {"{\"func_name\": \"k\", \"operands\": [{\"shape\": [8.0, 6], \"dtype\": \"fp32\"}]}",
         "op.json: operands[0].shape[0] must be a positive integer (spelt as one: 8, not 8.0)"},
        {"{\"func_name\": \"k\", \"operands\": [{\"shape\": [8, 6e0], \"dtype\": \"fp32\"}]}",
         "op.json: operands[0].shape[1] must be a positive integer (spelt as one: 8, not 8.0)"},
        {"{\"func_name\": \"k\", \"operands\": [{\"shape\": [99999999999999999999], \"dtype\": \"fp32\"}]}",
         "op.json: operands[0].shape[0] must be a positive integer (spelt as one: 8, not 8.0)"},
        {"{\"func_name\": \"k\", \"operands\": [{\"shape\": [-3], \"dtype\": \"fp32\"}]}",
         "op.json: operands[0].shape[0] must be a positive integer (spelt as one: 8, not 8.0)"},
        {"{\"func_name\": \"k\", \"operands\": [{\"shape\": [2], \"dtype\": \"fp64\"}]}",
         "op.json: operands[0].dtype must be a dtype name (fp32, bf16, fp16, fp8_e4m3, fp8_e5m2, int8, "
         "uint8, int16, uint16, int32, uint32)"},
        {"{\"func_name\": \"k\", \"operands\": [{\"shape\": [2]}]}", "op.json: operands[0]: missing \"dtype\""},
        {"{\"func_name\": \"k\", \"operands\": [{\"shape\": [2], \"dtype\": \"fp32\", \"file\": \"a.npy\"}]}",
         "op.json: operands[0]: unknown key 'file' (expected name, shape, dtype)"},
        {"{\"func_name\": \"k\", \"operands\": [{\"name\": \"1x\", \"shape\": [2], \"dtype\": \"fp32\"}]}",
         "op.json: operands[0].name: name '1x' is not of the form [A-Za-z_][A-Za-z0-9_.]*"},
        {"{\"func_name\": \"k\", \"operands\": [{\"name\": \"a\", \"shape\": [2], \"dtype\": \"fp32\"}], "
         "\"results\": [{\"name\": \"a\", \"shape\": [2], \"dtype\": \"fp32\"}]}",
         "op.json: operand 0 and result 0 are both named 'a'"},
        {"{\"func_name\": \"k\", \"operands\": [], \"attrs\": {\"p\": 1, \"p\": 2}}",
         "op.json: attrs.p is given twice"},
        {"{\"func_name\": \"k\", \"operands\": [], \"attrs\": {\"p\": {\"q\": 1}}}",
         "op.json: attrs.p: a JSON object is not an attribute value (use null, a boolean, a number, a "
         "string or a list)"},
        {"{\"func_name\": \"k\",\n \"operands\": [,]}", "op.json: invalid JSON at line 2, column 15"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(nx_macro_op_parse("op.json", bad[i].doc, &op, NULL, &err), -1);
        assert_string_equal(err.msg, bad[i].msg);
    }

    /* File mode: "file" accepted, shape/dtype optional where a file or the
     * kernel's rule supplies them; default names in<i>/out<i>. */
    nx_op_files files;
    const char *fdoc = "{\"func_name\": \"k\", \"operands\": [{\"file\": \"x.npy\"}], "
                       "\"results\": [{\"file\": \"y.npy\"}], \"attrs\": {\"permutation\": [1, 0]}}";
    assert_int_equal(nx_macro_op_parse("op.json", fdoc, &op, &files, &err), 0);
    assert_string_equal(op.operands[0].name, "in0");
    assert_int_equal(op.operands[0].ndims, 0);
    assert_int_equal(op.operands[0].dtype, NX_OP_DTYPE_UNSET);
    assert_string_equal(op.results[0].name, "out0");
    assert_string_equal(files.operand[0], "x.npy");
    assert_string_equal(files.result[0], "y.npy");
    assert_null(files.operand[1]);
    nx_op_files_free(&files);
    nx_macro_op_free(&op);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        /* first: nothing may have built the live table before it */
        cmocka_unit_test(test_build_once_under_race),
        cmocka_unit_test(test_catalogue_is_the_seed_listing),
        cmocka_unit_test(test_catalogue_assembly_refuses_other_than_13_rows),
        cmocka_unit_test(test_trap_key4_has_no_kernel_but_function_does),
        cmocka_unit_test(test_trap_capitalised_keys_lowercase_functions),
        cmocka_unit_test(test_trap_no_mlp_entry),
        cmocka_unit_test(test_three_live_builders_and_no_plain_conv_attrs),
        cmocka_unit_test(test_live_table_is_implemented_catalogue_in_seed_order),
        cmocka_unit_test(test_miss_text_is_verbatim),
        cmocka_unit_test(test_keys_repr_like_python),
        cmocka_unit_test(test_resolve_call_args_and_builders),
        cmocka_unit_test(test_rules_are_per_row_and_complete_for_live_entries),
        cmocka_unit_test(test_transpose_rules),
        cmocka_unit_test(test_tolerances_and_compare),
        cmocka_unit_test(test_topk_mapping),
        cmocka_unit_test(test_inventory),
        cmocka_unit_test(test_attr_json_int_float_nested),
        cmocka_unit_test(test_json_non_finite_policy),
        cmocka_unit_test(test_canonical_attrs),
        cmocka_unit_test(test_op_json_round_trip_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
