/*
 * t_trace: GOAL_TRACE_FILE from a C program, two ranks.
 *
 * The test sets GOAL_TRACE_FILE (a file named after goalrun's pid, which
 * both ranks share) and GOAL_PROGRESS=manual (so that no helper thread lets
 * a receiver ask its sender to write: the paths below are then certain)
 * before GOAL_Init.  Rank 0 sends rank 1, three times: 8 B (eager), 1 MiB
 * from GOAL_Alloc'd memory (which rank 1 copies straight out of rank 0's
 * shared heap) and 1 MiB from malloc'd memory (stream or CMA), and 8 B to
 * itself.  Every received byte is checked.
 *
 * Asserts, on rank 0 after GOAL_Finalize, in the file it wrote: a track
 * named for each rank, and for each message and run one event per side
 * with its peer, size and path ("eager", "heap single copy", "stream" or
 * "CMA", "self"), counted exactly.
 */
// ranks: 2
#include "helpers.h"

#define BIG (1 << 20)
#define RUNS 3

int main(int argc, char **argv)
{
    char path[256];
    snprintf(path, sizeof path, "/tmp/goal-t_trace-%d.json", (int)getppid());
    setenv("GOAL_TRACE_FILE", path, 1);
    setenv("GOAL_PROGRESS", "manual", 1);
    h_init(argc, argv);
    if (h_size != 2) {
        printf("GOAL-TEST-SKIP: t_trace runs on 2 ranks\n");
        GOAL_Finalize();
        return H_SKIP;
    }
    char small[8], got_small[8], self_in[8], self_out[8];
    char *heap = h_alloc(H_GOAL_ALLOC, BIG), *plain = h_alloc(H_MALLOC, BIG);
    GOAL_Graph g = h_graph();
    if (h_rank == 0) {
        V(GOAL_Send(g, small, 8, 1, 7, GOAL_USERSPACE));
        V(GOAL_Send(g, heap, BIG, 1, 8, GOAL_USERSPACE));
        V(GOAL_Send(g, plain, BIG, 1, 9, GOAL_USERSPACE));
        V(GOAL_Send(g, self_out, 8, 0, 10, GOAL_USERSPACE));
        V(GOAL_Recv(g, self_in, 8, 0, 10, GOAL_USERSPACE));
    } else {
        V(GOAL_Recv(g, got_small, 8, 0, 7, GOAL_USERSPACE));
        V(GOAL_Recv(g, heap, BIG, 0, 8, GOAL_USERSPACE));
        V(GOAL_Recv(g, plain, BIG, 0, 9, GOAL_USERSPACE));
    }
    GOAL_Schedule s = h_compile(g);
    for (int run = 0; run < RUNS; run++) {
        uint64_t seed = h_seed(run, 1, 2, 3);
        if (h_rank == 0) {
            h_fill(small, 8, seed);
            h_fill(heap, BIG, seed + 1);
            h_fill(plain, BIG, seed + 2);
            h_fill(self_out, 8, seed + 3);
        }
        h_run(s);
        if (h_rank == 0) {
            CHECK_PATTERN(self_in, 8, seed + 3, "self-message, run %d", run);
        } else {
            CHECK_PATTERN(got_small, 8, seed, "8 B, run %d", run);
            CHECK_PATTERN(heap, BIG, seed + 1, "1 MiB into the GOAL_Alloc'd buffer, run %d", run);
            CHECK_PATTERN(plain, BIG, seed + 2, "1 MiB into the malloc'd buffer, run %d", run);
        }
    }
    h_free_schedule(s);
    h_free(H_GOAL_ALLOC, heap);
    h_free(H_MALLOC, plain);
    int rc = h_finish();
    if (h_rank != 0)
        return rc;

    static char text[1 << 20];
    size_t n = h_read_trace(path, text, sizeof text);
    CHECKM(strstr(text, "\"pid\":0,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"rank 0\"}"), "no track for rank 0");
    CHECKM(strstr(text, "\"pid\":1,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"rank 1\"}"), "no track for rank 1");
    /* Each side of each message, every run (args: peer, bytes, path, tag). */
    int eager = h_count(text, "\"bytes\":8,\"path\":\"eager\",\"tag\":7,");
    int heap_copy = h_count(text, "\"bytes\":1048576,\"path\":\"heap single copy\",\"tag\":8,");
    int streamed = h_count(text, "\"bytes\":1048576,\"path\":\"stream\",\"tag\":9,");
    int by_cma = h_count(text, "\"bytes\":1048576,\"path\":\"CMA\",\"tag\":9,");
    int self = h_count(text, "{\"peer\":0,\"bytes\":8,\"path\":\"self\",\"tag\":10,");
    CHECKM(eager == 2 * RUNS, "%d eager events of 8 B", eager);
    CHECKM(heap_copy == 2 * RUNS, "%d heap single copy events", heap_copy);
    CHECKM(streamed + by_cma == 2 * RUNS, "%d stream and %d CMA events of the malloc'd 1 MiB", streamed, by_cma);
    CHECKM(self == 2 * RUNS, "%d self events", self);
    CHECKM(strstr(text, "\"missing_ranks\":\"\""), "a rank is missing: %s", strstr(text, "otherData"));
    remove(path);
    printf("t_trace: trace of %zu bytes: %d eager, %d heap, %d stream + %d CMA, %d self events\n", n, eager, heap_copy, streamed, by_cma, self);
    return 0;
}
