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
 * Waiting: a Wait whose array holds a running goal execution waits in
 * goal's own wait for it (GOAL_WaitPoll: goal's brief spin, then asleep in
 * the kernel until goal's completion or a message wakes it), which calls
 * back into the layer after each batch of polls and at least every
 * millisecond asleep; the layer asks MPI about the array (PMPI_Test*) at
 * most every poke_gap while polling, and at every wake-up: MPI keeps
 * moving while the rank waits for goal, and a Waitany or Waitsome ends as
 * soon as anything of its array completes. Once no goal execution of the
 * array runs, the rest is MPI's own blocking Wait (goal moves on its
 * helper thread meanwhile). A Test first finishes, in MPI's eyes, the goal
 * executions that have ended ("drive"), then asks MPI.
 */
#include "layer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gm_req {
    MPI_Request mreq;
    GOAL_Handle h;            /* NULL once goal's execution has ended */
    int busy;                 /* a thread waits in GOAL_WaitPoll on h */
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

/* Records of ended requests, kept for the next calls (a loop of small
 * collectives would otherwise pay calloc and free for each). Lock held. */
#define SPARE_MAX 64
static struct gm_req *spare;
static int nspare;

static struct gm_req *req_new(void)
{
    struct gm_req *q = spare;
    if (q) {
        spare = q->next;
        nspare--;
        memset(q, 0, sizeof *q);
        return q;
    }
    return calloc(1, sizeof *q);
}

static void req_free(struct gm_req *q)
{
    if (nspare >= SPARE_MAX) {
        free(q);
        return;
    }
    q->next = spare;
    spare = q;
    nspare++;
}

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
    /* No elements, not cancelled: the fields each MPI's mpi.h declares for
     * that (a third of the 1 000 instructions MPICH's Wait of a finished
     * request took through its two calls), else the calls. */
#if defined(OPEN_MPI)
    st->_ucount = 0;
    st->_cancelled = 0;
#elif defined(MPICH_VERSION)
    st->count_lo = 0;
    st->count_hi_and_cancelled = 0;
#else
    PMPI_Status_set_elements(st, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(st, 0);
#endif
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
        req_free(q);
    gm_unlock();
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    (void)extra, (void)complete;
    return MPI_SUCCESS; /* a collective cannot be cancelled: it completes as usual */
}

/* goal's execution of `q` has ended (`rc` from GOAL_Test/GOAL_WaitPoll):
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

/* Releases what the ended execution held and tells MPI. MPI's calls
 * (PMPI_Unpack, MPI_Grequest_complete) are made without the layer's lock:
 * MPI takes its own locks in them and calls free_fn (which takes the
 * layer's) with them held, so the layer never waits for MPI's while
 * holding its own. */
static void ended(struct gm_req *q, int rc)
{
    if (rc < 0)
        fprintf(stderr, "goal-mpi (rank %d): a collective failed on goal: %s\n", gm.world_rank, GOAL_LastError());
    if (q->own)
        GOAL_FreeSchedule(q->own);
    gm_bufs_end(&q->x, rc >= 0);
    MPI_Request m = q->mreq;
    gm_lock(); /* once, for the three (the lock is recursive) */
    if (q->entry)
        gm_entry_put(q->entry);
    gm_comm_put(q->comm);
    q->entry = NULL, q->own = NULL, q->comm = NULL;
    q->goal_done = 1;
    int forgotten = q->mpi_freed;
    if (forgotten)
        req_free(q); /* MPICH forgot the request at MPI_Request_free already */
    gm_unlock();
    if (!forgotten)
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

static int wait_blocking(GOAL_Handle h);

int gm_start(struct gm_comm *c, struct gm_entry *e, GOAL_Schedule own, void *const *bufs, int nbufs,
             struct gm_bufs *x, MPI_Request *request)
{
    struct gm_bufs none = { 0 };
    if (!x)
        x = &none;
    GOAL_Schedule s = e ? e->s : own;
    size_t sizes[2] = { 0, 0 };
    int open = 0; /* run-time buffers the schedule has */
    if (e) {
        memcpy(sizes, e->need, sizeof sizes);
        open = e->nbufs;
    } else if (nbufs > 0) { /* a renumbered copy of a cached one */
        open = GOAL_RunBufferSizes(s, sizes, 2);
    }
    GOAL_Handle h = open > 0 ? GOAL_RunWith(s, bufs, sizes, nbufs) : GOAL_Run(s);
    if (!h) {
        fprintf(stderr, "goal-mpi (rank %d): goal could not start a collective: %s\n", gm.world_rank, GOAL_LastError());
        if (e)
            gm_entry_put(e);
        if (own)
            GOAL_FreeSchedule(own);
        gm_bufs_end(x, 0);
        return MPI_ERR_INTERN;
    }
    if (!request) { /* a blocking call: no request, the wait is here */
        int rc = wait_blocking(h);
        if (rc < 0)
            fprintf(stderr, "goal-mpi (rank %d): a collective failed on goal: %s\n", gm.world_rank,
                    GOAL_LastError());
        if (own)
            GOAL_FreeSchedule(own);
        gm_bufs_end(x, rc >= 0);
        if (e)
            gm_entry_put(e);
        return rc < 0 ? MPI_ERR_OTHER : MPI_SUCCESS;
    }
    gm_lock();
    struct gm_req *q = req_new();
    if (q)
        c->refs++;
    gm_unlock();
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

/* ---- waiting ---- */

/* How often a Wait asleep in goal's wait wakes to ask MPI: MPI must keep
 * moving while a rank waits for goal (a peer may wait inside MPI for this
 * rank's point-to-point), and an MPI library cannot wake a sleeper. */
#define POKE_EVERY 1e-3

/* The least time between two pokes while a Wait polls, and before the
 * first: a collective that ends within it asks MPI nothing. Open MPI with
 * more ranks than cores (yield_when_idle, which mpirun sets then) yields
 * the CPU in every progress call that finds nothing, and goal's wait polls
 * in batches of one there, so a poke per batch gave the CPU away twice per
 * poll: 4 ranks on 2 CPUs, MPI_Ibarrier 4.6-5.3 us under the layer against
 * 2.5-2.6 with Open MPI's yield turned off, MPI_Ialltoall of 64 KiB 1.14x
 * native Open MPI. A peer waiting inside MPI for this rank still sees MPI
 * move within this. GOAL_MPI_POKE_US overrides it (0: every batch). */
static double poke_gap = -1;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Whether a poke is due (then the next one is due poke_gap later). */
static int poke_due(double *next)
{
    double now = now_s();
    if (now < *next)
        return 0;
    *next = now + poke_gap;
    return 1;
}

/* When the first poke of a Wait that starts now is due. */
static double first_poke(void)
{
    if (poke_gap < 0) {
        const char *v = getenv("GOAL_MPI_POKE_US");
        poke_gap = v ? atof(v) * 1e-6 : 20e-6;
        /* Never longer than a sleep between pokes: asleep, MPI is still
         * asked at every wake-up. */
        if (poke_gap > POKE_EVERY)
            poke_gap = POKE_EVERY;
    }
    return poke_gap > 0 ? now_s() + poke_gap : 0;
}

/* GOAL_WaitPoll's call while a blocking collective waits for goal: MPI
 * moves too (a peer may wait inside MPI for this rank's point-to-point, as
 * it may while the rank is inside MPI's own collective). An Iprobe that
 * takes nothing is the one call both MPIs progress in without a request. */
static int poke_blocking(void *ctx)
{
    if (!poke_due(ctx))
        return 0;
    int flag = 0;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    return 0;
}

/* A blocking collective's execution, to its end: 1, or <0 if it failed. */
static int wait_blocking(GOAL_Handle h)
{
    double next = first_poke();
    return GOAL_WaitPoll(h, POKE_EVERY, poke_blocking, &next);
}

/* One Wait or Test form on the array as MPI sees it: what to ask MPI, and
 * where its answer goes. */
enum wkind { W_ONE, W_ALL, W_ANY, W_SOME };

struct waiting {
    enum wkind kind;
    int n;
    MPI_Request *reqs;
    MPI_Status *st;           /* W_ONE, W_ANY */
    MPI_Status *sts;          /* W_ALL, W_SOME */
    int *index;               /* W_ANY */
    int *outcount, *indices;  /* W_SOME */
    int rc;                   /* MPI's answer, once over */
    int over;                 /* the poke found the Wait over (MPI completed something) */
    double next_poke;         /* when the next poke asks MPI (poke_due) */
};

/* Asks MPI (the form's PMPI_Test*): whether the Wait is over, its result
 * in w->rc. MPI's Testall changes nothing until all are complete. */
static int ask_mpi(struct waiting *w)
{
    int flag = 0;
    switch (w->kind) {
    case W_ONE:
        w->rc = PMPI_Test(w->reqs, &flag, w->st);
        break;
    case W_ALL:
        w->rc = PMPI_Testall(w->n, w->reqs, &flag, w->sts);
        break;
    case W_ANY:
        w->rc = PMPI_Testany(w->n, w->reqs, w->index, &flag, w->st);
        break;
    case W_SOME:
        w->rc = PMPI_Testsome(w->n, w->reqs, w->outcount, w->indices, w->sts);
        flag = *w->outcount != 0; /* MPI_UNDEFINED: no active request, over too */
        break;
    }
    return flag || w->rc != MPI_SUCCESS;
}

/* MPI's own blocking form, for an array in which no goal execution of the
 * layer's is left running (goal moves the others on its helper thread). */
static int mpi_wait(struct waiting *w)
{
    switch (w->kind) {
    case W_ONE:
        return PMPI_Wait(w->reqs, w->st);
    case W_ALL:
        return PMPI_Waitall(w->n, w->reqs, w->sts);
    case W_ANY:
        return PMPI_Waitany(w->n, w->reqs, w->index, w->st);
    default:
        return PMPI_Waitsome(w->n, w->reqs, w->outcount, w->indices, w->sts);
    }
}

/* GOAL_WaitPoll's call while a Wait waits for one goal execution: keeps MPI
 * moving and, for Waitany and Waitsome, ends the wait when anything else of
 * the array completes (another goal execution, told to MPI by drive). A
 * Wait or Waitall cannot end while the execution waited for runs. */
static int poke(void *ctx)
{
    struct waiting *w = ctx;
    if (!poke_due(&w->next_poke))
        return 0;
    if ((w->kind == W_ANY || w->kind == W_SOME) && nrunning > 1)
        drive();
    /* Noted here: GOAL_WaitPoll returns 1, not 0, if goal's execution ended
     * too, and what MPI completed must reach the program all the same. */
    w->over = ask_mpi(w);
    return w->over;
}

/* The first of `reqs` that is a running goal execution of the layer's, now
 * marked busy (this thread waits for it), or NULL; *ours: whether any of
 * `reqs` is the layer's, running or not. Another thread's busy one is
 * skipped (MPI forbids two threads completing one request at once). */
static struct gm_req *pick(int n, const MPI_Request *reqs, int *ours)
{
    *ours = 0;
    if (!gm.on && !nrunning)
        return NULL;
    struct gm_req *q = NULL;
    gm_lock();
    for (int i = 0; i < n && !q; i++) {
        struct gm_req *c = find(reqs[i]);
        if (c) {
            *ours = 1;
            if (c->h && !c->busy)
                q = c;
        }
    }
    if (q)
        q->busy = 1;
    gm_unlock();
    return q;
}

/* The end of this thread's wait for q: `rc` from GOAL_WaitPoll. */
static void settle(struct gm_req *q, int rc)
{
    gm_lock();
    q->busy = 0;
    if (rc != 0)
        claim(q, rc);
    gm_unlock();
    if (rc != 0)
        ended(q, rc);
}

/* Every Wait form. While a goal execution of the array runs, the thread
 * waits in goal's wait for it (spinning briefly, then asleep in the kernel
 * until goal's completion or a message wakes it), asking MPI at most
 * every poke_gap while polling and every POKE_EVERY asleep; then MPI is asked about the
 * array, and the next goal execution waited for. Once none runs, the
 * rest is MPI's own blocking Wait. */
static int wait_any_form(struct waiting *w)
{
    for (;;) {
        int ours;
        struct gm_req *q = pick(w->n, w->reqs, &ours);
        if (!ours) {
            if (nrunning)
                drive();
            return mpi_wait(w);
        }
        if (q) {
            w->next_poke = first_poke();
            int rc = GOAL_WaitPoll(q->h, POKE_EVERY, poke, w);
            settle(q, rc);
            if (w->over)
                return w->rc;
        }
        /* A Test, though goal's execution has ended and MPI holds its
         * completion: MPICH's Test runs its progress whatever the
         * request's state, its Wait of a complete request does not, and
         * that progress is what keeps MPICH's own traffic moving in a
         * program whose waits are all for goal. A Wait here (0.5-1 us
         * less per 8-byte collective across hosts) left t_mixed across 4
         * hosts hanging in MPICH's MPI_Finalize in 2 of 5 jobs, 0 of 5
         * with the Test. */
        if (ask_mpi(w))
            return w->rc;
        if (!q) {
            /* Ours, but none this thread may wait for (ended ones MPI has
             * not completed yet can only be another thread's): MPI's wait,
             * once nothing of ours is left to drive. */
            drive();
            return mpi_wait(w);
        }
    }
}

static int wait1(MPI_Request *r, MPI_Status *st)
{
    struct waiting w = { .kind = W_ONE, .n = 1, .reqs = r, .st = st };
    return wait_any_form(&w);
}

static int waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
    struct waiting w = { .kind = W_ALL, .n = n, .reqs = reqs, .sts = sts };
    return wait_any_form(&w);
}

static int waitany(int n, MPI_Request reqs[], int *index, MPI_Status *st)
{
    struct waiting w = { .kind = W_ANY, .n = n, .reqs = reqs, .index = index, .st = st };
    return wait_any_form(&w);
}

static int waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status sts[])
{
    struct waiting w = { .kind = W_SOME, .n = n, .reqs = reqs, .outcount = outcount, .indices = indices, .sts = sts };
    return wait_any_form(&w);
}

/* Calls `call` (an expression using `v`, the array MPI sees) on the
 * program's array `reqs` of `n`. */
#define SWAPPED(n, reqs, call)                                                                                         \
    do {                                                                                                               \
        MPI_Request buf_[16], *v = gm_pers_swap(n, reqs, buf_, 16);                                                    \
        int rc_ = (call);                                                                                              \
        gm_pers_back(n, reqs, v, buf_);                                                                                \
        return rc_;                                                                                                    \
    } while (0)

int MPI_Wait(MPI_Request *r, MPI_Status *st) { SWAPPED(1, r, wait1(v, st)); }
int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[]) { SWAPPED(n, reqs, waitall(n, v, sts)); }
int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *st) { SWAPPED(n, reqs, waitany(n, v, index, st)); }

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status sts[])
{
    SWAPPED(n, reqs, waitsome(n, v, outcount, indices, sts));
}

/* A Test first tells MPI which goal executions have ended. */
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

/* GOAL_WaitPoll's call in MPI_Finalize: MPI moves, nothing ends the wait. */
static int poke_world(void *ctx)
{
    (void)ctx;
    int flag;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    return 0;
}

/* MPI_Finalize: every execution still running (requests freed before
 * completion, or never waited for) ends first, MPI kept moving meanwhile. */
void gm_req_drain(void)
{
    while (nrunning) {
        drive();
        gm_lock();
        struct gm_req *q = running;
        while (q && q->busy)
            q = q->anext;
        if (q)
            q->busy = 1;
        gm_unlock();
        if (q) {
            settle(q, GOAL_WaitPoll(q->h, POKE_EVERY, poke_world, NULL));
        } else if (nrunning) {
            /* Another thread waits for what is left. */
            poke_world(NULL);
            struct timespec ts = { 0, 100000 };
            nanosleep(&ts, NULL);
        }
    }
}
