// Turning a failed Status into a Python exception from inside nanobind-bound code.
#pragma once

#include <nanobind/nanobind.h>

#include "python/py_tensor.h"

namespace ember::python {

/// Sets the ember.errors exception for `s` and unwinds to nanobind, which re-raises it in Python.
[[noreturn]] inline void throw_status(const Status& s) {
  raise_status(s);
  throw nanobind::python_error();
}

}  // namespace ember::python
