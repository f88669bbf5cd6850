// Reduce_scatter and allgatherv from the schedule cache (docs/mpi.md,
// "Schedules"): 60 rounds with new buffers each, the counts alternating
// between two vectors (the same on every rank, as MPI requires), in place
// every third round, and allgatherv's displacements each rank's own: odd
// ranks lay the blocks out in reverse rank order with gaps on odd rounds
// (the layer packs them), the others back to back; every result compared
// with PMPI_, bytes outside the blocks untouched. The layer compiles each
// (counts, in place) once: 4 reduce_scatter and 4 allgatherv schedules on
// every rank, the other 112 calls from the cache.
// ranks: 1 2 3 4
// expect: vcache: ok
// expect: goal-mpi \(rank 0\): MPI_Iallgatherv: 60 on goal, 0 to MPI
// expect: goal-mpi \(rank 0\): MPI_Ireduce_scatter: 60 on goal, 0 to MPI
// expect: goal-mpi \(rank 0\): schedules: 8 compiled, 112 reused from the cache
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define ROUNDS 60
#define PAD 7 /* ints after the last block, checked untouched */

static int rank, size;

/* Counts of variant v (0 or 1): rank i's block. */
static int count(int v, int i) { return v ? 3 * i + 2 : (i % 3) * 5 + 1; }

static void check_same(const char *what, int round, const int *a, const int *b, int n)
{
    for (int i = 0; i < n; i++)
        CHECK(a[i] == b[i], "%s round %d: int %d is %d, MPI gives %d", what, round, i, a[i], b[i]);
}

int main(int argc, char **argv)
{
    t_start(&argc, &argv, &rank, &size);
    int *cnt = malloc(sizeof(int) * (size_t)size), *dsp = malloc(sizeof(int) * (size_t)size);
    for (int round = 0; round < ROUNDS; round++) {
        int v = round % 2, ip = round % 3 == 0, total = 0;
        for (int i = 0; i < size; i++)
            cnt[i] = count(v, i), total += cnt[i];

        /* reduce_scatter: input of `total` ints, this rank's block out */
        int *in = malloc(sizeof(int) * (size_t)(total + PAD)), *a = malloc(sizeof(int) * (size_t)(total + PAD)),
            *b = malloc(sizeof(int) * (size_t)(total + PAD));
        for (int i = 0; i < total + PAD; i++)
            in[i] = rank * 1000 + i * 3 + round, a[i] = b[i] = -round;
        if (ip)
            memcpy(a, in, sizeof(int) * (size_t)total), memcpy(b, in, sizeof(int) * (size_t)total);
        MPI_Request q;
        MPI_Ireduce_scatter(ip ? MPI_IN_PLACE : in, a, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        PMPI_Reduce_scatter(ip ? MPI_IN_PLACE : in, b, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        /* in place, MPI leaves the rest of the input undefined: only the result */
        check_same("reduce_scatter", round, a, b, ip ? cnt[rank] : total + PAD);

        /* allgatherv: odd ranks on odd rounds reverse the blocks, one int apart */
        int gaps = rank % 2 && v, at = 0;
        for (int j = 0; j < size; j++) {
            int i = gaps ? size - 1 - j : j;
            dsp[i] = at;
            at += cnt[i] + gaps;
        }
        int len = at + PAD;
        int *ga = malloc(sizeof(int) * (size_t)len), *gb = malloc(sizeof(int) * (size_t)len);
        for (int i = 0; i < len; i++)
            ga[i] = gb[i] = -1 - round;
        for (int k = 0; k < cnt[rank]; k++)
            in[k] = rank * 77 + k + round;
        if (ip)
            memcpy(ga + dsp[rank], in, sizeof(int) * (size_t)cnt[rank]),
                memcpy(gb + dsp[rank], in, sizeof(int) * (size_t)cnt[rank]);
        MPI_Iallgatherv(ip ? MPI_IN_PLACE : in, cnt[rank], MPI_INT, ga, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        PMPI_Allgatherv(ip ? MPI_IN_PLACE : in, cnt[rank], MPI_INT, gb, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
        check_same("allgatherv", round, ga, gb, len);
        free(in), free(a), free(b), free(ga), free(gb);
    }
    free(cnt), free(dsp);
    PMPI_Barrier(MPI_COMM_WORLD); /* not a schedule of the layer's: the counts above are exact */
    if (rank == 0)
        printf("vcache: ok\n");
    MPI_Finalize();
    return 0;
}
