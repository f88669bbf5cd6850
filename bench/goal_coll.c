/* goal's collectives, timed by the ESPGOAL thesis' method (6.5), against the GOAL C API only.
 *
 *   goalrun -n N ./goal_coll [--name LIB] [--quick] [--pin] [--heap] [--colls LIST]
 *                            [--algs all|auto|LIST] [--sizes LIST] [--gather-extra] [--budget-ms X]
 *                            [--min-iters N] [--max-iters N] [--sep-file PATH] [--touch]
 *
 * For every collective, algorithm and size: the persistent schedule is built once with
 * GOAL_Xxx_init (root 0; reductions: GOAL_FLOAT 64 GOAL_ADD), warmed up, then every rank
 * times GOAL_Run + GOAL_Wait of each iteration with clock_gettime(CLOCK_MONOTONIC). Before
 * each timed iteration of a collective that does not synchronise the group (bcast, gather,
 * scatter, reduce) every rank enters a separator, so that iterations do not pipeline: with
 * --sep-file the shared-memory barrier of separator.h, the same for goal and the MPIs (bench/coll.py
 * always gives one; separator.h says why), without it a goal barrier, always the
 * recursive-doubling one (GOAL_ALG_RECURSIVE_DOUBLING), where every rank sends and receives in
 * each round, and not AUTO's choice, which moves when the decision table is measured again.
 * Which barrier separates the iterations decides who leaves it first, and with more ranks than
 * cores that moves time between the collectives whose root sends (bcast, scatter) and those whose
 * root receives (gather, reduce): 4 ranks on 2 cores, 8 B, with the linear barrier (rank 0
 * releases the others and leaves first) bcast 0.25 us and gather 1.4-1.9 us; with recursive
 * doubling 3.2-3.7 us and 1.2 us. The per-iteration times are collected at rank 0, averaged over
 * the ranks per iteration, and the median over iterations is reported (and each rank's median,
 * as rank_median_us).
 *
 * Size = one rank's contribution in bytes: the message of bcast, one block of gather,
 * scatter, allgather, alltoall, reduce_scatter_block, allgatherv and alltoallv (equal
 * blocks, see coll_common.h), the vector of reduce and
 * allreduce (the same meaning as `bytes` in goal_sched::coll::auto).
 *
 * Iterations: after a warm-up, a few iterations estimate the time per iteration (the
 * maximum over ranks, through a goal allreduce), and the point gets
 * clamp(budget / estimate, min-iters, max-iters) iterations.
 *
 * Rank 0 prints one JSON object per line:
 *   {"lib", "test": "coll", "coll", "alg", "ranks", "bytes", "median_us", "mean_us",
 *    "min_us", "p25_us", "p75_us", "max_us", "iters", "barrier_before": bool, "verified": bool,
 *    "rank_median_us": [per rank], "touch_us" with --touch, "cycle_us"}
 * "cycle_us": rank 0's wall time of the timed loop divided by its iterations, separators
 * included: what a program that calls the collective in a loop pays per call. The per-rank
 * times leave out a wait inside the separator, and with more ranks than cores that is where
 * a library whose waiting ranks keep their CPU loses its time (bench/README.md).
 * --touch: every rank reads its result after each timed iteration (bench/coll_common.h).
 * "verified": after the timed iterations one more run with known data (every rank checks its
 * result; the maximum of the failures over ranks through a goal allreduce) was right.
 * plus a {"test": "meta"} line first. Any failing GOAL call prints GOAL_LastError() and exits 1.
 */
#include "coll_common.h"
#include "separator.h"

#include <goal.h>

static const char *ALG[9] = {"AUTO", "LINEAR", "LINEAR_SYNC", "BINOMIAL", "RECURSIVE_DOUBLING",
                             "BRUCK", "RING", "PIPELINE", "RABENSEIFNER"};
/* the algorithms of each collective (besides AUTO), -1 terminated */
static const int ALGS[NCOLL][5] = {
    {GOAL_ALG_LINEAR, GOAL_ALG_RECURSIVE_DOUBLING, GOAL_ALG_BRUCK, -1},
    {GOAL_ALG_LINEAR, GOAL_ALG_BINOMIAL, GOAL_ALG_RING, GOAL_ALG_PIPELINE, -1},
    {GOAL_ALG_LINEAR, GOAL_ALG_LINEAR_SYNC, GOAL_ALG_BINOMIAL, -1},
    {GOAL_ALG_LINEAR, GOAL_ALG_LINEAR_SYNC, GOAL_ALG_BINOMIAL, -1},
    {GOAL_ALG_RECURSIVE_DOUBLING, GOAL_ALG_BRUCK, GOAL_ALG_RING, -1},
    {GOAL_ALG_LINEAR, GOAL_ALG_LINEAR_SYNC, GOAL_ALG_BRUCK, -1},
    {GOAL_ALG_LINEAR, GOAL_ALG_BINOMIAL, GOAL_ALG_RABENSEIFNER, -1},
    {GOAL_ALG_RECURSIVE_DOUBLING, GOAL_ALG_RING, GOAL_ALG_RABENSEIFNER, -1},
    {GOAL_ALG_LINEAR, GOAL_ALG_RECURSIVE_DOUBLING, GOAL_ALG_RING, -1},
    {GOAL_ALG_LINEAR, GOAL_ALG_RING, -1},
    {GOAL_ALG_LINEAR, GOAL_ALG_LINEAR_SYNC, -1},
};


static int rank = -1, nranks = 0, use_heap = 0;
static const char *lib = "goal";
static char *g_sbuf, *g_rbuf;
static size_t g_cap; /* bytes of each buffer */
static double *g_t, *g_all;

static void fail(const char *what, int code) {
    const char *last = GOAL_LastError();
    fprintf(stderr, "goal_coll (rank %d): %s failed", rank, what);
    if (code < 0) {
        const char *es = GOAL_ErrorString(code);
        fprintf(stderr, " (code %d: %s)", code, es ? es : "?");
    }
    fprintf(stderr, ": %s\n", last && *last ? last : "(no GOAL_LastError message)");
    fflush(stderr);
    exit(1);
}

static void run_wait(GOAL_Schedule s) {
    GOAL_Handle h = GOAL_Run(s);
    if (!h) fail("GOAL_Run", 0);
    int rc = GOAL_Wait(h);
    if (rc != GOAL_SUCCESS) fail("GOAL_Wait", rc);
}

static void free_sched(GOAL_Schedule s) {
    int rc = GOAL_FreeSchedule(s);
    if (rc != GOAL_SUCCESS) fail("GOAL_FreeSchedule", rc);
}

static void *buf_alloc(size_t bytes) {
    if (!use_heap) return alloc_pages(bytes, 0);
    void *p = GOAL_Alloc(bytes);
    if (!p) fail("GOAL_Alloc", 0);
    memset(p, 0, bytes);
    return p;
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

static GOAL_Schedule make(int c, int alg, size_t n) {
    int cnt = (int)(n / 8);
    GOAL_Schedule s = NULL;
    switch (c) {
    case BARRIER: s = GOAL_Barrier_init(alg); break;
    case BCAST: s = GOAL_Bcast_init(g_sbuf, n, 0, alg); break;
    case GATHER: s = GOAL_Gather_init(g_sbuf, n, g_rbuf, 0, alg); break;
    case SCATTER: s = GOAL_Scatter_init(g_sbuf, n, g_rbuf, 0, alg); break;
    case ALLGATHER: s = GOAL_Allgather_init(g_sbuf, n, g_rbuf, alg); break;
    case ALLTOALL: s = GOAL_Alltoall_init(g_sbuf, n, g_rbuf, alg); break;
    case REDUCE: s = GOAL_Reduce_init(g_sbuf, g_rbuf, cnt, GOAL_FLOAT, 64, GOAL_ADD, 0, alg); break;
    case ALLREDUCE: s = GOAL_Allreduce_init(g_sbuf, g_rbuf, cnt, GOAL_FLOAT, 64, GOAL_ADD, alg); break;
    case RSB: s = GOAL_Reduce_scatter_block_init(g_sbuf, g_rbuf, cnt, GOAL_FLOAT, 64, GOAL_ADD, alg); break;
    case ALLGATHERV: case ALLTOALLV: {
        /* equal blocks; the schedule keeps its own copy of the arrays */
        size_t *counts = malloc(sizeof(size_t) * (size_t)nranks), *displs = malloc(sizeof(size_t) * (size_t)nranks);
        if (!counts || !displs) fail("malloc", 0);
        for (int i = 0; i < nranks; i++) counts[i] = n, displs[i] = (size_t)i * n;
        if (c == ALLGATHERV) s = GOAL_Allgatherv_init(g_sbuf, n, g_rbuf, counts, displs, alg);
        else s = GOAL_Alltoallv_init(g_sbuf, counts, displs, g_rbuf, counts, displs, alg);
        free(counts);
        free(displs);
        break;
    }
    }
    if (!s) {
        char what[160];
        snprintf(what, sizeof what, "%s with GOAL_ALG_%s, %zu bytes", COLL[c], ALG[alg], n);
        fail(what, 0);
    }
    return s;
}

/* The time of every rank's iterations, at rank 0 (point to point). */
static void collect(int iters) {
    GOAL_Graph g = GOAL_CreateGraph();
    if (!g) fail("GOAL_CreateGraph", 0);
    int bytes = iters * (int)sizeof(double);
    if (rank == 0) {
        memcpy(g_all, g_t, (size_t)bytes);
        for (int r = 1; r < nranks; r++)
            if (GOAL_Recv(g, g_all + (size_t)r * (size_t)iters, bytes, r, 77, GOAL_USERSPACE) < 0) fail("GOAL_Recv", 0);
    } else if (GOAL_Send(g, g_t, bytes, 0, 77, GOAL_USERSPACE) < 0) {
        fail("GOAL_Send", 0);
    }
    GOAL_Schedule s = GOAL_Compile(g);
    if (!s) fail("GOAL_Compile", 0);
    GOAL_FreeGraph(g);
    run_wait(s);
    free_sched(s);
}

static GOAL_Schedule g_bar, g_max; /* barrier between iterations; MAX allreduce of one double */
static double g_max_in, g_max_out;

/* Between timed iterations: the shared-memory barrier of separator.h (--sep-file), or
 * goal's recursive-doubling barrier without it. */
static void separate(void) {
    if (sep_p) sep_wait();
    else run_wait(g_bar);
}

static void point(int c, int alg, size_t n, double budget_s, int min_it, int max_it) {
    GOAL_Schedule s = make(c, alg, n);
    int bar = !SYNCS[c] && nranks > 1;
    /* warm-up, then an estimate */
    for (int i = 0; i < 3; i++) {
        if (bar) separate();
        run_wait(s);
    }
    double est = 0;
    for (int i = 0; i < 3; i++) {
        if (bar) separate();
        double a = now_s();
        run_wait(s);
        est += now_s() - a;
    }
    g_max_in = est / 3;
    run_wait(g_max);
    long it = g_max_out > 0 ? (long)(budget_s / g_max_out) : max_it;
    if (it < min_it) it = min_it;
    if (it > max_it) it = max_it;
    int iters = (int)it;
    double loop0 = now_s();
    for (int i = 0; i < iters; i++) {
        if (bar) separate();
        double a = now_s();
        run_wait(s);
        g_t[i] = (now_s() - a) * 1e6;
        if (touch) g_touch[i] = touch_result(c, n, rank, nranks, g_sbuf, g_rbuf) * 1e6;
    }
    double cycle_us = (now_s() - loop0) * 1e6 / iters;
    double touch_us = 0;
    if (touch) {
        g_max_in = touch_median(iters);
        run_wait(g_max);
        touch_us = g_max_out;
    }
    /* verification: known data through the same schedule, the result checked on every rank */
    uint64_t seed = ((uint64_t)c << 40) ^ ((uint64_t)alg << 32) ^ n ^ 0x5eed;
    prepare(c, n, seed);
    if (bar) separate();
    run_wait(s);
    g_max_in = verify(c, n, seed) ? 0.0 : 1.0;
    run_wait(g_max);
    int verified = g_max_out == 0.0;
    restore(n);
    free_sched(s);
    collect(iters);
    if (rank == 0) {
        double *avg = malloc(sizeof(double) * (size_t)iters), mean = 0;
        for (int i = 0; i < iters; i++) {
            double sum = 0;
            for (int r = 0; r < nranks; r++) sum += g_all[(size_t)r * (size_t)iters + (size_t)i];
            avg[i] = sum / nranks;
            mean += avg[i];
        }
        mean /= iters;
        double med = median(avg, iters); /* sorts avg */
        printf("{\"lib\": ");
        json_str(stdout, lib);
        printf(", \"test\": \"coll\", \"coll\": \"%s\", \"alg\": \"%s\", \"ranks\": %d, \"bytes\": %zu, "
               "\"median_us\": %.4f, \"mean_us\": %.4f, \"min_us\": %.4f, \"p25_us\": %.4f, "
               "\"p75_us\": %.4f, \"max_us\": %.4f, \"iters\": %d, \"barrier_before\": %s, \"verified\": %s",
               COLL[c], ALG[alg], nranks, n, med, mean, avg[0], avg[iters / 4], avg[(3 * iters) / 4],
               avg[iters - 1], iters, bar ? "true" : "false", verified ? "true" : "false");
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
    int quick = 0, pin = 0, min_it = -1, max_it = -1;
    double budget_ms = -1;
    int gextra = 0; /* gather also at GATHER_EXTRA bytes (default: when --sizes is not given) */
    const char *name = NULL, *colls = NULL, *algs = "all", *sizes_arg = NULL, *sep_file = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--heap")) use_heap = 1;
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--pin")) pin = 1;
        else if (!strcmp(argv[i], "--touch")) touch = 1;
        else if (!strcmp(argv[i], "--name") && i + 1 < argc) name = argv[++i];
        else if (!strcmp(argv[i], "--colls") && i + 1 < argc) colls = argv[++i];
        else if (!strcmp(argv[i], "--algs") && i + 1 < argc) algs = argv[++i];
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes_arg = argv[++i];
        else if (!strcmp(argv[i], "--gather-extra")) gextra = 1;
        else if (!strcmp(argv[i], "--sep-file") && i + 1 < argc) sep_file = argv[++i];
        else if (!strcmp(argv[i], "--budget-ms") && i + 1 < argc) budget_ms = atof(argv[++i]);
        else if (!strcmp(argv[i], "--min-iters") && i + 1 < argc) min_it = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-iters") && i + 1 < argc) max_it = atoi(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: %s [--name LIB] [--quick] [--pin] [--heap] [--colls LIST] [--algs all|auto|LIST]\n"
                    "          [--sizes LIST] [--gather-extra] [--budget-ms X] [--min-iters N] [--max-iters N]\n"
                    "          [--sep-file PATH]\n",
                    argv[0]);
            return 2;
        }
    }
    lib = name ? name : use_heap ? "goal-heap" : "goal";
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

    if (GOAL_Init() != GOAL_SUCCESS) fail("GOAL_Init", 0);
    nranks = GOAL_GroupSize();
    rank = GOAL_MyRank();
    if (sep_file && sep_open(sep_file, nranks) != 0) return 1;
    if (pin) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        if (ncpu < 1) ncpu = 1;
        if (pin_process((int)(rank % ncpu)) != 0) {
            fprintf(stderr, "goal_coll (rank %d): pinning failed\n", rank);
            return 1;
        }
    }
    g_cap = maxn * (size_t)nranks;
    g_sbuf = buf_alloc(g_cap);
    g_rbuf = buf_alloc(g_cap);
    for (size_t i = 0; i + 8 <= g_cap; i += 8) {
        double one = 1.0;
        memcpy(g_sbuf + i, &one, 8);
    }
    g_t = malloc(sizeof(double) * (size_t)max_it);
    g_touch = malloc(sizeof(double) * (size_t)max_it);
    g_all = malloc(sizeof(double) * (size_t)max_it * (size_t)nranks);
    g_bar = GOAL_Barrier_init(GOAL_ALG_RECURSIVE_DOUBLING);
    if (!g_bar) fail("GOAL_Barrier_init", 0);
    g_max = GOAL_Allreduce_init(&g_max_in, &g_max_out, 1, GOAL_FLOAT, 64, GOAL_MAX, GOAL_ALG_AUTO);
    if (!g_max) fail("GOAL_Allreduce_init", 0);

    /* warm the whole group up before the first point (the first iterations after start-up are slow) */
    for (int i = 0; i < 500; i++) run_wait(g_bar);

    if (rank == 0) {
        char aff[128];
        affinity_string(aff, sizeof aff);
        const char *prog = getenv("GOAL_PROGRESS");
        printf("{\"lib\": ");
        json_str(stdout, lib);
        printf(", \"test\": \"meta\", \"ranks\": %d, \"affinity_rank0\": ", nranks);
        json_str(stdout, aff);
        printf(", \"heap\": %s, \"progress\": ", use_heap ? "true" : "false");
        json_str(stdout, prog ? prog : "");
        printf(", \"separator\": \"%s\", \"quick\": %s, \"touch\": %s, \"budget_ms\": %g, \"min_iters\": %d, "
               "\"max_iters\": %d, \"timer\": \"clock_gettime(CLOCK_MONOTONIC) around GOAL_Run+GOAL_Wait\"}\n",
               sep_p ? "shm" : "goal barrier", quick ? "true" : "false", touch ? "true" : "false", budget_ms,
               min_it, max_it);
        fflush(stdout);
    }

    for (int c = 0; c < NCOLL; c++) {
        if (!in_list(colls, COLL[c])) continue;
        int list[10], na = 0;
        if (!strcmp(algs, "all") || !strcmp(algs, "auto") || in_list(algs, "AUTO")) list[na++] = GOAL_ALG_AUTO;
        for (int k = 0; ALGS[c][k] >= 0; k++)
            if (!strcmp(algs, "all") || in_list(algs, ALG[ALGS[c][k]])) list[na++] = ALGS[c][k];
        for (int si = 0; si < (c == BARRIER ? 1 : nsizes + (c == GATHER && gextra)); si++) {
            size_t n = c == BARRIER ? 0 : si < nsizes ? sizes[si] : GATHER_EXTRA;
            if ((c == REDUCE || c == ALLREDUCE || c == RSB) && n < 8) continue;
            for (int a = 0; a < na; a++) point(c, list[a], n, budget_ms * 1e-3, min_it, max_it);
        }
    }
    free_sched(g_max);
    free_sched(g_bar);
    if (GOAL_Finalize() != GOAL_SUCCESS) fail("GOAL_Finalize", 0);
    return 0;
}
