/* The worker pool (workers.h): helper threads wait on a condition variable
 * for a new batch (a generation number), take task indices from a shared
 * counter under the mutex (tasks are coarse: a few per thread per
 * instruction, so the lock is no cost), and the last one to finish wakes the
 * caller, which has been taking tasks as well. */
#include "workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

struct nx_workers {
    pthread_mutex_t mu;
    pthread_cond_t work;   /* a new batch, or stop */
    pthread_cond_t done;   /* the batch's last task finished */
    unsigned threads;      /* the caller included */
    unsigned started;      /* helper threads running */
    uint64_t generation;   /* batches handed out so far */
    int stop;
    nx_workers_task *task;
    void *arg;
    unsigned tasks, next, finished;
    pthread_t tid[NX_WORKERS_MAX];
};

/* Runs tasks of the current batch until none is left; called and returns
 * with the mutex held. */
static void take_tasks(nx_workers *w) {
    while (w->next < w->tasks) {
        unsigned i = w->next++;
        pthread_mutex_unlock(&w->mu);
        w->task(w->arg, i);
        pthread_mutex_lock(&w->mu);
        if (++w->finished == w->tasks) pthread_cond_broadcast(&w->done);
    }
}

static void *helper_main(void *p) {
    nx_workers *w = p;
    uint64_t seen = 0;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stop && w->generation == seen) pthread_cond_wait(&w->work, &w->mu);
        if (w->stop) break;
        seen = w->generation;
        take_tasks(w);
    }
    pthread_mutex_unlock(&w->mu);
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
    for (unsigned t = 1; t < threads; t++) {
        int rc = pthread_create(&w->tid[w->started], NULL, helper_main, w);
        if (rc != 0) {
            nx_workers_destroy(w);
            return nx_fail(err, "cannot start worker thread %u of %u (error %d)", t, threads, rc);
        }
        w->started++;
    }
    *out = w;
    return 0;
}

void nx_workers_destroy(nx_workers *w) {
    if (w == NULL) return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
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
    if (w == NULL || w->started == 0 || tasks < 2) {
        for (unsigned i = 0; i < tasks; i++) task(arg, i);
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->task = task, w->arg = arg;
    w->tasks = tasks, w->next = 0, w->finished = 0;
    w->generation++;
    pthread_cond_broadcast(&w->work);
    take_tasks(w);
    while (w->finished < w->tasks) pthread_cond_wait(&w->done, &w->mu);
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

int nx_workers_threads_from_env(unsigned *threads, nx_error *err) {
    const char *v = getenv("NXSIM_THREADS");
    if (v == NULL || v[0] == 0) {
        *threads = 1;
        return 0;
    }
    return nx_workers_parse_threads(v, "NXSIM_THREADS", threads, err);
}
