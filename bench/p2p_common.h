/* Shared helpers of bench/mpi_p2p.c and bench/goal_p2p.c: sizes, timer,
 * page-aligned buffers, medians, JSON output. Header-only, no MPI/GOAL here. */
#ifndef GOAL_BENCH_P2P_COMMON_H
#define GOAL_BENCH_P2P_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

/* one-way latency sizes */
static const size_t LAT_SIZES[] = {0, 1, 8, 64, 512, KiB, 4 * KiB, 16 * KiB, 64 * KiB,
                                   256 * KiB, MiB, 4 * MiB, 16 * MiB};
#define N_LAT_SIZES (sizeof LAT_SIZES / sizeof LAT_SIZES[0])

/* streaming bandwidth sizes (x4 steps) */
static const size_t BW_SIZES[] = {64 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB};
#define N_BW_SIZES (sizeof BW_SIZES / sizeof BW_SIZES[0])

#define BW_MAX_WINDOW 64

/* Window of back-to-back sends per bandwidth repetition: 64 for small messages,
 * down to 8 at 16 MiB (at most 128 MiB in flight per side; distinct buffers). */
static inline int bw_window(size_t size) {
    if (size <= 256 * KiB) return BW_MAX_WINDOW;
    if (size <= MiB) return 32;
    if (size <= 4 * MiB) return 16;
    return 8;
}

/* Repetitions of one bandwidth window (each is timed on its own). */
static inline int bw_reps(size_t size, int quick) {
    int r = size >= 4 * MiB ? 20 : 40;
    return quick ? 5 : r;
}

static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline size_t page_size(void) {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

/* page-aligned, size rounded up to whole pages (at least one), touched */
static inline void *alloc_pages(size_t bytes, int fill) {
    size_t ps = page_size();
    size_t n = bytes == 0 ? ps : (bytes + ps - 1) / ps * ps;
    void *p = aligned_alloc(ps, n);
    if (!p) {
        fprintf(stderr, "aligned_alloc(%zu) failed\n", n);
        exit(1);
    }
    memset(p, fill, n);
    return p;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median of v[0..n) (sorts v in place) */
static inline double median(double *v, int n) {
    if (n <= 0) return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* CPU list this thread may run on, e.g. "0" or "0-1" (for the record) */
static inline void affinity_string(char *out, size_t cap) {
    cpu_set_t set;
    CPU_ZERO(&set);
    out[0] = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        snprintf(out, cap, "?");
        return;
    }
    size_t len = 0;
    for (int c = 0; c < CPU_SETSIZE && len + 8 < cap; c++) {
        if (!CPU_ISSET(c, &set)) continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) e++;
        len += (size_t)snprintf(out + len, cap - len, "%s%d", len ? "," : "", c);
        if (e > c) len += (size_t)snprintf(out + len, cap - len, "-%d", e);
        c = e;
    }
}

/* Pin every thread of this process to CPU `cpu` (like `taskset -a -p`).
 * Returns 0 or -1. */
static inline int pin_process(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int rc = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d) return sched_setaffinity(0, sizeof set, &set);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        pid_t tid = (pid_t)atoi(e->d_name);
        /* goal's helper stays on the one CPU goal put it on (GOAL_PROGRESS_CPU,
           or the CPU that the helpers of a fully subscribed machine share) */
        char path[64], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(comm, sizeof comm, f)) comm[0] = 0;
            fclose(f);
        }
        cpu_set_t now;
        if (strncmp(comm, "goal-progress", 13) == 0 && sched_getaffinity(tid, sizeof now, &now) == 0 &&
            CPU_COUNT(&now) == 1)
            continue;
        if (sched_setaffinity(tid, sizeof set, &set) != 0 && errno != ESRCH) rc = -1;
    }
    closedir(d);
    return rc;
}

/* `, "rank_median_us": [...]`: each rank's median over the iterations of `all` (rank r's
 * times at all[r * iters ..]), for the record of who waits (a root that sends finishes
 * first, its receivers later). Sorts a copy. */
static inline void json_rank_medians(FILE *f, const double *all, int nranks, int iters) {
    double *v = malloc(sizeof(double) * (size_t)iters);
    fprintf(f, ", \"rank_median_us\": [");
    for (int r = 0; v && r < nranks; r++) {
        memcpy(v, all + (size_t)r * (size_t)iters, sizeof(double) * (size_t)iters);
        fprintf(f, "%s%.4f", r ? ", " : "", median(v, iters));
    }
    fprintf(f, "]");
    free(v);
}

/* JSON string escaping for short ASCII-ish strings (lib names, versions) */
static inline void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
        } else {
            fputc(c, f);
        }
    }
    fputc('"', f);
}

#endif
