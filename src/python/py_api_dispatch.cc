// The wrapper that ember's public op functions (tf.concat, tf.nn.relu, ...) are installed as, so that an
// argument the op cannot take — a Keras symbolic tensor of the functional API — is handed to a dispatcher
// instead (as TensorFlow's add_dispatch_support does). The normal call must cost nothing measurable: a
// Python wrapper (*args/**kwargs, try/except) added ~60% to a 1.2 us eager add, this vectorcall type adds
// one indirect call. The fallback runs only after the function has raised an Exception, and decides from
// the arguments whether the call was meant for it; otherwise the original error stands. Composite tensors
// (RaggedTensor) must be caught before the call instead: their types are registered, and an argument of
// one of them sends the call to the pre-dispatcher first.
#include <Python.h>
#include <structmember.h>

#include <cstddef>

namespace ember::python {
namespace {

struct ApiFunction {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* wrapped;   // the original function
  PyObject* api_name;  // "tf.math.add": what a dispatcher calls the function
  PyObject* weakrefs;
};

// One process-wide fallback: set by ember.keras when it is imported.
PyObject* g_fallback = nullptr;

// Types an op function must not see at all (a RaggedTensor of equal-length rows would convert to a dense
// tensor and give a dense result): an argument of one of these types, or a list/tuple holding one, sends
// the call to g_pre_dispatch before the function runs. Compared by pointer, so the normal path costs a few
// loads per argument.
constexpr int kMaxPreDispatchTypes = 8;
PyTypeObject* g_pre_types[kMaxPreDispatchTypes] = {};
int g_pre_type_count = 0;
PyObject* g_pre_dispatch = nullptr;

bool is_pre_dispatch_type(PyObject* value) {
  PyTypeObject* type = Py_TYPE(value);
  for (int i = 0; i < g_pre_type_count; ++i)
    if (type == g_pre_types[i]) return true;
  return false;
}

bool wants_pre_dispatch(PyObject* const* args, Py_ssize_t count) {
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* arg = args[i];
    if (is_pre_dispatch_type(arg)) return true;
    if (PyList_CheckExact(arg) || PyTuple_CheckExact(arg)) {  // tf.concat([rt1, rt2], 0)
      PyObject** items = PySequence_Fast_ITEMS(arg);
      for (Py_ssize_t j = 0, n = PySequence_Fast_GET_SIZE(arg); j < n; ++j)
        if (is_pre_dispatch_type(items[j])) return true;
    }
  }
  return false;
}

// handler(api_function, args_tuple, kwargs_dict, *extra): the arguments repacked as Python sees them.
PyObject* call_handler(PyObject* handler, PyObject* self, PyObject* const* args, size_t nargsf,
                       PyObject* kwnames, PyObject* extra) {
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
  PyObject* result = nullptr;
  if (ok) result = PyObject_CallFunctionObjArgs(handler, self, positional, keywords, extra, nullptr);
  Py_XDECREF(positional);
  Py_XDECREF(keywords);
  return result;
}

PyObject* api_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* fn = reinterpret_cast<ApiFunction*>(self);
  if (g_pre_type_count > 0 && g_pre_dispatch != nullptr &&
      wants_pre_dispatch(args, PyVectorcall_NARGS(nargsf) + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0))) {
    // pre_dispatch(api_function, args_tuple, kwargs_dict, None) -> result, or NotImplemented to run the op.
    PyObject* handler = g_pre_dispatch;
    Py_INCREF(handler);
    PyObject* handled = call_handler(handler, self, args, nargsf, kwnames, Py_None);
    Py_DECREF(handler);
    if (handled != Py_NotImplemented) return handled;
    Py_DECREF(handled);
  }
  PyObject* result = PyObject_Vectorcall(fn->wrapped, args, nargsf, kwnames);
  if (result != nullptr || g_fallback == nullptr || !PyErr_ExceptionMatches(PyExc_Exception)) return result;
  // fallback(api_function, args_tuple, kwargs_dict, error) -> result, or NotImplemented to keep the error.
  PyObject* fallback = g_fallback;
  Py_INCREF(fallback);
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (traceback != nullptr) PyException_SetTraceback(value, traceback);
  PyObject* dispatched = call_handler(fallback, self, args, nargsf, kwnames, value);
  Py_DECREF(fallback);
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
  if (fn->weakrefs != nullptr) PyObject_ClearWeakRefs(self);
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
// Pickling and copying are the wrapper's own: a copy is the same function, a pickle rebuilds the wrapper
// around the original (which pickles by its module and name).
PyObject* api_getattro(PyObject* self, PyObject* name) {
  static const char* const kOwn[] = {"__wrapped__",   "_ember_api_name", "__class__",    "__reduce__",
                                     "__reduce_ex__", "__copy__",        "__deepcopy__", "__get__"};
  if (PyUnicode_Check(name)) {
    for (const char* own : kOwn)
      if (PyUnicode_CompareWithASCIIString(name, own) == 0) return PyObject_GenericGetAttr(self, name);
  }
  return PyObject_GetAttr(reinterpret_cast<ApiFunction*>(self)->wrapped, name);
}

int api_setattro(PyObject* self, PyObject* name, PyObject* value) {
  return PyObject_SetAttr(reinterpret_cast<ApiFunction*>(self)->wrapped, name, value);
}

// A routine to inspect and pydoc (help() shows the op's docstring and signature); bound as a class
// attribute it stays the function, with no `self`.
PyObject* api_descr_get(PyObject* self, PyObject*, PyObject*) {
  Py_INCREF(self);
  return self;
}

PyObject* api_reduce(PyObject* self, PyObject*) {
  auto* fn = reinterpret_cast<ApiFunction*>(self);
  return Py_BuildValue("O(OO)", reinterpret_cast<PyObject*>(Py_TYPE(self)), fn->wrapped, fn->api_name);
}

PyObject* api_copy(PyObject* self, PyObject*) {
  Py_INCREF(self);
  return self;
}

// The op's docstring as the instance's own __doc__ (pydoc reads it with object.__getattribute__).
PyObject* api_get_doc(PyObject* self, void*) {
  return PyObject_GetAttrString(reinterpret_cast<ApiFunction*>(self)->wrapped, "__doc__");
}

PyGetSetDef api_getset[] = {{"__doc__", api_get_doc, nullptr, nullptr, nullptr},
                            {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMethodDef api_methods[] = {{"__reduce__", api_reduce, METH_NOARGS, nullptr},
                             {"__copy__", api_copy, METH_NOARGS, nullptr},
                             {"__deepcopy__", api_copy, METH_O, nullptr},
                             {nullptr, nullptr, 0, nullptr}};

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

PyObject* set_pre_dispatch(PyObject*, PyObject* args) {
  PyObject* types;
  PyObject* handler;
  if (!PyArg_ParseTuple(args, "O!O:set_api_pre_dispatch", &PyTuple_Type, &types, &handler)) return nullptr;
  const Py_ssize_t count = PyTuple_GET_SIZE(types);
  if (count > kMaxPreDispatchTypes) {
    PyErr_Format(PyExc_ValueError, "set_api_pre_dispatch: at most %d types, got %zd", kMaxPreDispatchTypes,
                 count);
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < count; ++i) {
    if (!PyType_Check(PyTuple_GET_ITEM(types, i))) {
      PyErr_Format(PyExc_TypeError, "set_api_pre_dispatch: expected a tuple of types, got %R", types);
      return nullptr;
    }
  }
  if (handler != Py_None && !PyCallable_Check(handler)) {
    PyErr_Format(PyExc_TypeError, "set_api_pre_dispatch: expected a callable or None, got %R", handler);
    return nullptr;
  }
  for (int i = 0; i < g_pre_type_count; ++i) Py_DECREF(g_pre_types[i]);
  g_pre_type_count = 0;
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* type = PyTuple_GET_ITEM(types, i);
    Py_INCREF(type);
    g_pre_types[g_pre_type_count++] = reinterpret_cast<PyTypeObject*>(type);
  }
  PyObject* old = g_pre_dispatch;
  g_pre_dispatch = handler == Py_None ? nullptr : handler;
  Py_XINCREF(g_pre_dispatch);
  Py_XDECREF(old);
  Py_RETURN_NONE;
}

PyMethodDef set_pre_dispatch_def = {
    "set_api_pre_dispatch", set_pre_dispatch, METH_VARARGS,
    "set_api_pre_dispatch(types, fn): a call of an ApiFunction with an argument of one of `types` (or a "
    "list/tuple holding one) goes to fn(api_function, args, kwargs, None) first; fn returns NotImplemented "
    "to "
    "run the function as usual."};

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
  ApiFunctionType.tp_setattro = api_setattro;
  ApiFunctionType.tp_descr_get = api_descr_get;
  ApiFunctionType.tp_methods = api_methods;
  ApiFunctionType.tp_getset = api_getset;
  ApiFunctionType.tp_weaklistoffset = offsetof(ApiFunction, weakrefs);
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
  if (setter == nullptr || PyModule_AddObject(module, "set_api_fallback_dispatch", setter) != 0) return false;
  PyObject* pre_setter = PyCFunction_New(&set_pre_dispatch_def, nullptr);
  return pre_setter != nullptr && PyModule_AddObject(module, "set_api_pre_dispatch", pre_setter) == 0;
}

}  // namespace ember::python
