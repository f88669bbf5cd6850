/*
 * t_vec: SendVec and RecvVec.  Every rank sends to the next rank of a ring
 * and receives from the previous one (at N=1 to itself).
 *
 * Asserts:
 *   - row-major to column-major: a 24x16 matrix of uint32 sent with SendVec
 *     as its 24 rows (out of order in the piece list, so piece order, not
 *     address order, defines the stream) arrives through a RecvVec of 384
 *     one-element pieces as the transposed (column-major) matrix;
 *   - SendVec to a plain Recv: the receive buffer holds the pieces
 *     concatenated, piece 0 first, nothing past them written;
 *   - Send to RecvVec: a contiguous message is scattered over pieces of
 *     different lengths (one of them 0 bytes) with gaps left untouched;
 *   - scratchpad pieces on both sides (a COPY into the sender's scratchpad,
 *     a COPY out of the receiver's);
 *   - a 1 MiB SendVec of 256 pieces of 4 KiB in reverse order to a RecvVec
 *     of 3 uneven pieces;
 *   - the offsets and lengths arrays are copied at the call: they are
 *     overwritten right after every SendVec/RecvVec;
 *   - all of it over two runs with new data.
 */
// memcheck: 2
// modes: 2 3
#include "helpers.h"

#define R 24
#define C 16
#define GUARD 32

static int next_rank, prev_rank;

static void scribble(void **offs, int *lens, int n)
{
    for (int i = 0; i < n; i++) {
        offs[i] = (void *)(uintptr_t)0xdead0000;
        lens[i] = 0x7fff0000;
    }
}

static void matrix_transpose(void)
{
    uint32_t A[R][C], B[C][R]; /* B: column-major copy of the received matrix */
    void *so[R], *ro[R * C];
    int sl[R], rl[R * C];
    /* Sender: rows in the order 23, 0, 22, 1, ...; the stream carries them in
     * that order, so the receiver's stream element j is row order[j / C]. */
    int order[R];
    for (int i = 0; i < R; i++)
        order[i] = i % 2 ? i / 2 : R - 1 - i / 2;
    for (int i = 0; i < R; i++) {
        so[i] = A[order[i]];
        sl[i] = C * 4;
    }
    for (int j = 0; j < R * C; j++) {
        int row = order[j / C], col = j % C;
        ro[j] = &B[col][row];
        rl[j] = 4;
    }
    GOAL_Graph g = h_graph();
    V(GOAL_SendVec(g, so, sl, R, next_rank, 1, GOAL_USERSPACE));
    scribble(so, sl, R);
    V(GOAL_RecvVec(g, ro, rl, R * C, prev_rank, 1, GOAL_USERSPACE));
    scribble(ro, rl, R * C);
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < 2; run++) {
        h_fill(A, sizeof A, h_seed(41, (uint64_t)run, (uint64_t)h_rank, 0));
        memset(B, 0xA5, sizeof B);
        h_run(s);
        uint32_t Aprev[R][C];
        h_fill(Aprev, sizeof Aprev, h_seed(41, (uint64_t)run, (uint64_t)prev_rank, 0));
        for (int r = 0; r < R; r++)
            for (int c = 0; c < C; c++)
                CHECKM(B[c][r] == Aprev[r][c],
                       "transpose run %d: element (%d,%d) from rank %d is 0x%08x, want 0x%08x", run,
                       r, c, prev_rank, B[c][r], Aprev[r][c]);
    }
    h_free_schedule(s);
}

static void vec_to_plain_and_back(void)
{
    /* SendVec of 5 pieces (lengths 1, 100, 0, 4093, 17) out of one 8 KiB area
     * to a plain Recv; a plain Send of 4211 B to a RecvVec of 4 pieces. */
    enum { AREA = 8192, TOTAL = 1 + 100 + 0 + 4093 + 17 };
    static char src[AREA], dst[TOTAL + GUARD], src2[TOTAL], dst2[AREA];
    int soff[5] = {5000, 0, 777, 800, 6000}, slen[5] = {1, 100, 0, 4093, 17};
    int roff[4] = {4000, 10, 2000, 6000}, rlen[4] = {1500, 0, 700, TOTAL - 2200};
    void *so[5], *ro[4];
    int sl[5], rl[4];
    for (int i = 0; i < 5; i++) {
        so[i] = src + soff[i];
        sl[i] = slen[i];
    }
    for (int i = 0; i < 4; i++) {
        ro[i] = dst2 + roff[i];
        rl[i] = rlen[i];
    }
    GOAL_Graph g = h_graph();
    V(GOAL_SendVec(g, so, sl, 5, next_rank, 2, GOAL_USERSPACE));
    scribble(so, sl, 5);
    V(GOAL_Recv(g, dst, TOTAL, prev_rank, 2, GOAL_USERSPACE));
    V(GOAL_Send(g, src2, TOTAL, next_rank, 3, GOAL_USERSPACE));
    V(GOAL_RecvVec(g, ro, rl, 4, prev_rank, 3, GOAL_USERSPACE));
    scribble(ro, rl, 4);
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < 2; run++) {
        h_fill(src, sizeof src, h_seed(42, (uint64_t)run, (uint64_t)h_rank, 0));
        h_fill(src2, sizeof src2, h_seed(43, (uint64_t)run, (uint64_t)h_rank, 0));
        memset(dst, 0xA5, sizeof dst);
        memset(dst2, 0xA5, sizeof dst2);
        h_run(s);
        /* What the previous rank sent. */
        static char psrc[AREA], psrc2[TOTAL], want[TOTAL], want2[AREA];
        h_fill(psrc, sizeof psrc, h_seed(42, (uint64_t)run, (uint64_t)prev_rank, 0));
        h_fill(psrc2, sizeof psrc2, h_seed(43, (uint64_t)run, (uint64_t)prev_rank, 0));
        size_t at = 0;
        for (int i = 0; i < 5; i++) {
            memcpy(want + at, psrc + soff[i], (size_t)slen[i]);
            at += (size_t)slen[i];
        }
        CHECK_MEM(dst, want, TOTAL, "SendVec -> Recv, run %d", run);
        CHECK_BYTES(dst + TOTAL, GUARD, 0xA5, "past the Recv of a SendVec");
        memset(want2, 0xA5, sizeof want2);
        at = 0;
        for (int i = 0; i < 4; i++) {
            memcpy(want2 + roff[i], psrc2 + at, (size_t)rlen[i]);
            at += (size_t)rlen[i];
        }
        CHECK_MEM(dst2, want2, AREA, "Send -> RecvVec, run %d (gaps must stay 0xA5)", run);
    }
    h_free_schedule(s);
}

static void scratchpad_vec(void)
{
    /* Sender: COPY 4 KiB into its scratchpad, SendVec of scratchpad pieces
     * [2048,4096) then [0,2048).  Receiver: RecvVec into scratchpad pieces
     * [1000,1100) [0,1000) [1100,4096), then COPY all 4 KiB out. */
    static char in[4096], out[4096];
    GOAL_Graph g = h_graph();
    CHECK_OK(GOAL_AllocateScratchpad(g, 8192 + 4096));
    GOAL_Vertex cin = V(GOAL_LocalOp(g, in, NULL, SP(0), GOAL_COPY, GOAL_UINT, 8, 4096,
                                     GOAL_USERSPACE, GOAL_USERSPACE, GOAL_SCRATCHPAD));
    void *so[2] = {SP(2048), SP(0)};
    int sl[2] = {2048, 2048};
    GOAL_Vertex sv = V(GOAL_SendVec(g, so, sl, 2, next_rank, 4, GOAL_SCRATCHPAD));
    void *ro[3] = {SP(8192 + 1000), SP(8192), SP(8192 + 1100)};
    int rl[3] = {100, 1000, 4096 - 1100};
    GOAL_Vertex rv = V(GOAL_RecvVec(g, ro, rl, 3, prev_rank, 4, GOAL_SCRATCHPAD));
    GOAL_Vertex cout = V(GOAL_LocalOp(g, SP(8192), NULL, out, GOAL_COPY, GOAL_UINT, 8, 4096,
                                      GOAL_SCRATCHPAD, GOAL_USERSPACE, GOAL_USERSPACE));
    REQ(g, cin, sv);
    REQ(g, rv, cout);
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < 2; run++) {
        h_fill(in, sizeof in, h_seed(44, (uint64_t)run, (uint64_t)h_rank, 0));
        memset(out, 0xA5, sizeof out);
        h_run(s);
        static char pin[4096], stream[4096], want[4096];
        h_fill(pin, sizeof pin, h_seed(44, (uint64_t)run, (uint64_t)prev_rank, 0));
        memcpy(stream, pin + 2048, 2048);
        memcpy(stream + 2048, pin, 2048);
        memcpy(want + 1000, stream, 100);
        memcpy(want, stream + 100, 1000);
        memcpy(want + 1100, stream + 1100, 4096 - 1100);
        CHECK_MEM(out, want, sizeof out, "scratchpad SendVec -> scratchpad RecvVec, run %d", run);
    }
    h_free_schedule(s);
}

static void big_vec(void)
{
    enum { PIECE = 4096, NP = 256, TOTAL = PIECE * NP };
    char *src = malloc(TOTAL), *dst = malloc(TOTAL + GUARD), *want = malloc(TOTAL);
    CHECK(src && dst && want);
    void **so = malloc(NP * sizeof *so);
    int *sl = malloc(NP * sizeof *sl);
    CHECK(so && sl);
    for (int i = 0; i < NP; i++) {
        so[i] = src + (size_t)(NP - 1 - i) * PIECE;
        sl[i] = PIECE;
    }
    void *ro[3] = {dst + 2 * TOTAL / 3, dst, dst + TOTAL / 3};
    int rl[3] = {TOTAL - 2 * (TOTAL / 3), TOTAL / 3, TOTAL / 3};
    GOAL_Graph g = h_graph();
    V(GOAL_SendVec(g, so, sl, NP, next_rank, 5, GOAL_USERSPACE));
    scribble(so, sl, NP);
    V(GOAL_RecvVec(g, ro, rl, 3, prev_rank, 5, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < 2; run++) {
        h_fill(src, TOTAL, h_seed(45, (uint64_t)run, (uint64_t)h_rank, 0));
        memset(dst, 0xA5, TOTAL + GUARD);
        h_run(s);
        char *psrc = malloc(TOTAL), *stream = malloc(TOTAL);
        CHECK(psrc && stream);
        h_fill(psrc, TOTAL, h_seed(45, (uint64_t)run, (uint64_t)prev_rank, 0));
        for (int i = 0; i < NP; i++)
            memcpy(stream + (size_t)i * PIECE, psrc + (size_t)(NP - 1 - i) * PIECE, PIECE);
        size_t at = 0;
        for (int i = 0; i < 3; i++) {
            memcpy(want + ((char *)ro[i] - dst), stream + at, (size_t)rl[i]);
            at += (size_t)rl[i];
        }
        CHECK_MEM(dst, want, TOTAL, "1 MiB SendVec (256 pieces) -> RecvVec (3 pieces), run %d", run);
        CHECK_BYTES(dst + TOTAL, GUARD, 0xA5, "past the 1 MiB RecvVec");
        free(psrc);
        free(stream);
    }
    h_free_schedule(s);
    free(so);
    free(sl);
    free(src);
    free(dst);
    free(want);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    next_rank = (h_rank + 1) % h_size;
    prev_rank = (h_rank + h_size - 1) % h_size;
    matrix_transpose();
    vec_to_plain_and_back();
    scratchpad_vec();
    big_vec();
    if (h_rank == 0)
        printf("t_vec: SendVec/RecvVec layouts checked\n");
    return h_finish();
}
