/* The MPI side of goal_coll_count.c: mpirun -n 4 ./mpi_coll_count COLL 0 BYTES ITERS. */
#include "pin.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc != 5) {
        fprintf(stderr, "usage: %s COLL 0 BYTES ITERS\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *c = argv[1];
    size_t b = strtoul(argv[3], 0, 0);
    int n = atoi(argv[4]), p, r;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    pin_if_asked(r);
    char *s = calloc(p, b), *d = calloc(p, b);
    for (int i = 0; i < n + 50; i++) {
        if (!strcmp(c, "allgather")) MPI_Allgather(s, b, MPI_BYTE, d, b, MPI_BYTE, MPI_COMM_WORLD);
        else if (!strcmp(c, "alltoall")) MPI_Alltoall(s, b, MPI_BYTE, d, b, MPI_BYTE, MPI_COMM_WORLD);
        else if (!strcmp(c, "allreduce")) MPI_Allreduce(s, d, b / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else if (!strcmp(c, "reduce_scatter")) MPI_Reduce_scatter_block(s, d, b / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
