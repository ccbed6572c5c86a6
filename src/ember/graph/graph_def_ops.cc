#include "ember/graph/graph_def_ops.h"

#include <algorithm>
#include <climits>

#include "ember/graph/tensor_proto.h"
#include "ember/ops/graph_ops.h"
#include "ember/ops/py_func.h"

namespace ember::graph_def_ops {
namespace {

// ember's op names that TensorFlow spells otherwise (op_def.h: "AddV2 may be simplified to Add").
constexpr std::pair<std::string_view, std::string_view> kTfOpNames[] = {{"Add", "AddV2"}};

// Output arg names where ember's declaration differs from TensorFlow's OpDef (ember calls the output of
// these activations "y"). Checked against TensorFlow's OpDefs by tests/python/test_graph_def_tf.py.
constexpr std::pair<std::string_view, std::string_view> kTfOutputArgs[] = {
    {"Elu", "activations"}, {"Relu", "activations"}, {"Relu6", "activations"}, {"Softplus", "activations"}};

// TensorFlow's type attributes that name the dtype of one input (or output), where TensorFlow's OpDef calls
// it something other than "T": attribute <- input index (-1: the last input; kOutput: output 0). An entry
// whose input the node lacks is skipped, so an op that still declares a shape-like operand as an attribute
// is written as before, and gets the attribute once the operand becomes an input.
constexpr int kOutput = -100;
struct TypeAttr {
  std::string_view op, attr;
  int input;
};
constexpr TypeAttr kTypeAttrs[] = {
    {"Cast", "SrcT", 0},
    {"FusedBatchNormV3", "U", 1},  // the statistics' type (float32 for 16-bit x)
    {"_FusedBatchNormEx", "U", 1},
    {"FusedBatchNormGradV3", "U", 3},
    {"_FusedBatchNormGradEx", "U", 3},
    {"Reshape", "Tshape", 1},
    {"Transpose", "Tperm", 1},
    {"Tile", "Tmultiples", 1},
    {"ExpandDims", "Tdim", 1},
    {"BroadcastTo", "Tidx", 1},
    {"Fill", "index_type", 0},
    {"Range", "Tidx", 0},
    {"LinSpace", "Tidx", 2},
    {"Pad", "Tpaddings", 1},
    {"MirrorPad", "Tpaddings", 1},
    {"MirrorPadGrad", "Tpaddings", 1},
    {"ConcatV2", "Tidx", -1},
    {"ConcatOffset", "shape_type", 1},
    {"Sum", "Tidx", 1},
    {"Mean", "Tidx", 1},
    {"Max", "Tidx", 1},
    {"Min", "Tidx", 1},
    {"Prod", "Tidx", 1},
    {"All", "Tidx", 1},
    {"Any", "Tidx", 1},
    {"ArgMax", "Tidx", 1},
    {"ArgMin", "Tidx", 1},
    {"Cumsum", "Tidx", 1},
    {"Cumprod", "Tidx", 1},
    {"GatherV2", "Tparams", 0},
    {"GatherV2", "Tindices", 1},
    {"GatherV2", "Taxis", 2},
    {"OneHot", "TI", 0},
    {"Slice", "Index", 1},
    {"StridedSlice", "Index", 1},
    {"StridedSliceGrad", "Index", 0},
    {"SplitV", "Tlen", 1},
    {"UnsortedSegmentSum", "Tindices", 1},
    {"UnsortedSegmentSum", "Tnumsegments", 2},
    {"GatherNd", "Tparams", 0},
    {"GatherNd", "Tindices", 1},
    {"ScatterNd", "Tindices", 0},
    {"TensorScatterUpdate", "Tindices", 1},
    {"TensorScatterAdd", "Tindices", 1},
    {"TensorScatterSub", "Tindices", 1},
    {"TensorScatterMin", "Tindices", 1},
    {"SparseTensorDenseMatMul", "Tindices", 0},
    {"SparseToDense", "Tindices", 0},
    {"DenseBincount", "Tidx", 0},
    {"RaggedBincount", "Tidx", 1},
    {"RaggedTensorToTensor", "Tshape", 0},
    {"RaggedTensorToTensor", "Tindex", 3},
    {"TensorScatterMax", "Tindices", 1},
    // The variable scatters (input 0 of TensorFlow's is the variable, which ember's attribute names).
    {"ResourceScatterUpdate", "Tindices", 0},
    {"ResourceScatterAdd", "Tindices", 0},
    {"ResourceScatterSub", "Tindices", 0},
    {"ResourceScatterMul", "Tindices", 0},
    {"ResourceScatterDiv", "Tindices", 0},
    {"ResourceScatterMin", "Tindices", 0},
    {"ResourceScatterMax", "Tindices", 0},
    {"ResourceScatterNdUpdate", "Tindices", 0},
    {"ResourceScatterNdAdd", "Tindices", 0},
    {"ResourceScatterNdSub", "Tindices", 0},
    {"ResourceScatterNdMin", "Tindices", 0},
    {"ResourceScatterNdMax", "Tindices", 0},
    {"UnsortedSegmentMax", "Tindices", 1},
    {"UnsortedSegmentMax", "Tnumsegments", 2},
    {"UnsortedSegmentMin", "Tindices", 1},
    {"UnsortedSegmentMin", "Tnumsegments", 2},
    {"UnsortedSegmentProd", "Tindices", 1},
    {"UnsortedSegmentProd", "Tnumsegments", 2},
    {"SegmentSum", "Tindices", 1},
    {"SegmentMean", "Tindices", 1},
    {"SegmentMax", "Tindices", 1},
    {"SegmentMin", "Tindices", 1},
    {"SegmentProd", "Tindices", 1},
    {"TopKV2", "Tk", 1},
    {"InTopKV2", "T", 1},  // the targets' type; the predictions are float
    {"ReverseV2", "Tidx", 1},
    {"Roll", "Tshift", 1},
    {"Roll", "Taxis", 2},
    {"CumulativeLogsumexp", "Tidx", 1},
    {"SparseAdd", "Treal", 6},        // thresh: real whatever the values are
    {"MatrixBandPart", "Tindex", 1},  // num_lower and num_upper share it
    {"RandomUniform", "T", 0},
    {"RandomStandardNormal", "T", 0},
    {"TruncatedNormal", "T", 0},
    {"RandomUniformInt", "T", 0},
    {"RandomUniformInt", "Tout", kOutput},
    // The complex parts ops' result dtype, which TensorFlow otherwise takes as its default (float32 for Real,
    // Imag, ComplexAbs and Angle; complex64 for Complex): wrong for complex128 (or float64 parts).
    {"Complex", "Tout", kOutput},
    {"Real", "Tout", kOutput},
    {"Imag", "Tout", kOutput},
    {"ComplexAbs", "Tout", kOutput},
    {"Angle", "Tout", kOutput},
    {"StatelessRandomUniform", "T", 0},
    {"StatelessRandomNormal", "T", 0},
    {"StatelessTruncatedNormal", "T", 0},
    {"StatelessRandomUniformInt", "T", 0},
    {"StatelessRandomUniform", "Tseed", 1},
    {"StatelessRandomNormal", "Tseed", 1},
    {"StatelessTruncatedNormal", "Tseed", 1},
    {"StatelessRandomUniformInt", "Tseed", 1},
    {"StatelessSampleDistortedBoundingBox", "Tseed", 3},
    // The table ops (ops/lookup.cc): the table is input 0 in a GraphDef, so keys and values follow it.
    {"LookupTableFindV2", "Tin", 0},
    {"LookupTableFindV2", "Tout", 1},
    {"LookupTableInsertV2", "Tin", 0},
    {"LookupTableInsertV2", "Tout", 1},
    {"LookupTableImportV2", "Tin", 0},
    {"LookupTableImportV2", "Tout", 1},
    {"LookupTableRemoveV2", "Tin", 0},
    {"InitializeTableV2", "Tkey", 0},
    {"InitializeTableV2", "Tval", 1},
    // The TensorList ops (ops/tensor_array.cc): TensorFlow's name the element dtype element_dtype (ember's
    // "T" where they do not declare it) and the element_shape operand's type shape_type.
    {"TensorListFromTensor", "element_dtype", 0},
    {"TensorListFromTensor", "shape_type", 1},
    {"TensorListSplit", "element_dtype", 0},
    {"TensorListSplit", "shape_type", 1},
    {"TensorListScatter", "element_dtype", 0},
    {"TensorListScatter", "shape_type", 2},
    {"TensorListScatterV2", "element_dtype", 0},
    {"TensorListScatterV2", "shape_type", 2},
    {"TensorListReserve", "shape_type", 0},
    {"EmptyTensorList", "shape_type", 0},
    {"TensorListConcatV2", "shape_type", 1},
    {"ImageProjectiveTransformV3", "dtype", 0},
    {"NonMaxSuppressionV3", "T_threshold", 3},  // iou_threshold and score_threshold share it
    {"NonMaxSuppressionV4", "T_threshold", 3},
};

// Whether TensorFlow calls the dtype of `input` something other than "T" (GatherV2's Tparams, ConcatOffset's
// shape_type): then no "T" is written, which TensorFlow would ignore with a warning.
bool type_attr_named_otherwise(const OpDef& op, size_t input) {
  for (const TypeAttr& t : kTypeAttrs)
    if (op.name == t.op && t.attr != "T" && t.input == static_cast<int>(input)) return true;
  return false;
}

bool is_resource_op(const OpDef& op) { return op.has_flag(kReadsResource) || op.has_flag(kWritesResource); }

// Ops whose declared outputs are lists sized by attributes (TensorFlow's number_attr and type_list_attr):
// each output arg and the attribute that gives its length, an int or a list of dtypes.
struct OutputList {
  std::string_view op, output, length_attr;
};
constexpr OutputList kOutputLists[] = {
    {"CTCBeamSearchDecoder", "decoded_indices", "top_paths"},
    {"CTCBeamSearchDecoder", "decoded_values", "top_paths"},
    {"CTCBeamSearchDecoder", "decoded_shape", "top_paths"},
    {"DecodeCSV", "output", "OUT_TYPE"},
    {"ParseExampleV2", "sparse_indices", "num_sparse"},
    {"ParseExampleV2", "sparse_values", "sparse_types"},
    {"ParseExampleV2", "sparse_shapes", "num_sparse"},
    {"ParseExampleV2", "dense_values", "Tdense"},
    {"ParseExampleV2", "ragged_values", "ragged_value_types"},
    {"ParseExampleV2", "ragged_row_splits", "ragged_split_types"},
    {"ParseSequenceExampleV2", "context_sparse_indices", "Ncontext_sparse"},
    {"ParseSequenceExampleV2", "context_sparse_values", "context_sparse_types"},
    {"ParseSequenceExampleV2", "context_sparse_shapes", "Ncontext_sparse"},
    {"ParseSequenceExampleV2", "context_dense_values", "Tcontext_dense"},
    {"ParseSequenceExampleV2", "context_ragged_values", "context_ragged_value_types"},
    {"ParseSequenceExampleV2", "context_ragged_row_splits", "context_ragged_split_types"},
    {"ParseSequenceExampleV2", "feature_list_sparse_indices", "Nfeature_list_sparse"},
    {"ParseSequenceExampleV2", "feature_list_sparse_values", "feature_list_sparse_types"},
    {"ParseSequenceExampleV2", "feature_list_sparse_shapes", "Nfeature_list_sparse"},
    {"ParseSequenceExampleV2", "feature_list_dense_values", "feature_list_dense_types"},
    {"ParseSequenceExampleV2", "feature_list_dense_lengths", "Nfeature_list_dense"},
    {"ParseSequenceExampleV2", "feature_list_ragged_values", "feature_list_ragged_value_types"},
    {"ParseSequenceExampleV2", "feature_list_ragged_outer_splits", "feature_list_ragged_split_types"},
    {"ParseSequenceExampleV2", "feature_list_ragged_inner_splits", "feature_list_ragged_split_types"},
};

// The list sizes of `op`'s outputs, with `length(attr)` the length an attribute gives (-1 when absent); an
// output that is no list (CTCBeamSearchDecoder's log_probability after its three lists) counts as one. Empty
// for an op without list outputs.
template <typename Length>
std::vector<int> list_sizes(const OpDef& op, Length length) {
  std::vector<int> sizes;
  bool any_list = false;
  for (const std::string& output : op.outputs) {
    int size = 1;
    for (const OutputList& list : kOutputLists)
      if (list.op == op.name && list.output == output)
        size = std::max(0, length(list.length_attr)), any_list = true;
    sizes.push_back(size);
  }
  if (!any_list) sizes.clear();
  return sizes;
}

void set_type(AttrMap& out, const std::string& name, DType dtype) {
  out[name].set_type(static_cast<proto::DataType>(tf_datatype(dtype)));
}

void set_types(AttrMap& out, const std::string& name, std::span<const DType> dtypes) {
  proto::AttrValue::ListValue* list = out[name].mutable_list();
  for (DType d : dtypes) list->add_type(static_cast<proto::DataType>(tf_datatype(d)));
}

}  // namespace

bool is_call(const OpDef& op) { return op.name == "PartitionedCall"; }

bool is_control_flow(const OpDef& op) { return calls_functions(op) && !is_call(op); }

bool is_while(const OpDef& op) { return op.name == "While" || op.name == "StatelessWhile"; }

std::string_view control_flow_input_types(const OpDef& op) { return is_while(op) ? "T" : "Tin"; }

void add_control_flow_attrs(const OpDef& op, std::span<const TensorSpec> inputs,
                            std::span<const TensorSpec> outputs, std::span<const std::string> functions,
                            size_t resources, AttrMap& out) {
  // ember keeps function names as strings; TensorFlow's OpDefs declare func (Case: list(func)).
  if (op.name == "Case" || op.name == "StatelessCase") {
    proto::AttrValue::ListValue* list = out["branches"].mutable_list();
    for (const std::string& name : functions) list->add_func()->set_name(name);
  } else {
    const bool is_if = !is_while(op);
    const char* kNames[2][2] = {{"cond", "body"}, {"then_branch", "else_branch"}};
    for (size_t k = 0; k < functions.size() && k < 2; ++k)
      out[kNames[is_if][k]].mutable_func()->set_name(functions[k]);
  }
  std::vector<DType> in;
  for (const TensorSpec& s : inputs) in.push_back(s.dtype);
  std::vector<DType> results;
  for (const TensorSpec& s : outputs) results.push_back(s.dtype);
  proto::AttrValue::ListValue* shapes = out["output_shapes"].mutable_list();
  for (const TensorSpec& s : outputs) {
    if (s.shape.rank_known()) {
      to_shape_proto(s.shape.dims(), false, shapes->add_shape());
    } else {
      to_shape_proto({}, true, shapes->add_shape());
    }
  }
  if (is_while(op)) {
    set_types(out, "T", in);
    for (size_t k = 0; k < resources; ++k) {
      out["T"].mutable_list()->add_type(proto::DT_RESOURCE);
      shapes->add_shape();  // a variable handle is a scalar
    }
    return;
  }
  if (op.name == "If" || op.name == "StatelessIf") {
    if (!in.empty()) set_type(out, "Tcond", in[0]);
  }
  // If's and Case's first input (the predicate, the branch index) is not passed to the branches.
  set_types(out, "Tin", std::span<const DType>(in).subspan(in.empty() ? 0 : 1));
  for (size_t k = 0; k < resources; ++k) out["Tin"].mutable_list()->add_type(proto::DT_RESOURCE);
  set_types(out, "Tout", results);
}

std::string tf_op_type(const OpDef& op, bool stateful_call) {
  if (is_call(op)) return stateful_call ? "StatefulPartitionedCall" : "PartitionedCall";
  for (const auto& [ember, tf] : kTfOpNames)
    if (op.name == ember) return std::string(tf);
  return op.name;
}

std::string_view ember_op_type(std::string_view tf_op) {
  if (tf_op == "StatefulPartitionedCall") return "PartitionedCall";
  for (const auto& [ember, tf] : kTfOpNames)
    if (tf_op == tf) return ember;
  return tf_op;
}

std::vector<int> output_list_sizes(const OpDef& op, const AttrList& attrs) {
  return list_sizes(op, [&](std::string_view name) -> int {
    const int k = op.attr_index(name);
    if (k < 0 || static_cast<size_t>(k) >= attrs.size()) return -1;
    if (const auto* n = std::get_if<int64_t>(&attrs[k])) return static_cast<int>(*n);
    if (const auto* types = std::get_if<std::vector<DType>>(&attrs[k]))
      return static_cast<int>(types->size());
    return -1;
  });
}

std::vector<int> output_list_sizes(const OpDef& op, const AttrMap& attrs) {
  return list_sizes(op, [&](std::string_view name) -> int {
    auto it = attrs.find(std::string(name));
    if (it == attrs.end()) return -1;
    if (it->second.has_i()) return static_cast<int>(std::min<int64_t>(it->second.i(), INT32_MAX));
    return it->second.has_list() ? it->second.list().type_size() : -1;
  });
}

std::pair<std::string, int> tf_output_arg(const OpDef& op, int output, std::span<const int> list_sizes) {
  for (size_t k = 0; k < list_sizes.size(); ++k) {
    if (output < list_sizes[k]) return {op.outputs[k], output};
    output -= list_sizes[k];
  }
  if (op.outputs.size() > 1) return {op.outputs[output], 0};
  for (const auto& [name, arg] : kTfOutputArgs)
    if (op.name == name) return {std::string(arg), output};
  // A call's results are one list, "output", as TensorFlow's PartitionedCall declares it.
  return {op.outputs.empty() ? std::string("output") : op.outputs[0], output};
}

int output_number(const OpDef& op, std::string_view arg, int index, std::span<const int> list_sizes) {
  if (!list_sizes.empty()) {
    int first = 0;
    for (size_t k = 0; k < list_sizes.size(); ++k) {
      if (op.outputs[k] == arg) return index < list_sizes[k] ? first + index : -1;
      first += list_sizes[k];
    }
    return -1;
  }
  if (op.outputs.size() > 1) {
    auto it = std::find(op.outputs.begin(), op.outputs.end(), arg);
    if (it == op.outputs.end() || index != 0) return -1;
    return static_cast<int>(it - op.outputs.begin());
  }
  // One output arg (maybe a list): its name is TensorFlow's or ember's spelling of it.
  for (const auto& [name, tf_arg] : kTfOutputArgs)
    if (op.name == name && arg == tf_arg) return index;
  const std::string_view own = op.outputs.empty() ? std::string_view("output") : op.outputs[0];
  return arg == own ? index : -1;
}

void add_derived_attrs(const OpDef& op, std::span<const DType> inputs, std::span<const DType> outputs,
                       const AttrList& attrs, AttrMap& out) {
  if (is_control_flow(op)) return;  // add_control_flow_attrs, which needs the names written
  if (is_call(op)) {
    set_types(out, "Tin", inputs);
    set_types(out, "Tout", outputs);
    out["f"].mutable_func()->set_name(std::get<std::string>(attrs[op.attr_index("f")]));
    return;
  }
  if (op.attr_index(kPyFuncCallableAttr) >= 0) {  // EagerPyFunc, PyFunc, PyFuncStateless
    set_types(out, "Tin", inputs);
    if (op.name == "EagerPyFunc") out["is_async"].set_b(false);
    return;
  }
  const size_t declared = op.inputs.size();
  if (op.attr_index("T") < 0) {
    for (size_t i = 0; i < inputs.size() && declared > 0; ++i) {
      if (op.arg_of(i, inputs.size()).type.type_var != 0) continue;
      if (type_attr_named_otherwise(op, i)) break;
      // TensorFlow's variable ops name the value's type "dtype" (and refuse a "T"), but for the N-d scatters.
      const bool named_dtype = is_resource_op(op) && !op.name.starts_with("ResourceScatterNd");
      set_type(out, named_dtype ? "dtype" : "T", inputs[i]);
      break;
    }
  }
  if (op.has_flag(kVariadicInput) && !op.has_flag(kVariadicMayBeEmpty) && op.attr_index("N") < 0)
    out["N"].set_i(static_cast<int64_t>(op.num_variadic(inputs.size())));
  if (op.attr_index("dtype") < 0) {
    for (size_t i = 0; i < attrs.size() && i < op.attrs.size(); ++i) {
      if (op.attrs[i].type != AttrType::kTensor) continue;
      set_type(out, "dtype", std::get<TensorRef>(attrs[i])->dtype());
      break;
    }
  }
  for (const TypeAttr& t : kTypeAttrs) {
    if (op.name != t.op || op.attr_index(t.attr) >= 0) continue;
    if (t.input == kOutput) {
      if (!outputs.empty()) set_type(out, std::string(t.attr), outputs[0]);
      continue;
    }
    // The operand must be a declared input of its own (ConcatV2's axis after its variadic values), not
    // still an attribute.
    const int declared = static_cast<int>(op.inputs.size());
    if (t.input < 0 ? declared < 2 : t.input >= declared) continue;
    const int input = t.input < 0 ? static_cast<int>(inputs.size()) + t.input : t.input;
    if (input >= 0 && input < static_cast<int>(inputs.size()))
      set_type(out, std::string(t.attr), inputs[input]);
  }
  // SplitV's output count; its split sizes are an input in TensorFlow.
  if (op.name == "SplitV" && op.attr_index("num_split") < 0)
    out["num_split"].set_i(static_cast<int64_t>(outputs.size()));
  if (op.name == "RaggedTensorToTensor") {
    // TensorFlow counts the partitions in num_row_partition_tensors and lists their kinds, which ember's
    // attribute joins with commas ("" for ROW_SPLITS each, Note [Row partitions] in ops/ragged.cc).
    const size_t partitions = inputs.size() - 3;
    out.erase("N");
    out["num_row_partition_tensors"].set_i(static_cast<int64_t>(partitions));
    const std::string& joined = std::get<std::string>(attrs[op.attr_index("row_partition_types")]);
    proto::AttrValue::ListValue* list = out["row_partition_types"].mutable_list();  // replaces the s written
    if (joined.empty()) {
      for (size_t k = 0; k < partitions; ++k) list->add_s("ROW_SPLITS");
    } else {
      for (size_t begin = 0; begin <= joined.size();) {
        const size_t end = std::min(joined.find(',', begin), joined.size());
        list->add_s(joined.substr(begin, end - begin));
        begin = end + 1;
      }
    }
  }
}

bool is_joined_string_list(const OpDef& op, std::string_view attr) {
  return op.name == "_FusedMatMul" && attr == "fused_ops";
}

bool is_float_list(const OpDef& op, std::string_view attr) {
  if (op.name == "Bucketize") return attr == "boundaries";
  if (op.name.starts_with("SampleDistortedBoundingBox") || op.name == "StatelessSampleDistortedBoundingBox")
    return attr == "aspect_ratio_range" || attr == "area_range";
  return false;
}

}  // namespace ember::graph_def_ops
