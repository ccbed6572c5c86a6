// The per-op part of the GraphDef mapping: every place where an ember op declaration and TensorFlow's
// OpDef for the same op differ in spelling. graph_def.cc encodes attributes by their declared types and
// nodes by their declared inputs; what is specific to one op (its TensorFlow type name, the names of its
// output args, the attributes TensorFlow derives from its inputs) is answered here, so that an op whose
// signature changes needs an edit in this file only. See docs/graph_def.md.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/graph.pb.h"
#include "ember/ops/execute.h"
#include "ember/ops/op_def.h"

namespace ember::graph_def_ops {

using AttrMap = google::protobuf::Map<std::string, proto::AttrValue>;

/// Whether `op` is ember's function call (PartitionedCall).
bool is_call(const OpDef& op);

/// Whether `op` is a functional control-flow op (If, Case, While and their stateless forms), whose
/// attributes name library functions.
bool is_control_flow(const OpDef& op);

/// Whether `op` is While or StatelessWhile: its body returns every loop variable, the variables it uses
/// included (TensorFlow passes a variable through the loop as a DT_RESOURCE loop variable).
bool is_while(const OpDef& op);

/// TensorFlow's attributes of a control-flow node beyond the declared ones: the function attributes as
/// NameAttrLists (`functions`: the names written, in called_functions() order; Case's as one list),
/// "Tcond"/"Tin"/"Tout" (If), "Tin"/"Tout" (Case) or "T" (While) and "output_shapes". `resources` is how
/// many variables the node passes last as DT_RESOURCE inputs (a While also returns them).
void add_control_flow_attrs(const OpDef& op, std::span<const TensorSpec> inputs,
                            std::span<const TensorSpec> outputs, std::span<const std::string> functions,
                            size_t resources, AttrMap& out);

/// The attribute holding a control-flow node's dtypes of values passed to its functions, as TensorFlow
/// writes it ("Tin" for If and Case, "T" for While); a DT_RESOURCE there is a variable.
std::string_view control_flow_input_types(const OpDef& op);

/// TensorFlow's type name for a node of `op`: "Add" is "AddV2"; a call is "StatefulPartitionedCall" when
/// the callee (or anything it calls) has state, else "PartitionedCall".
std::string tf_op_type(const OpDef& op, bool stateful_call);

/// ember's registry name for TensorFlow's op type `tf_op` (the inverse of tf_op_type).
std::string_view ember_op_type(std::string_view tf_op);

/// Whether TensorFlow declares `attr` of `op` a list(string) that ember holds as one kString attribute, its
/// strings joined with commas (_FusedMatMul's fused_ops). GraphDef writes it as a list { s }.
bool is_joined_string_list(const OpDef& op, std::string_view attr);

/// Whether TensorFlow declares `attr` of `op` a list(float) that ember holds as a kTensor attribute, a
/// 1-D tensor of the floats (Bucketize's boundaries, SampleDistortedBoundingBoxV2's ranges). GraphDef
/// writes it as a list { f }.
bool is_float_list(const OpDef& op, std::string_view attr);

/// How many tensors each declared output of a node holds where TensorFlow declares several output lists
/// sized by attributes (ParseExampleV2: num_sparse, sparse_types, Tdense, ...), from the node's attributes
/// as ember holds them or as a NodeDef does; empty for every other op (one tensor per declared output, or
/// one list).
std::vector<int> output_list_sizes(const OpDef& op, const AttrList& attrs);
std::vector<int> output_list_sizes(const OpDef& op, const AttrMap& attrs);

/// The output arg of `op` that holds output `output`, and the index within it: a FunctionDef names
/// output 2 of an Unpack "unpack:output:2", output 1 of SparseSoftmaxCrossEntropyWithLogits "s:backprop:0".
/// `list_sizes` is output_list_sizes() of the node.
std::pair<std::string, int> tf_output_arg(const OpDef& op, int output, std::span<const int> list_sizes = {});

/// The output number of "node:arg:index" for a node of `op`, or -1 when `op` has no output arg `arg` (or
/// it holds no output `index`).
int output_number(const OpDef& op, std::string_view arg, int index, std::span<const int> list_sizes = {});

/// Adds the attributes TensorFlow's OpDef has and ember derives from the node's inputs and outputs: "T"
/// (the dtype of type variable 0; TensorFlow's variable ops call it "dtype"), "N" (the length of a variadic
/// input list), Const's "dtype", and a call's "Tin", "Tout" and "f" (a NameAttrList, where ember keeps a
/// string). `attrs` are the node's attributes as ember declares them.
void add_derived_attrs(const OpDef& op, std::span<const DType> inputs, std::span<const DType> outputs,
                       const AttrList& attrs, AttrMap& out);

}  // namespace ember::graph_def_ops
