// Requests that mix goal's and MPI's: an MPI_Isend/MPI_Irecv ring (a small
// and a large, rendezvous, message) beside MPI_Iallreduce and MPI_Ibcast,
// completed by MPI_Waitall (statuses checked, and ignored), MPI_Waitany,
// MPI_Testsome, MPI_Testany, MPI_Testall, MPI_Waitsome, MPI_Test,
// MPI_Request_get_status; MPI_Request_free of a running collective; a Wait
// on MPI_REQUEST_NULL. Every result is checked, every request must end as
// MPI_REQUEST_NULL, and each must be reported done exactly once.
// ranks: 1 2 3 4
// expect: goal-mpi \(rank 0\): MPI_Iallreduce: [1-9][0-9]* on goal, 0 to MPI
// expect: goal-mpi \(rank 0\): MPI_Ibcast: [1-9][0-9]* on goal, 0 to MPI
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

static int rank, size;

#define BIG (256 * 1024)
#define N 6

/* The six requests of one round: 0 small recv, 1 big recv, 2 small send,
 * 3 big send, 4 allreduce, 5 bcast (on a dup). */
struct round {
    MPI_Request q[N];
    int small_in, small_out, sum_in, sum_out;
    double bc[64];
    int *big_in, *big_out;
};

static void start(struct round *r, MPI_Comm dup, int it)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    r->small_out = rank * 1000 + it;
    r->small_in = -1;
    for (int i = 0; i < BIG / 4; i++)
        r->big_out[i] = rank ^ (i * 7 + it), r->big_in[i] = -1;
    MPI_Irecv(&r->small_in, 1, MPI_INT, left, 10 + it, MPI_COMM_WORLD, &r->q[0]);
    MPI_Irecv(r->big_in, BIG / 4, MPI_INT, left, 20 + it, MPI_COMM_WORLD, &r->q[1]);
    MPI_Isend(&r->small_out, 1, MPI_INT, right, 10 + it, MPI_COMM_WORLD, &r->q[2]);
    MPI_Isend(r->big_out, BIG / 4, MPI_INT, right, 20 + it, MPI_COMM_WORLD, &r->q[3]);
    r->sum_in = rank + it;
    MPI_Iallreduce(&r->sum_in, &r->sum_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r->q[4]);
    for (int i = 0; i < 64; i++)
        r->bc[i] = rank == size - 1 ? i * 0.5 + it : -1;
    MPI_Ibcast(r->bc, 64, MPI_DOUBLE, size - 1, dup, &r->q[5]);
}

static void check(struct round *r, int it)
{
    int left = (rank + size - 1) % size;
    CHECK(r->small_in == left * 1000 + it, "round %d: small message %d", it, r->small_in);
    for (int i = 0; i < BIG / 4; i++)
        CHECK(r->big_in[i] == (left ^ (i * 7 + it)), "round %d: big message word %d", it, i);
    CHECK(r->sum_out == size * (size - 1) / 2 + size * it, "round %d: allreduce gave %d", it, r->sum_out);
    for (int i = 0; i < 64; i++)
        CHECK(r->bc[i] == i * 0.5 + it, "round %d: bcast element %d is %g", it, i, r->bc[i]);
    for (int i = 0; i < N; i++)
        CHECK(r->q[i] == MPI_REQUEST_NULL, "round %d: request %d not MPI_REQUEST_NULL after completion", it, i);
}

int main(int argc, char **argv)
{
    t_start(&argc, &argv, &rank, &size);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    struct round r;
    r.big_in = malloc(BIG), r.big_out = malloc(BIG);
    int left = (rank + size - 1) % size;
    for (int it = 0; it < 40; it++) {
        start(&r, dup, it);
        int done[N] = { 0 }, ndone = 0;
        switch (it % 7) {
        case 0: { /* Waitall, statuses filled as for MPI's own requests */
            MPI_Status st[N];
            CHECK(MPI_Waitall(N, r.q, st) == MPI_SUCCESS, "MPI_Waitall");
            CHECK(st[0].MPI_SOURCE == left && st[0].MPI_TAG == 10 + it, "small recv status %d/%d", st[0].MPI_SOURCE,
                  st[0].MPI_TAG);
            int count;
            MPI_Get_count(&st[1], MPI_INT, &count);
            CHECK(count == BIG / 4 && st[1].MPI_SOURCE == left, "big recv status: %d ints from %d", count,
                  st[1].MPI_SOURCE);
            int cancelled = 1;
            MPI_Test_cancelled(&st[4], &cancelled);
            CHECK(!cancelled, "the allreduce's status says cancelled");
            ndone = N;
            break;
        }
        case 1: /* Waitall, statuses ignored */
            CHECK(MPI_Waitall(N, r.q, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "MPI_Waitall");
            ndone = N;
            break;
        case 2: /* Waitany, one at a time */
            while (ndone < N) {
                int idx;
                MPI_Status st;
                CHECK(MPI_Waitany(N, r.q, &idx, &st) == MPI_SUCCESS, "MPI_Waitany");
                CHECK(idx >= 0 && idx < N && !done[idx], "MPI_Waitany gave index %d twice or out of range", idx);
                done[idx] = 1, ndone++;
            }
            {
                int idx;
                MPI_Waitany(N, r.q, &idx, MPI_STATUS_IGNORE);
                CHECK(idx == MPI_UNDEFINED, "MPI_Waitany over finished requests gave %d", idx);
            }
            break;
        case 3: /* Testsome until all */
        case 4: /* Waitsome */
            while (ndone < N) {
                int out, idx[N];
                MPI_Status st[N];
                if (it % 7 == 3)
                    CHECK(MPI_Testsome(N, r.q, &out, idx, st) == MPI_SUCCESS, "MPI_Testsome");
                else
                    CHECK(MPI_Waitsome(N, r.q, &out, idx, st) == MPI_SUCCESS && out > 0, "MPI_Waitsome");
                for (int k = 0; k < out; k++) {
                    CHECK(!done[idx[k]], "index %d reported twice", idx[k]);
                    done[idx[k]] = 1, ndone++;
                }
            }
            break;
        case 5: { /* Testany and Testall, then Test on each */
            int flag = 0;
            while (!flag) {
                int idx;
                MPI_Testany(N, r.q, &idx, &flag, MPI_STATUS_IGNORE);
                if (flag && idx != MPI_UNDEFINED)
                    done[idx] = 1, flag = 0, ndone++;
                MPI_Testall(N, r.q, &flag, MPI_STATUSES_IGNORE);
            }
            for (int i = 0; i < N; i++) {
                MPI_Test(&r.q[i], &flag, MPI_STATUS_IGNORE);
                CHECK(flag, "MPI_Test after MPI_Testall");
            }
            break;
        }
        case 6: { /* Request_get_status leaves the request; MPI_Wait frees it */
            int flag = 0;
            while (!flag)
                MPI_Request_get_status(r.q[4], &flag, MPI_STATUS_IGNORE);
            CHECK(r.q[4] != MPI_REQUEST_NULL, "MPI_Request_get_status freed the request");
            for (int i = 0; i < N; i++)
                CHECK(MPI_Wait(&r.q[i], MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait");
            break;
        }
        }
        check(&r, it);
    }
    /* A collective freed while it runs, then another on the same data's
     * communicator: the layer finishes the first by itself. */
    int x = rank, y = -1;
    MPI_Request q;
    MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &q);
    CHECK(MPI_Request_free(&q) == MPI_SUCCESS && q == MPI_REQUEST_NULL, "MPI_Request_free");
    int z = -1;
    MPI_Iallreduce(&x, &z, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    CHECK(z == size - 1, "allreduce after a freed one gave %d", z);
    q = MPI_REQUEST_NULL;
    CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait on MPI_REQUEST_NULL");
    MPI_Comm_free(&dup);
    free(r.big_in), free(r.big_out);
    if (rank == 0)
        printf("mixed: 40 rounds of 6 mixed requests on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
