// A rank killed in the middle of a loop of non-blocking collectives (while
// its peers wait in MPI_Wait for a collective on goal): the job must end,
// with an error, within the timeout, never hang. The survivors end either
// through goal (the collective fails: "a collective failed on goal", then
// MPI's error handler aborts) or through the launcher, which ends the job
// when a rank dies.
// ranks: 2 3
// timeout: 60
// expect-exit: nonzero
// expect: killed|KILLED|signal 9|exit code|EXIT CODE|a collective failed on goal
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double x[4096], y[4096];
    for (int i = 0; i < 4096; i++)
        x[i] = rank;
    for (int it = 0; it < 1000000; it++) {
        MPI_Request q;
        MPI_Iallreduce(x, y, 4096, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
        if (rank == 1 && it == 200)
            kill(getpid(), SIGKILL);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    printf("FAIL rank %d: the loop ended although rank 1 was killed\n", rank);
    MPI_Finalize();
    return 0;
}
