// Rooted collectives as MPI programs write them: NULL for the buffers and
// counts only the root uses (reduce's and gather's receive buffer,
// scatter's send buffer, gatherv's and scatterv's counts and
// displacements) on the other ranks, every root in turn. All on goal.
// ranks: 1 2 3 4
// expect: roots: ok
// expect: goal-mpi \(rank 0\): MPI_Igatherv: [1-9][0-9]* on goal, 0 to MPI
// expect-none: [1-9][0-9]* to MPI$
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "helpers.h"

int main(int argc, char **argv)
{
    int r, n;
    t_start(&argc, &argv, &r, &n);
    enum { M = 1000 };
    static int x[M], y[M * 8], z[M];
    int c[8], d[8];
    for (int i = 0; i < M; i++)
        x[i] = r + i;
    for (int i = 0; i < n; i++)
        c[i] = 10 + i, d[i] = 20 * i;
    for (int root = 0; root < n; root++) {
        int me = r == root;
        MPI_Request q;
        memset(y, 0xff, sizeof y);
        MPI_Ireduce(x, me ? y : NULL, M, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        CHECK(!me || y[5] == n * (n - 1) / 2 + 5 * n, "reduce to %d: %d", root, y[5]);
        MPI_Igather(x, M, MPI_INT, me ? y : NULL, M, MPI_INT, root, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int k = 0; me && k < n; k++)
            CHECK(y[M * k + 3] == k + 3, "gather to %d: block %d", root, k);
        MPI_Iscatter(me ? y : NULL, M, MPI_INT, z, M, MPI_INT, root, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        CHECK(z[3] == r + 3, "scatter from %d: %d", root, z[3]);
        MPI_Igatherv(x, 10 + r, MPI_INT, me ? y : NULL, me ? c : NULL, me ? d : NULL, MPI_INT, root, MPI_COMM_WORLD,
                     &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int k = 0; me && k < n; k++)
            CHECK(y[20 * k + 9 + k] == k + 9 + k, "gatherv to %d: block %d", root, k);
        memset(z, 0, sizeof z);
        MPI_Iscatterv(me ? y : NULL, me ? c : NULL, me ? d : NULL, MPI_INT, z, 10 + r, MPI_INT, root, MPI_COMM_WORLD,
                      &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        CHECK(z[9 + r] == r + 9 + r && z[10 + r] == 0, "scatterv from %d: %d", root, z[9 + r]);
    }
    if (r == 0)
        printf("roots: ok\n");
    MPI_Finalize();
    return 0;
}
