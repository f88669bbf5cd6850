/*
 * collv.c - the non-blocking collectives with per-rank counts: gatherv,
 * scatterv, allgatherv, alltoallv, reduce_scatter. Each call compiles its
 * own schedule with the call's buffers and frees it when it ends (see
 * coll.c for why these are not cached). MPI's counts and displacements,
 * in elements of the datatype, become goal's, in bytes (reduce_scatter's
 * counts stay elements); MPI_IN_PLACE is goal's in-place form, sbuf ==
 * rbuf, whose meaning per collective is MPI's.
 */
#include "layer.h"

#include <stdlib.h>

/* counts[i] * unit (and displs[i] * unit) as size_t arrays of n entries,
 * in one allocation (NULL counts give NULL: off the root). */
static size_t *scaled(const int *counts, const int *displs, int n, size_t unit, size_t **dout)
{
    *dout = NULL;
    if (!counts)
        return NULL;
    size_t *out = malloc(sizeof(size_t) * 2 * (size_t)(n ? n : 1));
    if (!out)
        return NULL;
    for (int i = 0; i < n; i++) {
        out[i] = (size_t)counts[i] * unit;
        if (displs)
            out[n + i] = (size_t)displs[i] * unit;
    }
    if (displs)
        *dout = out + n;
    return out;
}

int MPI_Igatherv(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, const int rcounts[], const int displs[],
                 MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_IGATHERV, comm);
    size_t unit = 0, sn = 0;
    int at_root = c && c->rank == root, rc;
    if (c && (!at_root || gm_bytes_of(GM_IGATHERV, rt, 1, &unit)) &&
        (sbuf == MPI_IN_PLACE || gm_bytes_of(GM_IGATHERV, st, scount, &sn))) {
        size_t *d, *n = at_root ? scaled(rcounts, displs, c->size, unit, &d) : NULL;
        if (!at_root)
            d = NULL;
        if (sbuf == MPI_IN_PLACE && n)
            sbuf = rbuf, sn = n[root];
        GOAL_Schedule s = GOAL_Gatherv_init_on(c->group, sbuf, sn, rbuf, n, d, root, GOAL_ALG_LINEAR);
        free(n);
        if ((rc = gm_serve_once(GM_IGATHERV, c, s, req)) >= 0)
            return rc;
        if (sbuf == rbuf && at_root)
            sbuf = MPI_IN_PLACE;
    }
    return PMPI_Igatherv(sbuf, scount, st, rbuf, rcounts, displs, rt, root, comm, req);
}

int MPI_Iscatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype st, void *rbuf, int rcount,
                  MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_ISCATTERV, comm);
    size_t unit = 0, rn = 0;
    int at_root = c && c->rank == root, rc;
    if (c && (!at_root || gm_bytes_of(GM_ISCATTERV, st, 1, &unit)) &&
        (rbuf == MPI_IN_PLACE || gm_bytes_of(GM_ISCATTERV, rt, rcount, &rn))) {
        size_t *d, *n = at_root ? scaled(scounts, displs, c->size, unit, &d) : NULL;
        if (!at_root)
            d = NULL;
        void *r = rbuf;
        if (rbuf == MPI_IN_PLACE && n)
            r = (void *)sbuf, rn = n[root];
        GOAL_Schedule s = GOAL_Scatterv_init_on(c->group, sbuf, n, d, r, rn, root, GOAL_ALG_LINEAR);
        free(n);
        if ((rc = gm_serve_once(GM_ISCATTERV, c, s, req)) >= 0)
            return rc;
    }
    return PMPI_Iscatterv(sbuf, scounts, displs, st, rbuf, rcount, rt, root, comm, req);
}

int MPI_Iallgatherv(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, const int rcounts[],
                    const int displs[], MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_IALLGATHERV, comm);
    size_t unit = 0, sn = 0;
    int rc;
    if (c && gm_bytes_of(GM_IALLGATHERV, rt, 1, &unit) &&
        (sbuf == MPI_IN_PLACE || gm_bytes_of(GM_IALLGATHERV, st, scount, &sn))) {
        size_t *d, *n = scaled(rcounts, displs, c->size, unit, &d);
        const void *s0 = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
        if (sbuf == MPI_IN_PLACE && n)
            sn = n[c->rank];
        GOAL_Schedule s = n ? GOAL_Allgatherv_init_on(c->group, s0, sn, rbuf, n, d, GOAL_ALG_AUTO) : NULL;
        free(n);
        if ((rc = gm_serve_once(GM_IALLGATHERV, c, s, req)) >= 0)
            return rc;
    }
    return PMPI_Iallgatherv(sbuf, scount, st, rbuf, rcounts, displs, rt, comm, req);
}

int MPI_Ialltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype st, void *rbuf,
                   const int rcounts[], const int rdispls[], MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_IALLTOALLV, comm);
    size_t su = 0, ru = 0;
    int inplace = sbuf == MPI_IN_PLACE, rc;
    if (c && gm_bytes_of(GM_IALLTOALLV, rt, 1, &ru) && (inplace || gm_bytes_of(GM_IALLTOALLV, st, 1, &su))) {
        size_t *rd, *rn = scaled(rcounts, rdispls, c->size, ru, &rd);
        size_t *sd = NULL, *sn = inplace ? NULL : scaled(scounts, sdispls, c->size, su, &sd);
        GOAL_Schedule s = rn && (inplace || sn)
                              ? GOAL_Alltoallv_init_on(c->group, inplace ? rbuf : sbuf, sn, sd, rbuf, rn, rd, GOAL_ALG_AUTO)
                              : NULL;
        free(rn);
        free(sn);
        if ((rc = gm_serve_once(GM_IALLTOALLV, c, s, req)) >= 0)
            return rc;
    }
    return PMPI_Ialltoallv(sbuf, scounts, sdispls, st, rbuf, rcounts, rdispls, rt, comm, req);
}

int MPI_Ireduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dt, MPI_Op op,
                        MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_IREDUCE_SCATTER, comm);
    struct gm_red r;
    struct gm_key k = { 0 };
    int rc;
    if (c && gm_reduction_key(GM_IREDUCE_SCATTER, dt, op, 0, &r, &k)) {
        size_t *d, *n = scaled(rcounts, NULL, c->size, r.per, &d);
        GOAL_Schedule s = n ? GOAL_Reduce_scatter_init_on(c->group, sbuf == MPI_IN_PLACE ? rbuf : sbuf, rbuf, n,
                                                          r.gdt, r.width, r.op, GOAL_ALG_AUTO)
                            : NULL;
        free(n);
        if ((rc = gm_serve_once(GM_IREDUCE_SCATTER, c, s, req)) >= 0)
            return rc;
    }
    return PMPI_Ireduce_scatter(sbuf, rbuf, rcounts, dt, op, comm, req);
}
