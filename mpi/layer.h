/*
 * layer.h - what the files of libgoal-mpi share (internal; see docs/mpi.md).
 *
 * libgoal-mpi sits between an unmodified MPI program and its MPI library
 * through the profiling interface: it defines MPI_Xxx, and calls the
 * library's PMPI_Xxx. The same sources are compiled twice, against Open
 * MPI's mpi.h and against MPICH's (the two ABIs Debian ships).
 *
 *   init.c   MPI_Init/_thread, MPI_Finalize: goal starts from PMPI_Allgather
 *            (GOAL_InitWith) and ends before the MPI library; the lock; the
 *            GOAL_DEBUG=1 counts.
 *   comm.c   communicators -> goal groups (an attribute per communicator,
 *            made when the communicator is made, freed with it).
 *   types.c  datatypes and operations -> goal's (user operations too).
 *   cache.c  compiled schedules per (communicator, collective, sizes, type,
 *            operation), with a key every rank computes alike.
 *   coll.c   the non-blocking collectives served, and their blocking forms.
 *   block.c  when the blocking forms run on goal.
 *   req.c    requests: generalized MPI requests, and the Wait/Test family
 *            that keeps goal and MPI moving.
 *   mem.c    MPI_Alloc_mem and MPI_Free_mem from goal's shared heap.
 *   ucxend.c MPICH only: UCX progressed through MPI_Finalize, whose close
 *            and PMI barrier deadlock across hosts otherwise.
 */
#ifndef GOAL_MPI_LAYER_H
#define GOAL_MPI_LAYER_H

#include <mpi.h>
#include <goal.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Everything declared here is the layer's own: hidden, so that calls and data
 * within the library go direct instead of through the PLT and GOT (and no
 * program or library can interpose them). What a program calls, MPI_Xxx and
 * the Fortran mpi_xxx_, is declared by mpi.h or defined outside this block. */
#pragma GCC visibility push(hidden)

struct gm_bufs;

/* ---- the functions served, and why a call went to MPI (init.c) ---- */

enum gm_fn {
    GM_IBARRIER, GM_IBCAST, GM_IALLREDUCE, GM_IREDUCE, GM_IALLGATHER, GM_IALLGATHERV,
    GM_IALLTOALL, GM_IALLTOALLV, GM_IGATHER, GM_IGATHERV, GM_ISCATTER, GM_ISCATTERV,
    GM_IREDUCE_SCATTER_BLOCK, GM_IREDUCE_SCATTER,
    /* The blocking forms, served where block.c's rule says goal is faster. */
    GM_BARRIER, GM_BCAST, GM_ALLREDUCE, GM_REDUCE, GM_ALLGATHER, GM_ALLTOALL, GM_GATHER, GM_SCATTER,
    GM_REDUCE_SCATTER_BLOCK, GM_NFN
};
#define GM_FIRST_BLOCKING GM_BARRIER

enum gm_why {
    GM_SERVED,          /* ran on goal */
    GM_OFF,             /* goal is not running (GOAL_MPI=0, or its start failed) */
    GM_COMM,            /* a communicator the layer did not see made, or an intercommunicator */
    GM_TYPE,            /* a datatype that is not contiguous (or not one of goal's for a reduction) */
    GM_OP,              /* an operation goal has no counterpart for (MAXLOC, LAND, ...) */
    GM_COUNT,           /* sizes past what goal takes (2 GiB elements, 4 GiB blocks) */
    GM_REFUSED,         /* goal refused the collective (its message with GOAL_DEBUG=1) */
    GM_NWHY
};

void gm_count(enum gm_fn fn, enum gm_why why);

/* ---- state (init.c) ---- */

struct gm_state {
    int on;               /* goal runs under this MPI job */
    int debug;            /* GOAL_DEBUG=1 */
    int finalized;        /* GOAL_Finalize was called */
    int world_rank;
    int keyval;           /* the communicator attribute holding a struct gm_comm */
    struct gm_comm *world; /* MPI_COMM_WORLD's, without asking MPI for the attribute
                              (set at start, cleared when MPI deletes the attribute) */
    int blocking;         /* GOAL_MPI_BLOCKING as agreed: 0 never, 1 within a host, 2 auto (default), 3 always */
    unsigned long compiled, reused; /* schedules compiled, cached ones rerun (GOAL_DEBUG's report) */
};
extern struct gm_state gm;

/* One recursive lock over the layer's tables (MPI_THREAD_MULTIPLE), never
 * held across a blocking call. Recursive because MPI calls the layer's
 * callbacks (a generalized request's free function) from inside PMPI calls
 * the layer makes with it held. */
void gm_lock(void);
void gm_unlock(void);

/* ---- communicators (comm.c) ---- */

struct gm_entry;

struct gm_comm {
    GOAL_Group group;        /* this communicator's goal group (its own matching context) */
    int rank, size;
    struct gm_entry *cache;  /* most recently used first */
    int ncache;
    /* The v-collectives whose arguments each rank knows only in part
     * (gatherv, scatterv, alltoallv): keyed by this rank's own, so hits
     * differ between ranks; kept apart, so that their evictions never
     * touch `cache`, where every rank must evict alike (cache.c). */
    struct gm_entry *vcache;
    int nvcache;
    int refs;                /* the attribute + executions in flight */
    unsigned blocking;       /* its blocking collectives run on goal under this table (GM_BLOCK_*, block.c) */
    struct gm_comm *next;    /* every live one, for MPI_Finalize */
    struct gm_comm *prev;
};

/* The goal side of `comm`, or NULL (not served: why in *why). */
struct gm_comm *gm_comm_of(MPI_Comm comm, enum gm_why *why);
void gm_comm_attach_world(void);
void gm_comm_put(struct gm_comm *c);
void gm_comm_end_all(void);
/* Calls f(c, arg) on every live communicator state, with the lock held. */
void gm_comm_each(void (*f)(struct gm_comm *, uint64_t), uint64_t arg);

/* ---- datatypes and operations (types.c) ---- */

/* At MPI_Init: the sizes of the predefined types, known without asking MPI
 * from then on (see gm_type_size). */
void gm_types_init(void);
/* MPI_Type_size itself (0: MPI_DATATYPE_NULL or MPI refused). */
int gm_type_size_mpi(MPI_Datatype dt, int *size);

/* Whether a predefined type's size is known from its handle: set once at
 * MPI_Init, before any call can ask. */
extern int gm_builtin_sizes_ok;
#ifdef MPICH_VERSION
/* MPICH's handle of a predefined datatype carries its size: kind "builtin"
 * in bits 30-31, bytes in bits 8-15 (its mpir_objects.h). Its
 * MPI_Type_size took 88 instructions a call, more than block.c's whole
 * check of a blocking call; gm_types_init checks the decoding against it. */
static inline int gm_builtin_size(MPI_Datatype dt, int *size)
{
    unsigned h = (unsigned)dt;
    if ((h >> 30) != 1u)
        return 0;
    *size = (int)((h >> 8) & 0xffu);
    return 1;
}
#else
/* Open MPI's handle of a predefined datatype is the address of its object,
 * which never moves. An open-addressed table of those addresses and their
 * sizes, filled from MPI_Type_size at MPI_Init and only read after, answers
 * for them in a few instructions instead of the call (its 29 were a fifth
 * of what the layer added to a blocking call it leaves to MPI). A derived
 * type is never found there: its object is not one of them. */
#define GM_SIZE_SLOTS 128 /* a power of two, over twice the types known */
struct gm_size_slot {
    MPI_Datatype t;
    int size;
    int contig; /* size == extent == true extent, lower bounds 0 */
};
extern struct gm_size_slot gm_sizes[GM_SIZE_SLOTS];

static inline unsigned gm_size_slot(MPI_Datatype dt)
{
    return (unsigned)(((uint64_t)(uintptr_t)dt * 0x9e3779b97f4a7c15ull) >> 57);
}

/* The table's entry for `dt`, or NULL. */
static inline const struct gm_size_slot *gm_size_find(MPI_Datatype dt)
{
    for (unsigned i = gm_size_slot(dt), n = 0; n < GM_SIZE_SLOTS; i = (i + 1) % GM_SIZE_SLOTS, n++) {
        if (gm_sizes[i].t == dt)
            return &gm_sizes[i];
        if (!gm_sizes[i].t)
            return NULL;
    }
    return NULL;
}

static inline int gm_builtin_size(MPI_Datatype dt, int *size)
{
    const struct gm_size_slot *e = gm_size_find(dt);
    if (e)
        *size = e->size;
    return e != NULL;
}
#endif

/* MPI_Type_size (0: MPI_DATATYPE_NULL or MPI refused), without asking MPI
 * for a predefined type: the layer asks on every blocking call. */
static inline int gm_type_size(MPI_Datatype dt, int *size)
{
    if (gm_builtin_sizes_ok && dt != MPI_DATATYPE_NULL && gm_builtin_size(dt, size))
        return 1;
    return gm_type_size_mpi(dt, size);
}
/* A datatype as goal moves it: `bytes` per element, contiguous. */
int gm_type_bytes(MPI_Datatype dt, size_t *bytes);

/* A reduction as goal computes it. */
struct gm_red {
    int gdt, width;      /* goal type and width in bits (GOAL_BYTES for a user operation) */
    size_t per;          /* goal elements per MPI element */
    GOAL_Op op;
    uint64_t opkey;      /* the same on every rank for the same operation */
};
enum gm_why gm_reduction(MPI_Datatype dt, MPI_Op op, struct gm_red *r);
void gm_ops_end(void);

/* ---- schedule cache (cache.c) ---- */

enum gm_kind { K_BARRIER = 1, K_BCAST, K_ALLREDUCE, K_REDUCE, K_ALLGATHER, K_ALLTOALL, K_GATHER, K_SCATTER, K_RSB,
               K_RS, K_ALLGATHERV, K_GATHERV, K_SCATTERV, K_ALLTOALLV };

struct gm_key {
    int kind, root, inplace, gdt, width;
    uint64_t n;          /* bytes or elements */
    uint64_t opkey;
    /* The v-forms whose per-rank counts MPI has every rank pass alike
     * (reduce_scatter's element counts, allgatherv's bytes): nv counts at v
     * (the caller's array; the cache keeps a copy), vhash to compare fast. */
    int nv;
    uint64_t vhash;
    const size_t *v;
};

/* A cached schedule's two buffers, given at each run (GOAL_RunWith). */
#define BUF0 GOAL_BUF_AT_RUN(0)
#define BUF1 GOAL_BUF_AT_RUN(1)

struct gm_entry {
    struct gm_key key;
    GOAL_Schedule s;
    size_t need[2];      /* bytes the schedule uses of run-time buffers 0 and 1 */
    int nbufs;
    int running;         /* executions in flight */
    int evicted;         /* out of the cache: freed when the last execution ends */
    struct gm_entry *next;
};

/* The schedule for `k` on `c`: cached, or compiled by `build` (NULL with
 * GOAL_LastError() if goal refused). Takes a reference (gm_entry_put). */
typedef GOAL_Schedule (*gm_build)(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r);
struct gm_entry *gm_cache_get(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r, gm_build build);
/* The same in `c->vcache`, for a key of this rank's own arguments: *hit
 * says whether it was there (the caller then runs a GOAL_Renumber copy,
 * which takes a compile number as the compile of a miss does). */
struct gm_entry *gm_vcache_get(struct gm_comm *c, const struct gm_key *k, gm_build build, int *hit);
void gm_entry_put(struct gm_entry *e);
/* k->vhash for the nv counts at k->v. */
void gm_key_counts(struct gm_key *k, const size_t *v, int nv);
void gm_cache_drop_op(uint64_t opkey);
void gm_cache_clear(struct gm_comm *c);

/* ---- collectives (coll.c, collv.c) ---- */

/* The communicator's goal side, or NULL (the call counted as going to MPI). */
struct gm_comm *gm_served(enum gm_fn fn, MPI_Comm comm);
/* `count` elements of `dt` as bytes, if goal can move them (else counted). */
int gm_bytes_of(enum gm_fn fn, MPI_Datatype dt, int count, size_t *out);
/* The reduction of `count` elements of `dt` by `op` into r and k (else counted). */
int gm_reduction_key(enum gm_fn fn, MPI_Datatype dt, MPI_Op op, int count, struct gm_red *r, struct gm_key *k);
/* Starts the cached schedule for `k` (compiled by `build` on a miss) with
 * run-time buffers b0 and b1; -1 (counted, `x` ended) if goal refused it. */
int gm_serve(enum gm_fn fn, struct gm_comm *c, const struct gm_key *k, const struct gm_red *r, gm_build build,
             const void *b0, const void *b1, struct gm_bufs *x, MPI_Request *req);
/* gm_serve for a v-collective keyed by this rank's own arguments (k): the
 * schedule compiled on a miss, a renumbered copy of it on a hit. */
int gm_serve_local(enum gm_fn fn, struct gm_comm *c, const struct gm_key *k, gm_build build, const void *b0,
                   const void *b1, struct gm_bufs *x, MPI_Request *req);

/* ---- buffers as goal moves them (pack.c) ---- */

#define GM_MAXTMP 4

struct gm_unpack {
    const void *from;    /* packed bytes of the layer's */
    void *to;            /* the program's buffer */
    int count, size;     /* elements, bytes per element */
    MPI_Datatype dt;     /* a duplicate of the program's type */
};

/* What a call holds until its collective ends: buffers of the layer's
 * (packed data, root copies), and what to unpack into the program's. */
struct gm_bufs {
    void *tmp[GM_MAXTMP];
    int ntmp;
    struct gm_unpack *un;
    int nun;
};

/* `count` x `dt` at `buf` as bytes for goal (`*out`, `*bytes`): the buffer
 * itself if `dt` is contiguous, else a packed buffer of `x`'s, packed now
 * if this rank sends from it (`send`), unpacked at the end if it receives
 * into it (`recv`). 0 if that cannot be done. */
int gm_view(struct gm_bufs *x, const void *buf, int count, MPI_Datatype dt, int send, int recv, void **out,
            size_t *bytes);
/* The same for n blocks (counts[i] elements at displs[i] extents from
 * `base`): bytes counts and displacements for goal in bcounts, bdispls. */
int gm_view_v(struct gm_bufs *x, const void *base, const int *counts, const int *displs, int n, MPI_Datatype dt,
              int send, int recv, void **out, size_t *bcounts, size_t *bdispls);
/* gm_view_v whose blocks always lie back to back in rank order (bdispls
 * the prefix sums of bcounts): the program's buffer where its blocks do,
 * else packed, so that a schedule depends on the counts alone. */
int gm_view_v_packed(struct gm_bufs *x, const void *base, const int *counts, const int *displs, int n,
                     MPI_Datatype dt, int send, int recv, void **out, size_t *bcounts, size_t *bdispls);
/* A buffer of `n` bytes that lives until the collective ends. */
void *gm_scratch(struct gm_bufs *x, size_t n);
/* The end: unpacks (if `unpack`), frees. */
void gm_bufs_end(struct gm_bufs *x, int unpack);

/* ---- blocking collectives (block.c) ---- */

/* Which table decides a communicator's blocking collectives (its
 * `blocking`): within a host, across hosts, or none (every size served). */
#define GM_BLOCK_LOCAL 1u
#define GM_BLOCK_HOSTS 2u
#define GM_BLOCK_ALL 4u

/* At MPI_Init, once goal runs: every rank's host and machine, and
 * GOAL_MPI_BLOCKING. */
void gm_block_init(void);
/* Whether the blocking collectives of a communicator of these world ranks
 * run on goal, and under which table (a GM_BLOCK_ kind; 0: never): the
 * same answer on every member. */
int gm_block_decide(const int *world_ranks, int n);
/* Whether blocking collective `fn` of `count` x `dt` per rank on `comm`
 * goes straight to MPI (goal not running, GOAL_MPI_BLOCKING=0, or a
 * collective and size where this MPI's own is as fast under the table of
 * MPI_COMM_WORLD's kind, or under both tables on another communicator):
 * checked first, so that what stays MPI's costs next to nothing. It leaves
 * in gm_block_to_mpi the kinds whose table sends the call to MPI, for
 * gm_served to check against the communicator's once it is known. Alike
 * on every rank, since MPI has them pass the same type signature. */
int gm_block_skip(enum gm_fn fn, int count, MPI_Datatype dt, MPI_Comm comm);
extern __thread unsigned gm_block_to_mpi __attribute__((tls_model("initial-exec")));
void gm_block_end(void);

/* ---- MPI_Alloc_mem from goal's heap (mem.c) ---- */

/* GOAL_DEBUG=1: how many requests the heap served. */
void gm_mem_report(void);

/* ---- MPICH's finalize on UCX (ucxend.c; no-ops in the Open MPI build) ---- */

/* Called by MPI_Finalize before PMPI_Finalize: MPICH's first endpoint
 * close from then on starts a thread that progresses its UCX workers until
 * it destroys them. */
void gm_ucx_end_begin(void);
/* After PMPI_Finalize: the thread stopped, if it still runs. */
void gm_ucx_end_done(void);

/* ---- requests (req.c) ---- */

/* Starts the execution of `s` (an entry's, or `own`, compiled for this call
 * and freed at its end) with `bufs`, and makes `*request` its MPI request;
 * with `request` NULL (a blocking call) waits for it instead, keeping MPI
 * moving meanwhile. `x` (may be NULL) is taken over and ended with the
 * collective. Returns an MPI error code. */
int gm_start(struct gm_comm *c, struct gm_entry *e, GOAL_Schedule own, void *const *bufs, int nbufs,
             struct gm_bufs *x, MPI_Request *request);
void gm_req_drain(void);

/* ---- persistent collectives (persist.c) ---- */

/* `reqs`, or a copy (in `buf` if n <= nbuf) in which each started
 * persistent collective of the layer is the request doing its work. */
MPI_Request *gm_pers_swap(int n, MPI_Request *reqs, MPI_Request *buf, int nbuf);
/* After MPI's call on the copy `v`: what MPI completed or freed, back. */
void gm_pers_back(int n, MPI_Request *reqs, MPI_Request *v, MPI_Request *buf);
/* MPI_Request_free of a persistent handle of the layer's: -1 if it is not one. */
int gm_pers_free(MPI_Request *req);

#pragma GCC visibility pop

#endif
