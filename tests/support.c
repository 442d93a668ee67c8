#include "support.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "isa/dtype.h"
#include "sim/machine.h"

nx_geometry test_geometry(const char *preset) {
    nx_machine m;
    nx_error err;
    if (nx_machine_load(preset, &m, &err) != 0)
        fail_msg("machine %s: %s", preset, err.msg);
    return m.geo;
}

void test_state(nx_state *st, uint32_t cores, uint64_t hbm_bytes, uint32_t sem_count) {
    nx_geometry geo = test_geometry("trn2");
    nx_error err;
    if (nx_state_init(st, &geo, cores, hbm_bytes, sem_count, &err) != 0)
        fail_msg("nx_state_init: %s", err.msg);
}

int test_run(nx_state *st, uint32_t core, nx_engine engine, const nx_insn *insn, nx_error *err) {
    if (nx_insn_validate(insn, engine, &st->geo, st->hbm_bytes, st->sem_count, err) != 0)
        return -1;
    nx_exec_ctx ctx = {st, core, engine, 0, err};
    return nx_insn_execute(&ctx, insn);
}

static void put(uint8_t *base, nx_dtype dt, uint64_t n, const double *values) {
    size_t sz = nx_dtype_size(dt);
    for (uint64_t i = 0; i < n; i++) nx_dtype_store(dt, base + i * sz, values[i]);
}
static void get(const uint8_t *base, nx_dtype dt, uint64_t n, double *values) {
    size_t sz = nx_dtype_size(dt);
    for (uint64_t i = 0; i < n; i++) values[i] = nx_dtype_load(dt, base + i * sz);
}

void test_sbuf_put(nx_state *st, uint32_t core, nx_dtype dt, uint32_t partition,
                   uint64_t byte_offset, uint64_t n, const double *values) {
    put(nx_sbuf_at(st, core, partition, byte_offset), dt, n, values);
}
void test_sbuf_get(nx_state *st, uint32_t core, nx_dtype dt, uint32_t partition,
                   uint64_t byte_offset, uint64_t n, double *values) {
    get(nx_sbuf_at(st, core, partition, byte_offset), dt, n, values);
}
void test_psum_put(nx_state *st, uint32_t core, nx_dtype dt, uint32_t partition,
                   uint64_t byte_offset, uint64_t n, const double *values) {
    put(nx_psum_at(st, core, partition, byte_offset), dt, n, values);
}
void test_psum_get(nx_state *st, uint32_t core, nx_dtype dt, uint32_t partition,
                   uint64_t byte_offset, uint64_t n, double *values) {
    get(nx_psum_at(st, core, partition, byte_offset), dt, n, values);
}
void test_hbm_put(nx_state *st, nx_dtype dt, uint64_t byte_offset, uint64_t n, const double *values) {
    put(st->hbm + byte_offset, dt, n, values);
}
void test_hbm_get(nx_state *st, nx_dtype dt, uint64_t byte_offset, uint64_t n, double *values) {
    get(st->hbm + byte_offset, dt, n, values);
}

void test_coverage_add(test_coverage *c, unsigned opcode, nx_engine engine) {
    if (opcode < NX_OP_COUNT && (unsigned)engine < NX_ENG_COUNT) c->seen[opcode][engine] = 1;
}

void test_coverage_add_program(test_coverage *c, const nx_program *p) {
    for (uint32_t core = 0; core < p->cores; core++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++)
            for (uint32_t i = 0; i < p->stream[core][e].count; i++)
                test_coverage_add(c, p->stream[core][e].insns[i].opcode, (nx_engine)e);
}

void test_coverage_check(const test_coverage *c, const char *what) {
    for (unsigned o = 0; o < NX_OP_COUNT; o++) {
        const nx_opcode_info *info = &nx_opcode_table[o];
        int any = 0;
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
            if (!(info->engines & NX_ENG_BIT(e))) continue;
            any |= c->seen[o][e];
            if (info->opclass != NX_OPCLASS_CONTROL && !c->seen[o][e])
                fail_msg("%s: opcode %s is not covered on %s", what, info->mnemonic, nx_engine_name((nx_engine)e));
        }
        if (!any) fail_msg("%s: opcode %s is not covered", what, info->mnemonic);
    }
}

uint64_t test_rng_next(test_rng *r) {
    uint64_t x = r->s ? r->s : 0x9E3779B97F4A7C15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

double test_rng_uniform(test_rng *r, double lo, double hi) {
    return lo + (hi - lo) * ((double)(test_rng_next(r) >> 11) / 9007199254740992.0);
}
