/* The .nxb program container: nx_program <-> bytes, and the file helpers
 * (layout: isa/encode.h, docs/parts/encoding.md).
 *
 * Decoding treats the bytes as untrusted: the header and stream table are
 * checked and the exact file length they imply is computed (in 64-bit
 * arithmetic that cannot overflow for any header) before anything is
 * allocated, so a lying header fails fast. Every field is range-checked and
 * reserved bytes must be zero, so an accepted file re-encodes to the same
 * bytes. Machine-dependent checks (HBM size, engine placement, geometry) are
 * left to nx_program_validate. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fchmod */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "encode.h"
#include "fileio.h"
#include "opcodes.h"

/* ---- layout (byte offsets) ---- */
enum {
    H_MAGIC = 0,
    H_VERSION = 4,
    H_HEADER_BYTES = 6,
    H_MACHINE = 8, /* char[16] */
    H_CORES = 24,
    H_RESERVED0 = 25,
    H_SEM_COUNT = 26,
    H_TENSOR_COUNT = 28,
    H_HBM_BYTES = 32,
    H_WORD_BYTES = 40,
    H_RESERVED1 = 44, /* .. 63 */
    STREAM_TABLE = NX_NXB_HEADER_BYTES,
};
/* Tensor table entry, relative to the entry's first byte. */
enum {
    T_NAME = 0, /* char[64] */
    T_DTYPE = 64,
    T_ROLE = 65,
    T_NDIMS = 66,
    T_RESERVED = 67, /* .. 71 */
    T_OFFSET = 72,
    T_SHAPE = 80, /* 6 x u64 */
};
#define MACHINE_BYTES 16
#define MAX_TENSORS NX_NXB_MAX_TENSORS

_Static_assert(T_SHAPE + 8 * NX_TENSOR_MAX_DIMS == NX_NXB_TENSOR_BYTES, "tensor entry is 128 bytes");
_Static_assert(T_NAME + NX_TENSOR_NAME_MAX == T_DTYPE, "tensor name is 64 bytes");
_Static_assert(sizeof(((nx_program *)0)->machine) == MACHINE_BYTES, "machine name is 16 bytes");


/* ---- shared checks (encode checks the program, decode the bytes) ---- */

static int is_alpha_(int c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }

/* Machine name: 1..15 characters of [A-Za-z0-9_.-] then a NUL. `bytes` holds
 * 16 bytes; padding after the NUL is checked by the decoder only. */
static int check_machine(const char *bytes, nx_error *err) {
    size_t n = 0;
    while (n < MACHINE_BYTES && bytes[n] != '\0') n++;
    if (n == MACHINE_BYTES)
        return nx_fail(err, "nxb: byte %d (machine): name is not NUL-terminated within %d bytes",
                       H_MACHINE, MACHINE_BYTES);
    if (n == 0) return nx_fail(err, "nxb: byte %d (machine): name is empty", H_MACHINE);
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)bytes[i];
        if (!is_alpha_(c) && !is_digit(c) && c != '.' && c != '-')
            return nx_fail(err, "nxb: byte %zu (machine): character 0x%02x is not one of [A-Za-z0-9_.-]",
                           H_MACHINE + i, (unsigned)c);
    }
    return 0;
}

/* Tensor name: [A-Za-z_][A-Za-z0-9_.]*, NUL-terminated within 64 bytes.
 * `at` is the byte offset of the tensor entry (for messages). */
static int check_tensor_name(const char *name, uint64_t at, uint32_t index, nx_error *err) {
    size_t n = 0;
    while (n < NX_TENSOR_NAME_MAX && name[n] != '\0') n++;
    if (n == NX_TENSOR_NAME_MAX)
        return nx_fail(err, "nxb: byte %" PRIu64 " (tensor %" PRIu32 " name): not NUL-terminated within %d bytes",
                       at + T_NAME, index, NX_TENSOR_NAME_MAX);
    if (n == 0)
        return nx_fail(err, "nxb: byte %" PRIu64 " (tensor %" PRIu32 " name): empty", at + T_NAME, index);
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)name[i];
        if (!(is_alpha_(c) || (i > 0 && (is_digit(c) || c == '.'))))
            return nx_fail(err, "nxb: byte %" PRIu64 " (tensor %" PRIu32 " name): character 0x%02x at %zu is not allowed in [A-Za-z_][A-Za-z0-9_.]*",
                           at + T_NAME + i, index, (unsigned)c, i);
    }
    return 0;
}

/* Everything about one tensor that does not involve the others: dtype, role,
 * shape, alignment, and [offset, offset + bytes) inside hbm_bytes. */
static int check_tensor(const nx_tensor_decl *t, uint64_t hbm_bytes, uint64_t at, uint32_t index,
                        uint64_t *bytes_out, nx_error *err) {
    if (check_tensor_name(t->name, at, index, err) != 0) return -1;
    const char *nm = t->name;
    if (!nx_dtype_is_valid(t->dtype))
        return nx_fail(err, "nxb: byte %" PRIu64 " (tensor '%s' dtype): %u is not a dtype (0..%d)",
                       at + T_DTYPE, nm, t->dtype, NX_DT_COUNT - 1);
    if (t->role >= NX_ROLE_COUNT)
        return nx_fail(err, "nxb: byte %" PRIu64 " (tensor '%s' role): %u is not a role (0..%d)",
                       at + T_ROLE, nm, t->role, NX_ROLE_COUNT - 1);
    if (t->ndims < 1 || t->ndims > NX_TENSOR_MAX_DIMS)
        return nx_fail(err, "nxb: byte %" PRIu64 " (tensor '%s' ndims): %u is not in 1..%d",
                       at + T_NDIMS, nm, t->ndims, NX_TENSOR_MAX_DIMS);
    uint64_t size = nx_dtype_size((nx_dtype)t->dtype);
    uint64_t bytes = size;
    for (unsigned k = 0; k < NX_TENSOR_MAX_DIMS; k++) {
        uint64_t d = t->shape[k];
        if (k >= t->ndims) {
            if (d != 0)
                return nx_fail(err, "nxb: byte %" PRIu64 " (tensor '%s' shape[%u]): must be 0 past ndims %u, found %" PRIu64,
                               at + T_SHAPE + 8 * k, nm, k, t->ndims, d);
            continue;
        }
        if (d == 0)
            return nx_fail(err, "nxb: byte %" PRIu64 " (tensor '%s' shape[%u]): must be >= 1",
                           at + T_SHAPE + 8 * k, nm, k);
        if (bytes > UINT64_MAX / d)
            return nx_fail(err, "nxb: byte %" PRIu64 " (tensor '%s' shape[%u]): size in bytes overflows 64 bits",
                           at + T_SHAPE + 8 * k, nm, k);
        bytes *= d;
    }
    if (t->offset % size != 0)
        return nx_fail(err, "nxb: byte %" PRIu64 " (tensor '%s' offset): %" PRIu64 " is not a multiple of the %s size %" PRIu64,
                       at + T_OFFSET, nm, t->offset, nx_dtype_name((nx_dtype)t->dtype), size);
    if (bytes > hbm_bytes || t->offset > hbm_bytes - bytes)
        return nx_fail(err, "nxb: byte %" PRIu64 " (tensor '%s' offset): %" PRIu64 " + %" PRIu64 " bytes is past hbm_bytes %" PRIu64,
                       at + T_OFFSET, nm, t->offset, bytes, hbm_bytes);
    *bytes_out = bytes;
    return 0;
}

typedef struct tensor_ref {
    const nx_tensor_decl *t;
    uint64_t bytes;
    uint32_t index;
} tensor_ref;

static int cmp_by_name(const void *a, const void *b) {
    const tensor_ref *x = a, *y = b;
    int c = strncmp(x->t->name, y->t->name, NX_TENSOR_NAME_MAX);
    return c != 0 ? c : (x->index > y->index) - (x->index < y->index);
}
static int cmp_by_offset(const void *a, const void *b) {
    const tensor_ref *x = a, *y = b;
    if (x->t->offset != y->t->offset) return x->t->offset < y->t->offset ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static uint64_t tensor_entry_at(uint32_t cores, uint32_t index) {
    return STREAM_TABLE + 4ull * NX_ENG_COUNT * cores + (uint64_t)NX_NXB_TENSOR_BYTES * index;
}

/* The whole tensor table: each tensor, then unique names and no overlap
 * (sorting, so 4096 tensors cost n log n). */
static int check_tensor_table(const nx_tensor_decl *tensors, uint32_t count, uint32_t cores,
                              uint64_t hbm_bytes, nx_error *err) {
    if (count == 0) return 0;
    tensor_ref *refs = malloc(sizeof *refs * count);
    if (refs == NULL) return nx_fail(err, "nxb: out of memory for %" PRIu32 " tensors", count);
    int rc = 0;
    for (uint32_t i = 0; i < count && rc == 0; i++) {
        refs[i] = (tensor_ref){&tensors[i], 0, i};
        rc = check_tensor(&tensors[i], hbm_bytes, tensor_entry_at(cores, i), i, &refs[i].bytes, err);
    }
    if (rc == 0) {
        qsort(refs, count, sizeof *refs, cmp_by_name);
        for (uint32_t i = 1; i < count && rc == 0; i++)
            if (strncmp(refs[i - 1].t->name, refs[i].t->name, NX_TENSOR_NAME_MAX) == 0)
                rc = nx_fail(err, "nxb: byte %" PRIu64 " (tensor %" PRIu32 " name): '%s' is already the name of tensor %" PRIu32,
                             tensor_entry_at(cores, refs[i].index) + T_NAME, refs[i].index,
                             refs[i].t->name, refs[i - 1].index);
    }
    if (rc == 0) {
        /* Sorted by start, some pair overlaps iff some neighbouring pair does. */
        qsort(refs, count, sizeof *refs, cmp_by_offset);
        for (uint32_t i = 1; i < count && rc == 0; i++) {
            const tensor_ref *a = &refs[i - 1], *b = &refs[i];
            if (b->t->offset - a->t->offset < a->bytes) {
                const tensor_ref *later = a->index > b->index ? a : b;
                const tensor_ref *earlier = later == a ? b : a;
                rc = nx_fail(err, "nxb: byte %" PRIu64 " (tensor '%s' offset): bytes [%" PRIu64 ", %" PRIu64
                             ") overlap tensor '%s' bytes [%" PRIu64 ", %" PRIu64 ")",
                             tensor_entry_at(cores, later->index) + T_OFFSET, later->t->name,
                             later->t->offset, later->t->offset + later->bytes, earlier->t->name,
                             earlier->t->offset, earlier->t->offset + earlier->bytes);
            }
        }
    }
    free(refs);
    return rc;
}

/* ---- encode ---- */

static void encode_tensor(const nx_tensor_decl *t, uint8_t *e) {
    memset(e, 0, NX_NXB_TENSOR_BYTES);
    for (size_t i = 0; i < NX_TENSOR_NAME_MAX && t->name[i] != '\0'; i++) e[T_NAME + i] = (uint8_t)t->name[i];
    e[T_DTYPE] = t->dtype;
    e[T_ROLE] = t->role;
    e[T_NDIMS] = t->ndims;
    nx_store_le64(e + T_OFFSET, t->offset);
    for (unsigned k = 0; k < NX_TENSOR_MAX_DIMS; k++) nx_store_le64(e + T_SHAPE + 8 * k, t->shape[k]);
}

int nx_program_encode(const nx_program *p, uint8_t **out, size_t *len, nx_error *err) {
    *out = NULL;
    *len = 0;
    if (check_machine(p->machine, err) != 0) return -1;
    if (p->cores < 1 || p->cores > NX_MAX_CORES)
        return nx_fail(err, "nxb: byte %d (cores): %" PRIu32 " is not in 1..%d", H_CORES, p->cores, NX_MAX_CORES);
    if (p->sem_count > NX_MAX_SEMAPHORES)
        return nx_fail(err, "nxb: byte %d (sem_count): %" PRIu32 " is more than %d", H_SEM_COUNT,
                       p->sem_count, NX_MAX_SEMAPHORES);
    if (p->tensor_count > MAX_TENSORS)
        return nx_fail(err, "nxb: byte %d (tensor_count): %" PRIu32 " is more than %u", H_TENSOR_COUNT,
                       p->tensor_count, MAX_TENSORS);
    if (check_tensor_table(p->tensors, p->tensor_count, p->cores, p->hbm_bytes, err) != 0) return -1;
    for (uint32_t c = p->cores; c < NX_MAX_CORES; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++)
            if (p->stream[c][e].count != 0)
                return nx_fail(err, "nxb: core %" PRIu32 " %s stream has %" PRIu32 " instructions but the program has %" PRIu32 " core(s)",
                               c, nx_engine_name((nx_engine)e), p->stream[c][e].count, p->cores);

    uint64_t total = 0;
    for (uint32_t c = 0; c < p->cores; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) total += p->stream[c][e].count;
    uint64_t words_at = tensor_entry_at(p->cores, p->tensor_count);
    uint64_t size = words_at + total * NX_INSN_WORD_BYTES; /* < 2^45: cannot overflow */
    if (size > SIZE_MAX) return nx_fail(err, "nxb: %" PRIu64 " bytes do not fit in memory", size);
    uint8_t *buf = calloc(1, (size_t)size);
    if (buf == NULL) return nx_fail(err, "nxb: out of memory for %" PRIu64 " bytes", size);

    memcpy(buf + H_MAGIC, NX_NXB_MAGIC, 4);
    nx_store_le16(buf + H_VERSION, NX_NXB_VERSION);
    nx_store_le16(buf + H_HEADER_BYTES, NX_NXB_HEADER_BYTES);
    for (size_t i = 0; i < MACHINE_BYTES && p->machine[i] != '\0'; i++)
        buf[H_MACHINE + i] = (uint8_t)p->machine[i];
    buf[H_CORES] = (uint8_t)p->cores;
    nx_store_le16(buf + H_SEM_COUNT, (uint16_t)p->sem_count);
    nx_store_le32(buf + H_TENSOR_COUNT, p->tensor_count);
    nx_store_le64(buf + H_HBM_BYTES, p->hbm_bytes);
    nx_store_le32(buf + H_WORD_BYTES, NX_INSN_WORD_BYTES);
    for (uint32_t c = 0; c < p->cores; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++)
            nx_store_le32(buf + STREAM_TABLE + 4 * (NX_ENG_COUNT * c + e), p->stream[c][e].count);
    for (uint32_t i = 0; i < p->tensor_count; i++)
        encode_tensor(&p->tensors[i], buf + tensor_entry_at(p->cores, i));

    /* Each word is decoded back so that a record the decoder would refuse
     * (a bad enum, a flag the row does not accept, ...) fails here, with its
     * location, instead of producing a file nothing can load. */
    uint64_t at = words_at;
    for (uint32_t c = 0; c < p->cores; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++)
            for (uint32_t i = 0; i < p->stream[c][e].count; i++, at += NX_INSN_WORD_BYTES) {
                nx_insn insn, check;
                nx_insn_encode(nx_program_expand(p, &p->stream[c][e].recs[i], &insn), buf + at);
                if (nx_insn_decode(buf + at, &check, err) != 0) {
                    free(buf);
                    if (err != NULL)
                        nx_fail_prefix(err, "nxb: byte %" PRIu64 " (core %" PRIu32 " %s instruction %" PRIu32 ")",
                                       at, c, nx_engine_name((nx_engine)e), i);
                    return -1;
                }
            }
    *out = buf;
    *len = (size_t)size;
    return 0;
}

/* ---- decode ---- */

static int require_zero(const uint8_t *buf, unsigned from, unsigned to, const char *field,
                        nx_error *err) {
    for (unsigned i = from; i < to; i++)
        if (buf[i] != 0)
            return nx_fail(err, "nxb: byte %u (%s): must be 0, found 0x%02x", i, field, buf[i]);
    return 0;
}

/* Fixed header fields, everything but the lengths that depend on the rest. */
static int decode_header(const uint8_t *buf, nx_program *p, nx_error *err) {
    if (memcmp(buf + H_MAGIC, NX_NXB_MAGIC, 4) != 0)
        return nx_fail(err, "nxb: byte %d (magic): expected \"NXSB\", found %02x %02x %02x %02x",
                       H_MAGIC, buf[0], buf[1], buf[2], buf[3]);
    unsigned v = nx_load_le16(buf + H_VERSION);
    if (v != NX_NXB_VERSION)
        return nx_fail(err, "nxb: byte %d (version): %u is not supported (only %d)", H_VERSION, v,
                       NX_NXB_VERSION);
    v = nx_load_le16(buf + H_HEADER_BYTES);
    if (v != NX_NXB_HEADER_BYTES)
        return nx_fail(err, "nxb: byte %d (header_bytes): %u, expected %d", H_HEADER_BYTES, v,
                       NX_NXB_HEADER_BYTES);
    char machine[MACHINE_BYTES];
    for (unsigned i = 0; i < MACHINE_BYTES; i++) machine[i] = (char)buf[H_MACHINE + i];
    if (check_machine(machine, err) != 0) return -1;
    unsigned nul = (unsigned)strlen(machine);
    if (require_zero(buf, H_MACHINE + nul, H_MACHINE + MACHINE_BYTES, "machine padding", err) != 0)
        return -1;
    memcpy(p->machine, machine, MACHINE_BYTES);
    v = buf[H_CORES];
    if (v < 1 || v > NX_MAX_CORES)
        return nx_fail(err, "nxb: byte %d (cores): %u is not in 1..%d", H_CORES, v, NX_MAX_CORES);
    p->cores = v;
    if (require_zero(buf, H_RESERVED0, H_SEM_COUNT, "reserved", err) != 0) return -1;
    v = nx_load_le16(buf + H_SEM_COUNT);
    if (v > NX_MAX_SEMAPHORES)
        return nx_fail(err, "nxb: byte %d (sem_count): %u is more than %d", H_SEM_COUNT, v,
                       NX_MAX_SEMAPHORES);
    p->sem_count = v;
    uint32_t tc = nx_load_le32(buf + H_TENSOR_COUNT);
    if (tc > MAX_TENSORS)
        return nx_fail(err, "nxb: byte %d (tensor_count): %" PRIu32 " is more than %u", H_TENSOR_COUNT,
                       tc, MAX_TENSORS);
    p->hbm_bytes = nx_load_le64(buf + H_HBM_BYTES);
    uint32_t wb = nx_load_le32(buf + H_WORD_BYTES);
    if (wb != NX_INSN_WORD_BYTES)
        return nx_fail(err, "nxb: byte %d (insn_word_bytes): %" PRIu32 ", expected %d", H_WORD_BYTES,
                       wb, NX_INSN_WORD_BYTES);
    return require_zero(buf, H_RESERVED1, NX_NXB_HEADER_BYTES, "reserved", err);
}

static void decode_tensor(const uint8_t *e, nx_tensor_decl *t) {
    memset(t, 0, sizeof *t);
    for (unsigned i = 0; i < NX_TENSOR_NAME_MAX; i++) t->name[i] = (char)e[T_NAME + i];
    t->dtype = e[T_DTYPE];
    t->role = e[T_ROLE];
    t->ndims = e[T_NDIMS];
    t->offset = nx_load_le64(e + T_OFFSET);
    for (unsigned k = 0; k < NX_TENSOR_MAX_DIMS; k++) t->shape[k] = nx_load_le64(e + T_SHAPE + 8 * k);
}

/* Byte-level checks a decoded nx_tensor_decl cannot show: name padding and
 * reserved bytes. */
static int check_tensor_bytes(const uint8_t *e, uint64_t at, uint32_t index, nx_error *err) {
    unsigned n = 0;
    while (n < NX_TENSOR_NAME_MAX && e[T_NAME + n] != 0) n++;
    for (unsigned i = n; i < NX_TENSOR_NAME_MAX; i++)
        if (e[T_NAME + i] != 0)
            return nx_fail(err, "nxb: byte %" PRIu64 " (tensor %" PRIu32 " name padding): must be 0, found 0x%02x",
                           at + T_NAME + i, index, e[T_NAME + i]);
    for (unsigned i = T_RESERVED; i < T_OFFSET; i++)
        if (e[i] != 0)
            return nx_fail(err, "nxb: byte %" PRIu64 " (tensor %" PRIu32 " reserved): must be 0, found 0x%02x",
                           at + i, index, e[i]);
    return 0;
}

/* Decodes into p (already initialised; the caller frees it on failure). */
static int decode_body(const uint8_t *buf, size_t len, nx_program *p, nx_error *err) {
    if (len < NX_NXB_HEADER_BYTES)
        return nx_fail(err, "nxb: truncated: %zu bytes, the header alone is %d", len, NX_NXB_HEADER_BYTES);
    if (decode_header(buf, p, err) != 0) return -1;
    uint32_t tensor_count = nx_load_le32(buf + H_TENSOR_COUNT);
    uint64_t table_end = tensor_entry_at(p->cores, 0);
    if (len < table_end)
        return nx_fail(err, "nxb: truncated: %zu bytes, the stream table of %" PRIu32 " core(s) ends at byte %" PRIu64,
                       len, p->cores, table_end);
    uint64_t total = 0; /* at most 10 * (2^32 - 1): no overflow */
    for (uint32_t i = 0; i < NX_ENG_COUNT * p->cores; i++) total += nx_load_le32(buf + STREAM_TABLE + 4 * i);
    uint64_t words_at = tensor_entry_at(p->cores, tensor_count);
    uint64_t expected = words_at + total * NX_INSN_WORD_BYTES; /* < 2^45 */
    if ((uint64_t)len < expected)
        return nx_fail(err, "nxb: truncated: %zu bytes, but %" PRIu32 " tensors and %" PRIu64 " instructions need %" PRIu64,
                       len, tensor_count, total, expected);
    if ((uint64_t)len > expected)
        return nx_fail(err, "nxb: size: %zu bytes, but %" PRIu32 " tensors and %" PRIu64 " instructions need exactly %" PRIu64 " (trailing bytes)",
                       len, tensor_count, total, expected);
    if (total > NX_PROGRAM_MAX_INSNS)
        return nx_fail(err, "nxb: byte %d (stream table): %" PRIu64 " instructions, a program holds at most %u",
                       STREAM_TABLE, total, NX_PROGRAM_MAX_INSNS);

    for (uint32_t i = 0; i < tensor_count; i++) {
        uint64_t at = tensor_entry_at(p->cores, i);
        nx_tensor_decl t;
        if (check_tensor_bytes(buf + at, at, i, err) != 0) return -1;
        decode_tensor(buf + at, &t);
        if (nx_program_add_tensor(p, &t, err) != 0) return -1;
    }
    if (check_tensor_table(p->tensors, p->tensor_count, p->cores, p->hbm_bytes, err) != 0) return -1;

    uint64_t at = words_at;
    for (uint32_t c = 0; c < p->cores; c++)
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
            uint32_t n = nx_load_le32(buf + STREAM_TABLE + 4 * (NX_ENG_COUNT * c + e));
            for (uint32_t i = 0; i < n; i++, at += NX_INSN_WORD_BYTES) {
                nx_insn insn;
                if (nx_insn_decode(buf + at, &insn, err) != 0) {
                    if (err != NULL)
                        nx_fail_prefix(err, "nxb: byte %" PRIu64 " (core %" PRIu32 " %s instruction %" PRIu32 ")",
                                       at, c, nx_engine_name((nx_engine)e), i);
                    return -1;
                }
                /* the assembler takes only semaphores below .semaphores */
                const char *bad = insn.wait_sem != NX_SEM_NONE && insn.wait_sem + nx_insn_wait_sems(&insn) > p->sem_count ? "wait_sem"
                                  : insn.inc_sem != NX_SEM_NONE && insn.inc_sem >= p->sem_count ? "inc_sem"
                                                                                                 : NULL;
                if (bad)
                    return nx_fail(err, "nxb: byte %" PRIu64 " (core %" PRIu32 " %s instruction %" PRIu32
                                        " %s): semaphore %u, the program has %" PRIu32,
                                   at + (bad[0] == 'w' ? 6 : 7) /* word bytes 6, 7 */, c, nx_engine_name((nx_engine)e), i, bad,
                                   bad[0] == 'w' ? insn.wait_sem : insn.inc_sem, p->sem_count);
                if (nx_program_append(p, c, (nx_engine)e, &insn, err) != 0) return -1;
            }
        }
    return 0;
}

int nx_program_decode(const uint8_t *buf, size_t len, nx_program *out, nx_error *err) {
    nx_program p;
    nx_program_init(&p);
    if (buf == NULL && len != 0) {
        nx_program_init(out);
        return nx_fail(err, "nxb: no buffer");
    }
    if (decode_body(buf, len, &p, err) != 0) {
        nx_program_free(&p);
        nx_program_init(out);
        return -1;
    }
    *out = p;
    return 0;
}

/* ---- files ---- */

int nx_program_load_file(const char *path, nx_program *out, nx_error *err) {
    nx_program_init(out);
    uint8_t *buf;
    size_t len;
    if (nx_read_file_max(path, NX_PROGRAM_FILE_MAX, "the limit for a program file", &buf, &len, err) != 0)
        return -1;
    int rc = 0;
    if (nx_program_decode(buf, len, out, err) != 0) {
        if (err != NULL) nx_fail_prefix(err, "%s", path);
        rc = -1;
    }
    free(buf);
    return rc;
}

int nx_program_save_file(const char *path, const nx_program *p, nx_error *err) {
    uint8_t *buf;
    size_t len;
    if (nx_program_encode(p, &buf, &len, err) != 0) {
        if (err != NULL) nx_fail_prefix(err, "%s", path);
        return -1;
    }
    int rc = nx_write_file_atomic(path, buf, len, err);
    free(buf);
    return rc;
}
