/* The disassembler: nx_program -> canonical .nxs text (docs/parts/assembly.md).
 *
 * The canonical text is what nx_assemble reads back to the same program, so
 * .nxs -> .nxb -> .nxs -> .nxb is byte-identical: every field is printed
 * (offsets numerically, immediates with 17 significant digits and their
 * dtype), keys in a fixed order driven by the opcode table.
 *
 * Records that are not canonical (an unknown opcode, a kind the slot does not
 * take, ...) are still printed, as something the assembler rejects, rather
 * than crashing: the formatter reads only in-range table entries. */
#include "asm.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "opcodes.h"

/* Operand kind prefixes, indexed by nx_operand_kind (the assembler's table). */
static const char *const kind_names[NX_OPK_COUNT] = {"none", "hbm", "sbuf", "psum", "imm", "pat"};

/* snprintf-style appender: writes what fits, counts everything. */
typedef struct text {
    char *buf;
    size_t cap;
    size_t len; /* length the full text would have */
} text;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(text *t, const char *fmt, ...) {
    char *dst = t->len < t->cap ? t->buf + t->len : NULL;
    size_t room = t->len < t->cap ? t->cap - t->len : 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (n > 0) t->len += (size_t)n;
}

static void put_dtype(text *t, unsigned dt) {
    const char *name = nx_dtype_name((nx_dtype)dt);
    if (name)
        put(t, "%s", name);
    else
        put(t, "?dtype%u", dt);
}

/* %.17g round-trips every double through strtod; inf/nan spelled out. */
static void put_real(text *t, double v) {
    if (isnan(v))
        put(t, "%s", signbit(v) ? "-nan" : "nan");
    else if (isinf(v))
        put(t, "%s", v < 0 ? "-inf" : "inf");
    else
        put(t, "%.17g", v);
}

static void put_dims(text *t, const nx_operand *op) {
    put(t, "{");
    for (unsigned k = 0; k < op->ndims && k < NX_MAX_FREE_DIMS; k++)
        put(t, "%s%" PRId32 ":%" PRIu32, k ? "," : "", op->stride[k], op->count[k]);
    put(t, "}");
}

static void operand_text(text *t, const nx_operand *op) {
    switch (op->kind) {
    case NX_OPK_NONE:
        return;
    case NX_OPK_IMM:
        put(t, "#");
        put_real(t, op->imm);
        put(t, ":");
        put_dtype(t, op->dtype);
        return;
    case NX_OPK_SBUF:
    case NX_OPK_PSUM:
        put(t, "%s:", kind_names[op->kind]);
        put_dtype(t, op->dtype);
        put(t, "[%u:%u]@%" PRIu64, op->start_partition,
            (unsigned)op->start_partition + op->partition_count, op->offset);
        put_dims(t, op);
        return;
    case NX_OPK_HBM:
        put(t, "hbm:");
        put_dtype(t, op->dtype);
        put(t, "[%u/%" PRId32 "]@%" PRIu64, op->partition_count, op->partition_stride, op->offset);
        put_dims(t, op);
        return;
    case NX_OPK_PATTERN:
        put(t, "pat:");
        put_dtype(t, op->dtype);
        put(t, "[%u](%" PRId64 ",%" PRId32 ")", op->partition_count, op->pattern_base,
            op->partition_stride);
        put_dims(t, op);
        return;
    default:
        put(t, "?kind%u", op->kind);
        return;
    }
}

static void sem_text(text *t, const nx_insn *insn) {
    if (insn->wait_sem != NX_SEM_NONE && insn->wait_span)
        put(t, " wait=sem%u..%u>=%" PRIu32, insn->wait_sem, insn->wait_sem + insn->wait_span - 1,
            insn->wait_value);
    else if (insn->wait_sem != NX_SEM_NONE)
        put(t, " wait=sem%u>=%" PRIu32, insn->wait_sem, insn->wait_value);
    if (insn->inc_sem != NX_SEM_NONE) {
        put(t, " inc=sem%u", insn->inc_sem);
        if (insn->inc_amount != 1) put(t, "+%" PRIu32, insn->inc_amount);
    }
}

static void put_enum(text *t, const char *key, const char *name, unsigned code) {
    if (name)
        put(t, " %s=%s", key, name);
    else
        put(t, " %s=?%u", key, code);
}

/* Keys in canonical order: slots (table order), op0, op1, func, set flags
 * (bit order), integer parameters, wait, inc. */
static void insn_text(text *t, const nx_insn *insn) {
    const nx_opcode_info *row = nx_opcode_lookup(insn->opcode);
    if (row == NULL) {
        put(t, "?opcode%u", insn->opcode);
        sem_text(t, insn);
        return;
    }
    put(t, "%s", row->mnemonic);
    for (unsigned i = 0; i < NX_MAX_OPERANDS; i++) {
        if (insn->op[i].kind == NX_OPK_NONE) continue;
        if (row->slot[i].name)
            put(t, " %s=", row->slot[i].name);
        else
            put(t, " ?slot%u=", i);
        operand_text(t, &insn->op[i]);
    }
    if (row->params & NX_PARAM_ALU0) put_enum(t, "op0", nx_alu_name((nx_alu_op)insn->alu0), insn->alu0);
    if (row->params & NX_PARAM_ALU1) put_enum(t, "op1", nx_alu_name((nx_alu_op)insn->alu1), insn->alu1);
    if (row->params & NX_PARAM_FUNC) put_enum(t, "func", nx_act_name((nx_act_func)insn->func), insn->func);
    for (unsigned b = 0; b < NX_FLAG_BITS; b++) {
        if (!((insn->flags >> b) & 1u)) continue;
        const char *name = nx_flag_name(b);
        if (name)
            put(t, " %s=1", name);
        else
            put(t, " ?flag%u=1", b);
    }
    for (unsigned i = 0; i < 2; i++)
        if (row->iparam_name[i]) put(t, " %s=%" PRId32, row->iparam_name[i], insn->iparam[i]);
    sem_text(t, insn);
}

size_t nx_format_operand(char *buf, size_t len, const nx_operand *op) {
    text t = {buf, len, 0};
    if (len > 0) buf[0] = '\0';
    operand_text(&t, op);
    return t.len;
}

size_t nx_format_insn(char *buf, size_t len, const nx_insn *insn) {
    text t = {buf, len, 0};
    if (len > 0) buf[0] = '\0';
    insn_text(&t, insn);
    return t.len;
}

/* strlen bounded by the field size (names need not be NUL-terminated in a
 * record that did not come from the decoder). */
static int bounded_len(const char *s, size_t max) {
    size_t n = 0;
    while (n < max && s[n] != '\0') n++;
    return (int)n;
}

/* Writes one instruction line, growing a scratch buffer when needed. */
static int write_insn(FILE *f, const nx_insn *insn, char **scratch, size_t *cap) {
    size_t n = nx_format_insn(*scratch, *cap, insn);
    if (n >= *cap) {
        char *bigger = realloc(*scratch, n + 1);
        if (bigger == NULL) return -1;
        *scratch = bigger;
        *cap = n + 1;
        nx_format_insn(*scratch, *cap, insn);
    }
    return fprintf(f, "    %s\n", *scratch) < 0 ? -1 : 0;
}

int nx_disassemble(const nx_program *p, FILE *f, nx_error *err) {
    size_t cap = 1024;
    char *scratch = malloc(cap);
    if (scratch == NULL) return nx_fail(err, "disassembler: out of memory");
    int machine_len = bounded_len(p->machine, sizeof p->machine);
    int bad = fprintf(f, ".machine %.*s\n.cores %" PRIu32 "\n.semaphores %" PRIu32 "\n.hbm %" PRIu64 "\n",
                      machine_len, p->machine, p->cores, p->sem_count, p->hbm_bytes) < 0;
    for (uint32_t i = 0; i < p->tensor_count && !bad; i++) {
        const nx_tensor_decl *t = &p->tensors[i];
        const char *role = nx_role_name((nx_tensor_role)t->role);
        const char *dtype = nx_dtype_name((nx_dtype)t->dtype);
        bad |= fprintf(f, ".tensor %.*s %s %s [", bounded_len(t->name, sizeof t->name), t->name,
                       role ? role : "?role", dtype ? dtype : "?dtype") < 0;
        for (unsigned k = 0; k < t->ndims && k < NX_TENSOR_MAX_DIMS && !bad; k++)
            bad |= fprintf(f, "%s%" PRIu64, k ? "," : "", t->shape[k]) < 0;
        bad |= fprintf(f, "] @%" PRIu64 "\n", t->offset) < 0;
    }
    for (uint32_t c = 0; c < p->cores && c < NX_MAX_CORES && !bad; c++) {
        bad |= fprintf(f, ".core %" PRIu32 "\n", c) < 0;
        for (unsigned e = 0; e < NX_ENG_COUNT && !bad; e++) {
            const nx_stream *s = &p->stream[c][e];
            if (s->count == 0) continue;
            bad |= fprintf(f, ".engine %s\n", nx_engine_name((nx_engine)e)) < 0;
            for (uint32_t i = 0; i < s->count && !bad; i++) {
                nx_insn insn;
                bad |= write_insn(f, nx_program_expand(p, &s->recs[i], &insn), &scratch, &cap) != 0;
            }
        }
    }
    free(scratch);
    if (!bad && fflush(f) != 0) bad = 1;
    if (bad || ferror(f)) return nx_fail(err, "disassembler: write error");
    return 0;
}
