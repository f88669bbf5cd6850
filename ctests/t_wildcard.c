/*
 * t_wildcard: receives with GOAL_ANY_SOURCE and GOAL_ANY_TAG.
 *
 * Every message starts with a header naming its sender, tag and sequence
 * number, followed by a pattern derived from them, so the receiver can tell
 * which message landed where without any status API.
 *
 * Asserts:
 *   - ANY_SOURCE, fixed tag: a collector (rank 0, then the last rank) posts N
 *     receives from any source; every rank (the collector too) sends it one
 *     message; each message lands intact in exactly one receive, every rank
 *     exactly once; with 64 B and with 256 KiB messages;
 *   - ANY_TAG, fixed source: a rank receives three messages of different
 *     tags and sizes (smaller than the receives) from the previous rank in
 *     the order they were sent (sends and receives are chained), each intact,
 *     the bytes past each message untouched;
 *   - ANY_SOURCE with ANY_TAG: the collector gets two messages (two tags)
 *     from every rank, all intact, each (source, tag) exactly once;
 *   - specific and wildcard receives side by side: tag-31 messages go to the
 *     receive posted for their source, tag-30 messages to the ANY_SOURCE
 *     receives for tag 30;
 *   - two runs of every schedule.
 */
// memcheck: 2
// modes: 2 3
#include "helpers.h"

struct hdr {
    int32_t src, tag, seq, len;
};

static uint64_t body_seed(int src, int tag, int seq, int run)
{
    return h_seed((uint64_t)src, (uint64_t)tag, (uint64_t)seq, (uint64_t)run + 1000);
}

static void make_msg(char *buf, int len, int src, int tag, int seq, int run)
{
    struct hdr h = {src, tag, seq, len};
    memcpy(buf, &h, sizeof h);
    h_fill(buf + sizeof h, (size_t)len - sizeof h, body_seed(src, tag, seq, run));
}

/* Check one received message; returns its header. */
static struct hdr check_msg(const char *buf, int maxlen, int run, const char *what)
{
    struct hdr h;
    memcpy(&h, buf, sizeof h);
    CHECKM(h.src >= 0 && h.src < h_size && h.len >= (int)sizeof h && h.len <= maxlen,
           "%s: garbage header (src %d tag %d seq %d len %d)", what, h.src, h.tag, h.seq, h.len);
    CHECK_PATTERN(buf + sizeof h, (size_t)h.len - sizeof h, body_seed(h.src, h.tag, h.seq, run),
                  "%s: body of the message from rank %d tag %d seq %d", what, h.src, h.tag, h.seq);
    return h;
}

static void any_source(int collector, int len)
{
    char *sbuf = malloc((size_t)len), *rbuf = malloc((size_t)len * (size_t)h_size);
    CHECK(sbuf && rbuf);
    GOAL_Graph g = h_graph();
    V(GOAL_Send(g, sbuf, len, collector, 5, GOAL_USERSPACE));
    if (h_rank == collector)
        for (int i = 0; i < h_size; i++)
            V(GOAL_Recv(g, rbuf + (size_t)i * (size_t)len, len, GOAL_ANY_SOURCE, 5, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < 2; run++) {
        make_msg(sbuf, len, h_rank, 5, 0, run);
        memset(rbuf, 0xA5, (size_t)len * (size_t)h_size);
        h_run(s);
        if (h_rank == collector) {
            int *got = calloc((size_t)h_size, sizeof *got);
            CHECK(got != NULL);
            for (int i = 0; i < h_size; i++) {
                struct hdr h = check_msg(rbuf + (size_t)i * (size_t)len, len, run, "ANY_SOURCE receive");
                CHECKM(h.tag == 5 && h.len == len, "ANY_SOURCE receive %d got tag %d len %d", i, h.tag, h.len);
                got[h.src]++;
            }
            for (int p = 0; p < h_size; p++)
                CHECKM(got[p] == 1, "ANY_SOURCE (%d B, run %d): rank %d's message arrived %d times",
                       len, run, p, got[p]);
            free(got);
        }
    }
    h_free_schedule(s);
    free(sbuf);
    free(rbuf);
}

static void any_tag(void)
{
    int next = (h_rank + 1) % h_size, prev = (h_rank + h_size - 1) % h_size;
    static const int tags[3] = {11, 3, 7}, lens[3] = {40, 100, 16};
    char sbuf[3][128], rbuf[3][128];
    GOAL_Graph g = h_graph();
    GOAL_Vertex ls = GOAL_INVALID_VERTEX, lr = GOAL_INVALID_VERTEX;
    for (int i = 0; i < 3; i++) {
        GOAL_Vertex sd = V(GOAL_Send(g, sbuf[i], lens[i], next, tags[i], GOAL_USERSPACE));
        GOAL_Vertex rv = V(GOAL_Recv(g, rbuf[i], 128, prev, GOAL_ANY_TAG, GOAL_USERSPACE));
        if (ls != GOAL_INVALID_VERTEX) {
            REQ(g, ls, sd);
            REQ(g, lr, rv);
        }
        ls = sd;
        lr = rv;
    }
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < 2; run++) {
        for (int i = 0; i < 3; i++)
            make_msg(sbuf[i], lens[i], h_rank, tags[i], i, run);
        memset(rbuf, 0xA5, sizeof rbuf);
        h_run(s);
        for (int i = 0; i < 3; i++) {
            struct hdr h = check_msg(rbuf[i], 128, run, "ANY_TAG receive");
            CHECKM(h.src == prev && h.tag == tags[i] && h.seq == i,
                   "ANY_TAG receive %d got (src %d, tag %d, seq %d), expected (%d, %d, %d)", i, h.src,
                   h.tag, h.seq, prev, tags[i], i);
            CHECK_BYTES(rbuf[i] + lens[i], 128 - lens[i], 0xA5, "past a %d B message in a 128 B ANY_TAG receive", lens[i]);
        }
    }
    h_free_schedule(s);
}

static void any_any(void)
{
    enum { LEN = 256 };
    int collector = h_size / 2;
    char sbuf[2][LEN];
    char *rbuf = malloc((size_t)LEN * 2 * (size_t)h_size);
    CHECK(rbuf != NULL);
    GOAL_Graph g = h_graph();
    V(GOAL_Send(g, sbuf[0], LEN, collector, 20, GOAL_USERSPACE));
    V(GOAL_Send(g, sbuf[1], LEN, collector, 21, GOAL_USERSPACE));
    if (h_rank == collector)
        for (int i = 0; i < 2 * h_size; i++)
            V(GOAL_Recv(g, rbuf + (size_t)i * LEN, LEN, GOAL_ANY_SOURCE, GOAL_ANY_TAG, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < 2; run++) {
        make_msg(sbuf[0], LEN, h_rank, 20, 0, run);
        make_msg(sbuf[1], LEN, h_rank, 21, 1, run);
        h_run(s);
        if (h_rank == collector) {
            int *got = calloc(2 * (size_t)h_size, sizeof *got);
            CHECK(got != NULL);
            for (int i = 0; i < 2 * h_size; i++) {
                struct hdr h = check_msg(rbuf + (size_t)i * LEN, LEN, run, "ANY_SOURCE+ANY_TAG receive");
                CHECKM(h.tag == 20 || h.tag == 21, "ANY_SOURCE+ANY_TAG receive got tag %d", h.tag);
                got[2 * h.src + (h.tag - 20)]++;
            }
            for (int i = 0; i < 2 * h_size; i++)
                CHECKM(got[i] == 1, "ANY_SOURCE+ANY_TAG: message (rank %d, tag %d) arrived %d times",
                       i / 2, 20 + i % 2, got[i]);
            free(got);
        }
    }
    h_free_schedule(s);
    free(rbuf);
}

static void mixed(void)
{
    enum { LEN = 64 };
    char s30[LEN], s31[LEN];
    char *r30 = malloc((size_t)LEN * (size_t)h_size), *r31 = malloc((size_t)LEN * (size_t)h_size);
    CHECK(r30 && r31);
    GOAL_Graph g = h_graph();
    GOAL_Vertex a = V(GOAL_Send(g, s31, LEN, 0, 31, GOAL_USERSPACE));
    GOAL_Vertex b = V(GOAL_Send(g, s30, LEN, 0, 30, GOAL_USERSPACE));
    REQ(g, a, b);
    if (h_rank == 0)
        for (int p = 0; p < h_size; p++) {
            V(GOAL_Recv(g, r30 + (size_t)p * LEN, LEN, GOAL_ANY_SOURCE, 30, GOAL_USERSPACE));
            V(GOAL_Recv(g, r31 + (size_t)p * LEN, LEN, p, 31, GOAL_USERSPACE));
        }
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < 2; run++) {
        make_msg(s30, LEN, h_rank, 30, 0, run);
        make_msg(s31, LEN, h_rank, 31, 0, run);
        h_run(s);
        if (h_rank == 0) {
            int *got = calloc((size_t)h_size, sizeof *got);
            CHECK(got != NULL);
            for (int p = 0; p < h_size; p++) {
                struct hdr h = check_msg(r31 + (size_t)p * LEN, LEN, run, "specific receive");
                CHECKM(h.src == p && h.tag == 31,
                       "the receive for (rank %d, tag 31) got (rank %d, tag %d)", p, h.src, h.tag);
                h = check_msg(r30 + (size_t)p * LEN, LEN, run, "wildcard receive");
                CHECKM(h.tag == 30, "an ANY_SOURCE receive for tag 30 got tag %d", h.tag);
                got[h.src]++;
            }
            for (int p = 0; p < h_size; p++)
                CHECKM(got[p] == 1, "tag 30 from rank %d arrived %d times", p, got[p]);
            free(got);
        }
    }
    h_free_schedule(s);
    free(r30);
    free(r31);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    any_source(0, 64);
    any_source(h_size - 1, 64);
    any_source(0, 256 * 1024);
    any_tag();
    any_any();
    mixed();
    if (h_rank == 0)
        printf("t_wildcard: ANY_SOURCE / ANY_TAG matching checked\n");
    return h_finish();
}
