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
 First tag collectives use; user tags below it never mix with theirs.
 */
#define GOAL_COLL_TAG_BASE (1 << 30)

/*
 A graph under construction (opaque).
 */
typedef struct goal_graph goal_graph;

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
 Where a buffer lives: `GOAL_USERSPACE` or `GOAL_SCRATCHPAD`.
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
 Starts one execution. Returns its handle, or NULL with GOAL_LastError() saying why.

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
 */
void *GOAL_Alloc(size_t bytes);

/*
 Frees memory from GOAL_Alloc. Returns GOAL_SUCCESS or an error code.

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
