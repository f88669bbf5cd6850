/*
 * types.c - MPI datatypes and operations as goal's.
 *
 * Data movement (bcast, gather, ...) needs only bytes: any datatype whose
 * elements lie back to back without holes (size == extent == true extent,
 * lower bounds 0) is served, predefined or derived. A reduction needs goal's
 * element type: the predefined integer and floating types (fp16 where the
 * MPI has it), and contiguous (or duplicated) derived types of them, which
 * reduce as that many elements of the base type. MPI's operations SUM,
 * PROD, MIN, MAX (and BAND, BOR, BXOR on integers) are goal's; an operation
 * from MPI_Op_create becomes a goal user operation per (operation, datatype)
 * pair, on opaque elements of the datatype's size, and calls the MPI user
 * function with the datatype. Everything else (MAXLOC, MINLOC, the logical
 * operations, REPLACE, long double, pair types) goes to MPI.
 */
#include "layer.h"

#include <stdlib.h>
#include <string.h>

int gm_builtin_sizes_ok;

/* Whether `size` bytes of `dt` lie back to back from its start (size ==
 * extent == true extent, lower bounds 0), by asking MPI: two calls, 80
 * instructions under MPICH. */
static int contig_by_mpi(MPI_Datatype dt, int size)
{
    MPI_Aint lb, ext, tlb, text;
    if (size < 0 || PMPI_Type_get_extent(dt, &lb, &ext) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(dt, &tlb, &text) != MPI_SUCCESS)
        return 0;
    return lb == 0 && tlb == 0 && ext == size && text == size;
}

#ifdef MPICH_VERSION
void gm_types_init(void)
{
    const MPI_Datatype probe[] = { MPI_BYTE, MPI_CHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_FLOAT, MPI_DOUBLE,
                                   MPI_LONG_DOUBLE, MPI_UINT64_T, MPI_C_DOUBLE_COMPLEX };
    for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
        int a = -1, b = -2;
        if (!gm_builtin_size(probe[i], &a) || PMPI_Type_size(probe[i], &b) != MPI_SUCCESS || a != b ||
            !contig_by_mpi(probe[i], b))
            return;
    }
    gm_builtin_sizes_ok = 1;
}

/* A builtin handle is one of MPICH's basic types (its pair types, such as
 * MPI_FLOAT_INT, are of another kind): contiguous, as gm_types_init checked
 * on the probes. */
static int builtin_contig(MPI_Datatype dt, int *size)
{
    return gm_builtin_size(dt, size);
}
#else
struct gm_size_slot gm_sizes[GM_SIZE_SLOTS];

void gm_types_init(void)
{
    const MPI_Datatype known[] = {
        MPI_BYTE, MPI_PACKED, MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_WCHAR, MPI_SHORT,
        MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_LONG_LONG_INT,
        MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T,
        MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T, MPI_AINT, MPI_OFFSET, MPI_COUNT,
        MPI_C_BOOL, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION,
        MPI_COMPLEX, MPI_LOGICAL, MPI_CHARACTER, MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT,
        MPI_SHORT_INT,
#ifdef MPIX_C_FLOAT16
        MPIX_C_FLOAT16,
#endif
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        int size;
        if (known[i] == MPI_DATATYPE_NULL || PMPI_Type_size(known[i], &size) != MPI_SUCCESS)
            continue;
        unsigned j = gm_size_slot(known[i]);
        while (gm_sizes[j].t && gm_sizes[j].t != known[i])
            j = (j + 1) % GM_SIZE_SLOTS;
        gm_sizes[j].t = known[i];
        gm_sizes[j].size = size;
        gm_sizes[j].contig = contig_by_mpi(known[i], size);
    }
    gm_builtin_sizes_ok = 1;
}

/* A predefined type of the table whose bytes lie back to back (not
 * MPI_SHORT_INT, whose int starts 4 bytes in, and the like). */
static int builtin_contig(MPI_Datatype dt, int *size)
{
    const struct gm_size_slot *e = gm_size_find(dt);
    if (e)
        *size = e->size;
    return e && e->contig;
}
#endif

int gm_type_size_mpi(MPI_Datatype dt, int *size)
{
    return dt != MPI_DATATYPE_NULL && PMPI_Type_size(dt, size) == MPI_SUCCESS;
}

int gm_type_bytes(MPI_Datatype dt, size_t *bytes)
{
    int size;
    if (gm_builtin_sizes_ok && dt != MPI_DATATYPE_NULL && builtin_contig(dt, &size)) {
        *bytes = (size_t)size;
        return 1;
    }
    if (!gm_type_size(dt, &size) || !contig_by_mpi(dt, size))
        return 0;
    *bytes = (size_t)size;
    return 1;
}

/* goal's type and width of a predefined MPI type, or 0. (MPI_Datatype
 * constants are addresses under Open MPI, not constant expressions: the
 * table is made at run time.) */
static int base(MPI_Datatype dt, int *gdt, int *width)
{
    const int L = 8 * (int)sizeof(long), A = 8 * (int)sizeof(MPI_Aint), O = 8 * (int)sizeof(MPI_Offset);
    const struct {
        MPI_Datatype t;
        int gdt, width;
    } table[] = {
        { MPI_CHAR, GOAL_SINT, 8 }, { MPI_SIGNED_CHAR, GOAL_SINT, 8 }, { MPI_INT8_T, GOAL_SINT, 8 },
        { MPI_UNSIGNED_CHAR, GOAL_UINT, 8 }, { MPI_UINT8_T, GOAL_UINT, 8 },
        { MPI_SHORT, GOAL_SINT, 16 }, { MPI_INT16_T, GOAL_SINT, 16 },
        { MPI_UNSIGNED_SHORT, GOAL_UINT, 16 }, { MPI_UINT16_T, GOAL_UINT, 16 },
        { MPI_INT, GOAL_SINT, 32 }, { MPI_INT32_T, GOAL_SINT, 32 }, { MPI_INTEGER, GOAL_SINT, 32 },
        { MPI_UNSIGNED, GOAL_UINT, 32 }, { MPI_UINT32_T, GOAL_UINT, 32 },
        { MPI_LONG, GOAL_SINT, L }, { MPI_LONG_LONG, GOAL_SINT, 64 }, { MPI_LONG_LONG_INT, GOAL_SINT, 64 },
        { MPI_INT64_T, GOAL_SINT, 64 }, { MPI_AINT, GOAL_SINT, A }, { MPI_OFFSET, GOAL_SINT, O },
        { MPI_UNSIGNED_LONG, GOAL_UINT, L }, { MPI_UNSIGNED_LONG_LONG, GOAL_UINT, 64 }, { MPI_UINT64_T, GOAL_UINT, 64 },
        { MPI_FLOAT, GOAL_FLOAT, 32 }, { MPI_REAL, GOAL_FLOAT, 32 },
        { MPI_DOUBLE, GOAL_FLOAT, 64 }, { MPI_DOUBLE_PRECISION, GOAL_FLOAT, 64 },
#ifdef MPIX_C_FLOAT16
        { MPIX_C_FLOAT16, GOAL_FLOAT, 16 },
#endif
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].t == dt && dt != MPI_DATATYPE_NULL) {
            *gdt = table[i].gdt, *width = table[i].width;
            return 1;
        }
    return 0;
}

/* The predefined type `dt` is made of, and how many of them one `dt` is:
 * through contiguous and duplicated derived types only. */
static int unroll(MPI_Datatype dt, int *gdt, int *width, size_t *per, int depth)
{
    int ni, na, nd, comb;
    if (depth > 16 || PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return 0;
    if (comb == MPI_COMBINER_NAMED) {
        *per = 1;
        return base(dt, gdt, width);
    }
    if ((comb != MPI_COMBINER_CONTIGUOUS && comb != MPI_COMBINER_DUP) || nd != 1 || ni > 1 || na != 0)
        return 0;
    int ints[1] = { 1 };
    MPI_Aint addrs[1];
    MPI_Datatype inner;
    PMPI_Type_get_contents(dt, ni, na, nd, ints, addrs, &inner);
    size_t n;
    int ok = unroll(inner, gdt, width, &n, depth + 1);
    int inner_comb;
    PMPI_Type_get_envelope(inner, &ni, &na, &nd, &inner_comb);
    if (inner_comb != MPI_COMBINER_NAMED)
        PMPI_Type_free(&inner);
    *per = n * (size_t)(comb == MPI_COMBINER_CONTIGUOUS ? ints[0] : 1);
    return ok && (comb == MPI_COMBINER_DUP || ints[0] >= 0);
}

/* ---- user operations ---- */

/* An MPI_Op_create operation, and the goal operators made for it, one
 * per datatype it was used with. */
struct uop {
    MPI_Op op;
    MPI_User_function *fn;
    int commute;
    struct uctx {
        MPI_Datatype dt;
        MPI_User_function *fn;
        GOAL_Op gop;
        struct uctx *next;
    } *per_type;
    struct uop *next;
};
static struct uop *uops;

/* goal's call of an MPI user function: input is the lower part, as MPI's invec. */
static void call_user(const void *input, void *inout, int count, void *ctx)
{
    struct uctx *u = ctx;
    int n = count;
    MPI_Datatype dt = u->dt;
    u->fn((void *)input, inout, &n, &dt);
}

int MPI_Op_create(MPI_User_function *fn, int commute, MPI_Op *op)
{
    int rc = PMPI_Op_create(fn, commute, op);
    if (rc != MPI_SUCCESS)
        return rc;
    struct uop *u = calloc(1, sizeof *u);
    if (u) {
        u->op = *op, u->fn = fn, u->commute = commute;
        gm_lock();
        u->next = uops;
        uops = u;
        gm_unlock();
    }
    return rc;
}

static uint64_t op_key(MPI_Op op)
{
    uint64_t k = 0;
    memcpy(&k, &op, sizeof op < sizeof k ? sizeof op : sizeof k);
    return k | (1ull << 63);
}

static void free_uop(struct uop *u)
{
    for (struct uctx *c = u->per_type, *n; c; c = n) {
        n = c->next;
        /* A schedule still alive keeps its function: ctx must stay, so the
         * context is kept until the process ends (a few bytes per pair). */
        if (!gm.finalized)
            GOAL_Op_free(&c->gop);
    }
    free(u);
}

int MPI_Op_free(MPI_Op *op)
{
    MPI_Op was = *op;
    gm_lock();
    for (struct uop **p = &uops; *p; p = &(*p)->next)
        if ((*p)->op == was) {
            struct uop *u = *p;
            *p = u->next;
            /* A later operation may get this handle: nothing cached for
             * this one may be taken for it. */
            gm_cache_drop_op(op_key(was));
            free_uop(u);
            break;
        }
    gm_unlock();
    return PMPI_Op_free(op);
}

void gm_ops_end(void)
{
    gm_lock();
    while (uops) {
        struct uop *u = uops;
        uops = u->next;
        free_uop(u);
    }
    gm_unlock();
}

/* With the lock held (and so no MPI call: see req.c's `ended`); `bytes`
 * per element of `dt`. */
static enum gm_why user_reduction(MPI_Datatype dt, size_t bytes, MPI_Op op, struct gm_red *r)
{
    struct uop *u;
    for (u = uops; u && u->op != op; u = u->next)
        ;
    if (!u)
        return GM_OP;
    struct uctx *c;
    for (c = u->per_type; c && c->dt != dt; c = c->next)
        ;
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c)
            return GM_OP;
        c->dt = dt, c->fn = u->fn;
        if (GOAL_Op_create(call_user, u->commute, c, &c->gop) != GOAL_SUCCESS) {
            free(c);
            return GM_OP;
        }
        c->next = u->per_type;
        u->per_type = c;
    }
    r->gdt = GOAL_BYTES, r->width = (int)(bytes * 8), r->per = 1, r->op = c->gop;
    r->opkey = op_key(op);
    return GM_SERVED;
}

enum gm_why gm_reduction(MPI_Datatype dt, MPI_Op op, struct gm_red *r)
{
    const struct {
        MPI_Op op;
        GOAL_Op gop;
        int ints_only;
    } ops[] = {
        { MPI_SUM, GOAL_ADD, 0 }, { MPI_PROD, GOAL_MUL, 0 }, { MPI_MIN, GOAL_MIN, 0 }, { MPI_MAX, GOAL_MAX, 0 },
        { MPI_BAND, GOAL_AND, 1 }, { MPI_BOR, GOAL_OR, 1 }, { MPI_BXOR, GOAL_XOR, 1 },
    };
    int k = -1;
    for (int i = 0; i < 7; i++)
        if (ops[i].op == op)
            k = i;
    size_t bytes;
    if (k < 0) {
        if (!gm_type_bytes(dt, &bytes) || bytes == 0 || bytes * 8 > INT32_MAX)
            return GM_TYPE;
        gm_lock();
        enum gm_why w = user_reduction(dt, bytes, op, r);
        gm_unlock();
        return w;
    }
    if (!gm_type_bytes(dt, &bytes) || !unroll(dt, &r->gdt, &r->width, &r->per, 0) || dt == MPI_BYTE)
        return GM_TYPE;
    if (ops[k].ints_only && r->gdt == GOAL_FLOAT)
        return GM_OP;
    r->op = ops[k].gop;
    r->opkey = (uint64_t)ops[k].gop;
    return GM_SERVED;
}
