/* gap_overlap: IMB-NBC overlap phases for goal's allreduce with a gap before each repetition
 * (as torch's Python overhead makes one), separator in shm.
 * gap_overlap SEPFILE BYTES GAP_US ITERS (docs/measurements/torch-overlap-2026-11-29/README.md) */
#define _GNU_SOURCE
#include <goal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "separator.h"
static double now_us(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static volatile float sink;
static void spin_us(double us) { double e = now_us() + us; float x = 1; while (now_us() < e) for (int i = 0; i < 100; i++) x = x * 0.999999f + 1e-7f; sink = x; }
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
static double med(double *v, int n) { qsort(v, n, sizeof *v, cmp); return v[n / 2]; }
int main(int argc, char **argv) {
    if (argc < 5) return 2;
    size_t bytes = atol(argv[2]); double gap = atof(argv[3]); int it = atoi(argv[4]);
    if (GOAL_Init() != GOAL_SUCCESS) return 1;
    int rank = GOAL_MyRank(), n = GOAL_GroupSize();
    if (sep_open(argv[1], n)) return 1;
    int cnt = bytes / 4 ? bytes / 4 : 1;
    float *x = calloc(cnt, 4), *y = calloc(cnt, 4);
    GOAL_Schedule s = GOAL_Allreduce_init(x, y, cnt, GOAL_FLOAT, 32, GOAL_ADD, GOAL_ALG_AUTO);
    for (int i = 0; i < 10; i++) GOAL_Wait(GOAL_Run(s));
    double *p = malloc(it * 8), *c = malloc(it * 8), *o = malloc(it * 8), *st = malloc(it * 8), *wt = malloc(it * 8);
    for (int i = 0; i < it; i++) { sep_wait(); spin_us(gap); double a = now_us(); GOAL_Handle h = GOAL_Run(s); double b = now_us(); GOAL_Wait(h); double d = now_us(); p[i] = d - a; st[i] = b - a; wt[i] = d - b; }
    double tp = med(p, it), tst = med(st, it), twt = med(wt, it);
    for (int i = 0; i < it; i++) { sep_wait(); spin_us(gap); double a = now_us(); spin_us(tp); c[i] = now_us() - a; }
    double tc = med(c, it);
    for (int i = 0; i < it; i++) { sep_wait(); spin_us(gap); double a = now_us(); GOAL_Handle h = GOAL_Run(s); double b = now_us(); spin_us(tp); double d = now_us(); GOAL_Wait(h); double e = now_us(); o[i] = e - a; st[i] = b - a; wt[i] = e - d; }
    double to = med(o, it);
    printf("rank %d %zu B gap %.0f: pure %.1f (start %.1f wait %.1f) cpu %.1f ovrl %.1f (start %.1f wait %.1f) overlap %.0f%%\n", rank, bytes, gap, tp, tst, twt, tc, to,
           med(st, it), med(wt, it), 100 * (tp + tc - to) / (tp < tc ? tp : tc));
    GOAL_Finalize();
    return 0;
}
