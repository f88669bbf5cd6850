/* goal.h: the C API of goal, a communication runtime for GOAL dependency graphs.
 *
 * Generated from crates/goal-ffi/src/lib.rs by cbindgen; do not edit.
 * The contract and what goal adds: docs/api.md in the goal repository.
 * Build: cc prog.c $(pkg-config --cflags --libs goal); launch: goalrun -n N ./prog
 */

#ifndef GOAL_H
#define GOAL_H

#include <stddef.h>
#include <stdint.h>

/* Run-time buffer i as a memory type (its offset cast to a pointer, as for
 * GOAL_SCRATCHPAD), and as a whole buffer where a collective takes one. */
#define GOAL_RUNBUF(i) (GOAL_RUNBUF0 + (i))
#define GOAL_BUF_AT_RUN(i) ((void *)((uintptr_t)((i) + 1) << 56))


/*
 Success; every error code is negative.
 */
#define GOAL_SUCCESS 0

/*
 Receive from any source (extension).
 */
#define GOAL_ANY_SOURCE (-1)

/*
 Receive with any tag (extension).
 */
#define GOAL_ANY_TAG (-1)

/*
 goal is not initialized, or already finalized.
 */
#define GOAL_ERR_NOT_INITIALIZED (-1)

/*
 GOAL_Init was called twice.
 */
#define GOAL_ERR_ALREADY_INITIALIZED (-2)

/*
 An argument is invalid (NULL, out of range, a bad vertex).
 */
#define GOAL_ERR_INVALID_ARGUMENT (-3)

/*
 The graph has a dependency cycle.
 */
#define GOAL_ERR_CYCLE (-4)

/*
 A rank is outside the group.
 */
#define GOAL_ERR_RANK (-5)

/*
 A scratchpad range reaches past the scratchpad.
 */
#define GOAL_ERR_SCRATCHPAD (-6)

/*
 An operator, data type, width or memory type that does not exist.
 */
#define GOAL_ERR_BAD_OP (-7)

/*
 A message was larger than its receive.
 */
#define GOAL_ERR_TRUNCATED (-8)

/*
 Integer division by zero in a local operation.
 */
#define GOAL_ERR_DIV_BY_ZERO (-9)

/*
 A peer died or left while an execution needed it.
 */
#define GOAL_ERR_PEER_LOST (-10)

/*
 The schedule still has executions running.
 */
#define GOAL_ERR_BUSY (-11)

/*
 Out of memory.
 */
#define GOAL_ERR_NO_MEMORY (-12)

/*
 The operating system refused (shared memory, launch).
 */
#define GOAL_ERR_SYSTEM (-13)

/*
 The requested algorithm does not apply.
 */
#define GOAL_ERR_UNSUPPORTED (-14)

/*
 An internal error (a bug in goal); the message says where.
 */
#define GOAL_ERR_INTERNAL (-15)

/*
 The ranks' schedules do not pair up: a message came for an execution
 whose schedule has no receive from that rank with that tag (schedules
 compiled in a different order, or a collective called with a different
 root or size on some rank). The message names schedule, peer and tag.
 */
#define GOAL_ERR_MISMATCH (-16)

/*
 A peer's execution failed by an error of its own (a division by zero,
 a truncated receive, ...) before it sent a message this execution waits
 for, which will therefore never come. Reported about a second after the
 wait began; the message names the peer, schedule, execution and tag, and
 the peer's own error says why it failed.
 */
#define GOAL_ERR_PEER_FAILED (-17)

/*
 Extension id: `GOAL_ANY_SOURCE` / `GOAL_ANY_TAG` wildcards.
 */
#define GOAL_EXT_WILDCARDS 1

/*
 Extension id: `GOAL_Progress` and the `GOAL_PROGRESS` modes.
 */
#define GOAL_EXT_PROGRESS 2

/*
 Extension id: `GOAL_Alloc` / `GOAL_Free` shared memory.
 */
#define GOAL_EXT_ALLOC 3

/*
 Extension id: `GOAL_ErrorString` / `GOAL_LastError`.
 */
#define GOAL_EXT_ERRORS 4

/*
 Extension id: groups (`GOAL_Group_*`, `GOAL_CreateGraphOn`, `GOAL_Xxx_init_on`).
 */
#define GOAL_EXT_GROUPS 5

/*
 Extension id: collectives with per-rank counts (gatherv ... reduce_scatter).
 */
#define GOAL_EXT_VCOLLECTIVES 6

/*
 Extension id: 16-bit floats (`GOAL_FLOAT` width 16, `GOAL_BFLOAT`).
 */
#define GOAL_EXT_HALF 7

/*
 Extension id: user reductions (`GOAL_Op_create`, `GOAL_BYTES`).
 */
#define GOAL_EXT_USER_OPS 8

/*
 Extension id: buffers given at each run (`GOAL_RunWith`, `GOAL_RUNBUF`, `GOAL_BUF_AT_RUN`).
 */
#define GOAL_EXT_RUN_BUFFERS 9

/*
 Extension id: `size_t` counts (`GOAL_Send_c` ...), messages up to 4 GiB - 1.
 */
#define GOAL_EXT_LARGE_COUNTS 10

/*
 Extension id: every application thread may call goal at once.
 */
#define GOAL_EXT_THREADS 11

/*
 First tag collectives use; user tags below it never mix with theirs.
 */
#define GOAL_COLL_TAG_BASE (1 << 30)

/*
 A colour that asks for no group in `GOAL_Group_split`, and the rank
 `GOAL_Group_translate_ranks` gives for a rank not in the other group.
 */
#define GOAL_UNDEFINED (-32766)

/*
 Number of run-time buffers a schedule may have (`GOAL_RUNBUF(0)` ..
 `GOAL_RUNBUF(15)`).
 */
#define GOAL_RUNBUF_SLOTS 16

/*
 A graph under construction (opaque).
 */
typedef struct goal_graph goal_graph;

/*
 A group of ranks (extension; opaque).
 */
typedef struct goal_group goal_group;

/*
 One execution of a schedule (opaque: a `goal_rt::Handle` as a pointer).
 */
typedef struct goal_handle goal_handle;

/*
 A compiled schedule (opaque).
 */
typedef struct goal_schedule goal_schedule;

/*
 A graph; NULL is invalid. An opaque handle (not an address): one that
 was freed is refused with an error.
 */
typedef goal_graph *GOAL_Graph;

/*
 The index of a vertex in its graph.
 */
typedef int64_t GOAL_Vertex;

/*
 A compiled schedule; NULL is invalid. An opaque handle (not an address):
 one that was freed is refused with an error.
 */
typedef goal_schedule *GOAL_Schedule;

/*
 A running execution; NULL is invalid.
 */
typedef goal_handle *GOAL_Handle;

/*
 A collective algorithm (`GOAL_ALG_*`).
 */
typedef int GOAL_Algorithm;

/*
 Element type of a local operation.
 */
typedef int GOAL_DataType;

/*
 Operator of a local operation.
 */
typedef int GOAL_Op;

/*
 A group of ranks (extension); NULL is invalid. An opaque handle (not an
 address): one that was freed is refused with an error.
 */
typedef goal_group *GOAL_Group;

/*
 A host runtime's allgather: every rank gives `len` bytes at `mine`
 (`len` is the same on every rank) and receives every rank's, in rank
 order, at `all` (`len` times the size). Returns 0 on success, anything
 else on failure. Called only inside GOAL_InitWith, on its thread.
 */
typedef int (*GOAL_AllgatherFunction)(const void *mine, size_t len, void *all, void *ctx);

/*
 What GOAL_InitWith needs from the host runtime (an MPI library).
 */
typedef struct {
  /*
   This process' rank in the host's job, 0 .. size-1.
   */
  int rank;
  /*
   Number of processes in the host's job.
   */
  int size;
  /*
   The host's allgather (collective over the job).
   */
  GOAL_AllgatherFunction allgather;
  /*
   Passed to `allgather` as its last argument.
   */
  void *ctx;
} GOAL_Bootstrap;

/*
 A host runtime's progress call for GOAL_WaitPoll: keeps the host's own
 library moving; returns non-zero to end the Wait (the host's own request
 completed, say), 0 to go on.
 */
typedef int (*GOAL_PollFunction)(void *ctx);

/*
 A user reduction: sets `inout[i] = input[i] OP inout[i]` for `count`
 elements; `ctx` is the pointer given to GOAL_Op_create. It may run on
 goal's helper thread (see docs/api.md), and must not call goal.
 */
typedef void (*GOAL_UserFunction)(const void *input, void *inout, int count, void *ctx);

/*
 Where a buffer lives: `GOAL_USERSPACE`, `GOAL_SCRATCHPAD` or
 `GOAL_RUNBUF(i)` (run-time buffer `i`, given by each `GOAL_RunWith`).
 */
typedef int GOAL_MemType;

/*
 No vertex: what the vertex-adding functions return on error.
 */
#define GOAL_INVALID_VERTEX ((GOAL_Vertex)-1)

/*
 A pointer into the process' memory.
 */
#define GOAL_USERSPACE 0

/*
 A byte offset into the execution's scratchpad, cast to a pointer.
 */
#define GOAL_SCRATCHPAD 1

/*
 Signed integer.
 */
#define GOAL_SINT 0

/*
 Unsigned integer.
 */
#define GOAL_UINT 1

/*
 IEEE floating point: width 16 (binary16, "half"), 32 or 64.
 */
#define GOAL_FLOAT 2

/*
 bfloat16 (the upper 16 bits of an IEEE binary32), width 16 only. 16-bit
 floats combine in fp32 and round to nearest even once per combine (see
 docs/api.md).
 */
#define GOAL_BFLOAT 3

/*
 Opaque elements of `element_width / 8` bytes (any positive multiple of
 8 bits): only user operations (GOAL_Op_create) and GOAL_COPY take them.
 */
#define GOAL_BYTES 4

/*
 Maximum.
 */
#define GOAL_MAX 0

/*
 Minimum.
 */
#define GOAL_MIN 1

/*
 Sum (integers wrap).
 */
#define GOAL_ADD 2

/*
 Difference (integers wrap).
 */
#define GOAL_SUB 3

/*
 Quotient (integer division by zero is an execution error).
 */
#define GOAL_DIV 4

/*
 Product (integers wrap).
 */
#define GOAL_MUL 5

/*
 Copy of the first operand.
 */
#define GOAL_COPY 6

/*
 Bitwise and (integers only).
 */
#define GOAL_AND 7

/*
 Bitwise or (integers only).
 */
#define GOAL_OR 8

/*
 Bitwise exclusive or (integers only).
 */
#define GOAL_XOR 9

/*
 Writes the time in seconds as one 64-bit double into the result.
 */
#define GOAL_WTIME 10

/*
 No operator: what GOAL_Op_free leaves. User operators (GOAL_Op_create)
 are values from 65536 up, never a built-in one's.
 */
#define GOAL_OP_NULL (-1)

/*
 Pick from the group size and message size (a table measured on this machine).
 */
#define GOAL_ALG_AUTO 0

/*
 Direct messages between the root and everyone (reduce: the root
 combines every rank's vector; alltoall: every message at once).
 */
#define GOAL_ALG_LINEAR 1

/*
 Linear with a synchronisation message and a first segment (gather,
 scatter); alltoall: pairwise exchange, one peer at a time.
 */
#define GOAL_ALG_LINEAR_SYNC 2

/*
 In-order binomial tree.
 */
#define GOAL_ALG_BINOMIAL 3

/*
 Recursive doubling (reduce_scatter_block: recursive halving).
 */
#define GOAL_ALG_RECURSIVE_DOUBLING 4

/*
 Bruck's algorithm (barrier: dissemination).
 */
#define GOAL_ALG_BRUCK 5

/*
 Ring (bcast: scatter + ring allgather).
 */
#define GOAL_ALG_RING 6

/*
 Pipelined chain of segments (bcast).
 */
#define GOAL_ALG_PIPELINE 7

/*
 Reduce-scatter by recursive halving, then gather or allgather.
 */
#define GOAL_ALG_RABENSEIFNER 8

/*
 Memory type of run-time buffer 0: `GOAL_RUNBUF(i)` is `GOAL_RUNBUF0 + i`,
 a byte offset into the buffer the run gives as its `i`-th.
 */
#define GOAL_RUNBUF0 2

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/*
 Initializes goal (once per process). Returns GOAL_SUCCESS or an error code.
 */
int GOAL_Init(void);

/*
 Returns 1 after GOAL_Init succeeded (and before GOAL_Finalize), else 0.
 */
int GOAL_IsInitialized(void);

/*
 Returns the number of ranks, or an error code before GOAL_Init.
 */
int GOAL_GroupSize(void);

/*
 Returns this process' rank (0 .. GOAL_GroupSize()-1), or an error code before GOAL_Init.
 */
int GOAL_MyRank(void);

/*
 Frees everything; afterwards only GOAL_IsFinalized() may be called. Returns GOAL_SUCCESS or an error code.
 */
int GOAL_Finalize(void);

/*
 Returns 1 if goal is finalized or not yet initialized, else 0.
 */
int GOAL_IsFinalized(void);

/*
 Returns a new, empty graph, or NULL (with GOAL_LastError()) before GOAL_Init or after GOAL_Finalize.
 */
GOAL_Graph GOAL_CreateGraph(void);

/*
 Frees a graph (its compiled schedules stay valid); also after GOAL_Finalize. Returns GOAL_SUCCESS or an error code (a graph freed already: GOAL_ERR_INVALID_ARGUMENT).

 # Safety
 No other thread may be using the graph.
 */
int GOAL_FreeGraph(GOAL_Graph g);

/*
 `target` may start only after `prereq` has finished (prerequisite first). Returns GOAL_SUCCESS or an error code.

 # Safety
 `g` must be NULL or a live graph.
 */
int GOAL_Requires(GOAL_Graph g, GOAL_Vertex prereq, GOAL_Vertex target);

/*
 Sets the size of the scratchpad each execution gets. Returns GOAL_SUCCESS or an error code.

 # Safety
 `g` must be NULL or a live graph.
 */
int GOAL_AllocateScratchpad(GOAL_Graph g, size_t bytes);

/*
 Checks and compiles a graph. Returns the schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 `g` must be NULL or a live graph.
 */
GOAL_Schedule GOAL_Compile(GOAL_Graph g);

/*
 Returns 1 while the schedule can be run (compiled, not freed, goal not finalized), else 0.

 # Safety
 None: any value is answered.
 */
int GOAL_IsScheduleValid(GOAL_Schedule s);

/*
 Schedules are never consumed by running them; this is a no-op kept for portability.

 # Safety
 `s` must be NULL or a live schedule.
 */
void GOAL_MakeScheduleReusable(GOAL_Schedule s);

/*
 Frees a schedule; fails with GOAL_ERR_BUSY while one of its executions runs. Also after GOAL_Finalize. Returns GOAL_SUCCESS or an error code (a schedule freed already: GOAL_ERR_INVALID_ARGUMENT).

 # Safety
 None: any value is answered.
 */
int GOAL_FreeSchedule(GOAL_Schedule s);

/*
 Starts one execution. Returns its handle, or NULL with GOAL_LastError() saying why
 (a schedule with run-time buffers starts with GOAL_RunWith only).

 # Safety
 The buffers the schedule's graph names must be valid until the execution
 has finished.
 */
GOAL_Handle GOAL_Run(GOAL_Schedule s);

/*
 Returns 1 when finished, 0 while running, <0 if the execution failed; the handle is released once 1 or <0 was returned.

 # Safety
 `h` must be NULL or a live handle.
 */
int GOAL_Test(GOAL_Handle h);

/*
 Blocks until the execution has finished; returns GOAL_SUCCESS or its error. The handle is released.

 # Safety
 `h` must be NULL or a live handle.
 */
int GOAL_Wait(GOAL_Handle h);

/*
 Returns 1 if the extension (GOAL_EXT_*) is available, else 0.
 */
int GOAL_IsExtensionAvailable(int extension_id);

/*
 Advances every running execution as far as it can without blocking; returns the operations finished, or <0.
 */
int GOAL_Progress(void);

/*
 Returns the time in seconds on the clock GOAL_WTIME uses (extension).
 */
double GOAL_Wtime(void);

/*
 Returns memory other local ranks can read directly (sends from it take a single copy), or NULL.
 It stays valid after GOAL_Finalize, until GOAL_Free.
 */
void *GOAL_Alloc(size_t bytes);

/*
 Frees memory from GOAL_Alloc, before or after GOAL_Finalize. Returns GOAL_SUCCESS or an error code.

 # Safety
 `ptr` must be NULL or come from GOAL_Alloc, not freed before.
 */
int GOAL_Free(void *ptr);

/*
 Returns static text for an error code (never NULL).
 */
const char *GOAL_ErrorString(int code);

/*
 Returns the calling thread's last detailed error message ("" if none); valid until the thread's next failing call.
 */
const char *GOAL_LastError(void);

/*
 Barrier: no rank leaves before every rank has entered.
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 The buffers must stay valid while executions of the schedule run.
 */
GOAL_Schedule GOAL_Barrier_init(GOAL_Algorithm alg);

/*
 Barrier: no rank leaves before every rank has entered.
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
 must stay valid while executions of the compiled schedule run.
 */
GOAL_Vertex GOAL_Barrier_append(GOAL_Graph g, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 Broadcast of `bytes` at `buf` from `root` to every rank's `buf`.
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 The buffers must stay valid while executions of the schedule run.
 */
GOAL_Schedule GOAL_Bcast_init(void *buf, size_t bytes, int root, GOAL_Algorithm alg);

/*
 Broadcast of `bytes` at `buf` from `root` to every rank's `buf`.
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
 must stay valid while executions of the compiled schedule run.
 */
GOAL_Vertex GOAL_Bcast_append(GOAL_Graph g, void *buf, size_t bytes, int root, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 Gather: block i of `rbuf` at `root` receives rank i's `bytes_per_rank` at `sbuf` (`sbuf == rbuf`: in place).
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 The buffers must stay valid while executions of the schedule run.
 */
GOAL_Schedule GOAL_Gather_init(const void *sbuf, size_t bytes_per_rank, void *rbuf, int root, GOAL_Algorithm alg);

/*
 Gather: block i of `rbuf` at `root` receives rank i's `bytes_per_rank` at `sbuf` (`sbuf == rbuf`: in place).
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
 must stay valid while executions of the compiled schedule run.
 */
GOAL_Vertex GOAL_Gather_append(GOAL_Graph g, const void *sbuf, size_t bytes_per_rank, void *rbuf, int root, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 Scatter: rank i's `rbuf` receives block i of `sbuf` at `root`.
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 The buffers must stay valid while executions of the schedule run.
 */
GOAL_Schedule GOAL_Scatter_init(const void *sbuf, size_t bytes_per_rank, void *rbuf, int root, GOAL_Algorithm alg);

/*
 Scatter: rank i's `rbuf` receives block i of `sbuf` at `root`.
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
 must stay valid while executions of the compiled schedule run.
 */
GOAL_Vertex GOAL_Scatter_append(GOAL_Graph g, const void *sbuf, size_t bytes_per_rank, void *rbuf, int root, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 Allgather: block i of every rank's `rbuf` receives rank i's `sbuf`.
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 The buffers must stay valid while executions of the schedule run.
 */
GOAL_Schedule GOAL_Allgather_init(const void *sbuf, size_t bytes_per_rank, void *rbuf, GOAL_Algorithm alg);

/*
 Allgather: block i of every rank's `rbuf` receives rank i's `sbuf`.
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
 must stay valid while executions of the compiled schedule run.
 */
GOAL_Vertex GOAL_Allgather_append(GOAL_Graph g, const void *sbuf, size_t bytes_per_rank, void *rbuf, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 All-to-all: block j of rank i's `sbuf` lands in block i of rank j's `rbuf`.
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 The buffers must stay valid while executions of the schedule run.
 */
GOAL_Schedule GOAL_Alltoall_init(const void *sbuf, size_t bytes_per_rank, void *rbuf, GOAL_Algorithm alg);

/*
 All-to-all: block j of rank i's `sbuf` lands in block i of rank j's `rbuf`.
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
 must stay valid while executions of the compiled schedule run.
 */
GOAL_Vertex GOAL_Alltoall_append(GOAL_Graph g, const void *sbuf, size_t bytes_per_rank, void *rbuf, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 Reduce: `rbuf` at `root` receives the element-wise `op` of every rank's `count` elements at `sbuf`.
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 The buffers must stay valid while executions of the schedule run.
 */
GOAL_Schedule GOAL_Reduce_init(const void *sbuf, void *rbuf, int count, GOAL_DataType dt, int element_width, GOAL_Op op, int root, GOAL_Algorithm alg);

/*
 Reduce: `rbuf` at `root` receives the element-wise `op` of every rank's `count` elements at `sbuf`.
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
 must stay valid while executions of the compiled schedule run.
 */
GOAL_Vertex GOAL_Reduce_append(GOAL_Graph g, const void *sbuf, void *rbuf, int count, GOAL_DataType dt, int element_width, GOAL_Op op, int root, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 Allreduce: every rank's `rbuf` receives the element-wise `op` of all ranks' `sbuf`, bit-identical on every rank.
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 The buffers must stay valid while executions of the schedule run.
 */
GOAL_Schedule GOAL_Allreduce_init(const void *sbuf, void *rbuf, int count, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_Algorithm alg);

/*
 Allreduce: every rank's `rbuf` receives the element-wise `op` of all ranks' `sbuf`, bit-identical on every rank.
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
 must stay valid while executions of the compiled schedule run.
 */
GOAL_Vertex GOAL_Allreduce_append(GOAL_Graph g, const void *sbuf, void *rbuf, int count, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 Reduce-scatter with equal blocks: rank i's `rbuf` receives block i (`count_per_rank` elements) of the reduction.
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 The buffers must stay valid while executions of the schedule run.
 */
GOAL_Schedule GOAL_Reduce_scatter_block_init(const void *sbuf, void *rbuf, int count_per_rank, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_Algorithm alg);

/*
 Reduce-scatter with equal blocks: rank i's `rbuf` receives block i (`count_per_rank` elements) of the reduction.
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
 must stay valid while executions of the compiled schedule run.
 */
GOAL_Vertex GOAL_Reduce_scatter_block_append(GOAL_Graph g, const void *sbuf, void *rbuf, int count_per_rank, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 Reduce: `rbuf` at `root` receives the element-wise `op` of every rank's `count` elements at `sbuf`; `size_t` count (large-count form).
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 The buffers must stay valid while executions of the schedule run.
 */
GOAL_Schedule GOAL_Reduce_init_c(const void *sbuf, void *rbuf, size_t count, GOAL_DataType dt, int element_width, GOAL_Op op, int root, GOAL_Algorithm alg);

/*
 Reduce: `rbuf` at `root` receives the element-wise `op` of every rank's `count` elements at `sbuf`; `size_t` count (large-count form).
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
 must stay valid while executions of the compiled schedule run.
 */
GOAL_Vertex GOAL_Reduce_append_c(GOAL_Graph g, const void *sbuf, void *rbuf, size_t count, GOAL_DataType dt, int element_width, GOAL_Op op, int root, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 Allreduce: every rank's `rbuf` receives the element-wise `op` of all ranks' `count` elements at `sbuf`; `size_t` count (large-count form).
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 The buffers must stay valid while executions of the schedule run.
 */
GOAL_Schedule GOAL_Allreduce_init_c(const void *sbuf, void *rbuf, size_t count, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_Algorithm alg);

/*
 Allreduce: every rank's `rbuf` receives the element-wise `op` of all ranks' `count` elements at `sbuf`; `size_t` count (large-count form).
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
 must stay valid while executions of the compiled schedule run.
 */
GOAL_Vertex GOAL_Allreduce_append_c(GOAL_Graph g, const void *sbuf, void *rbuf, size_t count, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 Reduce-scatter with equal blocks: rank i's `rbuf` receives block i (`count_per_rank` elements) of the reduction; `size_t` count (large-count form).
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 The buffers must stay valid while executions of the schedule run.
 */
GOAL_Schedule GOAL_Reduce_scatter_block_init_c(const void *sbuf, void *rbuf, size_t count_per_rank, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_Algorithm alg);

/*
 Reduce-scatter with equal blocks: rank i's `rbuf` receives block i (`count_per_rank` elements) of the reduction; `size_t` count (large-count form).
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
 must stay valid while executions of the compiled schedule run.
 */
GOAL_Vertex GOAL_Reduce_scatter_block_append_c(GOAL_Graph g, const void *sbuf, void *rbuf, size_t count_per_rank, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 Barrier: no rank leaves before every rank has entered.
 Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Barrier_init`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Barrier_init_on(GOAL_Group group, GOAL_Algorithm alg);

/*
 Broadcast of `bytes` at `buf` from `root` to every rank's `buf`.
 Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Bcast_init`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Bcast_init_on(GOAL_Group group, void *buf, size_t bytes, int root, GOAL_Algorithm alg);

/*
 Gather: block i of `rbuf` at `root` receives rank i's `bytes_per_rank` at `sbuf` (`sbuf == rbuf`: in place).
 Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Gather_init`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Gather_init_on(GOAL_Group group, const void *sbuf, size_t bytes_per_rank, void *rbuf, int root, GOAL_Algorithm alg);

/*
 Scatter: rank i's `rbuf` receives block i of `sbuf` at `root`.
 Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Scatter_init`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Scatter_init_on(GOAL_Group group, const void *sbuf, size_t bytes_per_rank, void *rbuf, int root, GOAL_Algorithm alg);

/*
 Allgather: block i of every rank's `rbuf` receives rank i's `sbuf`.
 Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Allgather_init`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Allgather_init_on(GOAL_Group group, const void *sbuf, size_t bytes_per_rank, void *rbuf, GOAL_Algorithm alg);

/*
 All-to-all: block j of rank i's `sbuf` lands in block i of rank j's `rbuf`.
 Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Alltoall_init`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Alltoall_init_on(GOAL_Group group, const void *sbuf, size_t bytes_per_rank, void *rbuf, GOAL_Algorithm alg);

/*
 Reduce: `rbuf` at `root` receives the element-wise `op` of every rank's `count` elements at `sbuf`.
 Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Reduce_init`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Reduce_init_on(GOAL_Group group, const void *sbuf, void *rbuf, int count, GOAL_DataType dt, int element_width, GOAL_Op op, int root, GOAL_Algorithm alg);

/*
 Allreduce: every rank's `rbuf` receives the element-wise `op` of all ranks' `sbuf`, bit-identical on every rank.
 Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Allreduce_init`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Allreduce_init_on(GOAL_Group group, const void *sbuf, void *rbuf, int count, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_Algorithm alg);

/*
 Reduce-scatter with equal blocks: rank i's `rbuf` receives block i (`count_per_rank` elements) of the reduction.
 Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Reduce_scatter_block_init`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Reduce_scatter_block_init_on(GOAL_Group group, const void *sbuf, void *rbuf, int count_per_rank, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_Algorithm alg);

/*
 Gatherv: `rbuf + rdispls[i]` at `root` receives rank i's `scount` bytes at `sbuf` (`rcounts[i]` bytes; `sbuf == rbuf`: in place).
 Over the ranks of `group` (extension). Arrays of one entry per rank have one per rank of `group`. Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Gatherv_init`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Gatherv_init_on(GOAL_Group group, const void *sbuf, size_t scount, void *rbuf, const size_t *rcounts, const size_t *rdispls, int root, GOAL_Algorithm alg);

/*
 Scatterv: rank i's `rbuf` receives `rcount` bytes, the `scounts[i]` bytes at `sbuf + sdispls[i]` at `root` (`sbuf == rbuf` at the root: in place).
 Over the ranks of `group` (extension). Arrays of one entry per rank have one per rank of `group`. Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Scatterv_init`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Scatterv_init_on(GOAL_Group group, const void *sbuf, const size_t *scounts, const size_t *sdispls, void *rbuf, size_t rcount, int root, GOAL_Algorithm alg);

/*
 Allgatherv: every rank's `rbuf + rdispls[i]` receives rank i's `scount` bytes at `sbuf` (`rcounts[i]` bytes; `sbuf == rbuf`: in place).
 Over the ranks of `group` (extension). Arrays of one entry per rank have one per rank of `group`. Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Allgatherv_init`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Allgatherv_init_on(GOAL_Group group, const void *sbuf, size_t scount, void *rbuf, const size_t *rcounts, const size_t *rdispls, GOAL_Algorithm alg);

/*
 All-to-all with per-rank counts: rank i's `scounts[j]` bytes at `sbuf + sdispls[j]` land in rank j's `rbuf + rdispls[i]` (`rcounts[i]` bytes there).
 Over the ranks of `group` (extension). Arrays of one entry per rank have one per rank of `group`. Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Alltoallv_init`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Alltoallv_init_on(GOAL_Group group, const void *sbuf, const size_t *scounts, const size_t *sdispls, void *rbuf, const size_t *rcounts, const size_t *rdispls, GOAL_Algorithm alg);

/*
 Reduce-scatter with per-rank counts: rank i's `rbuf` receives block i (`rcounts[i]` elements, from element `rcounts[0] + ... + rcounts[i-1]`) of the element-wise `op` of every rank's `sbuf` (`sum(rcounts)` elements; `sbuf == rbuf`: in place).
 Over the ranks of `group` (extension). Arrays of one entry per rank have one per rank of `group`. Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Reduce_scatter_init`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Reduce_scatter_init_on(GOAL_Group group, const void *sbuf, void *rbuf, const size_t *rcounts, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_Algorithm alg);

/*
 Reduce: `rbuf` at `root` receives the element-wise `op` of every rank's `count` elements at `sbuf`; `size_t` count (large-count form).
 Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Reduce_init_c`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Reduce_init_c_on(GOAL_Group group, const void *sbuf, void *rbuf, size_t count, GOAL_DataType dt, int element_width, GOAL_Op op, int root, GOAL_Algorithm alg);

/*
 Allreduce: every rank's `rbuf` receives the element-wise `op` of all ranks' `count` elements at `sbuf`; `size_t` count (large-count form).
 Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Allreduce_init_c`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Allreduce_init_c_on(GOAL_Group group, const void *sbuf, void *rbuf, size_t count, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_Algorithm alg);

/*
 Reduce-scatter with equal blocks: rank i's `rbuf` receives block i (`count_per_rank` elements) of the reduction; `size_t` count (large-count form).
 Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 As `GOAL_Reduce_scatter_block_init_c`; `group` is any value (a bad one is refused).
 */
GOAL_Schedule GOAL_Reduce_scatter_block_init_c_on(GOAL_Group group, const void *sbuf, void *rbuf, size_t count_per_rank, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_Algorithm alg);

/*
 Gatherv: `rbuf + rdispls[i]` at `root` receives rank i's `scount` bytes at `sbuf` (`rcounts[i]` bytes; `sbuf == rbuf`: in place).
 `rdispls` matters at the root only, and so do `rcounts` for GOAL_ALG_LINEAR
 (they may be NULL elsewhere, as in MPI); GOAL_ALG_BINOMIAL and
 GOAL_ALG_AUTO need `rcounts` on every rank.
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 Each non-NULL array holds one entry per rank; the buffers must stay
 valid while executions of the schedule run.
 */
GOAL_Schedule GOAL_Gatherv_init(const void *sbuf, size_t scount, void *rbuf, const size_t *rcounts, const size_t *rdispls, int root, GOAL_Algorithm alg);

/*
 Gatherv: `rbuf + rdispls[i]` at `root` receives rank i's `scount` bytes at `sbuf` (as GOAL_Gatherv_init).
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable, each
 non-NULL array one entry per rank; the buffers must stay valid while
 executions of the compiled schedule run.
 */
GOAL_Vertex GOAL_Gatherv_append(GOAL_Graph g, const void *sbuf, size_t scount, void *rbuf, const size_t *rcounts, const size_t *rdispls, int root, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 Scatterv: rank i's `rbuf` receives `rcount` bytes, the `scounts[i]` bytes at `sbuf + sdispls[i]` at `root` (`sbuf == rbuf` at the root: in place).
 `sdispls` matters at the root only, and so do `scounts` for GOAL_ALG_LINEAR
 (they may be NULL elsewhere, as in MPI); GOAL_ALG_BINOMIAL and
 GOAL_ALG_AUTO need `scounts` on every rank.
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 Each non-NULL array holds one entry per rank; the buffers must stay
 valid while executions of the schedule run.
 */
GOAL_Schedule GOAL_Scatterv_init(const void *sbuf, const size_t *scounts, const size_t *sdispls, void *rbuf, size_t rcount, int root, GOAL_Algorithm alg);

/*
 Scatterv: rank i's `rbuf` receives `rcount` bytes from `sbuf + sdispls[i]` at `root` (as GOAL_Scatterv_init).
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable, each
 non-NULL array one entry per rank; the buffers must stay valid while
 executions of the compiled schedule run.
 */
GOAL_Vertex GOAL_Scatterv_append(GOAL_Graph g, const void *sbuf, const size_t *scounts, const size_t *sdispls, void *rbuf, size_t rcount, int root, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 Allgatherv: every rank's `rbuf + rdispls[i]` receives rank i's `scount` bytes at `sbuf` (`rcounts[i]` bytes; `sbuf == rbuf`: in place).
 Every rank gives the same `rcounts` and `rdispls`.
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 Each array holds one entry per rank; the buffers must stay valid while
 executions of the schedule run.
 */
GOAL_Schedule GOAL_Allgatherv_init(const void *sbuf, size_t scount, void *rbuf, const size_t *rcounts, const size_t *rdispls, GOAL_Algorithm alg);

/*
 Allgatherv: every rank's `rbuf + rdispls[i]` receives rank i's `scount` bytes at `sbuf` (as GOAL_Allgatherv_init).
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable, each array
 one entry per rank; the buffers must stay valid while executions of the
 compiled schedule run.
 */
GOAL_Vertex GOAL_Allgatherv_append(GOAL_Graph g, const void *sbuf, size_t scount, void *rbuf, const size_t *rcounts, const size_t *rdispls, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 All-to-all with per-rank counts: rank i's `scounts[j]` bytes at `sbuf + sdispls[j]` land in rank j's `rbuf + rdispls[i]` (`rcounts[i]` bytes there).
 In place (`sbuf == rbuf`) `scounts` and `sdispls` are ignored and may be
 NULL: `rbuf`'s blocks (by `rcounts`, `rdispls`) are sent and overwritten.
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 Each non-NULL array holds one entry per rank; the buffers must stay
 valid while executions of the schedule run.
 */
GOAL_Schedule GOAL_Alltoallv_init(const void *sbuf, const size_t *scounts, const size_t *sdispls, void *rbuf, const size_t *rcounts, const size_t *rdispls, GOAL_Algorithm alg);

/*
 All-to-all with per-rank counts (as GOAL_Alltoallv_init).
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable, each
 non-NULL array one entry per rank; the buffers must stay valid while
 executions of the compiled schedule run.
 */
GOAL_Vertex GOAL_Alltoallv_append(GOAL_Graph g, const void *sbuf, const size_t *scounts, const size_t *sdispls, void *rbuf, const size_t *rcounts, const size_t *rdispls, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 Reduce-scatter with per-rank counts: rank i's `rbuf` receives block i (`rcounts[i]` elements, from element `rcounts[0] + ... + rcounts[i-1]`) of the element-wise `op` of every rank's `sbuf` (`sum(rcounts)` elements; `sbuf == rbuf`: in place).
 Every rank gives the same `rcounts`; any may be zero.
 Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.

 # Safety
 `rcounts` holds one entry per rank; the buffers must stay valid while
 executions of the schedule run.
 */
GOAL_Schedule GOAL_Reduce_scatter_init(const void *sbuf, void *rbuf, const size_t *rcounts, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_Algorithm alg);

/*
 Reduce-scatter with per-rank counts (as GOAL_Reduce_scatter_init).
 Appended to graph `g` (extension): returns the collective's done vertex, or
 GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.

 # Safety
 `g` must be NULL or a live graph, `entry` NULL or writable, `rcounts`
 one entry per rank; the buffers must stay valid while executions of the
 compiled schedule run.
 */
GOAL_Vertex GOAL_Reduce_scatter_append(GOAL_Graph g, const void *sbuf, void *rbuf, const size_t *rcounts, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_Algorithm alg, GOAL_Vertex *entry);

/*
 Returns the handle of the world group (every rank, as GOAL_GroupSize and GOAL_MyRank see them), or NULL before GOAL_Init and after GOAL_Finalize. It is never freed.
 */
GOAL_Group GOAL_GroupWorld(void);

/*
 Splits `parent` as MPI_Comm_split does: the ranks that give the same `color` (>= 0) form a new group, ordered by `key` and then by their rank in `parent`; `*newgroup` receives it (NULL for GOAL_UNDEFINED). Collective over `parent`, in its compile order (it compiles and runs one small allgather). Returns GOAL_SUCCESS or an error code.

 # Safety
 `newgroup` must be NULL or valid for one write.
 */
int GOAL_Group_split(GOAL_Group parent, int color, int key, GOAL_Group *newgroup);

/*
 Creates the group of the `n` ranks of `parent` listed in `ranks` (in that order) into `*newgroup`, as MPI_Comm_create_group does: collective over the listed ranks only, which all pass the same list and `tag`; the other ranks of `parent` take no part. A list with a rank twice, a rank outside `parent`, or without the caller is refused. Returns GOAL_SUCCESS or an error code.

 # Safety
 `ranks` must hold `n` ints; `newgroup` must be NULL or valid for one write.
 */
int GOAL_Group_create(GOAL_Group parent, const int *ranks, int n, int tag, GOAL_Group *newgroup);

/*
 Returns the number of ranks in `g`, or an error code.

 # Safety
 None: any value is answered.
 */
int GOAL_Group_size(GOAL_Group g);

/*
 Returns this process' rank in `g` (0 .. GOAL_Group_size(g)-1), or an error code.

 # Safety
 None: any value is answered.
 */
int GOAL_Group_rank(GOAL_Group g);

/*
 Writes to `ranks_b[i]` the rank in group `b` of rank `ranks_a[i]` of group `a`, for i < n: GOAL_UNDEFINED where `b` does not hold it. Local (no communication). Returns GOAL_SUCCESS or an error code (a rank outside `a`: GOAL_ERR_RANK).

 # Safety
 `ranks_a` must hold `n` ints and `ranks_b` room for `n`.
 */
int GOAL_Group_translate_ranks(GOAL_Group a, int n, const int *ranks_a, GOAL_Group b, int *ranks_b);

/*
 Frees the group `*g` and sets `*g` to NULL. Its schedules stay valid to free but can no longer run; its resources go back once they are freed too. Local. Returns GOAL_SUCCESS or an error code (the world group, or a freed group: GOAL_ERR_INVALID_ARGUMENT).

 # Safety
 `g` must be NULL or point to a group handle.
 */
int GOAL_Group_free(GOAL_Group *g);

/*
 Returns a new, empty graph bound to group `grp`: its sends' and receives' peers, and the collectives appended to it, are ranks of `grp`; GOAL_Compile makes a schedule of `grp`, collective over its ranks. NULL (with GOAL_LastError()) for a bad or freed group.

 # Safety
 None: any value is answered.
 */
GOAL_Graph GOAL_CreateGraphOn(GOAL_Group grp);

/*
 Initializes goal (once per process) inside a host runtime's job: rank,
 size and the address exchange come from `boot` (its allgather, a few
 calls), never from a launcher's environment. Collective over the host's
 job. Returns GOAL_SUCCESS or an error code (NULL `boot` or function, a
 rank not below the size: GOAL_ERR_INVALID_ARGUMENT).

 # Safety
 `boot` must be NULL or point to a valid GOAL_Bootstrap whose function
 may be called with its `ctx` until this call returns.
 */
int GOAL_InitWith(const GOAL_Bootstrap *boot);

/*
 Returns 1 once the execution has ended (finished or failed), 0 while it
 runs, without moving it and without releasing the handle: GOAL_Test,
 GOAL_Wait or GOAL_WaitFor still release it and report a failure. For a
 thread that only watches executions while goal's helper moves them
 (progress modes thread, spin, kernel), so that it never takes the
 progress engine from the threads driving it; in manual mode nothing
 moves an execution that is only watched.

 # Safety
 `h` must be NULL or a live handle.
 */
int GOAL_IsFinished(GOAL_Handle h);

/*
 Waits as GOAL_Wait for at most `seconds` (sleeping in the kernel after
 the usual spin). Returns 1 when finished, 0 if still running when the
 time is up (the handle stays live), <0 if the execution failed; the
 handle is released once 1 or <0 was returned, as by GOAL_Test.

 # Safety
 `h` must be NULL or a live handle.
 */
int GOAL_WaitFor(GOAL_Handle h, double seconds);

/*
 Waits as GOAL_Wait (spinning as configured, then sleeping in the kernel
 until the execution finishes), calling `poll(ctx)` on this thread after
 each batch of polls and at least every `seconds` while it sleeps,
 without spinning again after a sleep that brought no news. Returns 1
 when finished, 0 as soon as `poll` returned non-zero with the execution
 still running (the handle stays live), <0 if the execution failed; the
 handle is released once 1 or <0 was returned, as by GOAL_Test. `poll`
 runs with none of goal's locks held and may call goal, but not wait for
 `h`.

 # Safety
 `h` must be NULL or a live handle; `poll` must be callable with `ctx`
 until this call returns.
 */
int GOAL_WaitPoll(GOAL_Handle h, double seconds, GOAL_PollFunction poll, void *ctx);

/*
 A copy of `s` numbered as the next schedule of its group: what
 compiling the same graph on that group now would return, without
 compiling it again (its buffers, run-time ones included, are `s`'s).
 Collective as compiling is: it takes a number of the group's compile
 order, so every member must make its schedule for the same call at the
 same point, by compiling or by this. For a host whose ranks each know
 only part of a call's arguments (the MPI layer's v-collectives): each
 rank reuses what its own arguments compiled before, and the schedules
 still pair call by call. Returns NULL with GOAL_LastError() on error
 (not a schedule, its group freed, goal not initialized). Free it with
 GOAL_FreeSchedule.

 # Safety
 `s` must be NULL or a schedule handle.
 */
GOAL_Schedule GOAL_Renumber(GOAL_Schedule s);

/*
 Starts one execution of `s` with run-time buffer `i` at `bufs[i]`,
 holding `sizes[i]` bytes, for `i < n`. Returns its handle, or NULL with
 GOAL_LastError() saying why: fewer buffers than the schedule has, one
 smaller than the bytes the schedule uses of it, NULL where it uses
 bytes (the message names the buffer and the schedule's needs). Buffers
 past those the schedule has are ignored, so a schedule without run-time
 buffers runs as with GOAL_Run.

 # Safety
 `bufs` and `sizes` are NULL with `n` = 0, or valid for `n` reads; each
 buffer, and every buffer the schedule's graph names, must stay valid
 until the execution has finished.
 */
GOAL_Handle GOAL_RunWith(GOAL_Schedule s, void *const *bufs, const size_t *sizes, int n);

/*
 The run-time buffers of `s`: writes the bytes each must hold to
 `sizes[0 .. min(n, count)]` and returns their count (0 for a schedule
 with all its buffers), or a negative error code.

 # Safety
 `sizes` is NULL with `n` = 0, or valid for `n` writes.
 */
int GOAL_RunBufferSizes(GOAL_Schedule s, size_t *sizes, int n);

/*
 Registers `func` as a reduction operator usable wherever a GOAL_Op goes
 (GOAL_LocalOp, GOAL_LocalOpVec, every reducing collective), on any
 data type and width, and on GOAL_BYTES elements. `commutative` (0 or
 not) says whether `a OP b == b OP a`; the operator is taken to be
 associative. Writes the new operator to `*op`. May be called before
 GOAL_Init. Returns GOAL_SUCCESS or an error code.

 # Safety
 `op` must be NULL or valid for a write; `func` and `ctx` as docs/api.md
 says (callable from any thread while a schedule using the operator lives).
 */
int GOAL_Op_create(GOAL_UserFunction func, int commutative, void *ctx, GOAL_Op *op);

/*
 Frees a user operator and sets `*op` to GOAL_OP_NULL. Schedules compiled
 with it keep working; graphs and calls that name it afterwards fail.
 Returns GOAL_SUCCESS or an error code (a built-in operator, or one freed
 already: GOAL_ERR_INVALID_ARGUMENT).

 # Safety
 `op` must be NULL or valid for reading and writing.
 */
int GOAL_Op_free(GOAL_Op *op);

/*
 Adds a send of `count` bytes at `buf` to rank `dest`; returns the vertex or GOAL_INVALID_VERTEX.

 # Safety
 `g` must be NULL or a live graph. `buf` is not read now: it must be valid
 when the schedule runs (or be a scratchpad offset).
 */
GOAL_Vertex GOAL_Send(GOAL_Graph g, void *buf, int count, int dest, int tag, GOAL_MemType mem);

/*
 GOAL_Send with a `size_t` count (large-count form): up to 4 GiB - 1 bytes (GOAL_Compile refuses more). Returns the vertex or GOAL_INVALID_VERTEX.

 # Safety
 As for GOAL_Send.
 */
GOAL_Vertex GOAL_Send_c(GOAL_Graph g, void *buf, size_t count, int dest, int tag, GOAL_MemType mem);

/*
 Adds a receive of up to `count` bytes into `buf` from `source` (or GOAL_ANY_SOURCE); returns the vertex or GOAL_INVALID_VERTEX.

 # Safety
 As for GOAL_Send.
 */
GOAL_Vertex GOAL_Recv(GOAL_Graph g, void *buf, int count, int source, int tag, GOAL_MemType mem);

/*
 GOAL_Recv with a `size_t` count (large-count form): takes any message up to `count` bytes; a count past 4 GiB - 1, the largest message, counts as 4 GiB - 1. Returns the vertex or GOAL_INVALID_VERTEX.

 # Safety
 As for GOAL_Send.
 */
GOAL_Vertex GOAL_Recv_c(GOAL_Graph g, void *buf, size_t count, int source, int tag, GOAL_MemType mem);

/*
 Adds a send of the pieces (sent as one contiguous message); the arrays are copied. Returns the vertex or GOAL_INVALID_VERTEX.

 # Safety
 `g` NULL or live; `offsets`/`lengths` valid for `num_elements` entries.
 */
GOAL_Vertex GOAL_SendVec(GOAL_Graph g, void **offsets, int *lengths, int num_elements, int dest, int tag, GOAL_MemType mem);

/*
 GOAL_SendVec with `size_t` lengths (large-count form): up to 4 GiB - 1 bytes in all. Returns the vertex or GOAL_INVALID_VERTEX.

 # Safety
 As for GOAL_SendVec.
 */
GOAL_Vertex GOAL_SendVec_c(GOAL_Graph g, void **offsets, size_t *lengths, int num_elements, int dest, int tag, GOAL_MemType mem);

/*
 Adds a receive scattered over the pieces; the arrays are copied. Returns the vertex or GOAL_INVALID_VERTEX.

 # Safety
 As for GOAL_SendVec.
 */
GOAL_Vertex GOAL_RecvVec(GOAL_Graph g, void **offsets, int *lengths, int num_elements, int source, int tag, GOAL_MemType mem);

/*
 GOAL_RecvVec with `size_t` lengths (large-count form): up to 4 GiB - 1 bytes in all. Returns the vertex or GOAL_INVALID_VERTEX.

 # Safety
 As for GOAL_SendVec.
 */
GOAL_Vertex GOAL_RecvVec_c(GOAL_Graph g, void **offsets, size_t *lengths, int num_elements, int source, int tag, GOAL_MemType mem);

/*
 Adds `bres[i] = b1[i] OP b2[i]` for `num_elements` elements; returns the vertex or GOAL_INVALID_VERTEX.

 # Safety
 `g` NULL or live; the buffers must be valid when the schedule runs.
 */
GOAL_Vertex GOAL_LocalOp(GOAL_Graph g, void *b1, void *b2, void *bres, GOAL_Op op, GOAL_DataType dt, int element_width, int num_elements, GOAL_MemType b1_mem, GOAL_MemType b2_mem, GOAL_MemType bres_mem);

/*
 GOAL_LocalOp with a `size_t` element count (large-count form): up to 4 Gi - 1 elements. Returns the vertex or GOAL_INVALID_VERTEX.

 # Safety
 As for GOAL_LocalOp.
 */
GOAL_Vertex GOAL_LocalOp_c(GOAL_Graph g, void *b1, void *b2, void *bres, GOAL_Op op, GOAL_DataType dt, int element_width, size_t num_elements, GOAL_MemType b1_mem, GOAL_MemType b2_mem, GOAL_MemType bres_mem);

/*
 Adds a local operation over three gather lists, element by element; returns the vertex or GOAL_INVALID_VERTEX.

 # Safety
 `g` NULL or live; each array valid for its count.
 */
GOAL_Vertex GOAL_LocalOpVec(GOAL_Graph g, void **buf1, int *lengths1, int num_elements1, void **buf2, int *lengths2, int num_elements2, void **buf3, int *lengths3, int num_elements3, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_MemType b1_mem, GOAL_MemType b2_mem, GOAL_MemType b3_mem);

/*
 GOAL_LocalOpVec with `size_t` piece lengths (large-count form); the numbers of pieces stay `int`. Returns the vertex or GOAL_INVALID_VERTEX.

 # Safety
 As for GOAL_LocalOpVec.
 */
GOAL_Vertex GOAL_LocalOpVec_c(GOAL_Graph g, void **buf1, size_t *lengths1, int num_elements1, void **buf2, size_t *lengths2, int num_elements2, void **buf3, size_t *lengths3, int num_elements3, GOAL_DataType dt, int element_width, GOAL_Op op, GOAL_MemType b1_mem, GOAL_MemType b2_mem, GOAL_MemType b3_mem);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* GOAL_H */
