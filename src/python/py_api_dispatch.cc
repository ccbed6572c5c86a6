// The wrapper that ember's public op functions (tf.concat, tf.nn.relu, ...) are installed as, so that an
// argument the op cannot take — a Keras symbolic tensor of the functional API — is handed to a dispatcher
// instead (as TensorFlow's add_dispatch_support does). The normal call must cost nothing measurable: a
// Python wrapper (*args/**kwargs, try/except) added ~60% to a 1.2 us eager add, this vectorcall type adds
// one indirect call. The dispatcher runs only after the function has raised an Exception, and decides from
// the arguments whether the call was meant for it; otherwise the original error stands.
#include <Python.h>
#include <structmember.h>

#include <cstddef>

namespace ember::python {
namespace {

struct ApiFunction {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* wrapped;   // the original function
  PyObject* api_name;  // "tf.math.add": what a dispatcher calls the function
};

// One process-wide fallback: set by ember.keras when it is imported. A borrowed-then-owned reference.
PyObject* g_fallback = nullptr;

PyObject* api_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* fn = reinterpret_cast<ApiFunction*>(self);
  PyObject* result = PyObject_Vectorcall(fn->wrapped, args, nargsf, kwnames);
  if (result != nullptr || g_fallback == nullptr || !PyErr_ExceptionMatches(PyExc_Exception)) return result;
  // fallback(api_function, args_tuple, kwargs_dict, error) -> result, or NotImplemented to keep the error.
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (traceback != nullptr) PyException_SetTraceback(value, traceback);
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  PyObject* positional = PyTuple_New(nargs);
  PyObject* keywords = PyDict_New();
  bool ok = positional != nullptr && keywords != nullptr;
  for (Py_ssize_t i = 0; ok && i < nargs; ++i) {
    Py_INCREF(args[i]);
    PyTuple_SET_ITEM(positional, i, args[i]);
  }
  const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t i = 0; ok && i < nkw; ++i)
    ok = PyDict_SetItem(keywords, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) == 0;
  PyObject* dispatched = nullptr;
  if (ok) {
    PyObject* fallback = g_fallback;
    Py_INCREF(fallback);  // the fallback may replace itself while it runs
    dispatched = PyObject_CallFunctionObjArgs(fallback, self, positional, keywords, value, nullptr);
    Py_DECREF(fallback);
  }
  Py_XDECREF(positional);
  Py_XDECREF(keywords);
  if (dispatched == Py_NotImplemented) {
    Py_DECREF(dispatched);
    PyErr_Restore(type, value, traceback);  // the original error, as if nothing had looked at it
    return nullptr;
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return dispatched;  // the dispatcher's result, or its own error
}

void api_dealloc(PyObject* self) {
  auto* fn = reinterpret_cast<ApiFunction*>(self);
  PyObject_GC_UnTrack(self);
  Py_CLEAR(fn->wrapped);
  Py_CLEAR(fn->api_name);
  Py_TYPE(self)->tp_free(self);
}

int api_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* fn = reinterpret_cast<ApiFunction*>(self);
  Py_VISIT(fn->wrapped);
  Py_VISIT(fn->api_name);
  return 0;
}

// Everything but the wrapper's own members reads through to the original function, so __name__, __doc__,
// __module__ and inspect.signature (through __wrapped__) describe it as before.
PyObject* api_getattro(PyObject* self, PyObject* name) {
  if (PyUnicode_Check(name) && (PyUnicode_CompareWithASCIIString(name, "__wrapped__") == 0 ||
                                PyUnicode_CompareWithASCIIString(name, "_ember_api_name") == 0 ||
                                PyUnicode_CompareWithASCIIString(name, "__class__") == 0))
    return PyObject_GenericGetAttr(self, name);
  return PyObject_GetAttr(reinterpret_cast<ApiFunction*>(self)->wrapped, name);
}

PyObject* api_repr(PyObject* self) { return PyObject_Repr(reinterpret_cast<ApiFunction*>(self)->wrapped); }

PyObject* api_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* wrapped = nullptr;
  PyObject* api_name = nullptr;
  static const char* keywords[] = {"function", "api_name", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OU:ApiFunction", const_cast<char**>(keywords), &wrapped,
                                   &api_name))
    return nullptr;
  if (!PyCallable_Check(wrapped)) {
    PyErr_Format(PyExc_TypeError, "ApiFunction: expected a callable, got %R", wrapped);
    return nullptr;
  }
  auto* fn = reinterpret_cast<ApiFunction*>(type->tp_alloc(type, 0));
  if (fn == nullptr) return nullptr;
  fn->vectorcall = api_vectorcall;
  Py_INCREF(wrapped);
  Py_INCREF(api_name);
  fn->wrapped = wrapped;
  fn->api_name = api_name;
  return reinterpret_cast<PyObject*>(fn);
}

PyMemberDef api_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(ApiFunction, wrapped), READONLY, "the original function"},
    {"_ember_api_name", T_OBJECT, offsetof(ApiFunction, api_name), READONLY, "its TensorFlow API name"},
    {nullptr, 0, 0, 0, nullptr}};

PyObject* set_fallback(PyObject*, PyObject* fallback) {
  if (fallback != Py_None && !PyCallable_Check(fallback)) {
    PyErr_Format(PyExc_TypeError, "set_api_fallback_dispatch: expected a callable or None, got %R", fallback);
    return nullptr;
  }
  PyObject* old = g_fallback;
  g_fallback = fallback == Py_None ? nullptr : fallback;
  Py_XINCREF(g_fallback);
  Py_XDECREF(old);
  Py_RETURN_NONE;
}

PyMethodDef set_fallback_def = {
    "set_api_fallback_dispatch", set_fallback, METH_O,
    "set_api_fallback_dispatch(fn): fn(api_function, args, kwargs, error) is asked "
    "for a result when an ApiFunction raises; it returns NotImplemented to keep "
    "the error. None removes it."};

PyTypeObject ApiFunctionType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

bool init_api_dispatch(PyObject* module) {
  ApiFunctionType.tp_name = "ember._C.ApiFunction";
  ApiFunctionType.tp_basicsize = sizeof(ApiFunction);
  ApiFunctionType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC;
  ApiFunctionType.tp_vectorcall_offset = offsetof(ApiFunction, vectorcall);
  ApiFunctionType.tp_call = PyVectorcall_Call;
  ApiFunctionType.tp_new = api_new;
  ApiFunctionType.tp_dealloc = api_dealloc;
  ApiFunctionType.tp_traverse = api_traverse;
  ApiFunctionType.tp_getattro = api_getattro;
  ApiFunctionType.tp_repr = api_repr;
  ApiFunctionType.tp_members = api_members;
  ApiFunctionType.tp_doc =
      "ApiFunction(function, api_name): an ember op function that hands the arguments it "
      "cannot take to the fallback dispatcher (Keras symbolic tensors).";
  if (PyType_Ready(&ApiFunctionType) < 0) return false;
  Py_INCREF(&ApiFunctionType);
  if (PyModule_AddObject(module, "ApiFunction", reinterpret_cast<PyObject*>(&ApiFunctionType)) != 0)
    return false;
  PyObject* setter = PyCFunction_New(&set_fallback_def, nullptr);
  return setter != nullptr && PyModule_AddObject(module, "set_api_fallback_dispatch", setter) == 0;
}

}  // namespace ember::python
