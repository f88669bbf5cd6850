/* Core-to-core probe: two threads pinned to CPUs A and B bounce a cache line,
 * then compute alone and side by side.
 * Prints {"test": "c2c", "cpus": [A, B], "oneway_ns": x, "min_ns": y,
 * "cpu_ratio": r}: x is the median of 15 batches of the ping-pong; r is how
 * much slower an integer loop with much instruction-level parallelism runs
 * on the slower CPU, alone or with the other CPU computing too, than on the
 * faster one alone (median of 5 tries). It is 1.0 on two idle physical
 * cores, and up to ~2 when the two vCPUs are hyperthreads of one core or
 * one shares its core with someone else's work.
 * The harness runs it next to every benchmark run: on a VM both change with
 * where the host places the vCPUs, and so does everything measured at that
 * moment (sharing a core, a 2-rank barrier is ~1.3x slower).
 *   c2c [A B]   (default 0 1) */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ITERS 20000
#define BATCHES 15
#define SHARE_TRIES 5
#define SHARE_LOOPS 1000000L

static _Alignas(128) _Atomic long flag;
static int cpu_a = 0, cpu_b = 1;

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (pthread_setaffinity_np(pthread_self(), sizeof s, &s) != 0) {
        fprintf(stderr, "c2c: cannot pin to CPU %d\n", cpu);
        exit(1);
    }
}

static void *pong(void *arg) {
    (void)arg;
    pin(cpu_b);
    for (long i = 0; i < (long)BATCHES * ITERS + ITERS; i++) {
        while (atomic_load_explicit(&flag, memory_order_acquire) != 2 * i + 1) {
        }
        atomic_store_explicit(&flag, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* Eight independent multiply-add chains: enough parallelism to fill a
 * core's integer units, so a hyperthread sibling at work slows it down. */
static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long crunch(long n) {
    unsigned long v[8], r = 0;
    for (int k = 0; k < 8; k++) v[k] = sink + (unsigned long)k; /* not foldable */
    for (long i = 0; i < n; i++)
        for (int k = 0; k < 8; k++) v[k] = v[k] * 6364136223846793005UL + (unsigned long)k;
    for (int k = 0; k < 8; k++) r ^= v[k];
    return r;
}

static _Alignas(128) _Atomic int share_go;
static double share_b_s; /* the peer's time */

static void *share_peer(void *arg) {
    (void)arg;
    pin(cpu_b);
    while (!atomic_load_explicit(&share_go, memory_order_acquire)) {
    }
    double t0 = now();
    sink = crunch(SHARE_LOOPS);
    share_b_s = now() - t0;
    return NULL;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc == 3) {
        cpu_a = atoi(argv[1]);
        cpu_b = atoi(argv[2]);
    }
    pthread_t t;
    pthread_create(&t, NULL, pong, NULL);
    pin(cpu_a);
    double ns[BATCHES];
    long i = 0;
    for (int b = -1; b < BATCHES; b++) { /* batch -1: warm-up */
        double t0 = now();
        for (long k = 0; k < ITERS; k++, i++) {
            atomic_store_explicit(&flag, 2 * i + 1, memory_order_release);
            while (atomic_load_explicit(&flag, memory_order_acquire) != 2 * i + 2) {
            }
        }
        if (b >= 0) ns[b] = (now() - t0) / (2.0 * ITERS) * 1e9;
    }
    pthread_join(t, NULL);
    qsort(ns, BATCHES, sizeof ns[0], cmp);

    /* Each try: A alone, B alone, both at once; the ratio is the slowest
     * of the four times over the faster lone CPU. */
    double ratio[SHARE_TRIES];
    for (int k = 0; k < SHARE_TRIES; k++) {
        double t0 = now();
        sink = crunch(SHARE_LOOPS);
        double alone_a = now() - t0;
        double alone_b = 0, both_a = 0;
        for (int together = 0; together < 2; together++) {
            atomic_store(&share_go, 0);
            pthread_create(&t, NULL, share_peer, NULL);
            struct timespec settle = {0, 1000000};
            nanosleep(&settle, NULL); /* let the peer reach its CPU */
            atomic_store_explicit(&share_go, 1, memory_order_release);
            if (together) {
                t0 = now();
                sink = crunch(SHARE_LOOPS);
                both_a = now() - t0;
            }
            pthread_join(t, NULL);
            if (!together) alone_b = share_b_s;
        }
        double fast = alone_a < alone_b ? alone_a : alone_b, slow = alone_a > alone_b ? alone_a : alone_b;
        if (both_a > slow) slow = both_a;
        if (share_b_s > slow) slow = share_b_s;
        ratio[k] = slow / fast;
        if (getenv("C2C_DEBUG"))
            fprintf(stderr, "alone %.2f / %.2f ms, together %.2f / %.2f ms\n", alone_a * 1e3, alone_b * 1e3,
                    both_a * 1e3, share_b_s * 1e3);
    }
    qsort(ratio, SHARE_TRIES, sizeof ratio[0], cmp);
    printf("{\"test\": \"c2c\", \"cpus\": [%d, %d], \"oneway_ns\": %.1f, \"min_ns\": %.1f, "
           "\"cpu_ratio\": %.2f}\n",
           cpu_a, cpu_b, ns[BATCHES / 2], ns[0], ratio[SHARE_TRIES / 2]);
    return 0;
}
