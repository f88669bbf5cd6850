/*
 * t_userop: user-defined reductions (GOAL_Op_create, docs/api.md "User
 * reductions") as a C program sees them.
 *
 *   - four operators: HEIS, the Heisenberg group's product on a 12-byte
 *     struct of uint32 (GOAL_BYTES, width 96; not commutative, and any
 *     swap of two operands shows in its third word); FIRST, the first
 *     non-zero int32 (GOAL_SINT 32; not commutative); SUM, wrapping uint32
 *     addition (GOAL_UINT 32; commutative); MAXLOC, the largest value and
 *     then the lowest index of a 12-byte {value, index, payload} struct
 *     (GOAL_BYTES; commutative);
 *   - GOAL_LocalOp out of place and in place on either operand, and
 *     GOAL_LocalOpVec on pieces: `res = b1 OP b2` with b1 as the function's
 *     `in`; elements of 100000 bytes (longer than the pieces a long local
 *     operation runs in);
 *   - reduce (every root), allreduce and reduce_scatter_block, GOAL_ALG_AUTO
 *     and every algorithm, counts 1, 7 and 2000, in place and not, each
 *     run twice: bit for bit the sequential model x_0 OP x_1 OP ... OP
 *     x_(size-1) in rank order; for a non-commutative operator the
 *     algorithms that reorder are refused (NULL, GOAL_LastError says why)
 *     and the others must give the model; one allreduce of 100000 HEIS
 *     elements (1.2 MB, long messages, the local operation in pieces) run
 *     five times;
 *   - where the function runs: with GOAL_PROGRESS=manual always on the
 *     application's thread (inside a goal call); with a helper thread
 *     (thread, spin, kernel) an allreduce whose messages come while the
 *     application sleeps between Run and Wait combines on the helper (2
 *     ranks); ctx reaches it; a function
 *     that calls goal (GOAL_Progress, GOAL_Run, GOAL_LastError aside) is
 *     refused with GOAL_ERR_INVALID_ARGUMENT and its execution still ends;
 *   - lifetime and refusals: a schedule compiled with an operator keeps
 *     working after GOAL_Op_free; new uses of the freed operator fail
 *     naming it; GOAL_Op_free twice, of a built-in, of NULL; GOAL_ADD on
 *     GOAL_BYTES; GOAL_BYTES of width 12; GOAL_Op_create with NULL.
 */
// ranks: 1 2 3 4 5
// modes: 3
// all-modes: 2
// memcheck: 2
#include "helpers.h"

#include <pthread.h>
#include <sys/syscall.h>

typedef struct {
    uint32_t a, b, c;
} heis_t;

typedef struct {
    int32_t value, index, payload;
} loc_t;

#define CTX_MAGIC 0x5eed5eedu

/* What every function records: that ctx arrived, and on which threads it ran. */
typedef struct {
    uint32_t magic;
    long main_tid;
    long calls, calls_off_main;
    int reentry_rc;         /* what GOAL_Progress returned inside the function */
    int reentry_run_null;   /* whether GOAL_Run returned NULL inside it */
    char reentry_msg[256];  /* GOAL_LastError() inside it */
} ctx_t;

static ctx_t CTX = {CTX_MAGIC, 0, 0, 0, 1, 0, ""};
static pthread_mutex_t CTX_LOCK = PTHREAD_MUTEX_INITIALIZER;
static GOAL_Schedule REENTRY_TARGET;

static void note(void *ctx)
{
    ctx_t *c = ctx;
    if (c->magic != CTX_MAGIC)
        FAILF("the function got ctx %p, not the one given to GOAL_Op_create", ctx);
    pthread_mutex_lock(&CTX_LOCK);
    c->calls++;
    if (syscall(SYS_gettid) != c->main_tid)
        c->calls_off_main++;
    pthread_mutex_unlock(&CTX_LOCK);
}

static void heis(const heis_t *x, heis_t *y)
{
    heis_t z = {x->a + y->a, x->b + y->b, x->c + y->c + x->a * y->b};
    *y = z;
}

static void f_heis(const void *in, void *inout, int count, void *ctx)
{
    note(ctx);
    for (int i = 0; i < count; i++)
        heis((const heis_t *)in + i, (heis_t *)inout + i);
}

static void first(const int32_t *x, int32_t *y) { *y = *x != 0 ? *x : *y; }

static void f_first(const void *in, void *inout, int count, void *ctx)
{
    note(ctx);
    for (int i = 0; i < count; i++)
        first((const int32_t *)in + i, (int32_t *)inout + i);
}

static void sum(const uint32_t *x, uint32_t *y) { *y += *x; }

static void f_sum(const void *in, void *inout, int count, void *ctx)
{
    note(ctx);
    for (int i = 0; i < count; i++)
        sum((const uint32_t *)in + i, (uint32_t *)inout + i);
}

static void maxloc(const loc_t *x, loc_t *y)
{
    if (x->value > y->value || (x->value == y->value && x->index < y->index))
        *y = *x;
}

static void f_maxloc(const void *in, void *inout, int count, void *ctx)
{
    note(ctx);
    for (int i = 0; i < count; i++)
        maxloc((const loc_t *)in + i, (loc_t *)inout + i);
}

/* A function that calls goal: the calls must be refused. */
static void f_reenter(const void *in, void *inout, int count, void *ctx)
{
    ctx_t *c = ctx;
    c->reentry_rc = GOAL_Progress();
    c->reentry_run_null = GOAL_Run(REENTRY_TARGET) == NULL;
    snprintf(c->reentry_msg, sizeof c->reentry_msg, "%s", GOAL_LastError());
    f_sum(in, inout, count, ctx);
}

enum { HEIS, FIRST, SUM, MAXLOC, NOPS };
static const char *NAME[NOPS] = {"HEIS", "FIRST", "SUM", "MAXLOC"};
static GOAL_UserFunction FN[NOPS] = {f_heis, f_first, f_sum, f_maxloc};
static const int COMMUTES[NOPS] = {0, 0, 1, 1};
static const int DT[NOPS] = {GOAL_BYTES, GOAL_SINT, GOAL_UINT, GOAL_BYTES};
static const int WIDTH[NOPS] = {96, 32, 32, 96};
static GOAL_Op OP[NOPS];

static size_t esize(int k) { return (size_t)WIDTH[k] / 8; }

/* Element i of rank q's input for seed s (FIRST: zero two times in three). */
static void input(int k, int q, uint64_t s, size_t n, void *out)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t m = h_mix(h_seed(s, (uint64_t)q, i, (uint64_t)k));
        switch (k) {
        case HEIS: ((heis_t *)out)[i] = (heis_t){(uint32_t)m, (uint32_t)(m >> 32), (uint32_t)(m >> 16)}; break;
        case FIRST: ((int32_t *)out)[i] = m % 3 == 0 ? (int32_t)(m >> 8) | 1 : 0; break;
        case SUM: ((uint32_t *)out)[i] = (uint32_t)m; break;
        default: ((loc_t *)out)[i] = (loc_t){(int32_t)(m % 4), q, (int32_t)(m >> 32)}; break;
        }
    }
}

/* inout = in OP inout, elementwise, the model's own code. */
static void model_op(int k, const void *in, void *inout, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (k) {
        case HEIS: heis((const heis_t *)in + i, (heis_t *)inout + i); break;
        case FIRST: first((const int32_t *)in + i, (int32_t *)inout + i); break;
        case SUM: sum((const uint32_t *)in + i, (uint32_t *)inout + i); break;
        default: maxloc((const loc_t *)in + i, (loc_t *)inout + i); break;
        }
    }
}

/* The sequential model: x_0 OP x_1 OP ... OP x_(size-1), n elements each. */
static void model(int k, uint64_t s, size_t n, void *out)
{
    char *x = malloc(n * esize(k) + 1);
    input(k, 0, s, n, out);
    for (int q = 1; q < h_size; q++) {
        input(k, q, s, n, x);
        model_op(k, out, x, n); /* x = acc OP x_q */
        memcpy(out, x, n * esize(k));
    }
    free(x);
}

static void local_ops(void)
{
    enum { N = 37 };
    for (int k = 0; k < NOPS; k++) {
        size_t e = esize(k), bytes = N * e;
        char *a = malloc(bytes), *b = malloc(bytes), *r = malloc(bytes), *want = malloc(bytes), *pa = malloc(bytes), *pb = malloc(bytes);
        input(k, 1, 11, N, a);
        input(k, 2, 12, N, b);
        memcpy(want, b, bytes);
        model_op(k, a, want, N);
        for (int where = 0; where < 3; where++) {
            /* 0: out of place; 1: the result over b1; 2: over b2. */
            memcpy(pa, a, bytes);
            memcpy(pb, b, bytes);
            char *res = where == 0 ? r : where == 1 ? pa : pb;
            GOAL_Graph g = h_graph();
            V(GOAL_LocalOp(g, pa, pb, res, OP[k], DT[k], WIDTH[k], N, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
            GOAL_Schedule s = h_compile(g);
            h_run(s);
            h_free_schedule(s);
            CHECK_MEM(res, want, bytes, "%s LocalOp, result at %d", NAME[k], where);
        }
        /* Three lists cut differently, at element boundaries. */
        void *l1[3] = {a, a + 5 * e, a + 6 * e}, *l2[2] = {b, b + 30 * e}, *l3[3] = {r, r + e, r + 20 * e};
        int n1[3] = {(int)(5 * e), (int)e, (int)(31 * e)}, n2[2] = {(int)(30 * e), (int)(7 * e)}, n3[3] = {(int)e, (int)(19 * e), (int)(17 * e)};
        memset(r, 0, bytes);
        GOAL_Graph g = h_graph();
        V(GOAL_LocalOpVec(g, l1, n1, 3, l2, n2, 2, l3, n3, 3, DT[k], WIDTH[k], OP[k], GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
        GOAL_Schedule s = h_compile(g);
        h_run(s);
        h_free_schedule(s);
        CHECK_MEM(r, want, bytes, "%s LocalOpVec", NAME[k]);
        free(a), free(b), free(r), free(want), free(pa), free(pb);
    }
}

/* Elements larger than the pieces a long local operation runs in: each is
 * `*(size_t *)ctx` bytes, combined word by word as in*3 + inout. */
static void f_big(const void *in, void *inout, int count, void *ctx)
{
    size_t words = *(size_t *)ctx / 4 * (size_t)count;
    for (size_t w = 0; w < words; w++)
        ((uint32_t *)inout)[w] += 3 * ((const uint32_t *)in)[w];
}

static void big_elements(void)
{
    static size_t esz = 100000; /* bytes per element */
    enum { N = 3 };
    GOAL_Op op;
    CHECK_OK(GOAL_Op_create(f_big, 0, &esz, &op));
    uint32_t *a = malloc(N * esz), *b = malloc(N * esz), *want = malloc(N * esz);
    input(SUM, 1, 5, N * esz / 4, a);
    input(SUM, 2, 6, N * esz / 4, b);
    for (size_t w = 0; w < N * esz / 4; w++)
        want[w] = b[w] + 3 * a[w];
    GOAL_Graph g = h_graph();
    V(GOAL_LocalOp(g, a, b, b, op, GOAL_BYTES, (int)(8 * esz), N, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);
    h_run(s);
    h_free_schedule(s);
    CHECK_MEM(b, want, N * esz, "LocalOp on %d elements of %zu bytes", N, esz);
    CHECK_OK(GOAL_Op_free(&op));
    free(a), free(b), free(want);
}

enum { RED_REDUCE, RED_ALLREDUCE, RED_RSB };
static const char *KIND[] = {"reduce", "allreduce", "reduce_scatter_block"};
/* Every algorithm of each collective, AUTO first; whether it keeps rank order. */
static const int ALGS[3][5] = {
    {GOAL_ALG_AUTO, GOAL_ALG_LINEAR, GOAL_ALG_BINOMIAL, GOAL_ALG_RABENSEIFNER, -1},
    {GOAL_ALG_AUTO, GOAL_ALG_RECURSIVE_DOUBLING, GOAL_ALG_RING, GOAL_ALG_RABENSEIFNER, -1},
    {GOAL_ALG_AUTO, GOAL_ALG_LINEAR, GOAL_ALG_RECURSIVE_DOUBLING, GOAL_ALG_RING, -1},
};
static const int ORDERED[3][5] = {{1, 1, 1, 0}, {1, 1, 0, 0}, {1, 1, 0, 0}};

static GOAL_Schedule init(int kind, int k, void *in, void *out, int count, int root, int alg)
{
    switch (kind) {
    case RED_REDUCE: return GOAL_Reduce_init(in, out, count, DT[k], WIDTH[k], OP[k], root, alg);
    case RED_ALLREDUCE: return GOAL_Allreduce_init(in, out, count, DT[k], WIDTH[k], OP[k], alg);
    default: return GOAL_Reduce_scatter_block_init(in, out, count, DT[k], WIDTH[k], OP[k], alg);
    }
}

/* One collective case, run `runs` times; every rank checks its own result. */
static void collective(int kind, int k, int ai, int count, int root, int in_place, int runs)
{
    int alg = ALGS[kind][ai];
    size_t e = esize(k), n_in = kind == RED_RSB ? (size_t)count * h_size : (size_t)count;
    uint64_t seed = h_seed((uint64_t)kind, (uint64_t)ai, (uint64_t)count, (uint64_t)root * 2 + in_place);
    char *in = malloc(n_in * e), *out = malloc(n_in * e), *want = malloc(n_in * e);
    input(k, h_rank, seed, n_in, in);
    memset(out, 0xA5, n_in * e);
    if (in_place)
        memcpy(out, in, n_in * e);
    GOAL_Schedule s = init(kind, k, in_place ? out : in, out, count, root, alg);
    if (h_size > 1 && !COMMUTES[k] && !ORDERED[kind][ai]) {
        CHECKM(s == NULL, "%s %s alg %d: an algorithm that reorders was accepted for a non-commutative operator", NAME[k], KIND[kind], alg);
        CHECKM(h_contains_ci(GOAL_LastError(), "does not commute"), "%s %s alg %d: %s", NAME[k], KIND[kind], alg, GOAL_LastError());
        free(in), free(out), free(want);
        return;
    }
    CHECKM(s != NULL, "%s %s alg %d count %d: %s", NAME[k], KIND[kind], alg, count, GOAL_LastError());
    model(k, seed, n_in, want);
    for (int run = 0; run < runs; run++) {
        if (in_place && run > 0)
            memcpy(out, in, n_in * e);
        h_run(s);
        const char *w = want;
        size_t bytes = (size_t)count * e;
        if (kind == RED_RSB)
            w += (size_t)h_rank * bytes;
        if (kind != RED_REDUCE || h_rank == root)
            CHECK_MEM(out, w, bytes, "%s %s alg %d count %d root %d in_place %d run %d", NAME[k], KIND[kind], alg, count, root, in_place, run);
    }
    h_free_schedule(s);
    free(in), free(out), free(want);
}

static void collectives(void)
{
    static const int COUNTS[] = {1, 7, 2000};
    for (int k = 0; k < NOPS; k++)
        for (int kind = 0; kind < 3; kind++)
            for (int ai = 0; ALGS[kind][ai] >= 0; ai++)
                for (int ci = 0; ci < 3; ci++)
                    for (int root = 0; root < (kind == RED_REDUCE ? h_size : 1); root++)
                        collective(kind, k, ai, COUNTS[ci], root, (ci + root) % 2, 2);
    collective(RED_ALLREDUCE, HEIS, 0, 100000, 0, 0, 5);
}

static void lifetime_and_refusals(void)
{
    uint32_t x[4] = {1, 2, 3, 4}, y[4] = {0};
    GOAL_Op op;
    CHECK_OK(GOAL_Op_create(f_sum, 1, &CTX, &op));
    CHECKM(op >= 65536, "a user operator %d is a built-in one's value", op);
    GOAL_Schedule s = GOAL_Allreduce_init(x, y, 4, GOAL_UINT, 32, op, GOAL_ALG_AUTO);
    CHECKM(s != NULL, "%s", GOAL_LastError());
    GOAL_Op copy = op;
    GOAL_Graph before = h_graph(); /* built before the free, compiled after it */
    V(GOAL_LocalOp(before, x, x, y, op, GOAL_UINT, 32, 4, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    CHECK_OK(GOAL_Op_free(&op));
    CHECK(GOAL_Compile(before) == NULL);
    CHECKM(h_contains_ci(GOAL_LastError(), "GOAL_Compile: vertex 0") && h_contains_ci(GOAL_LastError(), "was freed"), "%s", GOAL_LastError());
    CHECK_OK(GOAL_FreeGraph(before));
    CHECK_EQ(op, GOAL_OP_NULL);
    /* The compiled schedule keeps the function. */
    h_run(s);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(y[i], (uint32_t)(x[i] * h_size));
    h_free_schedule(s);
    /* New uses of the freed operator fail, naming it. */
    CHECK(GOAL_Allreduce_init(x, y, 4, GOAL_UINT, 32, copy, GOAL_ALG_AUTO) == NULL);
    CHECKM(h_contains_ci(GOAL_LastError(), "was freed"), "%s", GOAL_LastError());
    GOAL_Graph g = h_graph();
    CHECK_EQ(GOAL_LocalOp(g, x, x, y, copy, GOAL_UINT, 32, 4, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE), GOAL_INVALID_VERTEX);
    CHECKM(h_contains_ci(GOAL_LastError(), "GOAL_LocalOp") && h_contains_ci(GOAL_LastError(), "was freed"), "%s", GOAL_LastError());
    CHECK_EQ(CHECK_ERR(GOAL_Op_free(&copy)), GOAL_ERR_INVALID_ARGUMENT);
    CHECKM(h_contains_ci(GOAL_LastError(), "was freed"), "%s", GOAL_LastError());
    GOAL_Op builtin = GOAL_ADD;
    CHECK_EQ(CHECK_ERR(GOAL_Op_free(&builtin)), GOAL_ERR_INVALID_ARGUMENT);
    CHECK_EQ(CHECK_ERR(GOAL_Op_free(NULL)), GOAL_ERR_INVALID_ARGUMENT);
    CHECK_EQ(CHECK_ERR(GOAL_Op_create(NULL, 1, NULL, &op)), GOAL_ERR_INVALID_ARGUMENT);
    CHECK_EQ(CHECK_ERR(GOAL_Op_create(f_sum, 1, NULL, NULL)), GOAL_ERR_INVALID_ARGUMENT);
    /* Opaque elements: only user operators and COPY; whole bytes only. */
    heis_t h[2] = {{1, 2, 3}, {4, 5, 6}}, hc[2];
    CHECK(GOAL_Allreduce_init(h, hc, 2, GOAL_BYTES, 96, GOAL_ADD, GOAL_ALG_AUTO) == NULL);
    CHECKM(h_contains_ci(GOAL_LastError(), "GOAL_BYTES"), "%s", GOAL_LastError());
    CHECK(GOAL_Allreduce_init(h, hc, 2, GOAL_BYTES, 12, OP[HEIS], GOAL_ALG_AUTO) == NULL);
    CHECKM(h_contains_ci(GOAL_LastError(), "multiple of 8"), "%s", GOAL_LastError());
    V(GOAL_LocalOp(g, h, h, hc, GOAL_COPY, GOAL_BYTES, 96, 2, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    s = h_compile(g);
    h_run(s);
    h_free_schedule(s);
    CHECK_MEM(hc, h, sizeof h, "GOAL_COPY of GOAL_BYTES");
}

/* A function that calls goal: refused inside, and the execution still ends. */
static void reentry(void)
{
    GOAL_Op op;
    CHECK_OK(GOAL_Op_create(f_reenter, 1, &CTX, &op));
    uint32_t x[3] = {1, 2, 3}, y[3] = {0}, z = 0;
    GOAL_Graph t = h_graph();
    V(GOAL_LocalOp(t, &z, &z, &z, GOAL_COPY, GOAL_UINT, 32, 1, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    REENTRY_TARGET = h_compile(t);
    GOAL_Graph g = h_graph();
    V(GOAL_LocalOp(g, x, x, y, op, GOAL_UINT, 32, 3, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);
    CTX.reentry_rc = 1;
    h_run(s);
    CHECK_EQ(CTX.reentry_rc, GOAL_ERR_INVALID_ARGUMENT);
    CHECK_EQ(CTX.reentry_run_null, 1);
    CHECKM(h_contains_ci(CTX.reentry_msg, "inside a user operation"), "inside the function: %s", CTX.reentry_msg);
    CHECK_EQ(y[2], 6);
    h_free_schedule(s);
    h_free_schedule(REENTRY_TARGET);
    CHECK_OK(GOAL_Op_free(&op));
}

/* While the application computes (sleeps) between Run and Wait, the
 * combines of an allreduce whose messages arrive then run elsewhere than
 * the application's thread, except in manual mode. Returns the calls made
 * off the application's thread during this phase. */
static long in_background(void)
{
    enum { N = 4096 };
    heis_t *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
    input(HEIS, h_rank, 99, N, in);
    GOAL_Schedule s = GOAL_Allreduce_init(in, out, N, GOAL_BYTES, 96, OP[HEIS], GOAL_ALG_AUTO);
    CHECKM(s != NULL, "%s", GOAL_LastError());
    long before = CTX.calls_off_main;
    for (int i = 0; i < 4; i++) {
        h_sync();
        /* Each rank in turn starts 20 ms late: its peer, asleep by then,
         * gets the late rank's data while it sleeps (left to chance, both
         * ranks could find their peer's data already there at Run, and
         * combine it in Run on the application's thread). */
        if (i % 2 == h_rank % 2)
            h_sleep_ms(20);
        GOAL_Handle h = GOAL_Run(s);
        CHECK(h != NULL);
        h_sleep_ms(100);
        CHECK_OK(GOAL_Wait(h));
    }
    heis_t *want = malloc(N * sizeof *want);
    model(HEIS, 99, N, want);
    CHECK_MEM(out, want, N * sizeof *want, "allreduce while the application sleeps");
    h_free_schedule(s);
    free(in), free(out), free(want);
    return CTX.calls_off_main - before;
}

int main(int argc, char **argv)
{
    CTX.main_tid = syscall(SYS_gettid);
    /* Before GOAL_Init, as MPI layers register their operators early. */
    for (int k = 0; k < NOPS; k++)
        CHECK_OK(GOAL_Op_create(FN[k], COMMUTES[k], &CTX, &OP[k]));
    h_init(argc, argv);
    local_ops();
    big_elements();
    collectives();
    lifetime_and_refusals();
    reentry();
    long background = in_background();
    const char *mode = getenv("GOAL_PROGRESS");
    CHECKM(CTX.calls > 0, "no user function ran");
    if (mode && strcmp(mode, "manual") == 0)
        CHECKM(CTX.calls_off_main == 0, "manual mode: %ld of %ld calls ran off the application's thread", CTX.calls_off_main, CTX.calls);
    /* With a helper thread, the combines whose data came while the
     * application slept ran there (2 ranks: both combine in every step). */
    if (mode && strcmp(mode, "manual") != 0 && h_size == 2)
        CHECKM(background > 0, "GOAL_PROGRESS=%s: no combine ran on the helper while the application slept", mode);
    if (h_rank == 0)
        printf("user functions: %ld calls, %ld on another thread than the application's, %ld of them while it slept "
               "(GOAL_PROGRESS=%s)\n", CTX.calls, CTX.calls_off_main, background, mode ? mode : "unset");
    for (int k = 0; k < NOPS; k++)
        CHECK_OK(GOAL_Op_free(&OP[k]));
    return h_finish();
}
