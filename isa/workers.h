/* A small pool of worker threads for the functional datapath of one large
 * instruction (a multiply_moving split by output tiles, a DMA copy split by
 * rows). Threads only share out the host work of an instruction's
 * semantics: what the instruction computes, and so every result bit, is the
 * same for any number of threads, and the simulated machine's time never
 * depends on them.
 *
 * A pool belongs to whoever runs a program (the run path, the bench, the
 * library): it creates the pool, lends it to the state it runs on
 * (nx_state.workers) and destroys it after the run; there is no process-wide
 * pool. One thread at a time hands work to a pool (nx_workers_run is not
 * reentrant and not for concurrent callers); the functional executor and the
 * SystemC model each run one instruction at a time, so a state's pool is
 * only ever used by the instruction running on it. docs/parts/threads.md. */
#ifndef NXSIM_ISA_WORKERS_H
#define NXSIM_ISA_WORKERS_H

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most threads a pool has (the calling thread included). */
#define NX_WORKERS_MAX 64

typedef struct nx_workers nx_workers;

/* A pool of `threads` threads counting the caller. The threads - 1 helpers
 * start with the first batch of two or more tasks (a run that issues no
 * large instruction starts none); one that cannot be started leaves its
 * share to the others. Returns 0 and *out, or -1 with err for threads
 * outside [1, NX_WORKERS_MAX] or out of memory. */
int nx_workers_create(unsigned threads, nx_workers **out, nx_error *err);
/* Stops and joins the threads and frees the pool; NULL is a no-op. */
void nx_workers_destroy(nx_workers *w);
/* Threads of the pool, the caller included; 1 for NULL. */
unsigned nx_workers_threads(const nx_workers *w);

/* Runs task(arg, i) once for every i in [0, tasks), spread over the pool's
 * threads (the caller runs tasks too), and returns when all are done. Tasks
 * must write disjoint memory; they may run in any order and concurrently.
 * A NULL pool runs them in order on the caller. */
typedef void nx_workers_task(void *arg, unsigned i);
void nx_workers_run(nx_workers *w, unsigned tasks, nx_workers_task *task, void *arg);

/* The default thread count: the host CPUs this process may run on
 * (sched_getaffinity), at most NX_WORKERS_DEFAULT_MAX, at least 1. */
#define NX_WORKERS_DEFAULT_MAX 8
unsigned nx_workers_default_threads(void);
/* NXSIM_THREADS as a thread count: unset or empty is
 * nx_workers_default_threads(). Returns 0 and *threads, or -1 with err
 * naming the variable and its value when it is not an integer in
 * [1, NX_WORKERS_MAX]. */
int nx_workers_threads_from_env(unsigned *threads, nx_error *err);
/* The same rule for an option's value (`what` names the option). */
int nx_workers_parse_threads(const char *text, const char *what, unsigned *threads, nx_error *err);

#ifdef __cplusplus
}
#endif

#endif
