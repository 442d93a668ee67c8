/* The worker pool (workers.h). A batch is published by bumping a generation
 * number; helper threads take task indices from a shared counter under the
 * mutex (tasks are coarse: a few per thread per instruction, so the lock is
 * no cost), and the last one to finish wakes the caller, which has been
 * taking tasks as well.
 *
 * Waiting spins before it sleeps. A multiply large enough to be split comes
 * every 50 to 200 us of host time in a matmul-bound program; a helper that
 * slept on the condition variable in between took a futex wake-up per batch
 * (tens of microseconds on a virtual machine, measured in
 * docs/parts/threads.md), so it started its share late and the caller waited
 * for it. A helper now polls the generation for up to NX_WORKERS_SPIN_NS
 * after its last task and only then sleeps; the caller polls for the last
 * task the same way. The spin is bounded in time, so an idle pool costs
 * nothing once the program stops issuing large instructions. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "workers.h"

#include <sched.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

/* How long a waiting thread polls before it sleeps, in host nanoseconds:
 * longer than the usual gap between two large instructions of one run. */
#define NX_WORKERS_SPIN_NS 250000

struct nx_workers {
    pthread_mutex_t mu;
    pthread_cond_t work;          /* a new batch, or stop */
    pthread_cond_t done;          /* the batch's last task finished */
    unsigned threads;             /* the caller included */
    unsigned started;             /* helper threads running */
    int start_failed;             /* pthread_create refused one: run with those started */
    _Atomic uint64_t generation;  /* batches handed out so far (written under mu) */
    _Atomic int stop;             /* written under mu */
    nx_workers_task *task;
    void *arg;
    unsigned tasks, next;
    _Atomic unsigned finished;    /* written under mu */
    pthread_t tid[NX_WORKERS_MAX];
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Polls until ready(w, v) or NX_WORKERS_SPIN_NS have passed; the clock is
 * read every 64 polls (a pause is tens of cycles, the clock a vDSO call). */
static void spin_until(nx_workers *w, int (*ready)(nx_workers *, uint64_t), uint64_t v) {
    uint64_t t0 = 0;
    for (unsigned n = 0;; n++) {
        if (ready(w, v)) return;
        CPU_RELAX();
        if ((n & 63) == 63) {
            uint64_t t = now_ns();
            if (t0 == 0) t0 = t;
            else if (t - t0 > NX_WORKERS_SPIN_NS) return;
        }
    }
}

static int new_batch(nx_workers *w, uint64_t seen) {
    return atomic_load_explicit(&w->generation, memory_order_acquire) != seen ||
           atomic_load_explicit(&w->stop, memory_order_acquire);
}

static int batch_done(nx_workers *w, uint64_t tasks) {
    return atomic_load_explicit(&w->finished, memory_order_acquire) >= tasks;
}

/* Runs tasks of the current batch until none is left; called and returns
 * with the mutex held. */
static void take_tasks(nx_workers *w) {
    while (w->next < w->tasks) {
        unsigned i = w->next++;
        pthread_mutex_unlock(&w->mu);
        w->task(w->arg, i);
        pthread_mutex_lock(&w->mu);
        unsigned f = atomic_load_explicit(&w->finished, memory_order_relaxed) + 1;
        atomic_store_explicit(&w->finished, f, memory_order_release);
        if (f == w->tasks) pthread_cond_broadcast(&w->done);
    }
}

static void *helper_main(void *p) {
    nx_workers *w = p;
    uint64_t seen = 0;
    for (;;) {
        spin_until(w, new_batch, seen);
        pthread_mutex_lock(&w->mu);
        while (!w->stop && w->generation == seen) pthread_cond_wait(&w->work, &w->mu);
        if (w->stop) {
            pthread_mutex_unlock(&w->mu);
            break;
        }
        seen = w->generation;
        take_tasks(w);
        pthread_mutex_unlock(&w->mu);
    }
    return NULL;
}

int nx_workers_create(unsigned threads, nx_workers **out, nx_error *err) {
    *out = NULL;
    if (threads < 1 || threads > NX_WORKERS_MAX)
        return nx_fail(err, "%u threads: must be in [1, %d]", threads, NX_WORKERS_MAX);
    nx_workers *w = calloc(1, sizeof *w);
    if (w == NULL) return nx_fail(err, "out of memory for a pool of %u threads", threads);
    w->threads = threads;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->done, NULL);
    *out = w;
    return 0;
}

/* The helpers start with the first batch, so a run that never issues a
 * large instruction starts none. A helper that cannot be started leaves
 * the batch to the threads that run (the results are the same). */
static void start_helpers(nx_workers *w) {
    while (!w->start_failed && w->started + 1 < w->threads) {
        if (pthread_create(&w->tid[w->started], NULL, helper_main, w) != 0) {
            w->start_failed = 1;
            break;
        }
        w->started++;
    }
}

void nx_workers_destroy(nx_workers *w) {
    if (w == NULL) return;
    pthread_mutex_lock(&w->mu);
    atomic_store_explicit(&w->stop, 1, memory_order_release);
    pthread_cond_broadcast(&w->work);
    pthread_mutex_unlock(&w->mu);
    for (unsigned t = 0; t < w->started; t++) pthread_join(w->tid[t], NULL);
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->work);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

unsigned nx_workers_threads(const nx_workers *w) { return w ? w->threads : 1; }

void nx_workers_run(nx_workers *w, unsigned tasks, nx_workers_task *task, void *arg) {
    if (w != NULL && tasks >= 2) start_helpers(w);
    if (w == NULL || w->started == 0 || tasks < 2) {
        for (unsigned i = 0; i < tasks; i++) task(arg, i);
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->task = task, w->arg = arg;
    w->tasks = tasks, w->next = 0;
    atomic_store_explicit(&w->finished, 0, memory_order_relaxed);
    atomic_store_explicit(&w->generation, w->generation + 1, memory_order_release);
    pthread_cond_broadcast(&w->work);
    take_tasks(w);
    if (w->finished < w->tasks) {
        pthread_mutex_unlock(&w->mu);
        spin_until(w, batch_done, tasks);
        pthread_mutex_lock(&w->mu);
        while (w->finished < w->tasks) pthread_cond_wait(&w->done, &w->mu);
    }
    w->task = NULL, w->arg = NULL, w->tasks = 0;
    pthread_mutex_unlock(&w->mu);
}

int nx_workers_parse_threads(const char *text, const char *what, unsigned *threads, nx_error *err) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != 0 || errno != 0 || v < 1 || v > NX_WORKERS_MAX)
        return nx_fail(err, "%s '%.40s': must be a thread count in [1, %d]", what, text, NX_WORKERS_MAX);
    *threads = (unsigned)v;
    return 0;
}

unsigned nx_workers_default_threads(void) {
    cpu_set_t set;
    unsigned n = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) n = (unsigned)CPU_COUNT(&set);
    return n < NX_WORKERS_DEFAULT_MAX ? n : NX_WORKERS_DEFAULT_MAX;
}

int nx_workers_threads_from_env(unsigned *threads, nx_error *err) {
    const char *v = getenv("NXSIM_THREADS");
    if (v == NULL || v[0] == 0) {
        *threads = nx_workers_default_threads();
        return 0;
    }
    return nx_workers_parse_threads(v, "NXSIM_THREADS", threads, err);
}
