"""The C++ source of host_check.py's compiled check, built by host_check_build.py with
torch.utils.cpp_extension.load_inline (a string rather than a .cpp file: a packaged single file
carries it as it carries any module, and the leaderboard's runner builds inline sources only).

A Watch holds the argument's lists with a copy of their items, and the tensors a bound launch reads
and writes with what the launch depends on: address, dtype, sizes and strides. unchanged() is true
only if every list still holds the same objects and every tensor still has that address and layout.
Values written in place do not matter (the kernel reads memory when it runs); a swap of a tensor's
memory (`.data =`, a storage resize_) changes its address, and an in-place layout change (t_,
resize_, set_, as_strided_, unsqueeze_ ...) its sizes or strides. Inference tensors, which have no
version counter, are read the same way. identity_key() gives the same reads, with the tensors' ids,
as the key a new tuple of the same tensors is looked up by.
"""

SOURCE = r"""
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <cstdint>
#include <vector>

namespace {

// Appends what a launch depends on: address, dtype, rank, sizes, strides.
void record(const at::Tensor& t, std::vector<int64_t>& out) {
  out.push_back(reinterpret_cast<int64_t>(t.data_ptr()));
  out.push_back(static_cast<int64_t>(t.scalar_type()));
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  out.push_back(static_cast<int64_t>(sizes.size()));
  out.insert(out.end(), sizes.begin(), sizes.end());
  out.insert(out.end(), strides.begin(), strides.end());
}

class Watch {
 public:
  // lists: the argument's lists (each checked item by item, by identity); tensors: the launch's.
  Watch(py::tuple lists, py::tuple tensors) : lists_(std::move(lists)), tensors_(std::move(tensors)) {
    py::list items;
    for (const auto& list : lists_) {
      if (!PyList_Check(list.ptr())) {
        throw py::type_error("Watch: lists must hold lists");
      }
      lengths_.push_back(PyList_GET_SIZE(list.ptr()));
      for (const auto& item : list) {
        items.append(item);
      }
    }
    items_ = py::tuple(items);
    for (const auto& obj : tensors_) {
      if (!THPVariable_Check(obj.ptr())) {
        throw py::type_error("Watch: tensors must hold tensors");
      }
      record(THPVariable_Unpack(obj.ptr()), state_);
    }
  }

  bool unchanged() const noexcept {
    try {
      return lists_unchanged() && tensors_unchanged();
    } catch (...) {  // a tensor that cannot tell its address or strides any more: changed
      return false;
    }
  }

 private:
  bool lists_unchanged() const {
    Py_ssize_t k = 0;
    for (size_t i = 0; i < lengths_.size(); ++i) {
      PyObject* list = PyTuple_GET_ITEM(lists_.ptr(), i);
      const Py_ssize_t n = PyList_GET_SIZE(list);
      if (n != lengths_[i]) {
        return false;
      }
      for (Py_ssize_t j = 0; j < n; ++j, ++k) {
        if (PyList_GET_ITEM(list, j) != PyTuple_GET_ITEM(items_.ptr(), k)) {
          return false;
        }
      }
    }
    return true;
  }

  bool tensors_unchanged() const {
    size_t at = 0;
    const Py_ssize_t count = PyTuple_GET_SIZE(tensors_.ptr());
    for (Py_ssize_t i = 0; i < count; ++i) {
      const at::Tensor& t = THPVariable_Unpack(PyTuple_GET_ITEM(tensors_.ptr(), i));
      const auto sizes = t.sizes();
      const auto strides = t.strides();
      const auto rank = static_cast<int64_t>(sizes.size());
      if (reinterpret_cast<int64_t>(t.data_ptr()) != state_[at] ||
          static_cast<int64_t>(t.scalar_type()) != state_[at + 1] || rank != state_[at + 2]) {
        return false;
      }
      at += 3;
      for (int64_t d = 0; d < rank; ++d) {
        if (sizes[d] != state_[at + d] || strides[d] != state_[at + rank + d]) {
          return false;
        }
      }
      at += 2 * rank;
    }
    return true;
  }

  py::tuple lists_;
  py::tuple items_;  // every list's items when watched, in order (held: ids cannot be reused)
  std::vector<Py_ssize_t> lengths_;
  py::tuple tensors_;
  std::vector<int64_t> state_;
};

// Which tensor objects these are and what a launch depends on (ids, then record() of each), as bytes:
// the key a new tuple of the same tensors is looked up by.
py::bytes identity_key(const py::tuple& tensors) {
  std::vector<int64_t> key;
  for (const auto& obj : tensors) {
    if (!THPVariable_Check(obj.ptr())) {
      throw py::type_error("identity_key: tensors must hold tensors");
    }
    key.push_back(reinterpret_cast<int64_t>(obj.ptr()));
    record(THPVariable_Unpack(obj.ptr()), key);
  }
  return py::bytes(reinterpret_cast<const char*>(key.data()), key.size() * sizeof(int64_t));
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  py::class_<Watch>(m, "Watch")
      .def(py::init<py::tuple, py::tuple>())
      .def("unchanged", &Watch::unchanged);
  m.def("identity_key", &identity_key);
}
"""
