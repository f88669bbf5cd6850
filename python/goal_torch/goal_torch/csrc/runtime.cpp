// goal_torch runtime: goal's start over the c10d Store, Works over goal
// handles, and the watcher thread that completes the Futures of Works that
// goal finishes in the background.
//
// Who moves an execution: goal's own helper thread (progress modes thread,
// spin, kernel), and the application thread inside Work.wait(). The watcher
// never does: it only looks whether an execution has ended
// (GOAL_IsFinished, which takes no lock of goal's), so that it never holds
// goal's progress engine while the helper or a waiting thread needs it.
// Under GOAL_PROGRESS=manual (no helper) it tests instead, since nothing
// else would move a Work nobody waits for.
//
// A handle may be tested or waited on by one thread at a time (docs/api.md,
// Threads): each Work guards its handle with a mutex; the watcher only
// try-locks it, so a Python thread blocked in wait() keeps it.
#include "goal_backend.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <sys/syscall.h>
#include <unistd.h>

namespace goal_torch {

void fail(const std::string& where, int code) {
  std::string msg = "goal torch backend: " + where;
  const char* last = GOAL_LastError();
  if (last && *last) {
    msg += ": ";
    msg += last;
  } else if (code < 0) {
    msg += ": ";
    msg += GOAL_ErrorString(code);
  }
  throw std::runtime_error(msg);
}

// ---- Works ----

namespace {
// The type of every Work's Future value, made once (not per call).
const c10::TypePtr& tensorListType() {
  static const c10::TypePtr t = c10::ListType::create(c10::TensorType::get());
  return t;
}
}  // namespace

GoalWork::GoalWork(GOAL_Handle h, c10d::OpType type, std::vector<at::Tensor> outputs,
                   std::function<void()> post, std::function<void()> release, const char* name)
    : c10d::Work(-1, type),
      handle_(h),
      outputs_(std::move(outputs)),
      post_(std::move(post)),
      release_(std::move(release)),
      name_(name),
      future_(c10::make_intrusive<c10::ivalue::Future>(tensorListType())) {}

// A Work is tracked by the watcher thread until it ends, so a Work
// dropped unwaited is finished by the time it is destroyed.
GoalWork::~GoalWork() = default;

void GoalWork::finishLocked(int rc) {
  finished_ = true;
  handle_ = nullptr;
  if (rc < 0) {
    const char* last = GOAL_LastError();
    error_ = "goal torch backend: " + name_ + " failed: " +
             ((last && *last) ? std::string(last) : std::string(GOAL_ErrorString(rc)));
  } else if (post_) {
    try {
      post_();
    } catch (const std::exception& e) {
      error_ = "goal torch backend: " + name_ + " (copying the result): " + e.what();
    }
  }
  post_ = nullptr;
  if (release_) {
    release_();
    release_ = nullptr;
  }
}

void GoalWork::completeFuture() {
  if (futureDone_.exchange(true)) return;
  if (!error_.empty()) {
    future_->setError(std::make_exception_ptr(std::runtime_error(error_)));
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

namespace {
// GOAL_PROGRESS=manual: goal runs no helper thread (docs/api.md).
bool manualProgress() {
  static const bool manual = [] {
    const char* p = std::getenv("GOAL_PROGRESS");
    return p && std::strcmp(p, "manual") == 0;
  }();
  return manual;
}
}  // namespace

bool GoalWork::poll(bool move) {
  std::unique_lock<std::mutex> lock(handleMutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  if (!finished_) {
    // Look without moving it (see the top of this file); once it has
    // ended, GOAL_Test releases the handle with its result.
    bool test = move || manualProgress();
    int rc = test ? GOAL_Test(handle_) : GOAL_IsFinished(handle_);
    if (rc == 0) return false;
    if (rc == 1 && !test) rc = GOAL_Test(handle_);
    finishLocked(rc);
  }
  lock.unlock();
  completeFuture();
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> GoalWork::getFuture() {
  if (!finished_ && !futureWanted_.exchange(true)) goal_torch::futureWanted();
  return future_;
}

bool GoalWork::isCompleted() {
  if (finished_) return true;
  poll();  // looks (see poll) unless another thread holds the handle
  return finished_;
}

bool GoalWork::isSuccess() const { return error_.empty(); }

bool GoalWork::wait(std::chrono::milliseconds timeout) {
  waited_ = true;
  {
    std::lock_guard<std::mutex> lock(handleMutex_);
    if (!finished_) {
      int rc;
      if (timeout == kNoTimeout) {
        rc = GOAL_Wait(handle_);
      } else {
        rc = GOAL_WaitFor(handle_, timeout.count() / 1000.0);
        if (rc == 0) {
          waited_ = false;  // the watcher looks after it again
          throw std::runtime_error("goal torch backend: " + name_ + " still running after " +
                                   std::to_string(timeout.count()) + " ms (Work.wait timeout)");
        }
        if (rc == 1) rc = GOAL_SUCCESS;
      }
      finishLocked(rc);
    }
  }
  completeFuture();
  if (!error_.empty()) throw std::runtime_error(error_);
  return true;
}

// ---- The watcher thread ----

namespace {

// A short scheduler slice for the calling thread (sched_setattr's
// sched_runtime, Linux 6.12 and later; earlier kernels accept and ignore
// it), as goal gives its own helper (GOAL_SLICE_US): woken from a nap, the
// watcher then runs at once instead of after the slice of the computation
// sharing its CPU, so a Future completes promptly. Not essential: a refusal
// leaves the default.
void askShortSlice() {
  struct Attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t utilMin, utilMax;
  } a{};
  a.size = sizeof a;
  if (syscall(SYS_sched_getattr, 0, &a, sizeof a, 0) != 0 || a.policy != 0 /* SCHED_OTHER */) return;
  a.size = sizeof a;
  a.flags = 0;
  a.runtime = 100 * 1000;  // ns, goal's default GOAL_SLICE_US
  syscall(SYS_sched_setattr, 0, &a, 0);
}

struct Watcher {
  std::mutex m;
  std::condition_variable cv;
  std::vector<c10::intrusive_ptr<GoalWork>> pending;  // tracked since the last sweep
  std::thread thread;
  bool stop = false;
  bool asleep = false;   // on `cv` with no end, to be notified by track() (under `m`)
  bool dormant = false;  // on `cv` for kDormantNap, to be notified by futureWanted() (under `m`)
  bool wanted = false;   // a Future was asked for since the last sweep (under `m`)
  std::atomic<size_t> held{0};  // Works tracked and not yet seen to end, at the last sweep

  // Which Works the watcher looks after: those whose Future was asked for
  // (getFuture: DDP's buckets, `work.get_future()`), and those dropped
  // unwaited (only the watcher still holds them), whose handles and
  // tensors it then releases. A Work that is only started and later waited
  // for (`dist.all_reduce(x, async_op=True)` ... `work.wait()`) is dormant:
  // goal's helper moves it, the thread in wait() completes it, and the
  // watcher stays asleep meanwhile. Waking every 20-200 us beside the
  // computation of such a loop cost it a context switch each time, on the
  // rank's own CPU.
  //
  // Naps between sweeps of Works it looks after: from 20 us after the
  // watcher completed a Future (DDP chains its next bucket on it) doubling
  // to 200 us. With only dormant Works or Works being waited for, it naps
  // kDormantNap (a dropped Work is released that much later), woken by
  // getFuture(); after 20 ms without a Work at all, it sleeps until track()
  // wakes it. A nap is a sleep in the kernel: the watcher never spins
  // (ranks may outnumber cores), and a loop of blocking calls pays no
  // wake-up per call (all_reduce of 8 B, 2 ranks: 15-18 us when track()
  // woke the watcher at every call, which then took the engine from the
  // waiting thread, 7.7 us without).
  static constexpr std::chrono::microseconds kMinNap{20};
  static constexpr std::chrono::microseconds kMaxNap{200};
  static constexpr std::chrono::milliseconds kDormantNap{10};
  static constexpr std::chrono::milliseconds kIdleFor{20};
  // A Work it looks after that still runs this long after it started is
  // tested (one progress pass, if goal's engine is free) at each look, not
  // only looked at: a safety net for a helper that goal holds off, as it
  // does for up to 3 ms after a loop of Runs and Waits (the application's
  // polling mark, goal-rt's progress/appmark.rs). Seen at 4 ranks on 2
  // cores: a 64 KiB all_reduce started right after a barrier not finished
  // after 30 ms of computation, in 1 of 2 runs, without it.
  // GOAL_TORCH_MOVE_AFTER_US overrides it (docs/python.md).
  static constexpr std::chrono::milliseconds kMoveAfter{2};

  // Whether the watcher must look after `w` (see above). Under
  // GOAL_PROGRESS=manual nothing else moves a Work nobody waits for, so
  // every one not waited for is looked after (and tested).
  static bool mine(const c10::intrusive_ptr<GoalWork>& w) {
    return w->futureWanted() || w.use_count() == 1 || manualProgress();
  }

  void run() {
    askShortSlice();
    std::chrono::microseconds moveAfter = kMoveAfter;
    if (const char* e = std::getenv("GOAL_TORCH_MOVE_AFTER_US")) moveAfter = std::chrono::microseconds(std::atol(e));
    std::vector<c10::intrusive_ptr<GoalWork>> tracked, still;
    std::chrono::microseconds nap = kMinNap;
    auto idleSince = std::chrono::steady_clock::now();
    for (;;) {
      {
        std::unique_lock<std::mutex> l(m);
        if (pending.empty() && tracked.empty()) {
          if (stop) return;
          if (std::chrono::steady_clock::now() - idleSince >= kIdleFor) {
            asleep = true;
            cv.wait(l, [&] { return stop || !pending.empty(); });
            asleep = false;
            if (stop && pending.empty()) return;
          }
        }
        for (auto& w : pending) tracked.push_back(std::move(w));
        pending.clear();
        held = tracked.size();  // under `m`, with `pending` (see trackedWorks)
        wanted = false;
      }
      bool completed = false, looking = false;
      auto now = std::chrono::steady_clock::now();
      still.clear();
      for (auto& w : tracked) {
        if (w->ended()) continue;  // waited for: its waiter completed it
        if (w->waited() || !mine(w)) {
          // A thread in wait(), now or later, completes it (goal's helper
          // moves it meanwhile); the watcher only holds it, to see it dropped.
          still.push_back(w);
        } else if (w->poll(now - w->started() >= moveAfter)) {
          completed = true;
        } else {
          still.push_back(w);
          looking = true;
        }
      }
      tracked.swap(still);
      held = tracked.size();
      nap = completed ? kMinNap : std::min(nap * 2, kMaxNap);
      if (completed || looking || !tracked.empty()) idleSince = now;
      std::unique_lock<std::mutex> l(m);
      if (stop) {
        // Finalizing: what still runs is abandoned with its handles.
        if (pending.empty()) return;
        continue;
      }
      if (!tracked.empty() && !looking && !completed) {
        dormant = true;
        cv.wait_for(l, kDormantNap, [&] { return stop || wanted; });
        dormant = false;
      } else {
        cv.wait_for(l, nap, [&] { return stop; });
      }
    }
  }
};
Watcher* watcher = nullptr;
std::mutex watcherMutex;
}  // namespace

void track(const c10::intrusive_ptr<GoalWork>& w) {
  std::lock_guard<std::mutex> g(watcherMutex);
  if (!watcher) {
    watcher = new Watcher();
    watcher->thread = std::thread([] { watcher->run(); });
  }
  bool wake;
  {
    std::lock_guard<std::mutex> l(watcher->m);
    watcher->pending.push_back(w);
    wake = watcher->asleep;
  }
  if (wake) watcher->cv.notify_one();
}

size_t trackedWorks() {
  std::lock_guard<std::mutex> g(watcherMutex);
  if (!watcher) return 0;
  std::lock_guard<std::mutex> l(watcher->m);
  return watcher->pending.size() + watcher->held;
}

void futureWanted() {
  std::lock_guard<std::mutex> g(watcherMutex);
  if (!watcher) return;
  bool wake;
  {
    std::lock_guard<std::mutex> l(watcher->m);
    watcher->wanted = true;
    wake = watcher->dormant;
  }
  if (wake) watcher->cv.notify_one();
}

void shutdown() {
  {
    std::lock_guard<std::mutex> g(watcherMutex);
    if (watcher) {
      {
        std::lock_guard<std::mutex> l(watcher->m);
        watcher->stop = true;
      }
      watcher->cv.notify_one();
      watcher->thread.join();
      delete watcher;
      watcher = nullptr;
    }
  }
  if (GOAL_IsInitialized()) GOAL_Finalize();
}

// ---- Bootstrap over the Store ----

namespace {
struct StoreBoot {
  c10::intrusive_ptr<c10d::Store> store;
  int rank;
  int size;
  int round = 0;
  std::string error;
};

// GOAL_AllgatherFunction over the store: round k, rank r sets
// "goal_boot/k/r" and reads every rank's key of the round (get waits for it,
// up to the store's timeout), as Gloo exchanges its addresses.
int storeAllgather(const void* mine, size_t len, void* all, void* ctx) {
  auto* b = static_cast<StoreBoot*>(ctx);
  try {
    std::string prefix = "goal_boot/" + std::to_string(b->round++) + "/";
    const auto* p = static_cast<const uint8_t*>(mine);
    b->store->set(prefix + std::to_string(b->rank), std::vector<uint8_t>(p, p + len));
    auto* out = static_cast<uint8_t*>(all);
    for (int r = 0; r < b->size; r++) {
      std::vector<uint8_t> v = b->store->get(prefix + std::to_string(r));
      if (v.size() != len) {
        b->error = "rank " + std::to_string(r) + " gave " + std::to_string(v.size()) +
                   " bytes in bootstrap round, this rank " + std::to_string(len);
        return -1;
      }
      std::memcpy(out + r * len, v.data(), len);
    }
    return 0;
  } catch (const std::exception& e) {
    b->error = e.what();
    return -1;
  }
}
}  // namespace

void bootstrap(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size) {
  if (GOAL_IsInitialized()) {
    if (GOAL_GroupSize() < size) {
      throw std::runtime_error("goal torch backend: goal runs " + std::to_string(GOAL_GroupSize()) +
                               " ranks, fewer than this process group's " + std::to_string(size));
    }
    return;
  }
  StoreBoot b{store, rank, size};
  GOAL_Bootstrap boot{rank, size, storeAllgather, &b};
  int rc = GOAL_InitWith(&boot);
  if (rc != GOAL_SUCCESS) {
    if (!b.error.empty()) {
      throw std::runtime_error("goal torch backend: GOAL_InitWith over the c10d store: " + b.error);
    }
    fail("GOAL_InitWith over the c10d store", rc);
  }
}

}  // namespace goal_torch
