// Control-flow passes (issue 15). Branches, conditions and bodies are library functions, compiled (and
// optimized by this same driver) as callees when the kernel first resolves them; these passes rewrite the
// functional nodes themselves:
//  - fold_constant_predicates: an If or Case whose predicate or branch index is a Const (from the trace, or
//    after inlining and folding) becomes a PartitionedCall of the branch it takes, which inlining then
//    flattens into the caller.
//  - hoist_loop_invariants: what a While body computes from loop-invariant values only moves into the
//    caller and enters the loop as new loop variables; see Note [Hoisting out of a loop]. The body is
//    looked at with its calls inlined, and a loop-invariant operand a MatMul reads transposed is
//    transposed once outside (Note [Transposed operands hoisted]). Before classifying, two rewrites make an
//    RNN's small per-step products large ones: x[t] @ W over an invariant sequence becomes row t of X @ W,
//    which is invariant (Note [Products of a loop-invariant sequence]), and a loop variable summing a^T @ d
//    sums one product of the stacked operands after the loop (Note [Products summed over a loop]).
#include <algorithm>

#include "ember/ops/graph_ops.h"
#include "ember/ops/registry.h"
#include "ember/passes/pass.h"

namespace ember::passes {
namespace {

bool is_if(const OpDef& op) { return op.name == "If" || op.name == "StatelessIf"; }
bool is_case(const OpDef& op) { return op.name == "Case" || op.name == "StatelessCase"; }
bool is_while(const OpDef& op) { return op.name == "While" || op.name == "StatelessWhile"; }

// The branch a constant predicate or index selects, as the kernels choose it (ops/control_flow.cc): a
// scalar predicate is true when non-zero, any other when it has elements; an index out of range takes the
// last branch. Empty when the constant does not decide (a dtype without a truth value).
std::string chosen_branch(const Node& node, const TensorImpl& value) {
  const OpDef& op = *node.op;
  std::vector<std::string> branches = called_functions(op, node.attrs);
  if (branches.empty()) return {};
  if (is_case(op)) {
    if (value.dtype() != DType::kInt32 || value.shape().rank() != 0) return {};
    int64_t index = value.data<int32_t>()[0];
    if (index < 0 || index >= static_cast<int64_t>(branches.size()))
      index = static_cast<int64_t>(branches.size()) - 1;
    return branches[index];
  }
  if (branches.size() != 2) return {};
  bool truth = false;
  if (value.shape().rank() != 0) {
    truth = value.num_elements() > 0;
  } else if (!visit_dtype(value.dtype(),
                          [&]<typename T>() { truth = static_cast<float>(value.data<T>()[0]) != 0.0f; })) {
    return {};
  }
  return branches[truth ? 0 : 1];
}

}  // namespace

StatusOr<int> fold_constant_predicates(FunctionGraph& fn) {
  static const OpDef& call_op = op_def("PartitionedCall");
  GraphEditor editor(fn);
  Graph& g = fn.graph;
  int folded = 0;
  const int32_t original = g.num_nodes();
  for (int32_t n = 0; n < original; ++n) {
    if (!is_if(*g.node(n).op) && !is_case(*g.node(n).op)) continue;
    const Node node = g.node(n);  // a copy: adding nodes reallocates the node array
    if (node.inputs.empty()) continue;
    const Node& predicate = g.node(editor.resolve(node.inputs[0]).node);
    if (predicate.op->name != "Const") continue;
    const std::string branch = chosen_branch(node, *std::get<TensorRef>(predicate.attrs[0]));
    if (branch.empty()) continue;
    SmallVector<ValueRef, 4> args;
    for (size_t k = 1; k < node.inputs.size(); ++k) args.push_back(node.inputs[k]);
    AttrList attrs;
    attrs.push_back(branch);
    int32_t call = editor.add_node(call_op, {args.data(), args.size()}, std::move(attrs), node.outputs,
                                   NodeOrigin::of(node), node.name + "/taken");
    for (int32_t c : node.control_inputs) g.add_control_input(call, c);
    editor.replace_node(n, call);
    ++folded;
  }
  EMBER_RETURN_IF_ERROR(editor.finish(/*prune=*/false));
  return folded;
}

// Note [Hoisting out of a loop]
// A loop variable the body returns unchanged (result k is argument k) holds its initial value on every
// iteration, and so does anything the body computes from such variables, its constants and its captured
// values alone. Such nodes move into the caller, computed once from the While's inputs, and enter the
// loop as new loop variables that the body returns unchanged (the condition takes them too, unused, as
// TensorFlow's While passes the condition every loop variable). Only nodes safe to run once instead of
// per iteration move: no stateful op (randomness, variables, effects), no function call, no control edge,
// and only floating-point values in and out, so that a node cannot fail on values (an integer division by
// zero, an index out of range) in a loop that would not have run it: a hoisted node runs even when the
// loop runs zero times. A body's own loops are hoisted first, so an invariant of an inner loop that is
// also invariant in the outer one moves out of both.

namespace {

constexpr int kMaxNesting = 16;

bool hoistable_op(const Node& node) {
  const OpDef& op = *node.op;
  if (op.has_flag(kStateful) || op.has_flag(kReadsResource) || op.has_flag(kWritesResource)) return false;
  if (calls_functions(op) || op.name == "Const" || op.name == "Placeholder") return false;
  if (node.inputs.empty() || !node.control_inputs.empty() || node.outputs.empty()) return false;
  for (const TensorSpec& s : node.outputs)
    if (!is_floating(s.dtype)) return false;
  return true;
}

Status hoist_in(FunctionGraph& fn, int depth, int& hoisted);

// The body with its function calls inlined and its own loops hoisted (a new function), or the body itself
// when that changes nothing. Inlining lets the classification see the nodes a call hides (the backward
// loop of a gradient calls the body's backward function).
StatusOr<std::shared_ptr<const FunctionGraph>> hoisted_body(std::shared_ptr<const FunctionGraph> body,
                                                            int depth) {
  if (depth >= kMaxNesting) return body;
  static const OpDef& call_op = op_def("PartitionedCall");
  bool has_loop = false, has_call = false;
  for (int32_t i = 0; i < body->graph.num_nodes(); ++i) {
    has_loop = has_loop || is_while(*body->graph.node(i).op);
    has_call = has_call || body->graph.node(i).op == &call_op;
  }
  if (!has_loop && !has_call) return body;
  auto copy = std::make_shared<FunctionGraph>(*body);
  copy->custom_gradient_regions.clear();
  int changes = 0;
  for (int round = 0; has_call && round < kMaxNesting; ++round) {
    auto inlined = inline_function_calls(*copy);
    if (!inlined.ok()) return inlined.status();
    if (*inlined == 0) break;
    changes += *inlined;
    // What an inlined callee computes for results the body drops (a backward function's gradient for an
    // input nobody asked for) goes now, before it could be hoisted.
    auto pruned = prune(*copy);
    if (!pruned.ok()) return pruned.status();
    has_loop = false;
    for (int32_t i = 0; i < copy->graph.num_nodes() && !has_loop; ++i)
      has_loop = is_while(*copy->graph.node(i).op);
  }
  if (has_loop) EMBER_RETURN_IF_ERROR(hoist_in(*copy, depth + 1, changes));
  if (changes == 0) return body;
  return std::shared_ptr<const FunctionGraph>(std::move(copy));
}

// A constant that is a permutation of [0, rank) (a Transpose with it cannot fail).
bool is_permutation_constant(const Node& node, int rank) {
  if (node.op->name != "Const" || node.attrs.empty() || !std::holds_alternative<TensorRef>(node.attrs[0]))
    return false;
  const TensorImpl& t = *std::get<TensorRef>(node.attrs[0]);
  if (t.rank() != 1 || t.num_elements() != rank) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t p = t.dtype() == DType::kInt64   ? t.data<int64_t>()[i]
                : t.dtype() == DType::kInt32 ? t.data<int32_t>()[i]
                                             : -1;
    if (p < 0 || p >= rank || seen[p]) return false;
    seen[p] = true;
  }
  return true;
}

// A new argument of `fn` receiving values of `spec`, among the caller's arguments (before the captured
// ones).
int32_t add_call_arg(FunctionGraph& fn, GraphEditor* editor, const TensorSpec& spec, std::string_view name) {
  static const OpDef& placeholder_op = op_def("Placeholder");
  AttrList attrs = placeholder_attrs(spec.dtype, spec.shape);
  SmallVector<TensorSpec, 2> outputs;
  outputs.push_back(spec);
  const int32_t node =
      editor != nullptr
          ? editor->add_node(placeholder_op, {}, std::move(attrs), std::move(outputs), NodeOrigin{}, name)
          : fn.graph.add_node(placeholder_op, {}, std::move(attrs), std::move(outputs), {}, name);
  fn.args.insert(fn.args.begin() + fn.num_call_args(), node);
  return node;
}

// `v` with the Identity nodes before it skipped: a body returning tf.identity(x) returns x unchanged.
ValueRef through_identities(const Graph& g, ValueRef v) {
  for (int hops = 0; hops < 64; ++hops) {
    const Node& n = g.node(v.node);
    if (n.op->name != "Identity" || n.inputs.size() != 1 || !n.control_inputs.empty()) break;
    v = n.inputs[0];
  }
  return v;
}

enum class Kind : uint8_t { kVarying, kInvariantArg, kCapturedArg, kConst, kHoisted };

// [unknown] + `element`: a value stacked over the iterations.
Shape stacked_shape(const Shape& element) {
  std::vector<int64_t> dims = {kUnknownDim};
  for (int64_t d : element.dims()) dims.push_back(d);
  return Shape(std::span<const int64_t>(dims));
}

int64_t int_attr(const Node& node, std::string_view name, int64_t otherwise) {
  const int k = node.op->attr_index(name);
  if (k < 0 || k >= static_cast<int>(node.attrs.size()) || !std::holds_alternative<int64_t>(node.attrs[k]))
    return otherwise;
  return std::get<int64_t>(node.attrs[k]);
}

// Note [Products of a loop-invariant sequence]
// A body that reads row t of a loop-invariant [T, B, K] sequence and multiplies it by a loop-invariant
// matrix (an RNN's x[t] @ W, the input projection of every step) computes one [B, K] @ [K, N] product per
// iteration, a small product whose rows are too few for a GEMM kernel to run at speed. Row t of the
// batched product X @ W ([T, B, N], MatMul broadcasts W over the leading axis) is the same value, so the
// MatMul becomes the same StridedSlice taken of X @ W, and X @ W is invariant: the hoisting below moves it
// into the caller, one [T * B, K] @ [K, N] product per call. The slice keeps its begin, end, strides and
// masks, and X @ W has X's leading axis, so it selects the same row (or fails as the slice of X did). The
// product of every row runs even when the loop reads few of them (or none: a hoisted node runs when the
// loop runs zero times), so the rewrite takes only sequences of static shape whose product stays below
// kMaxSequenceProductBytes.
constexpr int64_t kMaxSequenceProductBytes = int64_t{256} << 20;

// Whether `v` is a StridedSlice taking one row of a static rank-3 value along its leading axis: x[t].
bool is_row_of_sequence(const Graph& g, ValueRef v) {
  const Node& s = g.node(v.node);
  if (s.op->name != "StridedSlice" || s.inputs.size() != 4 || !s.control_inputs.empty()) return false;
  const Shape& x = g.spec(s.inputs[0]).shape;
  if (!x.fully_defined() || x.rank() != 3) return false;
  for (int j = 1; j < 4; ++j) {
    const Shape& operand = g.spec(s.inputs[j]).shape;
    if (!operand.fully_defined() || operand.rank() != 1 || operand.dim(0) != 1) return false;
  }
  return int_attr(s, "shrink_axis_mask", 0) == 1 && int_attr(s, "ellipsis_mask", 0) == 0 &&
         int_attr(s, "new_axis_mask", 0) == 0 && s.outputs[0].shape == Shape({x.dim(1), x.dim(2)});
}

// The body with each MatMul of a row of an invariant sequence by an invariant matrix replaced (Note
// [Products of a loop-invariant sequence]), or null when there is none. `invariant(node)` classifies the
// body's nodes.
template <typename Invariant>
StatusOr<std::shared_ptr<FunctionGraph>> batch_sequence_products(const FunctionGraph& body,
                                                                 Invariant invariant) {
  static const OpDef& matmul_op = op_def("MatMul");
  static const OpDef& slice_op = op_def("StridedSlice");
  const Graph& bg = body.graph;
  std::vector<int32_t> products;
  for (int32_t b = 0; b < bg.num_nodes(); ++b) {
    const Node& mm = bg.node(b);
    if (mm.op != &matmul_op || mm.inputs.size() != 2 || !mm.control_inputs.empty() || invariant(b)) continue;
    const ValueRef row = mm.inputs[0], w = mm.inputs[1];
    if (!is_row_of_sequence(bg, row) || invariant(row.node)) continue;
    const ValueRef x = bg.node(row.node).inputs[0];
    const TensorSpec &x_spec = bg.spec(x), &w_spec = bg.spec(w);
    if (!invariant(x.node) || !invariant(w.node) || !is_floating(x_spec.dtype) ||
        x_spec.dtype != w_spec.dtype || !w_spec.shape.fully_defined() || w_spec.shape.rank() != 2 ||
        !mm.outputs[0].shape.fully_defined() || mm.outputs[0].shape.rank() != 2)
      continue;
    const double bytes = static_cast<double>(x_spec.shape.dim(0)) *
                         static_cast<double>(mm.outputs[0].shape.num_elements()) *
                         static_cast<double>(dtype_size(x_spec.dtype));
    if (bytes > static_cast<double>(kMaxSequenceProductBytes)) continue;
    products.push_back(b);
  }
  if (products.empty()) return std::shared_ptr<FunctionGraph>();
  auto copy = std::make_shared<FunctionGraph>(body);
  copy->custom_gradient_regions.clear();
  GraphEditor editor(*copy);
  for (int32_t b : products) {
    const Node mm = copy->graph.node(b);  // a copy: adding nodes reallocates the node array
    const Node row = copy->graph.node(mm.inputs[0].node);
    const ValueRef x = row.inputs[0];
    std::vector<int64_t> dims = {copy->graph.spec(x).shape.dim(0)};
    for (int64_t d : mm.outputs[0].shape.dims()) dims.push_back(d);
    SmallVector<TensorSpec, 2> all_specs;
    all_specs.push_back(TensorSpec{mm.outputs[0].dtype, Shape(std::span<const int64_t>(dims))});
    const ValueRef all_inputs[2] = {x, mm.inputs[1]};
    const int32_t all = editor.add_node(matmul_op, all_inputs, mm.attrs, std::move(all_specs),
                                        NodeOrigin::of(mm), mm.name + "/every_row");
    SmallVector<ValueRef, 4> slice_inputs;
    slice_inputs.push_back(ValueRef{all, 0});
    for (size_t j = 1; j < row.inputs.size(); ++j) slice_inputs.push_back(row.inputs[j]);
    const int32_t slice = editor.add_node(slice_op, {slice_inputs.data(), slice_inputs.size()}, row.attrs,
                                          mm.outputs, NodeOrigin::of(mm), mm.name + "/row");
    editor.forward(ValueRef{b, 0}, ValueRef{slice, 0});
  }
  EMBER_RETURN_IF_ERROR(editor.finish(/*prune=*/true));
  return copy;
}

// Note [Products summed over a loop]
// A loop variable that only sums products, g = g + a^T @ d with a [B, K] and d [B, N] computed in the body
// (the backward loop of an RNN adds x_t^T @ dz_t to the gradient of W every iteration), runs one small
// product and one [K, N] addition per iteration, a product whose inner dimension (B, the batch) is too
// short for a GEMM kernel to run at speed. The sum over the iterations is one product of the stacked
// operands: sum_t a_t^T d_t = A^T D with A = [a_1; a_2; ...] ([T * B, K]) and D likewise. So the body
// returns g unchanged and its a and d as values the While stacks (an accumulating While, Note [Accumulating
// While] in ops/control_flow.cc; each row is copied once, as it is made), and after the loop g becomes
// g + reshape(A, [-1, K])^T @ reshape(D, [-1, N]). A loop that runs no iteration stacks nothing and adds a
// [K, N] product of empty operands: zeros. The sum is reassociated (one product instead of T sums), so
// results agree to rounding. A bias's gradient, g = g + sum(d, axis 0), becomes g + sum(D, axis 0) the same
// way, sharing d's stack with the products that read it. Only a sum the body reads nowhere else qualifies
// (a partial sum read in the loop or by the condition must exist), of a MatMul (or Sum) read nowhere else,
// with static 2-D operands.
struct SummedProduct {
  int var = 0;           // the loop variable that sums the products
  int a = 0, d = 0;      // their stacks, among the body's new accumulated values (a = -1: d's column sums)
  int64_t k = 0, n = 0;  // a is [B, k], d is [B, n]
  DType dtype = DType::kFloat32;
  SourceLocation location;
  std::string name;
};

// `v`'s readers in `g` (data inputs) and among `results`.
int uses_of(const Graph& g, std::span<const ValueRef> results, ValueRef v) {
  int uses = 0;
  for (int32_t i = 0; i < g.num_nodes(); ++i)
    for (ValueRef in : g.node(i).inputs) uses += in == v;
  for (ValueRef r : results) uses += r == v;
  return uses;
}

// `v` when it is Sum(d, axis 0) of a static [B, N] d without kept dims; d is invalid otherwise.
struct ColumnSum {
  ValueRef d{-1, 0};
};
ColumnSum column_sum(const Graph& g, ValueRef v) {
  const Node& sum = g.node(v.node);
  if (sum.op->name != "Sum" || sum.inputs.size() != 2 || !sum.control_inputs.empty() || sum.attrs.empty() ||
      !std::holds_alternative<bool>(sum.attrs[0]) || std::get<bool>(sum.attrs[0]))
    return {};
  const TensorSpec& d = g.spec(sum.inputs[0]);
  const Node& axes = g.node(sum.inputs[1].node);
  if (!is_floating(d.dtype) || !d.shape.fully_defined() || d.shape.rank() != 2 || d.shape.dim(0) <= 0 ||
      d.shape.dim(1) <= 0 || axes.op->name != "Const" || axes.attrs.empty() ||
      !std::holds_alternative<TensorRef>(axes.attrs[0]))
    return {};
  const TensorImpl& a = *std::get<TensorRef>(axes.attrs[0]);
  if (a.num_elements() != 1 || a.rank() > 1) return {};
  const int64_t axis = a.dtype() == DType::kInt64   ? a.data<int64_t>()[0]
                       : a.dtype() == DType::kInt32 ? a.data<int32_t>()[0]
                                                    : -1;
  if (axis != 0 && axis != -2) return {};
  return ColumnSum{sum.inputs[0]};
}

// The body with its summed products stacked instead (Note [Products summed over a loop]), or null when it
// has none; `sums` gets one entry per rewritten loop variable, `stacked` the values the new body stacks
// after the ones it already did.
StatusOr<std::shared_ptr<FunctionGraph>> stack_summed_products(const FunctionGraph& cond,
                                                               const FunctionGraph& body, int num_vars,
                                                               std::vector<SummedProduct>& sums,
                                                               std::vector<ValueRef>& stacked) {
  static const OpDef& matmul_op = op_def("MatMul");
  const Graph& bg = body.graph;
  std::span<const ValueRef> results{body.results.data(), body.results.size()};
  std::vector<std::pair<int, ValueRef>> rewired;  // (loop variable, its new result)
  // `v` with the Identity nodes before it skipped while each is read only once (inlined calls leave
  // them), or an invalid value when one is read elsewhere.
  auto single_use_source = [&](ValueRef v) {
    for (int hops = 0; hops < 64; ++hops) {
      const Node& n = bg.node(v.node);
      if (n.op->name != "Identity" || n.inputs.size() != 1 || !n.control_inputs.empty()) return v;
      if (uses_of(bg, results, v) != 1) return ValueRef{-1, 0};
      v = n.inputs[0];
    }
    return ValueRef{-1, 0};
  };
  for (int k = 0; k < num_vars; ++k) {
    const ValueRef arg{body.args[k], 0};
    if (body.results[k] == arg || uses_of(bg, results, body.results[k]) != 1) continue;
    // The condition sees every partial sum: one it reads must exist.
    if (uses_of(cond.graph, {cond.results.data(), cond.results.size()}, ValueRef{cond.args[k], 0}) != 0)
      continue;
    const ValueRef sum = single_use_source(body.results[k]);
    if (sum.node < 0 || (sum != body.results[k] && uses_of(bg, results, sum) != 1)) continue;
    const Node& add = bg.node(sum.node);
    if ((add.op->name != "Add" && add.op->name != "AddN") || add.inputs.size() != 2 ||
        !add.control_inputs.empty() || sum.output != 0)
      continue;
    const ValueRef first = single_use_source(add.inputs[0]), second = single_use_source(add.inputs[1]);
    const int which = first == arg ? 1 : second == arg ? 0 : -1;
    if (which < 0) continue;
    const ValueRef product = which == 0 ? first : second;
    if (product.node < 0) continue;
    auto stack_index = [&](ValueRef v) {
      auto at = std::find(stacked.begin(), stacked.end(), v);
      if (at != stacked.end()) return static_cast<int>(at - stacked.begin());
      stacked.push_back(v);
      return static_cast<int>(stacked.size()) - 1;
    };
    // A bias's gradient sums the rows of d instead (Sum over axis 0): after the loop, the column sums of D.
    if (const ColumnSum column = column_sum(bg, product); column.d.node >= 0) {
      const TensorSpec& d = bg.spec(column.d);
      if (d.dtype != bg.spec(arg).dtype || !(bg.spec(arg).shape == Shape({d.shape.dim(1)})) ||
          !(add.outputs[0].shape == bg.spec(arg).shape) || uses_of(bg, results, product) != 1 ||
          uses_of(bg, results, arg) != 1)
        continue;
      SummedProduct s;
      s.var = k;
      s.a = -1;
      s.d = stack_index(column.d);
      s.n = d.shape.dim(1);
      s.dtype = d.dtype;
      s.location = bg.node(product.node).location;
      s.name = bg.node(product.node).name;
      sums.push_back(s);
      rewired.emplace_back(k, arg);
      continue;
    }
    const Node& mm = bg.node(product.node);
    if (mm.op != &matmul_op || mm.inputs.size() != 2 || !mm.control_inputs.empty() || mm.attrs.size() < 2 ||
        !std::holds_alternative<bool>(mm.attrs[0]) || !std::get<bool>(mm.attrs[0]) ||
        !std::holds_alternative<bool>(mm.attrs[1]) || std::get<bool>(mm.attrs[1]))
      continue;
    const TensorSpec &a = bg.spec(mm.inputs[0]), &d = bg.spec(mm.inputs[1]), &g = bg.spec(arg);
    if (!is_floating(a.dtype) || a.dtype != d.dtype || a.dtype != g.dtype || !a.shape.fully_defined() ||
        !d.shape.fully_defined() || a.shape.rank() != 2 || d.shape.rank() != 2 ||
        a.shape.dim(0) != d.shape.dim(0) || a.shape.dim(0) <= 0 || a.shape.dim(1) <= 0 ||
        d.shape.dim(1) <= 0 || !(g.shape == Shape({a.shape.dim(1), d.shape.dim(1)})) ||
        !(add.outputs[0].shape == g.shape))
      continue;
    // The sum and the product are read only here, and the loop variable only by the sum.
    if (uses_of(bg, results, product) != 1 || uses_of(bg, results, arg) != 1) continue;
    SummedProduct s;
    s.var = k;
    s.a = stack_index(mm.inputs[0]);
    s.d = stack_index(mm.inputs[1]);
    s.k = a.shape.dim(1);
    s.n = d.shape.dim(1);
    s.dtype = a.dtype;
    s.location = mm.location;
    s.name = mm.name;
    sums.push_back(s);
    rewired.emplace_back(k, arg);
  }
  if (sums.empty()) return std::shared_ptr<FunctionGraph>();
  auto copy = std::make_shared<FunctionGraph>(body);
  copy->custom_gradient_regions.clear();
  for (auto [k, v] : rewired) copy->results[k] = v;
  for (ValueRef v : stacked) copy->results.push_back(v);
  GraphEditor editor(*copy);
  EMBER_RETURN_IF_ERROR(editor.finish(/*prune=*/true));
  return copy;
}

Status hoist_in(FunctionGraph& fn, int depth, int& hoisted) {
  static const OpDef& const_op = op_def("Const");
  static const OpDef& transpose_op = op_def("Transpose");
  static const OpDef& matmul_op = op_def("MatMul");
  static const OpDef& reshape_op = op_def("Reshape");
  static const OpDef& add_op = op_def("Add");
  static const OpDef& sum_op = op_def("Sum");
  GraphEditor editor(fn);
  Graph& g = fn.graph;
  const int32_t original = g.num_nodes();
  for (int32_t n = 0; n < original; ++n) {
    if (!is_while(*g.node(n).op)) continue;
    const Node loop = g.node(n);  // a copy: adding nodes reallocates the node array
    const std::vector<std::string> names = called_functions(*loop.op, loop.attrs);
    if (names.size() != 2) continue;
    auto cond = FunctionLibrary::global().find(names[0]);
    auto original_body = FunctionLibrary::global().find(names[1]);
    const int num_vars = static_cast<int>(loop.inputs.size());
    // An accumulating While (a gradient's forward loop) has its body return the values it stacks after
    // the loop variables, and outputs the stacks and the trip count after the loop variables' values
    // (Note [Accumulating While] in ops/control_flow.cc): new loop variables go in between.
    const size_t num_accumulated =
        static_cast<size_t>(std::max<int64_t>(int_attr(loop, "_accumulate", -1), 0));
    if (cond == nullptr || original_body == nullptr || cond->num_call_args() != num_vars ||
        original_body->num_call_args() != num_vars ||
        original_body->results.size() != loop.inputs.size() + num_accumulated ||
        loop.outputs.size() !=
            loop.inputs.size() + (int_attr(loop, "_accumulate", -1) >= 0 ? num_accumulated + 1 : 0))
      continue;
    auto body_or = hoisted_body(original_body, depth);
    if (!body_or.ok()) return body_or.status();
    std::shared_ptr<const FunctionGraph> body = std::move(body_or).value();
    bool body_changed = body != original_body;

    std::vector<Kind> kind;
    std::vector<int> arg_of;
    int num_hoisted = 0;
    auto classify = [&](const FunctionGraph& f) {
      const Graph& fg = f.graph;
      const int32_t count = fg.num_nodes();
      kind.assign(count, Kind::kVarying);
      arg_of.assign(count, -1);
      num_hoisted = 0;
      for (int a = 0; a < static_cast<int>(f.args.size()); ++a) {
        const int32_t node = f.args[a];
        arg_of[node] = a;
        if (a >= f.num_call_args())
          kind[node] = Kind::kCapturedArg;
        else if (through_identities(fg, f.results[a]) == ValueRef{node, 0})
          kind[node] = Kind::kInvariantArg;
      }
      for (int32_t b = 0; b < count; ++b) {
        if (arg_of[b] >= 0) continue;
        const Node& inner = fg.node(b);
        if (inner.op == &const_op && inner.control_inputs.empty()) {
          kind[b] = Kind::kConst;
          continue;
        }
        if (!hoistable_op(inner)) continue;
        bool invariant = true;
        for (size_t j = 0; j < inner.inputs.size(); ++j) {
          const ValueRef in = inner.inputs[j];
          invariant = invariant && kind[in.node] != Kind::kVarying;
          // A Transpose by a constant permutation cannot fail, whatever its input holds.
          const bool permutation =
              inner.op == &transpose_op && j == 1 && fg.spec(inner.inputs[0]).shape.rank_known() &&
              is_permutation_constant(fg.node(in.node), fg.spec(inner.inputs[0]).shape.rank());
          invariant = invariant && (is_floating(fg.spec(in).dtype) || permutation);
        }
        if (!invariant) continue;
        kind[b] = Kind::kHoisted;
        ++num_hoisted;
      }
    };
    classify(*body);
    // Note [Transposed operands hoisted]: a MatMul that reads a loop-invariant operand transposed (the
    // backward loop's dz @ W^T) reads it in the layout it is stored in every iteration, and GEMM kernels
    // are much slower on some transposed shapes (dnnl_sgemm's 'T' B at [32,512]x[512,128]: 3x). The
    // operand is transposed once instead: a Transpose node, invariant like its input, hoisted with it, and
    // the MatMul reads the result untransposed.
    {
      std::vector<std::pair<int32_t, int>> transposed;  // (MatMul node, operand)
      for (int32_t b = 0; b < body->graph.num_nodes(); ++b) {
        const Node& mm = body->graph.node(b);
        if (mm.op != &matmul_op || kind[b] != Kind::kVarying || mm.inputs.size() != 2) continue;
        for (int j = 0; j < 2; ++j) {
          const ValueRef v = mm.inputs[j];
          const TensorSpec& spec = body->graph.spec(v);
          const int attr = matmul_op.attr_index(j == 0 ? "transpose_a" : "transpose_b");
          if (attr < 0 || attr >= static_cast<int>(mm.attrs.size()) ||
              !std::holds_alternative<bool>(mm.attrs[attr]) || !std::get<bool>(mm.attrs[attr]) ||
              kind[v.node] == Kind::kVarying || !is_floating(spec.dtype) || !spec.shape.rank_known() ||
              spec.shape.rank() < 2)
            continue;
          transposed.emplace_back(b, j);
        }
      }
      if (!transposed.empty()) {
        auto copy = std::make_shared<FunctionGraph>(*body);
        copy->custom_gradient_regions.clear();
        GraphEditor body_editor(*copy);
        for (auto [b, j] : transposed) {
          const Node mm = copy->graph.node(b);
          const ValueRef v = mm.inputs[j];
          TensorSpec spec = copy->graph.spec(v);
          const int rank = spec.shape.rank();
          std::vector<int64_t> perm(rank);
          for (int d = 0; d < rank; ++d) perm[d] = d;
          std::swap(perm[rank - 2], perm[rank - 1]);
          std::vector<int64_t> dims = spec.shape.dim_vector();
          std::swap(dims[rank - 2], dims[rank - 1]);
          spec.shape = Shape(std::span<const int64_t>(dims));
          auto perm_value = body_editor.add_int_constant(perm, Shape{rank}, NodeOrigin::of(mm));
          if (!perm_value.ok()) return perm_value.status();
          SmallVector<TensorSpec, 2> specs;
          specs.push_back(spec);
          const ValueRef t_inputs[2] = {v, *perm_value};
          const int32_t t = body_editor.add_node(transpose_op, t_inputs, {}, std::move(specs),
                                                 NodeOrigin::of(mm), mm.name + "/transposed_operand");
          Node& rewired = copy->graph.mutable_node(b);
          rewired.inputs[j] = ValueRef{t, 0};
          rewired.attrs[matmul_op.attr_index(j == 0 ? "transpose_a" : "transpose_b")] = false;
        }
        EMBER_RETURN_IF_ERROR(body_editor.finish(/*prune=*/false));
        body = std::move(copy);
        body_changed = true;
        classify(*body);
      }
    }
    {
      auto batched = batch_sequence_products(*body, [&](int32_t b) { return kind[b] != Kind::kVarying; });
      if (!batched.ok()) return batched.status();
      if (*batched != nullptr) {
        body = std::move(batched).value();
        body_changed = true;
        classify(*body);
      }
    }
    std::vector<SummedProduct> sums;
    std::vector<ValueRef> stacked_values;
    {
      auto stacked = stack_summed_products(*cond, *body, num_vars, sums, stacked_values);
      if (!stacked.ok()) return stacked.status();
      if (*stacked != nullptr) {
        body = std::move(stacked).value();
        body_changed = true;
        classify(*body);
      }
    }
    const size_t num_new_stacks = stacked_values.size();
    const Graph& bg = body->graph;
    const int32_t nb = bg.num_nodes();
    // The hoisted values the loop still reads: by a node that stays, or as a result.
    std::vector<ValueRef> frontier;
    auto add_frontier = [&](ValueRef v) {
      if (kind[v.node] == Kind::kHoisted && std::find(frontier.begin(), frontier.end(), v) == frontier.end())
        frontier.push_back(v);
    };
    for (int32_t b = 0; b < nb; ++b)
      if (kind[b] != Kind::kHoisted)
        for (ValueRef in : bg.node(b).inputs) add_frontier(in);
    for (ValueRef r : body->results) add_frontier(r);
    if (frontier.empty() && !body_changed) continue;

    // The hoisted nodes, copied into this graph and fed from the While's inputs.
    std::vector<SmallVector<ValueRef, 2>> outside(nb);
    auto outside_value = [&](ValueRef v) -> ValueRef {
      if (outside[v.node].empty()) {  // a constant or captured value, copied on first use
        const Node& source = bg.node(v.node);
        AttrList attrs;
        attrs.push_back(kind[v.node] == Kind::kConst
                            ? source.attrs[0]
                            : AttrValue(body->captured_values[arg_of[v.node] - body->num_call_args()]));
        SmallVector<TensorSpec, 2> spec;
        spec.push_back(source.outputs[0]);
        int32_t c = editor.add_node(const_op, {}, std::move(attrs), std::move(spec),
                                    NodeOrigin::inlined(source, loop), loop.name + "/" + source.name);
        outside[v.node].push_back(ValueRef{c, 0});
      }
      return outside[v.node][v.output];
    };
    for (int32_t b = 0; b < nb; ++b) {
      if (kind[b] == Kind::kInvariantArg) outside[b].push_back(editor.resolve(loop.inputs[arg_of[b]]));
      if (kind[b] != Kind::kHoisted) continue;
      const Node& inner = bg.node(b);
      SmallVector<ValueRef, 4> inputs;
      for (ValueRef in : inner.inputs) inputs.push_back(outside_value(in));
      int32_t copy = editor.add_node(*inner.op, {inputs.data(), inputs.size()}, inner.attrs, inner.outputs,
                                     NodeOrigin::inlined(inner, loop), loop.name + "/" + inner.name);
      for (int32_t k = 0; k < static_cast<int32_t>(inner.outputs.size()); ++k)
        outside[b].push_back(ValueRef{copy, k});
    }

    // The body reads them as new loop variables it returns unchanged; the condition takes them unused.
    auto new_body = std::make_shared<FunctionGraph>(*body);
    new_body->custom_gradient_regions.clear();
    {
      GraphEditor body_editor(*new_body);
      for (size_t f = 0; f < frontier.size(); ++f) {
        const ValueRef v = frontier[f];
        int32_t arg = add_call_arg(*new_body, &body_editor, bg.spec(v), "hoisted_" + bg.node(v.node).name);
        body_editor.forward(v, ValueRef{arg, 0});
        new_body->results.insert(new_body->results.begin() + num_vars + f, ValueRef{arg, 0});
      }
      EMBER_RETURN_IF_ERROR(body_editor.finish(/*prune=*/true));
    }
    auto new_cond = std::make_shared<FunctionGraph>(*cond);
    new_cond->custom_gradient_regions.clear();
    for (ValueRef v : frontier)
      add_call_arg(*new_cond, nullptr, bg.spec(v), "hoisted_" + bg.node(v.node).name);

    AttrList attrs = loop.attrs;
    attrs[loop.op->attr_index("cond")] = FunctionLibrary::global().add(new_cond);
    attrs[loop.op->attr_index("body")] = FunctionLibrary::global().add(new_body);
    const bool was_accumulating = int_attr(loop, "_accumulate", -1) >= 0;
    if (num_new_stacks > 0) {
      const int at = loop.op->attr_index("_accumulate");
      if (at < 0) return make_error(Code::kInternal, loop.op->name, " has no _accumulate attribute");
      while (static_cast<int>(attrs.size()) <= at)
        attrs.push_back(loop.op->attrs[attrs.size()].default_value);
      attrs[at] = static_cast<int64_t>(num_accumulated + num_new_stacks);
    }
    fn.callees.push_back(std::move(new_cond));
    fn.callees.push_back(std::move(new_body));
    SmallVector<ValueRef, 4> inputs;
    for (ValueRef v : loop.inputs) inputs.push_back(v);
    SmallVector<TensorSpec, 2> outputs;
    for (int k = 0; k < num_vars; ++k) outputs.push_back(loop.outputs[k]);
    for (ValueRef v : frontier) {
      inputs.push_back(outside[v.node][v.output]);
      outputs.push_back(bg.spec(v));
    }
    for (size_t k = 0; k < num_accumulated; ++k) outputs.push_back(loop.outputs[num_vars + k]);
    for (int k = 0; k < static_cast<int>(num_new_stacks); ++k) {
      const TensorSpec& row = bg.spec(body->results[body->results.size() - num_new_stacks + k]);
      outputs.push_back(TensorSpec{row.dtype, stacked_shape(row.shape)});
    }
    if (was_accumulating || num_new_stacks > 0) outputs.push_back(TensorSpec{DType::kInt32, Shape()});
    int32_t replacement = editor.add_node(*loop.op, {inputs.data(), inputs.size()}, std::move(attrs),
                                          std::move(outputs), NodeOrigin::of(loop), loop.name);
    for (int32_t c : loop.control_inputs) g.add_control_input(replacement, c);
    editor.replace_node(n, replacement);
    // The stacks and the trip count of an accumulating loop come after the new loop variables, and the
    // trip count after the new stacks.
    const int32_t first_stack = num_vars + static_cast<int32_t>(frontier.size());
    for (size_t k = 0; k < num_accumulated; ++k)
      editor.forward(ValueRef{n, static_cast<int32_t>(num_vars + k)},
                     ValueRef{replacement, first_stack + static_cast<int32_t>(k)});
    if (was_accumulating)
      editor.forward(
          ValueRef{n, static_cast<int32_t>(num_vars + num_accumulated)},
          ValueRef{replacement, first_stack + static_cast<int32_t>(num_accumulated + num_new_stacks)});
    // Each summed loop variable gets its products' sum after the loop (Note [Products summed over a loop]).
    for (const SummedProduct& sum : sums) {
      // The sum's line, the loop's devices: these nodes finish the loop's work.
      const NodeOrigin origin{sum.location, loop.requested_device, loop.assigned_device};
      auto flat = [&](int stack, int64_t columns) -> StatusOr<ValueRef> {
        const int64_t dims[2] = {-1, columns};
        auto shape = editor.add_int_constant(dims, Shape({2}), origin);
        if (!shape.ok()) return shape.status();
        SmallVector<TensorSpec, 2> spec;
        spec.push_back(TensorSpec{sum.dtype, Shape({kUnknownDim, columns})});
        const ValueRef in[2] = {
            ValueRef{replacement, first_stack + static_cast<int32_t>(num_accumulated) + stack}, *shape};
        return ValueRef{editor.add_node(reshape_op, in, {}, std::move(spec), origin,
                                        loop.name + "/" + sum.name + "/stacked"),
                        0};
      };
      auto d = flat(sum.d, sum.n);
      if (!d.ok()) return d.status();
      SmallVector<TensorSpec, 2> spec;
      int32_t product = -1;
      if (sum.a < 0) {
        spec.push_back(TensorSpec{sum.dtype, Shape({sum.n})});
        const int64_t axis = 0;
        auto axes = editor.add_int_constant({&axis, 1}, Shape({1}), origin);
        if (!axes.ok()) return axes.status();
        AttrList sum_attrs;
        sum_attrs.push_back(false);
        const ValueRef sum_in[2] = {*d, *axes};
        product = editor.add_node(sum_op, sum_in, std::move(sum_attrs), spec, origin,
                                  loop.name + "/" + sum.name + "/summed");
      } else {
        auto a = flat(sum.a, sum.k);
        if (!a.ok()) return a.status();
        AttrList mm_attrs;
        mm_attrs.push_back(true);
        mm_attrs.push_back(false);
        spec.push_back(TensorSpec{sum.dtype, Shape({sum.k, sum.n})});
        const ValueRef mm_in[2] = {*a, *d};
        product = editor.add_node(matmul_op, mm_in, std::move(mm_attrs), spec, origin,
                                  loop.name + "/" + sum.name + "/summed");
      }
      const ValueRef add_in[2] = {ValueRef{replacement, sum.var}, ValueRef{product, 0}};
      const int32_t total =
          editor.add_node(add_op, add_in, {}, std::move(spec), origin, loop.name + "/" + sum.name + "/sum");
      editor.forward(ValueRef{n, sum.var}, ValueRef{total, 0});
    }
    hoisted += num_hoisted + (body_changed ? 1 : 0);
  }
  return editor.finish(/*prune=*/false);
}

}  // namespace

StatusOr<int> hoist_loop_invariants(FunctionGraph& fn) {
  int hoisted = 0;
  EMBER_RETURN_IF_ERROR(hoist_in(fn, 0, hoisted));
  return hoisted;
}

}  // namespace ember::passes
