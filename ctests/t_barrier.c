/*
 * t_barrier: the recursive doubling and Bruck barriers of the thesis (5.4),
 * written against the API with the listings' typos fixed.
 *
 * Recursive doubling: ranks below the largest power of two p2 <= N exchange
 * one-byte messages with rank ^ mask, each round's send and receive waiting
 * for the previous round's receive; when N is not a power of two, rank
 * r >= p2 first reports to r - p2 and is released by it at the end, on a
 * different tag (1) so these "extra step" messages are not confused with the
 * rounds (tag 0).  The listing only makes the first round's send wait for
 * the extra rank's report; its first receive must wait too (see
 * rd_barrier), or the report is not passed on beyond the first round and the
 * schedule is not a barrier (this test caught that with 6 and 7 ranks).  Bruck: in round k every rank sends to rank + 2^k and
 * receives from rank - 2^k (mod N), each round after the previous receive.
 *
 * Asserts, for every N (powers of two or not):
 *   - the thesis version (1-byte scratchpad messages) is a barrier: with one
 *     rank entering 40 ms late (each rank in turn), no rank leaves before the
 *     last one entered (entry/exit times on CLOCK_MONOTONIC, exchanged with
 *     GOAL and compared);
 *   - the same graph carrying data: every message carries the OR of the
 *     values known so far (an 8-byte value per rank, new every iteration,
 *     combined with LocalOp OR in the scratchpad), and at the end every rank
 *     holds the OR of all ranks' values: each rank learned of every other
 *     rank's arrival through the dependencies;
 *   - a hundred back-to-back executions of each barrier succeed.
 */
// memcheck: 2
// ranks: 1 2 3 4 5 6 7 8
// modes: 4 5
#include "helpers.h"

#define GSP GOAL_SCRATCHPAD

/* Helpers for the data-carrying version: cur is the scratchpad slot holding
 * what this rank knows, ready the vertex that produced it. */
struct know {
    int on;         /* carry data? */
    size_t cur;     /* slot of the current value */
    GOAL_Vertex ready;
    size_t next;    /* next free slot */
};

/* cur = cur | slot, after `recv` delivered slot. */
static void know_merge(GOAL_Graph g, struct know *k, size_t slot, GOAL_Vertex recv)
{
    size_t out = k->next;
    k->next += 8;
    GOAL_Vertex merged = V(GOAL_LocalOp(g, SP(k->cur), SP(slot), SP(out), GOAL_OR, GOAL_UINT,
                                        64, 1, GSP, GSP, GSP));
    REQ(g, recv, merged);
    REQ(g, k->ready, merged);
    k->cur = out;
    k->ready = merged;
}

static size_t know_slot(struct know *k)
{
    size_t s = k->next;
    k->next += 8;
    return s;
}

static GOAL_Vertex know_init(GOAL_Graph g, struct know *k, const uint64_t *mine, size_t nslots)
{
    if (!k->on) {
        CHECK_OK(GOAL_AllocateScratchpad(g, 1));
        return GOAL_INVALID_VERTEX;
    }
    CHECK_OK(GOAL_AllocateScratchpad(g, nslots * 8));
    k->cur = 0;
    k->next = 8;
    k->ready = V(GOAL_LocalOp(g, (void *)mine, NULL, SP(0), GOAL_COPY, GOAL_UINT, 64, 1,
                              GOAL_USERSPACE, GOAL_USERSPACE, GSP));
    return k->ready;
}

static void know_finish(GOAL_Graph g, struct know *k, uint64_t *out)
{
    if (!k->on)
        return;
    GOAL_Vertex c = V(GOAL_LocalOp(g, SP(k->cur), NULL, out, GOAL_COPY, GOAL_UINT, 64, 1, GSP,
                                   GOAL_USERSPACE, GOAL_USERSPACE));
    REQ(g, k->ready, c);
}

/* Recursive doubling barrier (thesis 5.4).  mine/out NULL: the 1-byte thesis version. */
static GOAL_Schedule rd_barrier(const uint64_t *mine, uint64_t *out)
{
    int myrank = h_rank, commsize = h_size;
    int commsizepo2 = 1;
    while (commsizepo2 * 2 <= commsize)
        commsizepo2 *= 2;
    struct know k = {mine != NULL, 0, GOAL_INVALID_VERTEX, 0};
    int msg = k.on ? 8 : 1;
    GOAL_Graph g = h_graph();
    GOAL_Vertex init = know_init(g, &k, mine, 128);

    GOAL_Vertex recv = GOAL_INVALID_VERTEX, sendf = GOAL_INVALID_VERTEX;
    GOAL_Vertex recvx = GOAL_INVALID_VERTEX;
    int extra_partner = commsize != commsizepo2 && myrank < commsize - commsizepo2;

    if (extra_partner) { /* hear from rank myrank + p2 before the rounds */
        size_t slot = k.on ? know_slot(&k) : 0;
        recvx = V(GOAL_Recv(g, SP(slot), msg, myrank + commsizepo2, 1, GSP));
        if (k.on)
            know_merge(g, &k, slot, recvx);
    }
    if (myrank < commsizepo2) {
        for (uint32_t mask = 1; mask < (uint32_t)commsizepo2; mask <<= 1) {
            uint32_t remote = (uint32_t)myrank ^ mask;
            size_t slot = k.on ? know_slot(&k) : 0;
            GOAL_Vertex sendn = V(GOAL_Send(g, SP(k.on ? k.cur : 0), msg, (int)remote, 0, GSP));
            GOAL_Vertex recvn = V(GOAL_Recv(g, SP(slot), msg, (int)remote, 0, GSP));
            if (recv != GOAL_INVALID_VERTEX) {
                REQ(g, recv, sendn);
                REQ(g, recv, recvn);
            } else if (recvx != GOAL_INVALID_VERTEX) {
                /* Not in the listing, which only makes the first send wait
                 * for the extra rank (GOAL_Requires(g, recvx, sendf)): the
                 * later sends wait for the previous receive only, so without
                 * this the news of the extra rank's arrival would travel in
                 * the first round only, and e.g. with 6 ranks rank 3 could
                 * leave before rank 5 arrived. */
                REQ(g, recvx, recvn);
            }
            if (k.on)
                REQ(g, k.ready, sendn);
            if (sendf == GOAL_INVALID_VERTEX)
                sendf = sendn;
            if (k.on)
                know_merge(g, &k, slot, recvn);
            recv = recvn;
        }
    }
    if (commsize != commsizepo2) {
        if (extra_partner) { /* release rank myrank + p2 after the rounds */
            GOAL_Vertex sendx = V(GOAL_Send(g, SP(k.on ? k.cur : 0), msg, myrank + commsizepo2, 1, GSP));
            if (sendf != GOAL_INVALID_VERTEX)
                REQ(g, recvx, sendf);
            REQ(g, recv != GOAL_INVALID_VERTEX ? recv : recvx, sendx);
            if (k.on)
                REQ(g, k.ready, sendx);
        } else if (myrank >= commsizepo2) { /* report to myrank - p2, wait for release */
            GOAL_Vertex sendx = V(GOAL_Send(g, SP(0), msg, myrank - commsizepo2, 1, GSP));
            if (k.on)
                REQ(g, init, sendx);
            size_t slot = k.on ? know_slot(&k) : 0;
            GOAL_Vertex rx = V(GOAL_Recv(g, SP(slot), msg, myrank - commsizepo2, 1, GSP));
            if (k.on) {
                k.cur = slot; /* the release carries everything */
                k.ready = rx;
            }
        }
    }
    know_finish(g, &k, out);
    return h_compile(g);
}

/* Bruck barrier (thesis 5.4). */
static GOAL_Schedule bruck_barrier(const uint64_t *mine, uint64_t *out)
{
    int myrank = h_rank, commsize = h_size;
    struct know k = {mine != NULL, 0, GOAL_INVALID_VERTEX, 0};
    int msg = k.on ? 8 : 1;
    GOAL_Graph g = h_graph();
    know_init(g, &k, mine, 128);
    GOAL_Vertex recvo = GOAL_INVALID_VERTEX;
    for (int distance = 1; distance < commsize; distance <<= 1) {
        uint32_t from = (uint32_t)((myrank - distance + commsize) % commsize);
        uint32_t to = (uint32_t)((myrank + distance) % commsize);
        size_t slot = k.on ? know_slot(&k) : 0;
        GOAL_Vertex sendn = V(GOAL_Send(g, SP(k.on ? k.cur : 0), msg, (int)to, 0, GSP));
        GOAL_Vertex recvn = V(GOAL_Recv(g, SP(slot), msg, (int)from, 0, GSP));
        if (recvo != GOAL_INVALID_VERTEX) {
            REQ(g, recvo, sendn);
            REQ(g, recvo, recvn);
        }
        if (k.on) {
            REQ(g, k.ready, sendn);
            know_merge(g, &k, slot, recvn);
        }
        recvo = recvn;
    }
    know_finish(g, &k, out);
    return h_compile(g);
}

static void check_is_barrier(GOAL_Schedule s, const char *name)
{
    int iters = h_size < 2 ? 2 : h_size;
    double *all = malloc(sizeof(double) * 2 * (size_t)h_size);
    CHECK(all != NULL);
    for (int it = 0; it < iters; it++) {
        int late = it % h_size;
        if (h_rank == late)
            h_sleep_ms(40);
        double mine[2];
        mine[0] = h_now();
        h_run(s);
        mine[1] = h_now();
        h_allgather(mine, sizeof mine, all);
        int last_in = 0, first_out = 0;
        for (int p = 0; p < h_size; p++) {
            if (all[2 * p] > all[2 * last_in])
                last_in = p;
            if (all[2 * p + 1] < all[2 * first_out + 1])
                first_out = p;
        }
        CHECKM(all[2 * last_in] <= all[2 * first_out + 1],
               "%s, late rank %d: rank %d left at %.6f, %.6f s before rank %d entered", name, late,
               first_out, all[2 * first_out + 1], all[2 * last_in] - all[2 * first_out + 1], last_in);
    }
    free(all);
    for (int i = 0; i < 100; i++)
        h_run(s);
}

/* Rank p's value in iteration it: random bits in byte lane p % 8 plus one bit
 * that no other rank (of up to 8) sets, so a missing rank always shows. */
static uint64_t contribution(int it, int p)
{
    uint64_t lane = 0xffULL << (8 * (p % 8));
    return (h_seed((uint64_t)it, (uint64_t)p, 21, 0) & lane) | (1ULL << (8 * (p % 8) + (p / 8) % 8));
}

static void check_knowledge(GOAL_Schedule s, const char *name, uint64_t *mine, uint64_t *out)
{
    for (int it = 0; it < 30; it++) {
        uint64_t want = 0;
        for (int p = 0; p < h_size; p++)
            want |= contribution(it, p);
        *mine = contribution(it, h_rank);
        *out = 0xdeadbeef;
        h_run(s);
        CHECKM(*out == want, "%s iteration %d: rank %d ends with 0x%016" PRIx64 ", the OR of all is 0x%016" PRIx64,
               name, it, h_rank, *out, want);
    }
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    uint64_t mine = 0, out = 0;

    GOAL_Schedule rd = rd_barrier(NULL, NULL);
    GOAL_Schedule bruck = bruck_barrier(NULL, NULL);
    GOAL_Schedule rd_data = rd_barrier(&mine, &out);
    GOAL_Schedule bruck_data = bruck_barrier(&mine, &out);

    check_is_barrier(rd, "recursive doubling barrier");
    check_is_barrier(bruck, "Bruck barrier");
    check_knowledge(rd_data, "recursive doubling with data", &mine, &out);
    check_knowledge(bruck_data, "Bruck with data", &mine, &out);

    h_free_schedule(rd);
    h_free_schedule(bruck);
    h_free_schedule(rd_data);
    h_free_schedule(bruck_data);
    if (h_rank == 0)
        printf("t_barrier: recursive doubling and Bruck barriers hold on %d ranks\n", h_size);
    return h_finish();
}
