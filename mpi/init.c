/*
 * init.c - goal's start and end inside an MPI job, the layer's lock, and
 * the GOAL_DEBUG=1 report of what ran where.
 *
 * goal starts in MPI_Init/MPI_Init_thread, after the MPI library, from the
 * MPI job itself: GOAL_InitWith takes MPI_COMM_WORLD's rank and size and
 * PMPI_Allgather as its exchange, so goal needs no launcher protocol of its
 * own and never touches the PMI or PMIx session, which is the MPI
 * library's. Whether goal runs is then agreed by every rank (an allreduce
 * of "started"), so that either every rank serves a collective on goal or
 * none does. It ends in MPI_Finalize, before the MPI library, once the
 * executions of the program's requests have finished.
 *
 * GOAL_MPI=0 turns the layer off (every call goes to MPI untouched).
 */
#define _GNU_SOURCE /* dladdr */
#include "layer.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef OPEN_MPI
#define BUILT_FOR "Open MPI", "libmpi.so", "libgoal-mpi-mpich.so"
#else
#define BUILT_FOR "MPICH", "libmpich", "libgoal-mpi-openmpi.so"
#endif

struct gm_state gm = { .keyval = MPI_KEYVAL_INVALID };

/* Recursive (see layer.h): a plain mutex taken by a thread's outermost
 * gm_lock, with the thread's depth beside it, ready before any call. A
 * recursive pthread mutex cost some 65 instructions per lock and unlock,
 * nine times in a 2-rank Ibarrier and its Wait (about 600 of its 6 400).
 * The depth is in the initial TLS block: the layer is loaded at start, by
 * LD_PRELOAD or as a linked library, never by dlopen. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int depth __attribute__((tls_model("initial-exec")));

void gm_lock(void)
{
    if (depth++ == 0)
        pthread_mutex_lock(&lock);
}

void gm_unlock(void)
{
    if (--depth == 0)
        pthread_mutex_unlock(&lock);
}

/* ---- counts ---- */

static const char *fn_names[GM_NFN] = {
    "MPI_Ibarrier", "MPI_Ibcast", "MPI_Iallreduce", "MPI_Ireduce", "MPI_Iallgather", "MPI_Iallgatherv",
    "MPI_Ialltoall", "MPI_Ialltoallv", "MPI_Igather", "MPI_Igatherv", "MPI_Iscatter", "MPI_Iscatterv",
    "MPI_Ireduce_scatter_block", "MPI_Ireduce_scatter",
    "MPI_Barrier", "MPI_Bcast", "MPI_Allreduce", "MPI_Reduce", "MPI_Allgather", "MPI_Alltoall", "MPI_Gather",
    "MPI_Scatter", "MPI_Reduce_scatter_block",
};

static const char *why_names[GM_NWHY] = {
    "on goal",
    "goal not running (GOAL_MPI=0 or its start failed)",
    "communicator not served (an intercommunicator, or made by a call the layer does not follow)",
    "datatype not served (a reduction on a type goal has no element for, or a buffer that could not be packed)",
    "operation not served (MAXLOC, MINLOC, logical, REPLACE, or not defined on the type)",
    "sizes past goal's limits",
    "goal refused it",
};

static unsigned long counts[GM_NFN][GM_NWHY];

void gm_count(enum gm_fn fn, enum gm_why why)
{
    /* On every served call: an atomic add, not the lock. */
    __atomic_fetch_add(&counts[fn][why], 1, __ATOMIC_RELAXED);
}

static void report(void)
{
    if (gm.compiled)
        fprintf(stderr, "goal-mpi (rank %d): schedules: %lu compiled, %lu reused from the cache\n", gm.world_rank,
                gm.compiled, gm.reused);
    gm_mem_report();
    for (int f = 0; f < GM_NFN; f++) {
        unsigned long to_mpi = 0;
        for (int w = 1; w < GM_NWHY; w++)
            to_mpi += counts[f][w];
        if (counts[f][GM_SERVED] == 0 && to_mpi == 0)
            continue;
        fprintf(stderr, "goal-mpi (rank %d): %s: %lu on goal, %lu to MPI\n", gm.world_rank, fn_names[f],
                counts[f][GM_SERVED], to_mpi);
        for (int w = 1; w < GM_NWHY; w++)
            if (counts[f][w])
                fprintf(stderr, "goal-mpi (rank %d):   %lu: %s\n", gm.world_rank, counts[f][w], why_names[w]);
    }
}

/* ---- start ---- */

/* GOAL_InitWith's exchange: every rank's `len` bytes, in rank order. */
static int allgather(const void *mine, size_t len, void *all, void *ctx)
{
    (void)ctx;
    if (len > (size_t)INT32_MAX)
        return -1;
    return PMPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

static void start_goal(void)
{
    const char *e = getenv("GOAL_DEBUG");
    gm.debug = e && strcmp(e, "0") != 0 && *e;
    int size;
    PMPI_Comm_rank(MPI_COMM_WORLD, &gm.world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *off = getenv("GOAL_MPI");
    int want = !(off && strcmp(off, "0") == 0);
    int started = 0;
    if (want) {
        GOAL_Bootstrap b = { gm.world_rank, size, allgather, NULL };
        started = GOAL_InitWith(&b) == GOAL_SUCCESS;
        if (!started)
            fprintf(stderr, "goal-mpi (rank %d): goal did not start, every call goes to MPI: %s\n", gm.world_rank,
                    GOAL_LastError());
    }
    /* Every rank serves, or none (a rank alone on goal would wait forever). */
    int all = 0;
    PMPI_Allreduce(&started, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (started)
            GOAL_Finalize();
        if (want && started && gm.world_rank == 0)
            fprintf(stderr, "goal-mpi: goal did not start on every rank: every call goes to MPI\n");
        return;
    }
    gm.on = 1;
    gm_types_init();
    gm_block_init();
    gm_comm_attach_world();
    const char *mode = getenv("GOAL_PROGRESS");
    if (mode && strcmp(mode, "manual") == 0 && gm.world_rank == 0)
        fprintf(stderr, "goal-mpi: warning: GOAL_PROGRESS=manual: collectives on goal move only inside the "
                        "layer's Wait and Test calls, so a rank blocked in another MPI call while its peers wait "
                        "for it hangs (docs/mpi.md)\n");
    if (gm.debug && gm.world_rank == 0)
        fprintf(stderr, "goal-mpi: goal runs the non-blocking collectives of %d ranks%s\n", size,
                gm.blocking == 3   ? ", and the blocking ones"
                : gm.blocking == 2 ? ", and the blocking ones where goal's are faster"
                : gm.blocking == 1 ? ", and the blocking ones within a host"
                                   : "");
}

/* A layer built for the other MPI loads that MPI beside the program's, and
 * the program dies in its first call ("Invalid communicator"): say why
 * first. The program's MPI is the library its PMPI_Init comes from. */
static void check_abi(void)
{
    static const char *names[3] = { BUILT_FOR };
    Dl_info where;
    void *init = dlsym(RTLD_DEFAULT, "PMPI_Init");
    if (init && dladdr(init, &where) && where.dli_fname && !strstr(where.dli_fname, names[1]))
        fprintf(stderr, "goal-mpi: error: this layer is built for %s, but the program's MPI is %s: preload %s "
                        "instead\n", names[0], where.dli_fname, names[2]);
}

int MPI_Init(int *argc, char ***argv)
{
    check_abi();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        start_goal();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    check_abi();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        start_goal();
    return rc;
}

int MPI_Finalize(void)
{
    if (gm.on) {
        gm_ucx_end_begin();
        gm_req_drain();
        gm_comm_end_all();
        gm_ops_end();
        gm_lock();
        gm.finalized = 1;
        gm.on = 0;
        gm_unlock();
        if (GOAL_Finalize() != GOAL_SUCCESS)
            fprintf(stderr, "goal-mpi (rank %d): GOAL_Finalize: %s\n", gm.world_rank, GOAL_LastError());
    }
    if (gm.debug)
        report();
    gm_block_end();
    int rc = PMPI_Finalize();
    gm_ucx_end_done();
    return rc;
}
