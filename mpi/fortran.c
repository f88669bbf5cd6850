/*
 * fortran.c - the Fortran entry points (mpif.h and `use mpi`) under Open
 * MPI, whose Fortran bindings call the C PMPI_ functions directly and so
 * never reach the layer's C wrappers. (MPICH's Fortran bindings call the C
 * MPI_ functions, which are the layer's already: nothing to do there.)
 *
 * Served from Fortran: MPI_INIT, MPI_INIT_THREAD, MPI_FINALIZE (so that
 * goal starts and ends with a Fortran program), the non-blocking
 * collectives IBARRIER, IBCAST, IALLREDUCE, IREDUCE, IALLGATHER, IALLTOALL,
 * IGATHER, ISCATTER, IREDUCE_SCATTER(_BLOCK) and the v-forms (IALLGATHERV,
 * IALLTOALLV, IGATHERV, ISCATTERV), and the whole Wait/Test family (a Fortran MPI_WAIT of a
 * request the layer made must drive goal). Each entry converts the Fortran
 * handles (MPI_Xxx_f2c), MPI_IN_PLACE, MPI_BOTTOM and the status-ignore
 * markers (Open MPI's Fortran common blocks, found with dlsym) and calls the
 * layer's C function. Communicators made from Fortran (MPI_COMM_DUP, ...)
 * are not followed (Open MPI makes them through PMPI_): collectives on them
 * go to MPI. `use mpi_f08` is not served. Every name is defined in the four
 * spellings compilers use (mpi_x, mpi_x_, mpi_x__, MPI_X).
 */
#include "layer.h"

#ifdef OPEN_MPI

#include <dlfcn.h>
#include <stdlib.h>

/* One Fortran marker (a common block), in its four spellings. */
struct marker {
    const char *names[4];
    void *at[4];
};

static struct marker in_place = { { "mpi_fortran_in_place", "mpi_fortran_in_place_", "mpi_fortran_in_place__",
                                    "MPI_FORTRAN_IN_PLACE" }, { 0 } };
static struct marker bottom = { { "mpi_fortran_bottom", "mpi_fortran_bottom_", "mpi_fortran_bottom__",
                                  "MPI_FORTRAN_BOTTOM" }, { 0 } };
static struct marker st_ignore = { { "mpi_fortran_status_ignore", "mpi_fortran_status_ignore_",
                                     "mpi_fortran_status_ignore__", "MPI_FORTRAN_STATUS_IGNORE" }, { 0 } };
static struct marker sts_ignore = { { "mpi_fortran_statuses_ignore", "mpi_fortran_statuses_ignore_",
                                      "mpi_fortran_statuses_ignore__", "MPI_FORTRAN_STATUSES_IGNORE" }, { 0 } };

static int is(struct marker *m, const void *p)
{
    if (!m->at[0] && !m->at[1] && !m->at[2] && !m->at[3])
        for (int i = 0; i < 4; i++)
            m->at[i] = dlsym(RTLD_DEFAULT, m->names[i]);
    for (int i = 0; i < 4; i++)
        if (p && p == m->at[i])
            return 1;
    return 0;
}

static void *buf(void *p)
{
    return is(&in_place, p) ? MPI_IN_PLACE : is(&bottom, p) ? MPI_BOTTOM : p;
}

/* Defines the four spellings of a Fortran name as `impl`. */
#define SPELLINGS(lower, upper, impl, params)                                                                          \
    void lower params __attribute__((alias(#impl)));                                                                   \
    void lower##_ params __attribute__((alias(#impl)));                                                                \
    void lower##__ params __attribute__((alias(#impl)));                                                               \
    void upper params __attribute__((alias(#impl)));

/* ---- start and end ---- */

static void gm_f_init(MPI_Fint *ierr)
{
    *ierr = MPI_Init(NULL, NULL);
}
SPELLINGS(mpi_init, MPI_INIT, gm_f_init, (MPI_Fint * ierr))

static void gm_f_init_thread(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    int p = 0;
    *ierr = MPI_Init_thread(NULL, NULL, *required, &p);
    *provided = p;
}
SPELLINGS(mpi_init_thread, MPI_INIT_THREAD, gm_f_init_thread, (MPI_Fint * required, MPI_Fint *provided, MPI_Fint *ierr))

static void gm_f_finalize(MPI_Fint *ierr)
{
    *ierr = MPI_Finalize();
}
SPELLINGS(mpi_finalize, MPI_FINALIZE, gm_f_finalize, (MPI_Fint * ierr))

/* ---- collectives ---- */

#define REQ_OUT(rc, c_req, f_req)                                                                                      \
    do {                                                                                                               \
        if ((rc) == MPI_SUCCESS)                                                                                       \
            *(f_req) = MPI_Request_c2f(c_req);                                                                         \
    } while (0)

static void gm_f_ibarrier(MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
{
    MPI_Request r;
    *ierr = MPI_Ibarrier(MPI_Comm_f2c(*comm), &r);
    REQ_OUT(*ierr, r, req);
}
SPELLINGS(mpi_ibarrier, MPI_IBARRIER, gm_f_ibarrier, (MPI_Fint * comm, MPI_Fint *req, MPI_Fint *ierr))

static void gm_f_ibcast(void *b, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *req,
                        MPI_Fint *ierr)
{
    MPI_Request r;
    *ierr = MPI_Ibcast(buf(b), *count, MPI_Type_f2c(*dt), *root, MPI_Comm_f2c(*comm), &r);
    REQ_OUT(*ierr, r, req);
}
SPELLINGS(mpi_ibcast, MPI_IBCAST, gm_f_ibcast,
          (void *b, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr))

static void gm_f_iallreduce(void *s, void *rb, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm,
                            MPI_Fint *req, MPI_Fint *ierr)
{
    MPI_Request r;
    *ierr = MPI_Iallreduce(buf(s), buf(rb), *count, MPI_Type_f2c(*dt), MPI_Op_f2c(*op), MPI_Comm_f2c(*comm), &r);
    REQ_OUT(*ierr, r, req);
}
SPELLINGS(mpi_iallreduce, MPI_IALLREDUCE, gm_f_iallreduce,
          (void *s, void *rb, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm, MPI_Fint *req,
           MPI_Fint *ierr))

static void gm_f_ireduce(void *s, void *rb, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm,
                         MPI_Fint *req, MPI_Fint *ierr)
{
    MPI_Request r;
    *ierr = MPI_Ireduce(buf(s), buf(rb), *count, MPI_Type_f2c(*dt), MPI_Op_f2c(*op), *root, MPI_Comm_f2c(*comm), &r);
    REQ_OUT(*ierr, r, req);
}
SPELLINGS(mpi_ireduce, MPI_IREDUCE, gm_f_ireduce,
          (void *s, void *rb, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm,
           MPI_Fint *req, MPI_Fint *ierr))

#define BLOCKS(lower, upper, cname)                                                                                    \
    static void gm_f_##lower(void *s, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt,                \
                             MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)                                            \
    {                                                                                                                  \
        MPI_Request r;                                                                                                 \
        *ierr = cname(buf(s), *sc, MPI_Type_f2c(*st), buf(rb), *rc, MPI_Type_f2c(*rt), MPI_Comm_f2c(*comm), &r);      \
        REQ_OUT(*ierr, r, req);                                                                                        \
    }                                                                                                                  \
    SPELLINGS(lower, upper, gm_f_##lower,                                                                              \
              (void *s, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *comm,             \
               MPI_Fint *req, MPI_Fint *ierr))
BLOCKS(mpi_iallgather, MPI_IALLGATHER, MPI_Iallgather)
BLOCKS(mpi_ialltoall, MPI_IALLTOALL, MPI_Ialltoall)

#define ROOTED(lower, upper, cname)                                                                                    \
    static void gm_f_##lower(void *s, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt,                \
                             MPI_Fint *root, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)                            \
    {                                                                                                                  \
        MPI_Request r;                                                                                                 \
        *ierr = cname(buf(s), *sc, MPI_Type_f2c(*st), buf(rb), *rc, MPI_Type_f2c(*rt), *root, MPI_Comm_f2c(*comm),    \
                      &r);                                                                                             \
        REQ_OUT(*ierr, r, req);                                                                                        \
    }                                                                                                                  \
    SPELLINGS(lower, upper, gm_f_##lower,                                                                              \
              (void *s, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root,             \
               MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr))
ROOTED(mpi_igather, MPI_IGATHER, MPI_Igather)
ROOTED(mpi_iscatter, MPI_ISCATTER, MPI_Iscatter)

static void gm_f_ireduce_scatter_block(void *s, void *rb, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm,
                                       MPI_Fint *req, MPI_Fint *ierr)
{
    MPI_Request r;
    *ierr = MPI_Ireduce_scatter_block(buf(s), buf(rb), *count, MPI_Type_f2c(*dt), MPI_Op_f2c(*op), MPI_Comm_f2c(*comm),
                                      &r);
    REQ_OUT(*ierr, r, req);
}
SPELLINGS(mpi_ireduce_scatter_block, MPI_IREDUCE_SCATTER_BLOCK, gm_f_ireduce_scatter_block,
          (void *s, void *rb, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm, MPI_Fint *req,
           MPI_Fint *ierr))

/* The v-forms: Fortran's INTEGER arrays of counts and displacements are C
 * ints (MPI_Fint is int in Open MPI). */
static void gm_f_ireduce_scatter(void *s, void *rb, MPI_Fint *counts, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm,
                                 MPI_Fint *req, MPI_Fint *ierr)
{
    MPI_Request r;
    *ierr = MPI_Ireduce_scatter(buf(s), buf(rb), counts, MPI_Type_f2c(*dt), MPI_Op_f2c(*op), MPI_Comm_f2c(*comm), &r);
    REQ_OUT(*ierr, r, req);
}
SPELLINGS(mpi_ireduce_scatter, MPI_IREDUCE_SCATTER, gm_f_ireduce_scatter,
          (void *s, void *rb, MPI_Fint *counts, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm, MPI_Fint *req,
           MPI_Fint *ierr))

static void gm_f_iallgatherv(void *s, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rcounts, MPI_Fint *displs,
                             MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
{
    MPI_Request r;
    *ierr = MPI_Iallgatherv(buf(s), *sc, MPI_Type_f2c(*st), buf(rb), rcounts, displs, MPI_Type_f2c(*rt),
                            MPI_Comm_f2c(*comm), &r);
    REQ_OUT(*ierr, r, req);
}
SPELLINGS(mpi_iallgatherv, MPI_IALLGATHERV, gm_f_iallgatherv,
          (void *s, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rcounts, MPI_Fint *displs, MPI_Fint *rt,
           MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr))

static void gm_f_ialltoallv(void *s, MPI_Fint *scounts, MPI_Fint *sdispls, MPI_Fint *st, void *rb, MPI_Fint *rcounts,
                            MPI_Fint *rdispls, MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
{
    MPI_Request r;
    *ierr = MPI_Ialltoallv(buf(s), scounts, sdispls, MPI_Type_f2c(*st), buf(rb), rcounts, rdispls, MPI_Type_f2c(*rt),
                           MPI_Comm_f2c(*comm), &r);
    REQ_OUT(*ierr, r, req);
}
SPELLINGS(mpi_ialltoallv, MPI_IALLTOALLV, gm_f_ialltoallv,
          (void *s, MPI_Fint *scounts, MPI_Fint *sdispls, MPI_Fint *st, void *rb, MPI_Fint *rcounts,
           MPI_Fint *rdispls, MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr))

static void gm_f_igatherv(void *s, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rcounts, MPI_Fint *displs,
                          MPI_Fint *rt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
{
    MPI_Request r;
    *ierr = MPI_Igatherv(buf(s), *sc, MPI_Type_f2c(*st), buf(rb), rcounts, displs, MPI_Type_f2c(*rt), *root,
                         MPI_Comm_f2c(*comm), &r);
    REQ_OUT(*ierr, r, req);
}
SPELLINGS(mpi_igatherv, MPI_IGATHERV, gm_f_igatherv,
          (void *s, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rcounts, MPI_Fint *displs, MPI_Fint *rt,
           MPI_Fint *root, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr))

static void gm_f_iscatterv(void *s, MPI_Fint *scounts, MPI_Fint *displs, MPI_Fint *st, void *rb, MPI_Fint *rc,
                           MPI_Fint *rt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
{
    MPI_Request r;
    *ierr = MPI_Iscatterv(buf(s), scounts, displs, MPI_Type_f2c(*st), buf(rb), *rc, MPI_Type_f2c(*rt), *root,
                          MPI_Comm_f2c(*comm), &r);
    REQ_OUT(*ierr, r, req);
}
SPELLINGS(mpi_iscatterv, MPI_ISCATTERV, gm_f_iscatterv,
          (void *s, MPI_Fint *scounts, MPI_Fint *displs, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt,
           MPI_Fint *root, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr))

/* ---- requests: Fortran arrays in, C calls, Fortran arrays out ---- */

/* C requests of `n` Fortran ones (in `small` when they fit). */
static MPI_Request *reqs_in(int n, const MPI_Fint *f, MPI_Request *small)
{
    MPI_Request *c = n <= 16 ? small : malloc(sizeof *c * (size_t)(n > 0 ? n : 1));
    for (int i = 0; c && i < n; i++)
        c[i] = MPI_Request_f2c(f[i]);
    return c;
}

static void reqs_out(int n, MPI_Request *c, MPI_Fint *f, MPI_Request *small)
{
    for (int i = 0; i < n; i++)
        f[i] = MPI_Request_c2f(c[i]);
    if (c != small)
        free(c);
}

/* C statuses for `n` Fortran ones, or MPI_STATUSES_IGNORE. */
static MPI_Status *sts_in(int n, MPI_Fint *f, MPI_Status *small)
{
    if (is(&sts_ignore, f) || is(&st_ignore, f))
        return MPI_STATUSES_IGNORE;
    return n <= 16 ? small : malloc(sizeof(MPI_Status) * (size_t)(n > 0 ? n : 1));
}

static void sts_out(int n, MPI_Status *c, MPI_Fint *f, MPI_Status *small)
{
    if (c == MPI_STATUSES_IGNORE)
        return;
    for (int i = 0; i < n; i++)
        MPI_Status_c2f(&c[i], f + (size_t)i * (sizeof(MPI_Status) / sizeof(int)));
    if (c != small)
        free(c);
}

/* The C call on arrays converted both ways (`n` requests, `ns` statuses). */
#define ARRAYS(n, freqs, fsts, ns, call)                                                                               \
    MPI_Request small_r_[16], *reqs = reqs_in(n, freqs, small_r_);                                                     \
    MPI_Status small_s_[16], *sts = sts_in(n, fsts, small_s_);                                                        \
    *ierr = (call);                                                                                                    \
    reqs_out(n, reqs, freqs, small_r_);                                                                                \
    sts_out(ns, sts, fsts, small_s_)

static void gm_f_wait(MPI_Fint *req, MPI_Fint *st, MPI_Fint *ierr)
{
    ARRAYS(1, req, st, *ierr == MPI_SUCCESS, MPI_Wait(reqs, sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : sts));
}
SPELLINGS(mpi_wait, MPI_WAIT, gm_f_wait, (MPI_Fint * req, MPI_Fint *st, MPI_Fint *ierr))

static void gm_f_waitall(MPI_Fint *n, MPI_Fint *req, MPI_Fint *st, MPI_Fint *ierr)
{
    ARRAYS(*n, req, st, *n, MPI_Waitall(*n, reqs, sts));
}
SPELLINGS(mpi_waitall, MPI_WAITALL, gm_f_waitall, (MPI_Fint * n, MPI_Fint *req, MPI_Fint *st, MPI_Fint *ierr))

static void gm_f_waitany(MPI_Fint *n, MPI_Fint *req, MPI_Fint *index, MPI_Fint *st, MPI_Fint *ierr)
{
    int i = 0;
    ARRAYS(*n, req, st, 1, MPI_Waitany(*n, reqs, &i, sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : sts));
    *index = i == MPI_UNDEFINED ? i : i + 1;
}
SPELLINGS(mpi_waitany, MPI_WAITANY, gm_f_waitany,
          (MPI_Fint * n, MPI_Fint *req, MPI_Fint *index, MPI_Fint *st, MPI_Fint *ierr))

static void gm_f_waitsome(MPI_Fint *n, MPI_Fint *req, MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *st,
                          MPI_Fint *ierr)
{
    int out = 0, *idx = malloc(sizeof(int) * (size_t)(*n > 0 ? *n : 1));
    ARRAYS(*n, req, st, out == MPI_UNDEFINED ? 0 : out, MPI_Waitsome(*n, reqs, &out, idx, sts));
    *outcount = out;
    for (int i = 0; out != MPI_UNDEFINED && i < out; i++)
        indices[i] = idx[i] + 1;
    free(idx);
}
SPELLINGS(mpi_waitsome, MPI_WAITSOME, gm_f_waitsome,
          (MPI_Fint * n, MPI_Fint *req, MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *st, MPI_Fint *ierr))

static void gm_f_test(MPI_Fint *req, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr)
{
    int f = 0;
    ARRAYS(1, req, st, f, MPI_Test(reqs, &f, sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : sts));
    *flag = f;
}
SPELLINGS(mpi_test, MPI_TEST, gm_f_test, (MPI_Fint * req, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr))

static void gm_f_testall(MPI_Fint *n, MPI_Fint *req, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr)
{
    int f = 0;
    ARRAYS(*n, req, st, f ? *n : 0, MPI_Testall(*n, reqs, &f, sts));
    *flag = f;
}
SPELLINGS(mpi_testall, MPI_TESTALL, gm_f_testall,
          (MPI_Fint * n, MPI_Fint *req, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr))

static void gm_f_testany(MPI_Fint *n, MPI_Fint *req, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr)
{
    int i = 0, f = 0;
    ARRAYS(*n, req, st, f, MPI_Testany(*n, reqs, &i, &f, sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : sts));
    *flag = f;
    *index = i == MPI_UNDEFINED ? i : i + 1;
}
SPELLINGS(mpi_testany, MPI_TESTANY, gm_f_testany,
          (MPI_Fint * n, MPI_Fint *req, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr))

static void gm_f_testsome(MPI_Fint *n, MPI_Fint *req, MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *st,
                          MPI_Fint *ierr)
{
    int out = 0, *idx = malloc(sizeof(int) * (size_t)(*n > 0 ? *n : 1));
    ARRAYS(*n, req, st, out == MPI_UNDEFINED ? 0 : out, MPI_Testsome(*n, reqs, &out, idx, sts));
    *outcount = out;
    for (int i = 0; out != MPI_UNDEFINED && i < out; i++)
        indices[i] = idx[i] + 1;
    free(idx);
}
SPELLINGS(mpi_testsome, MPI_TESTSOME, gm_f_testsome,
          (MPI_Fint * n, MPI_Fint *req, MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *st, MPI_Fint *ierr))

static void gm_f_request_free(MPI_Fint *req, MPI_Fint *ierr)
{
    MPI_Request r = MPI_Request_f2c(*req);
    *ierr = MPI_Request_free(&r);
    *req = MPI_Request_c2f(r);
}
SPELLINGS(mpi_request_free, MPI_REQUEST_FREE, gm_f_request_free, (MPI_Fint * req, MPI_Fint *ierr))

static void gm_f_request_get_status(MPI_Fint *req, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr)
{
    int f = 0;
    MPI_Status s;
    *ierr = MPI_Request_get_status(MPI_Request_f2c(*req), &f, &s);
    *flag = f;
    if (f && !is(&st_ignore, st))
        MPI_Status_c2f(&s, st);
}
SPELLINGS(mpi_request_get_status, MPI_REQUEST_GET_STATUS, gm_f_request_get_status,
          (MPI_Fint * req, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr))

#endif
