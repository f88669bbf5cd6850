/*
 * coll.c - the non-blocking collectives that run on goal.
 *
 * Each call checks what it can serve (a communicator with a goal group,
 * contiguous datatypes, a reduction goal computes), takes the compiled
 * schedule from the communicator's cache (compiling on a miss, with the
 * call's buffers left open: GOAL_BUF_AT_RUN) and starts it with this
 * call's buffers, returning a generalized MPI request (req.c). Anything it
 * cannot serve goes to PMPI_ untouched, counted with its reason.
 *
 * MPI_IN_PLACE: where MPI has every rank pass it or none (allreduce,
 * allgather, alltoall, reduce_scatter_block) it is part of the cache key and
 * the schedule is goal's in-place form. Where only the root passes it
 * (reduce, gather, scatter) the key cannot hold it (the other ranks do not
 * know, and a key that differs on one rank would make that rank compile
 * alone), so the root gives the schedule a copy: the input it reduces from
 * or gathers from its own block, a block to scatter its own part into.
 *
 * The v-forms (per-rank counts) are in collv.c: reduce_scatter and
 * allgatherv cached with their whole count vector in the key (every rank
 * passes it alike), gatherv, scatterv and alltoallv cached by each rank's
 * own arguments, every call renumbered (gm_serve_local below). Gatherv and scatterv use goal's linear algorithm, the one that
 * needs the counts at the root only, as MPI gives them.
 */
#include "layer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* A cached collective: the entry for `k`, started with b0 and b1. Returns
 * -1 (nothing started, `x` ended) if goal refused to compile it (or the
 * cache had no memory for the key). */
int gm_serve(enum gm_fn fn, struct gm_comm *c, const struct gm_key *k, const struct gm_red *r, gm_build build,
             const void *b0, const void *b1, struct gm_bufs *x, MPI_Request *req)
{
    struct gm_entry *e = gm_cache_get(c, k, r, build);
    if (!e) {
        if (gm.debug)
            fprintf(stderr, "goal-mpi (rank %d): goal refused a collective, MPI runs it: %s\n", gm.world_rank,
                    GOAL_LastError());
        gm_count(fn, GM_REFUSED);
        if (x)
            gm_bufs_end(x, 0);
        return -1;
    }
    void *bufs[2] = { (void *)b0, (void *)b1 };
    gm_count(fn, GM_SERVED);
    return gm_start(c, e, NULL, bufs, 2, x, req);
}

/* A v-collective from the communicator's vcache: on a miss the schedule
 * compiled for `k` runs (and stays for later calls), on a hit a copy of it
 * numbered as this call's (GOAL_Renumber), freed when it ends. Either way
 * this rank takes one compile number for the call, as every rank does for
 * its own call, hit or miss: the schedules pair call by call, although the
 * ranks' keys, made of their own arguments, hit and miss differently. */
int gm_serve_local(enum gm_fn fn, struct gm_comm *c, const struct gm_key *k, gm_build build, const void *b0,
                   const void *b1, struct gm_bufs *x, MPI_Request *req)
{
    int hit = 0;
    struct gm_entry *e = gm_vcache_get(c, k, build, &hit);
    GOAL_Schedule own = NULL;
    if (e && hit) {
        own = GOAL_Renumber(e->s);
        gm_entry_put(e);
        e = NULL;
    }
    if (!e && !own) {
        if (gm.debug)
            fprintf(stderr, "goal-mpi (rank %d): goal refused a collective, MPI runs it: %s\n", gm.world_rank,
                    GOAL_LastError());
        gm_count(fn, GM_REFUSED);
        if (x)
            gm_bufs_end(x, 0);
        return -1;
    }
    void *bufs[2] = { (void *)b0, (void *)b1 };
    gm_count(fn, GM_SERVED);
    return gm_start(c, e, own, bufs, 2, x, req);
}

/* The communicator's goal side, or NULL (counted as going to MPI). */
struct gm_comm *gm_served(enum gm_fn fn, MPI_Comm comm)
{
    enum gm_why why;
    struct gm_comm *c = gm_comm_of(comm, &why);
    if (!c)
        gm_count(fn, why);
    return c;
}

/* `count` elements of `dt` as bytes, if goal can move them. */
int gm_bytes_of(enum gm_fn fn, MPI_Datatype dt, int count, size_t *out)
{
    size_t b;
    if (count < 0 || !gm_type_bytes(dt, &b)) {
        gm_count(fn, GM_TYPE);
        return 0;
    }
    *out = b * (size_t)count;
    return 1;
}

/* ---- builders: one schedule for a key, buffers left open ---- */

static GOAL_Schedule b_barrier(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r)
{
    (void)k, (void)r;
    return GOAL_Barrier_init_on(c->group, GOAL_ALG_AUTO);
}

static GOAL_Schedule b_bcast(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r)
{
    (void)r;
    return GOAL_Bcast_init_on(c->group, BUF0, k->n, k->root, GOAL_ALG_AUTO);
}

static GOAL_Schedule b_allreduce(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r)
{
    return GOAL_Allreduce_init_c_on(c->group, BUF0, k->inplace ? BUF0 : BUF1, k->n, k->gdt, k->width, r->op,
                                    GOAL_ALG_AUTO);
}

static GOAL_Schedule b_reduce(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r)
{
    return GOAL_Reduce_init_c_on(c->group, BUF0, BUF1, k->n, k->gdt, k->width, r->op, k->root, GOAL_ALG_AUTO);
}

static GOAL_Schedule b_rsb(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r)
{
    return GOAL_Reduce_scatter_block_init_c_on(c->group, BUF0, k->inplace ? BUF0 : BUF1, k->n, k->gdt, k->width,
                                               r->op, GOAL_ALG_AUTO);
}

static GOAL_Schedule b_allgather(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r)
{
    (void)r;
    return GOAL_Allgather_init_on(c->group, BUF0, k->n, k->inplace ? BUF0 : BUF1, GOAL_ALG_AUTO);
}

static GOAL_Schedule b_alltoall(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r)
{
    (void)r;
    return GOAL_Alltoall_init_on(c->group, BUF0, k->n, k->inplace ? BUF0 : BUF1, GOAL_ALG_AUTO);
}

static GOAL_Schedule b_gather(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r)
{
    (void)r;
    return GOAL_Gather_init_on(c->group, BUF0, k->n, BUF1, k->root, GOAL_ALG_AUTO);
}

static GOAL_Schedule b_scatter(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r)
{
    (void)r;
    return GOAL_Scatter_init_on(c->group, BUF0, k->n, BUF1, k->root, GOAL_ALG_AUTO);
}

/* ---- the calls ---- */

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_IBARRIER, comm);
    struct gm_key k = { .kind = K_BARRIER };
    int rc;
    if (c && (rc = gm_serve(GM_IBARRIER, c, &k, NULL, b_barrier, NULL, NULL, NULL, req)) >= 0)
        return rc;
    return PMPI_Ibarrier(comm, req);
}

/* A buffer goal cannot see (counted; what `x` holds is freed). */
static int unseen(enum gm_fn fn, struct gm_bufs *x)
{
    gm_count(fn, GM_TYPE);
    gm_bufs_end(x, 0);
    return -1;
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_IBCAST, comm);
    struct gm_bufs x = { 0 };
    void *b;
    size_t n;
    if (c) {
        int me = c->rank == root;
        int rc = gm_view(&x, buf, count, dt, me, !me, &b, &n) ? 0 : unseen(GM_IBCAST, &x);
        struct gm_key k = { .kind = K_BCAST, .root = root, .n = n };
        if (rc == 0 && (rc = gm_serve(GM_IBCAST, c, &k, NULL, b_bcast, b, NULL, &x, req)) >= 0)
            return rc;
    }
    return PMPI_Ibcast(buf, count, dt, root, comm, req);
}

/* The reduction of `count` elements of `dt` by `op`, if goal computes it. */
int gm_reduction_key(enum gm_fn fn, MPI_Datatype dt, MPI_Op op, int count, struct gm_red *r, struct gm_key *k)
{
    enum gm_why why = count < 0 ? GM_COUNT : gm_reduction(dt, op, r);
    if (why != GM_SERVED) {
        gm_count(fn, why);
        return 0;
    }
    k->gdt = r->gdt, k->width = r->width, k->opkey = r->opkey;
    k->n = (uint64_t)count * r->per;
    return 1;
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                   MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_IALLREDUCE, comm);
    struct gm_red r;
    struct gm_key k = { .kind = K_ALLREDUCE, .inplace = sbuf == MPI_IN_PLACE };
    int rc;
    if (c && gm_reduction_key(GM_IALLREDUCE, dt, op, count, &r, &k) &&
        (rc = gm_serve(GM_IALLREDUCE, c, &k, &r, b_allreduce, k.inplace ? rbuf : sbuf, rbuf, NULL, req)) >= 0)
        return rc;
    return PMPI_Iallreduce(sbuf, rbuf, count, dt, op, comm, req);
}

int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_IREDUCE, comm);
    struct gm_red r;
    struct gm_key k = { .kind = K_REDUCE, .root = root };
    int rc;
    if (c && gm_reduction_key(GM_IREDUCE, dt, op, count, &r, &k)) {
        struct gm_bufs x = { 0 };
        const void *s = sbuf;
        if (sbuf == MPI_IN_PLACE) { /* the root reduces from a copy of its input */
            size_t esz = 0;
            gm_type_bytes(dt, &esz);
            void *t = gm_scratch(&x, esz * (size_t)count);
            if (t)
                memcpy(t, rbuf, esz * (size_t)count);
            s = t;
        }
        if (s && (rc = gm_serve(GM_IREDUCE, c, &k, &r, b_reduce, s, rbuf, &x, req)) >= 0)
            return rc;
        gm_bufs_end(&x, 0);
    }
    return PMPI_Ireduce(sbuf, rbuf, count, dt, op, root, comm, req);
}

int MPI_Ireduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                              MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_IREDUCE_SCATTER_BLOCK, comm);
    struct gm_red r;
    struct gm_key k = { .kind = K_RSB, .inplace = sbuf == MPI_IN_PLACE };
    int rc;
    if (c && gm_reduction_key(GM_IREDUCE_SCATTER_BLOCK, dt, op, count, &r, &k) &&
        (rc = gm_serve(GM_IREDUCE_SCATTER_BLOCK, c, &k, &r, b_rsb, k.inplace ? rbuf : sbuf, rbuf, NULL, req)) >= 0)
        return rc;
    return PMPI_Ireduce_scatter_block(sbuf, rbuf, count, dt, op, comm, req);
}

/* allgather and alltoall: blocks of `rcount` `rt`, in place or not. In
 * place with a type goal cannot see, all of rbuf is packed and unpacked. */
static int all_blocks(enum gm_fn fn, int kind, gm_build build, const void *sbuf, int scount, MPI_Datatype st,
                      void *rbuf, int rcount, MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(fn, comm);
    if (!c)
        return -1;
    struct gm_bufs x = { 0 };
    int inplace = sbuf == MPI_IN_PLACE;
    size_t n, sn;
    void *s = NULL, *r;
    if (rcount < 0 || (size_t)rcount * (size_t)c->size > INT32_MAX ||
        !gm_view(&x, rbuf, rcount * c->size, rt, inplace, 1, &r, &n) ||
        (!inplace && !gm_view(&x, sbuf, kind == K_ALLTOALL ? scount * c->size : scount, st, 1, 0, &s, &sn)))
        return unseen(fn, &x);
    struct gm_key k = { .kind = kind, .inplace = inplace, .n = n / (size_t)c->size };
    return gm_serve(fn, c, &k, NULL, build, inplace ? r : s, r, &x, req);
}

int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
                   MPI_Comm comm, MPI_Request *req)
{
    int rc = all_blocks(GM_IALLGATHER, K_ALLGATHER, b_allgather, sbuf, scount, st, rbuf, rcount, rt, comm, req);
    return rc >= 0 ? rc : PMPI_Iallgather(sbuf, scount, st, rbuf, rcount, rt, comm, req);
}

int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
                  MPI_Comm comm, MPI_Request *req)
{
    int rc = all_blocks(GM_IALLTOALL, K_ALLTOALL, b_alltoall, sbuf, scount, st, rbuf, rcount, rt, comm, req);
    return rc >= 0 ? rc : PMPI_Ialltoall(sbuf, scount, st, rbuf, rcount, rt, comm, req);
}

int MPI_Igather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int root,
                MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_IGATHER, comm);
    if (c) {
        struct gm_bufs x = { 0 };
        int me = c->rank == root, rc = 0;
        size_t n, rn;
        void *s = NULL, *r = rbuf;
        if (me) {
            MPI_Aint lb, ext = 0;
            PMPI_Type_get_extent(rt, &lb, &ext);
            if (rcount < 0 || !gm_view(&x, rbuf, rcount * c->size, rt, 0, 1, &r, &rn))
                rc = unseen(GM_IGATHER, &x);
            else if (sbuf == MPI_IN_PLACE) { /* its own block, copied or packed: goal writes it back */
                char *own = (char *)rbuf + (MPI_Aint)root * rcount * ext;
                size_t esz;
                if (gm_type_bytes(rt, &esz) && (s = gm_scratch(&x, esz * (size_t)rcount)) != NULL)
                    memcpy(s, own, esz * (size_t)rcount);
                else if (!gm_view(&x, own, rcount, rt, 1, 0, &s, &n))
                    s = NULL;
                if (!s)
                    rc = unseen(GM_IGATHER, &x);
            } else if (!gm_view(&x, sbuf, scount, st, 1, 0, &s, &n))
                rc = unseen(GM_IGATHER, &x);
            if (rc == 0)
                n = rn / (size_t)c->size;
        } else if (!gm_view(&x, sbuf, scount, st, 1, 0, &s, &n)) {
            rc = unseen(GM_IGATHER, &x);
        }
        struct gm_key k = { .kind = K_GATHER, .root = root, .n = n };
        if (rc == 0 && (rc = gm_serve(GM_IGATHER, c, &k, NULL, b_gather, s, r, &x, req)) >= 0)
            return rc;
    }
    return PMPI_Igather(sbuf, scount, st, rbuf, rcount, rt, root, comm, req);
}

int MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int root,
                 MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(GM_ISCATTER, comm);
    if (c) {
        struct gm_bufs x = { 0 };
        int me = c->rank == root, rc = 0;
        size_t n = 0, sn;
        void *s = NULL, *r = NULL;
        if (me && (scount < 0 || !gm_view(&x, sbuf, scount * c->size, st, 1, 0, &s, &sn)))
            rc = unseen(GM_ISCATTER, &x);
        else if (me && rbuf == MPI_IN_PLACE) /* its own block lands in a buffer of the layer's */
            n = sn / (size_t)c->size, r = gm_scratch(&x, n), rc = r ? 0 : unseen(GM_ISCATTER, &x);
        else if (!gm_view(&x, rbuf, rcount, rt, 0, 1, &r, &n))
            rc = unseen(GM_ISCATTER, &x);
        struct gm_key k = { .kind = K_SCATTER, .root = root, .n = n };
        if (rc == 0 && (rc = gm_serve(GM_ISCATTER, c, &k, NULL, b_scatter, s, r, &x, req)) >= 0)
            return rc;
    }
    return PMPI_Iscatter(sbuf, scount, st, rbuf, rcount, rt, root, comm, req);
}
