/*
 * t_vcoll: the collectives with per-rank counts and displacements
 * (GOAL_Gatherv, _Scatterv, _Allgatherv, _Alltoallv, _Reduce_scatter), as a
 * user program sees them.
 *
 *   - every algorithm of each and GOAL_ALG_AUTO, with counts that are random
 *     with about a third zero, all on one rank (the others zero), or equal,
 *     up to 1 B, 1000 B and 70000 B per block; displacements that put the
 *     blocks in reverse rank order with gaps; roots first/last/middle; in
 *     place and not; gatherv/scatterv also as MPI calls them (counts at the
 *     root only, GOAL_ALG_LINEAR);
 *   - every byte of every receive buffer is checked, gaps included (they must
 *     keep their sentinel), and each schedule runs twice with new data;
 *   - reduce_scatter of int32 and of integer-valued doubles (ADD, exact in
 *     any order) and int32 MAX;
 *   - errors, each naming what is wrong: a NULL array, an entry that is
 *     negative as a signed number, a block past 4 GiB, overlapping receive
 *     blocks, the binomial tree without counts on a non-root, an algorithm
 *     that does not apply;
 *   - _append: an allgatherv and a reduce_scatter chained in one graph.
 */
// memcheck: 2
// ranks: 1 2 3 4 7
// modes: 3
#include "helpers.h"

#define SENTINEL 0xEE

enum { RANDOM, ONE_HOLDS_ALL, EQUAL, PATTERNS };
static const char *pattern_name[] = {"random", "one-holds-all", "equal"};

/* Rank i's count (the same on every rank) in pattern `pat`, up to `max`. */
static size_t count_of(int pat, uint64_t seed, int i, size_t max)
{
    switch (pat) {
    case RANDOM: {
        uint64_t x = h_mix(seed ^ (uint64_t)i * 0x9e37ULL);
        return x % 3 == 0 ? 0 : (size_t)((x >> 8) % (max + 1));
    }
    case ONE_HOLDS_ALL:
        return i == h_size / 2 ? max : 0;
    default:
        return max;
    }
}

/* Displacements for cnt[]: blocks in reverse rank order with gaps of 0..2
 * bytes; returns the extent. */
static size_t place(const size_t *cnt, size_t *dsp)
{
    size_t pos = 0;
    for (int i = h_size - 1; i >= 0; i--) {
        dsp[i] = pos + (size_t)(i % 3);
        pos = dsp[i] + cnt[i];
    }
    return pos;
}

static size_t sum(const size_t *v)
{
    size_t s = 0;
    for (int i = 0; i < h_size; i++)
        s += v[i];
    return s;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    CHECK(p != NULL);
    return p;
}

/* The whole buffer must equal want (blocks and sentinel gaps). */
static void expect(const char *what, const uint8_t *got, const uint8_t *want, size_t n, const char *ctx)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            FAILF("%s: %s: byte %zu is 0x%02x, expected 0x%02x", ctx, what, i, got[i], want[i]);
}

static const int ALGS_ROOTED[] = {GOAL_ALG_AUTO, GOAL_ALG_LINEAR, GOAL_ALG_BINOMIAL, -1};
static const int ALGS_RING[] = {GOAL_ALG_AUTO, GOAL_ALG_LINEAR, GOAL_ALG_RING, -1};
static const int ALGS_A2A[] = {GOAL_ALG_AUTO, GOAL_ALG_LINEAR, GOAL_ALG_LINEAR_SYNC, -1};

/* ------------------------------------------------------ gatherv, scatterv */

/* `everywhere`: non-roots pass the counts too (else NULL, as MPI does). */
static void rooted(int gather, int alg, int pat, size_t max, int root, int in_place, int everywhere)
{
    int me = h_rank, n = h_size;
    uint64_t seed = h_seed((uint64_t)pat, max, (uint64_t)root, 11);
    size_t *cnt = xmalloc(n * sizeof *cnt), *dsp = xmalloc(n * sizeof *dsp);
    for (int i = 0; i < n; i++)
        cnt[i] = count_of(pat, seed, i, max);
    size_t extent = place(cnt, dsp);
    char ctx[160];
    snprintf(ctx, sizeof ctx, "%s alg %d %s max %zu root %d in_place %d everywhere %d", gather ? "gatherv" : "scatterv", alg,
             pattern_name[pat], max, root, in_place, everywhere);
    uint8_t *big = xmalloc(extent), *small = xmalloc(cnt[me]), *want = xmalloc(extent > cnt[me] ? extent : cnt[me]);
    int at_root = me == root, ip = in_place && at_root;
    const size_t *c = everywhere || at_root ? cnt : NULL, *d = at_root ? dsp : NULL;
    GOAL_Schedule s;
    if (gather)
        s = GOAL_Gatherv_init(ip ? (void *)big : small, cnt[me], big, c, d, root, alg);
    else
        s = GOAL_Scatterv_init(big, c, d, ip ? (void *)big : small, cnt[me], root, alg);
    CHECKM(s != NULL, "%s", ctx);
    for (int round = 0; round < 2; round++) {
        memset(big, SENTINEL, extent);
        memset(small, SENTINEL, cnt[me]);
        if (gather) {
            h_fill(ip ? big + dsp[me] : small, cnt[me], h_seed(seed, (uint64_t)me, (uint64_t)round, 1));
        } else if (at_root) {
            for (int i = 0; i < n; i++)
                h_fill(big + dsp[i], cnt[i], h_seed(seed, (uint64_t)i, (uint64_t)round, 2));
        }
        h_run(s);
        if (gather && at_root) {
            memset(want, SENTINEL, extent);
            for (int i = 0; i < n; i++)
                h_fill(want + dsp[i], cnt[i], h_seed(seed, (uint64_t)i, (uint64_t)round, 1));
            expect("rbuf", big, want, extent, ctx);
        } else if (!gather && !ip) {
            h_fill(want, cnt[me], h_seed(seed, (uint64_t)me, (uint64_t)round, 2));
            expect("rbuf", small, want, cnt[me], ctx);
        }
    }
    h_free_schedule(s);
    free(cnt), free(dsp), free(big), free(small), free(want);
}

/* ------------------------------------------------------------- allgatherv */

static void allgatherv(int alg, int pat, size_t max, int in_place)
{
    int me = h_rank, n = h_size;
    uint64_t seed = h_seed((uint64_t)pat, max, 0, 12);
    size_t *cnt = xmalloc(n * sizeof *cnt), *dsp = xmalloc(n * sizeof *dsp);
    for (int i = 0; i < n; i++)
        cnt[i] = count_of(pat, seed, i, max);
    size_t extent = place(cnt, dsp);
    char ctx[160];
    snprintf(ctx, sizeof ctx, "allgatherv alg %d %s max %zu in_place %d", alg, pattern_name[pat], max, in_place);
    uint8_t *rb = xmalloc(extent), *sb = xmalloc(cnt[me]), *want = xmalloc(extent);
    GOAL_Schedule s = GOAL_Allgatherv_init(in_place ? (void *)rb : sb, cnt[me], rb, cnt, dsp, alg);
    CHECKM(s != NULL, "%s", ctx);
    for (int round = 0; round < 2; round++) {
        memset(rb, SENTINEL, extent);
        h_fill(in_place ? rb + dsp[me] : sb, cnt[me], h_seed(seed, (uint64_t)me, (uint64_t)round, 3));
        h_run(s);
        memset(want, SENTINEL, extent);
        for (int i = 0; i < n; i++)
            h_fill(want + dsp[i], cnt[i], h_seed(seed, (uint64_t)i, (uint64_t)round, 3));
        expect("rbuf", rb, want, extent, ctx);
    }
    h_free_schedule(s);
    free(cnt), free(dsp), free(rb), free(sb), free(want);
}

/* -------------------------------------------------------------- alltoallv */

/* Bytes from rank i to rank j; symmetric for in place (a rank sends the blocks it receives). */
static size_t pair_count(int pat, uint64_t seed, int i, int j, size_t max, int symmetric)
{
    if (symmetric && i > j) {
        int t = i;
        i = j, j = t;
    }
    if (pat == ONE_HOLDS_ALL)
        return i == h_size / 2 || j == h_size / 2 ? max : 0;
    return count_of(pat, seed, i * h_size + j, max);
}

static void alltoallv(int alg, int pat, size_t max, int in_place)
{
    int me = h_rank, n = h_size;
    uint64_t seed = h_seed((uint64_t)pat, max, 0, 13);
    size_t *sc = xmalloc(n * sizeof *sc), *sd = xmalloc(n * sizeof *sd), *rc = xmalloc(n * sizeof *rc), *rd = xmalloc(n * sizeof *rd);
    for (int j = 0; j < n; j++) {
        sc[j] = pair_count(pat, seed, me, j, max, in_place);
        rc[j] = pair_count(pat, seed, j, me, max, in_place);
    }
    size_t sext = place(sc, sd), rext = place(rc, rd);
    /* Send blocks in rank order instead, so the two layouts differ. */
    for (int j = 0, pos = 0; j < n; j++)
        sd[j] = (size_t)pos, pos += (int)sc[j];
    char ctx[160];
    snprintf(ctx, sizeof ctx, "alltoallv alg %d %s max %zu in_place %d", alg, pattern_name[pat], max, in_place);
    uint8_t *sb = xmalloc(sext), *rb = xmalloc(rext), *want = xmalloc(rext);
    GOAL_Schedule s = in_place ? GOAL_Alltoallv_init(rb, NULL, NULL, rb, rc, rd, alg) : GOAL_Alltoallv_init(sb, sc, sd, rb, rc, rd, alg);
    CHECKM(s != NULL, "%s", ctx);
    for (int round = 0; round < 2; round++) {
        memset(rb, SENTINEL, rext);
        for (int j = 0; j < n; j++)
            h_fill(in_place ? rb + rd[j] : sb + sd[j], sc[j], h_seed(seed, (uint64_t)(me * n + j), (uint64_t)round, 4));
        h_run(s);
        memset(want, SENTINEL, rext);
        for (int i = 0; i < n; i++)
            h_fill(want + rd[i], rc[i], h_seed(seed, (uint64_t)(i * n + me), (uint64_t)round, 4));
        expect("rbuf", rb, want, rext, ctx);
    }
    h_free_schedule(s);
    free(sc), free(sd), free(rc), free(rd), free(sb), free(rb), free(want);
}

/* --------------------------------------------------------- reduce_scatter */

/* Element k of rank r's vector: small integers, so every sum is exact. */
static int32_t value(uint64_t seed, int r, size_t k)
{
    return (int32_t)(h_mix(seed ^ (uint64_t)r << 40 ^ k) % 2001) - 1000;
}

static void reduce_scatter(int alg, int pat, size_t max, int in_place, int type)
{
    int me = h_rank, n = h_size;
    uint64_t seed = h_seed((uint64_t)pat, max, (uint64_t)type, 14);
    size_t *cnt = xmalloc(n * sizeof *cnt);
    for (int i = 0; i < n; i++)
        cnt[i] = count_of(pat, seed, i, max / 8);
    size_t total = sum(cnt), first = 0;
    for (int i = 0; i < me; i++)
        first += cnt[i];
    char ctx[160];
    static const char *tname[] = {"int32 ADD", "double ADD", "int32 MAX"};
    snprintf(ctx, sizeof ctx, "reduce_scatter alg %d %s max %zu in_place %d %s", alg, pattern_name[pat], max / 8, in_place, tname[type]);
    size_t esz = type == 1 ? 8 : 4;
    uint8_t *sb = xmalloc(total * esz), *rb = xmalloc((in_place ? total : cnt[me]) * esz), *want = xmalloc(cnt[me] * esz);
    GOAL_DataType dt = type == 1 ? GOAL_FLOAT : GOAL_SINT;
    GOAL_Schedule s = GOAL_Reduce_scatter_init(in_place ? (void *)rb : sb, rb, cnt, dt, (int)esz * 8, type == 2 ? GOAL_MAX : GOAL_ADD, alg);
    CHECKM(s != NULL, "%s", ctx);
    for (int round = 0; round < 2; round++) {
        uint8_t *in = in_place ? rb : sb;
        memset(rb, SENTINEL, (in_place ? total : cnt[me]) * esz);
        for (size_t k = 0; k < total; k++) {
            int32_t v = value(seed + (uint64_t)round, me, k);
            double d = v;
            memcpy(in + k * esz, type == 1 ? (void *)&d : (void *)&v, esz);
        }
        h_run(s);
        for (size_t k = 0; k < cnt[me]; k++) {
            int64_t acc = value(seed + (uint64_t)round, 0, first + k);
            for (int r = 1; r < n; r++) {
                int32_t v = value(seed + (uint64_t)round, r, first + k);
                acc = type == 2 ? (v > acc ? v : acc) : acc + v;
            }
            int32_t i32 = (int32_t)acc;
            double d = (double)acc;
            memcpy(want + k * esz, type == 1 ? (void *)&d : (void *)&i32, esz);
        }
        expect("rbuf", rb, want, cnt[me] * esz, ctx);
    }
    h_free_schedule(s);
    free(cnt), free(sb), free(rb), free(want);
}

/* ----------------------------------------------------------------- errors */

/* The call returned NULL and GOAL_LastError() holds the words. */
static void expect_refused(const void *s, const char *call, const char *w1, const char *w2)
{
    CHECKM(s == NULL, "%s: succeeded, expected a refusal", call);
    const char *e = GOAL_LastError();
    CHECKM(e && h_contains_ci(e, w1), "%s: message \"%s\" does not mention \"%s\"", call, e ? e : "", w1);
    CHECKM(!w2 || h_contains_ci(e, w2), "%s: message \"%s\" does not mention \"%s\"", call, e, w2);
    if (h_rank == 0)
        printf("  refused as expected: %s\n", e);
}

static void check_errors(void)
{
    int n = h_size;
    size_t *cnt = xmalloc(n * sizeof *cnt), *dsp = xmalloc(n * sizeof *dsp);
    char b[64], r[64];
    for (int i = 0; i < n; i++)
        cnt[i] = 4, dsp[i] = 4 * (size_t)i;
    char *big = xmalloc(4 * (size_t)n);
    expect_refused(GOAL_Allgatherv_init(b, 4, big, NULL, dsp, GOAL_ALG_AUTO), "GOAL_Allgatherv_init(rcounts NULL)", "rcounts is NULL", NULL);
    expect_refused(GOAL_Alltoallv_init(b, cnt, NULL, big, cnt, dsp, GOAL_ALG_AUTO), "GOAL_Alltoallv_init(sdispls NULL)", "sdispls is NULL", NULL);
    expect_refused(GOAL_Reduce_scatter_init(b, r, NULL, GOAL_SINT, 32, GOAL_ADD, GOAL_ALG_AUTO), "GOAL_Reduce_scatter_init(rcounts NULL)",
                   "rcounts is NULL", NULL);
    dsp[n - 1] = (size_t)-4;
    expect_refused(GOAL_Allgatherv_init(b, 4, big, cnt, dsp, GOAL_ALG_RING), "GOAL_Allgatherv_init(rdispls -4)", "negative", "rdispls[");
    dsp[n - 1] = ((size_t)1 << 32) - 2;
    expect_refused(GOAL_Allgatherv_init(b, 4, big, cnt, dsp, GOAL_ALG_RING), "GOAL_Allgatherv_init(past 4 GiB)", "4 GiB", NULL);
    dsp[n - 1] = 4 * (size_t)(n - 1);
    if (n > 1) {
        dsp[1] = 2;
        expect_refused(GOAL_Allgatherv_init(b, 4, big, cnt, dsp, GOAL_ALG_LINEAR), "GOAL_Allgatherv_init(overlap)", "overlap", NULL);
        dsp[1] = 4;
        /* Binomial without counts: the root lacks them, the others cannot forward. */
        expect_refused(GOAL_Gatherv_init(b, 4, big, NULL, dsp, 0, GOAL_ALG_BINOMIAL), "GOAL_Gatherv_init(binomial, rcounts NULL)",
                       "rcounts", h_rank == 0 ? "NULL" : "every rank");
    }
    expect_refused(GOAL_Scatterv_init(big, cnt, dsp, r, 4, 0, GOAL_ALG_RING), "GOAL_Scatterv_init(ring)", "GOAL_ALG_RING", "scatterv");
    expect_refused(GOAL_Alltoallv_init(b, cnt, dsp, big, cnt, dsp, GOAL_ALG_BRUCK), "GOAL_Alltoallv_init(bruck)", "GOAL_ALG_BRUCK",
                   "alltoallv");
    expect_refused(GOAL_Allgatherv_init(b, 3, big, cnt, dsp, GOAL_ALG_AUTO), "GOAL_Allgatherv_init(scount 3)", "scount 3", "rcounts[");
    free(cnt), free(dsp), free(big);
}

/* ----------------------------------------------------------------- append */

/* An allgatherv of each rank's (rank + 1) int32s, then a reduce_scatter of
 * the gathered vector (every rank's is the same), in one graph. */
static void appended(void)
{
    int n = h_size, me = h_rank;
    size_t *cnt = xmalloc(n * sizeof *cnt), *dsp = xmalloc(n * sizeof *dsp), *elems = xmalloc(n * sizeof *elems);
    size_t total = 0;
    for (int i = 0; i < n; i++)
        cnt[i] = 4 * (size_t)(i + 1), dsp[i] = total, total += cnt[i], elems[i] = (size_t)(i + 1);
    int32_t *mine = xmalloc(cnt[me]), *all = xmalloc(total), *part = xmalloc(cnt[me]);
    for (int k = 0; k <= me; k++)
        mine[k] = 1000 * me + k;
    GOAL_Graph g = h_graph();
    GOAL_Vertex e1, e2;
    GOAL_Vertex d1 = V(GOAL_Allgatherv_append(g, mine, cnt[me], all, cnt, dsp, GOAL_ALG_RING, &e1));
    V(GOAL_Reduce_scatter_append(g, all, part, elems, GOAL_SINT, 32, GOAL_ADD, GOAL_ALG_AUTO, &e2));
    REQ(g, d1, e2);
    GOAL_Schedule s = h_compile(g);
    h_run(s);
    for (int k = 0; k <= me; k++)
        CHECKM(part[k] == n * (1000 * me + k), "append: element %d is %d, expected %d", k, part[k], n * (1000 * me + k));
    h_free_schedule(s);
    free(cnt), free(dsp), free(elems), free(mine), free(all), free(part);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    static const size_t maxima[] = {1, 1000, 70000};
    int roots[3] = {0, h_size - 1, h_size / 2};
    for (int m = 0; m < 3; m++) {
        for (int pat = 0; pat < PATTERNS; pat++) {
            size_t max = maxima[m];
            for (int ri = 0; ri < 3; ri++) {
                if (ri > 0 && roots[ri] == roots[ri - 1])
                    continue;
                for (int ip = 0; ip < 2; ip++)
                    for (int gather = 0; gather < 2; gather++) {
                        for (const int *a = ALGS_ROOTED; *a >= 0; a++)
                            rooted(gather, *a, pat, max, roots[ri], ip, 1);
                        rooted(gather, GOAL_ALG_LINEAR, pat, max, roots[ri], ip, 0);
                    }
            }
            for (int ip = 0; ip < 2; ip++) {
                for (const int *a = ALGS_RING; *a >= 0; a++) {
                    allgatherv(*a, pat, max, ip);
                    for (int type = 0; type < 3; type++)
                        reduce_scatter(*a, pat, max, ip, type);
                }
                for (const int *a = ALGS_A2A; *a >= 0; a++)
                    alltoallv(*a, pat, max, ip);
            }
        }
    }
    check_errors();
    appended();
    if (h_rank == 0)
        printf("t_vcoll: every v-collective, algorithm and pattern checked on %d ranks\n", h_size);
    return h_finish();
}
