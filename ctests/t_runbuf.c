/*
 * t_runbuf: buffers given at each run (GOAL_RunWith).
 *
 * Asserts, against a direct computation of every byte:
 *   - a graph whose operands lie in run-time buffers (GOAL_RUNBUF(i) and an
 *     offset): each rank sends buffer 0 to its right neighbour, receives its
 *     left neighbour's into buffer 1 at an offset, then adds it into
 *     buffer 2; run many times with new buffers each time, malloc'd and
 *     GOAL_Alloc'd in turn, at addresses that differ per rank and per run,
 *     at 8 B, 64 KiB and 1 MiB (eager, rendezvous and single copy, from the
 *     heap too); the bytes of buffer 1 before the offset stay untouched;
 *   - GOAL_RunBufferSizes names the bytes each buffer must hold;
 *   - GOAL_Allreduce_init, GOAL_Bcast_init and GOAL_Alltoall_init with
 *     GOAL_BUF_AT_RUN(0) and (1) (allreduce also in place, one buffer),
 *     every run with new buffers, at a small and a large size;
 *   - GOAL_Allreduce_append with buffers at run, in a graph that then copies
 *     the result to memory given when the graph was built;
 *   - three executions of one schedule in flight at once, each with its own
 *     buffers;
 *   - errors, each a NULL handle and a message naming the schedule's needs,
 *     after which the schedule runs fine: GOAL_Run of a schedule with
 *     run-time buffers, GOAL_RunWith with too few buffers, a too small one,
 *     a NULL one; and GOAL_RunWith of a schedule without run-time buffers
 *     runs it (the buffers given are not used).
 */
// ranks: 1 2 3 4
// modes: 2 3
// memcheck: 2
#include "helpers.h"

#define OFF 24   /* where buffer 1 takes the message */

/* Memory of `n` bytes of the given kind, at an address that differs from
 * rank to rank and run to run (a pad of rank- and run-dependent size is
 * allocated first and freed after). */
struct mem {
    int kind;
    void *p, *pad;
    size_t n;
};

static struct mem mem_new(int kind, size_t n, int run)
{
    struct mem m = { kind, NULL, NULL, n };
    m.pad = h_alloc(kind, 64 * (size_t)(h_rank * 7 + run % 5 + 1));
    m.p = h_alloc(kind, n);
    return m;
}

static void mem_free(struct mem *m)
{
    if (m->p) {
        h_free(m->kind, m->p);
        h_free(m->kind, m->pad);
    }
    m->p = m->pad = NULL;
}

static GOAL_Handle run_with(GOAL_Schedule s, void *const *bufs, const size_t *sizes, int n)
{
    GOAL_Handle h = GOAL_RunWith(s, bufs, sizes, n);
    CHECKM(h != NULL, "GOAL_RunWith returned NULL");
    return h;
}

/* The ring exchange of the header, `bytes` per message. */
static GOAL_Schedule ring_schedule(int bytes)
{
    int right = (h_rank + 1) % h_size, left = (h_rank + h_size - 1) % h_size;
    GOAL_Graph g = h_graph();
    V(GOAL_Send(g, (void *)0, bytes, right, 1, GOAL_RUNBUF(0)));
    GOAL_Vertex r = V(GOAL_Recv(g, (void *)(uintptr_t)OFF, bytes, left, 1, GOAL_RUNBUF(1)));
    GOAL_Vertex sum = V(GOAL_LocalOp(g, (void *)(uintptr_t)OFF, (void *)0, (void *)0, GOAL_ADD, GOAL_UINT, 8, bytes,
                                     GOAL_RUNBUF(1), GOAL_RUNBUF(2), GOAL_RUNBUF(2)));
    REQ(g, r, sum);
    return h_compile(g);
}

struct ring_bufs {
    struct mem m[3];
    uint64_t seed;
};

static void ring_prepare(struct ring_bufs *b, int bytes, int run)
{
    int kind = run % 2 ? H_GOAL_ALLOC : H_MALLOC;
    size_t n[3] = { (size_t)bytes, (size_t)bytes + OFF, (size_t)bytes };
    for (int i = 0; i < 3; i++)
        b->m[i] = mem_new(kind, n[i], run);
    b->seed = h_seed(bytes, run, 0, 0);
    h_fill(b->m[0].p, bytes, h_seed(bytes, run, h_rank, 1));
    memset(b->m[1].p, 0xEE, n[1]);
    h_fill(b->m[2].p, bytes, h_seed(bytes, run, h_rank, 2));
}

static void ring_check(struct ring_bufs *b, int bytes, int run)
{
    int left = (h_rank + h_size - 1) % h_size;
    const unsigned char *got = (const unsigned char *)b->m[1].p, *sum = (const unsigned char *)b->m[2].p;
    for (int i = 0; i < OFF; i++)
        CHECKM(got[i] == 0xEE, "%d B, run %d: byte %d of buffer 1, before the offset, was written", bytes, run, i);
    long bad = h_pattern_mismatch(got + OFF, bytes, h_seed(bytes, run, left, 1));
    CHECKM(bad < 0, "%d B, run %d (%s): received byte %ld wrong", bytes, run, h_kind_name(b->m[1].kind), bad);
    for (int i = 0; i < bytes; i++) {
        unsigned char want = (unsigned char)(h_pat(h_seed(bytes, run, left, 1), i) + h_pat(h_seed(bytes, run, h_rank, 2), i));
        CHECKM(sum[i] == want, "%d B, run %d: sum byte %d is %u, not %u", bytes, run, i, sum[i], want);
    }
}

static void ring_free(struct ring_bufs *b)
{
    for (int i = 0; i < 3; i++)
        mem_free(&b->m[i]);
}

static void ring_runs(int bytes, int runs)
{
    GOAL_Schedule s = ring_schedule(bytes);
    size_t need[4] = { 0, 0, 0, 99 };
    CHECK_EQ(GOAL_RunBufferSizes(s, need, 4), 3);
    CHECK_EQ(need[0], bytes);
    CHECK_EQ(need[1], bytes + OFF);
    CHECK_EQ(need[2], bytes);
    CHECK_EQ(need[3], 99);
    /* The previous run's buffers live on while the next run's are
     * allocated, so no run finds its predecessor's addresses. */
    struct ring_bufs prev = { 0 }, cur;
    for (int run = 0; run < runs; run++) {
        ring_prepare(&cur, bytes, run);
        void *bufs[3] = { cur.m[0].p, cur.m[1].p, cur.m[2].p };
        size_t sizes[3] = { cur.m[0].n, cur.m[1].n, cur.m[2].n };
        CHECK_OK(GOAL_Wait(run_with(s, bufs, sizes, 3)));
        ring_check(&cur, bytes, run);
        ring_free(&prev);
        prev = cur;
    }
    ring_free(&prev);
    h_free_schedule(s);
}

/* Three executions of one schedule in flight, each with its own buffers. */
static void in_flight(int bytes)
{
    GOAL_Schedule s = ring_schedule(bytes);
    struct ring_bufs b[3];
    GOAL_Handle h[3];
    for (int k = 0; k < 3; k++) {
        ring_prepare(&b[k], bytes, 100 + k);
        void *bufs[3] = { b[k].m[0].p, b[k].m[1].p, b[k].m[2].p };
        size_t sizes[3] = { b[k].m[0].n, b[k].m[1].n, b[k].m[2].n };
        h[k] = run_with(s, bufs, sizes, 3);
    }
    for (int k = 0; k < 3; k++)
        CHECK_OK(GOAL_Wait(h[k]));
    for (int k = 0; k < 3; k++) {
        ring_check(&b[k], bytes, 100 + k);
        ring_free(&b[k]);
    }
    h_free_schedule(s);
}

/* NULL from `h`, and a last error that contains `needle`. */
static void expect_refused(GOAL_Handle h, const char *what, const char *needle)
{
    CHECKM(h == NULL, "%s started", what);
    CHECKM(h_contains_ci(GOAL_LastError(), needle), "%s: the message lacks \"%s\"", what, needle);
}

static void errors(void)
{
    int bytes = 64;
    GOAL_Schedule s = ring_schedule(bytes);
    expect_refused(GOAL_Run(s), "GOAL_Run of a schedule with run-time buffers",
                   "takes 3 run-time buffers (0: 64 bytes, 1: 88 bytes, 2: 64 bytes): give them with each run");
    struct ring_bufs b;
    ring_prepare(&b, bytes, 7);
    void *bufs[3] = { b.m[0].p, b.m[1].p, b.m[2].p };
    size_t sizes[3] = { b.m[0].n, b.m[1].n, b.m[2].n };
    expect_refused(GOAL_RunWith(s, bufs, sizes, 2), "GOAL_RunWith with 2 of 3 buffers", "; 2 given");
    size_t small[3] = { sizes[0], sizes[1] - 1, sizes[2] };
    expect_refused(GOAL_RunWith(s, bufs, small, 3), "GOAL_RunWith with a small buffer", "run-time buffer 1 holds 87 bytes");
    void *null[3] = { bufs[0], bufs[1], NULL };
    expect_refused(GOAL_RunWith(s, null, sizes, 3), "GOAL_RunWith with a NULL buffer", "run-time buffer 2 is NULL");
    CHECKM(h_contains_ci(GOAL_LastError(), "GOAL_RunWith: "), "the message names the call");
    /* Nothing was started by the refused calls: the peers' counts stay in step. */
    CHECK_OK(GOAL_Wait(run_with(s, bufs, sizes, 3)));
    ring_check(&b, bytes, 7);
    h_free_schedule(s);

    /* A schedule with all its buffers runs with GOAL_RunWith too. */
    unsigned char one = (unsigned char)h_rank, all[256];
    GOAL_Graph g = h_graph();
    for (int p = 0; p < h_size; p++)
        V(GOAL_Send(g, &one, 1, p, 2, GOAL_USERSPACE));
    for (int p = 0; p < h_size; p++)
        V(GOAL_Recv(g, &all[p], 1, p, 2, GOAL_USERSPACE));
    GOAL_Schedule closed = h_compile(g);
    CHECK_EQ(GOAL_RunBufferSizes(closed, NULL, 0), 0);
    memset(all, 0xFF, sizeof all);
    CHECK_OK(GOAL_Wait(run_with(closed, bufs, sizes, 3)));
    for (int p = 0; p < h_size; p++)
        CHECK_EQ(all[p], p);
    h_free_schedule(closed);
    ring_free(&b);
}

/* Allreduce (SUM of int64), bcast and alltoall with buffers given at run. */
static void collectives(int count, int runs)
{
    GOAL_Schedule ar = GOAL_Allreduce_init(GOAL_BUF_AT_RUN(0), GOAL_BUF_AT_RUN(1), count, GOAL_SINT, 64, GOAL_ADD, GOAL_ALG_AUTO);
    CHECKM(ar != NULL, "GOAL_Allreduce_init with buffers at run");
    GOAL_Schedule ip = GOAL_Allreduce_init(GOAL_BUF_AT_RUN(0), GOAL_BUF_AT_RUN(0), count, GOAL_SINT, 64, GOAL_ADD, GOAL_ALG_RING);
    CHECKM(ip != NULL, "GOAL_Allreduce_init in place with a buffer at run");
    size_t bytes = (size_t)count * 8;
    GOAL_Schedule bc = GOAL_Bcast_init(GOAL_BUF_AT_RUN(0), bytes, h_size - 1, GOAL_ALG_AUTO);
    CHECKM(bc != NULL, "GOAL_Bcast_init with a buffer at run");
    GOAL_Schedule aa = GOAL_Alltoall_init(GOAL_BUF_AT_RUN(0), bytes / 4 + 1, GOAL_BUF_AT_RUN(1), GOAL_ALG_AUTO);
    CHECKM(aa != NULL, "GOAL_Alltoall_init with buffers at run");
    size_t block = bytes / 4 + 1, all = block * (size_t)h_size;
    size_t need[2];
    CHECK_EQ(GOAL_RunBufferSizes(aa, need, 2), 2);
    CHECK_EQ(need[0], all);
    CHECK_EQ(need[1], all);
    for (int run = 0; run < runs; run++) {
        int kind = run % 2 ? H_GOAL_ALLOC : H_MALLOC;
        struct mem x = mem_new(kind, bytes, run), y = mem_new(kind, bytes, run + 1);
        int64_t *in = x.p, *out = y.p;
        for (int i = 0; i < count; i++)
            in[i] = (int64_t)(h_rank + 1) * 1000003 * (i + 1) + run;
        memset(out, 0, bytes);
        void *b2[2] = { x.p, y.p };
        size_t n2[2] = { bytes, bytes };
        CHECK_OK(GOAL_Wait(run_with(ar, b2, n2, 2)));
        int64_t ranks = (int64_t)h_size * (h_size + 1) / 2;
        for (int i = 0; i < count; i++)
            CHECKM(out[i] == ranks * 1000003 * (i + 1) + (int64_t)h_size * run, "allreduce of %d, run %d: element %d", count, run, i);
        /* in place: x holds the input and gets the result */
        CHECK_OK(GOAL_Wait(run_with(ip, b2, n2, 1)));
        for (int i = 0; i < count; i++)
            CHECKM(in[i] == ranks * 1000003 * (i + 1) + (int64_t)h_size * run, "in-place allreduce of %d, run %d: element %d", count, run, i);
        /* bcast from the last rank into y */
        if (h_rank == h_size - 1)
            h_fill(y.p, bytes, h_seed(count, run, 9, 9));
        else
            memset(y.p, 0, bytes);
        CHECK_OK(GOAL_Wait(run_with(bc, &b2[1], &n2[1], 1)));
        CHECKM(h_pattern_mismatch(y.p, bytes, h_seed(count, run, 9, 9)) < 0, "bcast of %zu B, run %d", bytes, run);
        mem_free(&x);
        mem_free(&y);
        /* alltoall: block p of rank r's send buffer goes to block r of rank p's */
        struct mem s = mem_new(kind, all, run), r = mem_new(kind, all, run + 2);
        for (int p = 0; p < h_size; p++)
            h_fill((char *)s.p + p * block, block, h_seed(run, h_rank, p, 3));
        memset(r.p, 0, all);
        void *a2[2] = { s.p, r.p };
        size_t m2[2] = { all, all };
        CHECK_OK(GOAL_Wait(run_with(aa, a2, m2, 2)));
        for (int p = 0; p < h_size; p++)
            CHECKM(h_pattern_mismatch((char *)r.p + p * block, block, h_seed(run, p, h_rank, 3)) < 0, "alltoall run %d: block from %d", run, p);
        mem_free(&s);
        mem_free(&r);
    }
    h_free_schedule(ar);
    h_free_schedule(ip);
    h_free_schedule(bc);
    h_free_schedule(aa);
}

/* An allreduce appended to a graph with its buffers at run, then a copy of
 * its result into `out`, an address bound at build time. */
static void appended(void)
{
    enum { COUNT = 5 };
    int64_t out[COUNT];
    GOAL_Graph g = h_graph();
    GOAL_Vertex entry;
    GOAL_Vertex done = V(GOAL_Allreduce_append(g, GOAL_BUF_AT_RUN(0), GOAL_BUF_AT_RUN(1), COUNT, GOAL_SINT, 64, GOAL_MAX, GOAL_ALG_AUTO, &entry));
    GOAL_Vertex copy = V(GOAL_LocalOp(g, (void *)0, (void *)0, out, GOAL_COPY, GOAL_SINT, 64, COUNT, GOAL_RUNBUF(1), GOAL_RUNBUF(1), GOAL_USERSPACE));
    REQ(g, done, copy);
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < 4; run++) {
        int64_t in[COUNT], res[COUNT];
        for (int i = 0; i < COUNT; i++)
            in[i] = (int64_t)((h_rank * 7 + i * 3 + run) % 11) - 5;
        memset(out, 0, sizeof out);
        void *b[2] = { in, res };
        size_t n[2] = { sizeof in, sizeof res };
        CHECK_OK(GOAL_Wait(run_with(s, b, n, 2)));
        for (int i = 0; i < COUNT; i++) {
            int64_t want = INT64_MIN;
            for (int p = 0; p < h_size; p++) {
                int64_t v = (int64_t)((p * 7 + i * 3 + run) % 11) - 5;
                want = v > want ? v : want;
            }
            CHECKM(res[i] == want && out[i] == want, "appended allreduce, run %d, element %d: %lld and %lld, not %lld", run, i,
                   (long long)res[i], (long long)out[i], (long long)want);
        }
    }
    h_free_schedule(s);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    ring_runs(8, 12);
    ring_runs(64 * 1024, 8);
    ring_runs(1024 * 1024, 6);
    in_flight(8);
    in_flight(200 * 1024);
    errors();
    collectives(3, 6);
    collectives(20000, 4);
    appended();
    if (h_rank == 0)
        printf("t_runbuf: ok (%d ranks)\n", h_size);
    return h_finish();
}
