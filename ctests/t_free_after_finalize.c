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
 *     freeing either again fails with GOAL_ERR_INVALID_ARGUMENT;
 *   - memory from GOAL_Alloc keeps the bytes a collective left in it, and
 *     takes writes (the heap is not unmapped while blocks remain);
 *     GOAL_Free of it returns GOAL_SUCCESS, of it again and of a pointer
 *     that never came from GOAL_Alloc GOAL_ERR_INVALID_ARGUMENT.
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
    /* Results left in the shared heap by a collective, read after GOAL_Finalize. */
    enum { N = 100000 };
    uint32_t *mine = GOAL_Alloc(N * sizeof *mine), *all = GOAL_Alloc((size_t)h_size * N * sizeof *all);
    CHECKM(mine && all, "GOAL_Alloc: %s", GOAL_LastError());
    for (uint32_t i = 0; i < N; i++)
        mine[i] = (uint32_t)h_rank * 1000003u + i;
    GOAL_Schedule ag = GOAL_Allgather_init(mine, N * sizeof *mine, all, GOAL_ALG_AUTO);
    CHECKM(ag != NULL, "GOAL_Allgather_init: %s", GOAL_LastError());
    h_run(ag);

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

    /* No schedule holds goal's runtime any more: only the heap's blocks keep it mapped. */
    CHECK_OK(GOAL_FreeSchedule(ag));
    for (int r = 0; r < h_size; r++)
        for (uint32_t i = 0; i < N; i++)
            CHECKM(all[(size_t)r * N + i] == (uint32_t)r * 1000003u + i,
                   "after GOAL_Finalize, element %u of rank %d's block reads %u", i, r, all[(size_t)r * N + i]);
    mine[0] = 7;
    CHECK_EQ(mine[0], 7u);
    CHECK_OK(GOAL_Free(mine));
    CHECK_EQ(GOAL_Free(mine), GOAL_ERR_INVALID_ARGUMENT);
    CHECK_EQ(GOAL_Free(&send), GOAL_ERR_INVALID_ARGUMENT);
    CHECK_OK(GOAL_Free(all));
    if (h_rank == 0)
        printf("freed a schedule and a graph after GOAL_Finalize\n");
    return 0;
}
