/*
 * t_killed_mid_read: the sender of a large message dies while its
 * receiver reads it from the sender's memory (Cross Memory Attach, read in
 * pieces after the pass that matched it).
 *
 * Rank 1 sends 256 MiB to rank 0, offered by CMA (set before GOAL_Init),
 * drives its execution for 20 ms (its RTS is out, rank 0 is reading) and
 * raise(SIGKILL)s itself. Rank 0 is in GOAL_Wait.
 *
 * Asserts (the runner checks the output, see the expect lines below):
 *   - rank 0's GOAL_Wait returns GOAL_ERR_PEER_LOST within 15 s, whether
 *     the death met its read in the middle (the error then says how far it
 *     got) or before it began, and rank 0 prints "survivor-saw-error" with
 *     the text and exits with status 3;
 *   - goalrun exits non-zero and names rank 1 and the signal.
 */
// ranks: 2
// expect-fail: (rank[ =:#]*1([^0-9]|$).*(sigkill|signal 9))|((sigkill|signal 9).*rank[ =:#]*1([^0-9]|$))
// expect-survivors: survivor-saw-error
// modes: 2
#include "helpers.h"

#define BYTES (256 << 20)

int main(int argc, char **argv)
{
    setenv("GOAL_CMA_MIN", "64K", 1);
    setenv("GOAL_CMA_MAX", "1G", 1);
    h_init(argc, argv);
    char *buf = malloc(BYTES);
    CHECKM(buf != NULL, "malloc of %d bytes", BYTES);
    memset(buf, h_rank + 1, BYTES);

    /* Both alive and connected before the schedule that will fail. */
    h_sync();

    GOAL_Graph g = h_graph();
    if (h_rank == 1)
        V(GOAL_Send(g, buf, BYTES, 0, 1, GOAL_USERSPACE));
    else
        V(GOAL_Recv(g, buf, BYTES, 1, 1, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);

    GOAL_Handle h = GOAL_Run(s);
    CHECK(h != NULL);
    double t0 = h_now();
    if (h_rank == 1) {
        while (h_now() - t0 < 0.02) {
            int rc = GOAL_Test(h);
            CHECKM(rc == 0, "the sender's execution ended early: GOAL_Test returned %d", rc);
        }
        fflush(NULL);
        raise(SIGKILL);
        FAILF("still alive after raise(SIGKILL)");
    }

    h_expect_peer_lost(h, t0, NULL);
}
