/*
 * t_coll: the collectives of the C API (contract, section Collectives), as a
 * user program sees them.
 *
 *   - every GOAL_Xxx_init, with every algorithm that applies to it and
 *     GOAL_ALG_AUTO, at a few sizes (1 byte or element, an odd size, 64 KiB),
 *     roots first/last/middle, in place and not: the data is checked on every
 *     rank, and each schedule is run three times with new data;
 *   - reductions of several types and operators (integers wrap; floats take
 *     values whose sums and products are exact in any order);
 *   - errors: an algorithm that does not apply (NULL, and GOAL_LastError()
 *     names the algorithm and the collective), an algorithm number that does
 *     not exist, a bad root (-1 and GroupSize: the message names the root),
 *     a negative count, GOAL_SUB / GOAL_DIV / GOAL_COPY refused for
 *     reductions, XOR on floats; a failed _init leaves nothing behind (the
 *     next schedule still matches across ranks);
 *   - _append: an allreduce whose result a user LocalOp scales on the root,
 *     then a bcast of that, then a user LocalOp after both, chained with
 *     GOAL_Requires on the returned done/entry vertices, next to user
 *     point-to-point messages in the same graph; a failed _append returns
 *     GOAL_INVALID_VERTEX and leaves the graph usable;
 *   - several collective schedules in flight at once (Run all, then Wait all).
 */
// memcheck: 2
// ranks: 1 2 3 4 5 7
// modes: 3 4
#include "helpers.h"

#include <math.h>

static const char *alg_name(int a)
{
    static const char *n[] = {"AUTO", "LINEAR", "LINEAR_SYNC", "BINOMIAL", "RECURSIVE_DOUBLING",
                              "BRUCK", "RING", "PIPELINE", "RABENSEIFNER"};
    return a >= 0 && a <= 8 ? n[a] : "?";
}

/* The algorithms of each collective (besides AUTO), -1 terminated. */
static const int ALG_BARRIER[] = {GOAL_ALG_LINEAR, GOAL_ALG_RECURSIVE_DOUBLING, GOAL_ALG_BRUCK, -1};
static const int ALG_BCAST[] = {GOAL_ALG_LINEAR, GOAL_ALG_BINOMIAL, GOAL_ALG_RING, GOAL_ALG_PIPELINE, -1};
static const int ALG_GATHER[] = {GOAL_ALG_LINEAR, GOAL_ALG_LINEAR_SYNC, GOAL_ALG_BINOMIAL, -1};
static const int ALG_ALLGATHER[] = {GOAL_ALG_RECURSIVE_DOUBLING, GOAL_ALG_BRUCK, GOAL_ALG_RING, -1};
static const int ALG_ALLTOALL[] = {GOAL_ALG_LINEAR, GOAL_ALG_LINEAR_SYNC, GOAL_ALG_BRUCK, -1};
static const int ALG_REDUCE[] = {GOAL_ALG_LINEAR, GOAL_ALG_BINOMIAL, GOAL_ALG_RABENSEIFNER, -1};
static const int ALG_ALLREDUCE[] = {GOAL_ALG_RECURSIVE_DOUBLING, GOAL_ALG_RING, GOAL_ALG_RABENSEIFNER, -1};
static const int ALG_RSB[] = {GOAL_ALG_LINEAR, GOAL_ALG_RECURSIVE_DOUBLING, GOAL_ALG_RING, -1};

/* algs[] with AUTO in front, into out (at most 10). */
static int with_auto(const int *algs, int *out)
{
    int n = 0;
    out[n++] = GOAL_ALG_AUTO;
    for (; *algs >= 0; algs++)
        out[n++] = *algs;
    return n;
}

static int contains(const int *algs, int a)
{
    for (; *algs >= 0; algs++)
        if (*algs == a)
            return 1;
    return 0;
}

static int nroots(int p, int *r)
{
    int n = 0, c[3] = {0, p - 1, p / 2};
    for (int i = 0; i < 3; i++) {
        int dup = 0;
        for (int j = 0; j < n; j++)
            dup |= r[j] == c[i];
        if (!dup)
            r[n++] = c[i];
    }
    return n;
}

#define SCHED_OK(s, ...)                                                              \
    do {                                                                              \
        if (!(s)) {                                                                   \
            char w_[256];                                                             \
            snprintf(w_, sizeof w_, __VA_ARGS__);                                     \
            h_fail_(__FILE__, __LINE__, #s, "%s: returned NULL", w_);                 \
        }                                                                             \
    } while (0)

static uint64_t g_case; /* same sequence on every rank */

/* ------------------------------------------------------------ data colls */

static void check_bcast(size_t n)
{
    int roots[3], nr = nroots(h_size, roots), algs[10], na = with_auto(ALG_BCAST, algs);
    char *buf = malloc(n + 1);
    for (int ri = 0; ri < nr; ri++)
        for (int ai = 0; ai < na; ai++) {
            int root = roots[ri], a = algs[ai];
            GOAL_Schedule s = GOAL_Bcast_init(buf, n, root, a);
            SCHED_OK(s, "GOAL_Bcast_init(%zu B, root %d, %s)", n, root, alg_name(a));
            for (int it = 0; it < 3; it++) {
                uint64_t seed = h_seed(++g_case, root, 1, 0);
                h_fill(buf, n + 1, h_rank == root ? seed : seed ^ 99);
                h_run(s);
                CHECK_PATTERN(buf, n, seed, "bcast %s %zu B root %d run %d", alg_name(a), n, root, it);
                CHECKM(buf[n] == (char)h_pat(h_rank == root ? seed : seed ^ 99, n), "bcast wrote past the buffer");
            }
            h_free_schedule(s);
        }
    free(buf);
}

static void check_gather_scatter(size_t n)
{
    int roots[3], nr = nroots(h_size, roots), algs[10], na = with_auto(ALG_GATHER, algs);
    size_t all = n * (size_t)h_size;
    char *sb = malloc(all + 1), *rb = malloc(all + 1);
    for (int ri = 0; ri < nr; ri++)
        for (int ai = 0; ai < na; ai++)
            for (int ip = 0; ip < 2; ip++) {
                int root = roots[ri], a = algs[ai], inplace = ip && h_rank == root;
                /* gather */
                GOAL_Schedule s = GOAL_Gather_init(inplace ? rb : sb, n, rb, root, a);
                SCHED_OK(s, "GOAL_Gather_init(%zu B, root %d, %s, in place %d)", n, root, alg_name(a), ip);
                for (int it = 0; it < 3; it++) {
                    uint64_t c = ++g_case;
                    h_fill(sb, n, h_seed(c, h_rank, 2, 0));
                    h_fill(rb, all + 1, h_seed(c, 1000 + h_rank, 2, 0));
                    if (inplace)
                        memcpy(rb + (size_t)h_rank * n, sb, n);
                    h_run(s);
                    if (h_rank == root) {
                        for (int q = 0; q < h_size; q++)
                            CHECK_PATTERN(rb + (size_t)q * n, n, h_seed(c, q, 2, 0),
                                          "gather %s %zu B root %d in place %d: block of rank %d", alg_name(a), n, root, ip, q);
                        CHECKM((uint8_t)rb[all] == h_pat(h_seed(c, 1000 + h_rank, 2, 0), all), "gather wrote past rbuf");
                    } else {
                        CHECK_PATTERN(rb, all + 1, h_seed(c, 1000 + h_rank, 2, 0), "gather: a non-root's rbuf must stay untouched");
                    }
                }
                h_free_schedule(s);
                /* scatter */
                s = GOAL_Scatter_init(sb, n, inplace ? sb : rb, root, a);
                SCHED_OK(s, "GOAL_Scatter_init(%zu B, root %d, %s, in place %d)", n, root, alg_name(a), ip);
                for (int it = 0; it < 3; it++) {
                    uint64_t c = ++g_case;
                    for (int q = 0; q < h_size; q++)
                        h_fill(sb + (size_t)q * n, n, h_seed(c, h_rank == root ? q : 500 + h_rank, 3, 0));
                    h_fill(rb, n + 1, h_seed(c, 1000 + h_rank, 3, 0));
                    h_run(s);
                    if (!inplace)
                        CHECK_PATTERN(rb, n, h_seed(c, h_rank, 3, 0), "scatter %s %zu B root %d", alg_name(a), n, root);
                    CHECKM((uint8_t)rb[n] == h_pat(h_seed(c, 1000 + h_rank, 3, 0), n), "scatter wrote past rbuf");
                    for (int q = 0; q < h_size; q++)
                        CHECK_PATTERN(sb + (size_t)q * n, n, h_seed(c, h_rank == root ? q : 500 + h_rank, 3, 0),
                                      "scatter %s: sbuf must stay untouched", alg_name(a));
                }
                h_free_schedule(s);
            }
    free(sb);
    free(rb);
}

static void check_allgather_alltoall(size_t n)
{
    int algs[10], na;
    size_t all = n * (size_t)h_size;
    char *sb = malloc(all + 1), *rb = malloc(all + 1);
    na = with_auto(ALG_ALLGATHER, algs);
    for (int ai = 0; ai < na; ai++)
        for (int ip = 0; ip < 2; ip++) {
            int a = algs[ai];
            GOAL_Schedule s = GOAL_Allgather_init(ip ? rb : sb, n, rb, a);
            SCHED_OK(s, "GOAL_Allgather_init(%zu B, %s, in place %d)", n, alg_name(a), ip);
            for (int it = 0; it < 3; it++) {
                uint64_t c = ++g_case;
                h_fill(sb, n, h_seed(c, h_rank, 4, 0));
                h_fill(rb, all + 1, h_seed(c, 1000 + h_rank, 4, 0));
                if (ip)
                    memcpy(rb + (size_t)h_rank * n, sb, n);
                h_run(s);
                for (int q = 0; q < h_size; q++)
                    CHECK_PATTERN(rb + (size_t)q * n, n, h_seed(c, q, 4, 0), "allgather %s %zu B in place %d: block %d",
                                  alg_name(a), n, ip, q);
                CHECKM((uint8_t)rb[all] == h_pat(h_seed(c, 1000 + h_rank, 4, 0), all), "allgather wrote past rbuf");
            }
            h_free_schedule(s);
        }
    na = with_auto(ALG_ALLTOALL, algs);
    for (int ai = 0; ai < na; ai++)
        for (int ip = 0; ip < 2; ip++) {
            int a = algs[ai];
            GOAL_Schedule s = GOAL_Alltoall_init(ip ? rb : sb, n, rb, a);
            SCHED_OK(s, "GOAL_Alltoall_init(%zu B, %s, in place %d)", n, alg_name(a), ip);
            for (int it = 0; it < 3; it++) {
                uint64_t c = ++g_case;
                char *src = ip ? rb : sb;
                h_fill(rb, all + 1, h_seed(c, 1000 + h_rank, 5, 0));
                for (int q = 0; q < h_size; q++)
                    h_fill(src + (size_t)q * n, n, h_seed(c, h_rank, 5, q));
                h_run(s);
                for (int q = 0; q < h_size; q++)
                    CHECK_PATTERN(rb + (size_t)q * n, n, h_seed(c, q, 5, h_rank), "alltoall %s %zu B in place %d: block from %d",
                                  alg_name(a), n, ip, q);
                CHECKM((uint8_t)rb[all] == h_pat(h_seed(c, 1000 + h_rank, 5, 0), all), "alltoall wrote past rbuf");
            }
            h_free_schedule(s);
        }
    free(sb);
    free(rb);
}

/* ------------------------------------------------------------ reductions */

/* A reduction checked here: C type, GOAL type, width, op. */
enum { T_I32_ADD, T_I64_MAX, T_U8_XOR, T_U16_MUL, T_F64_ADD, T_F32_MUL, T_I8_MIN, N_T };
static const struct {
    const char *name;
    int dt, width, op;
} T[N_T] = {
    {"SINT32 ADD", GOAL_SINT, 32, GOAL_ADD},  {"SINT64 MAX", GOAL_SINT, 64, GOAL_MAX},
    {"UINT8 XOR", GOAL_UINT, 8, GOAL_XOR},    {"UINT16 MUL", GOAL_UINT, 16, GOAL_MUL},
    {"FLOAT64 ADD", GOAL_FLOAT, 64, GOAL_ADD}, {"FLOAT32 MUL", GOAL_FLOAT, 32, GOAL_MUL},
    {"SINT8 MIN", GOAL_SINT, 8, GOAL_MIN},
};

/* Element i of rank r's input, written at p. */
static void elem(int t, uint64_t seed, int r, size_t i, void *p)
{
    uint64_t h = h_mix(h_seed(seed, r, i, 7));
    switch (t) {
    case T_I32_ADD: { int32_t v = (int32_t)h; memcpy(p, &v, 4); break; }
    case T_I64_MAX: { int64_t v = (int64_t)h; memcpy(p, &v, 8); break; }
    case T_U8_XOR: { uint8_t v = (uint8_t)h; memcpy(p, &v, 1); break; }
    case T_U16_MUL: { uint16_t v = (uint16_t)h; memcpy(p, &v, 2); break; }
    case T_F64_ADD: { double v = ((double)(h % 257) - 128.0) * 0.25; memcpy(p, &v, 8); break; }
    case T_F32_MUL: { static const float m[4] = {0.5f, 1.0f, 1.5f, 2.0f};
                      float v = m[h % 4] * ((h & 8) ? -1.0f : 1.0f); memcpy(p, &v, 4); break; }
    case T_I8_MIN: { int8_t v = (int8_t)h; memcpy(p, &v, 1); break; }
    }
}

/* acc = acc op x (one element). */
static void combine(int t, void *acc, const void *x)
{
    switch (t) {
    case T_I32_ADD: { uint32_t a, b; memcpy(&a, acc, 4); memcpy(&b, x, 4); a += b; memcpy(acc, &a, 4); break; }
    case T_I64_MAX: { int64_t a, b; memcpy(&a, acc, 8); memcpy(&b, x, 8); if (b > a) memcpy(acc, &b, 8); break; }
    case T_U8_XOR: *(uint8_t *)acc ^= *(const uint8_t *)x; break;
    case T_U16_MUL: { uint16_t a, b; memcpy(&a, acc, 2); memcpy(&b, x, 2); a = (uint16_t)(a * b); memcpy(acc, &a, 2); break; }
    case T_F64_ADD: { double a, b; memcpy(&a, acc, 8); memcpy(&b, x, 8); a += b; memcpy(acc, &a, 8); break; }
    case T_F32_MUL: { float a, b; memcpy(&a, acc, 4); memcpy(&b, x, 4); a *= b; memcpy(acc, &a, 4); break; }
    case T_I8_MIN: { int8_t a, b; memcpy(&a, acc, 1); memcpy(&b, x, 1); if (b < a) memcpy(acc, &b, 1); break; }
    }
}

static void fill_input(int t, uint64_t seed, int r, size_t count, char *p)
{
    size_t e = (size_t)T[t].width / 8;
    for (size_t i = 0; i < count; i++)
        elem(t, seed, r, i, p + i * e);
}

static void expected(int t, uint64_t seed, size_t count, char *out)
{
    size_t e = (size_t)T[t].width / 8;
    char x[8];
    fill_input(t, seed, 0, count, out);
    for (int r = 1; r < h_size; r++)
        for (size_t i = 0; i < count; i++) {
            elem(t, seed, r, i, x);
            combine(t, out + i * e, x);
        }
}

enum { C_REDUCE, C_ALLREDUCE, C_RSB };

static void check_reduction(int which, size_t count)
{
    int roots[3], nr = which == C_REDUCE ? nroots(h_size, roots) : 1, algs[10];
    int na = with_auto(which == C_REDUCE ? ALG_REDUCE : which == C_ALLREDUCE ? ALG_ALLREDUCE : ALG_RSB, algs);
    const char *cname = which == C_REDUCE ? "reduce" : which == C_ALLREDUCE ? "allreduce" : "reduce_scatter_block";
    size_t total = which == C_RSB ? count * (size_t)h_size : count;
    char *sb = malloc(total * 8 + 8), *rb = malloc(total * 8 + 8), *want = malloc(total * 8 + 8);
    if (which != C_REDUCE)
        roots[0] = 0;
    for (int t = 0; t < N_T; t++)
        for (int ri = 0; ri < nr; ri++)
            for (int ai = 0; ai < na; ai++)
                for (int ip = 0; ip < 2; ip++) {
                    int root = roots[ri], a = algs[ai], e = T[t].width / 8;
                    int inplace = ip && (which != C_REDUCE || h_rank == root);
                    char *s_arg = inplace ? rb : sb;
                    GOAL_Schedule s;
                    if (which == C_REDUCE)
                        s = GOAL_Reduce_init(s_arg, rb, (int)count, T[t].dt, T[t].width, T[t].op, root, a);
                    else if (which == C_ALLREDUCE)
                        s = GOAL_Allreduce_init(s_arg, rb, (int)count, T[t].dt, T[t].width, T[t].op, a);
                    else
                        s = GOAL_Reduce_scatter_block_init(s_arg, rb, (int)count, T[t].dt, T[t].width, T[t].op, a);
                    SCHED_OK(s, "%s_init(%s, count %zu, root %d, %s, in place %d)", cname, T[t].name, count, root, alg_name(a), ip);
                    for (int it = 0; it < 2; it++) {
                        uint64_t seed = h_seed(++g_case, t, 6, 0);
                        size_t rlen = (inplace || which != C_RSB ? total : count) * (size_t)e;
                        h_fill(rb, rlen + 8, seed ^ 1234);
                        fill_input(t, seed, h_rank, total, inplace ? rb : sb);
                        h_run(s);
                        expected(t, seed, total, want);
                        if (which == C_REDUCE && h_rank != root) {
                            CHECK_PATTERN(rb, rlen + 8, seed ^ 1234, "%s %s: a non-root's rbuf must stay untouched", cname, T[t].name);
                            continue;
                        }
                        const char *w = which == C_RSB ? want + (size_t)h_rank * count * (size_t)e : want;
                        CHECK_MEM(rb, w, count * (size_t)e, "%s %s %s count %zu root %d in place %d run %d", cname, T[t].name,
                                  alg_name(a), count, root, ip, it);
                        CHECKM((uint8_t)rb[rlen] == h_pat(seed ^ 1234, rlen), "%s wrote past rbuf", cname);
                    }
                    h_free_schedule(s);
                }
    free(sb);
    free(rb);
    free(want);
}

/* ---------------------------------------------------------------- errors */

/* The call returned NULL and GOAL_LastError() holds every one of the words. */
static void expect_refused(const void *s, const char *call, const char *w1, const char *w2)
{
    CHECKM(s == NULL, "%s: succeeded, expected a refusal", call);
    const char *e = GOAL_LastError();
    CHECKM(e && *e, "%s: refused without a message", call);
    CHECKM(h_contains_ci(e, w1), "%s: message \"%s\" does not mention \"%s\"", call, e, w1);
    CHECKM(!w2 || h_contains_ci(e, w2), "%s: message \"%s\" does not mention \"%s\"", call, e, w2);
    if (h_rank == 0)
        printf("  refused as expected: %s\n", e);
}

static void check_errors(void)
{
    char b[64] = {0}, r[64 * 8] = {0};
    /* every algorithm that does not apply, for every collective */
    for (int a = 1; a <= 8; a++) {
        char name[64];
        snprintf(name, sizeof name, "GOAL_ALG_%s", alg_name(a));
        if (!contains(ALG_BARRIER, a))
            expect_refused(GOAL_Barrier_init(a), "GOAL_Barrier_init", name, "barrier");
        if (!contains(ALG_BCAST, a))
            expect_refused(GOAL_Bcast_init(b, 8, 0, a), "GOAL_Bcast_init", name, "bcast");
        if (!contains(ALG_GATHER, a)) {
            expect_refused(GOAL_Gather_init(b, 8, r, 0, a), "GOAL_Gather_init", name, "gather");
            expect_refused(GOAL_Scatter_init(r, 8, b, 0, a), "GOAL_Scatter_init", name, "scatter");
        }
        if (!contains(ALG_ALLGATHER, a))
            expect_refused(GOAL_Allgather_init(b, 8, r, a), "GOAL_Allgather_init", name, "allgather");
        if (!contains(ALG_ALLTOALL, a))
            expect_refused(GOAL_Alltoall_init(b, 8, r, a), "GOAL_Alltoall_init", name, "alltoall");
        if (!contains(ALG_REDUCE, a))
            expect_refused(GOAL_Reduce_init(b, r, 2, GOAL_SINT, 32, GOAL_ADD, 0, a), "GOAL_Reduce_init", name, "reduce");
        if (!contains(ALG_ALLREDUCE, a))
            expect_refused(GOAL_Allreduce_init(b, r, 2, GOAL_SINT, 32, GOAL_ADD, a), "GOAL_Allreduce_init", name, "allreduce");
        if (!contains(ALG_RSB, a))
            expect_refused(GOAL_Reduce_scatter_block_init(b, r, 2, GOAL_SINT, 32, GOAL_ADD, a), "GOAL_Reduce_scatter_block_init",
                           name, "reduce_scatter_block");
    }
    /* an algorithm number that does not exist */
    expect_refused(GOAL_Barrier_init(9), "GOAL_Barrier_init(9)", "algorithm 9", NULL);
    expect_refused(GOAL_Allreduce_init(b, r, 2, GOAL_SINT, 32, GOAL_ADD, -1), "GOAL_Allreduce_init(alg -1)", "algorithm -1", NULL);
    /* bad roots */
    char root_s[32];
    snprintf(root_s, sizeof root_s, "root %d", h_size);
    expect_refused(GOAL_Bcast_init(b, 8, h_size, GOAL_ALG_AUTO), "GOAL_Bcast_init(root = size)", root_s, "outside");
    expect_refused(GOAL_Bcast_init(b, 8, -1, GOAL_ALG_BINOMIAL), "GOAL_Bcast_init(root -1)", "root -1", "outside");
    expect_refused(GOAL_Gather_init(b, 8, r, h_size, GOAL_ALG_LINEAR), "GOAL_Gather_init(root = size)", root_s, NULL);
    expect_refused(GOAL_Scatter_init(r, 8, b, -1, GOAL_ALG_AUTO), "GOAL_Scatter_init(root -1)", "root -1", NULL);
    expect_refused(GOAL_Reduce_init(b, r, 2, GOAL_SINT, 32, GOAL_ADD, h_size + 5, GOAL_ALG_AUTO), "GOAL_Reduce_init(bad root)",
                   "root", "outside");
    /* larger than a message can hold (4 GiB - 1) */
    expect_refused(GOAL_Bcast_init(b, (size_t)1 << 33, 0, GOAL_ALG_AUTO), "GOAL_Bcast_init(8 GiB)", "4 GiB", NULL);
    /* bad counts */
    expect_refused(GOAL_Allreduce_init(b, r, -1, GOAL_SINT, 32, GOAL_ADD, GOAL_ALG_AUTO), "GOAL_Allreduce_init(count -1)", "count -1", NULL);
    expect_refused(GOAL_Reduce_init(b, r, -5, GOAL_UINT, 8, GOAL_MAX, 0, GOAL_ALG_AUTO), "GOAL_Reduce_init(count -5)", "count -5", NULL);
    expect_refused(GOAL_Reduce_scatter_block_init(b, r, -2, GOAL_SINT, 32, GOAL_ADD, GOAL_ALG_AUTO), "GOAL_Reduce_scatter_block_init(count -2)",
                   "count -2", NULL);
    /* operators that do not reduce, a type/op/width that does not exist */
    expect_refused(GOAL_Allreduce_init(b, r, 2, GOAL_SINT, 32, GOAL_SUB, GOAL_ALG_AUTO), "GOAL_Allreduce_init(SUB)", "GOAL_SUB", NULL);
    expect_refused(GOAL_Reduce_init(b, r, 2, GOAL_FLOAT, 64, GOAL_SUB, 0, GOAL_ALG_AUTO), "GOAL_Reduce_init(SUB)", "GOAL_SUB", NULL);
    expect_refused(GOAL_Reduce_scatter_block_init(b, r, 2, GOAL_SINT, 32, GOAL_SUB, GOAL_ALG_AUTO), "GOAL_Reduce_scatter_block_init(SUB)",
                   "GOAL_SUB", NULL);
    expect_refused(GOAL_Allreduce_init(b, r, 2, GOAL_FLOAT, 64, GOAL_DIV, GOAL_ALG_AUTO), "GOAL_Allreduce_init(DIV)", "GOAL_DIV", NULL);
    expect_refused(GOAL_Allreduce_init(b, r, 2, GOAL_UINT, 8, GOAL_COPY, GOAL_ALG_AUTO), "GOAL_Allreduce_init(COPY)", "GOAL_COPY", NULL);
    expect_refused(GOAL_Allreduce_init(b, r, 2, GOAL_FLOAT, 32, GOAL_XOR, GOAL_ALG_AUTO), "GOAL_Allreduce_init(XOR on floats)", "XOR", NULL);
    expect_refused(GOAL_Allreduce_init(b, r, 2, GOAL_SINT, 12, GOAL_ADD, GOAL_ALG_AUTO), "GOAL_Allreduce_init(width 12)", "12", NULL);
    expect_refused(GOAL_Allreduce_init(b, r, 2, 7, 32, GOAL_ADD, GOAL_ALG_AUTO), "GOAL_Allreduce_init(type 7)", "7", NULL);

    /* None of these compiled a schedule: the next one still matches everywhere. */
    int64_t v = h_rank + 1, sum = -1;
    GOAL_Schedule s = GOAL_Allreduce_init(&v, &sum, 1, GOAL_SINT, 64, GOAL_ADD, GOAL_ALG_AUTO);
    SCHED_OK(s, "GOAL_Allreduce_init after refusals");
    h_run(s);
    CHECK_EQ(sum, (int64_t)h_size * (h_size + 1) / 2);
    h_free_schedule(s);

    /* _append refusals return GOAL_INVALID_VERTEX and leave the graph usable */
    GOAL_Graph g = h_graph();
    GOAL_Vertex entry = 12345;
    CHECK_EQ(GOAL_Bcast_append(g, b, 8, h_size, GOAL_ALG_AUTO, &entry), GOAL_INVALID_VERTEX);
    CHECKM(h_contains_ci(GOAL_LastError(), "root"), "GOAL_Bcast_append(bad root): \"%s\"", GOAL_LastError());
    CHECK_EQ(GOAL_Barrier_append(g, GOAL_ALG_RING, &entry), GOAL_INVALID_VERTEX);
    CHECKM(h_contains_ci(GOAL_LastError(), "GOAL_ALG_RING"), "GOAL_Barrier_append(RING): \"%s\"", GOAL_LastError());
    CHECK_EQ(GOAL_Allreduce_append(g, &v, &sum, 1, GOAL_SINT, 64, GOAL_SUB, GOAL_ALG_AUTO, NULL), GOAL_INVALID_VERTEX);
    CHECK_EQ(GOAL_Allreduce_append(NULL, &v, &sum, 1, GOAL_SINT, 64, GOAL_ADD, GOAL_ALG_AUTO, NULL), GOAL_INVALID_VERTEX);
    sum = -1;
    V(GOAL_Allreduce_append(g, &v, &sum, 1, GOAL_SINT, 64, GOAL_ADD, GOAL_ALG_AUTO, NULL));
    s = h_compile(g);
    h_run(s);
    CHECK_EQ(sum, (int64_t)h_size * (h_size + 1) / 2);
    h_free_schedule(s);
}

/* ---------------------------------------------------------- composition */

/* y = allreduce(x); on root: z = 3 * y (user op); bcast z from root; then
 * w = z + y on every rank (user op after both). Plus a user ring exchange
 * with tag 0 in the same graph. Every allreduce x bcast algorithm. */
static void check_append(void)
{
    enum { N = 999 };
    int64_t *x = malloc(N * 8), *y = malloc(N * 8), *z = malloc(N * 8), *w = malloc(N * 8), *three = malloc(N * 8);
    int64_t ring_out, ring_in;
    int ar_algs[10], bc_algs[10], nar = with_auto(ALG_ALLREDUCE, ar_algs), nbc = with_auto(ALG_BCAST, bc_algs);
    int root = h_size - 1;
    for (int i = 0; i < N; i++)
        three[i] = 3;
    for (int ai = 0; ai < nar; ai++)
        for (int bi = 0; bi < nbc; bi++) {
            GOAL_Graph g = h_graph();
            GOAL_Vertex ar_entry = -7, bc_entry = -7;
            GOAL_Vertex ar = V(GOAL_Allreduce_append(g, x, y, N, GOAL_SINT, 64, GOAL_ADD, ar_algs[ai], &ar_entry));
            GOAL_Vertex bc = V(GOAL_Bcast_append(g, z, N * 8, root, bc_algs[bi], &bc_entry));
            CHECKM(ar_entry >= 0 && bc_entry >= 0, "_append did not write the entry vertex");
            if (h_rank == root) {
                GOAL_Vertex u = V(GOAL_LocalOp(g, y, three, z, GOAL_MUL, GOAL_SINT, 64, N, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
                REQ(g, ar, u);
                REQ(g, u, bc_entry);
            }
            GOAL_Vertex last = V(GOAL_LocalOp(g, z, y, w, GOAL_ADD, GOAL_SINT, 64, N, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
            REQ(g, ar, last);
            REQ(g, bc, last);
            /* user messages with tag 0 in the same graph, before the allreduce starts */
            GOAL_Vertex rs = V(GOAL_Send(g, &ring_out, 8, (h_rank + 1) % h_size, 0, GOAL_USERSPACE));
            GOAL_Vertex rr = V(GOAL_Recv(g, &ring_in, 8, (h_rank + h_size - 1) % h_size, 0, GOAL_USERSPACE));
            REQ(g, rr, ar_entry);
            (void)rs;
            GOAL_Schedule s = h_compile(g);
            for (int it = 0; it < 3; it++) {
                uint64_t c = ++g_case;
                for (int i = 0; i < N; i++)
                    x[i] = (int64_t)h_seed(c, h_rank, i, 0);
                memset(y, 0, N * 8);
                memset(z, 0, N * 8);
                memset(w, 0, N * 8);
                ring_out = (int64_t)h_seed(c, h_rank, 0, 1);
                h_run(s);
                CHECK_EQ(ring_in, (int64_t)h_seed(c, (h_rank + h_size - 1) % h_size, 0, 1));
                for (int i = 0; i < N; i++) {
                    uint64_t sum = 0;
                    for (int q = 0; q < h_size; q++)
                        sum += h_seed(c, q, i, 0);
                    CHECKM(y[i] == (int64_t)sum, "append: allreduce %s element %d", alg_name(ar_algs[ai]), i);
                    CHECKM(z[i] == (int64_t)(sum * 3), "append: bcast %s of the user op's result, element %d", alg_name(bc_algs[bi]), i);
                    CHECKM(w[i] == (int64_t)(sum * 4), "append: user op after both, element %d", i);
                }
            }
            h_free_schedule(s);
        }
    free(x);
    free(y);
    free(z);
    free(w);
    free(three);
}

/* ------------------------------------------------------------ in flight */

static void check_in_flight(void)
{
    enum { N = 5000 };
    size_t p = (size_t)h_size;
    char *bc = malloc(N), *gs = malloc(N), *gr = malloc(N * p), *as = malloc(N * p), *arv = malloc(N * p);
    double *xs = malloc(N * sizeof(double)), *xr = malloc(N * sizeof(double));
    GOAL_Schedule s[5] = {
        GOAL_Barrier_init(GOAL_ALG_AUTO),
        GOAL_Bcast_init(bc, N, 0, GOAL_ALG_AUTO),
        GOAL_Gather_init(gs, N, gr, h_size / 2, GOAL_ALG_AUTO),
        GOAL_Alltoall_init(as, N, arv, GOAL_ALG_AUTO),
        GOAL_Allreduce_init(xs, xr, N, GOAL_FLOAT, 64, GOAL_ADD, GOAL_ALG_AUTO),
    };
    for (int k = 0; k < 5; k++)
        SCHED_OK(s[k], "collective %d of check_in_flight", k);
    for (int round = 0; round < 10; round++) {
        uint64_t c = ++g_case;
        h_fill(bc, N, h_rank == 0 ? h_seed(c, 0, 8, 0) : 1);
        h_fill(gs, N, h_seed(c, h_rank, 8, 1));
        for (size_t q = 0; q < p; q++)
            h_fill(as + q * N, N, h_seed(c, h_rank, 8, 2 + q));
        for (int i = 0; i < N; i++)
            xs[i] = (double)((h_seed(c, h_rank, i, 3) % 1000)) - 500.0;
        GOAL_Handle h[5];
        for (int k = 0; k < 5; k++) {
            h[k] = GOAL_Run(s[k]);
            CHECKM(h[k] != NULL, "GOAL_Run of collective %d", k);
        }
        for (int k = 4; k >= 0; k--)
            CHECK_OK(GOAL_Wait(h[(k + round) % 5]));
        CHECK_PATTERN(bc, N, h_seed(c, 0, 8, 0), "bcast in flight, round %d", round);
        if (h_rank == h_size / 2)
            for (size_t q = 0; q < p; q++)
                CHECK_PATTERN(gr + q * N, N, h_seed(c, q, 8, 1), "gather in flight, round %d, block %zu", round, q);
        for (size_t q = 0; q < p; q++)
            CHECK_PATTERN(arv + q * N, N, h_seed(c, q, 8, 2 + h_rank), "alltoall in flight, round %d, block %zu", round, q);
        for (int i = 0; i < N; i++) {
            double e = 0;
            for (int q = 0; q < h_size; q++)
                e += (double)((h_seed(c, q, i, 3) % 1000)) - 500.0;
            CHECKM(xr[i] == e, "allreduce in flight, round %d, element %d: %g != %g", round, i, xr[i], e);
        }
    }
    for (int k = 0; k < 5; k++)
        h_free_schedule(s[k]);
    free(bc); free(gs); free(gr); free(as); free(arv); free(xs); free(xr);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    /* barrier: every algorithm, a hundred runs each */
    int algs[10], na = with_auto(ALG_BARRIER, algs);
    for (int ai = 0; ai < na; ai++) {
        GOAL_Schedule s = GOAL_Barrier_init(algs[ai]);
        SCHED_OK(s, "GOAL_Barrier_init(%s)", alg_name(algs[ai]));
        for (int it = 0; it < 100; it++)
            h_run(s);
        h_free_schedule(s);
    }
    static const size_t sizes[] = {1, 1001, 65536};
    for (int i = 0; i < 3; i++) {
        check_bcast(sizes[i]);
        check_gather_scatter(sizes[i]);
        check_allgather_alltoall(sizes[i]);
    }
    static const size_t counts[] = {1, 7, 1001};
    for (int i = 0; i < 3; i++) {
        check_reduction(C_REDUCE, counts[i]);
        check_reduction(C_ALLREDUCE, counts[i]);
        check_reduction(C_RSB, counts[i]);
    }
    check_errors();
    check_append();
    check_in_flight();
    if (h_rank == 0)
        printf("t_coll: %d ranks ok (%llu cases)\n", h_size, (unsigned long long)g_case);
    h_sync(); /* nobody finalizes while a peer still reads its buffers */
    return h_finish();
}
