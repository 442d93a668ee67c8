/* The attention_decode composite (kernels/attention/decode.h) through the
 * run path (nx_run_op) against its reference (--check, the tolerance from
 * the dtype, D and S_max), on the functional executor and on the SystemC
 * model with the race detector, the two bit for bit equal: ragged lengths
 * (0, 1, mid, full), paged caches with shuffled block tables, GQA ratios 1,
 * 4, 8 (and 32 q heads on one kv head: two head chunks), s = 1 .. 8,
 * D = 64, 80, 128, 192, 256, every mask combination (window, sink, paged),
 * fp32 and bf16; the refusals, one line each (run-time ones: a length past
 * S_max, a block id outside the cache, fault before any result is kept). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kcheck.h"
#include "registry/composites.h"
#include "registry/lower.h"
#include "registry/prepare.h"
#include "registry/run/run.h"
#include "roster_case.h"
#include "support.h"









/* A decode problem: lengths and (paged) the block table given, the rest random. */
typedef struct problem {
    nx_dtype dt;
    uint64_t B, Hq, Hkv, s, D, S_max; /* paged: S_max = max_blocks N */
    uint64_t N, num_blocks;            /* N > 0: paged */
    const double *lengths, *table;     /* table NULL: a shuffled permutation */
    int sink;
    uint64_t window;
} problem;

static uint32_t build(const problem *pr, roster_operand *ops, double **own) {
    const uint64_t MB = pr->N ? pr->S_max / pr->N : 0;
    uint32_t n = 0;
    ops[n++] = (roster_operand){"q", pr->dt, 4, {pr->B, pr->Hq, pr->s, pr->D}, NULL};
    for (int kv = 0; kv < 2; kv++)
        ops[n++] = pr->N ? (roster_operand){kv ? "v_cache" : "k_cache", pr->dt, 4, {pr->num_blocks, pr->Hkv, pr->N, pr->D}, NULL}
                         : (roster_operand){kv ? "v_cache" : "k_cache", pr->dt, 4, {pr->B, pr->Hkv, pr->S_max, pr->D}, NULL};
    ops[n++] = (roster_operand){"k_new", pr->dt, 4, {pr->B, pr->Hkv, pr->s, pr->D}, NULL};
    ops[n++] = (roster_operand){"v_new", pr->dt, 4, {pr->B, pr->Hkv, pr->s, pr->D}, NULL};
    ops[n++] = (roster_operand){"lengths", NX_DT_INT32, 1, {pr->B}, pr->lengths};
    *own = NULL;
    if (pr->N) {
        const double *t = pr->table;
        if (!t) {
            double *v = malloc(pr->B * MB * sizeof *v);
            assert_non_null(v);
            for (uint64_t i = 0; i < pr->B * MB; i++) v[i] = (double)(i % pr->num_blocks);
            test_rng r = {pr->B * 131 + MB};
            for (uint64_t i = pr->B * MB; i-- > 1;) {
                uint64_t j = test_rng_next(&r) % (i + 1);
                double x = v[i];
                v[i] = v[j], v[j] = x;
            }
            *own = v, t = v;
        }
        ops[n++] = (roster_operand){"block_table", NX_DT_INT32, 2, {pr->B, MB}, t};
    }
    if (pr->sink) ops[n++] = (roster_operand){"sink", NX_DT_FP32, 1, {pr->Hq}, NULL};
    return n;
}

static void attrs_of(const problem *pr, char *buf, size_t len) {
    snprintf(buf, len, "block_size=%llu;sliding_window=%llu;sink=%s", (unsigned long long)pr->N,
             (unsigned long long)pr->window, pr->sink ? "true" : "false");
}

/* Both backends, checked against the reference, equal bit for bit. */
static void check_problem(const problem *pr) {
    roster_operand ops[8];
    double *own;
    uint32_t n = build(pr, ops, &own);
    char attrs[128];
    attrs_of(pr, attrs, sizeof attrs);
    roster_check("trn2", "attention_decode", ops, n, attrs);
    free(own);
}

static void ragged_contiguous(void **state) {
    (void)state;
    static const double L4[4] = {0, 1, 37, 254}, L2[2] = {900, 3};
    /* GQA 4, s = 2, bf16; lengths 0 (only the new tokens), 1, mid, full */
    check_problem(&(problem){NX_DT_BF16, 4, 8, 2, 2, 64, 256, 0, 0, L4, NULL, 0, 0});
    /* GQA 1, D = 128, fp32, a ragged last tile (S_max = 1000) */
    check_problem(&(problem){NX_DT_FP32, 2, 2, 2, 1, 128, 1000, 0, 0, L2, NULL, 0, 0});
    /* GQA 8, D = 256 (two PE passes), s = 8 */
    static const double L3[2] = {120, 7};
    check_problem(&(problem){NX_DT_BF16, 2, 16, 2, 8, 256, 200, 0, 0, L3, NULL, 0, 0});
    /* 32 q heads on one kv head, s = 8: two head chunks of 16 x 8 rows */
    check_problem(&(problem){NX_DT_BF16, 2, 32, 1, 8, 64, 300, 0, 0, L3, NULL, 0, 0});
}

static void paged_shuffled(void **state) {
    (void)state;
    static const double L4[4] = {0, 17, 100, 250}, L2[2] = {63, 960};
    /* blocks of 16 (2 chunks of 8), 16 blocks a row, a shuffled table */
    check_problem(&(problem){NX_DT_BF16, 4, 8, 2, 2, 64, 256, 16, 70, L4, NULL, 0, 0});
    /* blocks of 64, D = 128, fp32, GQA 4, s = 4 */
    check_problem(&(problem){NX_DT_FP32, 2, 8, 2, 4, 128, 1024, 64, 40, L2, NULL, 0, 0});
    /* blocks of 48 (3 x 16), a table that repeats no block and runs backwards */
    static const double T[2 * 6] = {11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, L[2] = {280, 47};
    check_problem(&(problem){NX_DT_BF16, 2, 4, 4, 1, 80, 288, 48, 12, L, T, 0, 0});
    /* D = 192, blocks of 32 */
    static const double Lb[3] = {5, 200, 31};
    check_problem(&(problem){NX_DT_BF16, 3, 4, 1, 3, 192, 256, 32, 30, Lb, NULL, 0, 0});
}

static void masks(void **state) {
    (void)state;
    static const double L[3] = {0, 50, 300};
    for (int paged = 0; paged < 2; paged++)
        for (int sink = 0; sink < 2; sink++)
            for (uint64_t w = 0; w <= 64; w += 63) { /* 0 (none), 1 (only itself), 64 */
                uint64_t W = w ? (w == 63 ? 1 : 64) : 0;
                check_problem(&(problem){NX_DT_BF16, 3, 8, 2, 3, 64, 320, paged ? 32 : 0, paged ? 40 : 0, L, NULL,
                                         sink, W});
            }
    /* a window wider than the cache, with a sink, fp32 */
    static const double L2[2] = {10, 200};
    check_problem(&(problem){NX_DT_FP32, 2, 4, 2, 5, 128, 256, 0, 0, L2, NULL, 1, 5000});
}

static void tokens_and_dims(void **state) {
    (void)state;
    static const double L[2] = {70, 130};
    for (uint64_t s = 1; s <= 8; s++) check_problem(&(problem){NX_DT_BF16, 2, 4, 1, s, 64, 140, 0, 0, L, NULL, 0, 0});
    static const uint64_t D[5] = {64, 80, 128, 192, 256};
    for (int i = 0; i < 5; i++) check_problem(&(problem){NX_DT_FP32, 2, 2, 1, 2, D[i], 140, 0, 0, L, NULL, 1, 0});
}

/* ---- refusals ---- */


static void refusals(void **state) {
    (void)state;
    roster_operand o[8] = {{"q", NX_DT_BF16, 4, {2, 8, 2, 64}, NULL},       {"k_cache", NX_DT_BF16, 4, {2, 2, 64, 64}, NULL},
                    {"v_cache", NX_DT_BF16, 4, {2, 2, 64, 64}, NULL}, {"k_new", NX_DT_BF16, 4, {2, 2, 2, 64}, NULL},
                    {"v_new", NX_DT_BF16, 4, {2, 2, 2, 64}, NULL},    {"lengths", NX_DT_INT32, 1, {2}, NULL}};
    roster_operand a[8];
#define WITH(i, field, val) (memcpy(a, o, sizeof o), a[i].field = val, a)
    roster_refused("trn2", "attention_decode", o, 5, NULL, "attention_decode takes 6 operands (q, k_cache, v_cache, k_new, v_new, lengths), the op has 5");
    roster_refused("trn2", "attention_decode", WITH(0, shape[1], 5), 6, NULL,
                   "operand 1 (k_cache): Hkv = 2 kv heads do not divide operand 0 (q)'s Hq = 5");
    memcpy(a, o, sizeof o);
    a[0].shape[2] = 9, a[3].shape[2] = 9, a[4].shape[2] = 9;
    roster_refused("trn2", "attention_decode", a, 6, NULL, "operand 0 (q): s = 9 new tokens, attention_decode takes 1 to 8");
    memcpy(a, o, sizeof o);
    for (int i = 0; i < 5; i++) a[i].shape[3] = 63;
    roster_refused("trn2", "attention_decode", a, 6, NULL, "operand 0 (q): head dim D = 63, must be even and at most 256");
    for (int i = 0; i < 5; i++) a[i].shape[3] = 258;
    roster_refused("trn2", "attention_decode", a, 6, NULL, "operand 0 (q): head dim D = 258, must be even and at most 256");
    roster_refused("trn2", "attention_decode", WITH(1, dt, NX_DT_FP32), 6, NULL, "operand 1 (k_cache): dtype fp32 differs from operand 0 (q)'s bf16");
    roster_refused("trn2", "attention_decode", WITH(5, dt, NX_DT_FP32), 6, NULL, "operand 5 (lengths): dtype fp32, lengths must be int32");
    roster_refused("trn2", "attention_decode", WITH(3, shape[1], 3), 6, NULL, "operand 3 (k_new): dim 1 is 3, must be 2 (the caches' Hkv)");
    roster_refused("trn2", "attention_decode", WITH(2, shape[2], 65), 6, NULL, "operand 2 (v_cache): dim 2 is 65, differs from operand 1 (k_cache)'s 64");
    roster_refused("trn2", "attention_decode", WITH(0, dt, NX_DT_INT32), 6, NULL, "operand 0 (q): dtype int32, attention_decode takes fp32 or bf16");
    roster_refused("trn2", "attention_decode", o, 6, "sliding_window=-2", "attribute sliding_window: -2 is negative (0 = no window)");
    roster_refused("trn2", "attention_decode", o, 6, "block_size=-1", "attribute block_size: -1 is negative (0 = contiguous caches)");
    roster_refused("trn2", "attention_decode", o, 6, "scale=0.0", "attribute scale: 0 must be positive");
    roster_refused("trn2", "attention_decode", o, 6, "causal=true", "attention_decode: unknown attribute 'causal'; attention_decode reads: scale, sliding_window, sink, block_size");
    roster_refused("trn2", "attention_decode", o, 6, "sink=true", "attention_decode takes 7 operands (q, k_cache, v_cache, k_new, v_new, lengths, sink), the op has 6");
    memcpy(a, o, sizeof o);
    a[6] = (roster_operand){"sink", NX_DT_FP32, 1, {4}, NULL};
    roster_refused("trn2", "attention_decode", a, 7, "sink=true", "operand 6 (sink): sink must be fp32 [Hq] = [8]");
    /* paged: the caches' N must be block_size; N = 100 has no chunking */
    roster_operand pg[8];
    memcpy(pg, o, sizeof o);
    pg[1].shape[0] = pg[2].shape[0] = 9, pg[1].shape[2] = pg[2].shape[2] = 16;
    pg[6] = (roster_operand){"block_table", NX_DT_INT32, 2, {2, 4}, NULL};
    roster_refused("trn2", "attention_decode", pg, 7, "block_size=32", "operand 1 (k_cache): dim 2 is 16, must be 32 (block_size)");
    pg[6].dt = NX_DT_FP32;
    roster_refused("trn2", "attention_decode", pg, 7, "block_size=16", "operand 6 (block_table): dtype fp32, block_table must be int32");
    pg[6].dt = NX_DT_INT32;
    pg[1].shape[2] = pg[2].shape[2] = 100;
    roster_refused("trn2", "attention_decode", pg, 7, "block_size=100", "attribute block_size: N = 100 must be c x 2^k with c <= 8 and 2^k <= 128");
    /* run time: a length with L_b + s past S_max, a used block id outside the
     * cache: the run faults (nothing is kept) */
    static const double bad_len[2] = {10, 63}, ok_len[2] = {10, 40};
    memcpy(a, o, sizeof o);
    a[5].values = bad_len;
    roster_refused("trn2", "attention_decode", a, 6, NULL,
                   "attention_decode: core 0 sp #80 (dma_copy): offsets[1] = 64 is out of bounds [0, 64)");
    memcpy(pg, o, sizeof o);
    pg[1].shape[0] = pg[2].shape[0] = 9, pg[1].shape[2] = pg[2].shape[2] = 16;
    static const double table[8] = {0, 1, 2, 3, 4, 5, 9, 7};
    pg[5].values = ok_len;
    pg[6] = (roster_operand){"block_table", NX_DT_INT32, 2, {2, 4}, table};
    roster_refused("trn2", "attention_decode", pg, 7, "block_size=16",
                   "attention_decode: core 1 sp #88 (dma_copy): offsets[2] = 9 is out of bounds [0, 9)");
#undef WITH
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ragged_contiguous), cmocka_unit_test(paged_shuffled), cmocka_unit_test(masks),
        cmocka_unit_test(tokens_and_dims),   cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
