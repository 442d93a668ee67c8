/* The program builder: tensors, SBUF/PSUM bump allocators, semaphores and
 * instruction emission into per-core, per-engine streams. */
#include "builder.h"

#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "fileio.h" /* nx_format_bytes */
#include "validate.h"

struct nx_builder {
    nx_geometry geo;
    nx_program prog;
    uint64_t sbuf_used[NX_MAX_CORES];
    uint64_t psum_used[NX_MAX_CORES];
    nx_src_here last_at; /* the location last interned, and its index */
    uint32_t last_src;
    int have_last;
    uint64_t insns;     /* instructions appended in all streams */
    uint64_t limit;     /* 0: no limit on the program's storage */
    uint64_t beside;    /* counted against limit with it */
    nx_builder_limit hit;
    nx_error why;       /* the message of the emit that hit it */
};

nx_builder *nx_builder_new(const nx_geometry *geo, uint32_t cores) {
    nx_builder *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->geo = *geo;
    nx_program_init(&b->prog);
    memcpy(b->prog.machine, geo->name, sizeof b->prog.machine);
    b->prog.machine[sizeof b->prog.machine - 1] = '\0';
    b->prog.cores = cores;
    return b;
}

const nx_geometry *nx_builder_geometry(const nx_builder *b) { return &b->geo; }

void nx_builder_free(nx_builder *b) {
    if (!b) return;
    nx_program_free(&b->prog);
    free(b);
}

int nx_builder_tensor(nx_builder *b, const char *name, nx_dtype dtype, uint32_t ndims,
                      const uint64_t *shape, nx_tensor_role role, uint64_t *offset_out,
                      nx_error *err) {
    nx_tensor_decl t;
    memset(&t, 0, sizeof t);
    if (strlen(name) >= NX_TENSOR_NAME_MAX)
        return nx_fail(err, "tensor '%s': name longer than %d characters", name,
                       NX_TENSOR_NAME_MAX - 1);
    if (ndims < 1 || ndims > NX_TENSOR_MAX_DIMS)
        return nx_fail(err, "tensor '%s': %u dims (1..%d)", name, ndims, NX_TENSOR_MAX_DIMS);
    if (nx_program_find_tensor(&b->prog, name) >= 0)
        return nx_fail(err, "tensor '%s' is declared twice", name);
    strcpy(t.name, name);
    t.dtype = (uint8_t)dtype;
    t.role = (uint8_t)role;
    t.ndims = (uint8_t)ndims;
    for (uint32_t i = 0; i < ndims; i++) t.shape[i] = shape[i];
    t.offset = (b->prog.hbm_bytes + 63) & ~(uint64_t)63;
    uint64_t bytes = nx_tensor_bytes(&t);
    if (bytes > b->geo.hbm_bytes || t.offset > b->geo.hbm_bytes - bytes)
        return nx_fail(err, "tensor '%s': %llu bytes do not fit in the machine's HBM", name,
                       (unsigned long long)bytes);
    if (nx_program_add_tensor(&b->prog, &t, err) != 0) return -1;
    b->prog.hbm_bytes = (t.offset + bytes + 63) & ~(uint64_t)63;
    if (offset_out) *offset_out = t.offset;
    return 0;
}

int nx_builder_find_tensor(const nx_builder *b, const char *name, uint64_t *offset_out) {
    int i = nx_program_find_tensor(&b->prog, name);
    if (i < 0) return -1;
    *offset_out = b->prog.tensors[i].offset;
    return 0;
}

static int bump(uint64_t *used, uint64_t capacity, uint64_t bytes, uint64_t align,
                uint64_t *offset_out, const char *mem, uint32_t core, nx_error *err) {
    if (align == 0 || (align & (align - 1)) != 0)
        return nx_fail(err, "%s allocation: alignment %llu is not a power of two", mem,
                       (unsigned long long)align);
    uint64_t start = (*used + align - 1) & ~(align - 1);
    if (start > capacity || bytes > capacity - start)
        return nx_fail(err, "%s overflow on core %u: %llu bytes per partition requested, %llu of %llu left",
                       mem, core, (unsigned long long)bytes,
                       (unsigned long long)(capacity > *used ? capacity - *used : 0),
                       (unsigned long long)capacity);
    *offset_out = start;
    *used = start + bytes;
    return 0;
}

int nx_builder_sbuf_alloc(nx_builder *b, uint32_t core, uint64_t bytes, uint64_t align,
                          uint64_t *offset_out, nx_error *err) {
    if (core >= b->prog.cores) return nx_fail(err, "SBUF allocation on core %u of %u", core, b->prog.cores);
    return bump(&b->sbuf_used[core], b->geo.sbuf_partition_bytes, bytes, align, offset_out, "SBUF",
                core, err);
}

int nx_builder_psum_alloc(nx_builder *b, uint32_t core, uint64_t bytes, uint64_t *offset_out,
                          nx_error *err) {
    if (core >= b->prog.cores) return nx_fail(err, "PSUM allocation on core %u of %u", core, b->prog.cores);
    uint64_t align = 4;
    uint64_t bank = b->geo.psum_bank_bytes;
    /* Keep a bank-sized (or smaller) region inside one bank. */
    if (bytes <= bank && bank) {
        uint64_t start = (b->psum_used[core] + 3) & ~(uint64_t)3;
        if (start / bank != (start + bytes - 1) / bank) align = bank;
    }
    return bump(&b->psum_used[core], b->geo.psum_partition_bytes, bytes, align, offset_out, "PSUM",
                core, err);
}

int nx_builder_semaphore(nx_builder *b, uint32_t *sem_out, nx_error *err) {
    if (b->prog.sem_count >= NX_MAX_SEMAPHORES)
        return nx_fail(err, "out of semaphores (at most %u)", NX_MAX_SEMAPHORES);
    *sem_out = b->prog.sem_count++;
    return 0;
}

void nx_builder_set_memory_limit(nx_builder *b, uint64_t limit, uint64_t beside) {
    b->limit = limit;
    b->beside = beside;
}

nx_builder_limit nx_builder_limit_hit(const nx_builder *b, nx_error *why) {
    if (b->hit && why) *why = b->why;
    return b->hit;
}

/* Storage grows by doubling, so summing it at every power of two and then
 * every 1024 instructions sees any limit before the program passes it by
 * more than one growth step. */
#define CHECK_EVERY 1024
static int check_due(uint64_t insns) { return (insns & (insns - 1)) == 0 || insns % CHECK_EVERY == 0; }

int nx_builder_emit(nx_builder *b, uint32_t core, nx_engine engine, const nx_insn *insn,
                    uint32_t *index_out, nx_error *err) {
    if (core >= b->prog.cores) return nx_fail(err, "emit on core %u of %u", core, b->prog.cores);
    if (b->insns >= NX_PROGRAM_MAX_INSNS) {
        b->hit = NX_BUILDER_INSN_CAP;
        nx_fail(&b->why, "more than %u instructions, the most a program may hold", NX_PROGRAM_MAX_INSNS);
        if (err) *err = b->why;
        return -1;
    }
    if (b->limit && check_due(b->insns)) {
        uint64_t heap = nx_program_insn_bytes(&b->prog);
        if (heap > b->limit || b->beside > b->limit - heap) {
            char held[32], beside[32], limit[32];
            b->hit = NX_BUILDER_MEMORY;
            nx_fail(&b->why, "the program being traced holds %s beside the run's %s, more than the memory limit of %s",
                    nx_format_bytes(heap, held, sizeof held), nx_format_bytes(b->beside, beside, sizeof beside),
                    nx_format_bytes(b->limit, limit, sizeof limit));
            if (err) *err = b->why;
            return -1;
        }
    }
    if (nx_program_append(&b->prog, core, engine, insn, err) != 0) return -1;
    b->insns++;
    if (index_out) *index_out = b->prog.stream[core][engine].count - 1;
    return 0;
}

int nx_builder_emit_at(nx_builder *b, uint32_t core, nx_engine engine, const nx_insn *insn,
                       const nx_src_here *at, uint32_t *index_out, nx_error *err) {
    uint32_t index = 0;
    if (nx_builder_emit(b, core, engine, insn, &index, err) != 0) return -1;
    if (index_out) *index_out = index;
    if (!at || !at->file) return 0;
    /* emit helpers pass literals: the same pointers mean the same place */
    if (!b->have_last || b->last_at.file != at->file || b->last_at.func != at->func ||
        b->last_at.line != at->line) {
        if (nx_program_src_intern(&b->prog, at->file, at->line, at->func, &b->last_src, err) != 0) return -1;
        b->last_at = *at;
        b->have_last = 1;
    }
    return nx_program_set_src(&b->prog, core, engine, index, b->last_src, err);
}

const nx_insn *nx_builder_insn(const nx_builder *b, uint32_t core, nx_engine engine, uint32_t index,
                               nx_insn *scratch) {
    return nx_program_insn(&b->prog, core, engine, index, scratch);
}

int nx_builder_set_insn(nx_builder *b, uint32_t core, nx_engine engine, uint32_t index,
                        const nx_insn *insn, nx_error *err) {
    return nx_program_set_insn(&b->prog, core, engine, index, insn, err);
}

uint32_t nx_builder_stream_len(const nx_builder *b, uint32_t core, nx_engine engine) {
    if (core >= NX_MAX_CORES || (unsigned)engine >= NX_ENG_COUNT) return 0;
    return b->prog.stream[core][engine].count;
}

int nx_builder_finish(nx_builder *b, nx_program *out, nx_error *err) {
    if (nx_program_validate(&b->prog, &b->geo, err) != 0) return -1;
    *out = b->prog;
    nx_program_init(&b->prog);
    b->have_last = 0; /* its index belonged to the program moved out */
    memcpy(b->prog.machine, b->geo.name, sizeof b->prog.machine);
    b->prog.machine[sizeof b->prog.machine - 1] = '\0';
    b->prog.cores = out->cores;
    memset(b->sbuf_used, 0, sizeof b->sbuf_used);
    memset(b->psum_used, 0, sizeof b->psum_used);
    return 0;
}

nx_insn nx_insn_make(nx_opcode opcode) {
    nx_insn insn;
    memset(&insn, 0, sizeof insn);
    insn.opcode = (uint8_t)opcode;
    insn.wait_sem = NX_SEM_NONE;
    insn.inc_sem = NX_SEM_NONE;
    return insn;
}

void nx_insn_wait(nx_insn *insn, uint32_t sem, uint32_t value) {
    insn->wait_sem = (uint8_t)sem;
    insn->wait_value = value;
    insn->wait_span = 0;
}

void nx_insn_wait_span(nx_insn *insn, uint32_t first, uint32_t span, uint32_t value) {
    insn->wait_sem = (uint8_t)first;
    insn->wait_value = value;
    insn->wait_span = span >= 2 ? span : 0;
}

void nx_insn_inc(nx_insn *insn, uint32_t sem, uint32_t amount) {
    insn->inc_sem = (uint8_t)sem;
    insn->inc_amount = amount;
}

nx_operand nx_ap(nx_operand_kind kind, nx_dtype dtype, uint32_t start_partition,
                 uint32_t partitions, int32_t partition_stride, uint64_t offset_bytes,
                 uint32_t ndims, const int32_t *strides, const uint32_t *counts) {
    nx_operand op;
    memset(&op, 0, sizeof op);
    op.kind = (uint8_t)kind;
    op.dtype = (uint8_t)dtype;
    op.start_partition = (uint8_t)start_partition;
    op.partition_count = (uint8_t)partitions;
    op.partition_stride = partition_stride;
    op.offset = offset_bytes;
    op.ndims = (uint8_t)(ndims > NX_MAX_FREE_DIMS ? NX_MAX_FREE_DIMS : ndims);
    for (unsigned k = 0; k < op.ndims; k++) {
        op.stride[k] = strides[k];
        op.count[k] = counts[k];
    }
    return op;
}

nx_operand nx_ap_tile(nx_operand_kind kind, nx_dtype dtype, uint32_t start_partition,
                      uint32_t partitions, uint64_t offset_bytes, uint32_t free_elems) {
    int32_t stride = 1;
    return nx_ap(kind, dtype, start_partition, partitions, 0, offset_bytes, 1, &stride, &free_elems);
}

nx_operand nx_ap_hbm_rows(nx_dtype dtype, uint64_t offset_bytes, uint32_t rows, int32_t pitch,
                          uint32_t cols) {
    int32_t stride = 1;
    return nx_ap(NX_OPK_HBM, dtype, 0, rows, pitch, offset_bytes, 1, &stride, &cols);
}

nx_operand nx_imm(double value, nx_dtype dtype) {
    nx_operand op;
    memset(&op, 0, sizeof op);
    op.kind = NX_OPK_IMM;
    op.partition_count = 1; /* one value for every partition */
    op.dtype = (uint8_t)dtype;
    op.imm = value;
    return op;
}

nx_operand nx_pattern(int64_t base, int32_t channel_multiplier, uint32_t partitions,
                      uint32_t ndims, const int32_t *strides, const uint32_t *counts) {
    nx_operand op = nx_ap(NX_OPK_PATTERN, NX_DT_INT32, 0, partitions, channel_multiplier, 0, ndims,
                          strides, counts);
    op.pattern_base = base;
    return op;
}
