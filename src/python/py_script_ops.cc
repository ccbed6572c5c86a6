// The Python side of tf.py_function / tf.numpy_function inside graphs (ops/py_func.h): the hooks the
// EagerPyFunc and PyFunc kernels and EagerPyFunc's gradient call, and the handles that keep a traced
// function's registration alive while a graph holds its node. The package (ember/ops/script_ops.py) keeps
// the functions and does the conversions; this file only crosses into Python.
#include <Python.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <atomic>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "ember/ops/py_func.h"
#include "python/py_tensor.h"
#include "python/py_tensor_list.h"

namespace nb = nanobind;

namespace ember::python {
namespace {

PyObject*& callback() {
  static PyObject* c = nullptr;  // leaked: kernels may run while the interpreter exits
  return c;
}

// What a node's kPyFuncCallableAttr holds (Note [Who keeps a py_function alive] in ops/py_func.h): the
// package's registration of the function (a strong reference) and whether a gradient of the node was built.
// The handle tensor's buffer is empty and points at it; the buffer's release frees it.
struct CallableHandle {
  PyObject* registration;
  std::atomic<bool> gradient_built{false};
};

// The live handles, so that a kPyFuncCallableAttr that is not one (the empty default of a graph read back,
// or whatever tensor a raw op was given) is never taken for one.
struct LiveHandles {
  std::mutex mu;
  std::unordered_set<const void*> handles;
  // Registrations whose last handle went on a thread without the GIL, to be dropped under it.
  std::vector<PyObject*> pending;
  bool drain_scheduled = false;
};
LiveHandles& live() {
  static auto* l = new LiveHandles;  // leaked: graphs may be destroyed while the interpreter exits
  return *l;
}

CallableHandle* handle_of(const TensorImpl& callable) {
  const void* data = callable.is_symbolic() ? nullptr : callable.buffer()->data();
  std::lock_guard<std::mutex> lock(live().mu);
  return live().handles.count(data) != 0 ? static_cast<CallableHandle*>(const_cast<void*>(data)) : nullptr;
}

int drain_pending(void*) {
  std::vector<PyObject*> registrations;
  {
    std::lock_guard<std::mutex> lock(live().mu);
    registrations.swap(live().pending);
    live().drain_scheduled = false;
  }
  for (PyObject* r : registrations) Py_DECREF(r);
  return 0;
}

// Note [Releasing a py_function from any thread]
// The last graph holding a function may go on any thread. One that holds the GIL drops the registration
// at once; another hands it to the interpreter's main thread (Py_AddPendingCall) instead of waiting for
// the GIL, which a Python thread may hold while it waits for a lock this thread holds (a plan cache's).
void release_handle(void* context) {
  auto* handle = static_cast<CallableHandle*>(context);
  PyObject* registration = handle->registration;
  bool schedule = false;
  {
    std::lock_guard<std::mutex> lock(live().mu);
    live().handles.erase(handle);
    if (Py_IsInitialized() && !PyGILState_Check()) {
      live().pending.push_back(registration);
      schedule = !live().drain_scheduled;
      live().drain_scheduled = true;
    }
  }
  delete handle;
  if (!Py_IsInitialized()) return;  // the interpreter is gone: leak the reference rather than touch it
  if (PyGILState_Check()) {
    Py_DECREF(registration);
    return;
  }
  if (schedule && Py_AddPendingCall(&drain_pending, nullptr) != 0) {
    std::lock_guard<std::mutex> lock(live().mu);  // the queue is full: the next handle made drains it
    live().drain_scheduled = false;
  }
}

// Note [Calling a py_function from a kernel]
// The kernel runs on a pool thread, or inline on the caller's: it takes the GIL here. A caller whose plan
// runs on the pool released it first (PyGraphFunction::call, py_call_memo.cc's run_entry), so neither
// waits on the other; an inline caller still holds it, and taking it again is a no-op.
// The package's callback never raises: it gives either the results (a list of tensors of the dtypes
// Tout names) or (code, message), the error of the function mapped as TensorFlow maps it.
Status call_python(const std::string& token, bool eager, const TensorImpl& callable,
                   std::span<TensorImpl* const> inputs, const std::vector<DType>& tout,
                   std::vector<TensorRef>& outputs) {
  if (!Py_IsInitialized() || callback() == nullptr)
    return make_error(Code::kFailedPrecondition, "py_function: no Python runtime to call");
  CallableHandle* handle = handle_of(callable);
  nb::gil_scoped_acquire gil;
  try {
    // The node's own handle holds the registration while the node exists, and so during this call.
    nb::object registration = handle != nullptr ? nb::borrow(handle->registration) : nb::none();
    const bool keep_for_gradient =
        handle != nullptr && handle->gradient_built.load(std::memory_order_acquire);
    nb::object result =
        nb::borrow(callback())(token, eager, registration, keep_for_gradient, wrap_tensor_list(inputs));
    if (nb::isinstance<nb::tuple>(result)) {
      auto code = nb::cast<int>(result[0]);
      return Status(static_cast<Code>(code), nb::cast<std::string>(result[1]));
    }
    for (nb::handle h : result) {
      if (!is_tensor(h.ptr()) || impl_of(h.ptr())->is_symbolic())
        return make_error(Code::kInternal, "py_function ", token, ": the callback gave no eager tensor");
      outputs.emplace_back(impl_of(h.ptr()));
    }
    if (outputs.size() != tout.size())
      return make_error(Code::kInternal, "py_function ", token, ": the callback gave ", outputs.size(),
                        " tensors for ", tout.size(), " outputs");
    return Status::OK();
  } catch (nb::python_error& e) {  // a bug of the callback itself
    return make_error(Code::kInternal, "py_function ", token, ": ", e.what());
  }
}

void note_gradient_built(const TensorImpl& callable) {
  if (CallableHandle* handle = handle_of(callable))
    handle->gradient_built.store(true, std::memory_order_release);
}

}  // namespace

void bind_script_ops(nb::module_& m) {
  m.def("set_py_func_callback", [](nb::object fn) {
    Py_XDECREF(callback());
    callback() = fn.release().ptr();
    set_py_func_hooks({&call_python, &note_gradient_built});
  });
  // An empty uint8 tensor that holds `registration` until the last reference to it (a graph node's
  // kPyFuncCallableAttr) goes.
  m.def("py_func_callable_handle", [](nb::object registration) {
    drain_pending(nullptr);
    auto* handle = new CallableHandle{registration.release().ptr()};
    {
      std::lock_guard<std::mutex> lock(live().mu);
      live().handles.insert(handle);
    }
    Buffer* buffer = Buffer::wrap_external(handle, 0, &release_handle, handle);
    PyObject* tensor = wrap_tensor(TensorImpl::adopt_buffer(buffer, DType::kUInt8, Shape{0}));
    if (tensor == nullptr) throw nb::python_error();
    return nb::steal(tensor);
  });
  // How many handles exist (for tests: a dropped function's registration is released).
  m.def("py_func_callable_handles", [] {
    std::lock_guard<std::mutex> lock(live().mu);
    return live().handles.size();
  });
}

}  // namespace ember::python
