/* How a program stores its instructions (isa/program_store.c): compact
 * records whose operands live once each in a pool.
 *   - every instruction of every conformance trace (decoded straight from
 *     its instruction word, without the store) comes back from a program it
 *     was appended to, field by field;
 *   - the pool holds exactly the distinct operands of the program (counted
 *     here by brute force): equal operands are shared, unequal ones are not;
 *   - operands that differ only where a careless store would merge them
 *     (imm -0 and +0, NaN payloads, dims past ndims) stay apart, and padding
 *     bytes never keep equal operands apart;
 *   - a replaced instruction reads back and leaves its neighbours alone;
 *   - a chain of 10000 equal instructions costs one record each and a pool
 *     of its three operand values (plus the unused slot). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/encode.h"
#include "support.h"

/* Every operand of every instruction of p (n of them, malloc'd). */
static nx_operand *all_operands(const nx_program *p, size_t *n) {
    size_t total = 0;
    for (unsigned c = 0; c < NX_MAX_CORES; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) total += p->stream[c][e].count;
    nx_operand *ops = malloc((total ? total : 1) * NX_MAX_OPERANDS * sizeof *ops);
    assert_non_null(ops);
    size_t k = 0;
    for (unsigned c = 0; c < NX_MAX_CORES; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++)
            for (uint32_t i = 0; i < p->stream[c][e].count; i++) {
                nx_insn in;
                assert_non_null(nx_program_insn(p, c, (nx_engine)e, i, &in));
                for (unsigned s = 0; s < NX_MAX_OPERANDS; s++) ops[k++] = in.op[s];
            }
    *n = k;
    return ops;
}

/* How many of ops[0..n) are distinct (field by field, imm by its bits). */
static size_t count_distinct(const nx_operand *ops, size_t n) {
    size_t distinct = 0;
    char why[512];
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < i && test_operand_diff(&ops[i], &ops[j], why, sizeof why) != 0) j++;
        distinct += j == i;
    }
    return distinct;
}

static void assert_shared(const nx_program *p, const char *what) {
    size_t n;
    nx_operand *ops = all_operands(p, &n);
    size_t want = count_distinct(ops, n);
    free(ops);
    if (p->operands.count != want)
        fail_msg("%s: the pool holds %u operands, the program has %zu distinct ones", what, p->operands.count,
                 want);
}

/* The trace's instructions as the decoder makes them from its .nxb words
 * (in file order: core, engine, index), appended one by one to a fresh
 * program, must read back field by field. */
static int visit_round_trip(const char *dir, void *ctx) {
    (void)ctx;
    nx_program p;
    nx_error err;
    if (!test_assemble_trace(dir, &p, &err)) return 0; /* the conformance tests report it */
    uint8_t *buf;
    size_t len;
    if (nx_program_encode(&p, &buf, &len, &err) != 0) {
        nx_program_free(&p);
        return 0; /* a negative trace the encoder refuses */
    }
    uint64_t total = 0;
    for (uint32_t c = 0; c < p.cores; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) total += p.stream[c][e].count;
    assert_true(len >= total * NX_INSN_WORD_BYTES);
    const uint8_t *word = buf + len - total * NX_INSN_WORD_BYTES; /* the words close the file */
    nx_program q;
    nx_program_init(&q);
    q.cores = p.cores;
    nx_insn *want = malloc((total ? total : 1) * sizeof *want);
    assert_non_null(want);
    uint64_t k = 0;
    for (uint32_t c = 0; c < p.cores; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++)
            for (uint32_t i = 0; i < p.stream[c][e].count; i++, k++, word += NX_INSN_WORD_BYTES) {
                if (nx_insn_decode(word, &want[k], &err) != 0) fail_msg("%s: word %llu: %s", dir, (unsigned long long)k, err.msg);
                if (nx_program_append(&q, c, (nx_engine)e, &want[k], &err) != 0) fail_msg("%s: %s", dir, err.msg);
            }
    k = 0;
    for (uint32_t c = 0; c < p.cores; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++)
            for (uint32_t i = 0; i < q.stream[c][e].count; i++, k++) {
                nx_insn got;
                char why[512];
                assert_non_null(nx_program_insn(&q, c, (nx_engine)e, i, &got));
                if (test_insn_diff(&got, &want[k], why, sizeof why) != 0)
                    fail_msg("%s: core %u %s #%u: %s", dir, c, nx_engine_name((nx_engine)e), i, why);
            }
    assert_null(nx_program_insn(&q, 0, NX_ENG_DVE, q.stream[0][NX_ENG_DVE].count, &(nx_insn){0}));
    assert_shared(&q, dir);
    assert_shared(&p, dir); /* the assembler's program too */
    free(want);
    free(buf);
    nx_program_free(&q);
    nx_program_free(&p);
    return 1;
}

static void traces_round_trip_and_share(void **state) {
    (void)state;
    char root[1024], errors[1100];
    test_traces_dir(root, sizeof root);
    if (snprintf(errors, sizeof errors, "%s/errors", root) >= (int)sizeof errors) fail_msg("path too long");
    int n = test_for_each_trace(root, visit_round_trip, NULL);
    int e = test_for_each_trace(errors, visit_round_trip, NULL);
    printf("%d traces and %d error traces: every instruction round-trips, operands shared\n", n, e);
    if (n == 0) fail_msg("no traces found under %s", root);
}

static nx_operand with_imm_bits(uint64_t bits) {
    nx_operand op = nx_imm(0.0, NX_DT_FP32);
    memcpy(&op.imm, &bits, sizeof op.imm);
    return op;
}

static void near_equal_operands_stay_apart(void **state) {
    (void)state;
    nx_operand x = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 4, 0, 8);
    nx_operand ghost = x; /* a count past ndims: no effect, but part of the record */
    ghost.count[2] = 7;
    nx_operand padded; /* x again, built over garbage padding */
    memset(&padded, 0xA5, sizeof padded);
    padded.kind = x.kind;
    padded.dtype = x.dtype;
    padded.ndims = x.ndims;
    padded.start_partition = x.start_partition;
    padded.partition_count = x.partition_count;
    padded.partition_stride = x.partition_stride;
    padded.offset = x.offset;
    padded.imm = x.imm;
    padded.pattern_base = x.pattern_base;
    memcpy(padded.stride, x.stride, sizeof x.stride);
    memcpy(padded.count, x.count, sizeof x.count);
    const nx_operand imms[4] = {with_imm_bits(0), with_imm_bits(0x8000000000000000ull),
                                with_imm_bits(0x7ff8000000000000ull), with_imm_bits(0x7ff8000000000001ull)};
    nx_program p;
    nx_program_init(&p);
    nx_error err;
    nx_insn want[4];
    for (unsigned i = 0; i < 4; i++) {
        want[i] = nx_insn_make(NX_OP_TENSOR_SCALAR);
        want[i].op[0] = i % 2 ? ghost : x;
        want[i].op[1] = i % 2 ? x : padded;
        want[i].op[2] = imms[i];
        want[i].iparam[1] = -(int32_t)i;
        assert_int_equal(nx_program_append(&p, 0, NX_ENG_DVE, &want[i], &err), 0);
    }
    /* x (= padded), ghost, four immediates, the unused slot */
    assert_int_equal(p.operands.count, 7);
    assert_shared(&p, "near-equal operands");
    for (uint32_t i = 0; i < 4; i++) {
        nx_insn got;
        char why[512];
        assert_non_null(nx_program_insn(&p, 0, NX_ENG_DVE, i, &got));
        if (test_insn_diff(&got, &want[i], why, sizeof why) != 0) fail_msg("#%u: %s", i, why);
    }
    nx_program_free(&p);
}

static void replaced_instruction_reads_back(void **state) {
    (void)state;
    nx_program p;
    nx_program_init(&p);
    nx_error err;
    nx_insn a = nx_insn_make(NX_OP_TENSOR_COPY);
    a.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 2, 64, 4);
    a.op[1] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 2, 0, 4);
    nx_insn b = a;
    b.op[0].offset = 128;
    nx_insn_wait(&b, 3, 9);
    for (int i = 0; i < 3; i++) assert_int_equal(nx_program_append(&p, 0, NX_ENG_ACT, &a, &err), 0);
    assert_int_equal(nx_program_set_insn(&p, 0, NX_ENG_ACT, 1, &b, &err), 0);
    assert_int_not_equal(nx_program_set_insn(&p, 0, NX_ENG_ACT, 3, &b, &err), 0);
    assert_string_equal(err.msg, "program: no instruction 3 on core 0 engine 2 to replace");
    const nx_insn *want[3] = {&a, &b, &a};
    for (uint32_t i = 0; i < 3; i++) {
        nx_insn got;
        char why[512];
        assert_non_null(nx_program_insn(&p, 0, NX_ENG_ACT, i, &got));
        if (test_insn_diff(&got, want[i], why, sizeof why) != 0) fail_msg("#%u: %s", i, why);
    }
    assert_int_equal(p.stream[0][NX_ENG_ACT].recs[1].wait_value, 9);
    nx_program_free(&p);
}

/* The shape of nxsim-bench's dve-chain: x += 1, 10000 times. */
static void equal_instructions_cost_one_record(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 1);
    assert_non_null(b);
    nx_error err;
    uint64_t off;
    assert_int_equal(nx_builder_sbuf_alloc(b, 0, 4, 4, &off, &err), 0);
    nx_insn zero = nx_insn_make(NX_OP_MEMSET);
    zero.op[0] = nx_ap_tile(NX_OPK_SBUF, NX_DT_FP32, 0, 1, off, 1);
    zero.op[1] = nx_imm(0.0, NX_DT_FP32);
    assert_int_equal(nx_builder_emit(b, 0, NX_ENG_DVE, &zero, NULL, &err), 0);
    nx_insn add = nx_insn_make(NX_OP_TENSOR_SCALAR);
    add.alu0 = NX_ALU_ADD;
    add.op[0] = add.op[1] = zero.op[0];
    add.op[2] = nx_imm(1.0, NX_DT_FP32);
    const uint32_t n = 10000;
    for (uint32_t i = 0; i < n; i++) assert_int_equal(nx_builder_emit(b, 0, NX_ENG_DVE, &add, NULL, &err), 0);
    nx_program p;
    assert_int_equal(nx_builder_finish(b, &p, &err), 0);
    nx_builder_free(b);
    assert_int_equal(p.stream[0][NX_ENG_DVE].count, n + 1);
    assert_int_equal(p.operands.count, 4); /* x, 0, 1, the unused slot */
    /* records as allocated (a doubling stream) plus the small pool */
    uint64_t bytes = nx_program_insn_bytes(&p);
    assert_true(bytes >= (uint64_t)(n + 1) * sizeof(nx_insn_rec));
    assert_true(bytes <= 2ull * (n + 1) * sizeof(nx_insn_rec) + 64 * sizeof(nx_operand) + 4096);
    nx_state st;
    test_state(&st, 1, p.hbm_bytes ? p.hbm_bytes : 64, p.sem_count);
    assert_int_equal(nx_exec_program(&p, &st, &err), 0);
    double x[1];
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, off, 1, x);
    assert_true(x[0] == (double)n);
    nx_state_free(&st);
    nx_program_free(&p);
}

/* The trace limits hold as instructions are appended (isa/builder.h): the
 * instruction cap at exactly NX_PROGRAM_MAX_INSNS, the memory limit within
 * one growth step of the storage. */
static void builder_stops_at_its_limits(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 1);
    assert_non_null(b);
    nx_error err;
    nx_insn nop = nx_insn_make(NX_OP_NOP);
    for (uint32_t i = 0; i < NX_PROGRAM_MAX_INSNS; i++)
        if (nx_builder_emit(b, 0, (nx_engine)(i % NX_ENG_COUNT), &nop, NULL, &err) != 0) fail_msg("#%u: %s", i, err.msg);
    assert_int_equal(nx_builder_limit_hit(b, NULL), NX_BUILDER_WITHIN);
    assert_int_equal(nx_builder_emit(b, 0, NX_ENG_PE, &nop, NULL, &err), -1);
    assert_string_equal(err.msg, "more than 2097152 instructions, the most a program may hold");
    nx_error why;
    assert_int_equal(nx_builder_limit_hit(b, &why), NX_BUILDER_INSN_CAP);
    assert_string_equal(why.msg, err.msg);
    nx_builder_free(b);

    b = nx_builder_new(&geo, 1);
    nx_builder_set_memory_limit(b, (uint64_t)1 << 20, (uint64_t)1 << 19); /* 1 MiB, half of it held */
    uint32_t n = 0;
    while (nx_builder_emit(b, 0, NX_ENG_DVE, &nop, NULL, &err) == 0) n++;
    assert_int_equal(nx_builder_limit_hit(b, NULL), NX_BUILDER_MEMORY);
    /* 512 KiB of 44-byte records is 11915; the stream grows by doubling */
    assert_true(n > 5000 && n < 16384);
    assert_non_null(strstr(err.msg, "the program being traced holds "));
    assert_non_null(strstr(err.msg, " beside the run's 512.0 KiB, more than the memory limit of 1.0 MiB"));
    nx_builder_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(traces_round_trip_and_share),
        cmocka_unit_test(near_equal_operands_stay_apart),
        cmocka_unit_test(replaced_instruction_reads_back),
        cmocka_unit_test(equal_instructions_cost_one_record),
        cmocka_unit_test(builder_stops_at_its_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
