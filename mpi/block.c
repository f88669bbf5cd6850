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
 * them, and, under Open MPI, the call moves at least 1 KiB per rank. There
 * goal's shared memory is ahead of both MPIs' (goal bench mpi, docs/mpi.md's
 * table). Below 1 KiB Open MPI's own shared-memory collectives take 0.1-0.2
 * us, less than the layer's own cost per call (the communicator's
 * attribute, the cache key, the run and its wait: about 0.1 us more than
 * goal alone), so they stay Open MPI's; MPICH's take 0.2-0.6 us and go to
 * goal at every size. Across hosts the MPI library keeps its own: over TCP
 * goal's small messages cost about what MPI's do; with more ranks than
 * CPUs neither is ahead everywhere. `0` sends every blocking call to MPI,
 * `all` serves them on every communicator and at every size.
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

#ifdef OPEN_MPI
#define MIN_BYTES 1024 /* see the top: Open MPI's own are faster below */
#else
#define MIN_BYTES 0
#endif

int gm_block_skip(int count, MPI_Datatype dt)
{
    if (!gm.on || gm.blocking == 0)
        return 1;
    if (MIN_BYTES == 0 || gm.blocking == 2)
        return 0;
    int size = 0;
    if (count < 0 || dt == MPI_DATATYPE_NULL || PMPI_Type_size(dt, &size) != MPI_SUCCESS)
        return 0; /* the serving path counts and says what is wrong */
    return (uint64_t)count * (uint64_t)size + 1 <= MIN_BYTES;
}

void gm_block_end(void)
{
    free(info);
    info = NULL;
}
