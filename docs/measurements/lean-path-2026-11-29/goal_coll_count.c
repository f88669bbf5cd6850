/* One collective, run ITERS times after 50 warm-up runs, for event counts
 * (bench/..., see README.md): goalrun -n 4 ./goal_coll_count COLL ALG BYTES ITERS
 * COLL: allgather, alltoall, allreduce, reduce_scatter (block), barrier; ALG: a
 * GOAL_ALG_* number (0 = AUTO); BYTES: one rank's contribution (allreduce: the
 * vector, of doubles). With PIN set, rank r pins itself to CPU r % 2, as
 * bench/coll.py's programs do. */
#include "pin.h"
#include <goal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s COLL ALG BYTES ITERS\n", argv[0]);
        return 2;
    }
    const char *c = argv[1];
    int alg = atoi(argv[2]), n = atoi(argv[4]);
    size_t b = strtoul(argv[3], 0, 0);
    if (GOAL_Init()) return 1;
    int r = GOAL_MyRank(), p = GOAL_GroupSize();
    pin_if_asked(r);
    char *s = calloc(p, b), *d = calloc(p, b);
    GOAL_Schedule sc = 0;
    if (!strcmp(c, "allgather")) sc = GOAL_Allgather_init(s, b, d, alg);
    else if (!strcmp(c, "alltoall")) sc = GOAL_Alltoall_init(s, b, d, alg);
    else if (!strcmp(c, "allreduce")) sc = GOAL_Allreduce_init(s, d, b / 8, GOAL_FLOAT, 64, GOAL_ADD, alg);
    else if (!strcmp(c, "reduce_scatter")) sc = GOAL_Reduce_scatter_block_init(s, d, b / 8, GOAL_FLOAT, 64, GOAL_ADD, alg);
    else if (!strcmp(c, "barrier")) sc = GOAL_Barrier_init(alg);
    if (!sc) {
        fprintf(stderr, "%s: %s\n", c, GOAL_LastError());
        return 1;
    }
    for (int i = 0; i < n + 50; i++)
        if (GOAL_Wait(GOAL_Run(sc))) {
            fprintf(stderr, "%s: %s\n", c, GOAL_LastError());
            return 1;
        }
    GOAL_Finalize();
    return 0;
}
