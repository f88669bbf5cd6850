/*
 * t_fused: a receive combined with its local operation as it comes.
 *
 * A large message between local ranks that travels through the pair's
 * stream, received into the scratchpad and read only by one local
 * operation, is combined piece by piece as it arrives instead of landing
 * in the scratchpad first (the runtime's receive-reduce fusion). The test
 * forces the stream (GOAL_CMA_MIN/MAX out of reach, a 64 KiB stream so a
 * message wraps it many times) and asserts, on a ring of ranks, that:
 *   - SUB gives theirs - mine and mine - theirs exactly (the received
 *     bytes as first or as second operand), into a user buffer and into the
 *     scratchpad (copied out after), over three runs with new data;
 *   - elements split between two pops are combined right: an odd 70001-
 *     byte message goes first, so the 200003 int64 elements after it sit
 *     at odd stream positions;
 *   - an integer division by zero at element N-5 fails the execution with
 *     a message naming that element (with both messages eager, as
 *     t_fused_eager runs it, a rank whose peer failed before its vector
 *     left gets GOAL_ERR_PEER_FAILED naming that peer's failed division
 *     instead), and the schedule runs fine after.
 */
// ranks: 2 3
// modes: 2
#include "helpers.h"

#ifndef TEST_NAME
#define TEST_NAME "t_fused"
#endif

#ifndef ODD
#define ODD 70001
#endif
#ifndef N
#define N 200003
#endif
#define RUNS 3

static int64_t theirs_at(int rank, int run, int i) { return (int64_t)h_mix(h_seed((uint64_t)rank, (uint64_t)run, 1, (uint64_t)i)); }
static int64_t mine_at(int rank, int run, int i) { return (int64_t)h_mix(h_seed((uint64_t)rank, (uint64_t)run, 2, (uint64_t)i)); }

/*
 * One schedule: send the odd message and the vector to the next rank,
 * receive the previous rank's odd message, then its vector into the
 * scratchpad, combined by `op` with `mine` (as second operand when
 * `theirs_first`) into `res`, directly or through the scratchpad.
 */
static GOAL_Schedule build(GOAL_Op op, int theirs_first, int via_scratch, char *odd_out, char *odd_in,
                           int64_t *vec_out, int64_t *mine, int64_t *res)
{
    int next = (h_rank + 1) % h_size, prev = (h_rank + h_size - 1) % h_size;
    size_t bytes = (size_t)N * 8;
    GOAL_Graph g = h_graph();
    CHECK_OK(GOAL_AllocateScratchpad(g, 2 * bytes));
    /* Both sends start at once (the receiver's order sets the stream's), so
       a rank whose execution fails has announced both and still sends them. */
    V(GOAL_Send(g, odd_out, ODD, next, 1, GOAL_USERSPACE));
    V(GOAL_Send(g, vec_out, (int)bytes, next, 2, GOAL_USERSPACE));
    /* Both receives posted at once too: the vector follows the odd message
       in the stream without a gap, so pops end inside its elements. */
    V(GOAL_Recv(g, odd_in, ODD, prev, 1, GOAL_USERSPACE));
    GOAL_Vertex r2 = V(GOAL_Recv(g, SP(0), (int)bytes, prev, 2, GOAL_SCRATCHPAD));
    void *out = via_scratch ? SP(bytes) : (void *)res;
    GOAL_MemType out_mem = via_scratch ? GOAL_SCRATCHPAD : GOAL_USERSPACE;
    GOAL_Vertex c = theirs_first
        ? V(GOAL_LocalOp(g, SP(0), mine, out, op, GOAL_SINT, 64, N, GOAL_SCRATCHPAD, GOAL_USERSPACE, out_mem))
        : V(GOAL_LocalOp(g, mine, SP(0), out, op, GOAL_SINT, 64, N, GOAL_USERSPACE, GOAL_SCRATCHPAD, out_mem));
    REQ(g, r2, c);
    if (via_scratch) {
        GOAL_Vertex cp = V(GOAL_LocalOp(g, SP(bytes), NULL, res, GOAL_COPY, GOAL_SINT, 64, N, GOAL_SCRATCHPAD,
                                        GOAL_USERSPACE, GOAL_USERSPACE));
        REQ(g, c, cp);
    }
    return h_compile(g);
}

static void fill(int run, char *odd_out, int64_t *vec_out, int64_t *mine)
{
    h_fill(odd_out, ODD, h_seed((uint64_t)h_rank, (uint64_t)run, 3, 0));
    for (int i = 0; i < N; i++) {
        vec_out[i] = theirs_at(h_rank, run, i);
        mine[i] = mine_at(h_rank, run, i);
    }
}

int main(int argc, char **argv)
{
#if defined(FUSED_EAGER)
    /* Before GOAL_Init: both messages eager (through the pair's ring). */
    setenv("GOAL_EAGER_LIMIT", "64K", 1);
#elif defined(FUSED_VIA_CMA)
    /* Before GOAL_Init: every large message by Cross Memory Attach. */
    setenv("GOAL_CMA_MIN", "64K", 1);
    setenv("GOAL_CMA_MAX", "1G", 1);
#else
    /* Before GOAL_Init: every large message by stream, and a small stream. */
    setenv("GOAL_SHM_STREAM_BYTES", "64K", 1);
    setenv("GOAL_CMA_MIN", "1G", 1);
    setenv("GOAL_CMA_MAX", "1G", 1);
#endif
    h_init(argc, argv);
    if (h_size < 2)
        h_skip("needs a peer");
    int prev = (h_rank + h_size - 1) % h_size;
    char *odd_out = malloc(ODD), *odd_in = malloc(ODD);
    int64_t *vec_out = malloc((size_t)N * 8), *mine = malloc((size_t)N * 8), *res = malloc((size_t)N * 8);
    CHECK(odd_out && odd_in && vec_out && mine && res);

    for (int variant = 0; variant < 4; variant++) {
        int theirs_first = variant & 1, via_scratch = variant >> 1;
        GOAL_Schedule s = build(GOAL_SUB, theirs_first, via_scratch, odd_out, odd_in, vec_out, mine, res);
        for (int run = 0; run < RUNS; run++) {
            fill(run, odd_out, vec_out, mine);
            memset(res, 0xEE, (size_t)N * 8);
            h_run(s);
            CHECK_PATTERN(odd_in, ODD, h_seed((uint64_t)prev, (uint64_t)run, 3, 0), "odd message, run %d", run);
            for (int i = 0; i < N; i++) {
                uint64_t t = (uint64_t)theirs_at(prev, run, i), m = (uint64_t)mine[i];
                int64_t want = (int64_t)(theirs_first ? t - m : m - t);
                if (res[i] != want)
                    FAILF("SUB with the received vector as %s operand%s, run %d: element %d is %" PRId64
                          ", want %" PRId64, theirs_first ? "first" : "second",
                          via_scratch ? ", result in the scratchpad" : "", run, i, res[i], want);
            }
        }
        h_free_schedule(s);
    }

    /* DIV by zero at element N-5, past many pops: named, then recovered.
       Every rank divides by zero once its peer's vector is in; a rank whose
       execution failed before its own vector left (both messages eager, its
       peer's vector there when it ran) never sends it, and that peer's
       execution instead fails with GOAL_ERR_PEER_FAILED naming the failed
       execution, within seconds, not a hang. */
    GOAL_Schedule s = build(GOAL_DIV, 1, 0, odd_out, odd_in, vec_out, mine, res);
    fill(0, odd_out, vec_out, mine);
    for (int i = 0; i < N; i++)
        mine[i] = mine[i] % 1000 == 0 || mine[i] % 1000 == -1 ? 7 : mine[i] % 1000;
    mine[N - 5] = 0;
    GOAL_Handle h = GOAL_Run(s);
    CHECK(h != NULL);
    int rc = GOAL_Wait(h);
    char want[96];
#ifdef FUSED_EAGER
    /* Only where both messages are eager: a stream or CMA sender whose
       execution failed has announced its vector and still sends it. */
    if (rc == GOAL_ERR_PEER_FAILED) {
        snprintf(want, sizeof want, "rank %d's execution 0 of schedule", prev);
        CHECKM(strstr(GOAL_LastError(), want) && strstr(GOAL_LastError(), "division by zero"),
               "DIV by zero: the peer-failed error \"%s\" does not name rank %d's failed division", GOAL_LastError(), prev);
    } else
#endif
    {
        CHECKM(rc == GOAL_ERR_DIV_BY_ZERO, "DIV by zero: GOAL_Wait returned %d, expected GOAL_ERR_DIV_BY_ZERO", rc);
        snprintf(want, sizeof want, "at element %d", N - 5);
        CHECKM(strstr(GOAL_LastError(), want) != NULL, "DIV by zero: error \"%s\" does not say \"%s\"",
               GOAL_LastError(), want);
    }
    mine[N - 5] = 3;
    h_sync();
    h_run(s);
    for (int i = 0; i < N; i++) {
        int64_t w = theirs_at(prev, 0, i) / mine[i];
        if (res[i] != w)
            FAILF("DIV after the failed run: element %d is %" PRId64 ", want %" PRId64, i, res[i], w);
    }
    h_free_schedule(s);
    free(odd_out); free(odd_in); free(vec_out); free(mine); free(res);
    if (h_rank == 0)
        printf("%s: receives combined as they came, in both operand orders\n", TEST_NAME);
    return h_finish();
}
