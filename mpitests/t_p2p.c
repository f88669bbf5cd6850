// A program with point-to-point MPI and blocking collectives only, the
// blocking ones left to MPI (GOAL_MPI_BLOCKING=0; t_blocking has them on
// goal): the layer serves nothing (its report lists no function) and
// breaks nothing: a ring of blocking and non-blocking messages, wildcards,
// a communicator split, MPI_Allreduce, all checked.
// ranks: 1 2 3 4
// env: GOAL_MPI_BLOCKING=0
// expect: p2p: ok
// expect-none: on goal|to MPI
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int it = 0; it < 200; it++) {
        int out = rank * 100 + it, in = -1, in2 = -1;
        MPI_Status st;
        MPI_Sendrecv(&out, 1, MPI_INT, right, it, &in, 1, MPI_INT, left, it, MPI_COMM_WORLD, &st);
        MPI_Request q[2];
        MPI_Irecv(&in2, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &q[0]);
        MPI_Isend(&out, 1, MPI_INT, right, 7, MPI_COMM_WORLD, &q[1]);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        if (in != left * 100 + it || in2 != left * 100 + it || st.MPI_SOURCE != left) {
            printf("FAIL rank %d: round %d got %d and %d\n", rank, it, in, in2);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int one = 1, n = 0;
    MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, half);
    if (n != (size + (rank % 2 ? 0 : 1)) / 2) {
        printf("FAIL rank %d: half has %d\n", rank, n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_free(&half);
    if (rank == 0)
        printf("p2p: ok\n");
    MPI_Finalize();
    return 0;
}
