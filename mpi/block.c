/*
 * block.c - when MPI's blocking collectives run on goal.
 *
 * MPI_Bcast, MPI_Allreduce and the other blocking forms of the collectives
 * coll.c serves run on goal where goal's choice is faster than the MPI
 * library's own, and go to MPI untouched elsewhere. The choice is made per
 * communicator, when the communicator is made, from what every member
 * knows alike: serving one rank's call on goal and its peer's on MPI would
 * leave both waiting.
 *
 * The rule (GOAL_MPI_BLOCKING, default `local`): on goal when all of the
 * communicator's ranks share one host and the host has a CPU for each of
 * them, and the call's collective and bytes per rank are not in the table
 * below of this MPI's (collective, size range) where its own is as fast or
 * faster. Across hosts the MPI library keeps its own: over TCP goal's
 * small messages cost about what MPI's do; with more ranks than CPUs
 * neither is ahead everywhere. `0` sends every blocking call to MPI, `all`
 * serves them on every communicator and at every size.
 *
 * The table comes from `goal bench mpi --programs blocking` at 2 ranks
 * (docs/measurements/mpi-latency-2026-11-29/): a range goes to MPI where
 * the layer's time was above ~1.03x native in either of two 5-round runs,
 * widened to the neighbouring sizes that were within noise. Two kinds of
 * range: below 1 KiB Open MPI's own shared-memory collectives take 0.3-0.6
 * us, no more than the layer's own cost per call (the communicator's
 * attribute, the cache key, the run and its wait); from goal's CMA
 * threshold (8 KiB here) to some 64 KiB a rooted collective's one
 * message pays goal's rendezvous and single copy, where both MPIs copy
 * twice through shared memory at once. It was fitted to one machine (an
 * earlier 2-CPU VM of another CPU make had its misses at 32 KiB under Open
 * MPI and 4 KiB under MPICH, inside these ranges too).
 *
 * Each rank's host is a hash of its host name (network namespaces, goal's
 * emulated hosts, have their own), exchanged once at MPI_Init with the
 * setting, so that a setting that differs between ranks is taken as the
 * most conservative of them rather than splitting the ranks' choices.
 */
#include "layer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What each rank tells the others at MPI_Init. */
struct rank_info {
    uint64_t host;  /* FNV-1a of the host name */
    int32_t cpus;   /* CPUs online on its host */
    int32_t mode;   /* its GOAL_MPI_BLOCKING: 0, 1 (local), 2 (all) */
};

static struct rank_info *info;

static uint64_t host_hash(void)
{
    char name[256] = { 0 };
    gethostname(name, sizeof name - 1);
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    return h;
}

/* GOAL_MPI_BLOCKING as a mode; an unknown value is named and taken as 0. */
static int mode_of_env(void)
{
    const char *v = getenv("GOAL_MPI_BLOCKING");
    if (!v || !*v || strcmp(v, "local") == 0 || strcmp(v, "1") == 0)
        return 1;
    if (strcmp(v, "0") == 0)
        return 0;
    if (strcmp(v, "all") == 0)
        return 2;
    fprintf(stderr, "goal-mpi (rank %d): GOAL_MPI_BLOCKING='%s' is not one of 0, local, all: blocking collectives "
                    "go to MPI\n", gm.world_rank, v);
    return 0;
}

void gm_block_init(void)
{
    int n;
    PMPI_Comm_size(MPI_COMM_WORLD, &n);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    struct rank_info mine = { host_hash(), (int32_t)(cpus > 0 ? cpus : 1), mode_of_env() };
    info = calloc((size_t)n, sizeof *info);
    if (!info) {
        gm.blocking = 0;
        /* The others still exchange: take part, with nowhere to keep it. */
        struct rank_info *tmp = malloc(sizeof *tmp * (size_t)n);
        if (tmp)
            PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, tmp, sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
        free(tmp);
        return;
    }
    if (PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, info, sizeof mine, MPI_BYTE, MPI_COMM_WORLD) != MPI_SUCCESS) {
        free(info);
        info = NULL;
        gm.blocking = 0;
        return;
    }
    gm.blocking = 2;
    for (int i = 0; i < n; i++)
        if (info[i].mode < gm.blocking)
            gm.blocking = info[i].mode;
}

int gm_block_decide(const int *world_ranks, int n)
{
    if (!info || gm.blocking == 0 || n < 1)
        return 0;
    if (gm.blocking == 2)
        return 1;
    const struct rank_info *first = &info[world_ranks[0]];
    if (n > first->cpus)
        return 0;
    for (int i = 1; i < n; i++)
        if (info[world_ranks[i]].host != first->host)
            return 0;
    return 1;
}

/* Bytes per rank in [lo, hi) of collective `fn` go to MPI (GM_NFN: every
 * collective). See the top for how the ranges were found. */
struct to_mpi {
    enum gm_fn fn;
    uint64_t lo, hi;
};

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define ANY_SIZE UINT64_MAX

#ifdef OPEN_MPI
static const struct to_mpi to_mpi[] = {
    { GM_NFN, 0, 1 * KiB },             /* Open MPI's own: 0.3-0.6 us */
    { GM_BCAST, 8 * KiB, 64 * KiB },    /* 1.16-1.22 */
    { GM_GATHER, 8 * KiB, 64 * KiB },   /* 1.00-1.19 */
    { GM_SCATTER, 8 * KiB, 32 * KiB },  /* 1.03-1.12 */
    { GM_REDUCE, 8 * KiB, 512 * KiB },  /* 1.03-1.17 */
    { GM_ALLGATHER, 8 * KiB, ANY_SIZE }, /* 0.92-1.11: nothing gained */
};
#else
static const struct to_mpi to_mpi[] = {
    { GM_ALLREDUCE, 0, 64 },             /* 1.10 */
    { GM_REDUCE, 0, 2 * KiB },           /* 0.98-1.12 */
    { GM_BCAST, 512, 16 * KiB },         /* 1.06-1.37 */
    { GM_GATHER, 512, 64 * KiB },        /* 1.05-1.69 */
    { GM_SCATTER, 0, 512 * KiB },        /* 0.93-1.43 */
    { GM_ALLGATHER, 0, 16 * KiB },       /* 0.96-1.39 */
    { GM_ALLGATHER, 2 * MiB, ANY_SIZE }, /* 1.04-1.14 */
    { GM_ALLTOALL, 64 * KiB, ANY_SIZE }, /* 0.99-1.07 */
};
#endif

int gm_block_skip(enum gm_fn fn, int count, MPI_Datatype dt)
{
    if (!gm.on || gm.blocking == 0)
        return 1;
    if (gm.blocking == 2)
        return 0;
    int size = 0;
    if (count < 0 || dt == MPI_DATATYPE_NULL || PMPI_Type_size(dt, &size) != MPI_SUCCESS)
        return 0; /* the serving path counts and says what is wrong */
    uint64_t bytes = (uint64_t)count * (uint64_t)size;
    for (size_t i = 0; i < sizeof to_mpi / sizeof to_mpi[0]; i++)
        if ((to_mpi[i].fn == fn || to_mpi[i].fn == GM_NFN) && bytes >= to_mpi[i].lo && bytes < to_mpi[i].hi)
            return 1;
    return 0;
}

void gm_block_end(void)
{
    free(info);
    info = NULL;
}
