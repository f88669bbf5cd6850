/*
 * t_stress: many tags, receives posted out of order, non-overtaking.
 *
 * For every distance d (0 = self), every rank sends 40 tags' worth of
 * messages to rank + d and receives the same from rank - d, all in one
 * execution.  Sizes vary with the tag from 0 B to 3000 B, every 8th tag is
 * about 96 KiB.  Every 5th tag carries three messages (sent one after the
 * other: each send waits for the previous one), to check that messages with
 * one source and tag are received in the order sent.  The sends are all
 * started at once; the receives are posted one at a time (each waits for the
 * previous one) in a pseudo-random order of tags, so most messages arrive
 * before their receive exists and sit in the unexpected queue.
 *
 * Asserts: every receive holds exactly its message (pattern of source,
 * destination, tag, sequence number and run), the three messages of a tag
 * arrive in send order, nothing past a message is written; three runs with
 * new data.
 */
// memcheck: 2
// modes: 2 3
#include "helpers.h"

#define NT 40
#define MULTI 3
#define GUARD 16

struct msg {
    int tag, seq, len;
    char *sbuf, *rbuf;
};

static int msg_len(int t, int d)
{
    if (t % 8 == 7)
        return 96 * 1024 + t * 17;
    return (t * 131 + d * 17) % 3000;
}

static int copies(int t) { return t % 5 == 0 ? MULTI : 1; }
static int tag_of(int t, int d) { return t * 7 + d; }

static uint64_t mseed(int src, int dst, int tag, int seq, int run)
{
    return h_seed((uint64_t)src, (uint64_t)dst, (uint64_t)tag, (uint64_t)(seq * 100 + run));
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    int per_d = 0;
    for (int t = 0; t < NT; t++)
        per_d += copies(t);
    int total = per_d * h_size;
    struct msg *out = calloc((size_t)total, sizeof *out), *in = calloc((size_t)total, sizeof *in);
    CHECK(out && in);

    GOAL_Graph g = h_graph();
    for (int d = 0; d < h_size; d++) {
        int to = (h_rank + d) % h_size, from = (h_rank - d + h_size) % h_size;
        struct msg *o = out + d * per_d, *r = in + d * per_d;
        /* Sends, in tag order; same-tag copies chained. */
        int k = 0;
        for (int t = 0; t < NT; t++) {
            GOAL_Vertex prev = GOAL_INVALID_VERTEX;
            for (int c = 0; c < copies(t); c++, k++) {
                o[k].tag = tag_of(t, d);
                o[k].seq = c;
                o[k].len = msg_len(t, d);
                o[k].sbuf = malloc((size_t)o[k].len + 1);
                CHECK(o[k].sbuf != NULL);
                GOAL_Vertex v = V(GOAL_Send(g, o[k].sbuf, o[k].len, to, o[k].tag, GOAL_USERSPACE));
                if (prev != GOAL_INVALID_VERTEX)
                    REQ(g, prev, v);
                prev = v;
            }
        }
        /* Receives: tags in a shuffled order, one chain. */
        int perm[NT];
        for (int t = 0; t < NT; t++)
            perm[t] = t;
        uint64_t rs = h_seed(81, (uint64_t)h_rank, (uint64_t)d, 0);
        for (int t = NT - 1; t > 0; t--) {
            rs = h_mix(rs);
            int j = (int)(rs % (uint64_t)(t + 1)), tmp = perm[t];
            perm[t] = perm[j];
            perm[j] = tmp;
        }
        GOAL_Vertex prev = GOAL_INVALID_VERTEX;
        k = 0;
        for (int i = 0; i < NT; i++) {
            int t = perm[i];
            for (int c = 0; c < copies(t); c++, k++) {
                r[k].tag = tag_of(t, d);
                r[k].seq = c;
                r[k].len = msg_len(t, d);
                r[k].rbuf = malloc((size_t)r[k].len + GUARD);
                CHECK(r[k].rbuf != NULL);
                GOAL_Vertex v = V(GOAL_Recv(g, r[k].rbuf, r[k].len, from, r[k].tag, GOAL_USERSPACE));
                if (prev != GOAL_INVALID_VERTEX)
                    REQ(g, prev, v);
                prev = v;
            }
        }
    }
    GOAL_Schedule s = h_compile(g);

    for (int run = 0; run < 3; run++) {
        for (int d = 0; d < h_size; d++) {
            int to = (h_rank + d) % h_size;
            for (int k = 0; k < per_d; k++) {
                struct msg *o = &out[d * per_d + k], *r = &in[d * per_d + k];
                h_fill(o->sbuf, (size_t)o->len, mseed(h_rank, to, o->tag, o->seq, run));
                memset(r->rbuf, 0xA5, (size_t)r->len + GUARD);
            }
        }
        h_run(s);
        for (int d = 0; d < h_size; d++) {
            int from = (h_rank - d + h_size) % h_size;
            for (int k = 0; k < per_d; k++) {
                struct msg *r = &in[d * per_d + k];
                CHECK_PATTERN(r->rbuf, (size_t)r->len, mseed(from, h_rank, r->tag, r->seq, run),
                              "run %d: message %d of tag %d (%d B) from rank %d", run, r->seq,
                              r->tag, r->len, from);
                CHECK_BYTES(r->rbuf + r->len, GUARD, 0xA5, "past message %d of tag %d from rank %d",
                            r->seq, r->tag, from);
            }
        }
    }
    h_free_schedule(s);
    for (int k = 0; k < total; k++) {
        free(out[k].sbuf);
        free(in[k].rbuf);
    }
    free(out);
    free(in);
    if (h_rank == 0)
        printf("t_stress: %d messages per rank, out-of-order receives, checked\n", total);
    return h_finish();
}
