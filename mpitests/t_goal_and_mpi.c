// A program that uses goal's own API and MPI side by side, without the
// layer: GOAL_Init before MPI_Init (GOAL_AFTER_MPI=1 in the environment
// swaps them), a goal barrier and allgather, an MPI allreduce, both
// finalized. goal finds its group through the launcher's PMI (MPICH's
// hydra) or PMIx (Open MPI's mpirun), the very session the MPI library
// uses: it must neither close the inherited PMI_FD nor finalize the
// session before MPI has (MPICH's MPI_Finalize then failed with
// "PMI_Barrier returned -1 ... Bad file descriptor"; Open MPI's MPI_Init
// with "orte_init: startup: internal failure").
// ranks: 1 2 3
// link-goal: yes
// preload: no
// expect: goal and mpi: ok
#include <goal.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"

int main(int argc, char **argv)
{
    int after = getenv("GOAL_AFTER_MPI") != NULL;
    if (!after)
        CHECK(GOAL_Init() == GOAL_SUCCESS, "GOAL_Init: %s", GOAL_LastError());
    int rank, size;
    t_start(&argc, &argv, &rank, &size);
    if (after)
        CHECK(GOAL_Init() == GOAL_SUCCESS, "GOAL_Init: %s", GOAL_LastError());
    CHECK(GOAL_MyRank() == rank && GOAL_GroupSize() == size, "goal's rank %d of %d, MPI's %d of %d", GOAL_MyRank(),
          GOAL_GroupSize(), rank, size);
    int mine = rank * 3 + 1, all[64];
    GOAL_Schedule s = GOAL_Allgather_init(&mine, sizeof mine, all, GOAL_ALG_AUTO);
    CHECK(s && GOAL_Wait(GOAL_Run(s)) == GOAL_SUCCESS, "goal allgather: %s", GOAL_LastError());
    for (int r = 0; r < size; r++)
        CHECK(all[r] == r * 3 + 1, "goal allgather: rank %d's block is %d", r, all[r]);
    GOAL_FreeSchedule(s);
    int sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == 3 * size * (size - 1) / 2 + size, "MPI allreduce gave %d", sum);
    CHECK(GOAL_Finalize() == GOAL_SUCCESS, "GOAL_Finalize: %s", GOAL_LastError());
    CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Barrier after GOAL_Finalize");
    int rc = MPI_Finalize();
    if (rank == 0 && rc == MPI_SUCCESS)
        printf("goal and mpi: ok\n");
    return rc;
}
