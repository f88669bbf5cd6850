/*
 * coll.c - the non-blocking collectives that run on goal, and the blocking
 * forms of the fixed-count ones where block.c's rule serves them (each
 * `xxx_on` serves both: a NULL request makes gm_start wait for the end).
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

/* The communicator's goal side, or NULL (counted as going to MPI). A
 * blocking call goes to MPI, uncounted, on a communicator whose blocking
 * collectives block.c's rule leaves to MPI, or whose table sends the call's
 * size there (gm_block_skip's gm_block_to_mpi): nothing falls back there. */
struct gm_comm *gm_served(enum gm_fn fn, MPI_Comm comm)
{
    enum gm_why why;
    struct gm_comm *c = gm_comm_of(comm, &why);
    if (fn >= GM_FIRST_BLOCKING && (!c || !c->blocking || (c->blocking & gm_block_to_mpi)))
        return NULL;
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

/* MPI_Ibarrier and MPI_Barrier on goal (`req` NULL: blocking); -1 if MPI runs it. */
static int barrier_on(enum gm_fn fn, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(fn, comm);
    struct gm_key k = { .kind = K_BARRIER };
    return c ? gm_serve(fn, c, &k, NULL, b_barrier, NULL, NULL, NULL, req) : -1;
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
    int rc = barrier_on(GM_IBARRIER, comm, req);
    return rc >= 0 ? rc : PMPI_Ibarrier(comm, req);
}

int MPI_Barrier(MPI_Comm comm)
{
    int rc = gm_block_skip(GM_BARRIER, 0, MPI_BYTE, comm) ? -1 : barrier_on(GM_BARRIER, comm, NULL);
    return rc >= 0 ? rc : PMPI_Barrier(comm);
}

/* A buffer goal cannot see (counted; what `x` holds is freed). */
static int unseen(enum gm_fn fn, struct gm_bufs *x)
{
    gm_count(fn, GM_TYPE);
    gm_bufs_end(x, 0);
    return -1;
}

/* MPI_Ibcast and MPI_Bcast on goal (`req` NULL: blocking); -1 if MPI runs it. */
static int bcast_on(enum gm_fn fn, void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(fn, comm);
    struct gm_bufs x = { 0 };
    void *b;
    size_t n;
    if (!c)
        return -1;
    int me = c->rank == root;
    if (!gm_view(&x, buf, count, dt, me, !me, &b, &n))
        return unseen(fn, &x);
    struct gm_key k = { .kind = K_BCAST, .root = root, .n = n };
    return gm_serve(fn, c, &k, NULL, b_bcast, b, NULL, &x, req);
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req)
{
    int rc = bcast_on(GM_IBCAST, buf, count, dt, root, comm, req);
    return rc >= 0 ? rc : PMPI_Ibcast(buf, count, dt, root, comm, req);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    int rc = gm_block_skip(GM_BCAST, count, dt, comm) ? -1 : bcast_on(GM_BCAST, buf, count, dt, root, comm, NULL);
    return rc >= 0 ? rc : PMPI_Bcast(buf, count, dt, root, comm);
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

/* MPI_Iallreduce and MPI_Allreduce on goal (`req` NULL: blocking); -1 if MPI runs it. */
static int allreduce_on(enum gm_fn fn, const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                        MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(fn, comm);
    struct gm_red r;
    struct gm_key k = { .kind = K_ALLREDUCE, .inplace = sbuf == MPI_IN_PLACE };
    if (!c || !gm_reduction_key(fn, dt, op, count, &r, &k))
        return -1;
    return gm_serve(fn, c, &k, &r, b_allreduce, k.inplace ? rbuf : sbuf, rbuf, NULL, req);
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                   MPI_Request *req)
{
    int rc = allreduce_on(GM_IALLREDUCE, sbuf, rbuf, count, dt, op, comm, req);
    return rc >= 0 ? rc : PMPI_Iallreduce(sbuf, rbuf, count, dt, op, comm, req);
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int rc = gm_block_skip(GM_ALLREDUCE, count, dt, comm) ? -1
                                                    : allreduce_on(GM_ALLREDUCE, sbuf, rbuf, count, dt, op, comm, NULL);
    return rc >= 0 ? rc : PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm);
}

/* MPI_Ireduce and MPI_Reduce on goal (`req` NULL: blocking); -1 if MPI runs it. */
static int reduce_on(enum gm_fn fn, const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
                     MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(fn, comm);
    struct gm_red r;
    struct gm_key k = { .kind = K_REDUCE, .root = root };
    int rc;
    if (c && gm_reduction_key(fn, dt, op, count, &r, &k)) {
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
        if (s && (rc = gm_serve(fn, c, &k, &r, b_reduce, s, rbuf, &x, req)) >= 0)
            return rc;
        gm_bufs_end(&x, 0);
    }
    return -1;
}

int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                MPI_Request *req)
{
    int rc = reduce_on(GM_IREDUCE, sbuf, rbuf, count, dt, op, root, comm, req);
    return rc >= 0 ? rc : PMPI_Ireduce(sbuf, rbuf, count, dt, op, root, comm, req);
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    int rc = gm_block_skip(GM_REDUCE, count, dt, comm) ? -1
                                                 : reduce_on(GM_REDUCE, sbuf, rbuf, count, dt, op, root, comm, NULL);
    return rc >= 0 ? rc : PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm);
}

/* MPI_Ireduce_scatter_block and MPI_Reduce_scatter_block on goal (`req` NULL:
 * blocking); -1 if MPI runs it. */
static int reduce_scatter_block_on(enum gm_fn fn, const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
                                   MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(fn, comm);
    struct gm_red r;
    struct gm_key k = { .kind = K_RSB, .inplace = sbuf == MPI_IN_PLACE };
    if (!c || !gm_reduction_key(fn, dt, op, count, &r, &k))
        return -1;
    return gm_serve(fn, c, &k, &r, b_rsb, k.inplace ? rbuf : sbuf, rbuf, NULL, req);
}

int MPI_Ireduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                              MPI_Request *req)
{
    int rc = reduce_scatter_block_on(GM_IREDUCE_SCATTER_BLOCK, sbuf, rbuf, count, dt, op, comm, req);
    return rc >= 0 ? rc : PMPI_Ireduce_scatter_block(sbuf, rbuf, count, dt, op, comm, req);
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int rc = gm_block_skip(GM_REDUCE_SCATTER_BLOCK, count, dt, comm)
                 ? -1
                 : reduce_scatter_block_on(GM_REDUCE_SCATTER_BLOCK, sbuf, rbuf, count, dt, op, comm, NULL);
    return rc >= 0 ? rc : PMPI_Reduce_scatter_block(sbuf, rbuf, count, dt, op, comm);
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

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
                  MPI_Comm comm)
{
    int rc = gm_block_skip(GM_ALLGATHER, rcount, rt, comm)
                 ? -1
                 : all_blocks(GM_ALLGATHER, K_ALLGATHER, b_allgather, sbuf, scount, st, rbuf, rcount, rt, comm, NULL);
    return rc >= 0 ? rc : PMPI_Allgather(sbuf, scount, st, rbuf, rcount, rt, comm);
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
                 MPI_Comm comm)
{
    int rc = gm_block_skip(GM_ALLTOALL, rcount, rt, comm)
                 ? -1
                 : all_blocks(GM_ALLTOALL, K_ALLTOALL, b_alltoall, sbuf, scount, st, rbuf, rcount, rt, comm, NULL);
    return rc >= 0 ? rc : PMPI_Alltoall(sbuf, scount, st, rbuf, rcount, rt, comm);
}

/* MPI_Igather and MPI_Gather on goal (`req` NULL: blocking); -1 if MPI runs it. */
static int gather_on(enum gm_fn fn, const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
                     MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(fn, comm);
    if (c) {
        struct gm_bufs x = { 0 };
        int me = c->rank == root, rc = 0;
        size_t n, rn;
        void *s = NULL, *r = rbuf;
        if (me) {
            MPI_Aint lb, ext = 0;
            PMPI_Type_get_extent(rt, &lb, &ext);
            if (rcount < 0 || !gm_view(&x, rbuf, rcount * c->size, rt, 0, 1, &r, &rn))
                rc = unseen(fn, &x);
            else if (sbuf == MPI_IN_PLACE) { /* its own block, copied or packed: goal writes it back */
                char *own = (char *)rbuf + (MPI_Aint)root * rcount * ext;
                size_t esz;
                if (gm_type_bytes(rt, &esz) && (s = gm_scratch(&x, esz * (size_t)rcount)) != NULL)
                    memcpy(s, own, esz * (size_t)rcount);
                else if (!gm_view(&x, own, rcount, rt, 1, 0, &s, &n))
                    s = NULL;
                if (!s)
                    rc = unseen(fn, &x);
            } else if (!gm_view(&x, sbuf, scount, st, 1, 0, &s, &n))
                rc = unseen(fn, &x);
            if (rc == 0)
                n = rn / (size_t)c->size;
        } else if (!gm_view(&x, sbuf, scount, st, 1, 0, &s, &n)) {
            rc = unseen(fn, &x);
        }
        struct gm_key k = { .kind = K_GATHER, .root = root, .n = n };
        if (rc == 0 && (rc = gm_serve(fn, c, &k, NULL, b_gather, s, r, &x, req)) >= 0)
            return rc;
    }
    return -1;
}

int MPI_Igather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int root,
                MPI_Comm comm, MPI_Request *req)
{
    int rc = gather_on(GM_IGATHER, sbuf, scount, st, rbuf, rcount, rt, root, comm, req);
    return rc >= 0 ? rc : PMPI_Igather(sbuf, scount, st, rbuf, rcount, rt, root, comm, req);
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int root,
               MPI_Comm comm)
{
    /* Per rank: a sender's block, or the root's own (its send side may be
     * MPI_IN_PLACE); MPI has them alike. */
    int skip = sbuf == MPI_IN_PLACE ? gm_block_skip(GM_GATHER, rcount, rt, comm) : gm_block_skip(GM_GATHER, scount, st, comm);
    int rc = skip ? -1 : gather_on(GM_GATHER, sbuf, scount, st, rbuf, rcount, rt, root, comm, NULL);
    return rc >= 0 ? rc : PMPI_Gather(sbuf, scount, st, rbuf, rcount, rt, root, comm);
}

/* MPI_Iscatter and MPI_Scatter on goal (`req` NULL: blocking); -1 if MPI runs it. */
static int scatter_on(enum gm_fn fn, const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
                      MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request *req)
{
    struct gm_comm *c = gm_served(fn, comm);
    if (c) {
        struct gm_bufs x = { 0 };
        int me = c->rank == root, rc = 0;
        size_t n = 0, sn;
        void *s = NULL, *r = NULL;
        if (me && (scount < 0 || !gm_view(&x, sbuf, scount * c->size, st, 1, 0, &s, &sn)))
            rc = unseen(fn, &x);
        else if (me && rbuf == MPI_IN_PLACE) /* its own block lands in a buffer of the layer's */
            n = sn / (size_t)c->size, r = gm_scratch(&x, n), rc = r ? 0 : unseen(fn, &x);
        else if (!gm_view(&x, rbuf, rcount, rt, 0, 1, &r, &n))
            rc = unseen(fn, &x);
        struct gm_key k = { .kind = K_SCATTER, .root = root, .n = n };
        if (rc == 0 && (rc = gm_serve(fn, c, &k, NULL, b_scatter, s, r, &x, req)) >= 0)
            return rc;
    }
    return -1;
}

int MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int root,
                 MPI_Comm comm, MPI_Request *req)
{
    int rc = scatter_on(GM_ISCATTER, sbuf, scount, st, rbuf, rcount, rt, root, comm, req);
    return rc >= 0 ? rc : PMPI_Iscatter(sbuf, scount, st, rbuf, rcount, rt, root, comm, req);
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int root,
                MPI_Comm comm)
{
    /* Per rank: a receiver's block, or the root's (its receive side may be
     * MPI_IN_PLACE); MPI has them alike. */
    int skip = rbuf == MPI_IN_PLACE ? gm_block_skip(GM_SCATTER, scount, st, comm) : gm_block_skip(GM_SCATTER, rcount, rt, comm);
    int rc = skip ? -1 : scatter_on(GM_SCATTER, sbuf, scount, st, rbuf, rcount, rt, root, comm, NULL);
    return rc >= 0 ? rc : PMPI_Scatter(sbuf, scount, st, rbuf, rcount, rt, root, comm);
}
