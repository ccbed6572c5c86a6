// The C++ call path of ember.function (architecture.md §4): `ember._C.FunctionBase`, the base of the
// Python `Function`, implements tp_call. A call whose arguments are tensors, Python scalars, strings,
// None and tuples/lists of these is keyed in C++ (dtype and shape per tensor, value per scalar, the
// nesting) and looked up in a memo of the graphs earlier calls resolved to; a hit runs the graph with no
// Python. Anything else — a miss, keyword arguments, other argument types, a call inside a trace, or
// run_functions_eagerly — goes to the Python path (`_call_slow`), which traces as needed and tells the
// memo what it resolved.
#include <Python.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <string>
#include <unordered_map>

#include "ember/trace/trace_context.h"
#include "python/py_function.h"
#include "python/py_tensor.h"

namespace ember::python {
namespace {

bool g_run_eagerly = false;
thread_local std::string t_device_scope;  // ember.device(...) of this thread: part of the call key
constexpr size_t kMaxMemoEntries = 1024;

struct MemoEntry {
  PyObject* graph_fn_obj = nullptr;  // keeps the PyGraphFunction alive
  PyGraphFunction* graph_fn = nullptr;
  PyObject* concrete = nullptr;  // for packing structured results
  bool single_result = false;
};

struct FunctionBase {
  PyObject_HEAD std::unordered_map<std::string, MemoEntry>* memo;
};

void clear_memo(FunctionBase* self) {
  for (auto& [key, entry] : *self->memo) {
    Py_XDECREF(entry.graph_fn_obj);
    Py_XDECREF(entry.concrete);
  }
  self->memo->clear();
}

template <typename T>
void append_raw(std::string& key, const T& v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

// Appends the key of `obj` and collects its tensors in flattening order; false = not handled here.
bool encode(PyObject* obj, std::string& key, SmallVector<TensorImpl*, 8>& tensors, int depth = 0) {
  if (is_tensor(obj)) {
    TensorImpl* t = impl_of(obj);
    if (t->is_symbolic()) return false;
    key.push_back('T');
    key.push_back(static_cast<char>(t->dtype()));
    key.push_back(static_cast<char>(t->rank()));
    for (int64_t d : t->shape().dims()) append_raw(key, d);
    tensors.push_back(t);
    return true;
  }
  if (obj == Py_None) return key.push_back('n'), true;
  if (PyBool_Check(obj)) return key.push_back(obj == Py_True ? 'B' : 'b'), true;
  if (PyLong_CheckExact(obj)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow) return false;
    key.push_back('i');
    append_raw(key, v);
    return true;
  }
  if (PyFloat_CheckExact(obj)) {
    key.push_back('f');
    append_raw(key, PyFloat_AS_DOUBLE(obj));
    return true;
  }
  if (PyUnicode_CheckExact(obj)) {
    Py_ssize_t size;
    const char* data = PyUnicode_AsUTF8AndSize(obj, &size);
    if (data == nullptr) return PyErr_Clear(), false;
    key.push_back('s');
    append_raw(key, size);
    key.append(data, static_cast<size_t>(size));
    return true;
  }
  if ((PyTuple_CheckExact(obj) || PyList_CheckExact(obj)) && depth < 8) {
    bool is_tuple = PyTuple_CheckExact(obj);
    Py_ssize_t n = is_tuple ? PyTuple_GET_SIZE(obj) : PyList_GET_SIZE(obj);
    key.push_back(is_tuple ? '(' : '[');
    append_raw(key, n);
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = is_tuple ? PyTuple_GET_ITEM(obj, i) : PyList_GET_ITEM(obj, i);
      if (!encode(item, key, tensors, depth + 1)) return false;
    }
    key.push_back(')');
    return true;
  }
  return false;
}

PyObject* call_slow(PyObject* self, PyObject* args, PyObject* kwargs) {
  PyObject* slow = PyObject_GetAttrString(self, "_call_slow");
  if (slow == nullptr) return nullptr;
  PyObject* result = PyObject_Call(slow, args, kwargs);
  Py_DECREF(slow);
  return result;
}

PyObject* run_entry(const MemoEntry& entry, SmallVector<TensorImpl*, 8>& tensors) {
  OutputList results;
  Status s;
  try {  // reached from tp_call: no C++ exception may unwind into CPython
    s = entry.graph_fn->run({tensors.data(), tensors.size()}, results);
  } catch (const std::bad_alloc&) {
    s = make_error(Code::kResourceExhausted, "running a function: out of memory");
  } catch (const std::exception& e) {
    s = make_error(Code::kInternal, "running a function: unexpected C++ exception: ", e.what());
  }
  if (!s.ok()) return raise_status(s);
  if (entry.single_result) return wrap_tensor(std::move(results[0]));
  PyObject* flat = PyList_New(static_cast<Py_ssize_t>(results.size()));
  if (flat == nullptr) return nullptr;
  for (size_t i = 0; i < results.size(); ++i) {
    PyObject* t = wrap_tensor(std::move(results[i]));
    if (t == nullptr) return Py_DECREF(flat), nullptr;
    PyList_SET_ITEM(flat, static_cast<Py_ssize_t>(i), t);
  }
  PyObject* packed = PyObject_CallMethod(entry.concrete, "_pack", "O", flat);
  Py_DECREF(flat);
  return packed;
}

PyObject* function_call(PyObject* self_obj, PyObject* args, PyObject* kwargs) {
  auto* self = reinterpret_cast<FunctionBase*>(self_obj);
  if (g_run_eagerly || (kwargs != nullptr && PyDict_GET_SIZE(kwargs) > 0) ||
      TraceContext::current() != nullptr)
    return call_slow(self_obj, args, kwargs);
  std::string key;
  SmallVector<TensorImpl*, 8> tensors;
  if (!encode(args, key, tensors)) return call_slow(self_obj, args, kwargs);
  if (!t_device_scope.empty()) key += "@" + t_device_scope;
  auto it = self->memo->find(key);
  if (it != self->memo->end()) return run_entry(it->second, tensors);

  // Miss: the Python path resolves (tracing if needed) and reports what it ran.
  PyObject* resolve = PyObject_GetAttrString(self_obj, "_call_and_resolve");
  if (resolve == nullptr) return nullptr;
  PyObject* info = PyObject_Call(resolve, args, nullptr);
  Py_DECREF(resolve);
  if (info == nullptr) return nullptr;
  // info = (result, concrete, graph_function, single_result, number of tensor arguments)
  PyObject *result, *concrete, *graph_fn_obj;
  int single = 0;
  Py_ssize_t n_tensors = 0;
  if (!PyArg_ParseTuple(info, "OOOpn", &result, &concrete, &graph_fn_obj, &single, &n_tensors)) {
    Py_DECREF(info);
    return nullptr;
  }
  Py_INCREF(result);
  if (n_tensors == static_cast<Py_ssize_t>(tensors.size()) && graph_fn_obj != Py_None) {
    if (self->memo->size() >= kMaxMemoEntries) clear_memo(self);
    MemoEntry entry;
    entry.graph_fn = nb::inst_ptr<PyGraphFunction>(graph_fn_obj);
    entry.graph_fn_obj = (Py_INCREF(graph_fn_obj), graph_fn_obj);
    entry.concrete = (Py_INCREF(concrete), concrete);
    entry.single_result = single != 0;
    self->memo->emplace(std::move(key), entry);
  }
  Py_DECREF(info);
  return result;
}

PyObject* function_new(PyTypeObject* type, PyObject*, PyObject*) {
  PyObject* obj = type->tp_alloc(type, 0);
  if (obj == nullptr) return nullptr;
  reinterpret_cast<FunctionBase*>(obj)->memo = new std::unordered_map<std::string, MemoEntry>();
  return obj;
}

void function_dealloc(PyObject* obj) {
  auto* self = reinterpret_cast<FunctionBase*>(obj);
  if (self->memo) {
    clear_memo(self);
    delete self->memo;
    self->memo = nullptr;
  }
  Py_TYPE(obj)->tp_free(obj);
}

PyObject* function_clear_memo(PyObject* obj, PyObject*) {
  clear_memo(reinterpret_cast<FunctionBase*>(obj));
  Py_RETURN_NONE;
}

PyObject* function_memo_size(PyObject* obj, PyObject*) {
  return PyLong_FromSize_t(reinterpret_cast<FunctionBase*>(obj)->memo->size());
}

PyMethodDef function_methods[] = {
    {"_clear_call_memo", function_clear_memo, METH_NOARGS, "Forget the resolved calls."},
    {"_call_memo_size", function_memo_size, METH_NOARGS, "Number of resolved calls remembered."},
    {nullptr, nullptr, 0, nullptr},
};

PyTypeObject FunctionBaseType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

void bind_call_memo(nb::module_& m) {
  FunctionBaseType.tp_name = "ember._C.FunctionBase";
  FunctionBaseType.tp_basicsize = sizeof(FunctionBase);
  FunctionBaseType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
  FunctionBaseType.tp_doc = "Base of ember.function's Function: the C++ call path.";
  FunctionBaseType.tp_new = function_new;
  FunctionBaseType.tp_dealloc = function_dealloc;
  FunctionBaseType.tp_call = function_call;
  FunctionBaseType.tp_methods = function_methods;
  if (PyType_Ready(&FunctionBaseType) < 0) throw nb::python_error();
  Py_INCREF(&FunctionBaseType);
  PyModule_AddObject(m.ptr(), "FunctionBase", reinterpret_cast<PyObject*>(&FunctionBaseType));
  m.def("set_run_functions_eagerly", [](bool eager) { g_run_eagerly = eager; });
  m.def("set_device_scope", [](const std::string& device) { t_device_scope = device; });
}

}  // namespace ember::python
