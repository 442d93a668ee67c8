#include "support.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "isa/asm.h"
#include "isa/dtype.h"

nx_machine test_machine(const char *preset) {
    nx_machine m;
    nx_error err;
    if (nx_machine_load(preset, &m, &err) != 0)
        fail_msg("machine %s: %s", preset, err.msg);
    return m;
}

nx_geometry test_geometry(const char *preset) { return test_machine(preset).geo; }

nx_machine test_machine_of(const nx_geometry *geo) {
    nx_machine m;
    nx_error err;
    if (nx_machine_of_geometry(geo, &m, &err) != 0) fail_msg("machine of geometry: %s", err.msg);
    return m;
}

void test_state(nx_state *st, uint32_t cores, uint64_t hbm_bytes, uint32_t sem_count) {
    nx_geometry geo = test_geometry("trn2");
    nx_error err;
    if (nx_state_init(st, &geo, cores, hbm_bytes, sem_count, &err) != 0)
        fail_msg("nx_state_init: %s", err.msg);
}

int test_setup_state(void **state) {
    nx_state *st = test_malloc(sizeof *st);
    test_state(st, 1, 4096, 4);
    *state = st;
    return 0;
}

int test_teardown_state(void **state) {
    nx_state *st = *state;
    nx_state_free(st);
    test_free(st);
    return 0;
}

int test_run(nx_state *st, uint32_t core, nx_engine engine, const nx_insn *insn, nx_error *err) {
    if (nx_insn_validate(insn, engine, &st->geo, st->hbm_bytes, st->sem_count, err) != 0)
        return -1;
    nx_exec_ctx ctx = {st, core, engine, 0, err};
    return nx_insn_execute(&ctx, insn);
}

void test_run_ok(nx_state *st, nx_engine engine, const nx_insn *insn) {
    nx_error err;
    memset(&err, 0, sizeof err);
    if (test_run(st, 0, engine, insn, &err) != 0) fail_msg("unexpected failure: %s", err.msg);
}

void test_run_fails(nx_state *st, nx_engine engine, const nx_insn *insn, const char *msg) {
    nx_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(test_run(st, 0, engine, insn, &err), -1);
    assert_string_equal(err.msg, msg);
}

void test_invalid(nx_state *st, nx_engine engine, const nx_insn *insn, const char *part) {
    nx_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(nx_insn_validate(insn, engine, &st->geo, st->hbm_bytes, st->sem_count, &err), -1);
    if (strstr(err.msg, part) == NULL) fail_msg("message '%s' lacks '%s'", err.msg, part);
}

nx_operand test_sb(nx_dtype dt, uint32_t p0, uint32_t np, uint64_t off, uint32_t n) {
    return nx_ap_tile(NX_OPK_SBUF, dt, p0, np, off, n);
}

nx_operand test_ps(nx_dtype dt, uint32_t p0, uint32_t np, uint64_t off, uint32_t n) {
    return nx_ap_tile(NX_OPK_PSUM, dt, p0, np, off, n);
}

nx_insn test_insn2(nx_opcode op, nx_operand dst, nx_operand src) {
    nx_insn i = nx_insn_make(op);
    i.op[0] = dst;
    i.op[1] = src;
    return i;
}

nx_insn test_dma(nx_operand dst, nx_operand src, uint32_t queue) {
    nx_insn i = test_insn2(NX_OP_DMA_COPY, dst, src);
    i.iparam[0] = (int32_t)queue;
    return i;
}

void test_assert_values(const double *got, const double *want, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (isnan(want[i]) ? !isnan(got[i]) : (got[i] != want[i] || signbit(got[i]) != signbit(want[i])))
            fail_msg("element %zu: got %.9g, want %.9g", i, got[i], want[i]);
    }
}

void test_le_put(uint8_t *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t test_le_get(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

int test_dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

void test_traces_dir(char *buf, size_t len) {
    const char *here = __FILE__;
    const char *slash = strrchr(here, '/');
    size_t n = slash ? (size_t)(slash - here) : 0;
    snprintf(buf, len, "%.*s/../traces", (int)n, n ? here : ".");
}

static int name_cmp(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

int test_for_each_trace(const char *root, int (*visit)(const char *dir, void *ctx), void *ctx) {
    DIR *d = opendir(root);
    if (!d) return 0;
    struct dirent *e;
    char names[256][256];
    int count = 0;
    while ((e = readdir(d)) != NULL && count < 256) {
        if (e->d_name[0] == '.') continue;
        snprintf(names[count++], sizeof names[0], "%s", e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)count, sizeof names[0], name_cmp);
    int n = 0;
    for (int i = 0; i < count; i++) {
        char dir[1024];
        if (snprintf(dir, sizeof dir, "%s/%s", root, names[i]) >= (int)sizeof dir)
            fail_msg("path too long: %s", root);
        n += visit(dir, ctx);
    }
    return n;
}

int test_assemble_trace(const char *dir, nx_program *p, nx_error *err) {
    char path[1024];
    if (snprintf(path, sizeof path, "%s/program.nxs", dir) >= (int)sizeof path) fail_msg("path too long: %s", dir);
    struct stat sb;
    if (stat(path, &sb) != 0) return 0;
    return nx_assemble_file(path, p, err) == 0;
}

static uint64_t bits_of(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

int test_operand_diff(const nx_operand *a, const nx_operand *b, char *why, size_t len) {
    if (a->kind != b->kind || a->dtype != b->dtype || a->ndims != b->ndims ||
        a->start_partition != b->start_partition || a->partition_count != b->partition_count ||
        a->partition_stride != b->partition_stride || a->offset != b->offset ||
        bits_of(a->imm) != bits_of(b->imm) || a->pattern_base != b->pattern_base) {
        snprintf(why, len, "header fields differ (kind %u/%u dtype %u/%u ndims %u/%u start %u/%u "
                 "pc %u/%u pstride %d/%d offset %llu/%llu imm %016llx/%016llx base %lld/%lld)",
                 a->kind, b->kind, a->dtype, b->dtype, a->ndims, b->ndims, a->start_partition,
                 b->start_partition, a->partition_count, b->partition_count, a->partition_stride,
                 b->partition_stride, (unsigned long long)a->offset, (unsigned long long)b->offset,
                 (unsigned long long)bits_of(a->imm), (unsigned long long)bits_of(b->imm),
                 (long long)a->pattern_base, (long long)b->pattern_base);
        return -1;
    }
    for (unsigned k = 0; k < NX_MAX_FREE_DIMS; k++)
        if (a->stride[k] != b->stride[k] || a->count[k] != b->count[k]) {
            snprintf(why, len, "dim %u differs (%d:%u vs %d:%u)", k, a->stride[k], a->count[k],
                     b->stride[k], b->count[k]);
            return -1;
        }
    return 0;
}

int test_insn_diff(const nx_insn *a, const nx_insn *b, char *why, size_t len) {
    if (a->opcode != b->opcode || a->alu0 != b->alu0 || a->alu1 != b->alu1 || a->func != b->func ||
        a->flags != b->flags || a->wait_sem != b->wait_sem || a->inc_sem != b->inc_sem ||
        a->wait_value != b->wait_value || a->wait_span != b->wait_span || a->inc_amount != b->inc_amount ||
        a->iparam[0] != b->iparam[0] || a->iparam[1] != b->iparam[1]) {
        snprintf(why, len, "instruction fields differ");
        return -1;
    }
    for (unsigned i = 0; i < NX_MAX_OPERANDS; i++) {
        char sub[400];
        if (test_operand_diff(&a->op[i], &b->op[i], sub, sizeof sub) != 0) {
            snprintf(why, len, "operand %u: %s", i, sub);
            return -1;
        }
    }
    return 0;
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
                test_coverage_add(c, p->stream[core][e].recs[i].opcode, (nx_engine)e);
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

void test_rng_bytes(test_rng *r, uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(test_rng_next(r) >> 56);
}
