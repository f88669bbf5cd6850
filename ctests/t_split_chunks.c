/*
 * t_split_chunks: large messages whose copy the idle receiver shares with
 * its waiting sender, chunk by chunk (the receiver takes chunks from the
 * front, the sender from the back, through a claim word in the receiver's
 * inbox). These are the cases where a chunk could be copied by nobody,
 * twice into the wrong place, or past the message's end.
 *
 * Asserts (large messages offered by CMA, set before GOAL_Init):
 *   - every other rank sends rank 0 one message of each of 64 KiB + 1,
 *     200 KiB + 7, 1 MiB + 4095, 3 MiB + 13 and 9 MiB + 5 bytes, one size
 *     per schedule: every byte arrives, nothing after the message in the
 *     receive buffer (larger than the message) is written;
 *   - a window of 80 messages of 64 KiB + 3 from rank 1 to rank 0 (more
 *     than the 64 claim words of a pair: the rest are read by the receiver
 *     alone), each whole;
 *   - five runs of each schedule, each with new data (the receive buffers
 *     of the sizes above poisoned first).
 * With 2 ranks on this machine's 2 cores the messages are split (in the
 * default mode; with more ranks than cores, or in manual mode, they are
 * read whole, and the same bytes must arrive).
 */
// ranks: 2 3
// modes: 2
#include "helpers.h"

#define GUARD 64
#define RUNS 5
#define WINDOW 80
#define WSIZE ((64 << 10) + 3)

static const size_t SIZES[] = {(64 << 10) + 1, (200 << 10) + 7, (1 << 20) + 4095, (3 << 20) + 13, (9 << 20) + 5};
#define NSIZES (sizeof(SIZES) / sizeof(SIZES[0]))

static uint64_t seed_of(int run, int from, size_t n, int i) { return h_seed((uint64_t)run, (uint64_t)from, n, (uint64_t)i); }

static void check_guard(const uint8_t *p, size_t n, int from, size_t i)
{
    for (size_t k = 0; k < GUARD; k++)
        CHECKM(p[n + k] == 0xA5, "message %zu of %zu bytes from rank %d: guard byte %zu after it was written (0x%02x)", i, n, from, k,
               p[n + k]);
}

/* Every other rank sends rank 0 one message of each size. */
static void fan_in(void)
{
    for (size_t k = 0; k < NSIZES; k++) {
        size_t n = SIZES[k];
        int peers = h_rank == 0 ? h_size - 1 : 1;
        uint8_t **bufs = calloc((size_t)peers, sizeof *bufs);
        CHECK(bufs != NULL);
        GOAL_Graph g = h_graph();
        for (int p = 0; p < peers; p++) {
            bufs[p] = malloc(n + 4096 + GUARD);
            CHECKM(bufs[p] != NULL, "malloc of %zu bytes", n);
            if (h_rank == 0)
                V(GOAL_Recv(g, bufs[p], (int)(n + 4096), p + 1, 1, GOAL_USERSPACE));
            else
                V(GOAL_Send(g, bufs[p], (int)n, 0, 1, GOAL_USERSPACE));
        }
        GOAL_Schedule sch = h_compile(g);
        for (int run = 0; run < RUNS; run++) {
            for (int p = 0; p < peers; p++) {
                if (h_rank == 0)
                    memset(bufs[p], 0xA5, n + 4096 + GUARD);
                else
                    h_fill(bufs[p], n, seed_of(run, h_rank, n, 0));
            }
            h_run(sch);
            for (int p = 0; p < peers && h_rank == 0; p++) {
                long bad = h_pattern_mismatch(bufs[p], n, seed_of(run, p + 1, n, 0));
                CHECKM(bad < 0, "run %d: %zu bytes from rank %d: byte %ld differs", run, n, p + 1, bad);
                check_guard(bufs[p], n, p + 1, 0);
            }
        }
        h_free_schedule(sch);
        for (int p = 0; p < peers; p++)
            free(bufs[p]);
        free(bufs);
    }
}

/* A window of more messages than a pair has claim words. */
static void window(void)
{
    uint8_t *bufs[WINDOW];
    GOAL_Graph g = h_graph();
    int mine = h_rank <= 1;
    for (int i = 0; i < WINDOW && mine; i++) {
        bufs[i] = malloc(WSIZE + GUARD);
        CHECK(bufs[i] != NULL);
        if (h_rank == 0)
            V(GOAL_Recv(g, bufs[i], WSIZE, 1, 2, GOAL_USERSPACE));
        else
            V(GOAL_Send(g, bufs[i], WSIZE, 0, 2, GOAL_USERSPACE));
    }
    GOAL_Schedule sch = h_compile(g);
    for (int run = 0; run < RUNS; run++) {
        for (int i = 0; i < WINDOW && mine; i++) {
            /* Only the guards: a receiver that writes its buffers before
             * each run makes its senders' writes into them slow, and then
             * takes their messages alone for a while. Each run's data is
             * new, so a chunk nobody copied still shows. */
            if (h_rank == 0)
                memset(bufs[i] + WSIZE, 0xA5, GUARD);
            else
                h_fill(bufs[i], WSIZE, seed_of(run, 1, WSIZE, i));
        }
        h_run(sch);
        for (int i = 0; i < WINDOW && h_rank == 0; i++) {
            long bad = h_pattern_mismatch(bufs[i], WSIZE, seed_of(run, 1, WSIZE, i));
            CHECKM(bad < 0, "run %d: message %d of the window: byte %ld differs", run, i, bad);
            check_guard(bufs[i], WSIZE, 1, (size_t)i);
        }
    }
    h_free_schedule(sch);
    for (int i = 0; i < WINDOW && mine; i++)
        free(bufs[i]);
}

int main(int argc, char **argv)
{
    setenv("GOAL_CMA_MIN", "64K", 1);
    setenv("GOAL_CMA_MAX", "1G", 1);
    h_init(argc, argv);
    if (h_size < 2)
        return h_finish();
    fan_in();
    window();
    return h_finish();
}
