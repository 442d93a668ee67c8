/* The qkv composite (kernels/qkv/qkv.h): every option combination (norm,
 * bias, rope with both cos/sin shapes, both layouts) on random ragged
 * shapes, GQA 1 / 2 / 4 and MHA, fp32 and bf16, on the functional executor
 * and the model with the race check, each against the rules' reference
 * (tests/roster_case.h); the decode and prefill plans compared bit for bit
 * on the same op, the two layouts compared bit for bit with each other; a
 * case worked by hand (a 90-degree rotation through an identity
 * projection); every refusal's exact text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "roster_case.h"

typedef struct qkv_shape {
    uint64_t B, S, H, nq, nkv, d;
} qkv_shape;

/* The operands of an op with these options: x, w [, gamma] [, bias] [, cos, sin]. */
static uint32_t operands(const qkv_shape *q, nx_dtype dt, int norm, int bias, int rope, int cs_batched,
                         roster_operand *o) {
    const uint64_t N = (q->nq + 2 * q->nkv) * q->d;
    uint32_t n = 0;
    o[n++] = (roster_operand){"x", dt, 3, {q->B, q->S, q->H}, NULL};
    o[n++] = (roster_operand){"w", dt, 2, {q->H, N}, NULL};
    if (norm) o[n++] = (roster_operand){"gamma", NX_DT_BF16, 1, {q->H}, NULL};
    if (bias) o[n++] = (roster_operand){"bias", NX_DT_FP32, 1, {N}, NULL};
    if (rope) {
        roster_operand c = cs_batched ? (roster_operand){"cos", dt, 3, {q->B, q->S, q->d / 2}, NULL}
                                      : (roster_operand){"cos", dt, 2, {q->S, q->d / 2}, NULL};
        o[n++] = c;
        c.name = "sin";
        o[n++] = c;
    }
    return n;
}

static void attrs_of(char *buf, size_t len, const qkv_shape *q, int norm, int bias, int rope, int heads,
                     const char *extra) {
    snprintf(buf, len, "n_q_heads=%llu;n_kv_heads=%llu;head_dim=%llu;norm=\"%s\";bias=%s;rope=%s;layout=\"%s\"%s%s",
             (unsigned long long)q->nq, (unsigned long long)q->nkv, (unsigned long long)q->d, norm ? "rms" : "none",
             bias ? "true" : "false", rope ? "true" : "false", heads ? "heads" : "bsd", extra ? ";" : "",
             extra ? extra : "");
}

/* Every combination of norm, bias, rope (none, [S, d/2], [B, S, d/2]) and
 * layout, each in both plans, with the head counts and dtype rotating
 * through the cases. */
static void qkv_options(void **state) {
    (void)state;
    static const qkv_shape shapes[4] = {
        {2, 37, 200, 4, 2, 32},  /* GQA 2, ragged H and tokens */
        {1, 45, 160, 3, 3, 64},  /* MHA */
        {3, 20, 130, 8, 2, 16},  /* GQA 4, tokens crossing batches */
        {2, 30, 96, 2, 2, 48},   /* GQA 1 (nq = nkv), d not dividing 512 */
    };
    int i = 0;
    for (int norm = 0; norm < 2; norm++)
        for (int bias = 0; bias < 2; bias++)
            for (int rope = 0; rope < 3; rope++)
                for (int heads = 0; heads < 2; heads++, i++) {
                    const qkv_shape *q = &shapes[i % 4];
                    roster_operand o[6];
                    char at[256];
                    uint32_t n = operands(q, i % 3 ? NX_DT_BF16 : NX_DT_FP32, norm, bias, rope > 0, rope == 2, o);
                    for (int plan = 0; plan < 2; plan++) {
                        attrs_of(at, sizeof at, q, norm, bias, rope > 0, heads,
                                 plan ? "plan=\"prefill\"" : "plan=\"decode\"");
                        roster_check("trn2", "qkv", o, n, at);
                    }
                }
}

/* More tokens than a tile on both cores (prefill), ragged last tile; the
 * heads layout's interleaved super-tiles (S a multiple of 512 and of 256);
 * trn1. */
static void qkv_prefill_shapes(void **state) {
    (void)state;
    static const struct {
        qkv_shape q;
        nx_dtype dt;
        int heads, norm, bias, rope;
        const char *machine;
    } cases[] = {
        {{2, 333, 260, 4, 1, 64}, NX_DT_BF16, 0, 1, 1, 1, "trn2"},
        {{1, 1024, 256, 4, 2, 64}, NX_DT_BF16, 1, 1, 1, 1, "trn2"},
        {{2, 256, 192, 2, 1, 128}, NX_DT_FP32, 1, 1, 1, 1, "trn2"},
        {{1, 300, 128, 2, 2, 32}, NX_DT_BF16, 1, 1, 1, 1, "trn1"},
        {{1, 2200, 136, 4, 1, 32}, NX_DT_BF16, 0, 0, 0, 0, "trn2"}, /* 9 tiles per core: blocks of 8 and 1 */
        {{2, 512, 96, 2, 2, 64}, NX_DT_BF16, 1, 0, 1, 0, "trn2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        roster_operand o[6];
        char at[256];
        uint32_t n = operands(&cases[i].q, cases[i].dt, cases[i].norm, cases[i].bias, cases[i].rope, 0, o);
        attrs_of(at, sizeof at, &cases[i].q, cases[i].norm, cases[i].bias, cases[i].rope, cases[i].heads, NULL);
        roster_check(cases[i].machine, "qkv", o, n, at);
    }
}

static void assert_same(const roster_outcome *a, const roster_outcome *b) {
    assert_int_equal(a->n, b->n);
    for (uint32_t j = 0; j < a->n; j++) {
        assert_int_equal(a->size[j], b->size[j]);
        assert_memory_equal(a->bytes[j], b->bytes[j], a->size[j]);
    }
}

/* Decode (heads split over the cores, the weights streamed) and prefill
 * (tokens split, panels of weights): the same op, the same bits. */
static void qkv_plans_agree(void **state) {
    (void)state;
    static const qkv_shape shapes[3] = {{1, 1, 300, 8, 2, 64}, {4, 25, 200, 4, 2, 32}, {1, 128, 256, 6, 3, 64}};
    for (int i = 0; i < 3; i++)
        for (int heads = 0; heads < 2; heads++) {
            roster_operand o[6];
            char a1[256], a2[256];
            uint32_t n = operands(&shapes[i], i == 1 ? NX_DT_FP32 : NX_DT_BF16, 1, i != 0, 1, i == 2, o);
            attrs_of(a1, sizeof a1, &shapes[i], 1, i != 0, 1, heads, "plan=\"decode\"");
            attrs_of(a2, sizeof a2, &shapes[i], 1, i != 0, 1, heads, "plan=\"prefill\"");
            roster_outcome d, p;
            roster_run("trn2", "qkv", o, n, a1, &d);
            roster_run("trn2", "qkv", o, n, a2, &p);
            assert_same(&d, &p);
            roster_outcome_free(&d);
            roster_outcome_free(&p);
        }
}

/* Decode whose core's heads are weight rows under 2 KiB (8 q heads, 1 kv
 * head, d 128, bf16: 5 heads, 1280 bytes a core): the cores split K and
 * exchange partial sums (kernels/qkv/qkv.c). Against the reference with
 * norm, bias and RoPE, both layouts, a ragged last K chunk and a one-chunk
 * core (H 300: chunks 2 + 1); the prefill plan agrees within the tolerance
 * (the two K halves are summed in another order than one accumulation). */
static void qkv_decode_split_k(void **state) {
    (void)state;
    static const qkv_shape shapes[3] = {{8, 1, 512, 8, 1, 128}, {2, 3, 300, 8, 1, 128}, {1, 1, 1024, 6, 2, 128}};
    for (int i = 0; i < 3; i++)
        for (int heads = 0; heads < 2; heads++) {
            roster_operand o[6];
            char a[256];
            uint32_t n = operands(&shapes[i], NX_DT_BF16, 1, 1, 1, 1, o);
            attrs_of(a, sizeof a, &shapes[i], 1, 1, 1, heads, "plan=\"decode\"");
            roster_check("trn2", "qkv", o, n, a);
            attrs_of(a, sizeof a, &shapes[i], 1, 1, 1, heads, "plan=\"prefill\"");
            roster_check("trn2", "qkv", o, n, a);
        }
}

/* bsd's columns are q heads, k heads, v heads: the heads layout holds the
 * same bits (here through the interleaved prefill and the decode plan). */
static void qkv_layouts_agree(void **state) {
    (void)state;
    static const qkv_shape shapes[2] = {{2, 512, 128, 4, 2, 32}, {3, 7, 140, 2, 1, 96}};
    for (int i = 0; i < 2; i++) {
        const qkv_shape *q = &shapes[i];
        roster_operand o[6];
        char a1[256], a2[256];
        uint32_t n = operands(q, NX_DT_BF16, 1, 1, 1, 1, o);
        attrs_of(a1, sizeof a1, q, 1, 1, 1, 0, NULL);
        attrs_of(a2, sizeof a2, q, 1, 1, 1, 1, NULL);
        roster_outcome b, h;
        roster_run("trn2", "qkv", o, n, a1, &b);
        roster_run("trn2", "qkv", o, n, a2, &h);
        assert_int_equal(b.n, 1);
        assert_int_equal(h.n, 3);
        const uint64_t N = (q->nq + 2 * q->nkv) * q->d;
        for (uint64_t bi = 0; bi < q->B; bi++)
            for (uint64_t s = 0; s < q->S; s++)
                for (uint64_t c = 0; c < N; c++) {
                    const uint64_t hd = c / q->d, j = c % q->d;
                    const uint32_t r = hd < q->nq ? 0 : hd < q->nq + q->nkv ? 1 : 2;
                    const uint64_t nh = r == 0 ? q->nq : q->nkv, hh = hd - (r == 0 ? 0 : r == 1 ? q->nq : q->nq + q->nkv);
                    double want = roster_value_at(&b, 0, (bi * q->S + s) * N + c);
                    double got = roster_value_at(&h, r, ((bi * nh + hh) * q->S + s) * q->d + j);
                    if (want != got)
                        fail_msg("b %llu s %llu column %llu: bsd %g, heads %g", (unsigned long long)bi,
                                 (unsigned long long)s, (unsigned long long)c, want, got);
                }
        roster_outcome_free(&b);
        roster_outcome_free(&h);
    }
}

/* By hand: norm none, w the identity (N = H), cos 0 and sin 1 (a
 * 90-degree turn): q and k heads come out as [-x2, x1], v as x, exactly;
 * with bias 0.5 on every column, v = x + 0.5 and q, k heads [-(x2 + .5),
 * x1 + .5]. */
static void qkv_by_hand(void **state) {
    (void)state;
    enum { B = 2, S = 5, NQ = 2, NKV = 1, D = 8, N = (NQ + 2 * NKV) * D };
    double *w = calloc(N * N, sizeof *w), cs0[S * D / 2], cs1[S * D / 2], bias[N], x[B * S * N];
    assert_non_null(w);
    for (int i = 0; i < B * S * N; i++) x[i] = (double)(i % 17 - 8) * 0.25;
    for (int i = 0; i < N; i++) w[i * N + i] = 1.0, bias[i] = 0.5;
    for (int i = 0; i < S * D / 2; i++) cs0[i] = 0.0, cs1[i] = 1.0;
    roster_operand o[5] = {{"x", NX_DT_FP32, 3, {B, S, N}, x},
                           {"w", NX_DT_FP32, 2, {N, N}, w},
                           {"bias", NX_DT_FP32, 1, {N}, bias},
                           {"cos", NX_DT_FP32, 2, {S, D / 2}, cs0},
                           {"sin", NX_DT_FP32, 2, {S, D / 2}, cs1}};
    roster_outcome r, y;
    /* x itself through the identity: norm none, no bias, no rope */
    roster_run("trn2", "qkv", o, 2, "n_q_heads=2;n_kv_heads=1;norm=\"none\"", &y);
    for (uint64_t e = 0; e < B * S * N; e++) assert_true(roster_value_at(&y, 0, e) == x[e]);
    roster_outcome_free(&y);
    roster_run("trn2", "qkv", o, 5, "n_q_heads=2;n_kv_heads=1;norm=\"none\";bias=true;rope=true", &r);
    /* bias and rope not given: the five operands say both */
    roster_outcome r2;
    roster_run("trn2", "qkv", o, 5, "n_q_heads=2;n_kv_heads=1;norm=\"none\"", &r2);
    assert_same(&r, &r2);
    roster_outcome_free(&r2);
    for (uint64_t t = 0; t < B * S; t++)
        for (uint64_t c = 0; c < N; c++) {
            const uint64_t j = c % D, hd = c / D;
            double want;
            if (hd >= NQ + NKV) want = x[t * N + c] + 0.5;
            else if (j < D / 2) want = -(x[t * N + c + D / 2] + 0.5);
            else want = x[t * N + c - D / 2] + 0.5;
            double got = roster_value_at(&r, 0, t * N + c);
            if (got != want) fail_msg("token %llu column %llu: %g, want %g", (unsigned long long)t, (unsigned long long)c, got, want);
        }
    roster_outcome_free(&r);
    free(w);
    /* head_dim taken from w's width, n_kv_heads from n_q_heads */
    nx_macro_op op;
    nx_error err;
    roster_operand m[3] = {{"x", NX_DT_BF16, 3, {1, 3, 64}, NULL}, {"w", NX_DT_BF16, 2, {64, 96}, NULL}, {"g", NX_DT_BF16, 1, {64}, NULL}};
    assert_int_equal(roster_make_op(&op, "qkv", m, 3, "n_q_heads=2;layout=\"heads\"", &err), 0);
    assert_int_equal(op.n_results, 3);
    assert_true(op.results[0].shape[1] == 2 && op.results[1].shape[1] == 2 && op.results[2].shape[3] == 16);
    nx_macro_op_free(&op);
}

static void qkv_refusals(void **state) {
    (void)state;
    const qkv_shape q = {2, 8, 200, 4, 2, 32};
    roster_operand o[6];
    uint32_t n = operands(&q, NX_DT_BF16, 1, 0, 1, 0, o); /* x, w [200, 256], gamma, cos, sin */
    const char *base = "n_q_heads=4;n_kv_heads=2;rope=true";
    static const struct {
        const char *attrs, *msg;
    } by_attrs[] = {
        {"n_kv_heads=2;rope=true", "attribute n_q_heads: is missing (qkv needs the number of query heads)"},
        {"n_q_heads=6;n_kv_heads=4;rope=true", "attribute n_q_heads: 6 is not a multiple of n_kv_heads = 4"},
        {"n_q_heads=4;n_kv_heads=2;head_dim=30;rope=true",
         "operand 1 (w): width 256 must be (n_q_heads + 2 n_kv_heads) head_dim = (4 + 2 x 2) x 30 = 240"},
        {"n_q_heads=3;n_kv_heads=3;rope=true",
         "operand 1 (w): width 256 is not a multiple of n_q_heads + 2 n_kv_heads = 3 + 2 x 3 = 9"},
        {"n_q_heads=4;n_kv_heads=0;rope=true", "attribute n_kv_heads: 0 must be positive"},
        {"n_q_heads=4;n_kv_heads=2;rope=true;layout=\"hsd\"", "attribute layout: 'hsd' is not one of bsd, heads"},
        {"n_q_heads=4;n_kv_heads=2;rope=true;norm=\"layer\"", "attribute norm: 'layer' is not one of rms, none"},
        /* a missing optional operand its attribute asks for, an extra one */
        {"n_q_heads=4;n_kv_heads=2;rope=true;bias=true",
         "qkv with norm=rms bias=true rope=true takes 6 operands (x, w, gamma, bias, cos, sin), the op has 5"},
        {"n_q_heads=4;n_kv_heads=2;rope=false",
         "qkv with norm=rms bias=false rope=false takes 3 operands (x, w, gamma), the op has 5"},
        /* bias and rope not given follow the count: gamma is then read as the bias */
        {"n_q_heads=4;n_kv_heads=2;norm=\"none\"", "operand 2 (gamma): bias must be [256]"},
    };
    for (size_t i = 0; i < sizeof by_attrs / sizeof *by_attrs; i++)
        roster_refused("trn2", "qkv", o, n, by_attrs[i].attrs, by_attrs[i].msg);
    /* one operand replaced: cos/sin of the wrong shape, an odd head_dim with
     * rope (w [200, 8 x 31]), gamma's shape, w's dtype, x's rank */
    static const struct {
        uint32_t at;
        roster_operand with;
        const char *msg;
    } by_operand[] = {
        {3, {"cos", NX_DT_BF16, 2, {8, 32}, NULL}, "operand 3 (cos): cos must be [8, 16] or [2, 8, 16] ([S, d/2] or [B, S, d/2])"},
        {4, {"sin", NX_DT_BF16, 3, {2, 8, 16}, NULL}, "operand 4 (sin): sin must have cos's shape and dtype"},
        {1, {"w", NX_DT_BF16, 2, {200, 248}, NULL}, "attribute head_dim: 31 must be even (rope rotates its halves)"},
        {2, {"gamma", NX_DT_BF16, 1, {100}, NULL}, "operand 2 (gamma): gamma must be [200]"},
        {1, {"w", NX_DT_FP32, 2, {200, 256}, NULL}, "operand 1 (w): dtype fp32 differs from x's bf16"},
        {0, {"x", NX_DT_BF16, 2, {16, 200}, NULL}, "operand 0 (x): rank 2, qkv takes x [B, S, H]"},
    };
    for (size_t i = 0; i < sizeof by_operand / sizeof *by_operand; i++) {
        roster_operand v[6];
        memcpy(v, o, sizeof v);
        v[by_operand[i].at] = by_operand[i].with;
        roster_refused("trn2", "qkv", v, n, base, by_operand[i].msg);
    }
    /* the plans' limits: decode's 128 tokens, a head beyond one PSUM bank, H beyond SBUF and an access */
    roster_operand big[2] = {{"x", NX_DT_BF16, 3, {3, 100, 64}, NULL}, {"w", NX_DT_BF16, 2, {64, 256}, NULL}};
    roster_refused("trn2", "qkv", big, 2, "n_q_heads=4;n_kv_heads=2;norm=\"none\";plan=\"decode\"",
                   "attribute plan: decode takes up to 128 tokens (B S), the op has 300");
    roster_operand wide[2] = {{"x", NX_DT_BF16, 3, {1, 2, 64}, NULL}, {"w", NX_DT_BF16, 2, {64, 1920}, NULL}};
    roster_refused("trn2", "qkv", wide, 2, "n_q_heads=1;n_kv_heads=1;norm=\"none\"",
                   "attribute head_dim: 640 beyond 512 (a head's columns fit one PSUM bank of fp32)");
    roster_operand tall[3] = {{"x", NX_DT_FP32, 3, {1, 2, 30000}, NULL},
                              {"w", NX_DT_FP32, 2, {30000, 64}, NULL},
                              {"gamma", NX_DT_FP32, 1, {30000}, NULL}};
    roster_refused("trn2", "qkv", tall, 3, "n_q_heads=2;n_kv_heads=1",
                   "operand 0 (x): H = 30000 needs 615296 bytes per partition (x, h and weight tiles of the plan), "
                   "SBUF has 229376");
    roster_operand huge[2] = {{"x", NX_DT_BF16, 3, {1, 1, 70000}, NULL}, {"w", NX_DT_BF16, 2, {70000, 48}, NULL}};
    roster_refused("trn2", "qkv", huge, 2, "n_q_heads=1;n_kv_heads=1;norm=\"none\"",
                   "operand 0 (x): H = 70000 beyond the 65536 elements an engine streams per partition");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(qkv_options),     cmocka_unit_test(qkv_prefill_shapes), cmocka_unit_test(qkv_plans_agree), cmocka_unit_test(qkv_decode_split_k),
        cmocka_unit_test(qkv_layouts_agree), cmocka_unit_test(qkv_by_hand),      cmocka_unit_test(qkv_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
