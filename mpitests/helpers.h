/* helpers.h - what the MPI layer's tests share: CHECK prints where and
 * what failed (a line with FAIL, which run.sh looks for) and aborts the
 * job, so that no rank is left waiting. Set t_rank after MPI_Init. */
#ifndef MPITESTS_HELPERS_H
#define MPITESTS_HELPERS_H
#include <stdio.h>

static int t_rank = -1;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            printf("FAIL rank %d line %d: ", t_rank, __LINE__);                                                        \
            printf(__VA_ARGS__);                                                                                       \
            printf("\n");                                                                                              \
            fflush(stdout);                                                                                            \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                              \
        }                                                                                                              \
    } while (0)

/* MPI_Init, this rank and the size of MPI_COMM_WORLD, t_rank set. */
static inline void t_start(int *argc, char ***argv, int *rank, int *size)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    t_rank = *rank;
}

#endif
