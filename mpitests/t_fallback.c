// What the layer does not serve goes to MPI, works, and is reported with
// its reason: MPI_MAXLOC on MPI_2INT and MPI_LAND (operations goal lacks),
// a user operation on a non-contiguous type, and a collective on an
// intercommunicator; completed in one MPI_Waitall with a served
// MPI_Iallreduce, all results checked.
// ranks: 2 3 4
// expect: fallback: ok
// expect: goal-mpi \(rank 0\): MPI_Iallreduce: 1 on goal, 3 to MPI
// expect: goal-mpi \(rank 0\):   2: operation not served
// expect: goal-mpi \(rank 0\):   1: datatype not served
// expect: goal-mpi \(rank 0\): MPI_Ibcast: 0 on goal, 1 to MPI
// expect: goal-mpi \(rank 0\):   1: communicator not served
#include <mpi.h>
#include <stdio.h>

#include "helpers.h"

/* A sum over MPI_Type_vector(2, 1, 2, MPI_INT) elements: ints 0 and 2. */
static void strided_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[3 * i] += a[3 * i], b[3 * i + 2] += a[3 * i + 2];
}

int main(int argc, char **argv)
{
    int r, n;
    t_start(&argc, &argv, &r, &n);
    struct {
        int v, at;
    } in = { (r * 7) % n, r }, out = { -1, -1 };
    int land_in = r != 1, land = -1, sum = -1, one = 1;
    MPI_Datatype strided;
    MPI_Type_vector(2, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    int vin[3] = { r, -5, 2 * r }, vout[3] = { 0, 99, 0 };
    MPI_Request q[4];
    MPI_Iallreduce(&in, &out, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD, &q[0]);
    MPI_Iallreduce(&land_in, &land, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD, &q[1]);
    MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[2]);
    MPI_Op ssum;
    MPI_Op_create(strided_sum, 1, &ssum);
    MPI_Iallreduce(vin, vout, 1, strided, ssum, MPI_COMM_WORLD, &q[3]);
    CHECK(MPI_Waitall(4, q, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "MPI_Waitall");
    int best = -1, at = -1;
    for (int k = 0; k < n; k++)
        if ((k * 7) % n > best)
            best = (k * 7) % n, at = k;
    CHECK(out.v == best && out.at == at, "MAXLOC gave (%d, %d), not (%d, %d)", out.v, out.at, best, at);
    CHECK(land == 0 && sum == n, "LAND %d, SUM %d", land, sum);
    CHECK(vout[0] == n * (n - 1) / 2 && vout[1] == 99 && vout[2] == n * (n - 1), "strided sum %d %d %d", vout[0],
          vout[1], vout[2]);
    /* An intercommunicator between the even and the odd ranks. */
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, r % 2 ? 0 : 1, 9, &inter);
    int v = r % 2 ? -1 : 4242;
    MPI_Ibcast(&v, 1, MPI_INT, r == 0 ? MPI_ROOT : r % 2 ? 0 : MPI_PROC_NULL, inter, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    CHECK(r % 2 == 0 || v == 4242, "intercommunicator bcast gave %d", v);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Type_free(&strided);
    MPI_Op_free(&ssum);
    if (r == 0)
        printf("fallback: ok\n");
    MPI_Finalize();
    return 0;
}
