/*
 * t_peer_failed: an execution that fails before it sends does not leave
 * its receivers waiting for ever.
 *
 * A chain: rank 0 divides a vector by another (integer DIV) and sends the
 * quotient to rank 1; every other rank receives from the rank before it
 * and forwards what it got to the rank after it. With a zero divisor rank
 * 0's execution fails (GOAL_ERR_DIV_BY_ZERO) and its send never starts.
 * The test asserts that every other rank's execution then ends with
 * GOAL_ERR_PEER_FAILED naming the rank before it, that execution and the
 * first failure, rank 0's division (rank 2 learns it from rank 1, and so
 * on down the chain), within 20 s each; and that the
 * same schedule then runs right with a good divisor (the quotient arrives
 * at every rank), so the failure left nothing behind.
 */
// ranks: 2 4
// modes: 2
// all-modes: 2
#include "helpers.h"

#define N 512

int main(int argc, char **argv)
{
    h_init(argc, argv);
    if (h_size < 2)
        h_skip("needs a peer");
    int64_t num[N], den[N], buf[N];
    for (int i = 0; i < N; i++) {
        num[i] = 1000 + 7 * i;
        den[i] = 1 + i % 5;
    }
    memset(buf, 0, sizeof buf);

    GOAL_Graph g = h_graph();
    if (h_rank == 0) {
        GOAL_Vertex d = V(GOAL_LocalOp(g, num, den, buf, GOAL_DIV, GOAL_SINT, 64, N, GOAL_USERSPACE, GOAL_USERSPACE,
                                       GOAL_USERSPACE));
        GOAL_Vertex s = V(GOAL_Send(g, buf, (int)sizeof buf, 1, 5, GOAL_USERSPACE));
        REQ(g, d, s);
    } else {
        GOAL_Vertex r = V(GOAL_Recv(g, buf, (int)sizeof buf, h_rank - 1, 5, GOAL_USERSPACE));
        if (h_rank + 1 < h_size) {
            GOAL_Vertex s = V(GOAL_Send(g, buf, (int)sizeof buf, h_rank + 1, 5, GOAL_USERSPACE));
            REQ(g, r, s);
        }
    }
    GOAL_Schedule sched = h_compile(g);

    /* A zero divisor at element N-3 on rank 0. */
    den[N - 3] = 0;
    double t0 = h_now();
    GOAL_Handle h = GOAL_Run(sched);
    CHECK(h != NULL);
    int rc = GOAL_Wait(h);
    double dt = h_now() - t0;
    if (h_rank == 0) {
        CHECKM(rc == GOAL_ERR_DIV_BY_ZERO, "rank 0: GOAL_Wait returned %d (%s), expected GOAL_ERR_DIV_BY_ZERO", rc,
               h_last_error());
    } else {
        CHECKM(rc == GOAL_ERR_PEER_FAILED, "rank %d: GOAL_Wait returned %d (%s) after %.1f s, expected GOAL_ERR_PEER_FAILED",
               h_rank, rc, h_last_error(), dt);
        /* The peer it waited on, and the first failure: rank 0's division. */
        char want[96], first[96];
        snprintf(want, sizeof want, "rank %d's execution 0 of schedule", h_rank - 1);
        snprintf(first, sizeof first, h_rank == 1 ? "failed (an integer division by zero)"
                                                  : "after rank 0's failed (an integer division by zero)");
        CHECKM(strstr(h_last_error(), want) && strstr(h_last_error(), first) && strstr(h_last_error(), "tag 5"),
               "rank %d: the error \"%s\" does not say \"%s\", \"%s\" and the tag", h_rank, h_last_error(), want, first);
        CHECKM(dt < 20.0, "rank %d: the peer's failure took %.1f s to end this execution", h_rank, dt);
        printf("rank %d: failed after %.2f s: %s\n", h_rank, dt, h_last_error());
    }

    /* The schedule still runs, and right, once the divisor is good. */
    den[N - 3] = 3;
    h_sync();
    memset(buf, 0, sizeof buf);
    h_run(sched);
    for (int i = 0; i < N; i++) {
        int64_t want = (1000 + 7 * i) / (i == N - 3 ? 3 : 1 + i % 5);
        if (buf[i] != want)
            FAILF("the run after the failure: element %d is %" PRId64 ", want %" PRId64, i, buf[i], want);
    }
    h_free_schedule(sched);
    if (h_rank == 0)
        printf("t_peer_failed: a failure before a send ended every rank down the chain\n");
    return h_finish();
}
