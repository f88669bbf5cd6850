// goal_torch backend: each c10d collective as a goal schedule compiled once
// per (op, sizes, dtype, root, reduction) with run-time buffers, started with
// the call's tensors. Lists of tensors (all_gather, reduce_scatter,
// all_to_all, and gather and scatter of small blocks) go through one flat
// staging tensor, copied in before the run or out when it ends; the *_base
// forms run on the tensors, and so do gather and scatter of blocks of 64 KiB
// and more (plain messages, the root's tensors as run-time buffers).
#include "goal_backend.hpp"

#include <numeric>

namespace goal_torch {

namespace {

void* at(int i) { return GOAL_BUF_AT_RUN(i); }

struct Elem {
  int dt;
  int width;
};

// goal's type of a tensor's elements, for reductions.
Elem elemOf(const at::Tensor& t, const char* call) {
  switch (t.scalar_type()) {
    case at::kFloat: return {GOAL_FLOAT, 32};
    case at::kDouble: return {GOAL_FLOAT, 64};
    case at::kHalf: return {GOAL_FLOAT, 16};
    case at::kBFloat16: return {GOAL_BFLOAT, 16};
    case at::kChar: return {GOAL_SINT, 8};
    case at::kShort: return {GOAL_SINT, 16};
    case at::kInt: return {GOAL_SINT, 32};
    case at::kLong: return {GOAL_SINT, 64};
    case at::kByte: return {GOAL_UINT, 8};
    default:
      throw std::runtime_error(std::string("goal torch backend: ") + call + " of " +
                               std::string(c10::toString(t.scalar_type())) +
                               " tensors is not supported (reductions take float32/64, "
                               "float16, bfloat16 and the integer types)");
  }
}

bool isFloat(const at::Tensor& t) { return at::isFloatingType(t.scalar_type()); }

// goal's operator for torch's, and whether the result is divided by the
// group size afterwards (AVG, which goal does as a sum).
GOAL_Op opOf(const c10d::ReduceOp& op, const at::Tensor& t, const char* call, bool* average) {
  *average = false;
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return GOAL_ADD;
    case c10d::ReduceOp::PRODUCT: return GOAL_MUL;
    case c10d::ReduceOp::MIN: return GOAL_MIN;
    case c10d::ReduceOp::MAX: return GOAL_MAX;
    case c10d::ReduceOp::AVG:
      if (!isFloat(t)) {
        throw std::runtime_error(std::string("goal torch backend: ") + call +
                                 " with ReduceOp.AVG needs floating-point tensors");
      }
      *average = true;
      return GOAL_ADD;
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      if (isFloat(t)) {
        throw std::runtime_error(std::string("goal torch backend: ") + call +
                                 " with a bitwise ReduceOp needs integer tensors");
      }
      return op.op_ == c10d::ReduceOp::BAND ? GOAL_AND
             : op.op_ == c10d::ReduceOp::BOR ? GOAL_OR : GOAL_XOR;
    default:
      throw std::runtime_error(std::string("goal torch backend: ") + call +
                               ": this ReduceOp (PREMUL_SUM or a custom one) is not supported");
  }
}

// The one CPU, contiguous tensor of a call.
at::Tensor& one(std::vector<at::Tensor>& ts, const char* call) {
  if (ts.size() != 1) {
    throw std::runtime_error(std::string("goal torch backend: ") + call +
                             " takes exactly one tensor per call, got " + std::to_string(ts.size()));
  }
  return ts[0];
}

void checkCpu(const at::Tensor& t, const char* call) {
  if (!t.device().is_cpu()) {
    throw std::runtime_error(std::string("goal torch backend: ") + call + " got a tensor on " +
                             t.device().str() + ": goal takes CPU tensors only");
  }
  if (!t.is_contiguous()) {
    throw std::runtime_error(std::string("goal torch backend: ") + call +
                             " got a non-contiguous tensor: call .contiguous() first");
  }
  if (t.is_sparse()) {
    throw std::runtime_error(std::string("goal torch backend: ") + call + ": sparse tensors are not supported");
  }
}

size_t bytesOf(const at::Tensor& t) { return t.numel() * t.element_size(); }

std::string dtypeKey(const at::Tensor& t) { return c10::toString(t.scalar_type()); }

int tagOf(const std::string& groupId) {
  // FNV-1a of the group's name, the same on every rank.
  uint32_t h = 2166136261u;
  for (unsigned char c : groupId) h = (h ^ c) * 16777619u;
  return static_cast<int>(h & 0x3fffffff);
}

}  // namespace

GoalBackend::GoalBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                         std::vector<int64_t> globalRanks, const std::string& groupId)
    : c10d::Backend(rank, size) {
  // The first group constructed starts goal: torch builds the default
  // (world) group first, over the store every rank of the job shares.
  bool first = !GOAL_IsInitialized();
  if (first) bootstrap(store, rank, size);
  int world = GOAL_GroupSize();
  if (globalRanks.empty()) {
    if (size != world) {
      throw std::runtime_error("goal torch backend: group " + groupId + " of " + std::to_string(size) +
                               " ranks came without its global ranks (torch too old?)");
    }
    globalRanks.resize(size);
    std::iota(globalRanks.begin(), globalRanks.end(), 0);
  }
  if (static_cast<int>(globalRanks.size()) != size) {
    throw std::runtime_error("goal torch backend: group " + groupId + " has " + std::to_string(size) +
                             " ranks but " + std::to_string(globalRanks.size()) + " global ranks");
  }
  bool isWorld = size == world;
  for (int i = 0; isWorld && i < size; i++) isWorld = globalRanks[i] == i;
  if (first || (isWorld && groupId == "0")) {
    group_ = GOAL_GroupWorld();
  } else {
    // Every other group is goal's group of its global ranks, in torch's
    // order (so that torch's group rank is goal's), made by its members only.
    std::vector<int> ranks(globalRanks.begin(), globalRanks.end());
    int rc = GOAL_Group_create(GOAL_GroupWorld(), ranks.data(), size, tagOf(groupId), &group_);
    if (rc != GOAL_SUCCESS) fail("GOAL_Group_create for process group " + groupId, rc);
    ownsGroup_ = true;
  }
  if (GOAL_Group_rank(group_) != rank) {
    throw std::runtime_error("goal torch backend: this process is rank " + std::to_string(rank) +
                             " of group " + groupId + " for torch but " +
                             std::to_string(GOAL_Group_rank(group_)) + " for goal");
  }
}

GoalBackend::~GoalBackend() {
  if (!GOAL_IsInitialized()) return;  // finalized: goal took everything back
  for (auto& kv : cache_) GOAL_FreeSchedule(kv.second);
  for (auto& kv : pairs_) GOAL_Group_free(&kv.second);
  if (ownsGroup_) GOAL_Group_free(&group_);
}

GOAL_Schedule GoalBackend::cached(const std::string& key, const std::function<GOAL_Schedule()>& make) {
  std::lock_guard<std::mutex> g(mutex_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  GOAL_Schedule s = make();
  if (!s) fail("compiling " + key);
  cache_[key] = s;
  return s;
}

c10::intrusive_ptr<c10d::Work> GoalBackend::start(GOAL_Schedule s, std::vector<void*> bufs,
    std::vector<size_t> sizes, c10d::OpType type, std::vector<at::Tensor> outputs,
    std::function<void()> post, std::vector<at::Tensor> keep, const char* name, bool freeAfter) {
  GOAL_Handle h = GOAL_RunWith(s, bufs.data(), sizes.data(), static_cast<int>(bufs.size()));
  if (!h) {
    std::string msg = std::string("starting ") + name;
    const char* last = GOAL_LastError();
    std::string text = last ? last : "";
    if (freeAfter) GOAL_FreeSchedule(s);
    throw std::runtime_error("goal torch backend: " + msg + ": " + text);
  }
  // The tensors stay alive until the execution ends; a one-shot schedule
  // (alltoall with split sizes) is freed then.
  std::function<void()> release = [keep = std::move(keep), s, freeAfter]() mutable {
    keep.clear();
    if (freeAfter) GOAL_FreeSchedule(s);
  };
  auto w = c10::make_intrusive<GoalWork>(h, type, std::move(outputs), std::move(post),
                                         std::move(release), name);
  track(w);
  return w;
}

// ---- Reductions ----

c10::intrusive_ptr<c10d::Work> GoalBackend::allreduceTensor(at::Tensor& t, c10d::ReduceOp op, const char* name) {
  checkCpu(t, name);
  Elem e = elemOf(t, name);
  bool avg;
  GOAL_Op gop = opOf(op, t, name, &avg);
  size_t n = t.numel();
  std::string key = "allreduce/" + dtypeKey(t) + "/" + std::to_string(n) + "/" + std::to_string(gop);
  GOAL_Schedule s = cached(key, [&] {
    return GOAL_Allreduce_init_c_on(group_, at(0), at(0), n, e.dt, e.width, gop, GOAL_ALG_AUTO);
  });
  int p = size_;
  std::function<void()> post;
  if (avg) post = [t, p]() mutable { t.div_(p); };
  return start(s, {t.data_ptr()}, {bytesOf(t)}, c10d::OpType::ALLREDUCE, {t}, post, {t}, name);
}

c10::intrusive_ptr<c10d::Work> GoalBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                      const c10d::AllreduceOptions& opts) {
  return allreduceTensor(one(tensors, "all_reduce"), opts.reduceOp, "all_reduce");
}

c10::intrusive_ptr<c10d::Work> GoalBackend::reduce(std::vector<at::Tensor>& tensors,
                                                   const c10d::ReduceOptions& opts) {
  const char* name = "reduce";
  at::Tensor& t = one(tensors, name);
  checkCpu(t, name);
  Elem e = elemOf(t, name);
  bool avg;
  GOAL_Op gop = opOf(opts.reduceOp, t, name, &avg);
  size_t n = t.numel();
  int root = static_cast<int>(opts.rootRank);
  std::string key = "reduce/" + dtypeKey(t) + "/" + std::to_string(n) + "/" + std::to_string(gop) + "/" +
                    std::to_string(root);
  GOAL_Schedule s = cached(key, [&] {
    return GOAL_Reduce_init_c_on(group_, at(0), at(0), n, e.dt, e.width, gop, root, GOAL_ALG_AUTO);
  });
  int p = size_;
  std::function<void()> post;
  if (avg && rank_ == root) post = [t, p]() mutable { t.div_(p); };
  return start(s, {t.data_ptr()}, {bytesOf(t)}, c10d::OpType::REDUCE, {t}, post, {t}, name);
}

c10::intrusive_ptr<c10d::Work> GoalBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                 const c10d::ReduceScatterOptions& opts) {
  const char* name = "reduce_scatter_tensor";
  checkCpu(output, name);
  checkCpu(input, name);
  if (input.numel() != output.numel() * size_ || input.scalar_type() != output.scalar_type()) {
    throw std::runtime_error(std::string("goal torch backend: ") + name +
                             ": the input must hold group size x the output's elements, of its dtype");
  }
  Elem e = elemOf(output, name);
  bool avg;
  GOAL_Op gop = opOf(opts.reduceOp, output, name, &avg);
  size_t n = output.numel();
  std::string key = "reduce_scatter/" + dtypeKey(output) + "/" + std::to_string(n) + "/" + std::to_string(gop);
  GOAL_Schedule s = cached(key, [&] {
    return GOAL_Reduce_scatter_block_init_c_on(group_, at(0), at(1), n, e.dt, e.width, gop, GOAL_ALG_AUTO);
  });
  int p = size_;
  std::function<void()> post;
  if (avg) post = [output, p]() mutable { output.div_(p); };
  return start(s, {input.data_ptr(), output.data_ptr()}, {bytesOf(input), bytesOf(output)},
               c10d::OpType::_REDUCE_SCATTER_BASE, {output}, post, {input, output}, name);
}

c10::intrusive_ptr<c10d::Work> GoalBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
    std::vector<std::vector<at::Tensor>>& inputs, const c10d::ReduceScatterOptions& opts) {
  const char* name = "reduce_scatter";
  at::Tensor& out = one(outputs, name);
  if (inputs.size() != 1 || static_cast<int>(inputs[0].size()) != size_) {
    throw std::runtime_error("goal torch backend: reduce_scatter takes one list of group-size tensors");
  }
  for (auto& t : inputs[0]) {
    if (t.numel() != out.numel()) {
      throw std::runtime_error("goal torch backend: reduce_scatter of tensors of different sizes is not supported");
    }
  }
  at::Tensor flat = at::cat(inputs[0]).contiguous();
  return _reduce_scatter_base(out, flat, opts);
}

// ---- Data movement ----

c10::intrusive_ptr<c10d::Work> GoalBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                      const c10d::BroadcastOptions& opts) {
  const char* name = "broadcast";
  at::Tensor& t = one(tensors, name);
  checkCpu(t, name);
  size_t bytes = bytesOf(t);
  int root = static_cast<int>(opts.rootRank);
  std::string key = "bcast/" + std::to_string(bytes) + "/" + std::to_string(root);
  GOAL_Schedule s = cached(key, [&] { return GOAL_Bcast_init_on(group_, at(0), bytes, root, GOAL_ALG_AUTO); });
  return start(s, {t.data_ptr()}, {bytes}, c10d::OpType::BROADCAST, {t}, nullptr, {t}, name);
}

c10::intrusive_ptr<c10d::Work> GoalBackend::allgatherFlat(at::Tensor& out, at::Tensor& in,
                                                          std::function<void()> post, const char* name) {
  checkCpu(in, name);
  checkCpu(out, name);
  size_t bytes = bytesOf(in);
  if (bytesOf(out) != bytes * size_) {
    throw std::runtime_error(std::string("goal torch backend: ") + name +
                             ": the output must hold group size x the input's bytes");
  }
  std::string key = "allgather/" + std::to_string(bytes);
  GOAL_Schedule s = cached(key, [&] { return GOAL_Allgather_init_on(group_, at(0), bytes, at(1), GOAL_ALG_AUTO); });
  return start(s, {in.data_ptr(), out.data_ptr()}, {bytes, bytesOf(out)}, c10d::OpType::ALLGATHER, {out},
               std::move(post), {in, out}, name);
}

c10::intrusive_ptr<c10d::Work> GoalBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                            const c10d::AllgatherOptions&) {
  return allgatherFlat(output, input, nullptr, "all_gather_into_tensor");
}

c10::intrusive_ptr<c10d::Work> GoalBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
    std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions&) {
  const char* name = "all_gather";
  at::Tensor& in = one(inputs, name);
  if (outputs.size() != 1 || static_cast<int>(outputs[0].size()) != size_) {
    throw std::runtime_error("goal torch backend: all_gather takes one list of group-size output tensors");
  }
  for (auto& t : outputs[0]) {
    if (t.numel() != in.numel() || t.scalar_type() != in.scalar_type()) {
      throw std::runtime_error("goal torch backend: all_gather of tensors of different sizes or dtypes is not supported");
    }
  }
  at::Tensor flat = at::empty({static_cast<int64_t>(in.numel()) * size_}, in.options());
  std::vector<at::Tensor> outs = outputs[0];
  int64_t n = in.numel();
  auto post = [flat, outs, n]() mutable {
    for (size_t r = 0; r < outs.size(); r++) outs[r].copy_(flat.narrow(0, r * n, n).view_as(outs[r]));
  };
  auto w = allgatherFlat(flat, in, post, name);
  return w;
}

// Checks the root's list of a gather or scatter: group size tensors of
// `like`'s size and dtype.
void checkRootList(const std::vector<std::vector<at::Tensor>>& lists, const at::Tensor& like, int size,
                   const char* name) {
  if (lists.size() != 1 || static_cast<int>(lists[0].size()) != size) {
    throw std::runtime_error(std::string("goal torch backend: ") + name +
                             "'s root takes one list of group-size tensors");
  }
  for (auto& t : lists[0]) {
    checkCpu(t, name);
    if (t.numel() != like.numel() || t.scalar_type() != like.scalar_type()) {
      throw std::runtime_error(std::string("goal torch backend: ") + name +
                               " of tensors of different sizes or dtypes is not supported");
    }
  }
}

GOAL_Schedule GoalBackend::rootListSchedule(bool gather, size_t bytes, int root, bool ownCopy) {
  std::string key = std::string(gather ? "gather-list/" : "scatter-list/") + std::to_string(bytes) + "/" +
                    std::to_string(root) + (ownCopy ? "/copy" : "");
  return cached(key, [&]() -> GOAL_Schedule {
    GOAL_Graph g = GOAL_CreateGraphOn(group_);
    if (!g) return nullptr;
    bool ok = true;
    auto message = [&](int peer, int buf) {
      bool send = (rank_ == root) != gather;
      GOAL_Vertex v = send ? GOAL_Send_c(g, nullptr, bytes, peer, kRootListTag, GOAL_RUNBUF(buf))
                           : GOAL_Recv_c(g, nullptr, bytes, peer, kRootListTag, GOAL_RUNBUF(buf));
      ok = ok && v != GOAL_INVALID_VERTEX;
    };
    if (rank_ == root) {
      for (int r = 0; r < size_; r++) {
        if (r != root) message(r, r < root ? r : r - 1);
      }
      if (ownCopy) {
        // The root's own block: run-time buffers size - 1 (its tensor) and
        // size (its list's entry), see rootList.
        int src = gather ? size_ - 1 : size_, dst = gather ? size_ : size_ - 1;
        GOAL_Vertex v = GOAL_LocalOp_c(g, nullptr, nullptr, nullptr, GOAL_COPY, GOAL_BYTES, 8, bytes, GOAL_RUNBUF(src),
                                       GOAL_RUNBUF(src), GOAL_RUNBUF(dst));
        ok = ok && v != GOAL_INVALID_VERTEX;
      }
    } else {
      message(root, 0);
    }
    GOAL_Schedule s = ok ? GOAL_Compile(g) : nullptr;
    GOAL_FreeGraph(g);
    return s;
  });
}

c10::intrusive_ptr<c10d::Work> GoalBackend::rootList(bool gather, at::Tensor& mine,
    std::vector<std::vector<at::Tensor>>& lists, int root, const char* name) {
  size_t bytes = bytesOf(mine);
  // The root's own block is copied by the schedule, after its messages have
  // started: goal copies it in pieces and answers and moves the messages
  // between them. Copied here before the messages start, it delayed the
  // root's answer to its peers' requests (gather) or its own requests
  // (scatter) by the whole copy; copied here after they started, the
  // answer still waited for the copy unless the helper thread took the CPU
  // from it (2 ranks on 2 emulated hosts, gather 1 MiB: 0.78-1.05 of Gloo's
  // time, the same transfer as broadcast 0.6-0.9; in the schedule 0.72-0.77,
  // 520-534 us against 555-656). With more ranks than run-time buffers allow
  // (the root's tensor and its entry take two more), or the root's tensor
  // its own entry, it is copied here after the start.
  bool ownCopy = rank_ == root && size_ + 1 <= GOAL_RUNBUF_SLOTS && !mine.is_same(lists[0][root]);
  GOAL_Schedule s = rootListSchedule(gather, bytes, root, ownCopy);
  std::vector<void*> bufs;
  std::vector<size_t> sizes;
  std::vector<at::Tensor> keep{mine};
  if (rank_ == root) {
    auto& list = lists[0];
    for (int r = 0; r < size_; r++) {
      if (r == root) continue;
      bufs.push_back(list[r].data_ptr());
      sizes.push_back(bytes);
      keep.push_back(list[r]);
    }
    if (ownCopy) {
      bufs.push_back(mine.data_ptr());
      bufs.push_back(list[root].data_ptr());
      sizes.push_back(bytes);
      sizes.push_back(bytes);
      keep.push_back(list[root]);
    }
  } else {
    bufs.push_back(mine.data_ptr());
    sizes.push_back(bytes);
  }
  std::vector<at::Tensor> outs = gather ? (rank_ == root ? lists[0] : std::vector<at::Tensor>{}) : std::vector<at::Tensor>{mine};
  auto w = start(s, std::move(bufs), std::move(sizes), gather ? c10d::OpType::GATHER : c10d::OpType::SCATTER, outs,
                 nullptr, std::move(keep), name);
  // Otherwise after the start (the schedule neither reads nor writes the
  // block then), before the call returns: no caller sees the Work before
  // the block is in place.
  if (rank_ == root && !ownCopy) {
    auto& list = lists[0];
    if (gather) {
      if (!list[root].is_same(mine)) list[root].view(-1).copy_(mine.view(-1));
    } else if (!mine.is_same(list[root])) {
      mine.view(-1).copy_(list[root].view(-1));
    }
  }
  return w;
}

c10::intrusive_ptr<c10d::Work> GoalBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
    std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) {
  const char* name = "gather";
  at::Tensor& in = one(inputs, name);
  checkCpu(in, name);
  int root = static_cast<int>(opts.rootRank);
  size_t bytes = bytesOf(in);
  if (rank_ == root) checkRootList(outputs, in, size_, name);
  if (bytes >= kRootListMin && size_ <= kRootListMaxRanks) return rootList(true, in, outputs, root, name);
  at::Tensor flat;
  std::function<void()> post;
  std::vector<at::Tensor> outs;
  if (rank_ == root) {
    outs = outputs[0];
    flat = at::empty({static_cast<int64_t>(in.numel()) * size_}, in.options());
    int64_t n = in.numel();
    post = [flat, outs, n]() mutable {
      for (size_t r = 0; r < outs.size(); r++) outs[r].copy_(flat.narrow(0, r * n, n).view_as(outs[r]));
    };
  }
  std::string key = "gather/" + std::to_string(bytes) + "/" + std::to_string(root);
  GOAL_Schedule s = cached(key, [&] { return GOAL_Gather_init_on(group_, at(0), bytes, at(1), root, GOAL_ALG_AUTO); });
  void* rbuf = flat.defined() ? flat.data_ptr() : nullptr;
  size_t rbytes = flat.defined() ? bytesOf(flat) : 0;
  std::vector<at::Tensor> keep{in};
  if (flat.defined()) keep.push_back(flat);
  return start(s, {in.data_ptr(), rbuf}, {bytes, rbytes}, c10d::OpType::GATHER, outs, post, keep, name);
}

c10::intrusive_ptr<c10d::Work> GoalBackend::scatter(std::vector<at::Tensor>& outputs,
    std::vector<std::vector<at::Tensor>>& inputs, const c10d::ScatterOptions& opts) {
  const char* name = "scatter";
  at::Tensor& out = one(outputs, name);
  checkCpu(out, name);
  int root = static_cast<int>(opts.rootRank);
  size_t bytes = bytesOf(out);
  if (rank_ == root) checkRootList(inputs, out, size_, name);
  if (bytes >= kRootListMin && size_ <= kRootListMaxRanks) return rootList(false, out, inputs, root, name);
  at::Tensor flat;
  if (rank_ == root) flat = at::cat(inputs[0]).contiguous();
  std::string key = "scatter/" + std::to_string(bytes) + "/" + std::to_string(root);
  GOAL_Schedule s = cached(key, [&] { return GOAL_Scatter_init_on(group_, at(0), bytes, at(1), root, GOAL_ALG_AUTO); });
  void* sbuf = flat.defined() ? flat.data_ptr() : nullptr;
  size_t sbytes = flat.defined() ? bytesOf(flat) : 0;
  std::vector<at::Tensor> keep{out};
  if (flat.defined()) keep.push_back(flat);
  return start(s, {sbuf, out.data_ptr()}, {sbytes, bytes}, c10d::OpType::SCATTER, {out}, nullptr, keep, name);
}

c10::intrusive_ptr<c10d::Work> GoalBackend::alltoallv(at::Tensor& out, at::Tensor& in,
    const std::vector<size_t>& sbytes, const std::vector<size_t>& rbytes, std::function<void()> post,
    const char* name) {
  std::vector<size_t> sd(size_), rd(size_);
  size_t so = 0, ro = 0;
  for (int r = 0; r < size_; r++) {
    sd[r] = so;
    so += sbytes[r];
    rd[r] = ro;
    ro += rbytes[r];
  }
  if (so != bytesOf(in) || ro != bytesOf(out)) {
    throw std::runtime_error(std::string("goal torch backend: ") + name +
                             ": the split sizes do not add up to the tensors' first dimension");
  }
  GOAL_Schedule s;
  {
    // Each rank knows only its own splits, so the schedule is compiled at
    // every call (every rank compiles, in call order) and freed at its end.
    std::lock_guard<std::mutex> g(mutex_);
    s = GOAL_Alltoallv_init_on(group_, at(0), sbytes.data(), sd.data(), at(1), rbytes.data(), rd.data(),
                               GOAL_ALG_AUTO);
  }
  if (!s) fail(std::string("compiling ") + name);
  return start(s, {in.data_ptr(), out.data_ptr()}, {so, ro}, c10d::OpType::ALLTOALL_BASE, {out},
               std::move(post), {in, out}, name, true);
}

c10::intrusive_ptr<c10d::Work> GoalBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
    std::vector<int64_t>& outputSplits, std::vector<int64_t>& inputSplits, const c10d::AllToAllOptions&) {
  const char* name = "all_to_all_single";
  checkCpu(output, name);
  checkCpu(input, name);
  if (outputSplits.empty() && inputSplits.empty()) {
    size_t bytes = bytesOf(input);
    if (bytes % size_ != 0 || bytesOf(output) != bytes) {
      throw std::runtime_error("goal torch backend: all_to_all_single without split sizes needs input and "
                               "output of the same size, a multiple of the group size");
    }
    size_t block = bytes / size_;
    std::string key = "alltoall/" + std::to_string(block);
    GOAL_Schedule s = cached(key, [&] { return GOAL_Alltoall_init_on(group_, at(0), block, at(1), GOAL_ALG_AUTO); });
    return start(s, {input.data_ptr(), output.data_ptr()}, {bytes, bytes}, c10d::OpType::ALLTOALL_BASE,
                 {output}, nullptr, {input, output}, name);
  }
  auto splitBytes = [&](const at::Tensor& t, const std::vector<int64_t>& splits) {
    std::vector<size_t> b(size_);
    int64_t rows = t.dim() ? t.size(0) : 1;
    size_t row = rows ? bytesOf(t) / rows : 0;
    for (int r = 0; r < size_; r++) b[r] = (splits.empty() ? rows / size_ : splits[r]) * row;
    if (!splits.empty() && static_cast<int>(splits.size()) != size_) {
      throw std::runtime_error("goal torch backend: all_to_all_single needs one split size per rank");
    }
    return b;
  };
  return alltoallv(output, input, splitBytes(input, inputSplits), splitBytes(output, outputSplits), nullptr, name);
}

c10::intrusive_ptr<c10d::Work> GoalBackend::alltoall(std::vector<at::Tensor>& outputs,
    std::vector<at::Tensor>& inputs, const c10d::AllToAllOptions&) {
  const char* name = "all_to_all";
  if (static_cast<int>(outputs.size()) != size_ || static_cast<int>(inputs.size()) != size_) {
    throw std::runtime_error("goal torch backend: all_to_all takes group-size lists of tensors");
  }
  std::vector<size_t> sb(size_), rb(size_);
  std::vector<at::Tensor> flatIn;
  for (int r = 0; r < size_; r++) {
    sb[r] = bytesOf(inputs[r]);
    rb[r] = bytesOf(outputs[r]);
    flatIn.push_back(inputs[r].contiguous().view(-1).view(at::kByte));
  }
  at::Tensor in = at::cat(flatIn);
  at::Tensor out = at::empty({static_cast<int64_t>(std::accumulate(rb.begin(), rb.end(), size_t(0)))},
                             at::TensorOptions().dtype(at::kByte));
  std::vector<at::Tensor> outs = outputs;
  auto post = [out, outs, rb]() mutable {
    int64_t off = 0;
    for (size_t r = 0; r < outs.size(); r++) {
      int64_t n = rb[r];
      outs[r].view(-1).view(at::kByte).copy_(out.narrow(0, off, n));
      off += n;
    }
  };
  return alltoallv(out, in, sb, rb, post, name);
}

c10::intrusive_ptr<c10d::Work> GoalBackend::barrier(const c10d::BarrierOptions&) {
  GOAL_Schedule s = cached("barrier", [&] { return GOAL_Barrier_init_on(group_, GOAL_ALG_AUTO); });
  return start(s, {}, {}, c10d::OpType::BARRIER, {}, nullptr, {}, "barrier");
}

// ---- Point to point ----

GOAL_Group GoalBackend::pairGroup(int peer) {
  // Called with mutex_ held. The pair's own group: its two members compile
  // their sends and receives in matching order, without the others.
  auto it = pairs_.find(peer);
  if (it != pairs_.end()) return it->second;
  int ranks[2] = {std::min(rank_, peer), std::max(rank_, peer)};
  GOAL_Group g = nullptr;
  int rc = GOAL_Group_create(group_, ranks, 2, 1, &g);
  if (rc != GOAL_SUCCESS) fail("GOAL_Group_create for the pair " + std::to_string(ranks[0]) + ", " +
                               std::to_string(ranks[1]) + " (send/recv)", rc);
  pairs_[peer] = g;
  return g;
}

c10::intrusive_ptr<c10d::Work> GoalBackend::p2p(at::Tensor& t, int peer, int tag, bool isSend) {
  const char* name = isSend ? "send" : "recv";
  checkCpu(t, name);
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw std::runtime_error(std::string("goal torch backend: ") + name + " with peer " + std::to_string(peer) +
                             ": not another rank of this group of " + std::to_string(size_));
  }
  if (tag < 0) throw std::runtime_error(std::string("goal torch backend: ") + name + " with a negative tag");
  size_t bytes = bytesOf(t);
  // Schedules pair across ranks by compile order, so a send and the
  // matching receive must be the same schedule: both ranks of the pair
  // compile, at the first message of these bytes and tag either way, one
  // schedule per direction (lower to higher rank, then back), and each runs
  // the direction it needs.
  std::string key = "p2p/" + std::to_string(peer) + "/" + std::to_string(bytes) + "/" + std::to_string(tag);
  bool up = (rank_ < peer) == isSend;  // the message goes from the lower rank to the higher
  GOAL_Schedule s;
  {
    std::lock_guard<std::mutex> g(mutex_);
    auto it = cache_.find(key + (up ? "/up" : "/down"));
    if (it != cache_.end()) {
      s = it->second;
    } else {
      GOAL_Group pair = pairGroup(peer);
      int lower = rank_ < peer;  // this rank is the pair's rank 0
      for (int dir = 0; dir < 2; dir++) {
        // dir 0: pair rank 0 sends to 1; dir 1: back.
        bool sending = (dir == 0) == lower;
        GOAL_Graph graph = GOAL_CreateGraphOn(pair);
        if (!graph) fail(std::string(name) + ": GOAL_CreateGraphOn");
        int other = lower ? 1 : 0;
        GOAL_Vertex v = sending ? GOAL_Send_c(graph, nullptr, bytes, other, tag, GOAL_RUNBUF(0))
                                : GOAL_Recv_c(graph, nullptr, bytes, other, tag, GOAL_RUNBUF(0));
        if (v == GOAL_INVALID_VERTEX) {
          GOAL_FreeGraph(graph);
          fail(std::string(name) + ": adding the message");
        }
        GOAL_Schedule one = GOAL_Compile(graph);
        GOAL_FreeGraph(graph);
        if (!one) fail("compiling " + key);
        cache_[key + (dir == 0 ? "/up" : "/down")] = one;
      }
      s = cache_[key + (up ? "/up" : "/down")];
    }
  }
  return start(s, {t.data_ptr()}, {bytes}, isSend ? c10d::OpType::SEND : c10d::OpType::RECV, {t}, nullptr, {t},
               name);
}

c10::intrusive_ptr<c10d::Work> GoalBackend::send(std::vector<at::Tensor>& tensors, int dstRank, int tag) {
  return p2p(one(tensors, "send"), dstRank, tag, true);
}

c10::intrusive_ptr<c10d::Work> GoalBackend::recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) {
  return p2p(one(tensors, "recv"), srcRank, tag, false);
}

c10::intrusive_ptr<c10d::Work> GoalBackend::recvAnysource(std::vector<at::Tensor>&, int) {
  throw std::runtime_error("goal torch backend: recv from any source (src=None) is not supported: name the source rank");
}

}  // namespace goal_torch
