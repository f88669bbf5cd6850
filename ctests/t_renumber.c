// GOAL_Renumber: a copy of a schedule numbered as the group's next
// compile, which pairs with a peer's compile of the same call. Every rank
// compiles a gatherv from its own count once; then, for 6 calls, some
// ranks (a different set each call) compile the same gatherv again while
// the others renumber their first one, with run-time buffers and new data
// each call: the root's result must be every rank's block. Also on a group
// of the even ranks, and the refusals (NULL, a freed schedule).
// ranks: 2 3 4
// modes: 2 3
#include "helpers.h"

#define MAXN 64

/* Rank r's block: r % 3 + 1 ints. */
static size_t block(int r)
{
    return (size_t)(r % 3 + 1) * sizeof(int);
}

static GOAL_Schedule gatherv(GOAL_Group g, int me, int n)
{
    size_t counts[MAXN], displs[MAXN], at = 0;
    for (int i = 0; i < n; i++)
        counts[i] = block(i), displs[i] = at, at += counts[i];
    GOAL_Schedule s = GOAL_Gatherv_init_on(g, GOAL_BUF_AT_RUN(0), block(me), me == 0 ? GOAL_BUF_AT_RUN(1) : NULL,
                                           counts, displs, 0, GOAL_ALG_LINEAR);
    CHECKM(s, "%s", GOAL_LastError());
    return s;
}

static void calls(GOAL_Group g, int me, int n, int salt)
{
    GOAL_Schedule first = gatherv(g, me, n);
    for (int call = 0; call < 6; call++) {
        /* Who compiles this call: a different set of ranks each time. */
        int compiles = ((me + call) % 3) == 0;
        GOAL_Schedule s = compiles ? gatherv(g, me, n) : GOAL_Renumber(first);
        CHECKM(s, "%s", GOAL_LastError());
        int mine[4], all[4 * MAXN];
        for (int k = 0; k < 4; k++)
            mine[k] = salt + call * 1000 + me * 10 + k;
        for (int k = 0; k < 4 * MAXN; k++)
            all[k] = -1;
        void *bufs[2] = { mine, all };
        size_t sizes[2];
        int nb = GOAL_RunBufferSizes(s, sizes, 2);
        CHECK(nb >= 1);
        CHECK_OK(GOAL_Wait(GOAL_RunWith(s, bufs, sizes, nb)));
        if (me == 0) {
            int at = 0;
            for (int i = 0; i < n; i++)
                for (size_t k = 0; k < block(i) / sizeof(int); k++, at++)
                    CHECKM(all[at] == salt + call * 1000 + i * 10 + (int)k, "call %d: int %d is %d", call, at, all[at]);
            CHECK_EQ(all[at], -1);
        }
        CHECK_OK(GOAL_FreeSchedule(s));
    }
    CHECK_OK(GOAL_FreeSchedule(first));
    CHECK(GOAL_Renumber(first) == NULL);
}

int main(void)
{
    CHECK_OK(GOAL_Init());
    int rank = GOAL_MyRank(), size = GOAL_GroupSize();
    CHECK(size <= MAXN);
    CHECK(GOAL_Renumber(NULL) == NULL);
    calls(GOAL_GroupWorld(), rank, size, 0);
    GOAL_Group even = NULL;
    CHECK_OK(GOAL_Group_split(GOAL_GroupWorld(), rank % 2 ? GOAL_UNDEFINED : 0, rank, &even));
    if (even) {
        int me = GOAL_Group_rank(even), n = GOAL_Group_size(even);
        CHECK(me >= 0 && n >= 1);
        calls(even, me, n, 500000);
        CHECK_OK(GOAL_Group_free(&even));
    }
    CHECK_OK(GOAL_Finalize());
    if (rank == 0)
        printf("renumber: ok\n");
    return 0;
}
