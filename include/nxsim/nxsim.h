/* libnxsim: the C API of nxsim (docs/parts/library.md).
 *
 * Run a kernel (a macro-op: a registry key or a composite) on a simulated
 * machine and backend, get its results, the profile summary and the traces;
 * assemble or load an ISA program and run it. It is a facade over the one
 * run path the `nxsim` command, the tests and the benches use
 * (registry/run/run.h), so the library, the CLI and the Python package give
 * the same results, bit for bit, and the same cycle counts.
 *
 * Versioning: the SONAME is libnxsim.so.MAJOR. Within one major version a
 * minor version only adds functions (and fields at the end of nx_config,
 * which carries its size); NXSIM_VERSION_* are the version of this header,
 * nx_version() that of the library loaded.
 *
 * Errors: every fallible function returns an nx_status (NX_OK = 0) and, if
 * `msg` is not NULL, writes one line naming the offending input into it
 * (the same text `nxsim` prints after "nxsim: "). Nothing aborts or exits.
 *
 * Memory: objects are created by nx_*_new/open/load and freed by the
 * matching nx_*_free/close (NULL is fine). Strings returned as `char *` are
 * malloc'd: free them with nx_free. `const` pointers returned by accessors
 * belong to the object and live as long as it does. A result borrows its
 * session (and, for nx_session_exec, its program): free the result first.
 * Operand bytes given to nx_call_add_operand are borrowed until the call is
 * freed; they are only read.
 *
 * Threads: objects are independent; one session may be used by several
 * threads at once (its trace cache is locked). The SystemC model is one
 * platform per process (SystemC cannot be elaborated twice and is not
 * re-entrant), so model runs of all threads are serialised behind one lock:
 * two threads calling nx_session_run at once are safe, and their model runs
 * take turns. Functional-backend runs (NX_BACKEND_FUNCTIONAL) run in
 * parallel.
 *
 * Units: simulated time in ns; cycles of the named engine's clock; sizes in
 * bytes unless named elements. Tensors are C order (row-major), little
 * endian. Dtypes are named as in assembly: fp32 bf16 fp16 fp8_e4m3 fp8_e5m2
 * int8 uint8 int16 uint16 int32 uint32 (bf16 and fp8 are their raw bits:
 * 2 and 1 bytes per element; nx_convert converts). */
#ifndef NXSIM_NXSIM_H
#define NXSIM_NXSIM_H

#include <stddef.h>
#include <stdint.h>

#include "nxsim/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(NXSIM_BUILDING_LIBRARY) && defined(__GNUC__)
#define NXSIM_API __attribute__((visibility("default")))
#else
#define NXSIM_API
#endif

/* ---- version, status, messages ---- */

/* The library's version, "MAJOR.MINOR.PATCH". */
NXSIM_API const char *nx_version(void);

typedef enum nx_status {
    NX_OK = 0,
    NX_ERR_INPUT = 1,   /* bad input: unknown kernel (the registry's miss text), a shape or dtype
                         * the kernel refuses, a malformed program or attribute, unknown machine */
    NX_ERR_RUNTIME = 2, /* the program faulted or deadlocked; an output could not be written */
    NX_ERR_RACE = 3,    /* the race check found a race (the message is its report) */
    NX_ERR_USAGE = 4,   /* the API was called wrongly (NULL argument, index out of range) */
    NX_ERR_MEMORY = 5,  /* out of memory */
} nx_status;

#define NX_MESSAGE_MAX 512
typedef struct nx_message {
    char text[NX_MESSAGE_MAX]; /* one line, NUL-terminated; "" after success */
} nx_message;

/* Frees a string (or any buffer) the library returned. */
NXSIM_API void nx_free(void *p);

/* ---- sessions: a machine and its trace cache ---- */

typedef struct nx_session nx_session;

/* machine: a preset name ("trn1", "trn2"), a machine JSON file, or NULL
 * for the default preset (trn2). */
NXSIM_API nx_status nx_session_open(const char *machine, nx_session **out, nx_message *msg);
NXSIM_API void nx_session_close(nx_session *s);
/* The machine's name (its "name" field). */
NXSIM_API const char *nx_session_machine(const nx_session *s);
/* A size or limit of the session's machine by its geometry key
 * (docs/parts/machine.md): "cores", "partitions", "sbuf_partition_bytes",
 * "psum_partition_bytes", "psum_bank_bytes", "sbuf_free_elems_max",
 * "psum_free_elems_max", "pe_rows", "pe_cols", "pe_moving_free_max",
 * "dve_transpose_max", "dma_queues", "dma_engines",
 * "dma_queues_per_engine". 0 for an unknown name. */
NXSIM_API uint64_t nx_session_geometry(const nx_session *s, const char *name);
/* The machine presets built into the library, NULL-terminated. */
NXSIM_API const char *const *nx_machine_presets_list(void);

/* ---- calls: a macro-op to run ---- */

typedef struct nx_call nx_call;

/* A call of kernel `func_name` (checked when it runs). With no operand
 * added, the kernel runs on its built-in default op (as `nxsim run KEY`
 * without -i: deterministic pseudo-random operands of a default shape). */
NXSIM_API nx_status nx_call_new(const char *func_name, nx_call **out, nx_message *msg);
NXSIM_API void nx_call_free(nx_call *c);
/* Appends operand in<N> (N = operands so far): dtype name, shape (ndims 1..6,
 * every dim > 0) and its bytes in C order (borrowed; NULL: pseudo-random
 * from the run's seed). */
NXSIM_API nx_status nx_call_add_operand(nx_call *c, const char *dtype, uint32_t ndims, const uint64_t *shape,
                                        const void *data, nx_message *msg);
/* Sets attribute `name` to a JSON value ("[1, 1]", "2", "\"nearest\"",
 * "1.5", "true", "null"); it overrides a default op's attribute. */
NXSIM_API nx_status nx_call_set_attr(nx_call *c, const char *name, const char *json, nx_message *msg);

/* ---- running ---- */

typedef enum nx_backend {
    NX_BACKEND_MODEL = 0,      /* the cycle-approximate SystemC model: timing, profile */
    NX_BACKEND_FUNCTIONAL = 1, /* the functional executor: the same results, no timing */
} nx_backend;

typedef struct nx_config {
    uint32_t size;       /* sizeof(nx_config): nx_config_init sets it (a size that
                          * ends at no field is NX_ERR_USAGE) */
    int backend;         /* nx_backend (another value is NX_ERR_USAGE) */
    int pe_rtl;          /* model: matmuls through the Verilated RTL PE array (slow) */
    int race_check;      /* model: a race fails the run with NX_ERR_RACE */
    int check;           /* nx_session_run: compare every result with the kernel's reference */
    int keep_log;        /* model: keep the per-instruction log, needed by traces, the
                          * timeline and the by-source summary (default 1) */
    int progress;        /* model: a progress line on stderr for runs over a second */
    uint32_t grid;       /* 0: the kernel's grid; 1 or 2: trace on that many cores
                          * (more is NX_ERR_USAGE) */
    uint64_t seed;       /* seed of pseudo-random operands / inputs (default 1) */
} nx_config;

/* Defaults: the model, keep_log 1, seed 1, everything else 0. */
NXSIM_API void nx_config_init(nx_config *cfg);

typedef struct nx_result nx_result;

/* Lowers the call (the registry, then the composites; traced programs are
 * cached in the session), runs it and, with cfg->check, checks it. cfg NULL:
 * defaults. A failed check is not an error: NX_OK, and
 * nx_result_check_failures() > 0. */
NXSIM_API nx_status nx_session_run(nx_session *s, const nx_call *c, const nx_config *cfg, nx_result **out,
                                   nx_message *msg);

/* ---- ISA programs ---- */

typedef struct nx_prog nx_prog;

/* A .nxb binary or .nxs text program (recognised by the .nxb magic). */
NXSIM_API nx_status nx_prog_load(const char *path, nx_prog **out, nx_message *msg);
/* Assembles .nxs text; `name` names it in messages. */
NXSIM_API nx_status nx_prog_assemble(const char *text, const char *name, nx_prog **out, nx_message *msg);
/* Assembles .nxs text written in program order and synchronises it for the
 * session's machine: the text carries no semaphores (no .semaphores, wait=,
 * inc=) and no @OFFSET on its tensors; each core's instructions mean what
 * they would if each ran to completion before the next, in the order of the
 * text across engines. The authoring layer (docs/parts/kernels.md) adds
 * exactly the waits that order needs where footprints conflict, and an
 * `end` per stream; a DMA's queue=N picks the layer's DMA lane N (modulo
 * its lanes), nop and end lines are dropped. `.src` locations are kept, and
 * an instruction the machine refuses is reported as "FILE:LINE: ..." of its
 * .src. For front ends that trace a kernel (nxsim.nki, docs/parts/nki.md). */
NXSIM_API nx_status nx_prog_assemble_ordered(const nx_session *s, const char *text, const char *name,
                                             nx_prog **out, nx_message *msg);
/* Writes p for `nxsim exec`: a path ending in .nxs gets the canonical text
 * (docs/parts/assembly.md), any other the .nxb container; atomically (a
 * failed write leaves the old file). Source locations are not written. */
NXSIM_API nx_status nx_prog_save(const nx_prog *p, const char *path, nx_message *msg);
NXSIM_API void nx_prog_free(nx_prog *p);
/* The machine the program targets (its .machine). */
NXSIM_API const char *nx_prog_machine(const nx_prog *p);

typedef struct nx_tensor_info {
    const char *name;
    const char *dtype;
    const char *role;    /* "input", "output", "scratch" */
    uint32_t ndims;
    uint64_t shape[6];
    uint64_t bytes;
} nx_tensor_info;
NXSIM_API uint32_t nx_prog_tensor_count(const nx_prog *p);
NXSIM_API nx_status nx_prog_tensor(const nx_prog *p, uint32_t i, nx_tensor_info *out);

/* Runs program p on the session's machine (validated against it). Input
 * tensor names[k] gets data[k] (bytes[k] must be its size); other inputs
 * get pseudo-random values from cfg->seed. The results are every output
 * tensor, in table order. cfg->check is refused (a program has no
 * reference). */
NXSIM_API nx_status nx_session_exec(nx_session *s, const nx_prog *p, uint32_t n, const char *const *names,
                                    const void *const *data, const uint64_t *bytes, const nx_config *cfg,
                                    nx_result **out, nx_message *msg);

/* ---- results ---- */

NXSIM_API void nx_result_free(nx_result *r);

/* The result tensors: j < nx_result_count. Data is C order, valid while r is. */
NXSIM_API uint32_t nx_result_count(const nx_result *r);
NXSIM_API nx_status nx_result_tensor(const nx_result *r, uint32_t j, nx_tensor_info *out);
NXSIM_API const void *nx_result_data(const nx_result *r, uint32_t j);

/* What ran: the leaf or composite function ("" for a program), cores. */
NXSIM_API const char *nx_result_kernel(const nx_result *r);
NXSIM_API uint32_t nx_result_cores(const nx_result *r);
/* Traces this run added to the session's cache, and cache hits so far. */
NXSIM_API uint64_t nx_result_new_traces(const nx_result *r);
NXSIM_API uint64_t nx_result_cache_hits(const nx_result *r);
/* The op as it ran (results inferred), as an op JSON document; NULL for a program. */
NXSIM_API char *nx_result_op_json(const nx_result *r);

/* 1 if the SystemC model ran (the figures below exist), 0 for the functional backend. */
NXSIM_API int nx_result_on_model(const nx_result *r);
NXSIM_API double nx_result_total_ns(const nx_result *r);
NXSIM_API uint64_t nx_result_instructions(const nx_result *r);

#define NX_ENGINE_COUNT 5
/* Engine i's name: "pe", "dve", "act", "pool", "sp" (NULL beyond). */
NXSIM_API const char *nx_engine_label(uint32_t i);
typedef struct nx_engine_stats {
    uint64_t instructions;
    double busy_ns;
    double stall_ns;
    double busy_pct;     /* of the run's simulated time */
    double clock_ghz;    /* the engine's clock: cycles = ns * clock_ghz */
} nx_engine_stats;
NXSIM_API nx_status nx_result_engine(const nx_result *r, uint32_t core, uint32_t engine, nx_engine_stats *out);

/* The profile summary: json 0, the text table `nxsim run` prints; 1, its
 * JSON object. NULL with the functional backend or out of memory. */
NXSIM_API char *nx_result_summary(const nx_result *r, int json);
/* Busy time grouped by the kernel source line that emitted each
 * instruction: text table or JSON array. Needs keep_log. */
NXSIM_API char *nx_result_by_source(const nx_result *r, int json);
/* The Perfetto/Chrome trace JSON and the SVG timeline, written atomically.
 * Need keep_log. */
NXSIM_API nx_status nx_result_write_trace(const nx_result *r, const char *path, nx_message *msg);
NXSIM_API nx_status nx_result_write_timeline(const nx_result *r, const char *path, nx_message *msg);

/* cfg->check: whether it ran, results beyond the tolerance, and per result
 * the comparison. */
typedef struct nx_check_info {
    double max_abs_error;
    double max_rel_error;
    uint64_t mismatches;     /* elements beyond the tolerance */
    uint64_t first_mismatch; /* flat index of the first, if any */
    double tolerance_abs;
    double tolerance_rel;
    char tolerance[64];      /* how it was derived: "exact", "4 x eps(bf16)" */
    char reference[64];      /* the reference implementation */
} nx_check_info;
NXSIM_API int nx_result_checked(const nx_result *r);
NXSIM_API uint32_t nx_result_check_failures(const nx_result *r);
NXSIM_API nx_status nx_result_check(const nx_result *r, uint32_t j, nx_check_info *out);
/* 1 if the race check ran and found no race. */
NXSIM_API int nx_result_race_checked(const nx_result *r);

/* ---- the kernel registry and inventory ---- */

/* The internal kernel registry as a JSON array, in seed order (all 0: the
 * live table; 1: the whole catalogue with each entry's "registered"). */
NXSIM_API char *nx_registry_json(int all);
/* Every kernel of the inventory (references, leaves, composites) as JSON. */
NXSIM_API char *nx_kernels_json(void);

/* ---- dtypes ---- */

/* Bytes per element of a dtype name (0: unknown). */
NXSIM_API size_t nx_dtype_bytes(const char *dtype);
/* Converts count elements from one dtype to another with the engines'
 * rules (round to nearest even, saturation as docs/parts/dtypes.md). */
NXSIM_API nx_status nx_convert(const char *from, const void *src, const char *to, void *dst, uint64_t count,
                               nx_message *msg);

#ifdef __cplusplus
}
#endif

#endif
