#include "python/py_tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "ember/core/device.h"
#include "ember/ops/execute.h"
#include "ember/ops/registry.h"
#include "ember/trace/trace_context.h"

namespace ember::python {

Registered& registered() {
  static Registered r;
  return r;
}

PyObject* raise_status(const Status& s) {
  // An error already pending here is a bug on ember's side, but calling the class with it set would turn
  // both into a SystemError: keep it as the new exception's context instead.
  PyObject *pending_type, *pending_value, *pending_tb;
  PyErr_Fetch(&pending_type, &pending_value, &pending_tb);
  if (pending_type != nullptr) {
    PyErr_NormalizeException(&pending_type, &pending_value, &pending_tb);
    if (pending_tb != nullptr) PyException_SetTraceback(pending_value, pending_tb);
    Py_XDECREF(pending_type);
    Py_XDECREF(pending_tb);
  }
  int code = static_cast<int>(s.code());
  PyObject* cls = (code >= 0 && code < 17) ? registered().error_classes[code] : nullptr;
  if (cls == nullptr) cls = PyExc_RuntimeError;
  // ember.errors.OpError(node_def, op, message, *args) — TensorFlow's constructor shape.
  // Messages may quote user data (file contents, names): decode leniently, never fail on bad UTF-8.
  PyObject* message = PyUnicode_DecodeUTF8(s.message().data(), static_cast<Py_ssize_t>(s.message().size()),
                                           "backslashreplace");
  PyObject* exc = message ? PyObject_CallFunction(cls, "OOO", Py_None, Py_None, message) : nullptr;
  Py_XDECREF(message);
  if (exc == nullptr) {
    Py_XDECREF(pending_value);
    return nullptr;
  }
  if (pending_value != nullptr) PyException_SetContext(exc, pending_value);  // steals pending_value
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc)), exc);
  Py_DECREF(exc);
  return nullptr;
}

PyObject* wrap_tensor(TensorRef ref) {
  PyTypeObject* cls = registered().tensor_class ? registered().tensor_class : &TensorBaseType;
  PyObject* obj = cls->tp_alloc(cls, 0);
  if (obj == nullptr) return nullptr;
  auto* t = reinterpret_cast<PyTensor*>(obj);
  t->impl = ref.release();
  t->weakrefs = nullptr;
  return obj;
}

namespace {

const OpDef* lookup(const char* name) { return OpRegistry::global().find(name); }

// ---- scalars
template <typename T>
void store(void* dst, double v) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>)
    *static_cast<T*>(dst) = T(static_cast<float>(v));
  else
    *static_cast<T*>(dst) = static_cast<T>(v);
}

// A Python scalar converted while tracing is a constant of the function, not a captured input.
PyObject* wrap_new_constant(TensorRef t) {
  if (TraceContext* trace = TraceContext::current()) trace->note_local_constant(t.get());
  return wrap_tensor(std::move(t));
}

PyObject* make_scalar_from_double(DType d, double v) {
  auto t = TensorImpl::allocate(d, Shape(), current_device());
  if (!t.ok()) return raise_status(t.status());
  visit_dtype<kAllTypesAndComplex>(d, [&]<typename T>() { store<T>(t.value()->mutable_raw_data(), v); });
  return wrap_new_constant(std::move(t).value());
}

PyObject* make_scalar_from_int(DType d, long long v) {
  auto t = TensorImpl::allocate(d, Shape(), current_device());
  if (!t.ok()) return raise_status(t.status());
  void* dst = t.value()->mutable_raw_data();
  visit_dtype<kAllTypesAndComplex>(d, [&]<typename T>() {
    if constexpr (std::is_integral_v<T>)
      *static_cast<T*>(dst) = static_cast<T>(v);
    else
      store<T>(dst, static_cast<double>(v));
  });
  return wrap_new_constant(std::move(t).value());
}

bool int_fits(DType d, long long v) {
  switch (d) {
    case DType::kInt8:
      return v >= INT8_MIN && v <= INT8_MAX;
    case DType::kInt16:
      return v >= INT16_MIN && v <= INT16_MAX;
    case DType::kInt32:
      return v >= INT32_MIN && v <= INT32_MAX;
    case DType::kUInt8:
      return v >= 0 && v <= UINT8_MAX;
    default:
      return true;
  }
}

}  // namespace

PyObject* to_tensor(PyObject* value, int hint) {
  if (is_tensor(value)) {
    Py_INCREF(value);
    return value;
  }
  // A dtype hint (the other operand's dtype) is adopted when the value converts to it; otherwise the
  // value keeps its own inferred dtype and the op reports the mismatch, as TensorFlow does.
  // A number next to a string tensor keeps its own dtype (the op then reports the mismatch, as TensorFlow's
  // `tf.constant(["a"]) + 1` does).
  if (hint == static_cast<int>(DType::kString)) hint = -1;
  if (PyBool_Check(value)) {
    DType d =
        (hint >= 0 && static_cast<DType>(hint) != DType::kBool) ? static_cast<DType>(hint) : DType::kBool;
    return make_scalar_from_int(d, value == Py_True);
  }
  if (PyLong_CheckExact(value)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow) {
      PyErr_Format(PyExc_ValueError, "Can't convert Python int %S to a tensor: it does not fit in int64",
                   value);
      return nullptr;
    }
    DType d = int_fits(DType::kInt32, v) ? DType::kInt32 : DType::kInt64;
    if (hint >= 0 && static_cast<DType>(hint) != DType::kBool) d = static_cast<DType>(hint);
    return make_scalar_from_int(d, v);  // out-of-range values wrap, as in TensorFlow
  }
  if (PyFloat_CheckExact(value)) {
    double v = PyFloat_AS_DOUBLE(value);
    if (hint >= 0 && !is_floating(static_cast<DType>(hint)) && !is_complex(static_cast<DType>(hint))) {
      // TensorFlow converts the operand to its partner's dtype and refuses a float into an integer or bool
      // tensor (`int_tensor * 0.5`, `tf.maximum(0., int_tensor)`): a TypeError, not a silent truncation.
      std::string name(dtype_name(static_cast<DType>(hint)));
      PyErr_Format(PyExc_TypeError, "Cannot convert %R to EagerTensor of dtype %s", value, name.c_str());
      return nullptr;
    }
    DType d = hint >= 0 ? static_cast<DType>(hint) : DType::kFloat32;
    return make_scalar_from_double(d, v);
  }
  PyObject* fn = registered().convert_fn;
  if (fn == nullptr) {
    PyErr_SetString(PyExc_TypeError, "ember: cannot convert value to a tensor (package not initialised)");
    return nullptr;
  }
  PyObject* hint_obj = hint >= 0 ? PyLong_FromLong(hint) : (Py_INCREF(Py_None), Py_None);
  PyObject* result = PyObject_CallFunctionObjArgs(fn, value, hint_obj, nullptr);
  Py_DECREF(hint_obj);
  return result;
}

Status guarded_execute(const OpDef& op, std::span<TensorImpl* const> inputs, std::span<const AttrValue> attrs,
                       OutputList& outputs) {
  // This is called from C (the op caller, number slots): an exception unwinding into CPython's frames
  // would terminate the process. Ops return a Status; this only catches what slipped past one.
  try {
    return execute_op(op, inputs, attrs, outputs);
  } catch (const std::bad_alloc&) {
    return make_error(Code::kResourceExhausted, op.name, ": out of memory");
  } catch (const StatusError& e) {
    return e.status();
  } catch (const std::exception& e) {
    return make_error(Code::kInternal, op.name, ": unexpected C++ exception: ", e.what());
  }
}

PyObject* run_op(const OpDef& op, PyObject* const* inputs, size_t n_inputs, std::span<const AttrValue> attrs,
                 bool force_tuple) {
  SmallVector<TensorImpl*, 4> impls;
  for (size_t i = 0; i < n_inputs; ++i) impls.push_back(impl_of(inputs[i]));
  OutputList outputs;
  Status s = guarded_execute(op, {impls.data(), impls.size()}, attrs, outputs);
  if (!s.ok()) return raise_status(s);
  if (outputs.size() == 1 && !force_tuple) return wrap_tensor(std::move(outputs[0]));
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(outputs.size()));
  if (tuple == nullptr) return nullptr;
  for (size_t i = 0; i < outputs.size(); ++i) {
    PyObject* o = wrap_tensor(std::move(outputs[i]));
    if (o == nullptr) {
      Py_DECREF(tuple);
      return nullptr;
    }
    PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i), o);
  }
  return tuple;
}

namespace {

// ---- number slots

// The right operand of `tensor OP value` as a tensor, or (`*result` set) the result of the operation when the
// value does not convert (TypeError/ValueError) and its reflected method (`reflected`, e.g. "__radd__": a
// RaggedTensor's, a KerasTensor's) computes it. As TensorFlow's operators do, the conversion error stands
// when there is no such method, or it returns NotImplemented or raises TypeError/ValueError itself.
PyObject* right_operand(PyObject* a, PyObject* b, int hint, const char* reflected, PyObject** result) {
  PyObject* xb = to_tensor(b, hint);
  if (xb != nullptr || reflected == nullptr) return xb;
  if (!PyErr_ExceptionMatches(PyExc_TypeError) && !PyErr_ExceptionMatches(PyExc_ValueError)) return nullptr;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyObject* method = PyObject_HasAttrString(reinterpret_cast<PyObject*>(Py_TYPE(b)), reflected)
                         ? PyObject_GetAttrString(b, reflected)
                         : nullptr;
  PyObject* out = method != nullptr ? PyObject_CallOneArg(method, a) : nullptr;
  Py_XDECREF(method);
  if (out != nullptr && out != Py_NotImplemented) {
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    *result = out;
    return nullptr;
  }
  Py_XDECREF(out);
  if (out == nullptr && PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError) &&
      !PyErr_ExceptionMatches(PyExc_ValueError)) {
    Py_XDECREF(type);  // another error from the method (a KeyboardInterrupt...) is what the caller sees
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    return nullptr;
  }
  PyErr_Clear();
  PyErr_Restore(type, value, traceback);
  return nullptr;
}

PyObject* binary_op(PyObject* a, PyObject* b, const char* op_name, const char* reflected = nullptr) {
  bool ta = is_tensor(a), tb = is_tensor(b);
  int hint = static_cast<int>(ta ? impl_of(a)->dtype() : impl_of(b)->dtype());
  PyObject* xa = ta ? (Py_INCREF(a), a) : to_tensor(a, hint);
  if (xa == nullptr) return nullptr;
  PyObject* reflected_result = nullptr;
  PyObject* xb =
      tb ? (Py_INCREF(b), b) : right_operand(a, b, hint, ta ? reflected : nullptr, &reflected_result);
  if (xb == nullptr) {
    Py_DECREF(xa);
    return reflected_result;
  }
  const OpDef* op = lookup(op_name);
  PyObject* result;
  if (op == nullptr) {
    PyErr_Format(PyExc_NotImplementedError, "ember: op %s is not available", op_name);
    result = nullptr;
  } else {
    PyObject* args[2] = {xa, xb};
    AttrList attrs;
    Status s = complete_attrs(*op, attrs);
    result = s.ok() ? run_op(*op, args, 2, {attrs.data(), attrs.size()}, false) : raise_status(s);
  }
  Py_DECREF(xa);
  Py_DECREF(xb);
  return result;
}

PyObject* cast_to(PyObject* t, DType d) {
  static const OpDef* cast = lookup("Cast");
  AttrValue attr = d;
  return run_op(*cast, &t, 1, {&attr, 1}, false);
}

PyObject* true_divide(PyObject* a, PyObject* b) {
  bool ta = is_tensor(a);
  DType d = ta ? impl_of(a)->dtype() : impl_of(b)->dtype();
  if (!is_integer(d)) return binary_op(a, b, "RealDiv", "__rtruediv__");
  // tf.math.truediv: integers divide in floating point (8/16-bit in float32, 32/64-bit in float64).
  DType f = dtype_size(d) <= 2 ? DType::kFloat32 : DType::kFloat64;
  PyObject* xa = to_tensor(a, static_cast<int>(d));
  if (xa == nullptr) return nullptr;
  PyObject* reflected_result = nullptr;
  PyObject* xb = ta ? right_operand(a, b, static_cast<int>(d), "__rtruediv__", &reflected_result)
                    : to_tensor(b, static_cast<int>(d));
  if (xb == nullptr) return Py_DECREF(xa), reflected_result;
  PyObject* result = nullptr;
  if (impl_of(xa)->dtype() != impl_of(xb)->dtype()) {
    result = binary_op(xa, xb, "RealDiv");  // reports the dtype mismatch
  } else {
    PyObject* fa = cast_to(xa, f);
    PyObject* fb = fa ? cast_to(xb, f) : nullptr;
    if (fa && fb) result = binary_op(fa, fb, "RealDiv");
    Py_XDECREF(fa);
    Py_XDECREF(fb);
  }
  Py_DECREF(xa);
  Py_DECREF(xb);
  return result;
}

#define EMBER_BINARY_SLOT(fn, op_name, reflected) \
  PyObject* fn(PyObject* a, PyObject* b) { return binary_op(a, b, op_name, reflected); }
EMBER_BINARY_SLOT(nb_add, "Add", "__radd__")
EMBER_BINARY_SLOT(nb_subtract, "Sub", "__rsub__")
EMBER_BINARY_SLOT(nb_multiply, "Mul", "__rmul__")
EMBER_BINARY_SLOT(nb_floor_divide, "FloorDiv", "__rfloordiv__")
EMBER_BINARY_SLOT(nb_remainder, "FloorMod", "__rmod__")
EMBER_BINARY_SLOT(nb_matmul, "MatMul", "__rmatmul__")
#undef EMBER_BINARY_SLOT

// &, | and ^ are logical on bool tensors and bitwise on the others, as TensorFlow's (bool ^ bool is
// NotEqual: ember has no LogicalXor op). A float operand reaches the Bitwise op, whose dtype check names it.
#define EMBER_LOGICAL_OR_BITWISE_SLOT(fn, logical_op, bitwise_op, reflected)        \
  PyObject* fn(PyObject* a, PyObject* b) {                                          \
    DType d = impl_of(is_tensor(a) ? a : b)->dtype();                               \
    return binary_op(a, b, d == DType::kBool ? logical_op : bitwise_op, reflected); \
  }
EMBER_LOGICAL_OR_BITWISE_SLOT(nb_and, "LogicalAnd", "BitwiseAnd", "__rand__")
EMBER_LOGICAL_OR_BITWISE_SLOT(nb_or, "LogicalOr", "BitwiseOr", "__ror__")
EMBER_LOGICAL_OR_BITWISE_SLOT(nb_xor, "NotEqual", "BitwiseXor", "__rxor__")
#undef EMBER_LOGICAL_OR_BITWISE_SLOT

PyObject* nb_power(PyObject* a, PyObject* b, PyObject* mod) {
  if (mod != Py_None) {
    PyErr_SetString(PyExc_TypeError, "pow() with a modulus is not supported for tensors");
    return nullptr;
  }
  return binary_op(a, b, "Pow", "__rpow__");
}

PyObject* unary_op(PyObject* a, const char* op_name) {
  const OpDef* op = lookup(op_name);
  return run_op(*op, &a, 1, {}, false);
}
PyObject* nb_negative(PyObject* a) { return unary_op(a, "Neg"); }
// abs(z) of a complex tensor is its magnitude, a real tensor (TensorFlow's ComplexAbs).
PyObject* nb_absolute(PyObject* a) {
  return unary_op(a, is_complex(impl_of(a)->dtype()) ? "ComplexAbs" : "Abs");
}
PyObject* nb_invert(PyObject* a) {
  return unary_op(a, impl_of(a)->dtype() == DType::kBool ? "LogicalNot" : "Invert");
}
PyObject* nb_positive(PyObject* a) {
  Py_INCREF(a);
  return a;
}

// The single element of a one-element tensor as a double/int, for __bool__/__float__/__int__.
bool single_element(PyObject* a, const char* what) {
  if (impl_of(a)->is_symbolic()) {
    PyErr_Format(
        PyExc_TypeError,
        "%s of a symbolic tensor is not known while ember.function traces: using a graph tensor as a "
        "Python bool (or number) is not allowed. Use ember.cond / ember.while_loop for data-dependent "
        "control flow, or let autograph convert the Python `if`/`while`.",
        what);
    return false;
  }
  if (impl_of(a)->num_elements() != 1) {
    PyErr_Format(PyExc_ValueError,
                 "%s of a tensor is only defined for a tensor with one element, got shape %s%s", what,
                 impl_of(a)->shape().to_string().c_str(),
                 impl_of(a)->num_elements() > 1 ? " (use ember.reduce_any / ember.reduce_all)" : "");
    return false;
  }
  // A string's truth is NumPy's (non-empty bytes); it has no number.
  if (impl_of(a)->dtype() == DType::kString && std::string_view(what) != "The truth value") {
    PyErr_Format(PyExc_TypeError, "%s of a string tensor is not defined; use tf.strings.to_number", what);
    return false;
  }
  return true;
}
double element_as_double(const TensorImpl& t) {
  if (t.dtype() == DType::kString) return t.data<std::string>()->empty() ? 0.0 : 1.0;
  double v = 0;
  visit_dtype(t.dtype(), [&]<typename T>() { v = static_cast<double>(static_cast<float>(*t.data<T>())); });
  if (t.dtype() == DType::kFloat64) v = *t.data<double>();
  if (t.dtype() == DType::kInt64) v = static_cast<double>(*t.data<int64_t>());
  if (t.dtype() == DType::kInt32) v = *t.data<int32_t>();
  if (t.dtype() == DType::kComplex64)
    v = t.data<complex64>()->real();  // float(z) keeps the real part (NumPy)
  if (t.dtype() == DType::kComplex128) v = t.data<complex128>()->real();
  return v;
}
long long element_as_int(const TensorImpl& t) {
  if (t.dtype() == DType::kInt64) return *t.data<int64_t>();
  if (t.dtype() == DType::kInt32) return *t.data<int32_t>();
  return static_cast<long long>(element_as_double(t));
}

int nb_bool(PyObject* a) {
  if (!single_element(a, "The truth value")) return -1;
  const TensorImpl& t = *impl_of(a);
  if (t.dtype() == DType::kComplex64) return *t.data<complex64>() != complex64(0);
  if (t.dtype() == DType::kComplex128) return *t.data<complex128>() != complex128(0);
  return element_as_double(t) != 0.0;
}
PyObject* nb_float(PyObject* a) {
  if (!single_element(a, "float()")) return nullptr;
  return PyFloat_FromDouble(element_as_double(*impl_of(a)));
}
PyObject* nb_int(PyObject* a) {
  if (!single_element(a, "int()")) return nullptr;
  const TensorImpl& t = *impl_of(a);
  if (is_floating(t.dtype())) {
    double v = element_as_double(t);
    if (!std::isfinite(v)) {
      PyErr_SetString(PyExc_ValueError, "cannot convert a non-finite float tensor to int");
      return nullptr;
    }
    return PyLong_FromDouble(v);
  }
  return PyLong_FromLongLong(element_as_int(t));
}
PyObject* nb_index(PyObject* a) {
  const TensorImpl& t = *impl_of(a);
  if (t.is_symbolic()) return single_element(a, "__index__()") ? nullptr : nullptr;
  if (!is_integer(t.dtype()) || t.rank() != 0) {
    PyErr_Format(PyExc_TypeError,
                 "only integer scalar tensors can be used as an index, got %s tensor of shape %s",
                 std::string(dtype_name(t.dtype())).c_str(), t.shape().to_string().c_str());
    return nullptr;
  }
  return PyLong_FromLongLong(element_as_int(t));
}

PyNumberMethods number_methods = [] {
  PyNumberMethods m{};
  m.nb_add = nb_add;
  m.nb_subtract = nb_subtract;
  m.nb_multiply = nb_multiply;
  m.nb_true_divide = true_divide;
  m.nb_floor_divide = nb_floor_divide;
  m.nb_remainder = nb_remainder;
  m.nb_power = nb_power;
  m.nb_negative = nb_negative;
  m.nb_positive = nb_positive;
  m.nb_absolute = nb_absolute;
  m.nb_invert = nb_invert;
  m.nb_and = nb_and;
  m.nb_or = nb_or;
  m.nb_xor = nb_xor;
  m.nb_bool = nb_bool;
  m.nb_int = nb_int;
  m.nb_float = nb_float;
  m.nb_index = nb_index;
  m.nb_matrix_multiply = nb_matmul;
  return m;
}();

PyObject* richcompare(PyObject* a, PyObject* b, int cmp) {
  if ((cmp == Py_EQ || cmp == Py_NE) && b == Py_None) return PyBool_FromLong(cmp == Py_NE);
  const char* names[] = {"Less", "LessEqual", "Equal", "NotEqual", "Greater", "GreaterEqual"};
  PyObject* r = binary_op(a, b, names[cmp]);
  if (r == nullptr && (cmp == Py_EQ || cmp == Py_NE) && PyErr_Occurred()) {
    // TF 2: == between tensors of incompatible shapes or dtypes is simply False (!= is True).
    PyErr_Clear();
    return PyBool_FromLong(cmp == Py_NE);
  }
  return r;
}

Py_hash_t unhashable(PyObject*) {
  PyErr_SetString(PyExc_TypeError, "Tensor is unhashable. Instead, use tensor.ref() as the key.");
  return -1;
}

void dealloc(PyObject* self) {
  auto* t = reinterpret_cast<PyTensor*>(self);
  if (t->weakrefs) PyObject_ClearWeakRefs(self);
  if (t->impl) t->impl->unref();
  // For instances of the Python subclass, CPython's subtype_dealloc calls this and then releases the
  // reference the instance held on its heap type; a static base must not do that too.
  Py_TYPE(self)->tp_free(self);
}

// ---- buffer protocol: a read-only, zero-copy view for np.asarray(t).
const char* buffer_format(DType d) {
  switch (d) {
    case DType::kFloat16:
      return "e";
    case DType::kBFloat16:
      return "H";  // raw bits; the Python layer views them as ml_dtypes.bfloat16
    case DType::kFloat32:
      return "f";
    case DType::kFloat64:
      return "d";
    case DType::kInt8:
      return "b";
    case DType::kInt16:
      return "h";
    case DType::kInt32:
      return "i";
    case DType::kInt64:
      // NumPy's own int64 is C long where long is 64-bit: "q" would make np.longlong arrays, whose scalars
      // print as np.longlong(5) and are not np.int64 instances.
      return sizeof(long) == 8 ? "l" : "q";
    case DType::kUInt8:
      return "B";
    case DType::kBool:
      return "?";
    case DType::kComplex64:
      return "Zf";
    case DType::kComplex128:
      return "Zd";
    case DType::kString:  // getbuffer refuses string tensors before asking
      break;
  }
  return "B";
}

int getbuffer(PyObject* self, Py_buffer* view, int flags) {
  if (flags & PyBUF_WRITABLE) {
    PyErr_SetString(PyExc_BufferError, "ember tensors are immutable: the buffer is read-only");
    return -1;
  }
  const TensorImpl& t = *impl_of(self);
  if (t.is_symbolic()) {
    PyErr_SetString(
        PyExc_TypeError,
        "a symbolic tensor (inside ember.function) has no value yet; return it from the function to "
        "get its value");
    return -1;
  }
  if (t.dtype() == DType::kString) {
    // Elements are std::string objects, not bytes NumPy could read; .numpy() builds an object array.
    PyErr_SetString(PyExc_BufferError, "string tensors have no buffer-protocol format; use .numpy()");
    return -1;
  }
  if (t.dtype() == DType::kBFloat16) {
    // The buffer protocol has no bfloat16 format; NumPy then falls back to __array__ (ml_dtypes).
    PyErr_SetString(PyExc_BufferError, "bfloat16 tensors have no buffer-protocol format; use .numpy()");
    return -1;
  }
  int rank = t.rank();
  auto* dims = static_cast<Py_ssize_t*>(PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (rank + 1)));
  if (dims == nullptr) return PyErr_NoMemory(), -1;
  Py_ssize_t* strides = dims + rank + 1;
  Py_ssize_t item = static_cast<Py_ssize_t>(dtype_size(t.dtype()));
  Py_ssize_t stride = item;
  for (int i = rank - 1; i >= 0; --i) {
    dims[i] = t.shape().dim(i);
    strides[i] = stride;
    stride *= dims[i];
  }
  view->buf = const_cast<void*>(t.raw_data());
  view->obj = self;
  Py_INCREF(self);
  view->len = static_cast<Py_ssize_t>(t.nbytes());
  view->readonly = 1;
  view->itemsize = item;
  view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(buffer_format(t.dtype())) : nullptr;
  view->ndim = rank;
  view->shape = dims;
  view->strides = strides;
  view->suboffsets = nullptr;
  view->internal = dims;
  return 0;
}

void releasebuffer(PyObject*, Py_buffer* view) { PyMem_Free(view->internal); }

PyBufferProcs buffer_procs = {getbuffer, releasebuffer};

// ---- properties the hot paths need in C
PyObject* get_dtype(PyObject* self, void*) {
  PyObject* d = registered().dtype_objects[static_cast<int>(impl_of(self)->dtype())];
  if (d == nullptr) return PyLong_FromLong(static_cast<int>(impl_of(self)->dtype()));
  Py_INCREF(d);
  return d;
}
PyObject* get_shape_tuple(PyObject* self, void*) {
  const Shape& s = impl_of(self)->shape();
  if (!s.rank_known()) Py_RETURN_NONE;  // a symbolic tensor of unknown rank
  PyObject* tuple = PyTuple_New(s.rank());
  for (int i = 0; i < s.rank(); ++i) {
    PyObject* d = s.dim(i) < 0 ? (Py_INCREF(Py_None), Py_None) : PyLong_FromLongLong(s.dim(i));
    PyTuple_SET_ITEM(tuple, i, d);
  }
  return tuple;
}
PyObject* get_is_symbolic(PyObject* self, void*) { return PyBool_FromLong(impl_of(self)->is_symbolic()); }
PyObject* get_data_ptr(PyObject* self, void*) {
  if (impl_of(self)->is_symbolic()) {  // no buffer exists: an address would be read as data
    PyErr_SetString(PyExc_TypeError,
                    "a symbolic tensor (inside ember.function) has no value yet; return it from the function "
                    "to get its value");
    return nullptr;
  }
  return PyLong_FromVoidPtr(const_cast<void*>(impl_of(self)->raw_data()));
}
PyObject* get_ndim(PyObject* self, void*) { return PyLong_FromLong(impl_of(self)->rank()); }
PyObject* get_dtype_enum(PyObject* self, void*) {
  return PyLong_FromLong(static_cast<int>(impl_of(self)->dtype()));
}
PyObject* get_device(PyObject* self, void*) {
  const TensorImpl* t = impl_of(self);
  if (t->is_symbolic()) {  // TensorFlow's graph tensors: the requested device of their op, '' when none
    TraceContext* trace = TraceContext::current();
    if (trace == nullptr || t->graph() != &trace->function()) return PyUnicode_FromString("");
    const Graph& g = trace->function().graph;
    if (t->graph_node() < 0 || t->graph_node() >= g.num_nodes()) return PyUnicode_FromString("");
    const std::string& requested = g.node(t->graph_node()).requested_device;
    return PyUnicode_FromStringAndSize(requested.data(), static_cast<Py_ssize_t>(requested.size()));
  }
  Device d = t->device();
  return PyUnicode_FromFormat("/job:localhost/replica:0/task:0/device:%s:%d",
                              d.type == DeviceType::kCPU ? "CPU" : "GPU", d.index);
}

PyGetSetDef getset[] = {
    {"dtype", get_dtype, nullptr, "The tensor's ember.DType.", nullptr},
    {"_shape_tuple", get_shape_tuple, nullptr, "The shape as a tuple (None for unknown dims and rank).",
     nullptr},
    {"_is_symbolic", get_is_symbolic, nullptr, "Whether this is a graph tensor inside ember.function.",
     nullptr},
    {"ndim", get_ndim, nullptr, "The rank.", nullptr},
    {"_data_ptr", get_data_ptr, nullptr, "Address of the first element (for zero-copy NumPy views).",
     nullptr},
    {"_dtype_enum", get_dtype_enum, nullptr, "The dtype as its enum value.", nullptr},
    {"device", get_device, nullptr, "The device holding the tensor.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

Py_ssize_t mp_length(PyObject* self) {
  const TensorImpl& t = *impl_of(self);
  if (!t.shape().rank_known() || (t.rank() > 0 && t.shape().dim(0) < 0)) {
    PyErr_SetString(PyExc_TypeError,
                    "len is not well defined for a symbolic tensor whose first dimension is "
                    "unknown; use ember.shape(t)[0]");
    return -1;
  }
  if (t.rank() == 0) {
    PyErr_SetString(PyExc_TypeError, "len() of unsized object: the tensor is a scalar");
    return -1;
  }
  return static_cast<Py_ssize_t>(t.shape().dim(0));
}

PyObject* tp_new_disallowed(PyTypeObject*, PyObject*, PyObject*) {
  PyErr_SetString(PyExc_TypeError, "create tensors with ember.constant or ember.convert_to_tensor");
  return nullptr;
}

}  // namespace

PyTypeObject TensorBaseType = {PyVarObject_HEAD_INIT(nullptr, 0)};

bool init_tensor_type(PyObject* module) {
  static PyMappingMethods mapping{};
  mapping.mp_length = mp_length;
  TensorBaseType.tp_name = "ember._C.TensorBase";
  TensorBaseType.tp_basicsize = sizeof(PyTensor);
  TensorBaseType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
  TensorBaseType.tp_doc = "Base of ember.Tensor: an immutable multi-dimensional array.";
  TensorBaseType.tp_dealloc = dealloc;
  TensorBaseType.tp_as_number = &number_methods;
  TensorBaseType.tp_as_mapping = &mapping;
  TensorBaseType.tp_as_buffer = &buffer_procs;
  TensorBaseType.tp_richcompare = richcompare;
  TensorBaseType.tp_hash = unhashable;
  TensorBaseType.tp_weaklistoffset = offsetof(PyTensor, weakrefs);
  TensorBaseType.tp_getset = getset;
  TensorBaseType.tp_new = tp_new_disallowed;
  if (PyType_Ready(&TensorBaseType) < 0) return false;
  Py_INCREF(&TensorBaseType);
  return PyModule_AddObject(module, "TensorBase", reinterpret_cast<PyObject*>(&TensorBaseType)) == 0;
}

}  // namespace ember::python
