// Stress: many mixed non-blocking collectives on four duplicated
// communicators, started on each rank in a different order of the
// communicators (legal for non-blocking collectives: MPI orders them per
// communicator only), beside an Isend/Irecv ring, completed with Waitall,
// Waitany, Waitsome and Testsome in turn. Must not hang (the prototype of
// issue 41 did, one rank in goal's wait while its peer waited inside
// MPICH), and every result is checked. STRESS_ITERS sets the rounds.
// ranks: 2 3 4
// timeout: 300
// expect: stress: ok
// expect: goal-mpi \(rank 0\): MPI_Iallreduce: [1-9][0-9]* on goal, 0 to MPI
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define NC 4

static int rank, size;

static void fail(const char *what, int it, int c, long got, long want)
{
    printf("FAIL rank %d: round %d, communicator %d: %s gave %ld, not %ld\n", rank, it, c, what, got, want);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = getenv("STRESS_ITERS") ? atoi(getenv("STRESS_ITERS")) : 3000;
    MPI_Comm comm[NC];
    for (int c = 0; c < NC; c++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comm[c]);
    enum { MAXN = 2048 };
    long *in = malloc(sizeof(long) * MAXN * NC), *out = malloc(sizeof(long) * MAXN * NC * (size_t)size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int it = 0; it < iters; it++) {
        MPI_Request q[NC + 2];
        int kind[NC], n[NC];
        long msg_out = rank * 1000003L + it, msg_in = -1;
        MPI_Irecv(&msg_in, 1, MPI_LONG, left, it % 100, MPI_COMM_WORLD, &q[NC]);
        for (int k = 0; k < NC; k++) {
            int c = (k + rank + it) % NC; /* a different order on every rank */
            kind[c] = (it + c) % 5;
            n[c] = 1 + (it * 37 + c * 11) % MAXN;
            long *i = in + c * MAXN, *o = out + (size_t)c * MAXN * (size_t)size;
            for (int e = 0; e < n[c]; e++)
                i[e] = rank + e + it, o[e] = -1;
            switch (kind[c]) {
            case 0: MPI_Iallreduce(i, o, n[c], MPI_LONG, MPI_SUM, comm[c], &q[c]); break;
            case 1: MPI_Ibcast(rank == it % size ? i : o, n[c], MPI_LONG, it % size, comm[c], &q[c]); break;
            case 2: MPI_Ibarrier(comm[c], &q[c]); break;
            case 3: MPI_Iallgather(i, n[c] / size + 1, MPI_LONG, o, n[c] / size + 1, MPI_LONG, comm[c], &q[c]); break;
            case 4: MPI_Ireduce(i, o, n[c], MPI_LONG, MPI_MAX, 0, comm[c], &q[c]); break;
            }
        }
        MPI_Isend(&msg_out, 1, MPI_LONG, right, it % 100, MPI_COMM_WORLD, &q[NC + 1]);
        int left_to_do = NC + 2;
        switch (it % 4) {
        case 0: MPI_Waitall(NC + 2, q, MPI_STATUSES_IGNORE); break;
        case 1:
            while (left_to_do--) {
                int idx;
                MPI_Waitany(NC + 2, q, &idx, MPI_STATUS_IGNORE);
            }
            break;
        case 2:
        case 3:
            while (left_to_do > 0) {
                int got, idx[NC + 2];
                if (it % 4 == 2)
                    MPI_Waitsome(NC + 2, q, &got, idx, MPI_STATUSES_IGNORE);
                else
                    MPI_Testsome(NC + 2, q, &got, idx, MPI_STATUSES_IGNORE);
                left_to_do -= got;
            }
        }
        if (msg_in != left * 1000003L + it)
            fail("the ring message", it, -1, msg_in, left * 1000003L + it);
        for (int c = 0; c < NC; c++) {
            long *o = out + (size_t)c * MAXN * (size_t)size;
            int e = n[c] - 1;
            switch (kind[c]) {
            case 0:
                if (o[e] != (long)size * (size - 1) / 2 + (long)size * (e + it))
                    fail("allreduce", it, c, o[e], (long)size * (size - 1) / 2 + (long)size * (e + it));
                break;
            case 1: {
                long *b = rank == it % size ? in + c * MAXN : o;
                if (b[e] != it % size + e + it)
                    fail("bcast", it, c, b[e], it % size + e + it);
                break;
            }
            case 3: {
                int m = n[c] / size + 1;
                for (int r = 0; r < size; r++)
                    if (o[r * m + m - 1] != r + m - 1 + it)
                        fail("allgather", it, c, o[r * m + m - 1], r + m - 1 + it);
                break;
            }
            case 4:
                if (rank == 0 && o[e] != size - 1 + e + it)
                    fail("reduce", it, c, o[e], size - 1 + e + it);
                break;
            }
        }
    }
    for (int c = 0; c < NC; c++)
        MPI_Comm_free(&comm[c]);
    free(in), free(out);
    if (rank == 0)
        printf("stress: ok, %d rounds of %d collectives and a message on %d ranks\n", iters, NC, size);
    MPI_Finalize();
    return 0;
}
