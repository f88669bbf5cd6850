/* The copy floor under a 2-rank exchange on one machine: what the copies of
 * an allgather or alltoall of n bytes per rank between two local processes
 * cost when each block moves by one kernel copy (Cross Memory Attach), the
 * way goal, Open MPI (vader's CMA) and MPICH move them. No library involved.
 *
 * Two processes, pinned to CPU 0 and CPU 1, each with `sbuf` (n bytes) and
 * `rbuf` (2n), at the same addresses in both (allocated before fork, written
 * after it, so each has its own pages). Each iteration runs between two
 * barriers of the probe's own (a shared word); its time is process 0's,
 * from leaving the first barrier to leaving the second, so it includes the
 * slower process; the median over iterations is reported. Modes:
 *
 *   memcpy     process 0 copies n bytes from its sbuf to its rbuf (the
 *              block a rank copies for itself); process 1 waits
 *   cma        process 0 reads n bytes of process 1's sbuf into its rbuf
 *              (process_vm_readv, one call); process 1 waits
 *   exchange   both at once, each its own block and the other's, as each
 *              rank of a 2-rank allgather does: the floor
 *   barrier    nothing between the barriers (what the others include)
 *
 * Up to a few hundred KiB, where the blocks stay in each CPU's cache, a
 * library's 2-rank allgather at n bytes takes at least `exchange`, and the
 * difference is its protocol (who tells whom the buffer is ready, and that
 * it has been read). From about 1 MiB the two CPUs compete for memory, and
 * the order of the two copies and the pieces they go in move the time by
 * 10-20 % either way (the libraries read in pieces), so `exchange` is the
 * copies' cost there, not a bound.
 *
 *   copyfloor [SIZE...]     (bytes; default 65536 262144 1048576 4194304)
 *
 * Prints one JSON object per mode and size, then a table. Needs 2 CPUs and
 * permission to read the child's memory (ptrace rules: the parent may). */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ITERS 400
#define WARMUP 20
enum { MEMCPY, CMA, EXCHANGE, BARRIER, NMODES };
static const char *MODE[NMODES] = {"memcpy", "cma", "exchange", "barrier"};

/* Shared between the two processes. */
struct shared {
    _Atomic uint64_t arrived[2]; /* barrier episodes each process has reached */
    _Atomic int mode;
    _Atomic size_t n;
    pid_t pid[2];
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s) != 0) {
        perror("copyfloor: sched_setaffinity (needs 2 CPUs)");
        exit(1);
    }
}

/* Both processes reach episode `e`: spin briefly, then sleep 20 us at a time,
 * and give up if the other process is gone. */
static void barrier(struct shared *sh, int me, uint64_t e) {
    atomic_store_explicit(&sh->arrived[me], e, memory_order_release);
    for (unsigned spins = 0; atomic_load_explicit(&sh->arrived[1 - me], memory_order_acquire) < e; spins++) {
        if (spins < 10000) continue;
        struct timespec nap = {0, 20000};
        nanosleep(&nap, NULL);
        if (spins % 1024 == 0 && sh->pid[1 - me] > 0 && kill(sh->pid[1 - me], 0) != 0) {
            fprintf(stderr, "copyfloor: process %d is gone\n", 1 - me);
            exit(1);
        }
    }
}

/* Process `me`'s part of one iteration of `mode` with n bytes. */
static void part(struct shared *sh, int me, int mode, size_t n, char *sbuf, char *rbuf) {
    int copies = mode == EXCHANGE || ((mode == MEMCPY || mode == CMA) && me == 0);
    if (!copies) return;
    if (mode == MEMCPY || mode == EXCHANGE) memcpy(rbuf + (size_t)me * n, sbuf, n);
    if (mode == CMA || mode == EXCHANGE) {
        int peer = 1 - me;
        /* The peer's sbuf is at the same address as ours. */
        struct iovec local = {rbuf + (size_t)peer * n, n}, remote = {sbuf, n};
        if (process_vm_readv(sh->pid[peer], &local, 1, &remote, 1, 0) != (ssize_t)n) {
            perror("copyfloor: process_vm_readv");
            exit(1);
        }
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    size_t sizes[32] = {65536, 262144, 1048576, 4194304};
    int nsizes = 4;
    if (argc > 1) {
        nsizes = 0;
        for (int i = 1; i < argc && nsizes < 32; i++) {
            char *end;
            unsigned long long v = strtoull(argv[i], &end, 10);
            if (*end || v == 0) {
                fprintf(stderr, "copyfloor: '%s' is not a size in bytes\nusage: copyfloor [SIZE...]\n", argv[i]);
                return 2;
            }
            sizes[nsizes++] = (size_t)v;
        }
    }
    size_t max = 0;
    for (int i = 0; i < nsizes; i++) max = sizes[i] > max ? sizes[i] : max;
    struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    char *sbuf = aligned_alloc(4096, (max + 4095) & ~(size_t)4095);
    char *rbuf = aligned_alloc(4096, (2 * max + 4095) & ~(size_t)4095);
    if (sh == MAP_FAILED || !sbuf || !rbuf) {
        perror("copyfloor: allocation");
        return 1;
    }
    sh->pid[0] = getpid();
    pid_t child = fork();
    if (child < 0) {
        perror("copyfloor: fork");
        return 1;
    }
    int me = child == 0;
    if (me) sh->pid[1] = getpid();
    pin(me);
    memset(sbuf, 1 + me, max);
    memset(rbuf, 0, 2 * max);
    uint64_t e = 0;
    barrier(sh, me, ++e); /* both pids are known */
    double med[NMODES][32];
    double *t = malloc(sizeof(double) * ITERS);
    for (int si = 0; si < nsizes; si++) {
        size_t n = sizes[si];
        for (int mode = 0; mode < NMODES; mode++) {
            for (int i = -WARMUP; i < ITERS; i++) {
                barrier(sh, me, ++e);
                double t0 = now_s();
                part(sh, me, mode, n, sbuf, rbuf);
                barrier(sh, me, ++e);
                if (i >= 0) t[i] = now_s() - t0;
            }
            if (me == 0) {
                qsort(t, ITERS, sizeof *t, cmp);
                med[mode][si] = t[ITERS / 2] * 1e6;
                printf("{\"test\": \"copyfloor\", \"mode\": \"%s\", \"bytes\": %zu, \"median_us\": %.3f, "
                       "\"p25_us\": %.3f, \"p75_us\": %.3f, \"iters\": %d}\n",
                       MODE[mode], n, med[mode][si], t[ITERS / 4] * 1e6, t[3 * ITERS / 4] * 1e6, ITERS);
            }
        }
    }
    if (me) _exit(0);
    int st;
    waitpid(child, &st, 0);
    printf("\n%10s %10s %10s %10s %10s   (us, median of %d; process 0 from barrier to barrier)\n", "bytes",
           "barrier", "memcpy", "cma", "exchange", ITERS);
    for (int si = 0; si < nsizes; si++)
        printf("%10zu %10.2f %10.2f %10.2f %10.2f\n", sizes[si], med[BARRIER][si], med[MEMCPY][si], med[CMA][si],
               med[EXCHANGE][si]);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
