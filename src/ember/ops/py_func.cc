// EagerPyFunc, PyFunc and PyFuncStateless (ops/py_func.h): a Python function as an op of a graph.
#include "ember/ops/py_func.h"

#include <atomic>

#include "ember/ops/execute.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

std::atomic<decltype(PyFuncHooks::call)> g_call{nullptr};
std::atomic<decltype(PyFuncHooks::gradient_built)> g_gradient_built{nullptr};

constexpr int kToken = 0;
constexpr int kTout = 1;
constexpr int kCallable = 2;                  // kPyFuncCallableAttr
constexpr const char* kGradSuffix = "_grad";  // script_ops.py's _GRAD_SUFFIX

// The outputs' dtypes are Tout; their shapes are whatever the function returns.
Status py_func_shape(InferContext& ctx) {
  for (DType d : ctx.attr_dtypes(kTout)) ctx.outputs.push_back({d, Shape::unknown_rank()});
  return Status::OK();
}

template <bool kEager>
Status py_func_kernel(KernelContext& ctx) {
  auto call = g_call.load(std::memory_order_acquire);
  if (call == nullptr)
    return make_error(Code::kFailedPrecondition, ctx.op->name, ": no Python runtime to call (import ember)");
  std::vector<TensorRef> results;
  EMBER_RETURN_IF_ERROR(call(ctx.attr_string(kToken), kEager, *ctx.attr_tensor(kCallable), ctx.inputs,
                             ctx.attr_dtypes(kTout), results));
  if (results.size() != ctx.outputs.size())
    return make_error(Code::kInternal, ctx.op->name, ": the function gave ", results.size(),
                      " results, the op has ", ctx.outputs.size(), " outputs");
  for (size_t i = 0; i < results.size(); ++i) ctx.outputs[i] = std::move(results[i]);
  return Status::OK();
}

// Note [The gradient of a py_function]
// The gradient is one more EagerPyFunc, whose token is the forward's with "_grad" appended and which keeps
// the forward's function alive as the forward node does. It takes the forward inputs followed by the
// gradients of the outputs and gives the gradients of the floating-point and complex inputs; the others get
// none. Building it tells the package (PyFuncHooks::gradient_built) that from now on each call of the forward
// should run the function on a GradientTape and keep that tape, inputs and outputs for the gradient to
// replay, as TensorFlow's EagerFunc does once its graph gradient exists: the function then runs once per
// step, not again for its gradient. The package says what happens when nothing was kept (script_ops.py).
// The gradient op has no gradient itself: TensorFlow's reads the forward inputs from the kept tape, not as
// inputs, so a second derivative through a py_function is None there, and here too.
void eager_py_func_grad(GradContext& c) {
  if (c.attr_string(kToken).ends_with(kGradSuffix)) return;
  std::vector<GradTensor> args;
  std::vector<DType> grad_dtypes;
  for (TensorImpl* in : c.inputs) {
    args.emplace_back(in);
    if (is_differentiable_dtype(in->dtype())) grad_dtypes.push_back(in->dtype());
  }
  if (grad_dtypes.empty()) return;
  if (auto built = g_gradient_built.load(std::memory_order_acquire)) built(*c.attr_tensor(kCallable));
  for (TensorImpl* dy : c.output_grads) args.emplace_back(dy);
  AttrList attrs{c.attr_string(kToken) + kGradSuffix, grad_dtypes, c.attr_tensor(kCallable)};
  auto grads = gradient::emit("EagerPyFunc", std::span<const GradTensor>(args), std::move(attrs));
  size_t next = 0;
  for (int i = 0; i < c.num_inputs(); ++i)
    if (is_differentiable_dtype(c.inputs[i]->dtype())) c.set(i, std::move(grads[next++]));
}

// What a node read from a GraphDef (or built without the package) holds as kPyFuncCallableAttr: an empty
// tensor that keeps nothing alive.
TensorRef no_callable() {
  static const TensorRef empty = std::move(TensorImpl::allocate(DType::kUInt8, Shape{0})).value();
  return empty;
}

OpBuilder py_func_op(const char* name, const char* doc, bool eager) {
  constexpr DTypeSet kTypes = kAllTypesAndString | kComplexTypes;
  OpBuilder b(name);
  b.doc(doc)
      .input_fixed("input", kTypes)
      .output("output")
      .type_var(kTypes)
      .attr("token", AttrType::kString)
      .attr("Tout", AttrType::kDTypes)
      .attr(kPyFuncCallableAttr, AttrType::kTensor, no_callable())
      .dispatch_on_output()  // its inputs and outputs may each be of any dtype, or none at all
      .kernel(kTypes, eager ? &py_func_kernel<true> : &py_func_kernel<false>)
      .shape(&py_func_shape)
      .batching(BatchingRule::kFallback);
  return b;
}

}  // namespace

void set_py_func_hooks(PyFuncHooks hooks) {
  g_gradient_built.store(hooks.gradient_built, std::memory_order_release);
  g_call.store(hooks.call, std::memory_order_release);
}

void register_py_func_ops(OpRegistry& r) {
  constexpr uint32_t kVariadic = kVariadicInput | kVariadicMayBeEmpty | kKernelAllocates;
  py_func_op("EagerPyFunc",
             "Calls the Python function registered as `token` on eager tensors (tf.py_function); "
             "differentiable. EagerPyFunc(x, token=\"pyfunc_1\", Tout=[float32]) == func(x)",
             true)
      .flags(kVariadic | kStateful)
      .grad(&eager_py_func_grad)
      .done(r);
  py_func_op("PyFunc",
             "Calls the Python function registered as `token` on NumPy arrays (tf.numpy_function). "
             "PyFunc(x, token=\"pyfunc_1\", Tout=[float32]) == func(x.numpy())",
             false)
      .flags(kVariadic | kStateful | kNotDifferentiable)
      .done(r);
  py_func_op(
      "PyFuncStateless",
      "PyFunc for a function without side effects (numpy_function(stateful=False)): it may be "
      "deduplicated or pruned. PyFuncStateless(x, token=\"pyfunc_1\", Tout=[float32]) == func(x.numpy())",
      false)
      .flags(kVariadic | kNotDifferentiable)
      .done(r);
}

}  // namespace ember
