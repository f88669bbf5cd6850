/* What one cross-core wake-up costs: the floor under background progress on a
 * fully subscribed machine.
 *
 * A rank that computes on every core learns of a message only if something
 * interrupts it: a helper thread woken on its core (futex), a signal, or
 * kernel task work (io_uring); all three reach a CPU that runs user code
 * through an inter-processor interrupt. This probe measures, with nothing of
 * goal involved:
 *
 *   lost_us    the CPU time a computing thread loses per wake-up it receives
 *              (its work rate with the wake-ups against without, times the
 *              period between them, less what mode "none" loses);
 *   call_us    what the waking side pays per wake-up (the system call that
 *              sends the interrupt).
 *
 * Modes: "futex" wakes a helper thread pinned to the computing thread's CPU
 * (goal's thread mode when cores are shared); "signal" sends SIGUSR1 to the
 * computing thread (an empty handler); "none" runs the notifier without
 * waking anyone (the baseline's noise). The computing thread runs on CPU 0,
 * the notifier in another process on CPU 1, one wake-up every PERIOD us.
 *
 * A dependent ping-pong between two computing ranks pays both sides per
 * message: N round trips cost each rank N * (lost_us + call_us).
 *
 *   wakecost [PERIOD_US [SECONDS]]      (default 100 us, 0.5 s per measurement)
 *
 * Prints one JSON object per mode. Needs 2 CPUs. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct shared {
    _Alignas(64) _Atomic unsigned word; /* the futex the helper sleeps on */
    _Alignas(64) _Atomic int stop;
    _Atomic int target_tid;
    _Atomic long events;
    _Atomic long call_ns;
};

static struct shared *sh;
static volatile sig_atomic_t handled;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s) != 0) {
        fprintf(stderr, "wakecost: cannot pin to CPU %d (needs 2 CPUs)\n", cpu);
        exit(1);
    }
}

static long futex(_Atomic unsigned *w, int op, unsigned val) {
    return syscall(SYS_futex, w, op, val, NULL, NULL, 0);
}

static void on_signal(int s) {
    (void)s;
    handled++;
}

static void *helper(void *arg) {
    (void)arg;
    pin(0);
    unsigned seen = 0;
    while (!atomic_load(&sh->stop)) {
        unsigned w = atomic_load(&sh->word);
        if (w == seen)
            futex(&sh->word, FUTEX_WAIT, seen);
        seen = w;
    }
    return NULL;
}

/* Work units per second of a fixed floating-point loop, for `secs`. */
static double work_rate(double secs) {
    volatile double x = 1;
    long n = 0;
    double t0 = now(), t;
    while ((t = now()) - t0 < secs) {
        for (int i = 0; i < 10000; i++)
            x = x * 1.0000001 + 1e-9;
        n++;
    }
    return n / (t - t0);
}

static void notifier(const char *mode, pid_t pid, double period_us, double secs) {
    pin(1);
    long n = 0;
    double spent = 0, next = now();
    /* Spins on its own core for one measurement; bounded, so that it ends
     * even if the computing process dies without setting `stop`. */
    double deadline = next + 4 * secs + 1;
    while (!atomic_load(&sh->stop)) {
        double t = now();
        if (t > deadline)
            break;
        if (t < next)
            continue;
        next += period_us * 1e-6;
        if (!strcmp(mode, "futex")) {
            atomic_fetch_add(&sh->word, 1);
            futex(&sh->word, FUTEX_WAKE, 1);
        } else if (!strcmp(mode, "signal")) {
            syscall(SYS_tgkill, pid, atomic_load(&sh->target_tid), SIGUSR1);
        }
        spent += now() - t;
        n++;
    }
    atomic_store(&sh->events, n);
    atomic_store(&sh->call_ns, (long)(spent / (n ? n : 1) * 1e9));
    _exit(0);
}

/* Returns the fraction of work lost; `none_lost` is that of mode "none"
 * (the notifier's own effect on the computing core, without wake-ups). */
static double measure(const char *mode, double period_us, double secs, double none_lost) {
    memset(sh, 0, sizeof *sh);
    pthread_t th;
    int with_helper = !strcmp(mode, "futex");
    if (with_helper && pthread_create(&th, NULL, helper, NULL) != 0) {
        fprintf(stderr, "wakecost: pthread_create failed\n");
        exit(1);
    }
    double before = work_rate(secs);
    atomic_store(&sh->target_tid, (int)syscall(SYS_gettid));
    pid_t child = fork();
    if (child < 0) {
        perror("wakecost: fork");
        exit(1);
    }
    if (child == 0)
        notifier(mode, getppid(), period_us, secs);
    double during = work_rate(secs);
    atomic_store(&sh->stop, 1);
    waitpid(child, NULL, 0);
    if (with_helper) {
        atomic_fetch_add(&sh->word, 1);
        futex(&sh->word, FUTEX_WAKE, 1);
        pthread_join(th, NULL);
    }
    double after = work_rate(secs);
    double base = (before + after) / 2;
    long events = atomic_load(&sh->events);
    double lost = 1 - during / base;
    double per_event_us = events ? (lost - none_lost) * secs / events * 1e6 : 0;
    printf("{\"test\": \"wakecost\", \"mode\": \"%s\", \"period_us\": %.0f, \"events\": %ld, "
           "\"lost_pct\": %.2f, \"lost_us\": %.2f, \"call_us\": %.2f}\n",
           mode, period_us, events, lost * 100, per_event_us, atomic_load(&sh->call_ns) / 1e3);
    fflush(stdout);
    return lost;
}

int main(int argc, char **argv) {
    double period_us = argc > 1 ? atof(argv[1]) : 100;
    double secs = argc > 2 ? atof(argv[2]) : 0.5;
    if (period_us <= 0 || secs <= 0) {
        fprintf(stderr, "usage: wakecost [PERIOD_US [SECONDS]]\n");
        return 2;
    }
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("wakecost: mmap");
        return 1;
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    pin(0);
    double none_lost = measure("none", period_us, secs, 0);
    measure("futex", period_us, secs, none_lost);
    measure("signal", period_us, secs, none_lost);
    return 0;
}
