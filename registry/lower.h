/* The lowering driver (the Neuron compiler's codegenInternalNativeNkiKernel
 * path, docs/parts/registry.md) and its traced-program cache.
 *
 *   prepared op (registry/prepare.h: its target looked up once there)
 *   -> nx_resolve_target (call_args, additional_args; no lookup) -> trace
 *   the leaf (or the composite's trace function) once per program_id
 *   of its grid (NX_VNC_GRID = 2 cores when requires_multicore_grid, else 1)
 *   into ONE program -> cache.
 *
 * Tracing: the driver declares the HBM tensors first, every operand with
 * role input and every result with role output, in op order (so the
 * program's tensor table mirrors the op); call_args get their hbm_offset;
 * then for each program_id it opens an authoring context (kernels/author/author.h),
 * calls the leaf and finishes the context; nx_builder_finish validates the
 * program against the geometry.
 *
 * Cache: a program is cached under everything that shapes it: func_name,
 * each operand's and result's name, dtype and shape, the canonical attribute
 * text (nx_attrs_canonical: order-insensitive), the grid and the machine
 * geometry's name. The cache owns its programs; a returned program stays
 * valid until nx_lowerer_free. Each trace that adds a program increments the
 * lowerer's NEW_NKI_FE counter (the seed's metric name for new traces of the
 * new NKI frontend); a cache hit does not.
 *
 * Threads: a lowerer may be shared; one mutex guards the cache and is held
 * across a trace, so a key is traced exactly once even when several threads
 * ask for it at once (NEW_NKI_FE counts programs, never duplicates).
 *
 * Errors (one line): a func_name that is neither a registry key nor a
 * composite gives the registry's miss text verbatim; a leaf's error is passed on unchanged; a builder or
 * validation error names the kernel ("tiled_pf_transpose: ..."). */
#ifndef NXSIM_REGISTRY_LOWER_H
#define NXSIM_REGISTRY_LOWER_H

#include <stdint.h>

#include "isa/error.h"
#include "isa/geometry.h"
#include "isa/machine.h"
#include "isa/program.h"
#include "composites.h"
#include "macro_op.h"
#include "registry.h"

typedef struct nx_lowerer nx_lowerer;

/* A lowerer for machine description `m` (copied: every authoring context
 * gets it, so plans read that machine's figures, kernels/author/author.h
 * nx_kctx_new), resolving against `reg` (NULL = the live registry; a test
 * passes a table of test leaves, which must outlive the lowerer) and
 * reaching the composites of `comps` after a registry miss (NULL = the
 * inventory's composites; a test passes a table of test composites, which
 * must outlive the lowerer). NULL on out-of-memory or m NULL. */
nx_lowerer *nx_lowerer_new_machine(const nx_machine *m, const nx_kernel_registry *reg,
                                   const nx_composite_table *comps);
/* For callers that hold only a geometry (copied): the other figures are
 * those of the preset named geo->name ("trn1", "trn2"), else of the default
 * preset, so a user's machine file reaches its kernels only through
 * nx_lowerer_new_machine. Transitional: the CLI, the C API and the Python
 * binding pass the whole description. */
nx_lowerer *nx_lowerer_new(const nx_geometry *geo, const nx_kernel_registry *reg);
nx_lowerer *nx_lowerer_new_with(const nx_geometry *geo, const nx_kernel_registry *reg,
                                const nx_composite_table *comps);
void nx_lowerer_free(nx_lowerer *L);

/* What func_name reaches through L's tables (nx_kernel_lookup): its key,
 * config, family and rules, before any op is built. The one lookup of a
 * run: nx_prepare_target calls it; a NULL func_name is "the op has no
 * func_name". */
int nx_lowerer_lookup(const nx_lowerer *L, const char *func_name, nx_kernel_target *out, nx_error *err);

/* Lowers `op` on its target `t` (found through L's tables: nx_prepare_op
 * gives both, the op complete and checked; a test may pass an op it built
 * whole) to a program, from the cache or by a new trace. *prog is owned by
 * the lowerer. *grid_out (optional) gets the cores the program runs on. */
int nx_lower(nx_lowerer *L, const nx_kernel_target *t, const nx_macro_op *op, const nx_program **prog,
             uint32_t *grid_out, nx_error *err);

/* The same, tracing on `grid` cores instead of the config's grid (1 or 2;
 * benches compare a grid leaf on one core against VNC(2)). The leaf gets
 * num_programs = grid. Cached separately (grid is part of the key). */
int nx_lower_on_grid(nx_lowerer *L, const nx_kernel_target *t, const nx_macro_op *op, uint32_t grid,
                     const nx_program **prog, nx_error *err);

/* nx_lower (grid 0) or nx_lower_on_grid (grid 1 or 2) with a trace that
 * stops as soon as the program being built, with `beside` bytes the run
 * holds already, passes max_bytes (0: no limit; the instruction cap
 * NX_PROGRAM_MAX_INSNS always applies; both are checked as instructions
 * are appended: isa/builder.h). A trace stopped at a limit fails with "KEY:
 * more than 2097152 instructions, the most a program may hold" or "KEY: the
 * program being traced holds 92.0 MiB beside the run's 10.5 MiB, more than
 * the memory limit of 100 MiB"; *limited (optional) is 1 for the second. A
 * program that fits is cached as nx_lower's (the limit is no part of the
 * key). */
int nx_lower_within(nx_lowerer *L, const nx_kernel_target *t, const nx_macro_op *op, uint32_t grid,
                    uint64_t max_bytes, uint64_t beside, const nx_program **prog, uint32_t *grid_out, int *limited,
                    nx_error *err);

/* NEW_NKI_FE: programs traced (not found in the cache) by this lowerer. */
uint64_t nx_lowerer_new_traces(const nx_lowerer *L);
/* Lookups answered from the cache. */
uint64_t nx_lowerer_cache_hits(const nx_lowerer *L);
/* Programs in the cache. */
uint64_t nx_lowerer_cached(const nx_lowerer *L);

/* The cache key text of `op` on `grid` cores for geometry `geo` (malloc'd;
 * NULL on out-of-memory): exposed for tests and for messages. */
char *nx_lower_cache_key(const nx_macro_op *op, uint32_t grid, const nx_geometry *geo);

#endif
