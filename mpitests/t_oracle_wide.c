// The oracle (t_oracle.c, included whole) at the rank counts t_oracle's own
// directives leave out, so that together they cover 1 to 7 ranks under both
// MPIs: 5 and 6, and 7 under MPICH (t_oracle runs 7 under Open MPI). With
// the counts 0, 5 and 20000 only (empty, eager, past the eager limit):
// MPICH's own blocking collectives, the oracle's reference side, take
// minutes at 7 ranks on 2 cores with all five.
// ranks: 5 6
// ranks-mpich: 5 6 7
// timeout: 240
// env: ORACLE_COUNTS=0 5 20000
// expect: oracle: [1-9][0-9]* collectives agreed with MPI's on [567] ranks
// expect: goal-mpi \(rank 0\): MPI_Iallreduce: [1-9][0-9]* on goal, 0 to MPI
// expect: goal-mpi \(rank 0\): MPI_Ialltoallv: [1-9][0-9]* on goal, 0 to MPI
// expect: goal-mpi \(rank 0\): MPI_Ireduce_scatter: [1-9][0-9]* on goal, 0 to MPI
// expect-none: to MPI, .* [1-9][0-9]* to MPI|[1-9][0-9]* to MPI$
#include "t_oracle.c"
