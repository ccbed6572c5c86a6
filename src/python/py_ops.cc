// Fast op callables: `ember._C.op("Add")` returns an object whose vectorcall converts its positional
// arguments (inputs, then attributes in declaration order; None = default) and runs the op, holding its
// OpDef* so no lookup by name happens per call.
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ember/ops/execute.h"
#include "ember/ops/registry.h"
#include "ember/trace/trace_context.h"
#include "python/py_tensor.h"

namespace ember::python {
namespace {

// Note [Shape operands from Python]
// Eagerly, tf.reshape(x, [2, 3]) hands Reshape's `shape` operand a Python list. The generic converter
// would build a tensor through NumPy on every call; instead a short list of ints (or one int) becomes an
// int32 tensor here (int64 when a value needs it, as TensorFlow converts), and outside a trace those
// tensors are cached by value: tensors are immutable, so a steady eager loop allocates none for its
// shapes. While tracing a fresh tensor is made, which the trace records as a constant of the function.
struct IntsKey {
  std::vector<int64_t> values;
  bool scalar = false;
  bool operator==(const IntsKey&) const = default;
};
struct IntsKeyHash {
  size_t operator()(const IntsKey& k) const {
    size_t h = k.scalar ? 0x9e3779b97f4a7c15ull : 0;
    for (int64_t v : k.values) h = (h ^ static_cast<size_t>(v)) * 0x100000001b3ull;
    return h;
  }
};
constexpr Py_ssize_t kMaxShapeOperandLength = 64;
constexpr size_t kMaxCachedShapeOperands = 4096;

// A new reference to the tensor for `value`, nullptr with no error set when `value` is not a plain int or
// a short list/tuple of plain ints (the caller then converts it the generic way), or nullptr with an error
// (TensorFlow's ValueError for an int beyond int64).
PyObject* shape_operand_tensor(PyObject* value, const OpDef& op, const ArgDef& arg) {
  IntsKey key;
  auto read = [&](PyObject* item) {
    if (!PyLong_CheckExact(item)) return false;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
    if (v == -1 && PyErr_Occurred()) return false;
    if (overflow != 0) {
      PyErr_Format(PyExc_ValueError, "%s: '%s' got %S, which is out of range for int64", op.name.c_str(),
                   arg.name.c_str(), item);
      return false;
    }
    key.values.push_back(v);
    return true;
  };
  if (PyLong_CheckExact(value)) {
    key.scalar = true;
    if (!read(value)) return nullptr;
  } else if (PyList_CheckExact(value) || PyTuple_CheckExact(value)) {
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(value);
    if (n > kMaxShapeOperandLength) return nullptr;
    PyObject** items = PySequence_Fast_ITEMS(value);
    for (Py_ssize_t i = 0; i < n; ++i)
      if (!read(items[i])) return nullptr;
  } else {
    return nullptr;
  }
  const bool tracing = TraceContext::current() != nullptr;
  static std::unordered_map<IntsKey, PyObject*, IntsKeyHash>* cache =
      new std::unordered_map<IntsKey, PyObject*, IntsKeyHash>();  // leaked: outlives interpreter teardown
  if (!tracing) {
    auto it = cache->find(key);
    if (it != cache->end()) {
      Py_INCREF(it->second);
      return it->second;
    }
  }
  bool wide = false;
  for (int64_t v : key.values) wide |= v < INT32_MIN || v > INT32_MAX;
  const DType dtype = wide ? DType::kInt64 : DType::kInt32;
  Shape shape = key.scalar ? Shape() : Shape{static_cast<int64_t>(key.values.size())};
  auto t = TensorImpl::allocate(dtype, shape);
  if (!t.ok()) return raise_status(t.status());
  for (size_t i = 0; i < key.values.size(); ++i) {
    if (wide)
      t.value()->mutable_data<int64_t>()[i] = key.values[i];
    else
      t.value()->mutable_data<int32_t>()[i] = static_cast<int32_t>(key.values[i]);
  }
  if (tracing) TraceContext::current()->note_local_constant(t.value().get());
  PyObject* tensor = wrap_tensor(std::move(t).value());
  if (tensor == nullptr || tracing) return tensor;
  if (cache->size() >= kMaxCachedShapeOperands) {
    for (auto& entry : *cache) Py_DECREF(entry.second);
    cache->clear();
  }
  Py_INCREF(tensor);
  cache->emplace(std::move(key), tensor);
  return tensor;
}

struct OpCaller {
  PyObject_HEAD const OpDef* op;
  vectorcallfunc vectorcall;
};

// A Python int as an int64 attribute value; TensorFlow's ValueError for ints beyond int64 (the pending
// OverflowError must not be left under a later error).
bool int64_from_index(PyObject* index, int64_t* out, const OpDef& op, const AttrDef& attr) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
  if (v == -1 && PyErr_Occurred()) return false;
  if (overflow != 0) {
    PyErr_Format(PyExc_ValueError, "%s: attribute '%s' got %S, which is out of range for int64",
                 op.name.c_str(), attr.name.c_str(), index);
    return false;
  }
  *out = v;
  return true;
}

bool convert_ints(PyObject* value, std::vector<int64_t>* out, const OpDef& op, const AttrDef& attr) {
  if (is_tensor(value)) {
    const TensorImpl& t = *impl_of(value);
    if (t.is_symbolic()) {
      // A graph tensor has no value while tracing; an attribute must be known when the node is built.
      PyErr_Format(PyExc_TypeError,
                   "%s: attribute '%s' must be a list of ints known while ember.function traces, got a "
                   "symbolic %s tensor of shape %s",
                   op.name.c_str(), attr.name.c_str(), std::string(dtype_name(t.dtype())).c_str(),
                   t.shape().to_string().c_str());
      return false;
    }
    if (!is_integer(t.dtype()) || t.rank() > 1) {
      PyErr_Format(PyExc_TypeError, "%s: attribute '%s' must be a list of ints, got a %s tensor of shape %s",
                   op.name.c_str(), attr.name.c_str(), std::string(dtype_name(t.dtype())).c_str(),
                   t.shape().to_string().c_str());
      return false;
    }
    visit_dtype(t.dtype(), [&]<typename T>() {
      if constexpr (std::is_integral_v<T>)
        for (int64_t i = 0; i < t.num_elements(); ++i) out->push_back(static_cast<int64_t>(t.data<T>()[i]));
    });
    return true;
  }
  if (PyLong_Check(value)) {  // a single int where a list is expected: [value]
    int64_t v;
    if (!int64_from_index(value, &v, op, attr)) return false;
    out->push_back(v);
    return true;
  }
  PyObject* seq = PySequence_Fast(value, "");
  if (seq == nullptr) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "%s: attribute '%s' must be a list of ints, got %s", op.name.c_str(),
                 attr.name.c_str(), Py_TYPE(value)->tp_name);
    return false;
  }
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
    PyObject* index = PyNumber_Index(item);
    if (index == nullptr) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "%s: attribute '%s' must be a list of ints, element %zd is %s",
                   op.name.c_str(), attr.name.c_str(), i, Py_TYPE(item)->tp_name);
      Py_DECREF(seq);
      return false;
    }
    int64_t v;
    bool ok = int64_from_index(index, &v, op, attr);
    Py_DECREF(index);
    if (!ok) {
      Py_DECREF(seq);
      return false;
    }
    out->push_back(v);
  }
  Py_DECREF(seq);
  return true;
}

// A Python dtype (an ember DType, anything with an int `_enum`, or the enum number) as a DType; false
// with no Python error set when it is none of those.
bool dtype_from_python(PyObject* value, DType* out) {
  // An out-of-range int is simply not a dtype.
  int overflow = 0;
  long e = -1;
  if (PyLong_Check(value)) {
    e = PyLong_AsLongAndOverflow(value, &overflow);
  } else {
    PyObject* enum_value = PyObject_GetAttrString(value, "_enum");
    if (enum_value == nullptr) {
      PyErr_Clear();
      return false;
    }
    if (PyLong_Check(enum_value)) e = PyLong_AsLongAndOverflow(enum_value, &overflow);
    Py_DECREF(enum_value);
  }
  PyErr_Clear();
  if (overflow != 0 || e < 0 || e >= kNumDTypes) return false;
  *out = static_cast<DType>(e);
  return true;
}

// One shape of a list-of-shapes attribute: None (unknown rank) or a sequence of ints, where None or -1
// is an unknown dim; false with no Python error set otherwise.
bool shape_from_python(PyObject* value, Shape* out) {
  if (value == Py_None) {
    *out = Shape::unknown_rank();
    return true;
  }
  PyObject* seq = PySequence_Fast(value, "");
  if (seq == nullptr) {
    PyErr_Clear();
    return false;
  }
  std::vector<int64_t> dims;
  bool ok = true;
  for (Py_ssize_t i = 0; ok && i < PySequence_Fast_GET_SIZE(seq); ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
    if (item == Py_None) {
      dims.push_back(-1);
      continue;
    }
    const long long d = PyLong_Check(item) ? PyLong_AsLongLong(item) : -2;
    ok = !PyErr_Occurred() && d >= -1;
    dims.push_back(d);
  }
  Py_DECREF(seq);
  PyErr_Clear();
  if (!ok || dims.size() > static_cast<size_t>(kMaxRank)) return false;
  *out = Shape(dims);
  return true;
}

// A Python sequence converted element by element; the error names the element that does not convert.
template <typename T, typename Convert>
bool convert_list(PyObject* value, std::vector<T>* out, const OpDef& op, const AttrDef& attr,
                  const char* what, Convert convert) {
  PyObject* seq = PyUnicode_Check(value) ? nullptr : PySequence_Fast(value, "");
  if (seq == nullptr) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "%s: attribute '%s' must be a list of %s, got %R", op.name.c_str(),
                 attr.name.c_str(), what, value);
    return false;
  }
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
    T converted;
    if (!convert(item, &converted)) {
      PyErr_Format(PyExc_TypeError, "%s: attribute '%s' must be a list of %s, element %zd is %R",
                   op.name.c_str(), attr.name.c_str(), what, i, item);
      Py_DECREF(seq);
      return false;
    }
    out->push_back(std::move(converted));
  }
  Py_DECREF(seq);
  return true;
}

bool convert_attr(PyObject* value, const OpDef& op, const AttrDef& attr, AttrValue* out) {
  switch (attr.type) {
    case AttrType::kInt: {
      PyObject* index = PyNumber_Index(value);
      if (index == nullptr) break;
      int64_t v;
      bool ok = int64_from_index(index, &v, op, attr);
      Py_DECREF(index);
      if (!ok) return false;
      *out = v;
      return true;
    }
    case AttrType::kFloat: {
      double v = PyFloat_AsDouble(value);
      if (v == -1.0 && PyErr_Occurred()) break;
      *out = v;
      return true;
    }
    case AttrType::kBool: {
      // Strict: a bool, an int or a NumPy bool; arbitrary objects are not silently truthy.
      bool numpy_bool = std::string_view(Py_TYPE(value)->tp_name).starts_with("numpy.bool");
      if (!PyBool_Check(value) && !PyLong_Check(value) && !numpy_bool) break;
      int v = PyObject_IsTrue(value);
      if (v < 0) break;
      *out = v != 0;
      return true;
    }
    case AttrType::kDType: {
      DType d;
      if (!dtype_from_python(value, &d)) break;
      *out = d;
      return true;
    }
    case AttrType::kDTypes: {
      std::vector<DType> types;
      if (!convert_list(value, &types, op, attr, "dtypes", &dtype_from_python)) return false;
      *out = std::move(types);
      return true;
    }
    case AttrType::kShapes: {
      std::vector<Shape> shapes;
      if (!convert_list(value, &shapes, op, attr, "shapes (None or a list of dims)", &shape_from_python))
        return false;
      *out = std::move(shapes);
      return true;
    }
    case AttrType::kInts: {
      std::vector<int64_t> ints;
      if (!convert_ints(value, &ints, op, attr)) return false;
      *out = std::move(ints);
      return true;
    }
    case AttrType::kString: {
      const char* s = PyUnicode_AsUTF8(value);
      if (s == nullptr) break;
      *out = std::string(s);
      return true;
    }
    case AttrType::kTensor: {
      PyObject* t = to_tensor(value, -1);
      if (t == nullptr) break;
      if (impl_of(t)->is_symbolic()) {  // a tensor attribute is a constant: its value must exist now
        Py_DECREF(t);
        PyErr_Format(PyExc_TypeError, "%s: attribute '%s' must be a concrete tensor, got a symbolic tensor",
                     op.name.c_str(), attr.name.c_str());
        return false;
      }
      *out = TensorRef(impl_of(t));
      Py_DECREF(t);
      return true;
    }
  }
  if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError) ||
      PyErr_ExceptionMatches(PyExc_AttributeError)) {
    PyErr_Clear();
    static const char* names[] = {"an int",   "a float",          "a bool",
                                  "a dtype",  "a list of ints",   "a string",
                                  "a tensor", "a list of dtypes", "a list of shapes"};
    PyErr_Format(PyExc_TypeError, "%s: attribute '%s' must be %s, got %R", op.name.c_str(), attr.name.c_str(),
                 names[static_cast<int>(attr.type)], value);
  } else if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "%s: attribute '%s' got %R, which is out of range", op.name.c_str(),
                 attr.name.c_str(), value);
  }
  return false;
}

PyObject* op_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const OpDef& op = *reinterpret_cast<OpCaller*>(self)->op;
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) > 0) {
    PyErr_Format(PyExc_TypeError, "ember._C.op(%s) takes positional arguments only", op.name.c_str());
    return nullptr;
  }
  size_t n_declared = op.inputs.size();
  if (static_cast<size_t>(nargs) < n_declared) {
    PyErr_Format(PyExc_TypeError, "%s expects %zu input(s), got %zd", op.name.c_str(), n_declared, nargs);
    return nullptr;
  }
  bool variadic = op.has_flag(kVariadicInput);

  // Gather raw input objects (the variadic input is a sequence; fixed inputs may follow it).
  SmallVector<PyObject*, 4> raw;
  PyObject* variadic_seq = nullptr;
  SmallVector<PyObject*, 2> list_seqs;  // PySequence_Fast results to release
  const bool paired = op.has_flag(kPairedLists);
  for (size_t i = 0; i < n_declared; ++i) {
    if (paired) {  // both declared inputs are lists of one length
      PyObject* seq = PySequence_Fast(args[i], "");
      if (seq == nullptr) {
        PyErr_Clear();
        for (PyObject* s : list_seqs) Py_DECREF(s);
        PyErr_Format(PyExc_TypeError, "%s: input '%s' must be a list of tensors", op.name.c_str(),
                     op.inputs[i].name.c_str());
        return nullptr;
      }
      list_seqs.push_back(seq);
      const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
      const Py_ssize_t first = PySequence_Fast_GET_SIZE(list_seqs[0]);
      if (n == 0 || n != first) {
        for (PyObject* s : list_seqs) Py_DECREF(s);
        PyErr_Format(PyExc_ValueError,
                     "%s: inputs '%s' and '%s' must be non-empty lists of the same length, got %zd and %zd",
                     op.name.c_str(), op.inputs[0].name.c_str(), op.inputs[1].name.c_str(), first, n);
        return nullptr;
      }
      for (Py_ssize_t k = 0; k < n; ++k) raw.push_back(PySequence_Fast_GET_ITEM(seq, k));
      continue;
    }
    if (variadic && static_cast<int>(i) == op.variadic_input) {
      variadic_seq = PySequence_Fast(args[i], "");
      if (variadic_seq == nullptr) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: input '%s' must be a list of tensors", op.name.c_str(),
                     op.inputs[i].name.c_str());
        return nullptr;
      }
      Py_ssize_t n = PySequence_Fast_GET_SIZE(variadic_seq);
      if (n == 0 && !op.has_flag(kVariadicMayBeEmpty)) {
        Py_DECREF(variadic_seq);
        PyErr_Format(PyExc_ValueError, "%s: input '%s' must be a non-empty list of tensors", op.name.c_str(),
                     op.inputs[i].name.c_str());
        return nullptr;
      }
      for (Py_ssize_t k = 0; k < n; ++k) raw.push_back(PySequence_Fast_GET_ITEM(variadic_seq, k));
    } else {
      raw.push_back(args[i]);
    }
  }

  // Python scalars and lists adopt the dtype of a tensor sharing their type variable (TF's rule).
  int var_dtype[2] = {-1, -1};
  auto arg_of = [&](size_t k) -> const ArgDef& { return op.arg_of(k, raw.size()); };
  auto rule_of = [&](size_t k) -> const TypeRule& { return arg_of(k).type; };
  for (size_t k = 0; k < raw.size(); ++k) {
    int var = rule_of(k).type_var;
    if (var >= 0 && var_dtype[var] < 0 && is_tensor(raw[k]))
      var_dtype[var] = static_cast<int>(impl_of(raw[k])->dtype());
  }
  SmallVector<PyObject*, 4> tensors;
  PyObject* result = nullptr;
  bool ok = true;
  for (size_t k = 0; k < raw.size() && ok; ++k) {
    int var = rule_of(k).type_var;
    int hint = var >= 0 ? var_dtype[var] : -1;
    if (arg_of(k).shape_like && !is_tensor(raw[k])) {
      PyObject* t = shape_operand_tensor(raw[k], op, arg_of(k));
      if (t != nullptr) {
        tensors.push_back(t);
        continue;
      }
      if (PyErr_Occurred()) {
        ok = false;
        break;
      }
    }
    if (var < 0 && hint < 0 && !is_tensor(raw[k])) {
      DTypeSet allowed = rule_of(k).allowed;
      if (allowed == kBoolType) hint = static_cast<int>(DType::kBool);
    }
    PyObject* t = to_tensor(raw[k], hint);
    if (t == nullptr) {
      ok = false;
    } else {
      tensors.push_back(t);
      // With no tensor among them, the first operand of a type variable decides its dtype and the others
      // convert to it, as TensorFlow's: tf.maximum(0., [1, -1]) is float32, multiply(float64 array, 42)
      // float64.
      if (var >= 0 && var_dtype[var] < 0) var_dtype[var] = static_cast<int>(impl_of(t)->dtype());
    }
  }

  AttrList attrs;
  size_t n_attr_args = static_cast<size_t>(nargs) - n_declared;
  if (ok && n_attr_args > op.attrs.size()) {
    PyErr_Format(PyExc_TypeError, "%s takes %zu attribute(s), got %zu", op.name.c_str(), op.attrs.size(),
                 n_attr_args);
    ok = false;
  }
  for (size_t i = 0; ok && i < op.attrs.size(); ++i) {
    PyObject* value = i < n_attr_args ? args[n_declared + i] : Py_None;
    if (value == Py_None) {
      if (!op.attrs[i].has_default) {
        PyErr_Format(PyExc_TypeError, "%s: missing required attribute '%s'", op.name.c_str(),
                     op.attrs[i].name.c_str());
        ok = false;
        break;
      }
      attrs.push_back(op.attrs[i].default_value);
      continue;
    }
    AttrValue v;
    if (!convert_attr(value, op, op.attrs[i], &v)) {
      ok = false;
      break;
    }
    attrs.push_back(std::move(v));
  }
  if (ok) result = run_op(op, tensors.data(), tensors.size(), {attrs.data(), attrs.size()}, false);
  for (PyObject* t : tensors) Py_DECREF(t);
  Py_XDECREF(variadic_seq);
  for (PyObject* s : list_seqs) Py_DECREF(s);
  return result;
}

PyObject* op_repr(PyObject* self) {
  return PyUnicode_FromFormat("<ember op %s>", reinterpret_cast<OpCaller*>(self)->op->name.c_str());
}

PyTypeObject OpCallerType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

bool init_op_caller(PyObject* module) {
  OpCallerType.tp_name = "ember._C.OpCaller";
  OpCallerType.tp_basicsize = sizeof(OpCaller);
  OpCallerType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  OpCallerType.tp_vectorcall_offset = offsetof(OpCaller, vectorcall);
  OpCallerType.tp_call = PyVectorcall_Call;
  OpCallerType.tp_repr = op_repr;
  OpCallerType.tp_doc = "A registered op, callable with (inputs..., attrs...).";
  if (PyType_Ready(&OpCallerType) < 0) return false;
  Py_INCREF(&OpCallerType);
  return PyModule_AddObject(module, "OpCaller", reinterpret_cast<PyObject*>(&OpCallerType)) == 0;
}

PyObject* make_op_caller(const OpDef* op) {
  auto* caller = PyObject_New(OpCaller, &OpCallerType);
  if (caller == nullptr) return nullptr;
  caller->op = op;
  caller->vectorcall = op_vectorcall;
  return reinterpret_cast<PyObject*>(caller);
}

}  // namespace ember::python
