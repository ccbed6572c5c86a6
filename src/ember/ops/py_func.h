// The ops that call a Python function from a graph (tf.py_function, tf.numpy_function; docs/py_function.md):
// EagerPyFunc hands the function eager tensors and is differentiable, PyFunc and PyFuncStateless hand it
// NumPy arrays. The function lives in the Python package, keyed by the op's `token` attribute; the package
// installs the hook that calls it when it loads, and without it the ops fail with FailedPrecondition.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember {
class OpRegistry;

struct PyFuncHooks {
  /// Calls the function registered as `token` on `inputs` (as eager tensors when `eager`, else as NumPy
  /// arrays) and gives its results, one per `tout`, converted to those dtypes. Takes the GIL itself: it
  /// runs on executor threads.
  Status (*call)(const std::string& token, bool eager, std::span<TensorImpl* const> inputs,
                 const std::vector<DType>& tout, std::vector<TensorRef>& outputs) = nullptr;
};
void set_py_func_hooks(PyFuncHooks hooks);

void register_py_func_ops(OpRegistry& r);  // EagerPyFunc, PyFunc, PyFuncStateless

}  // namespace ember
