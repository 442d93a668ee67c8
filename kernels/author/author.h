/* The kernel-authoring layer: what a leaf kernel writes against.
 *
 * A context (nx_kctx) emits the instructions of ONE core (program_id) of a
 * grid into a program builder. It gives a leaf three things:
 *
 *  1. Tiles: SBUF/PSUM regions from a pool allocator with explicit release.
 *     Every tile spans partitions [0, partitions) and a byte range that is
 *     the same in every partition. Overflow is an error naming the tile
 *     request and what is left. Released space is reused by later requests,
 *     so a loop that allocates and releases never runs out. Multi-buffering
 *     is the leaf's choice: allocate N tiles up front and rotate them.
 *
 *  2. Emit helpers for the instructions a leaf needs (DMA with per-queue
 *     spreading, tensor_copy, transpose, load_stationary/multiply_moving,
 *     memset, iota, tensor_tensor, activation, and a generic emit). Each
 *     instruction is validated when it is emitted (isa/validate.h), so a bad
 *     access pattern is reported at the line that built it.
 *
 *  3. Synchronisation, inferred: the leaf never writes a semaphore. The
 *     semantics of a traced kernel is its emission order (as if every
 *     instruction ran to completion before the next); the layer adds exactly
 *     the waits that make every engine and DMA queue respect that order where
 *     memory footprints (isa/validate.h nx_insn_footprint) conflict: RAW,
 *     WAR, WAW, for SBUF/PSUM of this core and HBM. Independent work is left
 *     unordered, so the engines overlap. docs/parts/kernels.md explains the
 *     scheme (agents, one counting semaphore each, vector clocks, nops for
 *     extra waits, pruning).
 *
 * Cross-core: the layer orders this core's work only. Leaves on a grid split
 * their HBM writes so the programs never touch the same bytes, or call
 * nx_kctx_barrier() (both programs must call it the same number of times).
 *
 * Semaphores are program-wide indices (per-core counters). A context takes
 * one per agent it uses (PE, DVE, ACT, POOL, each DMA lane), lazily; when
 * another core of the same builder already uses an index for the same agent
 * (e.g. program 0 of the grid was traced first) and this core does not use
 * that index, the context reuses it, so the programs of a grid share one set
 * of indices.
 *
 * Errors: functions return 0 or -1 with a one-line message in err. After an
 * error the context only accepts nx_kctx_free(). Ownership: the context
 * borrows the builder (which must outlive it) and owns nothing the builder
 * owns. */
#ifndef NXSIM_KERNELS_AUTHOR_H
#define NXSIM_KERNELS_AUTHOR_H

#include <stdint.h>

#include "isa/builder.h"
#include "isa/error.h"
#include "isa/geometry.h"
#include "isa/insn.h"
#include "isa/machine.h"

typedef struct nx_kctx nx_kctx;

/* ---- context ---- */

/* NULL on OOM (or m NULL, program_id >= num_programs, or num_programs == 0);
 * emits into core program_id of b, within the machine geometry b was made
 * for. m is the machine description that geometry came from (copied; its
 * geometry is replaced by b's): the clocks, bandwidths and DMA figures a
 * leaf's plan reads through nx_kctx_machine, so a kernel traced for trn1 or
 * a user's machine file plans with that machine's figures. */
nx_kctx *nx_kctx_new_machine(nx_builder *b, const nx_machine *m, uint32_t program_id,
                            uint32_t num_programs);
/* The same for a caller that holds only the builder: m is the preset its
 * geometry names, else the default preset (sim/machine.h
 * nx_machine_of_geometry). Transitional, for the benches that trace leaves
 * themselves; defined by registry/of_geometry.c because kernels/ does
 * not load machine files. */
nx_kctx *nx_kctx_new(nx_builder *b, uint32_t program_id, uint32_t num_programs);
uint32_t nx_kctx_program_id(const nx_kctx *k);
uint32_t nx_kctx_num_programs(const nx_kctx *k);
const nx_geometry *nx_kctx_geometry(const nx_kctx *k);
/* The machine description the context was made with (geometry = b's). */
const nx_machine *nx_kctx_machine(const nx_kctx *k);
nx_builder *nx_kctx_builder(nx_kctx *k);
/* Solo mode (a composite running its sub-kernels tensor-parallel, one
 * shard per core: kernels/layer): while on, the leaves traced on k see a
 * grid of one (program_id 0, num_programs 1, nx_kctx_rows the whole), so
 * each core runs its own shard of every sub-kernel; nx_kctx_scratch gives
 * each core its own tensor (the name suffixed ".core<N>"). The emission
 * still goes to core nx_kctx_core(k). Turn it off before a barrier or a
 * collective between the cores. */
void nx_kctx_set_solo(nx_kctx *k, int on);
int nx_kctx_solo(const nx_kctx *k);
/* Regions: the part of a composite (a sub-kernel: "qkv", "attention",
 * "all-reduce" ...) the next instructions belong to, until the next call
 * (NULL: none). Their source locations' function reads "NAME: func", so
 * `nxsim run --by-source` keeps the lines of each part apart and adds the
 * summary by region (sim/profile.h nx_profile_by_region). name is
 * borrowed: a literal. */
void nx_kctx_set_region(nx_kctx *k, const char *name);
/* The core the context emits to, whatever the solo mode. */
uint32_t nx_kctx_core(const nx_kctx *k);

/* Closes the trace: the SP waits for every DMA lane's last transfer (so the
 * program's end means its data is in place) and every stream of this core
 * that holds instructions gets an `end`, so one context traces a core's
 * whole program. Nothing may be emitted afterwards. Tiles still allocated
 * are fine (the trace is over). */
int nx_kctx_finish(nx_kctx *k, nx_error *err);
void nx_kctx_free(nx_kctx *k);

/* Grid helper: the contiguous share [*lo, *hi) of `total` rows that program
 * k takes: [p*ceil(total/n), min((p+1)*ceil(total/n), total)). */
void nx_kctx_rows(const nx_kctx *k, uint64_t total, uint64_t *lo, uint64_t *hi);

/* Full barrier across the grid: everything this core emitted before it
 * happens before everything either core emits after it (the other program
 * must call it too). Runs on POOL (core_barrier), preceded by POOL waits for
 * every agent's outstanding work. */
int nx_kctx_barrier(nx_kctx *k, nx_error *err);
/* A grid barrier that orders only the accesses to HBM bytes [lo, hi): its
 * arrival follows every access of this core to them emitted before it, and
 * every access to them emitted after it waits for its pass. With the other
 * program calling its matching barrier (full or ranged: the k-th
 * core_barrier of each core meet), every access of either core to the
 * range before happens before every access of either after. Other work is
 * not ordered by it, so the engines keep running across it: the exchange
 * of the collectives (kernels/author/collective.h). POOL stalls at it
 * until the other core arrives. Error: an empty range or one beyond HBM. */
int nx_kctx_barrier_hbm(nx_kctx *k, uint64_t lo, uint64_t hi, nx_error *err);

/* ---- tiles ---- */

typedef struct nx_tile {
    uint8_t mem;          /* NX_OPK_SBUF or NX_OPK_PSUM */
    uint8_t dtype;        /* nx_dtype of nx_tile_ap() */
    uint32_t partitions;  /* partitions [0, partitions) */
    uint64_t free_elems;  /* elements per partition */
    uint64_t offset;      /* first byte within each partition */
    uint64_t bytes;       /* bytes reserved per partition */
} nx_tile;

/* Allocates a [partitions x free_elems] tile of dtype in SBUF or PSUM
 * (`mem` NX_OPK_SBUF / NX_OPK_PSUM). SBUF tiles are 64-byte aligned; a PSUM
 * tile of at most one bank never straddles a bank. `name` (borrowed) names
 * the tile in errors, e.g.
 *   SBUF tile 'xin' (128 x 4096 fp32, 16384 bytes per partition) does not
 *   fit: <the builder's overflow message>; released: 2048 bytes per
 *   partition in 1 extent (largest 2048) */
int nx_kctx_alloc(nx_kctx *k, nx_operand_kind mem, const char *name, nx_dtype dtype,
                  uint32_t partitions, uint64_t free_elems, nx_tile *out, nx_error *err);
/* An HBM scratch tensor of the program (role scratch, ndims dims of
 * `shape`), for data a leaf re-lays-out through HBM: declared by the first
 * program of the grid that asks for `name`, found by name by the others, so
 * the programs of a grid share one tensor (a leaf wanting one per program
 * puts the program id in the name). *off gets its HBM offset in bytes.
 * Errors: the builder's (a bad shape, HBM exhausted, a name program 0
 * already declared). */
int nx_kctx_scratch(nx_kctx *k, const char *name, nx_dtype dtype, uint32_t ndims, const uint64_t *shape,
                    uint64_t *off, nx_error *err);
/* Returns a tile's space to the pool (later tiles may reuse it; the layer
 * orders the reuse after the old tile's last access). Error for a tile that
 * is not allocated (double release). */
int nx_kctx_release(nx_kctx *k, const nx_tile *t, nx_error *err);

/* Returns every allocated tile to the pool: a composite calls it between
 * the sub-kernels it traces one after another on the same context (each
 * leaves its tiles allocated when it returns); the reuse is ordered after
 * the old tiles' last accesses as for nx_kctx_release. */
int nx_kctx_release_all(nx_kctx *k, nx_error *err);

/* The whole tile: [partitions] x [free_elems] contiguous, as its dtype. */
nx_operand nx_tile_ap(const nx_tile *t);
/* A view: partitions [p0, p0 + np) of the tile, read as dtype `as`, first
 * element `elem_offset` (in elements of `as` from the tile start), free
 * pattern (strides in elements of `as`, outermost first). The caller keeps
 * the view inside the tile (the instruction validation catches the rest). */
nx_operand nx_tile_view(const nx_tile *t, nx_dtype as, uint32_t p0, uint32_t np,
                        uint64_t elem_offset, uint32_t ndims, const int32_t *strides,
                        const uint32_t *counts);
/* Rows [p0, p0 + np) of an operand (SBUF/PSUM: partitions; HBM: rows of
 * partition_stride elements). */
nx_operand nx_operand_rows(const nx_operand *op, uint32_t p0, uint32_t np);

/* ---- DMA ---- */

/* DMA lanes: the context spreads transfers over nx_kctx_lanes() queues,
 * lane l on DMA engine l mod E (its queue l / E), E = the machine's
 * geo.dma_engines (16 on trn1/trn2; queue numbers as isa/geometry.h), so
 * consecutive lanes use different DMA engines. Transfers on one lane run in
 * order; on different lanes they overlap. */
uint32_t nx_kctx_lanes(const nx_kctx *k);
/* Lanes for a kernel that keeps more transfer streams apart than the
 * default 32 (two queues per engine on trn2): up to 64 and the machine's
 * queue count (clipped to those). Only before the first instruction, or
 * when the context already has that many (a composite sets the most any of
 * its sub-kernels asks for before its first instruction). */
int nx_kctx_set_lanes(nx_kctx *k, uint32_t lanes, nx_error *err);
uint32_t nx_kctx_lane_queue(const nx_kctx *k, uint32_t lane);

/* dma_copy dst <- src on the next lane (round robin). */
int nx_kctx_dma(nx_kctx *k, const nx_operand *dst, const nx_operand *src, nx_error *err);
/* dma_copy on lane `lane % lanes`. */
int nx_kctx_dma_on(nx_kctx *k, uint32_t lane, const nx_operand *dst, const nx_operand *src,
                   nx_error *err);
/* Splits a transfer by rows into `pieces` transfers of (nearly) equal row
 * counts on lanes first_lane, first_lane + 1, ... (mod lanes). */
int nx_kctx_dma_split(nx_kctx *k, uint32_t first_lane, uint32_t pieces, const nx_operand *dst,
                      const nx_operand *src, nx_error *err);
/* A DMA instruction the caller built (dma_copy with offsets, bound and the
 * acc / scatter / oob_skip flags, e.g. an indirect gather; or
 * dma_transpose), on lane `lane % lanes`: the helper sets its queue
 * (iparam[0]). It must carry no semaphore wait or increment. */
int nx_kctx_dma_insn(nx_kctx *k, uint32_t lane, const nx_insn *insn, nx_error *err);
/* dma_transpose (2-byte dtypes) on lane `lane % lanes`. */
int nx_kctx_dma_transpose(nx_kctx *k, uint32_t lane, const nx_operand *dst,
                          const nx_operand *src, nx_error *err);

/* ---- compute ---- */

/* Any non-DMA instruction on a compute engine (PE/DVE/ACT/POOL) or a
 * control instruction (nop) on any engine. The instruction must carry no
 * semaphore wait or increment: the layer adds them. */
int nx_kctx_emit(nx_kctx *k, nx_engine engine, const nx_insn *insn, nx_error *err);

int nx_kctx_tensor_copy(nx_kctx *k, nx_engine engine, const nx_operand *dst,
                        const nx_operand *src, nx_error *err);
/* transpose on PE (SBUF -> PSUM) or DVE (32x32 blocks). */
int nx_kctx_transpose(nx_kctx *k, nx_engine engine, const nx_operand *dst, const nx_operand *src,
                      nx_error *err);
int nx_kctx_load_stationary(nx_kctx *k, const nx_operand *src, nx_error *err);
int nx_kctx_multiply_moving(nx_kctx *k, const nx_operand *dst, const nx_operand *moving,
                            int accumulate, nx_error *err);
/* memset dst to value (read as dst's dtype) on DVE or POOL. */
int nx_kctx_memset(nx_kctx *k, nx_engine engine, const nx_operand *dst, double value,
                   nx_error *err);
/* iota dst <- pattern on POOL. */
int nx_kctx_iota(nx_kctx *k, const nx_operand *dst, const nx_operand *pattern, nx_error *err);
int nx_kctx_tensor_tensor(nx_kctx *k, nx_engine engine, nx_alu_op op, const nx_operand *dst,
                          const nx_operand *in0, const nx_operand *in1, nx_error *err);
/* tensor_scalar dst = (in op0 s0) op1 s1 on DVE or POOL; s0, s1 immediates
 * (nx_imm) or per-partition scalars; s1 NULL = no second op (op1 must be
 * bypass). */
int nx_kctx_tensor_scalar(nx_kctx *k, nx_engine engine, const nx_operand *dst, const nx_operand *in,
                          nx_alu_op op0, const nx_operand *s0, nx_alu_op op1, const nx_operand *s1,
                          nx_error *err);
/* scalar_tensor_tensor dst = (in0 op0 s) op1 in1 on DVE or POOL. */
int nx_kctx_scalar_tensor_tensor(nx_kctx *k, nx_engine engine, const nx_operand *dst,
                                 const nx_operand *in0, nx_alu_op op0, const nx_operand *s,
                                 nx_alu_op op1, const nx_operand *in1, nx_error *err);
/* activation dst = func(in * scale + bias) on ACT, scale and bias immediates. */
int nx_kctx_activation(nx_kctx *k, nx_act_func func, const nx_operand *dst, const nx_operand *in,
                       double scale, double bias, nx_error *err);

/* ---- source locations ----
 *
 * Every helper above that emits instructions is also a macro of the same
 * name, so a leaf's call `nx_kctx_dma(k, &dst, &src, err)` records where it
 * was made (__FILE__, __LINE__, __func__) on every instruction it emits
 * (its waits' nops included) as the program's source location of those
 * instructions (isa/program.h nx_program_insn_src). Profiles show it
 * (docs/parts/profiles.md: the Perfetto slices' "source", `nxsim run
 * --by-source`). The location is kept beside the instructions, never in the
 * instruction word.
 *
 * The outermost call wins: a helper of a leaf's own that calls these
 * helpers records the lines inside that helper; a layer helper that calls
 * another keeps the leaf's line. The macro evaluates `k` three times (pass
 * a plain variable). Taking a helper's address (`&nx_kctx_dma`, or the name
 * without a call) gets the function, without location.
 *
 * Adding an emit helper: declare the function above, then add its line
 * below; its definition in kernels/author*.c needs nothing (those files
 * define NX_KCTX_NO_SRC_MACROS). tests/author_src_macros.sh checks that
 * every `int nx_kctx_*(nx_kctx *k, ...)` declared here has its macro. */
void nx_kctx_src_begin_(nx_kctx *k, const char *file, uint32_t line, const char *func);
int nx_kctx_src_end_(nx_kctx *k, int rc);
#define NX_KCTX_AT_(fn, k, ...) \
    nx_kctx_src_end_((k), (nx_kctx_src_begin_((k), __FILE__, __LINE__, __func__), fn((k), __VA_ARGS__)))

#ifndef NX_KCTX_NO_SRC_MACROS
#define nx_kctx_finish(k, ...) NX_KCTX_AT_(nx_kctx_finish, k, __VA_ARGS__)
#define nx_kctx_barrier(k, ...) NX_KCTX_AT_(nx_kctx_barrier, k, __VA_ARGS__)
#define nx_kctx_barrier_hbm(k, ...) NX_KCTX_AT_(nx_kctx_barrier_hbm, k, __VA_ARGS__)
#define nx_kctx_release_all(k, ...) NX_KCTX_AT_(nx_kctx_release_all, k, __VA_ARGS__)
#define nx_kctx_dma(k, ...) NX_KCTX_AT_(nx_kctx_dma, k, __VA_ARGS__)
#define nx_kctx_dma_on(k, ...) NX_KCTX_AT_(nx_kctx_dma_on, k, __VA_ARGS__)
#define nx_kctx_dma_split(k, ...) NX_KCTX_AT_(nx_kctx_dma_split, k, __VA_ARGS__)
#define nx_kctx_dma_insn(k, ...) NX_KCTX_AT_(nx_kctx_dma_insn, k, __VA_ARGS__)
#define nx_kctx_dma_transpose(k, ...) NX_KCTX_AT_(nx_kctx_dma_transpose, k, __VA_ARGS__)
#define nx_kctx_emit(k, ...) NX_KCTX_AT_(nx_kctx_emit, k, __VA_ARGS__)
#define nx_kctx_tensor_copy(k, ...) NX_KCTX_AT_(nx_kctx_tensor_copy, k, __VA_ARGS__)
#define nx_kctx_transpose(k, ...) NX_KCTX_AT_(nx_kctx_transpose, k, __VA_ARGS__)
#define nx_kctx_load_stationary(k, ...) NX_KCTX_AT_(nx_kctx_load_stationary, k, __VA_ARGS__)
#define nx_kctx_multiply_moving(k, ...) NX_KCTX_AT_(nx_kctx_multiply_moving, k, __VA_ARGS__)
#define nx_kctx_memset(k, ...) NX_KCTX_AT_(nx_kctx_memset, k, __VA_ARGS__)
#define nx_kctx_iota(k, ...) NX_KCTX_AT_(nx_kctx_iota, k, __VA_ARGS__)
#define nx_kctx_tensor_tensor(k, ...) NX_KCTX_AT_(nx_kctx_tensor_tensor, k, __VA_ARGS__)
#define nx_kctx_tensor_scalar(k, ...) NX_KCTX_AT_(nx_kctx_tensor_scalar, k, __VA_ARGS__)
#define nx_kctx_scalar_tensor_tensor(k, ...) NX_KCTX_AT_(nx_kctx_scalar_tensor_tensor, k, __VA_ARGS__)
#define nx_kctx_activation(k, ...) NX_KCTX_AT_(nx_kctx_activation, k, __VA_ARGS__)
#endif

/* ---- introspection (tests, profiles) ---- */

typedef struct nx_kctx_stats {
    uint64_t instructions; /* emitted by the leaf (not counting nops/ends) */
    uint64_t waits;        /* semaphore waits the layer attached (incl. on nops) */
    uint64_t nops;         /* nops the layer added to carry extra waits */
    uint64_t live_max;     /* most footprints tracked at once */
} nx_kctx_stats;
void nx_kctx_get_stats(const nx_kctx *k, nx_kctx_stats *out);
/* on != 0: the waits one instruction needs that have the same value on
 * consecutive semaphores (the lanes of a transfer cut over the DMA engines)
 * become one wait on the span (docs/ISA.md "Machine model"), so a consumer
 * of a 16-piece transfer waits once, not on 15 nops and itself. A semaphore
 * inside the span that was not needed joins it only when the instruction
 * is already known to follow that value (it never waits longer). On by
 * default; off gives one semaphore per wait (the same values). Set it
 * before the first instruction. */
void nx_kctx_set_wait_spans(nx_kctx *k, int on);
/* The semaphore index of an engine's agent (PE/DVE/ACT/POOL) or of a DMA
 * lane, or -1 if the context has not used it. */
int nx_kctx_engine_semaphore(const nx_kctx *k, nx_engine engine);
int nx_kctx_lane_semaphore(const nx_kctx *k, uint32_t lane);

#endif
