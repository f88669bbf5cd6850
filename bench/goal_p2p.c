/* goal's own point-to-point benchmarks between ranks 0 and 1, written against
 * the GOAL C API (shared/spec/goal-c-api.md) only.
 *
 *   goalrun -n 2 ./goal_p2p [--heap] [--name LIB] [--quick] [--pin] [--offset N]
 *                           [--tests latency_sched,latency_runwait,bandwidth,runwait_localop,localop_sum]
 *
 * latency_sched    the ESPGOAL thesis' method (6.3): ONE schedule of `rounds` (the thesis'
 *                  100, fewer where 100 round trips take longer than the ~2 ms of a repetition
 *                  of bench/mpi_p2p.c, see sched_rounds()) dependent ping-pongs
 *                  between two GOAL_WTIME local ops (rank 0: WTIME -> send -> recv -> ... ->
 *                  recv -> WTIME, each op requiring the previous; rank 1 mirrored without the
 *                  WTIMEs); one-way = (t_end - t_start) / (2*rounds), median over repetitions
 *                  of Run+Wait of that schedule.
 * latency_runwait  a schedule of ONE round trip; Run+Wait timed per iteration; one-way = median/2.
 * bandwidth        W independent sends of `size` bytes plus a 1-byte ack receive that depends on
 *                  nothing (receiver: W recvs, the ack send requires all of them);
 *                  GB/s = W*size / (Run+Wait time), median over repetitions.
 * runwait_localop  Run+Wait of a schedule holding one GOAL_LocalOp (GOAL_COPY of 8 bytes),
 *                  median in us (every rank runs it; rank 0 reports).
 * localop_sum      Run+Wait of a schedule holding one GOAL_LocalOp ADD r = a + b of 524,288
 *                  elements (LOCALOP_SUM_ELEMS) of binary16 (GOAL_FLOAT 16, tests
 *                  localop_sum_fp16, 1 MiB per vector), bfloat16 (GOAL_BFLOAT 16,
 *                  localop_sum_bf16, 1 MiB) and binary32 (GOAL_FLOAT 32, localop_sum_fp32,
 *                  2 MiB): the 16-bit kernels widen, add in fp32 and round, against fp32's
 *                  plain add of as many elements. Median in us and Gelem/s ("bytes" is one
 *                  vector's size); the result is checked (1 + 1 = 2 in every element).
 * --heap           buffers from GOAL_Alloc (the single-copy path) instead of aligned_alloc;
 *                  lib name "goal-heap" unless --name says otherwise.
 * --pin            pins every thread of rank r to CPU r % ncpus after GOAL_Init (the harness
 *                  does this for every library alike).
 * --offset N       the ping-pong buffers start N bytes past a page boundary (default 0):
 *                  where a copy's destination falls 1 to 15 bytes past its source modulo
 *                  4 KiB, glibc's memcpy (rep movsb) runs 16 times slower on AMD Zen 4.
 *
 * Every schedule is compiled once per size, made reusable, warmed up and run R times.
 * Rank 0 prints one JSON object per line on stdout, same format as bench/mpi_p2p.c:
 *   {"lib": ..., "test": ..., "bytes": N, "median_us": x, ["gbps": y,] "reps": R, ...}
 * Timer: clock_gettime(CLOCK_MONOTONIC), except latency_sched, which uses GOAL_WTIME.
 * Any failing GOAL call prints GOAL_LastError() and exits with 1.
 */
#include "p2p_common.h"

#include <goal.h>

#define TAG 17
#define ACK_TAG 18
#define CTL_TAG 19

static int rank = -1, nranks = 0;
static int use_heap = 0;

/* ---- error checking ------------------------------------------------------------------ */

static void fail(const char *what, int code) {
    const char *last = GOAL_LastError();
    fprintf(stderr, "goal_p2p (rank %d): %s failed", rank, what);
    if (code < 0) {
        const char *es = GOAL_ErrorString(code);
        fprintf(stderr, " (code %d: %s)", code, es ? es : "?");
    }
    fprintf(stderr, ": %s\n", last && *last ? last : "(no GOAL_LastError message)");
    fflush(stderr);
    exit(1);
}

static int chk(int rc, const char *what) {
    if (rc < 0) fail(what, rc);
    return rc;
}

static GOAL_Vertex chkv(GOAL_Vertex v, const char *what) {
    if (v < 0) fail(what, (int)v);
    return v;
}

static GOAL_Graph new_graph(void) {
    GOAL_Graph g = GOAL_CreateGraph();
    if (!g) fail("GOAL_CreateGraph", 0);
    return g;
}

static void req(GOAL_Graph g, GOAL_Vertex prereq, GOAL_Vertex target) {
    if (prereq == GOAL_INVALID_VERTEX) return;
    chk(GOAL_Requires(g, prereq, target), "GOAL_Requires");
}

/* compile, make reusable, free the graph */
static GOAL_Schedule finish(GOAL_Graph g, const char *what) {
    GOAL_Schedule s = GOAL_Compile(g);
    if (!s) {
        fprintf(stderr, "goal_p2p (rank %d): compiling the %s schedule:\n", rank, what);
        fail("GOAL_Compile", 0);
    }
    GOAL_MakeScheduleReusable(s);
    if (GOAL_IsScheduleValid(s) != 1) fail("GOAL_IsScheduleValid after GOAL_MakeScheduleReusable", 0);
    chk(GOAL_FreeGraph(g), "GOAL_FreeGraph");
    return s;
}

static void run_wait(GOAL_Schedule s) {
    GOAL_Handle h = GOAL_Run(s);
    if (!h) fail("GOAL_Run", 0);
    chk(GOAL_Wait(h), "GOAL_Wait");
}

static void free_sched(GOAL_Schedule s) { chk(GOAL_FreeSchedule(s), "GOAL_FreeSchedule"); }

/* ---- buffers ------------------------------------------------------------------------- */

static void *buf_alloc(size_t bytes, int fill) {
    if (!use_heap) return alloc_pages(bytes, fill);
    size_t ps = page_size();
    size_t n = bytes == 0 ? ps : (bytes + ps - 1) / ps * ps;
    void *p = GOAL_Alloc(n);
    if (!p) fail("GOAL_Alloc", 0);
    memset(p, fill, n);
    return p;
}

static void buf_free(void *p) {
    if (!p) return;
    if (use_heap)
        chk(GOAL_Free(p), "GOAL_Free");
    else
        free(p);
}

/* ---- output -------------------------------------------------------------------------- */

static const char *lib = "goal";

/* Buffers are allocated once (largest size) and shared by all tests, so no test
 * runs right after the allocator handed big blocks back to the system. */
static char *g_sbuf, *g_rbuf; /* ping-pong: LAT_SIZES max each */
static size_t g_offset;       /* --offset: bytes past a page boundary */
static char *g_arena;         /* bandwidth: max W*size */
static char *g_ack;

static size_t bw_arena_bytes(void) {
    size_t m = 0;
    for (size_t si = 0; si < N_BW_SIZES; si++)
        if ((size_t)bw_window(BW_SIZES[si]) * BW_SIZES[si] > m)
            m = (size_t)bw_window(BW_SIZES[si]) * BW_SIZES[si];
    return m;
}

static void row_begin(const char *test, size_t bytes) {
    printf("{\"lib\": ");
    json_str(stdout, lib);
    printf(", \"test\": \"%s\", \"bytes\": %zu", test, bytes);
}

static void row_end(void) {
    printf("}\n");
    fflush(stdout);
}

static void minmax(const double *v, int n, double *mn, double *mx) {
    *mn = *mx = v[0];
    for (int i = 1; i < n; i++) {
        if (v[i] < *mn) *mn = v[i];
        if (v[i] > *mx) *mx = v[i];
    }
}

/* ---- schedules ----------------------------------------------------------------------- */

/* `rounds` dependent ping-pongs of n bytes; with wtime, rank 0 brackets them with
 * GOAL_WTIME ops writing *t0 and *t1. Ranks other than 0 and 1 compile an empty graph. */
static GOAL_Schedule pingpong_schedule(int rounds, int wtime, void *sbuf, void *rbuf, size_t n,
                                       double *t0, double *t1) {
    GOAL_Graph g = new_graph();
    GOAL_Vertex prev = GOAL_INVALID_VERTEX;
    int cnt = (int)n;
    if (rank == 0) {
        if (wtime)
            prev = chkv(GOAL_LocalOp(g, NULL, NULL, t0, GOAL_WTIME, GOAL_FLOAT, 64, 1,
                                     GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE),
                        "GOAL_LocalOp(WTIME)");
        for (int i = 0; i < rounds; i++) {
            GOAL_Vertex s = chkv(GOAL_Send(g, sbuf, cnt, 1, TAG, GOAL_USERSPACE), "GOAL_Send");
            req(g, prev, s);
            GOAL_Vertex r = chkv(GOAL_Recv(g, rbuf, cnt, 1, TAG, GOAL_USERSPACE), "GOAL_Recv");
            req(g, s, r);
            prev = r;
        }
        if (wtime) {
            GOAL_Vertex w = chkv(GOAL_LocalOp(g, NULL, NULL, t1, GOAL_WTIME, GOAL_FLOAT, 64, 1,
                                              GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE),
                                 "GOAL_LocalOp(WTIME)");
            req(g, prev, w);
        }
    } else if (rank == 1) {
        for (int i = 0; i < rounds; i++) {
            GOAL_Vertex r = chkv(GOAL_Recv(g, rbuf, cnt, 0, TAG, GOAL_USERSPACE), "GOAL_Recv");
            req(g, prev, r);
            GOAL_Vertex s = chkv(GOAL_Send(g, sbuf, cnt, 0, TAG, GOAL_USERSPACE), "GOAL_Send");
            req(g, r, s);
            prev = s;
        }
    }
    return finish(g, wtime ? "latency_sched" : "latency_runwait");
}

/* Rank 0's `v` on both ranks (rank 1 receives it). */
static int share_int(int v) {
    int *box = alloc_pages(sizeof(int), 0);
    *box = v;
    GOAL_Graph g = new_graph();
    if (rank == 0) chkv(GOAL_Send(g, box, sizeof(int), 1, CTL_TAG, GOAL_USERSPACE), "GOAL_Send");
    if (rank == 1) chkv(GOAL_Recv(g, box, sizeof(int), 0, CTL_TAG, GOAL_USERSPACE), "GOAL_Recv");
    GOAL_Schedule s = finish(g, "share_int");
    run_wait(s);
    free_sched(s);
    v = *box;
    free(box);
    return v;
}

/* Ping-pongs per schedule in latency_sched for messages of n bytes: as many as take about
 * `target` seconds, the way bench/mpi_p2p.c sizes its repetitions of M round trips, and at
 * most the thesis' 100. A repetition then spans as much time as the MPI program's, and a
 * preemption (under --noise) is as likely to fall into one: with a fixed 100 (25 at 4 MiB),
 * goal's repetitions of large messages were 6 to 20 times longer than the MPIs', and beside
 * a busy process each one held a 4 ms preemption or more. Timed on rank 0 (the median of
 * ten round trips of `one`, a schedule of one), decided there and sent to rank 1. */
static int sched_rounds(GOAL_Schedule one, double target) {
    double rt[10];
    for (int w = 0; w < 2; w++) run_wait(one);
    for (int i = 0; i < 10; i++) {
        double a = now_s();
        run_wait(one);
        rt[i] = now_s() - a;
    }
    long r = (long)(target / median(rt, 10) + 0.5);
    return share_int(r < 1 ? 1 : r > 100 ? 100 : (int)r);
}

static void test_latency_sched(int quick) {
    const int R = quick ? 5 : 25, warm = 2;
    void *sbuf = g_sbuf, *rbuf = g_rbuf;
    /* the WTIME results live in their own page-aligned buffer */
    double *tw = alloc_pages(2 * sizeof(double), 0);
    double lat[64], rw[64];

    for (size_t si = 0; si < N_LAT_SIZES; si++) {
        size_t n = LAT_SIZES[si];
        GOAL_Schedule one = pingpong_schedule(1, 0, sbuf, rbuf, n, NULL, NULL);
        int rounds = sched_rounds(one, quick ? 1e-3 : 2e-3);
        free_sched(one);
        GOAL_Schedule s = pingpong_schedule(rounds, 1, sbuf, rbuf, n, &tw[0], &tw[1]);
        for (int r = -warm; r < R; r++) {
            tw[0] = tw[1] = 0.0;
            double a = now_s();
            run_wait(s);
            double b = now_s();
            if (r >= 0 && rank == 0) {
                lat[r] = (tw[1] - tw[0]) / (2.0 * rounds) * 1e6;
                rw[r] = (b - a) / (2.0 * rounds) * 1e6;
                if (!(tw[1] > tw[0])) {
                    fprintf(stderr, "goal_p2p: GOAL_WTIME gave t_start=%g t_end=%g\n", tw[0],
                            tw[1]);
                    exit(1);
                }
            }
        }
        free_sched(s);
        if (rank == 0) {
            double mn, mx;
            minmax(lat, R, &mn, &mx);
            double med = median(lat, R);
            row_begin("latency_sched", n);
            printf(", \"median_us\": %.4f, \"reps\": %d, \"rounds\": %d, \"min_us\": %.4f, "
                   "\"max_us\": %.4f, \"runwait_oneway_us\": %.4f",
                   med, R, rounds, mn, mx, median(rw, R));
            row_end();
        }
    }
    free(tw);
}

/* iterations of latency_runwait per size: ~2000 below 64 KiB, fewer for big messages */
static int runwait_iters(size_t n, int quick) {
    long it = n <= 64 * KiB ? 2000 : (long)(128 * MiB / n);
    if (it > 2000) it = 2000;
    if (it < 20) it = 20;
    if (quick) it = it / 10 < 5 ? 5 : it / 10;
    return (int)it;
}

/* t[0..R) = microseconds of each of R Run+Waits of s, after `warm` untimed ones. */
static void time_run_wait(GOAL_Schedule s, int R, int warm, double *t) {
    for (int r = -warm; r < R; r++) {
        double a = now_s();
        run_wait(s);
        double b = now_s();
        if (r >= 0) t[r] = (b - a) * 1e6;
    }
}

static void test_latency_runwait(int quick) {
    void *sbuf = g_sbuf, *rbuf = g_rbuf;
    double *t = malloc(sizeof(double) * 2000);
    if (!t) exit(1);
    for (size_t si = 0; si < N_LAT_SIZES; si++) {
        size_t n = LAT_SIZES[si];
        int R = runwait_iters(n, quick), warm = R / 10 < 2 ? 2 : R / 10;
        GOAL_Schedule s = pingpong_schedule(1, 0, sbuf, rbuf, n, NULL, NULL);
        time_run_wait(s, R, warm, t);
        free_sched(s);
        if (rank == 0) {
            double mn, mx;
            minmax(t, R, &mn, &mx);
            double med = median(t, R);
            row_begin("latency_runwait", n);
            printf(", \"median_us\": %.4f, \"reps\": %d, \"rt_median_us\": %.4f, "
                   "\"min_us\": %.4f, \"max_us\": %.4f",
                   med / 2, R, med, mn / 2, mx / 2);
            row_end();
        }
    }
    free(t);
}

static void test_bandwidth(int quick) {
    /* one arena per side, carved into W distinct page-aligned buffers of `size` bytes */
    char *arena = g_arena, *ack = g_ack;
    double t[64];

    for (size_t si = 0; si < N_BW_SIZES; si++) {
        size_t n = BW_SIZES[si];
        int W = bw_window(n), R = bw_reps(n, quick), warm = 2;
        GOAL_Graph g = new_graph();
        if (rank == 0) {
            for (int i = 0; i < W; i++)
                chkv(GOAL_Send(g, arena + (size_t)i * n, (int)n, 1, TAG, GOAL_USERSPACE),
                     "GOAL_Send");
            chkv(GOAL_Recv(g, ack, 1, 1, ACK_TAG, GOAL_USERSPACE), "GOAL_Recv(ack)");
        } else if (rank == 1) {
            GOAL_Vertex a = chkv(GOAL_Send(g, ack, 1, 0, ACK_TAG, GOAL_USERSPACE), "GOAL_Send(ack)");
            for (int i = 0; i < W; i++) {
                GOAL_Vertex r = chkv(
                    GOAL_Recv(g, arena + (size_t)i * n, (int)n, 0, TAG, GOAL_USERSPACE), "GOAL_Recv");
                req(g, r, a);
            }
        }
        GOAL_Schedule s = finish(g, "bandwidth");
        for (int r = -warm; r < R; r++) {
            double a = now_s();
            run_wait(s);
            double b = now_s();
            if (r >= 0) t[r] = (b - a) * 1e6;
        }
        free_sched(s);
        if (rank == 0) {
            double mn, mx;
            minmax(t, R, &mn, &mx);
            double med = median(t, R);
            row_begin("bandwidth", n);
            printf(", \"median_us\": %.4f, \"gbps\": %.4f, \"reps\": %d, \"window\": %d, "
                   "\"min_us\": %.4f, \"max_us\": %.4f",
                   med, (double)W * (double)n / (med * 1e-6) / 1e9, R, W, mn, mx);
            row_end();
        }
    }
}

static void test_runwait_localop(int quick) {
    const int R = quick ? 2000 : 20000, warm = R / 10;
    uint64_t *b = buf_alloc(2 * sizeof(uint64_t), 0);
    b[0] = 0x0123456789abcdefULL;
    double *t = malloc(sizeof(double) * (size_t)R);
    if (!t) exit(1);
    GOAL_Graph g = new_graph();
    chkv(GOAL_LocalOp(g, &b[0], NULL, &b[1], GOAL_COPY, GOAL_UINT, 64, 1, GOAL_USERSPACE,
                      GOAL_USERSPACE, GOAL_USERSPACE),
         "GOAL_LocalOp(COPY)");
    GOAL_Schedule s = finish(g, "runwait_localop");
    time_run_wait(s, R, warm, t);
    free_sched(s);
    if (b[1] != b[0]) {
        fprintf(stderr, "goal_p2p (rank %d): GOAL_COPY did not copy (%llx != %llx)\n", rank,
                (unsigned long long)b[1], (unsigned long long)b[0]);
        exit(1);
    }
    if (rank == 0) {
        double mn, mx;
        minmax(t, R, &mn, &mx);
        double med = median(t, R);
        double p90 = t[(int)(0.9 * (R - 1))]; /* t is sorted by median() */
        row_begin("runwait_localop", 8);
        printf(", \"median_us\": %.4f, \"reps\": %d, \"min_us\": %.4f, \"p90_us\": %.4f, "
               "\"max_us\": %.4f",
               med, R, mn, p90, mx);
        row_end();
    }
    free(t);
    buf_free(b);
}

#define LOCALOP_SUM_ELEMS 524288

/* One ADD of LOCALOP_SUM_ELEMS elements of dt/width (every element 1.0, given as
 * `one`, the bits of 1.0 in that format; `two` those of 2.0), timed as Run+Wait. */
static void localop_sum(int quick, const char *test, GOAL_DataType dt, int width, uint32_t one,
                        uint32_t two) {
    const int R = quick ? 200 : 2000, warm = R / 10;
    const size_t esz = (size_t)width / 8, n = LOCALOP_SUM_ELEMS, bytes = n * esz;
    unsigned char *a = buf_alloc(bytes, 0), *b = buf_alloc(bytes, 0), *r = buf_alloc(bytes, 0);
    for (size_t i = 0; i < n; i++) {
        memcpy(a + i * esz, &one, esz); /* little-endian: the low bytes hold the value */
        memcpy(b + i * esz, &one, esz);
    }
    double *t = malloc(sizeof(double) * (size_t)R);
    if (!t) exit(1);
    GOAL_Graph g = new_graph();
    chkv(GOAL_LocalOp(g, a, b, r, GOAL_ADD, dt, width, (int)n, GOAL_USERSPACE, GOAL_USERSPACE,
                      GOAL_USERSPACE),
         "GOAL_LocalOp(ADD)");
    GOAL_Schedule s = finish(g, test);
    time_run_wait(s, R, warm, t);
    free_sched(s);
    for (size_t i = 0; i < n; i++) {
        if (memcmp(r + i * esz, &two, esz) != 0) {
            fprintf(stderr, "goal_p2p (rank %d): %s: element %zu is not 2.0\n", rank, test, i);
            exit(1);
        }
    }
    if (rank == 0) {
        double mn, mx;
        minmax(t, R, &mn, &mx);
        double med = median(t, R);
        row_begin(test, bytes);
        printf(", \"median_us\": %.4f, \"elements\": %zu, \"gelem_s\": %.4f, \"reps\": %d, "
               "\"min_us\": %.4f, \"max_us\": %.4f",
               med, n, (double)n / (med * 1e-6) / 1e9, R, mn, mx);
        row_end();
    }
    free(t);
    buf_free(r);
    buf_free(b);
    buf_free(a);
}

static void test_localop_sum(int quick) {
#ifdef GOAL_BFLOAT
    localop_sum(quick, "localop_sum_fp16", GOAL_FLOAT, 16, 0x3c00, 0x4000);
    localop_sum(quick, "localop_sum_bf16", GOAL_BFLOAT, 16, 0x3f80, 0x4000);
#endif /* (a goal without 16-bit floats, as bench/ab.py may compare against) */
    localop_sum(quick, "localop_sum_fp32", GOAL_FLOAT, 32, 0x3f800000, 0x40000000);
}

/* rank 1 tells rank 0 where it runs (through goal itself: a first smoke test) */
static void meta(int quick) {
    char *aff = buf_alloc(128, 0);
    affinity_string(aff, 128);
    char *aff1 = buf_alloc(128, 0);
    GOAL_Graph g = new_graph();
    if (rank == 1) chkv(GOAL_Send(g, aff, 128, 0, CTL_TAG, GOAL_USERSPACE), "GOAL_Send");
    if (rank == 0) chkv(GOAL_Recv(g, aff1, 128, 1, CTL_TAG, GOAL_USERSPACE), "GOAL_Recv");
    GOAL_Schedule s = finish(g, "meta");
    run_wait(s);
    free_sched(s);
    if (rank == 0) {
        const char *prog = getenv("GOAL_PROGRESS");
        aff1[127] = 0;
        printf("{\"lib\": ");
        json_str(stdout, lib);
        printf(", \"test\": \"meta\", \"ranks\": %d, \"affinity\": [", nranks);
        json_str(stdout, aff);
        printf(", ");
        json_str(stdout, aff1);
        printf("], \"heap\": %s, \"progress\": ", use_heap ? "true" : "false");
        json_str(stdout, prog ? prog : "");
        printf(", \"quick\": %s, \"timer\": \"clock_gettime(CLOCK_MONOTONIC); latency_sched: "
               "GOAL_WTIME\"}\n",
               quick ? "true" : "false");
        fflush(stdout);
    }
    buf_free(aff1);
    buf_free(aff);
}

int main(int argc, char **argv) {
    int quick = 0, pin = 0;
    const char *name = NULL,
               *tests = "latency_sched,latency_runwait,bandwidth,runwait_localop,localop_sum";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--heap")) use_heap = 1;
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--pin")) pin = 1;
        else if (!strcmp(argv[i], "--name") && i + 1 < argc) name = argv[++i];
        else if (!strcmp(argv[i], "--tests") && i + 1 < argc) tests = argv[++i];
        else if (!strcmp(argv[i], "--offset") && i + 1 < argc && atol(argv[i + 1]) >= 0 &&
                 (size_t)atol(argv[i + 1]) < page_size())
            g_offset = (size_t)atol(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: %s [--heap] [--name LIB] [--quick] [--pin] [--offset N] [--tests "
                    "latency_sched,latency_runwait,bandwidth,runwait_localop,localop_sum]\n",
                    argv[0]);
            return 2;
        }
    }
    lib = name ? name : use_heap ? "goal-heap" : "goal";

    chk(GOAL_Init(), "GOAL_Init");
    nranks = chk(GOAL_GroupSize(), "GOAL_GroupSize");
    rank = chk(GOAL_MyRank(), "GOAL_MyRank");
    if (nranks != 2) {
        if (rank == 0)
            fprintf(stderr, "goal_p2p: needs exactly 2 ranks (goalrun -n 2), got %d\n", nranks);
        return 1;
    }
    if (pin) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        if (ncpu < 1) ncpu = 1;
        if (pin_process((int)(rank % ncpu)) != 0) {
            fprintf(stderr, "goal_p2p (rank %d): pinning failed\n", rank);
            return 1;
        }
    }

    g_sbuf = (char *)buf_alloc(LAT_SIZES[N_LAT_SIZES - 1] + g_offset, 'a' + rank) + g_offset;
    g_rbuf = (char *)buf_alloc(LAT_SIZES[N_LAT_SIZES - 1] + g_offset, 0) + g_offset;
    g_arena = buf_alloc(bw_arena_bytes(), 'a' + rank);
    g_ack = buf_alloc(1, 0);

    meta(quick);
    /* the order is fixed (schedules are collective: same order on every rank) */
    if (strstr(tests, "latency_sched")) test_latency_sched(quick);
    if (strstr(tests, "latency_runwait")) test_latency_runwait(quick);
    if (strstr(tests, "bandwidth")) test_bandwidth(quick);
    if (strstr(tests, "runwait_localop")) test_runwait_localop(quick);
    if (strstr(tests, "localop_sum")) test_localop_sum(quick);

    buf_free(g_ack);
    buf_free(g_arena);
    buf_free(g_rbuf - g_offset);
    buf_free(g_sbuf - g_offset);
    chk(GOAL_Finalize(), "GOAL_Finalize");
    return 0;
}
