// GOAL_MPI=0: the layer is off, goal never starts, every call goes to MPI
// untouched (and is reported so), and works.
// ranks: 1 3
// env: GOAL_MPI=0
// expect: off: ok
// expect: goal-mpi \(rank 0\): MPI_Iallreduce: 0 on goal, 20 to MPI
// expect: goal not running
// expect-none: goal runs the non-blocking collectives
#include <mpi.h>
#include <stdio.h>

#include "helpers.h"

int main(int argc, char **argv)
{
    int r, n;
    t_start(&argc, &argv, &r, &n);
    for (int i = 0; i < 20; i++) {
        int x = r + i, y = -1;
        MPI_Request q;
        MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        CHECK(y == n * (n - 1) / 2 + n * i, "allreduce %d gave %d", i, y);
    }
    if (r == 0)
        printf("off: ok\n");
    MPI_Finalize();
    return 0;
}
