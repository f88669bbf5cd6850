/*
 * t_flat_memory: a program that compiles, runs and frees a schedule per
 * step (a solver building one per time step, an MPI layer compiling per
 * call) runs in flat memory (issue 39, point 2).
 *
 * Asserts, on every rank, that VmRSS after all cycles is within 10% of
 * VmRSS after the first 1,000 cycles, for:
 *   - a loop of CreateGraph / Send+Recv to self / Compile / Run / Wait /
 *     FreeSchedule;
 *   - a loop of GOAL_Allreduce_init of 1 KiB / Run / Wait / FreeSchedule
 *     (every rank takes part).
 * Before the engine forgot a freed schedule's id, the first grew by about
 * 74 bytes a cycle (+50% at the CI count, 20,000 cycles) and the second by
 * 3 to 13 MB over the CI count of 10,000 cycles on 4 ranks (and to 430 MB
 * at 200,000: the per-id leftovers pinned freed memory in the heap).
 * FLAT_CYCLES=N FLAT_COLL_CYCLES=M run the full-size probe (1,000,000 and
 * 200,000: see docs/api.md).
 */
// ranks: 1 4
#include "helpers.h"

static long env_count(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? atol(v) : dflt;
}

static void self_cycle(void)
{
    uint64_t send = (uint64_t)h_rank + 1, recv = 0;
    GOAL_Graph g = h_graph();
    V(GOAL_Send(g, &send, 8, h_rank, 3, GOAL_USERSPACE));
    V(GOAL_Recv(g, &recv, 8, h_rank, 3, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);
    GOAL_Handle h = GOAL_Run(s);
    CHECKM(h != NULL, "GOAL_Run: %s", h_last_error());
    CHECK_OK(GOAL_Wait(h));
    CHECK_EQ(recv, send);
    CHECK_OK(GOAL_FreeSchedule(s));
}

static void coll_cycle(void)
{
    static int32_t in[256], out[256];
    for (int i = 0; i < 256; i++)
        in[i] = h_rank + i;
    GOAL_Schedule s = GOAL_Allreduce_init(in, out, 256, GOAL_SINT, 32, GOAL_ADD, GOAL_ALG_AUTO);
    CHECKM(s != NULL, "GOAL_Allreduce_init: %s", h_last_error());
    GOAL_Handle h = GOAL_Run(s);
    CHECKM(h != NULL, "GOAL_Run: %s", h_last_error());
    CHECK_OK(GOAL_Wait(h));
    CHECK_EQ(out[7], h_size * (h_size - 1) / 2 + 7 * h_size);
    CHECK_OK(GOAL_FreeSchedule(s));
}

static void flat(const char *what, void (*cycle)(void), long n)
{
    long first = 0;
    for (long i = 0; i < n; i++) {
        cycle();
        if (i + 1 == 1000)
            first = h_vmrss_kib();
    }
    long last = h_vmrss_kib();
    if (h_rank == 0)
        printf("%s: VmRSS %ld KiB after 1,000 cycles, %ld KiB after %ld\n", what, first, last, n);
    CHECKM(last * 10 <= first * 11, "rank %d: %s: VmRSS grew from %ld KiB after 1,000 cycles to %ld KiB after %ld",
           h_rank, what, first, last, n);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    flat("compile/run/free to self", self_cycle, env_count("FLAT_CYCLES", 20000));
    flat("Allreduce_init/run/free of 1 KiB", coll_cycle, env_count("FLAT_COLL_CYCLES", 10000));
    return h_finish();
}
