/*
 * t_null_buffers: a NULL user buffer with a count above zero is refused by
 * the call that is given it (GOAL_ERR_INVALID_ARGUMENT, GOAL_LastError()
 * naming the function and the argument), instead of crashing the rank at
 * GOAL_Run; NULL with a count of zero, NULL as scratchpad offset 0, b2 of
 * COPY, and the buffers only the root uses on the other ranks stay
 * accepted.
 *
 * Asserts:
 *   - GOAL_Send / GOAL_Recv (buf), GOAL_SendVec / GOAL_RecvVec (offsets[1]),
 *     GOAL_LocalOp ADD with b1, b2 or bres NULL, GOAL_LocalOpVec with a
 *     NULL piece in list 2: refused, naming function and argument;
 *   - every collective _init and _append with each used buffer NULL:
 *     refused, naming function and argument; the _append leaves the graph
 *     usable;
 *   - accepted (and run, with the data checked where there is data): Send
 *     and Recv of 0 bytes at NULL, a scratchpad send at offset 0, COPY with
 *     b2 NULL, WTIME with b1 and b2 NULL, gather/reduce with rbuf NULL and
 *     scatter with sbuf NULL on the ranks that are not the root.
 */
// ranks: 1 2 3
#include "helpers.h"

static char buf[256], buf2[256];

#define REFUSED_V(call, fn, arg) refused_((int64_t)(call), (fn), (arg), __LINE__)
#define REFUSED_S(call, fn, arg) refused_sched_((call), (fn), (arg), __LINE__)

static void refused_(int64_t rc, const char *fn, const char *arg, int line)
{
    const char *msg = h_last_error();
    if (rc >= 0)
        FAILF("line %d: %s with %s NULL was accepted (returned %lld)", line, fn, arg, (long long)rc);
    if (rc != GOAL_INVALID_VERTEX && rc != GOAL_ERR_INVALID_ARGUMENT)
        FAILF("line %d: %s with %s NULL returned %lld, not GOAL_ERR_INVALID_ARGUMENT", line, fn, arg, (long long)rc);
    if (!h_contains_ci(msg, fn) || !h_contains_ci(msg, arg) || !h_contains_ci(msg, "NULL"))
        FAILF("line %d: GOAL_LastError() \"%s\" does not name %s and %s NULL", line, msg, fn, arg);
    if (h_rank == 0)
        printf("  refused: %s\n", msg);
}

static void refused_sched_(GOAL_Schedule s, const char *fn, const char *arg, int line)
{
    if (s != NULL) {
        GOAL_FreeSchedule(s);
        FAILF("line %d: %s with %s NULL returned a schedule", line, fn, arg);
    }
    refused_(GOAL_ERR_INVALID_ARGUMENT, fn, arg, line);
}

static void point_to_point(void)
{
    GOAL_Graph g = h_graph();
    REFUSED_V(GOAL_Send(g, NULL, 8, 0, 0, GOAL_USERSPACE), "GOAL_Send", "buf");
    REFUSED_V(GOAL_Recv(g, NULL, 8, 0, 0, GOAL_USERSPACE), "GOAL_Recv", "buf");
    void *o[2] = {buf, NULL};
    int l[2] = {4, 4};
    REFUSED_V(GOAL_SendVec(g, o, l, 2, 0, 0, GOAL_USERSPACE), "GOAL_SendVec", "offsets[1]");
    REFUSED_V(GOAL_RecvVec(g, o, l, 2, 0, 0, GOAL_USERSPACE), "GOAL_RecvVec", "offsets[1]");
    REFUSED_V(GOAL_LocalOp(g, NULL, buf, buf2, GOAL_ADD, GOAL_UINT, 8, 4, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE),
              "GOAL_LocalOp", "b1");
    REFUSED_V(GOAL_LocalOp(g, buf, NULL, buf2, GOAL_ADD, GOAL_UINT, 8, 4, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE),
              "GOAL_LocalOp", "b2");
    REFUSED_V(GOAL_LocalOp(g, buf, buf, NULL, GOAL_ADD, GOAL_UINT, 8, 4, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE),
              "GOAL_LocalOp", "bres");
    void *a[1] = {buf}, *b[1] = {NULL}, *r[1] = {buf2};
    int la[1] = {32};
    REFUSED_V(GOAL_LocalOpVec(g, a, la, 1, b, la, 1, r, la, 1, GOAL_UINT, 8, GOAL_ADD, GOAL_USERSPACE, GOAL_USERSPACE,
                              GOAL_USERSPACE),
              "GOAL_LocalOpVec", "buf2[0]");

    /* Still accepted: the graph is fine after all those refusals. */
    int me = h_rank;
    uint64_t x[4] = {1, 2, 3, 4}, y[4] = {0};
    double t = 0;
    CHECK_OK(GOAL_AllocateScratchpad(g, 64));
    GOAL_Vertex s0 = V(GOAL_Send(g, NULL, 0, me, 1, GOAL_USERSPACE));
    GOAL_Vertex r0 = V(GOAL_Recv(g, NULL, 0, me, 1, GOAL_USERSPACE));
    GOAL_Vertex c = V(GOAL_LocalOp(g, x, NULL, SP(0), GOAL_COPY, GOAL_UINT, 64, 4, GOAL_USERSPACE, GOAL_USERSPACE,
                                   GOAL_SCRATCHPAD));
    GOAL_Vertex ss = V(GOAL_Send(g, NULL, 32, me, 2, GOAL_SCRATCHPAD));
    GOAL_Vertex rr = V(GOAL_Recv(g, y, 32, me, 2, GOAL_USERSPACE));
    GOAL_Vertex w = V(GOAL_LocalOp(g, NULL, NULL, &t, GOAL_WTIME, GOAL_FLOAT, 64, 1, GOAL_USERSPACE, GOAL_USERSPACE,
                                   GOAL_USERSPACE));
    REQ(g, c, ss);
    (void)s0, (void)r0, (void)rr, (void)w;
    GOAL_Schedule s = h_compile(g);
    h_run(s);
    h_free_schedule(s);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(y[i], x[i]);
    CHECKM(t > 0, "WTIME wrote %g", t);
}

static void collectives(void)
{
    int n = h_size, me = h_rank, root = n - 1;
    size_t per = 8;
    char *s = calloc(n, per), *r = calloc(n, per);
    CHECK(s && r);
    int other = me != root; /* a rank that is not the root (none with 1 rank) */

    REFUSED_S(GOAL_Bcast_init(NULL, 8, 0, GOAL_ALG_AUTO), "GOAL_Bcast_init", "buf");
    REFUSED_S(GOAL_Gather_init(NULL, per, r, root, GOAL_ALG_AUTO), "GOAL_Gather_init", "sbuf");
    if (!other)
        REFUSED_S(GOAL_Gather_init(s, per, NULL, root, GOAL_ALG_AUTO), "GOAL_Gather_init", "rbuf");
    if (!other)
        REFUSED_S(GOAL_Scatter_init(NULL, per, r, root, GOAL_ALG_AUTO), "GOAL_Scatter_init", "sbuf");
    REFUSED_S(GOAL_Scatter_init(s, per, NULL, root, GOAL_ALG_AUTO), "GOAL_Scatter_init", "rbuf");
    REFUSED_S(GOAL_Allgather_init(NULL, per, r, GOAL_ALG_AUTO), "GOAL_Allgather_init", "sbuf");
    REFUSED_S(GOAL_Allgather_init(s, per, NULL, GOAL_ALG_AUTO), "GOAL_Allgather_init", "rbuf");
    REFUSED_S(GOAL_Alltoall_init(NULL, per, r, GOAL_ALG_AUTO), "GOAL_Alltoall_init", "sbuf");
    REFUSED_S(GOAL_Alltoall_init(s, per, NULL, GOAL_ALG_AUTO), "GOAL_Alltoall_init", "rbuf");
    REFUSED_S(GOAL_Reduce_init(NULL, r, 1, GOAL_UINT, 64, GOAL_ADD, root, GOAL_ALG_AUTO), "GOAL_Reduce_init", "sbuf");
    if (!other)
        REFUSED_S(GOAL_Reduce_init(s, NULL, 1, GOAL_UINT, 64, GOAL_ADD, root, GOAL_ALG_AUTO), "GOAL_Reduce_init",
                  "rbuf");
    REFUSED_S(GOAL_Allreduce_init(NULL, r, 1, GOAL_UINT, 64, GOAL_ADD, GOAL_ALG_AUTO), "GOAL_Allreduce_init", "sbuf");
    REFUSED_S(GOAL_Allreduce_init(s, NULL, 1, GOAL_UINT, 64, GOAL_ADD, GOAL_ALG_AUTO), "GOAL_Allreduce_init", "rbuf");
    REFUSED_S(GOAL_Reduce_scatter_block_init(NULL, r, 1, GOAL_UINT, 64, GOAL_ADD, GOAL_ALG_AUTO),
              "GOAL_Reduce_scatter_block_init", "sbuf");
    REFUSED_S(GOAL_Reduce_scatter_block_init(s, NULL, 1, GOAL_UINT, 64, GOAL_ADD, GOAL_ALG_AUTO),
              "GOAL_Reduce_scatter_block_init", "rbuf");

    GOAL_Graph g = h_graph();
    GOAL_Vertex e;
    REFUSED_V(GOAL_Bcast_append(g, NULL, 8, 0, GOAL_ALG_AUTO, &e), "GOAL_Bcast_append", "buf");
    REFUSED_V(GOAL_Gather_append(g, NULL, per, r, root, GOAL_ALG_AUTO, &e), "GOAL_Gather_append", "sbuf");
    REFUSED_V(GOAL_Scatter_append(g, s, per, NULL, root, GOAL_ALG_AUTO, &e), "GOAL_Scatter_append", "rbuf");
    REFUSED_V(GOAL_Allgather_append(g, s, per, NULL, GOAL_ALG_AUTO, &e), "GOAL_Allgather_append", "rbuf");
    REFUSED_V(GOAL_Alltoall_append(g, NULL, per, r, GOAL_ALG_AUTO, &e), "GOAL_Alltoall_append", "sbuf");
    REFUSED_V(GOAL_Reduce_append(g, NULL, r, 1, GOAL_UINT, 64, GOAL_ADD, root, GOAL_ALG_AUTO, &e),
              "GOAL_Reduce_append", "sbuf");
    REFUSED_V(GOAL_Allreduce_append(g, s, NULL, 1, GOAL_UINT, 64, GOAL_ADD, GOAL_ALG_AUTO, &e),
              "GOAL_Allreduce_append", "rbuf");
    REFUSED_V(GOAL_Reduce_scatter_block_append(g, NULL, r, 1, GOAL_UINT, 64, GOAL_ADD, GOAL_ALG_AUTO, &e),
              "GOAL_Reduce_scatter_block_append", "sbuf");

    /* Root-only buffers may be NULL elsewhere; the results at the root hold. */
    uint64_t mine = 100 + me;
    memcpy(s, &mine, 8);
    V(GOAL_Gather_append(g, s, per, other ? NULL : r, root, GOAL_ALG_AUTO, NULL));
    GOAL_Schedule sc = h_compile(g);
    h_run(sc);
    h_free_schedule(sc);
    if (!other)
        for (int i = 0; i < n; i++) {
            uint64_t v;
            memcpy(&v, r + i * per, 8);
            CHECK_EQ(v, 100 + i);
        }

    uint64_t sum = 0;
    sc = GOAL_Reduce_init(&mine, other ? NULL : &sum, 1, GOAL_UINT, 64, GOAL_ADD, root, GOAL_ALG_AUTO);
    CHECKM(sc != NULL, "reduce with rbuf NULL on a non-root was refused");
    h_run(sc);
    h_free_schedule(sc);
    if (!other)
        CHECK_EQ(sum, (uint64_t)n * 100 + (uint64_t)n * (n - 1) / 2);

    for (int i = 0; i < n; i++) {
        uint64_t v = 200 + i;
        memcpy(s + i * per, &v, 8);
    }
    uint64_t got = 0;
    sc = GOAL_Scatter_init(other ? NULL : s, per, &got, root, GOAL_ALG_AUTO);
    CHECKM(sc != NULL, "scatter with sbuf NULL on a non-root was refused");
    h_run(sc);
    h_free_schedule(sc);
    CHECK_EQ(got, 200 + me);

    sc = GOAL_Bcast_init(NULL, 0, 0, GOAL_ALG_AUTO);
    CHECKM(sc != NULL, "a broadcast of 0 bytes at NULL was refused");
    h_run(sc);
    h_free_schedule(sc);
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    point_to_point();
    collectives();
    return h_finish();
}
