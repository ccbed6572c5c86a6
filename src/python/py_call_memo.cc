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
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/trace/trace_context.h"
#include "python/py_function.h"
#include "python/py_gil.h"
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

// One entry of an input_signature made only of TensorSpecs: a call's tensor at this position is keyed by
// the spec's dims (-1 where the spec has None), so every batch size of a [None, 784] signature shares one
// memo entry instead of taking the Python path once per size.
struct SignatureEntry {
  int rank = -1;  // -1: the spec's rank is unknown
  std::vector<int64_t> dims;
};

struct FunctionBase {
  PyObject_HEAD std::unordered_map<std::string, MemoEntry>* memo;
  std::vector<SignatureEntry>* signature;  // null without an all-TensorSpec input_signature
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

// The key of a top-level tensor argument matched to a signature entry: the spec's dims where it has them
// and the tensor agrees, -1 where the spec has None. A tensor the spec does not accept keeps its own dims,
// so it never shares an entry with accepted calls (the Python path raises for it and remembers nothing).
bool encode_with_spec(PyObject* obj, const SignatureEntry& spec, std::string& key,
                      SmallVector<TensorImpl*, 8>& tensors) {
  if (!is_tensor(obj)) return false;
  TensorImpl* t = impl_of(obj);
  if (t->is_symbolic()) return false;
  const Shape& shape = t->shape();
  bool accepted = spec.rank < 0 || spec.rank == shape.rank();
  for (int i = 0; accepted && spec.rank >= 0 && i < shape.rank(); ++i)
    accepted = spec.dims[i] < 0 || spec.dims[i] == shape.dim(i);
  key.push_back(accepted ? 'S' : 'T');
  key.push_back(static_cast<char>(t->dtype()));
  if (accepted && spec.rank < 0) {
    key.push_back('?');
  } else {
    key.push_back(static_cast<char>(shape.rank()));
    for (int i = 0; i < shape.rank(); ++i)
      append_raw(key, accepted && spec.dims[i] < 0 ? int64_t{-1} : shape.dim(i));
  }
  tensors.push_back(t);
  return true;
}

// The key of a call's positional arguments.
bool encode_args(FunctionBase* self, PyObject* args, std::string& key, SmallVector<TensorImpl*, 8>& tensors) {
  const std::vector<SignatureEntry>* signature = self->signature;
  if (signature == nullptr || PyTuple_GET_SIZE(args) != static_cast<Py_ssize_t>(signature->size()))
    return encode(args, key, tensors);
  key.push_back('(');
  append_raw(key, PyTuple_GET_SIZE(args));
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); ++i) {
    PyObject* item = PyTuple_GET_ITEM(args, i);
    if (is_tensor(item) ? !encode_with_spec(item, (*signature)[i], key, tensors)
                        : !encode(item, key, tensors, 1))
      return false;
  }
  key.push_back(')');
  return true;
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
  // A plan that runs on the pool's threads runs without the GIL: its kernels may call back into Python
  // (py_function, a dataset's next element) and must be able to take it while this thread waits for them.
  // A sequential plan runs on this thread, which may keep the GIL (those kernels take it again) and saves
  // the release on the fast path.
  PyThreadState* released = entry.graph_fn->compiled().runs_in_parallel() ? PyEval_SaveThread() : nullptr;
  try {  // reached from tp_call: no C++ exception may unwind into CPython
    s = entry.graph_fn->run({tensors.data(), tensors.size()}, results);
  } catch (const std::bad_alloc&) {
    s = make_error(Code::kResourceExhausted, "running a function: out of memory");
  } catch (const std::exception& e) {
    s = make_error(Code::kInternal, "running a function: unexpected C++ exception: ", e.what());
  }
  if (released != nullptr) restore_gil_or_hang(released);
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
  if (!encode_args(self, args, key, tensors)) return call_slow(self_obj, args, kwargs);
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
  reinterpret_cast<FunctionBase*>(obj)->signature = nullptr;
  return obj;
}

void function_dealloc(PyObject* obj) {
  auto* self = reinterpret_cast<FunctionBase*>(obj);
  if (self->memo) {
    clear_memo(self);
    delete self->memo;
    self->memo = nullptr;
  }
  delete self->signature;
  self->signature = nullptr;
  Py_TYPE(obj)->tp_free(obj);
}

PyObject* function_clear_memo(PyObject* obj, PyObject*) {
  clear_memo(reinterpret_cast<FunctionBase*>(obj));
  Py_RETURN_NONE;
}

PyObject* function_memo_size(PyObject* obj, PyObject*) {
  return PyLong_FromSize_t(reinterpret_cast<FunctionBase*>(obj)->memo->size());
}

// _set_call_signature([(rank or -1, (dims with -1 for None)), ...]) or None: see SignatureEntry.
PyObject* function_set_signature(PyObject* obj, PyObject* arg) {
  auto* self = reinterpret_cast<FunctionBase*>(obj);
  clear_memo(self);
  delete self->signature;
  self->signature = nullptr;
  if (arg == Py_None) Py_RETURN_NONE;
  auto signature = std::make_unique<std::vector<SignatureEntry>>();
  PyObject* seq = PySequence_Fast(arg, "_set_call_signature: expected a list of (rank, dims)");
  if (seq == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
    int rank = 0;
    PyObject* dims = nullptr;
    if (!PyArg_ParseTuple(item, "iO", &rank, &dims)) return Py_DECREF(seq), nullptr;
    SignatureEntry entry;
    entry.rank = rank;
    PyObject* dim_seq = PySequence_Fast(dims, "_set_call_signature: dims must be a sequence");
    if (dim_seq == nullptr) return Py_DECREF(seq), nullptr;
    for (Py_ssize_t d = 0; d < PySequence_Fast_GET_SIZE(dim_seq); ++d) {
      long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(dim_seq, d));
      if (v == -1 && PyErr_Occurred()) return Py_DECREF(dim_seq), Py_DECREF(seq), nullptr;
      entry.dims.push_back(v);
    }
    Py_DECREF(dim_seq);
    if (entry.rank >= 0 && static_cast<int>(entry.dims.size()) != entry.rank) {
      Py_DECREF(seq);
      PyErr_SetString(PyExc_ValueError, "_set_call_signature: rank and dims disagree");
      return nullptr;
    }
    signature->push_back(std::move(entry));
  }
  Py_DECREF(seq);
  self->signature = signature.release();
  Py_RETURN_NONE;
}

PyMethodDef function_methods[] = {
    {"_set_call_signature", function_set_signature, METH_O,
     "Key tensors matched to an all-TensorSpec input_signature by the spec's dims."},
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
