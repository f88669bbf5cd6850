// The blocking collectives on goal (block.c's rule: a communicator within
// one host with a CPU per rank, and a collective and size outside the
// table of this MPI's (collective, size range) where its own is as fast):
// MPI_Barrier, Bcast, Allreduce, Reduce, Reduce_scatter_block, Allgather,
// Alltoall, Gather and Scatter, in place where MPI allows it, every root
// in turn, new buffers each round, on the world and on a split by parity,
// each result compared with the same call made through PMPI_ directly. Two
// sizes per rank, 1200 B and 1.2 MB: the table sends some of each to MPI
// (Open MPI: its 1.2 MB allgathers; MPICH: its 1200 B bcasts, gathers,
// scatters, allgathers and reduces) and serves the rest, so both sides of
// the rule are checked. Then the wait's progress: rank 0 posts an
// MPI_Irecv of 4 MiB and enters MPI_Allreduce, on goal; rank 1 sends the
// 4 MiB (MPI's rendezvous) before its allreduce, so the send ends only if
// rank 0's MPI moves inside goal's wait (without that, the test hangs). At
// 4 ranks on this 2-CPU machine the world's blocking calls go to MPI (more
// ranks than CPUs) and the halves' run on goal; with GOAL_MPI_BLOCKING=0
// (t_p2p) none does. Across two hosts (mpi_layer_hosts.rs) the hosts' table
// decides: the 1200 B calls go to MPI, the 1.2 MB ones run on goal.
// ranks: 1 2 4
// expect: blocking: ok
// expect: goal-mpi \(rank 0\): MPI_Allreduce: [1-9][0-9]* on goal, 0 to MPI
// expect: goal-mpi \(rank 0\): MPI_Bcast: [1-9][0-9]* on goal, 0 to MPI
// expect: goal-mpi \(rank 0\): MPI_Gather: [1-9][0-9]* on goal, 0 to MPI
// expect: goal-mpi \(rank 0\): MPI_Scatter: [1-9][0-9]* on goal, 0 to MPI
// expect: goal-mpi: goal runs the non-blocking collectives of [0-9]+ ranks, and the blocking ones where goal.s are faster
// expect-none: [1-9][0-9]* to MPI$
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

/* Elements per rank: 1200 B, and 1.2 MB (more than a rooted collective's
 * single-copy range in either MPI's table). */
enum { SMALL_M = 300, LARGE_M = 300000 };

/* Fills `b` (n ints) with values of this rank, round and salt. */
static void fill(int *b, int n, int rank, int round, int salt)
{
    for (int i = 0; i < n; i++)
        b[i] = (rank + 1) * 1000 + round * 7 + salt * 31 + i;
}

static void same(const int *got, const int *want, int n, const char *what, int round)
{
    for (int i = 0; i < n; i++)
        CHECK(got[i] == want[i], "%s, round %d: element %d is %d, PMPI_ gives %d", what, round, i, got[i], want[i]);
}

/* Every blocking collective served, on `comm`, against PMPI_. */
static void rounds(MPI_Comm comm, int nrounds, int M)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    for (int it = 0; it < nrounds; it++) {
        /* New buffers each round: the layer runs cached schedules on them. */
        int *x = malloc(sizeof(int) * M * n), *y = malloc(sizeof(int) * M * n), *z = malloc(sizeof(int) * M * n);
        CHECK(x && y && z, "out of memory");
        fill(x, M * n, r, it, 1);
        MPI_Barrier(comm);

        int root = it % n;
        fill(y, M, r, it, 2), fill(z, M, r, it, 2);
        MPI_Bcast(y, M, MPI_INT, root, comm);
        PMPI_Bcast(z, M, MPI_INT, root, comm);
        same(y, z, M, "bcast", it);

        MPI_Allreduce(x, y, M, MPI_INT, MPI_SUM, comm);
        PMPI_Allreduce(x, z, M, MPI_INT, MPI_SUM, comm);
        same(y, z, M, "allreduce", it);
        memcpy(y, x, sizeof(int) * M);
        MPI_Allreduce(MPI_IN_PLACE, y, M, MPI_INT, MPI_MAX, comm);
        PMPI_Allreduce(x, z, M, MPI_INT, MPI_MAX, comm);
        same(y, z, M, "allreduce in place", it);

        /* In place at the root at the small size only: MPICH 4.0.2's own
         * MPI_Reduce crashes in place from 1024 ints at 4 ranks (where the
         * world's calls go to it). */
        int in_place = r == root && M == SMALL_M;
        memcpy(y, x, sizeof(int) * M);
        MPI_Reduce(in_place ? MPI_IN_PLACE : x, y, M, MPI_INT, MPI_SUM, root, comm);
        PMPI_Reduce(x, z, M, MPI_INT, MPI_SUM, root, comm);
        if (r == root)
            same(y, z, M, in_place ? "reduce (in place at the root)" : "reduce", it);

        MPI_Reduce_scatter_block(x, y, M, MPI_INT, MPI_SUM, comm);
        PMPI_Reduce_scatter_block(x, z, M, MPI_INT, MPI_SUM, comm);
        same(y, z, M, "reduce_scatter_block", it);

        MPI_Allgather(x, M, MPI_INT, y, M, MPI_INT, comm);
        PMPI_Allgather(x, M, MPI_INT, z, M, MPI_INT, comm);
        same(y, z, M * n, "allgather", it);
        memcpy(y + M * r, x, sizeof(int) * M);
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, y, M, MPI_INT, comm);
        same(y, z, M * n, "allgather in place", it);

        MPI_Alltoall(x, M, MPI_INT, y, M, MPI_INT, comm);
        PMPI_Alltoall(x, M, MPI_INT, z, M, MPI_INT, comm);
        same(y, z, M * n, "alltoall", it);

        if (r == root)
            memcpy(y + M * r, x, sizeof(int) * M);
        MPI_Gather(r == root ? MPI_IN_PLACE : x, M, MPI_INT, y, M, MPI_INT, root, comm);
        PMPI_Gather(x, M, MPI_INT, z, M, MPI_INT, root, comm);
        if (r == root)
            same(y, z, M * n, "gather (in place at the root)", it);

        MPI_Scatter(x, M, MPI_INT, y, M, MPI_INT, root, comm);
        PMPI_Scatter(x, M, MPI_INT, z, M, MPI_INT, root, comm);
        same(y, z, M, "scatter", it);
        free(x), free(y), free(z);
    }
}

int main(int argc, char **argv)
{
    int r, n;
    t_start(&argc, &argv, &r, &n);
    rounds(MPI_COMM_WORLD, 40, SMALL_M);
    rounds(MPI_COMM_WORLD, 4, LARGE_M);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
    rounds(half, 40, SMALL_M);
    rounds(half, 4, LARGE_M);

    /* The wait keeps MPI moving: rank 1's blocking 4 MiB send (MPI's
     * rendezvous) ends only once rank 0's MPI has matched it with the
     * receive rank 0 posted, and rank 0 is by then inside an allreduce on
     * goal that rank 1 enters only after its send: MPI must move inside
     * goal's wait. */
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, r < 2 ? 0 : MPI_UNDEFINED, r, &pair);
    if (pair != MPI_COMM_NULL && n >= 2) {
        enum { BIG = 1 << 20, SMALL = 8192 }; /* 32 KiB: on goal under both MPIs, within a host and across */
        int *big = malloc(sizeof(int) * BIG), one[SMALL], sum[SMALL];
        for (int i = 0; i < SMALL; i++)
            one[i] = i;
        CHECK(big != NULL, "out of memory");
        for (int k = 0; k < 5; k++) {
            if (r == 0) {
                MPI_Request q;
                MPI_Irecv(big, BIG, MPI_INT, 1, 9, MPI_COMM_WORLD, &q);
                MPI_Allreduce(one, sum, SMALL, MPI_INT, MPI_SUM, pair);
                MPI_Wait(&q, MPI_STATUS_IGNORE);
                for (int i = 0; i < BIG; i += 4099)
                    CHECK(big[i] == (i ^ k), "the 4 MiB message, round %d: element %d is %d", k, i, big[i]);
            } else {
                for (int i = 0; i < BIG; i++)
                    big[i] = i ^ k;
                MPI_Send(big, BIG, MPI_INT, 0, 9, MPI_COMM_WORLD);
                MPI_Allreduce(one, sum, SMALL, MPI_INT, MPI_SUM, pair);
            }
            CHECK(sum[0] == 0 && sum[SMALL - 1] == 2 * (SMALL - 1), "allreduce beside the rendezvous, round %d: %d",
                  k, sum[SMALL - 1]);
        }
        free(big);
    }
    if (pair != MPI_COMM_NULL)
        MPI_Comm_free(&pair);
    MPI_Comm_free(&half);
    if (r == 0)
        printf("blocking: ok\n");
    MPI_Finalize();
    return 0;
}
