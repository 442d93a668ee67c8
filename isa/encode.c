/* The 320-byte instruction word <-> nx_insn (layout: isa/encode.h,
 * docs/parts/encoding.md).
 *
 * The word is written and read byte by byte (little-endian), never by copying
 * structs, so the encoding does not depend on the host's layout or padding.
 *
 * The decoder accepts only canonical words: every byte is either a field the
 * opcode's row uses or must be zero, enums are in range and NaN immediates
 * carry the canonical quiet-NaN bits. Hence encode(decode(w)) == w for every
 * accepted w, which is what makes the .nxb container byte-reproducible.
 * Machine geometry (partition counts, memory sizes, engine placement) is not
 * checked here: that is nx_program_validate's job. */
#include "encode.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "bytes.h"
#include "opcodes.h"

/* ---- word layout (byte offsets) ---- */
enum {
    W_OPCODE = 0,
    W_ALU0 = 1,
    W_ALU1 = 2,
    W_FUNC = 3,
    W_FLAGS = 4,
    W_WAIT_SEM = 6,
    W_INC_SEM = 7,
    W_WAIT_VALUE = 8,
    W_INC_AMOUNT = 12,
    W_IPARAM0 = 16,
    W_IPARAM1 = 20,
    W_WAIT_SPAN = 24,
    W_RESERVED0 = 25, /* .. 31 */
    W_OPERANDS = 32,  /* + NX_OPERAND_BYTES * slot */
    W_RESERVED1 = W_OPERANDS + NX_MAX_OPERANDS * NX_OPERAND_BYTES, /* 312 .. 319 */
};
/* Operand layout, relative to the slot's first byte. */
enum {
    O_KIND = 0,
    O_DTYPE = 1,
    O_NDIMS = 2,
    O_START = 3,
    O_PCOUNT = 4,
    O_RESERVED0 = 5, /* .. 7 */
    O_PSTRIDE = 8,
    O_RESERVED1 = 12, /* .. 15 */
    O_VALUE = 16,
    O_STRIDE = 24, /* 4 x i32 */
    O_COUNT = 40,  /* 4 x u32 */
};

_Static_assert(W_RESERVED1 == 312, "operand slots end at byte 312");
_Static_assert(O_COUNT + 4 * NX_MAX_FREE_DIMS == NX_OPERAND_BYTES, "operand is 56 bytes");
_Static_assert(NX_MAX_FREE_DIMS == 4, "the word has room for 4 free dims");

#define NX_PARTITIONS_MAX NX_MAX_PARTITIONS
#define CANONICAL_QNAN 0x7ff8000000000000ull
#define CANONICAL_NEG_QNAN 0xfff8000000000000ull

/* Two's complement <-> signed without implementation-defined conversions. */
static uint32_t i32_bits(int32_t v) { return (uint32_t)v; }
static int32_t i32_from_bits(uint32_t u) {
    return u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) + INT32_MIN;
}
static uint64_t i64_bits(int64_t v) { return (uint64_t)v; }
static int64_t i64_from_bits(uint64_t u) {
    return u <= INT64_MAX ? (int64_t)u : (int64_t)(u - 0x8000000000000000ull) + INT64_MIN;
}
/* IEEE-754 binary64 bits of a double (this is a scalar reinterpretation, not a
 * struct copy); NaN becomes the canonical quiet NaN of its sign. */
static uint64_t imm_bits(double v) {
    if (isnan(v)) return signbit(v) ? CANONICAL_NEG_QNAN : CANONICAL_QNAN;
    return nx_f64_bits(v);
}
static int bits_are_nan(uint64_t u) {
    return ((u >> 52) & 0x7ff) == 0x7ff && (u & 0x000fffffffffffffull) != 0;
}

/* ---- encode ---- */

static void encode_operand(const nx_operand *op, uint8_t *w) {
    memset(w, 0, NX_OPERAND_BYTES);
    if (op->kind == NX_OPK_NONE) return; /* an empty slot has no content */
    w[O_KIND] = op->kind;
    w[O_DTYPE] = op->dtype;
    if (op->kind == NX_OPK_IMM) { /* only kind, dtype and the value's bits */
        nx_store_le64(w + O_VALUE, imm_bits(op->imm));
        return;
    }
    w[O_NDIMS] = op->ndims;
    w[O_START] = op->start_partition;
    w[O_PCOUNT] = op->partition_count;
    nx_store_le32(w + O_PSTRIDE, i32_bits(op->partition_stride));
    nx_store_le64(w + O_VALUE, op->kind == NX_OPK_PATTERN ? i64_bits(op->pattern_base) : op->offset);
    /* Dims past ndims are not part of the operand: always written as zero. */
    for (unsigned k = 0; k < NX_MAX_FREE_DIMS && k < op->ndims; k++) {
        nx_store_le32(w + O_STRIDE + 4 * k, i32_bits(op->stride[k]));
        nx_store_le32(w + O_COUNT + 4 * k, op->count[k]);
    }
}

void nx_insn_encode(const nx_insn *insn, uint8_t word[NX_INSN_WORD_BYTES]) {
    memset(word, 0, NX_INSN_WORD_BYTES);
    word[W_OPCODE] = insn->opcode;
    word[W_ALU0] = insn->alu0;
    word[W_ALU1] = insn->alu1;
    word[W_FUNC] = insn->func;
    nx_store_le16(word + W_FLAGS, insn->flags);
    word[W_WAIT_SEM] = insn->wait_sem;
    word[W_INC_SEM] = insn->inc_sem;
    nx_store_le32(word + W_WAIT_VALUE, insn->wait_value);
    nx_store_le32(word + W_INC_AMOUNT, insn->inc_amount);
    nx_store_le32(word + W_IPARAM0, i32_bits(insn->iparam[0]));
    nx_store_le32(word + W_IPARAM1, i32_bits(insn->iparam[1]));
    word[W_WAIT_SPAN] = (uint8_t)insn->wait_span;
    for (unsigned i = 0; i < NX_MAX_OPERANDS; i++)
        encode_operand(&insn->op[i], word + W_OPERANDS + NX_OPERAND_BYTES * i);
}

/* ---- decode ---- */

/* Name of the operand field at byte `off` of an operand (for messages). */
static const char *operand_field(unsigned off) {
    static const char *const names[] = {"kind", "dtype", "ndims", "start_partition",
                                        "partition_count", "reserved", "reserved", "reserved"};
    if (off < 8) return names[off];
    if (off < O_RESERVED1) return "partition_stride";
    if (off < O_VALUE) return "reserved";
    if (off < O_STRIDE) return "value";
    if (off < O_COUNT) {
        static const char *const s[] = {"stride[0]", "stride[1]", "stride[2]", "stride[3]"};
        return s[(off - O_STRIDE) / 4];
    }
    static const char *const c[] = {"count[0]", "count[1]", "count[2]", "count[3]"};
    return c[(off - O_COUNT) / 4];
}

/* Context for messages about one operand slot. */
typedef struct slot_ctx {
    const uint8_t *w;     /* the slot's first byte */
    unsigned base;        /* its byte offset in the word */
    const char *label;    /* slot name from the row, or "slotN" */
    const char *mnemonic;
} slot_ctx;

static int slot_fail_zero(const slot_ctx *s, unsigned off, const char *why, nx_error *err) {
    return nx_fail(err, "instruction word: byte %u (%s.%s): must be 0 %s, found 0x%02x",
                   s->base + off, s->label, operand_field(off), why, s->w[off]);
}

/* Bytes [from, to) of the slot must be zero; `why` says why in the message. */
static int slot_require_zero(const slot_ctx *s, unsigned from, unsigned to, const char *why,
                             nx_error *err) {
    for (unsigned off = from; off < to; off++)
        if (s->w[off] != 0) return slot_fail_zero(s, off, why, err);
    return 0;
}

static int decode_dims(const slot_ctx *s, nx_operand *op, nx_error *err) {
    unsigned ndims = s->w[O_NDIMS];
    if (ndims > NX_MAX_FREE_DIMS)
        return nx_fail(err, "instruction word: byte %u (%s.ndims): %u is more than %d free dims",
                       s->base + O_NDIMS, s->label, ndims, NX_MAX_FREE_DIMS);
    op->ndims = (uint8_t)ndims;
    for (unsigned k = 0; k < NX_MAX_FREE_DIMS; k++) {
        unsigned so = O_STRIDE + 4 * k, co = O_COUNT + 4 * k;
        if (k >= ndims) {
            if (slot_require_zero(s, so, so + 4, "past ndims", err) != 0 ||
                slot_require_zero(s, co, co + 4, "past ndims", err) != 0)
                return -1;
            continue;
        }
        op->stride[k] = i32_from_bits(nx_load_le32(s->w + so));
        op->count[k] = nx_load_le32(s->w + co);
        if (op->count[k] == 0)
            return nx_fail(err, "instruction word: byte %u (%s.count[%u]): must be >= 1 for a dim < ndims",
                           s->base + co, s->label, k);
    }
    return 0;
}

static int decode_partitions(const slot_ctx *s, nx_operand *op, nx_error *err) {
    unsigned start = s->w[O_START], pc = s->w[O_PCOUNT];
    if (pc < 1 || pc > NX_PARTITIONS_MAX)
        return nx_fail(err, "instruction word: byte %u (%s.partition_count): %u is not in 1..%u",
                       s->base + O_PCOUNT, s->label, pc, NX_PARTITIONS_MAX);
    if (start + pc > NX_PARTITIONS_MAX)
        return nx_fail(err, "instruction word: byte %u (%s.start_partition): %u + partition_count %u is past partition %u",
                       s->base + O_START, s->label, start, pc, NX_PARTITIONS_MAX);
    op->start_partition = (uint8_t)start;
    op->partition_count = (uint8_t)pc;
    op->partition_stride = i32_from_bits(nx_load_le32(s->w + O_PSTRIDE));
    return 0;
}

static int decode_operand(const slot_ctx *s, const nx_slot_spec *spec, nx_operand *op,
                          nx_error *err) {
    const uint8_t *w = s->w;
    memset(op, 0, sizeof *op);
    if (spec->name == NULL)
        return slot_require_zero(s, 0, NX_OPERAND_BYTES, "(slot unused by this opcode)", err);
    unsigned kind = w[O_KIND];
    if (kind >= NX_OPK_COUNT)
        return nx_fail(err, "instruction word: byte %u (%s.kind): %u is not an operand kind (0..%d)",
                       s->base + O_KIND, s->label, kind, NX_OPK_COUNT - 1);
    if (kind == NX_OPK_NONE) {
        if (spec->required)
            return nx_fail(err, "instruction word: byte %u (%s.kind): slot '%s' of %s is required, found kind none",
                           s->base + O_KIND, s->label, spec->name, s->mnemonic);
        return slot_require_zero(s, 1, NX_OPERAND_BYTES, "(kind none)", err);
    }
    if (!(NX_KIND_BIT(kind) & spec->kinds))
        return nx_fail(err, "instruction word: byte %u (%s.kind): kind %u is not allowed in slot '%s' of %s (allowed mask 0x%02x)",
                       s->base + O_KIND, s->label, kind, spec->name, s->mnemonic, spec->kinds);
    op->kind = (uint8_t)kind;
    if (!nx_dtype_is_valid(w[O_DTYPE]))
        return nx_fail(err, "instruction word: byte %u (%s.dtype): %u is not a dtype (0..%d)",
                       s->base + O_DTYPE, s->label, w[O_DTYPE], NX_DT_COUNT - 1);
    op->dtype = w[O_DTYPE];
    if (slot_require_zero(s, O_RESERVED0, O_PSTRIDE, "(reserved)", err) != 0 ||
        slot_require_zero(s, O_RESERVED1, O_VALUE, "(reserved)", err) != 0)
        return -1;
    uint64_t value = nx_load_le64(w + O_VALUE);

    if (kind == NX_OPK_IMM) {
        if (slot_require_zero(s, O_NDIMS, O_RESERVED0, "for an immediate", err) != 0 ||
            slot_require_zero(s, O_PSTRIDE, O_RESERVED1, "for an immediate", err) != 0 ||
            slot_require_zero(s, O_STRIDE, NX_OPERAND_BYTES, "for an immediate", err) != 0)
            return -1;
        if (bits_are_nan(value) && value != CANONICAL_QNAN && value != CANONICAL_NEG_QNAN)
            return nx_fail(err, "instruction word: byte %u (%s.value): NaN 0x%016" PRIx64
                           " is not canonical (0x7ff8000000000000 or 0xfff8000000000000)",
                           s->base + O_VALUE, s->label, value);
        op->imm = nx_f64_from_bits(value);
        /* Only values of the dtype, as the assembler converts them (a store
         * to the dtype then a load gives the same bits): no 1.5 or -0.0 for
         * an integer, no 0.1 as a double for fp32. */
        int nan = bits_are_nan(value);
        unsigned char as_dtype[8];
        nx_dtype_store((nx_dtype)op->dtype, as_dtype, op->imm);
        double back = nx_dtype_load((nx_dtype)op->dtype, as_dtype);
        if (nan ? !nx_dtype_is_float((nx_dtype)op->dtype) : nx_f64_bits(back) != value)
            return nx_fail(err, "instruction word: byte %u (%s.value): %.17g is not a value of %s "
                           "(the nearest is %.17g)",
                           s->base + O_VALUE, s->label, op->imm, nx_dtype_name((nx_dtype)op->dtype), back);
        op->partition_count = 1; /* insn.h: an immediate is one value per partition */
        return 0;
    }
    if (kind == NX_OPK_PATTERN) {
        if (w[O_START] != 0) return slot_fail_zero(s, O_START, "for a pattern", err);
        if (nx_dtype_is_float((nx_dtype)op->dtype))
            return nx_fail(err, "instruction word: byte %u (%s.dtype): a pattern needs an integer dtype, found %s",
                           s->base + O_DTYPE, s->label, nx_dtype_name((nx_dtype)op->dtype));
        if (decode_partitions(s, op, err) != 0) return -1;
        op->pattern_base = i64_from_bits(value);
        return decode_dims(s, op, err);
    }
    /* memory: HBM, SBUF, PSUM */
    if (kind == NX_OPK_HBM && w[O_START] != 0)
        return slot_fail_zero(s, O_START, "for HBM", err);
    if (kind != NX_OPK_HBM && nx_load_le32(w + O_PSTRIDE) != 0)
        return nx_fail(err, "instruction word: byte %u (%s.partition_stride): must be 0 for SBUF/PSUM, found %" PRId32,
                       s->base + O_PSTRIDE, s->label, i32_from_bits(nx_load_le32(w + O_PSTRIDE)));
    if (decode_partitions(s, op, err) != 0) return -1;
    op->offset = value;
    return decode_dims(s, op, err);
}

/* An enum parameter byte: must be < limit, and 0 unless the row uses it. */
static int decode_enum(const uint8_t *word, unsigned off, const char *field, unsigned limit,
                       const char *what, int used, const char *mnemonic, uint8_t *out,
                       nx_error *err) {
    unsigned v = word[off];
    if (v >= limit)
        return nx_fail(err, "instruction word: byte %u (%s): %u is not %s (0..%u)", off, field, v,
                       what, limit - 1);
    if (!used && v != 0)
        return nx_fail(err, "instruction word: byte %u (%s): %s does not use it, must be 0, found %u",
                       off, field, mnemonic, v);
    *out = (uint8_t)v;
    return 0;
}

static int decode_sync(const uint8_t *word, nx_insn *insn, nx_error *err) {
    insn->wait_sem = word[W_WAIT_SEM];
    insn->inc_sem = word[W_INC_SEM];
    insn->wait_value = nx_load_le32(word + W_WAIT_VALUE);
    insn->inc_amount = nx_load_le32(word + W_INC_AMOUNT);
    insn->wait_span = word[W_WAIT_SPAN];
    if (insn->wait_sem == NX_SEM_NONE && insn->wait_value != 0)
        return nx_fail(err, "instruction word: byte %d (wait_value): must be 0 when wait_sem is 0xff (no wait), found %" PRIu32,
                       W_WAIT_VALUE, insn->wait_value);
    if (insn->wait_sem == NX_SEM_NONE && insn->wait_span != 0)
        return nx_fail(err, "instruction word: byte %d (wait_span): must be 0 when wait_sem is 0xff (no wait), found %" PRIu32,
                       W_WAIT_SPAN, insn->wait_span);
    if (insn->wait_span == 1 || (insn->wait_span && insn->wait_sem + insn->wait_span > NX_SEM_NONE))
        return nx_fail(err, "instruction word: byte %d (wait_span): must be 0 or 2..%u (semaphores %u ..), found %" PRIu32,
                       W_WAIT_SPAN, NX_SEM_NONE - insn->wait_sem, insn->wait_sem, insn->wait_span);
    if (insn->inc_sem == NX_SEM_NONE && insn->inc_amount != 0)
        return nx_fail(err, "instruction word: byte %d (inc_amount): must be 0 when inc_sem is 0xff (no increment), found %" PRIu32,
                       W_INC_AMOUNT, insn->inc_amount);
    if (insn->inc_sem != NX_SEM_NONE && insn->inc_amount == 0)
        return nx_fail(err, "instruction word: byte %d (inc_amount): must be >= 1 when inc_sem is %u, found 0",
                       W_INC_AMOUNT, insn->inc_sem);
    return 0;
}

int nx_insn_decode(const uint8_t word[NX_INSN_WORD_BYTES], nx_insn *out, nx_error *err) {
    nx_insn insn;
    memset(&insn, 0, sizeof insn);
    const nx_opcode_info *row = nx_opcode_lookup(word[W_OPCODE]);
    if (row == NULL)
        return nx_fail(err, "instruction word: byte %d (opcode): %u is not an opcode (0..%d)",
                       W_OPCODE, word[W_OPCODE], NX_OP_COUNT - 1);
    insn.opcode = word[W_OPCODE];
    const char *mn = row->mnemonic;
    if (decode_enum(word, W_ALU0, "alu0", NX_ALU_COUNT, "an ALU op", row->params & NX_PARAM_ALU0,
                    mn, &insn.alu0, err) != 0 ||
        decode_enum(word, W_ALU1, "alu1", NX_ALU_COUNT, "an ALU op", row->params & NX_PARAM_ALU1,
                    mn, &insn.alu1, err) != 0 ||
        decode_enum(word, W_FUNC, "func", NX_ACT_COUNT, "an activation function",
                    row->params & NX_PARAM_FUNC, mn, &insn.func, err) != 0)
        return -1;
    insn.flags = nx_load_le16(word + W_FLAGS);
    if (insn.flags & ~row->flags)
        return nx_fail(err, "instruction word: byte %d (flags): 0x%04x has bits %s does not accept (accepted 0x%04x)",
                       W_FLAGS, insn.flags, mn, row->flags);
    if (decode_sync(word, &insn, err) != 0) return -1;
    for (unsigned i = 0; i < 2; i++) {
        unsigned off = i == 0 ? W_IPARAM0 : W_IPARAM1;
        insn.iparam[i] = i32_from_bits(nx_load_le32(word + off));
        if (row->iparam_name[i] == NULL && insn.iparam[i] != 0)
            return nx_fail(err, "instruction word: byte %u (iparam%u): %s has no integer parameter %u, must be 0, found %" PRId32,
                           off, i, mn, i, insn.iparam[i]);
    }
    for (unsigned off = W_RESERVED0; off < W_OPERANDS; off++)
        if (word[off] != 0)
            return nx_fail(err, "instruction word: byte %u (reserved): must be 0, found 0x%02x", off,
                           word[off]);
    static const char *const unused_label[NX_MAX_OPERANDS] = {"slot0", "slot1", "slot2", "slot3",
                                                              "slot4"};
    for (unsigned i = 0; i < NX_MAX_OPERANDS; i++) {
        slot_ctx s = {word + W_OPERANDS + NX_OPERAND_BYTES * i, W_OPERANDS + NX_OPERAND_BYTES * i,
                      row->slot[i].name ? row->slot[i].name : unused_label[i], mn};
        if (decode_operand(&s, &row->slot[i], &insn.op[i], err) != 0) return -1;
    }
    for (unsigned off = W_RESERVED1; off < NX_INSN_WORD_BYTES; off++)
        if (word[off] != 0)
            return nx_fail(err, "instruction word: byte %u (reserved): must be 0, found 0x%02x", off,
                           word[off]);
    *out = insn;
    return 0;
}
