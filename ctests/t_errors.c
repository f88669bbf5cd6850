/*
 * t_errors: bad graphs are refused with a useful message, execution errors
 * are reported by GOAL_Wait/GOAL_Test, NULL objects give error codes, and goal
 * keeps working after all of it.
 *
 * A bad element may be refused when it is added (the call returns a negative
 * vertex or code) or when the graph is compiled (GOAL_Compile returns NULL);
 * either is accepted, and GOAL_LastError() right after the refusing call must
 * name the problem where the spec says so.  Every refusal has a positive
 * control next to it (the same call with the fault removed compiles and
 * runs), so an implementation that refuses everything fails.
 *
 * Asserts:
 *   - GOAL_Send to rank 4242 / GOAL_Recv from rank 4242 / SendVec to 4242:
 *     refused, the message contains "4242"; dest == group size, dest -1 (ANY
 *     is for receives), source -2: refused;
 *   - a cycle of three local ops: refused, the message contains "cycle"; a
 *     self-dependency: refused; a dependency on a vertex that does not exist
 *     or on GOAL_INVALID_VERTEX: refused;
 *   - scratchpad ranges past the allocated size (send, receive, local op
 *     result, a SendVec piece), and scratchpad use without a scratchpad:
 *     refused; a range ending exactly at the size: accepted and runs;
 *   - XOR/AND/OR on FLOAT (binary16 and bfloat16 too), width 12, FLOAT of
 *     width 8, BFLOAT of width 32, widths 0 and 128, an unknown data type and
 *     op, LocalOpVec XOR on FLOAT: refused;
 *   - negative count (Send, Recv, LocalOp), negative tag on a send (-1 too:
 *     GOAL_ANY_TAG is for receives), tag -2 on a receive, a negative piece
 *     length and a negative piece count, NULL piece arrays: refused;
 *   - truncation: a 100 B message into a 50 B receive and a 1 MiB message
 *     into a 512 KiB receive make GOAL_Wait (and GOAL_Test) return < 0 on the
 *     receiver, and the sender's execution still ends (within 20 s); a 50 B
 *     message into a 100 B receive completes it, the message's bytes in
 *     place and the rest untouched;
 *   - NULL graph / schedule / handle passed to every function: an error code
 *     (or NULL / invalid vertex / 0 from IsScheduleValid), no crash;
 *   - GOAL_ErrorString of every error code seen: non-NULL, non-empty,
 *     printable, the same pointer on a second call (static text);
 *   - GOAL_IsExtensionAvailable of a made-up id is not 1;
 *   - after all that, a ring exchange still works.
 */
// memcheck: 2
#include "helpers.h"

/* ------------------------------------------------- error code bookkeeping */

static int codes[256];
static int ncodes;

static void seen_code(int code)
{
    if (code >= 0)
        return;
    for (int i = 0; i < ncodes; i++)
        if (codes[i] == code)
            return;
    if (ncodes < 256)
        codes[ncodes++] = code;
}

static void check_error_strings(void)
{
    CHECKM(ncodes > 0, "no error code was seen at all");
    for (int i = 0; i < ncodes; i++) {
        const char *a = GOAL_ErrorString(codes[i]);
        CHECKM(a != NULL, "GOAL_ErrorString(%d) returned NULL", codes[i]);
        size_t n = strlen(a);
        CHECKM(n > 0 && n < 1000, "GOAL_ErrorString(%d) has length %zu", codes[i], n);
        for (size_t k = 0; k < n; k++)
            CHECKM(isprint((unsigned char)a[k]), "GOAL_ErrorString(%d) has a non-printable byte 0x%02x",
                   codes[i], (unsigned char)a[k]);
        const char *b = GOAL_ErrorString(codes[i]);
        CHECKM(a == b, "GOAL_ErrorString(%d) is not static text (two calls, two pointers)", codes[i]);
        if (h_rank == 0)
            printf("  error code %d: %s\n", codes[i], a);
    }
    const char *ok = GOAL_ErrorString(GOAL_SUCCESS);
    CHECKM(ok != NULL, "GOAL_ErrorString(GOAL_SUCCESS) returned NULL");
    CHECKM(GOAL_ErrorString(-123456) != NULL, "GOAL_ErrorString of an unknown code returned NULL");
}

/* --------------------------------------------------------- refusal check */

/*
 * The graph g must be refused.  add_rc is the result of the call that added
 * the bad element (a vertex or an int code): < 0 means it was refused on the
 * spot.  needle, if not NULL, must appear (case-insensitively) in
 * GOAL_LastError() taken right after the refusing call.
 */
#define REFUSED(g, add_rc, needle, ...) refused_((g), (int64_t)(add_rc), (needle), __FILE__, __LINE__, __VA_ARGS__)

__attribute__((format(printf, 6, 7)))
static void refused_(GOAL_Graph g, int64_t add_rc, const char *needle, const char *file, int line,
                     const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char msg[1024];
    if (add_rc < 0) {
        snprintf(msg, sizeof msg, "%s", h_last_error());
        seen_code(add_rc < INT32_MIN ? -1 : (int)add_rc);
    } else {
        GOAL_Schedule s = GOAL_Compile(g);
        snprintf(msg, sizeof msg, "%s", h_last_error());
        if (s != NULL) {
            GOAL_FreeSchedule(s);
            h_fail_(file, line, "refused", "%s: accepted when added and compiled", what);
        }
    }
    if (needle && !h_contains_ci(msg, needle))
        h_fail_(file, line, "refused", "%s: GOAL_LastError() \"%s\" does not mention \"%s\"", what,
                msg, needle);
    if (h_rank == 0)
        printf("  refused as expected: %-45s -> %s\n", what, msg);
    int rc = GOAL_FreeGraph(g);
    if (rc != GOAL_SUCCESS)
        h_fail_(file, line, "GOAL_FreeGraph", "%s: freeing the refused graph returned %d", what, rc);
}

/* Positive control: the graph compiles and one execution succeeds. */
static void accepted(GOAL_Graph g, const char *what)
{
    GOAL_Schedule s = GOAL_Compile(g);
    CHECKM(s != NULL, "positive control \"%s\" was refused", what);
    CHECK_OK(GOAL_FreeGraph(g));
    h_run(s);
    h_free_schedule(s);
}

static char buf[4096], buf2[4096];

/* ----------------------------------------------------------------- ranks */

static void bad_ranks(void)
{
    GOAL_Graph g = h_graph();
    GOAL_Vertex v = GOAL_Send(g, buf, 4, 4242, 0, GOAL_USERSPACE);
    REFUSED(g, v, "4242", "GOAL_Send to rank 4242");

    g = h_graph();
    v = GOAL_Recv(g, buf, 4, 4242, 0, GOAL_USERSPACE);
    REFUSED(g, v, "4242", "GOAL_Recv from rank 4242");

    g = h_graph();
    void *o[1] = {buf};
    int l[1] = {4};
    v = GOAL_SendVec(g, o, l, 1, 4242, 0, GOAL_USERSPACE);
    REFUSED(g, v, "4242", "GOAL_SendVec to rank 4242");

    g = h_graph();
    v = GOAL_Send(g, buf, 4, h_size, 0, GOAL_USERSPACE);
    REFUSED(g, v, NULL, "GOAL_Send to rank == group size");

    g = h_graph();
    v = GOAL_Send(g, buf, 4, -1, 0, GOAL_USERSPACE);
    REFUSED(g, v, NULL, "GOAL_Send to rank -1");

    g = h_graph();
    v = GOAL_Recv(g, buf, 4, -2, 0, GOAL_USERSPACE);
    REFUSED(g, v, NULL, "GOAL_Recv from rank -2");

    /* control: the last rank is fine (everyone sends to and receives from it) */
    g = h_graph();
    V(GOAL_Send(g, buf, 4, h_size - 1, 0, GOAL_USERSPACE));
    if (h_rank == h_size - 1)
        for (int p = 0; p < h_size; p++)
            V(GOAL_Recv(g, buf2 + 4 * p, 4, p, 0, GOAL_USERSPACE));
    accepted(g, "send to the last rank");
}

/* ------------------------------------------------------------ dependencies */

static void bad_dependencies(void)
{
    GOAL_Graph g = h_graph();
    GOAL_Vertex a = V(GOAL_LocalOp(g, buf, NULL, buf2, GOAL_COPY, GOAL_UINT, 8, 16,
                                   GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    GOAL_Vertex b = V(GOAL_LocalOp(g, buf2, NULL, buf2 + 16, GOAL_COPY, GOAL_UINT, 8, 16,
                                   GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    GOAL_Vertex c = V(GOAL_LocalOp(g, buf2 + 16, NULL, buf, GOAL_COPY, GOAL_UINT, 8, 16,
                                   GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    REQ(g, a, b);
    REQ(g, b, c);
    int rc = GOAL_Requires(g, c, a);
    REFUSED(g, rc, "cycle", "a -> b -> c -> a");

    g = h_graph();
    a = V(GOAL_LocalOp(g, buf, NULL, buf2, GOAL_COPY, GOAL_UINT, 8, 16, GOAL_USERSPACE,
                       GOAL_USERSPACE, GOAL_USERSPACE));
    rc = GOAL_Requires(g, a, a);
    REFUSED(g, rc, NULL, "a vertex that requires itself");

    g = h_graph();
    a = V(GOAL_LocalOp(g, buf, NULL, buf2, GOAL_COPY, GOAL_UINT, 8, 16, GOAL_USERSPACE,
                       GOAL_USERSPACE, GOAL_USERSPACE));
    rc = GOAL_Requires(g, a, a + 1000);
    REFUSED(g, rc, NULL, "a dependency on a vertex that does not exist");

    g = h_graph();
    a = V(GOAL_LocalOp(g, buf, NULL, buf2, GOAL_COPY, GOAL_UINT, 8, 16, GOAL_USERSPACE,
                       GOAL_USERSPACE, GOAL_USERSPACE));
    rc = GOAL_Requires(g, GOAL_INVALID_VERTEX, a);
    REFUSED(g, rc, NULL, "a dependency on GOAL_INVALID_VERTEX");

    /* control: a chain and a diamond */
    g = h_graph();
    a = V(GOAL_LocalOp(g, buf, NULL, buf2, GOAL_COPY, GOAL_UINT, 8, 16, GOAL_USERSPACE,
                       GOAL_USERSPACE, GOAL_USERSPACE));
    b = V(GOAL_LocalOp(g, buf2, NULL, buf2 + 16, GOAL_COPY, GOAL_UINT, 8, 16, GOAL_USERSPACE,
                       GOAL_USERSPACE, GOAL_USERSPACE));
    c = V(GOAL_LocalOp(g, buf2, NULL, buf2 + 32, GOAL_COPY, GOAL_UINT, 8, 16, GOAL_USERSPACE,
                       GOAL_USERSPACE, GOAL_USERSPACE));
    GOAL_Vertex d = V(GOAL_LocalOp(g, buf2 + 16, buf2 + 32, buf2 + 48, GOAL_XOR, GOAL_UINT, 8, 16,
                                   GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    REQ(g, a, b);
    REQ(g, a, c);
    REQ(g, b, d);
    REQ(g, c, d);
    h_fill(buf, 16, 5);
    memset(buf2, 0xEE, 64);
    accepted(g, "a diamond of local ops");
    CHECK_PATTERN(buf2 + 16, 16, 5, "diamond: b");
    CHECK_PATTERN(buf2 + 32, 16, 5, "diamond: c");
    CHECK_BYTES(buf2 + 48, 16, 0, "diamond: d = b XOR c");
}

/* -------------------------------------------------------------- scratchpad */

static void bad_scratchpad(void)
{
    GOAL_Graph g = h_graph();
    CHECK_OK(GOAL_AllocateScratchpad(g, 16));
    GOAL_Vertex v = GOAL_Send(g, SP(8), 16, h_rank, 0, GOAL_SCRATCHPAD);
    REFUSED(g, v, NULL, "send of scratchpad [8, 24) of 16 B");

    g = h_graph();
    CHECK_OK(GOAL_AllocateScratchpad(g, 16));
    v = GOAL_Recv(g, SP(16), 1, h_rank, 0, GOAL_SCRATCHPAD);
    REFUSED(g, v, NULL, "receive into scratchpad [16, 17) of 16 B");

    g = h_graph();
    CHECK_OK(GOAL_AllocateScratchpad(g, 16));
    v = GOAL_LocalOp(g, buf, NULL, SP(12), GOAL_COPY, GOAL_UINT, 32, 2, GOAL_USERSPACE,
                     GOAL_USERSPACE, GOAL_SCRATCHPAD);
    REFUSED(g, v, NULL, "local op result at scratchpad [12, 20) of 16 B");

    g = h_graph();
    CHECK_OK(GOAL_AllocateScratchpad(g, 16));
    void *o[2] = {SP(0), SP(12)};
    int l[2] = {8, 8};
    v = GOAL_SendVec(g, o, l, 2, h_rank, 0, GOAL_SCRATCHPAD);
    REFUSED(g, v, NULL, "SendVec piece at scratchpad [12, 20) of 16 B");

    g = h_graph();
    v = GOAL_Send(g, SP(0), 1, h_rank, 0, GOAL_SCRATCHPAD);
    REFUSED(g, v, NULL, "scratchpad send without a scratchpad");

    /* control: [8, 16) of 16 B, self-message within the scratchpad and out */
    g = h_graph();
    CHECK_OK(GOAL_AllocateScratchpad(g, 16));
    GOAL_Vertex in = V(GOAL_LocalOp(g, buf, NULL, SP(0), GOAL_COPY, GOAL_UINT, 64, 1,
                                    GOAL_USERSPACE, GOAL_USERSPACE, GOAL_SCRATCHPAD));
    GOAL_Vertex sd = V(GOAL_Send(g, SP(0), 8, h_rank, 0, GOAL_SCRATCHPAD));
    GOAL_Vertex rv = V(GOAL_Recv(g, SP(8), 8, h_rank, 0, GOAL_SCRATCHPAD));
    GOAL_Vertex out = V(GOAL_LocalOp(g, SP(8), NULL, buf2, GOAL_COPY, GOAL_UINT, 64, 1,
                                     GOAL_SCRATCHPAD, GOAL_USERSPACE, GOAL_USERSPACE));
    REQ(g, in, sd);
    REQ(g, rv, out);
    h_fill(buf, 8, 6);
    memset(buf2, 0, 8);
    accepted(g, "scratchpad [8, 16) of 16 B");
    CHECK_PATTERN(buf2, 8, 6, "the scratchpad control's data");
}

/* ------------------------------------------------------ types, widths, ops */

static void bad_types(void)
{
    static const struct {
        GOAL_Op op;
        GOAL_DataType dt;
        int width;
        const char *what;
    } bad[] = {
        {GOAL_XOR, GOAL_FLOAT, 32, "XOR on FLOAT32"},
        {GOAL_XOR, GOAL_FLOAT, 64, "XOR on FLOAT64"},
        {GOAL_AND, GOAL_FLOAT, 64, "AND on FLOAT64"},
        {GOAL_OR, GOAL_FLOAT, 32, "OR on FLOAT32"},
        {GOAL_ADD, GOAL_SINT, 12, "SINT of width 12"},
        {GOAL_XOR, GOAL_UINT, 12, "UINT of width 12"},
        {GOAL_XOR, GOAL_FLOAT, 16, "XOR on FLOAT16 (binary16)"},
        {GOAL_AND, GOAL_BFLOAT, 16, "AND on BFLOAT16"},
        {GOAL_ADD, GOAL_BFLOAT, 32, "BFLOAT of width 32"},
        {GOAL_ADD, GOAL_FLOAT, 8, "FLOAT of width 8"},
        {GOAL_ADD, GOAL_UINT, 0, "width 0"},
        {GOAL_ADD, GOAL_UINT, 128, "width 128"},
        {GOAL_ADD, GOAL_SINT, 4, "width 4 (bits)"},
        {GOAL_ADD, (GOAL_DataType)7, 32, "data type 7"},
        {(GOAL_Op)42, GOAL_UINT, 32, "op 42"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        GOAL_Graph g = h_graph();
        GOAL_Vertex v = GOAL_LocalOp(g, buf, buf + 512, buf2, bad[i].op, bad[i].dt, bad[i].width,
                                     4, GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE);
        REFUSED(g, v, NULL, "LocalOp %s", bad[i].what);
    }
    GOAL_Graph g = h_graph();
    void *p1[1] = {buf}, *p2[1] = {buf + 512}, *p3[1] = {buf2};
    int l[1] = {32};
    GOAL_Vertex v = GOAL_LocalOpVec(g, p1, l, 1, p2, l, 1, p3, l, 1, GOAL_FLOAT, 32, GOAL_XOR,
                                    GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE);
    REFUSED(g, v, NULL, "LocalOpVec XOR on FLOAT32");

    /* control: XOR on UINT32 and ADD on FLOAT32 */
    g = h_graph();
    V(GOAL_LocalOp(g, buf, buf + 512, buf2, GOAL_XOR, GOAL_UINT, 32, 4, GOAL_USERSPACE,
                   GOAL_USERSPACE, GOAL_USERSPACE));
    V(GOAL_LocalOp(g, buf + 1024, buf + 1536, buf2 + 64, GOAL_ADD, GOAL_FLOAT, 32, 4,
                   GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    uint32_t x[4] = {1, 2, 0xffff0000u, 7}, y[4] = {3, 2, 0x00ffff00u, 0};
    float fx[4] = {1.5f, -2.0f, 0.25f, 8.0f}, fy[4] = {1.0f, 2.0f, 0.5f, -7.0f};
    memcpy(buf, x, 16);
    memcpy(buf + 512, y, 16);
    memcpy(buf + 1024, fx, 16);
    memcpy(buf + 1536, fy, 16);
    accepted(g, "XOR on UINT32 and ADD on FLOAT32");
    uint32_t z[4];
    float fz[4];
    memcpy(z, buf2, 16);
    memcpy(fz, buf2 + 64, 16);
    for (int i = 0; i < 4; i++) {
        CHECKM(z[i] == (x[i] ^ y[i]), "control XOR element %d: 0x%x", i, z[i]);
        CHECKM(fz[i] == fx[i] + fy[i], "control FLOAT32 ADD element %d: %g", i, (double)fz[i]);
    }
}

/* ------------------------------------------------- negative counts, tags */

static void bad_counts_and_tags(void)
{
    GOAL_Graph g;
    GOAL_Vertex v;
    int me = h_rank;

    g = h_graph();
    v = GOAL_Send(g, buf, -1, me, 0, GOAL_USERSPACE);
    REFUSED(g, v, NULL, "GOAL_Send count -1");

    g = h_graph();
    v = GOAL_Recv(g, buf, -5, me, 0, GOAL_USERSPACE);
    REFUSED(g, v, NULL, "GOAL_Recv count -5");

    g = h_graph();
    v = GOAL_Send(g, buf, 4, me, -1, GOAL_USERSPACE);
    REFUSED(g, v, NULL, "GOAL_Send tag -1 (GOAL_ANY_TAG is for receives)");

    g = h_graph();
    v = GOAL_Send(g, buf, 4, me, -3, GOAL_USERSPACE);
    REFUSED(g, v, NULL, "GOAL_Send tag -3");

    g = h_graph();
    v = GOAL_Recv(g, buf, 4, me, -2, GOAL_USERSPACE);
    REFUSED(g, v, NULL, "GOAL_Recv tag -2");

    g = h_graph();
    v = GOAL_LocalOp(g, buf, buf, buf2, GOAL_ADD, GOAL_UINT, 8, -1, GOAL_USERSPACE,
                     GOAL_USERSPACE, GOAL_USERSPACE);
    REFUSED(g, v, NULL, "GOAL_LocalOp num_elements -1");

    g = h_graph();
    void *o[2] = {buf, buf + 8};
    int l[2] = {8, -8};
    v = GOAL_SendVec(g, o, l, 2, me, 0, GOAL_USERSPACE);
    REFUSED(g, v, NULL, "GOAL_SendVec piece length -8");

    g = h_graph();
    l[1] = 8;
    v = GOAL_RecvVec(g, o, l, -1, me, 0, GOAL_USERSPACE);
    REFUSED(g, v, NULL, "GOAL_RecvVec num_elements -1");

    g = h_graph();
    v = GOAL_SendVec(g, NULL, l, 2, me, 0, GOAL_USERSPACE);
    REFUSED(g, v, NULL, "GOAL_SendVec with NULL offsets");

    g = h_graph();
    v = GOAL_RecvVec(g, o, NULL, 2, me, 0, GOAL_USERSPACE);
    REFUSED(g, v, NULL, "GOAL_RecvVec with NULL lengths");

    /* control: count 0, tag 0, a large tag, ANY_TAG on a receive */
    g = h_graph();
    V(GOAL_Send(g, buf, 0, me, 0, GOAL_USERSPACE));
    GOAL_Vertex r0 = V(GOAL_Recv(g, buf2, 0, me, 0, GOAL_USERSPACE));
    V(GOAL_Send(g, buf, 4, me, 1 << 20, GOAL_USERSPACE));
    GOAL_Vertex rany = V(GOAL_Recv(g, buf2, 4, me, GOAL_ANY_TAG, GOAL_USERSPACE));
    REQ(g, r0, rany); /* else the ANY_TAG receive could take the 0 B tag-0 message */
    h_fill(buf, 4, 9);
    memset(buf2, 0, 4);
    accepted(g, "count 0, tag 0, tag 2^20, ANY_TAG receive");
    CHECK_PATTERN(buf2, 4, 9, "tag 2^20 to an ANY_TAG receive");
}

/* ------------------------------------------------------------- truncation */

/*
 * Roles keep the failing execution from holding anyone else up: rank 2k
 * sends to rank 2k+1, which receives with a receive that is too small; an
 * unpaired last rank (odd N, N=1 included) sends to itself.  A receiver must
 * see the error; a sender must see its execution end (successfully or not)
 * within 20 s, not hang because its message was refused.
 */
static void truncation(void)
{
    int paired = h_rank + 1 < h_size || h_rank % 2 == 1;
    int sender = paired && h_rank % 2 == 0, receiver = paired && h_rank % 2 == 1;
    int peer = !paired ? h_rank : sender ? h_rank + 1 : h_rank - 1;
    static const int cases[][2] = {{100, 50}, {1 << 20, 512 * 1024}};
    for (int c = 0; c < 2; c++) {
        int msg = cases[c][0], rcv = cases[c][1];
        char *s = malloc((size_t)msg), *r = malloc((size_t)msg);
        CHECK(s && r);
        GOAL_Graph g = h_graph();
        if (!receiver)
            V(GOAL_Send(g, s, msg, peer, 0, GOAL_USERSPACE));
        if (!sender)
            V(GOAL_Recv(g, r, rcv, peer, 0, GOAL_USERSPACE));
        GOAL_Schedule sc = h_compile(g);
        for (int run = 0; run < 2; run++) {
            GOAL_Handle h = GOAL_Run(sc);
            CHECK(h != NULL);
            int rc;
            if (sender) {
                double t0 = h_now();
                while ((rc = GOAL_Test(h)) == 0)
                    CHECKM(h_now() - t0 < 20, "the sender of a %d B message that was truncated into "
                           "%d B never finished its execution", msg, rcv);
                seen_code(rc);
                continue;
            }
            if (run == 0) {
                rc = GOAL_Wait(h);
                CHECKM(rc < 0, "a %d B message into a %d B receive: GOAL_Wait returned %d", msg, rcv, rc);
            } else {
                double t0 = h_now();
                while ((rc = GOAL_Test(h)) == 0)
                    CHECKM(h_now() - t0 < 20, "GOAL_Test never reported the truncated execution");
                CHECKM(rc < 0, "a %d B message into a %d B receive: GOAL_Test returned %d", msg, rcv, rc);
            }
            seen_code(rc);
            if (h_rank == h_size - 1)
                printf("  truncation %d B -> %d B: %d (%s)\n", msg, rcv, rc, h_strerr(rc));
        }
        h_free_schedule(sc);
        free(s);
        free(r);
        h_sync(); /* everyone is done with the failing schedule */
    }
    /* A smaller message completes the receive (ring, every rank). */
    int next = (h_rank + 1) % h_size, prev = (h_rank + h_size - 1) % h_size;
    char s[50], r[100];
    GOAL_Graph g = h_graph();
    V(GOAL_Send(g, s, 50, next, 0, GOAL_USERSPACE));
    V(GOAL_Recv(g, r, 100, prev, 0, GOAL_USERSPACE));
    GOAL_Schedule sc = h_compile(g);
    h_fill(s, 50, h_seed(91, (uint64_t)h_rank, 0, 0));
    memset(r, 0xA5, 100);
    h_run(sc);
    CHECK_PATTERN(r, 50, h_seed(91, (uint64_t)prev, 0, 0), "50 B message in a 100 B receive");
    CHECK_BYTES(r + 50, 50, 0xA5, "the 50 B of a 100 B receive that no message filled");
    h_free_schedule(sc);
}

/* ------------------------------------------------------------ NULL objects */

static void null_objects(void)
{
    int rc;
    void *o[1] = {buf};
    int l[1] = {4};
#define NULL_INT(call)                                                             \
    do {                                                                           \
        rc = (call);                                                               \
        CHECKM(rc < 0, #call " returned %d", rc);                                 \
        seen_code(rc);                                                             \
    } while (0)
#define NULL_VERTEX(call)                                                          \
    do {                                                                           \
        GOAL_Vertex v_ = (call);                                                   \
        CHECKM(v_ < 0, #call " returned vertex %lld", (long long)v_);             \
    } while (0)
    NULL_INT(GOAL_FreeGraph(NULL));
    NULL_INT(GOAL_AllocateScratchpad(NULL, 16));
    NULL_INT(GOAL_Requires(NULL, 0, 1));
    NULL_VERTEX(GOAL_Send(NULL, buf, 4, 0, 0, GOAL_USERSPACE));
    NULL_VERTEX(GOAL_Recv(NULL, buf, 4, 0, 0, GOAL_USERSPACE));
    NULL_VERTEX(GOAL_SendVec(NULL, o, l, 1, 0, 0, GOAL_USERSPACE));
    NULL_VERTEX(GOAL_RecvVec(NULL, o, l, 1, 0, 0, GOAL_USERSPACE));
    NULL_VERTEX(GOAL_LocalOp(NULL, buf, buf, buf2, GOAL_ADD, GOAL_UINT, 8, 4, GOAL_USERSPACE,
                             GOAL_USERSPACE, GOAL_USERSPACE));
    NULL_VERTEX(GOAL_LocalOpVec(NULL, o, l, 1, o, l, 1, o, l, 1, GOAL_UINT, 8, GOAL_ADD,
                                GOAL_USERSPACE, GOAL_USERSPACE, GOAL_USERSPACE));
    CHECKM(GOAL_Compile(NULL) == NULL, "GOAL_Compile(NULL) returned a schedule");
    CHECK_EQ(GOAL_IsScheduleValid(NULL), 0);
    GOAL_MakeScheduleReusable(NULL); /* must simply not crash */
    NULL_INT(GOAL_FreeSchedule(NULL));
    CHECKM(GOAL_Run(NULL) == NULL, "GOAL_Run(NULL) returned a handle");
    NULL_INT(GOAL_Test(NULL));
    NULL_INT(GOAL_Wait(NULL));
    rc = GOAL_Free(NULL);
    CHECKM(rc <= 0, "GOAL_Free(NULL) returned %d", rc);
#undef NULL_INT
#undef NULL_VERTEX
    rc = GOAL_IsExtensionAvailable(0x7fffffff);
    CHECKM(rc != 1, "GOAL_IsExtensionAvailable(0x7fffffff) claims a made-up extension");
}

/* ----------------------------------------------------------- still alive */

static void still_works(void)
{
    int next = (h_rank + 1) % h_size, prev = (h_rank + h_size - 1) % h_size;
    static char s[100000], r[100000];
    GOAL_Graph g = h_graph();
    V(GOAL_Send(g, s, sizeof s, next, 0, GOAL_USERSPACE));
    V(GOAL_Recv(g, r, sizeof r, prev, 0, GOAL_USERSPACE));
    GOAL_Schedule sc = h_compile(g);
    h_fill(s, sizeof s, h_seed(92, (uint64_t)h_rank, 0, 0));
    h_run(sc);
    CHECK_PATTERN(r, sizeof r, h_seed(92, (uint64_t)prev, 0, 0), "ring exchange after the errors");
    h_free_schedule(sc);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    bad_ranks();
    bad_dependencies();
    bad_scratchpad();
    bad_types();
    bad_counts_and_tags();
    truncation();
    null_objects();
    still_works();
    check_error_strings();
    if (h_rank == 0)
        printf("t_errors: %d distinct error codes seen, all refused cleanly\n", ncodes);
    return h_finish();
}
