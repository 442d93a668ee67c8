/* The .nxb container: a 2-core program round trip with its header checked at
 * hand-computed offsets, every truncation, a byte-mutation sweep over the
 * whole file, specific bad headers and tensor tables, encoder refusals, and
 * the file helpers (atomic save, errors naming the path). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isa/encode.h"
#include "isa/opcodes.h"
#include "support.h"

/* Layout of the sample program, computed by hand from the spec:
 * header 64 + stream table 2 cores * 5 * 4 = 40 -> tensors at 104,
 * 3 tensors * 128 -> words at 488. */
#define TENSORS_AT 104
#define WORDS_AT (TENSORS_AT + 3 * 128)

static nx_tensor_decl tensor(const char *name, nx_dtype dt, nx_tensor_role role, uint64_t offset,
                             unsigned ndims, const uint64_t *shape) {
    nx_tensor_decl t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "%s", name);
    t.dtype = (uint8_t)dt;
    t.role = (uint8_t)role;
    t.ndims = (uint8_t)ndims;
    t.offset = offset;
    for (unsigned k = 0; k < ndims; k++) t.shape[k] = shape[k];
    return t;
}

static nx_insn insn_of(nx_opcode opc) {
    nx_insn in;
    memset(&in, 0, sizeof in);
    in.opcode = (uint8_t)opc;
    in.wait_sem = in.inc_sem = NX_SEM_NONE;
    return in;
}

static nx_operand tile(nx_operand_kind kind, nx_dtype dt, uint32_t start, uint32_t parts,
                       uint64_t offset, uint32_t free) {
    nx_operand op;
    memset(&op, 0, sizeof op);
    op.kind = (uint8_t)kind;
    op.dtype = (uint8_t)dt;
    op.start_partition = (uint8_t)start;
    op.partition_count = (uint8_t)parts;
    op.offset = offset;
    op.ndims = 1;
    op.stride[0] = 1;
    op.count[0] = free;
    return op;
}

/* A small 2-core program: 3 tensors, 8 instructions over 5 streams. */
static void sample_program(nx_program *p) {
    nx_error err;
    nx_program_init(p);
    snprintf(p->machine, sizeof p->machine, "trn2");
    p->cores = 2;
    p->sem_count = 3;
    p->hbm_bytes = 1 << 20;
    const uint64_t sx[] = {128, 64}, sy[] = {4, 8, 16}, ss[] = {7};
    nx_tensor_decl t[3] = {
        tensor("x", NX_DT_FP32, NX_ROLE_INPUT, 0, 2, sx),
        tensor("y.out", NX_DT_BF16, NX_ROLE_OUTPUT, 32768, 3, sy),
        tensor("_scratch1", NX_DT_INT8, NX_ROLE_SCRATCH, 40001, 1, ss),
    };
    for (int i = 0; i < 3; i++) assert_int_equal(nx_program_add_tensor(p, &t[i], &err), 0);

    nx_insn dma = insn_of(NX_OP_DMA_COPY);
    dma.op[0] = tile(NX_OPK_SBUF, NX_DT_FP32, 0, 128, 0, 64);
    dma.op[1] = tile(NX_OPK_HBM, NX_DT_FP32, 0, 128, 0, 64);
    dma.op[1].partition_stride = 64;
    dma.iparam[0] = 3;
    dma.inc_sem = 0;
    dma.inc_amount = 1;
    nx_insn act = insn_of(NX_OP_ACTIVATION);
    act.func = NX_ACT_EXP;
    act.alu0 = NX_ALU_ADD;
    act.op[0] = tile(NX_OPK_SBUF, NX_DT_FP32, 0, 128, 256, 64);
    act.op[1] = tile(NX_OPK_SBUF, NX_DT_FP32, 0, 128, 0, 64);
    act.op[2] = (nx_operand){.kind = NX_OPK_IMM, .dtype = NX_DT_FP32, .partition_count = 1, .imm = 2.0};
    act.op[3] = (nx_operand){.kind = NX_OPK_IMM, .dtype = NX_DT_FP32, .partition_count = 1, .imm = -0.0};
    act.wait_sem = 0;
    act.wait_value = 1;
    nx_insn ts = insn_of(NX_OP_TENSOR_SCALAR);
    ts.alu0 = NX_ALU_MULTIPLY;
    ts.alu1 = NX_ALU_MAX;
    ts.flags = NX_FLAG_REVERSE0;
    ts.op[0] = tile(NX_OPK_PSUM, NX_DT_FP32, 64, 64, 0, 32);
    ts.op[1] = tile(NX_OPK_SBUF, NX_DT_BF16, 0, 64, 512, 32);
    ts.op[2] = (nx_operand){.kind = NX_OPK_IMM, .dtype = NX_DT_BF16, .partition_count = 1, .imm = 0.5};
    ts.op[3] = tile(NX_OPK_SBUF, NX_DT_FP32, 0, 64, 1024, 1);
    nx_insn iota = insn_of(NX_OP_IOTA);
    iota.op[0] = tile(NX_OPK_SBUF, NX_DT_INT32, 0, 128, 4096, 16);
    iota.op[1] = (nx_operand){.kind = NX_OPK_PATTERN, .dtype = NX_DT_INT32, .partition_count = 128,
                              .partition_stride = 16, .pattern_base = -5, .ndims = 1,
                              .stride = {1}, .count = {16}};
    nx_insn end = insn_of(NX_OP_END);

    assert_int_equal(nx_program_append(p, 0, NX_ENG_SP, &dma, &err), 0);
    assert_int_equal(nx_program_append(p, 0, NX_ENG_SP, &end, &err), 0);
    assert_int_equal(nx_program_append(p, 0, NX_ENG_ACT, &act, &err), 0);
    assert_int_equal(nx_program_append(p, 0, NX_ENG_ACT, &end, &err), 0);
    assert_int_equal(nx_program_append(p, 1, NX_ENG_DVE, &ts, &err), 0);
    assert_int_equal(nx_program_append(p, 1, NX_ENG_POOL, &iota, &err), 0);
    assert_int_equal(nx_program_append(p, 1, NX_ENG_POOL, &end, &err), 0);
    assert_int_equal(nx_program_append(p, 1, NX_ENG_PE, &end, &err), 0);
}

static void assert_programs_equal(const nx_program *a, const nx_program *b) {
    assert_string_equal(a->machine, b->machine);
    assert_int_equal(a->cores, b->cores);
    assert_int_equal(a->sem_count, b->sem_count);
    assert_int_equal(a->hbm_bytes, b->hbm_bytes);
    assert_int_equal(a->tensor_count, b->tensor_count);
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        const nx_tensor_decl *x = &a->tensors[i], *y = &b->tensors[i];
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->dtype, y->dtype);
        assert_int_equal(x->role, y->role);
        assert_int_equal(x->ndims, y->ndims);
        assert_int_equal(x->offset, y->offset);
        for (int k = 0; k < NX_TENSOR_MAX_DIMS; k++) assert_int_equal(x->shape[k], y->shape[k]);
    }
    for (int c = 0; c < NX_MAX_CORES; c++)
        for (int e = 0; e < NX_ENG_COUNT; e++) {
            const nx_stream *s = &a->stream[c][e], *t = &b->stream[c][e];
            assert_int_equal(s->count, t->count);
            for (uint32_t i = 0; i < s->count; i++) {
                /* compare through the (separately tested) instruction word */
                uint8_t wa[NX_INSN_WORD_BYTES], wb[NX_INSN_WORD_BYTES];
                nx_insn xa, xb;
                nx_insn_encode(nx_program_expand(a, &s->recs[i], &xa), wa);
                nx_insn_encode(nx_program_expand(b, &t->recs[i], &xb), wb);
                assert_memory_equal(wa, wb, NX_INSN_WORD_BYTES);
                assert_int_equal(s->recs[i].opcode, t->recs[i].opcode);
            }
        }
}

/* nothing left in a program after a failed decode */
static void assert_program_empty(const nx_program *p) {
    assert_int_equal(p->tensor_count, 0);
    assert_null(p->tensors);
    for (int c = 0; c < NX_MAX_CORES; c++)
        for (int e = 0; e < NX_ENG_COUNT; e++) {
            assert_int_equal(p->stream[c][e].count, 0);
            assert_null(p->stream[c][e].recs);
        }
    assert_int_equal(p->operands.count, 0);
    assert_null(p->operands.ops);
}

static void encode_sample(uint8_t **buf, size_t *len) {
    nx_program p;
    nx_error err = {{0}};
    sample_program(&p);
    if (nx_program_encode(&p, buf, len, &err) != 0) fail_msg("encode: %s", err.msg);
    nx_program_free(&p);
}

static void test_roundtrip_and_layout(void **state) {
    (void)state;
    nx_program p, q;
    nx_error err = {{0}};
    sample_program(&p);
    uint8_t *buf;
    size_t len;
    if (nx_program_encode(&p, &buf, &len, &err) != 0) fail_msg("encode: %s", err.msg);
    assert_int_equal(len, WORDS_AT + 8 * 320);
    assert_memory_equal(buf, "NXSB", 4);
    assert_int_equal(test_le_get(buf + 4, 2), 1);
    assert_int_equal(test_le_get(buf + 6, 2), 64);
    assert_memory_equal(buf + 8, "trn2\0\0\0\0\0\0\0\0\0\0\0\0", 16);
    assert_int_equal(buf[24], 2);
    assert_int_equal(buf[25], 0);
    assert_int_equal(test_le_get(buf + 26, 2), 3);
    assert_int_equal(test_le_get(buf + 28, 4), 3);
    assert_int_equal(test_le_get(buf + 32, 8), 1 << 20);
    assert_int_equal(test_le_get(buf + 40, 4), 320);
    for (int i = 44; i < 64; i++) assert_int_equal(buf[i], 0);
    /* stream table, core-major, pe dve act pool sp */
    const uint32_t counts[10] = {0, 0, 2, 0, 2, 1, 1, 0, 2, 0};
    for (int i = 0; i < 10; i++) assert_int_equal(test_le_get(buf + 64 + 4 * i, 4), counts[i]);
    /* tensor 1 */
    const uint8_t *t1 = buf + TENSORS_AT + 128;
    assert_string_equal((const char *)t1, "y.out");
    for (int i = 5; i < 64; i++) assert_int_equal(t1[i], 0);
    assert_int_equal(t1[64], NX_DT_BF16);
    assert_int_equal(t1[65], NX_ROLE_OUTPUT);
    assert_int_equal(t1[66], 3);
    assert_int_equal(test_le_get(t1 + 72, 8), 32768);
    assert_int_equal(test_le_get(t1 + 80, 8), 4);
    assert_int_equal(test_le_get(t1 + 88, 8), 8);
    assert_int_equal(test_le_get(t1 + 96, 8), 16);
    assert_int_equal(test_le_get(t1 + 104, 8), 0);
    /* first word: core 0 act (pe, dve empty) = activation; then core 0 sp = dma_copy */
    assert_int_equal(buf[WORDS_AT], NX_OP_ACTIVATION);
    assert_int_equal(buf[WORDS_AT + 2 * 320], NX_OP_DMA_COPY);
    assert_int_equal(buf[WORDS_AT + 4 * 320], NX_OP_END);             /* core 1 pe */
    assert_int_equal(buf[WORDS_AT + 5 * 320], NX_OP_TENSOR_SCALAR); /* core 1 dve */

    if (nx_program_decode(buf, len, &q, &err) != 0) fail_msg("decode: %s", err.msg);
    assert_programs_equal(&p, &q);
    uint8_t *again;
    size_t len2;
    assert_int_equal(nx_program_encode(&q, &again, &len2, &err), 0);
    assert_int_equal(len2, len);
    assert_memory_equal(buf, again, len);
    free(again);
    free(buf);
    nx_program_free(&p);
    nx_program_free(&q);
}

static void test_empty_program(void **state) {
    (void)state;
    nx_program p, q;
    nx_error err;
    nx_program_init(&p);
    snprintf(p.machine, sizeof p.machine, "my-box_2.0");
    p.cores = 1;
    p.hbm_bytes = 0;
    uint8_t *buf;
    size_t len;
    assert_int_equal(nx_program_encode(&p, &buf, &len, &err), 0);
    assert_int_equal(len, 64 + 20);
    assert_int_equal(nx_program_decode(buf, len, &q, &err), 0);
    assert_string_equal(q.machine, "my-box_2.0");
    assert_int_equal(q.cores, 1);
    free(buf);
    nx_program_free(&p);
    nx_program_free(&q);
}

static void test_every_truncation_fails(void **state) {
    (void)state;
    uint8_t *buf;
    size_t len;
    encode_sample(&buf, &len);
    for (size_t n = 0; n < len; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exact-size copy: ASan sees any over-read */
        memcpy(copy, buf, n);
        nx_program q;
        nx_error err = {{0}};
        assert_int_equal(nx_program_decode(copy, n, &q, &err), -1);
        if (strstr(err.msg, "truncated") == NULL) fail_msg("length %zu: %s", n, err.msg);
        assert_program_empty(&q);
        free(copy);
    }
    free(buf);
}

/* Every byte set to 0x00, 0xff, x^0x01, x^0x80: decode either fails with a
 * one-line "nxb: ..." message or succeeds and re-encodes to the same bytes. */
static void test_mutation_sweep(void **state) {
    (void)state;
    uint8_t *buf;
    size_t len;
    encode_sample(&buf, &len);
    uint8_t *w = malloc(len);
    unsigned accepted = 0, rejected = 0;
    for (size_t pos = 0; pos < len; pos++) {
        const uint8_t vals[] = {0x00, 0xFF, (uint8_t)(buf[pos] ^ 0x01), (uint8_t)(buf[pos] ^ 0x80)};
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(w, buf, len);
            w[pos] = vals[v];
            nx_program q;
            nx_error err = {{0}};
            if (nx_program_decode(w, len, &q, &err) == 0) {
                uint8_t *again;
                size_t len2;
                if (nx_program_encode(&q, &again, &len2, &err) != 0)
                    fail_msg("byte %zu = 0x%02x: decoded but does not re-encode: %s", pos, vals[v], err.msg);
                assert_int_equal(len2, len);
                assert_memory_equal(w, again, len);
                free(again);
                nx_program_free(&q);
                accepted++;
            } else {
                if (strncmp(err.msg, "nxb: ", 5) != 0 || strchr(err.msg, '\n') != NULL)
                    fail_msg("byte %zu = 0x%02x: bad message '%s'", pos, vals[v], err.msg);
                assert_program_empty(&q);
                rejected++;
            }
        }
    }
    assert_true(accepted > 0 && rejected > 0);
    free(w);
    free(buf);
}

/* Random multi-byte corruption (1..8 bytes, biased to the header and tables
 * where the length arithmetic lives): same contract as the sweep above. */
static void test_random_corruption(void **state) {
    (void)state;
    uint8_t *buf;
    size_t len;
    encode_sample(&buf, &len);
    uint8_t *w = malloc(len);
    test_rng r = {2024};
    for (int it = 0; it < 4000; it++) {
        memcpy(w, buf, len);
        int n = 1 + (int)(test_rng_next(&r) % 8);
        for (int k = 0; k < n; k++) {
            size_t limit = (test_rng_next(&r) & 1) ? (size_t)WORDS_AT : len;
            w[test_rng_next(&r) % limit] = (uint8_t)test_rng_next(&r);
        }
        size_t cut = (test_rng_next(&r) % 4 == 0) ? (size_t)(test_rng_next(&r) % (len + 1)) : len;
        nx_program q;
        nx_error err = {{0}};
        if (nx_program_decode(w, cut, &q, &err) == 0) {
            uint8_t *again;
            size_t len2;
            if (nx_program_encode(&q, &again, &len2, &err) != 0) fail_msg("iteration %d: %s", it, err.msg);
            assert_int_equal(len2, cut);
            assert_memory_equal(w, again, cut);
            free(again);
            nx_program_free(&q);
        } else {
            if (strncmp(err.msg, "nxb: ", 5) != 0) fail_msg("iteration %d: '%s'", it, err.msg);
            assert_program_empty(&q);
        }
    }
    free(w);
    free(buf);
}

static void expect_decode_error(const uint8_t *buf, size_t len, const char *needle1,
                                const char *needle2) {
    nx_program q;
    nx_error err = {{0}};
    if (nx_program_decode(buf, len, &q, &err) == 0) fail_msg("accepted; expected '%s'", needle1);
    if (strstr(err.msg, needle1) == NULL || (needle2 && strstr(err.msg, needle2) == NULL))
        fail_msg("message '%s' lacks '%s' / '%s'", err.msg, needle1, needle2 ? needle2 : "");
    assert_program_empty(&q);
}

static void test_bad_headers(void **state) {
    (void)state;
    uint8_t *buf;
    size_t len;
    encode_sample(&buf, &len);
    uint8_t *w = malloc(len);
#define FRESH() memcpy(w, buf, len)
    FRESH(); w[3] = 'C';
    expect_decode_error(w, len, "byte 0 (magic)", NULL);
    FRESH(); test_le_put(w + 4, 2, 2);
    expect_decode_error(w, len, "byte 4 (version)", "2");
    FRESH(); test_le_put(w + 6, 128, 2);
    expect_decode_error(w, len, "byte 6 (header_bytes)", NULL);
    FRESH(); w[24] = 3;
    expect_decode_error(w, len, "byte 24 (cores)", "3");
    FRESH(); w[24] = 0;
    expect_decode_error(w, len, "byte 24 (cores)", NULL);
    FRESH(); w[25] = 1;
    expect_decode_error(w, len, "byte 25 (reserved)", NULL);
    FRESH(); test_le_put(w + 26, 256, 2);
    expect_decode_error(w, len, "byte 26 (sem_count)", NULL);
    FRESH(); test_le_put(w + 28, 4097, 4);
    expect_decode_error(w, len, "byte 28 (tensor_count)", NULL);
    FRESH(); test_le_put(w + 40, 272, 4);
    expect_decode_error(w, len, "byte 40 (insn_word_bytes)", NULL);
    FRESH(); w[63] = 1;
    expect_decode_error(w, len, "byte 63 (reserved)", NULL);
    /* machine name: empty, bad character, no NUL, garbage after the NUL */
    FRESH(); memset(w + 8, 0, 16);
    expect_decode_error(w, len, "byte 8 (machine)", "empty");
    FRESH(); w[9] = ' ';
    expect_decode_error(w, len, "byte 9 (machine)", NULL);
    FRESH(); memset(w + 8, 'a', 16);
    expect_decode_error(w, len, "(machine)", "NUL");
    FRESH(); w[20] = 'x';
    expect_decode_error(w, len, "byte 20 (machine padding)", NULL);
    /* instruction counts claiming more than the file holds */
    FRESH(); test_le_put(w + 64, 0xFFFFFFFFu, 4);
    expect_decode_error(w, len, "truncated", NULL);
    FRESH(); test_le_put(w + 28, 4096, 4);
    expect_decode_error(w, len, "truncated", NULL);
    /* and fewer: the rest is trailing garbage */
    FRESH(); test_le_put(w + 64 + 4 * 2, 1, 4);
    expect_decode_error(w, len, "trailing", NULL);
    expect_decode_error(buf, len - 320, "truncated", NULL);
    free(w);
    free(buf);
#undef FRESH
}

/* A 100-byte file whose header claims 2^32-1 instructions in every stream
 * must fail on the length check, before allocating anything. */
static void test_huge_counts_fail_fast(void **state) {
    (void)state;
    uint8_t w[100];
    memset(w, 0, sizeof w);
    memcpy(w, "NXSB", 4);
    test_le_put(w + 4, 1, 2);
    test_le_put(w + 6, 64, 2);
    memcpy(w + 8, "trn2", 4);
    w[24] = 2;
    test_le_put(w + 28, 4096, 4);
    test_le_put(w + 32, UINT64_MAX, 8);
    test_le_put(w + 40, 320, 4);
    for (int i = 0; i < 9; i++) test_le_put(w + 64 + 4 * i, 0xFFFFFFFFu, 4); /* 10th is past the end */
    expect_decode_error(w, sizeof w, "truncated", "stream table");
    uint8_t big[104];
    memset(big, 0, sizeof big);
    memcpy(big, w, sizeof w);
    for (int i = 0; i < 10; i++) test_le_put(big + 64 + 4 * i, 0xFFFFFFFFu, 4);
    expect_decode_error(big, sizeof big, "truncated", "42949672950 instructions");
}

static void test_bad_tensor_table(void **state) {
    (void)state;
    uint8_t *buf;
    size_t len;
    encode_sample(&buf, &len);
    uint8_t *w = malloc(len);
    const int t0 = TENSORS_AT, t1 = TENSORS_AT + 128, t2 = TENSORS_AT + 256;
    char needle[64];
#define FRESH() memcpy(w, buf, len)
    /* duplicate name: tensor 2 renamed to "x" */
    FRESH(); memset(w + t2, 0, 64); w[t2] = 'x';
    snprintf(needle, sizeof needle, "byte %d (tensor 2 name)", t2);
    expect_decode_error(w, len, needle, "already the name of tensor 0");
    /* overlap: y.out (bf16 4*8*16*2 = 1024 bytes at 32768) moved into x */
    FRESH(); test_le_put(w + t1 + 72, 30000, 8);
    expect_decode_error(w, len, "overlap", NULL);
    FRESH(); test_le_put(w + t1 + 72, 32766, 8); /* x is [0, 32768): overlap by 2 bytes */
    snprintf(needle, sizeof needle, "byte %d (tensor 'y.out' offset)", t1 + 72);
    expect_decode_error(w, len, needle, "overlap tensor 'x' bytes [0, 32768)");
    /* the message names the later entry even when it sorts first by offset */
    FRESH(); test_le_put(w + t2 + 72, 32767, 8); /* _scratch1 [32767, 32774) inside x and y.out */
    expect_decode_error(w, len, "(tensor '_scratch1' offset)", "overlap");
    /* adjacent (end == start) is fine: _scratch1 right after y.out */
    FRESH(); test_le_put(w + t2 + 72, 32768 + 1024, 8);
    {
        nx_program q;
        nx_error err;
        assert_int_equal(nx_program_decode(w, len, &q, &err), 0);
        nx_program_free(&q);
    }
    /* bad names */
    FRESH(); w[t0] = '1';
    snprintf(needle, sizeof needle, "byte %d (tensor 0 name)", t0);
    expect_decode_error(w, len, needle, NULL);
    FRESH(); w[t1 + 1] = '-';
    expect_decode_error(w, len, "(tensor 1 name)", NULL);
    FRESH(); w[t0] = 0;
    expect_decode_error(w, len, "(tensor 0 name)", "empty");
    FRESH(); memset(w + t0, 'a', 64);
    expect_decode_error(w, len, "(tensor 0 name)", "NUL");
    FRESH(); w[t0 + 40] = 'z';
    snprintf(needle, sizeof needle, "byte %d (tensor 0 name padding)", t0 + 40);
    expect_decode_error(w, len, needle, NULL);
    /* fields */
    FRESH(); w[t0 + 64] = NX_DT_COUNT;
    snprintf(needle, sizeof needle, "byte %d (tensor 'x' dtype)", t0 + 64);
    expect_decode_error(w, len, needle, NULL);
    FRESH(); w[t0 + 65] = NX_ROLE_COUNT;
    expect_decode_error(w, len, "(tensor 'x' role)", NULL);
    FRESH(); w[t0 + 66] = 0;
    expect_decode_error(w, len, "(tensor 'x' ndims)", NULL);
    FRESH(); w[t0 + 66] = 7;
    expect_decode_error(w, len, "(tensor 'x' ndims)", NULL);
    FRESH(); w[t0 + 66] = 1; /* shape[1] = 64 now past ndims */
    snprintf(needle, sizeof needle, "byte %d (tensor 'x' shape[1])", t0 + 88);
    expect_decode_error(w, len, needle, "past ndims");
    FRESH(); test_le_put(w + t0 + 80, 0, 8);
    expect_decode_error(w, len, "(tensor 'x' shape[0])", ">= 1");
    FRESH(); w[t0 + 70] = 1;
    snprintf(needle, sizeof needle, "byte %d (tensor 0 reserved)", t0 + 70);
    expect_decode_error(w, len, needle, NULL);
    FRESH(); test_le_put(w + t1 + 72, 32769, 8); /* bf16 needs 2-byte alignment */
    expect_decode_error(w, len, "(tensor 'y.out' offset)", "multiple");
    FRESH(); test_le_put(w + t1 + 72, (1 << 20) - 1022, 8); /* 1024 bytes end 2 past hbm_bytes */
    expect_decode_error(w, len, "(tensor 'y.out' offset)", "hbm_bytes");
    FRESH(); test_le_put(w + t1 + 72, UINT64_MAX - 1, 8); /* offset + bytes wraps */
    expect_decode_error(w, len, "(tensor 'y.out' offset)", "hbm_bytes");
    FRESH(); test_le_put(w + t1 + 80, UINT64_MAX / 2, 8); /* size overflows 64 bits */
    expect_decode_error(w, len, "(tensor 'y.out' shape[", "overflow");
    /* an instruction error names where it is */
    FRESH(); w[WORDS_AT + 5 * 320 + 1] = 30;
    snprintf(needle, sizeof needle, "nxb: byte %d (core 1 dve instruction 0)", WORDS_AT + 5 * 320);
    expect_decode_error(w, len, needle, "(alu0)");
#undef FRESH
    free(w);
    free(buf);
}

static void test_encode_refuses(void **state) {
    (void)state;
    nx_program p;
    nx_error err = {{0}};
    uint8_t *buf = (uint8_t *)&err; /* must be reset to NULL on failure */
    size_t len = 7;

    sample_program(&p);
    p.cores = 3;
    assert_int_equal(nx_program_encode(&p, &buf, &len, &err), -1);
    assert_non_null(strstr(err.msg, "(cores)"));
    assert_null(buf);
    assert_int_equal(len, 0);
    p.cores = 1; /* core 1 streams are not empty */
    assert_int_equal(nx_program_encode(&p, &buf, &len, &err), -1);
    assert_non_null(strstr(err.msg, "core 1"));
    p.cores = 2;
    p.sem_count = 256;
    assert_int_equal(nx_program_encode(&p, &buf, &len, &err), -1);
    assert_non_null(strstr(err.msg, "(sem_count)"));
    p.sem_count = 3;
    snprintf(p.machine, sizeof p.machine, "trn 2");
    assert_int_equal(nx_program_encode(&p, &buf, &len, &err), -1);
    assert_non_null(strstr(err.msg, "(machine)"));
    snprintf(p.machine, sizeof p.machine, "trn2");
    p.tensors[2].offset = 100; /* inside x */
    assert_int_equal(nx_program_encode(&p, &buf, &len, &err), -1);
    assert_non_null(strstr(err.msg, "overlap"));
    p.tensors[2].offset = 40001;
    snprintf(p.tensors[1].name, NX_TENSOR_NAME_MAX, "x");
    assert_int_equal(nx_program_encode(&p, &buf, &len, &err), -1);
    assert_non_null(strstr(err.msg, "already the name"));
    snprintf(p.tensors[1].name, NX_TENSOR_NAME_MAX, "y.out");
    p.stream[1][NX_ENG_DVE].recs[0].alu0 = NX_ALU_COUNT;
    assert_int_equal(nx_program_encode(&p, &buf, &len, &err), -1);
    assert_non_null(strstr(err.msg, "core 1 dve instruction 0"));
    assert_non_null(strstr(err.msg, "(alu0)"));
    assert_null(buf);
    nx_program_free(&p);
}

/* ---- files ---- */

static void test_files(void **state) {
    (void)state;
    char dir[] = "/tmp/nxsim_test_container.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], missing[256], garbage[256];
    snprintf(path, sizeof path, "%s/prog.nxb", dir);
    snprintf(missing, sizeof missing, "%s/no/such/dir/prog.nxb", dir);
    snprintf(garbage, sizeof garbage, "%s/garbage.nxb", dir);

    nx_program p, q;
    nx_error err = {{0}};
    sample_program(&p);
    if (nx_program_save_file(path, &p, &err) != 0) fail_msg("save: %s", err.msg);
    assert_int_equal(test_dir_entries(dir), 1); /* no temp file left */
    if (nx_program_load_file(path, &q, &err) != 0) fail_msg("load: %s", err.msg);
    assert_programs_equal(&p, &q);
    nx_program_free(&q);

    /* the file holds exactly the encoding */
    uint8_t *buf;
    size_t len;
    assert_int_equal(nx_program_encode(&p, &buf, &len, &err), 0);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t *disk = malloc(len + 1);
    assert_int_equal(fread(disk, 1, len + 1, f), len);
    fclose(f);
    assert_memory_equal(disk, buf, len);
    free(disk);

    /* saving over an existing file replaces it */
    p.sem_count = 9;
    assert_int_equal(nx_program_save_file(path, &p, &err), 0);
    assert_int_equal(nx_program_load_file(path, &q, &err), 0);
    assert_int_equal(q.sem_count, 9);
    nx_program_free(&q);
    assert_int_equal(test_dir_entries(dir), 1);

    /* a program that does not encode leaves the old file untouched */
    p.cores = 3;
    assert_int_equal(nx_program_save_file(path, &p, &err), -1);
    assert_true(strncmp(err.msg, path, strlen(path)) == 0);
    assert_int_equal(nx_program_load_file(path, &q, &err), 0);
    assert_int_equal(q.cores, 2);
    nx_program_free(&q);
    p.cores = 2;

    /* unwritable location: error names the path, nothing created */
    assert_int_equal(nx_program_save_file(missing, &p, &err), -1);
    assert_true(strncmp(err.msg, missing, strlen(missing)) == 0);
    assert_int_equal(test_dir_entries(dir), 1);

    /* rename fails (the target is a directory): the temp file is removed */
    char subdir[256];
    snprintf(subdir, sizeof subdir, "%s/sub", dir);
    assert_int_equal(mkdir(subdir, 0700), 0);
    assert_int_equal(nx_program_save_file(subdir, &p, &err), -1);
    assert_true(strncmp(err.msg, subdir, strlen(subdir)) == 0);
    assert_int_equal(test_dir_entries(dir), 2); /* prog.nxb and sub */
    assert_int_equal(test_dir_entries(subdir), 0);
    assert_int_equal(rmdir(subdir), 0);

    /* loading: missing file, and a file that does not decode */
    assert_int_equal(nx_program_load_file(missing, &q, &err), -1);
    assert_true(strncmp(err.msg, missing, strlen(missing)) == 0);
    assert_program_empty(&q);
    f = fopen(garbage, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len - 1, f), len - 1);
    fclose(f);
    assert_int_equal(nx_program_load_file(garbage, &q, &err), -1);
    char want[300];
    snprintf(want, sizeof want, "%s: nxb: truncated", garbage);
    if (strncmp(err.msg, want, strlen(want)) != 0) fail_msg("'%s' does not start with '%s'", err.msg, want);
    assert_program_empty(&q);

    free(buf);
    nx_program_free(&p);
    assert_int_equal(unlink(garbage), 0);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_and_layout),
        cmocka_unit_test(test_empty_program),
        cmocka_unit_test(test_every_truncation_fails),
        cmocka_unit_test(test_mutation_sweep),
        cmocka_unit_test(test_random_corruption),
        cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_huge_counts_fail_fast),
        cmocka_unit_test(test_bad_tensor_table),
        cmocka_unit_test(test_encode_refuses),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
