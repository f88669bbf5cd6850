/* What bench/goal_groups.c and bench/mpi_groups.c share (bench/groups.py runs both): the
 * collectives they time, in one table; the element types; the data every point is verified
 * with; the arguments both take; and the timed loop itself, which calls the library through
 * a few hooks.
 *
 * Method (the ESPGOAL thesis, 6.5, as bench/goal_coll.c): after 3 warm-up and 3 estimating
 * iterations, every rank of the world times each iteration of the point
 * (clock_gettime(CLOCK_MONOTONIC)); the point gets clamp(budget / estimate, min, max)
 * iterations, the estimate being the largest over the world. The times are collected at
 * world rank 0, averaged over all ranks of the world per iteration (on a sub-group: the ranks
 * of both halves), and the median over iterations is the point's value. A separator (the
 * shared-memory barrier of separator.h with --sep-file, else the library's world barrier)
 * comes before each iteration of a point that does not synchronise the whole world: bcast on
 * the world, as in bench/coll.py, and every point on the sub-groups, so that both halves
 * start each iteration together and run at the same time.
 *
 * After the timed iterations one more iteration runs with known data and every rank checks
 * what it got (a sequential model: byte patterns for bcast/allgather/alltoall and their v
 * forms; for allreduce small integers, whose sums are exact in binary32, binary16 and
 * bfloat16 in any order); "verified" in the row is true when every rank's check passed.
 *
 * Adding a collective (allgatherv and alltoallv are here already, for the goal whose
 * GOAL_Allgatherv_init_on / GOAL_Alltoallv_init_on exist): a line in COLLS, its data in
 * coll_prepare/coll_verify, and its calls in each program's make/call functions.
 */
#ifndef GOAL_BENCH_GROUPS_COMMON_H
#define GOAL_BENCH_GROUPS_COMMON_H

#include "p2p_common.h"
#include "separator.h"

#include <stdint.h>
#include <string.h>

/* ---- the collectives ------------------------------------------------------------------- */

enum { C_ALLREDUCE, C_ALLGATHER, C_ALLTOALL, C_BCAST, C_ALLGATHERV, C_ALLTOALLV, NCOLLS };
static const struct {
    const char *name;
    int syncs; /* every rank of the group hears from every other: no separator on the world */
} COLLS[NCOLLS] = {
    {"allreduce", 1}, {"allgather", 1}, {"alltoall", 1}, {"bcast", 0}, {"allgatherv", 1}, {"alltoallv", 1},
};
/* What the driver runs by default (the v forms only where goal has them: bench/groups.py). */
#define DEFAULT_COLLS "allreduce,allgather,alltoall,bcast"
static const size_t GROUP_SIZES[] = {8, 64 * KiB, MiB};

/* Element types of allreduce: binary32, binary16, bfloat16. */
enum { DT_F32, DT_F16, DT_BF16, NDT };
static const char *DT_NAME[NDT] = {"f32", "f16", "bf16"};
static const size_t DT_SIZE[NDT] = {4, 2, 2};
/* The half-precision test's vector: 1 MiB of 16-bit elements (the fp32 one has as many). */
#define HALF_ELEMS ((size_t)512 * KiB)

/* The scopes of a collective point: the world, or a half of it (world split by rank / 2). */
enum { S_WORLD, S_SUB, NSCOPE };
static const char *SCOPE_NAME[NSCOPE] = {"world", "sub"};

/* The bytes of each buffer collective c uses with n bytes per rank on a group of p. */
static inline size_t coll_span(int c, size_t n, int p) {
    return c == C_ALLREDUCE || c == C_BCAST ? n : n * (size_t)p;
}

/* v forms: every rank gives (and gets from each rank) `n` bytes; block q at q * n. */
static inline void v_layout(int p, size_t n, size_t *counts, size_t *displs) {
    for (int q = 0; q < p; q++) counts[q] = n, displs[q] = (size_t)q * n;
}

/* ---- element values -------------------------------------------------------------------- */

/* A float with at most 8 significant bits and a normal binary16 exponent (every value used
 * here: small integers) as binary16 / bfloat16 bits; exact, so no rounding rule is needed. */
static inline uint16_t to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) == 0) return (uint16_t)(x >> 16);
    uint32_t e = ((x >> 23) & 0xff) - 127 + 15;
    return (uint16_t)(((x >> 16) & 0x8000) | (e << 10) | ((x >> 13) & 0x3ff));
}
static inline uint16_t to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    return (uint16_t)(x >> 16);
}

static inline void put_elem(int dt, char *at, float v) {
    uint16_t h = dt == DT_F16 ? to_f16(v) : to_bf16(v);
    if (dt == DT_F32) memcpy(at, &v, 4);
    else memcpy(at, &h, 2);
}

/* Fills `bytes` at `buf` with ones of type dt (the data of the timed iterations). */
static inline void fill_ones(int dt, char *buf, size_t bytes) {
    for (size_t i = 0; i + DT_SIZE[dt] <= bytes; i += DT_SIZE[dt]) put_elem(dt, buf + i, 1.0f);
}

/* ---- verification data ----------------------------------------------------------------- */

static inline uint8_t vpat(uint64_t seed, size_t i) {
    uint64_t x = (seed ^ (i >> 3)) * 0x9E3779B97F4A7C15ULL;
    x ^= x >> 29;
    return (uint8_t)(x >> (8 * (i & 7)));
}

/* Rank r's element i of an allreduce's verification run: a small integer, so that every
 * partial sum of up to 8 ranks is exact in bfloat16 (8 significant bits) too. */
static inline float vval(uint64_t seed, int r, size_t i) { return (float)((r + 1) + (int)(i % 7) + (int)(seed % 3)); }

/* Fills this rank's (rank r of a group of p) send side and clears its receive side for a
 * verification run of collective c with n bytes per rank (allreduce: n bytes of type dt). */
static inline void coll_prepare(int c, int dt, size_t n, int r, int p, uint64_t seed, char *sbuf, char *rbuf) {
    memset(rbuf, 0, coll_span(c, n, p));
    switch (c) {
    case C_BCAST:
        for (size_t i = 0; i < n; i++) sbuf[i] = r == 0 ? (char)vpat(seed, i) : 0;
        break;
    case C_ALLGATHER: case C_ALLGATHERV:
        for (size_t i = 0; i < n; i++) sbuf[i] = (char)vpat(seed + (uint64_t)r, i);
        break;
    case C_ALLTOALL: case C_ALLTOALLV:
        for (size_t j = 0; j < (size_t)p; j++)
            for (size_t i = 0; i < n; i++) sbuf[j * n + i] = (char)vpat(seed + 1000 * (uint64_t)r + j, i);
        break;
    case C_ALLREDUCE:
        for (size_t i = 0; i < n / DT_SIZE[dt]; i++) put_elem(dt, sbuf + i * DT_SIZE[dt], vval(seed, r, i));
        break;
    }
}

/* 1 if rank r's result of the verification run (see coll_prepare) is right. */
static inline int coll_verify(int c, int dt, size_t n, int r, int p, uint64_t seed, const char *sbuf, const char *rbuf) {
    switch (c) {
    case C_BCAST:
        for (size_t i = 0; i < n; i++) if ((uint8_t)sbuf[i] != vpat(seed, i)) return 0;
        return 1;
    case C_ALLGATHER: case C_ALLGATHERV:
        for (size_t q = 0; q < (size_t)p; q++)
            for (size_t i = 0; i < n; i++) if ((uint8_t)rbuf[q * n + i] != vpat(seed + q, i)) return 0;
        return 1;
    case C_ALLTOALL: case C_ALLTOALLV:
        for (size_t q = 0; q < (size_t)p; q++)
            for (size_t i = 0; i < n; i++)
                if ((uint8_t)rbuf[q * n + i] != vpat(seed + 1000 * q + (uint64_t)r, i)) return 0;
        return 1;
    case C_ALLREDUCE: {
        size_t es = DT_SIZE[dt];
        char want[4];
        for (size_t i = 0; i < n / es; i++) {
            float sum = 0;
            for (int q = 0; q < p; q++) sum += vval(seed, q, i);
            put_elem(dt, want, sum);
            if (memcmp(rbuf + i * es, want, es) != 0) return 0;
        }
        return 1;
    }
    }
    return 1;
}

/* ---- arguments ------------------------------------------------------------------------- */

/* Whether `name` is an entry of the comma list `list` (NULL: every name is). */
static inline int in_list(const char *list, const char *name) {
    if (!list) return 1;
    size_t k = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += k)
        if ((p == list || p[-1] == ',') && (p[k] == 0 || p[k] == ',')) return 1;
    return 0;
}

struct opts {
    int quick, pin, min_it, max_it, nsizes, force_persistent; /* the last: MPI only */
    double budget_ms;
    size_t sizes[16], half_elems;
    const char *name, *tests, *colls, *scopes, *dtypes, *variants, *sep_file;
};

/* Parses the options both programs take (and, for MPI, LIBNAME as a bare word); 0, or -1
 * for an argument it does not know (the caller prints its usage). */
static inline int parse_opts(int argc, char **argv, struct opts *o) {
    memset(o, 0, sizeof *o);
    o->min_it = o->max_it = -1;
    o->budget_ms = -1;
    o->half_elems = HALF_ELEMS;
    o->tests = "create,coll,half";
    o->colls = DEFAULT_COLLS;
    o->scopes = "world,sub";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) o->quick = 1;
        else if (!strcmp(a, "--pin")) o->pin = 1;
        else if (!strcmp(a, "--force-persistent")) o->force_persistent = 1;
        else if (v && !strcmp(a, "--name")) o->name = v, i++;
        else if (v && !strcmp(a, "--tests")) o->tests = v, i++;
        else if (v && !strcmp(a, "--colls")) o->colls = v, i++;
        else if (v && !strcmp(a, "--scopes")) o->scopes = v, i++;
        else if (v && !strcmp(a, "--dtypes")) o->dtypes = v, i++;
        else if (v && !strcmp(a, "--variants")) o->variants = v, i++;
        else if (v && !strcmp(a, "--sep-file")) o->sep_file = v, i++;
        else if (v && !strcmp(a, "--budget-ms")) o->budget_ms = atof(v), i++;
        else if (v && !strcmp(a, "--min-iters")) o->min_it = atoi(v), i++;
        else if (v && !strcmp(a, "--max-iters")) o->max_it = atoi(v), i++;
        else if (v && !strcmp(a, "--half-elems")) o->half_elems = (size_t)strtoull(v, NULL, 10), i++;
        else if (v && !strcmp(a, "--sizes")) {
            for (const char *p = v; *p && o->nsizes < 16;) {
                char *end;
                unsigned long long x = strtoull(p, &end, 10);
                if (*end == 'K' || *end == 'k') x <<= 10, end++;
                else if (*end == 'M' || *end == 'm') x <<= 20, end++;
                if (end == p) return -1;
                o->sizes[o->nsizes++] = (size_t)x;
                p = *end == ',' ? end + 1 : end;
            }
            i++;
        } else if (a[0] != '-' && !o->name) o->name = a;
        else return -1;
    }
    if (!o->nsizes)
        for (size_t i = 0; i < sizeof GROUP_SIZES / sizeof GROUP_SIZES[0]; i++) o->sizes[o->nsizes++] = GROUP_SIZES[i];
    if (o->budget_ms < 0) o->budget_ms = o->quick ? 2 : 40;
    if (o->min_it < 0) o->min_it = o->quick ? 3 : 15;
    if (o->max_it < 0) o->max_it = o->quick ? 50 : 1000;
    if (o->half_elems < 8) o->half_elems = 8;
    return 0;
}

/* The largest buffer a rank needs: a block per rank of the largest size, or the fp32 vector
 * of the half-precision test. */
static inline size_t buffer_bytes(const struct opts *o, int nranks) {
    size_t m = 8;
    for (int i = 0; i < o->nsizes; i++)
        if (o->sizes[i] > m) m = o->sizes[i];
    m *= (size_t)nranks;
    return m > 4 * o->half_elems ? m : 4 * o->half_elems;
}

/* ---- the timed loop -------------------------------------------------------------------- */

/* What the loop needs from a library, over the whole world. */
struct lib_hooks {
    void (*barrier)(void);                                      /* without --sep-file */
    double (*max_all)(double);                                  /* maximum over the ranks */
    void (*gather)(const double *mine, double *all, int iters); /* every rank's times, at rank 0 */
};

/* One point: what it is (for the row) and how to run an iteration of it. */
struct point {
    const char *test, *coll, *scope, *setting, *dtype;
    size_t bytes, elems;
    int group_size, group_rank;
    int sep;            /* a separator before each iteration */
    int c, dt;          /* the collective (COLLS) and element type verified, or c = -1: */
    int (*check)(void); /* a creation's own check (1: right), after the timed loop */
    void (*once)(void); /* one iteration */
};

static const char *g_lib = "?";
static int g_rank, g_nranks;
static char *g_sbuf, *g_rbuf;
static double *g_t, *g_all;

static inline void groups_alloc(const struct opts *o, int rank, int nranks) {
    g_rank = rank, g_nranks = nranks;
    size_t cap = buffer_bytes(o, nranks);
    g_sbuf = alloc_pages(cap, 0);
    g_rbuf = alloc_pages(cap, 0);
    g_t = malloc(sizeof(double) * (size_t)o->max_it);
    g_all = malloc(sizeof(double) * (size_t)o->max_it * (size_t)nranks);
    if (!g_t || !g_all) {
        fprintf(stderr, "%s (rank %d): out of memory for %d iterations\n", g_lib, rank, o->max_it);
        exit(1);
    }
}

static inline void separate(const struct lib_hooks *L) {
    if (sep_p) sep_wait();
    else L->barrier();
}

/* Times point P (see the head of this file) and prints its row at rank 0. */
static inline void measure(const struct lib_hooks *L, const struct point *P, const struct opts *o) {
    if (P->c >= 0) fill_ones(P->dt, g_sbuf, coll_span(P->c, P->bytes, P->group_size));
    for (int i = 0; i < 3; i++) {
        if (P->sep) separate(L);
        P->once();
    }
    double est = 0;
    for (int i = 0; i < 3; i++) {
        if (P->sep) separate(L);
        double a = now_s();
        P->once();
        est += now_s() - a;
    }
    double mx = L->max_all(est / 3);
    long it = mx > 0 ? (long)(o->budget_ms * 1e-3 / mx) : o->max_it;
    int iters = (int)(it < o->min_it ? o->min_it : it > o->max_it ? o->max_it : it);
    for (int i = 0; i < iters; i++) {
        if (P->sep) separate(L);
        double a = now_s();
        P->once();
        g_t[i] = (now_s() - a) * 1e6;
    }
    int ok;
    if (P->c >= 0) {
        uint64_t seed = ((uint64_t)P->c << 40) ^ ((uint64_t)P->dt << 36) ^ P->bytes ^ 0x5eed;
        coll_prepare(P->c, P->dt, P->bytes, P->group_rank, P->group_size, seed, g_sbuf, g_rbuf);
        separate(L);
        P->once();
        ok = coll_verify(P->c, P->dt, P->bytes, P->group_rank, P->group_size, seed, g_sbuf, g_rbuf);
    } else {
        ok = P->check ? P->check() : 1;
    }
    if (!ok) fprintf(stderr, "%s (rank %d): %s %s %s %zu B: WRONG RESULT\n", g_lib, g_rank, P->test, P->coll, P->scope, P->bytes);
    int verified = L->max_all(ok ? 0.0 : 1.0) == 0.0;
    L->gather(g_t, g_all, iters);
    if (g_rank != 0) return;
    double *avg = malloc(sizeof(double) * (size_t)iters), mean = 0;
    if (!avg) exit(1);
    for (int i = 0; i < iters; i++) {
        double sum = 0;
        for (int r = 0; r < g_nranks; r++) sum += g_all[(size_t)r * (size_t)iters + (size_t)i];
        avg[i] = sum / g_nranks;
        mean += avg[i];
    }
    mean /= iters;
    double med = median(avg, iters); /* sorts avg */
    printf("{\"lib\": ");
    json_str(stdout, g_lib);
    printf(", \"test\": \"%s\", \"coll\": \"%s\", \"scope\": \"%s\", \"setting\": \"%s\", \"dtype\": \"%s\", "
           "\"ranks\": %d, \"group_size\": %d, \"bytes\": %zu, \"elems\": %zu, \"median_us\": %.4f, "
           "\"mean_us\": %.4f, \"min_us\": %.4f, \"p25_us\": %.4f, \"p75_us\": %.4f, \"max_us\": %.4f, "
           "\"iters\": %d, \"separator\": %s, \"verified\": %s",
           P->test, P->coll, P->scope, P->setting, P->dtype, g_nranks, P->group_size, P->bytes, P->elems, med,
           mean, avg[0], avg[iters / 4], avg[(3 * iters) / 4], avg[iters - 1], iters, P->sep ? "true" : "false",
           verified ? "true" : "false");
    json_rank_medians(stdout, g_all, g_nranks, iters);
    printf("}\n");
    fflush(stdout);
    free(avg);
}

/* A {"test": "skip"} row: what was not measured, and why. */
static inline void skip_row(const char *test, const char *what, const char *why) {
    if (g_rank != 0) return;
    printf("{\"lib\": ");
    json_str(stdout, g_lib);
    printf(", \"test\": \"skip\", \"of\": \"%s\", \"what\": ", test);
    json_str(stdout, what);
    printf(", \"why\": ");
    json_str(stdout, why);
    printf("}\n");
    fflush(stdout);
}

/* The sub-group of world rank r: the world split by r / 2 (halves {0,1}, {2,3}, ...). */
static inline int sub_color(int r) { return r / 2; }

/* The ranks of r's pair, for the creation from a list: n of them into out. */
static inline int sub_list(int r, int nranks, int *out) {
    int lo = 2 * (r / 2), n = 0;
    for (int q = lo; q < lo + 2 && q < nranks; q++) out[n++] = q;
    return n;
}

#endif
