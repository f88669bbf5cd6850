/*
 * t_group_killed: a rank of one group dies while another group's
 * collectives run without it.
 *
 * Four ranks split into group A = {0, 1} and group B = {2, 3}. Rank 1 starts
 * an allreduce of group A whose input it never gives (it first waits for a
 * message that never comes), drives it for 200 ms and SIGKILLs itself.
 * Rank 0 waits in group A's allreduce. Ranks 2 and 3 run group B's
 * allreduce 30 times, 50 ms apart, before, during and after the death.
 *
 * Asserts (the runner checks the output, see the expect lines below):
 *   - rank 0's GOAL_Wait fails within 15 s, naming rank 1; it prints
 *     "survivor-saw-error";
 *   - every execution of group B finishes with the right sum: ranks 2 and 3
 *     print "survivor-group-b-done" (their group does not need rank 1);
 *   - goalrun exits non-zero and names rank 1 and the signal.
 */
// ranks: 4
// expect-fail: (rank[ =:#]*1([^0-9]|$).*(sigkill|signal 9))|((sigkill|signal 9).*rank[ =:#]*1([^0-9]|$))
// expect-survivors: survivor-(saw-error|group-b-done)
#include "helpers.h"

int main(int argc, char **argv)
{
    h_init(argc, argv);
    if (h_size != 4)
        h_skip("needs 4 ranks");
    GOAL_Group g;
    CHECK_OK(GOAL_Group_split(GOAL_GroupWorld(), h_rank / 2, h_rank, &g));
    h_sync();

    int64_t in = h_rank + 1, out = 0, never = 0;
    if (h_rank < 2) {
        GOAL_Graph gr = GOAL_CreateGraphOn(g);
        CHECK(gr != NULL);
        GOAL_Vertex entry;
        GOAL_Vertex done = GOAL_Allreduce_append(gr, &in, &out, 1, GOAL_SINT, 64, GOAL_ADD, GOAL_ALG_AUTO, &entry);
        CHECK(done >= 0);
        if (h_rank == 1) {
            /* the allreduce starts only after a message nobody sends */
            GOAL_Vertex wait_forever = V(GOAL_Recv(gr, &never, 8, 1, 9, GOAL_USERSPACE));
            REQ(gr, wait_forever, entry);
        }
        GOAL_Schedule s = h_compile(gr);
        GOAL_Handle h = GOAL_Run(s);
        CHECK(h != NULL);
        double t0 = h_now();
        if (h_rank == 1) {
            while (h_now() - t0 < 0.2)
                GOAL_Progress();
            raise(SIGKILL);
        }
        int rc = GOAL_Wait(h);
        double dt = h_now() - t0;
        if (rc == GOAL_SUCCESS)
            FAILF("group A's allreduce succeeded without rank 1");
        CHECKM(dt < 15, "the failure took %.1f s", dt);
        CHECKM(strstr(GOAL_LastError(), "rank 1"), "the error does not name rank 1: %s", GOAL_LastError());
        printf("survivor-saw-error after %.2f s: %d %s\n", dt, rc, GOAL_LastError());
        fflush(stdout);
        exit(3);
    }
    GOAL_Schedule s = GOAL_Allreduce_init_on(g, &in, &out, 1, GOAL_SINT, 64, GOAL_ADD, GOAL_ALG_AUTO);
    CHECKM(s != NULL, "%s", GOAL_LastError());
    for (int i = 0; i < 30; i++) {
        in = h_rank + i;
        CHECK_OK(GOAL_Wait(GOAL_Run(s)));
        CHECK_EQ(out, 2 + 3 + 2 * i);
        h_sleep_ms(50);
    }
    printf("survivor-group-b-done\n");
    fflush(stdout);
    CHECK_OK(GOAL_FreeSchedule(s));
    CHECK_OK(GOAL_Group_free(&g));
    return h_finish();
}
