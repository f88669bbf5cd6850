/* oneCCL behind the C calls of ccl_shim.h (its head says why and how). Built with mpicxx
 * against the oneCCL that scripts/install-oneccl.sh installs. */
#include "ccl_shim.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "oneapi/ccl.hpp"

/* The numbers of coll_common.h (a C header, not included here). */
enum { BARRIER, BCAST, GATHER, SCATTER, ALLGATHER, ALLTOALL, REDUCE, ALLREDUCE, RSB, ALLGATHERV, ALLTOALLV };

static std::unique_ptr<ccl::communicator> comm;
static std::vector<size_t> counts;

extern "C" int ccl_shim_init(int rank, int nranks) {
    try {
        ccl::init();
        ccl::shared_ptr_class<ccl::kvs> kvs;
        ccl::kvs::address_type addr;
        if (rank == 0) {
            kvs = ccl::create_main_kvs();
            addr = kvs->get_address();
            MPI_Bcast(addr.data(), (int)addr.size(), MPI_BYTE, 0, MPI_COMM_WORLD);
        } else {
            MPI_Bcast(addr.data(), (int)addr.size(), MPI_BYTE, 0, MPI_COMM_WORLD);
            kvs = ccl::create_kvs(addr);
        }
        comm.reset(new ccl::communicator(ccl::create_communicator(nranks, rank, kvs)));
        counts.assign((size_t)nranks, 0);
        return 0;
    } catch (const std::exception &e) {
        fprintf(stderr, "ccl_shim (rank %d): cannot make a oneCCL communicator: %s\n", rank, e.what());
        return 1;
    }
}

extern "C" int ccl_shim_has(int c) { return c != GATHER && c != SCATTER; }

extern "C" void ccl_shim_run(int c, const char *sbuf, char *rbuf, size_t n) {
    ccl::communicator &w = *comm;
    const size_t cnt = n / 8;
    auto i8 = ccl::datatype::int8;
    auto f64 = ccl::datatype::float64;
    auto sum = ccl::reduction::sum;
    for (auto &k : counts) k = n;
    void *s = const_cast<char *>(sbuf);
    switch (c) {
    case BARRIER: ccl::barrier(w).wait(); break;
    /* bcast is in place: the harness gives root 0's data in sbuf on every rank */
    case BCAST: ccl::broadcast(s, n, i8, 0, w).wait(); break;
    case ALLGATHER: ccl::allgather(sbuf, rbuf, n, i8, w).wait(); break;
    case ALLTOALL: ccl::alltoall(sbuf, rbuf, n, i8, w).wait(); break;
    case REDUCE: ccl::reduce(sbuf, rbuf, cnt, f64, sum, 0, w).wait(); break;
    case ALLREDUCE: ccl::allreduce(sbuf, rbuf, cnt, f64, sum, w).wait(); break;
    case RSB: ccl::reduce_scatter(sbuf, rbuf, cnt, f64, sum, w).wait(); break;
    case ALLGATHERV: ccl::allgatherv(sbuf, n, rbuf, counts, i8, w).wait(); break;
    case ALLTOALLV: ccl::alltoallv(sbuf, counts, rbuf, counts, i8, w).wait(); break;
    default: fprintf(stderr, "ccl_shim: collective %d has no oneCCL call\n", c); abort();
    }
}

extern "C" void *ccl_shim_start(int kind, void *sbuf, void *rbuf, size_t bytes) {
    ccl::communicator &w = *comm;
    switch (kind) {
    case 0: return new ccl::event(ccl::barrier(w));
    case 1: return new ccl::event(ccl::broadcast(sbuf, bytes, ccl::datatype::int8, 0, w));
    default:
        return new ccl::event(ccl::allreduce(sbuf, rbuf, bytes / 4, ccl::datatype::float32, ccl::reduction::sum, w));
    }
}

extern "C" int ccl_shim_test(void *ev) { return static_cast<ccl::event *>(ev)->test() ? 1 : 0; }

extern "C" void ccl_shim_wait(void *ev) {
    auto *e = static_cast<ccl::event *>(ev);
    e->wait();
    delete e;
}

extern "C" void ccl_shim_version(char *out, size_t cap) {
    auto v = ccl::get_library_version();
    const char *transport = getenv("CCL_ATL_TRANSPORT");
    const char *workers = getenv("CCL_WORKER_COUNT");
    snprintf(out, cap, "oneCCL %s, transport %s, %s worker thread(s) per rank", v.full,
             transport ? transport : "ofi (default)", workers ? workers : "1");
}

extern "C" void ccl_shim_fini(void) { comm.reset(); }
