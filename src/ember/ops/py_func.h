// The ops that call a Python function from a graph (tf.py_function, tf.numpy_function; docs/py_function.md):
// EagerPyFunc hands the function eager tensors and is differentiable, PyFunc and PyFuncStateless hand it
// NumPy arrays. The function lives in the Python package, keyed by the op's `token` attribute; the package
// installs the hook that calls it when it loads, and without it the ops fail with FailedPrecondition.
// Note [Who keeps a py_function alive]: the package's registry holds its functions weakly; each node also
// carries `_callable`, an empty tensor whose buffer holds the function's registration. Every graph that has
// the node (the trace, its optimized copies, the forward and backward functions replayed from it, callers it
// was inlined into, the gradient node, which copies it) thus keeps the function, and the last one to go
// releases it, as TensorFlow releases the functions of a graph with the graph. A GraphDef carries only the
// token: a graph read back runs the function while its registration lives in this process (a SavedModel's
// loader holds the registrations its library names).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember {
class OpRegistry;

/// The attribute of EagerPyFunc, PyFunc and PyFuncStateless that keeps their function alive (Note [Who keeps
/// a py_function alive]); it is not written to a GraphDef.
inline constexpr const char* kPyFuncCallableAttr = "_callable";

struct PyFuncHooks {
  /// Calls the function registered as `token` on `inputs` (as eager tensors when `eager`, else as NumPy
  /// arrays) and gives its results, one per `tout`, converted to those dtypes. `callable` is the node's
  /// kPyFuncCallableAttr. Takes the GIL itself: it runs on executor threads.
  Status (*call)(const std::string& token, bool eager, const TensorImpl& callable,
                 std::span<TensorImpl* const> inputs, const std::vector<DType>& tout,
                 std::vector<TensorRef>& outputs) = nullptr;
  /// Marks the function `callable` (a kPyFuncCallableAttr) as differentiated: a gradient node was built
  /// for it (Note [The gradient of a py_function] in py_func.cc). Needs no GIL.
  void (*gradient_built)(const TensorImpl& callable) = nullptr;
};
void set_py_func_hooks(PyFuncHooks hooks);

void register_py_func_ops(OpRegistry& r);  // EagerPyFunc, PyFunc, PyFuncStateless

}  // namespace ember
