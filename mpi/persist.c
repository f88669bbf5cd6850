/*
 * persist.c - persistent collectives (MPI-4's MPI_Xxx_init in MPICH 4.0,
 * MPIX_Xxx_init in Open MPI 4.1) and MPI_Start/MPI_Startall.
 *
 * The program's handle is an inactive persistent request of MPI's own that
 * is never started (a send to MPI_PROC_NULL on MPI_COMM_SELF): MPI's Wait
 * and Test functions already treat an inactive persistent request as the
 * standard says (complete at once, empty status; ignored by Waitany and
 * Waitsome), and the handle stays valid across completions. The layer
 * keeps a record of the call's arguments for it. MPI_Start runs the call as
 * the non-blocking collective would (the same cached schedule, or MPI's if
 * goal refuses), and until that request completes the layer's Wait and Test
 * functions hand MPI, in a copy of the program's array, that request in
 * place of the handle ("swap"), and mark the handle inactive again when MPI
 * has completed it ("back"). The v-forms' persistent calls, and those on a
 * communicator the layer does not serve, go to MPI from the start.
 */
#include "layer.h"

#include <stdlib.h>
#include <string.h>

#ifdef OPEN_MPI
#include <mpi-ext.h>
#define INIT(name) MPIX_##name##_init
#define PINIT(name) PMPIX_##name##_init
#ifdef OMPI_HAVE_MPI_EXT_PCOLLREQ
#define HAVE_PERSISTENT 1
#endif
#else
#define INIT(name) MPI_##name##_init
#define PINIT(name) PMPI_##name##_init
#if MPI_VERSION >= 4
#define HAVE_PERSISTENT 1
#endif
#endif

#ifdef HAVE_PERSISTENT

enum pkind { P_BARRIER, P_BCAST, P_ALLREDUCE, P_REDUCE, P_ALLGATHER, P_ALLTOALL, P_GATHER, P_SCATTER, P_RSB };

struct pers {
    MPI_Request handle;  /* the program's: inactive, never started */
    MPI_Request running; /* while started: the request doing the work */
    enum pkind kind;
    const void *sbuf;
    void *rbuf;
    int scount, rcount, root;
    MPI_Datatype st, rt;
    MPI_Op op;
    MPI_Comm comm;
    struct pers *next;
};

static struct pers *all;
static int nactive;

static struct pers *find(MPI_Request r)
{
    if (r == MPI_REQUEST_NULL)
        return NULL;
    for (struct pers *p = all; p; p = p->next)
        if (p->handle == r)
            return p;
    return NULL;
}

/* A record for the call, and the program's handle for it; MPI_SUCCESS or
 * an error (then MPI's own persistent call is made instead). */
static int record(struct pers *tmpl, MPI_Request *req)
{
    struct pers *p = malloc(sizeof *p);
    if (!p)
        return MPI_ERR_NO_MEM;
    *p = *tmpl;
    p->running = MPI_REQUEST_NULL;
    int rc = PMPI_Send_init(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &p->handle);
    if (rc != MPI_SUCCESS) {
        free(p);
        return rc;
    }
    gm_lock();
    p->next = all;
    all = p;
    gm_unlock();
    *req = p->handle;
    return MPI_SUCCESS;
}

static int served_comm(MPI_Comm comm)
{
    enum gm_why why;
    return gm_comm_of(comm, &why) != NULL;
}

#define RECORD_OR(...)                                                                                                 \
    do {                                                                                                               \
        if (served_comm(comm) && record(&p, req) == MPI_SUCCESS)                                                       \
            return MPI_SUCCESS;                                                                                        \
        return __VA_ARGS__;                                                                                            \
    } while (0)

int INIT(Barrier)(MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    struct pers p = { .kind = P_BARRIER, .comm = comm };
    RECORD_OR(PINIT(Barrier)(comm, info, req));
}

int INIT(Bcast)(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    struct pers p = { .kind = P_BCAST, .rbuf = buf, .rcount = count, .rt = dt, .root = root, .comm = comm };
    RECORD_OR(PINIT(Bcast)(buf, count, dt, root, comm, info, req));
}

int INIT(Allreduce)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Info info,
                    MPI_Request *req)
{
    struct pers p = { .kind = P_ALLREDUCE, .sbuf = sbuf, .rbuf = rbuf, .rcount = count, .rt = dt, .op = op, .comm = comm };
    RECORD_OR(PINIT(Allreduce)(sbuf, rbuf, count, dt, op, comm, info, req));
}

int INIT(Reduce)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                 MPI_Info info, MPI_Request *req)
{
    struct pers p = { .kind = P_REDUCE, .sbuf = sbuf, .rbuf = rbuf, .rcount = count, .rt = dt, .op = op, .root = root,
                      .comm = comm };
    RECORD_OR(PINIT(Reduce)(sbuf, rbuf, count, dt, op, root, comm, info, req));
}

int INIT(Reduce_scatter_block)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                               MPI_Info info, MPI_Request *req)
{
    struct pers p = { .kind = P_RSB, .sbuf = sbuf, .rbuf = rbuf, .rcount = count, .rt = dt, .op = op, .comm = comm };
    RECORD_OR(PINIT(Reduce_scatter_block)(sbuf, rbuf, count, dt, op, comm, info, req));
}

#define BLOCKS(Name, KIND)                                                                                             \
    int INIT(Name)(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,            \
                   MPI_Comm comm, MPI_Info info, MPI_Request *req)                                                     \
    {                                                                                                                  \
        struct pers p = { .kind = KIND, .sbuf = sbuf, .scount = scount, .st = st, .rbuf = rbuf, .rcount = rcount,      \
                          .rt = rt, .comm = comm };                                                                    \
        RECORD_OR(PINIT(Name)(sbuf, scount, st, rbuf, rcount, rt, comm, info, req));                                   \
    }
BLOCKS(Allgather, P_ALLGATHER)
BLOCKS(Alltoall, P_ALLTOALL)

#define ROOTED(Name, KIND)                                                                                             \
    int INIT(Name)(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int root,   \
                   MPI_Comm comm, MPI_Info info, MPI_Request *req)                                                     \
    {                                                                                                                  \
        struct pers p = { .kind = KIND, .sbuf = sbuf, .scount = scount, .st = st, .rbuf = rbuf, .rcount = rcount,      \
                          .rt = rt, .root = root, .comm = comm };                                                      \
        RECORD_OR(PINIT(Name)(sbuf, scount, st, rbuf, rcount, rt, root, comm, info, req));                             \
    }
ROOTED(Gather, P_GATHER)
ROOTED(Scatter, P_SCATTER)

/* Runs the record's collective as its non-blocking form does. */
static int start(struct pers *p)
{
    if (p->running != MPI_REQUEST_NULL)
        return MPI_ERR_REQUEST; /* started twice */
    MPI_Request *r = &p->running;
    int rc = MPI_ERR_INTERN;
    switch (p->kind) {
    case P_BARRIER: rc = MPI_Ibarrier(p->comm, r); break;
    case P_BCAST: rc = MPI_Ibcast(p->rbuf, p->rcount, p->rt, p->root, p->comm, r); break;
    case P_ALLREDUCE: rc = MPI_Iallreduce(p->sbuf, p->rbuf, p->rcount, p->rt, p->op, p->comm, r); break;
    case P_REDUCE: rc = MPI_Ireduce(p->sbuf, p->rbuf, p->rcount, p->rt, p->op, p->root, p->comm, r); break;
    case P_RSB: rc = MPI_Ireduce_scatter_block(p->sbuf, p->rbuf, p->rcount, p->rt, p->op, p->comm, r); break;
    case P_ALLGATHER: rc = MPI_Iallgather(p->sbuf, p->scount, p->st, p->rbuf, p->rcount, p->rt, p->comm, r); break;
    case P_ALLTOALL: rc = MPI_Ialltoall(p->sbuf, p->scount, p->st, p->rbuf, p->rcount, p->rt, p->comm, r); break;
    case P_GATHER:
        rc = MPI_Igather(p->sbuf, p->scount, p->st, p->rbuf, p->rcount, p->rt, p->root, p->comm, r);
        break;
    case P_SCATTER:
        rc = MPI_Iscatter(p->sbuf, p->scount, p->st, p->rbuf, p->rcount, p->rt, p->root, p->comm, r);
        break;
    }
    if (rc == MPI_SUCCESS) {
        gm_lock();
        nactive++;
        gm_unlock();
    }
    return rc;
}

int MPI_Start(MPI_Request *req)
{
    gm_lock();
    struct pers *p = find(*req);
    gm_unlock();
    return p ? start(p) : PMPI_Start(req);
}

int MPI_Startall(int n, MPI_Request reqs[])
{
    for (int i = 0; i < n; i++) {
        int rc = MPI_Start(&reqs[i]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

MPI_Request *gm_pers_swap(int n, MPI_Request *reqs, MPI_Request *buf, int nbuf)
{
    if (!nactive || n <= 0)
        return reqs;
    MPI_Request *v = n <= nbuf ? buf : malloc(sizeof *v * (size_t)n);
    if (!v)
        return reqs;
    gm_lock();
    for (int i = 0; i < n; i++) {
        struct pers *p = find(reqs[i]);
        v[i] = p && p->running != MPI_REQUEST_NULL ? p->running : reqs[i];
    }
    gm_unlock();
    return v;
}

void gm_pers_back(int n, MPI_Request *reqs, MPI_Request *v, MPI_Request *buf)
{
    if (v == reqs)
        return;
    gm_lock();
    for (int i = 0; i < n; i++) {
        struct pers *p = find(reqs[i]);
        if (p && p->running != MPI_REQUEST_NULL) {
            p->running = v[i]; /* MPI_REQUEST_NULL once MPI completed it: inactive again */
            if (v[i] == MPI_REQUEST_NULL)
                nactive--;
        } else {
            reqs[i] = v[i];
        }
    }
    gm_unlock();
    if (v != buf)
        free(v);
}

/* MPI_Request_free of the program's handle: a started collective finishes
 * first (MPI lets a program free an active persistent request). */
int gm_pers_free(MPI_Request *req)
{
    gm_lock();
    struct pers **pp = &all;
    while (*pp && (*pp)->handle != *req)
        pp = &(*pp)->next;
    struct pers *p = *pp;
    gm_unlock();
    if (!p)
        return -1;
    if (p->running != MPI_REQUEST_NULL)
        MPI_Wait(req, MPI_STATUS_IGNORE);
    gm_lock();
    for (pp = &all; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    gm_unlock();
    free(p);
    return PMPI_Request_free(req);
}

#else /* no persistent collectives in this MPI */

MPI_Request *gm_pers_swap(int n, MPI_Request *reqs, MPI_Request *buf, int nbuf)
{
    return reqs;
}

void gm_pers_back(int n, MPI_Request *reqs, MPI_Request *v, MPI_Request *buf) {}

int gm_pers_free(MPI_Request *req)
{
    return -1;
}

#endif
