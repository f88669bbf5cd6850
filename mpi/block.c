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
 * The rule (GOAL_MPI_BLOCKING, default `auto`): on goal when no machine
 * runs more of the communicator's ranks than it has CPUs (with more ranks
 * than CPUs neither is ahead everywhere), and the call's collective and
 * bytes per rank are not in this MPI's table below of (collective, size
 * range) where its own is as fast or faster. There are two tables: one for
 * a communicator whose ranks all share a host (shared memory), one for a
 * communicator across hosts (TCP). `local` serves only the first kind (the
 * default until across-host data said otherwise), `0` sends every blocking
 * call to MPI, `all` serves them on every communicator and at every size.
 *
 * The tables come from `goal bench mpi --programs blocking` at 2 ranks,
 * locally (docs/measurements/mpi-latency-2026-11-29/) and across two
 * emulated hosts (docs/measurements/blocking-hosts-2026-11-30/): a range
 * goes to MPI where the layer's time was above ~1.03x native, widened to
 * the neighbouring sizes that were within noise. Within a host, two kinds
 * of range: below 1 KiB Open MPI's own shared-memory collectives take
 * 0.3-0.6 us, no more than the layer's own cost per call (the
 * communicator's attribute, the cache key, the run and its wait); from
 * goal's CMA threshold (8 KiB here) to some 64 KiB a rooted collective's
 * one message pays goal's rendezvous and single copy, where both MPIs copy
 * twice through shared memory at once. It was fitted to one machine (an
 * earlier 2-CPU VM of another CPU make had its misses at 32 KiB under Open
 * MPI and 4 KiB under MPICH, inside these ranges too). Across hosts goal's
 * small collectives were 0.85-1.0x either MPI's, and serving them also
 * puts a program's blocking calls on the connection its non-blocking ones
 * use: the receiver of a one-way message then acknowledges it in the data
 * it sends anyway, where a connection that only carries goal's Ibcast had
 * its receiver send a bare TCP acknowledgement for every second message,
 * inside its read (an 8-byte Ibcast behind an MPI_Barrier, MPICH: 9.6 us
 * with the barrier on MPI, 5.7 with it on goal, 6.3 natively).
 *
 * Each rank's host is a hash of its host name (network namespaces, goal's
 * emulated hosts, have their own) and its machine the kernel's boot id
 * (namespaces share it), exchanged once at MPI_Init with the setting, so
 * that a setting that differs between ranks is taken as the most
 * conservative of them rather than splitting the ranks' choices.
 */
#include "layer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What each rank tells the others at MPI_Init. */
struct rank_info {
    uint64_t host;    /* FNV-1a of the host name */
    uint64_t machine; /* FNV-1a of the kernel's boot id */
    int32_t cpus;     /* CPUs online on its machine */
    int32_t mode;     /* its GOAL_MPI_BLOCKING: a MODE_ below */
};

/* GOAL_MPI_BLOCKING, ordered from the most conservative. */
enum { MODE_NEVER, MODE_LOCAL, MODE_AUTO, MODE_ALL };

__thread unsigned gm_block_to_mpi __attribute__((tls_model("initial-exec")));

static struct rank_info *info;

static int fill_classes(void);

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = s; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    return h;
}

static uint64_t host_hash(void)
{
    char name[256] = { 0 };
    gethostname(name, sizeof name - 1);
    return fnv1a(name);
}

/* The running kernel's boot id: one per machine, whatever the namespace.
 * Without it (no /proc), the host name stands in: hosts are then taken to
 * be machines of their own. */
static uint64_t machine_hash(void)
{
    char id[64] = { 0 };
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f || !fgets(id, sizeof id, f)) {
        if (f)
            fclose(f);
        return host_hash();
    }
    fclose(f);
    return fnv1a(id);
}

/* GOAL_MPI_BLOCKING as a mode; an unknown value is named and taken as 0. */
static int mode_of_env(void)
{
    const char *v = getenv("GOAL_MPI_BLOCKING");
    if (!v || !*v || strcmp(v, "auto") == 0)
        return MODE_AUTO;
    if (strcmp(v, "local") == 0 || strcmp(v, "1") == 0)
        return MODE_LOCAL;
    if (strcmp(v, "0") == 0)
        return MODE_NEVER;
    if (strcmp(v, "all") == 0)
        return MODE_ALL;
    fprintf(stderr, "goal-mpi (rank %d): GOAL_MPI_BLOCKING='%s' is not one of 0, local, auto, all: blocking "
                    "collectives go to MPI\n", gm.world_rank, v);
    return MODE_NEVER;
}

void gm_block_init(void)
{
    int mode = mode_of_env();
    if (!fill_classes()) {
        fprintf(stderr, "goal-mpi (rank %d): a bound in block.c's tables is not a power of two: blocking "
                        "collectives go to MPI\n", gm.world_rank);
        mode = MODE_NEVER;
    }
    int n;
    PMPI_Comm_size(MPI_COMM_WORLD, &n);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    struct rank_info mine = { host_hash(), machine_hash(), (int32_t)(cpus > 0 ? cpus : 1), mode };
    info = calloc((size_t)n, sizeof *info);
    if (!info) {
        gm.blocking = MODE_NEVER;
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
        gm.blocking = MODE_NEVER;
        return;
    }
    gm.blocking = MODE_ALL;
    for (int i = 0; i < n; i++)
        if (info[i].mode < gm.blocking)
            gm.blocking = info[i].mode;
}

/* Whether no machine runs more of these ranks than it has CPUs. */
static int a_cpu_each(const int *world_ranks, int n)
{
    for (int i = 0; i < n; i++) {
        const struct rank_info *m = &info[world_ranks[i]];
        int here = 0, counted_before = 0;
        for (int j = 0; j < n && !counted_before; j++)
            if (info[world_ranks[j]].machine == m->machine) {
                counted_before = j < i;
                here++;
            }
        if (!counted_before && here > m->cpus)
            return 0;
    }
    return 1;
}

int gm_block_decide(const int *world_ranks, int n)
{
    if (!info || gm.blocking == MODE_NEVER || n < 1)
        return 0;
    if (gm.blocking == MODE_ALL)
        return GM_BLOCK_ALL;
    if (!a_cpu_each(world_ranks, n))
        return 0;
    for (int i = 1; i < n; i++)
        if (info[world_ranks[i]].host != info[world_ranks[0]].host)
            return gm.blocking == MODE_AUTO ? GM_BLOCK_HOSTS : 0;
    return GM_BLOCK_LOCAL;
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
/* Within a host. */
static const struct to_mpi local_to_mpi[] = {
    { GM_NFN, 0, 1 * KiB },             /* Open MPI's own: 0.3-0.6 us */
    { GM_BCAST, 8 * KiB, 64 * KiB },    /* 1.16-1.22 */
    { GM_GATHER, 8 * KiB, 64 * KiB },   /* 1.00-1.19 */
    { GM_SCATTER, 8 * KiB, 32 * KiB },  /* 1.03-1.12 */
    { GM_REDUCE, 8 * KiB, 512 * KiB },  /* 1.03-1.17 */
    { GM_ALLGATHER, 8 * KiB, ANY_SIZE }, /* 0.92-1.11: nothing gained */
    { GM_ALLTOALL, 2 * MiB, ANY_SIZE },  /* 4 MiB 1.05, 1.08, 1.10 (pairs) on a later VM */
};
/* Across hosts. */
static const struct to_mpi hosts_to_mpi[] = {
    { GM_NFN, 512, 16 * KiB },          /* bcast 512 B 1.06-1.09; at 4 KiB the emulated link's token bucket
                                           decides (iterations of 7 or 35 us): scatter 0.98-3.49, reduce 0.59-1.92 */
    { GM_BCAST, 2 * MiB, ANY_SIZE },    /* 4 MiB 1.06 */
    { GM_GATHER, 2 * MiB, ANY_SIZE },   /* 1.13 */
    { GM_REDUCE, 2 * MiB, ANY_SIZE },   /* 1.26 */
    { GM_SCATTER, 2 * MiB, ANY_SIZE },  /* 1.10 */
};
#else
static const struct to_mpi local_to_mpi[] = {
    { GM_ALLREDUCE, 0, 64 },             /* 1.10 */
    { GM_REDUCE, 0, 2 * KiB },           /* 0.98-1.12 */
    { GM_BCAST, 512, 16 * KiB },         /* 1.06-1.37 */
    { GM_GATHER, 512, 64 * KiB },        /* 1.05-1.69 */
    { GM_SCATTER, 0, 512 * KiB },        /* 0.93-1.43 */
    { GM_ALLGATHER, 0, 16 * KiB },       /* 0.96-1.39 */
    { GM_ALLGATHER, 2 * MiB, ANY_SIZE }, /* 1.04-1.14 */
    { GM_ALLTOALL, 64 * KiB, ANY_SIZE }, /* 0.99-1.07 */
};
static const struct to_mpi hosts_to_mpi[] = {
    { GM_ALLREDUCE, 0, 64 },   /* 8 B 1.03 in two runs */
    { GM_NFN, 512, 16 * KiB }, /* bcast 512 B 1.06-1.07, allgather and alltoall 1.01-1.05, scatter 4 KiB
                                  0.97-2.97 (the token bucket, as above) */
};
#endif

static int in_table(const struct to_mpi *t, size_t n, enum gm_fn fn, uint64_t bytes)
{
    for (size_t i = 0; i < n; i++)
        if ((t[i].fn == fn || t[i].fn == GM_NFN) && bytes >= t[i].lo && bytes < t[i].hi)
            return 1;
    return 0;
}

#define IN(table, fn, bytes) in_table(table, sizeof table / sizeof table[0], fn, bytes)

/* The tables by collective and size class, the bits of gm_block_to_mpi:
 * a call's class is 0 for 0 bytes, else 1 + floor(log2 bytes). Every bound
 * in the tables must be 0, a power of two or ANY_SIZE (fill_classes checks
 * it), so a class lies wholly inside or outside each range, and one lookup
 * answers for both tables (scanning both took about 100 instructions per
 * call, beside the 790 of Open MPI's own 8-byte MPI_Bcast within a host). */
static uint8_t by_class[GM_NFN][65];

static unsigned size_class(uint64_t bytes)
{
    return bytes ? 64u - (unsigned)__builtin_clzll(bytes) : 0u;
}

static int a_class_bound(uint64_t b)
{
    return b == 0 || b == ANY_SIZE || (b & (b - 1)) == 0;
}

static unsigned to_mpi_mask(enum gm_fn fn, uint64_t bytes)
{
    return (IN(local_to_mpi, fn, bytes) ? GM_BLOCK_LOCAL : 0u) | (IN(hosts_to_mpi, fn, bytes) ? GM_BLOCK_HOSTS : 0u);
}

/* Fills by_class; 0 if a table's bound is not a class bound. */
static int fill_classes(void)
{
    const struct to_mpi *tables[] = { local_to_mpi, hosts_to_mpi };
    const size_t sizes[] = { sizeof local_to_mpi / sizeof local_to_mpi[0], sizeof hosts_to_mpi / sizeof hosts_to_mpi[0] };
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < sizes[t]; i++)
            if (!a_class_bound(tables[t][i].lo) || !a_class_bound(tables[t][i].hi))
                return 0;
    for (int fn = GM_FIRST_BLOCKING; fn < GM_NFN; fn++)
        for (unsigned c = 0; c <= 64; c++)
            by_class[fn][c] = (uint8_t)to_mpi_mask((enum gm_fn)fn, c ? 1ull << (c - 1) : 0);
    return 1;
}

int gm_block_skip(enum gm_fn fn, int count, MPI_Datatype dt, MPI_Comm comm)
{
    if (!gm.on || gm.blocking == MODE_NEVER)
        return 1;
    gm_block_to_mpi = 0;
    if (gm.blocking == MODE_ALL)
        return 0;
    int size = 0;
    if (count < 0 || !gm_type_size(dt, &size))
        return 0; /* the serving path counts and says what is wrong */
    uint64_t bytes = (uint64_t)count * (uint64_t)size;
    unsigned m = by_class[fn][size_class(bytes)];
    if (gm.blocking == MODE_LOCAL)
        m |= GM_BLOCK_HOSTS;
    gm_block_to_mpi = m;
    /* The world's kind is known without asking MPI for its attribute. */
    if (comm == MPI_COMM_WORLD && gm.world)
        return !gm.world->blocking || (gm.world->blocking & m);
    return m == (GM_BLOCK_LOCAL | GM_BLOCK_HOSTS);
}

void gm_block_end(void)
{
    free(info);
    info = NULL;
}
