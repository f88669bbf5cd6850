/*
 * t_early: messages that arrive before their receive is started are kept.
 * Ring: every rank sends to the next rank and receives from the previous one
 * (at N=1, itself).
 *
 * Asserts, for 1 B, 64 KiB and 4 MiB messages, with malloc'ed and
 * GOAL_Alloc'ed buffers:
 *   - late receive inside the schedule: the receive depends on a chain of 40
 *     dependent COPY operations of 256 KiB each, so the message is there long
 *     before the receive starts; the data is intact and the chain's result
 *     is right too;
 *   - late receiver: odd ranks sleep 150 ms before GOAL_Run while even ranks
 *     have already sent (and even ranks sleep in the next round); data intact;
 *   - messages for a schedule the receiver has not started yet do not match
 *     another schedule: even ranks run schedule B (tag 0, "B" data) first
 *     and schedule A (tag 0, "A" data) second; odd ranks, 100 ms later, run
 *     A first, then B; A's receive gets A's data and B's gets B's, although
 *     B's message arrived first with the same source and tag.
 */
// memcheck: 2
// modes: 2 3
#include "helpers.h"

#define CHAIN 40
#define CHUNK (256 * 1024)

static int next_rank, prev_rank;
static const int sizes[] = {1, 64 * 1024, 4 << 20};

static void late_in_schedule(int kind, int n)
{
    char *sbuf = h_alloc(kind, (size_t)n), *rbuf = h_alloc(kind, (size_t)n);
    char *ca = malloc(CHUNK), *cb = malloc(CHUNK);
    CHECK(ca && cb);
    GOAL_Graph g = h_graph();
    V(GOAL_Send(g, sbuf, n, next_rank, 0, GOAL_USERSPACE));
    GOAL_Vertex prev = GOAL_INVALID_VERTEX;
    for (int i = 0; i < CHAIN; i++) { /* ping-pong ca -> cb -> ca ... */
        GOAL_Vertex c = V(GOAL_LocalOp(g, i % 2 ? cb : ca, NULL, i % 2 ? ca : cb, GOAL_COPY,
                                       GOAL_UINT, 64, CHUNK / 8, GOAL_USERSPACE, GOAL_USERSPACE,
                                       GOAL_USERSPACE));
        if (prev != GOAL_INVALID_VERTEX)
            REQ(g, prev, c);
        prev = c;
    }
    GOAL_Vertex rv = V(GOAL_Recv(g, rbuf, n, prev_rank, 0, GOAL_USERSPACE));
    REQ(g, prev, rv);
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < 2; run++) {
        h_fill(sbuf, (size_t)n, h_seed(51, (uint64_t)n, (uint64_t)run, (uint64_t)h_rank));
        h_fill(ca, CHUNK, h_seed(52, (uint64_t)run, 0, 0));
        memset(cb, 0, CHUNK);
        memset(rbuf, 0xA5, (size_t)n);
        h_run(s);
        CHECK_PATTERN(rbuf, (size_t)n, h_seed(51, (uint64_t)n, (uint64_t)run, (uint64_t)prev_rank),
                      "%d B message received after a chain of %d COPYs (%s)", n, CHAIN, h_kind_name(kind));
        /* CHAIN is even: the last COPY wrote ca from cb; both hold the data. */
        CHECK_PATTERN(ca, CHUNK, h_seed(52, (uint64_t)run, 0, 0), "result of the COPY chain (ca)");
        CHECK_PATTERN(cb, CHUNK, h_seed(52, (uint64_t)run, 0, 0), "result of the COPY chain (cb)");
    }
    h_free_schedule(s);
    h_free(kind, sbuf);
    h_free(kind, rbuf);
    free(ca);
    free(cb);
}

static void late_receiver(int kind, int n)
{
    char *sbuf = h_alloc(kind, (size_t)n), *rbuf = h_alloc(kind, (size_t)n);
    GOAL_Graph g = h_graph();
    V(GOAL_Send(g, sbuf, n, next_rank, 0, GOAL_USERSPACE));
    V(GOAL_Recv(g, rbuf, n, prev_rank, 0, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < 2; run++) {
        h_fill(sbuf, (size_t)n, h_seed(53, (uint64_t)n, (uint64_t)run, (uint64_t)h_rank));
        memset(rbuf, 0xA5, (size_t)n);
        if (h_rank % 2 == run % 2)
            h_sleep_ms(150);
        h_run(s);
        CHECK_PATTERN(rbuf, (size_t)n, h_seed(53, (uint64_t)n, (uint64_t)run, (uint64_t)prev_rank),
                      "%d B message to a late receiver (%s, run %d)", n, h_kind_name(kind), run);
    }
    h_free_schedule(s);
    h_free(kind, sbuf);
    h_free(kind, rbuf);
}

static void other_schedule_first(int n)
{
    char *sa = malloc((size_t)n), *sb = malloc((size_t)n), *ra = malloc((size_t)n), *rb = malloc((size_t)n);
    CHECK(sa && sb && ra && rb);
    /* Compiled in the same order everywhere: A then B.  A sends and receives
     * sa/ra, B sb/rb, same tag, same peers. */
    GOAL_Graph g = h_graph();
    V(GOAL_Send(g, sa, n, next_rank, 0, GOAL_USERSPACE));
    V(GOAL_Recv(g, ra, n, prev_rank, 0, GOAL_USERSPACE));
    GOAL_Schedule A = h_compile(g);
    g = h_graph();
    V(GOAL_Send(g, sb, n, next_rank, 0, GOAL_USERSPACE));
    V(GOAL_Recv(g, rb, n, prev_rank, 0, GOAL_USERSPACE));
    GOAL_Schedule B = h_compile(g);
    h_fill(sa, (size_t)n, h_seed(54, 'A', (uint64_t)n, (uint64_t)h_rank));
    h_fill(sb, (size_t)n, h_seed(54, 'B', (uint64_t)n, (uint64_t)h_rank));
    memset(ra, 0xA5, (size_t)n);
    memset(rb, 0xA5, (size_t)n);
    /* Even ranks start B, then A; odd ranks, later, start A, then B.  So an
     * odd rank starts A while B's message from its (even) predecessor, with
     * the same source and tag, has long arrived. */
    GOAL_Handle ha, hb;
    if (h_rank % 2 == 0) {
        hb = GOAL_Run(B);
        CHECK(hb != NULL);
        CHECK(GOAL_Progress() >= 0);
        h_sleep_ms(20);
        ha = GOAL_Run(A);
        CHECK(ha != NULL);
    } else {
        h_sleep_ms(100);
        ha = GOAL_Run(A);
        CHECK(ha != NULL);
        CHECK(GOAL_Progress() >= 0);
        hb = GOAL_Run(B);
        CHECK(hb != NULL);
    }
    CHECK_OK(GOAL_Wait(ha));
    CHECK_OK(GOAL_Wait(hb));
    CHECK_PATTERN(ra, (size_t)n, h_seed(54, 'A', (uint64_t)n, (uint64_t)prev_rank),
                  "schedule A's receive (%d B) took a message that was not A's", n);
    CHECK_PATTERN(rb, (size_t)n, h_seed(54, 'B', (uint64_t)n, (uint64_t)prev_rank),
                  "schedule B's receive (%d B) took a message that was not B's", n);
    h_free_schedule(A);
    h_free_schedule(B);
    free(sa);
    free(sb);
    free(ra);
    free(rb);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    next_rank = (h_rank + 1) % h_size;
    prev_rank = (h_rank + h_size - 1) % h_size;
    for (int kind = H_MALLOC; kind <= H_GOAL_ALLOC; kind++)
        for (int i = 0; i < 3; i++) {
            late_in_schedule(kind, sizes[i]);
            late_receiver(kind, sizes[i]);
        }
    for (int i = 0; i < 3; i++)
        other_schedule_first(sizes[i]);
    if (h_rank == 0)
        printf("t_early: early messages kept until their receives start\n");
    return h_finish();
}
