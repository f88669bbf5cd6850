/*
 * pack.c - buffers as goal moves them: bytes, back to back.
 *
 * A contiguous datatype's buffer is used as it is. Any other (a vector, a
 * column, a resized subarray) is packed (PMPI_Pack) into a buffer of the
 * layer's before the collective starts, where this rank sends from it, and
 * unpacked (PMPI_Unpack) into the program's buffer when the collective has
 * ended, where it receives into it. So every datatype is served for data
 * movement, and ranks whose datatypes differ but whose type signatures
 * match (MPI allows it: a root gathering into a column type from ranks
 * sending ints) all run on goal: a rank that went to MPI while its peers
 * went to goal would leave both waiting.
 */
#include "layer.h"

#include <stdlib.h>
#include <string.h>

static void *keep(struct gm_bufs *x, size_t n)
{
    void *t = malloc(n ? n : 1);
    if (t && x->ntmp < GM_MAXTMP)
        x->tmp[x->ntmp++] = t;
    else if (t) {
        free(t);
        t = NULL;
    }
    return t;
}

void *gm_scratch(struct gm_bufs *x, size_t n)
{
    return keep(x, n);
}

static int add_unpack(struct gm_bufs *x, const void *from, void *to, int count, MPI_Datatype dt)
{
    struct gm_unpack *u = realloc(x->un, sizeof *u * (size_t)(x->nun + 1));
    if (!u)
        return 0;
    x->un = u;
    u += x->nun;
    u->from = from, u->to = to, u->count = count;
    if (PMPI_Type_dup(dt, &u->dt) != MPI_SUCCESS) /* the program may free its type before the end */
        return 0;
    PMPI_Type_size(dt, &u->size);
    x->nun++;
    return 1;
}

static int pack(const void *from, int count, MPI_Datatype dt, void *to, int bytes)
{
    int pos = 0;
    return PMPI_Pack(from, count, dt, to, bytes, &pos, MPI_COMM_SELF) == MPI_SUCCESS && pos == bytes;
}

int gm_view(struct gm_bufs *x, const void *buf, int count, MPI_Datatype dt, int send, int recv, void **out,
            size_t *bytes)
{
    size_t esz;
    if (count < 0)
        return 0;
    if (gm_type_bytes(dt, &esz)) {
        *out = (void *)buf, *bytes = esz * (size_t)count;
        return 1;
    }
    int size;
    if (dt == MPI_DATATYPE_NULL || PMPI_Type_size(dt, &size) != MPI_SUCCESS || (size_t)size * (size_t)count > INT32_MAX)
        return 0;
    *bytes = (size_t)size * (size_t)count;
    void *t = keep(x, *bytes);
    if (!t || (send && !pack(buf, count, dt, t, (int)*bytes)) || (recv && !add_unpack(x, t, (void *)buf, count, dt)))
        return 0;
    *out = t;
    return 1;
}

/* gm_view_v and gm_view_v_packed (`canon`: the blocks back to back). */
static int view_v(struct gm_bufs *x, const void *base, const int *counts, const int *displs, int n, MPI_Datatype dt,
                  int send, int recv, void **out, size_t *bcounts, size_t *bdispls, int canon)
{
    size_t esz, next = 0;
    MPI_Aint lb, ext;
    if (gm_type_bytes(dt, &esz)) {
        int back_to_back = 1;
        for (int i = 0; i < n; i++) {
            if (counts[i] < 0)
                return 0;
            bcounts[i] = (size_t)counts[i] * esz, bdispls[i] = (size_t)displs[i] * esz;
            back_to_back &= bdispls[i] == next;
            next += bcounts[i];
        }
        if (back_to_back || !canon) {
            *out = (void *)base;
            return 1;
        }
    }
    int size;
    if (dt == MPI_DATATYPE_NULL || PMPI_Type_size(dt, &size) != MPI_SUCCESS)
        return 0;
    PMPI_Type_get_extent(dt, &lb, &ext);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (counts[i] < 0 || (size_t)size * (size_t)counts[i] > INT32_MAX)
            return 0;
        bcounts[i] = (size_t)size * (size_t)counts[i], bdispls[i] = total;
        total += bcounts[i];
    }
    char *t = keep(x, total);
    if (!t)
        return 0;
    for (int i = 0; i < n; i++) {
        const char *at = (const char *)base + (MPI_Aint)displs[i] * ext;
        if (send && !pack(at, counts[i], dt, t + bdispls[i], (int)bcounts[i]))
            return 0;
        if (recv && counts[i] > 0 && !add_unpack(x, t + bdispls[i], (void *)at, counts[i], dt))
            return 0;
    }
    *out = t;
    return 1;
}

int gm_view_v(struct gm_bufs *x, const void *base, const int *counts, const int *displs, int n, MPI_Datatype dt,
              int send, int recv, void **out, size_t *bcounts, size_t *bdispls)
{
    return view_v(x, base, counts, displs, n, dt, send, recv, out, bcounts, bdispls, 0);
}

int gm_view_v_packed(struct gm_bufs *x, const void *base, const int *counts, const int *displs, int n,
                     MPI_Datatype dt, int send, int recv, void **out, size_t *bcounts, size_t *bdispls)
{
    return view_v(x, base, counts, displs, n, dt, send, recv, out, bcounts, bdispls, 1);
}

void gm_bufs_end(struct gm_bufs *x, int unpack)
{
    for (int i = 0; i < x->nun; i++) {
        struct gm_unpack *u = &x->un[i];
        int pos = 0;
        if (unpack)
            PMPI_Unpack(u->from, u->size * u->count, &pos, u->to, u->count, u->dt, MPI_COMM_SELF);
        PMPI_Type_free(&u->dt);
    }
    free(x->un);
    for (int i = 0; i < x->ntmp; i++)
        free(x->tmp[i]);
    memset(x, 0, sizeof *x);
}
