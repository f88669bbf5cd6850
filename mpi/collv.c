/*
 * collv.c - the non-blocking collectives with per-rank counts: gatherv,
 * scatterv, allgatherv, alltoallv, reduce_scatter.
 *
 * Reduce_scatter and allgatherv are cached like the others: MPI has every
 * rank pass their counts alike, so the whole count vector is in the key
 * (allgatherv's displacements, a rank's own, are kept out of the schedule:
 * see MPI_Iallgatherv). Gatherv, scatterv and alltoallv: each rank knows
 * only its own counts (the root all of them), so no key would be computed
 * alike on every rank, and goal pairs schedules by compile order. They are
 * kept in the communicator's vcache, keyed by this rank's own arguments,
 * and every call takes one compile number, hit (GOAL_Renumber of the cached
 * schedule) or miss (a compile), so that one rank's hit beside another's
 * miss still pairs the right schedules (coll.c's gm_serve_local,
 * docs/mpi.md). MPI's counts and displacements,
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

/* The v-collectives whose counts each rank knows only in part are keyed
 * by this rank's own arguments, in bytes (gm_serve_local): its own block,
 * and at the root (gatherv, scatterv) the counts and displacements of all
 * blocks; every block count and displacement of alltoallv. */
static GOAL_Schedule b_gatherv(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r)
{
    (void)r;
    if (c->rank != k->root)
        return GOAL_Gatherv_init_on(c->group, BUF0, k->n, NULL, NULL, NULL, k->root, GOAL_ALG_LINEAR);
    /* In place, the root's block is among the received ones. */
    return GOAL_Gatherv_init_on(c->group, k->inplace ? BUF1 : BUF0, k->n, BUF1, k->v, k->v + c->size, k->root,
                                GOAL_ALG_LINEAR);
}

int MPI_Igatherv(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, const int rcounts[], const int displs[],
                 MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_IGATHERV, comm);
    if (c) {
        struct gm_bufs x = { 0 };
        int me = c->rank == root, inplace = me && sbuf == MPI_IN_PLACE;
        size_t *n = me ? pair(c->size) : NULL, sn = 0;
        void *r = NULL, *s = NULL;
        /* In place, the root's block is already among the blocks: they are all packed. */
        if ((me && (!n || !gm_view_v(&x, rbuf, rcounts, displs, c->size, rt, inplace, 1, &r, n, n + c->size))) ||
            (!inplace && !gm_view(&x, sbuf, scount, st, 1, 0, &s, &sn))) {
            unseen(GM_IGATHERV, &x, n);
            return PMPI_Igatherv(sbuf, scount, st, rbuf, rcounts, displs, rt, root, comm, req);
        }
        struct gm_key k = { .kind = K_GATHERV, .root = root, .inplace = inplace, .n = inplace ? n[root] : sn };
        gm_key_counts(&k, n, me ? 2 * c->size : 0);
        int rc = gm_serve_local(GM_IGATHERV, c, &k, b_gatherv, s, r, &x, req);
        free(n);
        if (rc >= 0)
            return rc;
    }
    return PMPI_Igatherv(sbuf, scount, st, rbuf, rcounts, displs, rt, root, comm, req);
}

static GOAL_Schedule b_scatterv(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r)
{
    (void)r;
    if (c->rank != k->root)
        return GOAL_Scatterv_init_on(c->group, NULL, NULL, NULL, BUF1, k->n, k->root, GOAL_ALG_LINEAR);
    /* In place, the root's block stays where it is. */
    return GOAL_Scatterv_init_on(c->group, BUF0, k->v, k->v + c->size, k->inplace ? BUF0 : BUF1, k->n, k->root,
                                 GOAL_ALG_LINEAR);
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
        struct gm_key k = { .kind = K_SCATTERV, .root = root, .inplace = inplace, .n = inplace ? n[root] : rn };
        gm_key_counts(&k, n, me ? 2 * c->size : 0);
        int rc = gm_serve_local(GM_ISCATTERV, c, &k, b_scatterv, s, r, &x, req);
        free(n);
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

/* Alltoallv's key: its send counts and displacements, then its receive
 * ones (in place: the receive ones only), in bytes. */
static GOAL_Schedule b_alltoallv(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r)
{
    (void)r;
    int p = c->size;
    if (k->inplace)
        return GOAL_Alltoallv_init_on(c->group, BUF1, NULL, NULL, BUF1, k->v, k->v + p, GOAL_ALG_AUTO);
    return GOAL_Alltoallv_init_on(c->group, BUF0, k->v, k->v + p, BUF1, k->v + 2 * p, k->v + 3 * p, GOAL_ALG_AUTO);
}

int MPI_Ialltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype st, void *rbuf,
                   const int rcounts[], const int rdispls[], MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_IALLTOALLV, comm);
    if (c) {
        struct gm_bufs x = { 0 };
        int inplace = sbuf == MPI_IN_PLACE, p = c->size;
        /* Send counts and displacements, then receive ones (in place: these only). */
        size_t *v = malloc(sizeof(size_t) * 4 * (size_t)(p > 0 ? p : 1));
        size_t *sn = inplace ? NULL : v, *rn = inplace ? v : v + 2 * p;
        void *r, *s = NULL;
        if (!v || !gm_view_v(&x, rbuf, rcounts, rdispls, p, rt, inplace, 1, &r, rn, rn + p) ||
            (!inplace && !gm_view_v(&x, sbuf, scounts, sdispls, p, st, 1, 0, &s, sn, sn + p))) {
            unseen(GM_IALLTOALLV, &x, v);
            return PMPI_Ialltoallv(sbuf, scounts, sdispls, st, rbuf, rcounts, rdispls, rt, comm, req);
        }
        struct gm_key k = { .kind = K_ALLTOALLV, .inplace = inplace };
        gm_key_counts(&k, v, (inplace ? 2 : 4) * p);
        int rc = gm_serve_local(GM_IALLTOALLV, c, &k, b_alltoallv, s, r, &x, req);
        free(v);
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
