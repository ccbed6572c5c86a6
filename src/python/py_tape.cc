// ember._C.Tape: the C++ GradientTape (autodiff/tape.h) behind the Python ember.GradientTape, and
// record_custom for ember.custom_gradient (a Python function computes the node's input gradients).
#include <cxxabi.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/vector.h>

#include "ember/autodiff/graph_gradients.h"
#include "ember/autodiff/tape.h"
#include "python/py_gil.h"
#include "python/py_status.h"
#include "python/py_tensor.h"

namespace nb = nanobind;

namespace ember::python {
namespace {

nb::object wrap_or_none(TensorRef t) {
  if (!t) return nb::none();
  return nb::steal(wrap_tensor(std::move(t)));
}

// Tensors (null for None) from a list of tensors or Nones; `what` names the argument in errors.
SmallVector<TensorImpl*, 4> tensors_or_null(nb::list items, const char* what) {
  SmallVector<TensorImpl*, 4> out;
  for (nb::handle t : items) out.push_back(t.is_none() ? nullptr : tensor_arg(t, what));
  return out;
}

// Gradient sources from a list of tensors or variable ids.
std::vector<autodiff::GradSource> grad_sources(nb::list sources, const char* what) {
  std::vector<autodiff::GradSource> out;
  for (nb::handle s : sources) {
    if (nb::isinstance<nb::int_>(s))
      out.push_back(autodiff::GradSource{nullptr, nb::cast<int64_t>(s)});
    else
      out.push_back(autodiff::GradSource{tensor_arg(s, what), 0});
  }
  return out;
}

// The gradients as a list of tensors or Nones, or the error raised.
nb::list gradients_or_raise(StatusOr<std::vector<TensorRef>> result) {
  if (!result.ok()) {
    if (PyErr_Occurred()) throw nb::python_error();  // a custom gradient function raised
    throw_status(result.status());
  }
  nb::list out;
  for (TensorRef& t : *result) out.append(wrap_or_none(std::move(t)));
  return out;
}

class PyTape {
 public:
  PyTape(bool persistent, bool watch_accessed_variables) {
    auto t = autodiff::Tape::create(persistent, watch_accessed_variables);
    if (!t.ok()) throw_status(t.status());
    tape_ = std::move(t).value();
  }

  autodiff::Tape& tape() { return *tape_; }

  /// targets: tensors; output_grads: tensors or None (or an empty list); sources: tensors or variable ids.
  nb::list gradient(nb::list targets, nb::list output_grads, nb::list sources) {
    SmallVector<TensorImpl*, 4> target_ptrs = tensors_or_null(targets, "GradientTape.gradient target");
    SmallVector<TensorImpl*, 4> grad_ptrs =
        tensors_or_null(output_grads, "GradientTape.gradient output_gradients");
    std::vector<autodiff::GradSource> srcs = grad_sources(sources, "GradientTape.gradient source");
    return gradients_or_raise(tape_->gradient({target_ptrs.data(), target_ptrs.size()},
                                              {grad_ptrs.data(), grad_ptrs.size()},
                                              {srcs.data(), srcs.size()}));
  }

 private:
  std::unique_ptr<autodiff::Tape> tape_;
};

// ember.custom_gradient's backward: calls the user's Python gradient function with the output gradients.
class PythonBackward final : public autodiff::Backward {
 public:
  explicit PythonBackward(nb::object fn) : fn_(std::move(fn)) {}
  ~PythonBackward() override {
    AcquireGil gil;  // refused while the interpreter exits: leak the function rather than touch it
    if (!gil.is_valid()) (void)fn_.release();
    fn_.reset();
  }

  void backward(const autodiff::TapeNode& node, std::span<TensorImpl* const> output_grads,
                SmallVector<TensorRef, 4>& edge_grads) override {
    AcquireGil gil;
    if (!gil.is_valid())
      throw StatusError(
          make_error(Code::kCancelled, "custom gradient function: the interpreter is shutting down"));
    nb::list grads;
    for (size_t i = 0; i < output_grads.size(); ++i) {
      TensorRef g(output_grads[i]);
      if (!g) g = gradient::zeros_like(GradTensor(node.outputs[i])).release();
      grads.append(nb::steal(wrap_tensor(std::move(g))));
    }
    nb::object result;
    try {
      result = fn_(grads);
    } catch (abi::__forced_unwind&) {
      hang_thread_at_exit();  // Python ended this thread at exit (Note [Threads at interpreter exit])
    } catch (nb::python_error& e) {
      e.restore();
      throw StatusError(make_error(Code::kUnknown, "custom gradient function raised"));
    }
    size_t i = 0;
    for (nb::handle g : result) {
      if (i >= edge_grads.size()) break;
      if (!g.is_none()) edge_grads[i] = TensorRef(tensor_arg(g, "custom_gradient grad_fn result"));
      ++i;
    }
  }

  // The decorated function's name, which ember.custom_gradient gives the backward closure.
  std::string describe() const override {
    AcquireGil gil;
    if (!gil.is_valid()) return "a custom_gradient";
    nb::object name = nb::getattr(fn_, "__name__", nb::str("?"));
    return "the custom_gradient of '" + std::string(nb::str(name).c_str()) + "'";
  }
  bool user_defined() const override { return true; }

 private:
  nb::object fn_;
};

}  // namespace

void bind_tape(nb::module_& m) {
  nb::class_<PyTape>(m, "Tape")
      .def(nb::init<bool, bool>(), nb::arg("persistent"), nb::arg("watch_accessed_variables"))
      .def("push",
           [](PyTape& t) {
             Status pushed = t.tape().push();
             if (!pushed.ok()) throw_status(pushed);
           })
      .def("pop", [](PyTape& t) { t.tape().pop(); })
      .def("pause", [](PyTape& t) { t.tape().pause(); })
      .def("resume", [](PyTape& t) { t.tape().resume(); })
      .def("reset", [](PyTape& t) { t.tape().reset(); })
      .def("allow_reuse", [](PyTape& t) { t.tape().allow_reuse(); })
      .def("watch", [](PyTape& t, nb::handle x) { t.tape().watch(tensor_arg(x, "GradientTape.watch")); })
      .def("watch_variable", [](PyTape& t, int64_t id) { t.tape().watch_variable(id); })
      .def("watched_variables", [](PyTape& t) { return t.tape().watched_variables(); })
      .def_prop_ro("persistent", [](PyTape& t) { return t.tape().persistent(); })
      .def("gradient", &PyTape::gradient);
  m.def("recording_active", [] { return autodiff::recording_active(); });
  m.def("is_watched", [](nb::handle x) { return tensor_arg(x, "is_watched")->tape_mask() != 0; });
  m.def("record_custom",
        [](nb::list inputs, std::vector<int64_t> variables, nb::list outputs, nb::object grad_fn) {
          SmallVector<TensorImpl*, 4> in, out;
          for (nb::handle t : inputs) in.push_back(tensor_arg(t, "custom_gradient input"));
          for (nb::handle t : outputs) out.push_back(tensor_arg(t, "custom_gradient output"));
          autodiff::record_custom({in.data(), in.size()}, {variables.data(), variables.size()},
                                  {out.data(), out.size()}, {},
                                  std::make_shared<PythonBackward>(std::move(grad_fn)));
        });
  // tf.gradients inside a trace: ys, grad_ys (tensors or None), xs (tensors or variable ids), stop tensors.
  m.def("graph_gradients", [](nb::list ys, nb::list grad_ys, nb::list xs, nb::list stops) {
    SmallVector<TensorImpl*, 4> y_ptrs = tensors_or_null(ys, "tf.gradients ys");
    SmallVector<TensorImpl*, 4> grad_ptrs = tensors_or_null(grad_ys, "tf.gradients grad_ys");
    SmallVector<TensorImpl*, 4> stop_ptrs = tensors_or_null(stops, "tf.gradients stop_gradients");
    std::vector<autodiff::GradSource> sources = grad_sources(xs, "tf.gradients xs");
    return gradients_or_raise(
        autodiff::graph_gradients({y_ptrs.data(), y_ptrs.size()}, {grad_ptrs.data(), grad_ptrs.size()},
                                  {sources.data(), sources.size()}, {stop_ptrs.data(), stop_ptrs.size()}));
  });
  // Tokens are opaque integers: the tapes suspended, restored by resume_recording.
  m.def("pause_recording", [] { return reinterpret_cast<uintptr_t>(new autodiff::RecordingPause()); });
  m.def("resume_recording",
        [](uintptr_t token) { delete reinterpret_cast<autodiff::RecordingPause*>(token); });
}

}  // namespace ember::python
