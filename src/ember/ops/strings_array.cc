// String kernels for ops declared in other families: the array ops that move elements (ConcatV2, Pack,
// GatherV2, Transpose, SelectV2, ...), the graph ops (Placeholder, Const, PartitionedCall), Add (string
// concatenation, as TensorFlow's) and the comparisons Equal and NotEqual. Each op keeps its one declaration;
// this file widens its dtypes by kString and sets the kernel, after the families have registered
// (register_all_ops calls it last).
#include <string>
#include <vector>

#include "ember/kernels/strings.h"
#include "ember/ops/families.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

// Note [String kernels of array ops]
// An op that only moves elements computes out[i] = in_k[j] for some input k and element j, whatever the
// dtype. Its numeric kernels copy bytes (memcpy by dtype_size), which would duplicate std::string objects
// bit for bit. Rather than a second, string-aware version of each kernel, the string kernel runs the op's
// int64 kernel on proxies: each string input becomes an int64 tensor holding (k << 40) | j for its element
// j, the kernel moves those like any int64s, and each string output is then filled by copying the strings
// the keys name. Views the int64 kernel returns (Reshape, Unpack) are decoded the same way, and the op's
// `prepare` result is not passed on (it was planned for the string specs). Keys start at 1: a key of 0 is
// the empty string, TensorFlow's zero of strings, so kernels that fill with zeros (the TensorList ops'
// unwritten elements, ops/tensor_array.cc) make empty strings.
constexpr int kKeyShift = 40;

Status string_by_index_kernel(KernelContext& ctx) {
  const KernelFn numeric = ctx.op->kernels[static_cast<int>(DType::kInt64)];
  if (numeric == nullptr) return invalid_argument(ctx.op->name, ": no int64 kernel to move strings with");
  std::vector<TensorRef> proxies;
  std::vector<TensorImpl*> inputs(ctx.inputs.begin(), ctx.inputs.end());
  std::vector<const TensorImpl*> sources(inputs.size(), nullptr);
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k]->dtype() != DType::kString) continue;
    if (inputs[k]->num_elements() >= (int64_t{1} << kKeyShift))
      return invalid_argument(ctx.op->name, ": a string input has ", inputs[k]->num_elements(),
                              " elements; at most 2^40 are supported");
    auto proxy = TensorImpl::allocate(DType::kInt64, inputs[k]->shape());
    EMBER_RETURN_IF_ERROR(proxy.status());
    int64_t* keys = proxy.value()->mutable_data<int64_t>();
    const int64_t n = inputs[k]->num_elements();
    for (int64_t j = 0; j < n; ++j) keys[j] = ((static_cast<int64_t>(k) << kKeyShift) | j) + 1;
    sources[k] = inputs[k];
    inputs[k] = proxy.value().get();
    proxies.push_back(std::move(proxy).value());
  }
  std::vector<TensorSpec> specs(ctx.output_specs.begin(), ctx.output_specs.end());
  std::vector<bool> is_string(ctx.outputs.size(), false);
  std::vector<TensorRef> outputs(ctx.outputs.size());
  for (size_t o = 0; o < ctx.outputs.size(); ++o) {
    is_string[o] = o < specs.size() ? specs[o].dtype == DType::kString
                                    : ctx.outputs[o] && ctx.outputs[o]->dtype() == DType::kString;
    if (o < specs.size() && is_string[o]) specs[o].dtype = DType::kInt64;
    if (!ctx.outputs[o]) continue;  // kKernelAllocates
    if (!is_string[o]) {
      outputs[o] = ctx.outputs[o];
      continue;
    }
    auto t = TensorImpl::allocate(DType::kInt64, ctx.outputs[o]->shape());
    EMBER_RETURN_IF_ERROR(t.status());
    outputs[o] = std::move(t).value();
  }
  KernelContext inner = ctx;
  inner.inputs = {inputs.data(), inputs.size()};
  inner.output_specs = {specs.data(), specs.size()};
  inner.outputs = {outputs.data(), outputs.size()};
  inner.prepared = nullptr;
  EMBER_RETURN_IF_ERROR(numeric(inner));
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (!is_string[o]) {
      ctx.outputs[o] = std::move(outputs[o]);
      continue;
    }
    const TensorImpl& keys_tensor = *outputs[o];
    if (keys_tensor.dtype() != DType::kInt64)
      return invalid_argument(ctx.op->name, ": output ", o, " of the string kernel is ",
                              dtype_name(keys_tensor.dtype()), ", expected int64 keys");
    TensorRef out = ctx.outputs[o];
    if (!out || out->shape() != keys_tensor.shape()) {
      auto t = TensorImpl::allocate(DType::kString, keys_tensor.shape());
      EMBER_RETURN_IF_ERROR(t.status());
      out = std::move(t).value();
    }
    const int64_t* keys = keys_tensor.data<int64_t>();
    std::string* dst = out->mutable_data<std::string>();
    const int64_t n = keys_tensor.num_elements();
    for (int64_t i = 0; i < n; ++i) {
      if (keys[i] == 0) {
        dst[i].clear();
        continue;
      }
      const int64_t key = keys[i] - 1;
      const size_t k = static_cast<size_t>(key >> kKeyShift);
      const int64_t j = key & ((int64_t{1} << kKeyShift) - 1);
      if (key < 0 || k >= sources.size() || sources[k] == nullptr || j >= sources[k]->num_elements())
        return invalid_argument(ctx.op->name, ": the string kernel produced an element from no input");
      dst[i] = sources[k]->data<std::string>()[j];
    }
    ctx.outputs[o] = std::move(out);
  }
  return Status::OK();
}

// Pad of strings pads with the empty string, key 0: another constant would be read as a key.
Status string_pad_kernel(KernelContext& ctx) {
  if (ctx.attr_float(0) != 0.0)
    return invalid_argument("Pad: a string tensor pads with the empty string only, got constant_value ",
                            ctx.attr_float(0));
  return string_by_index_kernel(ctx);
}

template <bool kEqual>
Status string_compare_kernel(KernelContext& ctx) {
  const TensorImpl& a = ctx.input(0);
  const TensorImpl& b = ctx.input(1);
  TensorImpl& out = ctx.output(0);
  const auto ia = kernels::broadcast_sources(a.shape(), out.shape());
  const auto ib = kernels::broadcast_sources(b.shape(), out.shape());
  const std::string* x = a.data<std::string>();
  const std::string* y = b.data<std::string>();
  bool* r = out.mutable_data<bool>();
  for (size_t i = 0; i < ia.size(); ++i) r[i] = (x[ia[i]] == y[ib[i]]) == kEqual;
  return Status::OK();
}

// ZerosLike of strings: empty strings, which is what the output was allocated with.
Status string_zeros_like_kernel(KernelContext&) { return Status::OK(); }

// TensorFlow's Add (AddV2) of strings concatenates them, broadcasting as for numbers.
Status string_add_kernel(KernelContext& ctx) {
  const TensorImpl& a = ctx.input(0);
  const TensorImpl& b = ctx.input(1);
  TensorImpl& out = ctx.output(0);
  const auto ia = kernels::broadcast_sources(a.shape(), out.shape());
  const auto ib = kernels::broadcast_sources(b.shape(), out.shape());
  const std::string* x = a.data<std::string>();
  const std::string* y = b.data<std::string>();
  std::string* r = out.mutable_data<std::string>();
  for (size_t i = 0; i < ia.size(); ++i) r[i] = x[ia[i]] + y[ib[i]];
  return Status::OK();
}

// Adds kString to the op's type variable T and to its inputs of "any dtype", with `kernel` for it. An input
// of any dtype admits every real dtype and possibly more (PartitionedCall's args also take complex ones),
// so the test is for a superset of kAllTypes, not equality.
void allow_strings(OpRegistry& r, const char* name, KernelFn kernel) {
  OpDef* op = r.find_mutable(name);
  if (op == nullptr) return;  // an op a build leaves out
  if (op->type_vars[0] != 0) op->type_vars[0] |= kStringType;
  for (ArgDef& arg : op->inputs)
    if (arg.type.type_var < 0 && (arg.type.allowed & kAllTypes) == kAllTypes) arg.type.allowed |= kStringType;
  op->kernels[static_cast<int>(DType::kString)] = kernel;
}

}  // namespace

void register_string_array_kernels(OpRegistry& r) {
  // Ops that read only shapes, return views of their input, hand a reference over (_Send, _Recv) or
  // (PrintV2) format through format_tensor: their kernels handle any element type.
  for (const char* name : {"Placeholder", "Const", "PartitionedCall", "Shape", "ShapeN", "Size", "Rank",
                           "ReadVariableOp", "AssignVariableOp", "PrintV2", "_Send", "_Recv"}) {
    OpDef* op = r.find_mutable(name);
    allow_strings(r, name, op ? op->kernels[static_cast<int>(DType::kFloat32)] : nullptr);
  }
  // Ops that move elements: Note [String kernels of array ops].
  for (const char* name : {"Identity",    "StopGradient", "Reshape",
                           "ExpandDims",  "Squeeze",      "Transpose",
                           "ConcatV2",    "Pack",         "Unpack",
                           "SplitV",      "Fill",         "Tile",
                           "BroadcastTo", "Slice",        "StridedSlice",
                           "GatherV2",    "GatherNd",     "SelectV2",
                           "ReverseV2",   "Roll",         "RaggedTensorToTensor"})
    allow_strings(r, name, &string_by_index_kernel);
  // TensorArrays and TensorLists of strings (ops/tensor_array.cc keeps a string list as int64 keys); Pad
  // grows a dynamic-size array (its constant 0 is key 0, the empty string).
  allow_strings(r, "Pad", &string_pad_kernel);
  for (const char* name :
       {"InplaceUpdate", "TensorListReserve", "EmptyTensorList", "TensorListFromTensor", "TensorListGetItem",
        "TensorListSetItem", "TensorListPushBack", "TensorListPopBack", "TensorListStack", "TensorListLength",
        "TensorListElementShape", "TensorListGather", "TensorListScatter", "TensorListScatterV2",
        "TensorListScatterIntoExistingList", "TensorListConcat", "TensorListConcatV2", "TensorListSplit"})
    allow_strings(r, name, &string_by_index_kernel);
  allow_strings(r, "Add", &string_add_kernel);
  allow_strings(r, "ZerosLike", &string_zeros_like_kernel);
  allow_strings(r, "Equal", &string_compare_kernel<true>);
  allow_strings(r, "NotEqual", &string_compare_kernel<false>);
}

}  // namespace ember
