/*
 * t_stale_handles: a graph or schedule handle used after it was freed gets
 * an error naming the call, never a crash or a hang (and valgrind sees no
 * read of freed memory: the handles are ids, not addresses).
 *
 * Asserts:
 *   - after GOAL_FreeSchedule(s): GOAL_IsScheduleValid(s) == 0, GOAL_Run(s)
 *     returns NULL at once, a second GOAL_FreeSchedule(s) fails with
 *     GOAL_ERR_INVALID_ARGUMENT; GOAL_LastError() names the call and says
 *     the schedule is not live;
 *   - after GOAL_FreeGraph(g): a second GOAL_FreeGraph, GOAL_Send,
 *     GOAL_Requires, GOAL_AllocateScratchpad, GOAL_Compile and a collective
 *     _append on g fail the same way;
 *   - a graph handle passed as a schedule and the reverse are refused;
 *   - a new graph and schedule made after the frees work (and the old
 *     handles still do not), and the ring of all ranks still exchanges.
 */
// ranks: 1 2
// memcheck: 2
#include "helpers.h"

static void stale(int64_t rc, const char *fn, int line)
{
    const char *msg = h_last_error();
    if (rc >= 0)
        FAILF("line %d: %s on a freed handle returned %lld", line, fn, (long long)rc);
    if (rc != GOAL_INVALID_VERTEX && rc != GOAL_ERR_INVALID_ARGUMENT)
        FAILF("line %d: %s on a freed handle returned %lld, not GOAL_ERR_INVALID_ARGUMENT", line, fn, (long long)rc);
    if (!h_contains_ci(msg, fn) || !h_contains_ci(msg, "not a live"))
        FAILF("line %d: GOAL_LastError() \"%s\" does not say %s got a handle that is not live", line, msg, fn);
    if (h_rank == 0)
        printf("  refused: %s\n", msg);
}
#define STALE(call, fn) stale((int64_t)(call), (fn), __LINE__)

static uint64_t ring(GOAL_Schedule *out, uint64_t *send, uint64_t *recv)
{
    int n = h_size, me = h_rank;
    GOAL_Graph g = h_graph();
    V(GOAL_Send(g, send, 8, (me + 1) % n, 3, GOAL_USERSPACE));
    V(GOAL_Recv(g, recv, 8, (me + n - 1) % n, 3, GOAL_USERSPACE));
    *out = h_compile(g);
    return (uint64_t)((me + n - 1) % n);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    uint64_t send = h_rank, recv = 99;

    /* A freed schedule. */
    GOAL_Schedule s;
    uint64_t want = ring(&s, &send, &recv);
    h_run(s);
    CHECK_EQ(recv, want);
    CHECK_OK(GOAL_FreeSchedule(s));
    CHECK_EQ(GOAL_IsScheduleValid(s), 0);
    double t0 = h_now();
    GOAL_Handle h = GOAL_Run(s);
    CHECKM(h == NULL, "GOAL_Run of a freed schedule returned a handle");
    STALE(GOAL_ERR_INVALID_ARGUMENT, "GOAL_Run");
    CHECKM(h_now() - t0 < 1.0, "GOAL_Run of a freed schedule took %.1f s", h_now() - t0);
    STALE(GOAL_FreeSchedule(s), "GOAL_FreeSchedule");

    /* A freed graph. */
    GOAL_Graph g = h_graph();
    GOAL_Vertex a = V(GOAL_Send(g, &send, 8, h_rank, 1, GOAL_USERSPACE));
    GOAL_Vertex b = V(GOAL_Recv(g, &recv, 8, h_rank, 1, GOAL_USERSPACE));
    CHECK_OK(GOAL_FreeGraph(g));
    STALE(GOAL_FreeGraph(g), "GOAL_FreeGraph");
    STALE(GOAL_Send(g, &send, 8, h_rank, 1, GOAL_USERSPACE), "GOAL_Send");
    STALE(GOAL_Requires(g, a, b), "GOAL_Requires");
    STALE(GOAL_AllocateScratchpad(g, 64), "GOAL_AllocateScratchpad");
    GOAL_Schedule none = GOAL_Compile(g);
    CHECKM(none == NULL, "GOAL_Compile of a freed graph returned a schedule");
    STALE(GOAL_ERR_INVALID_ARGUMENT, "GOAL_Compile");
    STALE(GOAL_Barrier_append(g, GOAL_ALG_AUTO, NULL), "GOAL_Barrier_append");

    /* One kind passed as the other. */
    GOAL_Graph g2 = h_graph();
    STALE(GOAL_FreeSchedule((GOAL_Schedule)(void *)g2), "GOAL_FreeSchedule");
    GOAL_Schedule s2;
    want = ring(&s2, &send, &recv);
    STALE(GOAL_FreeGraph((GOAL_Graph)(void *)s2), "GOAL_FreeGraph");
    CHECK_OK(GOAL_FreeGraph(g2));

    /* The live ones work; the stale ones still do not. */
    recv = 99;
    h_run(s2);
    CHECK_EQ(recv, want);
    CHECK_EQ(GOAL_IsScheduleValid(s2), 1);
    CHECK_EQ(GOAL_IsScheduleValid(s), 0);
    STALE(GOAL_FreeSchedule(s), "GOAL_FreeSchedule");
    CHECK_OK(GOAL_FreeSchedule(s2));
    return h_finish();
}
