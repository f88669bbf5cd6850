// MPI_THREAD_MULTIPLE: two threads per rank, each running its own
// non-blocking collectives on its own communicator (a dup of world each)
// beside point-to-point messages of its own tag, completed with Waitall
// and Waitany, all checked: the layer's tables and goal's calls from two
// threads at once, MPI's locks and the layer's taken in one order.
// ranks: 2 3 4
// timeout: 180
// expect: threads: ok
// expect: goal-mpi \(rank 0\): MPI_Iallreduce: [1-9][0-9]* on goal, 0 to MPI
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

static int rank, size;

struct job {
    int id;
    MPI_Comm comm;
};

static void *run(void *arg)
{
    struct job *j = arg;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    enum { N = 257 };
    long in[N], out[N], bc[N];
    for (int it = 0; it < 400; it++) {
        MPI_Request q[4];
        long msg = rank * 10000 + j->id * 1000 + it, got = -1;
        for (int i = 0; i < N; i++)
            in[i] = rank + i + it + j->id, out[i] = -1, bc[i] = rank == j->id % size ? i * 3 + it : -1;
        MPI_Irecv(&got, 1, MPI_LONG, left, j->id, MPI_COMM_WORLD, &q[0]);
        MPI_Iallreduce(in, out, N, MPI_LONG, MPI_SUM, j->comm, &q[1]);
        MPI_Ibcast(bc, N, MPI_LONG, j->id % size, j->comm, &q[2]);
        MPI_Isend(&msg, 1, MPI_LONG, right, j->id, MPI_COMM_WORLD, &q[3]);
        if (it % 2)
            MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
        else
            for (int k = 0; k < 4; k++) {
                int idx;
                MPI_Waitany(4, q, &idx, MPI_STATUS_IGNORE);
            }
        CHECK(got == left * 10000 + j->id * 1000 + it, "thread %d round %d: message %ld", j->id, it, got);
        for (int i = 0; i < N; i++) {
            CHECK(out[i] == (long)size * (size - 1) / 2 + (long)size * (i + it + j->id), "thread %d round %d: allreduce",
                  j->id, it);
            CHECK(bc[i] == i * 3 + it, "thread %d round %d: bcast", j->id, it);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    t_rank = rank;
    CHECK(provided == MPI_THREAD_MULTIPLE, "the MPI gives thread level %d, not MPI_THREAD_MULTIPLE", provided);
    struct job jobs[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        jobs[i].id = i;
        MPI_Comm_dup(MPI_COMM_WORLD, &jobs[i].comm);
    }
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, run, &jobs[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++)
        MPI_Comm_free(&jobs[i].comm);
    if (rank == 0)
        printf("threads: ok, two threads of 400 rounds on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
