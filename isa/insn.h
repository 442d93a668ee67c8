/* nxsim instructions: operands, parameters and the decoded instruction record.
 *
 * An instruction is one row of the opcode table (isa/opcodes.def) plus:
 *   - an optional semaphore wait (sem >= value before it starts) and an optional
 *     semaphore increment when it completes;
 *   - a few parameters (two ALU ops, an activation function, named flag bits,
 *     two named integer parameters);
 *   - up to NX_MAX_OPERANDS operand slots, each an access pattern into HBM, SBUF
 *     or PSUM, an immediate, or an affine index pattern.
 *
 * The in-memory record below is what the encoder writes to and the decoder
 * reads from the fixed-size 320-byte instruction word (layout: isa/encode.h,
 * docs/ISA.md "Encoding"). It owns no memory.
 */
#ifndef NXSIM_ISA_INSN_H
#define NXSIM_ISA_INSN_H

#include <stdint.h>

#include "dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NX_MAX_OPERANDS 5
#define NX_MAX_FREE_DIMS 4
#define NX_SEM_NONE 0xFFu   /* no wait / no increment */
#define NX_MAX_SEMAPHORES 255
#define NX_MAX_CORES 2
/* Most partitions any operand can name: partition counts are encoded in a
 * byte, and no machine has more than 128 partitions. */
#define NX_MAX_PARTITIONS 128u

/* Engines: each has its own instruction stream per core. Codes are encoded. */
typedef enum nx_engine {
    NX_ENG_PE = 0,   /* Tensor Engine: 128x128 systolic array */
    NX_ENG_DVE = 1,  /* Vector Engine */
    NX_ENG_ACT = 2,  /* Scalar (activation) Engine */
    NX_ENG_POOL = 3, /* GpSimd */
    NX_ENG_SP = 4,   /* Sync engine: issues DMA to the queues */
    NX_ENG_COUNT = 5
} nx_engine;
#define NX_ENG_BIT(e) (1u << (e))
const char *nx_engine_name(nx_engine e); /* "pe","dve","act","pool","sp" */
int nx_engine_from_name(const char *name, nx_engine *out);

/* What an operand slot holds. Codes are encoded. */
typedef enum nx_operand_kind {
    NX_OPK_NONE = 0,    /* slot unused (only for optional slots) */
    NX_OPK_HBM = 1,     /* access pattern into the shared HBM */
    NX_OPK_SBUF = 2,    /* access pattern into this core's SBUF */
    NX_OPK_PSUM = 3,    /* access pattern into this core's PSUM */
    NX_OPK_IMM = 4,     /* immediate scalar: `imm` */
    NX_OPK_PATTERN = 5, /* affine index expression (iota / affine_select) */
    NX_OPK_COUNT = 6
} nx_operand_kind;

/* An access pattern, an immediate or an index pattern.
 *
 * Memory access pattern (HBM/SBUF/PSUM): element (p, i0..i3), p in
 * [0, partition_count), ik in [0, count[k]) for k < ndims (dim 0 outermost,
 * dim ndims-1 innermost; iteration is row-major over p then dims), is at
 *   SBUF/PSUM: partition start_partition + p,
 *              byte offset + dtype_size * sum_k(stride[k] * ik) in that partition;
 *   HBM:       byte offset + dtype_size * (partition_stride * p + sum_k(stride[k] * ik)).
 * Strides are in elements and may be 0 (broadcast) or negative. `offset` is in
 * bytes. ndims == 0 means one element per partition.
 *
 * Immediate (NX_OPK_IMM): `imm` is the value (an engine value, see dtype.h);
 * `dtype` is the type it is read as (it is converted with nx_dtype_store/load
 * semantics when the assembler builds it).
 *
 * Pattern (NX_OPK_PATTERN): the value at (p, i0..i3) is the integer
 *   base + channel_multiplier * p + sum_k(stride[k] * ik)
 * where base = `pattern_base`, channel_multiplier = `partition_stride`;
 * `partition_count` (1..128) must equal the instruction's dst's.
 * An immediate has partition_count 1 (one value for every partition).
 */
typedef struct nx_operand {
    uint8_t kind;            /* nx_operand_kind */
    uint8_t dtype;           /* nx_dtype */
    uint8_t ndims;           /* 0..NX_MAX_FREE_DIMS */
    uint8_t start_partition; /* SBUF/PSUM: first partition; HBM/IMM/PATTERN: 0 */
    uint8_t partition_count; /* 1..128 (memory/pattern); 1 for IMM */
    int32_t partition_stride;/* HBM: elements between partitions; PATTERN: channel multiplier */
    uint64_t offset;         /* memory: byte offset; IMM: unused (0) */
    double imm;              /* IMM only */
    int64_t pattern_base;    /* PATTERN only */
    int32_t stride[NX_MAX_FREE_DIMS]; /* elements */
    uint32_t count[NX_MAX_FREE_DIMS]; /* elements, >= 1 for k < ndims */
} nx_operand;

/* Elements per partition of a memory or pattern operand (product of counts). */
uint64_t nx_operand_free_elems(const nx_operand *op);
int nx_operand_is_memory(const nx_operand *op);

/* ALU operations (tensor_tensor, tensor_scalar, scalar_tensor_tensor,
 * tensor_reduce, tensor_tensor_scan, affine_select compare, partition reduce,
 * activation accumulate). Codes are encoded. Arithmetic ops round inputs and
 * result to fp32; bitwise ops and shifts (the "bitvec" ops) work on 32-bit
 * patterns of the exact integer values (a float input is first rounded to an
 * integer and saturated), shift_right is logical; comparisons give 1.0 or
 * 0.0. Contract: docs/parts/insns-dve.md, "The ALU". */
#define NX_ALU_OPS(X)                \
    X(BYPASS, "bypass")              \
    X(ADD, "add")                    \
    X(SUBTRACT, "subtract")          \
    X(MULTIPLY, "multiply")          \
    X(DIVIDE, "divide")              \
    X(MAX, "max")                    \
    X(MIN, "min")                    \
    X(ABS_MAX, "abs_max")            \
    X(POW, "pow")                    \
    X(BITWISE_AND, "bitwise_and")    \
    X(BITWISE_OR, "bitwise_or")      \
    X(BITWISE_XOR, "bitwise_xor")    \
    X(SHIFT_LEFT, "shift_left")      \
    X(SHIFT_RIGHT, "shift_right")    \
    X(IS_EQUAL, "is_equal")          \
    X(NOT_EQUAL, "not_equal")        \
    X(IS_GE, "is_ge")                \
    X(IS_GT, "is_gt")                \
    X(IS_LE, "is_le")                \
    X(IS_LT, "is_lt")
typedef enum nx_alu_op {
#define NX_X(id, name) NX_ALU_##id,
    NX_ALU_OPS(NX_X)
#undef NX_X
    NX_ALU_COUNT
} nx_alu_op;
const char *nx_alu_name(nx_alu_op op);
int nx_alu_from_name(const char *name, nx_alu_op *out);
/* a op b on engine values. BYPASS returns a. */
double nx_alu_apply(nx_alu_op op, double a, double b);
/* Run forms of nx_alu_apply, bit for bit the element results, with the op
 * switch outside the loop (the semantics' hot paths; isa/alu_run.c):
 *   nx_alu_run         out[i] = a[i] op b[i]
 *   nx_alu_run_scalar  out[i] = x[i] op s, or s op x[i] when scalar_first
 * for i < n. out may be a, b or x (element i is read before out[i] is
 * written); no other overlap. */
void nx_alu_run(nx_alu_op op, double *out, const double *a, const double *b, uint64_t n);
void nx_alu_run_scalar(nx_alu_op op, double *out, const double *x, double s, int scalar_first,
                       uint64_t n);
/* acc = nx_alu_apply(op, acc, x[i]) for i = 0, 1, ..., n-1 in that order;
 * returns the final acc (acc itself when n == 0). */
double nx_alu_fold(nx_alu_op op, double acc, const double *x, uint64_t n);
/* 1 for the bitvec ops (bitwise_and/or/xor, shift_left/right), whose result
 * is a 32-bit pattern; 0 otherwise. */
int nx_alu_is_bitvec(nx_alu_op op);
/* The op whose result `t = x op0 s0; t = t op1 s1` leaves in t: op1, or op0
 * when op1 is bypass (which passes t through unchanged). */
static inline nx_alu_op nx_alu_last(nx_alu_op op0, nx_alu_op op1) {
    return op1 == NX_ALU_BYPASS ? op0 : op1;
}
/* Turns n bitvec results into the values that store their bit patterns into
 * dtype dt: for an integer dt, the pattern's low 8/16/32 bits read as dt
 * (two's-complement wrap, where the store would saturate); a float dt keeps
 * the values (the store's rounding rule applies). Call it on an
 * instruction's output row when its last op was a bitvec op, right before
 * nx_view_store (docs/parts/insns-dve.md, "Bitvec ops"). */
void nx_alu_bits_for_dtype(nx_dtype dt, double *v, uint64_t n);
/* The value a reduction with `op` starts from, so that folding x0 into it
 * normalises x0 exactly as the binary op would (fp32 rounding, |x0| for
 * abs_max, the 32-bit value for bitwise ops): add -0 (so a lone -0 stays -0),
 * multiply 1, max -inf, min +inf, abs_max 0, bitwise_and all ones (unsigned),
 * or/xor 0. NAN if `op` is not a reduction. */
double nx_alu_reduce_identity(nx_alu_op op);

/* Activation functions (ACT). Codes are encoded. */
#define NX_ACT_FUNCS(X)            \
    X(IDENTITY, "identity")        \
    X(EXP, "exp")                  \
    X(LOG, "log")                  \
    X(RELU, "relu")                \
    X(GELU, "gelu")                \
    X(GELU_TANH, "gelu_tanh")      \
    X(SILU, "silu")                \
    X(SIGMOID, "sigmoid")          \
    X(TANH, "tanh")                \
    X(SQUARE, "square")            \
    X(SQRT, "sqrt")                \
    X(RSQRT, "rsqrt")              \
    X(RECIPROCAL, "reciprocal")    \
    X(ABS, "abs")                  \
    X(SIGN, "sign")
typedef enum nx_act_func {
#define NX_X(id, name) NX_ACT_##id,
    NX_ACT_FUNCS(NX_X)
#undef NX_X
    NX_ACT_COUNT
} nx_act_func;
const char *nx_act_name(nx_act_func f);
int nx_act_from_name(const char *name, nx_act_func *out);
/* f(x) on an fp32 value, result rounded to fp32. */
double nx_act_apply(nx_act_func f, double x);
/* x[i] = nx_act_apply(f, x[i]) for i < n, bit for bit, with the function
 * switch outside the loop. */
void nx_act_apply_run(nx_act_func f, double *x, uint64_t n);

/* Named flag bits. Which flags an opcode accepts is in its table row. */
#define NX_FLAGS(X)                                                         \
    X(ACCUMULATE, 0, "acc")     /* PE: add into PSUM; DMA: add into dst */  \
    X(REVERSE0, 1, "rev0")      /* scalar op 0 computes (scalar op in) */   \
    X(REVERSE1, 2, "rev1")      /* scalar op 1 computes (scalar op x)  */   \
    X(OOB_SKIP, 3, "oob_skip")  /* indirect DMA: skip bad rows, not error */\
    X(SCATTER, 4, "scatter")    /* indirect DMA: offsets index dst rows */  \
    X(NEGATE, 5, "negate")      /* negate the result (reduce) */
typedef enum nx_flag {
#define NX_X(id, bit, name) NX_FLAG_##id = 1u << (bit),
    NX_FLAGS(NX_X)
#undef NX_X
} nx_flag;

/* A decoded instruction. */
typedef struct nx_insn {
    uint8_t opcode;      /* nx_opcode */
    uint8_t alu0;        /* nx_alu_op */
    uint8_t alu1;        /* nx_alu_op */
    uint8_t func;        /* nx_act_func */
    uint16_t flags;      /* nx_flag bits */
    uint8_t wait_sem;    /* NX_SEM_NONE or semaphore index */
    uint8_t inc_sem;     /* NX_SEM_NONE or semaphore index */
    uint32_t wait_value; /* start when sems[wait_sem] >= wait_value */
    uint32_t inc_amount; /* sems[inc_sem] += inc_amount on completion */
    int32_t iparam[2];   /* meaning per opcode (table row names them) */
    uint32_t wait_span;  /* 0: the wait is on wait_sem alone; n >= 2: on each of
                            sems[wait_sem .. wait_sem + n - 1] (docs/ISA.md) */
    nx_operand op[NX_MAX_OPERANDS];
} nx_insn;

/* The number of semaphores an instruction's wait covers: 0 (no wait), 1, or
 * its span; they are wait_sem, wait_sem + 1, .... */
static inline uint32_t nx_insn_wait_sems(const nx_insn *in) {
    return in->wait_sem == NX_SEM_NONE ? 0 : in->wait_span ? in->wait_span : 1;
}

/* The first semaphore of a wait (wait_sem, wait_span, wait_value) that is
 * still below the value in sems[], or NX_SEM_NONE when the wait is met. */
static inline uint32_t nx_wait_short(uint8_t wait_sem, uint32_t wait_span, uint32_t wait_value,
                                     const uint32_t *sems) {
    if (wait_sem == NX_SEM_NONE) return NX_SEM_NONE;
    uint32_t n = wait_span ? wait_span : 1;
    for (uint32_t i = 0; i < n; i++)
        if (sems[wait_sem + i] < wait_value) return wait_sem + i;
    return NX_SEM_NONE;
}

#ifdef __cplusplus
}
#endif

#endif
