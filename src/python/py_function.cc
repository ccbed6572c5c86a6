// Bindings for tracing and graph functions: ember._C.Trace (a TraceContext driven from Python) and
// ember._C.GraphFunction (a traced or carved function: inspection, pruning, calls).
#include "python/py_function.h"

#include <Python.h>
#include <cxxabi.h>
#include <frameobject.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <unordered_map>

#include "ember/autodiff/tape.h"
#include "ember/graph/partial_value.h"
#include "ember/graph/rebind.h"
#include "ember/ops/registry.h"
#include "ember/runtime/executor.h"
#include "ember/trace/trace_context.h"
#include "python/py_gil.h"
#include "python/py_status.h"
#include "python/py_tensor.h"
#include "python/py_tensor_list.h"

namespace nb = nanobind;

namespace ember::python {
namespace {

// The ember package's directory (with a trailing separator), set by the package at import from the same
// value python/ember/traceback_filter.py filters with. A substring such as "/ember/" would also match a
// user's ~/ember/train.py and lose its location.
std::string& package_dir() {
  static std::string dir;
  return dir;
}

bool is_ember_frame(const std::string& file) {
  const std::string& dir = package_dir();
  return !dir.empty() && file.starts_with(dir);
}

// A file or function name as UTF-8; a name that does not encode (lone surrogates from undecodable file
// names) is escaped rather than leaving an error pending under the op being built.
std::string utf8_or_escaped(PyObject* name) {
  PyObject* bytes = PyUnicode_AsEncodedString(name, "utf-8", "backslashreplace");
  if (bytes == nullptr) {
    PyErr_Clear();
    return "";
  }
  std::string out(PyBytes_AS_STRING(bytes), static_cast<size_t>(PyBytes_GET_SIZE(bytes)));
  Py_DECREF(bytes);
  return out;
}

// The first Python frame outside the ember package: the user's line that created a node.
SourceLocation python_caller_location() {
  SourceLocation loc;
  PyFrameObject* frame = PyEval_GetFrame();
  if (frame == nullptr) return loc;
  Py_INCREF(frame);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    std::string file_str = utf8_or_escaped(code->co_filename);
    if (!is_ember_frame(file_str)) {
      loc.file = file_str;
      loc.line = PyFrame_GetLineNumber(frame);
      loc.function = utf8_or_escaped(code->co_name);
      Py_DECREF(code);
      Py_DECREF(frame);
      return loc;
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  return loc;
}

nb::object wrap(TensorRef ref) { return nb::steal(wrap_tensor(std::move(ref))); }

TensorImpl* as_impl(nb::handle h) {
  if (!is_tensor(h.ptr())) throw nb::type_error("expected an ember.Tensor");
  return impl_of(h.ptr());
}

nb::object dims_or_none(const Shape& s) {
  if (!s.rank_known()) return nb::none();
  nb::list dims;
  for (int64_t d : s.dims()) dims.append(d < 0 ? nb::object(nb::none()) : nb::object(nb::int_(d)));
  return nb::tuple(dims);
}

Shape shape_from(nb::handle dims) {
  if (dims.is_none()) return Shape::unknown_rank();
  std::vector<int64_t> v;
  for (nb::handle d : dims) {
    if (d.is_none()) {
      v.push_back(kUnknownDim);
      continue;
    }
    if (!PyLong_Check(d.ptr())) throw nb::type_error("add_argument: a dimension must be an int or None");
    int overflow = 0;
    long long n = PyLong_AsLongLongAndOverflow(d.ptr(), &overflow);
    if (n == -1 && PyErr_Occurred()) throw nb::python_error();
    if (overflow != 0)
      throw_status(
          invalid_argument("input signature: dimension ", nb::str(d).c_str(), " does not fit in int64"));
    v.push_back(n);
  }
  auto s = Shape::from_dims(v, /*allow_unknown=*/true);
  if (!s.ok()) throw_status(s.status());
  return *s;
}

}  // namespace

PyGraphFunction::PyGraphFunction(std::shared_ptr<const FunctionGraph> fn)
    : fn_(std::move(fn)), compiled_(fn_), library_name_(FunctionLibrary::global().add(fn_)) {}
// The library holds functions weakly; a graph that calls this one keeps it alive past this object.
PyGraphFunction::~PyGraphFunction() = default;

Status PyGraphFunction::run(std::span<TensorImpl* const> args, OutputList& results) const {
  if (autodiff::recording_active()) {
    // Under a tape the call goes through the op path, which records it (architecture.md §7).
    static const OpDef& call = op_def("PartitionedCall");
    AttrList attrs;
    attrs.push_back(library_name_);
    return execute_op(call, args, {attrs.data(), attrs.size()}, results);
  }
  return compiled_.run(args, results);
}

nb::list PyGraphFunction::call(nb::list args) const {
  SmallVector<TensorImpl*, 4> impls;
  for (nb::handle a : args) {
    TensorImpl* t = as_impl(a);
    // The executor reads its arguments' buffers; a graph tensor has none (inside a trace, calls go
    // through a PartitionedCall node instead).
    if (t->is_symbolic())
      throw nb::type_error(("GraphFunction " + fn_->name +
                            ": cannot run on a symbolic tensor; call it through ember.function while tracing")
                               .c_str());
    impls.push_back(t);
  }
  OutputList results;
  Status s;
  {
    // Without the GIL in either path: a plan's worker threads may run kernels that call back into Python
    // (a dataset's next element), and they must be able to take it while this thread waits for them. The
    // tape's recording state is this thread's own (autodiff/tape.cc), so recording needs no GIL.
    ReleaseGil release;
    s = autodiff::recording_active() ? run({impls.data(), impls.size()}, results)
                                     : compiled_.run({impls.data(), impls.size()}, results);
  }
  if (!s.ok()) throw_status(s);
  nb::list out;
  for (TensorRef& r : results) out.append(wrap(std::move(r)));
  return out;
}

std::shared_ptr<PyGraphFunction> PyGraphFunction::prune(std::vector<std::string> inputs,
                                                        std::vector<std::string> outputs) const {
  auto carved = prune_function(*fn_, inputs, outputs);
  if (!carved.ok()) throw_status(carved.status());
  return std::make_shared<PyGraphFunction>(std::move(carved).value());
}

nb::dict PyGraphFunction::node(int32_t i) const {
  const Graph& g = fn_->graph;
  if (i < 0 || i >= g.num_nodes()) throw nb::index_error("node index out of range");
  const Node& n = g.node(i);
  nb::dict d;
  d["name"] = n.name;
  d["type"] = n.op->name;
  nb::list inputs, controls, outputs;
  for (ValueRef v : n.inputs) inputs.append(nb::make_tuple(v.node, v.output));
  for (int32_t c : n.control_inputs) controls.append(c);
  for (const TensorSpec& spec : n.outputs)
    outputs.append(nb::make_tuple(static_cast<int>(spec.dtype), dims_or_none(spec.shape)));
  d["inputs"] = inputs;
  d["control_inputs"] = controls;
  d["outputs"] = outputs;
  d["attrs"] = format_attrs(*n.op, n.attrs);
  // The same attributes as Python values (a dtype as its enum number, a tensor as an ember Tensor).
  nb::dict values;
  for (size_t a = 0; a < n.attrs.size() && a < n.op->attrs.size(); ++a) {
    values[n.op->attrs[a].name.c_str()] = std::visit(
        [](const auto& v) -> nb::object {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, DType>) {
            return nb::int_(static_cast<int>(v));
          } else if constexpr (std::is_same_v<T, std::vector<DType>>) {
            nb::list types;
            for (DType d : v) types.append(nb::int_(static_cast<int>(d)));
            return types;
          } else if constexpr (std::is_same_v<T, std::vector<Shape>>) {
            nb::list shapes;
            for (const Shape& shape : v) shapes.append(dims_or_none(shape));
            return shapes;
          } else if constexpr (std::is_same_v<T, TensorRef>) {
            PyObject* t = wrap_tensor(v);
            if (t == nullptr) throw nb::python_error();
            return nb::steal(t);
          } else {
            return nb::cast(v);
          }
        },
        n.attrs[a]);
  }
  d["attr_values"] = values;
  d["location"] =
      n.location.known() ? nb::object(nb::make_tuple(n.location.file, n.location.line)) : nb::none();
  return d;
}

namespace {

class PyTrace {
 public:
  PyTrace(std::string name, bool auto_control_deps, bool lifts_enclosing_constants)
      : fn_(std::make_shared<FunctionGraph>()) {
    fn_->name = std::move(name);
    ctx_ = std::make_unique<TraceContext>(fn_.get());
    ctx_->set_location_provider(&python_caller_location);
    ctx_->set_auto_control_deps(auto_control_deps);
    if (lifts_enclosing_constants) ctx_->set_lifts_enclosing_constants();
  }

  void enter() { ctx_->enter(); }
  void exit() { ctx_->exit(); }

  nb::object add_argument(int dtype, nb::handle dims, const std::string& name) {
    return wrap(ctx_->add_argument(static_cast<DType>(dtype), shape_from(dims), name));
  }

  nb::object lift(nb::handle t) {
    auto lifted = ctx_->lift(as_impl(t));
    if (!lifted.ok()) throw_status(lifted.status());
    return wrap(std::move(lifted).value());
  }

  nb::list lifted_captures() const {
    nb::list out;
    for (const TensorRef& t : fn_->lifted_captures) out.append(wrap(t));
    return out;
  }

  /// Identities of the lifted tensors (a tensor is wrapped anew each time it crosses into Python).
  std::vector<uintptr_t> lifted_ids() const {
    std::vector<uintptr_t> ids;
    for (const TensorRef& t : fn_->lifted_captures) ids.push_back(reinterpret_cast<uintptr_t>(t.get()));
    return ids;
  }

  void order_lifted(nb::list order) {
    SmallVector<TensorImpl*, 4> impls;
    for (nb::handle t : order) impls.push_back(as_impl(t));
    Status s = ctx_->order_lifted({impls.data(), impls.size()});
    if (!s.ok()) throw_status(s);
  }

  /// Sets the results (tensors, concrete or symbolic) and seals the function.
  std::shared_ptr<PyGraphFunction> finish(nb::list results) {
    for (nb::handle r : results) {
      auto v = ctx_->value_of(as_impl(r));
      if (!v.ok()) throw_status(v.status());
      fn_->results.push_back(*v);
    }
    ctx_->seal();
    ctx_.reset();
    return std::make_shared<PyGraphFunction>(fn_);
  }

 private:
  std::shared_ptr<FunctionGraph> fn_;
  std::unique_ptr<TraceContext> ctx_;
};

}  // namespace

void bind_functions(nb::module_& m) {
  install_function_runtime();
  nb::class_<PyGraphFunction>(m, "GraphFunction")
      .def("__call__", &PyGraphFunction::call)
      .def("prune", &PyGraphFunction::prune)
      // The same trace naming other variables (a dict of old id -> new id): ember.function runs one trace
      // for every set of variable arguments of the same dtypes and shapes.
      .def("rebind_variables",
           [](const PyGraphFunction& f, const std::vector<std::pair<int64_t, int64_t>>& pairs) {
             std::unordered_map<int64_t, int64_t> ids(pairs.begin(), pairs.end());
             auto rebound = rebind_variables(f.fn(), ids);
             if (!rebound.ok()) throw_status(rebound.status());
             return std::make_shared<PyGraphFunction>(std::move(rebound).value());
           })
      .def("node", &PyGraphFunction::node)
      .def_prop_ro("num_nodes", [](const PyGraphFunction& f) { return f.fn().graph.num_nodes(); })
      .def_prop_ro("args", [](const PyGraphFunction& f) { return f.fn().args; })
      .def_prop_ro("num_user_args", [](const PyGraphFunction& f) { return f.fn().num_user_args(); })
      .def_prop_ro("lifted_captures",
                   [](const PyGraphFunction& f) {
                     nb::list out;
                     for (const TensorRef& t : f.fn().lifted_captures) out.append(wrap(t));
                     return out;
                   })
      .def_prop_ro("results",
                   [](const PyGraphFunction& f) {
                     std::vector<std::pair<int32_t, int32_t>> r;
                     for (ValueRef v : f.fn().results) r.emplace_back(v.node, v.output);
                     return r;
                   })
      .def_prop_ro("control_outputs", [](const PyGraphFunction& f) { return f.fn().control_outputs; })
      .def_prop_ro("captured_values",
                   [](const PyGraphFunction& f) {
                     nb::list out;
                     for (const TensorRef& t : f.fn().captured_values) out.append(wrap(t));
                     return out;
                   })
      .def_prop_ro("library_name", &PyGraphFunction::library_name)
      .def_prop_ro("name", [](const PyGraphFunction& f) { return f.fn().name; })
      .def("find", [](const PyGraphFunction& f, const std::string& name) { return f.fn().graph.find(name); })
      .def("to_text", [](const PyGraphFunction& f) { return f.fn().graph.to_text(); })
      .def("optimized_text",
           [](const PyGraphFunction& f) { return f.compiled().optimized_function().graph.to_text(); })
      .def("partition_texts",
           [](const PyGraphFunction& f) {
             std::vector<std::string> out;
             for (const auto& p : f.compiled().partitions()) out.push_back(p->graph.to_text());
             return out;
           })
      .def_prop_ro("runs_in_parallel",
                   [](const PyGraphFunction& f) { return f.compiled().runs_in_parallel(); })
      .def_prop_ro("arena_bytes", [](const PyGraphFunction& f) { return f.compiled().arena_bytes(); })
      .def_prop_ro("arena_slots", [](const PyGraphFunction& f) { return f.compiled().arena_slots(); });
  nb::class_<PyTrace>(m, "Trace")
      .def(nb::init<std::string, bool, bool>(), nb::arg("name"), nb::arg("auto_control_deps") = true,
           nb::arg("lifts_enclosing_constants") = false)
      .def("enter", &PyTrace::enter)
      .def("exit", &PyTrace::exit)
      .def("add_argument", &PyTrace::add_argument, nb::arg("dtype"), nb::arg("dims").none(), nb::arg("name"))
      .def("lift", &PyTrace::lift)
      .def_prop_ro("lifted_captures", &PyTrace::lifted_captures)
      .def_prop_ro("lifted_ids", &PyTrace::lifted_ids)
      .def("order_lifted", &PyTrace::order_lifted)
      .def("finish", &PyTrace::finish);
  m.def("set_package_dir", [](const std::string& dir) { package_dir() = dir; });
  m.def("in_trace", [] { return TraceContext::current() != nullptr; });
  // Which trace is current (0 when eager): a TensorArray changes its representation only in its own.
  m.def("trace_token", [] {
    const TraceContext* t = TraceContext::current();
    return t == nullptr ? uint64_t{0} : t->serial();
  });
  // tf.get_static_value of a graph tensor: what tracing knows of an int value (a shape built from
  // tf.shape(x) and constants), as (is_scalar, [int or None per element]); None when even its length is not
  // known. Concrete tensors (constants, folded results) are read in Python.
  m.def("partial_value", [](nb::handle t) -> nb::object {
    TraceContext* trace = TraceContext::current();
    TensorImpl* impl = as_impl(t);
    if (trace == nullptr || !impl->is_symbolic()) return nb::none();
    auto v = trace->value_of(impl);
    if (!v.ok()) throw_status(v.status());
    PartialValue known = partial_value(trace->function().graph, *v);
    if (!known.length_known || known.matrix()) return nb::none();
    nb::list values;
    for (int64_t x : known.values)
      values.append(x == PartialValue::kUnknown ? nb::object(nb::none()) : nb::object(nb::int_(x)));
    return nb::make_tuple(known.scalar, values);
  });
  m.def(
      "capture_symbolically",
      [](nb::handle t) -> nb::object {
        TraceContext* trace = TraceContext::current();
        if (trace == nullptr) return nb::borrow(t);
        auto lifted = trace->lift(as_impl(t));
        if (!lifted.ok()) throw_status(lifted.status());
        return wrap(std::move(lifted).value());
      },
      "Inside a trace, the symbolic argument an eager tensor is captured into (so ops on it are staged, not "
      "folded: a SavedModel asset's path, which a loader replaces); the tensor itself when eager.");
  // The callee of a PartitionedCall node, for pfor to vectorise through the call (None once it is gone).
  m.def("library_function", [](const std::string& name) -> nb::object {
    std::shared_ptr<const FunctionGraph> fn = FunctionLibrary::global().find(name);
    if (fn == nullptr) return nb::none();
    return nb::cast(std::make_shared<PyGraphFunction>(std::move(fn)));
  });
  m.def("trace_num_nodes", [] {
    TraceContext* trace = TraceContext::current();
    return trace == nullptr ? -1 : trace->function().graph.num_nodes();
  });
  // Whether `t` is a value of the function this thread traces now (the graph tf.gradients adds to).
  m.def("trace_owns", [](nb::handle t) {
    TraceContext* trace = TraceContext::current();
    TensorImpl* impl = tensor_arg(t, "trace_owns");
    return trace != nullptr && impl->is_symbolic() && impl->graph() == &trace->function();
  });
  // The resources (ids, each once) that nodes [first, end) of the current trace read: the variables a
  // custom_gradient function read while it was traced.
  m.def("trace_resources_read", [](int32_t first, int32_t end) {
    std::vector<int64_t> ids;
    TraceContext* trace = TraceContext::current();
    if (trace == nullptr) return ids;
    const Graph& g = trace->function().graph;
    for (int32_t i = std::max(first, 0); i < std::min(end, g.num_nodes()); ++i) {
      const Node& n = g.node(i);
      if (!n.op->has_flag(kReadsResource)) continue;
      const int64_t id = std::get<int64_t>(n.attrs[0]);
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    return ids;
  });
  // A custom_gradient traced with no tape recording: [first, end) are its nodes; `replay(inputs)` reruns
  // the decorated function on the replay's tensors (see FunctionGraph::CustomGradientRegion).
  m.def("note_custom_gradient_region", [](int32_t first, int32_t end, nb::list inputs, nb::list outputs,
                                          std::string name, nb::object replay) {
    TraceContext* trace = TraceContext::current();
    if (trace == nullptr) return;
    FunctionGraph::CustomGradientRegion region;
    region.first_node = first;
    region.end_node = end;
    region.name = std::move(name);
    auto value_of = [&](nb::handle t) {
      auto v = trace->value_of(tensor_arg(t, "custom_gradient tensor"));
      if (!v.ok()) throw_status(v.status());
      return *v;
    };
    for (nb::handle t : inputs) region.inputs.push_back(value_of(t));
    for (nb::handle t : outputs) region.outputs.push_back(value_of(t));
    // The graph may outlive this call anywhere (copies, caches): release the Python callable under the GIL.
    std::shared_ptr<nb::object> callable(new nb::object(std::move(replay)), [](nb::object* o) {
      AcquireGil gil;  // refused while the interpreter exits: leak the reference rather than touch it
      if (!gil.is_valid()) (void)o->release();
      delete o;
    });
    region.replay = [callable](std::span<TensorImpl* const> tensors) -> StatusOr<std::vector<TensorRef>> {
      AcquireGil gil;
      if (!gil.is_valid())
        return make_error(Code::kCancelled, "rerunning the function: the interpreter is shutting down");
      try {
        nb::object result;
        try {
          result = (*callable)(wrap_tensor_list(tensors));
        } catch (abi::__forced_unwind&) {
          hang_thread_at_exit();  // Python ended this thread at exit (Note [Threads at interpreter exit])
        }
        std::vector<TensorRef> out;
        for (nb::handle t : result) out.emplace_back(tensor_arg(t, "custom_gradient output"));
        return out;
      } catch (nb::python_error& e) {
        return make_error(Code::kInternal, "rerunning the function failed: ", e.what());
      }
    };
    // A custom gradient around others (nested decorated calls) replaces theirs: its grad_fn is what
    // applies to the whole region, as eagerly, where the outer node's backward never reaches the inner.
    auto& regions = trace->function().custom_gradient_regions;
    while (!regions.empty() && regions.back().first_node >= first) regions.pop_back();
    regions.push_back(std::move(region));
  });
  // Tokens are opaque integers: the paused TraceContext, restored by resume_trace.
  m.def("pause_trace", [] { return reinterpret_cast<uintptr_t>(TraceContext::pause()); });
  m.def("resume_trace",
        [](uintptr_t token) { TraceContext::resume(reinterpret_cast<TraceContext*>(token)); });
  m.def("note_local_constant", [](nb::handle t) {
    if (TraceContext* ctx = TraceContext::current()) ctx->note_local_constant(as_impl(t));
  });
  m.def("symbolic_name", [](nb::handle t) -> nb::object {
    TensorImpl* impl = as_impl(t);
    if (!impl->is_symbolic()) return nb::none();
    const auto* fn = static_cast<const FunctionGraph*>(impl->graph());
    return nb::str(fn->graph.tensor_name(ValueRef{impl->graph_node(), impl->graph_output()}).c_str());
  });
}

}  // namespace ember::python
