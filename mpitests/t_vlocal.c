// Igatherv, Iscatterv and Ialltoallv from the layer's cache of schedules
// keyed by each rank's own counts (docs/mpi.md): 60 rounds with new
// buffers, where rank r's counts change every r+1 rounds, so that at most
// calls some ranks reuse a schedule while others compile one; roots move,
// the root gathers in place every fifth round. Results against MPI's
// blocking forms (which go to MPI), bytes outside the blocks untouched;
// the report shows every call on goal. At 3 ranks the ranks' caches hit
// and miss differently (the calls and the cache's eviction are
// deterministic: rank 0 compiles 38 of its 180 schedules, rank 1 42, rank
// 2 46), and every result is still right: the schedules paired call by call.
// ranks: 3
// timeout: 120
// expect: vlocal: ok
// expect: goal-mpi \(rank 0\): MPI_Igatherv: 60 on goal, 0 to MPI
// expect: goal-mpi \(rank 0\): MPI_Iscatterv: 60 on goal, 0 to MPI
// expect: goal-mpi \(rank 0\): MPI_Ialltoallv: 60 on goal, 0 to MPI
// expect: goal-mpi \(rank 0\): schedules: 38 compiled, 142 reused from the cache
// expect: goal-mpi \(rank 1\): schedules: 42 compiled, 138 reused from the cache
// expect: goal-mpi \(rank 2\): schedules: 46 compiled, 134 reused from the cache
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include "helpers.h"

#define ROUNDS 60
#define PAD 7

/* Rank i's block in round `it`, to or from peer j (j = -1: its own block
 * of gatherv and scatterv): changes every i+1 rounds. */
static int cnt(int it, int i, int j)
{
    int phase = (it / (i + 1)) % 3;
    return 1 + phase * 3 + (j < 0 ? i : (i + 2 * j) % 4);
}

static int *ints(int n, int fill)
{
    int *p = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    CHECK(p != NULL, "no memory");
    for (int i = 0; i < n; i++)
        p[i] = fill;
    return p;
}

int main(int argc, char **argv)
{
    int rank, size;
    t_start(&argc, &argv, &rank, &size);
    for (int it = 0; it < ROUNDS; it++) {
        int root = it % size;
        int *counts = ints(size, 0), *displs = ints(size, 0), total = 0;
        for (int i = 0; i < size; i++)
            counts[i] = cnt(it, i, -1), displs[i] = total + PAD * (i + 1), total = displs[i] + counts[i];
        total += PAD;

        /* gatherv (in place at the root every fifth round) */
        int mine = counts[rank], *s = ints(mine, 0), *r = ints(total, -7), *ref = ints(total, -7);
        for (int k = 0; k < mine; k++)
            s[k] = it * 1000 + rank * 100 + k;
        int inplace = rank == root && it % 5 == 0;
        if (inplace)
            memcpy(r + displs[rank], s, sizeof(int) * (size_t)mine);
        MPI_Request q;
        CHECK(MPI_Igatherv(inplace ? MPI_IN_PLACE : s, mine, MPI_INT, r, counts, displs, MPI_INT, root, MPI_COMM_WORLD,
                           &q) == MPI_SUCCESS, "MPI_Igatherv");
        MPI_Gatherv(s, mine, MPI_INT, ref, counts, displs, MPI_INT, root, MPI_COMM_WORLD);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (rank == root)
            for (int k = 0; k < total; k++)
                CHECK(r[k] == ref[k], "round %d gatherv: int %d is %d, not %d", it, k, r[k], ref[k]);

        /* scatterv: the gathered blocks back */
        int *back = ints(mine + PAD, -9);
        CHECK(MPI_Iscatterv(ref, counts, displs, MPI_INT, back, mine, MPI_INT, root, MPI_COMM_WORLD, &q) == MPI_SUCCESS,
              "MPI_Iscatterv");
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int k = 0; k < mine + PAD; k++)
            CHECK(back[k] == (k < mine ? s[k] : -9), "round %d scatterv: int %d is %d", it, k, back[k]);

        /* alltoallv: rank i sends cnt(it, i, j) ints to j */
        int *sc = ints(size, 0), *sd = ints(size, 0), *rc = ints(size, 0), *rd = ints(size, 0), st = 0, rt = 0;
        for (int j = 0; j < size; j++) {
            sc[j] = cnt(it, rank, j), sd[j] = st, st += sc[j] + 1;
            rc[j] = cnt(it, j, rank), rd[j] = rt + 2, rt += rc[j] + 2;
        }
        int *as = ints(st, 0), *ar = ints(rt + PAD, -5), *aref = ints(rt + PAD, -5);
        for (int j = 0; j < size; j++)
            for (int k = 0; k < sc[j]; k++)
                as[sd[j] + k] = it * 10000 + rank * 1000 + j * 100 + k;
        CHECK(MPI_Ialltoallv(as, sc, sd, MPI_INT, ar, rc, rd, MPI_INT, MPI_COMM_WORLD, &q) == MPI_SUCCESS,
              "MPI_Ialltoallv");
        MPI_Alltoallv(as, sc, sd, MPI_INT, aref, rc, rd, MPI_INT, MPI_COMM_WORLD);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int k = 0; k < rt + PAD; k++)
            CHECK(ar[k] == aref[k], "round %d alltoallv: int %d is %d, not %d", it, k, ar[k], aref[k]);

        free(counts), free(displs), free(s), free(r), free(ref), free(back);
        free(sc), free(sd), free(rc), free(rd), free(as), free(ar), free(aref);
    }
    if (rank == 0)
        printf("vlocal: ok\n");
    MPI_Finalize();
    return 0;
}
