/*
 * req.c - the MPI_Request of a collective that runs on goal, and the
 * Wait/Test family over arrays that mix such requests with MPI's own.
 *
 * Representation: a generalized request (MPI_Grequest_start). It is a real
 * MPI request, so the MPI library itself completes, frees and fills the
 * statuses of arrays that mix it with an MPI_Isend, returns MPI_ERR_IN_STATUS,
 * honours MPI_STATUS(ES)_IGNORE, MPI_Request_free and
 * MPI_Request_get_status, exactly as the standard says for its own
 * requests; the layer adds only the one thing MPI cannot know: when goal's
 * execution has finished, which it tells MPI with MPI_Grequest_complete.
 * (A table of dummy requests would have had the layer re-implement all of
 * that, for every MPI, per function.) A table maps the request back to the
 * execution; the request's status is empty (source MPI_ANY_SOURCE, tag
 * MPI_ANY_TAG, count 0), its error MPI_ERR_OTHER if goal's execution failed
 * (goal's message on stderr).
 *
 * Waiting: every Wait and Test first finishes, in MPI's eyes, the goal
 * executions that have ended ("drive"), then asks MPI (PMPI_Test*). A Wait
 * loops: it polls both for a short while (yielding the CPU between polls),
 * then sleeps in goal's wait (GOAL_WaitFor, in the kernel) on one of its
 * goal requests for up to a millisecond at a time, or, with none, in
 * nanosleep with a growing pause, asking MPI again after each: goal and the
 * MPI library both keep moving while a call waits, and nothing spins
 * forever (more ranks than cores). A Wait over MPI requests only goes to
 * MPI's own Wait (goal moves on its helper thread meanwhile).
 */
#include "layer.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gm_req {
    MPI_Request mreq;
    GOAL_Handle h;            /* NULL once goal's execution has ended */
    int busy;                 /* a thread waits in GOAL_WaitFor on h */
    int error;                /* MPI_SUCCESS, or MPI_ERR_OTHER if goal's execution failed */
    int mpi_freed;            /* MPI called free_fn: the request is gone from MPI */
    int goal_done;            /* goal's execution has ended */
    struct gm_comm *comm;
    struct gm_entry *entry;   /* the cached schedule, or NULL */
    GOAL_Schedule own;        /* a schedule compiled for this call only, or NULL */
    struct gm_bufs x;         /* the layer's buffers for the call, unpacked and freed at the end */
    struct gm_req *next;      /* in the table's bucket */
    struct gm_req *anext;     /* among the running */
};

#define BUCKETS 1024
static struct gm_req *table[BUCKETS];
static struct gm_req *running;
static int nrunning;

static uint64_t req_key(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
    return k;
}

static unsigned bucket(MPI_Request r)
{
    uint64_t k = req_key(r) * 0x9E3779B97F4A7C15ull;
    return (unsigned)(k >> 54) % BUCKETS;
}

/* The layer's request behind `r`, or NULL (an MPI request). Lock held. */
static struct gm_req *find(MPI_Request r)
{
    if (r == MPI_REQUEST_NULL)
        return NULL;
    for (struct gm_req *q = table[bucket(r)]; q; q = q->next)
        if (q->mreq == r)
            return q;
    return NULL;
}

static int query_fn(void *extra, MPI_Status *st)
{
    struct gm_req *q = extra;
    PMPI_Status_set_elements(st, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(st, 0);
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
    st->MPI_ERROR = q->error;
    return q->error;
}

/* MPI lets go of the request. The standard has MPI call this only once the
 * request is complete, and Open MPI does; MPICH calls it inside
 * MPI_Request_free of a request still running, so the record lives on
 * until goal's execution has ended too. */
static int free_fn(void *extra)
{
    struct gm_req *q = extra;
    gm_lock();
    for (struct gm_req **p = &table[bucket(q->mreq)]; *p; p = &(*p)->next)
        if (*p == q) {
            *p = q->next;
            break;
        }
    q->mpi_freed = 1;
    if (q->goal_done)
        free(q);
    gm_unlock();
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    (void)extra, (void)complete;
    return MPI_SUCCESS; /* a collective cannot be cancelled: it completes as usual */
}

/* goal's execution of `q` has ended (`rc` from GOAL_Test/GOAL_WaitFor):
 * takes it out of the running ones. Lock held; `ended` follows, without. */
static void claim(struct gm_req *q, int rc)
{
    q->h = NULL;
    q->error = rc < 0 ? MPI_ERR_OTHER : MPI_SUCCESS;
    for (struct gm_req **p = &running; *p; p = &(*p)->anext)
        if (*p == q) {
            *p = q->anext;
            nrunning--;
            break;
        }
}

/* Releases what the ended execution held and tells MPI, without the lock:
 * MPI takes its own locks in MPI_Grequest_complete and PMPI_Unpack, and
 * calls free_fn (which takes the layer's) with them held, so the layer
 * never waits for MPI's while holding its own. */
static void ended(struct gm_req *q, int rc)
{
    if (rc < 0)
        fprintf(stderr, "goal-mpi (rank %d): a collective failed on goal: %s\n", gm.world_rank, GOAL_LastError());
    if (q->entry)
        gm_entry_put(q->entry);
    if (q->own)
        GOAL_FreeSchedule(q->own);
    gm_bufs_end(&q->x, rc >= 0);
    q->entry = NULL, q->own = NULL;
    gm_comm_put(q->comm);
    q->comm = NULL;
    MPI_Request m = q->mreq;
    gm_lock();
    q->goal_done = 1;
    int forgotten = q->mpi_freed;
    gm_unlock();
    if (forgotten)
        free(q); /* MPICH forgot the request at MPI_Request_free already */
    else
        PMPI_Grequest_complete(m); /* may call free_fn, which frees q */
}

/* Finishes, for MPI, every execution that has ended; returns how many. */
static int drive(void)
{
    struct gm_req *done[64];
    int rcs[64], n = 0;
    gm_lock();
    for (struct gm_req *q = running, *next; q && n < 64; q = next) {
        next = q->anext;
        if (q->busy)
            continue;
        int rc = GOAL_Test(q->h);
        if (rc != 0) {
            claim(q, rc);
            rcs[n] = rc, done[n++] = q;
        }
    }
    gm_unlock();
    for (int i = 0; i < n; i++)
        ended(done[i], rcs[i]);
    return n;
}

int gm_start(struct gm_comm *c, struct gm_entry *e, GOAL_Schedule own, void *const *bufs, int nbufs,
             struct gm_bufs *x, MPI_Request *request)
{
    struct gm_bufs none = { 0 };
    if (!x)
        x = &none;
    GOAL_Schedule s = e ? e->s : own;
    size_t sizes[2] = { 0, 0 };
    if (e)
        memcpy(sizes, e->need, sizeof sizes);
    GOAL_Handle h = e && e->nbufs > 0 ? GOAL_RunWith(s, bufs, sizes, nbufs) : GOAL_Run(s);
    if (!h) {
        fprintf(stderr, "goal-mpi (rank %d): goal could not start a collective: %s\n", gm.world_rank, GOAL_LastError());
        if (e)
            gm_entry_put(e);
        if (own)
            GOAL_FreeSchedule(own);
        gm_bufs_end(x, 0);
        return MPI_ERR_INTERN;
    }
    struct gm_req *q = calloc(1, sizeof *q);
    if (!q) {
        GOAL_Wait(h);
        if (e)
            gm_entry_put(e);
        if (own)
            GOAL_FreeSchedule(own);
        gm_bufs_end(x, 0);
        return MPI_ERR_NO_MEM;
    }
    q->h = h, q->entry = e, q->own = own, q->x = *x, q->comm = c, q->error = MPI_SUCCESS;
    gm_lock();
    c->refs++;
    gm_unlock();
    /* Outside the lock (see `ended`); nobody else knows q yet. */
    int rc = PMPI_Grequest_start(query_fn, free_fn, cancel_fn, q, &q->mreq);
    if (rc != MPI_SUCCESS) {
        GOAL_Wait(h);
        q->mpi_freed = 1; /* no MPI request to complete */
        ended(q, 0);
        return rc;
    }
    gm_lock();
    unsigned b = bucket(q->mreq);
    q->next = table[b];
    table[b] = q;
    q->anext = running;
    running = q;
    nrunning++;
    *request = q->mreq;
    gm_unlock();
    return MPI_SUCCESS;
}

/* Whether any of `reqs` is the layer's (then the call must drive goal). */
static int any_ours(int n, const MPI_Request *reqs)
{
    if (!gm.on && !nrunning)
        return 0;
    gm_lock();
    int found = 0;
    for (int i = 0; i < n && !found; i++)
        found = find(reqs[i]) != NULL;
    gm_unlock();
    return found;
}

/* One pause of a Wait that found nothing done, the `round`-th in a row:
 * polls at first (yielding the CPU), then sleeps in goal's wait on a
 * running goal request of `reqs`, or in nanosleep, for a growing while
 * (up to 1 ms, after which MPI is asked again). */
static void pause_wait(int n, const MPI_Request *reqs, int round)
{
    if (round < 64) {
        sched_yield();
        return;
    }
    double t = 1e-6 * (double)(round < 74 ? 1 << (round - 64) : 1000);
    if (t > 1e-3)
        t = 1e-3;
    struct gm_req *q = NULL;
    gm_lock();
    for (int i = 0; i < n && !q; i++) {
        struct gm_req *c = find(reqs[i]);
        if (c && c->h && !c->busy)
            q = c;
    }
    if (q)
        q->busy = 1;
    gm_unlock();
    if (q) {
        int rc = GOAL_WaitFor(q->h, t);
        gm_lock();
        q->busy = 0;
        if (rc != 0)
            claim(q, rc);
        gm_unlock();
        if (rc != 0)
            ended(q, rc);
        return;
    }
    struct timespec ts = { 0, (long)(t * 1e9) };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* The Wait and Test functions, on the array as MPI should see it (see
 * persist.c for the swap of started persistent collectives). */

static int wait1(MPI_Request *r, MPI_Status *st)
{
    if (!any_ours(1, r)) {
        if (nrunning)
            drive();
        return PMPI_Wait(r, st);
    }
    for (int round = 0;; round++) {
        int flag = 0;
        drive();
        int rc = PMPI_Test(r, &flag, st);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        pause_wait(1, r, round);
    }
}

static int waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
    if (!any_ours(n, reqs)) {
        if (nrunning)
            drive();
        return PMPI_Waitall(n, reqs, sts);
    }
    for (int round = 0;; round++) {
        int flag = 0;
        drive();
        int rc = PMPI_Testall(n, reqs, &flag, sts);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        pause_wait(n, reqs, round);
    }
}

static int waitany(int n, MPI_Request reqs[], int *index, MPI_Status *st)
{
    if (!any_ours(n, reqs)) {
        if (nrunning)
            drive();
        return PMPI_Waitany(n, reqs, index, st);
    }
    for (int round = 0;; round++) {
        int flag = 0;
        drive();
        int rc = PMPI_Testany(n, reqs, index, &flag, st);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        pause_wait(n, reqs, round);
    }
}

static int waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status sts[])
{
    if (!any_ours(n, reqs)) {
        if (nrunning)
            drive();
        return PMPI_Waitsome(n, reqs, outcount, indices, sts);
    }
    for (int round = 0;; round++) {
        drive();
        int rc = PMPI_Testsome(n, reqs, outcount, indices, sts);
        if (rc != MPI_SUCCESS || *outcount != 0)
            return rc;
        pause_wait(n, reqs, round);
    }
}

/* Calls `call` (an expression using `v`, the array MPI sees) on the
 * program's array `reqs` of `n`. */
#define SWAPPED(n, reqs, call)                                                                                             do {                                                                                                                       MPI_Request buf_[16], *v = gm_pers_swap(n, reqs, buf_, 16);                                                            if (v == (reqs) && nrunning)                                                                                               drive();                                                                                                           int rc_ = (call);                                                                                                      gm_pers_back(n, reqs, v, buf_);                                                                                        return rc_;                                                                                                        } while (0)

int MPI_Wait(MPI_Request *r, MPI_Status *st) { SWAPPED(1, r, wait1(v, st)); }
int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[]) { SWAPPED(n, reqs, waitall(n, v, sts)); }
int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *st) { SWAPPED(n, reqs, waitany(n, v, index, st)); }

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status sts[])
{
    SWAPPED(n, reqs, waitsome(n, v, outcount, indices, sts));
}

static int test_driven(void)
{
    if (nrunning)
        drive();
    return 0;
}

int MPI_Test(MPI_Request *r, int *flag, MPI_Status *st) { SWAPPED(1, r, test_driven() + PMPI_Test(v, flag, st)); }

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status sts[])
{
    SWAPPED(n, reqs, test_driven() + PMPI_Testall(n, v, flag, sts));
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *st)
{
    SWAPPED(n, reqs, test_driven() + PMPI_Testany(n, v, index, flag, st));
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status sts[])
{
    SWAPPED(n, reqs, test_driven() + PMPI_Testsome(n, v, outcount, indices, sts));
}

int MPI_Request_get_status(MPI_Request r, int *flag, MPI_Status *st)
{
    SWAPPED(1, &r, test_driven() + PMPI_Request_get_status(*v, flag, st));
}

int MPI_Request_free(MPI_Request *r)
{
    /* MPI frees a generalized request once it is complete; until then the
     * layer keeps its execution running and completes it at a later call
     * (at the latest in MPI_Finalize). */
    if (nrunning)
        drive();
    int rc = gm_pers_free(r);
    return rc >= 0 ? rc : PMPI_Request_free(r);
}

/* MPI_Finalize: every execution still running (requests freed before
 * completion, or never waited for) ends first, MPI kept moving meanwhile. */
void gm_req_drain(void)
{
    for (int round = 0; nrunning; round++) {
        drive();
        int flag;
        PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        if (nrunning)
            pause_wait(0, NULL, round);
    }
}
