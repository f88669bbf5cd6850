// Every way of making a communicator the layer follows (MPI_Comm_dup,
// dup_with_info, split, split_type, create, create_group, MPI_Cart_create
// with reorder, MPI_Cart_sub), and one it does not (MPI_Comm_idup): an
// allreduce and a bcast on each, through the layer and through PMPI_,
// compared; 200 communicators made and freed in a row; a communicator
// freed while its collective runs. The followed ones
// run on goal; MPI_Comm_idup's goes to MPI, said in the report.
// ranks: 1 2 3 4
// expect: comms: ok
// expect: goal-mpi \(rank 0\): MPI_Iallreduce: [1-9][0-9]* on goal, 1 to MPI
// expect: goal-mpi \(rank 0\):   1: communicator not served
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "helpers.h"

static int wrank;

static void check_on(MPI_Comm c, const char *what)
{
    if (c == MPI_COMM_NULL)
        return;
    int r, n;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &n);
    long in[33], a[33], b[33];
    for (int i = 0; i < 33; i++)
        in[i] = wrank * 1000 + i;
    MPI_Request q;
    MPI_Iallreduce(in, a, 33, MPI_LONG, MPI_MAX, c, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    PMPI_Allreduce(in, b, 33, MPI_LONG, MPI_MAX, c);
    CHECK(memcmp(a, b, sizeof a) == 0, "allreduce on %s differs from MPI's", what);
    memcpy(a, in, sizeof a), memcpy(b, in, sizeof b);
    MPI_Ibcast(a, 33, MPI_LONG, n - 1, c, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    PMPI_Bcast(b, 33, MPI_LONG, n - 1, c);
    CHECK(memcmp(a, b, sizeof a) == 0, "bcast on %s differs from MPI's", what);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    t_rank = wrank;
    MPI_Comm dup, dupi, split, shared, created, grp, cart, row, idup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_dup_with_info(dup, MPI_INFO_NULL, &dupi);
    MPI_Comm_split(dupi, wrank % 2, size - wrank, &split);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    MPI_Group wg, evens;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int ranks[8], ne = 0;
    for (int i = 0; i < size; i += 2)
        ranks[ne++] = i;
    MPI_Group_incl(wg, ne, ranks, &evens);
    MPI_Comm_create(MPI_COMM_WORLD, evens, &created); /* MPI_COMM_NULL on odd ranks */
    grp = MPI_COMM_NULL;
    if (wrank % 2 == 0)
        MPI_Comm_create_group(MPI_COMM_WORLD, evens, 7, &grp);
    int dims[2] = { 0, 0 }, periods[2] = { 1, 0 }, keep[2] = { 0, 1 };
    MPI_Dims_create(size, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &cart);
    MPI_Cart_sub(cart, keep, &row);
    MPI_Request q;
    MPI_Comm_idup(MPI_COMM_WORLD, &idup, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    check_on(MPI_COMM_WORLD, "world");
    check_on(MPI_COMM_SELF, "self");
    check_on(dup, "dup");
    check_on(dupi, "dup_with_info");
    check_on(split, "split");
    check_on(shared, "split_type");
    check_on(created, "create");
    check_on(grp, "create_group");
    check_on(cart, "cart_create");
    check_on(row, "cart_sub");
    check_on(idup, "idup (to MPI)");
    for (int i = 0; i < 200; i++) {
        MPI_Comm t;
        MPI_Comm_split(dup, (wrank + i) % 3, wrank, &t);
        if (i % 50 == 0)
            check_on(t, "a split in the loop");
        MPI_Comm_free(&t);
    }
    /* A communicator freed while its collective runs: MPI lets it finish. */
    for (int i = 0; i < 20; i++) {
        MPI_Comm t;
        MPI_Comm_dup(MPI_COMM_WORLD, &t);
        long v = wrank + i, s = -1;
        MPI_Iallreduce(&v, &s, 1, MPI_LONG, MPI_SUM, t, &q);
        MPI_Comm_free(&t);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        CHECK(s == (long)size * (size - 1) / 2 + (long)size * i, "allreduce on a freed dup gave %ld", s);
    }
    MPI_Comm *all[] = { &dup, &dupi, &split, &shared, &created, &grp, &cart, &row, &idup };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (*all[i] != MPI_COMM_NULL)
            MPI_Comm_free(all[i]);
    MPI_Group_free(&evens);
    MPI_Group_free(&wg);
    if (wrank == 0)
        printf("comms: ok\n");
    MPI_Finalize();
    return 0;
}
