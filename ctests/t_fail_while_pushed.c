/*
 * t_fail_while_pushed: an execution fails while a sender still writes a
 * large message into one of its receive buffers (a push the busy receiver
 * asked for, see goal-rt's engine, `Write`). GOAL_Wait must return only
 * once nothing more is written there: afterwards the buffer is the
 * application's again.
 *
 * Rank 1 sends 512 MiB to rank 0, offered by CMA (set before GOAL_Init);
 * rank 2 sends 100 bytes to rank 0. Rank 0 starts 30 ms after them, when
 * both are waiting: its execution receives the 512 MiB (queued behind it:
 * the next receive, so rank 0 is busy and asks rank 1 to write), then
 * receives rank 2's message into 10 bytes, a truncation that fails the
 * execution while rank 1 writes.
 *
 * Asserts:
 *   - rank 0's GOAL_Wait returns GOAL_ERR_TRUNCATED;
 *   - after it returns, rank 0 fills the 512 MiB buffer with 0x5A, waits
 *     200 ms, and finds every byte still 0x5A (nothing written late);
 *   - ranks 1 and 2 end their sends without an error.
 */
// ranks: 3
#include "helpers.h"

#define BYTES (512 << 20)

int main(int argc, char **argv)
{
    setenv("GOAL_CMA_MIN", "64K", 1);
    setenv("GOAL_CMA_MAX", "1G", 1);
    h_init(argc, argv);
    char *buf = malloc(BYTES);
    char small[100];
    CHECKM(buf != NULL, "malloc of %d bytes", BYTES);
    memset(buf, h_rank + 1, BYTES);
    memset(small, 3, sizeof small);

    GOAL_Graph g = h_graph();
    if (h_rank == 1) {
        V(GOAL_Send(g, buf, BYTES, 0, 1, GOAL_USERSPACE));
    } else if (h_rank == 2) {
        V(GOAL_Send(g, small, sizeof small, 0, 2, GOAL_USERSPACE));
    } else {
        V(GOAL_Recv(g, buf, BYTES, 1, 1, GOAL_USERSPACE));
        V(GOAL_Recv(g, small, 10, 2, 2, GOAL_USERSPACE));
    }
    GOAL_Schedule s = h_compile(g);

    h_sync();
    if (h_rank == 0)
        h_sleep_ms(30);
    GOAL_Handle h = GOAL_Run(s);
    CHECK(h != NULL);
    int rc = GOAL_Wait(h);
    if (h_rank != 0) {
        CHECKM(rc == GOAL_SUCCESS, "rank %d's send: GOAL_Wait returned %d (%s)", h_rank, rc, h_last_error());
    } else {
        CHECKM(rc == GOAL_ERR_TRUNCATED, "GOAL_Wait returned %d (%s), expected GOAL_ERR_TRUNCATED", rc, h_last_error());
        memset(buf, 0x5A, BYTES);
        h_sleep_ms(200);
        for (size_t i = 0; i < BYTES; i += 512) {
            CHECKM(buf[i] == 0x5A, "byte %zu of the receive buffer changed after GOAL_Wait returned", i);
        }
    }
    h_sync();
    return h_finish();
}
