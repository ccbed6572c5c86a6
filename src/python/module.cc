// The extension module ember._C: the hot types (py_tensor.cc, py_ops.cc) in the raw C API, the rest
// bound with nanobind.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <type_traits>
#include <typeinfo>
#include <variant>

#include "ember/core/device.h"
#include "ember/core/float_env.h"
#include "ember/core/parallel.h"
#include "ember/graph/tensor_proto.h"
#include "ember/kernels/elementwise.h"
#include "ember/kernels/seed.h"
#include "ember/ops/execute.h"
#include "ember/ops/registry.h"
#include "ember/ops/tensor_array.h"
#include "ember/trace/trace_context.h"
#include "python/py_gil.h"
#include "python/py_tensor.h"

namespace nb = nanobind;

namespace ember::python {
PyObject* make_op_caller(const OpDef* op);
void bind_functions(nb::module_& m);
void bind_call_memo(nb::module_& m);
void bind_variables(nb::module_& m);
void bind_lookup_tables(nb::module_& m);
void bind_graph_def(nb::module_& m);
void bind_tape(nb::module_& m);
void bind_profiler(nb::module_& m);
void bind_config(nb::module_& m);
void bind_dlpack(nb::module_& m);
void bind_state(nb::module_& m);
void bind_jit(nb::module_& m);
void bind_data(nb::module_& m);
void bind_script_ops(nb::module_& m);
void bind_record_io(nb::module_& m);
void bind_summary(nb::module_& m);
bool init_api_dispatch(PyObject* module);
void bind_distribute(nb::module_& m);
void bind_devices(nb::module_& m);
}  // namespace ember::python

namespace {

using namespace ember;
using namespace ember::python;

nb::object op_caller(const std::string& name) {
  const OpDef* op = OpRegistry::global().find(name);
  if (op == nullptr) throw nb::value_error(("ember: no op named '" + name + "'").c_str());
  return nb::steal(make_op_caller(op));
}

void register_classes(nb::handle tensor_class, nb::list dtype_objects, nb::dict error_classes,
                      nb::handle convert) {
  Registered& r = registered();
  Py_INCREF(tensor_class.ptr());
  r.tensor_class = reinterpret_cast<PyTypeObject*>(tensor_class.ptr());
  for (size_t i = 0; i < kNumDTypes && i < nb::len(dtype_objects); ++i) {
    r.dtype_objects[i] = dtype_objects[i].ptr();
    Py_INCREF(r.dtype_objects[i]);
  }
  for (auto [code, cls] : error_classes) {
    int c = nb::cast<int>(code);
    if (c >= 0 && c < 17) {
      r.error_classes[c] = cls.ptr();
      Py_INCREF(cls.ptr());
    }
  }
  r.convert_fn = convert.ptr();
  Py_INCREF(r.convert_fn);
}

// Copies a C-contiguous buffer (anything exporting the buffer protocol) into a new tensor.
nb::object from_buffer(nb::handle obj, int dtype_enum, std::vector<int64_t> dims) {
  if (dtype_enum < 0 || dtype_enum >= kNumDTypes) throw nb::value_error("ember: bad dtype enum");
  auto shape = Shape::from_dims(dims);
  if (!shape.ok()) return nb::steal(raise_status(shape.status().with_prefix("constant: ")));
  DType d = static_cast<DType>(dtype_enum);
  if (d == DType::kString) throw nb::type_error("ember: string tensors are made with from_strings");
  auto t = TensorImpl::allocate(d, *shape, current_device());
  if (!t.ok()) return nb::steal(raise_status(t.status()));
  Py_buffer view;
  if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_C_CONTIGUOUS) < 0) throw nb::python_error();
  size_t need = t.value()->nbytes();
  if (static_cast<size_t>(view.len) != need) {
    PyBuffer_Release(&view);
    throw nb::value_error(
        ("ember: buffer has " + std::to_string(view.len) + " bytes, expected " + std::to_string(need))
            .c_str());
  }
  std::memcpy(t.value()->mutable_raw_data(), view.buf, need);
  PyBuffer_Release(&view);
  // ember.constant inside a traced function: embedded as a Const node, not captured.
  if (TraceContext* trace = TraceContext::current()) trace->note_local_constant(t.value().get());
  return nb::steal(wrap_tensor(std::move(t).value()));
}

// A string tensor from a flat sequence of bytes or str (stored as UTF-8) objects, in row-major order of
// `dims`.
nb::object from_strings(nb::handle seq, std::vector<int64_t> dims) {
  auto shape = Shape::from_dims(dims);
  if (!shape.ok()) return nb::steal(raise_status(shape.status().with_prefix("constant: ")));
  PyObject* fast = PySequence_Fast(seq.ptr(), "ember: from_strings expects a sequence of bytes");
  if (fast == nullptr) throw nb::python_error();
  nb::object owner = nb::steal(fast);
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  if (n != shape->num_elements())
    throw nb::value_error(
        ("ember: " + std::to_string(n) + " strings for shape " + shape->to_string()).c_str());
  auto t = TensorImpl::allocate(DType::kString, *shape);
  if (!t.ok()) return nb::steal(raise_status(t.status()));
  std::string* out = t.value()->mutable_data<std::string>();
  PyObject** items = PySequence_Fast_ITEMS(fast);
  for (Py_ssize_t i = 0; i < n; ++i) {
    const char* data;
    Py_ssize_t size;
    if (PyBytes_Check(items[i])) {
      data = PyBytes_AS_STRING(items[i]);
      size = PyBytes_GET_SIZE(items[i]);
    } else if (PyUnicode_Check(items[i])) {  // str is stored as UTF-8, as TensorFlow does
      data = PyUnicode_AsUTF8AndSize(items[i], &size);
      if (data == nullptr) throw nb::python_error();
    } else {
      throw nb::type_error(("ember: a string tensor's elements must be str or bytes, got " +
                            std::string(Py_TYPE(items[i])->tp_name))
                               .c_str());
    }
    out[i].assign(data, static_cast<size_t>(size));
  }
  if (TraceContext* trace = TraceContext::current()) trace->note_local_constant(t.value().get());
  return nb::steal(wrap_tensor(std::move(t).value()));
}

// The elements of a string tensor as a flat list of bytes objects (row-major).
nb::list string_values(nb::handle tensor) {
  if (!PyObject_TypeCheck(tensor.ptr(), &TensorBaseType)) throw nb::type_error("ember: expected a tensor");
  const TensorImpl& t = *impl_of(tensor.ptr());
  if (t.is_symbolic()) throw nb::type_error("a symbolic tensor (inside ember.function) has no value yet");
  if (t.dtype() != DType::kString)
    throw nb::type_error(
        ("ember: string_values of a " + std::string(dtype_name(t.dtype())) + " tensor").c_str());
  nb::list out;
  const std::string* s = t.data<std::string>();
  for (int64_t i = 0; i < t.num_elements(); ++i)
    out.append(nb::steal(PyBytes_FromStringAndSize(s[i].data(), static_cast<Py_ssize_t>(s[i].size()))));
  return out;
}

const char* batching_name(BatchingRule rule) {
  switch (rule) {
    case BatchingRule::kElementwise:
      return "elementwise";
    case BatchingRule::kBroadcasting:
      return "broadcasting";
    case BatchingRule::kCustom:
      return "custom";
    case BatchingRule::kFallback:
      return "fallback";
    case BatchingRule::kUndeclared:
      break;
  }
  return "undeclared";
}

nb::dict op_info(const std::string& name) {
  const OpDef* op = OpRegistry::global().find(name);
  if (op == nullptr) throw nb::value_error(("ember: no op named '" + name + "'").c_str());
  nb::dict d;
  d["name"] = op->name;
  d["doc"] = op->doc;
  nb::list inputs, attrs, outputs;
  for (const ArgDef& a : op->inputs) inputs.append(a.name);
  for (const AttrDef& a : op->attrs) attrs.append(a.name);
  for (const std::string& o : op->outputs) outputs.append(o);
  d["inputs"] = inputs;
  d["attrs"] = attrs;
  // The defaults, for ember.raw_ops to pass back (dtypes as enum numbers, shapes as lists of dims with -1
  // unknown, an unknown rank as None, a float32 vector as a list of floats; other tensor defaults are not
  // offered).
  nb::dict defaults;
  for (const AttrDef& a : op->attrs) {
    if (!a.has_default) continue;
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, DType>) {
            defaults[a.name.c_str()] = static_cast<int>(v);
          } else if constexpr (std::is_same_v<V, std::vector<DType>>) {
            nb::list list;
            for (DType d : v) list.append(static_cast<int>(d));
            defaults[a.name.c_str()] = list;
          } else if constexpr (std::is_same_v<V, std::vector<Shape>>) {
            nb::list list;
            for (const Shape& shape : v) {
              if (shape.rank() < 0)
                list.append(nb::none());
              else
                list.append(nb::cast(shape.dim_vector()));
            }
            defaults[a.name.c_str()] = list;
          } else if constexpr (std::is_same_v<V, TensorRef>) {
            // A float32 vector default is TensorFlow's list(float) (graph_def_ops' is_float_list): offered
            // as a list of floats; other tensor defaults are not offered.
            if (v && v->dtype() == DType::kFloat32 && v->rank() == 1) {
              nb::list list;
              for (int64_t i = 0; i < v->num_elements(); ++i) list.append(v->template data<float>()[i]);
              defaults[a.name.c_str()] = list;
            }
          } else {
            defaults[a.name.c_str()] = v;
          }
        },
        a.default_value);
  }
  d["attr_defaults"] = defaults;
  static const char* const kAttrTypeNames[] = {"int",    "float",  "bool",   "dtype", "ints",
                                               "string", "tensor", "dtypes", "shapes"};
  nb::list attr_types;
  for (const AttrDef& a : op->attrs) attr_types.append(kAttrTypeNames[static_cast<int>(a.type)]);
  d["attr_types"] = attr_types;
  d["outputs"] = outputs;
  d["stateful"] = op->has_flag(kStateful);
  d["differentiable"] = !op->has_flag(kNotDifferentiable);
  nb::list types;
  for (int i = 0; i < kNumDTypes; ++i)
    if (op->kernels[i]) types.append(i);
  d["kernel_dtypes"] = types;
  d["has_gradient"] = op->grad != nullptr;
  d["batching"] = batching_name(op->batching);
  d["api_name"] = op->api_name;
  return d;
}

// The dtype table for python/ember/dtypes.py, so that enum numbers and properties are written once.
nb::list dtype_table() {
  nb::list table;
  for (int i = 0; i < kNumDTypes; ++i) {
    DType d = static_cast<DType>(i);
    nb::dict row;
    row["enum"] = i;
    row["name"] = std::string(dtype_name(d));
    row["size"] = dtype_size(d);
    row["is_floating"] = is_floating(d);
    row["is_integer"] = is_integer(d);
    row["is_unsigned"] = dtype_in(d, kIntTypes) && !dtype_in(d, kSignedIntTypes);
    row["is_bool"] = d == DType::kBool;
    row["is_numeric"] = dtype_in(d, kNumericAndComplexTypes);
    row["is_complex"] = is_complex(d);
    row["real_dtype"] = static_cast<int>(real_dtype(d));
    row["tf_datatype"] = tf_datatype(d);
    table.append(row);
  }
  return table;
}

// The last line of defence for the C API contract: a C++ exception that reaches nanobind becomes an
// ember.errors exception (or a TypeError for a value nanobind could not convert) with a message, never
// nanobind's bare "RuntimeError: std::bad_cast".
void translate_exception(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const StatusError& e) {
    raise_status(e.status());
  } catch (const std::bad_alloc&) {
    raise_status(make_error(Code::kResourceExhausted, "ember: out of memory"));
  } catch (const std::bad_cast&) {
    PyErr_SetString(
        PyExc_TypeError,
        "ember: an argument has the wrong type (it could not be converted to the value expected)");
  }
  // Anything else falls through to nanobind's own translators (python_error, std::exception, ...).
}

// The op seed of a random op: None, or an int that fits in int64 (python/ember/ops/random_ops.py reduces
// Python ints and tensors to one).
std::optional<int64_t> op_seed_arg(nb::handle seed) {
  if (seed.is_none()) return std::nullopt;
  if (!PyLong_Check(seed.ptr())) throw nb::type_error("random_get_seed: the op seed must be an int or None");
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(seed.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow != 0) throw nb::value_error("random_get_seed: the op seed does not fit in int64");
  return v;
}

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const auto& op : OpRegistry::global().ops()) names.push_back(op->name);
  return names;
}

}  // namespace

NB_MODULE(_C, m) {
  // Some process-wide caches are leaked on purpose (they must outlive the allocator's thread caches at
  // exit), and graphs in them may hold Python callables (custom-gradient replays): not leaks to report.
  nb::set_leak_warnings(false);
  init_gil_guards();
  nb::register_exception_translator(&translate_exception);
  if (!init_tensor_type(m.ptr()) || !init_op_caller(m.ptr()) || !init_api_dispatch(m.ptr()))
    throw nb::python_error();
  bind_functions(m);
  bind_call_memo(m);
  bind_variables(m);
  bind_lookup_tables(m);
  bind_graph_def(m);
  bind_tape(m);
  bind_profiler(m);
  bind_config(m);
  bind_dlpack(m);
  bind_state(m);
  bind_jit(m);
  bind_data(m);
  bind_script_ops(m);
  bind_record_io(m);
  bind_summary(m);
  bind_distribute(m);
  bind_devices(m);
  m.def("op", &op_caller, "The fast callable for a registered op.");
  m.def("tensor_list_bytes_copied", &tensor_list_bytes_copied,
        "Bytes TensorListSetItem/PushBack and InplaceUpdate (a TensorArray write) copied from the lists "
        "they write into (ops/tensor_array.h).");
  m.def("while_stack_bytes_copied", &while_stack_bytes_copied,
        "Bytes accumulating While loops copied into their stacks (ops/tensor_array.h).");
  m.def("op_info", &op_info);
  m.def("op_names", &op_names);
  m.def("dtype_table", &dtype_table);
  m.def("_register", &register_classes);
  m.def("from_buffer", &from_buffer);
  m.def("from_strings", &from_strings);
  m.def("string_values", &string_values);
  m.def("elementwise_isa", [] { return std::string(kernels::elementwise_isa()); });
  m.def("set_intra_op_threads", &set_intra_op_threads);
  m.def("intra_op_threads", &intra_op_threads);
  m.def("parallel_regions_started", &parallel_regions_started);  // tests: small work stays on one thread
  m.def("force_other_processes_load", &internal::force_other_processes_load);  // tests: a quiet machine
  m.def("cores_free_for_parallel_work", &cores_free_for_parallel_work);
  // An eager py_function runs its Python with FTZ/DAZ set, as TensorFlow's kernel does (docs/subnormals.md).
  m.def("denormal_flags", [] { return denormal_flags(); });
  m.def("set_denormal_flags", [](uint32_t flags) { set_denormal_flags(flags); });
  m.attr("FLUSH_DENORMALS") = kFlushDenormals;
  // TF 2 seed semantics live in C++ (kernels/seed.h) so C++ programs share them; Python asks for the
  // (seed, seed2) pair of each random op call.
  m.def("random_set_seed", [](int64_t seed) { kernels::SeedState::global().set_seed(seed); });
  m.def("random_unset_seed", [] { kernels::SeedState::global().unset_seed(); });
  m.def(
      "random_global_seed", [] { return kernels::SeedState::global().global_seed(); },
      "The global seed tf.random.set_seed set, or None.");
  m.def(
      "random_get_seed",
      [](nb::handle op_seed) {
        kernels::SeedPair pair = kernels::SeedState::global().get_seed(op_seed_arg(op_seed));
        return nb::make_tuple(pair.seed, pair.seed2);
      },
      nb::arg("op_seed").none());
  m.def("to_tensor", [](nb::handle value, int hint) {
    PyObject* r = to_tensor(value.ptr(), hint);
    if (r == nullptr) throw nb::python_error();
    return nb::steal(r);
  });
}
