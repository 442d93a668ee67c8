/* Generic static validation of instructions and their memory footprints.
 * Opcode-specific rules live in each instruction's nx_validate_<id>. */
#include "validate.h"

#include <inttypes.h>
#include <string.h>

#include "dtype.h"
#include "opcodes.h"

typedef __int128 wide;

/* Decimal text of a wide integer (messages: spans of a bad access pattern
 * can pass 64 bits). */
static const char *wide_text(wide v, char buf[48]) {
    char tmp[48];
    int neg = v < 0, n = 0;
    unsigned __int128 u = neg ? -(unsigned __int128)v : (unsigned __int128)v;
    do {
        tmp[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u && n < 47);
    int o = 0;
    if (neg) buf[o++] = '-';
    while (n) buf[o++] = tmp[--n];
    buf[o] = '\0';
    return buf;
}

/* Element-index extent of the free dims: [min, max] over all iterations. */
static void free_extent(const nx_operand *op, wide *min, wide *max) {
    *min = 0;
    *max = 0;
    for (unsigned k = 0; k < op->ndims && k < NX_MAX_FREE_DIMS; k++) {
        wide span = (wide)op->stride[k] * (wide)(op->count[k] ? op->count[k] - 1 : 0);
        if (span < 0) *min += span;
        else *max += span;
    }
}

/* Byte span [lo, hi) as wide integers (lo may be negative for a bad AP). */
static void span_wide(const nx_operand *op, wide *lo, wide *hi) {
    wide mn, mx;
    free_extent(op, &mn, &mx);
    if (op->kind == NX_OPK_HBM && op->partition_count > 1) {
        wide ps = (wide)op->partition_stride * (op->partition_count - 1);
        if (ps < 0) mn += ps;
        else mx += ps;
    }
    wide size = (wide)nx_dtype_size((nx_dtype)op->dtype);
    *lo = (wide)op->offset + mn * size;
    *hi = (wide)op->offset + (mx + 1) * size;
}

void nx_operand_span(const nx_operand *op, uint64_t *lo, uint64_t *hi) {
    wide l, h;
    span_wide(op, &l, &h);
    *lo = l < 0 ? 0 : (uint64_t)l;
    *hi = h < 0 ? 0 : (uint64_t)h;
}

static const char *kind_name(unsigned kind) {
    static const char *const names[NX_OPK_COUNT] = {"none", "hbm", "sbuf", "psum", "imm", "pat"};
    return kind < NX_OPK_COUNT ? names[kind] : "?";
}

/* Start-partition rule of the compute engines, published for 128 partitions
 * (docs/parts/hardware.md, "Memories"): start 0 when more than 64 partitions
 * are used; 0 or 64 for 33..64; 0/32/64/96 for <= 32. Generalised to
 * quarters/halves of the array. */
static int start_partition_ok(uint32_t start, uint32_t count, uint32_t partitions) {
    uint32_t quarter = partitions / 4 ? partitions / 4 : 1;
    uint32_t half = partitions / 2 ? partitions / 2 : 1;
    if (count > half) return start == 0;
    if (count > quarter) return start % half == 0;
    return start % quarter == 0;
}

int nx_check_access(const nx_operand *op, nx_engine engine, const nx_geometry *geo,
                    uint64_t hbm_bytes, const char *what, nx_error *err) {
    if (!nx_dtype_is_valid(op->dtype))
        return nx_fail(err, "%s: invalid dtype code %u", what, op->dtype);
    if (op->ndims > NX_MAX_FREE_DIMS)
        return nx_fail(err, "%s: %u free dims (at most %u)", what, op->ndims, NX_MAX_FREE_DIMS);
    for (unsigned k = 0; k < op->ndims; k++)
        if (op->count[k] == 0) return nx_fail(err, "%s: free dim %u has count 0", what, k);
    if (op->partition_count < 1 || op->partition_count > geo->partitions)
        return nx_fail(err, "%s: %u partitions (1..%u)", what, op->partition_count, geo->partitions);
    size_t size = nx_dtype_size((nx_dtype)op->dtype);
    if (op->offset % size != 0)
        return nx_fail(err, "%s: offset %llu is not a multiple of the %s element size %zu", what,
                       (unsigned long long)op->offset, nx_dtype_name((nx_dtype)op->dtype), size);
    int compute = engine != NX_ENG_SP;
    uint64_t free_elems = nx_operand_free_elems(op);
    wide lo, hi;
    span_wide(op, &lo, &hi);
    if (op->kind == NX_OPK_HBM) {
        if (compute)
            return nx_fail(err, "%s: engine %s cannot access HBM (only DMA can)", what,
                           nx_engine_name(engine));
        if (op->start_partition != 0)
            return nx_fail(err, "%s: HBM access patterns have no start partition (got %u)", what,
                           op->start_partition);
        char lo_s[48], hi_s[48];
        if (lo < 0 || hi > (wide)hbm_bytes)
            return nx_fail(err, "%s: HBM bytes [%s, %s) outside the program's HBM [0, %llu)", what,
                           wide_text(lo, lo_s), wide_text(hi, hi_s), (unsigned long long)hbm_bytes);
        return 0;
    }
    int sbuf = op->kind == NX_OPK_SBUF;
    uint64_t partition_bytes = sbuf ? geo->sbuf_partition_bytes : geo->psum_partition_bytes;
    const char *mem = sbuf ? "SBUF" : "PSUM";
    if (op->partition_stride != 0)
        return nx_fail(err, "%s: %s access patterns have no partition stride (got %d)", what, mem,
                       op->partition_stride);
    if ((uint32_t)op->start_partition + op->partition_count > geo->partitions)
        return nx_fail(err, "%s: partitions [%u, %u) exceed the %u partitions of %s", what,
                       op->start_partition, op->start_partition + op->partition_count,
                       geo->partitions, mem);
    if (compute && !start_partition_ok(op->start_partition, op->partition_count, geo->partitions))
        return nx_fail(err,
                       "%s: start partition %u not allowed for %u partitions (> %u partitions: 0; "
                       "> %u: a multiple of %u; else a multiple of %u)",
                       what, op->start_partition, op->partition_count, geo->partitions / 2,
                       geo->partitions / 4, geo->partitions / 2, geo->partitions / 4);
    char lo_s[48], hi_s[48];
    if (lo < 0 || hi > (wide)partition_bytes)
        return nx_fail(err, "%s: bytes [%s, %s) of each partition outside %s's %llu bytes per partition", what,
                       wide_text(lo, lo_s), wide_text(hi, hi_s), mem, (unsigned long long)partition_bytes);
    uint64_t free_max = sbuf ? geo->sbuf_free_elems_max : geo->psum_free_elems_max;
    if (compute && free_elems > free_max)
        return nx_fail(err, "%s: %llu elements per partition exceed the %s free-size limit of %llu",
                       what, (unsigned long long)free_elems, mem, (unsigned long long)free_max);
    return 0;
}

/* Which memories an engine may read and write (docs/parts/hardware.md,
 * "Engines"): PE reads SBUF
 * and writes PSUM; POOL never touches PSUM; DMA (SP) moves HBM/SBUF. */
static int engine_allows(nx_engine engine, unsigned kind, int writes) {
    switch (engine) {
    case NX_ENG_PE: return writes ? kind == NX_OPK_PSUM : kind == NX_OPK_SBUF;
    case NX_ENG_POOL: return kind != NX_OPK_PSUM && kind != NX_OPK_HBM;
    case NX_ENG_DVE:
    case NX_ENG_ACT: return kind != NX_OPK_HBM;
    case NX_ENG_SP: return kind != NX_OPK_PSUM;
    default: return 0;
    }
}

static int check_slot(const nx_insn *insn, const nx_opcode_info *info, unsigned s,
                      nx_engine engine, const nx_geometry *geo, uint64_t hbm_bytes,
                      nx_error *err) {
    const nx_operand *op = &insn->op[s];
    const nx_slot_spec *spec = &info->slot[s];
    if (!spec->name) {
        nx_operand zero;
        memset(&zero, 0, sizeof zero);
        if (op->kind != NX_OPK_NONE || memcmp(op, &zero, sizeof zero) != 0)
            return nx_fail(err, "operand slot %u is not used by '%s' but is not empty", s,
                           info->mnemonic);
        return 0;
    }
    if (op->kind == NX_OPK_NONE) {
        if (spec->required) return nx_fail(err, "missing required operand '%s'", spec->name);
        return 0;
    }
    if (op->kind >= NX_OPK_COUNT || !(spec->kinds & NX_KIND_BIT(op->kind)))
        return nx_fail(err, "operand '%s': kind %s not allowed", spec->name, kind_name(op->kind));
    if (nx_operand_is_memory(op)) {
        int writes = (spec->access & NX_ACCESS_WRITE) != 0;
        if (!engine_allows(engine, op->kind, writes))
            return nx_fail(err, "operand '%s': engine %s cannot %s %s", spec->name,
                           nx_engine_name(engine), writes ? "write" : "read", kind_name(op->kind));
        /* The operand an indirect DMA indexes is addressed by the offsets,
         * not by its partition count: its rows [0, bound) are the opcode's
         * check (nx_validate_DMA_COPY), so only one row is checked here (a
         * tile of 128 tokens may scatter into a table of 7 rows). */
        int indirect = insn->opcode == NX_OP_DMA_COPY && insn->op[2].kind != NX_OPK_NONE;
        if (indirect && s == ((insn->flags & NX_FLAG_SCATTER) ? 0u : 1u)) {
            nx_operand row = *op;
            row.partition_count = 1;
            return nx_check_access(&row, engine, geo, hbm_bytes, spec->name, err);
        }
        return nx_check_access(op, engine, geo, hbm_bytes, spec->name, err);
    }
    if (!nx_dtype_is_valid(op->dtype))
        return nx_fail(err, "operand '%s': invalid dtype code %u", spec->name, op->dtype);
    if (op->kind == NX_OPK_PATTERN) {
        if (nx_dtype_is_float((nx_dtype)op->dtype))
            return nx_fail(err, "operand '%s': a pattern has an integer dtype, not %s", spec->name,
                           nx_dtype_name((nx_dtype)op->dtype));
        if (op->ndims > NX_MAX_FREE_DIMS)
            return nx_fail(err, "operand '%s': %u free dims (at most %u)", spec->name, op->ndims,
                           NX_MAX_FREE_DIMS);
        if (op->partition_count < 1 || op->partition_count > geo->partitions)
            return nx_fail(err, "operand '%s': %u partitions (1..%u)", spec->name,
                           op->partition_count, geo->partitions);
        for (unsigned k = 0; k < op->ndims; k++)
            if (op->count[k] == 0)
                return nx_fail(err, "operand '%s': free dim %u has count 0", spec->name, k);
        /* Its values are computed in 64-bit integer arithmetic
         * (isa/access.c): every value, and so every partial sum on the way
         * to one, must lie in the int64 range. */
        wide mn, mx;
        free_extent(op, &mn, &mx);
        wide cm = (wide)op->partition_stride * (wide)(op->partition_count - 1);
        wide lo = (wide)op->pattern_base + mn + (cm < 0 ? cm : 0);
        wide hi = (wide)op->pattern_base + mx + (cm > 0 ? cm : 0);
        if (lo < (wide)INT64_MIN || hi > (wide)INT64_MAX) {
            char lo_s[48], hi_s[48];
            return nx_fail(err, "operand '%s': pattern values [%s, %s] leave the signed 64-bit range",
                           spec->name, wide_text(lo, lo_s), wide_text(hi, hi_s));
        }
    }
    return 0;
}

int nx_insn_validate(const nx_insn *insn, nx_engine engine, const nx_geometry *geo,
                     uint64_t hbm_bytes, uint32_t sem_count, nx_error *err) {
    const nx_opcode_info *info = nx_opcode_lookup(insn->opcode);
    if (!info) return nx_fail(err, "unknown opcode %u", insn->opcode);
    if ((unsigned)engine >= NX_ENG_COUNT || !(info->engines & NX_ENG_BIT(engine)))
        return nx_fail(err, "'%s' cannot run on engine %s", info->mnemonic,
                       nx_engine_name(engine) ? nx_engine_name(engine) : "?");
    if (insn->alu0 >= NX_ALU_COUNT || (!(info->params & NX_PARAM_ALU0) && insn->alu0))
        return nx_fail(err, "op0 = %u not valid here", insn->alu0);
    if (insn->alu1 >= NX_ALU_COUNT || (!(info->params & NX_PARAM_ALU1) && insn->alu1))
        return nx_fail(err, "op1 = %u not valid here", insn->alu1);
    if (insn->func >= NX_ACT_COUNT || (!(info->params & NX_PARAM_FUNC) && insn->func))
        return nx_fail(err, "func = %u not valid here", insn->func);
    if (insn->flags & ~info->flags)
        return nx_fail(err, "flags 0x%x not accepted (accepted: 0x%x)", insn->flags, info->flags);
    for (unsigned i = 0; i < 2; i++)
        if (!info->iparam_name[i] && insn->iparam[i])
            return nx_fail(err, "integer parameter %u is not used but is %d", i, insn->iparam[i]);
    if (insn->wait_sem != NX_SEM_NONE && insn->wait_sem >= sem_count)
        return nx_fail(err, "waits on semaphore %u; the program has %u", insn->wait_sem, sem_count);
    if (insn->wait_sem == NX_SEM_NONE && insn->wait_span)
        return nx_fail(err, "wait span %u without a semaphore", insn->wait_span);
    if (insn->wait_span == 1)
        return nx_fail(err, "wait span 1 (a single semaphore has span 0)");
    if (insn->wait_span && insn->wait_sem + insn->wait_span > sem_count)
        return nx_fail(err, "waits on semaphores %u..%u; the program has %u", insn->wait_sem,
                       insn->wait_sem + insn->wait_span - 1, sem_count);
    if (insn->inc_sem != NX_SEM_NONE && insn->inc_sem >= sem_count)
        return nx_fail(err, "increments semaphore %u; the program has %u", insn->inc_sem, sem_count);
    if (insn->wait_sem == NX_SEM_NONE && insn->wait_value)
        return nx_fail(err, "wait value %u without a semaphore", insn->wait_value);
    if (insn->inc_sem == NX_SEM_NONE && insn->inc_amount)
        return nx_fail(err, "increment %u without a semaphore", insn->inc_amount);
    if (insn->inc_sem != NX_SEM_NONE && insn->inc_amount == 0)
        return nx_fail(err, "increment of semaphore %u by 0", insn->inc_sem);
    for (unsigned s = 0; s < NX_MAX_OPERANDS; s++)
        if (check_slot(insn, info, s, engine, geo, hbm_bytes, err) != 0) return -1;
    return info->validate(insn, engine, geo, err);
}

/* Rows [0, bound) an indirect DMA's offsets may name, as a box. */
static void indexed_box(const nx_operand *op, uint32_t bound, nx_footprint *fp) {
    nx_operand one = *op;
    one.partition_count = 1;
    uint64_t lo, hi;
    nx_operand_span(&one, &lo, &hi);
    if (op->kind == NX_OPK_HBM) {
        wide rows = (wide)op->partition_stride * (wide)(bound ? bound - 1 : 0) *
                    (wide)nx_dtype_size((nx_dtype)op->dtype);
        wide l = (wide)lo + (rows < 0 ? rows : 0), h = (wide)hi + (rows > 0 ? rows : 0);
        fp->lo = l < 0 ? 0 : (uint64_t)l;
        fp->hi = h < 0 ? 0 : (uint64_t)h;
        fp->p_lo = fp->p_hi = 0;
    } else {
        fp->lo = lo;
        fp->hi = hi;
        fp->p_lo = op->start_partition;
        fp->p_hi = (uint16_t)(op->start_partition + bound);
    }
}

int nx_insn_footprint(const nx_insn *insn, nx_footprint out[NX_MAX_OPERANDS]) {
    const nx_opcode_info *info = nx_opcode_lookup(insn->opcode);
    if (!info) return 0;
    /* Indirect DMA: the operand the offsets index may be touched on any of
     * rows [0, bound), so its box widens to all of them. */
    int indirect = insn->opcode == NX_OP_DMA_COPY && insn->op[2].kind != NX_OPK_NONE;
    int indexed_slot = indirect ? ((insn->flags & NX_FLAG_SCATTER) ? 0 : 1) : -1;
    int n = 0;
    for (unsigned s = 0; s < NX_MAX_OPERANDS; s++) {
        const nx_operand *op = &insn->op[s];
        if (!info->slot[s].name || !nx_operand_is_memory(op)) continue;
        nx_footprint *fp = &out[n++];
        fp->kind = op->kind;
        fp->slot = (uint8_t)s;
        if ((int)s == indexed_slot) {
            indexed_box(op, (uint32_t)insn->iparam[1], fp);
        } else {
            nx_operand_span(op, &fp->lo, &fp->hi);
            fp->p_lo = op->kind == NX_OPK_HBM ? 0 : op->start_partition;
            fp->p_hi = op->kind == NX_OPK_HBM ? 0
                                               : (uint16_t)(op->start_partition + op->partition_count);
        }
        fp->read = (info->slot[s].access & NX_ACCESS_READ) != 0;
        fp->write = (info->slot[s].access & NX_ACCESS_WRITE) != 0;
        if (fp->write && (insn->flags & NX_FLAG_ACCUMULATE)) fp->read = 1;
    }
    return n;
}

int nx_check_same_shape(const nx_operand *a, const char *a_name, const nx_operand *b,
                        const char *b_name, nx_error *err) {
    if (a->partition_count != b->partition_count)
        return nx_fail(err, "%s has %u partitions, %s has %u", a_name, a->partition_count, b_name,
                       b->partition_count);
    uint64_t ea = nx_operand_free_elems(a), eb = nx_operand_free_elems(b);
    if (ea != eb)
        return nx_fail(err, "%s has %" PRIu64 " elements per partition, %s has %" PRIu64, a_name,
                       ea, b_name, eb);
    return 0;
}

int nx_check_scalar(const nx_operand *s, const char *s_name, const nx_operand *in, nx_error *err) {
    if (s->kind == NX_OPK_IMM) return 0;
    if (s->partition_count != in->partition_count)
        return nx_fail(err, "%s has %u partitions, in has %u", s_name, s->partition_count,
                       in->partition_count);
    uint64_t n = nx_operand_free_elems(s);
    if (n != 1)
        return nx_fail(err, "%s has %" PRIu64 " elements per partition, a scalar has 1", s_name, n);
    return 0;
}

int nx_check_bitvec(const nx_alu_op *ops, uint32_t nops, nx_engine engine, const nx_operand *slots,
                    const char *const *names, uint32_t nslots, nx_error *err) {
    int bitvec = -1, arith = -1;
    for (uint32_t i = 0; i < nops; i++) {
        if (ops[i] == NX_ALU_BYPASS) continue;
        if (nx_alu_is_bitvec(ops[i])) {
            if (bitvec < 0) bitvec = (int)i;
        } else if (arith < 0) {
            arith = (int)i;
        }
    }
    if (bitvec < 0) return 0;
    if (arith >= 0) {
        int a = bitvec < arith ? bitvec : arith, b = bitvec < arith ? arith : bitvec;
        return nx_fail(err, "op%d %s and op%d %s: a bitvec and an arithmetic op do not mix in one instruction", a,
                       nx_alu_name(ops[a]), b, nx_alu_name(ops[b]));
    }
    if (engine != NX_ENG_DVE)
        return nx_fail(err, "op%d %s: a bitvec op runs on %s only, not %s", bitvec, nx_alu_name(ops[bitvec]),
                       nx_engine_name(NX_ENG_DVE), nx_engine_name(engine));
    for (uint32_t s = 0; s < nslots; s++) {
        const nx_operand *o = &slots[s];
        if (o->kind == NX_OPK_NONE || nx_dtype_is_float((nx_dtype)o->dtype) == 0) continue;
        return nx_fail(err, "%s: dtype %s: a bitvec op (%s) takes integer dtypes", names[s],
                       nx_dtype_name((nx_dtype)o->dtype), nx_alu_name(ops[bitvec]));
    }
    return 0;
}
