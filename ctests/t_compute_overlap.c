/*
 * t_compute_overlap: a collective started before a computation moves while
 * the rank computes without calling goal (issue 44: torch's async_op).
 *
 * Each repetition: the ranks meet in a barrier, each starts a persistent
 * allreduce (uint32 sums, 64 KiB and 1 MiB, values new per repetition),
 * then computes (a busy loop, no goal call but GOAL_IsFinished, which only
 * looks) until GOAL_IsFinished says the allreduce ended or COMPUTE_MAX_S
 * passed; then GOAL_Wait, and every element is checked against the
 * sequential sum. Asserts, with a helper thread (every mode but manual):
 *   - every repetition's allreduce ended within COMPUTE_MAX_S of its start
 *     while the rank computed (nothing but goal's helpers could move it);
 *   - the median time to that end is under MEDIAN_MAX_MS. Generous bounds
 *     (more ranks than cores run here, beside other jobs): the defaults of
 *     issue 44 end a 64 KiB allreduce in well under 1 ms on 2 ranks; a
 *     helper that is never woken, or that waits for the computation on its
 *     CPU, fails one bound or the other.
 * In manual mode (no helper) only the results are checked. Each rank prints
 * its median and largest time to the end ("ttf") per size.
 * T_REPS overrides the repetitions per size (for measuring).
 */
// ranks: 2 4
// modes: 2
#include "helpers.h"

#define REPS 12
#define COMPUTE_MAX_S 2.0
#define MEDIAN_MAX_MS 50.0

static volatile uint64_t sink;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Computes until `h` has ended or `most` seconds passed since `t0`; returns
 * the time from t0 to the end seen, or a negative number if none. */
static double compute_until_finished(GOAL_Handle h, double t0, double most)
{
    uint64_t x = (uint64_t)h_rank + 1;
    for (;;) {
        for (int i = 0; i < 2000; i++) /* some 5-20 us of arithmetic */
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        sink = x;
        double now = h_now();
        if (GOAL_IsFinished(h) == 1)
            return now - t0;
        if (now - t0 > most)
            return -1;
    }
}

static void run_size(int count, int reps, int manual, GOAL_Schedule bar)
{
    uint32_t *x = calloc((size_t)count, 4), *y = calloc((size_t)count, 4);
    CHECK(x != NULL && y != NULL);
    GOAL_Schedule s = GOAL_Allreduce_init(x, y, count, GOAL_UINT, 32, GOAL_ADD, GOAL_ALG_AUTO);
    CHECKM(s != NULL, "GOAL_Allreduce_init of %d uint32: %s", count, h_last_error());
    double *ttf = malloc((size_t)reps * sizeof *ttf);
    CHECK(ttf != NULL);
    uint32_t ranks_part = (uint32_t)(7 * h_size * (h_size - 1) / 2);
    for (int rep = 0; rep < reps; rep++) {
        for (int i = 0; i < count; i++)
            x[i] = (uint32_t)(h_rank * 7 + i + rep);
        memset(y, 0xff, (size_t)count * 4);
        h_run(bar);
        double t0 = h_now();
        GOAL_Handle h = GOAL_Run(s);
        CHECKM(h != NULL, "GOAL_Run: %s", h_last_error());
        ttf[rep] = compute_until_finished(h, t0, manual ? 0.02 : COMPUTE_MAX_S);
        if (!manual)
            CHECKM(ttf[rep] >= 0,
                   "rank %d, %d bytes, repetition %d: the allreduce had not ended after %.1f s of computation: "
                   "nothing moved it while the rank computed",
                   h_rank, count * 4, rep, COMPUTE_MAX_S);
        CHECK_OK(GOAL_Wait(h));
        for (int i = 0; i < count; i++) {
            uint32_t want = ranks_part + (uint32_t)h_size * (uint32_t)(i + rep);
            if (y[i] != want)
                FAILF("rank %d, %d bytes, repetition %d: element %d is %u, expected %u", h_rank, count * 4, rep, i, y[i], want);
        }
    }
    qsort(ttf, (size_t)reps, sizeof *ttf, cmp_double);
    double median_ms = ttf[reps / 2] * 1e3, max_ms = ttf[reps - 1] * 1e3;
    printf("rank %d of %d, %d bytes: ttf median %.3f ms, max %.3f ms%s\n", h_rank, h_size, count * 4, median_ms, max_ms,
           manual ? " (manual: not asserted)" : "");
    if (!manual)
        CHECKM(median_ms < MEDIAN_MAX_MS, "rank %d, %d bytes: the median time to the end while computing is %.2f ms (bound %.0f)",
               h_rank, count * 4, median_ms, MEDIAN_MAX_MS);
    CHECK_OK(GOAL_FreeSchedule(s));
    free(ttf);
    free(x);
    free(y);
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    if (h_size < 2)
        h_skip("needs 2 ranks or more");
    const char *mode = getenv("GOAL_PROGRESS");
    int manual = mode && strcmp(mode, "manual") == 0;
    const char *r = getenv("T_REPS");
    int reps = r && atoi(r) > 0 ? atoi(r) : REPS;
    GOAL_Schedule bar = GOAL_Barrier_init(GOAL_ALG_AUTO);
    CHECKM(bar != NULL, "GOAL_Barrier_init: %s", h_last_error());
    run_size(16 * 1024, reps, manual, bar);
    run_size(256 * 1024, reps, manual, bar);
    CHECK_OK(GOAL_FreeSchedule(bar));
    return h_finish();
}
