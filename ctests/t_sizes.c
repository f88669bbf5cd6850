/*
 * t_sizes: messages of 0 B, 1 B, 3 B, 64 KiB, 64 KiB + 1, 1 MiB, 1 MiB + 13
 * and 16 MiB between all pairs of ranks (each rank to itself included), with
 * malloc'ed buffers (at an odd address for the odd sizes) and with
 * GOAL_Alloc'ed buffers.
 *
 * Asserts:
 *   - pairwise rounds: in round d every rank sends to rank + d and receives
 *     from rank - d; the receive buffer holds exactly the bytes that pair's
 *     pattern says (a pattern of (size, source, destination, buffer kind), so
 *     a message from the wrong peer or of the wrong size shows), nothing past
 *     it is written and the send buffer is unchanged;
 *   - all at once: one execution in which every rank sends a 64 KiB and a
 *     1 MiB + 13 message to every rank (two tags) and receives all of them.
 */
// memcheck: 2
// modes: 2 3
#include "helpers.h"

#define GUARD 64

static const int sizes[] = {0, 1, 3, 65536, 65537, 1 << 20, (1 << 20) + 13, 16 << 20};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))

static uint64_t pair_seed(int n, int src, int dst, int kind)
{
    return h_seed((uint64_t)n, (uint64_t)src, (uint64_t)dst, (uint64_t)kind + 60);
}

static void pairwise(int kind, int n)
{
    size_t mis = (kind == H_MALLOC && n % 2) ? 1 : 0;
    char *sm = h_alloc(kind, (size_t)n + 1), *rm = h_alloc(kind, (size_t)n + 1 + GUARD);
    char *sbuf = sm + mis, *rbuf = rm + mis;
    for (int d = 0; d < h_size; d++) {
        int to = (h_rank + d) % h_size, from = (h_rank - d + h_size) % h_size;
        GOAL_Graph g = h_graph();
        V(GOAL_Send(g, sbuf, n, to, 0, GOAL_USERSPACE));
        V(GOAL_Recv(g, rbuf, n, from, 0, GOAL_USERSPACE));
        GOAL_Schedule s = h_compile(g);
        h_fill(sbuf, (size_t)n, pair_seed(n, h_rank, to, kind));
        memset(rbuf, 0xA5, (size_t)n + GUARD);
        h_run(s);
        CHECK_PATTERN(rbuf, (size_t)n, pair_seed(n, from, h_rank, kind),
                      "%d B from rank %d to rank %d (%s buffers)", n, from, h_rank, h_kind_name(kind));
        CHECK_BYTES(rbuf + n, GUARD, 0xA5, "past a %d B message from rank %d", n, from);
        CHECK_PATTERN(sbuf, (size_t)n, pair_seed(n, h_rank, to, kind),
                      "send buffer after sending %d B to rank %d", n, to);
        h_free_schedule(s);
    }
    h_free(kind, sm);
    h_free(kind, rm);
}

static void all_at_once(int kind)
{
    static const int ln[2] = {65536, (1 << 20) + 13};
    size_t np = (size_t)h_size;
    char *sbuf[2], *rbuf[2];
    GOAL_Graph g = h_graph();
    for (int t = 0; t < 2; t++) {
        sbuf[t] = h_alloc(kind, (size_t)ln[t] * np);
        rbuf[t] = h_alloc(kind, ((size_t)ln[t] + GUARD) * np);
        for (int p = 0; p < h_size; p++) {
            V(GOAL_Send(g, sbuf[t] + (size_t)p * (size_t)ln[t], ln[t], p, t, GOAL_USERSPACE));
            V(GOAL_Recv(g, rbuf[t] + (size_t)p * ((size_t)ln[t] + GUARD), ln[t], p, t, GOAL_USERSPACE));
        }
    }
    GOAL_Schedule s = h_compile(g);
    for (int t = 0; t < 2; t++) {
        for (int p = 0; p < h_size; p++)
            h_fill(sbuf[t] + (size_t)p * (size_t)ln[t], (size_t)ln[t], pair_seed(ln[t], h_rank, p, kind));
        memset(rbuf[t], 0xA5, ((size_t)ln[t] + GUARD) * np);
    }
    h_run(s);
    for (int t = 0; t < 2; t++)
        for (int p = 0; p < h_size; p++) {
            char *r = rbuf[t] + (size_t)p * ((size_t)ln[t] + GUARD);
            CHECK_PATTERN(r, (size_t)ln[t], pair_seed(ln[t], p, h_rank, kind),
                          "all-at-once: %d B from rank %d (%s)", ln[t], p, h_kind_name(kind));
            CHECK_BYTES(r + ln[t], GUARD, 0xA5, "past the all-at-once message from rank %d", p);
        }
    h_free_schedule(s);
    for (int t = 0; t < 2; t++) {
        h_free(kind, sbuf[t]);
        h_free(kind, rbuf[t]);
    }
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    for (int kind = H_MALLOC; kind <= H_GOAL_ALLOC; kind++) {
        for (int i = 0; i < NSIZES; i++)
            pairwise(kind, sizes[i]);
        all_at_once(kind);
    }
    if (h_rank == 0)
        printf("t_sizes: 0 B .. 16 MiB between all pairs checked\n");
    return h_finish();
}
