/*
 * t_scatter_tree: the tree based scatter of the thesis' Figure 1.1, five ranks.
 *
 * Root 0 holds five items; rank 1 gets items 1 and 2 from the root into its
 * scratchpad, keeps item 1 (a COPY to its receive buffer) and forwards item 2
 * to rank 2; likewise rank 3 gets items 3 and 4 and forwards item 4 to rank 4;
 * the root copies item 0 locally.  The scratchpad and the forwarding sends
 * depend on the receive, exactly as in Figure 1.2 (rank 1's task list).
 *
 * Asserts: every rank's receive buffer holds exactly its item of the root's
 * send buffer and nothing past it is written, for items of 4 B (the thesis'
 * size), 1000 B and 1 MiB, over three runs of each schedule with new data in
 * the root's buffer each time.  Needs exactly 5 ranks, skips (77) otherwise.
 */
// ranks: 5
#include "helpers.h"

#define GUARD 64

static GOAL_Schedule tree_scatter5(char *sbuf, char *rbuf, int item)
{
    GOAL_Graph g = h_graph();
    switch (h_rank) {
    case 0: { /* root: item 0 stays, items 1-2 go to rank 1, items 3-4 to rank 3 */
        V(GOAL_LocalOp(g, sbuf, NULL, rbuf, GOAL_COPY, GOAL_UINT, 8, item, GOAL_USERSPACE,
                       GOAL_USERSPACE, GOAL_USERSPACE));
        V(GOAL_Send(g, sbuf + 1 * item, 2 * item, 1, 0, GOAL_USERSPACE));
        V(GOAL_Send(g, sbuf + 3 * item, 2 * item, 3, 0, GOAL_USERSPACE));
        break;
    }
    case 1:
    case 3: { /* inner nodes: Figure 1.2 */
        CHECK_OK(GOAL_AllocateScratchpad(g, (size_t)(2 * item)));
        GOAL_Vertex recv = V(GOAL_Recv(g, SP(0), 2 * item, 0, 0, GOAL_SCRATCHPAD));
        GOAL_Vertex copy = V(GOAL_LocalOp(g, SP(0), NULL, rbuf, GOAL_COPY, GOAL_UINT, 8, item,
                                          GOAL_SCRATCHPAD, GOAL_USERSPACE, GOAL_USERSPACE));
        GOAL_Vertex send = V(GOAL_Send(g, SP(item), item, h_rank + 1, 0, GOAL_SCRATCHPAD));
        REQ(g, recv, copy);
        REQ(g, recv, send);
        break;
    }
    default: /* leaves 2 and 4: straight into the receive buffer */
        V(GOAL_Recv(g, rbuf, item, h_rank - 1, 0, GOAL_USERSPACE));
        break;
    }
    return h_compile(g);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    if (h_size != 5)
        h_skip("the scatter of Figure 1.1 needs exactly 5 ranks");

    static const int items[] = {4, 1000, 1 << 20};
    for (size_t k = 0; k < sizeof items / sizeof items[0]; k++) {
        int item = items[k];
        char *sbuf = malloc((size_t)5 * (size_t)item);
        char *rbuf = malloc((size_t)item + GUARD);
        CHECK(sbuf && rbuf);
        GOAL_Schedule s = tree_scatter5(sbuf, rbuf, item);
        for (int run = 0; run < 3; run++) {
            /* Item i of this run: pattern seed (item, run, i). */
            if (h_rank == 0)
                for (int i = 0; i < 5; i++)
                    h_fill(sbuf + (size_t)i * (size_t)item, (size_t)item,
                           h_seed((uint64_t)item, (uint64_t)run, (uint64_t)i, 11));
            memset(rbuf, 0xA5, (size_t)item + GUARD);
            h_run(s);
            CHECK_PATTERN(rbuf, (size_t)item, h_seed((uint64_t)item, (uint64_t)run, (uint64_t)h_rank, 11),
                          "rank %d's item (%d B, run %d)", h_rank, item, run);
            CHECK_BYTES(rbuf + item, GUARD, 0xA5, "past rank %d's item (%d B)", h_rank, item);
            h_sync(); /* the root refills sbuf only after everyone checked */
        }
        h_free_schedule(s);
        free(sbuf);
        free(rbuf);
    }
    if (h_rank == 0)
        printf("t_scatter_tree: Figure 1.1 scatter checked for 4 B, 1000 B, 1 MiB items\n");
    return h_finish();
}
