// ParseExampleFeature: one feature of a batch of serialized tf.train.Example protos (tf.io.parse_example
// calls it once per feature; python/ember/io/parsing.py). The records are parsed with the protobuf classes
// of proto/ember/example.proto, which has TensorFlow's field numbers. TensorFlow's own ParseExampleV2 takes
// every feature in one node with list-of-dtype and list-of-shape attributes, which ember's attribute types
// do not have; a graph holding ParseExampleV2 therefore does not import (docs/data.md).
//
// ParseExampleFeature(serialized: string [B] or []; key, kind, dtype, shape, required, default_value,
// row_splits_dtype):
//   kind "dense"   (FixedLenFeature):  values [B, *shape] (no B for a scalar input);
//   kind "var_len" (VarLenFeature):    indices [N, 2] int64, values [N], dense_shape [2] int64 (B, longest)
//                                      ([N, 1] and [1] for a scalar input) — a SparseTensor;
//   kind "ragged"  (RaggedFeature):    values [N], row_splits [B + 1] (only values for a scalar input).
#include <string>
#include <vector>

#include "ember/example.pb.h"
#include "ember/ops/families.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

enum AttrIndex { kKey, kKind, kDType, kShape, kRequired, kDefault, kRowSplitsDType };

const char* type_name_of(DType d) {
  return d == DType::kFloat32 ? "float" : d == DType::kInt64 ? "int64" : "string";
}

Status check_attrs(const AttrReader& a) {
  const std::string& kind = a.attr_string(kKind);
  if (kind != "dense" && kind != "var_len" && kind != "ragged")
    return invalid_argument("ParseExampleFeature: kind must be \"dense\", \"var_len\" or \"ragged\", got \"",
                            kind, "\"");
  const DType d = a.attr_dtype(kDType);
  if (d != DType::kFloat32 && d != DType::kInt64 && d != DType::kString)
    return invalid_argument(
        "ParseExampleFeature: dtype must be float32, int64 or string (what an Example holds), "
        "got ",
        dtype_name(d));
  const DType splits = a.attr_dtype(kRowSplitsDType);
  if (splits != DType::kInt32 && splits != DType::kInt64)
    return invalid_argument("ParseExampleFeature: row_splits_dtype must be int32 or int64, got ",
                            dtype_name(splits));
  for (int64_t dim : a.attr_ints(kShape))
    if (dim < 0)
      return invalid_argument("ParseExampleFeature: shape dims must be >= 0, got ",
                              list_str(a.attr_ints(kShape)));
  return Status::OK();
}

Status parse_example_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_attrs(ctx));
  const TensorSpec& in = ctx.inputs[0];
  if (in.dtype != DType::kString)
    return invalid_argument("ParseExampleFeature: serialized must be a string tensor, got ",
                            dtype_name(in.dtype));
  if (in.shape.rank_known() && in.shape.rank() > 1)
    return invalid_argument("ParseExampleFeature: serialized must be a scalar or a vector, got shape ",
                            in.shape.to_string());
  const bool batched = !in.shape.rank_known() || in.shape.rank() == 1;
  const int64_t batch = in.shape.rank_known() && in.shape.rank() == 1 ? in.shape.dim(0) : -1;
  const DType d = ctx.attr_dtype(kDType);
  const std::string& kind = ctx.attr_string(kKind);
  if (kind == "dense") {
    std::vector<int64_t> dims = ctx.attr_ints(kShape);
    if (batched) dims.insert(dims.begin(), batch);
    ctx.outputs.push_back({d, in.shape.rank_known() ? Shape(dims) : Shape::unknown_rank()});
  } else if (kind == "var_len") {
    const int64_t rank = batched ? 2 : 1;
    ctx.outputs.push_back({DType::kInt64, Shape({-1, in.shape.rank_known() ? rank : -1})});
    ctx.outputs.push_back({d, Shape({-1})});
    ctx.outputs.push_back({DType::kInt64, Shape({in.shape.rank_known() ? rank : -1})});
  } else {
    ctx.outputs.push_back({d, Shape({-1})});
    if (batched)
      ctx.outputs.push_back({ctx.attr_dtype(kRowSplitsDType), Shape({batch < 0 ? -1 : batch + 1})});
  }
  return Status::OK();
}

// The values of one feature of one record, appended to `out` (typed by dtype).
struct Values {
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  size_t size(DType d) const {
    return d == DType::kFloat32 ? floats.size() : d == DType::kInt64 ? ints.size() : strings.size();
  }
};

// Appends the record's values of `key` (none when the feature is absent: *found false).
Status read_feature(const proto::Example& example, const std::string& key, DType d, int64_t record,
                    Values* out, bool* found) {
  const auto& features = example.features().feature();
  auto it = features.find(key);
  *found = it != features.end();
  if (!*found) return Status::OK();
  const proto::Feature& f = it->second;
  const auto mismatch = [&](const char* got) {
    return invalid_argument("ParseExampleFeature: feature '", key, "' of record ", record, " holds ", got,
                            " values, but the feature is declared ", type_name_of(d));
  };
  switch (f.kind_case()) {
    case proto::Feature::KIND_NOT_SET:
      *found = false;  // an empty feature reads as a missing one, as TensorFlow's
      return Status::OK();
    case proto::Feature::kFloatList:
      if (d != DType::kFloat32) return mismatch("float");
      out->floats.insert(out->floats.end(), f.float_list().value().begin(), f.float_list().value().end());
      return Status::OK();
    case proto::Feature::kInt64List:
      if (d != DType::kInt64) return mismatch("int64");
      out->ints.insert(out->ints.end(), f.int64_list().value().begin(), f.int64_list().value().end());
      return Status::OK();
    case proto::Feature::kBytesList:
      if (d != DType::kString) return mismatch("string (bytes)");
      out->strings.insert(out->strings.end(), f.bytes_list().value().begin(), f.bytes_list().value().end());
      return Status::OK();
  }
  return Status::OK();
}

void copy_values(const Values& v, DType d, size_t from, size_t count, TensorImpl& dst, int64_t offset) {
  if (d == DType::kFloat32)
    std::copy_n(v.floats.begin() + from, count, dst.mutable_data<float>() + offset);
  else if (d == DType::kInt64)
    std::copy_n(v.ints.begin() + from, count, dst.mutable_data<int64_t>() + offset);
  else
    std::copy_n(v.strings.begin() + from, count, dst.mutable_data<std::string>() + offset);
}

Status parse_example_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_attrs(ctx));
  const TensorImpl& in = ctx.input(0);
  if (in.rank() > 1)
    return invalid_argument("ParseExampleFeature: serialized must be a scalar or a vector, got shape ",
                            in.shape().to_string());
  const bool batched = in.rank() == 1;
  const int64_t batch = in.num_elements();
  const std::string* records = in.data<std::string>();
  const std::string& key = ctx.attr_string(kKey);
  const std::string& kind = ctx.attr_string(kKind);
  const DType d = ctx.attr_dtype(kDType);
  Values values;
  std::vector<int64_t> ends;  // the end of each record's values in `values`
  std::vector<bool> present;
  proto::Example example;
  for (int64_t r = 0; r < batch; ++r) {
    example.Clear();
    if (!example.ParseFromString(records[r]))
      return invalid_argument("ParseExampleFeature: record ", r, " is not a serialized tf.train.Example (",
                              records[r].size(), " bytes)");
    bool found = false;
    EMBER_RETURN_IF_ERROR(read_feature(example, key, d, r, &values, &found));
    ends.push_back(static_cast<int64_t>(values.size(d)));
    present.push_back(found);
  }
  if (kind == "dense") {
    const std::vector<int64_t>& dims = ctx.attr_ints(kShape);
    int64_t per_record = 1;
    for (int64_t dim : dims)
      if (__builtin_mul_overflow(per_record, dim, &per_record))
        return invalid_argument("ParseExampleFeature: shape ", list_str(dims),
                                " has more than 2^63 elements");
    std::vector<int64_t> out_dims = dims;
    if (batched) out_dims.insert(out_dims.begin(), batch);
    EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, d, Shape(out_dims)));
    TensorImpl& out = ctx.output(0);
    const TensorRef& fallback = ctx.attr_tensor(kDefault);
    for (int64_t r = 0; r < batch; ++r) {
      const int64_t begin = r == 0 ? 0 : ends[r - 1], count = ends[r] - begin;
      if (!present[r]) {
        if (ctx.attr_bool(kRequired))
          return invalid_argument("ParseExampleFeature: feature '", key, "' (data type: ", type_name_of(d),
                                  ") is required but could not be found in record ", r);
        if (fallback->dtype() != d || fallback->num_elements() != per_record)
          return invalid_argument("ParseExampleFeature: the default of feature '", key, "' must be ",
                                  per_record, " ", dtype_name(d), " value(s), got ", fallback->num_elements(),
                                  " ", dtype_name(fallback->dtype()));
        if (d == DType::kFloat32)
          std::copy_n(fallback->data<float>(), per_record, out.mutable_data<float>() + r * per_record);
        else if (d == DType::kInt64)
          std::copy_n(fallback->data<int64_t>(), per_record, out.mutable_data<int64_t>() + r * per_record);
        else
          std::copy_n(fallback->data<std::string>(), per_record,
                      out.mutable_data<std::string>() + r * per_record);
        continue;
      }
      if (count != per_record)
        return invalid_argument("ParseExampleFeature: feature '", key, "' of record ", r, " has ", count,
                                " value(s), but its shape ", list_str(dims), " holds ", per_record);
      copy_values(values, d, static_cast<size_t>(begin), static_cast<size_t>(count), out, r * per_record);
    }
    return Status::OK();
  }
  const int64_t total = static_cast<int64_t>(values.size(d));
  if (kind == "var_len") {
    int64_t longest = 0;
    for (int64_t r = 0; r < batch; ++r) longest = std::max(longest, ends[r] - (r == 0 ? 0 : ends[r - 1]));
    const int64_t rank = batched ? 2 : 1;
    EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, DType::kInt64, Shape({total, rank})));
    EMBER_RETURN_IF_ERROR(allocate_output(ctx, 1, d, Shape({total})));
    EMBER_RETURN_IF_ERROR(allocate_output(ctx, 2, DType::kInt64, Shape({rank})));
    int64_t* indices = ctx.output(0).mutable_data<int64_t>();
    for (int64_t r = 0, k = 0; r < batch; ++r)
      for (int64_t i = 0; k < ends[r]; ++i, ++k) {
        if (batched) *indices++ = r;
        *indices++ = i;
      }
    copy_values(values, d, 0, static_cast<size_t>(total), ctx.output(1), 0);
    int64_t* dense_shape = ctx.output(2).mutable_data<int64_t>();
    if (batched) *dense_shape++ = batch;
    *dense_shape = longest;
    return Status::OK();
  }
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, d, Shape({total})));
  copy_values(values, d, 0, static_cast<size_t>(total), ctx.output(0), 0);
  if (batched) {
    const DType split_type = ctx.attr_dtype(kRowSplitsDType);
    EMBER_RETURN_IF_ERROR(allocate_output(ctx, 1, split_type, Shape({batch + 1})));
    for (int64_t r = 0; r <= batch; ++r) {
      const int64_t split = r == 0 ? 0 : ends[r - 1];
      if (split_type == DType::kInt32)
        ctx.output(1).mutable_data<int32_t>()[r] = static_cast<int32_t>(split);
      else
        ctx.output(1).mutable_data<int64_t>()[r] = split;
    }
  }
  return Status::OK();
}

}  // namespace

void register_parse_example_ops(OpRegistry& r) {
  OpBuilder("ParseExampleFeature")
      .doc(
          "One feature of serialized tf.train.Example records (kind dense, var_len or ragged). "
          "ParseExampleFeature([ex], key=\"x\", kind=\"dense\", dtype=float32, shape=[2]) -> [[1., 2.]]")
      .input("serialized")
      .output("output")
      .type_var(dtype_bit(DType::kString))
      .attr("key", AttrType::kString)
      .attr("kind", AttrType::kString)
      .attr("dtype", AttrType::kDType)
      .attr("shape", AttrType::kInts, std::vector<int64_t>{})
      .attr("required", AttrType::kBool, true)
      .attr("default_value", AttrType::kTensor)
      .attr("row_splits_dtype", AttrType::kDType, DType::kInt64)
      .flags(kNotDifferentiable | kKernelAllocates)
      .shape(&parse_example_shape)
      .kernel(DType::kString, &parse_example_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
