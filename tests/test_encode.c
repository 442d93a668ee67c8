/* The 320-byte instruction word: layout at hand-computed byte offsets,
 * randomized encode/decode round trips for every opcode, one rejection per
 * canonical-form rule (the message must name the field and its byte), and a
 * byte-mutation sweep (every decoded mutation must re-encode identically). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "isa/encode.h"
#include "isa/opcodes.h"
#include "support.h"

/* Layout written out independently of isa/encode.c (from the spec). */
#define OPERAND(i) (32 + 56 * (i))

static uint64_t double_bits(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* ---- record comparison (field by field; immediates by bits) ---- */

static void assert_operand_equal(const nx_operand *a, const nx_operand *b, unsigned slot) {
    char where[32];
    snprintf(where, sizeof where, "slot %u", slot);
    if (a->kind != b->kind || a->dtype != b->dtype || a->ndims != b->ndims ||
        a->start_partition != b->start_partition || a->partition_count != b->partition_count ||
        a->partition_stride != b->partition_stride || a->offset != b->offset ||
        double_bits(a->imm) != double_bits(b->imm) || a->pattern_base != b->pattern_base)
        fail_msg("%s: scalar fields differ (kind %u/%u dtype %u/%u ndims %u/%u pc %u/%u)", where,
                 a->kind, b->kind, a->dtype, b->dtype, a->ndims, b->ndims, a->partition_count,
                 b->partition_count);
    for (int k = 0; k < NX_MAX_FREE_DIMS; k++)
        if (a->stride[k] != b->stride[k] || a->count[k] != b->count[k])
            fail_msg("%s: dim %d differs", where, k);
}

static void assert_insn_equal(const nx_insn *a, const nx_insn *b) {
    assert_int_equal(a->opcode, b->opcode);
    assert_int_equal(a->alu0, b->alu0);
    assert_int_equal(a->alu1, b->alu1);
    assert_int_equal(a->func, b->func);
    assert_int_equal(a->flags, b->flags);
    assert_int_equal(a->wait_sem, b->wait_sem);
    assert_int_equal(a->inc_sem, b->inc_sem);
    assert_int_equal(a->wait_value, b->wait_value);
    assert_int_equal(a->wait_span, b->wait_span);
    assert_int_equal(a->inc_amount, b->inc_amount);
    assert_int_equal(a->iparam[0], b->iparam[0]);
    assert_int_equal(a->iparam[1], b->iparam[1]);
    for (unsigned i = 0; i < NX_MAX_OPERANDS; i++) assert_operand_equal(&a->op[i], &b->op[i], i);
}

/* ---- random legal instructions ---- */

static uint32_t rnd(test_rng *r, uint32_t n) { return (uint32_t)(test_rng_next(r) % n); }

static void random_dims(test_rng *r, nx_operand *op) {
    op->ndims = (uint8_t)rnd(r, NX_MAX_FREE_DIMS + 1);
    for (unsigned k = 0; k < op->ndims; k++) {
        op->stride[k] = (int32_t)(uint32_t)test_rng_next(r);
        /* mostly small counts, sometimes the extremes */
        switch (rnd(r, 4)) {
        case 0: op->count[k] = 1; break;
        case 1: op->count[k] = UINT32_MAX; break;
        default: op->count[k] = 1 + rnd(r, 4096); break;
        }
    }
}

static double random_imm(test_rng *r) {
    static const uint64_t special[] = {
        0x0000000000000000ull, 0x8000000000000000ull, /* +-0 */
        0x7ff0000000000000ull, 0xfff0000000000000ull, /* +-inf */
        0x7ff8000000000000ull, 0xfff8000000000000ull, /* canonical NaNs */
        0x0000000000000001ull,                        /* smallest subnormal */
        0x3ff0000000000000ull,                        /* 1.0 */
    };
    uint64_t bits;
    if (rnd(r, 4) == 0) {
        bits = special[rnd(r, sizeof special / sizeof special[0])];
    } else {
        do bits = test_rng_next(r);
        while (((bits >> 52) & 0x7ff) == 0x7ff); /* any finite bit pattern */
    }
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static nx_operand random_operand(test_rng *r, nx_operand_kind kind) {
    nx_operand op;
    memset(&op, 0, sizeof op);
    op.kind = (uint8_t)kind;
    op.dtype = (uint8_t)rnd(r, NX_DT_COUNT);
    switch (kind) {
    case NX_OPK_NONE: op.dtype = 0; break;
    case NX_OPK_IMM: {
        /* a value of its dtype, as the assembler makes it (the decoder takes
         * no other) */
        unsigned char as_dtype[8];
        nx_dtype_store((nx_dtype)op.dtype, as_dtype, random_imm(r));
        op.imm = nx_dtype_load((nx_dtype)op.dtype, as_dtype);
        op.partition_count = 1; /* insn.h: 1 for IMM */
        break;
    }
    case NX_OPK_PATTERN:
        op.dtype = (uint8_t)(NX_DT_INT8 + rnd(r, NX_DT_COUNT - NX_DT_INT8));
        op.partition_count = (uint8_t)(1 + rnd(r, 128));
        op.partition_stride = (int32_t)(uint32_t)test_rng_next(r);
        op.pattern_base = (int64_t)test_rng_next(r);
        random_dims(r, &op);
        break;
    case NX_OPK_HBM:
        op.partition_count = (uint8_t)(1 + rnd(r, 128));
        op.partition_stride = (int32_t)(uint32_t)test_rng_next(r);
        op.offset = test_rng_next(r);
        random_dims(r, &op);
        break;
    default: /* SBUF, PSUM */
        op.start_partition = (uint8_t)rnd(r, 128);
        op.partition_count = (uint8_t)(1 + rnd(r, 128u - op.start_partition));
        op.offset = test_rng_next(r) >> rnd(r, 64);
        random_dims(r, &op);
        break;
    }
    return op;
}

static nx_insn random_insn(test_rng *r, unsigned opcode) {
    const nx_opcode_info *row = nx_opcode_lookup(opcode);
    nx_insn in;
    memset(&in, 0, sizeof in);
    in.opcode = (uint8_t)opcode;
    if (row->params & NX_PARAM_ALU0) in.alu0 = (uint8_t)rnd(r, NX_ALU_COUNT);
    if (row->params & NX_PARAM_ALU1) in.alu1 = (uint8_t)rnd(r, NX_ALU_COUNT);
    if (row->params & NX_PARAM_FUNC) in.func = (uint8_t)rnd(r, NX_ACT_COUNT);
    in.flags = (uint16_t)(test_rng_next(r) & row->flags);
    for (int i = 0; i < 2; i++)
        if (row->iparam_name[i]) in.iparam[i] = (int32_t)(uint32_t)test_rng_next(r);
    in.wait_sem = NX_SEM_NONE;
    in.inc_sem = NX_SEM_NONE;
    if (rnd(r, 2)) {
        in.wait_sem = (uint8_t)rnd(r, NX_MAX_SEMAPHORES);
        in.wait_value = (uint32_t)test_rng_next(r);
        uint32_t room = NX_SEM_NONE - in.wait_sem; /* a span ends below 0xFF */
        if (room >= 2 && rnd(r, 2)) in.wait_span = 2 + rnd(r, room - 1);
    }
    if (rnd(r, 2)) {
        in.inc_sem = (uint8_t)rnd(r, NX_MAX_SEMAPHORES);
        in.inc_amount = 1 + rnd(r, UINT32_MAX);
    }
    for (unsigned s = 0; s < NX_MAX_OPERANDS; s++) {
        const nx_slot_spec *spec = &row->slot[s];
        if (spec->name == NULL) continue;
        nx_operand_kind choices[NX_OPK_COUNT];
        unsigned n = 0;
        if (!spec->required) choices[n++] = NX_OPK_NONE;
        for (unsigned k = 1; k < NX_OPK_COUNT; k++)
            if (spec->kinds & NX_KIND_BIT(k)) choices[n++] = (nx_operand_kind)k;
        in.op[s] = random_operand(r, choices[rnd(r, n)]);
    }
    return in;
}

static void test_roundtrip_every_opcode(void **state) {
    (void)state;
    test_rng r = {12345};
    unsigned kinds_seen = 0;
    for (unsigned opc = 0; opc < NX_OP_COUNT; opc++) {
        for (int it = 0; it < 200; it++) {
            nx_insn in = random_insn(&r, opc), out;
            uint8_t w1[NX_INSN_WORD_BYTES], w2[NX_INSN_WORD_BYTES];
            nx_error err = {{0}};
            nx_insn_encode(&in, w1);
            if (nx_insn_decode(w1, &out, &err) != 0)
                fail_msg("%s #%d: decode failed: %s", nx_opcode_table[opc].mnemonic, it, err.msg);
            assert_insn_equal(&in, &out);
            nx_insn_encode(&out, w2);
            assert_memory_equal(w1, w2, NX_INSN_WORD_BYTES);
            for (unsigned s = 0; s < NX_MAX_OPERANDS; s++) kinds_seen |= NX_KIND_BIT(out.op[s].kind);
        }
    }
    /* the generator really exercised every operand kind */
    assert_int_equal(kinds_seen, (1u << NX_OPK_COUNT) - 1);
}

/* ---- layout at hand-computed offsets ---- */

static nx_insn sample_tensor_scalar(void) {
    nx_insn in;
    memset(&in, 0, sizeof in);
    in.opcode = NX_OP_TENSOR_SCALAR;
    in.alu0 = NX_ALU_MULTIPLY;
    in.alu1 = NX_ALU_ADD;
    in.flags = NX_FLAG_REVERSE1;
    in.wait_sem = 3;
    in.wait_value = 0x01020304;
    in.inc_sem = 7;
    in.inc_amount = 2;
    nx_operand dst = {.kind = NX_OPK_SBUF, .dtype = NX_DT_BF16, .ndims = 2, .start_partition = 32,
                      .partition_count = 64, .offset = 0x1234,
                      .stride = {-128, 1}, .count = {4, 128}};
    nx_operand src = dst;
    src.kind = NX_OPK_PSUM;
    src.dtype = NX_DT_FP32;
    nx_operand s0 = {.kind = NX_OPK_IMM, .dtype = NX_DT_FP32, .partition_count = 1, .imm = -2.5};
    in.op[0] = dst;
    in.op[1] = src;
    in.op[2] = s0;
    return in;
}

static void test_layout_bytes(void **state) {
    (void)state;
    nx_insn in = sample_tensor_scalar();
    uint8_t w[NX_INSN_WORD_BYTES];
    memset(w, 0xAA, sizeof w); /* encode must write every byte */
    nx_insn_encode(&in, w);
    assert_int_equal(w[0], NX_OP_TENSOR_SCALAR);
    assert_int_equal(w[1], NX_ALU_MULTIPLY);
    assert_int_equal(w[2], NX_ALU_ADD);
    assert_int_equal(w[3], 0);
    assert_int_equal(test_le_get(w + 4, 2), NX_FLAG_REVERSE1);
    assert_int_equal(w[6], 3);
    assert_int_equal(w[7], 7);
    assert_int_equal(w[8], 0x04); /* little-endian */
    assert_int_equal(w[11], 0x01);
    assert_int_equal(test_le_get(w + 12, 4), 2);
    for (int i = 16; i < 32; i++) assert_int_equal(w[i], 0);
    const uint8_t *d = w + OPERAND(0);
    assert_int_equal(d[0], NX_OPK_SBUF);
    assert_int_equal(d[1], NX_DT_BF16);
    assert_int_equal(d[2], 2);
    assert_int_equal(d[3], 32);
    assert_int_equal(d[4], 64);
    assert_int_equal(test_le_get(d + 16, 8), 0x1234);
    assert_int_equal(test_le_get(d + 24, 4), 0xFFFFFF80u); /* -128 two's complement */
    assert_int_equal(test_le_get(d + 28, 4), 1);
    assert_int_equal(test_le_get(d + 40, 4), 4);
    assert_int_equal(test_le_get(d + 44, 4), 128);
    assert_int_equal(test_le_get(d + 32, 8), 0); /* dims 2,3 unused */
    assert_int_equal(test_le_get(d + 48, 8), 0);
    assert_int_equal(w[OPERAND(1)], NX_OPK_PSUM);
    const uint8_t *s = w + OPERAND(2);
    assert_int_equal(s[0], NX_OPK_IMM);
    assert_int_equal(s[1], NX_DT_FP32);
    for (int i = 2; i < 16; i++) assert_int_equal(s[i], 0); /* partition_count 1 not encoded */
    assert_int_equal(test_le_get(s + 16, 8), 0xC004000000000000ull); /* -2.5 as binary64 */
    for (int i = 24; i < 56; i++) assert_int_equal(s[i], 0);
    for (int i = OPERAND(3); i < NX_INSN_WORD_BYTES; i++) assert_int_equal(w[i], 0);
}

static void test_layout_pattern_and_params(void **state) {
    (void)state;
    nx_insn in;
    memset(&in, 0, sizeof in);
    in.opcode = NX_OP_DMA_COPY;
    in.wait_sem = in.inc_sem = NX_SEM_NONE;
    in.iparam[0] = -2;
    in.iparam[1] = 0x7fffffff;
    in.op[0] = (nx_operand){.kind = NX_OPK_HBM, .dtype = NX_DT_INT32, .partition_count = 128,
                            .partition_stride = -5, .offset = 0x0102030405060708ull};
    in.op[1] = (nx_operand){.kind = NX_OPK_SBUF, .dtype = NX_DT_INT32, .partition_count = 128};
    uint8_t w[NX_INSN_WORD_BYTES];
    nx_insn_encode(&in, w);
    assert_int_equal(w[6], 0xFF);
    assert_int_equal(w[7], 0xFF);
    assert_int_equal(test_le_get(w + 16, 4), 0xFFFFFFFEu);
    assert_int_equal(test_le_get(w + 20, 4), 0x7FFFFFFFu);
    assert_int_equal(test_le_get(w + OPERAND(0) + 8, 4), 0xFFFFFFFBu);
    assert_int_equal(w[OPERAND(0) + 16], 0x08);
    assert_int_equal(w[OPERAND(0) + 23], 0x01);

    memset(&in, 0, sizeof in);
    in.opcode = NX_OP_IOTA;
    in.wait_sem = in.inc_sem = NX_SEM_NONE;
    in.op[0] = (nx_operand){.kind = NX_OPK_SBUF, .dtype = NX_DT_INT32, .partition_count = 1};
    in.op[1] = (nx_operand){.kind = NX_OPK_PATTERN, .dtype = NX_DT_INT32, .partition_count = 16,
                            .partition_stride = 3, .pattern_base = -1, .ndims = 1,
                            .stride = {2}, .count = {10}};
    nx_insn_encode(&in, w);
    assert_int_equal(test_le_get(w + OPERAND(1) + 16, 8), UINT64_MAX); /* base -1 */
    assert_int_equal(test_le_get(w + OPERAND(1) + 8, 4), 3);
    nx_insn out;
    nx_error err;
    assert_int_equal(nx_insn_decode(w, &out, &err), 0);
    assert_int_equal(out.op[1].pattern_base, -1);
    assert_int_equal(out.op[1].offset, 0);
}

/* NaN payloads are dropped: any NaN encodes as the quiet NaN of its sign. */
static void test_nan_canonicalised(void **state) {
    (void)state;
    nx_insn in = sample_tensor_scalar();
    const uint64_t nans[] = {0x7ff0000000000001ull, 0x7fffffffffffffffull, 0x7ff8000000000001ull,
                             0xfff0000000000001ull, 0xffffffffffffffffull};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        memcpy(&in.op[2].imm, &nans[i], sizeof(double));
        uint8_t w[NX_INSN_WORD_BYTES];
        nx_insn_encode(&in, w);
        uint64_t want = (nans[i] >> 63) ? 0xfff8000000000000ull : 0x7ff8000000000000ull;
        assert_int_equal(test_le_get(w + OPERAND(2) + 16, 8), want);
        nx_insn out;
        nx_error err;
        assert_int_equal(nx_insn_decode(w, &out, &err), 0);
        assert_true(isnan(out.op[2].imm));
        assert_int_equal(double_bits(out.op[2].imm), want);
    }
}

/* Fields a kind does not use are not encoded. */
static void test_unused_record_fields_not_encoded(void **state) {
    (void)state;
    nx_insn a = sample_tensor_scalar(), b = a;
    b.op[0].imm = 3.0;          /* memory operand: imm unused */
    b.op[0].pattern_base = 9;   /* ... and pattern_base */
    b.op[0].stride[3] = 77;     /* past ndims */
    b.op[2].offset = 5;         /* immediate: offset unused */
    b.op[2].partition_count = 0;
    b.op[3].dtype = 4;          /* kind NONE: nothing is encoded */
    uint8_t wa[NX_INSN_WORD_BYTES], wb[NX_INSN_WORD_BYTES];
    nx_insn_encode(&a, wa);
    nx_insn_encode(&b, wb);
    assert_memory_equal(wa, wb, NX_INSN_WORD_BYTES);
}

/* ---- rejections ---- */

/* Decoding `w` must fail and the message must contain every needle. */
static void expect_reject(const uint8_t *w, const char *needle1, const char *needle2) {
    nx_insn out;
    nx_error err = {{0}};
    if (nx_insn_decode(w, &out, &err) == 0) fail_msg("accepted; expected '%s' '%s'", needle1, needle2);
    if (strstr(err.msg, needle1) == NULL || (needle2 && strstr(err.msg, needle2) == NULL))
        fail_msg("message '%s' does not contain '%s' / '%s'", err.msg, needle1, needle2 ? needle2 : "");
    assert_null(strchr(err.msg, '\n'));
}

static void base_word(uint8_t w[NX_INSN_WORD_BYTES]) {
    nx_insn in = sample_tensor_scalar();
    nx_insn_encode(&in, w);
    nx_insn out;
    nx_error err;
    assert_int_equal(nx_insn_decode(w, &out, &err), 0);
}

/* A valid word for `in`, to be corrupted by the caller. */
static void word_of(const nx_insn *in, uint8_t w[NX_INSN_WORD_BYTES]) {
    nx_insn_encode(in, w);
    nx_insn out;
    nx_error err = {{0}};
    if (nx_insn_decode(w, &out, &err) != 0) fail_msg("base word rejected: %s", err.msg);
}

static nx_insn plain(nx_opcode opc) {
    nx_insn in;
    memset(&in, 0, sizeof in);
    in.opcode = (uint8_t)opc;
    in.wait_sem = in.inc_sem = NX_SEM_NONE;
    nx_operand tile = {.kind = NX_OPK_SBUF, .dtype = NX_DT_FP32, .partition_count = 128,
                       .ndims = 1, .stride = {1}, .count = {64}};
    const nx_opcode_info *row = nx_opcode_lookup(opc);
    for (unsigned s = 0; s < NX_MAX_OPERANDS; s++) {
        if (!row->slot[s].name || !row->slot[s].required) continue;
        if (row->slot[s].kinds & NX_KIND_BIT(NX_OPK_SBUF)) in.op[s] = tile;
        else if (row->slot[s].kinds & NX_KIND_BIT(NX_OPK_PSUM)) { in.op[s] = tile; in.op[s].kind = NX_OPK_PSUM; }
        else if (row->slot[s].kinds & NX_KIND_BIT(NX_OPK_IMM))
            in.op[s] = (nx_operand){.kind = NX_OPK_IMM, .dtype = NX_DT_FP32, .partition_count = 1};
        else if (row->slot[s].kinds & NX_KIND_BIT(NX_OPK_PATTERN))
            in.op[s] = (nx_operand){.kind = NX_OPK_PATTERN, .dtype = NX_DT_INT32, .partition_count = 128};
    }
    return in;
}

static void test_reject_header_fields(void **state) {
    (void)state;
    uint8_t w[NX_INSN_WORD_BYTES], b[NX_INSN_WORD_BYTES];
    base_word(b);

    memcpy(w, b, sizeof w); w[0] = NX_OP_COUNT;
    expect_reject(w, "byte 0 (opcode)", "not an opcode");
    memcpy(w, b, sizeof w); w[0] = 0xFF;
    expect_reject(w, "byte 0 (opcode)", NULL);

    memcpy(w, b, sizeof w); w[1] = NX_ALU_COUNT; /* 20: not an ALU op */
    expect_reject(w, "byte 1 (alu0)", "is not an ALU op (0..19)");
    memcpy(w, b, sizeof w); w[2] = 0xC8;
    expect_reject(w, "byte 2 (alu1)", "not an ALU op");
    memcpy(w, b, sizeof w); w[3] = 1; /* tensor_scalar has no func */
    expect_reject(w, "byte 3 (func)", "tensor_scalar does not use it");

    /* a row without ALU params must carry zeros there */
    uint8_t c[NX_INSN_WORD_BYTES];
    nx_insn copy = plain(NX_OP_TENSOR_COPY);
    word_of(&copy, c);
    memcpy(w, c, sizeof w); w[1] = 1;
    expect_reject(w, "byte 1 (alu0)", "tensor_copy does not use it");
    memcpy(w, c, sizeof w); w[2] = 3;
    expect_reject(w, "byte 2 (alu1)", "tensor_copy");
    /* func in range on a row that declares it, then out of range */
    nx_insn act = plain(NX_OP_ACTIVATION);
    act.func = NX_ACT_COUNT - 1;
    word_of(&act, c);
    memcpy(w, c, sizeof w); w[3] = NX_ACT_COUNT;
    expect_reject(w, "byte 3 (func)", "not an activation function");

    memcpy(w, b, sizeof w); test_le_put(w + 4, NX_FLAG_ACCUMULATE, 2); /* not accepted by tensor_scalar */
    expect_reject(w, "byte 4 (flags)", "tensor_scalar");
    memcpy(w, b, sizeof w); test_le_put(w + 4, 0x8000 | NX_FLAG_REVERSE0, 2);
    expect_reject(w, "byte 4 (flags)", NULL);

    memcpy(w, b, sizeof w); w[6] = 0xFF; /* wait_sem none but wait_value set */
    expect_reject(w, "byte 8 (wait_value)", "wait_sem");
    memcpy(w, b, sizeof w); w[7] = 0xFF; /* inc_sem none but inc_amount 2 */
    expect_reject(w, "byte 12 (inc_amount)", "inc_sem");
    memcpy(w, b, sizeof w); test_le_put(w + 12, 0, 4); /* inc_sem 7 with amount 0 */
    expect_reject(w, "byte 12 (inc_amount)", ">= 1");

    memcpy(w, b, sizeof w); test_le_put(w + 16, 5, 4); /* tensor_scalar: no iparam0 */
    expect_reject(w, "byte 16 (iparam0)", "tensor_scalar");
    nx_insn red = plain(NX_OP_TENSOR_REDUCE); /* names iparam0 ("axes") only */
    red.iparam[0] = -7;
    word_of(&red, c);
    memcpy(w, c, sizeof w); test_le_put(w + 20, 0xFFFFFFFFu, 4);
    expect_reject(w, "byte 20 (iparam1)", "tensor_reduce");

    memcpy(w, b, sizeof w); w[24] = 1; /* a span of 1 is written as 0 */
    expect_reject(w, "byte 24 (wait_span)", "0 or 2..");
    memcpy(w, b, sizeof w); w[24] = 0xFD; /* wait_sem 3: semaphores 3 .. 255 pass the last index */
    expect_reject(w, "byte 24 (wait_span)", "semaphores 3");
    memcpy(w, b, sizeof w); w[24] = 4;
    nx_insn spanned;
    nx_error ok = {{0}};
    assert_int_equal(nx_insn_decode(w, &spanned, &ok), 0); /* sem3..6 */
    assert_int_equal(spanned.wait_span, 4);
    assert_int_equal(nx_insn_wait_sems(&spanned), 4);
    memcpy(w, b, sizeof w); w[24] = 4; w[6] = 0xFF; test_le_put(w + 8, 0, 4);
    expect_reject(w, "byte 24 (wait_span)", "no wait");

    for (int i = 25; i < 32; i++) {
        memcpy(w, b, sizeof w); w[i] = 0x10;
        char needle[32];
        snprintf(needle, sizeof needle, "byte %d (reserved)", i);
        expect_reject(w, needle, NULL);
    }
    for (int i = 312; i < 320; i++) {
        memcpy(w, b, sizeof w); w[i] = 0x01;
        char needle[32];
        snprintf(needle, sizeof needle, "byte %d (reserved)", i);
        expect_reject(w, needle, NULL);
    }
}

static void test_reject_slots(void **state) {
    (void)state;
    uint8_t w[NX_INSN_WORD_BYTES], b[NX_INSN_WORD_BYTES];
    base_word(b); /* dst sbuf bf16 ndims 2, in psum, scalar0 imm, scalar1 none, slot4 unused */
    char needle[64];

    /* slot unused by the row: every byte must be zero */
    for (int off = 0; off < 56; off += 5) {
        memcpy(w, b, sizeof w); w[OPERAND(4) + off] = 1;
        snprintf(needle, sizeof needle, "byte %d (slot4.", OPERAND(4) + off);
        expect_reject(w, needle, "unused");
    }
    /* optional slot with kind none: every other byte zero */
    memcpy(w, b, sizeof w); w[OPERAND(3) + 1] = NX_DT_BF16;
    expect_reject(w, "(scalar1.dtype)", "kind none");
    memcpy(w, b, sizeof w); w[OPERAND(3) + 40] = 1;
    expect_reject(w, "(scalar1.count[0])", "kind none");
    /* required slot with kind none */
    memcpy(w, b, sizeof w); memset(w + OPERAND(1), 0, 56);
    snprintf(needle, sizeof needle, "byte %d (in.kind)", OPERAND(1));
    expect_reject(w, needle, "required");
    /* kind not allowed in the slot, and not a kind at all */
    memcpy(w, b, sizeof w); w[OPERAND(0)] = NX_OPK_HBM;
    expect_reject(w, "(dst.kind)", "not allowed");
    memcpy(w, b, sizeof w); w[OPERAND(0)] = NX_OPK_COUNT;
    expect_reject(w, "(dst.kind)", "not an operand kind");
    /* dtype */
    memcpy(w, b, sizeof w); w[OPERAND(0) + 1] = NX_DT_COUNT;
    snprintf(needle, sizeof needle, "byte %d (dst.dtype)", OPERAND(0) + 1);
    expect_reject(w, needle, "not a dtype");
    memcpy(w, b, sizeof w); w[OPERAND(2) + 1] = 0xFF;
    expect_reject(w, "(scalar0.dtype)", NULL);
    /* ndims */
    memcpy(w, b, sizeof w); w[OPERAND(0) + 2] = 5;
    snprintf(needle, sizeof needle, "byte %d (dst.ndims)", OPERAND(0) + 2);
    expect_reject(w, needle, NULL);
    /* count >= 1 below ndims */
    memcpy(w, b, sizeof w); test_le_put(w + OPERAND(0) + 44, 0, 4);
    snprintf(needle, sizeof needle, "byte %d (dst.count[1])", OPERAND(0) + 44);
    expect_reject(w, needle, ">= 1");
    /* stride/count zero at and past ndims */
    memcpy(w, b, sizeof w); w[OPERAND(0) + 32] = 1;
    snprintf(needle, sizeof needle, "byte %d (dst.stride[2])", OPERAND(0) + 32);
    expect_reject(w, needle, "past ndims");
    memcpy(w, b, sizeof w); w[OPERAND(0) + 55] = 0x80;
    snprintf(needle, sizeof needle, "byte %d (dst.count[3])", OPERAND(0) + 55);
    expect_reject(w, needle, "past ndims");
    memcpy(w, b, sizeof w); w[OPERAND(1) + 2] = 1; /* ndims 2 -> 1: dim 1 now past ndims */
    expect_reject(w, "(in.stride[1])", "past ndims");
    /* operand reserved bytes */
    for (int off = 5; off < 8; off++) {
        memcpy(w, b, sizeof w); w[OPERAND(0) + off] = 2;
        snprintf(needle, sizeof needle, "byte %d (dst.reserved)", OPERAND(0) + off);
        expect_reject(w, needle, NULL);
    }
    for (int off = 12; off < 16; off++) {
        memcpy(w, b, sizeof w); w[OPERAND(1) + off] = 2;
        snprintf(needle, sizeof needle, "byte %d (in.reserved)", OPERAND(1) + off);
        expect_reject(w, needle, NULL);
    }
}

static void test_reject_memory_operands(void **state) {
    (void)state;
    uint8_t w[NX_INSN_WORD_BYTES], b[NX_INSN_WORD_BYTES];
    char needle[64];
    base_word(b); /* dst: start 32, count 64 */
    memcpy(w, b, sizeof w); w[OPERAND(0) + 4] = 0;
    snprintf(needle, sizeof needle, "byte %d (dst.partition_count)", OPERAND(0) + 4);
    expect_reject(w, needle, "1..128");
    memcpy(w, b, sizeof w); w[OPERAND(0) + 3] = 0; w[OPERAND(0) + 4] = 129;
    expect_reject(w, "(dst.partition_count)", "1..128");
    memcpy(w, b, sizeof w); w[OPERAND(0) + 3] = 65; /* 65 + 64 > 128 */
    snprintf(needle, sizeof needle, "byte %d (dst.start_partition)", OPERAND(0) + 3);
    expect_reject(w, needle, "past partition 128");
    memcpy(w, b, sizeof w); w[OPERAND(0) + 3] = 64; /* 64 + 64 == 128: fine */
    nx_insn out;
    nx_error err;
    assert_int_equal(nx_insn_decode(w, &out, &err), 0);
    /* SBUF/PSUM: partition_stride must be 0 */
    memcpy(w, b, sizeof w); w[OPERAND(1) + 9] = 1;
    snprintf(needle, sizeof needle, "byte %d (in.partition_stride)", OPERAND(1) + 8);
    expect_reject(w, needle, "SBUF/PSUM");

    /* HBM: start_partition must be 0 */
    nx_insn dma = plain(NX_OP_DMA_COPY);
    dma.op[1] = (nx_operand){.kind = NX_OPK_HBM, .dtype = NX_DT_FP32, .partition_count = 128,
                             .partition_stride = 64};
    word_of(&dma, b);
    memcpy(w, b, sizeof w); w[OPERAND(1) + 3] = 1;
    snprintf(needle, sizeof needle, "byte %d (src.start_partition)", OPERAND(1) + 3);
    expect_reject(w, needle, "HBM");
}

static void test_reject_immediates(void **state) {
    (void)state;
    uint8_t w[NX_INSN_WORD_BYTES], b[NX_INSN_WORD_BYTES];
    char needle[64];
    base_word(b); /* scalar0 is an immediate */
    const struct { int off; const char *field; } nonzero[] = {
        {2, "ndims"}, {3, "start_partition"}, {4, "partition_count"},
        {8, "partition_stride"}, {11, "partition_stride"}, {24, "stride[0]"},
        {39, "stride[3]"}, {40, "count[0]"}, {52, "count[3]"},
    };
    for (size_t i = 0; i < sizeof nonzero / sizeof nonzero[0]; i++) {
        memcpy(w, b, sizeof w); w[OPERAND(2) + nonzero[i].off] = 1;
        snprintf(needle, sizeof needle, "byte %d (scalar0.%s)", OPERAND(2) + nonzero[i].off,
                 nonzero[i].field);
        expect_reject(w, needle, "immediate");
    }
    const uint64_t bad_nans[] = {0x7ff0000000000001ull, 0x7ff8000000000001ull, 0xfffc000000000000ull,
                                 0x7fffffffffffffffull};
    for (size_t i = 0; i < sizeof bad_nans / sizeof bad_nans[0]; i++) {
        memcpy(w, b, sizeof w); test_le_put(w + OPERAND(2) + 16, bad_nans[i], 8);
        snprintf(needle, sizeof needle, "byte %d (scalar0.value)", OPERAND(2) + 16);
        expect_reject(w, needle, "not canonical");
    }
    /* a value that is not one of its dtype's: the assembler never writes
     * it, so the decoder refuses it (asm would reject disasm's text) */
    const struct { uint8_t dtype; double v; } not_of_dtype[] = {
        {NX_DT_INT32, 1.5}, {NX_DT_INT32, 1e300}, {NX_DT_INT32, -0.0}, {NX_DT_INT32, INFINITY},
        {NX_DT_INT8, 128.0}, {NX_DT_INT8, NAN}, {NX_DT_UINT16, -1.0}, {NX_DT_FP32, 0.1},
        {NX_DT_BF16, 1.0 + 1.0 / 512}, {NX_DT_FP8_E4M3, 1000.0}, {NX_DT_FP16, 1e6},
    };
    for (size_t i = 0; i < sizeof not_of_dtype / sizeof not_of_dtype[0]; i++) {
        memcpy(w, b, sizeof w);
        w[OPERAND(2) + 1] = not_of_dtype[i].dtype;
        double v = not_of_dtype[i].v;
        uint64_t bits;
        memcpy(&bits, &v, sizeof bits);
        if (isnan(v)) bits = 0x7ff8000000000000ull;
        test_le_put(w + OPERAND(2) + 16, bits, 8);
        snprintf(needle, sizeof needle, "byte %d (scalar0.value)", OPERAND(2) + 16);
        expect_reject(w, needle, "is not a value of");
    }
    /* and its values are accepted: 0.1 rounded to fp32, -0 as a float */
    const struct { uint8_t dtype; double v; } of_dtype[] = {
        {NX_DT_FP32, (double)0.1f}, {NX_DT_FP32, -0.0}, {NX_DT_INT32, -2147483648.0}, {NX_DT_UINT8, 255.0},
        {NX_DT_FP8_E4M3, 448.0}, {NX_DT_FP16, 65504.0}, {NX_DT_FP16, INFINITY},
    };
    for (size_t i = 0; i < sizeof of_dtype / sizeof of_dtype[0]; i++) {
        memcpy(w, b, sizeof w);
        w[OPERAND(2) + 1] = of_dtype[i].dtype;
        double v = of_dtype[i].v;
        uint64_t bits;
        memcpy(&bits, &v, sizeof bits);
        test_le_put(w + OPERAND(2) + 16, bits, 8);
        nx_insn out;
        nx_error err;
        if (nx_insn_decode(w, &out, &err) != 0) fail_msg("%g as %u: %s", v, of_dtype[i].dtype, err.msg);
        assert_int_equal(double_bits(out.op[2].imm), bits);
    }
    /* infinities and the two canonical NaNs are accepted */
    const uint64_t ok[] = {0x7ff0000000000000ull, 0xfff0000000000000ull, 0x7ff8000000000000ull,
                           0xfff8000000000000ull};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        memcpy(w, b, sizeof w); test_le_put(w + OPERAND(2) + 16, ok[i], 8);
        nx_insn out;
        nx_error err;
        assert_int_equal(nx_insn_decode(w, &out, &err), 0);
        assert_int_equal(double_bits(out.op[2].imm), ok[i]);
        assert_int_equal(out.op[2].partition_count, 1);
    }
}

static void test_reject_patterns(void **state) {
    (void)state;
    uint8_t w[NX_INSN_WORD_BYTES], b[NX_INSN_WORD_BYTES];
    char needle[64];
    nx_insn iota = plain(NX_OP_IOTA);
    iota.op[1].ndims = 1;
    iota.op[1].stride[0] = 1;
    iota.op[1].count[0] = 8;
    iota.op[1].partition_stride = -3;
    word_of(&iota, b);
    memcpy(w, b, sizeof w); w[OPERAND(1) + 3] = 1;
    snprintf(needle, sizeof needle, "byte %d (pattern.start_partition)", OPERAND(1) + 3);
    expect_reject(w, needle, "pattern");
    memcpy(w, b, sizeof w); w[OPERAND(1) + 4] = 0;
    expect_reject(w, "(pattern.partition_count)", "1..128");
    memcpy(w, b, sizeof w); w[OPERAND(1) + 4] = 200;
    expect_reject(w, "(pattern.partition_count)", "1..128");
    for (int dt = 0; dt < NX_DT_COUNT; dt++) {
        memcpy(w, b, sizeof w); w[OPERAND(1) + 1] = (uint8_t)dt;
        nx_insn out;
        nx_error err = {{0}};
        int rc = nx_insn_decode(w, &out, &err);
        if (nx_dtype_is_float((nx_dtype)dt)) {
            assert_int_equal(rc, -1);
            snprintf(needle, sizeof needle, "byte %d (pattern.dtype)", OPERAND(1) + 1);
            assert_non_null(strstr(err.msg, needle));
            assert_non_null(strstr(err.msg, "integer"));
        } else {
            assert_int_equal(rc, 0);
        }
    }
}

/* Every single-byte change of valid words either fails with a one-line
 * message or decodes to a record that re-encodes to exactly those bytes. */
static void test_mutation_sweep(void **state) {
    (void)state;
    test_rng r = {99};
    unsigned accepted = 0, rejected = 0;
    for (unsigned opc = 0; opc < NX_OP_COUNT; opc++) {
        for (int it = 0; it < 3; it++) {
            nx_insn in = random_insn(&r, opc);
            uint8_t b[NX_INSN_WORD_BYTES];
            nx_insn_encode(&in, b);
            for (int pos = 0; pos < NX_INSN_WORD_BYTES; pos++) {
                const uint8_t vals[] = {0x00, 0xFF, (uint8_t)(b[pos] ^ 0x01), (uint8_t)(b[pos] ^ 0x80)};
                for (size_t v = 0; v < sizeof vals; v++) {
                    uint8_t w[NX_INSN_WORD_BYTES], again[NX_INSN_WORD_BYTES];
                    memcpy(w, b, sizeof w);
                    w[pos] = vals[v];
                    nx_insn out;
                    nx_error err = {{0}};
                    if (nx_insn_decode(w, &out, &err) == 0) {
                        nx_insn_encode(&out, again);
                        assert_memory_equal(w, again, NX_INSN_WORD_BYTES);
                        accepted++;
                    } else {
                        assert_true(strncmp(err.msg, "instruction word: byte ", 23) == 0);
                        assert_null(strchr(err.msg, '\n'));
                        rejected++;
                    }
                }
            }
        }
    }
    assert_true(accepted > 0 && rejected > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_bytes),
        cmocka_unit_test(test_layout_pattern_and_params),
        cmocka_unit_test(test_roundtrip_every_opcode),
        cmocka_unit_test(test_nan_canonicalised),
        cmocka_unit_test(test_unused_record_fields_not_encoded),
        cmocka_unit_test(test_reject_header_fields),
        cmocka_unit_test(test_reject_slots),
        cmocka_unit_test(test_reject_memory_operands),
        cmocka_unit_test(test_reject_immediates),
        cmocka_unit_test(test_reject_patterns),
        cmocka_unit_test(test_mutation_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
