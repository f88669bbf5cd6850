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
 */
// memcheck: 2
// modes: 2 3
#include "helpers.h"

#define K 4

static volatile int64_t flag;

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

    for (int round = 0; round < 6; round++) {
        int use_test = round >= 3;
        GOAL_Handle h[K];
        bad = 0;
        seen = -1;
        for (int k = 0; k < K; k++) {
            if (h_rank % 2 == 1)
                h_sleep_ms(5);
            val = (int64_t)h_rank * 1000000 + round * 100 + k + 1;
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
        for (int i = 0; i < K; i++) {
            int k = h_rank % 2 == 0 ? K - 1 - i : i;
            if (use_test) {
                int rc;
                double t0 = h_now();
                while ((rc = GOAL_Test(h[k])) == 0)
                    CHECKM(h_now() - t0 < 30.0, "execution %d (round %d) never finished (GOAL_Test)", k, round);
                CHECKM(rc == 1, "GOAL_Test of execution %d (round %d) returned %d (%s)", k,
                       round, rc, h_strerr(rc));
            } else {
                int rc = GOAL_Wait(h[k]);
                CHECKM(rc == GOAL_SUCCESS, "GOAL_Wait of execution %d (round %d) returned %d (%s)",
                       k, round, rc, h_strerr(rc));
            }
        }
        CHECKM(bad == 0,
               "round %d: an echo came back to the wrong execution or a scratchpad was shared "
               "(OR of the differences 0x%" PRIx64 ")", round, (uint64_t)bad);
        int64_t base = (int64_t)h_rank * 1000000 + round * 100;
        CHECKM(seen > base && seen <= base + K, "round %d: the echo carried %" PRId64
               ", not one of this rank's values %" PRId64 "..%" PRId64, round, seen, base + 1, base + K);
    }
    h_free_schedule(s);
    if (h_rank == 0)
        printf("t_concurrent: %d concurrent executions paired correctly\n", K);
    return h_finish();
}
