// GOAL_InitWith: goal started from a host runtime's allgather instead of a
// launcher (what libgoal-mpi does with PMPI_Allgather). The host here is a
// directory of files: each rank writes its block for a round and reads the
// others' once all are there. Checks the refusals (NULL, a rank past the
// size, a failing allgather, named in the message), that goal then starts,
// that a message moves between the ranks it found, and GOAL_WaitFor: it
// returns 0 at its time limit while the execution waits for a late peer,
// then 1. And GOAL_WaitPoll, waiting for a late peer: its poll function
// (which calls goal) is called as it waits, a non-zero return ends the
// Wait with the execution running, and a whole Wait sleeps (the thread's
// CPU time well under the wall time); its refusals.
// ranks: 1 2 3
#include "helpers.h"

#include <sys/stat.h>
#include <time.h>

struct files {
    char dir[256];
    int rank, size, round;
};

/* GOAL_WaitPoll's function: counts its calls, asks for the end at `stop`. */
struct poll_count {
    int calls, stop;
};

static int polled(void *ctx)
{
    struct poll_count *c = ctx;
    GOAL_Progress(); /* it may call goal */
    return ++c->calls == c->stop;
}

static double thread_cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* GOAL_WaitPoll on rank 0 for a message rank 1 sends 300 ms late. */
static void wait_poll(int rank)
{
    long v = rank == 1 ? 4343 : -1;
    GOAL_Graph g = GOAL_CreateGraph();
    if (rank == 0)
        V(GOAL_Recv(g, &v, sizeof v, 1, 4, GOAL_USERSPACE));
    if (rank == 1)
        V(GOAL_Send(g, &v, sizeof v, 0, 4, GOAL_USERSPACE));
    GOAL_Schedule s = GOAL_Compile(g);
    CHECK(s);
    GOAL_FreeGraph(g);
    if (rank == 1)
        usleep(300 * 1000);
    GOAL_Handle h = GOAL_Run(s);
    CHECK(h);
    if (rank == 0) {
        struct poll_count early = { 0, 5 };
        CHECK_EQ(GOAL_WaitPoll(h, 1e-3, polled, &early), 0);
        CHECK_EQ(early.calls, 5);
        CHECK_EQ(GOAL_WaitPoll(h, 0.0, polled, &early), GOAL_ERR_INVALID_ARGUMENT);
        CHECK_EQ(GOAL_WaitPoll(h, 1e-3, NULL, NULL), GOAL_ERR_INVALID_ARGUMENT);
        struct poll_count all = { 0, -1 };
        double t0 = GOAL_Wtime(), c0 = thread_cpu();
        CHECK_EQ(GOAL_WaitPoll(h, 2e-3, polled, &all), 1);
        double wall = GOAL_Wtime() - t0, cpu = thread_cpu() - c0;
        CHECK_EQ(v, 4343);
        CHECKM(all.calls >= 10, "GOAL_WaitPoll called its function %d times in %.3f s", all.calls, wall);
        CHECKM(wall < 0.1 || cpu < 0.5 * wall, "GOAL_WaitPoll used %.3f s of CPU in %.3f s: it did not sleep", cpu,
               wall);
    } else {
        CHECK_OK(GOAL_Wait(h));
    }
    GOAL_FreeSchedule(s);
}

/* The host's allgather: round k's block of rank r is file k.r. */
static int file_allgather(const void *mine, size_t len, void *all, void *ctx)
{
    struct files *f = ctx;
    char path[320], tmp[330];
    snprintf(path, sizeof path, "%s/%d.%d", f->dir, f->round, f->rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *o = fopen(tmp, "wb");
    if (!o || fwrite(mine, 1, len, o) != len || fclose(o) != 0 || rename(tmp, path) != 0)
        return -1;
    for (int r = 0; r < f->size; r++) {
        snprintf(path, sizeof path, "%s/%d.%d", f->dir, f->round, r);
        FILE *i;
        for (int tries = 0; !(i = fopen(path, "rb")); tries++) {
            if (tries > 30000)
                return -2; /* 30 s */
            usleep(1000);
        }
        size_t got = fread((char *)all + (size_t)r * len, 1, len, i);
        fclose(i);
        if (got != len)
            return -3;
    }
    f->round++;
    return 0;
}

static int failing(const void *mine, size_t len, void *all, void *ctx)
{
    (void)mine, (void)len, (void)all, (void)ctx;
    return -1;
}

int main(int argc, char **argv)
{
    (void)argc, (void)argv;
    const char *r = getenv("GOAL_RANK"), *n = getenv("GOAL_SIZE"), *job = getenv("GOAL_JOB");
    CHECKM(r && n && job, "run under goalrun (GOAL_RANK, GOAL_SIZE, GOAL_JOB)");
    struct files f = { "", atoi(r), atoi(n), 0 };
    snprintf(f.dir, sizeof f.dir, "/tmp/goal-initwith-%s", job);
    mkdir(f.dir, 0700);
    h_rank = f.rank, h_size = f.size;

    CHECK_EQ(GOAL_InitWith(NULL), GOAL_ERR_INVALID_ARGUMENT);
    GOAL_Bootstrap bad = { f.size, f.size, file_allgather, &f };
    CHECK_EQ(GOAL_InitWith(&bad), GOAL_ERR_INVALID_ARGUMENT);
    CHECKM(strstr(GOAL_LastError(), "is not within a job of"), "%s", GOAL_LastError());
    GOAL_Bootstrap fails = { f.rank, f.size, failing, NULL };
    CHECK_ERR(GOAL_InitWith(&fails));
    CHECKM(strstr(GOAL_LastError(), "allgather of") && strstr(GOAL_LastError(), "returned -1"), "%s", GOAL_LastError());
    CHECK(!GOAL_IsInitialized());

    GOAL_Bootstrap ok = { f.rank, f.size, file_allgather, &f };
    CHECK_OK(GOAL_InitWith(&ok));
    CHECK_EQ(GOAL_MyRank(), f.rank);
    CHECK_EQ(GOAL_GroupSize(), f.size);
    CHECK_EQ(GOAL_InitWith(&ok), GOAL_ERR_ALREADY_INITIALIZED);

    if (f.size > 1) {
        /* Rank 1 sends to rank 0 late: rank 0's WaitFor times out first. */
        long v = f.rank == 1 ? 4242 : -1;
        GOAL_Graph g = GOAL_CreateGraph();
        if (f.rank == 0)
            V(GOAL_Recv(g, &v, sizeof v, 1, 3, GOAL_USERSPACE));
        if (f.rank == 1)
            V(GOAL_Send(g, &v, sizeof v, 0, 3, GOAL_USERSPACE));
        GOAL_Schedule s = GOAL_Compile(g);
        CHECK(s);
        GOAL_FreeGraph(g);
        if (f.rank == 1)
            usleep(300 * 1000);
        GOAL_Handle h = GOAL_Run(s);
        CHECK(h);
        if (f.rank == 0) {
            double t0 = GOAL_Wtime();
            CHECK_EQ(GOAL_WaitFor(h, 0.02), 0);
            double waited = GOAL_Wtime() - t0;
            CHECKM(waited >= 0.019 && waited < 0.25, "GOAL_WaitFor(0.02) returned after %.3f s", waited);
            int rc;
            while ((rc = GOAL_WaitFor(h, 0.05)) == 0)
                ;
            CHECK_EQ(rc, 1);
            CHECK_EQ(v, 4242);
        } else {
            CHECK_OK(GOAL_Wait(h));
        }
        GOAL_FreeSchedule(s);
    }
    CHECK_EQ(GOAL_WaitFor(NULL, 1.0), GOAL_ERR_INVALID_ARGUMENT);
    if (f.size > 1)
        wait_poll(f.rank);
    CHECK_EQ(GOAL_WaitPoll(NULL, 1e-3, polled, &(struct poll_count){ 0, 0 }), GOAL_ERR_INVALID_ARGUMENT);
    /* Every rank is past its last exchange: rank 0 removes the files. */
    GOAL_Schedule b = GOAL_Barrier_init(GOAL_ALG_AUTO);
    CHECK(b);
    CHECK_OK(GOAL_Wait(GOAL_Run(b)));
    GOAL_FreeSchedule(b);
    if (f.rank == 0) {
        char path[320];
        for (int k = 0; k < f.round; k++)
            for (int q = 0; q < f.size; q++) {
                snprintf(path, sizeof path, "%s/%d.%d", f.dir, k, q);
                unlink(path);
            }
        rmdir(f.dir);
    }
    CHECK_OK(GOAL_Finalize());
    if (f.rank == 0)
        printf("initwith: ok on %d ranks after %d exchanges\n", f.size, f.round);
    return 0;
}
