/* Built at test time by tests/mpi.rs with each MPI's mpicc.
 *
 *   mpi_hello        every rank prints its rank and the hostname it sees,
 *                    after an allreduce that needs every host to reach every
 *                    other (a launch that "works" but cannot talk across
 *                    hosts fails here, not later).
 *   mpi_hello bw MB  rank 0 sends MB MiB to the last rank, which must be on
 *                    another host; rank 0 prints the rate. Checks that the
 *                    MPI's data goes through the emulated rails (and their
 *                    rate limit) instead of around them through shared memory.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int bandwidth(int rank, int size, long mib) {
    size_t n = (size_t)mib << 20;
    char *buf = malloc(n);
    if (!buf) return 1;
    memset(buf, rank, n);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    if (rank == 0)
        MPI_Send(buf, (int)n, MPI_BYTE, size - 1, 0, MPI_COMM_WORLD);
    else if (rank == size - 1)
        MPI_Recv(buf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime() - t;
    if (rank == 0) printf("gbit_per_s %.3f\n", n * 8.0 / t / 1e9);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    int rank, size, rc = 0;
    char host[256] = "";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc == 3 && strcmp(argv[1], "bw") == 0) {
        rc = bandwidth(rank, size, atol(argv[2]));
    } else {
        gethostname(host, sizeof host - 1);
        int mine = rank + 1, sum = 0;
        MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        printf("rank %d of %d on %s sum %d\n", rank, size, host, sum);
        rc = sum == size * (size + 1) / 2 ? 0 : 1;
    }
    fflush(stdout);
    MPI_Finalize();
    return rc;
}
