// Handing a kernel's or a replay's tensors to a Python function: the callbacks that run Python from C++
// (py_script_ops.cc's py_function kernels, a custom gradient's replay in py_function.cc) pass them as one
// list of ember.Tensor. Kept apart from py_tensor.h, which most of the extension includes.
#pragma once

#include <nanobind/nanobind.h>

#include <span>

#include "python/py_tensor.h"

namespace ember::python {

/// A list of new ember.Tensor objects sharing `tensors`' values. The caller holds the GIL; a failure to
/// wrap throws nb::python_error.
inline nanobind::list wrap_tensor_list(std::span<TensorImpl* const> tensors) {
  nanobind::list list;
  for (TensorImpl* t : tensors) {
    PyObject* wrapped = wrap_tensor(TensorRef(t));
    if (wrapped == nullptr) throw nanobind::python_error();
    list.append(nanobind::steal(wrapped));
  }
  return list;
}

}  // namespace ember::python
