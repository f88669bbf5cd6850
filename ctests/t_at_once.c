/*
 * t_at_once: executions that finish within their Run (only small sends, one
 * per peer, and small copies between user buffers, as on a gather's or a
 * reduce's leaf and a small scatter's root) behave like any other.
 *
 * Asserts:
 *   - a leaf's stream: rank 1 runs a one-send schedule of 8 B 8000 times
 *     without waiting (the handles kept; 48 bytes each in a 256 KiB ring),
 *     while rank 0 sleeps 200 ms first: the ring fills and later Runs queue
 *     their message (the buffer keeps its value: a queued send reads it when
 *     it goes); rank 0 then receives all 8000 with the value sent; every
 *     handle Waits to success, and GOAL_Test of the first, finished within
 *     its Run, returns 1 at once;
 *   - a root's fan-out: rank 0 sends a different 24-byte block to every other
 *     rank and copies its own block (one schedule, run 200 times with new
 *     data, Wait after each); every rank gets its block, rank 0's copy is
 *     right and the bytes after it keep their sentinel;
 *   - a handle finished within Run and freed by GOAL_Test is not touched
 *     again: GOAL_FreeSchedule right after succeeds.
 */
// memcheck: 2
// modes: 2 3
#include "helpers.h"

#define STREAM 8000
#define BLOCK 24
#define FANOUT_RUNS 200

static void leaf_stream(void)
{
    if (h_size < 2) return;
    static uint64_t value;
    /* Every rank compiles (schedules match by compile order); ranks > 1 an empty graph. */
    GOAL_Graph g = h_graph();
    if (h_rank == 1) {
        V(GOAL_Send(g, &value, sizeof value, 0, 7, GOAL_USERSPACE));
    } else if (h_rank == 0) {
        V(GOAL_Recv(g, &value, sizeof value, 1, 7, GOAL_USERSPACE));
    }
    GOAL_Schedule s = h_compile(g);
    if (h_rank > 1) {
        CHECK_OK(GOAL_FreeSchedule(s));
        return;
    }
    if (h_rank == 1) {
        GOAL_Handle *hs = malloc(sizeof(GOAL_Handle) * STREAM);
        CHECK(hs);
        value = 0xa11ce00000000000ull;
        for (int i = 0; i < STREAM; i++) {
            hs[i] = GOAL_Run(s);
            CHECKM(hs[i] != NULL, "run %d", i);
        }
        /* The first Run found its ring empty: it finished within. */
        CHECK_EQ(GOAL_Test(hs[0]), 1);
        for (int i = 1; i < STREAM; i++) CHECK_OK(GOAL_Wait(hs[i]));
        free(hs);
    } else {
        h_sleep_ms(200);
        for (int i = 0; i < STREAM; i++) {
            value = 0;
            GOAL_Handle h = GOAL_Run(s);
            CHECK(h != NULL);
            CHECK_OK(GOAL_Wait(h));
            CHECKM(value == 0xa11ce00000000000ull, "message %d: got %#llx", i, (unsigned long long)value);
        }
    }
    CHECK_OK(GOAL_FreeSchedule(s));
}

static void root_fanout(void)
{
    int n = h_size;
    char *sbuf = malloc((size_t)n * BLOCK), *own = malloc(BLOCK + 8), *rbuf = malloc(BLOCK);
    CHECK(sbuf && own && rbuf);
    GOAL_Graph g = h_graph();
    if (h_rank == 0) {
        for (int p = 1; p < n; p++) V(GOAL_Send(g, sbuf + (size_t)p * BLOCK, BLOCK, p, 3, GOAL_USERSPACE));
        V(GOAL_LocalOp(g, sbuf, NULL, own, GOAL_COPY, GOAL_UINT, 8, BLOCK, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    } else {
        V(GOAL_Recv(g, rbuf, BLOCK, 0, 3, GOAL_USERSPACE));
    }
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < FANOUT_RUNS; run++) {
        if (h_rank == 0) {
            for (int p = 0; p < n; p++)
                for (int k = 0; k < BLOCK; k++) sbuf[(size_t)p * BLOCK + k] = (char)(run * 31 + p * 7 + k);
            memset(own, 0x5a, BLOCK + 8);
        } else {
            memset(rbuf, 0, BLOCK);
        }
        GOAL_Handle h = GOAL_Run(s);
        CHECK(h != NULL);
        int rc = GOAL_Wait(h);
        CHECKM(rc == GOAL_SUCCESS, "run %d: GOAL_Wait returned %d", run, rc);
        if (h_rank == 0) {
            for (int k = 0; k < BLOCK; k++) CHECKM(own[k] == (char)(run * 31 + k), "run %d: own block byte %d", run, k);
            for (int k = BLOCK; k < BLOCK + 8; k++) CHECKM(own[k] == 0x5a, "run %d: byte %d after the own block written", run, k);
        } else {
            for (int k = 0; k < BLOCK; k++)
                CHECKM(rbuf[k] == (char)(run * 31 + h_rank * 7 + k), "run %d: byte %d of rank %d's block", run, k, h_rank);
        }
    }
    /* Test releases a finished handle; the schedule is free to go right after. */
    GOAL_Handle h = GOAL_Run(s);
    CHECK(h != NULL);
    int t;
    while ((t = GOAL_Test(h)) == 0) {}
    CHECK_EQ(t, 1);
    CHECK_OK(GOAL_FreeSchedule(s));
    free(sbuf);
    free(own);
    free(rbuf);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    leaf_stream();
    root_fanout();
    return h_finish();
}
