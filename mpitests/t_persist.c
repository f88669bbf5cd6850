// Persistent collectives (MPI_Xxx_init in MPICH 4.0, MPIX_Xxx_init in Open
// MPI 4.1): allreduce, bcast, barrier, reduce, allgather, gather, scatter,
// alltoall, reduce_scatter_block, initialised once on world and on a dup,
// started 30 times each with new data (MPI_Start and MPI_Startall, beside
// an MPI_Isend/MPI_Irecv in one MPI_Waitall, or MPI_Wait / MPI_Test on
// each), every result compared with the MPI library's own (PMPI_), the
// handles still valid after each completion, freed at the end.
// ranks: 1 2 3 4
// expect: persist: ok
// expect: goal-mpi \(rank 0\): MPI_Iallreduce: [1-9][0-9]* on goal, 0 to MPI
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#ifdef OPEN_MPI
#include <mpi-ext.h>
#define INIT(name) MPIX_##name##_init
#else
#define INIT(name) MPI_##name##_init
#endif

static int rank, size;

#define N 300
#define K 9

int main(int argc, char **argv)
{
    t_start(&argc, &argv, &rank, &size);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm comms[2] = { MPI_COMM_WORLD, dup };
    int root = size - 1;
    int *in = malloc(sizeof(int) * N * size), *out = malloc(sizeof(int) * N * size);
    int *ref = malloc(sizeof(int) * N * size);
    for (int ci = 0; ci < 2; ci++) {
        MPI_Comm c = comms[ci];
        MPI_Request q[K + 2];
        INIT(Allreduce)(in, out, N, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &q[0]);
        INIT(Bcast)(out, N, MPI_INT, root, c, MPI_INFO_NULL, &q[1]);
        INIT(Barrier)(c, MPI_INFO_NULL, &q[2]);
        INIT(Reduce)(in, out, N, MPI_INT, MPI_MAX, root, c, MPI_INFO_NULL, &q[3]);
        INIT(Allgather)(in, N, MPI_INT, out, N, MPI_INT, c, MPI_INFO_NULL, &q[4]);
        INIT(Gather)(in, N, MPI_INT, out, N, MPI_INT, root, c, MPI_INFO_NULL, &q[5]);
        INIT(Scatter)(in, N, MPI_INT, out, N, MPI_INT, root, c, MPI_INFO_NULL, &q[6]);
        INIT(Alltoall)(in, N, MPI_INT, out, N, MPI_INT, c, MPI_INFO_NULL, &q[7]);
        INIT(Reduce_scatter_block)(in, out, N, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &q[8]);
        for (int it = 0; it < 30; it++)
            for (int k = 0; k < K; k++) {
                for (int i = 0; i < N * size; i++)
                    in[i] = rank * 131 + i * 7 + it + k, out[i] = ref[i] = -1;
                if (k == 1 && rank == root)
                    memcpy(out, in, sizeof(int) * N), memcpy(ref, in, sizeof(int) * N);
                MPI_Request save = q[k];
                int msg = rank + it, got = -1;
                switch (it % 3) {
                case 0: { /* Startall beside point-to-point, one Waitall */
                    q[K] = MPI_REQUEST_NULL;
                    MPI_Irecv(&got, 1, MPI_INT, (rank + size - 1) % size, it, MPI_COMM_WORLD, &q[K]);
                    MPI_Startall(1, &q[k]);
                    MPI_Isend(&msg, 1, MPI_INT, (rank + 1) % size, it, MPI_COMM_WORLD, &q[K + 1]);
                    MPI_Request set[3] = { q[K], q[k], q[K + 1] };
                    CHECK(MPI_Waitall(3, set, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "MPI_Waitall");
                    CHECK(set[1] == save, "a persistent request changed handle in MPI_Waitall");
                    CHECK(got == (rank + size - 1) % size + it, "the message beside: %d", got);
                    break;
                }
                case 1:
                    MPI_Start(&q[k]);
                    CHECK(MPI_Wait(&q[k], MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait");
                    break;
                case 2: {
                    MPI_Start(&q[k]);
                    int flag = 0;
                    while (!flag)
                        MPI_Test(&q[k], &flag, MPI_STATUS_IGNORE);
                    break;
                }
                }
                CHECK(q[k] == save, "collective %d: the persistent request is not the same after completion", k);
                switch (k) {
                case 0: PMPI_Allreduce(in, ref, N, MPI_INT, MPI_SUM, c); break;
                case 1: PMPI_Bcast(ref, N, MPI_INT, root, c); break;
                case 2: break;
                case 3: PMPI_Reduce(in, ref, N, MPI_INT, MPI_MAX, root, c); break;
                case 4: PMPI_Allgather(in, N, MPI_INT, ref, N, MPI_INT, c); break;
                case 5: PMPI_Gather(in, N, MPI_INT, ref, N, MPI_INT, root, c); break;
                case 6: PMPI_Scatter(in, N, MPI_INT, ref, N, MPI_INT, root, c); break;
                case 7: PMPI_Alltoall(in, N, MPI_INT, ref, N, MPI_INT, c); break;
                case 8: PMPI_Reduce_scatter_block(in, ref, N, MPI_INT, MPI_SUM, c); break;
                }
                CHECK(memcmp(out, ref, sizeof(int) * N * size) == 0, "collective %d, start %d: result differs from MPI's", k,
                      it);
            }
        for (int k = 0; k < K; k++) {
            CHECK(MPI_Request_free(&q[k]) == MPI_SUCCESS && q[k] == MPI_REQUEST_NULL, "MPI_Request_free");
        }
    }
    MPI_Comm_free(&dup);
    free(in), free(out), free(ref);
    if (rank == 0)
        printf("persist: ok\n");
    MPI_Finalize();
    return 0;
}
