/*
 * t_half: 16-bit floats, IEEE binary16 (GOAL_FLOAT, width 16) and bfloat16
 * (GOAL_BFLOAT, width 16), as a C program sees them (docs/api.md, "16-bit
 * floats").
 *
 *   - GOAL_LocalOp, every operator a float takes (MAX MIN ADD SUB DIV MUL
 *     COPY), bit for bit against a model written here in C: widen to float,
 *     combine in float, round to nearest even (binary16 through the
 *     compiler's _Float16, bfloat16 with integer arithmetic), a NaN result
 *     0x7E00 / 0x7FC0; MAX/MIN give the other operand for a NaN. Operands
 *     are every 16-bit pattern against a mix of special values (NaNs,
 *     infinities, signed zeros, subnormals, the largest finite values, sums
 *     that are ties), out of place and in place, with a tail after any
 *     vector width; GOAL_LocalOpVec on pieces gives the same bits;
 *   - allreduce, reduce (roots first and last) and reduce_scatter_block,
 *     GOAL_ALG_AUTO and every algorithm, MAX MIN ADD MUL: values whose
 *     combines are exact in any order (so every algorithm must give the
 *     model's bits), plus NaN and infinity propagation (a NaN on one rank,
 *     +inf on one, +inf and -inf on two: NaN); allreduce's bits are the same
 *     on every rank;
 *   - a receive combined with its local operation as it comes (large
 *     messages through a small stream, as t_fused; an odd message first, so
 *     elements split between two pops): ADD, SUB (theirs first and
 *     second) and MAX, bit for bit the model;
 *   - refusals: GOAL_AND/OR/XOR on either type (a collective's _init
 *     returns NULL naming operator, type and width; GOAL_Compile refuses
 *     the LocalOp), GOAL_BFLOAT of width 32, GOAL_FLOAT of width 8.
 */
// memcheck: 2
// ranks: 1 2 3 4
// modes: 2 4
#include "helpers.h"

#include <math.h>

#define NSPEC 26
#define NALL (65536 + NSPEC * NSPEC + 7) /* every pattern, every special pair, a tail */

static float widen(int bf, uint16_t h)
{
    if (bf) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    _Float16 x;
    memcpy(&x, &h, 2);
    return (float)x;
}

static uint16_t narrow(int bf, float f)
{
    if (isnan(f))
        return bf ? 0x7fc0 : 0x7e00;
    if (bf) {
        uint32_t u;
        memcpy(&u, &f, 4);
        return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
    }
    _Float16 x = (_Float16)f; /* round to nearest even */
    uint16_t h;
    memcpy(&h, &x, 2);
    return h;
}

static uint16_t model(int bf, GOAL_Op op, uint16_t a, uint16_t b)
{
    if (op == GOAL_COPY)
        return a;
    float x = widen(bf, a), y = widen(bf, b), z;
    switch (op) {
    case GOAL_ADD: z = x + y; break;
    case GOAL_SUB: z = x - y; break;
    case GOAL_MUL: z = x * y; break;
    case GOAL_DIV: z = x / y; break;
    case GOAL_MAX: z = isnan(x) || y > x ? y : x; break;
    case GOAL_MIN: z = isnan(x) || y < x ? y : x; break;
    default: abort();
    }
    return narrow(bf, z);
}

static const uint16_t SPEC_F16[NSPEC] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7d00, 0xfe01, 0x0001, 0x8001,
                                         0x0002, 0x03ff, 0x83ff, 0x0400, 0x7bff, 0xfbff, 0x7bfe, 0x3c00, 0xbc00,
                                         0x3c01, 0x1000, 0x1001, 0x3800, 0x4000, 0x5bff, 0x0c00, 0x2e66};
static const uint16_t SPEC_BF16[NSPEC] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc1, 0x0001, 0x8001,
                                          0x007f, 0x0080, 0x7f7f, 0xff7f, 0x7f7e, 0x3f80, 0xbf80, 0x3f81, 0x3b80,
                                          0x3b81, 0x3b00, 0x4000, 0x0100, 0x3f00, 0x3eaa, 0x0002, 0x8080};

static const char *ty_name(int bf) { return bf ? "GOAL_BFLOAT/16" : "GOAL_FLOAT/16"; }
static GOAL_DataType ty(int bf) { return bf ? GOAL_BFLOAT : GOAL_FLOAT; }

static void local_ops(void)
{
    static uint16_t a[NALL], b[NALL], r[NALL + 8], in_a[NALL], want[NALL];
    const GOAL_Op ops[] = {GOAL_MAX, GOAL_MIN, GOAL_ADD, GOAL_SUB, GOAL_DIV, GOAL_MUL, GOAL_COPY};
    for (int bf = 0; bf < 2; bf++) {
        const uint16_t *spec = bf ? SPEC_BF16 : SPEC_F16;
        int n = 0;
        for (int i = 0; i < NSPEC; i++)
            for (int j = 0; j < NSPEC; j++, n++) {
                a[n] = spec[i];
                b[n] = spec[j];
            }
        for (int i = 0; n < NALL; i++, n++) {
            uint64_t h = h_mix((uint64_t)i * 7919 + (uint64_t)bf);
            a[n] = (uint16_t)i;
            b[n] = i % 3 == 0 ? spec[h % NSPEC] : (uint16_t)(h >> 20);
        }
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
            GOAL_Op op = ops[k];
            for (int i = 0; i < NALL; i++)
                want[i] = model(bf, op, a[i], b[i]);
            memset(r, 0xA5, sizeof r);
            memcpy(in_a, a, sizeof a);
            GOAL_Graph g = h_graph();
            GOAL_Vertex v1 = V(GOAL_LocalOp(g, a, b, r, op, ty(bf), 16, NALL, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
            GOAL_Vertex v2 = V(GOAL_LocalOp(g, in_a, b, in_a, op, ty(bf), 16, NALL, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
            (void)v1;
            (void)v2;
            GOAL_Schedule s = h_compile(g);
            h_run(s);
            h_free_schedule(s);
            for (int i = 0; i < NALL; i++) {
                CHECKM(r[i] == want[i], "%s op %d element %d: %#06x op %#06x gave %#06x, want %#06x", ty_name(bf), op, i,
                       a[i], b[i], r[i], want[i]);
                CHECKM(in_a[i] == want[i], "%s op %d in place, element %d: %#06x op %#06x gave %#06x, want %#06x",
                       ty_name(bf), op, i, a[i], b[i], in_a[i], want[i]);
            }
            for (int i = NALL; i < NALL + 8; i++)
                CHECKM(r[i] == 0xA5A5, "%s op %d wrote past the result", ty_name(bf), op);
        }
        /* LocalOpVec: ADD over pieces of 3 and NALL-3 elements equals the whole. */
        void *p1[2] = {a, a + 3}, *p2[2] = {b, b + 3}, *p3[2] = {r, r + 3};
        int l[2] = {3 * 2, (NALL - 3) * 2};
        GOAL_Graph g = h_graph();
        V(GOAL_LocalOpVec(g, p1, l, 2, p2, l, 2, p3, l, 2, ty(bf), 16, GOAL_ADD, GOAL_USERSPACE, GOAL_USERSPACE,
                          GOAL_USERSPACE));
        GOAL_Schedule s = h_compile(g);
        h_run(s);
        h_free_schedule(s);
        for (int i = 0; i < NALL; i++)
            CHECKM(r[i] == model(bf, GOAL_ADD, a[i], b[i]), "%s LocalOpVec ADD element %d", ty_name(bf), i);
    }
}

/* ---------------------------------------------------------- collectives */

enum { RED_REDUCE, RED_ALLREDUCE, RED_RSB };
static const int ALG_REDUCE[] = {GOAL_ALG_AUTO, GOAL_ALG_LINEAR, GOAL_ALG_BINOMIAL, GOAL_ALG_RABENSEIFNER, -1};
static const int ALG_ALLREDUCE[] = {GOAL_ALG_AUTO, GOAL_ALG_RECURSIVE_DOUBLING, GOAL_ALG_RING, GOAL_ALG_RABENSEIFNER, -1};
static const int ALG_RSB[] = {GOAL_ALG_AUTO, GOAL_ALG_RECURSIVE_DOUBLING, GOAL_ALG_RING, -1};

#define SPECIAL 3 /* elements 0..2 carry NaN / inf propagation for ADD */

/* Element i of rank q's input: exact in any order of combines. ADD: multiples
 * of 1/4 below 2 in magnitude (sums of 4 ranks stay exact in bfloat16's 8
 * bits); MUL: +-{0.5, 1, 2}; MAX/MIN: anything finite. */
static uint16_t elem(int bf, GOAL_Op op, int q, int i)
{
    uint64_t h = h_mix(((uint64_t)q << 32) ^ (uint64_t)i ^ ((uint64_t)op << 48) ^ ((uint64_t)bf << 56));
    float v;
    if (op == GOAL_ADD && i < SPECIAL) {
        if (i == 0 && q == 1 % h_size)
            return bf ? 0x7fc1 : 0x7e01; /* NaN with a payload */
        if (i == 1 && q == 0)
            return bf ? 0x7f80 : 0x7c00; /* +inf */
        if (i == 2 && q == 0)
            return bf ? 0x7f80 : 0x7c00;
        if (i == 2 && q == h_size - 1 && h_size > 1)
            return bf ? 0xff80 : 0xfc00; /* -inf */
    }
    switch (op) {
    case GOAL_ADD: v = (float)((int)(h % 15) - 7) * 0.25f; break;
    case GOAL_MUL: v = (h & 4 ? -1.0f : 1.0f) * (float[]){0.5f, 1.0f, 2.0f}[h % 3]; break;
    default: v = (float)((int)(h % 2001) - 1000) / 16.0f; break;
    }
    return narrow(bf, v);
}

static void reductions(void)
{
    const GOAL_Op ops[] = {GOAL_MAX, GOAL_MIN, GOAL_ADD, GOAL_MUL};
    const int counts[] = {1, 7, 5003};
    const int p = h_size, me = h_rank;
    for (int bf = 0; bf < 2; bf++)
        for (int k = 0; k < 4; k++)
            for (int c = 0; c < 3; c++)
                for (int which = RED_REDUCE; which <= RED_RSB; which++) {
                    const int *algs = which == RED_REDUCE ? ALG_REDUCE : which == RED_ALLREDUCE ? ALG_ALLREDUCE : ALG_RSB;
                    GOAL_Op op = ops[k];
                    int count = counts[c], total = which == RED_RSB ? count * p : count;
                    uint16_t *in = malloc((size_t)total * 2), *out = malloc((size_t)total * 2 + 16),
                             *want = malloc((size_t)total * 2);
                    CHECK(in && out && want);
                    for (int i = 0; i < total; i++) {
                        in[i] = elem(bf, op, me, i);
                        want[i] = elem(bf, op, 0, i);
                        for (int q = 1; q < p; q++)
                            want[i] = model(bf, op, want[i], elem(bf, op, q, i));
                    }
                    for (int ai = 0; algs[ai] >= 0; ai++)
                        for (int root = 0; root < (which == RED_REDUCE ? 2 : 1); root++) {
                            int rt = root ? p - 1 : 0;
                            memset(out, 0xA5, (size_t)total * 2 + 16);
                            GOAL_Schedule s =
                                which == RED_REDUCE ? GOAL_Reduce_init(in, out, count, ty(bf), 16, op, rt, algs[ai])
                                : which == RED_ALLREDUCE ? GOAL_Allreduce_init(in, out, count, ty(bf), 16, op, algs[ai])
                                                         : GOAL_Reduce_scatter_block_init(in, out, count, ty(bf), 16, op, algs[ai]);
                            CHECKM(s != NULL, "%s op %d kind %d alg %d count %d", ty_name(bf), op, which, algs[ai], count);
                            h_run(s);
                            h_free_schedule(s);
                            int first = which == RED_RSB ? me * count : 0;
                            if (which != RED_REDUCE || me == rt)
                                for (int i = 0; i < count; i++)
                                    CHECKM(out[i] == want[first + i],
                                           "%s op %d kind %d alg %d count %d root %d: element %d is %#06x, want %#06x",
                                           ty_name(bf), op, which, algs[ai], count, rt, first + i, out[i], want[first + i]);
                            if (which == RED_ALLREDUCE) {
                                uint16_t *all = malloc((size_t)count * 2 * (size_t)p);
                                CHECK(all);
                                h_allgather(out, (size_t)count * 2, all);
                                for (int q = 1; q < p; q++)
                                    CHECKM(!memcmp(all, all + (size_t)q * count, (size_t)count * 2),
                                           "%s allreduce alg %d: rank %d's bits differ from rank 0's", ty_name(bf), algs[ai], q);
                                free(all);
                            }
                        }
                    free(in);
                    free(out);
                    free(want);
                }
    /* The NaN and infinity elements came out as the rule says. */
    uint16_t x[SPECIAL], y[SPECIAL];
    for (int bf = 0; bf < 2; bf++) {
        for (int i = 0; i < SPECIAL; i++)
            x[i] = elem(bf, GOAL_ADD, me, i);
        GOAL_Schedule s = GOAL_Allreduce_init(x, y, SPECIAL, ty(bf), 16, GOAL_ADD, GOAL_ALG_AUTO);
        CHECK(s != NULL);
        h_run(s);
        h_free_schedule(s);
        uint16_t nan = bf ? 0x7fc0 : 0x7e00, inf = bf ? 0x7f80 : 0x7c00;
        CHECKM(y[0] == (p > 1 ? nan : elem(bf, GOAL_ADD, 0, 0)), "%s: a NaN on one rank gives %#06x", ty_name(bf), y[0]);
        CHECKM(y[1] == inf, "%s: +inf on one rank gives %#06x", ty_name(bf), y[1]);
        CHECKM(y[2] == (p > 1 ? nan : inf), "%s: +inf and -inf give %#06x", ty_name(bf), y[2]);
    }
}

static void refusals(void)
{
    uint16_t x[4] = {0}, y[4] = {0};
    const GOAL_Op bitwise[] = {GOAL_AND, GOAL_OR, GOAL_XOR};
    const char *names[] = {"GOAL_AND", "GOAL_OR", "GOAL_XOR"};
    for (int bf = 0; bf < 2; bf++)
        for (int k = 0; k < 3; k++) {
            GOAL_Schedule s = GOAL_Allreduce_init(x, y, 4, ty(bf), 16, bitwise[k], GOAL_ALG_AUTO);
            CHECKM(s == NULL, "%s %s was accepted", names[k], ty_name(bf));
            const char *e = GOAL_LastError();
            char want[64];
            snprintf(want, sizeof want, "%s is not defined on %s of width 16", names[k], bf ? "GOAL_BFLOAT" : "GOAL_FLOAT");
            CHECKM(e && strstr(e, want), "the message names operator, type and width: %s", e ? e : "(null)");
            GOAL_Graph g = h_graph();
            V(GOAL_LocalOp(g, x, y, y, bitwise[k], ty(bf), 16, 4, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
            CHECK(GOAL_Compile(g) == NULL);
            e = GOAL_LastError();
            CHECKM(e && strstr(e, want), "GOAL_Compile's message: %s", e ? e : "(null)");
            CHECK_OK(GOAL_FreeGraph(g));
        }
    struct {
        GOAL_DataType dt;
        int width;
        const char *needle;
    } bad[] = {{GOAL_BFLOAT, 32, "does not exist for GOAL_BFLOAT"}, {GOAL_FLOAT, 8, "does not exist for GOAL_FLOAT"}};
    for (int k = 0; k < 2; k++) {
        GOAL_Graph g = h_graph();
        V(GOAL_LocalOp(g, x, y, y, GOAL_ADD, bad[k].dt, bad[k].width, 1, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
        CHECK(GOAL_Compile(g) == NULL);
        const char *e = GOAL_LastError();
        CHECKM(e && strstr(e, bad[k].needle), "message: %s", e ? e : "(null)");
        CHECK_OK(GOAL_FreeGraph(g));
    }
}

/* ------------------------------------------------- fused receive-combine */

#define ODD 70001   /* an odd message first, so the vector sits at odd stream positions */
#define NF 100003   /* 16-bit elements of the vector */

/* Ring: the previous rank's vector, received into the scratchpad, combined
 * (ADD, SUB with theirs first or second, MAX) with mine as it comes through
 * the stream (t_fused's setting), elements split between two pops
 * included; bit for bit the model. */
static void fused(void)
{
    if (h_size < 2)
        return;
    int next = (h_rank + 1) % h_size, prev = (h_rank + h_size - 1) % h_size;
    char *odd_out = malloc(ODD), *odd_in = malloc(ODD);
    uint16_t *out = malloc(NF * 2), *mine = malloc(NF * 2), *res = malloc(NF * 2);
    CHECK(odd_out && odd_in && out && mine && res);
    const GOAL_Op ops[] = {GOAL_ADD, GOAL_SUB, GOAL_MAX};
    for (int bf = 0; bf < 2; bf++)
        for (int k = 0; k < 3; k++)
            for (int first = 0; first < 2; first++) {
                const uint16_t *spec = bf ? SPEC_BF16 : SPEC_F16;
                uint64_t seed = (uint64_t)(bf * 16 + k * 2 + first);
                h_fill(odd_out, ODD, seed);
                for (int i = 0; i < NF; i++) {
                    uint64_t a = h_mix(((uint64_t)h_rank << 40) ^ (seed << 32) ^ (uint64_t)i);
                    out[i] = i % 5 == 0 ? spec[a % NSPEC] : (uint16_t)(a >> 8);
                    mine[i] = (uint16_t)(a >> 24);
                }
                GOAL_Graph g = h_graph();
                CHECK_OK(GOAL_AllocateScratchpad(g, NF * 2));
                V(GOAL_Send(g, odd_out, ODD, next, 1, GOAL_USERSPACE));
                V(GOAL_Send(g, out, NF * 2, next, 2, GOAL_USERSPACE));
                V(GOAL_Recv(g, odd_in, ODD, prev, 1, GOAL_USERSPACE));
                GOAL_Vertex r = V(GOAL_Recv(g, SP(0), NF * 2, prev, 2, GOAL_SCRATCHPAD));
                GOAL_Vertex c = first ? V(GOAL_LocalOp(g, SP(0), mine, res, ops[k], ty(bf), 16, NF, GOAL_SCRATCHPAD,
                                                       GOAL_USERSPACE, GOAL_USERSPACE))
                                      : V(GOAL_LocalOp(g, mine, SP(0), res, ops[k], ty(bf), 16, NF, GOAL_USERSPACE,
                                                       GOAL_SCRATCHPAD, GOAL_USERSPACE));
                REQ(g, r, c);
                GOAL_Schedule s = h_compile(g);
                h_run(s);
                h_free_schedule(s);
                for (int i = 0; i < NF; i++) {
                    uint64_t a = h_mix(((uint64_t)prev << 40) ^ (seed << 32) ^ (uint64_t)i);
                    uint16_t theirs = i % 5 == 0 ? spec[a % NSPEC] : (uint16_t)(a >> 8);
                    uint16_t want = first ? model(bf, ops[k], theirs, mine[i]) : model(bf, ops[k], mine[i], theirs);
                    CHECKM(res[i] == want, "%s fused op %d (theirs %s): element %d is %#06x, want %#06x", ty_name(bf),
                           ops[k], first ? "first" : "second", i, res[i], want);
                }
            }
    free(odd_out);
    free(odd_in);
    free(out);
    free(mine);
    free(res);
}

int main(int argc, char **argv)
{
    /* Before GOAL_Init: every large message by stream, and a small stream
       (as t_fused), so that the large receives are combined as they come. */
    setenv("GOAL_SHM_STREAM_BYTES", "64K", 1);
    setenv("GOAL_CMA_MIN", "1G", 1);
    setenv("GOAL_CMA_MAX", "1G", 1);
    h_init(argc, argv);
    local_ops();
    refusals();
    reductions();
    fused();
    return h_finish();
}
