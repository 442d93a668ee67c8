/* Profiles of a model run (sim/model.h): a Chrome trace-event JSON file that
 * ui.perfetto.dev and chrome://tracing open, and a summary (text table or
 * JSON).
 *
 * Trace layout (docs/parts/profiles.md): one process per core ("core C",
 * pid C + 1); in it one thread (track) per engine that ran instructions
 * (tid = nx_engine: pe 0, dve 1, act 2, pool 3, sp 4) and one per DMA queue
 * that ran transfers (tid 16 + queue, "dma qQ (engine E, queue K)"). One
 * complete ("X") slice per log record, named by its mnemonic, with args:
 * index, the operands in canonical assembly text (isa/asm.h), cycles (start
 * to end, in the engine's clock), busy_cycles, bytes, flops, start_ns,
 * end_ns, the semaphore wait/increment and, when the program records it,
 * where the kernel emitted it (source "FILE:LINE", function). A record that
 * waited before it
 * started gets a slice of its own before it, "wait semS>=V" (or
 * "wait barrier"; "stall" for a structural delay). Flow arrows ("s"/"f",
 * category "sync") go from the increment that satisfied a wait (the one that
 * brought the semaphore to the waited value) to the waiting instruction, and
 * between the matching core_barrier of each pair of cores.
 *
 * Slices on one track must nest, so an instruction that overlaps the next
 * one on its track (a pipelined multiply whose results land after the next
 * one starts, a background load_stationary) is shown up to the next one's
 * start, or nested inside the previous slice when it lies wholly inside it;
 * args start_ns/end_ns keep the exact times.
 *
 * Zeroed log slots of instructions that never ran (queue 0 on an engine
 * other than SP, which no real record has) are left out.
 *
 * Times: record times are ns relative to the run's start (as the model
 * writes them); the trace's ts/dur are in microseconds, as the format
 * requires (JSON numbers, 1 ns resolution).
 *
 * The trace is sim/profile_trace.c, the summaries sim/profile_summary.c. */
#ifndef NXSIM_SIM_PROFILE_H
#define NXSIM_SIM_PROFILE_H

#include <stdio.h>

#include "../isa/error.h"
#include "../isa/program.h"
#include "machine.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the trace of run `r` (which must have kept its log) to `path`,
 * atomically: a temporary file in the same directory renamed over `path`,
 * so a failure never leaves a half-written file. Returns 0 or -1 with a
 * message naming the path. Streams: memory use is O(records) words, not
 * O(file size). */
int nx_profile_write_trace(const char *path, const nx_machine *m, const nx_program *prog,
                           const nx_sim_result *r, nx_error *err);
/* The same trace written to an open stream f (`path` names it in messages),
 * for a caller that stages several outputs together (cli/outputs.h). */
int nx_profile_write_trace_to(FILE *f, const char *path, const nx_machine *m, const nx_program *prog,
                              const nx_sim_result *r, nx_error *err);

/* Peak PE throughput the summary compares against: pe_rows * pe_cols * 2
 * FLOP per PE cycle per core, times the cores of the program, divided by
 * pe_fp32_factor when the program's dominant matmul dtype is fp32 (a
 * multiply_moving counts as fp32 when its moving or stationary tile is
 * fp32; dominance is by FLOPs; with no matmul the full rate is used). */
typedef struct nx_profile_peak {
    double tflops;       /* peak, TFLOP/s */
    const char *dtype;   /* dominant matmul dtype name ("bf16", "fp32", ...) or "none" */
    int fp32_rate;       /* 1: peak divided by pe_fp32_factor */
} nx_profile_peak;
void nx_profile_peak_of(const nx_machine *m, const nx_program *prog, nx_profile_peak *out);

/* The summary as a text table: per core and engine, instructions, busy
 * cycles and busy %, stall cycles; total simulated time in ns and in cycles
 * of each engine clock; bytes and transfers per active DMA queue; FLOPs and
 * achieved vs peak TFLOPS. Works without the log. Returns 0 or -1 (write
 * error). */
int nx_profile_summary(FILE *out, const nx_machine *m, const nx_program *prog, const nx_sim_result *r);

/* The same figures as one JSON object (keys in docs/parts/profiles.md),
 * followed by a newline. Returns 0 or -1 (write error, out of memory). */
int nx_profile_summary_json(FILE *out, const nx_machine *m, const nx_program *prog,
                            const nx_sim_result *r);

/* Writes a picture of run r (which must have kept its log) to `path` as a
 * self-contained SVG (sim/profile_timeline.c, docs/parts/timeline.md): per
 * core a lane per engine and per active DMA queue, blocks coloured by
 * engine and opcode, semaphore waits hatched, an axis in us and engine
 * cycles, each lane's busy %. Atomic like nx_profile_write_trace; its size
 * is bounded by the picture (narrow blocks merge), not by the log. 0, or -1
 * with a message naming the path. */
int nx_profile_write_timeline(const char *path, const nx_machine *m, const nx_program *prog,
                              const nx_sim_result *r, nx_error *err);
/* The same picture written to an open stream f (`path` names it in
 * messages), for a caller that stages several outputs together
 * (cli/outputs.h). */
int nx_profile_write_timeline_to(FILE *f, const char *path, const nx_machine *m, const nx_program *prog,
                                 const nx_sim_result *r, nx_error *err);

/* ---- line plots (sim/profile_plot.c) ----
 * A self-contained SVG of one or more series of values over evenly spaced
 * steps (point i of every series at step i), e.g. a figure at four problem
 * sizes: a y axis from 0 with ticks, one coloured polyline with a marker per
 * point for each series, the legend naming each (its label says what its
 * steps are), and an optional shaded band of y (a target range). Every
 * marker is a <circle class="pt" data-series="S" data-step="I"
 * data-value="Y"> so tests and scripts read the plot as XML. The caller owns
 * every string and array. */
typedef struct nx_plot_series {
    const char *name; /* legend text */
    size_t n;         /* points (1..NX_PLOT_MAX_STEPS) */
    const double *y;  /* n finite values >= 0 */
} nx_plot_series;
#define NX_PLOT_MAX_STEPS 64
typedef struct nx_plot {
    const char *title;    /* first line */
    const char *subtitle; /* second line, or NULL */
    const char *x_label;  /* under the axis: what a step is */
    const char *y_label;  /* beside the axis: the unit of y */
    const nx_plot_series *series;
    size_t n_series;      /* 1..8 */
    double band_lo, band_hi; /* shaded when band_lo < band_hi */
} nx_plot;
/* Writes the plot to `path`, atomically like nx_profile_write_timeline.
 * 0, or -1 with a message naming the path (a series without points or with
 * a negative or non-finite value, too many series, or a write error). */
int nx_profile_write_plot(const char *path, const nx_plot *p, nx_error *err);

/* ---- busy time by source line (sim/profile_source.c) ----
 * Groups the log's busy time by the source location that emitted each
 * instruction (isa/program.h nx_program_insn_src; the authoring layer
 * records it): "which line of my kernel keeps which engine busy". DMA
 * transfers count on their queues (column NX_PROFILE_DMA), their SP issue
 * on the SP. Instructions without a location form one row with src NULL. */
#define NX_PROFILE_DMA NX_ENG_COUNT /* the busy[] column of DMA queue time */
typedef struct nx_profile_source_row {
    const nx_src_loc *src;               /* in the program; NULL: no location */
    uint64_t instructions;               /* log records (a DMA counts its issue and its transfer) */
    double busy_ns[NX_ENG_COUNT + 1];    /* per engine, then all DMA queues together */
    double total_ns;                     /* the sum of busy_ns */
} nx_profile_source_row;
/* The rows of run r (which must have kept its log), busiest first (ties:
 * file, then line). *rows is malloc'd (free()); *all_ns the busy time of
 * every row together. 0, or -1 with a message (no log, out of memory). */
int nx_profile_source_rows(const nx_program *prog, const nx_sim_result *r, nx_profile_source_row **rows,
                           size_t *n, double *all_ns, nx_error *err);
/* The rows as a text table ("busy time by source line"), at most max_rows
 * (0: all) with the rest summed in one line. 0, or -1 (write error, no log,
 * out of memory: the message in err). */
int nx_profile_by_source(FILE *out, const nx_program *prog, const nx_sim_result *r, size_t max_rows,
                         nx_error *err);
/* The rows as a JSON array (file, line, function, instructions, busy_ns,
 * share, per-engine busy_ns with "dma"), without a trailing newline, in a
 * malloc'd string; NULL with a message. */
char *nx_profile_by_source_json(const nx_program *prog, const nx_sim_result *r, nx_error *err);

/* ---- time by region (sim/profile_region.c) ----
 * The parts of a composite that named them (kernels/author/author.h
 * nx_kctx_set_region: a source location's function "REGION: func"): per
 * region its instructions, span (first start to last end) and its share of
 * the run, busy time per engine class; then the spans' sum beside the run
 * (their overlap). Prints nothing when no instruction has a region. 0, or
 * -1 (write error). */
int nx_profile_by_region(FILE *out, const nx_program *prog, const nx_sim_result *r, nx_error *err);
/* The same as a JSON array (region, instructions, start_ns, span_ns, share,
 * busy_ns; [] without regions), malloc'd; NULL with a message. */
char *nx_profile_by_region_json(const nx_program *prog, const nx_sim_result *r, nx_error *err);

#ifdef __cplusplus
}
#endif

#endif
