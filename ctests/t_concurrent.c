/*
 * t_concurrent: several executions of one schedule in flight at once.
 *
 * One schedule, on every rank (a ring; at N=1 the ring is a self-loop):
 *     c0:  COPY val -> sp[0]            (val: this execution's own value)
 *     s1:  send sp[0] to next (tag 1)           after c0
 *     f:   COPY one -> flag                     after s1
 *     r1:  recv sp[8] from prev (tag 1)
 *     s2:  send sp[8] back to prev (tag 2)      after r1   (the echo)
 *     r2:  recv sp[16] from next (tag 2)
 *     d:   SUB sp[16] - sp[0] -> sp[24]         after r2, c0
 *     acc: OR bad | sp[24] -> bad               after d
 *     out: COPY sp[16] -> seen                  after r2
 * The application gives each execution its own value: it sets val, runs the
 * schedule, and drives goal (GOAL_Progress) until `flag` shows that this
 * execution has taken its copy and sent it; only then does it change val and
 * start the next execution.  So K executions are in flight with K different
 * values, and each gets its value back from the next rank only if the k-th
 * execution of every rank pairs with the k-th execution of its neighbours and
 * every execution has its own scratchpad.
 *
 * Asserts: every execution succeeds (handles waited in reverse order on even
 * ranks, in order on odd ones); bad == 0, i.e. every execution's difference
 * was 0: each echo came back to the execution that sent it, and no
 * execution's scratchpad was overwritten by another's (the OR accumulates,
 * so one wrong execution is enough, whatever the order they finish in; a
 * correct run leaves 0 even if two ORs raced); `seen` is one of this rank's values; ranks that
 * start their executions late (odd ranks sleep before each Run, so messages
 * for executions they have not started yet arrive early) change nothing;
 * repeated for several rounds, and with Test-polling instead of Wait.
 *
 * Then stress rounds (T_CONCURRENT_STRESS, default 40): before every Run
 * each rank pauses for a random while (0-300 us, its own sequence), so
 * messages often come before their execution starts or while the receiver
 * is inside a Test, and the executions are finished in a random order by
 * random mixes of GOAL_Test (with pauses), GOAL_Progress and GOAL_Wait:
 * they finish inside Run, Test, Wait, Progress or the helper, and their
 * slots and states are reused while other handles are held. A hang names
 * the round, the executions left and how the last one was driven
 * (ctests/run.sh's GOAL_STALL_REPORT adds what each rank waits for).
 */
// memcheck: 2
// modes: 2 3
#include "helpers.h"

#define K 4

static volatile int64_t flag;

/* A rank's own random sequence (stress rounds). */
static unsigned next_random(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return (*seed >> 8) & 0xffffff;
}

static void pause_us(unsigned us)
{
    struct timespec ts = {0, (long)us * 1000L};
    nanosleep(&ts, NULL);
}

/* Drives goal until `done` of execution `k` is known: GOAL_Wait (how 0),
 * else one GOAL_Test, after a GOAL_Progress (how 3) or followed by a
 * pause when still running (how 1). Returns whether it finished. */
static int drive(GOAL_Handle h, int how, int k, int round, unsigned *seed)
{
    if (how == 0) {
        int rc = GOAL_Wait(h);
        CHECKM(rc == GOAL_SUCCESS, "GOAL_Wait of execution %d (round %d) returned %d (%s)", k, round, rc,
               h_strerr(rc));
        return 1;
    }
    if (how == 3)
        CHECK(GOAL_Progress() >= 0);
    int rc = GOAL_Test(h);
    CHECKM(rc >= 0, "GOAL_Test of execution %d (round %d) returned %d (%s)", k, round, rc, h_strerr(rc));
    if (rc == 0 && how == 1)
        pause_us(next_random(seed) % 100);
    return rc;
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    int next = (h_rank + 1) % h_size, prev = (h_rank + h_size - 1) % h_size;
    int64_t val = 0, one = 1, bad = 0, seen = 0;

    GOAL_Graph g = h_graph();
    CHECK_OK(GOAL_AllocateScratchpad(g, 32));
    GOAL_Vertex c0 = V(GOAL_LocalOp(g, &val, NULL, SP(0), GOAL_COPY, GOAL_SINT, 64, 1,
                                    GOAL_USERSPACE, GOAL_USERSPACE, GOAL_SCRATCHPAD));
    GOAL_Vertex s1 = V(GOAL_Send(g, SP(0), 8, next, 1, GOAL_SCRATCHPAD));
    GOAL_Vertex f = V(GOAL_LocalOp(g, &one, NULL, (void *)&flag, GOAL_COPY, GOAL_SINT, 64, 1,
                                   GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    GOAL_Vertex r1 = V(GOAL_Recv(g, SP(8), 8, prev, 1, GOAL_SCRATCHPAD));
    GOAL_Vertex s2 = V(GOAL_Send(g, SP(8), 8, prev, 2, GOAL_SCRATCHPAD));
    GOAL_Vertex r2 = V(GOAL_Recv(g, SP(16), 8, next, 2, GOAL_SCRATCHPAD));
    GOAL_Vertex d = V(GOAL_LocalOp(g, SP(16), SP(0), SP(24), GOAL_SUB, GOAL_SINT, 64, 1,
                                   GOAL_SCRATCHPAD, GOAL_SCRATCHPAD, GOAL_SCRATCHPAD));
    GOAL_Vertex o1 = V(GOAL_LocalOp(g, &bad, SP(24), &bad, GOAL_OR, GOAL_SINT, 64, 1,
                                    GOAL_USERSPACE, GOAL_SCRATCHPAD, GOAL_USERSPACE));
    GOAL_Vertex o2 = V(GOAL_LocalOp(g, SP(16), NULL, &seen, GOAL_COPY, GOAL_SINT, 64, 1,
                                    GOAL_SCRATCHPAD, GOAL_USERSPACE, GOAL_USERSPACE));
    REQ(g, c0, s1);
    REQ(g, s1, f);
    REQ(g, r1, s2);
    REQ(g, r2, d);
    REQ(g, c0, d);
    REQ(g, d, o1);
    REQ(g, r2, o2);
    GOAL_Schedule s = h_compile(g);

    static const char *const how_names[] = {"GOAL_Wait", "GOAL_Test with pauses", "GOAL_Test",
                                            "GOAL_Progress and GOAL_Test"};
    int stress = getenv("T_CONCURRENT_STRESS") ? atoi(getenv("T_CONCURRENT_STRESS")) : 40;
    unsigned seed = 0x9e3779b9u * (unsigned)(h_rank + 1);
    for (int round = 0; round < 6 + stress; round++) {
        /* Rounds 0-2 wait, 3-5 test; the later ones are stress rounds. */
        int random = round >= 6;
        GOAL_Handle h[K];
        bad = 0;
        seen = -1;
        for (int k = 0; k < K; k++) {
            if (random)
                pause_us(next_random(&seed) % 300);
            else if (h_rank % 2 == 1)
                h_sleep_ms(5);
            val = (int64_t)h_rank * 1000000 + (round % 10000) * 100 + k + 1;
            flag = 0;
            h[k] = GOAL_Run(s);
            CHECKM(h[k] != NULL, "GOAL_Run of execution %d (round %d) returned NULL", k, round);
            double t0 = h_now();
            while (__atomic_load_n(&flag, __ATOMIC_ACQUIRE) == 0) {
                int rc = GOAL_Progress();
                CHECKM(rc >= 0, "GOAL_Progress returned %d", rc);
                CHECKM(h_now() - t0 < 20.0,
                       "execution %d (round %d) did not copy and send its value in 20 s", k, round);
            }
        }
        int done[K] = {0};
        double t0 = h_now();
        for (int left = K; left > 0;) {
            /* In order, reversed on even ranks; at random in stress rounds. */
            int k = random ? (int)(next_random(&seed) % K) : h_rank % 2 == 0 ? left - 1 : K - left;
            if (done[k])
                continue;
            int how = random ? (int)(next_random(&seed) % 4) : round >= 3 ? 2 : 0;
            if (drive(h[k], how, k, round, &seed) == 1) {
                done[k] = 1;
                left--;
            } else if (h_now() - t0 > 30.0) {
                char which[8 * K] = "";
                for (int j = 0; j < K; j++)
                    if (!done[j])
                        snprintf(which + strlen(which), sizeof which - strlen(which), " %d", j);
                FAILF("round %d: execution(s)%s never finished (execution %d last driven by %s)", round, which, k,
                      how_names[how]);
            }
        }
        CHECKM(bad == 0,
               "round %d: an echo came back to the wrong execution or a scratchpad was shared "
               "(OR of the differences 0x%" PRIx64 ")", round, (uint64_t)bad);
        int64_t base = (int64_t)h_rank * 1000000 + (round % 10000) * 100;
        CHECKM(seen > base && seen <= base + K, "round %d: the echo carried %" PRId64
               ", not one of this rank's values %" PRId64 "..%" PRId64, round, seen, base + 1, base + K);
    }
    h_free_schedule(s);
    if (h_rank == 0)
        printf("t_concurrent: %d concurrent executions paired correctly\n", K);
    return h_finish();
}
