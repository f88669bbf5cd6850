/* Persistent collectives of the MPI a benchmark program is built with (bench/mpi_coll.c,
 * bench/mpi_groups.c): HAVE_PERSISTENT, PINIT(Name) for the init call (MPI_Name_init, or Open
 * MPI 4.1's MPIX_Name_init), PERSISTENT_NOTE for the record, and BROKEN_PERSISTENT, the reason
 * to skip them (NULL where they work). Includes <mpi.h>. */
#ifndef GOAL_BENCH_MPI_PERSISTENT_H
#define GOAL_BENCH_MPI_PERSISTENT_H

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#if MPI_VERSION >= 4
#define HAVE_PERSISTENT 1
#define PINIT(name) MPI_##name##_init
#define PERSISTENT_NOTE "MPI-4 MPI_Xxx_init"
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define HAVE_PERSISTENT 1
#define PINIT(name) MPIX_##name##_init
#define PERSISTENT_NOTE "Open MPI extension MPIX_Xxx_init (mpi-ext.h, pcollreq)"
#else
#define HAVE_PERSISTENT 0
#define PERSISTENT_NOTE "not available (neither MPI-4 nor the pcollreq extension)"
#endif

/* MPICH 4.0's persistent collectives give wrong data (gather, scatter, allgather: non-root
 * ranks complete from the second MPI_Start on without receiving) and then abort with "Invalid
 * communicator" (seen with 4.0.2); they are skipped unless --force-persistent. */
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40100000
#define BROKEN_PERSISTENT "MPICH 4.0 persistent collectives are broken (wrong data from the second " \
                          "MPI_Start of gather/scatter/allgather, then 'Invalid communicator' aborts)"
#else
#define BROKEN_PERSISTENT NULL
#endif

#endif
