// The Python side of tf.py_function / tf.numpy_function inside graphs (ops/py_func.h): the hook the
// EagerPyFunc and PyFunc kernels call. The package (ember/ops/script_ops.py) keeps the functions by token
// and does the conversions; this file only crosses into Python.
#include <Python.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "ember/ops/py_func.h"
#include "python/py_tensor.h"

namespace nb = nanobind;

namespace ember::python {
namespace {

PyObject*& callback() {
  static PyObject* c = nullptr;  // leaked: kernels may run while the interpreter exits
  return c;
}

// Note [Calling a py_function from a kernel]
// The kernel runs on a pool thread, or inline on the caller's: it takes the GIL here. A caller whose plan
// runs on the pool released it first (PyGraphFunction::call, py_call_memo.cc's run_entry), so neither
// waits on the other; an inline caller still holds it, and taking it again is a no-op.
// The package's callback never raises: it gives either the results (a list of tensors of the dtypes
// Tout names) or (code, message), the error of the function mapped as TensorFlow maps it.
Status call_python(const std::string& token, bool eager, std::span<TensorImpl* const> inputs,
                   const std::vector<DType>& tout, std::vector<TensorRef>& outputs) {
  if (!Py_IsInitialized() || callback() == nullptr)
    return make_error(Code::kFailedPrecondition, "py_function: no Python runtime to call");
  nb::gil_scoped_acquire gil;
  try {
    nb::list args;
    for (TensorImpl* t : inputs) {
      PyObject* wrapped = wrap_tensor(TensorRef(t));
      if (wrapped == nullptr) throw nb::python_error();
      args.append(nb::steal(wrapped));
    }
    nb::object result = nb::borrow(callback())(token, eager, args);
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

}  // namespace

void bind_script_ops(nb::module_& m) {
  m.def("set_py_func_callback", [](nb::object fn) {
    Py_XDECREF(callback());
    callback() = fn.release().ptr();
    set_py_func_hooks({&call_python});
  });
}

}  // namespace ember::python
