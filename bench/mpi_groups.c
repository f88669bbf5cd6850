/* MPI communicators and 16-bit floats, timed as bench/groups.py describes, the same way as
 * bench/goal_groups.c. Written against MPI only; built once with each MPI (Open MPI, MPICH).
 *
 *   mpirun -n N ./mpi_groups LIBNAME [--quick] [--pin] [--tests create,coll,half] [--colls LIST]
 *                            [--scopes world,sub] [--sizes LIST] [--dtypes f16,bf16,f32]
 *                            [--variants LIST] [--half-elems N] [--budget-ms X] [--min-iters N]
 *                            [--max-iters N] [--sep-file PATH] [--force-persistent]
 *
 * Tests (the method, the verification and the rows: bench/groups_common.h):
 *   create  "split": MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank) + MPI_Comm_free; "create":
 *           MPI_Comm_create_group(MPI_COMM_WORLD, {2k, 2k+1}, tag) + MPI_Comm_free, each pair on
 *           its own (its MPI_Group made once, before the timed loop: MPI_Group_incl is local).
 *   coll    allreduce (MPI_FLOAT MPI_SUM), allgather, alltoall, bcast (root 0) at each size, and
 *           allgatherv / alltoallv (equal counts) when asked, on MPI_COMM_WORLD and on the
 *           communicator of MPI_Comm_split(world, rank / 2, rank) (both halves at once), each
 *           in three variants: blocking (MPI_Xxx), nonblocking (MPI_Ixxx + MPI_Wait) and
 *           persistent (MPI_Xxx_init once, then MPI_Start + MPI_Wait: see mpi_persistent.h; a
 *           {"test": "skip"} row where this MPI has none, or MPICH 4.0's broken ones).
 *   half    allreduce MPI_SUM on the world of --half-elems elements of MPIX_C_FLOAT16 where this
 *           MPI's mpi.h defines it (MPICH 4.0 does; Debian's Open MPI 4.1 does not: a skip row
 *           says so), and of MPI_FLOAT (as many elements). No MPI has a bfloat16 type to sum
 *           (a skip row). The calls run with MPI_ERRORS_RETURN: an MPI that has the type but
 *           cannot sum it gives a skip row with its error, not an abort.
 */
#include "groups_common.h"
#include "mpi_persistent.h"

/* GCC 12 misreads MPICH's MPI_STATUSES_IGNORE as a zero-size array */
#pragma GCC diagnostic ignored "-Wstringop-overflow"

enum { BLOCKING, NONBLOCKING, PERSISTENT, NVAR };
static const char *VAR[NVAR] = {"blocking", "nonblocking", "persistent"};

static void die(const char *what) {
    fprintf(stderr, "mpi_groups (rank %d): %s\n", g_rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* ---- the hooks over the world ---------------------------------------------------------- */

static void world_barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }

static double world_max(double x) {
    double m = 0;
    MPI_Allreduce(&x, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

static void world_gather(const double *mine, double *all, int iters) {
    MPI_Gather(mine, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
}

static const struct lib_hooks HOOKS = {world_barrier, world_max, world_gather};

/* ---- communicator creation ------------------------------------------------------------- */

static MPI_Group g_pair;
static int g_list[2], g_nlist;

static void split_once(void) {
    MPI_Comm c;
    if (MPI_Comm_split(MPI_COMM_WORLD, sub_color(g_rank), g_rank, &c) != MPI_SUCCESS) die("MPI_Comm_split failed");
    MPI_Comm_free(&c);
}

static void create_once(void) {
    MPI_Comm c;
    if (MPI_Comm_create_group(MPI_COMM_WORLD, g_pair, 7, &c) != MPI_SUCCESS) die("MPI_Comm_create_group failed");
    MPI_Comm_free(&c);
}

/* A new communicator like the timed ones has this rank's pair, in order. */
static int check_comm(MPI_Comm c) {
    int size, r, mine[2] = {0, 1}, got[2] = {-1, -1};
    MPI_Group cg, wg;
    MPI_Comm_size(c, &size);
    MPI_Comm_rank(c, &r);
    if (size != g_nlist || r != g_rank - g_list[0]) return 0;
    MPI_Comm_group(c, &cg);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_translate_ranks(cg, size, mine, wg, got);
    MPI_Group_free(&cg);
    MPI_Group_free(&wg);
    for (int i = 0; i < size; i++)
        if (got[i] != g_list[i]) return 0;
    return 1;
}

static int split_check(void) {
    MPI_Comm c;
    MPI_Comm_split(MPI_COMM_WORLD, sub_color(g_rank), g_rank, &c);
    int ok = check_comm(c);
    MPI_Comm_free(&c);
    return ok;
}

static int create_check(void) {
    MPI_Comm c;
    MPI_Comm_create_group(MPI_COMM_WORLD, g_pair, 7, &c);
    int ok = check_comm(c);
    MPI_Comm_free(&c);
    return ok;
}

static void test_create(const struct opts *o) {
    MPI_Group wg;
    g_nlist = sub_list(g_rank, g_nranks, g_list);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_incl(wg, g_nlist, g_list, &g_pair);
    MPI_Group_free(&wg);
    struct point P = {.test = "create", .coll = "split", .scope = "world", .setting = "blocking", .dtype = "",
                      .group_size = g_nlist, .c = -1, .check = split_check, .once = split_once};
    measure(&HOOKS, &P, o);
    P.coll = "create", P.scope = "sub", P.sep = 1, P.check = create_check, P.once = create_once;
    measure(&HOOKS, &P, o);
    MPI_Group_free(&g_pair);
}

/* ---- collectives ----------------------------------------------------------------------- */

/* The point being timed: collective, variant, communicator, size, MPI type, request. */
static int k_c, k_v, k_cnt, k_counts[64], k_displs[64];
static MPI_Comm k_comm;
static MPI_Datatype k_type;
static MPI_Request k_req;

/* Starts (nonblocking: into *r) or runs (r == NULL) the current collective; an MPI code. */
static int call(MPI_Request *r) {
    char *s = g_sbuf, *d = g_rbuf;
    int b = k_cnt;
    MPI_Comm w = k_comm;
    MPI_Datatype t = k_type;
    switch (k_c) {
    case C_ALLREDUCE: return r ? MPI_Iallreduce(s, d, b, t, MPI_SUM, w, r) : MPI_Allreduce(s, d, b, t, MPI_SUM, w);
    case C_ALLGATHER: return r ? MPI_Iallgather(s, b, t, d, b, t, w, r) : MPI_Allgather(s, b, t, d, b, t, w);
    case C_ALLTOALL: return r ? MPI_Ialltoall(s, b, t, d, b, t, w, r) : MPI_Alltoall(s, b, t, d, b, t, w);
    case C_BCAST: return r ? MPI_Ibcast(s, b, t, 0, w, r) : MPI_Bcast(s, b, t, 0, w);
    case C_ALLGATHERV:
        return r ? MPI_Iallgatherv(s, b, t, d, k_counts, k_displs, t, w, r)
                 : MPI_Allgatherv(s, b, t, d, k_counts, k_displs, t, w);
    case C_ALLTOALLV:
        return r ? MPI_Ialltoallv(s, k_counts, k_displs, t, d, k_counts, k_displs, t, w, r)
                 : MPI_Alltoallv(s, k_counts, k_displs, t, d, k_counts, k_displs, t, w);
    }
    return MPI_ERR_OTHER;
}

#if HAVE_PERSISTENT
static int persistent_init(MPI_Request *r) {
    char *s = g_sbuf, *d = g_rbuf;
    int b = k_cnt;
    MPI_Comm w = k_comm;
    MPI_Datatype t = k_type;
    MPI_Info i = MPI_INFO_NULL;
    switch (k_c) {
    case C_ALLREDUCE: return PINIT(Allreduce)(s, d, b, t, MPI_SUM, w, i, r);
    case C_ALLGATHER: return PINIT(Allgather)(s, b, t, d, b, t, w, i, r);
    case C_ALLTOALL: return PINIT(Alltoall)(s, b, t, d, b, t, w, i, r);
    case C_BCAST: return PINIT(Bcast)(s, b, t, 0, w, i, r);
    case C_ALLGATHERV: return PINIT(Allgatherv)(s, b, t, d, k_counts, k_displs, t, w, i, r);
    case C_ALLTOALLV: return PINIT(Alltoallv)(s, k_counts, k_displs, t, d, k_counts, k_displs, t, w, i, r);
    }
    return MPI_ERR_OTHER;
}
#endif

static void check_rc(int rc, const char *what) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING + 96];
    int len = 0, at = snprintf(msg, sizeof msg, "%s %s failed: ", COLLS[k_c].name, what);
    MPI_Error_string(rc, msg + at, &len);
    die(msg);
}

static void cur_once(void) {
    if (k_v == BLOCKING) {
        check_rc(call(NULL), VAR[k_v]);
    } else if (k_v == NONBLOCKING) {
        MPI_Request r;
        check_rc(call(&r), VAR[k_v]);
        check_rc(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
    } else {
        check_rc(MPI_Start(&k_req), "MPI_Start");
        check_rc(MPI_Wait(&k_req, MPI_STATUS_IGNORE), "MPI_Wait");
    }
}

static int variant_ok(const struct opts *o, int v, int force_persistent) {
    if (!in_list(o->variants, VAR[v])) return 0;
    return v != PERSISTENT || (HAVE_PERSISTENT && (!BROKEN_PERSISTENT || force_persistent));
}

/* Collective c at n bytes per rank (allreduce: n bytes of dt, MPI type `type`) on comm. */
static void coll_point(const struct opts *o, int fp, const char *test, MPI_Comm comm, int scope, int c, int dt,
                       MPI_Datatype type, size_t n) {
    int p, gr;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &gr);
    k_c = c, k_comm = comm, k_type = type;
    k_cnt = (int)(c == C_ALLREDUCE ? n / DT_SIZE[dt] : n);
    for (int q = 0; q < p; q++) k_counts[q] = (int)n, k_displs[q] = q * (int)n;
    for (int v = 0; v < NVAR; v++) {
        if (!variant_ok(o, v, fp)) continue;
        k_v = v;
#if HAVE_PERSISTENT
        if (v == PERSISTENT) check_rc(persistent_init(&k_req), "MPI_Xxx_init");
#endif
        struct point P = {.test = test, .coll = COLLS[c].name, .scope = SCOPE_NAME[scope], .setting = VAR[v],
                          .dtype = c == C_ALLREDUCE ? DT_NAME[dt] : "", .bytes = n,
                          .elems = c == C_ALLREDUCE ? n / DT_SIZE[dt] : n, .group_size = p, .group_rank = gr,
                          .sep = scope == S_SUB || !COLLS[c].syncs, .c = c, .dt = dt, .once = cur_once};
        measure(&HOOKS, &P, o);
        if (v == PERSISTENT) MPI_Request_free(&k_req);
    }
}

static void test_coll(const struct opts *o, int fp) {
    MPI_Comm sub = MPI_COMM_NULL;
    int have_sub = g_nranks >= 4 && g_nranks % 2 == 0 && in_list(o->scopes, "sub");
    if (have_sub) MPI_Comm_split(MPI_COMM_WORLD, sub_color(g_rank), g_rank, &sub);
    for (int c = 0; c < NCOLLS; c++) {
        if (!in_list(o->colls, COLLS[c].name)) continue;
        MPI_Datatype t = c == C_ALLREDUCE ? MPI_FLOAT : MPI_BYTE;
        for (int si = 0; si < o->nsizes; si++) {
            size_t n = o->sizes[si];
            if (c == C_ALLREDUCE && n < 4) continue;
            if (in_list(o->scopes, "world")) coll_point(o, fp, "coll", MPI_COMM_WORLD, S_WORLD, c, DT_F32, t, n);
            if (have_sub) coll_point(o, fp, "coll", sub, S_SUB, c, DT_F32, t, n);
        }
    }
    if (sub != MPI_COMM_NULL) MPI_Comm_free(&sub);
}

static void test_half(const struct opts *o, int fp) {
    for (int dt = 0; dt < NDT; dt++) {
        if (o->dtypes && !in_list(o->dtypes, DT_NAME[dt])) continue;
        MPI_Datatype t = MPI_FLOAT;
        if (dt == DT_BF16) {
            skip_row("half", "bf16", "MPI has no bfloat16 type");
            continue;
        }
        if (dt == DT_F16) {
#ifdef MPIX_C_FLOAT16
            t = MPIX_C_FLOAT16;
            /* Whether this MPI can sum it: one call, errors returned, agreed on by all. */
            char in[2] = {0, 0x3c}, out[2];
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
            int rc = MPI_Allreduce(in, out, 1, t, MPI_SUM, MPI_COMM_WORLD), bad = rc != MPI_SUCCESS, any = 0;
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
            MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (any) {
                char msg[MPI_MAX_ERROR_STRING + 64] = "MPI_Allreduce(MPIX_C_FLOAT16, MPI_SUM) failed";
                int len = 0;
                if (bad) {
                    int at = (int)strlen(msg);
                    msg[at++] = ':', msg[at++] = ' ';
                    MPI_Error_string(rc, msg + at, &len);
                }
                skip_row("half", "f16", msg);
                continue;
            }
#else
            skip_row("half", "f16", "this MPI's mpi.h defines no MPIX_C_FLOAT16 (no 16-bit float type)");
            continue;
#endif
        }
        coll_point(o, fp, "half", MPI_COMM_WORLD, S_WORLD, C_ALLREDUCE, dt, t, o->half_elems * DT_SIZE[dt]);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    g_rank = rank;
    struct opts o;
    int bad = parse_opts(argc, argv, &o) != 0 || nranks > 64, fp = o.force_persistent;
    if (bad) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: %s LIBNAME [--quick] [--pin] [--tests create,coll,half] [--colls LIST]\n"
                    "          [--scopes world,sub] [--sizes LIST] [--dtypes f16,bf16,f32] [--variants LIST]\n"
                    "          [--half-elems N] [--budget-ms X] [--min-iters N] [--max-iters N] [--sep-file PATH]\n"
                    "          [--force-persistent]   (at most 64 ranks)\n",
                    argv[0]);
        MPI_Finalize();
        return 2;
    }
    g_lib = o.name ? o.name : "mpi";
    if (o.sep_file && sep_open(o.sep_file, nranks) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
    if (o.pin) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        if (pin_process((int)(rank % (ncpu < 1 ? 1 : ncpu))) != 0) die("pinning failed");
    }
    groups_alloc(&o, rank, nranks);
    for (int i = 0; i < 500; i++) MPI_Barrier(MPI_COMM_WORLD); /* the first iterations are slow */

    if (rank == 0) {
        char ver[MPI_MAX_LIBRARY_VERSION_STRING] = "", aff[128];
        int len = 0;
        MPI_Get_library_version(ver, &len);
        char *nl = strchr(ver, '\n');
        if (nl) *nl = 0;
        affinity_string(aff, sizeof aff);
        printf("{\"lib\": ");
        json_str(stdout, g_lib);
        printf(", \"test\": \"meta\", \"ranks\": %d, \"version\": ", nranks);
        json_str(stdout, ver);
        printf(", \"mpi_version\": %d, \"persistent\": ", MPI_VERSION);
        json_str(stdout, PERSISTENT_NOTE);
        printf(", \"float16\": %s, \"affinity_rank0\": ",
#ifdef MPIX_C_FLOAT16
               "\"MPIX_C_FLOAT16\""
#else
               "null"
#endif
        );
        json_str(stdout, aff);
        printf(", \"separator\": \"%s\", \"quick\": %s, \"budget_ms\": %g, \"min_iters\": %d, \"max_iters\": %d}\n",
               sep_p ? "shm" : "MPI_Barrier", o.quick ? "true" : "false", o.budget_ms, o.min_it, o.max_it);
        fflush(stdout);
    }
    const char *why = !HAVE_PERSISTENT ? PERSISTENT_NOTE : fp ? NULL : BROKEN_PERSISTENT;
    if (why && in_list(o.variants, "persistent")) skip_row("coll", "persistent", why);
    if (in_list(o.tests, "create")) test_create(&o);
    if (in_list(o.tests, "coll")) test_coll(&o, fp);
    if (in_list(o.tests, "half")) test_half(&o, fp);
    MPI_Finalize();
    return 0;
}
