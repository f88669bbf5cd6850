/*
 * t_reuse_mem: long-running reuse does not leak.
 *
 * Asserts:
 *   - one schedule (a 64 KiB COPY into the scratchpad, a 4 KiB self-send
 *     within the scratchpad, an ADD back to userspace) runs 10,000 times,
 *     half finished with GOAL_Wait, half by polling GOAL_Test; every 1000th
 *     result is checked against C (out = in + in on the first 1024 words),
 *     the schedule stays valid, and VmRSS grows by less than 1 MiB between
 *     run 2,000 and run 10,000 (a leak of one scratchpad per run would be
 *     500 MiB; of 128 bytes per run, 1 MiB);
 *   - a ring exchange (1 KiB to the next rank) runs 2,000 times with its data
 *     checked every 100th run, memory flat likewise;
 *   - 1,000 cycles of create graph / compile / run / free schedule and graph
 *     keep memory flat likewise.
 */
// ranks: 1 2 3
// modes: 2
#include "helpers.h"

#define SLACK_KIB 1024

static void check_growth(long before, long after, const char *what)
{
    CHECKM(after - before < SLACK_KIB, "%s: VmRSS grew from %ld KiB to %ld KiB (+%ld KiB)", what,
           before, after, after - before);
}

static void run_one(GOAL_Schedule s, int use_test)
{
    GOAL_Handle h = GOAL_Run(s);
    CHECK(h != NULL);
    if (use_test) {
        int rc;
        while ((rc = GOAL_Test(h)) == 0) {
        }
        CHECKM(rc == 1, "GOAL_Test returned %d (%s)", rc, h_strerr(rc));
    } else {
        CHECK_OK(GOAL_Wait(h));
    }
}

static void self_schedule(void)
{
    enum { WORDS = 16384 }; /* 64 KiB of uint32 */
    uint32_t *in = malloc(WORDS * 4), *out = malloc(1024 * 4);
    CHECK(in && out);
    GOAL_Graph g = h_graph();
    CHECK_OK(GOAL_AllocateScratchpad(g, WORDS * 4 + 4096));
    GOAL_Vertex cp = V(GOAL_LocalOp(g, in, NULL, SP(0), GOAL_COPY, GOAL_UINT, 32, WORDS,
                                    GOAL_USERSPACE, GOAL_USERSPACE, GOAL_SCRATCHPAD));
    GOAL_Vertex sd = V(GOAL_Send(g, SP(0), 4096, h_rank, 5, GOAL_SCRATCHPAD));
    GOAL_Vertex rv = V(GOAL_Recv(g, SP(WORDS * 4), 4096, h_rank, 5, GOAL_SCRATCHPAD));
    GOAL_Vertex add = V(GOAL_LocalOp(g, SP(0), SP(WORDS * 4), out, GOAL_ADD, GOAL_UINT, 32, 1024,
                                     GOAL_SCRATCHPAD, GOAL_SCRATCHPAD, GOAL_USERSPACE));
    REQ(g, cp, sd);
    REQ(g, rv, add);
    REQ(g, cp, add);
    GOAL_Schedule s = h_compile(g);

    long rss_at_2000 = 0;
    for (int i = 0; i < 10000; i++) {
        int check = i % 1000 == 0;
        if (check) {
            h_fill(in, WORDS * 4, h_seed(31, (uint64_t)i, (uint64_t)h_rank, 0));
            memset(out, 0xEE, 1024 * 4);
        }
        run_one(s, i % 2);
        if (check) {
            for (int w = 0; w < 1024; w++)
                CHECKM(out[w] == in[w] + in[w], "run %d: word %d is 0x%08x, want 0x%08x", i, w,
                       out[w], in[w] + in[w]);
            CHECKM(GOAL_IsScheduleValid(s) == 1, "the schedule became invalid after %d runs", i + 1);
        }
        if (i == 1999)
            rss_at_2000 = h_vmrss_kib();
    }
    check_growth(rss_at_2000, h_vmrss_kib(), "10,000 runs of a local schedule");
    h_free_schedule(s);
    free(in);
    free(out);
}

static void ring_schedule(void)
{
    char sbuf[1024], rbuf[1024];
    int next = (h_rank + 1) % h_size, prev = (h_rank + h_size - 1) % h_size;
    GOAL_Graph g = h_graph();
    V(GOAL_Send(g, sbuf, sizeof sbuf, next, 0, GOAL_USERSPACE));
    V(GOAL_Recv(g, rbuf, sizeof rbuf, prev, 0, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);
    long rss_at_500 = 0;
    for (int i = 0; i < 2000; i++) {
        int check = i % 100 == 0;
        if (check) {
            h_fill(sbuf, sizeof sbuf, h_seed(32, (uint64_t)i, (uint64_t)h_rank, 0));
            memset(rbuf, 0, sizeof rbuf);
        }
        run_one(s, i % 2);
        if (check) {
            CHECK_PATTERN(rbuf, sizeof rbuf, h_seed(32, (uint64_t)i, (uint64_t)prev, 0),
                          "ring run %d: block from rank %d", i, prev);
            /* sbuf is refilled for the next checked run only after every
             * rank got this run's data: */
            h_sync();
        }
        if (i == 499)
            rss_at_500 = h_vmrss_kib();
    }
    check_growth(rss_at_500, h_vmrss_kib(), "2,000 runs of a ring schedule");
    h_free_schedule(s);
}

static void compile_churn(void)
{
    char buf[256], rbuf[256];
    long rss_at_200 = 0;
    for (int i = 0; i < 1000; i++) {
        GOAL_Graph g = h_graph();
        CHECK_OK(GOAL_AllocateScratchpad(g, 4096));
        GOAL_Vertex a = V(GOAL_LocalOp(g, buf, NULL, SP(0), GOAL_COPY, GOAL_UINT, 8, 256,
                                       GOAL_USERSPACE, GOAL_USERSPACE, GOAL_SCRATCHPAD));
        GOAL_Vertex sd = V(GOAL_Send(g, SP(0), 256, h_rank, 1, GOAL_SCRATCHPAD));
        V(GOAL_Recv(g, rbuf, 256, h_rank, 1, GOAL_USERSPACE));
        REQ(g, a, sd);
        h_fill(buf, sizeof buf, (uint64_t)i);
        GOAL_Schedule s = h_compile(g); /* frees the graph */
        h_run(s);
        h_free_schedule(s);
        CHECK_PATTERN(rbuf, sizeof rbuf, (uint64_t)i, "churn cycle %d", i);
        if (i == 199)
            rss_at_200 = h_vmrss_kib();
    }
    check_growth(rss_at_200, h_vmrss_kib(), "1,000 compile/run/free cycles");
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    self_schedule();
    ring_schedule();
    compile_churn();
    if (h_rank == 0)
        printf("t_reuse_mem: 10,000 runs, 2,000 ring runs, 1,000 compile cycles, memory flat\n");
    return h_finish();
}
