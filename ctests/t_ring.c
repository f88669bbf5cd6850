/*
 * t_ring: ring patterns.
 *
 * Asserts:
 *   - neighbour exchange: every rank sends a block to rank + 1 and one to
 *     rank - 1 (two tags) and receives both of its neighbours' blocks intact,
 *     for 100 B, 64 KiB and 2 MiB, 20 runs with new data each;
 *   - bystanders: rank 0 sends to the last rank while every other rank
 *     compiles and runs an empty graph; the message arrives intact, 5 runs;
 *   - token ring: rank 0 starts a token (its value 1) that travels once
 *     around the ring; each rank adds its own value (rank + 1) with LocalOp
 *     ADD in its scratchpad, after the token arrived, and passes it on; rank 0
 *     gets back N(N+1)/2 - checks that dependencies chain across all ranks -
 *     and every rank records the partial sum it saw, which must be
 *     r(r+1)/2 for rank r > 0; 50 runs, with a per-run offset added by rank 0
 *     so stale tokens would show.
 */
// memcheck: 2
// modes: 2 3
#include "helpers.h"

static int next_rank, prev_rank;

static void neighbour_exchange(int n)
{
    char *to_next = malloc((size_t)n), *to_prev = malloc((size_t)n);
    char *from_prev = malloc((size_t)n), *from_next = malloc((size_t)n);
    CHECK(to_next && to_prev && from_prev && from_next);
    GOAL_Graph g = h_graph();
    V(GOAL_Send(g, to_next, n, next_rank, 1, GOAL_USERSPACE));
    V(GOAL_Send(g, to_prev, n, prev_rank, 2, GOAL_USERSPACE));
    V(GOAL_Recv(g, from_prev, n, prev_rank, 1, GOAL_USERSPACE));
    V(GOAL_Recv(g, from_next, n, next_rank, 2, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < 20; run++) {
        h_fill(to_next, (size_t)n, h_seed(71, (uint64_t)run, (uint64_t)h_rank, 1));
        h_fill(to_prev, (size_t)n, h_seed(71, (uint64_t)run, (uint64_t)h_rank, 2));
        memset(from_prev, 0, (size_t)n);
        memset(from_next, 0, (size_t)n);
        h_run(s);
        CHECK_PATTERN(from_prev, (size_t)n, h_seed(71, (uint64_t)run, (uint64_t)prev_rank, 1),
                      "%d B block from rank %d (previous), run %d", n, prev_rank, run);
        CHECK_PATTERN(from_next, (size_t)n, h_seed(71, (uint64_t)run, (uint64_t)next_rank, 2),
                      "%d B block from rank %d (next), run %d", n, next_rank, run);
    }
    h_free_schedule(s);
    free(to_next);
    free(to_prev);
    free(from_prev);
    free(from_next);
}

/* Only the first and the last rank talk; everyone else compiles and runs an
 * empty graph (the spec's rule for ranks with no part in a schedule). */
static void bystanders(void)
{
    int last = h_size - 1;
    char sbuf[512], rbuf[512];
    GOAL_Graph g = h_graph();
    if (h_rank == 0)
        V(GOAL_Send(g, sbuf, sizeof sbuf, last, 3, GOAL_USERSPACE));
    if (h_rank == last)
        V(GOAL_Recv(g, rbuf, sizeof rbuf, 0, 3, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < 5; run++) {
        h_fill(sbuf, sizeof sbuf, h_seed(72, (uint64_t)run, 0, 0));
        memset(rbuf, 0, sizeof rbuf);
        h_run(s);
        if (h_rank == last)
            CHECK_PATTERN(rbuf, sizeof rbuf, h_seed(72, (uint64_t)run, 0, 0),
                          "run %d: message from rank 0 past the bystanders", run);
    }
    h_free_schedule(s);
}

static void token_ring(void)
{
    int64_t mine = h_rank + 1, result = -1, partial = -1, start = 0;
    GOAL_Graph g = h_graph();
    CHECK_OK(GOAL_AllocateScratchpad(g, 16));
    if (h_rank == 0) {
        /* token = start + 1, send, wait for it to come back */
        GOAL_Vertex add = V(GOAL_LocalOp(g, &start, &mine, SP(0), GOAL_ADD, GOAL_SINT, 64, 1,
                                         GOAL_USERSPACE, GOAL_USERSPACE, GOAL_SCRATCHPAD));
        GOAL_Vertex sd = V(GOAL_Send(g, SP(0), 8, next_rank, 7, GOAL_SCRATCHPAD));
        GOAL_Vertex rv = V(GOAL_Recv(g, &result, 8, prev_rank, 7, GOAL_USERSPACE));
        REQ(g, add, sd);
        (void)rv; /* posted at once: the token arrives when it has been round */
    } else {
        GOAL_Vertex rv = V(GOAL_Recv(g, SP(0), 8, prev_rank, 7, GOAL_SCRATCHPAD));
        GOAL_Vertex add = V(GOAL_LocalOp(g, SP(0), &mine, SP(8), GOAL_ADD, GOAL_SINT, 64, 1,
                                         GOAL_SCRATCHPAD, GOAL_USERSPACE, GOAL_SCRATCHPAD));
        GOAL_Vertex sd = V(GOAL_Send(g, SP(8), 8, next_rank, 7, GOAL_SCRATCHPAD));
        GOAL_Vertex cp = V(GOAL_LocalOp(g, SP(8), NULL, &partial, GOAL_COPY, GOAL_SINT, 64, 1,
                                        GOAL_SCRATCHPAD, GOAL_USERSPACE, GOAL_USERSPACE));
        REQ(g, rv, add);
        REQ(g, add, sd);
        REQ(g, add, cp);
    }
    GOAL_Schedule s = h_compile(g);
    int64_t nn = h_size;
    for (int run = 0; run < 50; run++) {
        start = (int64_t)run * 1000;
        result = partial = -1;
        h_run(s);
        if (h_rank == 0)
            CHECKM(result == start + nn * (nn + 1) / 2, "run %d: the token came back as %" PRId64
                   ", expected %" PRId64, run, result, start + nn * (nn + 1) / 2);
        else
            CHECKM(partial == start + (int64_t)(h_rank + 1) * (h_rank + 2) / 2,
                   "run %d: rank %d passed on %" PRId64 ", expected %" PRId64, run, h_rank, partial,
                   start + (int64_t)(h_rank + 1) * (h_rank + 2) / 2);
    }
    h_free_schedule(s);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    next_rank = (h_rank + 1) % h_size;
    prev_rank = (h_rank + h_size - 1) % h_size;
    neighbour_exchange(100);
    neighbour_exchange(64 * 1024);
    neighbour_exchange(2 << 20);
    bystanders();
    token_ring();
    if (h_rank == 0)
        printf("t_ring: neighbour exchange and token ring checked\n");
    return h_finish();
}
