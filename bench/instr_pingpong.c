/* The program bench/instr.sh counts instructions in: a 2-rank ping-pong of one
 * schedule per rank, run N times with GOAL_Run + GOAL_Wait.
 *
 *   usage: instr_pingpong N BYTES
 *
 * Rank 0 sends BYTES and receives the reply (two independent operations);
 * rank 1 receives, then sends the same bytes back (the send requires the
 * receive). instr.sh runs rank 0 under callgrind and rank 1 natively: rank 1
 * then answers long before slowed-down rank 0 polls, so rank 0's receive is
 * always posted and the reply always there at its first poll, and the count
 * per iteration is the same from run to run (a symmetric exchange's count
 * varies with the polls that find nothing). */
#include <goal.h>
#include <stdio.h>
#include <stdlib.h>

static char sbuf[1 << 16], rbuf[1 << 16];

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s N BYTES\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]), k = atoi(argv[2]);
    if (k < 0 || k > (int)sizeof sbuf) {
        fprintf(stderr, "instr_pingpong: BYTES must be 0..%zu\n", sizeof sbuf);
        return 2;
    }
    if (GOAL_Init() != GOAL_SUCCESS) {
        fprintf(stderr, "instr_pingpong: GOAL_Init: %s\n", GOAL_LastError());
        return 1;
    }
    if (GOAL_GroupSize() != 2) {
        fprintf(stderr, "instr_pingpong: needs 2 ranks\n");
        return 2;
    }
    int r = GOAL_MyRank();
    GOAL_Graph g = GOAL_CreateGraph();
    if (r == 0) {
        GOAL_Send(g, sbuf, k, 1, 0, GOAL_USERSPACE);
        GOAL_Recv(g, rbuf, k, 1, 0, GOAL_USERSPACE);
    } else {
        GOAL_Vertex v = GOAL_Recv(g, rbuf, k, 0, 0, GOAL_USERSPACE);
        GOAL_Vertex w = GOAL_Send(g, rbuf, k, 0, 0, GOAL_USERSPACE);
        GOAL_Requires(g, v, w);
    }
    GOAL_Schedule s = GOAL_Compile(g);
    GOAL_FreeGraph(g);
    if (!s) {
        fprintf(stderr, "instr_pingpong: GOAL_Compile: %s\n", GOAL_LastError());
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
