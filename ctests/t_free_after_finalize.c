/*
 * t_free_after_finalize: the common C cleanup order (GOAL_Finalize, then
 * free what is left) works: GOAL_FreeSchedule and GOAL_FreeGraph succeed
 * after GOAL_Finalize, and are the only calls on handles that do (as
 * docs/api.md says).
 *
 * Asserts, after GOAL_Finalize:
 *   - GOAL_IsScheduleValid of a schedule not yet freed is 0, GOAL_Run of
 *     it returns NULL with GOAL_ERR_NOT_INITIALIZED's message;
 *   - GOAL_Send and GOAL_Compile on a graph not yet freed fail with
 *     GOAL_ERR_NOT_INITIALIZED ("after GOAL_Finalize");
 *   - GOAL_FreeSchedule and GOAL_FreeGraph of them return GOAL_SUCCESS;
 *     freeing either again fails with GOAL_ERR_INVALID_ARGUMENT.
 */
// ranks: 1 2
// memcheck: 2
#include "helpers.h"

int main(int argc, char **argv)
{
    h_init(argc, argv);
    uint64_t send = h_rank, recv = 99;
    GOAL_Graph g = h_graph();
    V(GOAL_Send(g, &send, 8, h_rank, 1, GOAL_USERSPACE));
    V(GOAL_Recv(g, &recv, 8, h_rank, 1, GOAL_USERSPACE));
    GOAL_Schedule s = GOAL_Compile(g);
    CHECKM(s != NULL, "GOAL_Compile failed");
    h_run(s);
    CHECK_EQ(recv, send);

    CHECK_OK(GOAL_Finalize());
    h_finalized = 1;

    CHECK_EQ(GOAL_IsScheduleValid(s), 0);
    CHECKM(GOAL_Run(s) == NULL, "GOAL_Run after GOAL_Finalize returned a handle");
    CHECKM(h_contains_ci(GOAL_LastError(), "GOAL_Run") && h_contains_ci(GOAL_LastError(), "finalize"),
           "GOAL_LastError() after GOAL_Run: \"%s\"", GOAL_LastError());
    CHECK_EQ(GOAL_Send(g, &send, 8, 0, 1, GOAL_USERSPACE), GOAL_INVALID_VERTEX);
    CHECKM(h_contains_ci(GOAL_LastError(), "GOAL_Send") && h_contains_ci(GOAL_LastError(), "after GOAL_Finalize"),
           "GOAL_LastError() after GOAL_Send: \"%s\"", GOAL_LastError());
    CHECKM(GOAL_Compile(g) == NULL, "GOAL_Compile after GOAL_Finalize returned a schedule");

    CHECK_OK(GOAL_FreeSchedule(s));
    CHECK_OK(GOAL_FreeGraph(g));
    CHECK_EQ(GOAL_FreeSchedule(s), GOAL_ERR_INVALID_ARGUMENT);
    CHECK_EQ(GOAL_FreeGraph(g), GOAL_ERR_INVALID_ARGUMENT);
    if (h_rank == 0)
        printf("freed a schedule and a graph after GOAL_Finalize\n");
    return 0;
}
