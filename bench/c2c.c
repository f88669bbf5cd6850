/* Core-to-core probe: two threads pinned to CPUs A and B bounce a cache line.
 * Prints {"test": "c2c", "cpus": [A, B], "oneway_ns": x} (median of 15 batches).
 * The harness runs it next to every benchmark run: on a VM the latency between
 * the two vCPUs changes with where the host places them, and so do all
 * shared-memory latencies measured at that moment.
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
    printf("{\"test\": \"c2c\", \"cpus\": [%d, %d], \"oneway_ns\": %.1f, \"min_ns\": %.1f}\n",
           cpu_a, cpu_b, ns[BATCHES / 2], ns[0]);
    return 0;
}
