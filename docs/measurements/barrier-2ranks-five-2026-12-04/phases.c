/* Whether a 2-rank barrier's speed is a property of the run or of the moment: rank r pinned
 * to CPU r % 2, AUTO's barrier run in batches of 2,000 Run+Wait, each timed with
 * clock_gettime (which adds its own ~50 ns); both ranks sleep 20 ms after every tenth batch.
 * Rank 0 prints each batch's median in ns, one line per run.
 *
 *   cc -O2 -IDIR/include phases.c -o phases -LDIR/lib -lgoal -Wl,-rpath,DIR/lib
 *   DIR/bin/goalrun -n 2 ./phases 20
 */
#define _GNU_SOURCE
#include <goal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int batches = argc > 1 ? atoi(argv[1]) : 20;
    const int n = 2000;
    if (GOAL_Init() != GOAL_SUCCESS) return 1;
    int r = GOAL_MyRank();
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(r % 2, &s);
    sched_setaffinity(0, sizeof s, &s);
    GOAL_Schedule b = GOAL_Barrier_init(GOAL_ALG_AUTO);
    double *t = malloc(n * sizeof(double));
    for (int k = 0; k < batches; k++) {
        for (int i = 0; i < n; i++) {
            double a = now_ns();
            GOAL_Wait(GOAL_Run(b));
            t[i] = now_ns() - a;
        }
        qsort(t, n, sizeof(double), cmp);
        if (r == 0) printf("%.0f ", t[n / 2]);
        if (k % 10 == 9) {
            struct timespec z = {0, 20000000};
            nanosleep(&z, 0);
        }
    }
    if (r == 0) printf("\n");
    free(t);
    return GOAL_Finalize() == GOAL_SUCCESS ? 0 : 1;
}
