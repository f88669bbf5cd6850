/*
 * t_large: messages of more than 2 GiB through the large-count calls.
 *
 * Rank 0 sends, rank 1 receives, T_LARGE_BYTES (default 2.5 GiB) each time,
 * one case after the other so that at most one sender's and one receiver's
 * buffer live at once (5 GiB on the machine):
 *   1. malloc'd buffers, GOAL_Send_c / GOAL_Recv_c, then on the receiver a
 *      GOAL_LocalOp_c (ADD, 8-bit unsigned, in place) over every byte:
 *      byte i must then be 2 * pattern(i) mod 256;
 *   2. GOAL_Alloc'd buffers (the shared heap: the receiver copies straight
 *      out of the sender's heap), GOAL_Send_c / GOAL_Recv_c;
 *   3. GOAL_SendVec_c / GOAL_RecvVec_c, the sender's first piece larger
 *      than 2 GiB, the receiver's list split elsewhere;
 * and the limit, on every rank, without memory: a GOAL_Send_c of 4 GiB
 * compiles to a clear refusal, as does a GOAL_Allreduce_init_c of 4 GiB;
 * and the large-count collectives and GOAL_LocalOpVec_c at small sizes,
 * against the model.
 * Every byte received is compared with the pattern (so lost, shifted or
 * doubled data anywhere, past 2 GiB in particular, is caught); a failure
 * names the byte and whether it lies past 2 GiB.
 * T_LARGE_EDGE=1 adds the largest message, 4 GiB - 1 (see edge_message).
 * Which path carried each message (CMA, the stream, the heap) is for the
 * engine to choose; GOAL_CMA_MAX=1 forces the stream (see docs/api.md).
 */
// ranks: 2
// timeout: 150
#include "helpers.h"

#include <sys/mman.h>

static size_t large_bytes(void)
{
    const char *e = getenv("T_LARGE_BYTES");
    return e ? (size_t)strtoull(e, NULL, 0) : ((size_t)5 << 29); /* 2.5 GiB */
}

/* Fails unless buf holds the pattern `seed` over n bytes, each byte doubled
 * (mod 256) when `doubled`. Word by word: about a second for 2.5 GiB. */
static void check_large(const uint8_t *buf, size_t n, uint64_t seed, int doubled, const char *what)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = h_mix(seed ^ (uint64_t)(i >> 3) * 0x100000001b3ULL), got;
        if (doubled)
            w = (w << 1) & 0xfefefefefefefefeULL;
        memcpy(&got, buf + i, 8);
        if (got != w)
            break;
    }
    for (; i < n; i++) {
        uint8_t want = h_pat(seed, i);
        if (doubled)
            want = (uint8_t)(want * 2);
        if (buf[i] != want)
            FAILF("%s: byte %zu of %zu (%s 2 GiB) is 0x%02x, expected 0x%02x", what, i, n,
                  i >= ((size_t)1 << 31) ? "past" : "before", buf[i], want);
    }
}

/* One message of n bytes from rank 0's buf to rank 1's, `what` naming it
 * (the buffers are the caller's: a fresh 2.5 GiB buffer costs seconds of
 * page faults in a VM, so the cases share them where they can). */
static void one_message(uint8_t *buf, const char *what, size_t n, int vec, int localop)
{
    uint64_t seed = h_seed(40, (uint64_t)vec, (uint64_t)localop, (uint64_t)strlen(what));
    GOAL_Graph g = h_graph();
    size_t split = vec ? (size_t)9 << 28 : 0; /* 2.25 GiB */
    if (split >= n)
        split = n / 2;
    if (h_rank == 0) {
        h_fill(buf, n, seed);
        if (vec) {
            void *p[2] = {buf, buf + split};
            size_t len[2] = {split, n - split};
            V(GOAL_SendVec_c(g, p, len, 2, 1, 7, GOAL_USERSPACE));
        } else {
            V(GOAL_Send_c(g, buf, n, 1, 7, GOAL_USERSPACE));
        }
    } else {
        /* Untouched bytes would show as a mismatch. */
        memset(buf, 0xA5, n);
        GOAL_Vertex r;
        if (vec) {
            size_t first = n - split; /* the sender's pieces, the other way round */
            void *p[2] = {buf, buf + first};
            size_t len[2] = {first, n - first};
            r = V(GOAL_RecvVec_c(g, p, len, 2, 0, 7, GOAL_USERSPACE));
        } else {
            r = V(GOAL_Recv_c(g, buf, n, 0, 7, GOAL_USERSPACE));
        }
        if (localop) {
            GOAL_Vertex a = V(GOAL_LocalOp_c(g, buf, buf, buf, GOAL_ADD, GOAL_UINT, 8, n, GOAL_USERSPACE,
                                             GOAL_USERSPACE, GOAL_USERSPACE));
            REQ(g, r, a);
        }
    }
    GOAL_Schedule s = h_compile(g);
    double t0 = h_now();
    h_run(s);
    double dt = h_now() - t0;
    h_free_schedule(s);
    if (h_rank == 1) {
        check_large(buf, n, seed, localop, what);
        printf("rank 1: %s of %zu bytes%s received and checked (%.2f s, %.1f GB/s)\n", what, n,
               localop ? ", doubled by GOAL_LocalOp_c," : "", dt, (double)n / dt / 1e9);
    }
    h_sync();
}

/* The largest message, 4 GiB - 1 bytes, with T_LARGE_EDGE=1 (not in CI:
 * 4 GiB of memory and some 15 s). The sender's buffer is mapped without
 * memory: it reads as zeros except four 1 MiB windows written with the
 * pattern, at the start, across 2 GiB, at 3 GiB and at the end; the
 * receiver checks the windows and that every other byte is zero. */
static void edge_message(void)
{
    size_t n = ((size_t)1 << 32) - 1, w = (size_t)1 << 20;
    size_t at[4] = {0, ((size_t)1 << 31) - w / 2, (size_t)3 << 30, n - w};
    uint64_t seed = h_seed(41, 0, 0, 0);
    uint8_t *buf = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECKM(buf != MAP_FAILED, "mmap of %zu bytes failed", n);
    GOAL_Graph g = h_graph();
    if (h_rank == 0) {
        for (int k = 0; k < 4; k++)
            h_fill(buf + at[k], w, seed + (uint64_t)k);
        V(GOAL_Send_c(g, buf, n, 1, 8, GOAL_USERSPACE));
    } else {
        memset(buf, 0xA5, n);
        V(GOAL_Recv_c(g, buf, n, 0, 8, GOAL_USERSPACE));
    }
    GOAL_Schedule s = h_compile(g);
    double t0 = h_now();
    h_run(s);
    double dt = h_now() - t0;
    h_free_schedule(s);
    if (h_rank == 1) {
        size_t pos = 0;
        for (int k = 0; k < 4; k++) {
            static const uint8_t zeros[4096];
            for (; pos < at[k]; pos += sizeof zeros) {
                size_t len = at[k] - pos < sizeof zeros ? at[k] - pos : sizeof zeros;
                if (memcmp(buf + pos, zeros, len) != 0)
                    for (size_t i = pos; i < pos + len; i++)
                        CHECKM(buf[i] == 0, "4 GiB - 1 message: byte %zu is 0x%02x, expected 0", i, buf[i]);
            }
            CHECK_PATTERN(buf + at[k], w, seed + (uint64_t)k, "4 GiB - 1 message: window at %zu", at[k]);
            pos = at[k] + w;
        }
        printf("rank 1: a message of %zu bytes (4 GiB - 1) received and checked (%.2f s)\n", n, dt);
    }
    munmap(buf, n);
    h_sync();
}

/* Past what one message carries: refused by the compile, naming the size. */
static void refusals(void)
{
    size_t four = (size_t)1 << 32;
    GOAL_Graph g = h_graph();
    static char dummy;
    V(GOAL_Send_c(g, &dummy, four, h_size - 1 - h_rank, 1, GOAL_USERSPACE));
    GOAL_Schedule s = GOAL_Compile(g);
    CHECKM(s == NULL, "GOAL_Compile accepted a send of 4 GiB");
    CHECKM(strstr(GOAL_LastError(), "larger than 4 GiB - 1") && strstr(GOAL_LastError(), "4294967296"),
           "the refusal does not name the size: %s", GOAL_LastError());
    CHECK_OK(GOAL_FreeGraph(g));
    /* A receive into a buffer past 4 GiB takes any message: compiled. */
    g = h_graph();
    V(GOAL_Recv_c(g, &dummy, (size_t)5 << 30, 0, 1, GOAL_USERSPACE));
    s = h_compile(g);
    h_free_schedule(s);
    /* 2^29 doubles are 4 GiB: more than a reduction's vector may hold. */
    s = GOAL_Allreduce_init_c(&dummy, &dummy, (size_t)1 << 29, GOAL_FLOAT, 64, GOAL_ADD, GOAL_ALG_AUTO);
    CHECKM(s == NULL, "GOAL_Allreduce_init_c accepted a message of 4 GiB");
    CHECKM(strstr(GOAL_LastError(), "GOAL_Allreduce_init_c") && strstr(GOAL_LastError(), "4 GiB - 1"),
           "the refusal does not name the call and the limit: %s", GOAL_LastError());
}

/* The large-count collectives and GOAL_LocalOpVec_c at sizes an int holds
 * too: the same results as their int forms' model. */
static void small_forms(void)
{
    enum { N = 1000 };
    static int64_t in[N], out[N], red[N], copy[N];
    for (int i = 0; i < N; i++)
        in[i] = (int64_t)h_rank * 1000003 + i;
    GOAL_Schedule ar = GOAL_Allreduce_init_c(in, out, N, GOAL_SINT, 64, GOAL_ADD, GOAL_ALG_AUTO);
    GOAL_Schedule rd = GOAL_Reduce_init_c(in, red, N, GOAL_SINT, 64, GOAL_MAX, h_size - 1, GOAL_ALG_AUTO);
    CHECKM(ar && rd, "a large-count collective's _init_c failed");
    GOAL_Graph g = h_graph();
    void *p1[2] = {in, in + N / 2}, *p3[2] = {copy + N / 2, copy};
    size_t l1[2] = {N / 2 * 8, N / 2 * 8}, l3[2] = {N / 2 * 8, N / 2 * 8};
    V(GOAL_LocalOpVec_c(g, p1, l1, 2, p1, l1, 2, p3, l3, 2, GOAL_UINT, 64, GOAL_COPY, GOAL_USERSPACE, GOAL_USERSPACE,
                        GOAL_USERSPACE));
    GOAL_Schedule lv = h_compile(g);
    h_run(ar);
    h_run(rd);
    h_run(lv);
    for (int i = 0; i < N; i++) {
        int64_t sum = 0;
        for (int r = 0; r < h_size; r++)
            sum += (int64_t)r * 1000003 + i;
        CHECKM(out[i] == sum, "GOAL_Allreduce_init_c: element %d is %" PRId64 ", expected %" PRId64, i, out[i], sum);
        if (h_rank == h_size - 1)
            CHECKM(red[i] == in[i], "GOAL_Reduce_init_c (MAX at the last rank): element %d is %" PRId64, i, red[i]);
        CHECKM(copy[(i + N / 2) % N] == in[i], "GOAL_LocalOpVec_c: element %d moved wrong", i);
    }
    h_free_schedule(ar);
    h_free_schedule(rd);
    h_free_schedule(lv);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    /* 17-28 s alone on 2 cores, up to 60 s beside other jobs. */
    h_start_watchdog(140);
    if (h_size != 2)
        h_skip("t_large runs on 2 ranks");
    size_t n = large_bytes();
    refusals();
    small_forms();
    h_sync();
    /* The receiver's buffer serves every case (the heap's single copy needs
     * only the sender's in the heap); the sender's malloc'd one goes before
     * its GOAL_Alloc'd one comes: 5 GiB on the machine at most. */
    uint8_t *buf = h_alloc(H_MALLOC, n);
    one_message(buf, "malloc'd message", n, 0, 1);
    one_message(buf, "vector message", n, 1, 0);
    if (h_rank == 0) {
        h_free(H_MALLOC, buf);
        buf = h_alloc(H_GOAL_ALLOC, n);
    }
    one_message(buf, "message from GOAL_Alloc'd memory", n, 0, 0);
    h_free(h_rank == 0 ? H_GOAL_ALLOC : H_MALLOC, buf);
    if (getenv("T_LARGE_EDGE") && atoi(getenv("T_LARGE_EDGE")) == 1)
        edge_message();
    return h_finish();
}
