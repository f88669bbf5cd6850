/* Intel oneCCL behind five C calls, so that bench/mpi_coll.c measures it by its own method
 * (built with -DGOAL_BENCH_ONECCL and linked with ccl_shim.cpp; bench/coll.py's "oneccl").
 *
 * MPI (MPICH) only starts the job and carries the harness' own traffic (the times gathered
 * at rank 0, the verification's agreement, the warm-up); every timed collective is oneCCL's:
 * a ccl:: call on a communicator made from a key-value store whose address rank 0 hands out
 * by MPI_Bcast, and the wait on its event. oneCCL moves the data with its own transport
 * (OFI, libfabric: Debian's; its MPI transport wants Intel MPI and falls back to OFI, saying
 * so) and progresses collectives in worker threads, one per rank by default
 * (CCL_WORKER_COUNT), which spin: their CPU cost is part of what is measured.
 *
 * The blocking calls serve bench/mpi_coll.c, the start/test/wait ones bench/overlap.c.
 * The collectives are numbered as in coll_common.h; gather and scatter have no oneCCL call
 * (ccl_shim_has says which), reductions are double sums, sizes one rank's bytes. */
#ifndef GOAL_BENCH_CCL_SHIM_H
#define GOAL_BENCH_CCL_SHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Makes this rank's communicator (collective over MPI_COMM_WORLD); 0 on success, else prints why. */
int ccl_shim_init(int rank, int nranks);
/* 1 if collective c of coll_common.h has a oneCCL call. */
int ccl_shim_has(int c);
/* Runs collective c of n bytes per rank (root 0) from sbuf into rbuf and waits for it. */
void ccl_shim_run(int c, const char *sbuf, char *rbuf, size_t n);
/* Starts, without waiting (bench/overlap.c): kind 0 a barrier, 1 a broadcast of `bytes` from
 * rank 0 in sbuf, 2 an allreduce of `bytes` of float32 sums from sbuf into rbuf. Returns the
 * event to test and wait for. */
void *ccl_shim_start(int kind, void *sbuf, void *rbuf, size_t bytes);
/* 1 if the event has completed (and may be waited for at once). */
int ccl_shim_test(void *ev);
/* Waits for the event and frees it. */
void ccl_shim_wait(void *ev);
/* oneCCL's version and transport, for the meta line. */
void ccl_shim_version(char *out, size_t cap);
/* Frees the communicator (before MPI_Finalize). */
void ccl_shim_fini(void);

#ifdef __cplusplus
}
#endif
#endif
