/*
 * t_eager_choice: messages just above the eager limit, sent eagerly or by
 * rendezvous as goal's measurements choose, keep their bytes and their order.
 *
 * The test sets GOAL_CALIBRATE=off (the built-in eager limit of 8 KiB, so
 * that 48 KiB messages are the chooser's on any machine) and
 * GOAL_TRACE_FILE before GOAL_Init.  Two ranks exchange three 48 KiB
 * messages each way with one tag, the sends and the receives independent
 * of each other, run after run with new data: while the two ways settle,
 * and whenever the other way is explored, a rank's three messages go some
 * eagerly and some by rendezvous (an RTS, then the stream or CMA), and the
 * receiver must still match them in the order they were sent.
 *
 * Asserts: every byte of every message, in order, in every run; and, in
 * the trace rank 0 wrote, that both ways carried some of the 48 KiB
 * messages (each side of each message counted once).
 */
// ranks: 2
// modes: 2
#include "helpers.h"

#define LEN (48 << 10)
#define MSGS 3
#define RUNS 120
#define TAG 5

int main(int argc, char **argv)
{
    char path[256];
    snprintf(path, sizeof path, "/tmp/goal-t_eager_choice-%d.json", (int)getppid());
    setenv("GOAL_TRACE_FILE", path, 1);
    setenv("GOAL_CALIBRATE", "off", 1);
    h_init(argc, argv);
    if (h_size != 2) {
        printf("GOAL-TEST-SKIP: t_eager_choice runs on 2 ranks\n");
        GOAL_Finalize();
        return H_SKIP;
    }
    int peer = 1 - h_rank;
    char *out[MSGS], *in[MSGS];
    GOAL_Graph g = h_graph();
    for (int k = 0; k < MSGS; k++) {
        out[k] = h_alloc(H_MALLOC, LEN);
        in[k] = h_alloc(H_MALLOC, LEN);
        V(GOAL_Send(g, out[k], LEN, peer, TAG, GOAL_USERSPACE));
        V(GOAL_Recv(g, in[k], LEN, peer, TAG, GOAL_USERSPACE));
    }
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < RUNS; run++) {
        for (int k = 0; k < MSGS; k++)
            h_fill(out[k], LEN, h_seed(run, h_rank, peer, k));
        h_run(s);
        for (int k = 0; k < MSGS; k++)
            CHECK_PATTERN(in[k], LEN, h_seed(run, peer, h_rank, k), "message %d of %d from rank %d, run %d", k, MSGS, peer, run);
    }
    h_free_schedule(s);
    for (int k = 0; k < MSGS; k++) {
        h_free(H_MALLOC, out[k]);
        h_free(H_MALLOC, in[k]);
    }
    int rc = h_finish();
    if (h_rank != 0)
        return rc;

    static char text[4 << 20];
    size_t n = h_read_trace(path, text, sizeof text);
    int eager = h_count(text, "\"bytes\":49152,\"path\":\"eager\",\"tag\":5,");
    int streamed = h_count(text, "\"bytes\":49152,\"path\":\"stream\",\"tag\":5,");
    int by_cma = h_count(text, "\"bytes\":49152,\"path\":\"CMA\",\"tag\":5,");
    int all = 2 * 2 * MSGS * RUNS;
    CHECKM(eager + streamed + by_cma == all, "%d eager, %d stream and %d CMA events of 48 KiB, of %d", eager, streamed, by_cma, all);
    CHECKM(eager > 0 && streamed + by_cma > 0, "one way carried every message: %d eager, %d stream, %d CMA", eager, streamed, by_cma);
    remove(path);
    printf("t_eager_choice: trace of %zu bytes: %d eager, %d stream and %d CMA events of 48 KiB\n", n, eager, streamed, by_cma);
    return 0;
}
