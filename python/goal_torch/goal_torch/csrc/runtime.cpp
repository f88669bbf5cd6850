// goal_torch runtime: goal's start over the c10d Store, Works over goal
// handles, and the completion thread that finishes them in the background.
//
// A handle may be tested or waited on by one thread at a time (docs/api.md,
// Threads): each Work guards its handle with a mutex; the completion thread
// only try-locks it, so a Python thread blocked in wait() keeps it.
#include "goal_backend.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <thread>

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

GoalWork::GoalWork(GOAL_Handle h, c10d::OpType type, std::vector<at::Tensor> outputs,
                   std::function<void()> post, std::function<void()> release, const char* name)
    : c10d::Work(-1, type),
      handle_(h),
      outputs_(std::move(outputs)),
      post_(std::move(post)),
      release_(std::move(release)),
      name_(name),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()))) {}

// A Work is tracked by the completion thread until it ends, so a Work
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

bool GoalWork::poll() {
  std::unique_lock<std::mutex> lock(handleMutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  if (!finished_) {
    int rc = GOAL_Test(handle_);
    if (rc == 0) return false;
    finishLocked(rc);
  }
  lock.unlock();
  completeFuture();
  return true;
}

bool GoalWork::isCompleted() {
  if (finished_) return true;
  poll();  // tests the handle unless another thread holds it
  return finished_;
}

bool GoalWork::isSuccess() const { return error_.empty(); }

bool GoalWork::wait(std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(handleMutex_);
    if (!finished_) {
      int rc;
      if (timeout == kNoTimeout) {
        rc = GOAL_Wait(handle_);
      } else {
        rc = GOAL_WaitFor(handle_, timeout.count() / 1000.0);
        if (rc == 0) {
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

// ---- The completion thread ----

namespace {
struct Completer {
  std::mutex m;
  std::condition_variable cv;
  std::deque<c10::intrusive_ptr<GoalWork>> pending;
  std::thread thread;
  bool stop = false;

  // How long the thread sleeps between rounds that saw nothing end: from
  // 20 us (a DDP Future is complete at most that late after goal is done)
  // doubling up to 200 us.
  static constexpr std::chrono::microseconds kMinNap{20};
  static constexpr std::chrono::microseconds kMaxNap{200};

  void run() {
    std::vector<c10::intrusive_ptr<GoalWork>> mine;
    std::chrono::microseconds nap = kMinNap;
    for (;;) {
      {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [&] { return stop || !pending.empty() || !mine.empty(); });
        if (stop && pending.empty() && mine.empty()) return;
        while (!pending.empty()) {
          mine.push_back(std::move(pending.front()));
          pending.pop_front();
        }
      }
      bool progressed = false;
      std::vector<c10::intrusive_ptr<GoalWork>> still;
      for (auto& w : mine) {
        if (w->poll()) {
          progressed = true;
        } else {
          still.push_back(w);
        }
      }
      mine.swap(still);
      if (progressed) {
        nap = kMinNap;
      } else if (!mine.empty()) {
        // Nothing ended: sleep, never spin (more ranks than cores), longer
        // while nothing ends (a receive whose sender is far behind).
        std::this_thread::sleep_for(nap);
        nap = std::min(nap * 2, kMaxNap);
      }
      if (stop) {
        // Finalizing: what is still running is abandoned with its handles.
        std::lock_guard<std::mutex> l(m);
        if (pending.empty()) return;
      }
    }
  }
};
Completer* completer = nullptr;
std::mutex completerMutex;
}  // namespace

void track(const c10::intrusive_ptr<GoalWork>& w) {
  std::lock_guard<std::mutex> g(completerMutex);
  if (!completer) {
    completer = new Completer();
    completer->thread = std::thread([] { completer->run(); });
  }
  {
    std::lock_guard<std::mutex> l(completer->m);
    completer->pending.push_back(w);
  }
  completer->cv.notify_one();
}

void shutdown() {
  {
    std::lock_guard<std::mutex> g(completerMutex);
    if (completer) {
      {
        std::lock_guard<std::mutex> l(completer->m);
        completer->stop = true;
      }
      completer->cv.notify_one();
      completer->thread.join();
      delete completer;
      completer = nullptr;
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
