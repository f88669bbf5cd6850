/*
 * t_threads: several application threads use goal at once
 * (MPI_THREAD_MULTIPLE).
 *
 * WORKERS threads per rank, each with schedules of its own on a group of its
 * own (every rank, split from the world by the main thread; odd workers'
 * groups in reverse rank order), built and compiled by the thread itself,
 * all at once: compile order pairs schedules across ranks per group, so
 * threads that compile on different groups need no order between them
 * (on one group they would take turns, as MPI requires for collectives on
 * one communicator). Worker w's schedules:
 *   ring:   send a pattern (rank, worker, round) to the next rank, receive
 *           the previous rank's into `got`, tags per worker;
 *   reduce: an allreduce (SUM of 64-bit integers) of `count` values that
 *           depend on rank, worker and round.
 * Every worker then runs its schedules ROUNDS times, all workers at once,
 * and checks every result against the model; even workers wait with
 * GOAL_Wait, odd ones poll with GOAL_Test in a loop, so one thread Tests
 * while others Wait.
 * Two more threads share one schedule, `shared` (compiled before the
 * workers' schedules): a ring exchange through the scratchpad whose received
 * bytes the schedule itself compares with the pattern (XOR into the
 * scratchpad, OR of every word into `bad`): each runs it SHARED_ROUNDS times and waits for
 * its own executions, one with GOAL_Wait, the other with GOAL_Test, so two
 * threads wait at once on different executions of one schedule. The k-th
 * execution of each rank pairs with the k-th of its neighbours, whichever
 * thread started it: every execution moves the same bytes.
 * A seventh thread calls GOAL_Progress in a loop meanwhile, and the workers
 * take their send buffers from GOAL_Alloc, all at once.
 * Each worker also makes an error of its own (a NULL buffer with a count
 * naming the worker) and checks that GOAL_LastError() is its own message
 * while the others work. Rounds take turns with nothing: the test counts on
 * no thread finding its execution done late; a Wait woken only by a timeout
 * shows as a slow round (the maximum is printed) and ROUNDS of them as a
 * watchdog failure.
 *
 * The worker's group is `struct worker`'s (group, rank, size).
 */
// ranks: 2 3
// all-modes: 2 3
#include "helpers.h"

#include <pthread.h>

#define WORKERS 4
#define ROUNDS 1000
#define SHARED_ROUNDS 1000
#define COUNT 1000  /* elements of each allreduce */
#define RING_BYTES 4096

struct worker {
    int id;
    /* The group the worker's schedules run on, this rank in it, its size. */
    GOAL_Group group;
    int rank, size;
    GOAL_Schedule ring, reduce;
    unsigned char *send, got[RING_BYTES]; /* send: GOAL_Alloc'd by the worker */
    int64_t in[COUNT], out[COUNT];
    double slowest; /* seconds, the longest round */
};

/* Workers start running only once every schedule is compiled. */
static pthread_barrier_t start;

static uint64_t ring_seed(int rank, int w, int round)
{
    return h_seed(50, (uint64_t)rank, (uint64_t)w, (uint64_t)round);
}

static int64_t reduce_in(int rank, int w, int round, int i)
{
    return (int64_t)(h_mix(ring_seed(rank, w, round) ^ (uint64_t)i) >> 20) - ((int64_t)1 << 42);
}

/* One execution, finished by GOAL_Wait or by GOAL_Test in a loop. */
static void finish(GOAL_Handle h, int by_test, const char *what, int w, int round)
{
    CHECKM(h != NULL, "worker %d round %d: GOAL_Run of %s failed", w, round, what);
    int rc;
    if (by_test) {
        while ((rc = GOAL_Test(h)) == 0)
            sched_yield(); /* more threads than cores: let the others run */
        if (rc == 1)
            rc = GOAL_SUCCESS;
    } else {
        rc = GOAL_Wait(h);
    }
    CHECKM(rc == GOAL_SUCCESS, "worker %d round %d: %s ended with %d (%s)", w, round, what, rc, h_strerr(rc));
}

/* The group worker w's schedules run on: every rank, split from the world
 * (a collective call of the world, so the main thread makes them, in worker
 * order); odd workers' in reverse rank order. */
static void worker_group(struct worker *me)
{
    CHECK_OK(GOAL_Group_split(GOAL_GroupWorld(), 0, me->id % 2 ? -h_rank : h_rank, &me->group));
    me->rank = GOAL_Group_rank(me->group);
    me->size = GOAL_Group_size(me->group);
    CHECK_EQ(me->rank, me->id % 2 ? h_size - 1 - h_rank : h_rank);
}

/* The worker's own error, and GOAL_LastError() naming it on this thread. */
static void own_error(struct worker *me)
{
    GOAL_Graph g = h_graph();
    int count = 1000 + me->id;
    CHECK_EQ(GOAL_Send(g, NULL, count, 0, 0, GOAL_USERSPACE), GOAL_INVALID_VERTEX);
    sched_yield(); /* let the others fail and succeed meanwhile */
    char want[64];
    snprintf(want, sizeof want, "a count of %d", count);
    CHECKM(strstr(GOAL_LastError(), want) != NULL, "worker %d: GOAL_LastError() is another thread's: %s", me->id,
           GOAL_LastError());
    CHECK_OK(GOAL_FreeGraph(g));
}

static void *worker_main(void *arg)
{
    struct worker *me = arg;
    int next = (me->rank + 1) % me->size, prev = (me->rank + me->size - 1) % me->size;
    /* Build and compile in parallel with the other workers, each on its group. */
    me->send = GOAL_Alloc(RING_BYTES); /* the heap, from several threads at once */
    CHECKM(me->send != NULL, "worker %d: GOAL_Alloc failed", me->id);
    GOAL_Graph ring = GOAL_CreateGraphOn(me->group);
    CHECKM(ring != NULL, "worker %d: GOAL_CreateGraphOn: %s", me->id, GOAL_LastError());
    V(GOAL_Send(ring, me->send, RING_BYTES, next, 100 + me->id, GOAL_USERSPACE));
    V(GOAL_Recv(ring, me->got, RING_BYTES, prev, 100 + me->id, GOAL_USERSPACE));
    own_error(me);
    me->ring = h_compile(ring);
    me->reduce = GOAL_Allreduce_init_on(me->group, me->in, me->out, COUNT, GOAL_SINT, 64, GOAL_ADD, GOAL_ALG_AUTO);
    CHECKM(me->reduce != NULL, "worker %d: GOAL_Allreduce_init_on failed: %s", me->id, GOAL_LastError());
    pthread_barrier_wait(&start);

    int by_test = me->id % 2;
    for (int round = 0; round < ROUNDS; round++) {
        double t0 = h_now();
        h_fill(me->send, RING_BYTES, ring_seed(me->rank, me->id, round));
        memset(me->got, 0, RING_BYTES);
        for (int i = 0; i < COUNT; i++)
            me->in[i] = reduce_in(me->rank, me->id, round, i);
        GOAL_Handle a = GOAL_Run(me->ring);
        GOAL_Handle b = GOAL_Run(me->reduce);
        finish(b, by_test, "the allreduce", me->id, round);
        finish(a, by_test, "the ring", me->id, round);
        CHECK_PATTERN(me->got, RING_BYTES, ring_seed(prev, me->id, round), "worker %d round %d: ring from rank %d", me->id,
                      round, prev);
        for (int i = 0; i < COUNT; i++) {
            int64_t want = 0;
            for (int r = 0; r < me->size; r++)
                want += reduce_in(r, me->id, round, i);
            CHECKM(me->out[i] == want, "worker %d round %d: allreduce element %d is %" PRId64 ", expected %" PRId64,
                   me->id, round, i, me->out[i], want);
        }
        double dt = h_now() - t0;
        if (dt > me->slowest)
            me->slowest = dt;
    }
    h_free_schedule(me->ring);
    h_free_schedule(me->reduce);
    CHECK_OK(GOAL_Group_free(&me->group));
    CHECK_OK(GOAL_Free(me->send));
    return NULL;
}

/* ---- two threads on one schedule ---- */

static GOAL_Schedule shared;
static uint64_t shared_pattern[RING_BYTES / 8], shared_bad[RING_BYTES / 8];

static GOAL_Schedule shared_schedule(void)
{
    int next = (h_rank + 1) % h_size, prev = (h_rank + h_size - 1) % h_size;
    uint64_t seed = ring_seed(h_rank, 99, 0);
    for (int i = 0; i < RING_BYTES / 8; i++)
        shared_pattern[i] = h_mix(seed ^ (uint64_t)i);
    GOAL_Graph g = h_graph();
    CHECK_OK(GOAL_AllocateScratchpad(g, 2 * RING_BYTES));
    /* The previous rank's pattern is what this rank expects: its own
     * pattern's seed is computed the same way there. */
    static uint64_t expect[RING_BYTES / 8];
    uint64_t pseed = ring_seed(prev, 99, 0);
    for (int i = 0; i < RING_BYTES / 8; i++)
        expect[i] = h_mix(pseed ^ (uint64_t)i);
    V(GOAL_Send(g, shared_pattern, RING_BYTES, next, 7, GOAL_USERSPACE));
    GOAL_Vertex r = V(GOAL_Recv(g, SP(0), RING_BYTES, prev, 7, GOAL_SCRATCHPAD));
    GOAL_Vertex x = V(GOAL_LocalOp(g, SP(0), expect, SP(RING_BYTES), GOAL_XOR, GOAL_UINT, 64, RING_BYTES / 8,
                                   GOAL_SCRATCHPAD, GOAL_USERSPACE, GOAL_SCRATCHPAD));
    REQ(g, r, x);
    /* bad |= the difference, every word (two executions may OR at once:
     * zeros stay zeros, and a difference survives in at least one). */
    GOAL_Vertex o = V(GOAL_LocalOp(g, shared_bad, SP(RING_BYTES), shared_bad, GOAL_OR, GOAL_UINT, 64, RING_BYTES / 8,
                                   GOAL_USERSPACE, GOAL_SCRATCHPAD, GOAL_USERSPACE));
    REQ(g, x, o);
    return h_compile(g);
}

/* A thread that only drives progress, until the others are done. */
static volatile int all_done;

static void *progress_main(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    while (!all_done) {
        CHECKM(GOAL_Progress() >= 0, "GOAL_Progress failed");
        sched_yield();
    }
    return NULL;
}

struct sharer {
    int id;
    double slowest;
};

static void *sharer_main(void *arg)
{
    struct sharer *me = arg;
    pthread_barrier_wait(&start);
    for (int round = 0; round < SHARED_ROUNDS; round++) {
        double t0 = h_now();
        finish(GOAL_Run(shared), me->id, "the shared schedule", 100 + me->id, round);
        double dt = h_now() - t0;
        if (dt > me->slowest)
            me->slowest = dt;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    double t0 = h_now();
    shared = shared_schedule();
    static struct worker w[WORKERS];
    struct sharer s[2] = {{0, 0}, {1, 0}};
    pthread_t tw[WORKERS], ts[2], tp;
    CHECK_EQ(pthread_barrier_init(&start, NULL, WORKERS + 3), 0);
    CHECK_EQ(pthread_create(&tp, NULL, progress_main, NULL), 0);
    for (int i = 0; i < WORKERS; i++) {
        w[i].id = i;
        worker_group(&w[i]);
        CHECK_EQ(pthread_create(&tw[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&ts[i], NULL, sharer_main, &s[i]), 0);
    double slowest = 0;
    for (int i = 0; i < WORKERS; i++) {
        CHECK_EQ(pthread_join(tw[i], NULL), 0);
        slowest = w[i].slowest > slowest ? w[i].slowest : slowest;
    }
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(pthread_join(ts[i], NULL), 0);
        slowest = s[i].slowest > slowest ? s[i].slowest : slowest;
    }
    all_done = 1;
    CHECK_EQ(pthread_join(tp, NULL), 0);
    for (int i = 0; i < RING_BYTES / 8; i++)
        CHECKM(shared_bad[i] == 0, "an execution of the shared schedule received wrong bytes (word %d differs by %#" PRIx64 ")",
               i, shared_bad[i]);
    h_free_schedule(shared);
    printf("rank %d: %d workers x %d rounds and 2 x %d shared executions in %.2f s; slowest round %.1f ms\n", h_rank,
           WORKERS, ROUNDS, SHARED_ROUNDS, h_now() - t0, slowest * 1e3);
    return h_finish();
}
