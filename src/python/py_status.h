// Helpers for nanobind-bound code: a failed Status as a Python exception, a Python tensor argument as its
// TensorImpl.
#pragma once

#include <nanobind/nanobind.h>

#include <string>

#include "python/py_tensor.h"

namespace ember::python {

/// Sets the ember.errors exception for `s` and unwinds to nanobind, which re-raises it in Python.
[[noreturn]] inline void throw_status(const Status& s) {
  raise_status(s);
  throw nanobind::python_error();
}

/// The TensorImpl of an ember.Tensor argument; a TypeError naming `what` for anything else.
inline TensorImpl* tensor_arg(nanobind::handle h, const char* what) {
  if (!is_tensor(h.ptr()))
    throw nanobind::type_error((std::string(what) + ": expected an ember.Tensor").c_str());
  return impl_of(h.ptr());
}

}  // namespace ember::python
