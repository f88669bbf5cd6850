/*
 * t_membarrier_off: GOAL_MEMBARRIER=0 (full fences on both sides of every
 * sleep/wake pair, no membarrier(2)) loses no wake-up.
 *
 * Every rank sets GOAL_MEMBARRIER=0 before GOAL_Init (the whole job must
 * choose alike), then 200 times: GOAL_Run of a float32 sum allreduce of
 * 64 KiB, 50-300 us of computation (the helper sleeps and is rung while the
 * ranks compute, the path this setting changes), GOAL_Wait, and the sum
 * checked exactly against the sequential model (rank r contributes
 * r + 1 + i at element i, plus the iteration). With a helper (every mode but
 * manual), the last 20 iterations compute 20 ms and print how many times
 * the allreduce had ended by then (GOAL_IsFinished, which does not move it).
 * Not asserted: with or without membarrier, 2 ranks on 2 cores, thread mode,
 * it had ended in only 7-9 of 20 in some runs (1 run in 12 with this setting,
 * 5 in 12 without; docs/measurements/torch-overlap-2026-11-29).
 */
// ranks: 2 3 4
// modes: 2
#include "helpers.h"

#define COUNT (64 * 1024 / 4)
#define ITERS 200
#define LOOKS 20

static volatile float sink;

static void compute_us(double us)
{
    double end = h_now() + us / 1e6;
    float x = 1.0f;
    while (h_now() < end)
        for (int i = 0; i < 64; i++)
            x = x * 0.999999f + 1e-7f;
    sink = x;
}

int main(int argc, char **argv)
{
    CHECK(setenv("GOAL_MEMBARRIER", "0", 1) == 0);
    h_init(argc, argv);
    const char *mode = getenv("GOAL_PROGRESS");
    int manual = mode && strcmp(mode, "manual") == 0;
    float *x = malloc(COUNT * sizeof(float)), *y = malloc(COUNT * sizeof(float));
    CHECK(x != NULL && y != NULL);
    GOAL_Schedule s = GOAL_Allreduce_init(x, y, COUNT, GOAL_FLOAT, 32, GOAL_ADD, GOAL_ALG_AUTO);
    CHECKM(s != NULL, "GOAL_Allreduce_init: %s", h_last_error());
    int ended = 0;
    for (int it = 0; it < ITERS + LOOKS; it++) {
        for (int i = 0; i < COUNT; i++)
            x[i] = (float)(h_rank + 1 + (i % 1000) + it % 7);
        memset(y, 0, COUNT * sizeof(float));
        GOAL_Handle h = GOAL_Run(s);
        CHECKM(h != NULL, "GOAL_Run: %s", h_last_error());
        if (it < ITERS) {
            compute_us(50 + (it * 37 + h_rank * 11) % 250);
        } else if (!manual) {
            compute_us(20000);
            ended += GOAL_IsFinished(h) == 1;
        }
        CHECK_OK(GOAL_Wait(h));
        for (int i = 0; i < COUNT; i++) {
            float want = (float)(h_size * (h_size + 1) / 2 + h_size * ((i % 1000) + it % 7));
            if (y[i] != want)
                FAILF("iteration %d, element %d: %g, want %g", it, i, (double)y[i], (double)want);
        }
    }
    if (!manual)
        printf("rank %d: the allreduce had ended after 20 ms of computation in %d of %d iterations\n", h_rank, ended,
               LOOKS);
    return h_finish();
}
