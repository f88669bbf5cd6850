/*
 * t_selfsend: a rank sends to itself.
 *
 * Asserts, on every rank at once, for 0 B, 1 B, 7 B, 4 KiB, 64 KiB + 3 B and
 * 4 MiB messages, with malloc'ed and GOAL_Alloc'ed buffers, at unaligned
 * addresses too: the receive buffer holds exactly the sent bytes, nothing
 * past it is written, the send buffer is unchanged; whether the receive was
 * added to the graph before or after the send; for several self-messages of
 * different tags in one execution (each lands in its own buffer); for
 * scratchpad-to-userspace and userspace-to-scratchpad self-messages; and
 * across three runs of each schedule with new data.
 */
// modes: 1 2
#include "helpers.h"

#define GUARD 32

static const int sizes[] = {0, 1, 7, 4096, 65536 + 3, 4 << 20};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))

static void plain(int kind, int recv_first, size_t misalign)
{
    for (int i = 0; i < NSIZES; i++) {
        int n = sizes[i];
        char *sm = h_alloc(kind, (size_t)n + 8), *rm = h_alloc(kind, (size_t)n + 8 + GUARD);
        char *sbuf = sm + misalign, *rbuf = rm + misalign;
        GOAL_Graph g = h_graph();
        if (recv_first)
            V(GOAL_Recv(g, rbuf, n, h_rank, 3, GOAL_USERSPACE));
        V(GOAL_Send(g, sbuf, n, h_rank, 3, GOAL_USERSPACE));
        if (!recv_first)
            V(GOAL_Recv(g, rbuf, n, h_rank, 3, GOAL_USERSPACE));
        GOAL_Schedule s = h_compile(g);
        for (int run = 0; run < 3; run++) {
            uint64_t seed = h_seed((uint64_t)n, (uint64_t)run, (uint64_t)h_rank, (uint64_t)kind);
            h_fill(sbuf, (size_t)n, seed);
            memset(rbuf, 0xA5, (size_t)n + GUARD);
            h_run(s);
            CHECK_PATTERN(rbuf, (size_t)n, seed, "self-send of %d B (%s, %s first, +%zu, run %d)", n,
                          h_kind_name(kind), recv_first ? "recv" : "send", misalign, run);
            CHECK_BYTES(rbuf + n, GUARD, 0xA5, "past a self-received %d B message", n);
            CHECK_PATTERN(sbuf, (size_t)n, seed, "send buffer after a self-send of %d B", n);
        }
        h_free_schedule(s);
        h_free(kind, sm);
        h_free(kind, rm);
    }
}

/* All sizes at once, one tag each, in one execution. */
static void many_tags(int kind)
{
    char *sb[NSIZES], *rb[NSIZES];
    GOAL_Graph g = h_graph();
    for (int i = 0; i < NSIZES; i++) {
        sb[i] = h_alloc(kind, (size_t)sizes[i]);
        rb[i] = h_alloc(kind, (size_t)sizes[i] + GUARD);
        /* Receives for odd i first, sends for even i first. */
        if (i % 2)
            V(GOAL_Recv(g, rb[i], sizes[i], h_rank, 100 + i, GOAL_USERSPACE));
        V(GOAL_Send(g, sb[i], sizes[i], h_rank, 100 + i, GOAL_USERSPACE));
    }
    for (int i = NSIZES - 1; i >= 0; i--)
        if (i % 2 == 0)
            V(GOAL_Recv(g, rb[i], sizes[i], h_rank, 100 + i, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < 2; run++) {
        for (int i = 0; i < NSIZES; i++) {
            h_fill(sb[i], (size_t)sizes[i], h_seed(7, (uint64_t)i, (uint64_t)run, (uint64_t)h_rank));
            memset(rb[i], 0xA5, (size_t)sizes[i] + GUARD);
        }
        h_run(s);
        for (int i = 0; i < NSIZES; i++) {
            CHECK_PATTERN(rb[i], (size_t)sizes[i], h_seed(7, (uint64_t)i, (uint64_t)run, (uint64_t)h_rank),
                          "tag %d self-message of %d B (%s)", 100 + i, sizes[i], h_kind_name(kind));
            CHECK_BYTES(rb[i] + sizes[i], GUARD, 0xA5, "past tag %d self-message", 100 + i);
        }
    }
    h_free_schedule(s);
    for (int i = 0; i < NSIZES; i++) {
        h_free(kind, sb[i]);
        h_free(kind, rb[i]);
    }
}

/* userspace -> scratchpad -> (self) -> scratchpad -> userspace and back. */
static void via_scratchpad(void)
{
    int n = 1 << 20;
    char *in = malloc((size_t)n), *out = malloc((size_t)n + GUARD), *out2 = malloc((size_t)n + GUARD);
    CHECK(in && out && out2);
    GOAL_Graph g = h_graph();
    CHECK_OK(GOAL_AllocateScratchpad(g, 2 * (size_t)n));
    /* user in -> self -> scratchpad [0, n) */
    GOAL_Vertex s1 = V(GOAL_Send(g, in, n, h_rank, 9, GOAL_USERSPACE));
    GOAL_Vertex r1 = V(GOAL_Recv(g, SP(0), n, h_rank, 9, GOAL_SCRATCHPAD));
    /* scratchpad [0, n) -> self -> user out */
    GOAL_Vertex s2 = V(GOAL_Send(g, SP(0), n, h_rank, 10, GOAL_SCRATCHPAD));
    GOAL_Vertex r2 = V(GOAL_Recv(g, out, n, h_rank, 10, GOAL_USERSPACE));
    /* scratchpad [0, n) -> self -> scratchpad [n, 2n) -> COPY -> user out2 */
    GOAL_Vertex s3 = V(GOAL_Send(g, SP(0), n, h_rank, 11, GOAL_SCRATCHPAD));
    GOAL_Vertex r3 = V(GOAL_Recv(g, SP(n), n, h_rank, 11, GOAL_SCRATCHPAD));
    GOAL_Vertex cp = V(GOAL_LocalOp(g, SP(n), NULL, out2, GOAL_COPY, GOAL_UINT, 64, n / 8,
                                    GOAL_SCRATCHPAD, GOAL_USERSPACE, GOAL_USERSPACE));
    REQ(g, r1, s2);
    REQ(g, r1, s3);
    REQ(g, r3, cp);
    (void)s1;
    (void)r2;
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < 3; run++) {
        uint64_t seed = h_seed(8, (uint64_t)run, (uint64_t)h_rank, 0);
        h_fill(in, (size_t)n, seed);
        memset(out, 0xA5, (size_t)n + GUARD);
        memset(out2, 0xA5, (size_t)n + GUARD);
        h_run(s);
        CHECK_PATTERN(out, (size_t)n, seed, "user -> scratchpad -> user self-messages, run %d", run);
        CHECK_PATTERN(out2, (size_t)n, seed, "scratchpad -> scratchpad self-message, run %d", run);
        CHECK_BYTES(out + n, GUARD, 0xA5, "past out");
        CHECK_BYTES(out2 + n, GUARD, 0xA5, "past out2");
    }
    h_free_schedule(s);
    free(in);
    free(out);
    free(out2);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    for (int kind = H_MALLOC; kind <= H_GOAL_ALLOC; kind++) {
        plain(kind, 0, 0);
        plain(kind, 1, 0);
        plain(kind, 0, 1);
        many_tags(kind);
    }
    via_scratchpad();
    if (h_rank == 0)
        printf("t_selfsend: self-messages from 0 B to 4 MiB checked\n");
    return h_finish();
}
