/*
 * cache.c - compiled schedules, per communicator, so that a program calling
 * MPI_Iallreduce with new buffers every time compiles once and reruns
 * (goal's run-time buffers take the call's buffers at each run).
 *
 * goal pairs schedules across ranks by compile order within a group, so
 * every rank of a communicator must hit and miss alike: the key holds only
 * what MPI makes every rank pass alike (the collective, byte or element
 * counts, goal's element type, the operation, the root, MPI_IN_PLACE where
 * MPI wants it on all ranks or none, and the per-rank counts of
 * reduce_scatter and allgatherv, whole), never a rank's own buffers, datatype
 * handles or in-place choice at a root (coll.c handles that one locally).
 * Eviction is least recently used over a fixed number of entries per
 * communicator, which, on the same sequence of calls, every rank does alike;
 * an entry evicted while executions of it run is freed after the last.
 * A user operation's entries leave the cache when MPI_Op_free frees it
 * (another operation may take its handle).
 *
 * A second list per communicator, the vcache, holds the v-collectives whose
 * arguments each rank knows only in part (gatherv, scatterv, alltoallv),
 * keyed by this rank's own: its hits differ between ranks, which is
 * harmless because each call takes one compile number either way (coll.c's
 * gm_serve_local), and its evictions, different on each rank, never touch
 * the shared list.
 */
#include "layer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Schedules kept per communicator. */
#define CACHE_MAX 64

static void entry_free(struct gm_entry *e)
{
    GOAL_FreeSchedule(e->s);
    free((void *)e->key.v);
    free(e);
}

void gm_key_counts(struct gm_key *k, const size_t *v, int nv)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a over the counts */
    for (int i = 0; i < nv; i++)
        h = (h ^ (uint64_t)v[i]) * 0x100000001b3ULL;
    k->v = v, k->nv = nv, k->vhash = h;
}

static void evict(struct gm_entry *e)
{
    e->evicted = 1;
    if (e->running == 0)
        entry_free(e);
}

void gm_entry_put(struct gm_entry *e)
{
    gm_lock();
    if (--e->running == 0 && e->evicted)
        entry_free(e);
    gm_unlock();
}

static int same(const struct gm_key *a, const struct gm_key *b)
{
    return a->kind == b->kind && a->root == b->root && a->inplace == b->inplace && a->gdt == b->gdt &&
           a->width == b->width && a->n == b->n && a->opkey == b->opkey && a->nv == b->nv &&
           a->vhash == b->vhash && (a->nv == 0 || memcmp(a->v, b->v, sizeof *a->v * (size_t)a->nv) == 0);
}

/* The entry for `k` in the list at `head` (of *count entries), moved to
 * the front; compiled by `build` on a miss (*hit 0). Lock held. */
static struct gm_entry *get(struct gm_comm *c, struct gm_entry **head, int *count, const struct gm_key *k,
                            const struct gm_red *r, gm_build build, int *hit)
{
    struct gm_entry **p = head, *e = NULL;
    for (; *p; p = &(*p)->next)
        if (same(&(*p)->key, k)) {
            e = *p;
            *p = e->next; /* to the front */
            break;
        }
    if (!e) {
        /* The key's counts copied first: running out of memory then fails
         * before goal takes a compile number. */
        size_t *v = k->nv ? malloc(sizeof *v * (size_t)k->nv) : NULL;
        e = calloc(1, sizeof *e);
        if (!e || (k->nv && !v)) {
            free(e);
            free(v);
            return NULL;
        }
        GOAL_Schedule s = build(c, k, r);
        if (!s) {
            free(e);
            free(v);
            return NULL;
        }
        gm.compiled++;
        e->key = *k;
        if (v)
            e->key.v = memcpy(v, k->v, sizeof *v * (size_t)k->nv);
        e->s = s;
        int n = GOAL_RunBufferSizes(s, e->need, 2);
        e->nbufs = n < 0 ? 0 : n;
        (*count)++;
        if (*count > CACHE_MAX) {
            struct gm_entry **q = head;
            while ((*q)->next)
                q = &(*q)->next;
            struct gm_entry *last = *q;
            *q = NULL;
            (*count)--;
            evict(last);
        }
        *hit = 0;
    } else {
        gm.reused++;
        *hit = 1;
    }
    e->next = *head;
    *head = e;
    e->running++;
    return e;
}

struct gm_entry *gm_cache_get(struct gm_comm *c, const struct gm_key *k, const struct gm_red *r, gm_build build)
{
    int hit;
    gm_lock();
    struct gm_entry *e = get(c, &c->cache, &c->ncache, k, r, build, &hit);
    gm_unlock();
    return e;
}

struct gm_entry *gm_vcache_get(struct gm_comm *c, const struct gm_key *k, gm_build build, int *hit)
{
    gm_lock();
    struct gm_entry *e = get(c, &c->vcache, &c->nvcache, k, NULL, build, hit);
    gm_unlock();
    return e;
}

/* Evicts `c`'s entries for the operation `key`. */
static void drop(struct gm_comm *c, uint64_t key)
{
    for (struct gm_entry **p = &c->cache; *p;) {
        struct gm_entry *e = *p;
        if (e->key.opkey == key) {
            *p = e->next;
            c->ncache--;
            evict(e);
        } else {
            p = &e->next;
        }
    }
}

void gm_cache_drop_op(uint64_t opkey)
{
    gm_comm_each(drop, opkey);
}

void gm_cache_clear(struct gm_comm *c)
{
    gm_lock();
    for (struct gm_entry **head = &c->cache; head; head = head == &c->cache ? &c->vcache : NULL)
        while (*head) {
            struct gm_entry *e = *head;
            *head = e->next;
            evict(e);
        }
    c->ncache = c->nvcache = 0;
    gm_unlock();
}
