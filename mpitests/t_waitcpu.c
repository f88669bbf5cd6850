// A rank that waits long for a collective on goal sleeps, and MPI keeps
// moving meanwhile: the last rank joins each collective 300 ms late, after
// a large MPI_Send to rank 0 (a rendezvous, which needs rank 0's MPI to
// move while it waits). Rank 0 waits with MPI_Wait (the receive posted
// beside it), MPI_Waitall (collective and receive together) and
// MPI_Waitany (which must hand back the receive first: the collective
// cannot end before the late rank joins). Over each wait, rank 0's thread
// must have used well under the wall time in CPU (a wait that polled or
// spun would use all of it); the received data is checked.
// ranks: 2 3
// timeout: 60
// expect: MPI_Ibarrier: 2 on goal, 0 to MPI
// expect: MPI_Iallreduce: 1 on goal, 0 to MPI
#include <mpi.h>
#include <stdlib.h>
#include <time.h>
#include "helpers.h"

#define BIG (4 << 20) /* bytes: a rendezvous in both MPIs */
#define LATE_S 0.3

static double thread_cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void sleep_s(double s)
{
    struct timespec t = { (time_t)s, (long)((s - (time_t)s) * 1e9) };
    while (nanosleep(&t, &t) != 0)
        ;
}

/* The wall and CPU time of rank 0's wait, checked. */
static void check_wait(const char *what, double wall, double cpu)
{
    printf("rank 0: %s waited %.3f s using %.3f s of CPU\n", what, wall, cpu);
    CHECK(wall > LATE_S / 2, "%s returned after %.3f s, before the late rank could have joined", what, wall);
    CHECK(cpu < 0.25 * wall, "%s used %.3f s of CPU in %.3f s: it polled instead of sleeping", what, cpu, wall);
}

int main(int argc, char **argv)
{
    int rank, size;
    t_start(&argc, &argv, &rank, &size);
    int last = size - 1;
    int *big = malloc(BIG);
    CHECK(big != NULL, "no memory");
    for (int round = 0; round < 3; round++) {
        int n = BIG / (int)sizeof(int);
        MPI_Request r[2];
        int x = rank + 1, sum = 0;
        if (rank == last) {
            for (int i = 0; i < n; i++)
                big[i] = i ^ round;
            MPI_Send(big, n, MPI_INT, 0, round, MPI_COMM_WORLD);
            sleep_s(LATE_S);
            if (round == 1)
                MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]);
            else
                MPI_Ibarrier(MPI_COMM_WORLD, &r[0]);
            MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        } else if (rank == 0) {
            for (int i = 0; i < n; i++)
                big[i] = -1;
            if (round == 1)
                MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]);
            else
                MPI_Ibarrier(MPI_COMM_WORLD, &r[0]);
            MPI_Irecv(big, n, MPI_INT, last, round, MPI_COMM_WORLD, &r[1]);
            double t0 = MPI_Wtime(), c0 = thread_cpu();
            if (round == 0) {
                CHECK(MPI_Wait(&r[0], MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait");
                check_wait("MPI_Wait", MPI_Wtime() - t0, thread_cpu() - c0);
                CHECK(MPI_Wait(&r[1], MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait of the receive");
            } else if (round == 1) {
                CHECK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "MPI_Waitall");
                check_wait("MPI_Waitall", MPI_Wtime() - t0, thread_cpu() - c0);
                CHECK(sum == size * (size + 1) / 2, "allreduce gave %d, not %d", sum, size * (size + 1) / 2);
            } else {
                int idx = -1;
                CHECK(MPI_Waitany(2, r, &idx, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Waitany");
                CHECK(idx == 1, "MPI_Waitany gave index %d first, not the receive's (1), which ended 0.3 s before "
                                "the barrier could", idx);
                CHECK(MPI_Waitany(2, r, &idx, MPI_STATUS_IGNORE) == MPI_SUCCESS && idx == 0, "MPI_Waitany: %d", idx);
                check_wait("MPI_Waitany (both)", MPI_Wtime() - t0, thread_cpu() - c0);
            }
            for (int i = 0; i < n; i++)
                CHECK(big[i] == (i ^ round), "round %d: int %d is %d, not %d", round, i, big[i], i ^ round);
        } else {
            if (round == 1) {
                MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]);
            } else {
                MPI_Ibarrier(MPI_COMM_WORLD, &r[0]);
            }
            MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        }
    }
    free(big);
    MPI_Finalize();
    return 0;
}
