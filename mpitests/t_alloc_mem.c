// MPI_Alloc_mem under the layer: memory from goal's shared heap, which the
// collectives the layer serves send from with one user-space copy. An
// MPI_Ialltoall of 64 KiB blocks between buffers from MPI_Alloc_mem, three
// times with new contents; MPI's own point-to-point on such memory; a
// block freed with MPI_Free_mem; memory from malloc next to it; and a
// block the program still holds at MPI_Finalize, whose bytes must still be
// there afterwards, and which must take writes (goal keeps its heap mapped
// while blocks of it remain).
// ranks: 2 4
// expect: MPI_Alloc_mem: 3 from goal's shared heap, 0 to MPI
// expect: alloc_mem: ok
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define BLOCK (64 << 10)

static unsigned char pattern(int from, int to, int round, size_t i)
{
    return (unsigned char)(from * 31 + to * 7 + round * 13 + i);
}

int main(int argc, char **argv)
{
    int rank, size;
    t_start(&argc, &argv, &rank, &size);
    size_t bytes = (size_t)size * BLOCK;
    unsigned char *sbuf, *rbuf, *kept;
    CHECK(MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &sbuf) == MPI_SUCCESS, "MPI_Alloc_mem of %zu bytes", bytes);
    CHECK(MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &rbuf) == MPI_SUCCESS, "MPI_Alloc_mem of %zu bytes", bytes);
    CHECK(MPI_Alloc_mem(4096, MPI_INFO_NULL, &kept) == MPI_SUCCESS, "MPI_Alloc_mem of 4096 bytes");
    CHECK((uintptr_t)sbuf % 64 == 0 && (uintptr_t)rbuf % 64 == 0, "MPI_Alloc_mem's memory at %p and %p: not 64-byte "
          "aligned", (void *)sbuf, (void *)rbuf);
    for (int round = 0; round < 3; round++) {
        for (int to = 0; to < size; to++)
            for (size_t i = 0; i < BLOCK; i++)
                sbuf[(size_t)to * BLOCK + i] = pattern(rank, to, round, i);
        memset(rbuf, 0xee, bytes);
        MPI_Request req;
        CHECK(MPI_Ialltoall(sbuf, BLOCK, MPI_BYTE, rbuf, BLOCK, MPI_BYTE, MPI_COMM_WORLD, &req) == MPI_SUCCESS,
              "MPI_Ialltoall");
        CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait");
        for (int from = 0; from < size; from++)
            for (size_t i = 0; i < BLOCK; i++)
                CHECK(rbuf[(size_t)from * BLOCK + i] == pattern(from, rank, round, i),
                      "round %d: byte %zu of rank %d's block is %d, not %d", round, i, from,
                      rbuf[(size_t)from * BLOCK + i], pattern(from, rank, round, i));
    }
    // MPI's own sends and receives on the heap's memory, and on malloc's.
    unsigned char *plain = malloc(BLOCK);
    CHECK(plain != NULL, "malloc");
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    CHECK(MPI_Sendrecv(sbuf, BLOCK, MPI_BYTE, right, 7, plain, BLOCK, MPI_BYTE, left, 7, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Sendrecv");
    for (size_t i = 0; i < BLOCK; i++)
        CHECK(plain[i] == pattern(left, 0, 2, i), "MPI_Sendrecv: byte %zu from rank %d is %d", i, left, plain[i]);
    free(plain);
    CHECK(MPI_Free_mem(sbuf) == MPI_SUCCESS, "MPI_Free_mem");
    CHECK(MPI_Free_mem(rbuf) == MPI_SUCCESS, "MPI_Free_mem");
    for (size_t i = 0; i < 4096; i++)
        kept[i] = (unsigned char)(rank + i);
    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    for (size_t i = 0; i < 4096; i++) {
        if (kept[i] != (unsigned char)(rank + i)) {
            printf("FAIL rank %d: after MPI_Finalize, byte %zu of the block still held is %d, not %d\n", rank, i,
                   kept[i], (unsigned char)(rank + i));
            return 1;
        }
    }
    kept[0] = 42;
    if (kept[0] != 42) {
        printf("FAIL rank %d: after MPI_Finalize, a write to the block still held did not stay\n", rank);
        return 1;
    }
    if (rank == 0)
        printf("alloc_mem: ok\n");
    return 0;
}
