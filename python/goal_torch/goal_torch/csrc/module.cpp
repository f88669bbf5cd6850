// goal_torch._C: the Python face of the backend: the creator function that
// torch.distributed calls for each process group, and goal's finalize.
#include "goal_backend.hpp"

#include <torch/extension.h>
#include <torch/csrc/utils/pybind.h>

#include <stdexcept>
#include <string>

namespace py = pybind11;

namespace {

c10::intrusive_ptr<c10d::Backend> create(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                         std::vector<int64_t> globalRanks, const std::string& groupId) {
  return c10::make_intrusive<goal_torch::GoalBackend>(store, rank, size, std::move(globalRanks), groupId);
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "goal's torch.distributed backend (C++ part); import goal_torch, not this";
  py::object backendBase = py::module::import("torch._C._distributed_c10d").attr("Backend");
  py::class_<goal_torch::GoalBackend, c10::intrusive_ptr<goal_torch::GoalBackend>>(m, "GoalBackend", backendBase);
  m.def("create_backend",
        [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::vector<int64_t> globalRanks,
           const std::string& groupId) {
          return c10::static_intrusive_pointer_cast<goal_torch::GoalBackend>(
              create(store, rank, size, std::move(globalRanks), groupId));
        },
        py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("global_ranks"), py::arg("group_id"),
        py::call_guard<py::gil_scoped_release>(),
        "The goal backend of one process group (goal starts with the first, over its store).");
  m.def("initialized", [] { return GOAL_IsInitialized() == 1; }, "Whether goal runs in this process.");
  m.def("tracked_works", [] { return goal_torch::trackedWorks(); },
        "How many Works the watcher thread holds that it has not seen end (for the tests: a Work dropped "
        "unwaited is released within about 10 ms of its end).");
  m.def("alloc_bytes",
        [](int64_t nbytes) {
          if (nbytes < 0)
            throw std::invalid_argument("goal_torch.empty: " + std::to_string(nbytes) + " bytes");
          void* p = GOAL_Alloc(nbytes > 0 ? static_cast<size_t>(nbytes) : 1);
          if (!p)
            throw std::runtime_error(std::string("goal_torch.empty: ") + GOAL_LastError());
          // The deleter runs wherever torch frees the storage, before or after
          // goal's finalize: GOAL_Free takes the block either way.
          return torch::from_blob(p, {nbytes}, [](void* q) { GOAL_Free(q); },
                                  torch::TensorOptions().dtype(torch::kUInt8));
        },
        py::arg("nbytes"), "A uint8 CPU tensor of nbytes in goal's shared heap (goal_torch.empty's storage).");
  m.def("finalize", [] { goal_torch::shutdown(); }, py::call_guard<py::gil_scoped_release>(),
        "Stops the watcher thread and finalizes goal (at exit).");
}
