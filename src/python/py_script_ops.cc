// The Python side of tf.py_function / tf.numpy_function inside graphs (ops/py_func.h): the hooks the
// EagerPyFunc and PyFunc kernels and EagerPyFunc's gradient call, and the handles that keep a traced
// function's registration alive while a graph holds its node. The package (ember/ops/script_ops.py) keeps
// the functions and does the conversions; this file only crosses into Python.
#include <Python.h>
#include <cxxabi.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <atomic>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "ember/ops/py_func.h"
#include "python/py_gil.h"
#include "python/py_tensor.h"

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

// The pending Python exception as text (the GIL is held), for an error of the callback itself.
std::string take_python_error() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  std::string text = "an exception";
  if (PyObject* s = value != nullptr ? PyObject_Str(value) : nullptr) {
    if (const char* c = PyUnicode_AsUTF8(s))
      text = std::string(type != nullptr ? reinterpret_cast<PyTypeObject*>(type)->tp_name : "?") + ": " + c;
    Py_DECREF(s);
  }
  PyErr_Clear();
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return text;
}

// Calls the package's callback; a new reference, or nullptr with the Python error set. Only raw
// references live in this frame: Python may end the thread inside the call (Note [Threads at interpreter
// exit] in py_gil.h), and the unwind that follows must not touch an object without the GIL.
PyObject* call_callback(const std::string& token, bool eager, CallableHandle* handle,
                        std::span<TensorImpl* const> inputs) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(inputs.size()));
  if (list == nullptr) return nullptr;
  for (size_t i = 0; i < inputs.size(); ++i) {
    PyObject* wrapped = wrap_tensor(TensorRef(inputs[i]));
    if (wrapped == nullptr) return Py_DECREF(list), nullptr;
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), wrapped);
  }
  // The node's own handle holds the registration while the node exists, and so during this call.
  PyObject* registration = handle != nullptr ? handle->registration : Py_None;
  const bool keep_for_gradient = handle != nullptr && handle->gradient_built.load(std::memory_order_acquire);
  PyObject* name = PyUnicode_FromStringAndSize(token.data(), static_cast<Py_ssize_t>(token.size()));
  if (name == nullptr) return Py_DECREF(list), nullptr;
  PyObject* result = PyObject_CallFunctionObjArgs(callback(), name, eager ? Py_True : Py_False, registration,
                                                  keep_for_gradient ? Py_True : Py_False, list, nullptr);
  Py_DECREF(name);
  Py_DECREF(list);
  return result;
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
  AcquireGil gil;
  if (!gil.is_valid())
    return make_error(Code::kCancelled, "py_function ", token, ": the interpreter is shutting down");
  PyObject* result = nullptr;
  try {
    result = call_callback(token, eager, handle, inputs);
  } catch (abi::__forced_unwind&) {
    hang_thread_at_exit();  // Python ended this thread at exit (Note [Threads at interpreter exit])
  }
  if (result == nullptr)  // a bug of the callback itself
    return make_error(Code::kInternal, "py_function ", token, ": ", take_python_error());
  Status status = Status::OK();
  if (PyTuple_Check(result) && PyTuple_GET_SIZE(result) == 2) {
    int code = static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(result, 0)));
    const char* message = PyUnicode_AsUTF8(PyTuple_GET_ITEM(result, 1));
    status = PyErr_Occurred() ? make_error(Code::kInternal, "py_function ", token, ": ", take_python_error())
                              : Status(static_cast<Code>(code), message);
  } else if (!PyList_Check(result)) {
    status = make_error(Code::kInternal, "py_function ", token, ": the callback gave no list");
  } else {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(result) && status.ok(); ++i) {
      PyObject* h = PyList_GET_ITEM(result, i);
      if (!is_tensor(h) || impl_of(h)->is_symbolic())
        status = make_error(Code::kInternal, "py_function ", token, ": the callback gave no eager tensor");
      else
        outputs.emplace_back(impl_of(h));
    }
    if (status.ok() && outputs.size() != tout.size())
      status = make_error(Code::kInternal, "py_function ", token, ": the callback gave ", outputs.size(),
                          " tensors for ", tout.size(), " outputs");
  }
  Py_DECREF(result);
  return status;
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
