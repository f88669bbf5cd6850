// The oracle: every collective libgoal-mpi serves, run through the layer
// (MPI_Ixxx + a Wait) and through the MPI library itself (PMPI_Xxx, in the
// same program), on every kind of communicator (world, a dup, a split by
// parity, the rows and columns of a 2-column grid, MPI_COMM_SELF), several
// datatypes (int, double, unsigned char, a contiguous type of 3 ints, an
// int followed by a hole, and ranks mixing that with MPI_INT) and
// operations (SUM, PROD, MIN, MAX, BXOR, a non-commutative user operation:
// 2x2 matrix products), in place and not, counts from 0 up past the eager
// limit, at 1 to 4 ranks (and 7 under Open MPI: MPICH's own blocking
// collectives, the oracle's side, take minutes with 7 ranks on 2 cores;
// t_oracle_wide runs 5 to 7 with fewer counts, and
// crates/goal-cli/tests/mpi_layer_hosts.rs across emulated hosts).
// Results must agree bit for bit, and bytes the collective must not write
// must stay as they were. Floating values are small integers, whose
// sums and products are exact in any order, so MPI's order and goal's give
// the same bits.
// ranks: 1 2 3 4
// ranks-openmpi: 1 2 3 4 7
// expect: goal-mpi \(rank 0\): MPI_Iallreduce: [1-9][0-9]* on goal, 0 to MPI
// expect: goal-mpi \(rank 0\): MPI_Ialltoallv: [1-9][0-9]* on goal, 0 to MPI
// expect: goal-mpi \(rank 0\): MPI_Ireduce_scatter: [1-9][0-9]* on goal, 0 to MPI
// expect-none: to MPI, .* [1-9][0-9]* to MPI|[1-9][0-9]* to MPI$
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

static int wrank;

/* 2x2 matrices of uint32 (mod 2^32): associative, not commutative. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    uint32_t *a = in, *b = inout;
    for (int i = 0; i < *len; i++, a += 4, b += 4) {
        uint32_t r[4] = { a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                          a[2] * b[1] + a[3] * b[3] };
        memcpy(b, r, sizeof r);
    }
}

struct type {
    const char *name;
    MPI_Datatype dt;
    int is_float, is_user;
};

static size_t tsize(MPI_Datatype dt)
{
    int s;
    MPI_Type_size(dt, &s);
    return (size_t)s;
}

/* Rank `r`'s input element values: small, exact in any order. */
static void fill(void *buf, size_t bytes, const struct type *t, int r, int salt)
{
    if (t->is_float) {
        double *d = buf;
        for (size_t i = 0; i < bytes / 8; i++)
            d[i] = (double)((int)((r * 7 + i * 3 + salt) % 5) - 2);
    } else if (t->is_user) {
        uint32_t *u = buf;
        for (size_t i = 0; i < bytes / 4; i++)
            u[i] = (uint32_t)(r * 2654435761u + i * 40503u + (uint32_t)salt);
    } else {
        unsigned char *c = buf;
        for (size_t i = 0; i < bytes; i++)
            c[i] = (unsigned char)(r * 31 + i * 7 + (size_t)salt);
        /* Open MPI 4.1 saturates MPI_SUM of unsigned char (its AVX
         * reductions) where C and MPICH wrap: sums of up to 8 ranks stay
         * below 256. */
        if (t->dt == MPI_UNSIGNED_CHAR)
            for (size_t i = 0; i < bytes; i++)
                c[i] &= 0x1f;
        if (t->dt == MPI_INT) /* keep products small-ish but let them wrap alike */
            for (size_t i = 0; i + 4 <= bytes; i += 4)
                c[i + 3] &= 0x3;
    }
}

static unsigned char *alloc(size_t n) { return malloc(n + 64); }

/* Both results, compared, and the guard bytes past `len` left as they were. */
static void same(const char *what, const unsigned char *a, const unsigned char *b, size_t len, size_t cap)
{
    size_t i = 0;
    while (i < len && a[i] == b[i])
        i++;
    CHECK(i == len, "%s: layer and MPI differ from byte %zu of %zu (0x%02x, MPI 0x%02x)", what, i, len, a[i], b[i]);
    for (size_t i = len; i < cap; i++)
        CHECK(a[i] == 0xAB && b[i] == 0xAB, "%s: byte %zu past the result was written", what, i);
}

static void wait1(MPI_Request *q) { CHECK(MPI_Wait(q, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait failed"); }

#include "oracle_cases.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    t_rank = wrank;
    int wsize;
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Op user;
    MPI_Op_create(matmul, 0, &user);
    MPI_Datatype mat, tri;
    MPI_Type_contiguous(4, MPI_UINT32_T, &mat);
    MPI_Type_commit(&mat);
    MPI_Type_contiguous(3, MPI_INT, &tri);
    MPI_Type_commit(&tri);
    MPI_Datatype holes; /* an int and 4 bytes of nothing: not contiguous */
    MPI_Type_create_resized(MPI_INT, 0, 8, &holes);
    MPI_Type_commit(&holes);
    struct type types[] = {
        { "int", MPI_INT, 0, 0 },
        { "double", MPI_DOUBLE, 1, 0 },
        { "uchar", MPI_UNSIGNED_CHAR, 0, 0 },
        { "3 ints", tri, 0, 0 },
        { "matrix", mat, 0, 1 },
        { "int+hole", holes, 0, 0 },
    };
    MPI_Comm dup, parity, row, col;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, -wrank, &parity); /* reversed order inside */
    MPI_Comm_split(MPI_COMM_WORLD, wrank / 2, wrank, &row);
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &col);
    struct {
        const char *name;
        MPI_Comm c;
    } comms[] = { { "world", MPI_COMM_WORLD }, { "dup", dup }, { "parity", parity }, { "row", row },
                  { "col", col }, { "self", MPI_COMM_SELF } };
    /* ORACLE_COUNTS="0 5 20000" runs fewer counts (the jobs across
       emulated hosts, where MPI's side is slow), the same on every rank. */
    int counts[8] = { 0, 1, 5, 1000, 20000 };
    size_t ncounts = 5;
    const char *only = getenv("ORACLE_COUNTS");
    if (only) {
        char *end = (char *)only;
        for (ncounts = 0; ncounts < 8; only = end) {
            long v = strtol(only, &end, 10);
            if (end == only)
                break;
            CHECK(v >= 0 && v <= 100000, "ORACLE_COUNTS=%s: a count out of 0..100000", getenv("ORACLE_COUNTS"));
            counts[ncounts++] = (int)v;
        }
        end += strspn(end, " ");
        CHECK(ncounts > 0 && *end == 0, "ORACLE_COUNTS=%s: expected 1 to 8 counts separated by spaces", getenv("ORACLE_COUNTS"));
    }
    long cases = 0;
    for (size_t ci = 0; ci < sizeof comms / sizeof comms[0]; ci++)
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
            for (size_t k = 0; k < ncounts; k++)
                cases += run_all(comms[ci].name, comms[ci].c, &types[ti], counts[k], user);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&parity);
    MPI_Comm_free(&row);
    MPI_Comm_free(&col);
    MPI_Type_free(&mat);
    MPI_Type_free(&tri);
    MPI_Type_free(&holes);
    MPI_Op_free(&user);
    if (wrank == 0)
        printf("oracle: %ld collectives agreed with MPI's on %d ranks\n", cases, wsize);
    MPI_Finalize();
    return 0;
}
