/* selective_scan (kernels/scan/scan.h) through the leaf-case suite
 * (tests/leaf_cases.h: the run path on the functional executor and on the
 * SystemC model with the race check, the static order check, every result
 * within the rules' tolerance of nx_ref_selective_scan, the backends equal
 * bit for bit): ragged shapes (C not a multiple of 128, L not a multiple
 * of the sequence tile, several batch segments per core), every attribute,
 * L = 65536 carried over 32 tiles, A strongly negative (fast decay) and
 * near zero (long memory), an initial state, values worked out by hand, and
 * every refusal with its exact message. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "leaf_cases.h"
#include "registry/composites.h"
#include "registry/registry.h"
#include "support.h"

typedef struct scan_shape {
    nx_dtype dt, a_dt;
    uint64_t B, C, L, N;
    const char *attrs;
} scan_shape;

static int has(const char *attrs, const char *name) { return attrs && strstr(attrs, name) != NULL; }

/* The case of shape s on machine m (operands: the rules' values, A and
 * delta as a Mamba layer has them, unless the test gives them). */
static void make(const scan_shape *s, const char *machine, leaf_case *c) {
    char name[256];
    snprintf(name, sizeof name, "selective_scan %s [%llu,%llu,%llu] N=%llu on %s {%s}", nx_dtype_name(s->dt),
             (unsigned long long)s->B, (unsigned long long)s->C, (unsigned long long)s->L, (unsigned long long)s->N,
             machine, s->attrs ? s->attrs : "");
    leaf_case_init(c, name, "selective_scan");
    snprintf(c->machine, sizeof c->machine, "%s", machine);
    const uint64_t bcl[3] = {s->B, s->C, s->L}, cn[2] = {s->C, s->N}, bnl[3] = {s->B, s->N, s->L};
    const uint64_t c1[1] = {s->C}, bcn[3] = {s->B, s->C, s->N};
    leaf_case_operand(c, "u", s->dt, 3, bcl);
    leaf_case_operand(c, "delta", s->dt, 3, bcl);
    leaf_case_operand(c, "A", s->a_dt, 2, cn);
    leaf_case_operand(c, "Bm", s->dt, 3, bnl);
    leaf_case_operand(c, "Cm", s->dt, 3, bnl);
    if (has(s->attrs, "skip=true")) leaf_case_operand(c, "D", s->a_dt, 1, c1);
    if (has(s->attrs, "initial_state=true")) leaf_case_operand(c, "h0", NX_DT_FP32, 3, bcn);
    leaf_case_attrs(c, s->attrs);
}

static void check(const scan_shape *s, const char *machine) {
    leaf_case c;
    make(s, machine, &c);
    leaf_case_check(&c, NULL);
    leaf_case_free(&c);
}

/* C not a multiple of 128 (a ragged channel tile), L not a multiple of the
 * sequence tile, N not a multiple of the state chunk, batch segments that
 * start mid-batch on the second core, every attribute, both presets and
 * both dtypes. */
static void ragged_shapes(void **state) {
    (void)state;
    static const scan_shape s[] = {
        {NX_DT_FP32, NX_DT_FP32, 2, 200, 1000, 5, "skip=true;initial_state=true;delta_softplus=true"},
        {NX_DT_BF16, NX_DT_FP32, 3, 130, 700, 16, NULL},
        {NX_DT_BF16, NX_DT_BF16, 1, 300, 1500, 16, "skip=true;delta_softplus=true"},
        {NX_DT_FP32, NX_DT_BF16, 3, 3, 70, 3, "initial_state=true"},
        {NX_DT_FP32, NX_DT_FP32, 1, 1, 1, 1, "skip=true"},
    };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) check(&s[i], i % 2 ? "trn1" : "trn2");
    check(&s[0], "trn1");
    check(&s[1], "trn2");
}

/* L = 65536: the state carried over every sequence tile, against the
 * double-precision recurrence with the tolerance of L. */
static void long_sequence(void **state) {
    (void)state;
    const scan_shape s = {NX_DT_FP32, NX_DT_FP32, 1, 8, 65536, 4, "skip=true;delta_softplus=true;initial_state=true"};
    check(&s, "trn2");
    const scan_shape b = {NX_DT_BF16, NX_DT_FP32, 1, 4, 65536, 2, NULL};
    check(&b, "trn1");
}

/* Values of one operand: data[i] = f(i) in dtype dt. */
static uint8_t *values(nx_dtype dt, uint64_t n, double (*f)(uint64_t, void *), void *ctx) {
    uint8_t *v = malloc(n * nx_dtype_size(dt));
    assert_non_null(v);
    for (uint64_t i = 0; i < n; i++) nx_dtype_store(dt, v + i * nx_dtype_size(dt), f(i, ctx));
    return v;
}

static double a_value(uint64_t i, void *ctx) {
    const double *ab = ctx; /* scale, N */
    return ab[0] * (double)(1 + i % (uint64_t)ab[1]);
}

/* A strongly negative (exp(delta A) far below fp32's smallest normal: the
 * state forgets at once) and near zero (exp(delta A) rounds to 1 or just
 * below: the state sums its whole past, the longest memory). */
static void decay_extremes(void **state) {
    (void)state;
    static const double scales[3] = {-1000.0, -1e-6, -30.0};
    for (int k = 0; k < 3; k++) {
        const scan_shape s = {NX_DT_FP32, NX_DT_FP32, 2, 150, 4100, 6, "skip=true;initial_state=true"};
        leaf_case c;
        make(&s, "trn2", &c);
        double ab[2] = {scales[k], (double)s.N};
        uint8_t *a = values(NX_DT_FP32, s.C * s.N, a_value, ab);
        c.inputs[2] = a;
        leaf_case_check(&c, NULL);
        leaf_case_free(&c);
        free(a);
    }
}

static double by_hand_value(uint64_t i, void *ctx) {
    const double *v = ctx;
    return v[i];
}

/* By hand, one channel and one state: A = 0 makes exp(delta A) = 1, so
 * h is the running sum of delta Bm u (from h0 = 0.5), y = Cm h + D u:
 *   delta = 1, u = [1, 2, 3, 4], Bm = [1, 1, 2, 0.5], Cm = 2, D = 3:
 *   h = 0.5 + [1, 3, 9, 11], y = 2 h + 3 u = [6, 13, 28, 35]. */
static void by_hand(void **state) {
    (void)state;
    const scan_shape s = {NX_DT_FP32, NX_DT_FP32, 1, 1, 4, 1, "skip=true;initial_state=true"};
    leaf_case c;
    make(&s, "trn2", &c);
    static const double u[4] = {1, 2, 3, 4}, delta[4] = {1, 1, 1, 1}, a[1] = {0}, bm[4] = {1, 1, 2, 0.5};
    static const double cm[4] = {2, 2, 2, 2}, d[1] = {3}, h0[1] = {0.5}, want[4] = {6, 13, 28, 35};
    const double *src[7] = {u, delta, a, bm, cm, d, h0};
    const uint64_t n[7] = {4, 4, 1, 4, 4, 1, 1};
    uint8_t *in[7];
    for (int i = 0; i < 7; i++) {
        in[i] = values(NX_DT_FP32, n[i], by_hand_value, (void *)src[i]);
        c.inputs[i] = in[i];
    }
    leaf_case_report rep;
    leaf_case_check(&c, &rep);
    assert_int_equal(rep.n_results, 2);
    for (int t = 0; t < 4; t++) assert_true(nx_dtype_load(NX_DT_FP32, rep.results[0] + 4 * t) == want[t]);
    assert_true(nx_dtype_load(NX_DT_FP32, rep.results[1]) == 11.5);
    leaf_case_report_free(&rep);
    leaf_case_free(&c);
    for (int i = 0; i < 7; i++) free(in[i]);
}

/* softplus on chip: delta of -30, 0, 30 and 100 (exp overflows fp32 past
 * 88: the kernel's max(x, 0) + log(1 + exp(-|x|)) does not). */
static void softplus_range(void **state) {
    (void)state;
    const scan_shape s = {NX_DT_FP32, NX_DT_FP32, 1, 4, 8, 2, "delta_softplus=true"};
    leaf_case c;
    make(&s, "trn2", &c);
    static const double d[32] = {-30, 0, 30, 100, -1, 1, 20, 21, -30, 0, 30, 100, -1, 1, 20, 21,
                                 -30, 0, 30, 100, -1, 1, 20, 21, -30, 0, 30, 100, -1, 1, 20, 21};
    static const double a[8] = {-0.01, -0.02, -0.01, -0.02, -0.01, -0.02, -0.01, -0.02};
    uint8_t *dv = values(NX_DT_FP32, 32, by_hand_value, (void *)d), *av = values(NX_DT_FP32, 8, by_hand_value, (void *)a);
    c.inputs[1] = dv;
    c.inputs[2] = av;
    leaf_case_check(&c, NULL);
    leaf_case_free(&c);
    free(dv);
    free(av);
}

/* The default op runs on the VNC(2) grid. */
static void grid(void **state) {
    (void)state;
    const scan_shape s = {NX_DT_BF16, NX_DT_FP32, 1, 256, 512, 16, "skip=true;delta_softplus=true"};
    leaf_case c;
    make(&s, "trn2", &c);
    c.expect_grid = 2;
    leaf_case_check(&c, NULL);
    leaf_case_free(&c);
}

static void refused(const scan_shape *s, const char *const *names, const nx_dtype *dts, const uint64_t (*shapes)[3],
                    const uint32_t *nds, uint32_t n, const char *attrs, const char *msg) {
    leaf_case c;
    if (!names) {
        make(s, "trn2", &c);
    } else {
        leaf_case_init(&c, msg, "selective_scan");
        for (uint32_t i = 0; i < n; i++) leaf_case_operand(&c, names[i], dts[i], nds[i], shapes[i]);
    }
    leaf_case_attrs(&c, attrs);
    leaf_case_expect_error(&c, msg);
    leaf_case_check(&c, NULL);
    leaf_case_free(&c);
}

static void refusals(void **state) {
    (void)state;
    static const char *const nm[7] = {"u", "delta", "A", "Bm", "Cm", "D", "h0"};
    const nx_dtype f = NX_DT_FP32, b = NX_DT_BF16;
    const uint32_t nd[7] = {3, 3, 2, 3, 3, 1, 3};
    /* good shapes: B 2, C 4, L 8, N 3 */
    const uint64_t ok[7][3] = {{2, 4, 8}, {2, 4, 8}, {4, 3}, {2, 3, 8}, {2, 3, 8}, {4}, {2, 4, 3}};
    const nx_dtype fd[7] = {f, f, f, f, f, f, f};
    /* a missing optional operand an attribute asks for */
    refused(NULL, nm, fd, ok, nd, 5, "skip=true", "attribute skip: true, but the op has no operand 5 (D [C])");
    refused(NULL, nm, fd, ok, nd, 6, "skip=true;initial_state=true",
            "attribute initial_state: true, but the op has no operand 6 (h0 [B, C, N] fp32)");
    refused(NULL, nm, fd, ok, nd, 6, NULL,
            "operand 5 (D): no attribute asks for it (skip=true takes D [C], initial_state=true h0 [B, C, N] fp32)");
    refused(NULL, nm, fd, ok, nd, 4, NULL,
            "selective_scan takes u, delta, A, Bm, Cm [, D (skip=true)] [, h0 (initial_state=true)]; the op has 4 "
            "operands");
    refused(NULL, nm, fd, ok, nd, 5, "skip=2", "attribute skip: must be true or false (or 0 / 1)");
    refused(NULL, nm, fd, ok, nd, 5, "softplus=true",
            "selective_scan: unknown attribute 'softplus'; selective_scan reads: delta_softplus, skip, initial_state");
    /* shapes */
    uint64_t sh[7][3];
    memcpy(sh, ok, sizeof sh);
    sh[1][2] = 9;
    refused(NULL, nm, fd, (const uint64_t(*)[3])sh, nd, 5, NULL,
            "operand 1 (delta): delta must be [2, 4, 8] (u's [B, C, L]), got [2, 4, 9]");
    memcpy(sh, ok, sizeof sh);
    sh[2][0] = 5;
    refused(NULL, nm, fd, (const uint64_t(*)[3])sh, nd, 5, NULL,
            "operand 2 (A): A must be [4, N] ([C, N], N >= 1), got [5, 3]");
    memcpy(sh, ok, sizeof sh);
    sh[3][1] = 4;
    refused(NULL, nm, fd, (const uint64_t(*)[3])sh, nd, 5, NULL,
            "operand 3 (Bm): Bm must be [2, 3, 8] ([B, N, L]), got [2, 4, 8]");
    memcpy(sh, ok, sizeof sh);
    sh[4][0] = 1;
    refused(NULL, nm, fd, (const uint64_t(*)[3])sh, nd, 5, NULL,
            "operand 4 (Cm): Cm must be [2, 3, 8] ([B, N, L]), got [1, 3, 8]");
    memcpy(sh, ok, sizeof sh);
    sh[5][0] = 3;
    refused(NULL, nm, fd, (const uint64_t(*)[3])sh, nd, 6, "skip=true", "operand 5 (D): D must be [4] ([C]), got [3]");
    memcpy(sh, ok, sizeof sh);
    sh[6][2] = 2;
    refused(NULL, nm, fd, (const uint64_t(*)[3])sh, nd, 7, "skip=true;initial_state=true",
            "operand 6 (h0): h0 must be [2, 4, 3] ([B, C, N]), got [2, 4, 2]");
    const uint32_t nd2[5] = {2, 3, 2, 3, 3};
    refused(NULL, nm, fd, ok, nd2, 5, NULL, "operand 0 (u): rank 2, selective_scan takes u [B, C, L]");
    /* dtypes */
    const nx_dtype d1[5] = {f, b, f, f, f}, d2[5] = {NX_DT_FP16, NX_DT_FP16, f, NX_DT_FP16, NX_DT_FP16};
    const nx_dtype d3[7] = {b, b, b, b, b, b, b}, d4[5] = {f, f, NX_DT_INT32, f, f};
    refused(NULL, nm, d1, ok, nd, 5, NULL, "operand 1 (delta): dtype bf16 differs from u's fp32");
    refused(NULL, nm, d2, ok, nd, 5, NULL, "operand 0 (u): dtype fp16, selective_scan takes fp32 or bf16");
    static const char *const nh[6] = {"u", "delta", "A", "Bm", "Cm", "h0"};
    const uint64_t okh[6][3] = {{2, 4, 8}, {2, 4, 8}, {4, 3}, {2, 3, 8}, {2, 3, 8}, {2, 4, 3}};
    const uint32_t ndh[6] = {3, 3, 2, 3, 3, 3};
    refused(NULL, nh, d3, okh, ndh, 6, "initial_state=true", "operand 5 (h0): dtype bf16, h0 must be fp32");
    refused(NULL, nm, d4, ok, nd, 5, NULL, "operand 2 (A): dtype int32, A takes fp32 or bf16");
    /* N beyond what the plan holds: Bm and Cm broadcast [N, 64] per partition */
    const scan_shape big = {NX_DT_FP32, NX_DT_FP32, 1, 128, 64, 4096, NULL};
    refused(&big, NULL, NULL, NULL, NULL, 0, NULL,
            "operand 3 (Bm): N = 4096 needs 4264576 bytes per partition and 262144 elements per instruction at the "
            "smallest tile (T = 64), SBUF has 229376 bytes and 65536 elements");
}

/* The composite row: reachable by name, family scan, never a registry key. */
static void composite_row(void **state) {
    (void)state;
    nx_kernel_target t;
    nx_error err;
    assert_int_equal(nx_kernel_lookup(NULL, NULL, "selective_scan", &t, &err), 0);
    assert_null(t.entry);
    assert_non_null(t.composite);
    assert_string_equal(t.family, "scan");
    assert_non_null(t.rules->reference);
    assert_non_null(t.rules->default_op);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ragged_shapes), cmocka_unit_test(long_sequence), cmocka_unit_test(decay_extremes),
        cmocka_unit_test(by_hand),       cmocka_unit_test(softplus_range), cmocka_unit_test(grid),
        cmocka_unit_test(refusals),      cmocka_unit_test(composite_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
