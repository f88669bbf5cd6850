/*
 * t_groups: groups of ranks (docs/api.md, "Groups"), as a user program sees
 * them.
 *
 *   - the world group's handle answers as GOAL_GroupSize / GOAL_MyRank do;
 *     a large-count collective (_init_c_on) on it; the extension ids;
 *   - GOAL_Group_split orders ranks as MPI_Comm_split does (by key, then by
 *     parent rank): a split by parity with keys that reverse the order, a
 *     colour GOAL_UNDEFINED that gets no group, rank translation both ways;
 *   - a process grid's rows and columns at once (two groups per rank): every
 *     collective x every algorithm (and AUTO) on the rows and on the
 *     columns, the per-rank-count ones (gatherv ... reduce_scatter) with
 *     counts that include zeros and blocks laid out in reverse rank order, the two groups' schedules in flight together, data checked
 *     against a model computed here;
 *   - GOAL_Group_create, collective over the listed ranks only: the even
 *     ranks in reverse order while the odd ranks make a group of their own
 *     (different interleavings of creation and compile on different ranks),
 *     and the last rank alone while the others do not take part;
 *   - graphs bound to a group (GOAL_CreateGraphOn): point-to-point messages
 *     by group rank, and a collective appended to such a graph;
 *   - 3000 groups made and freed in a row (more than the 2047 contexts
 *     there are: freed groups give theirs back);
 *   - errors: a list with a rank twice, a rank outside the parent, a list
 *     without the caller, a send to a rank outside the group (GOAL_Compile
 *     names it), a schedule run after its group was freed, a freed group
 *     handle used again, the world group freed.
 */
// ranks: 1 2 3 4 6 9
// modes: 4
#include "helpers.h"

static int alg_list[] = {GOAL_ALG_AUTO, GOAL_ALG_LINEAR, GOAL_ALG_LINEAR_SYNC, GOAL_ALG_BINOMIAL, GOAL_ALG_RECURSIVE_DOUBLING,
                         GOAL_ALG_BRUCK, GOAL_ALG_RING, GOAL_ALG_PIPELINE, GOAL_ALG_RABENSEIFNER};
#define NALGS ((int)(sizeof alg_list / sizeof alg_list[0]))

/* The value rank w (a world rank) puts at element i of collective case c. */
static int32_t val(int c, int w, size_t i) { return (int32_t)(h_mix((uint64_t)c * 1000003u + (uint64_t)w * 7919u + i) % 100000); }

/* The world rank of each rank of g. */
static void world_ranks(GOAL_Group g, int *out)
{
    int n = GOAL_Group_size(g);
    int *in = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        in[i] = i;
    CHECK_OK(GOAL_Group_translate_ranks(g, n, in, GOAL_GroupWorld(), out));
    free(in);
}

/* One collective case on group g: alg `a` of collective `k`; returns 0 if
   the algorithm does not apply (the _init refused it), else runs the
   schedule twice and checks. Several groups may be in flight: the schedule
   is returned unrun through *pending when pending is non-NULL. */
struct pend {
    GOAL_Schedule s;
    int k, c, n, me, root;
    size_t cnt;
    int32_t *sb, *rb;
    int *wr;
    size_t *sc, *sd, *rc, *rd; /* v-collectives: counts and displacements (bytes; elements for reduce_scatter) */
};

/* v-collectives: elements rank r gives in case c (zeros among them), and
   alltoallv's elements from i to j. */
static size_t vc(int c, int r) { return (size_t)((c + 3 * r) % 4); }
static size_t vm(int c, int i, int j) { return (size_t)((c + i + 2 * j) % 3); }
/* Packed displacements (bytes) of counts e[0..n) elements, in reverse rank
   order with one element of gap before each block. */
static void rev_displs(const size_t *e, int n, size_t *d)
{
    size_t at = 0;
    for (int r = n - 1; r >= 0; r--)
        at += 4, d[r] = at, at += e[r] * 4;
}
/* Packed forward, no gaps (bytes). */
static size_t fwd_displ(int c, int i, int j)
{
    size_t at = 0;
    for (int k = 0; k < j; k++)
        at += vm(c, i, k) * 4;
    return at;
}

static int start_case(GOAL_Group g, int k, int a, int c, struct pend *p)
{
    int n = GOAL_Group_size(g), me = GOAL_Group_rank(g);
    size_t cnt = 5 + (size_t)(c % 7); /* elements per rank */
    memset(p, 0, sizeof *p);
    p->k = k, p->c = c, p->n = n, p->me = me, p->cnt = cnt, p->root = (c % n);
    p->wr = malloc(sizeof(int) * (size_t)n);
    world_ranks(g, p->wr);
    size_t room = (cnt + 8) * (size_t)n;
    p->sb = calloc(room, sizeof(int32_t));
    p->rb = calloc(room, sizeof(int32_t));
    int w = p->wr[me];
    for (size_t i = 0; i < room; i++)
        p->sb[i] = val(c, w, i);
    size_t *e = malloc(sizeof(size_t) * (size_t)n);
    p->sc = calloc((size_t)n, sizeof(size_t)), p->sd = calloc((size_t)n, sizeof(size_t));
    p->rc = calloc((size_t)n, sizeof(size_t)), p->rd = calloc((size_t)n, sizeof(size_t));
    for (int r = 0; r < n; r++)
        e[r] = vc(c, r), p->rc[r] = e[r] * 4;
    rev_displs(e, n, p->rd);
    memcpy(p->sc, p->rc, sizeof(size_t) * (size_t)n);
    memcpy(p->sd, p->rd, sizeof(size_t) * (size_t)n);
    if (k == 12)
        for (int r = 0; r < n; r++) {
            p->sc[r] = vm(c, me, r) * 4, p->sd[r] = fwd_displ(c, me, r);
            e[r] = vm(c, r, me);
            p->rc[r] = e[r] * 4;
        }
    if (k == 12)
        rev_displs(e, n, p->rd);
    if (k == 13)
        for (int r = 0; r < n; r++)
            p->rc[r] = vc(c, r);
    free(e);
    size_t b = cnt * sizeof(int32_t);
    GOAL_Schedule s = NULL;
    switch (k) {
    case 0: s = GOAL_Barrier_init_on(g, alg_list[a]); break;
    case 1:
        memcpy(p->rb, p->sb, b);
        s = GOAL_Bcast_init_on(g, p->rb, b, p->root, alg_list[a]);
        break;
    case 2: s = GOAL_Gather_init_on(g, p->sb, b, p->rb, p->root, alg_list[a]); break;
    case 3: s = GOAL_Scatter_init_on(g, p->sb, b, p->rb, p->root, alg_list[a]); break;
    case 4: s = GOAL_Allgather_init_on(g, p->sb, b, p->rb, alg_list[a]); break;
    case 5: s = GOAL_Alltoall_init_on(g, p->sb, b, p->rb, alg_list[a]); break;
    case 6: s = GOAL_Reduce_init_on(g, p->sb, p->rb, (int)cnt, GOAL_SINT, 32, GOAL_ADD, p->root, alg_list[a]); break;
    case 7: s = GOAL_Allreduce_init_on(g, p->sb, p->rb, (int)cnt, GOAL_SINT, 32, GOAL_ADD, alg_list[a]); break;
    case 8: s = GOAL_Reduce_scatter_block_init_on(g, p->sb, p->rb, (int)cnt, GOAL_SINT, 32, GOAL_ADD, alg_list[a]); break;
    case 9: s = GOAL_Gatherv_init_on(g, p->sb, p->rc[me], p->rb, p->rc, p->rd, p->root, alg_list[a]); break;
    case 10: s = GOAL_Scatterv_init_on(g, p->sb, p->sc, p->sd, p->rb, p->rc[me], p->root, alg_list[a]); break;
    case 11: s = GOAL_Allgatherv_init_on(g, p->sb, p->rc[me], p->rb, p->rc, p->rd, alg_list[a]); break;
    case 12: s = GOAL_Alltoallv_init_on(g, p->sb, p->sc, p->sd, p->rb, p->rc, p->rd, alg_list[a]); break;
    case 13: s = GOAL_Reduce_scatter_init_on(g, p->sb, p->rb, p->rc, GOAL_SINT, 32, GOAL_ADD, alg_list[a]); break;
    }
    if (!s) {
        const char *e = GOAL_LastError();
        CHECKM(a != 0, "AUTO refused collective %d on a group of %d: %s", k, n, e);
        CHECKM(strstr(e, "algorithm") || strstr(e, "does not apply") || strstr(e, "not"), "collective %d alg %d: %s", k, alg_list[a], e);
        free(p->sb), free(p->rb), free(p->wr), free(p->sc), free(p->sd), free(p->rc), free(p->rd);
        return 0;
    }
    p->s = s;
    return 1;
}

static void check_case(struct pend *p)
{
    int n = p->n, me = p->me, c = p->c;
    size_t cnt = p->cnt;
    int32_t *rb = p->rb;
    switch (p->k) {
    case 1:
        for (size_t i = 0; i < cnt; i++)
            CHECKM(rb[i] == val(c, p->wr[p->root], i), "bcast case %d elem %zu", c, i);
        break;
    case 2:
        if (me == p->root)
            for (int r = 0; r < n; r++)
                for (size_t i = 0; i < cnt; i++)
                    CHECKM(rb[(size_t)r * cnt + i] == val(c, p->wr[r], i), "gather case %d from %d", c, r);
        break;
    case 3:
        for (size_t i = 0; i < cnt; i++)
            CHECKM(rb[i] == val(c, p->wr[p->root], (size_t)me * cnt + i), "scatter case %d elem %zu", c, i);
        break;
    case 4:
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < cnt; i++)
                CHECKM(rb[(size_t)r * cnt + i] == val(c, p->wr[r], i), "allgather case %d from %d", c, r);
        break;
    case 5:
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < cnt; i++)
                CHECKM(rb[(size_t)r * cnt + i] == val(c, p->wr[r], (size_t)me * cnt + i), "alltoall case %d from %d", c, r);
        break;
    case 6:
    case 7:
        if (p->k == 7 || me == p->root)
            for (size_t i = 0; i < cnt; i++) {
                int32_t sum = 0;
                for (int r = 0; r < n; r++)
                    sum += val(c, p->wr[r], i);
                CHECKM(rb[i] == sum, "reduce/allreduce case %d elem %zu: %d != %d", c, i, rb[i], sum);
            }
        break;
    case 8:
        for (size_t i = 0; i < cnt; i++) {
            int32_t sum = 0;
            for (int r = 0; r < n; r++)
                sum += val(c, p->wr[r], (size_t)me * cnt + i);
            CHECKM(rb[i] == sum, "reduce_scatter_block case %d elem %zu", c, i);
        }
        break;
    case 9:
    case 11:
        if (p->k == 11 || me == p->root)
            for (int r = 0; r < n; r++)
                for (size_t i = 0; i < vc(c, r); i++)
                    CHECKM(rb[p->rd[r] / 4 + i] == val(c, p->wr[r], i), "gatherv/allgatherv case %d from %d elem %zu", c, r, i);
        break;
    case 10:
        for (size_t i = 0; i < vc(c, me); i++)
            CHECKM(rb[i] == val(c, p->wr[p->root], p->sd[me] / 4 + i), "scatterv case %d elem %zu", c, i);
        break;
    case 12:
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < vm(c, r, me); i++)
                CHECKM(rb[p->rd[r] / 4 + i] == val(c, p->wr[r], fwd_displ(c, r, me) / 4 + i), "alltoallv case %d from %d elem %zu", c, r, i);
        break;
    case 13: {
        size_t off = 0;
        for (int r = 0; r < me; r++)
            off += vc(c, r);
        for (size_t i = 0; i < vc(c, me); i++) {
            int32_t sum = 0;
            for (int r = 0; r < n; r++)
                sum += val(c, p->wr[r], off + i);
            CHECKM(rb[i] == sum, "reduce_scatter case %d elem %zu", c, i);
        }
        break;
    }
    }
}

static void end_case(struct pend *p)
{
    CHECK_OK(GOAL_FreeSchedule(p->s));
    free(p->sb), free(p->rb), free(p->wr), free(p->sc), free(p->sd), free(p->rc), free(p->rd);
}

/* Every collective x algorithm on two groups at once (g1's and g2's
   schedules in flight together). Both groups hold this rank. Every member
   of a group must take the same decisions: cases depend only on k, a and
   the group's size. */
static int cases_run;

static void every_collective(GOAL_Group g1, GOAL_Group g2, int base)
{
    for (int k = 0; k < 14; k++)
        for (int a = 0; a < NALGS; a++) {
            struct pend p1, p2;
            int c = base + k * 16 + a;
            int ok1 = start_case(g1, k, a, c, &p1);
            int ok2 = g2 ? start_case(g2, k, a, c + 7, &p2) : 0;
            GOAL_Handle h1 = ok1 ? GOAL_Run(p1.s) : NULL, h2 = ok2 ? GOAL_Run(p2.s) : NULL;
            if (ok1)
                CHECKM(h1, "run: %s", GOAL_LastError());
            if (ok2)
                CHECKM(h2, "run: %s", GOAL_LastError());
            if (ok2)
                CHECK_OK(GOAL_Wait(h2));
            if (ok1)
                CHECK_OK(GOAL_Wait(h1));
            cases_run += ok1 + ok2;
            if (ok1)
                check_case(&p1), end_case(&p1);
            if (ok2)
                check_case(&p2), end_case(&p2);
        }
}

static void check_world(void)
{
    GOAL_Group w = GOAL_GroupWorld();
    CHECK(w != NULL);
    CHECK_EQ(GOAL_Group_size(w), h_size);
    CHECK_EQ(GOAL_Group_rank(w), h_rank);
    CHECK_ERR(GOAL_Group_free(&w));
    CHECKM(strstr(GOAL_LastError(), "world"), "%s", GOAL_LastError());
    CHECK_EQ(GOAL_IsExtensionAvailable(GOAL_EXT_GROUPS), 1);
    CHECK_EQ(GOAL_IsExtensionAvailable(GOAL_EXT_VCOLLECTIVES), 1);
    /* the large-count form on a group: an allreduce of 64-bit integers */
    int64_t in[3] = {h_rank, 2 * h_rank, -h_rank}, out[3] = {0};
    GOAL_Schedule s = GOAL_Allreduce_init_c_on(w, in, out, (size_t)3, GOAL_SINT, 64, GOAL_ADD, GOAL_ALG_AUTO);
    CHECKM(s != NULL, "%s", GOAL_LastError());
    h_run(s);
    int64_t sum = (int64_t)h_size * (h_size - 1) / 2;
    CHECK_EQ(out[0], sum);
    CHECK_EQ(out[1], 2 * sum);
    CHECK_EQ(out[2], -sum);
    h_free_schedule(s);
}

static void check_split_order(void)
{
    /* parity, keys reversing the order; rank 0 asks for no group */
    GOAL_Group g = (GOAL_Group)1;
    int color = h_rank == 0 && h_size > 1 ? GOAL_UNDEFINED : h_rank % 2;
    CHECK_OK(GOAL_Group_split(GOAL_GroupWorld(), color, -h_rank, &g));
    if (color == GOAL_UNDEFINED) {
        CHECK(g == NULL);
        return;
    }
    CHECK(g != NULL);
    /* members: ranks of my parity (rank 0 excluded), highest first */
    int mem[64], n = 0;
    for (int r = h_size - 1; r >= 0; r--)
        if (r % 2 == h_rank % 2 && !(r == 0 && h_size > 1))
            mem[n++] = r;
    CHECK_EQ(GOAL_Group_size(g), n);
    int wr[64];
    world_ranks(g, wr);
    for (int i = 0; i < n; i++)
        CHECKM(wr[i] == mem[i], "rank %d of the split is world rank %d, expected %d", i, wr[i], mem[i]);
    CHECK_EQ(wr[GOAL_Group_rank(g)], h_rank);
    /* translation the other way, and a rank the group does not hold */
    int all[64], back[64];
    for (int r = 0; r < h_size; r++)
        all[r] = r;
    CHECK_OK(GOAL_Group_translate_ranks(GOAL_GroupWorld(), h_size, all, g, back));
    for (int r = 0; r < h_size; r++) {
        int want = GOAL_UNDEFINED;
        for (int i = 0; i < n; i++)
            if (mem[i] == r)
                want = i;
        CHECK_EQ(back[r], want);
    }
    int bad = n;
    CHECK_EQ(GOAL_Group_translate_ranks(g, 1, &bad, GOAL_GroupWorld(), back), GOAL_ERR_RANK);
    /* a ring by group rank on a graph bound to the group */
    GOAL_Graph gr = GOAL_CreateGraphOn(g);
    CHECK(gr != NULL);
    int me = GOAL_Group_rank(g);
    int32_t mine = 1000 + h_rank, got = -1;
    V(GOAL_Send(gr, &mine, 4, (me + 1) % n, 3, GOAL_USERSPACE));
    V(GOAL_Recv(gr, &got, 4, (me + n - 1) % n, 3, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(gr);
    h_run(s);
    CHECK_EQ(got, 1000 + mem[(me + n - 1) % n]);
    /* errors: a send outside the group */
    gr = GOAL_CreateGraphOn(g);
    V(GOAL_Send(gr, &mine, 4, n, 0, GOAL_USERSPACE));
    CHECK(GOAL_Compile(gr) == NULL);
    CHECKM(strstr(GOAL_LastError(), "outside"), "%s", GOAL_LastError());
    CHECK_OK(GOAL_FreeGraph(gr));
    /* a schedule run after its group was freed; the freed handle */
    GOAL_Group kept = g;
    CHECK_OK(GOAL_Group_free(&g));
    CHECK(g == NULL);
    CHECK(GOAL_Run(s) == NULL);
    CHECKM(strstr(GOAL_LastError(), "freed"), "%s", GOAL_LastError());
    CHECK_ERR(GOAL_Group_size(kept));
    CHECK_ERR(GOAL_Group_free(&kept));
    CHECK(GOAL_CreateGraphOn(kept) == NULL);
    h_free_schedule(s);
}

/* A grid of rows x cols (cols = the largest divisor of size up to its
   square root, so a prime size gives one row): rows and columns at once. */
static void check_grid(void)
{
    int cols = 1;
    for (int c = 1; c * c <= h_size; c++)
        if (h_size % c == 0)
            cols = c;
    GOAL_Group row, col;
    CHECK_OK(GOAL_Group_split(GOAL_GroupWorld(), h_rank / cols, h_rank, &row));
    CHECK_OK(GOAL_Group_split(GOAL_GroupWorld(), h_rank % cols, h_rank, &col));
    CHECK_EQ(GOAL_Group_size(row), cols);
    CHECK_EQ(GOAL_Group_size(col), h_size / cols);
    every_collective(row, col, 100000);
    /* AUTO and at least one more algorithm of each collective, on each
       group of more than one rank */
    CHECKM(cases_run >= 2 * 14 + (cols > 1) * 14 + (h_size / cols > 1) * 14, "only %d collective cases ran", cases_run);
    CHECK_OK(GOAL_Group_free(&row));
    CHECK_OK(GOAL_Group_free(&col));
}

static void check_create(void)
{
    /* evens in reverse order; odds in order, made in the other order of calls */
    int ev[64], od[64], ne = 0, no = 0;
    for (int r = h_size - 1; r >= 0; r -= 1)
        if (r % 2 == 0)
            ev[ne++] = r;
    for (int r = 1; r < h_size; r += 2)
        od[no++] = r;
    GOAL_Group g;
    if (h_rank % 2 == 0) {
        CHECK_OK(GOAL_Group_create(GOAL_GroupWorld(), ev, ne, 5, &g));
        CHECK_EQ(GOAL_Group_size(g), ne);
        int at = -1;
        for (int i = 0; i < ne; i++)
            if (ev[i] == h_rank)
                at = i;
        CHECK_EQ(GOAL_Group_rank(g), at);
    } else {
        CHECK_OK(GOAL_Group_create(GOAL_GroupWorld(), od, no, 5, &g));
        CHECK_EQ(GOAL_Group_rank(g), h_rank / 2);
    }
    every_collective(g, NULL, 200000);
    CHECK_OK(GOAL_Group_free(&g));
    /* the last rank alone; nobody else takes part */
    if (h_rank == h_size - 1) {
        int me = h_rank;
        CHECK_OK(GOAL_Group_create(GOAL_GroupWorld(), &me, 1, 0, &g));
        CHECK_EQ(GOAL_Group_size(g), 1);
        every_collective(g, NULL, 300000);
        CHECK_OK(GOAL_Group_free(&g));
    }
    /* refusals, named */
    int dup[2] = {h_rank, h_rank};
    CHECK_EQ(GOAL_Group_create(GOAL_GroupWorld(), dup, 2, 0, &g), GOAL_ERR_INVALID_ARGUMENT);
    CHECKM(strstr(GOAL_LastError(), "twice"), "%s", GOAL_LastError());
    int out[2] = {h_rank, h_size};
    CHECK_EQ(GOAL_Group_create(GOAL_GroupWorld(), out, 2, 0, &g), GOAL_ERR_RANK);
    CHECKM(strstr(GOAL_LastError(), "outside"), "%s", GOAL_LastError());
    if (h_size > 1) {
        int other = (h_rank + 1) % h_size;
        CHECK_EQ(GOAL_Group_create(GOAL_GroupWorld(), &other, 1, 0, &g), GOAL_ERR_RANK);
        CHECKM(strstr(GOAL_LastError(), "not in the list"), "%s", GOAL_LastError());
    }
}

static void check_many(void)
{
    for (int i = 0; i < 3000; i++) {
        GOAL_Group g;
        CHECK_OK(GOAL_Group_split(GOAL_GroupWorld(), i % 2 == 0 ? 0 : h_rank % 2, h_rank, &g));
        CHECK_OK(GOAL_Group_free(&g));
    }
}

int main(int argc, char **argv)
{
    h_init(argc, argv);
    check_world();
    check_split_order();
    check_grid();
    check_create();
    check_many();
    return h_finish();
}
