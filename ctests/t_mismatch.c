/*
 * t_mismatch: ranks whose schedules do not pair up get GOAL_ERR_MISMATCH, with
 * a message naming the schedule, the sending rank and the tag, instead of a
 * hang or a silently wrong result; the senders' executions still end, and
 * goal keeps working afterwards.
 *
 * Ranks 0 and 1 take part; the others compile the same schedules (empty where
 * they have no part), since schedules match across ranks by compile order.
 *
 * Asserts:
 *   - tag mismatch, the message first: rank 0 sends 64 B with tag 5, rank 1's
 *     schedule receives from rank 0 with tag 6 and starts 200 ms later: its
 *     Wait returns GOAL_ERR_MISMATCH within 10 s, GOAL_LastError names
 *     "tag 5" and "rank 0"; rank 0's execution succeeds;
 *   - the same with the receiver first (rank 0 sends 200 ms later);
 *   - the same with 1 MiB (a rendezvous): rank 0's Wait returns too (its
 *     receiver released it), rank 1's buffer is untouched;
 *   - compile order: rank 0 compiles A (8 B, tag 1) then B (16 B, tag 2),
 *     rank 1 the receives of B then of A: both of rank 1's executions return
 *     GOAL_ERR_MISMATCH, the message says "same order";
 *   - executions that finish before the stray message comes: ranks 0 and 1
 *     each send 8 B to the other and receive nothing (two roots of one
 *     broadcast), four executions with a barrier after each: at least two
 *     of each rank's return GOAL_ERR_MISMATCH (the message came while the
 *     execution ran or before it, or it had finished and the next one
 *     says so), none another error; with 2 ranks the same with
 *     GOAL_Bcast_init and roots 0 and 1 (the message names the collective
 *     tag range);
 *   - a collective called with a larger count on one rank (a linear
 *     broadcast of 64 B, rank 1 asking for 128): rank 1's Wait returns
 *     GOAL_ERR_MISMATCH ("exactly 128", "different counts") and its buffer
 *     is untouched, the other ranks get the 64 bytes;
 *   - GOAL_ErrorString(GOAL_ERR_MISMATCH) is text of its own;
 *   - afterwards a matched exchange between every pair still works;
 *   - at the end rank 0 finalizes and exits while rank 1 runs a schedule
 *     once more than rank 0 did and rank 2 one that rank 0 never compiled:
 *     both Waits return GOAL_ERR_PEER_LOST within 15 s, the message says
 *     that rank 0 called GOAL_Finalize and "as often" / "never compiled"
 *     (across emulated hosts, where rank 0 is reached by TCP: that it
 *     closed its connections because it finished).
 */
// ranks: 2 3 4
// modes: 2
// memcheck: 2
#include "helpers.h"

/* Waits for `h`, which must end within `secs`; returns its code. */
static int wait_within(GOAL_Handle h, double secs, const char *what)
{
    double t0 = h_now();
    int rc = GOAL_Wait(h);
    double took = h_now() - t0;
    CHECKM(took < secs, "%s: GOAL_Wait took %.1f s", what, took);
    return rc;
}

static void expect_mismatch(int rc, const char *what, const char *needle1, const char *needle2)
{
    CHECKM(rc == GOAL_ERR_MISMATCH, "%s: GOAL_Wait returned %d (%s), not GOAL_ERR_MISMATCH; last error: %s", what, rc,
           h_strerr(rc), h_last_error());
    const char *m = h_last_error();
    CHECKM(h_contains_ci(m, needle1), "%s: the error does not name \"%s\": %s", what, needle1, m);
    if (needle2)
        CHECKM(h_contains_ci(m, needle2), "%s: the error does not name \"%s\": %s", what, needle2, m);
}

/* Rank 0 sends `n` bytes with tag 5, rank 1 receives them with tag 6; the
 * one named by `late` starts 200 ms after the other. */
static void tag_mismatch(int n, int late)
{
    char *buf = malloc((size_t)n);
    CHECK(buf != NULL);
    memset(buf, h_rank == 0 ? 0x5a : 0x11, (size_t)n);
    GOAL_Graph g = h_graph();
    if (h_rank == 0)
        V(GOAL_Send(g, buf, n, 1, 5, GOAL_USERSPACE));
    else if (h_rank == 1)
        V(GOAL_Recv(g, buf, n, 0, 6, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);
    h_sync();
    if (h_rank == late)
        h_sleep_ms(200);
    GOAL_Handle h = GOAL_Run(s);
    CHECKM(h != NULL, "GOAL_Run: %s", h_last_error());
    char what[96];
    snprintf(what, sizeof what, "tag mismatch, %d B, rank %d late", n, late);
    int rc = wait_within(h, 10, what);
    if (h_rank == 0)
        CHECKM(rc == GOAL_SUCCESS, "%s: the sender's Wait returned %d (%s): %s", what, rc, h_strerr(rc), h_last_error());
    else if (h_rank == 1) {
        expect_mismatch(rc, what, "tag 5", "rank 0");
        CHECK_BYTES(buf, (size_t)n, 0x11, "%s: the receive buffer was written", what);
    } else
        CHECK_EQ(rc, GOAL_SUCCESS);
    h_sync();
    h_free_schedule(s);
    free(buf);
}

/* Both ranks compile two schedules, in a different order on rank 1. */
static void compile_order(void)
{
    char a[8] = {1}, b[16] = {2};
    GOAL_Graph ga = h_graph(), gb = h_graph();
    if (h_rank == 0) {
        V(GOAL_Send(ga, a, 8, 1, 1, GOAL_USERSPACE));
        V(GOAL_Send(gb, b, 16, 1, 2, GOAL_USERSPACE));
    } else if (h_rank == 1) {
        V(GOAL_Recv(ga, a, 8, 0, 1, GOAL_USERSPACE));
        V(GOAL_Recv(gb, b, 16, 0, 2, GOAL_USERSPACE));
    }
    GOAL_Schedule sa, sb;
    if (h_rank == 1) { /* the mistake: B first */
        sb = h_compile(gb);
        sa = h_compile(ga);
    } else {
        sa = h_compile(ga);
        sb = h_compile(gb);
    }
    GOAL_Handle ha = GOAL_Run(sa), hb = GOAL_Run(sb);
    CHECK(ha != NULL && hb != NULL);
    int ra = wait_within(ha, 10, "compile order, A");
    if (h_rank == 1)
        expect_mismatch(ra, "compile order, A", "same order", NULL);
    else
        CHECKM(ra == GOAL_SUCCESS, "compile order, A: %d (%s): %s", ra, h_strerr(ra), h_last_error());
    int rb = wait_within(hb, 10, "compile order, B");
    if (h_rank == 1)
        expect_mismatch(rb, "compile order, B", "same order", NULL);
    else
        CHECKM(rb == GOAL_SUCCESS, "compile order, B: %d (%s): %s", rb, h_strerr(rb), h_last_error());
    h_sync();
    h_free_schedule(sa);
    h_free_schedule(sb);
}

/* Four executions of `s`, a barrier after each: at least two must end with
 * GOAL_ERR_MISMATCH on the ranks in `part`, none with another error. */
static void finished_first(GOAL_Schedule s, int part, const char *what)
{
    int mism = 0;
    for (int k = 0; k < 4; k++) {
        GOAL_Handle h = GOAL_Run(s);
        CHECKM(h != NULL, "%s: GOAL_Run: %s", what, h_last_error());
        int rc = wait_within(h, 10, what);
        if (rc == GOAL_ERR_MISMATCH) {
            expect_mismatch(rc, what, "do not pair up", "rank");
            mism++;
        } else
            CHECKM(rc == GOAL_SUCCESS, "%s: execution %d returned %d (%s): %s", what, k, rc, h_strerr(rc), h_last_error());
        h_sync();
    }
    if (part)
        CHECKM(mism >= 2, "%s: %d of 4 executions reported the mismatch", what, mism);
    else
        CHECK_EQ(mism, 0);
}

static void two_roots(void)
{
    char mine[8] = {(char)h_rank}, got[8] = {0};
    GOAL_Graph g = h_graph();
    if (h_rank <= 1)
        V(GOAL_Send(g, mine, 8, 1 - h_rank, 7, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);
    finished_first(s, h_rank <= 1, "two roots (graph)");
    h_free_schedule(s);
    if (h_size == 2) {
        GOAL_Schedule b = GOAL_Bcast_init(got, sizeof got, h_rank, GOAL_ALG_AUTO);
        CHECKM(b != NULL, "GOAL_Bcast_init: %s", h_last_error());
        finished_first(b, 1, "two roots (GOAL_Bcast_init)");
        h_free_schedule(b);
    }
}

/* A collective called with a larger count on rank 1: the root's 64-byte
 * message reaches rank 1's 128-byte receive, which a collective's receive
 * takes only whole. */
static void count_mismatch(void)
{
    unsigned char buf[128];
    memset(buf, h_rank == 0 ? 0xab : 0x11, sizeof buf);
    int bytes = h_rank == 1 ? 128 : 64;
    GOAL_Schedule s = GOAL_Bcast_init(buf, (uintptr_t)bytes, 0, GOAL_ALG_LINEAR);
    CHECKM(s != NULL, "GOAL_Bcast_init: %s", h_last_error());
    GOAL_Handle h = GOAL_Run(s);
    CHECKM(h != NULL, "GOAL_Run: %s", h_last_error());
    int rc = wait_within(h, 10, "count mismatch");
    if (h_rank == 1) {
        expect_mismatch(rc, "count mismatch", "exactly 128", "different counts");
        CHECK_BYTES(buf, sizeof buf, 0x11, "count mismatch: rank 1's buffer was written");
    } else {
        CHECKM(rc == GOAL_SUCCESS, "count mismatch: rank %d's Wait returned %d (%s): %s", h_rank, rc, h_strerr(rc),
               h_last_error());
        if (h_rank != 0)
            CHECK_BYTES(buf, 64, 0xab, "count mismatch: rank %d's broadcast", h_rank);
    }
    h_sync();
    h_free_schedule(s);
}

/* The end: rank 0 finalizes and exits while rank 1 runs a schedule once
 * more than rank 0 did, and rank 2 (if any) one that rank 0 never compiled:
 * both get GOAL_ERR_PEER_LOST within 15 s, saying that rank 0 called
 * GOAL_Finalize and what their programs disagree on. */
static int finalized_early(void)
{
    char a[8] = {3}, b[8] = {0};
    GOAL_Graph g = h_graph();
    if (h_rank == 0)
        V(GOAL_Send(g, a, 8, 1, 3, GOAL_USERSPACE));
    else if (h_rank == 1)
        V(GOAL_Recv(g, b, 8, 0, 3, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);
    h_run(s);
    if (h_rank == 0) { /* ends here: ran s once, compiles nothing more */
        h_free_schedule(s);
        return h_finish();
    }
    const char *what = NULL, *needle = NULL;
    GOAL_Schedule t = NULL;
    if (h_rank == 1) {
        what = "a schedule run once more than on rank 0";
        needle = "as often";
        t = s;
    } else if (h_rank == 2) {
        GOAL_Graph g2 = h_graph();
        V(GOAL_Recv(g2, b, 8, 0, 4, GOAL_USERSPACE));
        t = h_compile(g2);
        what = "a schedule rank 0 never compiled";
        needle = "never compiled";
    }
    if (t) {
        GOAL_Handle h = GOAL_Run(t);
        CHECKM(h != NULL, "%s: GOAL_Run: %s", what, h_last_error());
        int rc = wait_within(h, 15, what);
        CHECKM(rc == GOAL_ERR_PEER_LOST, "%s: GOAL_Wait returned %d (%s): %s", what, rc, h_strerr(rc), h_last_error());
        /* A peer on this machine says it finalized and what the programs
         * disagree on; one across the network, that it closed its
         * connections because it finished. */
        const char *m = h_last_error();
        if (h_contains_ci(m, "GOAL_Finalize"))
            CHECKM(h_contains_ci(m, needle), "%s: the error does not say \"%s\": %s", what, needle, m);
        else
            CHECKM(h_contains_ci(m, "closed its connections (it finished"), "%s: the error says neither that rank 0 "
                   "called GOAL_Finalize nor that it finished: %s", what, m);
        if (t != s)
            h_free_schedule(t);
    }
    h_free_schedule(s);
    return h_finish();
}

/* Every pair exchanges 4 KiB, checked. */
static void still_works(void)
{
    size_t n = 4096;
    char *mine = malloc(n), *all = malloc(n * (size_t)h_size);
    CHECK(mine && all);
    h_fill(mine, n, h_seed(77, (uint64_t)h_rank, 0, 0));
    h_allgather(mine, n, all);
    for (int p = 0; p < h_size; p++)
        CHECK_PATTERN(all + (size_t)p * n, n, h_seed(77, (uint64_t)p, 0, 0), "block of rank %d", p);
    free(mine);
    free(all);
}

int main(int argc, char **argv)
{
    h_start_watchdog(120);
    h_init(argc, argv);
    const char *text = GOAL_ErrorString(GOAL_ERR_MISMATCH);
    CHECKM(text && strcmp(text, GOAL_ErrorString(GOAL_ERR_INTERNAL)) != 0 && strcmp(text, GOAL_ErrorString(-999)) != 0,
           "GOAL_ErrorString(GOAL_ERR_MISMATCH) = \"%s\"", text ? text : "(null)");
    tag_mismatch(64, 1);
    tag_mismatch(64, 0);
    tag_mismatch(1 << 20, 1);
    tag_mismatch(1 << 20, 0);
    compile_order();
    two_roots();
    count_mismatch();
    still_works();
    return finalized_early();
}
