/* How a program holds its instructions (isa/program.h): per stream a column
 * of 48-byte records (nx_insn_rec) whose operand slots index one pool of
 * distinct operand values per program. A kernel names the same few tiles,
 * immediates and patterns over and over, so the pool stays small while the
 * records grow with the program; an nx_insn (384 bytes, most of it five
 * operand slots) exists only where a consumer asks for one, in its own
 * scratch. The encoding, the container and every consumer's view of an
 * instruction are unchanged: nx_program_insn gives back every field bit for
 * bit as it was appended. */
#include <stdlib.h>
#include <string.h>

#include "program.h"

_Static_assert(sizeof(nx_insn_rec) == 48, "nx_insn_rec is documented as 48 bytes (docs/parts/encoding.md)");

/* Operands are equal when every field is (imm by its bits: -0 is not +0 and
 * NaN payloads stay apart); padding never takes part. */
static int operand_same(const nx_operand *a, const nx_operand *b) {
    return a->kind == b->kind && a->dtype == b->dtype && a->ndims == b->ndims &&
           a->start_partition == b->start_partition && a->partition_count == b->partition_count &&
           a->partition_stride == b->partition_stride && a->offset == b->offset &&
           memcmp(&a->imm, &b->imm, sizeof a->imm) == 0 && a->pattern_base == b->pattern_base &&
           memcmp(a->stride, b->stride, sizeof a->stride) == 0 &&
           memcmp(a->count, b->count, sizeof a->count) == 0;
}

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v;
    h *= 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static uint64_t operand_hash(const nx_operand *o) {
    uint64_t imm;
    memcpy(&imm, &o->imm, sizeof imm);
    uint64_t h = mix(0, (uint64_t)o->kind | (uint64_t)o->dtype << 8 | (uint64_t)o->ndims << 16 |
                            (uint64_t)o->start_partition << 24 | (uint64_t)o->partition_count << 32);
    h = mix(h, (uint32_t)o->partition_stride);
    h = mix(h, o->offset);
    h = mix(h, imm);
    h = mix(h, (uint64_t)o->pattern_base);
    for (unsigned k = 0; k < NX_MAX_FREE_DIMS; k++)
        h = mix(h, (uint64_t)(uint32_t)o->stride[k] << 32 | o->count[k]);
    return h;
}

/* A copy with zeroed padding, so that the pool's entries are deterministic. */
static void operand_copy(nx_operand *dst, const nx_operand *src) {
    memset(dst, 0, sizeof *dst);
    dst->kind = src->kind;
    dst->dtype = src->dtype;
    dst->ndims = src->ndims;
    dst->start_partition = src->start_partition;
    dst->partition_count = src->partition_count;
    dst->partition_stride = src->partition_stride;
    dst->offset = src->offset;
    memcpy(&dst->imm, &src->imm, sizeof dst->imm);
    dst->pattern_base = src->pattern_base;
    memcpy(dst->stride, src->stride, sizeof dst->stride);
    memcpy(dst->count, src->count, sizeof dst->count);
}

/* Rebuilds the hash with `slots` (a power of two) slots. 0 or -1 (OOM). */
static int rehash(nx_operand_pool *pool, uint32_t slots) {
    uint32_t *t = calloc(slots, sizeof *t);
    if (!t) return -1;
    for (uint32_t i = 0; i < pool->count; i++) {
        uint32_t at = (uint32_t)operand_hash(&pool->ops[i]) & (slots - 1);
        while (t[at] != 0) at = (at + 1) & (slots - 1);
        t[at] = i + 1;
    }
    free(pool->slots);
    pool->slots = t;
    pool->slot_count = slots;
    return 0;
}

/* The pool index of op, added if new. 0, or -1 (out of memory). */
static int intern(nx_operand_pool *pool, const nx_operand *op, uint32_t *index_out, nx_error *err) {
    /* at most half full, so probes stay short and always find an empty slot */
    if (pool->count >= pool->slot_count / 2) {
        if (pool->slot_count >= (1u << 31))
            return nx_fail(err, "program: more than %u distinct operands", pool->count);
        if (rehash(pool, pool->slot_count ? pool->slot_count * 2 : 64) != 0)
            return nx_fail(err, "program: out of memory for %u distinct operands", pool->count + 1);
    }
    uint32_t mask = pool->slot_count - 1;
    uint32_t at = (uint32_t)operand_hash(op) & mask;
    for (; pool->slots[at] != 0; at = (at + 1) & mask)
        if (operand_same(&pool->ops[pool->slots[at] - 1], op)) {
            *index_out = pool->slots[at] - 1;
            return 0;
        }
    if (pool->count == pool->capacity) {
        uint32_t cap = pool->capacity ? pool->capacity * 2 : 32;
        nx_operand *grown = realloc(pool->ops, (size_t)cap * sizeof *grown);
        if (!grown) return nx_fail(err, "program: out of memory for %u distinct operands", pool->count + 1);
        pool->ops = grown;
        pool->capacity = cap;
    }
    operand_copy(&pool->ops[pool->count], op);
    pool->slots[at] = pool->count + 1;
    *index_out = pool->count++;
    return 0;
}

/* insn as a record of p (its operands interned). A slot that repeats the
 * same slot of `prev` (the stream's previous record, or NULL), as a kernel's
 * consecutive instructions often do, skips the hash. 0 or -1. */
static int make_rec(nx_program *p, const nx_insn *insn, const nx_insn_rec *prev, nx_insn_rec *r,
                    nx_error *err) {
    memset(r, 0, sizeof *r);
    r->opcode = insn->opcode;
    r->alu0 = insn->alu0;
    r->alu1 = insn->alu1;
    r->func = insn->func;
    r->flags = insn->flags;
    r->wait_sem = insn->wait_sem;
    r->inc_sem = insn->inc_sem;
    r->wait_value = insn->wait_value;
    r->inc_amount = insn->inc_amount;
    r->iparam[0] = insn->iparam[0];
    r->iparam[1] = insn->iparam[1];
    r->wait_span = insn->wait_span;
    for (unsigned k = 0; k < NX_MAX_OPERANDS; k++) {
        if (prev && operand_same(&p->operands.ops[prev->op[k]], &insn->op[k]))
            r->op[k] = prev->op[k];
        else if (intern(&p->operands, &insn->op[k], &r->op[k], err) != 0)
            return -1;
    }
    return 0;
}

int nx_program_append(nx_program *p, uint32_t core, nx_engine engine, const nx_insn *insn,
                      nx_error *err) {
    if (core >= NX_MAX_CORES || (unsigned)engine >= NX_ENG_COUNT)
        return nx_fail(err, "program: no stream for core %u engine %d", core, (int)engine);
    nx_stream *s = &p->stream[core][engine];
    if (s->count == s->capacity) {
        if (s->capacity >= UINT32_MAX / 2)
            return nx_fail(err, "program: stream core %u %s is full", core, nx_engine_name(engine));
        uint32_t cap = s->capacity ? s->capacity * 2 : 64;
        nx_insn_rec *grown = realloc(s->recs, (size_t)cap * sizeof *grown);
        if (!grown) return nx_fail(err, "program: out of memory growing a stream to %u instructions", cap);
        s->recs = grown;
        if (s->src) { /* the source column grows with the stream */
            uint32_t *src = realloc(s->src, (size_t)cap * sizeof *src);
            if (!src) return nx_fail(err, "program: out of memory growing a stream to %u instructions", cap);
            s->src = src;
        }
        s->capacity = cap;
    }
    if (make_rec(p, insn, s->count ? &s->recs[s->count - 1] : NULL, &s->recs[s->count], err) != 0) return -1;
    if (s->src) s->src[s->count] = 0;
    s->count++;
    return 0;
}

const nx_insn *nx_program_insn(const nx_program *p, uint32_t core, nx_engine engine, uint32_t index,
                               nx_insn *scratch) {
    if (core >= NX_MAX_CORES || (unsigned)engine >= NX_ENG_COUNT) return NULL;
    const nx_stream *s = &p->stream[core][engine];
    return index < s->count ? nx_program_expand(p, &s->recs[index], scratch) : NULL;
}

int nx_program_set_insn(nx_program *p, uint32_t core, nx_engine engine, uint32_t index,
                        const nx_insn *insn, nx_error *err) {
    if (core >= NX_MAX_CORES || (unsigned)engine >= NX_ENG_COUNT ||
        index >= p->stream[core][engine].count)
        return nx_fail(err, "program: no instruction %u on core %u engine %d to replace", index, core,
                       (int)engine);
    nx_insn_rec r;
    if (make_rec(p, insn, NULL, &r, err) != 0) return -1;
    p->stream[core][engine].recs[index] = r;
    return 0;
}

uint64_t nx_program_insn_bytes(const nx_program *p) {
    uint64_t n = (uint64_t)p->operands.capacity * sizeof(nx_operand) +
                 (uint64_t)p->operands.slot_count * sizeof(uint32_t);
    for (unsigned c = 0; c < NX_MAX_CORES; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++)
            n += (uint64_t)p->stream[c][e].capacity * sizeof(nx_insn_rec);
    return n;
}
