/*
 * t_localop: every local operation on every type and width the spec allows.
 *
 * Asserts, for SINT/UINT 8,16,32,64 with MAX MIN ADD SUB DIV MUL COPY AND OR
 * XOR and FLOAT 32,64 with MAX MIN ADD SUB DIV MUL COPY, that bres equals what
 * C computes (integers wrap on overflow: two's complement; signed DIV
 * truncates toward zero; floats are IEEE results of the same precision, bit
 * for bit), nothing past bres is written, on:
 *   - userspace buffers (two runs of one schedule with new input each time:
 *     buffers are read when the execution runs, not when the graph was built),
 *   - scratchpad buffers, with every mix of memory types (COPY in, op, COPY out),
 *   - bres == b1 (in place), large counts (100003 elements) and unaligned
 *     addresses;
 * integer DIV by zero makes GOAL_Wait return an error (<0) for every integer
 * type and width, naming the element even past the first piece of a long
 * operation (which runs in pieces), and goal keeps working afterwards; float DIV by zero gives
 * +-inf/NaN and no error; WTIME writes a finite, non-negative double that
 * advances like CLOCK_MONOTONIC between executions and never goes backwards
 * inside a chain of operations; LocalOpVec computes on the concatenation of
 * its pieces whatever the piece layouts of the three lists (including a
 * scratchpad list), and its piece arrays are copied at the call.
 */
// memcheck: 2
// ranks: 1 2
#include "helpers.h"

#include <math.h>

#define NE 37    /* odd, so vectorised code needs a tail */
#define GUARD 16 /* bytes after every result that must stay untouched */
#define BIG 100003

/* ------------------------------------------------ reference computations */

#define DEF_INT(NAME, T, UT)                                                       \
    static void NAME(GOAL_Op op, const void *va, const void *vb, void *vr, int n)  \
    {                                                                              \
        for (int i = 0; i < n; i++) {                                              \
            T x, y = 0, z;                                                         \
            memcpy(&x, (const char *)va + (size_t)i * sizeof(T), sizeof(T));       \
            if (vb)                                                                \
                memcpy(&y, (const char *)vb + (size_t)i * sizeof(T), sizeof(T));   \
            uint64_t ux = (UT)x, uy = (UT)y;                                       \
            switch (op) {                                                          \
            case GOAL_MAX: z = x > y ? x : y; break;                               \
            case GOAL_MIN: z = x < y ? x : y; break;                               \
            case GOAL_ADD: z = (T)(UT)(ux + uy); break;                            \
            case GOAL_SUB: z = (T)(UT)(ux - uy); break;                            \
            case GOAL_MUL: z = (T)(UT)(ux * uy); break;                            \
            case GOAL_DIV: z = (T)(x / y); break;                                  \
            case GOAL_COPY: z = x; break;                                          \
            case GOAL_AND: z = (T)(x & y); break;                                  \
            case GOAL_OR: z = (T)(x | y); break;                                   \
            case GOAL_XOR: z = (T)(x ^ y); break;                                  \
            default: abort();                                                      \
            }                                                                      \
            memcpy((char *)vr + (size_t)i * sizeof(T), &z, sizeof(T));             \
        }                                                                          \
    }

DEF_INT(ref_s8, int8_t, uint8_t)
DEF_INT(ref_s16, int16_t, uint16_t)
DEF_INT(ref_s32, int32_t, uint32_t)
DEF_INT(ref_s64, int64_t, uint64_t)
DEF_INT(ref_u8, uint8_t, uint8_t)
DEF_INT(ref_u16, uint16_t, uint16_t)
DEF_INT(ref_u32, uint32_t, uint32_t)
DEF_INT(ref_u64, uint64_t, uint64_t)

#define DEF_FLT(NAME, T)                                                           \
    static void NAME(GOAL_Op op, const void *va, const void *vb, void *vr, int n)  \
    {                                                                              \
        for (int i = 0; i < n; i++) {                                              \
            volatile T x, y = 0, z;                                                \
            memcpy((void *)&x, (const char *)va + (size_t)i * sizeof(T), sizeof(T)); \
            if (vb)                                                                \
                memcpy((void *)&y, (const char *)vb + (size_t)i * sizeof(T), sizeof(T)); \
            switch (op) {                                                          \
            case GOAL_MAX: z = x > y ? x : y; break;                               \
            case GOAL_MIN: z = x < y ? x : y; break;                               \
            case GOAL_ADD: z = x + y; break;                                       \
            case GOAL_SUB: z = x - y; break;                                       \
            case GOAL_MUL: z = x * y; break;                                       \
            case GOAL_DIV: z = x / y; break;                                       \
            case GOAL_COPY: z = x; break;                                          \
            default: abort();                                                      \
            }                                                                      \
            memcpy((char *)vr + (size_t)i * sizeof(T), (const void *)&z, sizeof(T)); \
        }                                                                          \
    }

DEF_FLT(ref_f32, float)
DEF_FLT(ref_f64, double)

typedef void (*ref_fn)(GOAL_Op, const void *, const void *, void *, int);

struct type {
    GOAL_DataType dt;
    int width; /* bits */
    const char *name;
    ref_fn ref;
};

static const struct type types[] = {
    {GOAL_SINT, 8, "SINT8", ref_s8},     {GOAL_SINT, 16, "SINT16", ref_s16},
    {GOAL_SINT, 32, "SINT32", ref_s32},  {GOAL_SINT, 64, "SINT64", ref_s64},
    {GOAL_UINT, 8, "UINT8", ref_u8},     {GOAL_UINT, 16, "UINT16", ref_u16},
    {GOAL_UINT, 32, "UINT32", ref_u32},  {GOAL_UINT, 64, "UINT64", ref_u64},
    {GOAL_FLOAT, 32, "FLOAT32", ref_f32}, {GOAL_FLOAT, 64, "FLOAT64", ref_f64},
};
#define NTYPES ((int)(sizeof types / sizeof types[0]))

static const GOAL_Op all_ops[] = {GOAL_MAX, GOAL_MIN, GOAL_ADD, GOAL_SUB, GOAL_DIV,
                                  GOAL_MUL, GOAL_COPY, GOAL_AND, GOAL_OR, GOAL_XOR};
static const char *op_names[] = {"MAX", "MIN", "ADD", "SUB", "DIV", "MUL",
                                 "COPY", "AND", "OR", "XOR", "WTIME"};
#define MAXOPS 10

static int nops_for(const struct type *t) { return t->dt == GOAL_FLOAT ? 7 : 10; }

/* ------------------------------------------------------- input generation */

static void put(void *buf, int i, int wbytes, uint64_t v)
{
    memcpy((char *)buf + (size_t)i * (size_t)wbytes, &v, (size_t)wbytes); /* little endian */
}

static uint64_t get(const void *buf, int i, int wbytes)
{
    uint64_t v = 0;
    memcpy(&v, (const char *)buf + (size_t)i * (size_t)wbytes, (size_t)wbytes);
    return v;
}

/*
 * Inputs a, b and bdiv (b without zeros and without the MIN / -1 pair) of n
 * elements, with the interesting edge cases first and pseudo-random values
 * after them.
 */
static void gen_inputs(const struct type *t, int n, uint64_t seed, void *a, void *b, void *bdiv)
{
    int wb = t->width / 8;
    if (t->dt == GOAL_FLOAT) {
        for (int i = 0; i < n; i++) {
            uint64_t r1 = h_mix(seed + 2 * (uint64_t)i), r2 = h_mix(seed + 2 * (uint64_t)i + 1);
            /* multiples of 1/1024 in [-50, 50): exact in both precisions */
            double x = (double)(int64_t)(r1 % 102400) / 1024.0 - 50.0;
            double y = (double)(int64_t)(r2 % 102400) / 1024.0 - 50.0;
            if (i % 5 == 3)
                y = x; /* ties for MAX/MIN */
            if (x == 0.0)
                x = 0.25;
            if (y == 0.0)
                y = -0.75; /* no signed zeros: MAX(+0,-0) is not defined by C */
            if (i == 0) { x = 1e30; y = 1e30; }   /* MUL overflows FLOAT32 to inf */
            if (i == 1) { x = -3e38; y = 3e38; }  /* SUB overflows FLOAT32 to -inf */
            if (i == 2) { x = 1.0; y = 3.0; }     /* DIV rounds */
            if (i == 3) { x = 1e-20; y = 1e20; }  /* tiny quotient */
            if (t->width == 32) {
                float fx = (float)x, fy = (float)y;
                memcpy((char *)a + (size_t)i * 4, &fx, 4);
                memcpy((char *)b + (size_t)i * 4, &fy, 4);
            } else {
                memcpy((char *)a + (size_t)i * 8, &x, 8);
                memcpy((char *)b + (size_t)i * 8, &y, 8);
            }
        }
        memcpy(bdiv, b, (size_t)n * (size_t)wb);
        return;
    }
    uint64_t ones = t->width == 64 ? ~0ULL : (1ULL << t->width) - 1; /* -1 / UMAX */
    uint64_t smin = 1ULL << (t->width - 1);                           /* MIN (signed) */
    uint64_t smax = smin - 1;                                         /* MAX (signed) */
    static const int edge_count = 12;
    uint64_t edges[12][2] = {
        {smax, 1},            /* signed ADD overflow wraps to MIN */
        {ones, 1},            /* unsigned ADD wraps to 0 */
        {smin, 1},            /* signed SUB wraps to MAX */
        {0, 1},               /* unsigned SUB wraps to UMAX */
        {smax, 2},            /* MUL overflow */
        {ones, ones},         /* (-1)*(-1); UMAX*UMAX */
        {smin, ones},         /* MIN vs -1 (MAX/MIN signedness), DIV excluded below */
        {ones - 6, 2},        /* -7 / 2 == -3 (truncation); big unsigned / 2 */
        {7, ones - 1},        /* 7 / -2 == -3 */
        {smax, smin},         /* MAX/MIN signedness */
        {0x5a5a5a5a5a5a5a5aULL & ones, 0x0ff00ff00ff00ff0ULL & ones}, /* bit ops */
        {0, 0},               /* 0 / 0 excluded below */
    };
    for (int i = 0; i < n; i++) {
        uint64_t x = h_mix(seed + 2 * (uint64_t)i) & ones;
        uint64_t y = h_mix(seed + 2 * (uint64_t)i + 1) & ones;
        if (i % 7 == 5)
            y = (y % 13) & ones; /* small divisors, some zero */
        if (i < edge_count) {
            x = edges[i][0];
            y = edges[i][1];
        }
        put(a, i, wb, x);
        put(b, i, wb, y);
        uint64_t yd = y;
        if (yd == 0)
            yd = 3;
        if (t->dt == GOAL_SINT && x == smin && yd == ones)
            yd = 2;
        put(bdiv, i, wb, yd);
    }
}

static void check_result(const struct type *t, GOAL_Op op, const void *a, const void *b,
                         const void *got, int n, const char *where)
{
    int wb = t->width / 8;
    char *want = malloc((size_t)n * (size_t)wb);
    CHECK(want != NULL);
    t->ref(op, a, op == GOAL_COPY ? NULL : b, want, n);
    for (int i = 0; i < n; i++) {
        uint64_t g = get(got, i, wb), w = get(want, i, wb);
        if (g != w) {
            uint64_t x = get(a, i, wb), y = op == GOAL_COPY ? 0 : get(b, i, wb);
            FAILF("%s %s %s: element %d of %d: got 0x%" PRIx64 ", want 0x%" PRIx64
                  " (b1 0x%" PRIx64 ", b2 0x%" PRIx64 ")",
                  where, t->name, op_names[op], i, n, g, w, x, y);
        }
    }
    CHECK_BYTES((const char *)got + (size_t)n * (size_t)wb, GUARD, 0xEE,
                "%s %s %s: bytes past bres were written", where, t->name, op_names[op]);
    free(want);
}

/* ------------------------------------------------------------ sections */

/* All ops of one type on userspace buffers (and one in-place ADD), two runs. */
static void userspace_type(const struct type *t)
{
    int wb = t->width / 8, nops = nops_for(t);
    size_t sz = (size_t)NE * (size_t)wb;
    char *a = malloc(sz), *b = malloc(sz), *bd = malloc(sz), *ip = malloc(sz + GUARD);
    char *a_ref = malloc(sz);
    char *res[MAXOPS];
    CHECK(a && b && bd && ip && a_ref);
    GOAL_Graph g = h_graph();
    for (int k = 0; k < nops; k++) {
        GOAL_Op op = all_ops[k];
        res[k] = malloc(sz + GUARD);
        CHECK(res[k] != NULL);
        V(GOAL_LocalOp(g, a, op == GOAL_COPY ? NULL : (op == GOAL_DIV ? bd : b), res[k], op,
                       t->dt, t->width, NE, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    }
    V(GOAL_LocalOp(g, ip, b, ip, GOAL_ADD, t->dt, t->width, NE, GOAL_USERSPACE, GOAL_USERSPACE,
                   GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);
    for (int round = 0; round < 2; round++) {
        gen_inputs(t, NE, h_seed(t->dt, (uint64_t)t->width, (uint64_t)round, 1), a, b, bd);
        memcpy(ip, a, sz);
        memset(ip + sz, 0xEE, GUARD);
        memcpy(a_ref, a, sz);
        for (int k = 0; k < nops; k++)
            memset(res[k], 0xEE, sz + GUARD);
        h_run(s);
        CHECK_MEM(a, a_ref, sz, "%s: b1 was modified", t->name);
        for (int k = 0; k < nops; k++) {
            GOAL_Op op = all_ops[k];
            check_result(t, op, a, op == GOAL_DIV ? bd : b, res[k], NE, "userspace");
        }
        check_result(t, GOAL_ADD, a_ref, b, ip, NE, "in place (bres == b1)");
    }
    h_free_schedule(s);
    for (int k = 0; k < nops; k++)
        free(res[k]);
    free(a); free(b); free(bd); free(ip); free(a_ref);
}

/* All ops of one type with operands and results in the scratchpad. */
static void scratchpad_type(const struct type *t)
{
    int wb = t->width / 8, nops = nops_for(t);
    size_t sz = (size_t)NE * (size_t)wb, slot = (size_t)NE * 8 + 8;
    size_t offA = 0, offB = slot, offBD = 2 * slot;
    char *a = malloc(sz), *b = malloc(sz), *bd = malloc(sz);
    char *res[MAXOPS];
    CHECK(a && b && bd);
    GOAL_Graph g = h_graph();
    CHECK_OK(GOAL_AllocateScratchpad(g, (3 + (size_t)nops) * slot));
    GOAL_Vertex cA = V(GOAL_LocalOp(g, a, NULL, SP(offA), GOAL_COPY, t->dt, t->width, NE,
                                    GOAL_USERSPACE, GOAL_USERSPACE, GOAL_SCRATCHPAD));
    GOAL_Vertex cB = V(GOAL_LocalOp(g, b, NULL, SP(offB), GOAL_COPY, t->dt, t->width, NE,
                                    GOAL_USERSPACE, GOAL_USERSPACE, GOAL_SCRATCHPAD));
    GOAL_Vertex cBD = V(GOAL_LocalOp(g, bd, NULL, SP(offBD), GOAL_COPY, t->dt, t->width, NE,
                                     GOAL_USERSPACE, GOAL_USERSPACE, GOAL_SCRATCHPAD));
    for (int k = 0; k < nops; k++) {
        GOAL_Op op = all_ops[k];
        size_t offR = (3 + (size_t)k) * slot;
        res[k] = malloc(sz + GUARD);
        CHECK(res[k] != NULL);
        GOAL_Vertex o;
        char *b_user = op == GOAL_DIV ? bd : b;
        GOAL_Vertex b_copy = op == GOAL_DIV ? cBD : cB;
        size_t offb = op == GOAL_DIV ? offBD : offB;
        if (op == GOAL_COPY) {
            o = V(GOAL_LocalOp(g, SP(offA), NULL, SP(offR), op, t->dt, t->width, NE,
                               GOAL_SCRATCHPAD, GOAL_USERSPACE, GOAL_SCRATCHPAD));
            REQ(g, cA, o);
        } else if (k % 3 == 0) { /* b1 scratchpad, b2 userspace */
            o = V(GOAL_LocalOp(g, SP(offA), b_user, SP(offR), op, t->dt, t->width, NE,
                               GOAL_SCRATCHPAD, GOAL_USERSPACE, GOAL_SCRATCHPAD));
            REQ(g, cA, o);
        } else if (k % 3 == 1) { /* b1 userspace, b2 scratchpad */
            o = V(GOAL_LocalOp(g, a, SP(offb), SP(offR), op, t->dt, t->width, NE,
                               GOAL_USERSPACE, GOAL_SCRATCHPAD, GOAL_SCRATCHPAD));
            REQ(g, b_copy, o);
        } else { /* both scratchpad */
            o = V(GOAL_LocalOp(g, SP(offA), SP(offb), SP(offR), op, t->dt, t->width, NE,
                               GOAL_SCRATCHPAD, GOAL_SCRATCHPAD, GOAL_SCRATCHPAD));
            REQ(g, cA, o);
            REQ(g, b_copy, o);
        }
        GOAL_Vertex out = V(GOAL_LocalOp(g, SP(offR), NULL, res[k], GOAL_COPY, t->dt, t->width,
                                         NE, GOAL_SCRATCHPAD, GOAL_USERSPACE, GOAL_USERSPACE));
        REQ(g, o, out);
    }
    GOAL_Schedule s = h_compile(g);
    for (int round = 0; round < 2; round++) {
        gen_inputs(t, NE, h_seed(t->dt, (uint64_t)t->width, (uint64_t)round, 2), a, b, bd);
        for (int k = 0; k < nops; k++)
            memset(res[k], 0xEE, sz + GUARD);
        h_run(s);
        for (int k = 0; k < nops; k++) {
            GOAL_Op op = all_ops[k];
            check_result(t, op, a, op == GOAL_DIV ? bd : b, res[k], NE, "scratchpad");
        }
    }
    h_free_schedule(s);
    for (int k = 0; k < nops; k++)
        free(res[k]);
    free(a); free(b); free(bd);
}

/* Large counts and unaligned addresses. */
static void big_and_unaligned(void)
{
    static const struct { int type; GOAL_Op op; int n; size_t misalign; } cases[] = {
        {6, GOAL_ADD, BIG, 0},  /* UINT32 */
        {9, GOAL_MUL, BIG, 0},  /* FLOAT64 */
        {0, GOAL_MIN, BIG, 0},  /* SINT8 */
        {3, GOAL_SUB, BIG, 0},  /* SINT64 */
        {6, GOAL_ADD, NE, 1},   /* UINT32 at odd addresses */
        {9, GOAL_ADD, NE, 3},   /* FLOAT64 at odd addresses */
        {1, GOAL_MAX, NE, 1},   /* SINT16 at odd addresses */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const struct type *t = &types[cases[c].type];
        int n = cases[c].n, wb = t->width / 8;
        size_t sz = (size_t)n * (size_t)wb, m = cases[c].misalign;
        char *ma = malloc(sz + 8), *mb = malloc(sz + 8), *mbd = malloc(sz + 8),
             *mr = malloc(sz + 8 + GUARD);
        CHECK(ma && mb && mbd && mr);
        char *a = ma + m, *b = mb + m, *bd = mbd + m, *r = mr + m;
        gen_inputs(t, n, h_seed(c, 3, 0, 0), a, b, bd);
        memset(r, 0xEE, sz + GUARD);
        GOAL_Graph g = h_graph();
        V(GOAL_LocalOp(g, a, b, r, cases[c].op, t->dt, t->width, n, GOAL_USERSPACE,
                       GOAL_USERSPACE, GOAL_USERSPACE));
        GOAL_Schedule s = h_compile(g);
        h_run(s);
        check_result(t, cases[c].op, a, b, r, n, m ? "unaligned" : "large count");
        h_free_schedule(s);
        free(ma); free(mb); free(mbd); free(mr);
    }
}

/* A schedule of one userspace DIV of n elements: r = a / d. */
static GOAL_Schedule div_schedule(const struct type *t, void *a, void *d, void *r, int n)
{
    GOAL_Graph g = h_graph();
    V(GOAL_LocalOp(g, a, d, r, GOAL_DIV, t->dt, t->width, n, GOAL_USERSPACE, GOAL_USERSPACE,
                   GOAL_USERSPACE));
    return h_compile(g);
}

/* Runs s, which divides by zero: GOAL_Wait must fail with a described
   error that, when element >= 0, names that element. */
static void expect_div_error(GOAL_Schedule s, const char *what, int element)
{
    GOAL_Handle h = GOAL_Run(s);
    CHECK(h != NULL);
    int rc = GOAL_Wait(h);
    CHECKM(rc < 0, "%s DIV by zero: GOAL_Wait returned %d, expected an error", what, rc);
    const char *es = GOAL_ErrorString(rc);
    CHECKM(es && es[0], "GOAL_ErrorString(%d) is empty", rc);
    if (element >= 0) {
        char want[64];
        snprintf(want, sizeof want, "at element %d", element);
        CHECKM(strstr(GOAL_LastError(), want) != NULL, "%s DIV by zero: error \"%s\" does not say \"%s\"",
               what, GOAL_LastError(), want);
    }
}

/* Integer DIV by zero is an execution error; goal keeps working afterwards. */
static void div_by_zero(void)
{
    for (int ti = 0; ti < NTYPES; ti++) {
        const struct type *t = &types[ti];
        int wb = t->width / 8;
        size_t sz = (size_t)NE * (size_t)wb;
        char *a = malloc(sz), *b = malloc(sz), *bd = malloc(sz), *r = malloc(sz + GUARD);
        CHECK(a && b && bd && r);
        gen_inputs(t, NE, h_seed((uint64_t)ti, 4, 0, 0), a, b, bd);
        memset(r, 0xEE, sz + GUARD);
        if (t->dt != GOAL_FLOAT) {
            put(bd, NE / 2, wb, 0); /* one zero divisor in the middle */
            GOAL_Schedule s = div_schedule(t, a, bd, r, NE);
            expect_div_error(s, t->name, -1);
            /* The same schedule runs fine once the divisor is fixed. */
            put(bd, NE / 2, wb, 5);
            memset(r, 0xEE, sz + GUARD);
            h_run(s);
            check_result(t, GOAL_DIV, a, bd, r, NE, "after a DIV by zero");
            h_free_schedule(s);
            if (ti == 6) {
                /* A long DIV runs in pieces: the zero past the first piece
                   is still named by its element in the whole operation. */
                size_t bsz = (size_t)BIG * (size_t)wb;
                char *ba = malloc(bsz), *bb = malloc(bsz), *bbd = malloc(bsz), *br = malloc(bsz);
                CHECK(ba && bb && bbd && br);
                gen_inputs(t, BIG, h_seed((uint64_t)ti, 5, 0, 0), ba, bb, bbd);
                put(bbd, BIG - 5, wb, 0);
                GOAL_Schedule bs = div_schedule(t, ba, bbd, br, BIG);
                expect_div_error(bs, "long UINT32", BIG - 5);
                h_free_schedule(bs);
                free(ba); free(bb); free(bbd); free(br);
            }
        } else {
            /* Float: IEEE, no error. */
            double num[3] = {1.0, -1.0, 0.0};
            for (int i = 0; i < 3; i++) {
                if (t->width == 32) {
                    float x = (float)num[i], z = 0.0f;
                    memcpy(a + i * 4, &x, 4);
                    memcpy(bd + i * 4, &z, 4);
                } else {
                    double z = 0.0;
                    memcpy(a + i * 8, &num[i], 8);
                    memcpy(bd + i * 8, &z, 8);
                }
            }
            GOAL_Schedule s = div_schedule(t, a, bd, r, 3);
            h_run(s);
            double q[3];
            for (int i = 0; i < 3; i++) {
                if (t->width == 32) {
                    float f;
                    memcpy(&f, r + i * 4, 4);
                    q[i] = f;
                } else {
                    memcpy(&q[i], r + i * 8, 8);
                }
            }
            CHECKM(isinf(q[0]) && q[0] > 0, "%s 1/0 = %g, expected +inf", t->name, q[0]);
            CHECKM(isinf(q[1]) && q[1] < 0, "%s -1/0 = %g, expected -inf", t->name, q[1]);
            CHECKM(isnan(q[2]), "%s 0/0 = %g, expected NaN", t->name, q[2]);
            h_free_schedule(s);
        }
        free(a); free(b); free(bd); free(r);
    }
}

/* WTIME: a plausible, monotonic clock in seconds. */
static void wtime(void)
{
    double t1 = -1, t2 = -1, d = -1;
    GOAL_Graph g = h_graph();
    V(GOAL_LocalOp(g, NULL, NULL, &t1, GOAL_WTIME, GOAL_FLOAT, 64, 1, GOAL_USERSPACE,
                   GOAL_USERSPACE, GOAL_USERSPACE));
    GOAL_Schedule s1 = h_compile(g);

    /* A chain: WTIME -> 8 MiB COPY -> WTIME -> SUB, all in the scratchpad. */
    size_t big = 8u << 20;
    char *src = malloc(big), *dst = malloc(big);
    CHECK(src && dst);
    h_fill(src, big, 77);
    g = h_graph();
    CHECK_OK(GOAL_AllocateScratchpad(g, 24));
    GOAL_Vertex w0 = V(GOAL_LocalOp(g, NULL, NULL, SP(0), GOAL_WTIME, GOAL_FLOAT, 64, 1,
                                    GOAL_USERSPACE, GOAL_USERSPACE, GOAL_SCRATCHPAD));
    GOAL_Vertex cp = V(GOAL_LocalOp(g, src, NULL, dst, GOAL_COPY, GOAL_UINT, 64, (int)(big / 8),
                                    GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    GOAL_Vertex w1 = V(GOAL_LocalOp(g, NULL, NULL, SP(8), GOAL_WTIME, GOAL_FLOAT, 64, 1,
                                    GOAL_USERSPACE, GOAL_USERSPACE, GOAL_SCRATCHPAD));
    GOAL_Vertex sub = V(GOAL_LocalOp(g, SP(8), SP(0), &d, GOAL_SUB, GOAL_FLOAT, 64, 1,
                                     GOAL_SCRATCHPAD, GOAL_SCRATCHPAD, GOAL_USERSPACE));
    REQ(g, w0, cp);
    REQ(g, cp, w1);
    REQ(g, w1, sub);
    REQ(g, w0, sub);
    GOAL_Schedule s2 = h_compile(g);

    double c0 = h_now();
    h_run(s1);
    double c1 = h_now();
    double first = t1;
    t1 = -1;
    h_sleep_ms(50);
    double c2 = h_now();
    h_run(s1);
    double c3 = h_now();
    double second = t1;
    t1 = first;
    t2 = second;
    CHECKM(isfinite(t1) && isfinite(t2) && t1 >= 0 && t2 >= 0, "WTIME wrote %g and %g", t1, t2);
    double lo = (c2 - c1) - 2e-3, hi = (c3 - c0) + 2e-3;
    CHECKM(t2 - t1 >= lo && t2 - t1 <= hi,
           "two WTIMEs 50 ms apart differ by %.6f s; CLOCK_MONOTONIC says between %.6f and %.6f",
           t2 - t1, lo, hi);

    double c4 = h_now();
    h_run(s2);
    double c5 = h_now();
    CHECK_MEM(dst, src, big, "COPY of 8 MiB between the WTIMEs");
    CHECKM(isfinite(d) && d >= 0 && d <= (c5 - c4) + 2e-3,
           "WTIME, 8 MiB COPY, WTIME: difference %.9f s, the execution took %.6f s", d, c5 - c4);
    h_free_schedule(s1);
    h_free_schedule(s2);
    free(src);
    free(dst);
}

/* LocalOpVec: the op works on the concatenation of the pieces. */
static void localop_vec(void)
{
    /* UINT32 ADD: 60 elements; b1 in 3 pieces (out of order in memory), b2 in
     * 5 pieces, bres in 2 pieces with a gap between them. */
    enum { NV = 60 };
    uint32_t A[NV], B[NV], R[NV + 20], want[NV];
    h_fill(A, sizeof A, 101);
    h_fill(B, sizeof B, 102);
    memset(R, 0xEE, sizeof R);
    /* stream1 = A[40..60) A[0..10) A[10..40) */
    void *p1[3] = {A + 40, A + 0, A + 10};
    int l1[3] = {20 * 4, 10 * 4, 30 * 4};
    uint32_t s1[NV];
    memcpy(s1, A + 40, 80);
    memcpy(s1 + 20, A, 40);
    memcpy(s1 + 30, A + 10, 120);
    /* stream2 = B in 5 pieces of 12 elements, reversed */
    void *p2[5];
    int l2[5];
    uint32_t s2[NV];
    for (int i = 0; i < 5; i++) {
        p2[i] = B + 12 * (4 - i);
        l2[i] = 48;
        memcpy(s2 + 12 * i, B + 12 * (4 - i), 48);
    }
    /* bres: first 25 elements at R[0..25), the other 35 at R[45..80) */
    void *p3[2] = {R, R + 45};
    int l3[2] = {25 * 4, 35 * 4};
    for (int i = 0; i < NV; i++)
        want[i] = s1[i] + s2[i];

    GOAL_Graph g = h_graph();
    V(GOAL_LocalOpVec(g, p1, l1, 3, p2, l2, 5, p3, l3, 2, GOAL_UINT, 32, GOAL_ADD,
                      GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    /* The arrays are copied at the call: scribble over them. */
    memset(p1, 0, sizeof p1); memset(l1, 0xff, sizeof l1);
    memset(p2, 0, sizeof p2); memset(l2, 0xff, sizeof l2);
    memset(p3, 0, sizeof p3); memset(l3, 0xff, sizeof l3);

    /* SINT16 COPY gathering a 4x6 matrix column by column (a transpose):
     * 24 pieces of one element each on the b1 side, one piece on bres. */
    int16_t M[4][6], T[6][4], MT_want[6][4];
    h_fill(M, sizeof M, 103);
    memset(T, 0xEE, sizeof T);
    void *pm[24];
    int lm[24];
    for (int c = 0; c < 6; c++)
        for (int r = 0; r < 4; r++) {
            pm[c * 4 + r] = &M[r][c];
            lm[c * 4 + r] = 2;
            MT_want[c][r] = M[r][c];
        }
    void *pt[1] = {T};
    int lt[1] = {(int)sizeof T};
    V(GOAL_LocalOpVec(g, pm, lm, 24, NULL, NULL, 0, pt, lt, 1, GOAL_SINT, 16, GOAL_COPY,
                      GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));

    /* FLOAT64 MUL with b1 pieces in the scratchpad (filled by a COPY). */
    double X[8], Y[8], Z[8], zwant[8];
    for (int i = 0; i < 8; i++) {
        X[i] = 0.5 * i - 1.25;
        Y[i] = 3.0 - 0.25 * i;
        zwant[i] = 0; /* filled below from the scratchpad layout */
    }
    memset(Z, 0xEE, sizeof Z);
    CHECK_OK(GOAL_AllocateScratchpad(g, 128));
    /* X goes to scratchpad bytes [64, 128); the b1 list reads [96,128) then [64,96),
     * so stream1 = X[4..8) X[0..4). */
    GOAL_Vertex cx = V(GOAL_LocalOp(g, X, NULL, SP(64), GOAL_COPY, GOAL_FLOAT, 64, 8,
                                    GOAL_USERSPACE, GOAL_USERSPACE, GOAL_SCRATCHPAD));
    void *px[2] = {SP(96), SP(64)};
    int lx[2] = {32, 32};
    void *py[1] = {Y};
    int ly[1] = {64};
    void *pz[4] = {Z + 6, Z + 4, Z + 2, Z + 0};
    int lz[4] = {16, 16, 16, 16};
    GOAL_Vertex mul = V(GOAL_LocalOpVec(g, px, lx, 2, py, ly, 1, pz, lz, 4, GOAL_FLOAT, 64,
                                        GOAL_MUL, GOAL_SCRATCHPAD, GOAL_USERSPACE,
                                        GOAL_USERSPACE));
    REQ(g, cx, mul);
    double xs[8];
    for (int i = 0; i < 4; i++) {
        xs[i] = X[4 + i];
        xs[4 + i] = X[i];
    }
    /* stream3 element j lands in Z at: j=0,1 -> Z[6],Z[7]; 2,3 -> Z[4],Z[5]; ... */
    for (int j = 0; j < 8; j++) {
        volatile double p = xs[j] * Y[j];
        zwant[(3 - j / 2) * 2 + j % 2] = p;
    }

    GOAL_Schedule s = h_compile(g);
    h_run(s);

    uint32_t got[NV];
    memcpy(got, R, 100);
    memcpy(got + 25, R + 45, 140);
    for (int i = 0; i < NV; i++)
        CHECKM(got[i] == want[i], "LocalOpVec UINT32 ADD element %d: got %u want %u", i,
               got[i], want[i]);
    CHECK_BYTES(R + 25, 20 * 4, 0xEE, "LocalOpVec wrote into the gap between bres pieces");
    CHECK_MEM(T, MT_want, sizeof T, "LocalOpVec COPY transpose");
    CHECK_MEM(Z, zwant, sizeof Z, "LocalOpVec FLOAT64 MUL from the scratchpad");
    h_free_schedule(s);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    for (int ti = 0; ti < NTYPES; ti++) {
        userspace_type(&types[ti]);
        scratchpad_type(&types[ti]);
    }
    big_and_unaligned();
    div_by_zero();
    wtime();
    localop_vec();
    if (h_rank == 0)
        printf("t_localop: all local operations checked\n");
    return h_finish();
}
