/*
 * t_killed_mid_split: the sender of a large message dies while it writes
 * its half of the message into an idle receiver (the receiver reads the
 * first half and asked the waiting sender to write the second: CTS in
 * split mode, see goal-rt's engine, `SPLIT_MIN`). Built with
 * KILL_RECEIVER (t_receiver_killed_mid_split.c), the receiver dies instead.
 *
 * Built with HEAP_BUFFERS (t_killed_mid_heap_split.c), both buffers come
 * from the shared heap: the receiver copies its half out of the sender's
 * heap, the sender writes the other half by CMA as before.
 *
 * Rank 1 sends 1 GiB to rank 0, offered by CMA (set before GOAL_Init).
 * Rank 0 starts first and waits; rank 1 starts 30 ms later and waits too
 * (a sender writes its half only while its application waits). A kernel
 * timer sends SIGKILL to the rank to die 30 ms after rank 1's Run, while
 * both copy (a message this long takes some 100 ms and more to copy here).
 *
 * Asserts (the runner checks the output, see the expect lines below):
 *   - the dying rank's Wait does not return before the signal;
 *   - the survivor's GOAL_Wait returns GOAL_ERR_PEER_LOST within 15 s, and
 *     it prints "survivor-saw-error" with the text and exits with status 3
 *     (with HEAP_BUFFERS, a message read whole before the death was seen
 *     may succeed: its bytes are checked, and the next receive from the
 *     dead rank must fail instead);
 *   - goalrun exits non-zero and names the killed rank and the signal.
 * In manual mode nothing is split: rank 0 reads the message, and the
 * survivor sees the death the same way.
 */
// ranks: 2
// expect-fail: (rank[ =:#]*1([^0-9]|$).*(sigkill|signal 9))|((sigkill|signal 9).*rank[ =:#]*1([^0-9]|$))
// expect-survivors: survivor-saw-error
// modes: 2
#include "helpers.h"
#include <time.h>

#ifndef KILL_RECEIVER
#define KILL_RECEIVER 0
#endif
#ifndef HEAP_BUFFERS
#define HEAP_BUFFERS 0
#endif

#define BYTES (1L << 30)

/* SIGKILL to this process in `ms` milliseconds, from a kernel timer: a
 * thread sleeping that long may find no CPU free in time while both ranks
 * copy (it came 200 ms late in a fifth of the runs). */
static void kill_in(int ms)
{
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGKILL};
    timer_t t;
    CHECKM(timer_create(CLOCK_MONOTONIC, &ev, &t) == 0, "timer_create: %s", strerror(errno));
    struct itimerspec when = {.it_value = {ms / 1000, (long)(ms % 1000) * 1000000L}};
    fflush(NULL);
    CHECKM(timer_settime(t, 0, &when, NULL) == 0, "timer_settime: %s", strerror(errno));
}

int main(int argc, char **argv)
{
    setenv("GOAL_CMA_MIN", "64K", 1);
    setenv("GOAL_CMA_MAX", "2G", 1);
    h_init(argc, argv);
    char *buf = HEAP_BUFFERS ? GOAL_Alloc(BYTES) : malloc(BYTES);
    CHECKM(buf != NULL, "%s of %ld bytes", HEAP_BUFFERS ? "GOAL_Alloc" : "malloc", BYTES);
    memset(buf, h_rank + 1, BYTES);

    /* A first message by CMA: a receiver splits a message only once a read
     * of a peer's memory has worked. */
    GOAL_Graph w = h_graph();
    if (h_rank == 1)
        V(GOAL_Send(w, buf, 64 << 10, 0, 2, GOAL_USERSPACE));
    else
        V(GOAL_Recv(w, buf, 64 << 10, 1, 2, GOAL_USERSPACE));
    h_run(h_compile(w));

    GOAL_Graph g = h_graph();
    if (h_rank == 1)
        V(GOAL_Send(g, buf, BYTES, 0, 1, GOAL_USERSPACE));
    else
        V(GOAL_Recv(g, buf, BYTES, 1, 1, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);

    /* The receiver first: the request finds it idle. */
    h_sync();
    if (h_rank == 1)
        h_sleep_ms(30);
    double t0 = h_now();
    GOAL_Handle h = GOAL_Run(s);
    CHECK(h != NULL);
    if (h_rank == (KILL_RECEIVER ? 0 : 1)) {
        kill_in(KILL_RECEIVER ? 60 : 30);
        int rc = GOAL_Wait(h);
        FAILF("the execution ended (GOAL_Wait returned %d after %.3f s) before its rank was killed", rc, h_now() - t0);
    }
#if HEAP_BUFFERS
    /* The receiver reads the sender's heap, which stays mapped after the
     * sender dies: where it read every byte before it noticed the death
     * (manual mode, nothing split, on a slow machine), the message did
     * arrive whole and its Wait rightly succeeds. Then the bytes must be
     * the sender's, and the next message from the dead rank must fail. */
    int rc = GOAL_Wait(h);
    if (rc == GOAL_SUCCESS) {
        for (long i = 0; i < BYTES; i++)
            CHECKM(buf[i] == 2, "byte %ld of a message read whole from the dead sender's heap is %d, expected 2", i, buf[i]);
        GOAL_Graph after = h_graph();
        V(GOAL_Recv(after, buf, 8, 1, 3, GOAL_USERSPACE));
        h_expect_peer_lost(GOAL_Run(h_compile(after)), t0, " (the 1 GiB message had arrived whole)");
    }
    h_expect_peer_lost_rc(rc, t0, "");
#else
    h_expect_peer_lost(h, t0, "");
#endif
}
