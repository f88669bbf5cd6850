/* Overlap of non-blocking collectives with computation, and what progress costs the CPU.
 * One source, built against goal and against each MPI:
 *
 *   cc -DUSE_GOAL overlap.c $(pkg-config --cflags --libs goal) -lm    goalrun -n N ./overlap.goal ...
 *   mpicc overlap.c -lm                                               mpirun -n N ./overlap.mpi ...
 *   mpicc -DGOAL_BENCH_ONECCL overlap.c + ccl_shim.cpp (bench/ccl.py)  Intel oneCCL, started by MPICH:
 *         start = ccl::barrier/broadcast/allreduce (an event), progress call and test = the
 *         event's test(), wait = its wait(); oneCCL's worker threads progress it (ccl_shim.h)
 *
 *   overlap [--name LIB] [--quick] [--pin] [--tests LIST] [--ops LIST] [--mm-sizes LIST]
 *           [--budget-ms X] [--window-ms X] [--bg-ms X] [--idle-s X] [--max-s X]
 *
 * --pin: every thread of rank r on CPU r % ncpus (before init from the launcher's rank variable
 * GOAL_RANK / OMPI_COMM_WORLD_RANK / PMI_RANK, and again after init so that the library's
 * threads are included: helper threads share their rank's core, "fully subscribed"; a goal
 * helper that goal pinned to one CPU itself stays there, see p2p_common.h).
 * --max-s: a test point not begun after X s of run time is skipped with the rest of its test
 * ({"test": "skipped"}).
 *
 * Operations (--ops, default all): barrier, bcast:8, bcast:64K, bcast:1M, allreduce:8,
 * allreduce:64K, allreduce:1M (float32 sum; the size is the vector's bytes), pingpong200.
 *   goal: persistent schedules GOAL_Barrier_init / GOAL_Bcast_init (root 0) /
 *         GOAL_Allreduce_init(GOAL_FLOAT, 32, GOAL_ADD), all GOAL_ALG_AUTO;
 *         start = GOAL_Run, progress call = GOAL_Progress, wait = GOAL_Wait.
 *         pingpong200 = one schedule of 200 dependent 8-byte ping-pongs between ranks 0 and 1
 *         (send -> recv -> send ...; the other ranks run an empty schedule).
 *   MPI:  start = MPI_Ibarrier / MPI_Ibcast(MPI_BYTE, root 0) / MPI_Iallreduce(MPI_FLOAT,
 *         MPI_SUM), progress call = MPI_Test on the request, wait = MPI_Wait. Initialised with
 *         MPI_Init_thread(MPI_THREAD_MULTIPLE) (MPICH's MPIR_CVAR_ASYNC_PROGRESS=1 needs it).
 *         pingpong200 has no single non-blocking MPI call: reported as {"test": "na"}.
 * Every operation is validated once after init (bcast: every byte of a pattern from the root;
 * allreduce: the exact float sum of small integers; pingpong200: the pattern went to rank 1 and
 * came back; barrier: completes). If any rank finds a wrong result, rank 0 prints a
 * {"test": "validate", "ok": false} row and every rank exits 1 before anything is timed.
 *
 * Computation (bound by the FPU, not by memory):
 *   work unit   = one step of 8 independent float multiply-add chains held in registers
 *                 (x = x * 0.999999 + 1e-7), the result stored into a volatile sink;
 *   ns_per_unit = the fastest of 5 timings of 2^21 units, per rank, after init;
 *   chunk       = the units one 32x32 block product takes (the fastest of 50): the progress
 *                 granularity of tests 2 and 3, the same as test 1's.
 *   units_for(us) = us / ns_per_unit units: a computation of a given length on this rank.
 * Timer: clock_gettime(CLOCK_MONOTONIC). Before each timed repetition every rank enters a
 * blocking barrier (goal: Run+Wait of a GOAL_Barrier_init schedule; MPI: MPI_Barrier).
 * Per-rank medians over repetitions are combined over ranks with the library's own allreduce
 * (goal: GOAL_Allreduce_init schedules of float64 MAX/ADD; MPI: MPI_Allreduce):
 *   times (t_pure, t_cpu, t_ovrl, start/multiply/wait, T_idle/T_comm/T_bg): MAXIMUM over ranks
 *   (a collective is done when its slowest rank is done; IMB-NBC reports the maximum too);
 *   work rates (cpu usage, idle cost): SUM over ranks (the work the whole job does, as KACC's
 *   Flops); the largest single-rank value is reported beside it as *_max_rank;
 *   helper_cpu_pct, lost_pct: MEAN over ranks (lost_pct's largest single-rank value beside it);
 *   done_pct: MINIMUM over ranks (an operation is finished only when every rank saw it finished).
 *
 * Tests (--tests, default all, run in the order 4, 2+3, 5, 1; rank 0 prints one JSON object per
 * line):
 *
 * 1. hostoverhead (ESPGOAL thesis 6.6, figures 6.13-6.15). C = A*B, N x N float32, block size
 *    32, block data layout (each 32x32 block contiguous), loops over blocks I, J, L.
 *    N in --mm-sizes (default 64,128,256,512; quick 64,256,512). Per N and op, each repetition:
 *        barrier; multiply alone -> alone
 *        barrier; t0; start; t1; multiply; t2; wait; t3                      variant "none"
 *        barrier; the same with a progress call after each block product     variant "progress"
 *        start_us = t1-t0, mm_us = t2-t1, wait_us = t3-t2, mm_alone_us = alone
 *        loss_pct = 100 * ((t1-t0) + (t2-t1)) / alone - 100   (thesis fig. 6.15, this repetition)
 *    all medians over repetitions, then the maximum over ranks. Repetitions: clamp(B / (3
 *    multiplies + 2 start+wait), 3, 30) from one of each, B = 2 x --budget-ms (quick: 1 x).
 *
 * 2. overlap (IMB-NBC). Per op:
 *        t_pure = median of [barrier; start; wait]      repetitions clamp(budget / t_pure, I)
 *        K      = units taking max(t_pure, 50 us) on this rank (t_pure: max over ranks)
 *        t_cpu  = median of [barrier; compute(K)]
 *        t_ovrl = median of [barrier; start; compute(K); wait]               variant "none"
 *                 (variant "progress": compute(K) in chunks, a progress call after each)
 *        overlap% = 100 * max(0, min(1, (t_pure + t_cpu - t_ovrl) / min(t_pure, t_cpu)))
 *    t_cpu and both t_ovrl are timed in interleaved repetitions, clamp(budget / (2 t_pure +
 *    3 t_cpu), I); I = 10..300 (quick: 5..100). Slow operations: repetitions are cut so that a
 *    point takes about 2 s (but at least 5 repetitions), here and for t_pure.
 *
 * 3. cpu (KACC; Hoefler/Lumsdaine work-based). Per op, quantum Q = K units (test 2's t_cpu,
 *    ~max(t_pure, 50 us) of work), n = max(2, window / t_cpu) quanta (the same n on every rank;
 *    --window-ms, default 20, quick 10). Each repetition (5; quick 3; fewer, down to 3, where
 *    they would take more than 2 s) times, one after the other:
 *        idle: barrier; t0; n x compute(Q); T_idle = now - t0
 *        comm: barrier; t0; n x [start; compute(Q); wait]; T_comm = now - t0  (ops back to back)
 *              variants "none" and "progress" (compute(Q) in chunks, a progress call after each)
 *    rho = the median over repetitions of T_comm / T_idle (adjacent windows, so that the VM's
 *    slow phases cancel), per rank. The same work done in T_idle alone takes rho T_idle beside
 *    the collective; work rates W = n Q / T (W_idle = n Q / median T_idle, W_comm = W_idle / rho):
 *        cpu usage %  = 100 * (1 - sum_r W_comm / sum_r W_idle)        (KACC's formula)
 *        hl_ratio     = max_r rho               (Hoefler/Lumsdaine: time for a fixed work)
 *        added_us     = max_r (rho - 1) T_idle / n                 (time each operation added)
 *        t_idle_ms, t_comm_ms = max_r T_idle, max_r rho T_idle
 *    Without progress calls the collective only moves in its wait (manual progress) or in the
 *    library's background (helper thread, async progress thread, kernel). W_idle is measured
 *    with the library initialised; when test 4 ran, usage_vs_before_pct = 100 * (1 - sum_r
 *    W_comm / sum_r R_before) also counts what the library costs while idle.
 *
 * 4. idle. Work rate R = the median over 10 sub-windows (--idle-s / 10 each; default 1 s,
 *    quick 0.3 s) of units/s, in three phases:
 *        before   before GOAL_Init / MPI_Init_thread (with --pin already pinned)
 *        init     after init and one barrier, nothing in flight
 *        after    after every op was validated and run 20 more times, all finished
 *    idle cost % (phase) = 100 * (1 - R_phase / R_before)   (R summed over ranks)
 *    helper_cpu_pct = CPU time of the process' other threads during the phase, % of wall time
 *    (CLOCK_PROCESS_CPUTIME_ID minus CLOCK_THREAD_CPUTIME_ID): a cross-check of the cost that
 *    the VM's noise does not move.
 *
 * 5. background. Does an operation finish while the application computes, without calling the
 *    library, and what share of the computation does that cost? Per op, a computation window
 *    W (--bg-ms, default 20, quick 10; the same for every library and op) of K = units_for(W)
 *    units. Interleaved repetitions (15; quick 7; fewer, down to 5, where they would take more
 *    than 2 s), each:
 *        idle: barrier; t0; compute(K); T_idle = now - t0                    (no progress calls)
 *        bg:   barrier; start; t0; compute(K); t1; done = one test call; wait; T_bg = t1 - t0
 *              (test call: goal GOAL_Test, MPI MPI_Test; done = 1 if it found the op finished)
 *    per rank: done % = 100 * (repetitions with done) / repetitions,
 *              lost % = 100 * (1 - median T_idle / median T_bg)   (how much longer the same work
 *              took with the operation in the background; noise can make it slightly negative)
 *    done_pct = min over ranks; lost_pct = mean over ranks (lost_pct_max_rank: max);
 *    t_idle_ms, t_bg_ms = max over ranks of the medians. The test call may itself advance the
 *    operation by what has arrived meanwhile (so a one-step operation can be done even under
 *    manual progress); a multi-step one is done only if something progressed it in the
 *    background (helper thread, asynchronous progress thread, kernel), and lost % is what that
 *    cost the computation.
 *
 * Output rows: {"test": "meta"} first, then
 *   {"lib", "test": "idle", "phase", "rate_before", "rate", "cost_pct", "cost_pct_max_rank",
 *    "helper_cpu_pct_before", "helper_cpu_pct"}
 *   {"lib", "test": "overlap", "op", "bytes", "variant", "t_pure_us", "t_cpu_us", "t_ovrl_us",
 *    "overlap_pct", "cpu_units", "iters", "lost_us_by_rank" (up to 8 ranks: per rank, the median
 *    of its repetitions' t_ovrl - t_cpu, which rank's CPU the operation cost)}
 *   {"lib", "test": "cpu", "op", "bytes", "variant", "quantum_us", "quanta", "t_idle_ms",
 *    "t_comm_ms", "usage_pct", "usage_pct_max_rank", "hl_ratio", "added_us", "reps",
 *    "usage_vs_before_pct"}
 *   {"lib", "test": "hostoverhead", "op", "bytes", "n", "variant", "start_us", "mm_us",
 *    "wait_us", "mm_alone_us", "loss_pct", "reps"}
 *   {"lib", "test": "background", "op", "bytes", "window_ms", "reps", "done_pct", "lost_pct",
 *    "lost_pct_max_rank", "t_idle_ms", "t_bg_ms"}
 *   {"lib", "test": "na", "op", "bytes", "why"}            (MPI: pingpong200)
 *   {"lib", "test": "skipped", "what", "op", "bytes", "n", "why"}    (--max-s)
 *   {"lib", "test": "done"}        last, before the library is finalized
 * Any failing GOAL or MPI call prints the reason on stderr and exits 1.
 */
#include "p2p_common.h"

#include <math.h>

#ifdef USE_GOAL
#include <goal.h>
#else
#include <mpi.h>
#ifdef GOAL_BENCH_ONECCL
#include "ccl_shim.h"
#endif
#endif

/* ---- options and state --------------------------------------------------------------- */

enum { BARRIER, BCAST, ALLREDUCE, PINGPONG };
static const char *KIND[] = {"barrier", "bcast", "allreduce", "pingpong200"};
#define PP_ROUNDS 200
#define PP_BYTES 8
#define BS 32                 /* matrix block size */
#define MIN_CPU_US 50.0       /* test 2/3: the computation takes at least this long */
#define MAXV 16               /* values per combining allreduce */
#define MAX_OPS 16
#define MAX_MM 16

typedef struct {
    int kind;
    size_t bytes;
    char *sbuf, *rbuf;
#ifdef USE_GOAL
    GOAL_Schedule s;
    GOAL_Handle h;
#else
    MPI_Request req;
    void *ev; /* oneCCL's event (GOAL_BENCH_ONECCL) */
#endif
} op_t;

static int rank = -1, nranks = 0, quick = 0;
static const char *lib = "?";
static double ns_per_unit, block_us;
static long chunk_units;
static volatile float sink;

/* ---- library layer -------------------------------------------------------------------- */

#ifdef USE_GOAL
static void fail(const char *what, int code) {
    const char *last = GOAL_LastError();
    fprintf(stderr, "overlap (%s, rank %d): %s failed", lib, rank, what);
    if (code < 0) fprintf(stderr, " (code %d: %s)", code, GOAL_ErrorString(code));
    fprintf(stderr, ": %s\n", last && *last ? last : "(no GOAL_LastError message)");
    fflush(stderr);
    exit(1);
}

/* an error that is not a GOAL call's */
static void die(const char *msg) {
    fprintf(stderr, "overlap (%s, rank %d): %s\n", lib, rank, msg);
    fflush(stderr);
    exit(1);
}

static GOAL_Schedule g_bar, g_max, g_sum;
static double g_in[MAXV], g_out[MAXV];

static void run_wait(GOAL_Schedule s) {
    GOAL_Handle h = GOAL_Run(s);
    if (!h) fail("GOAL_Run", 0);
    int rc = GOAL_Wait(h);
    if (rc != GOAL_SUCCESS) fail("GOAL_Wait", rc);
}

static void lib_init(int *argc, char ***argv) {
    (void)argc, (void)argv;
    int rc = GOAL_Init();
    if (rc != GOAL_SUCCESS) fail("GOAL_Init", rc);
    nranks = GOAL_GroupSize();
    rank = GOAL_MyRank();
    if (nranks < 1 || rank < 0) fail("GOAL_GroupSize/GOAL_MyRank", rank < 0 ? rank : nranks);
    if (!GOAL_IsExtensionAvailable(GOAL_EXT_PROGRESS)) fail("GOAL_IsExtensionAvailable(GOAL_EXT_PROGRESS)", 0);
    if (!(g_bar = GOAL_Barrier_init(GOAL_ALG_AUTO))) fail("GOAL_Barrier_init", 0);
    if (!(g_max = GOAL_Allreduce_init(g_in, g_out, MAXV, GOAL_FLOAT, 64, GOAL_MAX, GOAL_ALG_AUTO)))
        fail("GOAL_Allreduce_init(MAX)", 0);
    if (!(g_sum = GOAL_Allreduce_init(g_in, g_out, MAXV, GOAL_FLOAT, 64, GOAL_ADD, GOAL_ALG_AUTO)))
        fail("GOAL_Allreduce_init(ADD)", 0);
}

static void lib_finalize(void) {
    GOAL_Schedule all[] = {g_bar, g_max, g_sum};
    for (int i = 0; i < 3; i++) {
        int rc = GOAL_FreeSchedule(all[i]);
        if (rc != GOAL_SUCCESS) fail("GOAL_FreeSchedule", rc);
    }
    int rc = GOAL_Finalize();
    if (rc != GOAL_SUCCESS) fail("GOAL_Finalize", rc);
}

static void barrier(void) { run_wait(g_bar); }

/* v[0..n) = element-wise max (sum_ != 0: sum) over ranks, on every rank */
static void allreduce(double *v, int n, int sum_) {
    for (int i = 0; i < MAXV; i++) g_in[i] = i < n ? v[i] : 0.0;
    run_wait(sum_ ? g_sum : g_max);
    memcpy(v, g_out, sizeof(double) * (size_t)n);
}

static const char *lib_version(void) { return "goal"; }

static GOAL_Schedule pingpong_sched(op_t *o) {
    GOAL_Graph g = GOAL_CreateGraph();
    if (!g) fail("GOAL_CreateGraph", 0);
    GOAL_Vertex prev = GOAL_INVALID_VERTEX;
    if (rank <= 1) {
        for (int i = 0; i < PP_ROUNDS; i++) {
            GOAL_Vertex a, b;
            if (rank == 0) {
                a = GOAL_Send(g, o->sbuf, PP_BYTES, 1, 0, GOAL_USERSPACE);
                b = GOAL_Recv(g, o->rbuf, PP_BYTES, 1, 0, GOAL_USERSPACE);
            } else {
                a = GOAL_Recv(g, o->rbuf, PP_BYTES, 0, 0, GOAL_USERSPACE);
                b = GOAL_Send(g, o->rbuf, PP_BYTES, 0, 0, GOAL_USERSPACE);
            }
            if (a == GOAL_INVALID_VERTEX || b == GOAL_INVALID_VERTEX) fail("GOAL_Send/GOAL_Recv", 0);
            int rc = prev == GOAL_INVALID_VERTEX ? GOAL_SUCCESS : GOAL_Requires(g, prev, a);
            if (rc == GOAL_SUCCESS) rc = GOAL_Requires(g, a, b);
            if (rc != GOAL_SUCCESS) fail("GOAL_Requires", rc);
            prev = b;
        }
    }
    GOAL_Schedule s = GOAL_Compile(g);
    if (!s) fail("GOAL_Compile (pingpong200)", 0);
    int rc = GOAL_FreeGraph(g);
    if (rc != GOAL_SUCCESS) fail("GOAL_FreeGraph", rc);
    return s;
}

static int op_available(int kind) { (void)kind; return 1; }

static void op_create(op_t *o) {
    switch (o->kind) {
    case BARRIER: o->s = GOAL_Barrier_init(GOAL_ALG_AUTO); break;
    case BCAST: o->s = GOAL_Bcast_init(o->sbuf, o->bytes, 0, GOAL_ALG_AUTO); break;
    case ALLREDUCE:
        o->s = GOAL_Allreduce_init(o->sbuf, o->rbuf, (int)(o->bytes / 4), GOAL_FLOAT, 32, GOAL_ADD, GOAL_ALG_AUTO);
        break;
    case PINGPONG: o->s = pingpong_sched(o); break;
    }
    if (!o->s) {
        char what[96];
        snprintf(what, sizeof what, "creating the %s schedule (%zu bytes)", KIND[o->kind], o->bytes);
        fail(what, 0);
    }
}

static void op_free(op_t *o) {
    int rc = GOAL_FreeSchedule(o->s);
    if (rc != GOAL_SUCCESS) fail("GOAL_FreeSchedule", rc);
}

static void op_start(op_t *o) {
    o->h = GOAL_Run(o->s);
    if (!o->h) fail("GOAL_Run", 0);
}

static void op_progress(op_t *o) {
    (void)o;
    int rc = GOAL_Progress();
    if (rc < 0) fail("GOAL_Progress", rc);
}

/* 1 if finished (GOAL_Test then released the handle: op_wait returns at once), else 0 */
static int op_test(op_t *o) {
    int rc = GOAL_Test(o->h);
    if (rc < 0) fail("GOAL_Test", rc);
    if (rc == 1) o->h = NULL;
    return rc == 1;
}

static void op_wait(op_t *o) {
    if (!o->h) return; /* finished in op_test */
    int rc = GOAL_Wait(o->h);
    if (rc != GOAL_SUCCESS) fail("GOAL_Wait", rc);
    o->h = NULL;
}

static const char *progress_mode(void) {
    const char *p = getenv("GOAL_PROGRESS");
    return p && *p ? p : "default";
}

#else /* MPI */

static void mpi_fail(const char *what, int rc) {
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "overlap (%s, rank %d): %s failed: %s\n", lib, rank, what, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}
#define MPICHK(call)                                   \
    do {                                               \
        int rc_ = (call);                              \
        if (rc_ != MPI_SUCCESS) mpi_fail(#call, rc_); \
    } while (0)

/* an error that is not an MPI call's */
static void die(const char *msg) {
    fprintf(stderr, "overlap (%s, rank %d): %s\n", lib, rank, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static int thread_provided = -1;

static void lib_init(int *argc, char ***argv) {
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &thread_provided);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "overlap: MPI_Init_thread failed (%d)\n", rc);
        exit(1);
    }
    MPICHK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPICHK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MPICHK(MPI_Comm_size(MPI_COMM_WORLD, &nranks));
#ifdef GOAL_BENCH_ONECCL
    if (ccl_shim_init(rank, nranks) != 0) die("no oneCCL communicator");
#endif
}

static void lib_finalize(void) {
#ifdef GOAL_BENCH_ONECCL
    ccl_shim_fini();
#endif
    MPICHK(MPI_Finalize());
}

static void barrier(void) { MPICHK(MPI_Barrier(MPI_COMM_WORLD)); }

static void allreduce(double *v, int n, int sum_) {
    MPICHK(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, sum_ ? MPI_SUM : MPI_MAX, MPI_COMM_WORLD));
}

static const char *lib_version(void) {
    static char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPICHK(MPI_Get_library_version(v, &len));
#ifdef GOAL_BENCH_ONECCL
    ccl_shim_version(v, sizeof v);
#endif
    for (char *p = v; *p; p++)
        if (*p == '\n') *p = ' ';
    return v;
}

static int op_available(int kind) { return kind != PINGPONG; }

static void op_create(op_t *o) { o->req = MPI_REQUEST_NULL, o->ev = NULL; }

static void op_free(op_t *o) { (void)o; }

#ifdef GOAL_BENCH_ONECCL
/* oneCCL: the same operations, float32 sums; the event is freed by the wait */
static void op_start(op_t *o) {
    if (o->kind == PINGPONG) die("pingpong200 has no oneCCL form");
    o->ev = ccl_shim_start(o->kind == BARRIER ? 0 : o->kind == BCAST ? 1 : 2, o->sbuf, o->rbuf, o->bytes);
}
static void op_progress(op_t *o) { (void)ccl_shim_test(o->ev); }
static int op_test(op_t *o) { return ccl_shim_test(o->ev); }
static void op_wait(op_t *o) { ccl_shim_wait(o->ev), o->ev = NULL; }
static const char *progress_mode(void) { return "oneccl-workers"; }
#else
static void op_start(op_t *o) {
    switch (o->kind) {
    case BARRIER: MPICHK(MPI_Ibarrier(MPI_COMM_WORLD, &o->req)); break;
    case BCAST: MPICHK(MPI_Ibcast(o->sbuf, (int)o->bytes, MPI_BYTE, 0, MPI_COMM_WORLD, &o->req)); break;
    case ALLREDUCE:
        MPICHK(MPI_Iallreduce(o->sbuf, o->rbuf, (int)(o->bytes / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &o->req));
        break;
    default: die("pingpong200 has no MPI form");
    }
}

/* MPI_Test of a finished (MPI_REQUEST_NULL) request returns at once with flag = 1 */
static void op_progress(op_t *o) {
    int flag;
    MPICHK(MPI_Test(&o->req, &flag, MPI_STATUS_IGNORE));
}

/* 1 if finished (the request is then MPI_REQUEST_NULL: op_wait returns at once), else 0 */
static int op_test(op_t *o) {
    int flag;
    MPICHK(MPI_Test(&o->req, &flag, MPI_STATUS_IGNORE));
    return flag != 0;
}

static void op_wait(op_t *o) { MPICHK(MPI_Wait(&o->req, MPI_STATUS_IGNORE)); }

static const char *progress_mode(void) {
    const char *p = getenv("MPIR_CVAR_ASYNC_PROGRESS");
    return p && *p && strcmp(p, "0") ? "async" : "default";
}
#endif /* GOAL_BENCH_ONECCL */
#endif

/* ---- computation ---------------------------------------------------------------------- */

static volatile float seed_ = 1.0f; /* read once per call so nothing is constant-folded */

/* n work units: one step of 8 independent multiply-add chains each */
static void work(long n) {
    float s = seed_;
    float a0 = s, a1 = s + 1, a2 = s + 2, a3 = s + 3, a4 = s + 4, a5 = s + 5, a6 = s + 6, a7 = s + 7;
    const float m = 0.999999f, c = 1e-7f;
    for (long i = 0; i < n; i++) {
        a0 = a0 * m + c; a1 = a1 * m + c; a2 = a2 * m + c; a3 = a3 * m + c;
        a4 = a4 * m + c; a5 = a5 * m + c; a6 = a6 * m + c; a7 = a7 * m + c;
    }
    sink = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

/* K units; with o, in chunks with a progress call after each */
static void compute(long units, op_t *o) {
    if (!o) {
        work(units);
        return;
    }
    for (long left = units; left > 0; left -= chunk_units) {
        work(left < chunk_units ? left : chunk_units);
        op_progress(o);
    }
}

static double cpu_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Work units per second: the median over 10 sub-windows of seconds/10 each (chunks of 10^4
 * units). *helper_pct: CPU time the process' other threads used meanwhile, in % of the
 * wall time (process CPU clock minus this thread's). */
static double work_rate(double seconds, double *helper_pct) {
    const long c = 10000;
    double r[10];
    double w0 = now_s(), p0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID), th0 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
    for (int w = 0; w < 10; w++) {
        long units = 0;
        double t0 = now_s(), t;
        do {
            work(c);
            units += c;
            t = now_s();
        } while (t - t0 < seconds / 10);
        r[w] = (double)units / (t - t0);
    }
    double others = (cpu_s(CLOCK_PROCESS_CPUTIME_ID) - p0) - (cpu_s(CLOCK_THREAD_CPUTIME_ID) - th0);
    *helper_pct = fmax(0.0, 100.0 * others / (now_s() - w0)); /* clock granularity: never < 0 */
    return median(r, 10);
}

/* C += A*B for one pair of 32x32 blocks */
static void block_mm(float *restrict c, const float *restrict a, const float *restrict b) {
    for (int i = 0; i < BS; i++)
        for (int l = 0; l < BS; l++) {
            float x = a[i * BS + l];
            for (int j = 0; j < BS; j++) c[i * BS + j] += x * b[l * BS + j];
        }
}

/* C = A*B, n x n in block data layout (block (I,J) at ((I*m)+J)*BS*BS), C cleared by the caller;
 * with o, a progress call after each block product */
static void matmul(float *c, const float *a, const float *b, int n, op_t *o) {
    int m = n / BS;
    size_t bb = (size_t)BS * BS;
    for (int I = 0; I < m; I++)
        for (int J = 0; J < m; J++)
            for (int L = 0; L < m; L++) {
                block_mm(c + ((size_t)I * m + J) * bb, a + ((size_t)I * m + L) * bb, b + ((size_t)L * m + J) * bb);
                if (o) op_progress(o);
            }
    sink = c[0] + c[(size_t)n * n - 1];
}

static void calibrate(void) {
    const long n = 1L << 21;
    ns_per_unit = 1e30;
    for (int i = 0; i < 5; i++) {
        double t = now_s();
        work(n);
        t = (now_s() - t) * 1e9 / (double)n;
        if (t < ns_per_unit) ns_per_unit = t;
    }
    float *a = alloc_pages(3 * BS * BS * sizeof(float), 0), *b = a + BS * BS, *c = b + BS * BS;
    for (int i = 0; i < BS * BS; i++) a[i] = b[i] = 0.001f * (float)(i % 17);
    block_us = 1e30;
    for (int i = 0; i < 50; i++) {
        double t = now_s();
        block_mm(c, a, b);
        t = (now_s() - t) * 1e6;
        if (t < block_us) block_us = t;
    }
    sink = c[0];
    free(a);
    chunk_units = (long)(block_us * 1e3 / ns_per_unit);
    if (chunk_units < 1) chunk_units = 1;
}

static long units_for(double us) {
    long k = (long)(us * 1e3 / ns_per_unit);
    return k < 1 ? 1 : k;
}

/* ---- helpers -------------------------------------------------------------------------- */

static double clampd(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

#define POINT_CAP_S 2.0 /* slow operations: a point's repetitions take about this long at most */

/* clamp(budget / per_rep, lo, hi) repetitions, cut to POINT_CAP_S / per_rep (but not below floor) */
static int reps_for(double budget_s, double per_rep_s, int lo, int hi, int floor) {
    int r = (int)clampd(budget_s / per_rep_s, lo, hi);
    int cap = (int)(POINT_CAP_S / per_rep_s);
    if (cap < floor) cap = floor;
    return r < cap ? r : cap;
}

static void print_head(const char *test) {
    printf("{\"lib\": ");
    json_str(stdout, lib);
    printf(", \"test\": \"%s\"", test);
}

static void print_op(const op_t *o) { printf(", \"op\": \"%s\", \"bytes\": %zu", KIND[o->kind], o->bytes); }

static double t_start, max_s; /* --max-s: points not begun by then are skipped */

/* 1 (on every rank) if the run is past --max-s; then rank 0 reports the point as skipped (the
 * caller skips the rest of the test too) */
static int out_of_time(const char *test, const char *op, size_t bytes, int n) {
    if (max_s <= 0) return 0;
    double e[1] = {now_s() - t_start};
    allreduce(e, 1, 0);
    if (e[0] < max_s) return 0;
    if (rank == 0) {
        print_head("skipped");
        printf(", \"what\": \"%s\", \"op\": \"%s\", \"bytes\": %zu, \"n\": %d, \"why\": \"past --max-s %g: this and the test's later points skipped\"}\n",
               test, op, bytes, n, max_s);
        fflush(stdout);
    }
    return 1;
}

/* ---- validation ----------------------------------------------------------------------- */

static uint8_t pat(size_t i) { return (uint8_t)((i * 131u + 7u) ^ (i >> 8)); }

/* one run with known data; returns 1 if this rank's result is right */
static int validate(op_t *o) {
    size_t n = o->bytes, cnt = n / 4;
    switch (o->kind) {
    case BCAST:
        for (size_t i = 0; i < n; i++) o->sbuf[i] = rank == 0 ? (char)pat(i) : 0;
        break;
    case ALLREDUCE:
        for (size_t i = 0; i < cnt; i++) {
            float v = (float)((rank + 1) * (int)(i % 7 + 1));
            memcpy(o->sbuf + 4 * i, &v, 4);
        }
        memset(o->rbuf, 0, n);
        break;
    case PINGPONG:
        for (size_t i = 0; i < PP_BYTES; i++) {
            o->sbuf[i] = rank == 0 ? (char)pat(i) : 0;
            o->rbuf[i] = 0;
        }
        break;
    }
    barrier();
    op_start(o);
    op_wait(o);
    int ok = 1;
    switch (o->kind) {
    case BCAST:
        for (size_t i = 0; i < n && ok; i++) ok = (uint8_t)o->sbuf[i] == pat(i);
        break;
    case ALLREDUCE: {
        double tri = (double)nranks * (nranks + 1) / 2;
        for (size_t i = 0; i < cnt && ok; i++) {
            float got;
            memcpy(&got, o->rbuf + 4 * i, 4);
            ok = got == (float)(tri * (double)(i % 7 + 1));
        }
        break;
    }
    case PINGPONG:
        if (rank <= 1)
            for (size_t i = 0; i < PP_BYTES && ok; i++) ok = (uint8_t)o->rbuf[i] == pat(i);
        break;
    }
    /* back to the timing data: ones */
    for (size_t i = 0; i + 4 <= n; i += 4) {
        float one = 1.0f;
        memcpy(o->sbuf + i, &one, 4);
    }
    return ok;
}

/* ---- test 4: idle --------------------------------------------------------------------- */

static double rate_before, helper_before;

static void idle_row(const char *phase, double seconds) {
    barrier();
    double helper;
    double r = work_rate(seconds, &helper);
    double v[4] = {rate_before, r, helper_before, helper}; /* summed over ranks */
    allreduce(v, 4, 1);
    double mx[1] = {1.0 - r / rate_before};
    allreduce(mx, 1, 0);
    if (rank == 0) {
        print_head("idle");
        printf(", \"phase\": \"%s\", \"seconds\": %g, \"rate_before\": %.6g, \"rate\": %.6g, "
               "\"cost_pct\": %.3f, \"cost_pct_max_rank\": %.3f, \"helper_cpu_pct_before\": %.3f, "
               "\"helper_cpu_pct\": %.3f}\n",
               phase, seconds, v[0], v[1], 100.0 * (1.0 - v[1] / v[0]), 100.0 * mx[0], v[2] / nranks,
               v[3] / nranks);
        fflush(stdout);
    }
}

/* ---- test 1: host overhead ------------------------------------------------------------ */

#define MAX_MM_REPS 30

static void test_hostoverhead(op_t *ops, int nops, const int *sizes, int nsizes, double budget_s) {
    int nmax = 0;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > nmax) nmax = sizes[i];
    size_t elems = (size_t)nmax * nmax;
    float *a = alloc_pages(elems * sizeof(float), 0), *b = alloc_pages(elems * sizeof(float), 0),
          *c = alloc_pages(elems * sizeof(float), 0);
    for (size_t i = 0; i < elems; i++) {
        a[i] = 0.001f * (float)(i % 31);
        b[i] = 0.002f * (float)(i % 29);
    }
    /* per repetition: the multiply alone, then [start; multiply; wait] without and with progress calls */
    double alone[MAX_MM_REPS], ts[2][MAX_MM_REPS], tm[2][MAX_MM_REPS], tw[2][MAX_MM_REPS], loss[2][MAX_MM_REPS];
    for (int si = 0; si < nsizes; si++) {
        int n = sizes[si];
        size_t cb = (size_t)n * n * sizeof(float);
        for (int k = 0; k < nops; k++) {
            op_t *o = &ops[k];
            if (out_of_time("hostoverhead", KIND[o->kind], o->bytes, n)) goto done;
            /* repetitions from one multiply and one start+wait (max over ranks) */
            memset(c, 0, cb);
            barrier();
            double t0 = now_s();
            matmul(c, a, b, n, NULL);
            double t1 = now_s();
            op_start(o);
            op_wait(o);
            double est[2] = {t1 - t0, now_s() - t1};
            allreduce(est, 2, 0);
            int reps = (int)clampd(budget_s / (3 * est[0] + 2 * est[1]), 3, MAX_MM_REPS);
            for (int r = 0; r < reps; r++) {
                memset(c, 0, cb);
                barrier();
                t0 = now_s();
                matmul(c, a, b, n, NULL);
                alone[r] = (now_s() - t0) * 1e6;
                for (int var = 0; var < 2; var++) {
                    memset(c, 0, cb);
                    barrier();
                    double a0 = now_s();
                    op_start(o);
                    double a1 = now_s();
                    matmul(c, a, b, n, var ? o : NULL);
                    double a2 = now_s();
                    op_wait(o);
                    double a3 = now_s();
                    ts[var][r] = (a1 - a0) * 1e6;
                    tm[var][r] = (a2 - a1) * 1e6;
                    tw[var][r] = (a3 - a2) * 1e6;
                    loss[var][r] = (ts[var][r] + tm[var][r]) / alone[r] - 1.0;
                }
            }
            double mm_alone = median(alone, reps);
            for (int var = 0; var < 2; var++) {
                double v[5] = {median(ts[var], reps), median(tm[var], reps), median(tw[var], reps), mm_alone,
                               median(loss[var], reps)};
                allreduce(v, 5, 0);
                if (rank == 0) {
                    print_head("hostoverhead");
                    print_op(o);
                    printf(", \"n\": %d, \"variant\": \"%s\", \"start_us\": %.3f, \"mm_us\": %.3f, \"wait_us\": %.3f, "
                           "\"mm_alone_us\": %.3f, \"loss_pct\": %.3f, \"reps\": %d}\n",
                           n, var ? "progress" : "none", v[0], v[1], v[2], v[3], 100.0 * v[4], reps);
                    fflush(stdout);
                }
            }
        }
    }
done:
    free(a), free(b), free(c);
}

/* ---- tests 2 and 3: overlap and cpu --------------------------------------------------- */

typedef struct {
    double t_pure_us, t_cpu_us; /* max over ranks */
    long units;                 /* K on this rank */
} calib_t;

/* t_pure and the computation K that takes max(t_pure, MIN_CPU_US) */
static calib_t calibrate_op(op_t *o, double budget_s, int min_it, int max_it, double *buf) {
    calib_t cb;
    double est = 0;
    for (int i = 0; i < 6; i++) {
        barrier();
        double t = now_s();
        op_start(o);
        op_wait(o);
        if (i >= 3) est += (now_s() - t) / 3;
    }
    double e[1] = {est};
    allreduce(e, 1, 0);
    int iters = reps_for(budget_s, e[0], min_it, max_it, 5);
    for (int i = 0; i < iters; i++) {
        barrier();
        double t = now_s();
        op_start(o);
        op_wait(o);
        buf[i] = (now_s() - t) * 1e6;
    }
    double v[1] = {median(buf, iters)};
    allreduce(v, 1, 0);
    cb.t_pure_us = v[0];
    cb.t_cpu_us = fmax(v[0], MIN_CPU_US);
    cb.units = units_for(cb.t_cpu_us);
    return cb;
}

static void test_overlap(op_t *o, calib_t *cb, double budget_s, int min_it, int max_it, double *tc, double *tn,
                         double *tp) {
    int iters = reps_for(budget_s, (2 * cb->t_pure_us + 3 * cb->t_cpu_us) * 1e-6, min_it, max_it, 5);
    for (int i = 0; i < iters; i++) {
        barrier();
        double t = now_s();
        compute(cb->units, NULL);
        tc[i] = (now_s() - t) * 1e6;
        barrier();
        t = now_s();
        op_start(o);
        compute(cb->units, NULL);
        op_wait(o);
        tn[i] = (now_s() - t) * 1e6;
        barrier();
        t = now_s();
        op_start(o);
        compute(cb->units, o);
        op_wait(o);
        tp[i] = (now_s() - t) * 1e6;
    }
    /* What each rank's repetitions took beyond its computation alone (before the medians sort
     * the arrays): which rank's CPU pays for the operation. Gathered by a MAX over one slot per
     * rank, so only up to MAXV / 2 ranks. */
    double lost[MAXV] = {0};
    int by_rank = 2 * nranks <= MAXV;
    if (by_rank) {
        double *d = malloc(sizeof(double) * (size_t)iters);
        if (!d) die("out of memory");
        for (int var = 0; var < 2; var++) {
            for (int i = 0; i < iters; i++) d[i] = (var ? tp : tn)[i] - tc[i];
            lost[var * nranks + rank] = median(d, iters);
        }
        free(d);
    }
    double v[3] = {median(tc, iters), median(tn, iters), median(tp, iters)};
    allreduce(v, 3, 0);
    if (by_rank) allreduce(lost, 2 * nranks, 0);
    cb->t_cpu_us = v[0];
    if (rank != 0) return;
    for (int var = 0; var < 2; var++) {
        double tpure = cb->t_pure_us, tcpu = v[0], tov = v[1 + var];
        double ov = 100.0 * clampd((tpure + tcpu - tov) / fmin(tpure, tcpu), 0.0, 1.0);
        print_head("overlap");
        print_op(o);
        printf(", \"variant\": \"%s\", \"t_pure_us\": %.3f, \"t_cpu_us\": %.3f, \"t_ovrl_us\": %.3f, "
               "\"overlap_pct\": %.2f, \"cpu_units\": %ld, \"iters\": %d",
               var ? "progress" : "none", tpure, tcpu, tov, ov, cb->units, iters);
        if (by_rank)
            for (int r = 0; r < nranks; r++) printf("%s%.1f", r ? ", " : ", \"lost_us_by_rank\": [", lost[var * nranks + r]);
        printf("%s}\n", by_rank ? "]" : "");
    }
    fflush(stdout);
}

#define MAX_CPU_REPS 9

static void test_cpu(op_t *o, const calib_t *cb, double window_s, int reps) {
    long n = (long)(window_s / (cb->t_cpu_us * 1e-6));
    if (n < 2) n = 2;
    reps = reps_for(1e9, 3.0 * (double)n * (cb->t_cpu_us + cb->t_pure_us) * 1e-6, reps, reps, 3);
    double ti[MAX_CPU_REPS], ratio[2][MAX_CPU_REPS];
    for (int r = 0; r < reps; r++) {
        barrier();
        double t = now_s();
        for (long j = 0; j < n; j++) compute(cb->units, NULL);
        ti[r] = now_s() - t;
        for (int var = 0; var < 2; var++) {
            barrier();
            t = now_s();
            for (long j = 0; j < n; j++) {
                op_start(o);
                compute(cb->units, var ? o : NULL);
                op_wait(o);
            }
            ratio[var][r] = (now_s() - t) / ti[r];
        }
    }
    double tidle = median(ti, reps), widle = (double)n * (double)cb->units / tidle;
    for (int var = 0; var < 2; var++) {
        double rho = median(ratio[var], reps); /* T_comm / T_idle of adjacent windows */
        double sums[3] = {widle, widle / rho, rate_before}; /* W_idle, W_comm, R_before */
        double maxs[5] = {1.0 - 1.0 / rho, rho, tidle, rho * tidle, (rho - 1.0) * tidle / (double)n};
        allreduce(sums, 3, 1);
        allreduce(maxs, 5, 0);
        if (rank == 0) {
            print_head("cpu");
            print_op(o);
            printf(", \"variant\": \"%s\", \"quantum_us\": %.3f, \"quanta\": %ld, \"t_idle_ms\": %.4f, "
                   "\"t_comm_ms\": %.4f, \"usage_pct\": %.3f, \"usage_pct_max_rank\": %.3f, \"hl_ratio\": %.4f, "
                   "\"added_us\": %.3f, \"reps\": %d, \"usage_vs_before_pct\": ",
                   var ? "progress" : "none", cb->t_cpu_us, n, maxs[2] * 1e3, maxs[3] * 1e3,
                   100.0 * (1.0 - sums[1] / sums[0]), 100.0 * maxs[0], maxs[1], maxs[4] * 1e6, reps);
            if (sums[2] > 0) printf("%.3f}\n", 100.0 * (1.0 - sums[1] / sums[2]));
            else printf("null}\n");
            fflush(stdout);
        }
    }
}

/* ---- test 5: background --------------------------------------------------------------- */

#define MAX_BG_REPS 15

static void test_background(op_t *o, double window_s, int reps) {
    long k = units_for(window_s * 1e6);
    /* one untimed repetition of each: how long one takes (max over ranks) */
    barrier();
    double t = now_s();
    compute(k, NULL);
    barrier();
    op_start(o);
    compute(k, NULL);
    op_test(o);
    op_wait(o);
    double e[1] = {now_s() - t};
    allreduce(e, 1, 0);
    reps = reps_for(1e9, e[0], reps, reps, 5);
    double ti[MAX_BG_REPS], tb[MAX_BG_REPS];
    int done = 0;
    for (int r = 0; r < reps; r++) {
        barrier();
        double t0 = now_s();
        compute(k, NULL);
        ti[r] = now_s() - t0;
        barrier();
        op_start(o);
        t0 = now_s();
        compute(k, NULL);
        double t1 = now_s();
        done += op_test(o);
        op_wait(o);
        tb[r] = t1 - t0;
    }
    double tidle = median(ti, reps), tbg = median(tb, reps), lost = 1.0 - tidle / tbg;
    double sums[1] = {lost};
    double maxs[4] = {-(double)done / reps, lost, tidle, tbg}; /* -done: its minimum over ranks */
    allreduce(sums, 1, 1);
    allreduce(maxs, 4, 0);
    if (rank == 0) {
        print_head("background");
        print_op(o);
        printf(", \"window_ms\": %g, \"reps\": %d, \"done_pct\": %.1f, \"lost_pct\": %.3f, "
               "\"lost_pct_max_rank\": %.3f, \"t_idle_ms\": %.4f, \"t_bg_ms\": %.4f}\n",
               window_s * 1e3, reps, -100.0 * maxs[0], 100.0 * sums[0] / nranks, 100.0 * maxs[1], maxs[2] * 1e3,
               maxs[3] * 1e3);
        fflush(stdout);
    }
}

/* ---- main ----------------------------------------------------------------------------- */

static int in_list(const char *list, const char *name) {
    if (!list) return 1;
    size_t k = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += k)
        if ((p == list || p[-1] == ',') && (p[k] == 0 || p[k] == ',')) return 1;
    return 0;
}

static size_t parse_size(const char *p, char **end) {
    unsigned long long v = strtoull(p, end, 10);
    if (**end == 'K' || **end == 'k') v <<= 10, (*end)++;
    else if (**end == 'M' || **end == 'm') v <<= 20, (*end)++;
    return (size_t)v;
}

static int env_rank(void) {
    const char *vars[] = {"GOAL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    for (int i = 0; i < 4; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v);
    }
    return -1;
}

static void usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [--name LIB] [--quick] [--pin] [--tests hostoverhead,overlap,cpu,idle,background]\n"
            "          [--ops barrier,bcast:8,bcast:64K,bcast:1M,allreduce:8,allreduce:64K,allreduce:1M,pingpong200]\n"
            "          [--mm-sizes 64,128,256,512] [--budget-ms X] [--window-ms X] [--bg-ms X] [--idle-s X]\n"
            "          [--max-s X]\n",
            argv0);
    exit(2);
}

int main(int argc, char **argv) {
    int pin = 0;
    t_start = now_s();
    const char *name = NULL, *tests = NULL, *ops_arg = "barrier,bcast:8,bcast:64K,bcast:1M,allreduce:8,"
                                                      "allreduce:64K,allreduce:1M,pingpong200";
    const char *mm_arg = NULL;
    double budget_ms = -1, window_ms = -1, bg_ms = -1, idle_s = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--pin")) pin = 1;
        else if (!strcmp(argv[i], "--name") && i + 1 < argc) name = argv[++i];
        else if (!strcmp(argv[i], "--tests") && i + 1 < argc) tests = argv[++i];
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc) ops_arg = argv[++i];
        else if (!strcmp(argv[i], "--mm-sizes") && i + 1 < argc) mm_arg = argv[++i];
        else if (!strcmp(argv[i], "--budget-ms") && i + 1 < argc) budget_ms = atof(argv[++i]);
        else if (!strcmp(argv[i], "--window-ms") && i + 1 < argc) window_ms = atof(argv[++i]);
        else if (!strcmp(argv[i], "--bg-ms") && i + 1 < argc) bg_ms = atof(argv[++i]);
        else if (!strcmp(argv[i], "--idle-s") && i + 1 < argc) idle_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--max-s") && i + 1 < argc) max_s = atof(argv[++i]);
        else usage(argv[0]);
    }
#ifdef USE_GOAL
    lib = name ? name : "goal";
#else
    lib = name ? name : "mpi";
#endif
    if (budget_ms < 0) budget_ms = quick ? 15 : 40;
    if (window_ms < 0) window_ms = quick ? 10 : 20;
    if (bg_ms < 0) bg_ms = quick ? 10 : 20;
    if (idle_s < 0) idle_s = quick ? 0.3 : 1.0;
    int min_it = quick ? 5 : 10, max_it = quick ? 100 : 300, cpu_reps = quick ? 3 : 5, bg_reps = quick ? 7 : 15;

    /* operations */
    op_t ops[MAX_OPS];
    int nops = 0;
    for (const char *p = ops_arg; *p && nops < MAX_OPS;) {
        const char *e = p + strcspn(p, ",");
        char item[32];
        snprintf(item, sizeof item, "%.*s", (int)(e - p), p);
        char *colon = strchr(item, ':');
        size_t bytes = 0;
        if (colon) {
            char *end;
            *colon = 0;
            bytes = parse_size(colon + 1, &end);
            if (*end || bytes == 0) usage(argv[0]);
        }
        int kind = -1;
        for (int k = 0; k < 4; k++)
            if (!strcmp(item, KIND[k])) kind = k;
        if (kind < 0 || (kind == BARRIER && colon) || (kind == PINGPONG && colon) ||
            ((kind == BCAST || kind == ALLREDUCE) && !colon) || (kind == ALLREDUCE && bytes % 4))
            usage(argv[0]);
        if (kind == PINGPONG) bytes = PP_BYTES;
        ops[nops++] = (op_t){.kind = kind, .bytes = bytes};
        p = *e ? e + 1 : e;
    }
    int mm[MAX_MM], nmm = 0;
    const char *mm_list = mm_arg ? mm_arg : quick ? "64,256,512" : "64,128,256,512";
    for (const char *p = mm_list; *p && nmm < MAX_MM;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < BS || v % BS) usage(argv[0]);
        mm[nmm++] = (int)v;
        p = *end == ',' ? end + 1 : end;
    }

    /* test 4, phase "before": pinned already, before the library starts */
    int erank = env_rank();
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1) ncpu = 1;
    if (pin && erank >= 0 && pin_process((int)(erank % ncpu)) != 0) {
        fprintf(stderr, "overlap: pinning to CPU %ld failed\n", erank % ncpu);
        return 1;
    }
    int do_idle = in_list(tests, "idle");
    if (do_idle) rate_before = work_rate(idle_s, &helper_before);

    lib_init(&argc, &argv);
    if (nranks < 2) die("overlap needs at least 2 ranks");
    if (pin && pin_process((int)(rank % ncpu)) != 0) die("pinning the rank's threads to one CPU failed");
    calibrate();

    if (rank == 0) {
        char aff[128];
        affinity_string(aff, sizeof aff);
        print_head("meta");
        printf(", \"ranks\": %d, \"version\": ", nranks);
        json_str(stdout, lib_version());
        printf(", \"progress\": ");
        json_str(stdout, progress_mode());
#ifndef USE_GOAL
        printf(", \"thread_provided\": \"%s\"",
               thread_provided == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE"
               : thread_provided == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
               : thread_provided == MPI_THREAD_FUNNELED ? "MPI_THREAD_FUNNELED" : "MPI_THREAD_SINGLE");
#endif
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        printf(", \"host_rank0\": ");
        json_str(stdout, host);
        printf(", \"affinity_rank0\": ");
        json_str(stdout, aff);
        printf(", \"ns_per_unit\": %.5f, \"block_us\": %.3f, \"chunk_units\": %ld, \"quick\": %s, "
               "\"budget_ms\": %g, \"window_ms\": %g, \"bg_ms\": %g, \"idle_s\": %g, \"min_cpu_us\": %g, "
               "\"timer\": \"clock_gettime(CLOCK_MONOTONIC)\"}\n",
               ns_per_unit, block_us, chunk_units, quick ? "true" : "false", budget_ms, window_ms, bg_ms, idle_s,
               MIN_CPU_US);
        fflush(stdout);
    }

    int nav = 0;
    for (int k = 0; k < nops; k++) {
        op_t *o = &ops[k];
        if (!op_available(o->kind)) {
            if (rank == 0) {
                print_head("na");
                print_op(o);
                printf(", \"why\": \"MPI has no single non-blocking call for a chain of %d dependent "
                       "ping-pongs\"}\n", PP_ROUNDS);
            }
            continue;
        }
        o->sbuf = alloc_pages(o->bytes, 0);
        o->rbuf = alloc_pages(o->bytes, 0);
        op_create(o);
        ops[nav++] = *o;
    }
    nops = nav;

    if (do_idle) idle_row("init", idle_s);

    /* validate every op once, then 20 more runs of each ("a few collectives") */
    double bad[1] = {0};
    for (int k = 0; k < nops; k++) {
        int ok = validate(&ops[k]);
        double v[1] = {ok ? 0.0 : 1.0};
        allreduce(v, 1, 1);
        if (v[0] > 0) {
            bad[0] += 1;
            if (rank == 0) {
                print_head("validate");
                print_op(&ops[k]);
                printf(", \"ok\": false, \"ranks_wrong\": %.0f}\n", v[0]);
                fflush(stdout);
            }
            if (!ok) fprintf(stderr, "overlap (%s, rank %d): %s %zu B gave a wrong result\n", lib, rank,
                             KIND[ops[k].kind], ops[k].bytes);
        }
    }
    if (bad[0] > 0) {
        if (rank == 0) fprintf(stderr, "overlap (%s): %.0f operation(s) gave wrong results; nothing timed\n", lib, bad[0]);
        exit(1);
    }
    for (int k = 0; k < nops; k++)
        for (int i = 0; i < 20; i++) {
            op_start(&ops[k]);
            op_wait(&ops[k]);
        }
    if (do_idle) idle_row("after", idle_s);

    if (in_list(tests, "overlap") || in_list(tests, "cpu")) {
        double *b1 = malloc(sizeof(double) * (size_t)max_it), *b2 = malloc(sizeof(double) * (size_t)max_it),
               *b3 = malloc(sizeof(double) * (size_t)max_it);
        for (int k = 0; k < nops; k++) {
            if (out_of_time("overlap,cpu", KIND[ops[k].kind], ops[k].bytes, 0)) break;
            calib_t cb = calibrate_op(&ops[k], budget_ms * 1e-3, min_it, max_it, b1);
            if (in_list(tests, "overlap")) test_overlap(&ops[k], &cb, budget_ms * 1e-3, min_it, max_it, b1, b2, b3);
            if (in_list(tests, "cpu")) test_cpu(&ops[k], &cb, window_ms * 1e-3, cpu_reps);
        }
        free(b1), free(b2), free(b3);
    }

    if (in_list(tests, "background"))
        for (int k = 0; k < nops; k++) {
            if (out_of_time("background", KIND[ops[k].kind], ops[k].bytes, 0)) break;
            test_background(&ops[k], bg_ms * 1e-3, bg_reps);
        }

    if (in_list(tests, "hostoverhead")) test_hostoverhead(ops, nops, mm, nmm, budget_ms * 1e-3 * (quick ? 1 : 2));

    barrier();
    if (rank == 0) {
        print_head("done");
        printf("}\n");
        fflush(stdout);
    }
    for (int k = 0; k < nops; k++) {
        op_free(&ops[k]);
        free(ops[k].sbuf);
        free(ops[k].rbuf);
    }
    lib_finalize();
    return 0;
}
