/*
 * mem.c - MPI_Alloc_mem and MPI_Free_mem from goal's shared heap.
 *
 * MPI_Alloc_mem is where a program asks its MPI for memory to communicate
 * from. The layer hands out goal's shared heap (GOAL_Alloc): a block sent
 * from there to a rank on the same machine is one copy in user space by the
 * receiver, where memory from malloc takes a kernel copy (Cross Memory
 * Attach) that pins each page first. The collectives the layer serves take
 * that path by themselves; MPI's own calls see ordinary memory.
 *
 * A request goes to the MPI library, as it always did, while goal is not
 * running, with GOAL_MPI_ALLOC_MEM=0, and when the heap cannot hold it.
 * MPI_Free_mem gives each block back where it came from.
 *
 * Blocks the program still holds at MPI_Finalize stay readable and
 * writable at their addresses: goal keeps its heap mapped until the last
 * of them is freed (GOAL_Free after GOAL_Finalize). The heap is shared
 * memory: a process the rank forks shares such blocks instead of copying
 * them.
 *
 * Fortran's MPI_ALLOC_MEM and MPI_FREE_MEM go to the MPI library directly
 * (Open MPI's bindings call PMPI_Alloc_mem): memory from one language must
 * be freed from the same one.
 */
#include "layer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The blocks handed out from goal's heap and not yet freed. */
static void **blocks;
static size_t nblocks, cap;
/* Requests served from the heap, and sent to MPI while goal ran. */
static unsigned long from_heap, to_mpi;
/* -1: GOAL_MPI_ALLOC_MEM not read yet. */
static int enabled = -1;

static int heap_enabled(void)
{
    if (enabled < 0) {
        const char *v = getenv("GOAL_MPI_ALLOC_MEM");
        enabled = !(v && strcmp(v, "0") == 0);
    }
    return enabled;
}

/* Whether `p` is a block of ours; removes it if so. Under gm_lock. */
static int take(void *p)
{
    for (size_t i = 0; i < nblocks; i++) {
        if (blocks[i] == p) {
            blocks[i] = blocks[--nblocks];
            return 1;
        }
    }
    return 0;
}

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
    if (size > 0 && baseptr && heap_enabled()) {
        gm_lock();
        if (gm.on && (nblocks < cap || (blocks = realloc(blocks, (cap = cap ? 2 * cap : 16) * sizeof *blocks)))) {
            void *p = GOAL_Alloc((size_t)size);
            if (p) {
                blocks[nblocks++] = p;
                from_heap++;
                gm_unlock();
                *(void **)baseptr = p;
                return MPI_SUCCESS;
            }
            to_mpi++;
        }
        gm_unlock();
    }
    return PMPI_Alloc_mem(size, info, baseptr);
}

int MPI_Free_mem(void *base)
{
    gm_lock();
    int ours = base && take(base);
    gm_unlock();
    if (!ours)
        return PMPI_Free_mem(base);
    if (GOAL_Free(base) != GOAL_SUCCESS)
        fprintf(stderr, "goal-mpi (rank %d): MPI_Free_mem: %s\n", gm.world_rank, GOAL_LastError());
    return MPI_SUCCESS;
}

void gm_mem_report(void)
{
    if (from_heap || to_mpi)
        fprintf(stderr, "goal-mpi (rank %d): MPI_Alloc_mem: %lu from goal's shared heap, %lu to MPI (the heap "
                        "could not hold them)\n", gm.world_rank, from_heap, to_mpi);
}
