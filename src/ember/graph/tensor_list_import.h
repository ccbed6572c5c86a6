// TensorFlow's TensorLists in a GraphDef (not a public header). Import gives every DT_VARIANT list handle
// the dtype of its elements, so that ember carries each list as a dense tensor of that dtype (Note
// [TensorLists as dense tensors] in ops/tensor_array.cc); export (tensor_list_export.cc) turns ember's dense
// lists back into TensorFlow's variants.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ember/core/status.h"
#include "ember/graph.pb.h"

namespace ember::graph_def_internal {

/// Rewrites, in place, the DT_VARIANT arguments and results of `gd`'s library functions that hold
/// TensorLists to their element dtype (with an unknown shape), following each list through Identity,
/// While/If/Case and calls to the element_dtype of a TensorList op. Variants that are not lists are left
/// as they are (the import then refuses them as before).
Status type_tensor_lists(proto::GraphDef& gd);

/// Rewrites `gd` (as ember wrote it, list ops over dense tensors) into TensorFlow's form: a dense value a
/// list op takes becomes a TensorListFromTensor, a list a list op makes is passed on as the DT_VARIANT to
/// the list ops taking it and stacked (TensorListStack) for everything else. Each graph and function body
/// is rewritten on its own; what crosses a While, If, Case or call stays dense, as ember carries it.
Status write_tensorflow_lists(proto::GraphDef& gd);

/// Whether `op` (TensorFlow's type name) is a TensorList op; whether it takes a list as input 0; whether its
/// output 0 is a list.
bool is_list_op(const std::string& op);
bool takes_list(const std::string& op);
bool makes_list(const std::string& op);

/// `base`, or `base_1`, `base_2`, ... : the first name not in `taken`, which it is added to.
std::string unique_name(std::set<std::string>& taken, const std::string& base);

/// Makes `node` a Const of `type` (DT_INT32 or DT_INT64) holding `values`: a vector, or the scalar values[0]
/// when `scalar`. The rewrites of lists on import and export add such operands.
void make_int_const(proto::NodeDef& node, proto::DataType type, const std::vector<int64_t>& values,
                    bool scalar);

/// The (node, output) an input string of a NodeDef names: "node" or "node:k" in a graph, an argument name
/// or "node:output_arg:k" in a function body (`nodes` are that body's, by name). Nothing for a control
/// input or a name it cannot resolve.
std::optional<std::pair<std::string, int>> resolve_input(
    const std::string& input, const std::unordered_map<std::string, const proto::NodeDef*>& nodes);

}  // namespace ember::graph_def_internal
