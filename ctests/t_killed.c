/*
 * t_killed: a rank dies in the middle of an execution.
 *
 * Every rank runs one schedule.  Rank 1 sends a first message to every other
 * rank, then waits for a message that never comes, after which it would send
 * a second (1 MiB) message to everyone; the other ranks receive both.  Rank 1
 * starts its execution, drives it for 200 ms (so its first messages are out)
 * and then raise(SIGKILL)s itself.  The other ranks are in GOAL_Wait.
 *
 * Asserts (the runner checks the output, see the expect lines below):
 *   - every surviving rank's GOAL_Wait returns an error (< 0) within 15 s and
 *     the survivor prints "survivor-saw-error" with the code and its text,
 *     then exits with status 3 (any other outcome prints FAIL and exits with
 *     another status);
 *   - goalrun exits non-zero and one line of its output names rank 1 and the
 *     signal (SIGKILL or "signal 9").
 * The test program never prints "rank 1" itself, so that line must come from
 * goalrun (or the library).
 */
// ranks: 2 4
// expect-fail: (rank[ =:#]*1([^0-9]|$).*(sigkill|signal 9))|((sigkill|signal 9).*rank[ =:#]*1([^0-9]|$))
// expect-survivors: survivor-saw-error
// modes: 3
#include "helpers.h"

#define VICTIM 1

int main(int argc, char **argv)
{
    h_init(argc, argv);
    if (h_size < 2)
        h_skip("needs at least 2 ranks");

    static char first[64], never[8], second[1 << 20];
    static char rfirst[64], rsecond[1 << 20];

    /* Everyone is connected and alive before the schedule that will fail. */
    h_sync();

    GOAL_Graph g = h_graph();
    if (h_rank == VICTIM) {
        GOAL_Vertex wait_forever = V(GOAL_Recv(g, never, 8, 0, 9, GOAL_USERSPACE));
        for (int p = 0; p < h_size; p++) {
            if (p == VICTIM)
                continue;
            V(GOAL_Send(g, first, sizeof first, p, 1, GOAL_USERSPACE));
            GOAL_Vertex s2 = V(GOAL_Send(g, second, sizeof second, p, 2, GOAL_USERSPACE));
            REQ(g, wait_forever, s2);
        }
    } else {
        V(GOAL_Recv(g, rfirst, sizeof rfirst, VICTIM, 1, GOAL_USERSPACE));
        V(GOAL_Recv(g, rsecond, sizeof rsecond, VICTIM, 2, GOAL_USERSPACE));
    }
    GOAL_Schedule s = h_compile(g);

    GOAL_Handle h = GOAL_Run(s);
    CHECK(h != NULL);
    double t0 = h_now();

    if (h_rank == VICTIM) {
        while (h_now() - t0 < 0.2) {
            int rc = GOAL_Test(h);
            CHECKM(rc == 0, "the victim's execution ended early: GOAL_Test returned %d", rc);
            h_sleep_ms(1);
        }
        fflush(NULL);
        raise(SIGKILL);
        FAILF("still alive after raise(SIGKILL)");
    }

    int rc = GOAL_Wait(h);
    double dt = h_now() - t0;
    if (rc >= 0) {
        fprintf(stderr, "FAIL [survivor %d]: GOAL_Wait returned %d after %.2f s although a peer died\n",
                h_rank, rc, dt);
        exit(1);
    }
    if (dt > 15.0) {
        fprintf(stderr, "FAIL [survivor %d]: GOAL_Wait took %.2f s to report the dead peer\n", h_rank, dt);
        exit(4);
    }
    const char *es = GOAL_ErrorString(rc);
    printf("survivor-saw-error r=%d after %.2f s: code %d (%s); last error: %s\n", h_rank, dt, rc,
           es ? es : "(null)", h_last_error());
    fflush(NULL);
    exit(3);
}
