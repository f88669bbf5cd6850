/* With PIN set in the environment, rank r pins itself to CPU r % 2, as
 * bench/coll.py's programs do (shared by goal_coll_count.c and
 * mpi_coll_count.c). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>

static void pin_if_asked(int rank) {
    if (!getenv("PIN")) return;
    cpu_set_t m;
    CPU_ZERO(&m);
    CPU_SET(rank % 2, &m);
    sched_setaffinity(0, sizeof m, &m);
}
