/* The transpose leaves (kernels/transpose/transpose.h), their permutation analysis
 * (kernels/transpose/transpose_plan.h) and the reference (kernels/ref/ref.h).
 *
 * Each leaf is traced for every program_id of a 1- or 2-core grid into one
 * builder, the program is checked race-free by the static order check
 * (test_kcheck_program) and, when the SystemC model is linked, run on it with
 * the race detector; it is executed with the functional executor and the
 * output compared bit for bit with nx_ref_transpose on random bit patterns
 * (NaN payloads included). The reference itself is checked against
 * hand-computed arrays. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "isa/builder.h"
#include "isa/exec.h"
#include "isa/opcodes.h"
#include "kernels/author/author.h"
#include "kernels/ref/ref.h"
#include "kernels/transpose/transpose.h"
#include "kernels/transpose/transpose_plan.h"
#include "kcheck.h"
#include "support.h"
#include "sim/machine.h"
#include "sim/model.h"
#include "sim/race.h"

typedef int (*leaf_fn)(struct nx_kctx *, const nx_kernel_call *, nx_error *);

/* ---- building calls ---- */

typedef struct call_buf {
    nx_tensor_ref args[2];
    nx_attrs attrs;
    nx_attr attr;
    nx_value items[NX_KERNEL_MAX_DIMS];
    char name[16];
    nx_kernel_call call;
} call_buf;

static void out_shape(uint32_t ndims, const uint64_t *shape, const int64_t *perm, uint64_t *out) {
    for (uint32_t k = 0; k < ndims; k++) {
        int64_t v = perm ? perm[k] : (int64_t)(ndims - 1 - k);
        if (v < 0) v += ndims;
        out[k] = shape[v];
    }
}

/* A call x -> y; perm NULL leaves the attribute out. Offsets are filled by
 * declare(). */
static void make_call(call_buf *c, nx_dtype dt, uint32_t ndims, const uint64_t *shape,
                      const int64_t *perm) {
    memset(c, 0, sizeof *c);
    strcpy(c->args[0].name, "x");
    strcpy(c->args[1].name, "y");
    c->args[0].dtype = c->args[1].dtype = dt;
    c->args[0].ndims = c->args[1].ndims = ndims;
    memcpy(c->args[0].shape, shape, ndims * sizeof *shape);
    out_shape(ndims, shape, perm, c->args[1].shape);
    if (perm) {
        strcpy(c->name, "permutation");
        c->attr.name = c->name;
        c->attr.value.kind = NX_VAL_LIST;
        c->attr.value.items = c->items;
        c->attr.value.count = ndims;
        for (uint32_t i = 0; i < ndims; i++) {
            c->items[i].kind = NX_VAL_INT;
            c->items[i].i = perm[i];
        }
        c->attrs.items = &c->attr;
        c->attrs.count = 1;
    }
    c->call.args = c->args;
    c->call.nargs = 2;
    c->call.n_inputs = 1;
    c->call.additional_args = &c->attrs;
}

static void declare(nx_builder *b, call_buf *c) {
    nx_error err;
    for (int i = 0; i < 2; i++)
        if (nx_builder_tensor(b, c->args[i].name, c->args[i].dtype, c->args[i].ndims, c->args[i].shape,
                              i ? NX_ROLE_OUTPUT : NX_ROLE_INPUT, &c->args[i].hbm_offset, &err) != 0)
            fail_msg("declare %s: %s", c->args[i].name, err.msg);
}

/* Traces the leaf for every program of a `cores` grid. Returns the leaf's
 * rc (program 0's error in err). */
static int trace(leaf_fn leaf, nx_builder *b, uint32_t cores,
                 const nx_kernel_call *call, nx_error *err) {
    for (uint32_t p = 0; p < cores; p++) {
        nx_machine km = test_machine_of(nx_builder_geometry(b));
        nx_kctx *k = nx_kctx_new_machine(b, &km, p, cores);
        assert_non_null(k);
        if (leaf(k, call, err) != 0) {
            nx_kctx_free(k);
            return -1;
        }
        if (nx_kctx_finish(k, err) != 0) fail_msg("finish: %s", err->msg);
        nx_kctx_free(k);
    }
    return 0;
}

static uint64_t elems_of(uint32_t ndims, const uint64_t *shape) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < ndims; i++) n *= shape[i];
    return n;
}

static void fill_random(uint8_t *p, uint64_t n, uint64_t seed) {
    test_rng r = {seed * 0x9E3779B97F4A7C15ull + 1};
    for (uint64_t i = 0; i < n; i += 8) {
        uint64_t v = test_rng_next(&r);
        for (uint64_t j = 0; j < 8 && i + j < n; j++) p[i + j] = (uint8_t)(v >> (8 * j));
    }
}

static void compare_bytes(const uint8_t *got, const uint8_t *want, uint64_t n, size_t size,
                          const char *what) {
    if (memcmp(got, want, n) == 0) return;
    for (uint64_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("%s: element %llu differs (byte %llu: got 0x%02x, want 0x%02x)", what,
                     (unsigned long long)(i / size), (unsigned long long)i, got[i], want[i]);
}

/* Full check of one case: trace, order-check, execute, compare (and the
 * model + race detector when linked). */
/* POOL gathers in the last program check_leaf traced (the block route). */
static uint32_t g_gathers;

static void check_leaf(leaf_fn leaf, const char *leaf_name, nx_dtype dt, uint32_t ndims,
                       const uint64_t *shape, const int64_t *perm, uint32_t cores, uint64_t seed) {
    char what[512], stxt[128], ptxt[128];
    nx_format_u64_list(stxt, sizeof stxt, shape, ndims);
    if (perm) nx_format_i64_list(ptxt, sizeof ptxt, perm, ndims);
    else strcpy(ptxt, "(reverse)");
    snprintf(what, sizeof what, "%s %s %s perm %s on %u core%s", leaf_name, nx_dtype_name(dt), stxt, ptxt,
             cores, cores == 1 ? "" : "s");

    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, cores);
    assert_non_null(b);
    call_buf c;
    make_call(&c, dt, ndims, shape, perm);
    declare(b, &c);
    nx_error err;
    if (trace(leaf, b, cores, &c.call, &err) != 0) fail_msg("%s: %s", what, err.msg);
    nx_program prog;
    if (nx_builder_finish(b, &prog, &err) != 0) fail_msg("%s: finish: %s", what, err.msg);
    nx_builder_free(b);
    int oc = test_kcheck_program(&prog, &err);
    if (oc != 0) fail_msg("%s: order check: %s", what, err.msg);
    g_gathers = 0;
    for (uint32_t core = 0; core < prog.cores; core++)
        for (uint32_t i = 0; i < prog.stream[core][NX_ENG_POOL].count; i++)
            g_gathers += prog.stream[core][NX_ENG_POOL].recs[i].opcode == NX_OP_LOCAL_GATHER;

    size_t size = nx_dtype_size(dt);
    uint64_t n = elems_of(ndims, shape), bytes = n * size;
    uint8_t *x = malloc(bytes ? bytes : 1), *want = malloc(bytes ? bytes : 1);
    assert_non_null(x);
    assert_non_null(want);
    fill_random(x, bytes, seed);
    if (nx_ref_transpose(x, dt, ndims, shape, perm, want, &err) != 0) fail_msg("%s: ref: %s", what, err.msg);

    nx_state st;
    if (nx_state_init(&st, &geo, cores, prog.hbm_bytes, prog.sem_count, &err) != 0)
        fail_msg("%s: state: %s", what, err.msg);
    memcpy(st.hbm + c.args[0].hbm_offset, x, bytes);
    if (nx_exec_program(&prog, &st, &err) != 0) fail_msg("%s: exec: %s", what, err.msg);
    compare_bytes(st.hbm + c.args[1].hbm_offset, want, bytes, size, what);

    nx_machine m;
    if (nx_machine_load("trn2", &m, &err) != 0) fail_msg("machine: %s", err.msg);
    nx_state_reset(&st);
    memcpy(st.hbm + c.args[0].hbm_offset, x, bytes);
    nx_sim_options opt = {1, 0};
    nx_sim_result res;
    memset(&res, 0, sizeof res);
    if (nx_sim_run(&m, &prog, &st, &opt, &res, &err) != 0) fail_msg("%s: model: %s", what, err.msg);
    int race = nx_race_check(&prog, res.log, res.log_count, &err);
    if (race != 0) fail_msg("%s: race detector: %s", what, err.msg);
    nx_sim_result_free(&res);
    compare_bytes(st.hbm + c.args[1].hbm_offset, want, bytes, size, what);

    nx_state_free(&st);
    nx_program_free(&prog);
    free(x);
    free(want);
}

/* Expects the leaf to refuse the call with exactly `msg`. */
static void expect_refusal(leaf_fn leaf, const call_buf *c, const char *msg) {
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 2);
    assert_non_null(b);
    call_buf local = *c;
    local.call.args = local.args;
    if (c->attrs.count) {
        local.attr.value.items = local.items;
        local.attr.name = local.name;
        local.attrs.items = &local.attr;
    }
    local.call.additional_args = &local.attrs;
    declare(b, &local);
    nx_error err;
    assert_int_equal(trace(leaf, b, 2, &local.call, &err), -1);
    assert_string_equal(err.msg, msg);
    nx_builder_free(b);
}

static const leaf_fn LEAVES[2] = {tiled_pf_transpose, tiled_dve_transpose_10};
static const char *const LEAF_NAMES[2] = {"tiled_pf_transpose", "tiled_dve_transpose_10"};

/* ---- the reference against hand-computed arrays ---- */

static void test_ref_2d(void **state) {
    (void)state;
    const int32_t in[6] = {1, 2, 3, 4, 5, 6}; /* [[1,2,3],[4,5,6]] */
    const int32_t want[6] = {1, 4, 2, 5, 3, 6};
    int32_t out[6];
    uint64_t shape[2] = {2, 3};
    nx_error err;
    assert_int_equal(nx_ref_transpose(in, NX_DT_INT32, 2, shape, NULL, out, &err), 0);
    assert_memory_equal(out, want, sizeof want);
    int64_t perm[2] = {-1, 0}; /* numpy accepts negative axes */
    assert_int_equal(nx_ref_transpose(in, NX_DT_INT32, 2, shape, perm, out, &err), 0);
    assert_memory_equal(out, want, sizeof want);
}

static void test_ref_3d(void **state) {
    (void)state;
    /* in[2][2][3] = 0..11; np.transpose(in, (1,2,0)) has shape [2,3,2]:
     * out[i][j][k] = in[k][i][j] */
    uint16_t in[12], out[12];
    for (int i = 0; i < 12; i++) in[i] = (uint16_t)i;
    const uint16_t want[12] = {0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11};
    uint64_t shape[3] = {2, 2, 3};
    int64_t perm[3] = {1, 2, 0};
    nx_error err;
    assert_int_equal(nx_ref_transpose(in, NX_DT_BF16, 3, shape, perm, out, &err), 0);
    assert_memory_equal(out, want, sizeof want);
    /* (0,2,1): out[b][c][r] = in[b][r][c] */
    const uint16_t want2[12] = {0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11};
    int64_t perm2[3] = {0, 2, 1};
    assert_int_equal(nx_ref_transpose(in, NX_DT_BF16, 3, shape, perm2, out, &err), 0);
    assert_memory_equal(out, want2, sizeof want2);
    int64_t bad[3] = {0, 0, 1};
    assert_int_equal(nx_ref_transpose(in, NX_DT_BF16, 3, shape, bad, out, &err), -1);
    assert_string_equal(err.msg, "transpose reference: permutation entry 1 (0) is out of range or repeated");
}

/* ---- the reduction ---- */

static void expect_plan(uint32_t ndims, const uint64_t *shape, const int64_t *perm, uint64_t bt, uint64_t r,
                        uint64_t c, int copy) {
    nx_transpose_plan pl;
    nx_error err;
    if (nx_transpose_reduce(ndims, shape, perm, &pl, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(pl.batch, bt);
    assert_int_equal(pl.rows, r);
    assert_int_equal(pl.cols, c);
    assert_int_equal(pl.copy, copy);
}

static void expect_reduce_error(uint32_t ndims, const uint64_t *shape, const int64_t *perm, const char *msg) {
    nx_transpose_plan pl;
    nx_error err;
    assert_int_equal(nx_transpose_reduce(ndims, shape, perm, &pl, &err), -1);
    assert_string_equal(err.msg, msg);
}

static void test_reduce(void **state) {
    (void)state;
    /* the reduction examples of docs/parts/kernels.md ("The transposes") */
    const uint64_t s5[5] = {2, 4, 8, 16, 32};
    const int64_t p5[5] = {0, 1, 4, 2, 3};
    expect_plan(5, s5, p5, 8, 128, 32, 0);
    const uint64_t s4[4] = {4, 5, 6, 7};
    const int64_t p4[4] = {2, 3, 0, 1};
    expect_plan(4, s4, p4, 1, 20, 42, 0);
    /* size-1 dims do not count */
    const uint64_t s3[3] = {5, 1, 7};
    const int64_t p3[3] = {2, 1, 0};
    expect_plan(3, s3, p3, 1, 5, 7, 0);
    const uint64_t s2[2] = {1, 7};
    const int64_t p2[2] = {1, 0};
    expect_plan(2, s2, p2, 1, 7, 1, 1);
    const uint64_t s1[1] = {9};
    const int64_t p1[1] = {0};
    expect_plan(1, s1, p1, 1, 9, 1, 1);
    const int64_t id4[4] = {0, 1, 2, 3};
    expect_plan(4, s4, id4, 1, 840, 1, 1);
    const uint64_t s33[3] = {3, 4, 5};
    const int64_t neg[3] = {0, -1, -2};
    expect_plan(3, s33, neg, 3, 4, 5, 0);
    const uint64_t s6[6] = {2, 3, 1, 4, 5, 6};
    const int64_t p6[6] = {0, 1, 2, 5, 3, 4}; /* [6] [2,3,1] [4,5] -> B=6 R=20 C=6 */
    expect_plan(6, s6, p6, 6, 20, 6, 0);

    const uint64_t r3[3] = {4, 5, 6};
    const int64_t rp3[3] = {2, 1, 0};
    expect_reduce_error(3, r3, rp3,
                        "permutation [2,1,0] does not reduce to a swap of the last two dim groups "
                        "(merged: shape [4,5,6], permutation [2,1,0])");
    /* moving the last dim to the front is a 2-D transpose of [20,6] */
    const int64_t front[3] = {2, 0, 1};
    expect_plan(3, r3, front, 1, 20, 6, 0);
    const int64_t back[3] = {1, 2, 0};
    expect_plan(3, r3, back, 1, 4, 30, 0);
    const int64_t rp3b[3] = {1, 0, 2};
    expect_reduce_error(3, r3, rp3b,
                        "permutation [1,0,2] does not reduce to a swap of the last two dim groups "
                        "(merged: shape [4,5,6], permutation [1,0,2])");
    const uint64_t r4[4] = {2, 1, 3, 4};
    const int64_t rp4[4] = {2, 0, 1, 3}; /* size-1 dim 1 dropped: [3] [2] [4] */
    expect_reduce_error(4, r4, rp4,
                        "permutation [2,0,1,3] does not reduce to a swap of the last two dim groups "
                        "(merged: shape [2,3,4], permutation [1,0,2])");
    const int64_t dup[3] = {0, 0, 1};
    expect_reduce_error(3, r3, dup, "permutation [0,0,1] is not a permutation of the 3 dims");
    const int64_t oob[3] = {0, 1, 3};
    expect_reduce_error(3, r3, oob, "permutation [0,1,3] is not a permutation of the 3 dims");
}

/* ---- the leaves refuse what they cannot serve, with exact messages ---- */

static void test_refusals(void **state) {
    (void)state;
    for (int l = 0; l < 2; l++) {
        call_buf c;
        const uint64_t s3[3] = {4, 5, 6};
        const int64_t p3[3] = {1, 0, 2};
        make_call(&c, NX_DT_FP32, 3, s3, p3);
        expect_refusal(LEAVES[l], &c,
                       "operand 0 (x): permutation [1,0,2] does not reduce to a swap of the last two dim "
                       "groups (merged: shape [4,5,6], permutation [1,0,2])");
        /* absent permutation = reversed dims: [2,1,0] on [4,5,6] */
        make_call(&c, NX_DT_FP32, 3, s3, NULL);
        expect_refusal(LEAVES[l], &c,
                       "operand 0 (x): permutation [2,1,0] does not reduce to a swap of the last two dim "
                       "groups (merged: shape [4,5,6], permutation [2,1,0])");
        const uint64_t s2[2] = {3, 4};
        const int64_t p2[2] = {1, 0};
        make_call(&c, NX_DT_FP32, 2, s2, p2);
        c.args[1].dtype = NX_DT_BF16;
        expect_refusal(LEAVES[l], &c, "operand 1 (y): dtype bf16 differs from operand 0 (x)'s fp32");
        make_call(&c, NX_DT_FP32, 2, s2, p2);
        c.args[1].shape[0] = 3;
        c.args[1].shape[1] = 4;
        expect_refusal(LEAVES[l], &c,
                       "operand 1 (y): shape [3,4] must be [4,3] (operand 0 (x) of shape [3,4] permuted by [1,0])");
        const int64_t p3x[3] = {1, 0, 2};
        make_call(&c, NX_DT_FP32, 2, s2, p2);
        c.attr.value.count = 3;
        c.items[2].kind = NX_VAL_INT;
        c.items[2].i = p3x[2];
        expect_refusal(LEAVES[l], &c, "operand 0 (x): attribute permutation: has 3 entries, the input has 2 dims");
        make_call(&c, NX_DT_FP32, 2, s2, p2);
        c.items[1].kind = NX_VAL_FLOAT;
        expect_refusal(LEAVES[l], &c, "operand 0 (x): attribute permutation: must be a list of ints");
        make_call(&c, NX_DT_FP32, 2, s2, p2);
        c.items[1].i = 1;
        expect_refusal(LEAVES[l], &c, "operand 0 (x): permutation [1,1] is not a permutation of the 2 dims");
        make_call(&c, NX_DT_FP32, 2, s2, p2);
        c.call.n_inputs = 2;
        char msg[128];
        snprintf(msg, sizeof msg, "%s: expects 1 input and 1 output, got 2 inputs and 0 outputs", LEAF_NAMES[l]);
        expect_refusal(LEAVES[l], &c, msg);
    }
}

/* ---- the leaves against the reference ---- */

static void test_every_dtype(void **state) {
    (void)state;
    const uint64_t shape[2] = {129, 257};
    for (int l = 0; l < 2; l++)
        for (int dt = 0; dt < NX_DT_COUNT; dt++)
            check_leaf(LEAVES[l], LEAF_NAMES[l], (nx_dtype)dt, 2, shape, NULL, 2, (uint64_t)(dt + 1));
}

static void test_edge_shapes(void **state) {
    (void)state;
    static const uint64_t shapes[][2] = {{1, 1}, {1, 300}, {300, 1}, {2, 2}, {128, 128}, {129, 1},
                                         {1, 129}, {31, 33}, {512, 3}, {3, 2000}};
    const int64_t p[2] = {1, 0};
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            for (uint32_t cores = 1; cores <= 2; cores++)
                check_leaf(LEAVES[l], LEAF_NAMES[l], (nx_dtype)(i % NX_DT_COUNT), 2, shapes[i],
                           i % 2 ? p : NULL, cores, 100 + i);
}

static void test_nd_permutations(void **state) {
    (void)state;
    const uint64_t s5[5] = {2, 4, 8, 16, 32};
    const int64_t p5[5] = {0, 1, 4, 2, 3};
    const uint64_t s4[4] = {4, 5, 6, 7};
    const int64_t p4[4] = {2, 3, 0, 1};
    const uint64_t s3[3] = {7, 45, 130};
    const int64_t p3[3] = {0, 2, 1};
    const uint64_t s4b[4] = {3, 1, 50, 9};
    const int64_t p4b[4] = {1, 0, 3, 2}; /* the size-1 dim moves: still [0,2,1] on [3,50,9] */
    const uint64_t s3f[3] = {9, 70, 33};
    const int64_t front[3] = {2, 0, 1}; /* a 2-D transpose of [630,33] */
    const uint64_t s3c[3] = {6, 2, 5};
    const int64_t id3[3] = {0, 1, 2}; /* identity: a copy */
    for (int l = 0; l < 2; l++) {
        check_leaf(LEAVES[l], LEAF_NAMES[l], NX_DT_FP32, 5, s5, p5, 2, 1);
        check_leaf(LEAVES[l], LEAF_NAMES[l], NX_DT_INT8, 4, s4, p4, 2, 2);
        check_leaf(LEAVES[l], LEAF_NAMES[l], NX_DT_BF16, 3, s3, p3, 2, 3);
        check_leaf(LEAVES[l], LEAF_NAMES[l], NX_DT_UINT16, 3, s3, p3, 1, 4);
        check_leaf(LEAVES[l], LEAF_NAMES[l], NX_DT_FP8_E5M2, 4, s4b, p4b, 2, 5);
        check_leaf(LEAVES[l], LEAF_NAMES[l], NX_DT_INT32, 3, s3c, id3, 2, 6);
        check_leaf(LEAVES[l], LEAF_NAMES[l], NX_DT_FP16, 3, s3f, front, 2, 7);
    }
}

static void test_random_shapes(void **state) {
    (void)state;
    test_rng r = {12345};
    for (int i = 0; i < 24; i++) {
        int l = i % 2;
        nx_dtype dt = (nx_dtype)(test_rng_next(&r) % NX_DT_COUNT);
        uint64_t shape[3];
        uint32_t nd = 2 + (uint32_t)(test_rng_next(&r) % 2);
        for (uint32_t d = 0; d < nd; d++) shape[d] = 1 + test_rng_next(&r) % (d == 0 && nd == 3 ? 9 : 700);
        int64_t p2[2] = {1, 0}, p3[3] = {0, 2, 1};
        uint32_t cores = 1 + (uint32_t)(test_rng_next(&r) % 2);
        check_leaf(LEAVES[l], LEAF_NAMES[l], dt, nd, shape, nd == 2 ? p2 : p3, cores, 1000 + (uint64_t)i);
    }
}

/* Many small matrices: the DVE leaf packs whole matrices per partition. */
static void test_many_small(void **state) {
    (void)state;
    const uint64_t s3[3] = {1000, 5, 3};
    const int64_t p3[3] = {0, 2, 1};
    check_leaf(tiled_dve_transpose_10, "tiled_dve_transpose_10", NX_DT_FP16, 3, s3, p3, 2, 7);
    check_leaf(tiled_dve_transpose_10, "tiled_dve_transpose_10", NX_DT_UINT32, 3, s3, p3, 1, 8);
    const uint64_t s3b[3] = {37, 16, 16};
    check_leaf(tiled_pf_transpose, "tiled_pf_transpose", NX_DT_FP8_E4M3, 3, s3b, p3, 2, 9);
}

/* Tall and wide matrices: column strips and long rows in the DVE leaf. */
static void test_tall_wide(void **state) {
    (void)state;
    const uint64_t tall[2] = {20000, 40}, wide[2] = {6, 9000};
    for (int l = 0; l < 2; l++) {
        check_leaf(LEAVES[l], LEAF_NAMES[l], NX_DT_BF16, 2, tall, NULL, 2, 11);
        check_leaf(LEAVES[l], LEAF_NAMES[l], NX_DT_UINT8, 2, wide, NULL, 2, 12);
    }
}

/* The DVE leaf's block route (kernels/transpose/dve_blocks.c): R, C and
 * each program's output rows in whole 16-blocks (the GpSimd cores' partition
 * groups); a program's rows across two matrices (a short column tile in the
 * second); fewer input-row blocks than row groups (64 x 2048: empty
 * groups); 1-byte elements; tails of both rows and columns (1040 x 1568);
 * each takes the route (it emits one gather per tile), and a ragged shape
 * keeps the free-dim route. */
static void test_dve_blocks(void **state) {
    (void)state;
    const uint64_t s3[3] = {3, 512, 320}, s2[2] = {64, 2048}, s2b[2] = {96, 4096}, s2c[2] = {96, 330};
    const uint64_t s2d[2] = {1040, 1568};
    const int64_t p3[3] = {0, 2, 1};
    check_leaf(tiled_dve_transpose_10, "tiled_dve_transpose_10", NX_DT_FP32, 3, s3, p3, 2, 31);
    assert_true(g_gathers > 0);
    check_leaf(tiled_dve_transpose_10, "tiled_dve_transpose_10", NX_DT_BF16, 2, s2, NULL, 1, 32);
    assert_true(g_gathers > 0);
    check_leaf(tiled_dve_transpose_10, "tiled_dve_transpose_10", NX_DT_INT8, 2, s2b, NULL, 2, 33);
    assert_true(g_gathers > 0);
    check_leaf(tiled_dve_transpose_10, "tiled_dve_transpose_10", NX_DT_FP32, 2, s2d, NULL, 2, 35);
    assert_true(g_gathers > 0);
    check_leaf(tiled_dve_transpose_10, "tiled_dve_transpose_10", NX_DT_FP32, 2, s2c, NULL, 2, 34);
    assert_true(g_gathers == 0);
}

static void test_4096(void **state) {
    (void)state;
    const uint64_t shape[2] = {4096, 4096};
    check_leaf(tiled_pf_transpose, "tiled_pf_transpose", NX_DT_FP32, 2, shape, NULL, 2, 21);
    check_leaf(tiled_dve_transpose_10, "tiled_dve_transpose_10", NX_DT_BF16, 2, shape, NULL, 2, 22);
}

/* The split does not change the result, and program p writes only its
 * share: tracing one program of two leaves the other share zero. */
static void test_split_share(void **state) {
    (void)state;
    const uint64_t shape[2] = {300, 200};
    for (int l = 0; l < 2; l++) {
        nx_geometry geo = test_geometry("trn2");
        nx_builder *b = nx_builder_new(&geo, 2);
        call_buf c;
        make_call(&c, NX_DT_INT16, 2, shape, NULL);
        declare(b, &c);
        nx_error err;
        nx_machine km = test_machine_of(&geo);
        nx_kctx *k = nx_kctx_new_machine(b, &km, 1, 2); /* only program 1 */
        assert_int_equal(LEAVES[l](k, &c.call, &err), 0);
        assert_int_equal(nx_kctx_finish(k, &err), 0);
        nx_kctx_free(k);
        nx_program prog;
        if (nx_builder_finish(b, &prog, &err) != 0) fail_msg("%s", err.msg);
        nx_builder_free(b);
        nx_state st;
        assert_int_equal(nx_state_init(&st, &geo, 2, prog.hbm_bytes, prog.sem_count, &err), 0);
        uint64_t n = 300 * 200;
        uint8_t *x = malloc(n * 2), *want = malloc(n * 2);
        fill_random(x, n * 2, 5);
        for (uint64_t i = 0; i < n; i++) /* no zero elements, so "unwritten" shows */
            if (x[2 * i] == 0 && x[2 * i + 1] == 0) x[2 * i] = 1;
        assert_int_equal(nx_ref_transpose(x, NX_DT_INT16, 2, shape, NULL, want, &err), 0);
        memcpy(st.hbm + c.args[0].hbm_offset, x, n * 2);
        if (nx_exec_program(&prog, &st, &err) != 0) fail_msg("%s", err.msg);
        const uint8_t *y = st.hbm + c.args[1].hbm_offset;
        /* output rows = input columns: program 1 owns rows [100, 200) */
        for (uint64_t row = 0; row < 200; row++) {
            int mine = row >= 100;
            for (uint64_t col = 0; col < 300; col++) {
                uint64_t e = row * 300 + col;
                if (mine) {
                    if (memcmp(y + 2 * e, want + 2 * e, 2) != 0)
                        fail_msg("%s: row %llu col %llu wrong", LEAF_NAMES[l], (unsigned long long)row,
                                 (unsigned long long)col);
                } else if (y[2 * e] != 0 || y[2 * e + 1] != 0) {
                    fail_msg("%s: program 1 wrote row %llu of program 0", LEAF_NAMES[l], (unsigned long long)row);
                }
            }
        }
        free(x);
        free(want);
        nx_state_free(&st);
        nx_program_free(&prog);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_2d),
        cmocka_unit_test(test_ref_3d),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_every_dtype),
        cmocka_unit_test(test_edge_shapes),
        cmocka_unit_test(test_nd_permutations),
        cmocka_unit_test(test_random_shapes),
        cmocka_unit_test(test_many_small),
        cmocka_unit_test(test_tall_wide),
        cmocka_unit_test(test_split_share),
        cmocka_unit_test(test_dve_blocks),
        cmocka_unit_test(test_4096),
    };
    /* NX_TEST_FILTER=pattern runs a subset (development aid) */
    const char *filter = getenv("NX_TEST_FILTER");
    if (filter) cmocka_set_test_filter(filter);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
