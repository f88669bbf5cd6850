/*
 * t_killed_mid_write: the sender of a large message dies while it writes
 * the message into its busy receiver's memory (the receiver asked it to:
 * CTS in push mode, see goal-rt's engine, `Write`). Built with
 * KILL_RECEIVER (t_receiver_killed_mid_write.c), the receiver dies instead.
 *
 * Rank 1 sends 512 MiB to rank 0, offered by CMA (set before GOAL_Init).
 * Rank 0 starts 30 ms after rank 1, when the request is waiting, with a
 * 64 MiB copy of its own queued behind the receive: it asks rank 1 to
 * write, and copies. Here rank 1 drives its execution for 60 ms and
 * raise(SIGKILL)s itself while rank 0 waits; with KILL_RECEIVER rank 0
 * drives until the first bytes of the message have come and
 * raise(SIGKILL)s itself while rank 1 writes the rest.
 *
 * Asserts (the runner checks the output, see the expect lines below):
 *   - the survivor's GOAL_Wait returns GOAL_ERR_PEER_LOST within 15 s, and
 *     it prints "survivor-saw-error" with the text (here: how much of the
 *     message came first, the death may meet the write before it began)
 *     and exits with status 3;
 *   - goalrun exits non-zero and names the killed rank and the signal.
 * In manual mode nothing is pushed (senders write only inside goal calls):
 * rank 0 reads, and the survivor sees the death the same way.
 */
// ranks: 2
// expect-fail: (rank[ =:#]*1([^0-9]|$).*(sigkill|signal 9))|((sigkill|signal 9).*rank[ =:#]*1([^0-9]|$))
// expect-survivors: survivor-saw-error
// modes: 2
#include "helpers.h"

#ifndef KILL_RECEIVER
#define KILL_RECEIVER 0
#endif

#define BYTES (512 << 20)
#define OWN (64 << 20)

int main(int argc, char **argv)
{
    setenv("GOAL_CMA_MIN", "64K", 1);
    setenv("GOAL_CMA_MAX", "1G", 1);
    h_init(argc, argv);
    char *buf = malloc(BYTES), *own = malloc(OWN), *copy = malloc(OWN);
    CHECKM(buf != NULL && own != NULL && copy != NULL, "malloc of %d + 2 x %d bytes", BYTES, OWN);
    /* The receiver that dies leaves its buffer untouched: the sender's
     * write then faults its pages in, which keeps it going well after the
     * death on a fast machine (it reads as zeros, never as the sender's 2). */
    if (!(KILL_RECEIVER && h_rank == 0))
        memset(buf, h_rank + 1, BYTES);
    memset(own, 7, OWN);
    memset(copy, 0, OWN);

    GOAL_Schedule s = h_busy_receiver_schedule(buf, BYTES, own, copy, OWN);

    /* Both alive, connected and ready to run: from here rank 0 starts 30 ms
     * after rank 1. */
    h_sync();
    if (h_rank == 0)
        h_sleep_ms(30);
    double t0 = h_now();
    GOAL_Handle h = GOAL_Run(s);
    CHECK(h != NULL);
    if (h_rank == (KILL_RECEIVER ? 0 : 1)) {
        volatile char *first = buf;
        while (KILL_RECEIVER ? *first != 2 : h_now() - t0 < 0.06) {
            int rc = GOAL_Test(h);
            CHECKM(rc == 0, "the execution ended before its rank was killed: GOAL_Test returned %d", rc);
            CHECKM(h_now() - t0 < 10.0, "the sender's write did not begin within 10 s");
        }
        /* The receiver dies as soon as the write has begun, with no goal
         * call between (one may run the 64 MiB copy while the sender writes
         * on): a quarter or half of the message came first when it drove on
         * to a quarter, and at 8 GB/s the sender sometimes finished before
         * the death (rightly ending without an error). */
        fflush(NULL);
        raise(SIGKILL);
        FAILF("still alive after raise(SIGKILL)");
    }
    char detail[64] = "";
    if (!KILL_RECEIVER) {
        /* How much the sender wrote before it died (its bytes are 2, ours were 1). */
        size_t written = 0;
        for (size_t i = 0; i < BYTES; i += 4096)
            written += buf[i] == 2;
        snprintf(detail, sizeof detail, " (about %zu of %d MiB written)", written >> 8, BYTES >> 20);
    }
    h_expect_peer_lost(h, t0, detail);
}
