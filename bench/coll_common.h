/* What bench/goal_coll.c and bench/mpi_coll.c share: the collectives, in one order, and
 * --touch, the application's read of what a collective left it.
 *
 * The thesis' method (6.5) times Run+Wait of the same collective again and again, and
 * between two iterations nobody reads the results. Which core's cache holds them then is
 * the benchmark's business only: a library that leaves each rank's incoming block dirty in
 * the sending core's cache (a sender writing into the receiver's memory) looks faster in
 * that loop than one where each rank pulls its block into its own cache, and the
 * application that reads its result pays the difference after Wait (2 ranks, allgather of
 * 1 MiB per rank, goal with its senders writing: 230 against 220 us in Run+Wait, but 220
 * against 175 us for the read that follows). With --touch every rank reads, after each
 * timed iteration and outside the timed region, every byte the collective wrote on that
 * rank (one 8-byte load per 8 bytes); the read's median over iterations, the largest over
 * ranks, goes out as "touch_us", so that both costs are in the record. */
#ifndef GOAL_BENCH_COLL_COMMON_H
#define GOAL_BENCH_COLL_COMMON_H

#include "p2p_common.h"

#include <stdint.h>
#include <string.h>

enum { BARRIER, BCAST, GATHER, SCATTER, ALLGATHER, ALLTOALL, REDUCE, ALLREDUCE, RSB, ALLGATHERV, ALLTOALLV, NCOLL };
static const char *COLL[NCOLL] = {"barrier",  "bcast",  "gather",    "scatter",
                                  "allgather", "alltoall", "reduce", "allreduce",
                                  "reduce_scatter_block", "allgatherv", "alltoallv"};
/* collectives after which every rank has heard from every other: no barrier needed */
static const int SYNCS[NCOLL] = {1, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1};

/* allgatherv and alltoallv are measured with equal blocks (n bytes per rank, displacements
 * i * n), the layout of allgather and alltoall, so that the per-rank-count calls show what
 * their generality costs against the plain ones and against MPI_Allgatherv/MPI_Alltoallv. */

static const size_t DEFAULT_SIZES[] = {8, 64, 512, 4 * KiB, 32 * KiB, 64 * KiB, 256 * KiB, MiB, 4 * MiB};
#define GATHER_EXTRA ((size_t)500 * KiB) /* "500 KiB per rank", as in the thesis (6.5) */

/* Where collective `c` of size `n` (one rank's contribution, as goal_coll.c says; root 0)
 * leaves its result on `rank` of `nranks`, given the buffers it was called with: the
 * start and the length (0: nothing, as on a gather's other ranks). */
static inline size_t result_of(int c, size_t n, int rank, int nranks, char *sbuf, char *rbuf, char **at) {
    size_t p = (size_t)nranks;
    *at = rbuf;
    switch (c) {
    case BCAST: *at = sbuf; return rank == 0 ? 0 : n;
    case GATHER: return rank == 0 ? n * p : 0;
    case SCATTER: return n;
    case ALLGATHER: case ALLTOALL: case ALLGATHERV: case ALLTOALLV: return n * p;
    case REDUCE: return rank == 0 ? n & ~(size_t)7 : 0;
    case ALLREDUCE: case RSB: return n & ~(size_t)7;
    default: return 0;
    }
}

/* Reads every byte of what collective `c` left this rank (see result_of), 8 at a time;
 * the seconds it took. */
static inline double touch_result(int c, size_t n, int rank, int nranks, char *sbuf, char *rbuf) {
    char *at;
    size_t len = result_of(c, n, rank, nranks, sbuf, rbuf, &at);
    double t0 = now_s();
    uint64_t acc = 0, v;
    for (size_t i = 0; i + 8 <= len; i += 8) {
        memcpy(&v, at + i, 8);
        acc += v;
    }
    __asm__ volatile("" : : "r"(acc) : "memory"); /* the loads stay */
    return now_s() - t0;
}

/* --touch: whether to read results, and each timed iteration's read in microseconds. */
static int touch;
static double *g_touch;

/* After the timed loop: this rank's median read time (0 without --touch). */
static inline double touch_median(int iters) {
    return touch ? median(g_touch, iters) : 0;
}

/* The row's "touch_us" field (nothing without --touch). */
static inline void json_touch(FILE *f, double us) {
    if (touch) fprintf(f, ", \"touch_us\": %.4f", us);
}

#endif
