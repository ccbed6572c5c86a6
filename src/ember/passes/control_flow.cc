// Control-flow passes (issue 15). Branches, conditions and bodies are library functions, compiled (and
// optimized by this same driver) as callees when the kernel first resolves them; these passes rewrite the
// functional nodes themselves:
//  - fold_constant_predicates: an If or Case whose predicate or branch index is a Const (from the trace, or
//    after inlining and folding) becomes a PartitionedCall of the branch it takes, which inlining then
//    flattens into the caller.
//  - hoist_loop_invariants: what a While body computes from loop-invariant values only moves into the
//    caller and enters the loop as new loop variables; see Note [Hoisting out of a loop]. The body is
//    looked at with its calls inlined, and a loop-invariant operand a MatMul reads transposed is
//    transposed once outside (Note [Transposed operands hoisted]).
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
                                   node.location, node.name + "/taken");
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
          ? editor->add_node(placeholder_op, {}, std::move(attrs), std::move(outputs), {}, name)
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

Status hoist_in(FunctionGraph& fn, int depth, int& hoisted) {
  static const OpDef& const_op = op_def("Const");
  static const OpDef& transpose_op = op_def("Transpose");
  static const OpDef& matmul_op = op_def("MatMul");
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
    if (cond == nullptr || original_body == nullptr || cond->num_call_args() != num_vars ||
        original_body->num_call_args() != num_vars || original_body->results.size() != loop.inputs.size())
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
          auto perm_value = body_editor.add_int_constant(perm, Shape{rank}, mm.location);
          if (!perm_value.ok()) return perm_value.status();
          SmallVector<TensorSpec, 2> specs;
          specs.push_back(spec);
          const ValueRef t_inputs[2] = {v, *perm_value};
          const int32_t t = body_editor.add_node(transpose_op, t_inputs, {}, std::move(specs), mm.location,
                                                 mm.name + "/transposed_operand");
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
        int32_t c = editor.add_node(const_op, {}, std::move(attrs), std::move(spec), source.location,
                                    loop.name + "/" + source.name);
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
                                     inner.location, loop.name + "/" + inner.name);
      for (int32_t k = 0; k < static_cast<int32_t>(inner.outputs.size()); ++k)
        outside[b].push_back(ValueRef{copy, k});
    }

    // The body reads them as new loop variables it returns unchanged; the condition takes them unused.
    auto new_body = std::make_shared<FunctionGraph>(*body);
    new_body->custom_gradient_regions.clear();
    {
      GraphEditor body_editor(*new_body);
      for (ValueRef v : frontier) {
        int32_t arg = add_call_arg(*new_body, &body_editor, bg.spec(v), "hoisted_" + bg.node(v.node).name);
        body_editor.forward(v, ValueRef{arg, 0});
        new_body->results.push_back(ValueRef{arg, 0});
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
    fn.callees.push_back(std::move(new_cond));
    fn.callees.push_back(std::move(new_body));
    SmallVector<ValueRef, 4> inputs;
    for (ValueRef v : loop.inputs) inputs.push_back(v);
    SmallVector<TensorSpec, 2> outputs = loop.outputs;
    for (ValueRef v : frontier) {
      inputs.push_back(outside[v.node][v.output]);
      outputs.push_back(bg.spec(v));
    }
    int32_t replacement = editor.add_node(*loop.op, {inputs.data(), inputs.size()}, std::move(attrs),
                                          std::move(outputs), loop.location, loop.name);
    for (int32_t c : loop.control_inputs) g.add_control_input(replacement, c);
    editor.replace_node(n, replacement);
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
