/* The program bench/instr.sh counts instructions in: a 2-rank ping-pong of one
 * schedule per rank, run N times with GOAL_Run + GOAL_Wait.
 *
 *   usage: instr_pingpong N BYTES
 *          instr_pingpong N barrier      (any number of ranks: GOAL_ALG_AUTO's barrier)
 *
 * Rank 0 sends BYTES and receives the reply (two independent operations);
 * rank 1 receives, then sends the same bytes back (the send requires the
 * receive). instr.sh runs rank 0 under callgrind and rank 1 natively: rank 1
 * then answers long before slowed-down rank 0 polls, so rank 0's receive is
 * always posted and the reply always there at its first poll, and the count
 * per iteration is the same from run to run (a symmetric exchange's count
 * varies with the polls that find nothing).
 *
 * The barrier mode counts the other path of small collectives with more
 * ranks than cores: the peers, running natively, are always ahead of rank 0
 * under callgrind, so every message rank 0 receives came before the
 * execution it belongs to started there (an unexpected message, kept until
 * its receive starts). */
#include <goal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char sbuf[1 << 16], rbuf[1 << 16];

/* The ping-pong's schedule of this rank (see the header), NULL if not 2 ranks. */
static GOAL_Schedule pingpong(int k) {
    if (GOAL_GroupSize() != 2) {
        fprintf(stderr, "instr_pingpong: needs 2 ranks\n");
        return NULL;
    }
    GOAL_Graph g = GOAL_CreateGraph();
    if (GOAL_MyRank() == 0) {
        GOAL_Send(g, sbuf, k, 1, 0, GOAL_USERSPACE);
        GOAL_Recv(g, rbuf, k, 1, 0, GOAL_USERSPACE);
    } else {
        GOAL_Vertex v = GOAL_Recv(g, rbuf, k, 0, 0, GOAL_USERSPACE);
        GOAL_Vertex w = GOAL_Send(g, rbuf, k, 0, 0, GOAL_USERSPACE);
        GOAL_Requires(g, v, w);
    }
    GOAL_Schedule s = GOAL_Compile(g);
    GOAL_FreeGraph(g);
    if (!s) fprintf(stderr, "instr_pingpong: GOAL_Compile: %s\n", GOAL_LastError());
    return s;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s N BYTES|barrier\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]), k = atoi(argv[2]), barrier = !strcmp(argv[2], "barrier");
    if (k < 0 || k > (int)sizeof sbuf) {
        fprintf(stderr, "instr_pingpong: BYTES must be 0..%zu\n", sizeof sbuf);
        return 2;
    }
    if (GOAL_Init() != GOAL_SUCCESS) {
        fprintf(stderr, "instr_pingpong: GOAL_Init: %s\n", GOAL_LastError());
        return 1;
    }
    GOAL_Schedule s = barrier ? GOAL_Barrier_init(GOAL_ALG_AUTO) : pingpong(k);
    if (!s) {
        if (barrier) fprintf(stderr, "instr_pingpong: GOAL_Barrier_init: %s\n", GOAL_LastError());
        return 1;
    }
    for (int i = 0; i < n; i++) {
        if (GOAL_Wait(GOAL_Run(s)) != GOAL_SUCCESS) {
            fprintf(stderr, "instr_pingpong: iteration %d: %s\n", i, GOAL_LastError());
            return 1;
        }
    }
    GOAL_FreeSchedule(s);
    GOAL_Finalize();
    return 0;
}
