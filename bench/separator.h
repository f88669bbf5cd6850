/* The separator between timed iterations of bench/goal_coll.c and bench/mpi_coll.c: a
 * barrier in a shared-memory file that belongs to no library under test.
 *
 * Why: a collective that does not synchronise the group (bcast, gather, scatter, reduce) is
 * timed from a barrier, so that iterations do not pipeline, and the barrier decides which rank
 * leaves first. With each library's own barrier that order differs per library and moves time
 * between collectives whose root sends (bcast, scatter: fast when the root leaves first) and
 * those whose root receives (gather, reduce). 2 ranks, 8 B, medians of three runs each, us:
 *
 *                    bcast                     gather
 *                    own barrier  this one     own barrier  this one
 *   MPICH            0.36-0.46    0.53-0.61    0.65-0.81    0.57-0.62
 *   Open MPI         0.46-0.51    0.31-0.35    0.44-0.53    0.28-0.36
 *   goal             0.35-0.38    0.34-0.39    0.41-0.44    0.31-0.40
 *
 * (MPICH's bcast gains from its barrier what its gather loses; Open MPI's loses both.) This
 * barrier releases every library's ranks the same way: the last to arrive bumps a
 * generation word that the others watch.
 *
 * Header-only; no MPI or GOAL here. The file (one page, zeros) is made by the harness
 * (bench/coll.py) for one run of one program and given with --sep-file; every rank maps it.
 * A rank waits by polling for SEP_SPIN_NS (yielding the CPU between polls when the group has
 * more ranks than the CPUs its ranks may run on), then sleeps on a futex until the last rank
 * wakes it, or gives up with exit status 3 after SEP_GIVE_UP_NS (the other ranks died).
 *
 * Which CPUs the ranks may run on is learnt at the first barrier: each rank adds its affinity
 * (read there, after any pinning the program did) to the page before it arrives, and counts
 * the union once it leaves. Counting the machine's CPUs instead made a rank whose peer shares
 * its one CPU (a job started under `taskset -c 0`) poll its whole SEP_SPIN_NS while the peer
 * it waits for could not run: 200 us per iteration of every library, whatever it measured.
 */
#ifndef GOAL_BENCH_SEPARATOR_H
#define GOAL_BENCH_SEPARATOR_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* How long a rank polls before it sleeps (the ranks of a timed iteration arrive within
 * microseconds of each other; a sleeping rank costs a wake-up of 15-35 us here). */
#define SEP_SPIN_NS 200000L

/* How long a rank waits at most: no timed iteration comes near it. */
#define SEP_GIVE_UP_NS 60000000000L

/* CPUs numbered up to this many are counted; a CPU above it counts as one more. */
#define SEP_CPU_WORDS 16

struct sep_page {
    _Atomic uint32_t arrived;  /* arrivals since the start, over all generations */
    _Atomic uint32_t gen;      /* generations released */
    _Atomic uint32_t sleepers; /* ranks in (or about to enter) FUTEX_WAIT */
    _Atomic uint32_t high;     /* a rank may run on a CPU numbered past the words below */
    _Atomic uint64_t cpus[SEP_CPU_WORDS]; /* the union of the ranks' affinities */
};

#if defined(__x86_64__) || defined(__i386__)
#define SEP_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define SEP_RELAX() __asm__ volatile("yield")
#else
#define SEP_RELAX() ((void)0)
#endif

static struct sep_page *sep_p;
static uint32_t sep_gen, sep_n;
static int sep_yield;

static inline long sep_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* Maps `path` for a group of `nranks`; returns 0, or -1 with a message on stderr. */
static inline int sep_open(const char *path, int nranks) {
    int fd = open(path, O_RDWR);
    if (fd < 0) {
        fprintf(stderr, "separator: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        fprintf(stderr, "separator: cannot map %s: %s\n", path, strerror(errno));
        return -1;
    }
    /* No rank leaves the first barrier before every rank has mapped the page, so a page
       released before (or with more arrivals than ranks) is an earlier run's: its counts
       would let this run's ranks through its first barriers unsynchronized, then hold
       them for SEP_GIVE_UP_NS. */
    struct sep_page *page = p;
    uint32_t gen0 = atomic_load(&page->gen), arrived0 = atomic_load(&page->arrived);
    if (gen0 != 0 || arrived0 >= (uint32_t)nranks) {
        fprintf(stderr, "separator: %s holds an earlier run's barrier (generation %u, %u arrivals): "
                        "give every run a new zeroed file (head -c 4096 /dev/zero > %s)\n", path, gen0, arrived0, path);
        munmap(p, 4096);
        return -1;
    }
    sep_p = p;
    sep_n = (uint32_t)nranks;
    sep_yield = nranks > 1; /* until the first barrier has counted the ranks' CPUs */
    return 0;
}

/* Adds this rank's affinity to the page's union (before its first arrival). */
static inline void sep_add_cpus(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        atomic_store(&sep_p->high, 1); /* unknown: count it as one more CPU */
        return;
    }
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set)) continue;
        if (c < 64 * SEP_CPU_WORDS) atomic_fetch_or(&sep_p->cpus[c / 64], 1ULL << (c % 64));
        else atomic_store(&sep_p->high, 1);
    }
}

/* How many CPUs the group's ranks may run on (after the first barrier). */
static inline long sep_count_cpus(void) {
    long n = atomic_load(&sep_p->high) ? 1 : 0;
    for (int w = 0; w < SEP_CPU_WORDS; w++) n += __builtin_popcountll(atomic_load(&sep_p->cpus[w]));
    return n;
}

/* Arrives at generation `want` and returns once it is released. */
static inline void sep_wait_gen(uint32_t want) {
    uint32_t n = atomic_fetch_add(&sep_p->arrived, 1) + 1;
    if (n == want * sep_n) {
        atomic_store(&sep_p->gen, want);
        /* seq_cst store, then load: a waiter that counted itself a sleeper before this
           store sees it as nonzero here, one that counted later sees the new generation */
        if (atomic_load(&sep_p->sleepers) > 0) syscall(SYS_futex, &sep_p->gen, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
        return;
    }
    long until = sep_now_ns() + SEP_SPIN_NS;
    for (unsigned i = 0;; i++) {
        if (atomic_load_explicit(&sep_p->gen, memory_order_acquire) >= want) return;
        if (sep_yield) sched_yield();
        else SEP_RELAX();
        if ((i & 63) == 63 && sep_now_ns() > until) break;
    }
    atomic_fetch_add(&sep_p->sleepers, 1);
    for (;;) {
        uint32_t g = atomic_load(&sep_p->gen);
        if (g >= want) break;
        /* in steps of a second, so that a group whose other ranks died does not hold this
           one forever (the launcher may not kill it: it waits in no library) */
        struct timespec step = {1, 0};
        syscall(SYS_futex, &sep_p->gen, FUTEX_WAIT, g, &step, NULL, 0);
        if (sep_now_ns() - until > SEP_GIVE_UP_NS) {
            fprintf(stderr, "separator: waited %ld s for the other ranks (generation %u, %u arrivals); giving up\n",
                    SEP_GIVE_UP_NS / 1000000000L, want, atomic_load(&sep_p->arrived));
            _exit(3);
        }
    }
    atomic_fetch_sub(&sep_p->sleepers, 1);
}

/* The barrier: returns once every rank of the group has called it as often. */
static inline void sep_wait(void) {
    uint32_t want = ++sep_gen;
    if (want == 1) sep_add_cpus();
    sep_wait_gen(want);
    if (want == 1) sep_yield = sep_n > sep_count_cpus();
}

#endif
