/* The .nxs assembler and disassembler (isa/asm.c, isa/disasm.c), against the
 * syntax in docs/parts/assembly.md:
 *   - the documented example assembles to hand-written field values, and its
 *     disassembly is the hand-written canonical text;
 *   - immediates convert to their dtype (expected values worked out by hand);
 *   - 300 random valid programs (every opcode, random operands within the
 *     encoder's canonical rules) survive disassemble -> assemble field by
 *     field and encode to the same bytes;
 *   - malformed inputs give the exact one-line message with line:col;
 *   - random byte mutations and truncations of valid files never crash, and
 *     whatever still assembles encodes and round-trips. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/asm.h"
#include "isa/encode.h"
#include "isa/opcodes.h"
#include "support.h"

/* ---- helpers ---- */

static uint64_t double_bits(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}
static double bits_double(uint64_t u) {
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static int assemble_str(const char *text, nx_program *p, nx_error *err) {
    return nx_assemble("t.nxs", text, strlen(text), p, err);
}

static void assemble_ok(const char *text, nx_program *p) {
    nx_error err = {{0}};
    if (assemble_str(text, p, &err) != 0) fail_msg("assemble failed: %s\n--- text ---\n%s", err.msg, text);
}

/* Disassembly as a malloc'd NUL-terminated string (via a standard tmpfile). */
static char *disassemble_str(const nx_program *p) {
    FILE *f = tmpfile();
    assert_non_null(f);
    nx_error err = {{0}};
    if (nx_disassemble(p, f, &err) != 0) fail_msg("disassemble: %s", err.msg);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

static int program_diff(const nx_program *a, const nx_program *b, char *why, size_t len) {
    if (memcmp(a->machine, b->machine, sizeof a->machine) != 0 || a->cores != b->cores ||
        a->sem_count != b->sem_count || a->hbm_bytes != b->hbm_bytes ||
        a->tensor_count != b->tensor_count) {
        snprintf(why, len, "header differs (machine %s/%s cores %u/%u sems %u/%u hbm %llu/%llu tensors %u/%u)",
                 a->machine, b->machine, a->cores, b->cores, a->sem_count, b->sem_count,
                 (unsigned long long)a->hbm_bytes, (unsigned long long)b->hbm_bytes,
                 a->tensor_count, b->tensor_count);
        return -1;
    }
    for (uint32_t i = 0; i < a->tensor_count; i++) {
        const nx_tensor_decl *x = &a->tensors[i], *y = &b->tensors[i];
        if (memcmp(x->name, y->name, sizeof x->name) != 0 || x->dtype != y->dtype ||
            x->role != y->role || x->ndims != y->ndims || x->offset != y->offset ||
            memcmp(x->shape, y->shape, sizeof x->shape) != 0) {
            snprintf(why, len, "tensor %u ('%s') differs", i, x->name);
            return -1;
        }
    }
    for (unsigned c = 0; c < NX_MAX_CORES; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
            const nx_stream *s = &a->stream[c][e], *t = &b->stream[c][e];
            if (s->count != t->count) {
                snprintf(why, len, "core %u engine %u: %u vs %u instructions", c, e, s->count, t->count);
                return -1;
            }
            for (uint32_t i = 0; i < s->count; i++) {
                char sub[450];
                nx_insn x, y;
                if (test_insn_diff(nx_program_expand(a, &s->recs[i], &x), nx_program_expand(b, &t->recs[i], &y), sub,
                              sizeof sub) != 0) {
                    snprintf(why, len, "core %u engine %u insn %u: %s", c, e, i, sub);
                    return -1;
                }
            }
        }
    return 0;
}

/* disassemble -> assemble must give p back, field by field and byte by byte. */
static void assert_round_trip(const nx_program *p) {
    char *text = disassemble_str(p);
    nx_program q;
    nx_error err = {{0}};
    if (assemble_str(text, &q, &err) != 0) fail_msg("reassembly failed: %s\n--- text ---\n%s", err.msg, text);
    char why[512];
    if (program_diff(p, &q, why, sizeof why) != 0) fail_msg("round trip: %s\n--- text ---\n%s", why, text);
    uint8_t *b1, *b2;
    size_t n1, n2;
    if (nx_program_encode(p, &b1, &n1, &err) != 0) fail_msg("encode original: %s", err.msg);
    if (nx_program_encode(&q, &b2, &n2, &err) != 0) fail_msg("encode reassembled: %s", err.msg);
    assert_int_equal(n1, n2);
    assert_memory_equal(b1, b2, n1);
    /* and the canonical text is a fixed point */
    char *text2 = disassemble_str(&q);
    assert_string_equal(text, text2);
    free(b1);
    free(b2);
    free(text);
    free(text2);
    nx_program_free(&q);
}

/* ---- the documented example ---- */

static const char example[] =
    ".machine trn2\n"
    ".cores 1\n"
    ".semaphores 1\n"
    ".tensor x input fp32 [128,64] @0\n"
    ".tensor y output fp32 [128,64] @32768\n"
    ".engine sp\n"
    "    dma_copy dst=sbuf:fp32[0:128]@0{1:64} src=hbm:fp32[128/64]@x{1:64} queue=0 bound=0 inc=sem0\n"
    ".engine act\n"
    "    activation dst=sbuf:fp32[0:128]@256{1:64} in=sbuf:fp32[0:128]@0{1:64} scale=#2:fp32 bias=#0:fp32 func=exp op0=add wait=sem0>=1 inc=sem0\n"
    ".engine sp\n"
    "    dma_copy dst=hbm:fp32[128/64]@y{1:64} src=sbuf:fp32[0:128]@256{1:64} queue=1 bound=0 wait=sem0>=2\n";

/* Its canonical form, written by hand from the spec's printing rules. */
static const char example_canonical[] =
    ".machine trn2\n"
    ".cores 1\n"
    ".semaphores 1\n"
    ".hbm 65536\n"
    ".tensor x input fp32 [128,64] @0\n"
    ".tensor y output fp32 [128,64] @32768\n"
    ".core 0\n"
    ".engine act\n"
    "    activation dst=sbuf:fp32[0:128]@256{1:64} in=sbuf:fp32[0:128]@0{1:64} scale=#2:fp32 bias=#0:fp32 op0=add func=exp wait=sem0>=1 inc=sem0\n"
    ".engine sp\n"
    "    dma_copy dst=sbuf:fp32[0:128]@0{1:64} src=hbm:fp32[128/64]@0{1:64} queue=0 bound=0 inc=sem0\n"
    "    dma_copy dst=hbm:fp32[128/64]@32768{1:64} src=sbuf:fp32[0:128]@256{1:64} queue=1 bound=0 wait=sem0>=2\n";

static void check_tile(const nx_operand *op, uint8_t kind, uint64_t offset) {
    assert_int_equal(op->kind, kind);
    assert_int_equal(op->dtype, NX_DT_FP32);
    assert_int_equal(op->ndims, 1);
    assert_int_equal(op->stride[0], 1);
    assert_int_equal(op->count[0], 64);
    for (unsigned k = 1; k < NX_MAX_FREE_DIMS; k++) {
        assert_int_equal(op->stride[k], 0);
        assert_int_equal(op->count[k], 0);
    }
    assert_int_equal(op->offset, offset);
    assert_int_equal(double_bits(op->imm), 0);
    assert_int_equal(op->pattern_base, 0);
    if (kind == NX_OPK_HBM) {
        assert_int_equal(op->start_partition, 0);
        assert_int_equal(op->partition_count, 128);
        assert_int_equal(op->partition_stride, 64);
    } else {
        assert_int_equal(op->start_partition, 0);
        assert_int_equal(op->partition_count, 128);
        assert_int_equal(op->partition_stride, 0);
    }
}

static void check_imm(const nx_operand *op, double v) {
    nx_operand want;
    memset(&want, 0, sizeof want);
    want.kind = NX_OPK_IMM;
    want.dtype = NX_DT_FP32;
    want.partition_count = 1;
    want.imm = v;
    char why[400];
    if (test_operand_diff(op, &want, why, sizeof why) != 0) fail_msg("immediate: %s", why);
}

static void test_example(void **state) {
    (void)state;
    nx_program p;
    assemble_ok(example, &p);
    assert_string_equal(p.machine, "trn2");
    assert_int_equal(p.cores, 1);
    assert_int_equal(p.sem_count, 1);
    assert_int_equal(p.hbm_bytes, 65536); /* end of y, already a multiple of 64 */
    assert_int_equal(p.tensor_count, 2);
    assert_string_equal(p.tensors[0].name, "x");
    assert_int_equal(p.tensors[0].role, NX_ROLE_INPUT);
    assert_int_equal(p.tensors[0].dtype, NX_DT_FP32);
    assert_int_equal(p.tensors[0].ndims, 2);
    assert_int_equal(p.tensors[0].shape[0], 128);
    assert_int_equal(p.tensors[0].shape[1], 64);
    assert_int_equal(p.tensors[0].offset, 0);
    assert_string_equal(p.tensors[1].name, "y");
    assert_int_equal(p.tensors[1].role, NX_ROLE_OUTPUT);
    assert_int_equal(p.tensors[1].offset, 32768);

    for (unsigned e = 0; e < NX_ENG_COUNT; e++)
        assert_int_equal(p.stream[0][e].count, e == NX_ENG_SP ? 2 : e == NX_ENG_ACT ? 1 : 0);
    for (unsigned e = 0; e < NX_ENG_COUNT; e++) assert_int_equal(p.stream[1][e].count, 0);

    nx_insn load_buf;
    const nx_insn *load = nx_program_insn(&p, 0, NX_ENG_SP, 0, &load_buf);
    assert_int_equal(load->opcode, NX_OP_DMA_COPY);
    check_tile(&load->op[0], NX_OPK_SBUF, 0);
    check_tile(&load->op[1], NX_OPK_HBM, 0);
    assert_int_equal(load->op[2].kind, NX_OPK_NONE);
    assert_int_equal(load->iparam[0], 0);
    assert_int_equal(load->iparam[1], 0);
    assert_int_equal(load->flags, 0);
    assert_int_equal(load->wait_sem, NX_SEM_NONE);
    assert_int_equal(load->wait_value, 0);
    assert_int_equal(load->inc_sem, 0);
    assert_int_equal(load->inc_amount, 1);

    nx_insn act_buf;
    const nx_insn *act = nx_program_insn(&p, 0, NX_ENG_ACT, 0, &act_buf);
    assert_int_equal(act->opcode, NX_OP_ACTIVATION);
    check_tile(&act->op[0], NX_OPK_SBUF, 256);
    check_tile(&act->op[1], NX_OPK_SBUF, 0);
    check_imm(&act->op[2], 2.0);
    check_imm(&act->op[3], 0.0);
    assert_int_equal(act->op[4].kind, NX_OPK_NONE);
    assert_int_equal(act->func, NX_ACT_EXP);
    assert_int_equal(act->alu0, NX_ALU_ADD);
    assert_int_equal(act->alu1, 0);
    assert_int_equal(act->wait_sem, 0);
    assert_int_equal(act->wait_value, 1);
    assert_int_equal(act->inc_sem, 0);
    assert_int_equal(act->inc_amount, 1);

    nx_insn store_buf;
    const nx_insn *store = nx_program_insn(&p, 0, NX_ENG_SP, 1, &store_buf);
    assert_int_equal(store->opcode, NX_OP_DMA_COPY);
    check_tile(&store->op[0], NX_OPK_HBM, 32768);
    check_tile(&store->op[1], NX_OPK_SBUF, 256);
    assert_int_equal(store->iparam[0], 1);
    assert_int_equal(store->wait_sem, 0);
    assert_int_equal(store->wait_value, 2);
    assert_int_equal(store->inc_sem, NX_SEM_NONE);
    assert_int_equal(store->inc_amount, 0);

    char *text = disassemble_str(&p);
    assert_string_equal(text, example_canonical);
    free(text);
    assert_round_trip(&p);
    nx_program_free(&p);
}

/* Defaults, comments, tensor placement, @TENSOR+BYTES, patterns, flags. */
static void test_defaults_and_forms(void **state) {
    (void)state;
    static const char text[] =
        "; a comment line\n"
        "\n"
        ".cores 2 ; two cores\n"
        ".semaphores 3\n"
        ".tensor a scratch bf16 [3] ; 6 bytes at 0\n"
        ".tensor b.c output int8 [5,2]   ; next 64-aligned: 64\n"
        ".tensor _d input fp32 [1] @1000\n"
        ".tensor e input uint16 [2]      ; after _d (1004) -> 1024\n"
        ".core 1\n"
        "\t.engine pool\n"
        "\tiota pattern=pat:int32[16](-5,3){2:4,-1:3} dst=sbuf:int32[16:32]{}\n"
        "    affine_select dst=sbuf:fp32[0:1]{} pattern=pat:uint8[1](0x10,-1){} in=sbuf:fp32[0:1]@4{} fill=#-inf op0=is_ge\n"
        ".engine sp\n"
        "    dma_copy dst=sbuf:int8[0:5]{1:2} src=hbm:int8[5/2]@b.c+4{1:2} oob_skip=1 scatter=0 offsets=sbuf:int32[0:5]@64{} acc=1 inc=sem2+7\n";
    nx_program p;
    assemble_ok(text, &p);
    assert_string_equal(p.machine, "trn2");
    assert_int_equal(p.cores, 2);
    assert_int_equal(p.sem_count, 3);
    assert_int_equal(p.tensor_count, 4);
    assert_int_equal(p.tensors[0].offset, 0);
    assert_int_equal(p.tensors[1].offset, 64);
    assert_string_equal(p.tensors[1].name, "b.c");
    assert_int_equal(p.tensors[2].offset, 1000);
    assert_int_equal(p.tensors[3].offset, 1024);
    assert_int_equal(p.hbm_bytes, 1088); /* 1028 rounded up to 64 */
    assert_int_equal(p.stream[0][NX_ENG_POOL].count, 0);
    assert_int_equal(p.stream[1][NX_ENG_POOL].count, 2);

    nx_insn iota_buf;
    const nx_insn *iota = nx_program_insn(&p, 1, NX_ENG_POOL, 0, &iota_buf);
    assert_int_equal(iota->opcode, NX_OP_IOTA);
    assert_int_equal(iota->op[0].kind, NX_OPK_SBUF);
    assert_int_equal(iota->op[0].start_partition, 16);
    assert_int_equal(iota->op[0].partition_count, 16);
    assert_int_equal(iota->op[0].ndims, 0);
    assert_int_equal(iota->op[0].offset, 0);
    const nx_operand *pat = &iota->op[1];
    assert_int_equal(pat->kind, NX_OPK_PATTERN);
    assert_int_equal(pat->dtype, NX_DT_INT32);
    assert_int_equal(pat->partition_count, 16);
    assert_int_equal(pat->pattern_base, -5);
    assert_int_equal(pat->partition_stride, 3);
    assert_int_equal(pat->ndims, 2);
    assert_int_equal(pat->stride[0], 2);
    assert_int_equal(pat->count[0], 4);
    assert_int_equal(pat->stride[1], -1);
    assert_int_equal(pat->count[1], 3);

    nx_insn sel_buf;
    const nx_insn *sel = nx_program_insn(&p, 1, NX_ENG_POOL, 1, &sel_buf);
    assert_int_equal(sel->op[1].pattern_base, 16);
    assert_int_equal(sel->op[1].partition_stride, -1);
    assert_int_equal(sel->op[2].offset, 4);
    assert_true(isinf(sel->op[3].imm) && sel->op[3].imm < 0);
    assert_int_equal(sel->alu0, NX_ALU_IS_GE);

    nx_insn dma_buf;
    const nx_insn *dma = nx_program_insn(&p, 1, NX_ENG_SP, 0, &dma_buf);
    assert_int_equal(dma->op[1].offset, 68);
    assert_int_equal(dma->op[1].partition_stride, 2);
    assert_int_equal(dma->op[2].kind, NX_OPK_SBUF);
    assert_int_equal(dma->flags, NX_FLAG_ACCUMULATE | NX_FLAG_OOB_SKIP);
    assert_int_equal(dma->inc_sem, 2);
    assert_int_equal(dma->inc_amount, 7);
    assert_int_equal(dma->wait_sem, NX_SEM_NONE);
    assert_round_trip(&p);
    nx_program_free(&p);
}

/* ---- immediates ---- */

static nx_operand imm_of(const char *literal) {
    char text[256];
    snprintf(text, sizeof text, ".engine dve\nmemset dst=sbuf:fp32[0:1]{} value=%s\n", literal);
    nx_program p;
    assemble_ok(text, &p);
    nx_insn insn;
    nx_operand op = nx_program_insn(&p, 0, NX_ENG_DVE, 0, &insn)->op[1];
    nx_program_free(&p);
    assert_int_equal(op.kind, NX_OPK_IMM);
    return op;
}

static void expect_imm(const char *literal, uint8_t dtype, double value) {
    nx_operand op = imm_of(literal);
    assert_int_equal(op.dtype, dtype);
    if (double_bits(op.imm) != double_bits(value))
        fail_msg("%s: got %.17g (%016llx), want %.17g (%016llx)", literal, op.imm,
                 (unsigned long long)double_bits(op.imm), value,
                 (unsigned long long)double_bits(value));
}

static void test_immediates(void **state) {
    (void)state;
    expect_imm("#1.5", NX_DT_FP32, 1.5);
    /* 1.1 = 1.000110011001100...b: fp32 keeps 23 bits (exact value below),
     * bf16 keeps 7: 1.0001100|11.. rounds up to 1.0001101b = 1 + 13/128. */
    expect_imm("#1.1", NX_DT_FP32, 1.10000002384185791015625);
    expect_imm("#1.1:fp32", NX_DT_FP32, 1.10000002384185791015625);
    expect_imm("#1.1:bf16", NX_DT_BF16, 1.1015625);
    expect_imm("#-3:int32", NX_DT_INT32, -3.0);
    expect_imm("#0x10:uint32", NX_DT_UINT32, 16.0);
    expect_imm("#0xffffffff:uint32", NX_DT_UINT32, 4294967295.0);
    expect_imm("#-2147483648:int32", NX_DT_INT32, -2147483648.0);
    expect_imm("#-128:int8", NX_DT_INT8, -128.0);
    expect_imm("#255:uint8", NX_DT_UINT8, 255.0);
    expect_imm("#1e3:int16", NX_DT_INT16, 1000.0);
    expect_imm("#2.0:uint16", NX_DT_UINT16, 2.0);
    expect_imm("#-0:int32", NX_DT_INT32, 0.0);  /* +0: the int store has no -0 */
    expect_imm("#-0", NX_DT_FP32, -0.0);        /* floats keep the sign of zero */
    expect_imm("#500:fp8_e4m3", NX_DT_FP8_E4M3, 448.0); /* e4m3 saturates at 448 */
    expect_imm("#1e40", NX_DT_FP32, INFINITY);         /* fp32 overflow -> inf */
    expect_imm("#-1e40:bf16", NX_DT_BF16, -INFINITY);
    expect_imm("#65520:fp16", NX_DT_FP16, INFINITY);   /* tie 65504|65536 -> even -> overflow */
    expect_imm("#65519:fp16", NX_DT_FP16, 65504.0);
    expect_imm("#1e-45", NX_DT_FP32, ldexp(1.0, -149)); /* nearest subnormal */
    expect_imm("#1e-46", NX_DT_FP32, 0.0);
    expect_imm("#.5:fp8_e5m2", NX_DT_FP8_E5M2, 0.5);
    expect_imm("#inf:fp16", NX_DT_FP16, INFINITY);
    expect_imm("#-inf", NX_DT_FP32, -INFINITY);
    /* NaN is stored as the canonical quiet NaN of its sign. */
    expect_imm("#nan", NX_DT_FP32, bits_double(0x7ff8000000000000ull));
    expect_imm("#nan:bf16", NX_DT_BF16, bits_double(0x7ff8000000000000ull));
    expect_imm("#-nan:fp8_e4m3", NX_DT_FP8_E4M3, bits_double(0xfff8000000000000ull));
}

/* ---- formatting ---- */

static void test_format(void **state) {
    (void)state;
    char buf[128];
    nx_operand op;
    memset(&op, 0, sizeof op);
    op.kind = NX_OPK_PSUM;
    op.dtype = NX_DT_BF16;
    op.start_partition = 32;
    op.partition_count = 64;
    op.offset = 2048;
    op.ndims = 2;
    op.stride[0] = -512;
    op.count[0] = 4;
    op.stride[1] = 1;
    op.count[1] = 128;
    assert_int_equal(nx_format_operand(buf, sizeof buf, &op), strlen("psum:bf16[32:96]@2048{-512:4,1:128}"));
    assert_string_equal(buf, "psum:bf16[32:96]@2048{-512:4,1:128}");
    /* truncation: snprintf semantics */
    char small[8];
    assert_int_equal(nx_format_operand(small, sizeof small, &op), 35);
    assert_string_equal(small, "psum:bf");

    memset(&op, 0, sizeof op);
    op.kind = NX_OPK_IMM;
    op.dtype = NX_DT_FP32;
    op.partition_count = 1;
    op.imm = 0.1f;
    nx_format_operand(buf, sizeof buf, &op);
    assert_string_equal(buf, "#0.10000000149011612:fp32");
    op.imm = -NAN;
    nx_format_operand(buf, sizeof buf, &op);
    assert_string_equal(buf, "#-nan:fp32");
    op.imm = 1e300;
    op.dtype = NX_DT_UINT8; /* not canonical, but printed faithfully */
    nx_format_operand(buf, sizeof buf, &op);
    assert_string_equal(buf, "#1.0000000000000001e+300:uint8");

    memset(&op, 0, sizeof op);
    op.kind = NX_OPK_PATTERN;
    op.dtype = NX_DT_INT16;
    op.partition_count = 128;
    op.pattern_base = INT64_MIN;
    op.partition_stride = -7;
    nx_format_operand(buf, sizeof buf, &op);
    assert_string_equal(buf, "pat:int16[128](-9223372036854775808,-7){}");

    nx_insn insn;
    memset(&insn, 0, sizeof insn);
    insn.opcode = NX_OP_TENSOR_SCALAR;
    insn.wait_sem = NX_SEM_NONE;
    insn.inc_sem = 4;
    insn.inc_amount = 2;
    insn.alu1 = NX_ALU_SHIFT_RIGHT;
    insn.flags = NX_FLAG_REVERSE1;
    insn.op[0] = (nx_operand){.kind = NX_OPK_SBUF, .dtype = NX_DT_FP32, .partition_count = 1};
    insn.op[1] = insn.op[0];
    insn.op[2] = (nx_operand){.kind = NX_OPK_IMM, .dtype = NX_DT_INT8, .partition_count = 1, .imm = -1};
    char line[256];
    nx_format_insn(line, sizeof line, &insn);
    assert_string_equal(line, "tensor_scalar dst=sbuf:fp32[0:1]@0{} in=sbuf:fp32[0:1]@0{} "
                              "scalar0=#-1:int8 op0=bypass op1=shift_right rev1=1 inc=sem4+2");
}

/* ---- random valid programs ---- */

static uint64_t rnd(test_rng *r, uint64_t n) { return n ? test_rng_next(r) % n : 0; }

/* An integer from a mix of edge values and random bits, in [lo, hi]. */
static int64_t rnd_i64(test_rng *r, int64_t lo, int64_t hi) {
    switch (rnd(r, 6)) {
    case 0: return lo;
    case 1: return hi;
    case 2: return lo <= 0 && hi >= 0 ? 0 : lo;
    case 3: return lo <= 1 && hi >= 1 ? 1 : hi;
    default: {
        uint64_t span = (uint64_t)hi - (uint64_t)lo;
        uint64_t v = rnd(r, 2) ? test_rng_next(r) : rnd(r, 1000);
        if (span != UINT64_MAX) v %= span + 1;
        return (int64_t)((uint64_t)lo + v);
    }
    }
}
static uint64_t rnd_u64(test_rng *r, uint64_t lo, uint64_t hi) {
    switch (rnd(r, 5)) {
    case 0: return lo;
    case 1: return hi;
    default: {
        uint64_t span = hi - lo;
        uint64_t v = rnd(r, 2) ? test_rng_next(r) : rnd(r, 5000);
        if (span != UINT64_MAX) v %= span + 1;
        return lo + v;
    }
    }
}

static const char name_first[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_";
static const char name_rest[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789.";

/* A value of dtype dt that the assembler can produce: a fixed point of the
 * dtype's store/load (floats), or an in-range integer. */
static double rnd_imm(test_rng *r, nx_dtype dt) {
    if (!nx_dtype_is_float(dt)) {
        int bits = 8 * (int)nx_dtype_size(dt);
        int64_t lo = nx_dtype_is_signed_int(dt) ? -((int64_t)1 << (bits - 1)) : 0;
        int64_t hi = nx_dtype_is_signed_int(dt) ? ((int64_t)1 << (bits - 1)) - 1
                                                : (int64_t)(((uint64_t)1 << bits) - 1);
        return (double)rnd_i64(r, lo, hi);
    }
    double v;
    switch (rnd(r, 8)) {
    case 0: v = bits_double(rnd(r, 2) ? 0x7ff8000000000000ull : 0xfff8000000000000ull); return v;
    case 1: v = rnd(r, 2) ? INFINITY : -INFINITY; break;
    case 2: v = rnd(r, 2) ? 0.0 : -0.0; break;
    case 3: v = (double)rnd_i64(r, -100000, 100000) / 8.0; break;
    case 4: v = ldexp((double)rnd_i64(r, -1000, 1000), -(int)rnd(r, 160)); break; /* subnormals */
    default:
        do v = bits_double(test_rng_next(r)); while (isnan(v));
    }
    unsigned char b[8];
    nx_dtype_store(dt, b, v);
    return nx_dtype_load(dt, b);
}

static void rnd_dims(test_rng *r, nx_operand *op) {
    op->ndims = (uint8_t)rnd(r, NX_MAX_FREE_DIMS + 1);
    for (unsigned k = 0; k < op->ndims; k++) {
        op->stride[k] = (int32_t)rnd_i64(r, INT32_MIN, INT32_MAX);
        op->count[k] = (uint32_t)rnd_u64(r, 1, UINT32_MAX);
    }
}

static void rnd_operand(test_rng *r, nx_operand *op, unsigned kind) {
    memset(op, 0, sizeof *op);
    op->kind = (uint8_t)kind;
    if (kind == NX_OPK_NONE) return;
    op->dtype = (uint8_t)rnd(r, NX_DT_COUNT);
    switch (kind) {
    case NX_OPK_IMM:
        op->partition_count = 1;
        op->imm = rnd_imm(r, (nx_dtype)op->dtype);
        return;
    case NX_OPK_PATTERN:
        op->dtype = (uint8_t)(NX_DT_INT8 + rnd(r, NX_DT_COUNT - NX_DT_INT8));
        op->partition_count = (uint8_t)rnd_u64(r, 1, 128);
        op->pattern_base = rnd_i64(r, INT64_MIN, INT64_MAX);
        op->partition_stride = (int32_t)rnd_i64(r, INT32_MIN, INT32_MAX);
        rnd_dims(r, op);
        return;
    case NX_OPK_HBM:
        op->partition_count = (uint8_t)rnd_u64(r, 1, 128);
        op->partition_stride = (int32_t)rnd_i64(r, INT32_MIN, INT32_MAX);
        op->offset = rnd_u64(r, 0, UINT64_MAX);
        rnd_dims(r, op);
        return;
    default: /* SBUF, PSUM */
        op->start_partition = (uint8_t)rnd(r, 128);
        op->partition_count = (uint8_t)rnd_u64(r, 1, 128u - op->start_partition);
        op->offset = rnd_u64(r, 0, UINT64_MAX);
        rnd_dims(r, op);
        return;
    }
}

static void rnd_insn(test_rng *r, uint32_t sem_count, nx_insn *insn) {
    memset(insn, 0, sizeof *insn);
    insn->opcode = (uint8_t)rnd(r, NX_OP_COUNT);
    const nx_opcode_info *row = nx_opcode_lookup(insn->opcode);
    if (row->params & NX_PARAM_ALU0) insn->alu0 = (uint8_t)rnd(r, NX_ALU_COUNT);
    if (row->params & NX_PARAM_ALU1) insn->alu1 = (uint8_t)rnd(r, NX_ALU_COUNT);
    if (row->params & NX_PARAM_FUNC) insn->func = (uint8_t)rnd(r, NX_ACT_COUNT);
    insn->flags = (uint16_t)(test_rng_next(r) & row->flags);
    for (unsigned i = 0; i < 2; i++)
        if (row->iparam_name[i]) insn->iparam[i] = (int32_t)rnd_i64(r, INT32_MIN, INT32_MAX);
    insn->wait_sem = insn->inc_sem = NX_SEM_NONE;
    if (sem_count > 0 && rnd(r, 2)) {
        insn->wait_sem = (uint8_t)rnd(r, sem_count);
        insn->wait_value = (uint32_t)rnd_u64(r, 0, UINT32_MAX);
    }
    if (sem_count > 0 && rnd(r, 2)) {
        insn->inc_sem = (uint8_t)rnd(r, sem_count);
        insn->inc_amount = rnd(r, 2) ? 1 : (uint32_t)rnd_u64(r, 1, UINT32_MAX);
    }
    for (unsigned i = 0; i < NX_MAX_OPERANDS; i++) {
        const nx_slot_spec *slot = &row->slot[i];
        if (slot->name == NULL) continue;
        unsigned kinds[NX_OPK_COUNT], n = 0;
        for (unsigned k = 0; k < NX_OPK_COUNT; k++)
            if ((NX_KIND_BIT(k) & slot->kinds) || (k == NX_OPK_NONE && !slot->required)) kinds[n++] = k;
        rnd_operand(r, &insn->op[i], kinds[rnd(r, n)]);
    }
}

static void rnd_program(test_rng *r, nx_program *p) {
    nx_program_init(p);
    memset(p->machine, 0, sizeof p->machine);
    size_t mlen = 1 + rnd(r, 15);
    for (size_t i = 0; i < mlen; i++) p->machine[i] = "ab9_.-XZ"[rnd(r, 8)];
    p->cores = 1 + (uint32_t)rnd(r, NX_MAX_CORES);
    p->sem_count = rnd(r, 4) ? (uint32_t)rnd(r, 256) : 0;
    uint64_t at = rnd(r, 3) ? 0 : rnd_u64(r, 0, (uint64_t)1 << 40), end_max = 0;
    unsigned ntensors = (unsigned)rnd(r, 6);
    for (unsigned i = 0; i < ntensors; i++) {
        nx_tensor_decl t;
        memset(&t, 0, sizeof t);
        size_t len = 1 + rnd(r, 60);
        t.name[0] = name_first[rnd(r, sizeof name_first - 1)];
        for (size_t k = 1; k < len; k++) t.name[k] = name_rest[rnd(r, sizeof name_rest - 1)];
        snprintf(t.name + len, sizeof t.name - len, "%u", i); /* unique */
        t.dtype = (uint8_t)rnd(r, NX_DT_COUNT);
        t.role = (uint8_t)rnd(r, NX_ROLE_COUNT);
        t.ndims = (uint8_t)(1 + rnd(r, NX_TENSOR_MAX_DIMS));
        for (unsigned k = 0; k < t.ndims; k++) t.shape[k] = 1 + rnd(r, 9);
        size_t size = nx_dtype_size((nx_dtype)t.dtype);
        at += rnd(r, 2) ? rnd(r, 300) : 0;
        at = (at + size - 1) / size * size;
        t.offset = at;
        at += nx_tensor_bytes(&t);
        end_max = at;
        if (nx_program_add_tensor(p, &t, NULL) != 0) fail_msg("add tensor");
    }
    p->hbm_bytes = end_max + (rnd(r, 2) ? rnd(r, 100000) : 0);
    for (uint32_t c = 0; c < p->cores; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
            unsigned n = (unsigned)rnd(r, 7);
            for (unsigned i = 0; i < n; i++) {
                nx_insn insn;
                rnd_insn(r, p->sem_count, &insn);
                if (nx_program_append(p, c, (nx_engine)e, &insn, NULL) != 0) fail_msg("append");
            }
        }
}

static void test_round_trip_random(void **state) {
    (void)state;
    test_rng r = {0x5eed0a5eull};
    unsigned seen_opcode[NX_OP_COUNT] = {0};
    for (int n = 0; n < 300; n++) {
        nx_program p;
        rnd_program(&r, &p);
        /* The generator must make canonical records: decode(encode(p)) == p. */
        uint8_t *bytes;
        size_t len;
        nx_error err = {{0}};
        if (nx_program_encode(&p, &bytes, &len, &err) != 0) fail_msg("program %d: encode: %s", n, err.msg);
        nx_program d;
        if (nx_program_decode(bytes, len, &d, &err) != 0) fail_msg("program %d: decode: %s", n, err.msg);
        char why[512];
        if (program_diff(&p, &d, why, sizeof why) != 0) fail_msg("program %d not canonical: %s", n, why);
        free(bytes);
        nx_program_free(&d);
        assert_round_trip(&p);
        for (unsigned c = 0; c < p.cores; c++)
            for (unsigned e = 0; e < NX_ENG_COUNT; e++)
                for (uint32_t i = 0; i < p.stream[c][e].count; i++) seen_opcode[p.stream[c][e].recs[i].opcode]++;
        nx_program_free(&p);
    }
    for (unsigned o = 0; o < NX_OP_COUNT; o++)
        if (seen_opcode[o] == 0) fail_msg("opcode %s never generated", nx_opcode_lookup(o)->mnemonic);
}

/* ---- error messages ---- */

typedef struct bad_case {
    const char *text;
    const char *message;
} bad_case;

#define DVE ".engine dve\n"
#define TILE "sbuf:fp32[0:128]@0{1:64}"

static const bad_case bad_cases[] = {
    /* operands */
    {DVE "    tensor_copy dst=sbuf:fp31[0:128]@0{1:64} in=" TILE "\n",
     "t.nxs:2:26: expected a dtype (fp32, bf16, ...), found 'fp31'"},
    {DVE "    tensor_copy dst=sram:fp32[0:128]@0{1:64} in=" TILE "\n",
     "t.nxs:2:21: expected an operand (sbuf:, psum:, hbm:, pat: or #VALUE), found 'sram'"},
    {DVE "tensor_copy dst=sbuf:fp32[0:128@0{1:64} in=" TILE "\n",
     "t.nxs:2:32: expected ']', found '@'"},
    {DVE "tensor_copy dst=sbuf:fp32[0:128]@12x{1:64} in=" TILE "\n",
     "t.nxs:2:34: expected an integer, found '12x'"},
    {DVE "tensor_copy dst=sbuf:fp32[0:200]@0{1:64} in=" TILE "\n",
     "t.nxs:2:27: partition range 0:200 exceeds 128"},
    {DVE "tensor_copy dst=sbuf:fp32[5:5]{} in=" TILE "\n",
     "t.nxs:2:27: partition range 5:5 is empty"},
    {DVE "tensor_copy dst=sbuf:fp32[0:1]{3000000000:1} in=" TILE "\n",
     "t.nxs:2:32: stride 3000000000 out of range (-2147483648..2147483647)"},
    {DVE "tensor_copy dst=sbuf:fp32[0:1]{1:0} in=" TILE "\n",
     "t.nxs:2:34: count 0 out of range (1..4294967295)"},
    {DVE "tensor_copy dst=sbuf:fp32[0:1]{1:1,1:1,1:1,1:1,1:1} in=" TILE "\n",
     "t.nxs:2:48: too many free dims (max 4)"},
    {DVE "tensor_copy dst=sbuf:fp32[0:1]{1:1;} in=" TILE "\n",
     "t.nxs:2:35: expected ',' or '}', found end of line"},
    {DVE "tensor_copy dst=" TILE "} in=" TILE "\n",
     "t.nxs:2:41: expected whitespace or end of line after the value, found '}'"},
    {DVE "memset dst=" TILE " value=sbuf:fp32[0:1]{}\n",
     "t.nxs:2:43: operand kind sbuf not allowed in slot 'value' of 'memset' (allowed: imm)"},
    {DVE "memset dst=#1 value=#1\n",
     "t.nxs:2:12: operand kind imm not allowed in slot 'dst' of 'memset' (allowed: sbuf, psum)"},
    {DVE "memset dst=" TILE " value=#300:int8\n",
     "t.nxs:2:44: immediate 300 out of range for int8 (-128..127)"},
    {DVE "memset dst=" TILE " value=#1.5:int32\n",
     "t.nxs:2:44: immediate 1.5 is not an integer (int32)"},
    {DVE "memset dst=" TILE " value=#nan:uint8\n",
     "t.nxs:2:44: immediate nan is not an integer (uint8)"},
    {DVE "memset dst=" TILE " value=#1.2.3\n",
     "t.nxs:2:44: expected a number, found '1.2.3'"},
    {DVE "memset dst=" TILE " value=#infinity\n",
     "t.nxs:2:44: expected a number, found 'infinity'"},
    {".engine pool\niota dst=sbuf:fp32[0:1]{} pattern=pat:fp32[1](0,1){}\n",
     "t.nxs:2:39: a pattern needs an integer dtype, found fp32"},
    {".engine pool\niota dst=sbuf:fp32[0:1]{} pattern=pat:int32[129](0,1){}\n",
     "t.nxs:2:45: partition count 129 out of range (1..128)"},
    {".engine sp\ndma_copy dst=" TILE " src=hbm:fp32[1/1]@foo{}\n",
     "t.nxs:2:57: unknown tensor 'foo'"},
    /* instructions */
    {DVE "    tensor_tensr dst=" TILE "\n", "t.nxs:2:5: unknown mnemonic 'tensor_tensr'"},
    {DVE "tensor_tensor src=" TILE "\n",
     "t.nxs:2:15: 'tensor_tensor' has no slot 'src'; slots: dst, in0, in1"},
    {DVE "nop dst=" TILE "\n", "t.nxs:2:5: 'nop' has no slot 'dst'; slots: (none)"},
    {DVE "tensor_copy dst=" TILE "\n", "t.nxs:2:1: 'tensor_copy' is missing required slot 'in'"},
    {DVE "tensor_copy dst=" TILE " dst=" TILE "\n", "t.nxs:2:42: duplicate key 'dst'"},
    {DVE "tensor_reduce dst=" TILE " in=" TILE " negate=2\n", "t.nxs:2:79: expected 0 or 1, found '2'"},
    {DVE "tensor_copy dst=" TILE " in=" TILE " op0=add\n",
     "t.nxs:2:70: 'tensor_copy' has no parameter 'op0'; parameters: wait, inc"},
    {DVE "tensor_scalar dst=" TILE " in=" TILE " scalar0=#1 acc=1\n",
     "t.nxs:2:83: 'tensor_scalar' has no parameter 'acc'; parameters: op0, op1, rev0, rev1, wait, inc"},
    {DVE "tensor_tensor dst=" TILE " in0=" TILE " in1=" TILE " op0=ad\n",
     "t.nxs:2:106: expected an ALU op (bypass, add, subtract, multiply, divide, max, min, abs_max, "
     "pow, bitwise_and, bitwise_or, bitwise_xor, shift_left, shift_right, is_equal, not_equal, "
     "is_ge, is_gt, is_le, is_lt), found 'ad'"},
    {".engine sp\ndma_copy dst=" TILE " src=" TILE " queue=2147483648\n",
     "t.nxs:2:74: queue 2147483648 out of range (-2147483648..2147483647)"},
    {DVE "tensor_copy dst\n", "t.nxs:2:16: expected '=', found end of line"},
    {DVE "tensor_copy =x\n", "t.nxs:2:13: expected KEY=VALUE, found '='"},
    {".semaphores 2\n" DVE "nop wait=sem5>=1\n", "t.nxs:3:13: semaphore 5 out of range (.semaphores 2)"},
    {DVE "nop inc=sem0\n", "t.nxs:2:12: semaphore 0 out of range (.semaphores 0)"},
    {".semaphores 1\n" DVE "nop wait=sem0>1\n", "t.nxs:3:14: expected '>=', found '>'"},
    {".semaphores 1\n" DVE "nop wait=s0>=1\n", "t.nxs:3:10: expected semN, found 's0'"},
    {".semaphores 1\n" DVE "nop inc=sem0+0\n", "t.nxs:3:14: increment 0 out of range (1..4294967295)"},
    {"nop\n", "t.nxs:1:1: expected '.engine' before instructions, found 'nop'"},
    {".cores 2\n.engine pe\nnop\n.core 1\nnop\n",
     "t.nxs:5:1: expected '.engine' before instructions, found 'nop'"},
    /* directives */
    {".cores 3\n", "t.nxs:1:8: cores 3 out of range (1..2)"},
    {".cores 0x0\n", "t.nxs:1:8: cores 0x0 out of range (1..2)"},
    {".core 1\n", "t.nxs:1:7: core 1 out of range (.cores 1)"},
    {".cores 2\n.cores 2\n", "t.nxs:2:1: duplicate directive '.cores'"},
    {".semaphores 256\n", "t.nxs:1:13: semaphores 256 out of range (0..255)"},
    {".engine gpsimd\n", "t.nxs:1:9: expected an engine (pe, dve, act, pool, sp), found 'gpsimd'"},
    {".machine trn2_with_a_long_name\n",
     "t.nxs:1:10: machine name 'trn2_with_a_long_name' too long (max 15 characters)"},
    {".machine trn2 x\n", "t.nxs:1:15: expected end of line, found 'x'"},
    {".foo 1\n", "t.nxs:1:1: unknown directive '.foo'"},
    {"[x]\n", "t.nxs:1:1: expected a directive or an instruction, found '['"},
    {".tensor x input fp32 [4]\n.tensor x input fp32 [4]\n", "t.nxs:2:9: duplicate tensor 'x'"},
    {".tensor 9x input fp32 [4]\n", "t.nxs:1:9: expected a tensor name, found '9x'"},
    {".tensor x in fp32 [4]\n",
     "t.nxs:1:11: expected a role (input, output, scratch), found 'in'"},
    {".tensor x input fp32 [4] @2\n",
     "t.nxs:1:27: offset 2 of tensor 'x' is not a multiple of 4 (fp32)"},
    {".tensor x input fp32 [4,0]\n", "t.nxs:1:25: dim 0 out of range (1..18446744073709551615)"},
    {".tensor x input fp32 [1,1,1,1,1,1,1]\n", "t.nxs:1:35: too many dims (max 6)"},
    {".tensor x input fp32[4]\n", "t.nxs:1:21: expected whitespace, found '['"},
    {".tensor x input int8 [100]\n.tensor y output int8 [10] @96\n",
     "t.nxs:2:29: tensor 'y' bytes [96, 106) overlap tensor 'x' bytes [0, 100)"},
    {".tensor x input int8 [0x100000000,0x100000000]\n",
     "t.nxs:1:35: tensor 'x' is too large (size overflows 64 bits)"},
    {".hbm 1000\n.tensor x input fp32 [16,16]\n",
     "t.nxs:1:6: .hbm 1000 is less than the end of tensor 'x' (1024)"},
    {".hbm 99999999999999999999\n",
     "t.nxs:1:6: hbm bytes 99999999999999999999 out of range (0..18446744073709551615)"},
    /* .src */
    {".src kern.py\n", "t.nxs:1:6: expected FILE:LINE or '-', found 'kern.py'"},
    {".src kern.py:x\n", "t.nxs:1:14: expected an integer, found 'x'"},
    {".src kern.py:3x\n", "t.nxs:1:14: expected an integer, found '3x'"},
    {".src k.py:3 f g\n", "t.nxs:1:15: expected end of line, found 'g'"},
};

static void test_error_messages(void **state) {
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        nx_program p;
        nx_error err = {{0}};
        if (assemble_str(bad_cases[i].text, &p, &err) == 0) {
            print_error("case %zu assembled but should fail with: %s\n", i, bad_cases[i].message);
            nx_program_free(&p);
            failures++;
            continue;
        }
        if (strcmp(err.msg, bad_cases[i].message) != 0) {
            print_error("case %zu:\n  got:  %s\n  want: %s\n", i, err.msg, bad_cases[i].message);
            failures++;
        }
        /* a failed assembly leaves an empty, freeable program */
        assert_int_equal(p.tensor_count, 0);
        assert_null(p.tensors);
        nx_program_free(&p);
    }
    assert_int_equal(failures, 0);
}

/* .src FILE:LINE [FUNC] marks the instructions that follow, across engine
 * sections, until the next .src; '.src -' forgets it; an ordered assembly
 * lists the instructions in text order. */
static void test_src_and_order(void **state) {
    (void)state;
    const char *text = DVE "    memset dst=" TILE " value=#1\n"
                       ".src dir/k.py:12 my_kernel\n"
                       "    memset dst=" TILE " value=#2\n"
                       ".engine act\n"
                       "    tensor_copy dst=" TILE " in=" TILE "\n"
                       ".src C:/x.py:7\n"
                       ".engine dve\n"
                       "    memset dst=" TILE " value=#3\n"
                       ".src -\n"
                       "    memset dst=" TILE " value=#4\n";
    nx_program p;
    nx_insn_ref *order;
    uint32_t n;
    nx_error err = {{0}};
    if (nx_assemble_ordered("t.nxs", text, strlen(text), &p, &order, &n, &err) != 0) fail_msg("%s", err.msg);
    assert_null(nx_program_insn_src(&p, 0, NX_ENG_DVE, 0));
    const nx_src_loc *a = nx_program_insn_src(&p, 0, NX_ENG_DVE, 1);
    assert_non_null(a);
    assert_string_equal(a->file, "dir/k.py");
    assert_int_equal(a->line, 12);
    assert_string_equal(a->func, "my_kernel");
    assert_ptr_equal(nx_program_insn_src(&p, 0, NX_ENG_ACT, 0), a);
    const nx_src_loc *b = nx_program_insn_src(&p, 0, NX_ENG_DVE, 2);
    assert_string_equal(b->file, "C:/x.py");
    assert_int_equal(b->line, 7);
    assert_string_equal(b->func, "");
    assert_null(nx_program_insn_src(&p, 0, NX_ENG_DVE, 3));
    const nx_insn_ref want[] = {{0, NX_ENG_DVE, 0}, {0, NX_ENG_DVE, 1}, {0, NX_ENG_ACT, 0}, {0, NX_ENG_DVE, 2},
                                {0, NX_ENG_DVE, 3}};
    assert_int_equal(n, 5);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(order[i].engine, want[i].engine);
        assert_int_equal(order[i].index, want[i].index);
    }
    free(order);
    nx_program_free(&p);
}

static void test_file(void **state) {
    (void)state;
    char path[] = "test_asm_tmp.nxs";
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(example, f);
    fclose(f);
    nx_program p, q;
    nx_error err = {{0}};
    if (nx_assemble_file(path, &p, &err) != 0) fail_msg("%s", err.msg);
    assemble_ok(example, &q);
    char why[512];
    if (program_diff(&p, &q, why, sizeof why) != 0) fail_msg("file vs text: %s", why);
    nx_program_free(&p);
    nx_program_free(&q);

    f = fopen(path, "wb");
    assert_non_null(f);
    fputs(".cores 1\n.engine act\n  nop x=1\n", f);
    fclose(f);
    assert_int_equal(nx_assemble_file(path, &p, &err), -1);
    assert_string_equal(err.msg, "test_asm_tmp.nxs:3:7: 'nop' has no slot 'x'; slots: (none)");
    remove(path);
    assert_int_equal(nx_assemble_file("no/such/dir/x.nxs", &p, &err), -1);
    assert_string_equal(err.msg, "no/such/dir/x.nxs: cannot open: No such file or directory");
}

/* ---- mutations ---- */

static char *copy_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    assert_non_null(d);
    memcpy(d, s, n);
    return d;
}

/* Assembles `text`; if it assembles, the result must encode and round-trip.
 * Returns 1 if it assembled. */
static int check_mutant(const char *text, size_t len) {
    nx_program p;
    nx_error err = {{0}};
    if (nx_assemble("m.nxs", text, len, &p, &err) != 0) {
        assert_true(strncmp(err.msg, "m.nxs:", 6) == 0);
        assert_null(strchr(err.msg, '\n'));
        return 0;
    }
    assert_round_trip(&p);
    nx_program_free(&p);
    return 1;
}

static void test_mutations(void **state) {
    (void)state;
    test_rng r = {0xfa22edull};
    char *bases[3];
    bases[0] = copy_str(example);
    nx_program p;
    assemble_ok(example_canonical, &p);
    nx_program_free(&p);
    rnd_program(&r, &p);
    bases[1] = disassemble_str(&p);
    nx_program_free(&p);
    bases[2] = copy_str(
        ".cores 2\n.semaphores 4\n.tensor t input bf16 [8,8]\n.core 1\n.engine pool\n"
        "    iota dst=sbuf:int32[0:8]{1:8} pattern=pat:int32[8](0,8){1:8} inc=sem3+2\n"
        "    affine_select dst=sbuf:fp32[0:8]{} pattern=pat:int8[8](-1,1){} in=sbuf:fp32[0:8]{} fill=#-1e30 op0=is_lt\n"
        ".engine sp\n    dma_copy dst=sbuf:bf16[0:8]{1:8} src=hbm:bf16[8/8]@t+16{1:8} queue=3 bound=7 acc=1 wait=sem1>=5\n");
    int assembled = 0;
    static const char alphabet[] = "#@:[]{}(),;=+-./0123456789abefinpsx_ \t\n\r\x01\x7f\xff";
    for (int b = 0; b < 3; b++) {
        size_t len = strlen(bases[b]);
        check_mutant(bases[b], len);
        /* every prefix (truncated files), not NUL-terminated */
        for (size_t cut = 0; cut < len; cut++) {
            char *copy = malloc(cut ? cut : 1);
            memcpy(copy, bases[b], cut);
            assembled += check_mutant(copy, cut);
            free(copy);
        }
        for (int n = 0; n < 1500; n++) {
            size_t cap = len + 64;
            char *m = malloc(cap);
            memcpy(m, bases[b], len);
            size_t mlen = len;
            int edits = 1 + (int)rnd(&r, 3);
            for (int e = 0; e < edits && mlen > 0; e++) {
                size_t at = rnd(&r, mlen);
                switch (rnd(&r, 4)) {
                case 0: /* replace */
                    m[at] = rnd(&r, 4) ? alphabet[rnd(&r, sizeof alphabet - 1)] : (char)rnd(&r, 256);
                    break;
                case 1: /* insert */
                    if (mlen < cap) {
                        memmove(m + at + 1, m + at, mlen - at);
                        m[at] = alphabet[rnd(&r, sizeof alphabet - 1)];
                        mlen++;
                    }
                    break;
                case 2: /* delete */
                    memmove(m + at, m + at + 1, mlen - at - 1);
                    mlen--;
                    break;
                default: { /* duplicate a short run of digits/characters */
                    size_t run = 1 + rnd(&r, 8);
                    if (at + run <= mlen && mlen + run <= cap) {
                        memmove(m + at + run, m + at, mlen - at);
                        mlen += run;
                    }
                }
                }
            }
            assembled += check_mutant(m, mlen);
            free(m);
        }
        free(bases[b]);
    }
    /* the "still assembles" branch must be exercised (about 600 do) */
    assert_true(assembled > 200);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example),
        cmocka_unit_test(test_defaults_and_forms),
        cmocka_unit_test(test_immediates),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_round_trip_random),
        cmocka_unit_test(test_error_messages),
        cmocka_unit_test(test_src_and_order),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
