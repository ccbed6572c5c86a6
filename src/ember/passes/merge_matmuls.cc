// Sibling MatMul merging: products that share their left operand, a @ w1, a @ w2, ..., become one product
// with the right operands side by side, a @ [w1 w2 ...], split afterwards. Narrow products (a network's
// heads of width 2) cost nearly as much as one of their combined width, so the split pays for itself
// there; wide ones are left alone.
#include <map>

#include "ember/ops/registry.h"
#include "ember/passes/pass.h"

namespace ember::passes {
namespace {
constexpr int64_t kMaxMergedWidth = 32;  // the small-GEMM kernel's reach (kernels/small_gemm.h)

bool mergeable(const Graph& g, const Node& node) {
  if (node.op->name != "MatMul" || !node.control_inputs.empty()) return false;
  if (std::get<bool>(node.attrs[1])) return false;  // transpose_b: the columns are not side by side
  const Shape& b = g.spec(node.inputs[1]).shape;
  const Shape& out = node.outputs[0].shape;
  return b.fully_defined() && out.fully_defined() && b.rank() == 2 && b.dim(1) < kMaxMergedWidth;
}
}  // namespace

int merge_sibling_matmuls(FunctionGraph& fn) {
  static const OpDef& concat = op_def("ConcatV2");
  static const OpDef& matmul = op_def("MatMul");
  static const OpDef& split = op_def("SplitV");
  GraphEditor editor(fn);
  Graph& g = fn.graph;
  // Siblings: same left operand, transpose_a and dtype.
  std::map<std::tuple<int32_t, int32_t, bool, int>, std::vector<int32_t>> siblings;
  for (int32_t n = 0; n < g.num_nodes(); ++n) {
    const Node& node = g.node(n);
    if (!mergeable(g, node)) continue;
    siblings[{node.inputs[0].node, node.inputs[0].output, std::get<bool>(node.attrs[0]),
              static_cast<int>(node.outputs[0].dtype)}]
        .push_back(n);
  }
  int merged = 0;
  for (auto& [key, group] : siblings) {
    // Take siblings in order while the combined width stays narrow.
    std::vector<int32_t> members;
    int64_t width = 0;
    for (int32_t n : group) {
      int64_t w = g.spec(g.node(n).inputs[1]).shape.dim(1);
      if (width + w > kMaxMergedWidth) break;
      members.push_back(n);
      width += w;
    }
    if (members.size() < 2) continue;
    const Node first = g.node(members.front());
    SmallVector<ValueRef, 4> rights;
    std::vector<int64_t> widths;
    for (int32_t n : members) {
      rights.push_back(g.node(n).inputs[1]);
      widths.push_back(g.spec(g.node(n).inputs[1]).shape.dim(1));
    }
    const TensorSpec& right = g.spec(rights[0]);
    AttrList concat_attrs;
    concat_attrs.push_back(int64_t{1});
    SmallVector<TensorSpec, 2> concat_spec;
    concat_spec.push_back(TensorSpec{right.dtype, Shape({right.shape.dim(0), width})});
    int32_t weights = editor.add_node(concat, {rights.data(), rights.size()}, std::move(concat_attrs),
                                      std::move(concat_spec), first.location, first.name + "/merged_weights");
    const Shape& out = first.outputs[0].shape;
    SmallVector<TensorSpec, 2> product_spec;
    product_spec.push_back(TensorSpec{first.outputs[0].dtype, Shape({out.dim(0), width})});
    ValueRef product_inputs[] = {first.inputs[0], ValueRef{weights, 0}};
    int32_t product = editor.add_node(matmul, product_inputs, first.attrs, std::move(product_spec),
                                      first.location, first.name + "/merged");
    AttrList split_attrs;
    split_attrs.push_back(widths);
    split_attrs.push_back(int64_t{1});
    SmallVector<TensorSpec, 2> split_specs;
    for (int32_t n : members) split_specs.push_back(g.node(n).outputs[0]);
    ValueRef split_input[] = {ValueRef{product, 0}};
    int32_t parts = editor.add_node(split, split_input, std::move(split_attrs), std::move(split_specs),
                                    first.location, first.name + "/split");
    for (size_t k = 0; k < members.size(); ++k)
      editor.forward(ValueRef{members[k], 0}, ValueRef{parts, static_cast<int32_t>(k)});
    merged += static_cast<int>(members.size()) - 1;
  }
  if (merged > 0) editor.finish(/*prune=*/false);  // the replaced products are left for pruning
  return merged;
}

}  // namespace ember::passes
