/*
 * t_cma_pieces: large messages read from the sender's memory by Cross
 * Memory Attach. The receiver reads such a message after the pass that
 * matched it, in pieces of 512 KiB, so that the sends starting beside it
 * leave first; these are the cases where a piece's bounds could go wrong.
 *
 * Asserts (every large message offered by CMA, set before GOAL_Init):
 *   - rank pairs (0,1), (2,3), ... exchange messages of 64 KiB, 512 KiB + 7,
 *     1.5 MiB + 3 and 4 MiB + 1 in both directions at once: every byte
 *     arrives, and nothing after the message in the receive buffer is
 *     written (a guard, and receives larger than their messages);
 *   - the same into a RecvVec of uneven pieces whose bounds fall inside
 *     a read piece, on one, and across two (300001, 1, 524288, 224287,
 *     the rest), pieces listed out of address order;
 *   - rank 0 takes 1 MiB + 5 from every other rank at once: the reads
 *     wait behind each other and each arrives whole;
 *   - over three runs of each schedule, each with new data.
 */
// ranks: 1 2 3 4
// modes: 2 3
#include "helpers.h"

#define GUARD 64
#define RUNS 3

static const size_t SIZES[] = {64 << 10, (512 << 10) + 7, (3 << 19) + 3, (4 << 20) + 1};
#define NSIZES (sizeof(SIZES) / sizeof(SIZES[0]))

static uint64_t seed_of(int run, int from, int to, size_t n) { return h_seed((uint64_t)run, (uint64_t)from, (uint64_t)to, n); }

static void check_guard(const uint8_t *p, size_t n, const char *what, int from)
{
    for (size_t i = 0; i < GUARD; i++)
        CHECKM(p[n + i] == 0xA5, "%s from rank %d: guard byte %zu after %zu bytes was written (0x%02x)", what, from, i, n, p[n + i]);
}

/* Both directions of one pair at once, plain receives. A rank without a
 * peer (the last of an odd group) compiles the same schedules, empty:
 * schedules are matched by compile order. */
static void exchange_plain(int peer)
{
    int paired = peer < h_size;
    for (size_t k = 0; k < NSIZES; k++) {
        size_t n = SIZES[k];
        uint8_t *sbuf = malloc(n), *rbuf = malloc(n + 4096 + GUARD);
        CHECKM(sbuf && rbuf, "malloc of %zu bytes", n);
        GOAL_Graph g = h_graph();
        if (paired) {
            V(GOAL_Send(g, sbuf, (int)n, peer, 1, GOAL_USERSPACE));
            /* The receive is larger than the message: only the message is written. */
            V(GOAL_Recv(g, rbuf, (int)(n + 4096), peer, 1, GOAL_USERSPACE));
        }
        GOAL_Schedule sch = h_compile(g);
        for (int run = 0; run < RUNS; run++) {
            h_fill(sbuf, n, seed_of(run, h_rank, peer, n));
            memset(rbuf, 0xA5, n + 4096 + GUARD);
            h_run(sch);
            if (!paired)
                continue;
            long bad = h_pattern_mismatch(rbuf, n, seed_of(run, peer, h_rank, n));
            CHECKM(bad < 0, "run %d: %zu bytes from rank %d: byte %ld differs", run, n, peer, bad);
            check_guard(rbuf, n, "plain receive", peer);
        }
        h_free_schedule(sch);
        free(sbuf);
        free(rbuf);
    }
}

/* The largest message into a RecvVec of uneven pieces, out of address order. */
static void exchange_vec(int peer)
{
    int paired = peer < h_size;
    size_t n = SIZES[NSIZES - 1];
    size_t lens[5] = {300001, 1, 524288, 224287, 0};
    lens[4] = n - (lens[0] + lens[1] + lens[2] + lens[3]);
    /* Pieces laid out in the buffer in the order 3, 0, 4, 1, 2, each followed by a guard. */
    const int layout[5] = {3, 0, 4, 1, 2};
    size_t at[5], total = 0;
    for (int i = 0; i < 5; i++) {
        at[layout[i]] = total;
        total += lens[layout[i]] + GUARD;
    }
    uint8_t *sbuf = malloc(n), *rbuf = malloc(total), *joined = malloc(n);
    CHECKM(sbuf && rbuf && joined, "malloc");
    void *offs[5];
    int ilens[5];
    for (int i = 0; i < 5; i++) {
        offs[i] = rbuf + at[i];
        ilens[i] = (int)lens[i];
    }
    GOAL_Graph g = h_graph();
    if (paired) {
        V(GOAL_Send(g, sbuf, (int)n, peer, 2, GOAL_USERSPACE));
        V(GOAL_RecvVec(g, offs, ilens, 5, peer, 2, GOAL_USERSPACE));
    }
    GOAL_Schedule sch = h_compile(g);
    for (int run = 0; run < RUNS; run++) {
        h_fill(sbuf, n, seed_of(run + 10, h_rank, peer, n));
        memset(rbuf, 0xA5, total);
        h_run(sch);
        if (!paired)
            continue;
        size_t off = 0;
        for (int i = 0; i < 5; i++) {
            memcpy(joined + off, rbuf + at[i], lens[i]);
            check_guard(rbuf + at[i], lens[i], "RecvVec piece", peer);
            off += lens[i];
        }
        long bad = h_pattern_mismatch(joined, n, seed_of(run + 10, peer, h_rank, n));
        CHECKM(bad < 0, "run %d: %zu bytes from rank %d into 5 pieces: byte %ld differs", run, n, peer, bad);
    }
    h_free_schedule(sch);
    free(sbuf);
    free(rbuf);
    free(joined);
}

/* Rank 0 takes 1 MiB + 5 from every other rank at once. */
static void fan_in(void)
{
    size_t n = (1 << 20) + 5;
    uint8_t *buf = malloc(h_rank == 0 ? (size_t)h_size * (n + GUARD) : n);
    CHECKM(buf != NULL, "malloc");
    GOAL_Graph g = h_graph();
    if (h_rank == 0) {
        for (int p = 1; p < h_size; p++)
            V(GOAL_Recv(g, buf + (size_t)p * (n + GUARD), (int)n, p, 3, GOAL_USERSPACE));
    } else {
        V(GOAL_Send(g, buf, (int)n, 0, 3, GOAL_USERSPACE));
    }
    GOAL_Schedule sch = h_compile(g);
    for (int run = 0; run < RUNS; run++) {
        if (h_rank == 0)
            memset(buf, 0xA5, (size_t)h_size * (n + GUARD));
        else
            h_fill(buf, n, seed_of(run + 20, h_rank, 0, n));
        h_run(sch);
        for (int p = 1; h_rank == 0 && p < h_size; p++) {
            uint8_t *at = buf + (size_t)p * (n + GUARD);
            long bad = h_pattern_mismatch(at, n, seed_of(run + 20, p, 0, n));
            CHECKM(bad < 0, "run %d: %zu bytes from rank %d (of %d at once): byte %ld differs", run, n, p, h_size - 1, bad);
            check_guard(at, n, "fan-in", p);
        }
    }
    h_free_schedule(sch);
    free(buf);
}

int main(int argc, char **argv)
{
    /* Before GOAL_Init: every large message by Cross Memory Attach. */
    setenv("GOAL_CMA_MIN", "64K", 1);
    setenv("GOAL_CMA_MAX", "1G", 1);
    h_init(argc, argv);
    int peer = h_rank ^ 1;
    exchange_plain(peer);
    exchange_vec(peer);
    if (peer < h_size)
        printf("rank %d: exchanges with rank %d of %zu sizes and into 5 pieces: ok\n", h_rank, peer, NSIZES);
    fan_in();
    if (h_rank == 0)
        printf("rank 0: 1 MiB + 5 from %d rank(s) at once: ok\n", h_size - 1);
    return h_finish();
}
