/* MPI collectives, timed by the ESPGOAL thesis' method (6.5), the same way as bench/goal_coll.c.
 *
 * Written against MPI only; built once with each MPI (Open MPI, MPICH).
 *
 *   mpirun -n N ./mpi_coll LIBNAME [--quick] [--pin] [--colls LIST] [--variants LIST]
 *                          [--sizes LIST] [--gather-extra] [--budget-ms X] [--min-iters N] [--max-iters N]
 *                          [--force-persistent] [--sep-file PATH] [--touch] [--alloc-mem]
 *
 * Variants (each timed per iteration by every rank, clock_gettime(CLOCK_MONOTONIC)):
 *   blocking     MPI_Xxx
 *   nonblocking  MPI_Ixxx + MPI_Wait
 *   persistent   MPI_Xxx_init once, then MPI_Start + MPI_Wait (MPI-4; Open MPI 4.1 has them
 *                as MPIX_Xxx_init in <mpi-ext.h> when OMPI_HAVE_MPI_EXT_PCOLLREQ is defined;
 *                where neither exists the variant is skipped with a {"test": "skip"} line)
 * Root 0; reductions: MPI_DOUBLE MPI_SUM; size = one rank's contribution in bytes (as in
 * goal_coll.c). Before each timed iteration of bcast, gather, scatter and reduce every rank
 * enters a separator: with --sep-file the shared-memory barrier of separator.h (the same as
 * goal_coll.c's), else MPI_Barrier. Per-iteration times are gathered at rank 0 (MPI_Gather), averaged over
 * the ranks, and the median over iterations is reported. Iterations: warm-up, an estimate
 * (max over ranks), then clamp(budget / estimate, min-iters, max-iters).
 *
 * Rank 0 prints one JSON object per line:
 *   {"lib", "test": "coll", "variant", "coll", "ranks", "bytes", "median_us", "mean_us",
 *    "min_us", "p25_us", "p75_us", "max_us", "iters", "barrier_before", "verified",
 *    "rank_median_us": [per rank], "touch_us" with --touch, "cycle_us"}
 * "cycle_us": rank 0's wall time of the timed loop divided by its iterations, separators
 * included: what a program that calls the collective in a loop pays per call. The per-rank
 * times leave out a wait inside the separator, and with more ranks than cores that is where
 * a library whose waiting ranks keep their CPU loses its time (bench/README.md).
 * --touch: every rank reads its result after each timed iteration (bench/coll_common.h).
 * --alloc-mem: the buffers come from MPI_Alloc_mem (under libgoal-mpi, goal's shared heap).
 * "verified": after the timed iterations one more call (the same persistent request) with known
 * data gave the right result on every rank. MPICH 4.0.2's persistent MPI_Scatter_init does not:
 * from the second MPI_Start on, non-root ranks complete without receiving (such rows are kept in
 * the JSON but left out of the summary by bench/coll.py).
 * plus a {"test": "meta"} line first (library version).
 *
 * Built with -DGOAL_BENCH_ONECCL and linked with ccl_shim.cpp it measures Intel oneCCL the
 * same way (bench/coll.py's "oneccl", variant blocking: a ccl:: call and the wait on its
 * event; gather and scatter, which oneCCL lacks, are left out): see ccl_shim.h.
 */
#include "coll_common.h"
#include "mpi_persistent.h"
#include "separator.h"
#ifdef GOAL_BENCH_ONECCL
#include "ccl_shim.h"
#endif

/* GCC 12 misreads MPICH's MPI_STATUSES_IGNORE as a zero-size array */
#pragma GCC diagnostic ignored "-Wstringop-overflow"


enum { BLOCKING, NONBLOCKING, PERSISTENT, NVAR };
static const char *VAR[NVAR] = {"blocking", "nonblocking", "persistent"};


static int rank, nranks;
static const char *lib;
static char *g_sbuf, *g_rbuf;
static double *g_t, *g_all;
static int *g_counts, *g_displs; /* allgatherv, alltoallv: equal blocks (vlayout) */

/* The counts and displacements of allgatherv and alltoallv with n bytes per rank (set
 * before a point, outside the timed region; they live as long as its requests). */
static void vlayout(size_t n) {
    for (int i = 0; i < nranks; i++) g_counts[i] = (int)n, g_displs[i] = i * (int)n;
}

static void die(const char *what) {
    fprintf(stderr, "mpi_coll (rank %d): %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* ---- verification: one run with known data after the timed iterations ----------------- */

static uint8_t vpat(uint64_t seed, size_t i) {
    uint64_t x = (seed ^ (i >> 3)) * 0x9E3779B97F4A7C15ULL;
    x ^= x >> 29;
    return (uint8_t)(x >> (8 * (i & 7)));
}

static double vval(uint64_t seed, int r, size_t i) { return (double)((r + 1) * (int)(i % 13 + 1)) + (double)(seed % 7); }

/* Fills the send side (and clears the receive side) for a verification run of c with n bytes. */
static void prepare(int c, size_t n, uint64_t seed) {
    size_t p = (size_t)nranks, cnt = n / 8;
    memset(g_rbuf, 0, n * p);
    switch (c) {
    case BCAST:
        for (size_t i = 0; i < n; i++) g_sbuf[i] = rank == 0 ? (char)vpat(seed, i) : 0;
        break;
    case GATHER: case ALLGATHER: case ALLGATHERV:
        for (size_t i = 0; i < n; i++) g_sbuf[i] = (char)vpat(seed + (uint64_t)rank, i);
        break;
    case SCATTER: case ALLTOALL: case ALLTOALLV:
        for (size_t j = 0; j < p; j++)
            for (size_t i = 0; i < n; i++) g_sbuf[j * n + i] = (char)vpat(seed + 1000 * (uint64_t)rank + j, i);
        break;
    case REDUCE: case ALLREDUCE: case RSB: {
        size_t tot = c == RSB ? cnt * p : cnt;
        for (size_t i = 0; i < tot; i++) {
            double v = vval(seed, rank, i);
            memcpy(g_sbuf + 8 * i, &v, 8);
        }
        break;
    }
    }
}

/* 1 if this rank's result of the verification run is right. */
static int verify(int c, size_t n, uint64_t seed) {
    size_t p = (size_t)nranks, cnt = n / 8;
    switch (c) {
    case BCAST:
        for (size_t i = 0; i < n; i++) if ((uint8_t)g_sbuf[i] != vpat(seed, i)) return 0;
        return 1;
    case GATHER: case ALLGATHER: case ALLGATHERV:
        if (c == GATHER && rank != 0) return 1;
        for (size_t q = 0; q < p; q++)
            for (size_t i = 0; i < n; i++) if ((uint8_t)g_rbuf[q * n + i] != vpat(seed + q, i)) return 0;
        return 1;
    case SCATTER:
        for (size_t i = 0; i < n; i++) if ((uint8_t)g_rbuf[i] != vpat(seed + (uint64_t)rank, i)) return 0;
        return 1;
    case ALLTOALL: case ALLTOALLV:
        for (size_t q = 0; q < p; q++)
            for (size_t i = 0; i < n; i++) if ((uint8_t)g_rbuf[q * n + i] != vpat(seed + 1000 * q + (uint64_t)rank, i)) return 0;
        return 1;
    case REDUCE: case ALLREDUCE: case RSB: {
        if (c == REDUCE && rank != 0) return 1;
        size_t off = c == RSB ? cnt * (size_t)rank : 0;
        for (size_t i = 0; i < cnt; i++) {
            double want = 0, got;
            for (int r = 0; r < nranks; r++) want += vval(seed, r, off + i);
            memcpy(&got, g_rbuf + 8 * i, 8);
            if (got != want) return 0;
        }
        return 1;
    }
    }
    return 1;
}

/* Back to the timing data (ones). */
static void restore(size_t n) {
    for (size_t i = 0; i + 8 <= n * (size_t)nranks; i += 8) {
        double one = 1.0;
        memcpy(g_sbuf + i, &one, 8);
    }
}

/* One call of collective c (blocking) or its start (nonblocking: returns a request). */
static void blocking(int c, size_t n) {
    int b = (int)n, cnt = (int)(n / 8);
    MPI_Comm w = MPI_COMM_WORLD;
#ifdef GOAL_BENCH_ONECCL
    ccl_shim_run(c, g_sbuf, g_rbuf, n);
    return;
#endif
    switch (c) {
    case BARRIER: MPI_Barrier(w); break;
    case BCAST: MPI_Bcast(g_sbuf, b, MPI_BYTE, 0, w); break;
    case GATHER: MPI_Gather(g_sbuf, b, MPI_BYTE, g_rbuf, b, MPI_BYTE, 0, w); break;
    case SCATTER: MPI_Scatter(g_sbuf, b, MPI_BYTE, g_rbuf, b, MPI_BYTE, 0, w); break;
    case ALLGATHER: MPI_Allgather(g_sbuf, b, MPI_BYTE, g_rbuf, b, MPI_BYTE, w); break;
    case ALLTOALL: MPI_Alltoall(g_sbuf, b, MPI_BYTE, g_rbuf, b, MPI_BYTE, w); break;
    case REDUCE: MPI_Reduce(g_sbuf, g_rbuf, cnt, MPI_DOUBLE, MPI_SUM, 0, w); break;
    case ALLREDUCE: MPI_Allreduce(g_sbuf, g_rbuf, cnt, MPI_DOUBLE, MPI_SUM, w); break;
    case RSB: MPI_Reduce_scatter_block(g_sbuf, g_rbuf, cnt, MPI_DOUBLE, MPI_SUM, w); break;
    case ALLGATHERV: MPI_Allgatherv(g_sbuf, b, MPI_BYTE, g_rbuf, g_counts, g_displs, MPI_BYTE, w); break;
    case ALLTOALLV: MPI_Alltoallv(g_sbuf, g_counts, g_displs, MPI_BYTE, g_rbuf, g_counts, g_displs, MPI_BYTE, w); break;
    }
}

static void nonblocking(int c, size_t n, MPI_Request *r) {
    int b = (int)n, cnt = (int)(n / 8);
    MPI_Comm w = MPI_COMM_WORLD;
    switch (c) {
    case BARRIER: MPI_Ibarrier(w, r); break;
    case BCAST: MPI_Ibcast(g_sbuf, b, MPI_BYTE, 0, w, r); break;
    case GATHER: MPI_Igather(g_sbuf, b, MPI_BYTE, g_rbuf, b, MPI_BYTE, 0, w, r); break;
    case SCATTER: MPI_Iscatter(g_sbuf, b, MPI_BYTE, g_rbuf, b, MPI_BYTE, 0, w, r); break;
    case ALLGATHER: MPI_Iallgather(g_sbuf, b, MPI_BYTE, g_rbuf, b, MPI_BYTE, w, r); break;
    case ALLTOALL: MPI_Ialltoall(g_sbuf, b, MPI_BYTE, g_rbuf, b, MPI_BYTE, w, r); break;
    case REDUCE: MPI_Ireduce(g_sbuf, g_rbuf, cnt, MPI_DOUBLE, MPI_SUM, 0, w, r); break;
    case ALLREDUCE: MPI_Iallreduce(g_sbuf, g_rbuf, cnt, MPI_DOUBLE, MPI_SUM, w, r); break;
    case RSB: MPI_Ireduce_scatter_block(g_sbuf, g_rbuf, cnt, MPI_DOUBLE, MPI_SUM, w, r); break;
    case ALLGATHERV: MPI_Iallgatherv(g_sbuf, b, MPI_BYTE, g_rbuf, g_counts, g_displs, MPI_BYTE, w, r); break;
    case ALLTOALLV: MPI_Ialltoallv(g_sbuf, g_counts, g_displs, MPI_BYTE, g_rbuf, g_counts, g_displs, MPI_BYTE, w, r); break;
    }
}

#if HAVE_PERSISTENT
static void persistent_init(int c, size_t n, MPI_Request *r) {
    int b = (int)n, cnt = (int)(n / 8);
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Info i = MPI_INFO_NULL;
    switch (c) {
    case BARRIER: PINIT(Barrier)(w, i, r); break;
    case BCAST: PINIT(Bcast)(g_sbuf, b, MPI_BYTE, 0, w, i, r); break;
    case GATHER: PINIT(Gather)(g_sbuf, b, MPI_BYTE, g_rbuf, b, MPI_BYTE, 0, w, i, r); break;
    case SCATTER: PINIT(Scatter)(g_sbuf, b, MPI_BYTE, g_rbuf, b, MPI_BYTE, 0, w, i, r); break;
    case ALLGATHER: PINIT(Allgather)(g_sbuf, b, MPI_BYTE, g_rbuf, b, MPI_BYTE, w, i, r); break;
    case ALLTOALL: PINIT(Alltoall)(g_sbuf, b, MPI_BYTE, g_rbuf, b, MPI_BYTE, w, i, r); break;
    case REDUCE: PINIT(Reduce)(g_sbuf, g_rbuf, cnt, MPI_DOUBLE, MPI_SUM, 0, w, i, r); break;
    case ALLREDUCE: PINIT(Allreduce)(g_sbuf, g_rbuf, cnt, MPI_DOUBLE, MPI_SUM, w, i, r); break;
    case RSB: PINIT(Reduce_scatter_block)(g_sbuf, g_rbuf, cnt, MPI_DOUBLE, MPI_SUM, w, i, r); break;
    case ALLGATHERV: PINIT(Allgatherv)(g_sbuf, b, MPI_BYTE, g_rbuf, g_counts, g_displs, MPI_BYTE, w, i, r); break;
    case ALLTOALLV: PINIT(Alltoallv)(g_sbuf, g_counts, g_displs, MPI_BYTE, g_rbuf, g_counts, g_displs, MPI_BYTE, w, i, r); break;
    }
}
#endif

/* One timed iteration; returns seconds. */
static double once(int v, int c, size_t n, MPI_Request *preq) {
    double a = now_s();
    if (v == BLOCKING) {
        blocking(c, n);
    } else if (v == NONBLOCKING) {
        MPI_Request r;
        nonblocking(c, n, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        MPI_Start(preq);
        MPI_Wait(preq, MPI_STATUS_IGNORE);
    }
    return now_s() - a;
}

/* Between timed iterations: the shared-memory barrier of separator.h (--sep-file), or
 * MPI_Barrier without it. */
static void separate(void) {
    if (sep_p) sep_wait();
    else MPI_Barrier(MPI_COMM_WORLD);
}

static void point(int v, int c, size_t n, double budget_s, int min_it, int max_it) {
    int bar = !SYNCS[c] && nranks > 1;
    MPI_Request preq = MPI_REQUEST_NULL;
    vlayout(n);
#if HAVE_PERSISTENT
    if (v == PERSISTENT) persistent_init(c, n, &preq);
#endif
    for (int i = 0; i < 3; i++) {
        if (bar) separate();
        once(v, c, n, &preq);
    }
    double est = 0, mx = 0;
    for (int i = 0; i < 3; i++) {
        if (bar) separate();
        est += once(v, c, n, &preq);
    }
    est /= 3;
    MPI_Allreduce(&est, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    long it = mx > 0 ? (long)(budget_s / mx) : max_it;
    if (it < min_it) it = min_it;
    if (it > max_it) it = max_it;
    int iters = (int)it;
    double loop0 = now_s();
    for (int i = 0; i < iters; i++) {
        if (bar) separate();
        g_t[i] = once(v, c, n, &preq) * 1e6;
        if (touch) g_touch[i] = touch_result(c, n, rank, nranks, g_sbuf, g_rbuf) * 1e6;
    }
    double cycle_us = (now_s() - loop0) * 1e6 / iters;
    double touch_me = touch_median(iters), touch_us = 0;
    if (touch) MPI_Allreduce(&touch_me, &touch_us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    /* verification: known data through the same call (the same persistent request) */
    uint64_t seed = ((uint64_t)c << 40) ^ ((uint64_t)v << 32) ^ n ^ 0x5eed;
    prepare(c, n, seed);
    if (bar) separate();
    once(v, c, n, &preq);
    int ok = verify(c, n, seed), all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    restore(n);
#if HAVE_PERSISTENT
    if (v == PERSISTENT) MPI_Request_free(&preq);
#endif
    MPI_Gather(g_t, iters, MPI_DOUBLE, g_all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double *avg = malloc(sizeof(double) * (size_t)iters), mean = 0;
        for (int i = 0; i < iters; i++) {
            double sum = 0;
            for (int r = 0; r < nranks; r++) sum += g_all[(size_t)r * (size_t)iters + (size_t)i];
            avg[i] = sum / nranks;
            mean += avg[i];
        }
        mean /= iters;
        double med = median(avg, iters);
        printf("{\"lib\": ");
        json_str(stdout, lib);
        printf(", \"test\": \"coll\", \"variant\": \"%s\", \"coll\": \"%s\", \"alg\": \"%s\", \"ranks\": %d, "
               "\"bytes\": %zu, \"median_us\": %.4f, \"mean_us\": %.4f, \"min_us\": %.4f, \"p25_us\": %.4f, "
               "\"p75_us\": %.4f, \"max_us\": %.4f, \"iters\": %d, \"barrier_before\": %s, \"verified\": %s",
               VAR[v], COLL[c], VAR[v], nranks, n, med, mean, avg[0], avg[iters / 4], avg[(3 * iters) / 4],
               avg[iters - 1], iters, bar ? "true" : "false", all_ok ? "true" : "false");
        json_rank_medians(stdout, g_all, nranks, iters);
        json_touch(stdout, touch_us);
        printf(", \"cycle_us\": %.4f}\n", cycle_us);
        fflush(stdout);
        free(avg);
    }
}

static int in_list(const char *list, const char *name) {
    if (!list) return 1;
    size_t k = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += k) {
        int start = p == list || p[-1] == ',';
        int end = p[k] == 0 || p[k] == ',';
        if (start && end) return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
#ifdef GOAL_BENCH_ONECCL
    if (ccl_shim_init(rank, nranks) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
#endif

    int quick = 0, pin = 0, alloc_mem = 0, min_it = -1, max_it = -1;
    double budget_ms = -1;
    int force_persistent = 0;
    int gextra = 0; /* gather also at GATHER_EXTRA bytes (default: when --sizes is not given) */
    const char *colls = NULL, *variants = NULL, *sizes_arg = NULL, *sep_file = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--pin")) pin = 1;
        else if (!strcmp(argv[i], "--touch")) touch = 1;
        else if (!strcmp(argv[i], "--alloc-mem")) alloc_mem = 1;
        else if (!strcmp(argv[i], "--colls") && i + 1 < argc) colls = argv[++i];
        else if (!strcmp(argv[i], "--variants") && i + 1 < argc) variants = argv[++i];
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes_arg = argv[++i];
        else if (!strcmp(argv[i], "--gather-extra")) gextra = 1;
        else if (!strcmp(argv[i], "--force-persistent")) force_persistent = 1;
        else if (!strcmp(argv[i], "--sep-file") && i + 1 < argc) sep_file = argv[++i];
        else if (!strcmp(argv[i], "--budget-ms") && i + 1 < argc) budget_ms = atof(argv[++i]);
        else if (!strcmp(argv[i], "--min-iters") && i + 1 < argc) min_it = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-iters") && i + 1 < argc) max_it = atoi(argv[++i]);
        else if (argv[i][0] != '-' && !lib) lib = argv[i];
        else {
            if (rank == 0)
                fprintf(stderr,
                        "usage: %s LIBNAME [--quick] [--pin] [--colls LIST] [--variants LIST] [--sizes LIST]\n"
                        "          [--gather-extra] [--budget-ms X] [--min-iters N] [--max-iters N] [--sep-file PATH]\n"
                        "          [--touch] [--alloc-mem] [--force-persistent]\n",
                        argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    if (!lib) lib = "mpi";
    if (sep_file && sep_open(sep_file, nranks) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
    if (budget_ms < 0) budget_ms = quick ? 10 : 40;
    if (min_it < 0) min_it = quick ? 5 : 15;
    if (max_it < 0) max_it = quick ? 200 : 1000;

    size_t sizes[64];
    int nsizes = 0;
    if (sizes_arg) {
        for (const char *p = sizes_arg; *p && nsizes < 64;) {
            char *end;
            unsigned long long v = strtoull(p, &end, 10);
            if (*end == 'K' || *end == 'k') v <<= 10, end++;
            else if (*end == 'M' || *end == 'm') v <<= 20, end++;
            if (end == p) break;
            sizes[nsizes++] = (size_t)v;
            p = *end == ',' ? end + 1 : end;
        }
    } else {
        for (size_t i = 0; i < sizeof DEFAULT_SIZES / sizeof DEFAULT_SIZES[0]; i++) sizes[nsizes++] = DEFAULT_SIZES[i];
    }
    size_t maxn = 8;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > maxn) maxn = sizes[i];
    if (!sizes_arg) gextra = 1;
    if (gextra && GATHER_EXTRA > maxn) maxn = GATHER_EXTRA;

    if (pin) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        if (ncpu < 1) ncpu = 1;
        if (pin_process((int)(rank % ncpu)) != 0) die("pinning failed");
    }
    size_t cap = maxn * (size_t)nranks;
    if (alloc_mem) {
        if (MPI_Alloc_mem((MPI_Aint)cap, MPI_INFO_NULL, &g_sbuf) != MPI_SUCCESS ||
            MPI_Alloc_mem((MPI_Aint)cap, MPI_INFO_NULL, &g_rbuf) != MPI_SUCCESS)
            die("MPI_Alloc_mem");
    } else {
        g_sbuf = alloc_pages(cap, 0);
        g_rbuf = alloc_pages(cap, 0);
    }
    g_counts = malloc(sizeof(int) * (size_t)nranks);
    g_displs = malloc(sizeof(int) * (size_t)nranks);
    if (!g_counts || !g_displs) die("malloc");
    for (size_t i = 0; i + 8 <= cap; i += 8) {
        double one = 1.0;
        memcpy(g_sbuf + i, &one, 8);
    }
    g_t = malloc(sizeof(double) * (size_t)max_it);
    g_touch = malloc(sizeof(double) * (size_t)max_it);
    g_all = malloc(sizeof(double) * (size_t)max_it * (size_t)nranks);

    /* warm the whole group up before the first point (the first iterations after start-up are slow) */
    for (int i = 0; i < 500; i++) MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 0) {
        char ver[MPI_MAX_LIBRARY_VERSION_STRING] = "";
        int len = 0;
        MPI_Get_library_version(ver, &len);
        char *nl = strchr(ver, '\n');
        if (nl) *nl = 0;
#ifdef GOAL_BENCH_ONECCL
        ccl_shim_version(ver, sizeof ver);
#endif
        char aff[128];
        affinity_string(aff, sizeof aff);
        printf("{\"lib\": ");
        json_str(stdout, lib);
        printf(", \"test\": \"meta\", \"ranks\": %d, \"version\": ", nranks);
        json_str(stdout, ver);
        printf(", \"mpi_version\": %d, \"persistent\": ", MPI_VERSION);
        json_str(stdout, PERSISTENT_NOTE);
        printf(", \"affinity_rank0\": ");
        json_str(stdout, aff);
        printf(", \"separator\": \"%s\", \"quick\": %s, \"touch\": %s, \"budget_ms\": %g, \"min_iters\": %d, "
               "\"max_iters\": %d}\n",
               sep_p ? "shm" : "MPI_Barrier", quick ? "true" : "false", touch ? "true" : "false", budget_ms, min_it,
               max_it);
        const char *why = !HAVE_PERSISTENT ? PERSISTENT_NOTE : force_persistent ? NULL : BROKEN_PERSISTENT;
        if (why && in_list(variants, "persistent")) {
            printf("{\"lib\": ");
            json_str(stdout, lib);
            printf(", \"test\": \"skip\", \"variant\": \"persistent\", \"why\": ");
            json_str(stdout, why);
            printf("}\n");
        }
        fflush(stdout);
    }

    for (int c = 0; c < NCOLL; c++) {
        if (!in_list(colls, COLL[c])) continue;
#ifdef GOAL_BENCH_ONECCL
        if (!ccl_shim_has(c)) continue;
#endif
        for (int si = 0; si < (c == BARRIER ? 1 : nsizes + (c == GATHER && gextra)); si++) {
            size_t n = c == BARRIER ? 0 : si < nsizes ? sizes[si] : GATHER_EXTRA;
            if ((c == REDUCE || c == ALLREDUCE || c == RSB) && n < 8) continue;
            for (int v = 0; v < NVAR; v++) {
                if (!in_list(variants, VAR[v])) continue;
                if (v == PERSISTENT && (!HAVE_PERSISTENT || (BROKEN_PERSISTENT && !force_persistent))) continue;
                point(v, c, n, budget_ms * 1e-3, min_it, max_it);
            }
        }
    }
#ifdef GOAL_BENCH_ONECCL
    ccl_shim_fini();
#endif
    MPI_Finalize();
    return 0;
}
