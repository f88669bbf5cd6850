/*
 * t_push_refused: a sender that may not write into its busy receiver's
 * memory (the receiver is not dumpable, the sender lacks CAP_SYS_PTRACE:
 * process_vm_writev fails with EPERM) sends the message by the stream
 * instead, and the receiver asks that sender for no more pushes.
 *
 * Rank 1 sends 4 MiB to rank 0, offered by CMA (set before GOAL_Init), 3
 * times. Rank 0 starts 30 ms after rank 1 each time, with an 8 MiB copy of
 * its own queued behind the receive, so it asks rank 1 to write (see
 * t_killed_mid_write.c); rank 1 checks first that such a write is refused.
 *
 * Built with SPLIT (t_split_refused.c), rank 0 is idle instead: after a
 * first 64 KiB message by CMA (a receiver splits only once a read of a
 * peer's memory has worked), rank 1 starts 30 ms after rank 0 each time,
 * so rank 0 reads the first half itself and asks rank 1 to write the
 * second (CTS in split mode); refused, rank 0 reads the rest too.
 *
 * Built with SPLIT and HEAP_BUFFERS (t_heap_split_refused.c), the message
 * buffers come from the shared heap: rank 0 copies its half out of rank
 * 1's heap, the refused write leaves it the rest, copied the same way.
 *
 * Asserts: every execution succeeds on both ranks, with every byte of the
 * message and of the copy in place.
 */
// ranks: 2
#include "helpers.h"
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#ifndef SPLIT
#define SPLIT 0
#endif
#ifndef HEAP_BUFFERS
#define HEAP_BUFFERS 0
#endif

#define BYTES (4 << 20)
#define OWN (8 << 20)

/* Drops CAP_SYS_PTRACE from this process's effective set (if it had it). */
static void drop_ptrace_cap(void)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    CHECKM(syscall(SYS_capget, &hdr, data) == 0, "capget: %s", strerror(errno));
    data[0].effective &= ~(1u << CAP_SYS_PTRACE);
    CHECKM(syscall(SYS_capset, &hdr, data) == 0, "capset: %s", strerror(errno));
}

int main(int argc, char **argv)
{
    setenv("GOAL_CMA_MIN", "64K", 1);
    setenv("GOAL_CMA_MAX", "1G", 1);
    h_init(argc, argv);
    char *buf = HEAP_BUFFERS ? GOAL_Alloc(BYTES) : malloc(BYTES), *own = malloc(OWN), *copy = malloc(OWN);
    CHECKM(buf != NULL && own != NULL && copy != NULL, "malloc");
    memset(own, 7, OWN);

    /* Rank 0 tells rank 1 its pid and where the buffer is, to check that a
     * write is refused indeed. */
    long where[2] = {(long)getpid(), (long)(uintptr_t)buf};
    GOAL_Graph g0 = h_graph();
    if (h_rank == 0)
        V(GOAL_Send(g0, where, sizeof where, 1, 9, GOAL_USERSPACE));
    else
        V(GOAL_Recv(g0, where, sizeof where, 0, 9, GOAL_USERSPACE));
    GOAL_Schedule s0 = h_compile(g0);
    if (h_rank == 0)
        CHECKM(prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0, "prctl(PR_SET_DUMPABLE, 0): %s", strerror(errno));
    else
        drop_ptrace_cap();
    CHECK_OK(GOAL_Wait(GOAL_Run(s0)));
    if (h_rank == 1) {
        char byte = 1;
        struct iovec local = {&byte, 1}, remote = {(void *)(uintptr_t)where[1], 1};
        ssize_t n = process_vm_writev((pid_t)where[0], &local, 1, &remote, 1, 0);
        if (n >= 0 || errno != EPERM)
            h_skip("rank 1 may write into rank 0 after all (nothing to test here)");
    }

    GOAL_Schedule s;
    if (SPLIT) {
        GOAL_Graph w = h_graph(), g = h_graph();
        if (h_rank == 1) {
            V(GOAL_Send(w, buf, 64 << 10, 0, 2, GOAL_USERSPACE));
            V(GOAL_Send(g, buf, BYTES, 0, 1, GOAL_USERSPACE));
        } else {
            V(GOAL_Recv(w, buf, 64 << 10, 1, 2, GOAL_USERSPACE));
            V(GOAL_Recv(g, buf, BYTES, 1, 1, GOAL_USERSPACE));
        }
        h_run(h_compile(w));
        s = h_compile(g);
    } else {
        s = h_busy_receiver_schedule(buf, BYTES, own, copy, OWN);
    }
    for (int round = 0; round < 3; round++) {
        if (h_rank == 1)
            memset(buf, 10 + round, BYTES);
        else {
            memset(buf, 0, BYTES);
            memset(copy, 0, OWN);
        }
        h_sync();
        if (h_rank == (SPLIT ? 1 : 0))
            h_sleep_ms(30);
        CHECK_OK(GOAL_Wait(GOAL_Run(s)));
        if (h_rank == 0) {
            for (size_t i = 0; i < BYTES; i += 997)
                CHECKM(buf[i] == 10 + round, "round %d: byte %zu of the message is %d", round, i, buf[i]);
            CHECKM(SPLIT || memcmp(own, copy, OWN) == 0, "round %d: the copy is wrong", round);
        }
    }
    h_sync();
    return h_finish();
}
