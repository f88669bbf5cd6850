/* oracle_cases.h - the cases of t_oracle.c: each collective through the
 * layer (a = MPI_Ixxx + MPI_Wait) and through the MPI library (b = PMPI_Xxx),
 * from the same inputs into buffers that start alike (0xAB), compared. */

struct ctx {
    const char *comm;
    MPI_Comm c;
    const struct type *t;
    int n, r, p;
    size_t es, len; /* element extent, bytes n elements span (holes included) */
    char what[160];
};

static void describe(struct ctx *x, const char *coll, int op, int inplace, int root)
{
    snprintf(x->what, sizeof x->what, "%s on %s, %d x %s, op %d, %s, root %d", coll, x->comm, x->n, x->t->name, op,
             inplace ? "in place" : "not in place", root);
    if (getenv("ORACLE_TRACE"))
        printf("rank %d: %s\n", wrank, x->what), fflush(stdout);
}

/* a and b of `cap` bytes, 0xAB, and the input `in` of `inlen` bytes. */
#define BUFS(cap, inlen, salt)                                                                                         \
    unsigned char *a = alloc(cap), *b = alloc(cap), *in = alloc(inlen);                                                \
    memset(a, 0xAB, (cap) + 64);                                                                                       \
    memset(b, 0xAB, (cap) + 64);                                                                                       \
    fill(in, inlen, x->t, x->r, salt)
#define DONE free(a), free(b), free(in)

static int ops_of(const struct type *t, MPI_Op user, MPI_Op *ops)
{
    int k = 0;
    if (t->is_user) {
        ops[k++] = user;
        return k;
    }
    int ni, na, nd, comb;
    MPI_Type_get_envelope(t->dt, &ni, &na, &nd, &comb);
    if (comb != MPI_COMBINER_NAMED)
        return 0; /* both MPIs refuse built-in operations on derived types */
    ops[k++] = MPI_SUM, ops[k++] = MPI_MIN, ops[k++] = MPI_MAX;
    if (!t->is_float && t->dt != MPI_UNSIGNED_CHAR)
        ops[k++] = MPI_BXOR;
    if (t->dt == MPI_INT || t->is_float)
        ops[k++] = MPI_PROD;
    return k;
}

static long reductions(struct ctx *x, MPI_Op op, int oi)
{
    long done = 0;
    MPI_Request q;
    size_t len = x->len, all = len * (size_t)x->p;
    for (int ip = 0; ip < 2; ip++) {
        describe(x, "allreduce", oi, ip, -1);
        {
            BUFS(len, len, 1);
            if (ip)
                memcpy(a, in, len), memcpy(b, in, len);
            MPI_Iallreduce(ip ? MPI_IN_PLACE : in, a, x->n, x->t->dt, op, x->c, &q);
            wait1(&q);
            PMPI_Allreduce(ip ? MPI_IN_PLACE : in, b, x->n, x->t->dt, op, x->c);
            same(x->what, a, b, len, len + 64);
            DONE;
        }
        for (int root = 0; root < x->p; root += x->p > 1 ? x->p - 1 : 1) {
            describe(x, "reduce", oi, ip, root);
            BUFS(len, len, 2);
            int here = ip && x->r == root;
            if (here)
                memcpy(a, in, len), memcpy(b, in, len);
            MPI_Ireduce(here ? MPI_IN_PLACE : in, a, x->n, x->t->dt, op, root, x->c, &q);
            wait1(&q);
            /* MPICH 4.0 crashes in its MPI_Reduce with MPI_IN_PLACE at a root
             * other than 0 (4000 bytes, 2 ranks): its answer comes from the
             * same input given as a separate buffer. */
            PMPI_Reduce(in, b, x->n, x->t->dt, op, root, x->c);
            if (x->r == root)
                same(x->what, a, b, len, len + 64);
            DONE;
        }
        describe(x, "reduce_scatter_block", oi, ip, -1);
        {
            BUFS(ip ? all : len, all, 3);
            if (ip)
                memcpy(a, in, all), memcpy(b, in, all);
            MPI_Ireduce_scatter_block(ip ? MPI_IN_PLACE : in, a, x->n, x->t->dt, op, x->c, &q);
            wait1(&q);
            PMPI_Reduce_scatter_block(ip ? MPI_IN_PLACE : in, b, x->n, x->t->dt, op, x->c);
            same(x->what, a, b, len, len); /* in place: the rest of rbuf is undefined */
            DONE;
        }
        describe(x, "reduce_scatter", oi, ip, -1);
        {
            int *rc = malloc(sizeof(int) * (size_t)x->p), total = 0;
            for (int i = 0; i < x->p; i++)
                total += rc[i] = (x->n + i) / (i + 1);
            size_t tb = (size_t)total * x->es, mine = (size_t)rc[x->r] * x->es;
            BUFS(ip ? tb : mine, tb, 4);
            if (ip)
                memcpy(a, in, tb), memcpy(b, in, tb);
            MPI_Ireduce_scatter(ip ? MPI_IN_PLACE : in, a, rc, x->t->dt, op, x->c, &q);
            wait1(&q);
            PMPI_Reduce_scatter(ip ? MPI_IN_PLACE : in, b, rc, x->t->dt, op, x->c);
            same(x->what, a, b, mine, ip ? mine : mine + 64);
            DONE;
            free(rc);
        }
        done += 5;
    }
    return done;
}

static long movement(struct ctx *x)
{
    MPI_Request q;
    size_t len = x->len, all = len * (size_t)x->p;
    MPI_Datatype dt = x->t->dt;
    int n = x->n, p = x->p, r = x->r;
    for (int root = 0; root < p; root += p > 1 ? p - 1 : 1) {
        describe(x, "bcast", 0, 0, root);
        BUFS(len, len, 5);
        if (r == root)
            memcpy(a, in, len), memcpy(b, in, len);
        MPI_Ibcast(a, n, dt, root, x->c, &q);
        wait1(&q);
        PMPI_Bcast(b, n, dt, root, x->c);
        same(x->what, a, b, len, len + 64);
        DONE;
    }
    for (int ip = 0; ip < 2; ip++) {
        describe(x, "allgather", 0, ip, -1);
        {
            BUFS(all, len, 6);
            if (ip)
                memcpy(a + r * len, in, len), memcpy(b + r * len, in, len);
            MPI_Iallgather(ip ? MPI_IN_PLACE : in, n, dt, a, n, dt, x->c, &q);
            wait1(&q);
            PMPI_Allgather(ip ? MPI_IN_PLACE : in, n, dt, b, n, dt, x->c);
            same(x->what, a, b, all, all + 64);
            DONE;
        }
        describe(x, "alltoall", 0, ip, -1);
        {
            BUFS(all, all, 7);
            if (ip)
                memcpy(a, in, all), memcpy(b, in, all);
            MPI_Ialltoall(ip ? MPI_IN_PLACE : in, n, dt, a, n, dt, x->c, &q);
            wait1(&q);
            PMPI_Alltoall(ip ? MPI_IN_PLACE : in, n, dt, b, n, dt, x->c);
            same(x->what, a, b, all, all + 64);
            DONE;
        }
        for (int root = 0; root < p; root += p > 1 ? p - 1 : 1) {
            int here = ip && r == root;
            describe(x, "gather", 0, ip, root);
            {
                BUFS(all, len, 8);
                if (here)
                    memcpy(a + r * len, in, len), memcpy(b + r * len, in, len);
                MPI_Igather(here ? MPI_IN_PLACE : in, n, dt, a, n, dt, root, x->c, &q);
                wait1(&q);
                PMPI_Gather(here ? MPI_IN_PLACE : in, n, dt, b, n, dt, root, x->c);
                if (r == root)
                    same(x->what, a, b, all, all + 64);
                DONE;
            }
            describe(x, "scatter", 0, ip, root);
            {
                BUFS(len, all, 9);
                MPI_Iscatter(in, n, dt, here ? MPI_IN_PLACE : a, n, dt, root, x->c, &q);
                wait1(&q);
                PMPI_Scatter(in, n, dt, here ? MPI_IN_PLACE : b, n, dt, root, x->c);
                same(x->what, a, b, len, len + 64);
                DONE;
            }
            /* v-forms: rank i's block has (n + i) % (n + 2) elements, laid out
             * in reverse rank order with a gap of one element. */
            int *cnt = malloc(sizeof(int) * (size_t)p * 2), *dsp = cnt + p, at = 0;
            for (int i = p - 1; i >= 0; i--) {
                cnt[i] = (n + i) % (n + 2);
                dsp[i] = at;
                at += cnt[i] + 1;
            }
            size_t vall = (size_t)at * x->es, mine = (size_t)cnt[r] * x->es, off = (size_t)dsp[r] * x->es;
            describe(x, "gatherv", 0, ip, root);
            {
                BUFS(vall, mine, 10);
                if (here)
                    memcpy(a + off, in, mine), memcpy(b + off, in, mine);
                MPI_Igatherv(here ? MPI_IN_PLACE : in, cnt[r], dt, a, cnt, dsp, dt, root, x->c, &q);
                wait1(&q);
                PMPI_Gatherv(here ? MPI_IN_PLACE : in, cnt[r], dt, b, cnt, dsp, dt, root, x->c);
                if (r == root)
                    same(x->what, a, b, vall, vall + 64);
                DONE;
            }
            describe(x, "scatterv", 0, ip, root);
            {
                BUFS(mine, vall, 11);
                MPI_Iscatterv(in, cnt, dsp, dt, here ? MPI_IN_PLACE : a, cnt[r], dt, root, x->c, &q);
                wait1(&q);
                PMPI_Scatterv(in, cnt, dsp, dt, here ? MPI_IN_PLACE : b, cnt[r], dt, root, x->c);
                same(x->what, a, b, mine, mine + 64);
                DONE;
            }
            if (root == 0) {
                describe(x, "allgatherv", 0, ip, -1);
                BUFS(vall, mine, 12);
                if (ip)
                    memcpy(a + off, in, mine), memcpy(b + off, in, mine);
                MPI_Iallgatherv(ip ? MPI_IN_PLACE : in, cnt[r], dt, a, cnt, dsp, dt, x->c, &q);
                wait1(&q);
                PMPI_Allgatherv(ip ? MPI_IN_PLACE : in, cnt[r], dt, b, cnt, dsp, dt, x->c);
                same(x->what, a, b, vall, vall + 64);
                DONE;
            }
            free(cnt);
        }
        describe(x, "alltoallv", 0, ip, -1);
        {
            /* Rank r sends (r + j + n) % 4 elements to j: in place needs
             * symmetric counts, so then (r + j) counts both ways. */
            int *sc = malloc(sizeof(int) * (size_t)p * 4), *sd = sc + p, *rc = sd + p, *rd = rc + p, st = 0, rt = 0;
            for (int j = 0; j < p; j++) {
                sc[j] = ip ? (r + j + n) % 4 : (r + 2 * j + n) % 4;
                rc[j] = ip ? (j + r + n) % 4 : (j + 2 * r + n) % 4;
            }
            for (int j = p - 1; j >= 0; j--)
                sd[j] = st, st += sc[j] + 1;
            for (int j = 0; j < p; j++)
                rd[j] = rt, rt += rc[j] + 2;
            size_t rall = (size_t)rt * x->es, sall = (size_t)st * x->es;
            BUFS(rall, sall, 13);
            if (ip)
                memcpy(a, in, rall < sall ? rall : sall), memcpy(b, in, rall < sall ? rall : sall);
            MPI_Ialltoallv(ip ? MPI_IN_PLACE : in, sc, sd, dt, a, rc, rd, dt, x->c, &q);
            wait1(&q);
            PMPI_Alltoallv(ip ? MPI_IN_PLACE : in, sc, sd, dt, b, rc, rd, dt, x->c);
            same(x->what, a, b, rall, rall + 64);
            DONE;
            free(sc);
        }
    }
    return 12;
}

/* Ranks whose datatypes differ with the same type signature, as MPI
 * allows: `x->t` (ints with holes) on some ranks, MPI_INT on the others. */
static long mixed_types(struct ctx *x)
{
    MPI_Request q;
    int n = x->n, p = x->p, r = x->r, root = p - 1;
    size_t span = x->len, dense = 4 * (size_t)n;
    MPI_Datatype holes = x->t->dt, mine = r == root ? holes : MPI_INT;
    size_t mylen = r == root ? span : dense;
    describe(x, "bcast, root's type with holes", 0, 0, root);
    {
        BUFS(mylen, mylen, 14);
        if (r == root)
            memcpy(a, in, mylen), memcpy(b, in, mylen);
        MPI_Ibcast(a, n, mine, root, x->c, &q);
        wait1(&q);
        PMPI_Bcast(b, n, mine, root, x->c);
        same(x->what, a, b, mylen, mylen + 64);
        DONE;
    }
    describe(x, "gather into holes at the root", 0, 0, root);
    {
        BUFS(span * p, dense, 15);
        MPI_Igather(in, n, MPI_INT, a, n, holes, root, x->c, &q);
        wait1(&q);
        PMPI_Gather(in, n, MPI_INT, b, n, holes, root, x->c);
        if (r == root)
            same(x->what, a, b, span * p, span * p + 64);
        DONE;
    }
    describe(x, "scatter from holes at the root", 0, 0, root);
    {
        BUFS(dense, span * p, 16);
        MPI_Iscatter(in, n, holes, a, n, MPI_INT, root, x->c, &q);
        wait1(&q);
        PMPI_Scatter(in, n, holes, b, n, MPI_INT, root, x->c);
        same(x->what, a, b, dense, dense + 64);
        DONE;
    }
    describe(x, "allgather, odd ranks' types with holes", 0, 0, -1);
    {
        MPI_Datatype t = r % 2 ? holes : MPI_INT;
        size_t l = r % 2 ? span : dense;
        BUFS(l * p, dense, 17);
        MPI_Iallgather(in, n, MPI_INT, a, n, t, x->c, &q);
        wait1(&q);
        PMPI_Allgather(in, n, MPI_INT, b, n, t, x->c);
        same(x->what, a, b, l * p, l * p + 64);
        DONE;
    }
    return 4;
}

static long run_all(const char *comm, MPI_Comm c, const struct type *t, int n, MPI_Op user)
{
    MPI_Aint lb, ext;
    MPI_Type_get_extent(t->dt, &lb, &ext);
    struct ctx x = { comm, c, t, n, 0, 0, (size_t)ext, 0, "" };
    MPI_Comm_rank(c, &x.r);
    MPI_Comm_size(c, &x.p);
    x.len = x.es * (size_t)n;
    MPI_Request q;
    MPI_Ibarrier(c, &q);
    wait1(&q);
    MPI_Op ops[8];
    long done = 1;
    int k = ops_of(t, user, ops);
    for (int i = 0; i < k; i++)
        done += reductions(&x, ops[i], i);
    if (t->dt != MPI_INT && tsize(t->dt) == 4)
        done += mixed_types(&x);
    return done + movement(&x);
}
