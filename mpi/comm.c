/*
 * comm.c - every intra-communicator the program makes gets a goal group:
 * its own matching context, since MPI orders collectives per communicator
 * only. The group lives in an attribute of the communicator (a keyval with
 * no copy function, as LibNBC keeps its state), so it is freed with it.
 *
 * The group is made when the communicator is made, inside the MPI call that
 * makes it, not at its first non-blocking collective: making a group is
 * collective (an exchange over the parent), and a non-blocking call must not
 * block on its peers (a rank would wait in MPI_Iallreduce for a peer that
 * waits in MPI_Recv for it). The calls followed are the blocking ones
 * collective over the parent: MPI_Comm_dup(_with_info), split, split_type,
 * create, MPI_Cart_create, MPI_Cart_sub (GOAL_Group_split of the parent's
 * group), and MPI_Comm_create_group (GOAL_Group_create over the world's,
 * collective over the members only, as MPI's). In the split, the colour of
 * a new communicator is the world rank of its rank 0 (the same on all its
 * members, different between the communicators one call makes) and the
 * key its rank in it, so goal's group ranks are the communicator's.
 * Communicators made otherwise (MPI_Comm_idup, MPI_Intercomm_merge, graph
 * topologies, ...) and intercommunicators are not served: their calls go
 * to MPI.
 */
#include "layer.h"

#include <stdio.h>
#include <stdlib.h>

static struct gm_comm *all;

static void link_in(struct gm_comm *c)
{
    c->next = all;
    c->prev = NULL;
    if (all)
        all->prev = c;
    all = c;
}

/* Drops a reference; the last frees the group and the schedules. */
void gm_comm_put(struct gm_comm *c)
{
    gm_lock();
    if (--c->refs == 0) {
        if (c->prev)
            c->prev->next = c->next;
        else if (all == c)
            all = c->next;
        if (c->next)
            c->next->prev = c->prev;
        gm_cache_clear(c);
        if (c->group && !gm.finalized && c->group != GOAL_GroupWorld())
            GOAL_Group_free(&c->group);
        free(c);
    }
    gm_unlock();
}

static int delete_attr(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)keyval, (void)extra;
    if (comm == MPI_COMM_WORLD)
        gm.world = NULL;
    if (val)
        gm_comm_put(val);
    return MPI_SUCCESS;
}

/* World ranks of `comm`'s members, in its order (malloc'd), or NULL if one
 * is outside MPI_COMM_WORLD (a spawned process). */
static int *world_ranks(MPI_Comm comm, int n)
{
    MPI_Group g, w;
    int *mine = malloc(sizeof(int) * (size_t)n), *out = malloc(sizeof(int) * (size_t)n);
    if (!mine || !out) {
        free(mine);
        free(out);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        mine[i] = i;
    PMPI_Comm_group(comm, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &w);
    PMPI_Group_translate_ranks(g, n, mine, w, out);
    PMPI_Group_free(&g);
    PMPI_Group_free(&w);
    free(mine);
    for (int i = 0; i < n; i++)
        if (out[i] == MPI_UNDEFINED) {
            free(out);
            return NULL;
        }
    return out;
}

static struct gm_comm *attach(MPI_Comm comm, GOAL_Group g)
{
    struct gm_comm *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->group = g;
    PMPI_Comm_rank(comm, &c->rank);
    PMPI_Comm_size(comm, &c->size);
    int *w = world_ranks(comm, c->size);
    c->blocking = w ? (unsigned)gm_block_decide(w, c->size) : 0;
    free(w);
    c->refs = 1;
    gm_lock();
    link_in(c);
    gm_unlock();
    PMPI_Comm_set_attr(comm, gm.keyval, c);
    return c;
}

void gm_comm_attach_world(void)
{
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_attr, &gm.keyval, NULL);
    gm.world = attach(MPI_COMM_WORLD, GOAL_GroupWorld());
    /* MPI_COMM_SELF: a group of one (collective over this rank alone). */
    GOAL_Group self = NULL;
    if (GOAL_Group_create(GOAL_GroupWorld(), &gm.world_rank, 1, 0, &self) == GOAL_SUCCESS)
        attach(MPI_COMM_SELF, self);
}

struct gm_comm *gm_comm_of(MPI_Comm comm, enum gm_why *why)
{
    if (!gm.on) {
        *why = GM_OFF;
        return NULL;
    }
    /* The world without MPI_Comm_get_attr: about 200 instructions of MPI's
     * (and its lock) in every call on MPI_COMM_WORLD. */
    if (comm == MPI_COMM_WORLD && gm.world)
        return gm.world;
    void *val = NULL;
    int flag = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_get_attr(comm, gm.keyval, &val, &flag) != MPI_SUCCESS || !flag || !val) {
        *why = GM_COMM;
        return NULL;
    }
    return val;
}

static int is_inter(MPI_Comm comm)
{
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    return inter;
}

/* After a call collective over `parent` made `*newcomm` (maybe
 * MPI_COMM_NULL on this rank): the split of the parent's group that every
 * parent rank makes, and the new communicator's attribute. */
static void follow(MPI_Comm parent, MPI_Comm newcomm)
{
    enum gm_why why;
    struct gm_comm *p = gm_comm_of(parent, &why);
    if (!p)
        return;
    int color = GOAL_UNDEFINED, key = 0, n = 0;
    if (newcomm != MPI_COMM_NULL && !is_inter(newcomm)) {
        PMPI_Comm_size(newcomm, &n);
        int *w = world_ranks(newcomm, n);
        if (w) {
            color = w[0];
            PMPI_Comm_rank(newcomm, &key);
            free(w);
        }
    }
    GOAL_Group g = NULL;
    int rc = GOAL_Group_split(p->group, color, key, &g);
    if (rc != GOAL_SUCCESS) {
        if (gm.debug)
            fprintf(stderr, "goal-mpi (rank %d): a new communicator is not served: %s\n", gm.world_rank, GOAL_LastError());
        return;
    }
    if (g)
        attach(newcomm, g);
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_dup(comm, newcomm);
    if (rc == MPI_SUCCESS)
        follow(comm, *newcomm);
    return rc;
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_dup_with_info(comm, info, newcomm);
    if (rc == MPI_SUCCESS)
        follow(comm, *newcomm);
    return rc;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_split(comm, color, key, newcomm);
    if (rc == MPI_SUCCESS)
        follow(comm, *newcomm);
    return rc;
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_split_type(comm, split_type, key, info, newcomm);
    if (rc == MPI_SUCCESS)
        follow(comm, *newcomm);
    return rc;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_create(comm, group, newcomm);
    if (rc == MPI_SUCCESS && !is_inter(comm))
        follow(comm, *newcomm);
    return rc;
}

int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder, MPI_Comm *newcomm)
{
    int rc = PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm);
    if (rc == MPI_SUCCESS)
        follow(comm, *newcomm);
    return rc;
}

int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    int rc = PMPI_Cart_sub(comm, remain_dims, newcomm);
    if (rc == MPI_SUCCESS)
        follow(comm, *newcomm);
    return rc;
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_create_group(comm, group, tag, newcomm);
    enum gm_why why;
    if (rc != MPI_SUCCESS || *newcomm == MPI_COMM_NULL || !gm_comm_of(comm, &why) || is_inter(*newcomm))
        return rc;
    int n;
    PMPI_Comm_size(*newcomm, &n);
    int *w = world_ranks(*newcomm, n);
    GOAL_Group g = NULL;
    if (w && GOAL_Group_create(GOAL_GroupWorld(), w, n, tag, &g) == GOAL_SUCCESS)
        attach(*newcomm, g);
    else if (gm.debug)
        fprintf(stderr, "goal-mpi (rank %d): a communicator from MPI_Comm_create_group is not served: %s\n",
                gm.world_rank, w ? GOAL_LastError() : "a member outside MPI_COMM_WORLD");
    free(w);
    return rc;
}

void gm_comm_each(void (*f)(struct gm_comm *, uint64_t), uint64_t arg)
{
    gm_lock();
    for (struct gm_comm *c = all; c; c = c->next)
        f(c, arg);
    gm_unlock();
}

/* MPI_Finalize: frees every schedule and group while goal still runs (the
 * attributes of communicators never freed stay, empty). */
void gm_comm_end_all(void)
{
    gm_lock();
    for (struct gm_comm *c = all; c; c = c->next) {
        gm_cache_clear(c);
        if (c->group && c->group != GOAL_GroupWorld())
            GOAL_Group_free(&c->group);
        c->group = NULL;
    }
    gm_unlock();
}
