/* goal's groups and 16-bit floats, timed as bench/groups.py describes, against goal's C API.
 *
 *   goalrun -n N ./goal_groups [--name LIB] [--quick] [--pin] [--tests create,coll,half]
 *                              [--colls LIST] [--scopes world,sub] [--sizes LIST] [--dtypes f16,bf16,f32]
 *                              [--half-elems N] [--budget-ms X] [--min-iters N] [--max-iters N]
 *                              [--sep-file PATH]
 *
 * Tests (the method, the verification and the rows: bench/groups_common.h):
 *   create  "split": GOAL_Group_split(world, rank / 2, rank) + GOAL_Group_free, every rank of
 *           the world; "create": GOAL_Group_create(world, {2k, 2k+1}, 2, tag) + GOAL_Group_free,
 *           each pair on its own (a separator first). Checked afterwards: one more group's size,
 *           rank and translation to the world.
 *   coll    allreduce (binary32 sum), allgather, alltoall, bcast (root 0) at each size, on the
 *           world and on the sub-group (the world split by rank / 2, both halves at once): a
 *           persistent GOAL_Xxx_init_on(group, ..., GOAL_ALG_AUTO) schedule, GOAL_Run + GOAL_Wait
 *           per iteration. allgatherv / alltoallv (equal counts) where this goal has them: the
 *           driver compiles with -DGOAL_BENCH_HAVE_ALLGATHERV / _ALLTOALLV when the installed
 *           goal.h declares GOAL_Allgatherv_init_on / GOAL_Alltoallv_init_on, called as
 *             GOAL_Allgatherv_init_on(g, sbuf, size_t scount, rbuf, const size_t *rcounts,
 *                                     const size_t *rdispls, alg)
 *             GOAL_Alltoallv_init_on(g, sbuf, const size_t *scounts, const size_t *sdispls,
 *                                    rbuf, const size_t *rcounts, const size_t *rdispls, alg)
 *           (counts and displacements in bytes); without them a {"test": "skip"} row says so.
 *   half    allreduce ADD on the world of --half-elems elements (default 524,288: 1 MiB of
 *           16-bit floats) of binary16 (GOAL_FLOAT, 16), bfloat16 (GOAL_BFLOAT, 16) and binary32
 *           (GOAL_FLOAT, 32: as many elements, twice the bytes), AUTO.
 * Any failing GOAL call prints GOAL_LastError() and exits 1.
 */
#include "groups_common.h"

#include <goal.h>

static void fail(const char *what, int code) {
    const char *last = GOAL_LastError();
    fprintf(stderr, "goal_groups (rank %d): %s failed", g_rank, what);
    if (code < 0) {
        const char *es = GOAL_ErrorString(code);
        fprintf(stderr, " (code %d: %s)", code, es ? es : "?");
    }
    fprintf(stderr, ": %s\n", last && *last ? last : "(no GOAL_LastError message)");
    exit(1);
}

static void chk(int rc, const char *what) {
    if (rc != GOAL_SUCCESS) fail(what, rc);
}

static void run_wait(GOAL_Schedule s) {
    GOAL_Handle h = GOAL_Run(s);
    if (!h) fail("GOAL_Run", 0);
    chk(GOAL_Wait(h), "GOAL_Wait");
}

/* ---- the hooks over the world ---------------------------------------------------------- */

static GOAL_Schedule g_bar, g_max; /* barrier (without --sep-file); MAX allreduce of a double */
static double g_max_in, g_max_out;

static void world_barrier(void) { run_wait(g_bar); }

static double world_max(double x) {
    g_max_in = x;
    run_wait(g_max);
    return g_max_out;
}

/* Every rank's times at rank 0 (point to point, compiled per point). */
static void world_gather(const double *mine, double *all, int iters) {
    GOAL_Graph g = GOAL_CreateGraph();
    if (!g) fail("GOAL_CreateGraph", 0);
    int bytes = iters * (int)sizeof(double);
    if (g_rank == 0) {
        memcpy(all, mine, (size_t)bytes);
        for (int r = 1; r < g_nranks; r++)
            if (GOAL_Recv(g, all + (size_t)r * (size_t)iters, bytes, r, 77, GOAL_USERSPACE) < 0) fail("GOAL_Recv", 0);
    } else if (GOAL_Send(g, (void *)mine, bytes, 0, 77, GOAL_USERSPACE) < 0) {
        fail("GOAL_Send", 0);
    }
    GOAL_Schedule s = GOAL_Compile(g);
    if (!s) fail("GOAL_Compile", 0);
    chk(GOAL_FreeGraph(g), "GOAL_FreeGraph");
    run_wait(s);
    chk(GOAL_FreeSchedule(s), "GOAL_FreeSchedule");
}

static const struct lib_hooks HOOKS = {world_barrier, world_max, world_gather};

/* ---- group creation -------------------------------------------------------------------- */

static GOAL_Group g_world;
static int g_list[2], g_nlist;

static void split_once(void) {
    GOAL_Group g = NULL;
    chk(GOAL_Group_split(g_world, sub_color(g_rank), g_rank, &g), "GOAL_Group_split");
    chk(GOAL_Group_free(&g), "GOAL_Group_free");
}

static void create_once(void) {
    GOAL_Group g = NULL;
    chk(GOAL_Group_create(g_world, g_list, g_nlist, 7, &g), "GOAL_Group_create");
    chk(GOAL_Group_free(&g), "GOAL_Group_free");
}

/* A new group like the timed ones has this rank's pair, in order, and the right rank. */
static int check_group(GOAL_Group g) {
    int want[2], n = sub_list(g_rank, g_nranks, want), got[2] = {-1, -1}, mine[2] = {0, 1};
    if (GOAL_Group_size(g) != n || GOAL_Group_rank(g) != g_rank - want[0]) return 0;
    chk(GOAL_Group_translate_ranks(g, n, mine, g_world, got), "GOAL_Group_translate_ranks");
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) return 0;
    return 1;
}

static int split_check(void) {
    GOAL_Group g = NULL;
    chk(GOAL_Group_split(g_world, sub_color(g_rank), g_rank, &g), "GOAL_Group_split");
    int ok = check_group(g);
    chk(GOAL_Group_free(&g), "GOAL_Group_free");
    return ok;
}

static int create_check(void) {
    GOAL_Group g = NULL;
    chk(GOAL_Group_create(g_world, g_list, g_nlist, 7, &g), "GOAL_Group_create");
    int ok = check_group(g);
    chk(GOAL_Group_free(&g), "GOAL_Group_free");
    return ok;
}

static void test_create(const struct opts *o) {
    g_nlist = sub_list(g_rank, g_nranks, g_list);
    struct point P = {.test = "create", .coll = "split", .scope = "world", .setting = "call", .dtype = "",
                      .group_size = g_nlist, .c = -1, .check = split_check, .once = split_once};
    measure(&HOOKS, &P, o);
    P.coll = "create", P.scope = "sub", P.sep = 1, P.check = create_check, P.once = create_once;
    measure(&HOOKS, &P, o);
}

/* ---- collectives ----------------------------------------------------------------------- */

static GOAL_Schedule g_cur;
static size_t g_counts[64], g_displs[64];

static void cur_once(void) { run_wait(g_cur); }

static int goal_type(int dt, int *width) {
    *width = dt == DT_F32 ? 32 : 16;
#ifdef GOAL_BFLOAT
    if (dt == DT_BF16) return GOAL_BFLOAT;
#endif
    return GOAL_FLOAT;
}

/* The persistent AUTO schedule of collective c on group g (n bytes per rank; allreduce: n
 * bytes of type dt), or NULL where this goal lacks the collective (why says so). */
static GOAL_Schedule make(GOAL_Group g, int c, int dt, size_t n, const char **why) {
    int width, type = goal_type(dt, &width), p = GOAL_Group_size(g);
    int cnt = (int)(n / DT_SIZE[dt]);
    GOAL_Schedule s = NULL;
    v_layout(p, n, g_counts, g_displs);
    *why = NULL;
    switch (c) {
    case C_ALLREDUCE: s = GOAL_Allreduce_init_on(g, g_sbuf, g_rbuf, cnt, type, width, GOAL_ADD, GOAL_ALG_AUTO); break;
    case C_ALLGATHER: s = GOAL_Allgather_init_on(g, g_sbuf, n, g_rbuf, GOAL_ALG_AUTO); break;
    case C_ALLTOALL: s = GOAL_Alltoall_init_on(g, g_sbuf, n, g_rbuf, GOAL_ALG_AUTO); break;
    case C_BCAST: s = GOAL_Bcast_init_on(g, g_sbuf, n, 0, GOAL_ALG_AUTO); break;
    case C_ALLGATHERV:
#ifdef GOAL_BENCH_HAVE_ALLGATHERV
        s = GOAL_Allgatherv_init_on(g, g_sbuf, n, g_rbuf, g_counts, g_displs, GOAL_ALG_AUTO);
        break;
#else
        *why = "this goal has no GOAL_Allgatherv_init_on";
        return NULL;
#endif
    case C_ALLTOALLV:
#ifdef GOAL_BENCH_HAVE_ALLTOALLV
        s = GOAL_Alltoallv_init_on(g, g_sbuf, g_counts, g_displs, g_rbuf, g_counts, g_displs, GOAL_ALG_AUTO);
        break;
#else
        *why = "this goal has no GOAL_Alltoallv_init_on";
        return NULL;
#endif
    }
    if (!s) {
        char what[160];
        snprintf(what, sizeof what, "%s on %d ranks, %zu bytes (%s)", COLLS[c].name, p, n, DT_NAME[dt]);
        fail(what, 0);
    }
    return s;
}

/* Collective c at n bytes (type dt) on group g of scope `scope`, as test `test`. */
static void coll_point(const struct opts *o, const char *test, GOAL_Group g, int scope, int c, int dt, size_t n) {
    const char *why;
    g_cur = make(g, c, dt, n, &why);
    if (!g_cur) {
        char what[96];
        snprintf(what, sizeof what, "%s %s %zu B", COLLS[c].name, SCOPE_NAME[scope], n);
        skip_row(test, what, why);
        return;
    }
    struct point P = {.test = test, .coll = COLLS[c].name, .scope = SCOPE_NAME[scope], .setting = "AUTO",
                      .dtype = c == C_ALLREDUCE ? DT_NAME[dt] : "", .bytes = n,
                      .elems = c == C_ALLREDUCE ? n / DT_SIZE[dt] : n, .group_size = GOAL_Group_size(g),
                      .group_rank = GOAL_Group_rank(g), .sep = scope == S_SUB || !COLLS[c].syncs, .c = c,
                      .dt = dt, .once = cur_once};
    measure(&HOOKS, &P, o);
    chk(GOAL_FreeSchedule(g_cur), "GOAL_FreeSchedule");
}

static void test_coll(const struct opts *o) {
    GOAL_Group sub = NULL;
    int have_sub = g_nranks >= 4 && g_nranks % 2 == 0 && in_list(o->scopes, "sub");
    if (have_sub) chk(GOAL_Group_split(g_world, sub_color(g_rank), g_rank, &sub), "GOAL_Group_split");
    for (int c = 0; c < NCOLLS; c++) {
        if (!in_list(o->colls, COLLS[c].name)) continue;
        for (int si = 0; si < o->nsizes; si++) {
            size_t n = o->sizes[si];
            if (c == C_ALLREDUCE && n < 4) continue;
            if (in_list(o->scopes, "world")) coll_point(o, "coll", g_world, S_WORLD, c, DT_F32, n);
            if (have_sub) coll_point(o, "coll", sub, S_SUB, c, DT_F32, n);
        }
    }
    if (sub) chk(GOAL_Group_free(&sub), "GOAL_Group_free");
}

static void test_half(const struct opts *o) {
    for (int dt = 0; dt < NDT; dt++) {
        if (o->dtypes && !in_list(o->dtypes, DT_NAME[dt])) continue;
#ifndef GOAL_BFLOAT
        if (dt != DT_F32) {
            skip_row("half", DT_NAME[dt], "this goal has no 16-bit floats (no GOAL_BFLOAT in goal.h)");
            continue;
        }
#endif
        coll_point(o, "half", g_world, S_WORLD, C_ALLREDUCE, dt, o->half_elems * DT_SIZE[dt]);
    }
}

int main(int argc, char **argv) {
    struct opts o;
    if (parse_opts(argc, argv, &o) != 0) {
        fprintf(stderr,
                "usage: %s [--name LIB] [--quick] [--pin] [--tests create,coll,half] [--colls LIST]\n"
                "          [--scopes world,sub] [--sizes LIST] [--dtypes f16,bf16,f32] [--half-elems N]\n"
                "          [--budget-ms X] [--min-iters N] [--max-iters N] [--sep-file PATH]\n",
                argv[0]);
        return 2;
    }
    g_lib = o.name ? o.name : "goal";
    if (GOAL_Init() != GOAL_SUCCESS) fail("GOAL_Init", 0);
    int nranks = GOAL_GroupSize(), rank = GOAL_MyRank();
    g_world = GOAL_GroupWorld();
    if (!g_world) fail("GOAL_GroupWorld", 0);
    if (nranks > 64) {
        fprintf(stderr, "goal_groups: at most 64 ranks (got %d)\n", nranks);
        return 2;
    }
    if (o.sep_file && sep_open(o.sep_file, nranks) != 0) return 1;
    if (o.pin) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        if (pin_process((int)(rank % (ncpu < 1 ? 1 : ncpu))) != 0) {
            fprintf(stderr, "goal_groups (rank %d): pinning failed\n", rank);
            return 1;
        }
    }
    groups_alloc(&o, rank, nranks);
    g_bar = GOAL_Barrier_init(GOAL_ALG_RECURSIVE_DOUBLING);
    if (!g_bar) fail("GOAL_Barrier_init", 0);
    g_max = GOAL_Allreduce_init(&g_max_in, &g_max_out, 1, GOAL_FLOAT, 64, GOAL_MAX, GOAL_ALG_AUTO);
    if (!g_max) fail("GOAL_Allreduce_init", 0);
    for (int i = 0; i < 500; i++) run_wait(g_bar); /* the first iterations after start-up are slow */

    if (rank == 0) {
        char aff[128];
        affinity_string(aff, sizeof aff);
        printf("{\"lib\": ");
        json_str(stdout, g_lib);
        printf(", \"test\": \"meta\", \"ranks\": %d, \"affinity_rank0\": ", nranks);
        json_str(stdout, aff);
        printf(", \"separator\": \"%s\", \"quick\": %s, \"budget_ms\": %g, \"min_iters\": %d, \"max_iters\": %d, "
               "\"allgatherv\": %s, \"alltoallv\": %s, \"timer\": \"clock_gettime(CLOCK_MONOTONIC)\"}\n",
               sep_p ? "shm" : "goal barrier", o.quick ? "true" : "false", o.budget_ms, o.min_it, o.max_it,
#ifdef GOAL_BENCH_HAVE_ALLGATHERV
               "true",
#else
               "false",
#endif
#ifdef GOAL_BENCH_HAVE_ALLTOALLV
               "true"
#else
               "false"
#endif
        );
        fflush(stdout);
    }
    if (in_list(o.tests, "create")) test_create(&o);
    if (in_list(o.tests, "coll")) test_coll(&o);
    if (in_list(o.tests, "half")) test_half(&o);
    chk(GOAL_FreeSchedule(g_max), "GOAL_FreeSchedule");
    chk(GOAL_FreeSchedule(g_bar), "GOAL_FreeSchedule");
    chk(GOAL_Finalize(), "GOAL_Finalize");
    return 0;
}
