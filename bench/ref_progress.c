/* A reference for the overlap across hosts: the least a progress thread can do.
 *
 * Two processes, one per emulated host, move a 2-rank broadcast or allreduce over one TCP
 * connection with plain sockets, from a thread of their own that sleeps in poll(2) between
 * events (the socket's receive low-water mark set to the rest of the message, as goal-net does),
 * while the main thread computes. No library, no protocol, no matching: what is left of the
 * overlap is what this machine's scheduler and network leave to any thread-based progress.
 * bench/mpi.py runs it beside overlap.c's MPI runs on the same hosts; docs/mpi.md says why.
 *
 *   ref_progress --rank R --peer IP --op bcast|allreduce --bytes N [--reps N] [--cpu C] [--rt]
 *                [--port P]
 *
 * Rank 0 listens on P and P+1 (data, control), rank 1 connects to IP. --cpu pins both threads;
 * --rt makes the progress thread SCHED_FIFO priority 1 (it says so on stderr if refused).
 * bcast: rank 0 sends N bytes. allreduce (float32 sum): reduce-scatter then allgather, N/2
 * bytes each way per step, the reduction done by the progress thread.
 *
 * Method, as overlap.c's "none" variant (bench/overlap.c):
 *   t_pure = median of [barrier; start; wait]             (5 warm-up runs first)
 *   t_cpu  = median of [barrier; compute(K)]              K: work units for t_pure (rank 0's rate)
 *   t_ovrl = median of [barrier; start; compute(K); wait] interleaved with t_cpu
 *   each time the maximum over the two ranks per repetition;
 *   overlap% = 100 * max(0, min(1, (t_pure + t_cpu - t_ovrl) / min(t_pure, t_cpu)))
 * The result is checked after every run (bcast: rank 0's pattern; allreduce: the exact sums of
 * small integers); a wrong one exits 1. Rank 0 prints one JSON line:
 *   {"test": "reference", "op", "bytes", "rt", "t_pure_us", "t_cpu_us", "t_ovrl_us",
 *    "overlap_pct", "iters"}
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int rank, data_fd, ctl_fd, allreduce, rt;
static size_t bytes;
static float *sbuf, *rbuf, *tmp;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go, done;
static volatile float sink;

static void die(const char *what) {
    fprintf(stderr, "ref_progress (rank %d): %s: %s\n", rank, what, errno ? strerror(errno) : "failed");
    exit(1);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* overlap.c's work unit: 8 independent multiply-add chains in registers */
static void work(long n) {
    float a0 = 1, a1 = 2, a2 = 3, a3 = 4, a4 = 5, a5 = 6, a6 = 7, a7 = 8;
    const float m = 0.999999f, c = 1e-7f;
    for (long i = 0; i < n; i++) {
        a0 = a0 * m + c; a1 = a1 * m + c; a2 = a2 * m + c; a3 = a3 * m + c;
        a4 = a4 * m + c; a5 = a5 * m + c; a6 = a6 * m + c; a7 = a7 * m + c;
    }
    sink = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

/* Sends out[0..n) while receiving in[0..m) on data_fd, sleeping in poll between events. */
static void xfer(const void *out, size_t n, void *in, size_t m) {
    size_t o = 0, i = 0;
    int lowat = 1;
    while (o < n || i < m) {
        int want = i < m ? (int)(m - i) : 1;
        if (want != lowat && setsockopt(data_fd, SOL_SOCKET, SO_RCVLOWAT, &want, sizeof want) == 0)
            lowat = want;
        struct pollfd p = {data_fd, (short)((o < n ? POLLOUT : 0) | (i < m ? POLLIN : 0)), 0};
        if (poll(&p, 1, -1) < 0 && errno != EINTR) die("poll");
        if (p.revents & (POLLERR | POLLHUP)) die("the connection to the peer failed");
        if (o < n && (p.revents & POLLOUT)) {
            ssize_t k = send(data_fd, (const char *)out + o, n - o, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (k > 0) o += (size_t)k;
            else if (k < 0 && errno != EAGAIN) die("send");
        }
        if (i < m && (p.revents & POLLIN)) {
            ssize_t k = recv(data_fd, (char *)in + i, m - i, MSG_DONTWAIT);
            if (k > 0) i += (size_t)k;
            else if (k == 0) { errno = 0; die("the peer closed the connection"); }
            else if (errno != EAGAIN) die("recv");
        }
    }
    if (lowat != 1) {
        int one = 1;
        setsockopt(data_fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof one);
    }
}

static void op(void) {
    if (!allreduce) {
        if (rank == 0) xfer(sbuf, bytes, NULL, 0);
        else xfer(NULL, 0, rbuf, bytes);
        return;
    }
    size_t h = bytes / 2, n = h / sizeof(float);
    /* rank 0 reduces the first half, rank 1 the second */
    float *keep = rank == 0 ? rbuf : rbuf + n;
    const float *mine = rank == 0 ? sbuf : sbuf + n;
    xfer(rank == 0 ? sbuf + n : sbuf, h, tmp, h);
    for (size_t k = 0; k < n; k++) keep[k] = mine[k] + tmp[k];
    xfer(keep, h, rank == 0 ? rbuf + n : rbuf, h);
}

static void *progress_thread(void *arg) {
    (void)arg;
    if (rt) {
        struct sched_param sp = {.sched_priority = 1};
        if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0)
            fprintf(stderr, "ref_progress (rank %d): --rt: SCHED_FIFO refused; an ordinary thread\n", rank);
    }
    for (;;) {
        pthread_mutex_lock(&mu);
        while (!go) pthread_cond_wait(&cv, &mu);
        go = 0;
        pthread_mutex_unlock(&mu);
        op();
        pthread_mutex_lock(&mu);
        done = 1;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

static void start(void) {
    pthread_mutex_lock(&mu);
    go = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

static void wait_done(void) {
    pthread_mutex_lock(&mu);
    while (!done) pthread_cond_wait(&cv, &mu);
    done = 0;
    pthread_mutex_unlock(&mu);
}

static void ctl_io(void *p, size_t n, int out) {
    for (size_t d = 0; d < n;) {
        ssize_t k = out ? write(ctl_fd, (char *)p + d, n - d) : read(ctl_fd, (char *)p + d, n - d);
        if (k <= 0) { if (k == 0) errno = 0; die("the control connection"); }
        d += (size_t)k;
    }
}

static void barrier(void) {
    char c = 1;
    ctl_io(&c, 1, rank == 0);
    ctl_io(&c, 1, rank != 0);
}

static void check(void) {
    size_t n = bytes / sizeof(float);
    for (size_t i = 0; i < n; i++) {
        float want = allreduce ? (float)(2 * (i % 100) + 1) : (float)(i % 100);
        const float *got = allreduce || rank == 1 ? rbuf : sbuf;
        if (got[i] != want) {
            fprintf(stderr, "ref_progress (rank %d): wrong result at element %zu: %g, not %g\n", rank, i, got[i], want);
            exit(1);
        }
    }
    memset(rbuf, 0, bytes);
}

static int connect_to(const char *ip, int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) { errno = 0; die("--peer: not an IPv4 address"); }
    for (int t = 0; t < 500; t++) {   /* 10 s for rank 0 to listen */
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) die("socket");
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
        close(fd);
        usleep(20000);
    }
    die("connect");
    return -1;
}

static int listen_on(int port) {
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (l < 0) die("socket");
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1)) die("bind/listen");
    return l;
}

static int accept_one(int l) {
    int fd = accept(l, NULL, NULL);
    if (fd < 0) die("accept");
    close(l);
    return fd;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median over repetitions of the maximum over the two ranks (rank 0's answer). */
static double med_max(double *t, int n) {
    double *p = malloc((size_t)n * sizeof *p);
    if (!p) die("malloc");
    if (rank == 0) {
        ctl_io(p, (size_t)n * sizeof *p, 0);
        for (int i = 0; i < n; i++) p[i] = p[i] > t[i] ? p[i] : t[i];
    } else {
        ctl_io(t, (size_t)n * sizeof *t, 1);
        memcpy(p, t, (size_t)n * sizeof *p);
    }
    qsort(p, (size_t)n, sizeof *p, cmp);
    double m = p[n / 2];
    free(p);
    return m;
}

static void usage(void) {
    fprintf(stderr, "usage: ref_progress --rank 0|1 --peer IP --op bcast|allreduce --bytes N [--reps N] [--cpu C] [--rt] [--port P]\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *peer = NULL, *opname = NULL;
    int reps = 45, cpu = -1, port = 7301;
    rank = -1;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--rt")) { rt = 1; continue; }
        if (!v) usage();
        if (!strcmp(argv[i], "--rank")) rank = atoi(v);
        else if (!strcmp(argv[i], "--peer")) peer = v;
        else if (!strcmp(argv[i], "--op")) opname = v;
        else if (!strcmp(argv[i], "--bytes")) bytes = strtoul(v, NULL, 0);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(v);
        else if (!strcmp(argv[i], "--cpu")) cpu = atoi(v);
        else if (!strcmp(argv[i], "--port")) port = atoi(v);
        else usage();
        i++;
    }
    if ((rank != 0 && rank != 1) || !opname || (strcmp(opname, "bcast") && strcmp(opname, "allreduce")) ||
        bytes < 8 || bytes % 8 || reps < 1 || (rank == 1 && !peer))
        usage();
    allreduce = !strcmp(opname, "allreduce");
    if (cpu >= 0) {
        cpu_set_t s;
        CPU_ZERO(&s);
        CPU_SET(cpu, &s);
        if (sched_setaffinity(0, sizeof s, &s)) die("--cpu");   /* the thread below inherits it */
    }
    sbuf = malloc(bytes); rbuf = calloc(1, bytes); tmp = malloc(bytes);
    if (!sbuf || !rbuf || !tmp) die("malloc");
    for (size_t i = 0; i < bytes / sizeof(float); i++) sbuf[i] = (float)(i % 100) + (allreduce ? (float)rank : 0);
    if (rank == 0) {
        int ld = listen_on(port), lc = listen_on(port + 1);
        printf("{\"test\": \"listening\"}\n");
        fflush(stdout);
        data_fd = accept_one(ld);
        ctl_fd = accept_one(lc);
    } else {
        data_fd = connect_to(peer, port);
        ctl_fd = connect_to(peer, port + 1);
    }
    int one = 1;
    setsockopt(ctl_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(data_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_t th;
    if (pthread_create(&th, NULL, progress_thread, NULL)) die("pthread_create");
    double *tp = malloc((size_t)reps * sizeof *tp), *tc = malloc((size_t)reps * sizeof *tc),
           *to = malloc((size_t)reps * sizeof *to);
    if (!tp || !tc || !to) die("malloc");
    for (int i = 0; i < 5; i++) { barrier(); start(); wait_done(); check(); }
    for (int i = 0; i < reps; i++) {
        barrier();
        double t0 = now();
        start();
        wait_done();
        tp[i] = now() - t0;
        check();
    }
    double pure = med_max(tp, reps);
    long units = 0;
    if (rank == 0) {
        double best = 1e9;
        for (int i = 0; i < 5; i++) { double a = now(); work(1 << 21); double d = now() - a; best = d < best ? d : best; }
        units = (long)((double)(1 << 21) / best * pure);
    }
    ctl_io(&units, sizeof units, rank == 0);
    for (int i = 0; i < reps; i++) {
        barrier();
        double a = now();
        work(units);
        tc[i] = now() - a;
        barrier();
        a = now();
        start();
        work(units);
        wait_done();
        to[i] = now() - a;
        check();
    }
    double cpu_t = med_max(tc, reps), ovrl = med_max(to, reps);
    if (rank == 0) {
        double m = pure < cpu_t ? pure : cpu_t, ov = (pure + cpu_t - ovrl) / m;
        ov = ov < 0 ? 0 : ov > 1 ? 1 : ov;
        printf("{\"test\": \"reference\", \"op\": \"%s\", \"bytes\": %zu, \"rt\": %s, \"t_pure_us\": %.1f, "
               "\"t_cpu_us\": %.1f, \"t_ovrl_us\": %.1f, \"overlap_pct\": %.2f, \"iters\": %d}\n",
               opname, bytes, rt ? "true" : "false", pure * 1e6, cpu_t * 1e6, ovrl * 1e6, 100 * ov, reps);
    }
    return 0;
}
