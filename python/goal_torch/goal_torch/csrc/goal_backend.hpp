// goal_torch: a torch.distributed (c10d) backend on goal.
//
// One goal runtime per process, started by the first backend constructed
// (the default process group) with GOAL_InitWith over the c10d Store torch
// hands it. Each process group maps to one goal group: the default group to
// goal's world, every other one to GOAL_Group_create over its global ranks.
// Every collective is compiled once per (op, shapes, dtype, root, reduction)
// with run-time buffers (GOAL_BUF_AT_RUN) and rerun with each call's tensors.
// goal's helper thread moves the executions while Python computes; a watcher
// thread, which only looks (GOAL_IsFinished), completes the Futures of the
// Works nobody waits for (runtime.cpp).
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

extern "C" {
#include <goal.h>
}

namespace goal_torch {

// Throws a std::runtime_error naming the call, with goal's own message.
[[noreturn]] void fail(const std::string& where, int code = 0);

// One execution of a goal schedule as a c10d Work. `post` runs once the
// bytes are in place (copies out of staging buffers, AVG's division), then
// the Future completes with `outputs`.
class GoalWork : public c10d::Work {
 public:
  GoalWork(GOAL_Handle h, c10d::OpType type, std::vector<at::Tensor> outputs,
           std::function<void()> post, std::function<void()> release,
           const char* name);
  ~GoalWork() override;
  bool isCompleted() override;
  bool isSuccess() const override;
  bool wait(std::chrono::milliseconds timeout) override;
  std::vector<at::Tensor> result() override { return outputs_; }
  // The Future, which the watcher thread then completes when the execution
  // ends (nobody may ever call wait(): DDP chains its buckets on Futures).
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  // Looks whether the execution has ended, if no other thread holds the
  // handle, without moving it unless `move` (or GOAL_PROGRESS=manual): then
  // GOAL_Test. True when finished, the Future then completed.
  bool poll(bool move = false);
  // When it started.
  std::chrono::steady_clock::time_point started() const { return started_; }
  // Finished (by wait() or poll()).
  bool ended() const { return finished_; }
  // A thread is inside wait(): it moves the execution and completes the Future.
  bool waited() const { return waited_; }
  // getFuture() was called: the watcher must complete the Future by itself.
  bool futureWanted() const { return futureWanted_; }

 private:
  void finishLocked(int rc);
  // Completes the Future once, outside handleMutex_ (its callbacks, DDP's
  // among them, run here and may call back in).
  void completeFuture();
  std::atomic<bool> futureDone_{false};
  std::mutex handleMutex_;  // who may test or wait on handle_ (goal: one thread at a time)
  GOAL_Handle handle_;
  std::atomic<bool> finished_{false};  // set under handleMutex_, read anywhere
  std::atomic<bool> waited_{false};
  std::atomic<bool> futureWanted_{false};
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::string error_;
  std::vector<at::Tensor> outputs_;
  std::function<void()> post_;
  std::function<void()> release_;
  std::string name_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// Hands running Works to the process' watcher thread.
void track(const c10::intrusive_ptr<GoalWork>& w);

// Tells the watcher that a tracked Work's Future is wanted now.
void futureWanted();

// How many Works the watcher holds that it has not yet seen end (pending
// ones included): those a thread still may wait for, and dropped ones not
// yet released. For the tests.
size_t trackedWorks();

// Stops the watcher thread and finalizes goal (once; at exit).
void shutdown();

// Starts goal over the store (once per process; later calls check the size).
void bootstrap(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size);

class GoalBackend : public c10d::Backend {
 public:
  GoalBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
              std::vector<int64_t> globalRanks, const std::string& groupId);
  ~GoalBackend() override;
  const std::string getBackendName() const override { return "goal"; }
  // torch numbers a group's collectives for its debug checks; goal needs no
  // agreement on it (the ranks compile in the same order already).
  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override { return 0; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
      const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
      const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
      const c10d::ReduceOptions& opts = c10d::ReduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
      std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
      std::vector<at::Tensor>& inputs,
      const c10d::GatherOptions& opts = c10d::GatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
      std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ScatterOptions& opts = c10d::ScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
      std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
      std::vector<int64_t>& outputSplits, std::vector<int64_t>& inputSplits,
      const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
      std::vector<at::Tensor>& inputs,
      const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(
      const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;

 private:
  // The cached schedule for `key`, compiled by `make` on a miss.
  GOAL_Schedule cached(const std::string& key, const std::function<GOAL_Schedule()>& make);
  // Starts `s` with the buffers and wraps the execution as a Work.
  c10::intrusive_ptr<c10d::Work> start(GOAL_Schedule s, std::vector<void*> bufs,
      std::vector<size_t> sizes, c10d::OpType type, std::vector<at::Tensor> outputs,
      std::function<void()> post, std::vector<at::Tensor> keep, const char* name,
      bool freeAfter = false);
  c10::intrusive_ptr<c10d::Work> allreduceTensor(at::Tensor& t, c10d::ReduceOp op, const char* name);
  c10::intrusive_ptr<c10d::Work> allgatherFlat(at::Tensor& out, at::Tensor& in,
      std::function<void()> post, const char* name);
  c10::intrusive_ptr<c10d::Work> alltoallv(at::Tensor& out, at::Tensor& in,
      const std::vector<size_t>& sbytes, const std::vector<size_t>& rbytes,
      std::function<void()> post, const char* name);
  // gather and scatter of blocks of kRootListMin bytes and more: one
  // schedule of plain messages between the root and every other rank, the
  // root's tensors each a run-time buffer of their own (no staging tensor,
  // no concatenation: a 32 MiB scatter copied 64 MiB into a fresh tensor
  // first). Run-time buffers number 16 at most, hence kRootListMaxRanks.
  static constexpr size_t kRootListMin = 64 << 10;
  static constexpr int kRootListMaxRanks = 17;
  static constexpr int kRootListTag = 7;
  GOAL_Schedule rootListSchedule(bool gather, size_t bytes, int root, bool ownCopy);
  c10::intrusive_ptr<c10d::Work> rootList(bool gather, at::Tensor& mine,
      std::vector<std::vector<at::Tensor>>& lists, int root, const char* name);
  GOAL_Group pairGroup(int peer);
  c10::intrusive_ptr<c10d::Work> p2p(at::Tensor& t, int peer, int tag, bool isSend);

  GOAL_Group group_ = nullptr;
  bool ownsGroup_ = false;
  std::mutex mutex_;  // compile order: one compile at a time, in call order
  std::map<std::string, GOAL_Schedule> cache_;
  std::map<int, GOAL_Group> pairs_;
};

}  // namespace goal_torch
