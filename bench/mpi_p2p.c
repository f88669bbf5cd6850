/* MPI point-to-point ping-pong and streaming bandwidth between ranks 0 and 1.
 *
 * Written against MPI only; built once with each MPI (Open MPI, MPICH).
 *
 *   mpirun -n 2 ./mpi_p2p LIBNAME [--quick] [--pin] [--offset N] [--tests latency,bandwidth]
 *
 * latency:   blocking ping-pong, for each size: calibrate M so that M round
 *            trips take ~2 ms, one warm-up repetition, then R repetitions of M
 *            round trips timed together; one-way = median over repetitions of
 *            time / (2*M).
 * bandwidth: W back-to-back MPI_Isend + MPI_Waitall, then a 1-byte ack from the
 *            receiver (which posted W MPI_Irecv + MPI_Waitall); GB/s = W*size/time,
 *            median over repetitions (time per window).
 * --pin      pins every thread of rank r to CPU r % ncpus after MPI_Init (the
 *            harness uses this for every library alike, launcher binding off).
 * --offset N the ping-pong buffers start N bytes past a page boundary (default 0;
 *            as bench/goal_p2p.c's).
 *
 * Rank 0 prints one JSON object per line on stdout:
 *   {"lib":..., "test":"latency"|"bandwidth", "bytes":N, "median_us":x,
 *    ["gbps":y,] "reps":R, ...}
 * plus one {"test":"meta", ...} line first (library version, affinity).
 * Timer: clock_gettime(CLOCK_MONOTONIC) (the same as bench/goal_p2p.c).
 */
#include "p2p_common.h"

#include <mpi.h>

/* GCC 12 misreads MPICH's MPI_STATUSES_IGNORE as a zero-size array */
#pragma GCC diagnostic ignored "-Wstringop-overflow"

#define TAG 17
#define ACK_TAG 18

static int rank, nranks;

/* Buffers are allocated once (largest size) and shared by both tests, as in goal_p2p.c. */
static char *g_sbuf, *g_rbuf, *g_arena;
static size_t g_offset; /* --offset: the ping-pong buffers start this far past a page */

static void die(const char *what) {
    fprintf(stderr, "mpi_p2p (rank %d): %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static void pingpong(char *sbuf, char *rbuf, size_t n, long iters) {
    int cnt = (int)n;
    if (rank == 0) {
        for (long i = 0; i < iters; i++) {
            MPI_Send(sbuf, cnt, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
            MPI_Recv(rbuf, cnt, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else if (rank == 1) {
        for (long i = 0; i < iters; i++) {
            MPI_Recv(rbuf, cnt, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, cnt, MPI_BYTE, 0, TAG, MPI_COMM_WORLD);
        }
    }
}

static void run_latency(const char *lib, int quick) {
    const double target = quick ? 1e-3 : 2e-3; /* seconds per repetition */
    const int R = quick ? 5 : 30;
    char *sbuf = g_sbuf, *rbuf = g_rbuf;
    double *t = malloc(sizeof(double) * (size_t)R);

    for (size_t si = 0; si < N_LAT_SIZES; si++) {
        size_t n = LAT_SIZES[si];
        MPI_Barrier(MPI_COMM_WORLD);
        pingpong(sbuf, rbuf, n, 2); /* warm-up */

        /* calibrate M: double the count until a batch takes >= target/4 */
        long k = 1, M = 1;
        for (;;) {
            double t0 = now_s();
            pingpong(sbuf, rbuf, n, k);
            double dt = now_s() - t0;
            long next = 0; /* 0: done, M decided */
            if (rank == 0) {
                if (dt >= target / 4 || k >= (1L << 22)) {
                    double rt = dt / (double)k;
                    M = (long)(target / rt + 0.5);
                    if (M < 1) M = 1;
                } else {
                    next = k * 2;
                }
            }
            long msg[2] = {next, M};
            MPI_Bcast(msg, 2, MPI_LONG, 0, MPI_COMM_WORLD);
            if (msg[0] == 0) {
                M = msg[1];
                break;
            }
            k = msg[0];
        }

        pingpong(sbuf, rbuf, n, M); /* one full warm-up repetition */
        for (int r = 0; r < R; r++) {
            double t0 = now_s();
            pingpong(sbuf, rbuf, n, M);
            t[r] = (now_s() - t0) / (2.0 * (double)M) * 1e6;
        }
        if (rank == 0) {
            double mn = t[0], mx = t[0];
            for (int r = 1; r < R; r++) {
                if (t[r] < mn) mn = t[r];
                if (t[r] > mx) mx = t[r];
            }
            double med = median(t, R);
            printf("{\"lib\": ");
            json_str(stdout, lib);
            printf(", \"test\": \"latency\", \"bytes\": %zu, \"median_us\": %.4f, \"reps\": %d, "
                   "\"iters\": %ld, \"min_us\": %.4f, \"max_us\": %.4f}\n",
                   n, med, R, M, mn, mx);
            fflush(stdout);
        }
    }
    free(t);
}

static size_t bw_arena_bytes(void) {
    size_t m = 0;
    for (size_t si = 0; si < N_BW_SIZES; si++)
        if ((size_t)bw_window(BW_SIZES[si]) * BW_SIZES[si] > m)
            m = (size_t)bw_window(BW_SIZES[si]) * BW_SIZES[si];
    return m;
}

static void run_bandwidth(const char *lib, int quick) {
    int maxw = BW_MAX_WINDOW;
    /* one arena of W*size bytes per side, carved into W page-aligned buffers */
    char *arena = g_arena;
    char ack = 0;
    MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t)maxw);
    double *t = malloc(sizeof(double) * 64);

    for (size_t si = 0; si < N_BW_SIZES; si++) {
        size_t n = BW_SIZES[si];
        int W = bw_window(n);
        int R = bw_reps(n, quick);
        const int warm = 2;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int r = -warm; r < R; r++) {
            if (rank == 0) {
                double t0 = now_s();
                for (int i = 0; i < W; i++)
                    MPI_Isend(arena + (size_t)i * n, (int)n, MPI_BYTE, 1, TAG, MPI_COMM_WORLD,
                              &req[i]);
                MPI_Waitall(W, req, MPI_STATUSES_IGNORE);
                MPI_Recv(&ack, 1, MPI_BYTE, 1, ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                double dt = now_s() - t0;
                if (r >= 0) t[r] = dt * 1e6;
            } else if (rank == 1) {
                for (int i = 0; i < W; i++)
                    MPI_Irecv(arena + (size_t)i * n, (int)n, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
                              &req[i]);
                MPI_Waitall(W, req, MPI_STATUSES_IGNORE);
                MPI_Send(&ack, 1, MPI_BYTE, 0, ACK_TAG, MPI_COMM_WORLD);
            }
        }
        if (rank == 0) {
            double mn = t[0], mx = t[0];
            for (int r = 1; r < R; r++) {
                if (t[r] < mn) mn = t[r];
                if (t[r] > mx) mx = t[r];
            }
            double med = median(t, R);
            double gbps = (double)W * (double)n / (med * 1e-6) / 1e9;
            printf("{\"lib\": ");
            json_str(stdout, lib);
            printf(", \"test\": \"bandwidth\", \"bytes\": %zu, \"median_us\": %.4f, "
                   "\"gbps\": %.4f, \"reps\": %d, \"window\": %d, \"min_us\": %.4f, "
                   "\"max_us\": %.4f}\n",
                   n, med, gbps, R, W, mn, mx);
            fflush(stdout);
        }
    }
    free(t);
    free(req);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    const char *lib = NULL;
    int quick = 0, pin = 0, do_lat = 1, do_bw = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--pin")) pin = 1;
        else if (!strcmp(argv[i], "--tests") && i + 1 < argc) {
            const char *v = argv[++i];
            do_lat = strstr(v, "latency") != NULL;
            do_bw = strstr(v, "bandwidth") != NULL;
        } else if (!strcmp(argv[i], "--offset") && i + 1 < argc && atol(argv[i + 1]) >= 0 &&
                   (size_t)atol(argv[i + 1]) < page_size())
            g_offset = (size_t)atol(argv[++i]);
        else if (argv[i][0] != '-' && !lib) lib = argv[i];
        else {
            if (rank == 0)
                fprintf(stderr, "usage: %s LIBNAME [--quick] [--pin] [--offset N] [--tests latency,bandwidth]\n",
                        argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    if (!lib) lib = "mpi";
    if (nranks < 2) die("needs at least 2 ranks (ranks >= 2 only take part in barriers)");

    if (pin) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        if (ncpu < 1) ncpu = 1;
        if (pin_process((int)(rank % ncpu)) != 0) die("pinning failed");
    }

    g_sbuf = (char *)alloc_pages(LAT_SIZES[N_LAT_SIZES - 1] + g_offset, 'a' + rank) + g_offset;
    g_rbuf = (char *)alloc_pages(LAT_SIZES[N_LAT_SIZES - 1] + g_offset, 0) + g_offset;
    g_arena = alloc_pages(bw_arena_bytes(), 'a' + rank);

    /* meta line: version and where ranks 0 and 1 run */
    char aff[128], aff_all[2][128];
    affinity_string(aff, sizeof aff);
    if (rank == 0) memcpy(aff_all[0], aff, sizeof aff);
    if (rank == 1) MPI_Send(aff, sizeof aff, MPI_CHAR, 0, TAG, MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Recv(aff_all[1], sizeof aff, MPI_CHAR, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        char ver[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        MPI_Get_library_version(ver, &len);
        for (char *c = ver; *c; c++) /* first line only */
            if (*c == '\n' || *c == '\r') {
                *c = 0;
                break;
            }
        printf("{\"lib\": ");
        json_str(stdout, lib);
        printf(", \"test\": \"meta\", \"version\": ");
        json_str(stdout, ver);
        printf(", \"ranks\": %d, \"affinity\": [", nranks);
        json_str(stdout, aff_all[0]);
        printf(", ");
        json_str(stdout, aff_all[1]);
        printf("], \"quick\": %s, \"timer\": \"clock_gettime(CLOCK_MONOTONIC)\"}\n",
               quick ? "true" : "false");
        fflush(stdout);
    }

    if (do_lat) run_latency(lib, quick);
    if (do_bw) run_bandwidth(lib, quick);

    MPI_Barrier(MPI_COMM_WORLD);
    free(g_arena);
    free(g_rbuf - g_offset);
    free(g_sbuf - g_offset);
    MPI_Finalize();
    return 0;
}
