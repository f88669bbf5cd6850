/*
 * helpers.h - shared scaffolding for goal's C acceptance tests (ctests/).
 *
 * The tests are written against the contract (shared/spec/goal-c-api.md) and
 * nothing else.  Every check prints where it failed, what failed and
 * GOAL_LastError(), then exits 1.  A test that cannot run in the current
 * configuration (say the wrong number of ranks) exits 77, "skipped", as in
 * liburing's test/helpers.h.
 *
 * Conventions shared by every test:
 *   - argv[1], when given, is the number of ranks the runner asked goalrun
 *     for; h_init() checks GOAL_GroupSize() against it.
 *   - A watchdog (alarm) ends a hung rank with a clear message before
 *     goalrun's own --timeout fires; H_WATCHDOG=seconds overrides the default.
 *   - Data is always checked: h_fill()/h_expect_pattern() give every byte a
 *     value derived from a seed and its position, so lost, shifted, truncated,
 *     duplicated or misdelivered data shows up as a mismatch.
 *   - Schedules are collective objects: every rank must compile the same
 *     sequence of schedules, so every helper that compiles is called by all
 *     ranks at the same point of the program.
 */
#ifndef GOAL_CTESTS_HELPERS_H
#define GOAL_CTESTS_HELPERS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <goal.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define H_SKIP 77

/* ------------------------------------------------------------------ state */

static int h_rank __attribute__((unused)) = -1;
static int h_size __attribute__((unused)) = -1;
/* Once GOAL_Finalize() was called only GOAL_IsFinalized() may be called, so
 * failure reports must stop asking for GOAL_LastError(). */
static int h_finalized __attribute__((unused)) = 0;

static inline const char *h_last_error(void)
{
    if (h_finalized || !GOAL_IsInitialized())
        return "(not available: goal is not initialized)";
    const char *e = GOAL_LastError();
    return e ? e : "(GOAL_LastError returned NULL)";
}

static inline const char *h_strerr(int code)
{
    const char *s = GOAL_ErrorString(code);
    return s ? s : "(GOAL_ErrorString returned NULL)";
}

/* ------------------------------------------------------------- reporting */

__attribute__((noreturn, format(printf, 4, 5)))
static inline void h_fail_(const char *file, int line, const char *expr, const char *fmt, ...)
{
    char detail[1024] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(detail, sizeof detail, fmt, ap);
        va_end(ap);
    }
    fprintf(stderr, "FAIL [rank %d/%d] %s:%d: %s%s%s\n  GOAL_LastError: %s\n", h_rank, h_size,
            file, line, expr, fmt ? ": " : "", detail, h_last_error());
    fflush(NULL);
    exit(1);
}

#define FAILF(...) h_fail_(__FILE__, __LINE__, "FAILF", __VA_ARGS__)

/* CHECK(expr): expr must be true. */
#define CHECK(expr)                                                                \
    do {                                                                           \
        if (!(expr))                                                               \
            h_fail_(__FILE__, __LINE__, #expr, NULL);                              \
    } while (0)

/* CHECKM(expr, fmt, ...): expr must be true; on failure also print fmt. */
#define CHECKM(expr, ...)                                                          \
    do {                                                                           \
        if (!(expr))                                                               \
            h_fail_(__FILE__, __LINE__, #expr, __VA_ARGS__);                       \
    } while (0)

/* CHECK_EQ(a, b): integer equality, both values printed. */
#define CHECK_EQ(a, b)                                                             \
    do {                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                        \
        if (a_ != b_)                                                              \
            h_fail_(__FILE__, __LINE__, #a " == " #b, "%lld != %lld", a_, b_);     \
    } while (0)

/* CHECK_OK(call): call must return GOAL_SUCCESS. */
#define CHECK_OK(call)                                                             \
    do {                                                                           \
        int rc_ = (call);                                                          \
        if (rc_ != GOAL_SUCCESS)                                                   \
            h_fail_(__FILE__, __LINE__, #call, "returned %d (%s)", rc_,            \
                    h_strerr(rc_));                                                \
    } while (0)

/* CHECK_ERR(call): call must return an error code (< 0); evaluates to it. */
#define CHECK_ERR(call)                                                            \
    ({                                                                             \
        int rc_ = (call);                                                          \
        if (rc_ >= 0)                                                              \
            h_fail_(__FILE__, __LINE__, #call, "returned %d, expected an error (<0)", rc_); \
        rc_;                                                                       \
    })

/* V(call): a vertex-adding call that must succeed; evaluates to the vertex. */
#define V(call)                                                                    \
    ({                                                                             \
        GOAL_Vertex v_ = (call);                                                   \
        if (v_ < 0)                                                                \
            h_fail_(__FILE__, __LINE__, #call, "returned vertex %lld", (long long)v_); \
        v_;                                                                        \
    })

/* REQ(g, prereq, target): target runs after prereq. */
#define REQ(g, prereq, target) CHECK_OK(GOAL_Requires((g), (prereq), (target)))

/* A scratchpad byte offset, passed where the API takes a buffer pointer. */
#define SP(off) ((void *)(uintptr_t)(off))

/* ------------------------------------------------------------------ time */

static inline double h_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void h_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The survivor's end of a test in which its peer is killed mid-transfer:
 * `rc`, what its GOAL_Wait returned, must be GOAL_ERR_PEER_LOST, within
 * 15 s of t0. Prints "survivor-saw-error r=RANK after T s<detail>: <the
 * error's text>" (the runner's expect-survivors line) and exits with status
 * 3; exits 1 (wrong result) or 4 (too late) otherwise. */
static inline void h_expect_peer_lost_rc(int rc, double t0, const char *detail)
{
    double dt = h_now() - t0;
    if (rc != GOAL_ERR_PEER_LOST) {
        fprintf(stderr, "FAIL [survivor %d]: GOAL_Wait returned %d after %.2f s, expected GOAL_ERR_PEER_LOST (%s)\n",
                h_rank, rc, dt, h_last_error());
        exit(1);
    }
    if (dt > 15.0) {
        fprintf(stderr, "FAIL [survivor %d]: GOAL_Wait took %.2f s to report the dead peer\n", h_rank, dt);
        exit(4);
    }
    printf("survivor-saw-error r=%d after %.2f s%s: %s\n", h_rank, dt, detail ? detail : "", h_last_error());
    fflush(NULL);
    exit(3);
}

/* h_expect_peer_lost_rc of GOAL_Wait(h). */
static inline void h_expect_peer_lost(GOAL_Handle h, double t0, const char *detail)
{
    h_expect_peer_lost_rc(GOAL_Wait(h), t0, detail);
}

/* ------------------------------------------------------------- lifecycle */

static inline void h_watchdog_fired(int sig)
{
    (void)sig;
    char msg[128];
    int n = snprintf(msg, sizeof msg, "FAIL [rank %d/%d] watchdog: test hung (no progress)\n",
                     h_rank, h_size);
    if (n > 0 && write(2, msg, (size_t)n) < 0) {
    }
    _exit(124);
}

static inline void h_start_watchdog(int default_seconds)
{
    const char *w = getenv("H_WATCHDOG");
    int secs = w ? atoi(w) : default_seconds;
    if (secs > 0) {
        signal(SIGALRM, h_watchdog_fired);
        alarm((unsigned)secs);
    }
}

/* Initialise goal, learn rank and size, check the size the runner asked for. */
static inline void h_init(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    h_start_watchdog(50);
    CHECK_OK(GOAL_Init());
    CHECK_EQ(GOAL_IsInitialized(), 1);
    h_size = GOAL_GroupSize();
    h_rank = GOAL_MyRank();
    CHECKM(h_size >= 1, "GOAL_GroupSize() = %d", h_size);
    CHECKM(h_rank >= 0 && h_rank < h_size, "GOAL_MyRank() = %d, size %d", h_rank, h_size);
    if (argc > 1 && isdigit((unsigned char)argv[1][0]))
        CHECKM(h_size == atoi(argv[1]), "goalrun -n %s started a group of %d", argv[1], h_size);
}

/* Finalise and report success; use as `return h_finish();` from main. */
static inline int h_finish(void)
{
    CHECK_OK(GOAL_Finalize());
    h_finalized = 1;
    CHECK_EQ(GOAL_IsFinalized(), 1);
    return 0;
}

/* Skip the test (every rank must take the same decision). */
__attribute__((noreturn)) static inline void h_skip(const char *why)
{
    if (h_rank <= 0)
        printf("GOAL-TEST-SKIP: %s\n", why);
    if (!h_finalized && GOAL_IsInitialized() && !GOAL_IsFinalized())
        GOAL_Finalize();
    fflush(NULL);
    exit(H_SKIP);
}

/* ------------------------------------------------------- graph shortcuts */

static inline GOAL_Graph h_graph(void)
{
    GOAL_Graph g = GOAL_CreateGraph();
    CHECKM(g != NULL, "GOAL_CreateGraph returned NULL");
    return g;
}

/* Compile, make reusable, free the graph; the schedule must be valid. */
#define h_compile(g) h_compile_((g), __FILE__, __LINE__)
static inline GOAL_Schedule h_compile_(GOAL_Graph g, const char *file, int line)
{
    GOAL_Schedule s = GOAL_Compile(g);
    if (!s)
        h_fail_(file, line, "GOAL_Compile(g)", "returned NULL for a valid graph");
    GOAL_MakeScheduleReusable(s);
    if (GOAL_IsScheduleValid(s) != 1)
        h_fail_(file, line, "GOAL_IsScheduleValid(s) == 1", "a fresh schedule is not valid");
    int rc = GOAL_FreeGraph(g);
    if (rc != GOAL_SUCCESS)
        h_fail_(file, line, "GOAL_FreeGraph(g)", "returned %d (%s)", rc, h_strerr(rc));
    return s;
}

/* The schedule of the push tests (t_killed_mid_write, t_push_refused):
 * rank 1 sends `bytes` of `buf` to rank 0, which receives them into `buf`
 * with a copy of `n` bytes from `own` to `copy` queued behind the receive,
 * so that rank 0 is busy when rank 1's request meets its receive and asks
 * rank 1 to write the message itself. */
static inline GOAL_Schedule h_busy_receiver_schedule(char *buf, int bytes, char *own, char *copy, int n)
{
    GOAL_Graph g = h_graph();
    if (h_rank == 1) {
        V(GOAL_Send(g, buf, bytes, 0, 1, GOAL_USERSPACE));
    } else {
        V(GOAL_Recv(g, buf, bytes, 1, 1, GOAL_USERSPACE));
        V(GOAL_LocalOp(g, own, own, copy, GOAL_COPY, GOAL_UINT, 8, n, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    }
    return h_compile(g);
}

/* Run one execution and wait for it; it must succeed. */
#define h_run(s) h_run_((s), __FILE__, __LINE__)
static inline void h_run_(GOAL_Schedule s, const char *file, int line)
{
    GOAL_Handle h = GOAL_Run(s);
    if (!h)
        h_fail_(file, line, "GOAL_Run(s)", "returned NULL");
    int rc = GOAL_Wait(h);
    if (rc != GOAL_SUCCESS)
        h_fail_(file, line, "GOAL_Wait(h)", "returned %d (%s)", rc, h_strerr(rc));
}

#define h_free_schedule(s) CHECK_OK(GOAL_FreeSchedule(s))

/* ------------------------------------------------------------- patterns */

static inline uint64_t h_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* A seed from up to four small integers (rank, peer, size, round, ...). */
static inline uint64_t h_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    return h_mix(h_mix(h_mix(h_mix(a) ^ b) ^ c) ^ d);
}

/* Byte i of the pattern named by seed. */
static inline uint8_t h_pat(uint64_t seed, size_t i)
{
    return (uint8_t)(h_mix(seed ^ (uint64_t)(i >> 3) * 0x100000001b3ULL) >> (8 * (i & 7)));
}

static inline void h_fill(void *buf, size_t n, uint64_t seed)
{
    uint8_t *p = buf;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = h_mix(seed ^ (uint64_t)(i >> 3) * 0x100000001b3ULL);
        memcpy(p + i, &w, 8); /* little endian: byte k of w is h_pat(seed, i + k) */
    }
    for (; i < n; i++)
        p[i] = h_pat(seed, i);
}

/* Index of the first byte that differs from the pattern, or -1. */
static inline long h_pattern_mismatch(const void *buf, size_t n, uint64_t seed)
{
    const uint8_t *p = buf;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = h_mix(seed ^ (uint64_t)(i >> 3) * 0x100000001b3ULL);
        if (memcmp(p + i, &w, 8) != 0)
            break;
    }
    for (; i < n; i++)
        if (p[i] != h_pat(seed, i))
            return (long)i;
    return -1;
}

/* The buffer must hold the pattern `seed` over n bytes. */
#define CHECK_PATTERN(buf, n, seed, ...)                                           \
    do {                                                                           \
        long at_ = h_pattern_mismatch((buf), (n), (seed));                         \
        if (at_ >= 0) {                                                            \
            char what_[256];                                                       \
            snprintf(what_, sizeof what_, __VA_ARGS__);                            \
            h_fail_(__FILE__, __LINE__, "data check", "%s: byte %ld of %zu is 0x%02x, expected 0x%02x", \
                    what_, at_, (size_t)(n), ((const uint8_t *)(buf))[at_],        \
                    h_pat((seed), (size_t)at_));                                   \
        }                                                                          \
    } while (0)

/* Every byte of buf must equal `byte` (untouched sentinel areas). */
#define CHECK_BYTES(buf, n, byte, ...)                                             \
    do {                                                                           \
        const uint8_t *p_ = (const uint8_t *)(buf);                                \
        for (size_t i_ = 0; i_ < (size_t)(n); i_++)                                \
            if (p_[i_] != (uint8_t)(byte)) {                                       \
                char what_[256];                                                   \
                snprintf(what_, sizeof what_, __VA_ARGS__);                        \
                h_fail_(__FILE__, __LINE__, "sentinel check", "%s: byte %zu is 0x%02x, expected 0x%02x", \
                        what_, i_, p_[i_], (uint8_t)(byte));                       \
            }                                                                      \
    } while (0)

/* Two memory areas must be equal. */
#define CHECK_MEM(got, exp, n, ...)                                                \
    do {                                                                           \
        const uint8_t *g_ = (const uint8_t *)(got), *e_ = (const uint8_t *)(exp);  \
        for (size_t i_ = 0; i_ < (size_t)(n); i_++)                                \
            if (g_[i_] != e_[i_]) {                                                \
                char what_[256];                                                   \
                snprintf(what_, sizeof what_, __VA_ARGS__);                        \
                h_fail_(__FILE__, __LINE__, "memory check", "%s: byte %zu is 0x%02x, expected 0x%02x", \
                        what_, i_, g_[i_], e_[i_]);                                \
            }                                                                      \
    } while (0)

/* ------------------------------------------------------------ buffers */

/* Buffer kinds for tests that run over both: plain malloc and GOAL_Alloc. */
enum { H_MALLOC = 0, H_GOAL_ALLOC = 1 };
static inline const char *h_kind_name(int kind) { return kind == H_GOAL_ALLOC ? "GOAL_Alloc" : "malloc"; }

static inline void *h_alloc(int kind, size_t n)
{
    void *p = kind == H_GOAL_ALLOC ? GOAL_Alloc(n ? n : 1) : malloc(n ? n : 1);
    CHECKM(p != NULL, "%s(%zu) returned NULL", h_kind_name(kind), n);
    return p;
}

static inline void h_free(int kind, void *p)
{
    if (kind == H_GOAL_ALLOC)
        CHECK_OK(GOAL_Free(p));
    else
        free(p);
}

/* --------------------------------------------------- group-wide helpers */

/*
 * all[p*n .. p*n+n) = rank p's `mine`, on every rank: a plain all-to-all built
 * from sends and receives only (no self-send, no scratchpad, no dependency),
 * so the tests of fancier features can rely on it for their bookkeeping.
 */
static inline void h_allgather(const void *mine, size_t n, void *all)
{
    GOAL_Graph g = h_graph();
    for (int p = 0; p < h_size; p++) {
        if (p == h_rank)
            continue;
        V(GOAL_Send(g, (void *)mine, (int)n, p, 31000, GOAL_USERSPACE));
        V(GOAL_Recv(g, (char *)all + (size_t)p * n, (int)n, p, 31000, GOAL_USERSPACE));
    }
    GOAL_Schedule s = h_compile(g);
    memcpy((char *)all + (size_t)h_rank * n, mine, n);
    h_run(s);
    h_free_schedule(s);
}

/* Everyone waits for everyone (built on h_allgather). */
static inline void h_sync(void)
{
    unsigned char me = (unsigned char)h_rank, all[256];
    h_allgather(&me, 1, all);
}

/* --------------------------------------------------------------- misc */

/* Resident set size of this process in KiB, from /proc/self/status. */
static inline long h_vmrss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    CHECKM(f != NULL, "cannot open /proc/self/status");
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    CHECKM(kib > 0, "no VmRSS line in /proc/self/status");
    return kib;
}

/* Case-insensitive substring search. */
static inline int h_contains_ci(const char *hay, const char *needle)
{
    return hay && needle && strcasestr(hay, needle) != NULL;
}

/* Occurrences of `what` in `text`. */
static inline int h_count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

/* Reads the trace (GOAL_TRACE_FILE) at `path` into `text`, of `cap` bytes,
 * NUL-terminated; checks that it is a whole trace that fits. Returns its
 * length. */
static inline size_t h_read_trace(const char *path, char *text, size_t cap)
{
    FILE *f = fopen(path, "r");
    CHECKM(f != NULL, "rank 0 wrote no trace at %s", path);
    size_t n = fread(text, 1, cap - 1, f);
    fclose(f);
    text[n] = 0;
    CHECKM(n > 0 && n < cap - 1, "trace of %zu bytes (room for %zu)", n, cap - 1);
    CHECKM(strncmp(text, "{\"traceEvents\":[", 16) == 0, "not a trace: %.80s", text);
    return n;
}

#endif /* GOAL_CTESTS_HELPERS_H */
