/* Latency and bandwidth between two hosts, one program for goal and for MPI.
 *
 *   mpirun -np 2 ./net_pp.goal [--lib NAME] [--reps R]     (built with -DUSE_GOAL against goal)
 *   mpirun -np 2 ./net_pp.mpi  [--lib NAME] [--reps R]     (built with an MPI's mpicc)
 *
 * Rank 0 and rank 1 must be on different hosts (bench/net.py places them).
 *   latency: ping-pong of 8 B and 64 KiB, 100 round trips per repetition, half the round trip;
 *   bandwidth: a window of 4 messages of 16 MiB from rank 0 to rank 1 then an 8-byte reply;
 *              Gbit/s = 4 x 16 MiB x 8 / time.
 * goal builds each pattern once as a schedule (one schedule = one repetition: the thesis'
 * method) and runs it R times; MPI uses blocking Send/Recv (latency) and Isend/Irecv +
 * Waitall (bandwidth). Every repetition is timed; rank 0 prints one JSON line per test
 * with the median (and min, max) over repetitions.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef USE_GOAL
#include <goal.h>
#else
#include <mpi.h>
#endif

#define ROUNDS 100
#define WINDOW 4
#define BIG ((size_t)16 << 20)

static int rank;
static const char *lib = "?";

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *test, size_t bytes, double *t, int n, double scale, const char *unit) {
    qsort(t, n, sizeof *t, cmp);
    if (rank == 0)
        printf("{\"lib\": \"%s\", \"test\": \"%s\", \"bytes\": %zu, \"median_%s\": %.4f, \"min_%s\": %.4f, "
               "\"max_%s\": %.4f, \"reps\": %d}\n",
               lib, test, bytes, unit, scale / t[n / 2], unit, scale / t[n - 1], unit, scale / t[0], n);
    fflush(stdout);
}

static void report_lat(size_t bytes, double *t, int n) {
    qsort(t, n, sizeof *t, cmp);
    if (rank == 0)
        printf("{\"lib\": \"%s\", \"test\": \"latency\", \"bytes\": %zu, \"median_us\": %.3f, \"min_us\": %.3f, "
               "\"max_us\": %.3f, \"reps\": %d}\n",
               lib, bytes, t[n / 2] * 1e6, t[0] * 1e6, t[n - 1] * 1e6, n);
    fflush(stdout);
}

#ifdef USE_GOAL
static void die(const char *what) {
    fprintf(stderr, "net_pp rank %d: %s: %s\n", rank, what, GOAL_LastError());
    exit(1);
}

static GOAL_Schedule pingpong(char *buf, size_t len) {
    GOAL_Graph g = GOAL_CreateGraph();
    GOAL_Vertex prev = GOAL_INVALID_VERTEX;
    for (int i = 0; i < ROUNDS; i++) {
        GOAL_Vertex a, b;
        if (rank == 0) {
            a = GOAL_Send(g, buf, (int)len, 1, 0, GOAL_USERSPACE);
            b = GOAL_Recv(g, buf, (int)len, 1, 0, GOAL_USERSPACE);
        } else {
            a = GOAL_Recv(g, buf, (int)len, 0, 0, GOAL_USERSPACE);
            b = GOAL_Send(g, buf, (int)len, 0, 0, GOAL_USERSPACE);
        }
        if (prev != GOAL_INVALID_VERTEX) GOAL_Requires(g, prev, a);
        GOAL_Requires(g, a, b);
        prev = b;
    }
    GOAL_Schedule s = GOAL_Compile(g);
    if (!s) die("GOAL_Compile");
    GOAL_FreeGraph(g);
    return s;
}

static GOAL_Schedule stream(char **bufs, char *ack) {
    GOAL_Graph g = GOAL_CreateGraph();
    GOAL_Vertex last[WINDOW];
    for (int w = 0; w < WINDOW; w++)
        last[w] = rank == 0 ? GOAL_Send(g, bufs[w], (int)BIG, 1, w, GOAL_USERSPACE)
                            : GOAL_Recv(g, bufs[w], (int)BIG, 0, w, GOAL_USERSPACE);
    GOAL_Vertex r = rank == 0 ? GOAL_Recv(g, ack, 8, 1, 99, GOAL_USERSPACE) : GOAL_Send(g, ack, 8, 0, 99, GOAL_USERSPACE);
    if (rank == 1)
        for (int w = 0; w < WINDOW; w++) GOAL_Requires(g, last[w], r);
    GOAL_Schedule s = GOAL_Compile(g);
    if (!s) die("GOAL_Compile");
    GOAL_FreeGraph(g);
    return s;
}

static double run(GOAL_Schedule s) {
    double t = now();
    if (GOAL_Wait(GOAL_Run(s)) != GOAL_SUCCESS) die("GOAL_Wait");
    return now() - t;
}
#endif

int main(int argc, char **argv) {
    int reps = 15;
#ifdef USE_GOAL
    if (GOAL_Init() != GOAL_SUCCESS) die("GOAL_Init");
    rank = GOAL_MyRank();
    lib = "goal";
#else
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    lib = "mpi";
#endif
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--lib") && i + 1 < argc) lib = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    }
    double *t = calloc((size_t)reps, sizeof *t);
    char *small = calloc(1, 64 << 10), ack[8] = {0};
    char *bufs[WINDOW];
    for (int w = 0; w < WINDOW; w++) {
        bufs[w] = malloc(BIG);
        memset(bufs[w], w + rank, BIG);
    }
    size_t lat_sizes[2] = {8, 64 << 10};
    for (int k = 0; k < 2; k++) {
#ifdef USE_GOAL
        GOAL_Schedule s = pingpong(small, lat_sizes[k]);
        run(s);
        for (int r = 0; r < reps; r++) t[r] = run(s) / (2.0 * ROUNDS);
        GOAL_FreeSchedule(s);
#else
        for (int r = -1; r < reps; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = now();
            for (int i = 0; i < ROUNDS; i++) {
                if (rank == 0) {
                    MPI_Send(small, (int)lat_sizes[k], MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                    MPI_Recv(small, (int)lat_sizes[k], MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(small, (int)lat_sizes[k], MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(small, (int)lat_sizes[k], MPI_BYTE, 0, 0, MPI_COMM_WORLD);
                }
            }
            if (r >= 0) t[r] = (now() - t0) / (2.0 * ROUNDS);
        }
#endif
        report_lat(lat_sizes[k], t, reps);
    }
    int bw_reps = reps < 5 ? reps : 5;
#ifdef USE_GOAL
    GOAL_Schedule s = stream(bufs, ack);
    run(s);
    for (int r = 0; r < bw_reps; r++) t[r] = run(s);
    GOAL_FreeSchedule(s);
#else
    for (int r = -1; r < bw_reps; r++) {
        MPI_Request q[WINDOW];
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        for (int w = 0; w < WINDOW; w++) {
            if (rank == 0) MPI_Isend(bufs[w], (int)BIG, MPI_BYTE, 1, w, MPI_COMM_WORLD, &q[w]);
            else MPI_Irecv(bufs[w], (int)BIG, MPI_BYTE, 0, w, MPI_COMM_WORLD, &q[w]);
        }
        MPI_Waitall(WINDOW, q, MPI_STATUSES_IGNORE);
        if (rank == 0) MPI_Recv(ack, 8, MPI_BYTE, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else MPI_Send(ack, 8, MPI_BYTE, 0, 99, MPI_COMM_WORLD);
        if (r >= 0) t[r] = now() - t0;
    }
#endif
    report("bandwidth", BIG, t, bw_reps, WINDOW * (double)BIG * 8 / 1e9, "gbps");
#ifdef USE_GOAL
    GOAL_Finalize();
#else
    MPI_Finalize();
#endif
    return 0;
}
