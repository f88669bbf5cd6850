/*
 * t_gather: the three gathers of the thesis (5.5) written against the API,
 * for every root.
 *
 *   linear       every rank (the root too) sends its block to the root, which
 *                receives block p from rank p at rbuf + p*rcount.
 *   linear_sync  the root posts the receive of each rank's first segment,
 *                then sends it a 1-byte sync message; a rank sends its first
 *                segment after the sync arrived and the rest after the first
 *                segment; the root copies its own block after all first
 *                segments arrived.
 *   binomial     an inorder binomial tree (thesis 5.3) over ranks renumbered
 *                so the root is 0; inner nodes self-send their block into the
 *                scratchpad, receive their children's subtrees after it and
 *                send the lot to their father; the root receives its own
 *                block by a self-send.
 *
 * Fixes to the thesis listings: GOAL_Requires takes (prereq, target) - the
 * linear_sync listing has every pair the wrong way round; its reqs vector is
 * one short; non-root ranks receive the sync byte into a 1-byte scratchpad
 * (the listing uses rbuf, which only the root has); the root's own block goes
 * to rbuf + root*rcount, not rbuf; the binomial inner node's self-receive is
 * a scratchpad receive (the listing omits GOAL_SCRATCHPAD); the binomial tree
 * functions get the root by renumbering, and for a root other than 0 the
 * root receives a child's subtree (consecutive in the renumbered order) with
 * a RecvVec of two pieces when it wraps around past the last rank.
 * One dependency is added to linear_sync: the root receives a rank's rest
 * after its first segment, so which receive gets which segment does not
 * depend on the order in which goal posts two ready receives.
 *
 * Asserts, for every root, algorithm and size (1 B to 100000 B, and a
 * linear_sync whose rest is 0 bytes): the root's receive buffer holds every
 * rank's block at its place, nothing past it is written, no rank's send
 * buffer is modified, non-root receive buffers are untouched; two runs of
 * each schedule with new data.
 */
// memcheck: 2
// modes: 3
#include "helpers.h"

#define GUARD 32
#define GSP GOAL_SCRATCHPAD
#define GUS GOAL_USERSPACE

/* --------------------------------------------------------------- linear */

static GOAL_Schedule linear_gather(char *sbuf, int scount, char *rbuf, int rcount, int root)
{
    int myrank = h_rank, commsize = h_size;
    GOAL_Graph g = h_graph();
    /* Everyone sends data (root too because we have to copy from send to receive buffer) */
    V(GOAL_Send(g, sbuf, scount, root, 0, GUS));
    if (myrank == root)
        for (int p = 0; p < commsize; p++)
            V(GOAL_Recv(g, rbuf + (size_t)p * (size_t)rcount, rcount, p, 0, GUS));
    return h_compile(g);
}

/* ---------------------------------------------------------- linear_sync */

static GOAL_Schedule linear_gather_sync(char *sbuf, int scount, char *rbuf, int rcount, int root,
                                        int segsize)
{
    int myrank = h_rank, commsize = h_size;
    GOAL_Graph g = h_graph();
    if (myrank != root) {
        CHECK_OK(GOAL_AllocateScratchpad(g, 1));
        GOAL_Vertex syncmsg = V(GOAL_Recv(g, SP(0), 1, root, 0, GSP));
        GOAL_Vertex firstseg = V(GOAL_Send(g, sbuf, segsize, root, 0, GUS));
        GOAL_Vertex rest = V(GOAL_Send(g, sbuf + segsize, scount - segsize, root, 0, GUS));
        REQ(g, syncmsg, firstseg);
        REQ(g, firstseg, rest);
    } else {
        GOAL_Vertex *reqs = calloc((size_t)commsize, sizeof *reqs);
        CHECK(reqs != NULL);
        for (int p = 0; p < commsize; p++) {
            if (p == root)
                continue;
            char *blk = rbuf + (size_t)p * (size_t)rcount;
            reqs[p] = V(GOAL_Recv(g, blk, segsize, p, 0, GUS));
            GOAL_Vertex syncmessage = V(GOAL_Send(g, sbuf, 1, p, 0, GUS));
            GOAL_Vertex rest = V(GOAL_Recv(g, blk + segsize, rcount - segsize, p, 0, GUS));
            REQ(g, syncmessage, rest);
            REQ(g, reqs[p], rest); /* added, see the header comment */
        }
        GOAL_Vertex cplcl = V(GOAL_LocalOp(g, sbuf, NULL, rbuf + (size_t)root * (size_t)rcount,
                                           GOAL_COPY, GOAL_UINT, 8, rcount, GUS, GUS, GUS));
        for (int p = 0; p < commsize; p++)
            if (p != root)
                REQ(g, reqs[p], cplcl);
        free(reqs);
    }
    return h_compile(g);
}

/* ------------------------------------------------------------- binomial */

/* Thesis 5.3: the num_child-th child of rank in an inorder binomial tree of
 * size ranks rooted at 0, or -1. */
static int inorder_bmtree_child(int rank, int size, int num_child)
{
    int childs = 0;
    int mask = 1;
    while (mask < size) {
        int remote = rank ^ mask;
        if (remote < rank)
            break;
        else if (remote < size) {
            if (childs == num_child)
                return remote;
            childs++;
        }
        mask <<= 1;
    }
    return -1;
}

static int inorder_bmtree_father(int rank, int size)
{
    int mask = 1;
    if (0 == rank)
        return 0;
    while (mask < size) {
        int remote = rank ^ mask;
        if (remote < rank)
            return remote;
        mask <<= 1;
    }
    return -1;
}

static GOAL_Schedule binomial_tree_gather(char *sbuf, int scount, char *rbuf, int rcount, int root)
{
    int myrank = h_rank, commsize = h_size;
    int vrank = (myrank - root + commsize) % commsize; /* renumbered: the root is 0 */
#define REAL(v) (((v) + root) % commsize)
    int total_recv = 0;
    GOAL_Graph g = h_graph();
    if (myrank == root) {
        V(GOAL_Send(g, sbuf, scount, root, 1, GUS));
        V(GOAL_Recv(g, rbuf + (size_t)root * (size_t)rcount, rcount, root, 1, GUS));
    }
    if (inorder_bmtree_child(vrank, commsize, 0) != -1) {
        int child, childnum = 0, nreqs = 0;
        GOAL_Vertex reqs[64];
        if (myrank != root) {
            V(GOAL_Send(g, sbuf, scount, myrank, 1, GUS));
            reqs[nreqs++] = V(GOAL_Recv(g, SP(0), scount, myrank, 1, GSP));
        }
        while ((child = inorder_bmtree_child(vrank, commsize, childnum)) != -1) {
            int mycount = child - vrank;
            if (mycount > (commsize - child))
                mycount = commsize - child;
            int nblocks = mycount;
            mycount *= rcount;
            if (myrank != root) {
                reqs[nreqs++] = V(GOAL_Recv(g, SP((size_t)total_recv + (size_t)scount), mycount,
                                            REAL(child), 2, GSP));
            } else {
                /* Real ranks REAL(child) .. REAL(child + nblocks - 1), maybe wrapping. */
                int first = REAL(child);
                if (first + nblocks <= commsize) {
                    V(GOAL_Recv(g, rbuf + (size_t)first * (size_t)rcount, mycount, REAL(child), 2, GUS));
                } else {
                    void *pieces[2] = {rbuf + (size_t)first * (size_t)rcount, rbuf};
                    int lengths[2] = {(commsize - first) * rcount,
                                      (nblocks - (commsize - first)) * rcount};
                    V(GOAL_RecvVec(g, pieces, lengths, 2, REAL(child), 2, GUS));
                }
            }
            total_recv += mycount;
            childnum++;
        }
        if (myrank != root) {
            int father = REAL(inorder_bmtree_father(vrank, commsize));
            GOAL_Vertex send = V(GOAL_Send(g, SP(0), total_recv + scount, father, 2, GSP));
            for (int i = 0; i < nreqs; i++)
                REQ(g, reqs[i], send);
            CHECK_OK(GOAL_AllocateScratchpad(g, (size_t)total_recv + (size_t)scount));
        }
    } else if (myrank != root) {
        int father = REAL(inorder_bmtree_father(vrank, commsize));
        V(GOAL_Send(g, sbuf, scount, father, 2, GUS));
    }
#undef REAL
    return h_compile(g);
}

/* ---------------------------------------------------------------- check */

enum { LINEAR, LINEAR_SYNC, BINOMIAL };
static const char *alg_names[] = {"linear", "linear_sync", "binomial"};

static uint64_t block_seed(int alg, int root, int count, int run, int p)
{
    return h_seed((uint64_t)(alg * 1000 + root), (uint64_t)count, (uint64_t)run, (uint64_t)p);
}

static void check_gather(int alg, int root, int count, int segsize)
{
    size_t n = (size_t)h_size, c = (size_t)count;
    char *sbuf = malloc(c + GUARD), *rbuf = malloc(n * c + GUARD);
    CHECK(sbuf && rbuf);
    GOAL_Schedule s;
    switch (alg) {
    case LINEAR: s = linear_gather(sbuf, count, rbuf, count, root); break;
    case LINEAR_SYNC: s = linear_gather_sync(sbuf, count, rbuf, count, root, segsize); break;
    default: s = binomial_tree_gather(sbuf, count, rbuf, count, root); break;
    }
    for (int run = 0; run < 2; run++) {
        h_fill(sbuf, c, block_seed(alg, root, count, run, h_rank));
        memset(sbuf + c, 0x5A, GUARD);
        memset(rbuf, 0xA5, n * c + GUARD);
        h_run(s);
        CHECK_PATTERN(sbuf, c, block_seed(alg, root, count, run, h_rank),
                      "%s gather, root %d, %d B: rank %d's send buffer was modified",
                      alg_names[alg], root, count, h_rank);
        if (h_rank == root) {
            for (int p = 0; p < h_size; p++)
                CHECK_PATTERN(rbuf + (size_t)p * c, c, block_seed(alg, root, count, run, p),
                              "%s gather, root %d, %d B, run %d: block of rank %d", alg_names[alg],
                              root, count, run, p);
            CHECK_BYTES(rbuf + n * c, GUARD, 0xA5, "%s gather, root %d: past the receive buffer",
                        alg_names[alg], root);
        } else {
            CHECK_BYTES(rbuf, n * c + GUARD, 0xA5,
                        "%s gather, root %d: rank %d's receive buffer (unused) was written",
                        alg_names[alg], root, h_rank);
        }
        /* Next run's refill of sbuf must not race with another rank's still
         * running execution of this run: all executions are finished here
         * (every rank waited), and buffers are private per rank anyway. */
    }
    h_free_schedule(s);
    free(sbuf);
    free(rbuf);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    static const int sizes[] = {1, 777, 65536};
    static const int sync_sizes[][2] = {{4096, 1024}, {100000, 32768}, {1024, 1024}};
    for (int root = 0; root < h_size; root++) {
        for (size_t i = 0; i < 3; i++) {
            check_gather(LINEAR, root, sizes[i], 0);
            check_gather(BINOMIAL, root, sizes[i], 0);
            check_gather(LINEAR_SYNC, root, sync_sizes[i][0], sync_sizes[i][1]);
        }
    }
    if (h_rank == 0)
        printf("t_gather: linear, linear_sync, binomial checked for all %d roots\n", h_size);
    return h_finish();
}
