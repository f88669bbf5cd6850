/*
 * collv.c - the non-blocking collectives with per-rank counts: gatherv,
 * scatterv, allgatherv, alltoallv, reduce_scatter.
 *
 * Reduce_scatter and allgatherv are cached like the others: MPI has every
 * rank pass their counts alike, so the whole count vector is in the key
 * (allgatherv's displacements, a rank's own, are kept out of the schedule:
 * see MPI_Iallgatherv). Gatherv, scatterv and alltoallv compile a schedule
 * per call with the call's buffers and free it when it ends: each rank
 * knows only its own counts (the root all of them), so no key would be
 * computed alike on every rank, and goal pairs schedules by compile order,
 * so one rank's hit beside another's miss would pair the wrong schedules
 * (docs/mpi.md). MPI's counts and displacements,
 * in elements of the datatype, become goal's, in bytes (reduce_scatter's
 * counts stay elements); MPI_IN_PLACE is goal's in-place form, sbuf ==
 * rbuf, whose meaning per collective is MPI's.
 */
#include "layer.h"

#include <stdlib.h>


/* Two size_t arrays of n entries (counts, displacements), in one allocation. */
static size_t *pair(int n)
{
    return malloc(sizeof(size_t) * 2 * (size_t)(n > 0 ? n : 1));
}

/* Counted as a datatype goal cannot take; `x` and `a` freed. */
static int unseen(enum gm_fn fn, struct gm_bufs *x, size_t *a)
{
    gm_count(fn, GM_TYPE);
    gm_bufs_end(x, 0);
    free(a);
    return -1;
}

int MPI_Igatherv(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, const int rcounts[], const int displs[],
                 MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_IGATHERV, comm);
    if (c) {
        struct gm_bufs x = { 0 };
        int me = c->rank == root, inplace = me && sbuf == MPI_IN_PLACE;
        size_t *n = me ? pair(c->size) : NULL, sn = 0;
        void *r = rbuf, *s = NULL;
        /* In place, the root's block is already among the blocks: they are all packed. */
        if ((me && (!n || !gm_view_v(&x, rbuf, rcounts, displs, c->size, rt, inplace, 1, &r, n, n + c->size))) ||
            (!inplace && !gm_view(&x, sbuf, scount, st, 1, 0, &s, &sn))) {
            unseen(GM_IGATHERV, &x, n);
            return PMPI_Igatherv(sbuf, scount, st, rbuf, rcounts, displs, rt, root, comm, req);
        }
        if (inplace)
            s = r, sn = n[root];
        GOAL_Schedule sch = GOAL_Gatherv_init_on(c->group, s, sn, r, n, me ? n + c->size : NULL, root, GOAL_ALG_LINEAR);
        free(n);
        int rc = gm_serve_once(GM_IGATHERV, c, sch, &x, req);
        if (rc >= 0)
            return rc;
    }
    return PMPI_Igatherv(sbuf, scount, st, rbuf, rcounts, displs, rt, root, comm, req);
}

int MPI_Iscatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype st, void *rbuf, int rcount,
                  MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_ISCATTERV, comm);
    if (c) {
        struct gm_bufs x = { 0 };
        int me = c->rank == root, inplace = me && rbuf == MPI_IN_PLACE;
        size_t *n = me ? pair(c->size) : NULL, rn = 0;
        void *s = NULL, *r = NULL;
        if ((me && (!n || !gm_view_v(&x, sbuf, scounts, displs, c->size, st, 1, 0, &s, n, n + c->size))) ||
            (!inplace && !gm_view(&x, rbuf, rcount, rt, 0, 1, &r, &rn))) {
            unseen(GM_ISCATTERV, &x, n);
            return PMPI_Iscatterv(sbuf, scounts, displs, st, rbuf, rcount, rt, root, comm, req);
        }
        if (inplace) /* the root's block stays where it is */
            r = s, rn = n[root];
        GOAL_Schedule sch = GOAL_Scatterv_init_on(c->group, s, n, me ? n + c->size : NULL, r, rn, root, GOAL_ALG_LINEAR);
        free(n);
        int rc = gm_serve_once(GM_ISCATTERV, c, sch, &x, req);
        if (rc >= 0)
            return rc;
    }
    return PMPI_Iscatterv(sbuf, scounts, displs, st, rbuf, rcount, rt, root, comm, req);
}

/* Allgatherv's counts, as bytes, are the same on every rank (rank j's
 * send signature must match counts[j] everywhere), and MPI_IN_PLACE is
 * passed by all ranks or none; the displacements are each rank's own. So
 * the key holds the byte counts, and the schedule receives into blocks
 * back to back (a rank whose blocks lie otherwise gets them packed and
 * unpacked): it depends on nothing a rank alone knows. */
static GOAL_Schedule b_allgatherv(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r)
{
    (void)r;
    size_t *at = malloc(sizeof *at * (size_t)c->size), sum = 0;
    if (!at)
        return NULL;
    for (int i = 0; i < c->size; i++)
        at[i] = sum, sum += k->v[i];
    GOAL_Schedule s = GOAL_Allgatherv_init_on(c->group, BUF0, k->v[c->rank], k->inplace ? BUF0 : BUF1, k->v, at,
                                              GOAL_ALG_AUTO);
    free(at);
    return s;
}

int MPI_Iallgatherv(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, const int rcounts[],
                    const int displs[], MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_IALLGATHERV, comm);
    if (c) {
        struct gm_bufs x = { 0 };
        struct gm_key k = { .kind = K_ALLGATHERV, .inplace = sbuf == MPI_IN_PLACE };
        size_t *n = pair(c->size), sn = 0;
        void *r, *s = NULL;
        if (!n || !gm_view_v_packed(&x, rbuf, rcounts, displs, c->size, rt, k.inplace, 1, &r, n, n + c->size) ||
            (!k.inplace && !gm_view(&x, sbuf, scount, st, 1, 0, &s, &sn))) {
            unseen(GM_IALLGATHERV, &x, n);
            return PMPI_Iallgatherv(sbuf, scount, st, rbuf, rcounts, displs, rt, comm, req);
        }
        for (int i = 0; i < c->size; i++)
            k.n += n[i];
        gm_key_counts(&k, n, c->size);
        int rc = gm_serve(GM_IALLGATHERV, c, &k, NULL, b_allgatherv, k.inplace ? r : s, r, &x, req);
        free(n);
        if (rc >= 0)
            return rc;
    }
    return PMPI_Iallgatherv(sbuf, scount, st, rbuf, rcounts, displs, rt, comm, req);
}

int MPI_Ialltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype st, void *rbuf,
                   const int rcounts[], const int rdispls[], MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_IALLTOALLV, comm);
    if (c) {
        struct gm_bufs x = { 0 };
        int inplace = sbuf == MPI_IN_PLACE;
        size_t *rn = pair(c->size), *sn = inplace ? NULL : pair(c->size);
        void *r, *s = NULL;
        if (!rn || (!inplace && !sn) ||
            !gm_view_v(&x, rbuf, rcounts, rdispls, c->size, rt, inplace, 1, &r, rn, rn + c->size) ||
            (!inplace && !gm_view_v(&x, sbuf, scounts, sdispls, c->size, st, 1, 0, &s, sn, sn + c->size))) {
            free(sn);
            unseen(GM_IALLTOALLV, &x, rn);
            return PMPI_Ialltoallv(sbuf, scounts, sdispls, st, rbuf, rcounts, rdispls, rt, comm, req);
        }
        GOAL_Schedule sch = GOAL_Alltoallv_init_on(c->group, inplace ? r : s, sn, sn ? sn + c->size : NULL, r, rn,
                                                   rn + c->size, GOAL_ALG_AUTO);
        free(rn);
        free(sn);
        int rc = gm_serve_once(GM_IALLTOALLV, c, sch, &x, req);
        if (rc >= 0)
            return rc;
    }
    return PMPI_Ialltoallv(sbuf, scounts, sdispls, st, rbuf, rcounts, rdispls, rt, comm, req);
}

/* Reduce_scatter's counts are the same array on every rank (MPI requires
 * it), as is MPI_IN_PLACE (all ranks or none): the whole vector is in the
 * key, and the schedule is cached like reduce_scatter_block's. */
static GOAL_Schedule b_rs(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r)
{
    return GOAL_Reduce_scatter_init_on(c->group, BUF0, k->inplace ? BUF0 : BUF1, k->v, k->gdt, k->width, r->op,
                                       GOAL_ALG_AUTO);
}

int MPI_Ireduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dt, MPI_Op op,
                        MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_IREDUCE_SCATTER, comm);
    struct gm_red r;
    struct gm_key k = { .kind = K_RS, .inplace = sbuf == MPI_IN_PLACE };
    if (c && gm_reduction_key(GM_IREDUCE_SCATTER, dt, op, 0, &r, &k)) {
        size_t *n = pair(c->size);
        int ok = n != NULL;
        for (int i = 0; ok && i < c->size; i++) {
            ok = rcounts[i] >= 0;
            n[i] = ok ? (size_t)rcounts[i] * r.per : 0;
            k.n += n[i];
        }
        int rc = -1;
        if (ok) {
            gm_key_counts(&k, n, c->size);
            rc = gm_serve(GM_IREDUCE_SCATTER, c, &k, &r, b_rs, k.inplace ? rbuf : sbuf, rbuf, NULL, req);
        } else {
            gm_count(GM_IREDUCE_SCATTER, n ? GM_COUNT : GM_REFUSED);
        }
        free(n);
        if (rc >= 0)
            return rc;
    }
    return PMPI_Ireduce_scatter(sbuf, rbuf, rcounts, dt, op, comm, req);
}
