/*
 * t_isfinished: GOAL_IsFinished looks whether an execution has ended without
 * moving it and without releasing its handle.
 *
 * Rank 1 sleeps 30 ms, then sends 64 KiB of a pattern; rank 0 starts the
 * receive first. Asserts, on rank 0:
 *   - right after GOAL_Run, GOAL_IsFinished(h) == 0 (nothing was sent yet);
 *   - with a helper thread (every mode but manual): GOAL_IsFinished becomes 1
 *     within 10 s while rank 0 only sleeps between looks (goal's helper moved
 *     the receive), it stays 1, and GOAL_Test then returns 1 (the handle was
 *     live until then) with every byte of the pattern in place;
 *   - in manual mode (no helper): GOAL_IsFinished stays 0 for 100 ms after
 *     the send (nothing moves a receive that is only looked at), and
 *     GOAL_Wait then finishes it with the pattern in place;
 *   - GOAL_IsFinished(NULL) fails with GOAL_ERR_INVALID_ARGUMENT naming it.
 */
// ranks: 2
// all-modes: 2
#include "helpers.h"

#define BYTES (64 * 1024)

int main(int argc, char **argv)
{
    h_init(argc, argv);
    const char *mode = getenv("GOAL_PROGRESS");
    int manual = mode && strcmp(mode, "manual") == 0;
    char *buf = malloc(BYTES);
    CHECK(buf != NULL);
    uint64_t seed = h_seed(7, 1, 0, BYTES);
    GOAL_Graph g = h_graph();
    if (h_rank == 1) {
        h_fill(buf, BYTES, seed);
        V(GOAL_Send(g, buf, BYTES, 0, 5, GOAL_USERSPACE));
    } else {
        memset(buf, 0, BYTES);
        V(GOAL_Recv(g, buf, BYTES, 1, 5, GOAL_USERSPACE));
    }
    GOAL_Schedule s = h_compile(g);
    if (h_rank == 1) {
        h_sleep_ms(30);
        h_run(s);
    } else {
        GOAL_Handle h = GOAL_Run(s);
        CHECKM(h != NULL, "GOAL_Run: %s", h_last_error());
        CHECK_EQ(GOAL_IsFinished(h), 0);
        if (manual) {
            h_sleep_ms(130);
            CHECKM(GOAL_IsFinished(h) == 0, "manual mode: the receive ended while only looked at");
            CHECK_OK(GOAL_Wait(h));
        } else {
            double t0 = h_now();
            int done = 0;
            while (!(done = GOAL_IsFinished(h)) && h_now() - t0 < 10.0)
                h_sleep_ms(1);
            CHECKM(done == 1, "GOAL_IsFinished still %d after %.1f s: the helper did not move the receive", done,
                   h_now() - t0);
            CHECK_EQ(GOAL_IsFinished(h), 1);
            CHECK_EQ(GOAL_Test(h), 1);
        }
        CHECK_PATTERN(buf, BYTES, seed, "received");
        int rc = GOAL_IsFinished(NULL);
        CHECK_EQ(rc, GOAL_ERR_INVALID_ARGUMENT);
        CHECKM(h_contains_ci(h_last_error(), "GOAL_IsFinished"), "GOAL_LastError() \"%s\" does not name the call",
               h_last_error());
    }
    h_free_schedule(s);
    free(buf);
    return h_finish();
}
