/*
 * ucxend.c - MPICH's MPI_Finalize kept from deadlocking on UCX (MPICH
 * build only).
 *
 * MPICH 4.0's ch4:ucx netmod ends in two steps: it closes every UCX
 * endpoint and progresses its worker until each close completes, then
 * enters a PMI barrier, a blocking read of the PMI socket that progresses
 * nothing. A close that needs its peer's answer waits for a peer already in
 * that barrier, which waits for the closer: the job never ends. Across 4
 * emulated hosts, 8 ranks of t_mixed hung so in 10 of 91 jobs under
 * mpiexec (docs/mpi.md). Later MPICH barriers first; Open MPI's pml/ucx met
 * the same deadlock and answers it with a thread that progresses the
 * worker through its fence.
 *
 * So does the layer. It defines the UCX functions MPICH calls there, which
 * the dynamic linker binds to the layer (loaded before the MPI library, by
 * LD_PRELOAD or the link order) and which call the real ones (RTLD_NEXT):
 *
 *   ucp_worker_create    notes each worker MPICH makes;
 *   ucp_disconnect_nb    the first close after the layer's MPI_Finalize
 *                        starts a thread that progresses those workers
 *                        every millisecond, under a lock;
 *   ucp_worker_progress, ucp_request_is_completed, ucp_request_release,
 *   ucp_request_free     take that lock while the thread lives, so a worker
 *                        is never used by two threads at once;
 *   ucp_worker_destroy   stops and joins the thread first (the barrier is
 *                        over by then).
 *
 * Outside MPI_Finalize each of these is one load and a call; in a program
 * without UCX they are never called.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include "layer.h"

#ifndef OPEN_MPI

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* UCX's types, as pointers and its status as an int: the layer is built
 * without UCX's headers. */
typedef int (*worker_create_fn)(void *context, const void *params, void **worker);
typedef unsigned (*worker_progress_fn)(void *worker);
typedef void *(*disconnect_fn)(void *ep);
typedef int (*is_completed_fn)(void *request);
typedef void (*request_fn)(void *request);
typedef void (*worker_destroy_fn)(void *worker);

#define MAX_WORKERS 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *workers[MAX_WORKERS];
static int nworkers;
/* 1 from the layer's MPI_Finalize on: the first close starts the thread. */
static int ending;
/* 1 while the thread lives: the wrappers take the lock. */
static int threaded;
static int stop;
static pthread_t thread;

/* The real function `name`, or an exit saying why (a UCX program always
 * has it: the call came from its MPI library through this name). */
static void *real(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "goal-mpi: %s not found past the layer: %s\n", name, dlerror());
        abort();
    }
    return f;
}

#define REAL(type, name)                                                                                               \
    static type fn_;                                                                                                   \
    type f = __atomic_load_n(&fn_, __ATOMIC_ACQUIRE);                                                                  \
    if (!f) {                                                                                                          \
        f = (type)real(name);                                                                                          \
        __atomic_store_n(&fn_, f, __ATOMIC_RELEASE);                                                                   \
    }

/* The lock, recursive per thread: a completion callback that MPICH runs
 * inside ucp_worker_progress may free its request through the wrappers
 * below, in the thread that already holds the lock. */
static __thread int depth __attribute__((tls_model("initial-exec")));

static void take(void)
{
    if (depth++ == 0)
        pthread_mutex_lock(&lock);
}

static void give(void)
{
    if (--depth == 0)
        pthread_mutex_unlock(&lock);
}

/* Takes the lock if the thread lives; says whether it did. */
static int locked(void)
{
    if (!__atomic_load_n(&threaded, __ATOMIC_ACQUIRE))
        return 0;
    take();
    return 1;
}

static void *progress_thread(void *arg)
{
    (void)arg;
    REAL(worker_progress_fn, "ucp_worker_progress");
    struct timespec ms = { 0, 1000000 };
    for (;;) {
        take();
        if (stop) {
            give();
            return NULL;
        }
        for (int i = 0; i < nworkers; i++)
            while (f(workers[i]))
                ;
        give();
        nanosleep(&ms, NULL);
    }
}

void gm_ucx_end_begin(void)
{
    __atomic_store_n(&ending, 1, __ATOMIC_RELEASE);
}

/* Stops the thread if it runs (also after PMPI_Finalize, should MPICH not
 * have destroyed its workers). */
void gm_ucx_end_done(void)
{
    take();
    int joining = __atomic_load_n(&threaded, __ATOMIC_ACQUIRE) && !stop;
    stop = 1;
    __atomic_store_n(&ending, 0, __ATOMIC_RELEASE);
    give();
    if (joining)
        pthread_join(thread, NULL);
    __atomic_store_n(&threaded, 0, __ATOMIC_RELEASE);
}

int ucp_worker_create(void *context, const void *params, void **worker)
{
    REAL(worker_create_fn, "ucp_worker_create");
    int status = f(context, params, worker);
    take();
    if (status == 0 && nworkers < MAX_WORKERS)
        workers[nworkers++] = *worker;
    give();
    return status;
}

void *ucp_disconnect_nb(void *ep)
{
    REAL(disconnect_fn, "ucp_disconnect_nb");
    if (__atomic_load_n(&ending, __ATOMIC_ACQUIRE) && !__atomic_load_n(&threaded, __ATOMIC_ACQUIRE)) {
        take();
        if (!__atomic_load_n(&threaded, __ATOMIC_ACQUIRE) && __atomic_load_n(&ending, __ATOMIC_ACQUIRE)) {
            stop = 0;
            if (pthread_create(&thread, NULL, progress_thread, NULL) == 0)
                __atomic_store_n(&threaded, 1, __ATOMIC_RELEASE);
            else
                fprintf(stderr, "goal-mpi: no thread to progress UCX through MPI_Finalize, which may hang (docs/mpi.md)\n");
            __atomic_store_n(&ending, 0, __ATOMIC_RELEASE);
        }
        give();
    }
    int held = locked();
    void *r = f(ep);
    if (held)
        give();
    return r;
}

unsigned ucp_worker_progress(void *worker)
{
    REAL(worker_progress_fn, "ucp_worker_progress");
    int held = locked();
    unsigned n = f(worker);
    if (held)
        give();
    return n;
}

int ucp_request_is_completed(void *request)
{
    REAL(is_completed_fn, "ucp_request_is_completed");
    int held = locked();
    int done = f(request);
    if (held)
        give();
    return done;
}

/* `f(request)` under the lock while the thread lives. */
static void request_call(request_fn f, void *request)
{
    int held = locked();
    f(request);
    if (held)
        give();
}

void ucp_request_release(void *request)
{
    REAL(request_fn, "ucp_request_release");
    request_call(f, request);
}

void ucp_request_free(void *request)
{
    REAL(request_fn, "ucp_request_free");
    request_call(f, request);
}

void ucp_worker_destroy(void *worker)
{
    REAL(worker_destroy_fn, "ucp_worker_destroy");
    gm_ucx_end_done();
    take();
    for (int i = 0; i < nworkers; i++)
        if (workers[i] == worker)
            workers[i] = workers[--nworkers];
    give();
    f(worker);
}

#else

void gm_ucx_end_begin(void) {}
void gm_ucx_end_done(void) {}

#endif
