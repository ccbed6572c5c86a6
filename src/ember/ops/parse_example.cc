// ParseExampleV2, TensorFlow's op for tf.io.parse_example and parse_single_example: every feature of a
// batch of serialized tf.train.Example protos in one node, with TensorFlow's signature, so graphs and
// SavedModels move between ember and TensorFlow (python/ember/io/parsing.py builds it; docs/data.md). The
// records are parsed once, with the protobuf classes of proto/ember/example.proto (TensorFlow's field
// numbers), and each feature is read from the parsed records.
//
// ParseExampleV2(serialized: string [B] or [], names: string [B] or [0], sparse_keys: string [num_sparse],
//                dense_keys: string [len(Tdense)], ragged_keys: string [len(ragged_value_types)],
//                dense_defaults: Tdense; attrs Tdense, num_sparse, sparse_types, ragged_value_types,
//                ragged_split_types, dense_shapes) ->
//   num_sparse sparse_indices [N, 2] int64 ([N, 1] for a scalar input), sparse_values [N], sparse_shapes [2]
//     int64 ([1]): a SparseTensor per VarLenFeature, [B, longest];
//   dense_values [B, *dense_shapes[i]] (no B for a scalar input): a FixedLenFeature, whose default is
//     dense_defaults[i] (empty: the feature is required); a dense shape whose first dim is -1 is a
//     FixedLenSequenceFeature, padded to the longest record with the one value of dense_defaults[i];
//   ragged_values [N] and ragged_row_splits [B + 1] (empty for a scalar input): a RaggedFeature.
#include <algorithm>
#include <string>
#include <vector>

#include "ember/example.pb.h"
#include "ember/ops/families.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

enum Input { kSerialized, kNames, kSparseKeys, kDenseKeys, kRaggedKeys, kDenseDefaults };
enum Attr { kTdense, kNumSparse, kSparseTypes, kRaggedValueTypes, kRaggedSplitTypes, kDenseShapes };

constexpr DTypeSet kExampleTypes =
    dtype_bit(DType::kFloat32) | dtype_bit(DType::kInt64) | dtype_bit(DType::kString);

const char* type_name_of(DType d) {
  return d == DType::kFloat32 ? "float" : d == DType::kInt64 ? "int64" : "string";
}

Status check_types(const std::vector<DType>& types, DTypeSet allowed, const char* attr, const char* what) {
  for (DType d : types)
    if (!dtype_in(d, allowed))
      return invalid_argument("ParseExampleV2: attribute '", attr, "' must hold ", what, ", got ",
                              dtype_name(d));
  return Status::OK();
}

// The attributes agree with each other and with the number of dense defaults.
Status check_attrs(const AttrReader& a, size_t num_inputs) {
  const size_t num_dense = num_inputs - kDenseDefaults;
  if (a.attr_int(kNumSparse) < 0 ||
      static_cast<size_t>(a.attr_int(kNumSparse)) != a.attr_dtypes(kSparseTypes).size())
    return invalid_argument("ParseExampleV2: num_sparse (", a.attr_int(kNumSparse),
                            ") must be the length of sparse_types (", a.attr_dtypes(kSparseTypes).size(),
                            ")");
  if (a.attr_dtypes(kTdense).size() != num_dense || a.attr_shapes(kDenseShapes).size() != num_dense)
    return invalid_argument("ParseExampleV2: Tdense (", a.attr_dtypes(kTdense).size(), ") and dense_shapes (",
                            a.attr_shapes(kDenseShapes).size(), ") must have one entry per dense default (",
                            num_dense, ")");
  if (a.attr_dtypes(kRaggedSplitTypes).size() != a.attr_dtypes(kRaggedValueTypes).size())
    return invalid_argument("ParseExampleV2: ragged_split_types (", a.attr_dtypes(kRaggedSplitTypes).size(),
                            ") must be as long as ragged_value_types (",
                            a.attr_dtypes(kRaggedValueTypes).size(), ")");
  const char* example_types = "float32, int64 or string (what an Example holds)";
  EMBER_RETURN_IF_ERROR(check_types(a.attr_dtypes(kTdense), kExampleTypes, "Tdense", example_types));
  EMBER_RETURN_IF_ERROR(
      check_types(a.attr_dtypes(kSparseTypes), kExampleTypes, "sparse_types", example_types));
  EMBER_RETURN_IF_ERROR(
      check_types(a.attr_dtypes(kRaggedValueTypes), kExampleTypes, "ragged_value_types", example_types));
  EMBER_RETURN_IF_ERROR(check_types(a.attr_dtypes(kRaggedSplitTypes),
                                    dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64), "ragged_split_types",
                                    "int32 or int64"));
  for (const Shape& shape : a.attr_shapes(kDenseShapes)) {
    bool ok = shape.rank_known();
    for (int i = 0; ok && i < shape.rank(); ++i) ok = shape.dim(i) >= 0 || i == 0;
    if (!ok)
      return invalid_argument(
          "ParseExampleV2: each of dense_shapes must be fully defined but for its first dim "
          "(-1: a sequence feature), got ",
          shape.to_string());
  }
  return Status::OK();
}

Status check_serialized(const Shape& shape) {
  if (shape.rank_known() && shape.rank() > 1)
    return invalid_argument("ParseExampleV2: serialized must be a scalar or a vector, got shape ",
                            shape.to_string());
  return Status::OK();
}

Status parse_example_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_attrs(ctx, ctx.inputs.size()));
  const Shape& in = ctx.inputs[kSerialized].shape;
  EMBER_RETURN_IF_ERROR(check_serialized(in));
  for (int k : {kSparseKeys, kDenseKeys, kRaggedKeys}) {
    const Shape& keys = ctx.inputs[k].shape;
    if (keys.rank_known() && keys.rank() > 1)
      return invalid_argument("ParseExampleV2: input '", ctx.op->inputs[k].name,
                              "' must be a vector of keys, got shape ", keys.to_string());
  }
  const bool rank_known = in.rank_known();
  const bool batched = !rank_known || in.rank() == 1;
  const int64_t batch = rank_known && in.rank() == 1 ? in.dim(0) : -1;
  const int64_t index_rank = rank_known ? in.rank() + 1 : -1;
  const std::vector<DType>& sparse_types = ctx.attr_dtypes(kSparseTypes);
  for (size_t i = 0; i < sparse_types.size(); ++i)
    ctx.outputs.push_back({DType::kInt64, Shape({-1, index_rank})});
  for (DType d : sparse_types) ctx.outputs.push_back({d, Shape({-1})});
  for (size_t i = 0; i < sparse_types.size(); ++i)
    ctx.outputs.push_back({DType::kInt64, Shape({index_rank})});
  const std::vector<DType>& dense_types = ctx.attr_dtypes(kTdense);
  for (size_t i = 0; i < dense_types.size(); ++i) {
    std::vector<int64_t> dims = ctx.attr_shapes(kDenseShapes)[i].dim_vector();
    if (batched) dims.insert(dims.begin(), batch);
    ctx.outputs.push_back({dense_types[i], rank_known ? Shape(dims) : Shape::unknown_rank()});
  }
  for (DType d : ctx.attr_dtypes(kRaggedValueTypes)) ctx.outputs.push_back({d, Shape({-1})});
  for (DType d : ctx.attr_dtypes(kRaggedSplitTypes))
    ctx.outputs.push_back({d, Shape({!rank_known ? -1 : !batched ? 0 : batch < 0 ? -1 : batch + 1})});
  return Status::OK();
}

// One feature's values in every record, in record order, and where each record's values end.
struct FeatureValues {
  DType dtype;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<int64_t> ends;
  std::vector<bool> present;

  int64_t size() const {
    return static_cast<int64_t>(dtype == DType::kFloat32 ? floats.size()
                                : dtype == DType::kInt64 ? ints.size()
                                                         : strings.size());
  }
  int64_t begin(int64_t record) const { return record == 0 ? 0 : ends[record - 1]; }
  int64_t count(int64_t record) const { return ends[record] - begin(record); }
  // Copies `count` values from `from` into dst's elements at `offset`.
  void copy(int64_t from, int64_t count, TensorImpl& dst, int64_t offset) const {
    if (dtype == DType::kFloat32)
      std::copy_n(floats.begin() + from, count, dst.mutable_data<float>() + offset);
    else if (dtype == DType::kInt64)
      std::copy_n(ints.begin() + from, count, dst.mutable_data<int64_t>() + offset);
    else
      std::copy_n(strings.begin() + from, count, dst.mutable_data<std::string>() + offset);
  }
};

// How a record is named in errors: by `names` when given (TensorFlow's example_names).
std::string record_name(const TensorImpl& names, int64_t record) {
  if (names.num_elements() > record)
    return "record " + std::to_string(record) + " ('" + names.data<std::string>()[record] + "')";
  return "record " + std::to_string(record);
}

// The values of feature `key` in each record. An empty feature reads as a missing one, as TensorFlow's.
Status read_feature(const std::vector<proto::Example>& examples, const TensorImpl& names,
                    const std::string& key, DType d, FeatureValues& out) {
  out.dtype = d;
  for (size_t r = 0; r < examples.size(); ++r) {
    const auto& features = examples[r].features().feature();
    auto it = features.find(key);
    bool found = it != features.end() && it->second.kind_case() != proto::Feature::KIND_NOT_SET;
    if (found) {
      const proto::Feature& f = it->second;
      const auto mismatch = [&](const char* got) {
        return invalid_argument("ParseExampleV2: feature '", key, "' of ", record_name(names, r), " holds ",
                                got, " values, but the feature is declared ", type_name_of(d));
      };
      if (f.kind_case() == proto::Feature::kFloatList) {
        if (d != DType::kFloat32) return mismatch("float");
        out.floats.insert(out.floats.end(), f.float_list().value().begin(), f.float_list().value().end());
      } else if (f.kind_case() == proto::Feature::kInt64List) {
        if (d != DType::kInt64) return mismatch("int64");
        out.ints.insert(out.ints.end(), f.int64_list().value().begin(), f.int64_list().value().end());
      } else {
        if (d != DType::kString) return mismatch("string (bytes)");
        out.strings.insert(out.strings.end(), f.bytes_list().value().begin(), f.bytes_list().value().end());
      }
    }
    out.ends.push_back(out.size());
    out.present.push_back(found);
  }
  return Status::OK();
}

Status keys_of(const KernelContext& ctx, int input, size_t expected, std::vector<std::string>& out) {
  const TensorImpl& keys = ctx.input(input);
  if (keys.rank() > 1 || static_cast<size_t>(keys.num_elements()) != expected)
    return invalid_argument("ParseExampleV2: input '", ctx.op->inputs[input].name, "' must be a vector of ",
                            expected, " key(s), got shape ", keys.shape().to_string());
  out.assign(keys.data<std::string>(), keys.data<std::string>() + expected);
  return Status::OK();
}

// A VarLenFeature as a SparseTensor [B, longest] ([longest] for a scalar input).
Status write_sparse(KernelContext& ctx, const FeatureValues& v, bool batched, int indices, int values,
                    int shape) {
  const int64_t batch = static_cast<int64_t>(v.ends.size()), total = v.size(), rank = batched ? 2 : 1;
  int64_t longest = 0;
  for (int64_t r = 0; r < batch; ++r) longest = std::max(longest, v.count(r));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, indices, DType::kInt64, Shape({total, rank})));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, values, v.dtype, Shape({total})));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, shape, DType::kInt64, Shape({rank})));
  int64_t* index = ctx.output(indices).mutable_data<int64_t>();
  for (int64_t r = 0; r < batch; ++r)
    for (int64_t i = 0; i < v.count(r); ++i) {
      if (batched) *index++ = r;
      *index++ = i;
    }
  v.copy(0, total, ctx.output(values), 0);
  int64_t* dense_shape = ctx.output(shape).mutable_data<int64_t>();
  if (batched) *dense_shape++ = batch;
  *dense_shape = longest;
  return Status::OK();
}

// Copies `count` elements of `fallback` (from element `from`, or its one element repeated when it has one)
// into dst's elements at `offset`.
void fill_from(const TensorImpl& fallback, int64_t count, TensorImpl& dst, int64_t offset) {
  const bool repeat = fallback.num_elements() == 1;
  visit_dtype<kExampleTypes>(fallback.dtype(), [&]<typename T>() {
    const T* src = fallback.data<T>();
    T* out = dst.mutable_data<T>() + offset;
    for (int64_t i = 0; i < count; ++i) out[i] = src[repeat ? 0 : i];
  });
}

// A FixedLenFeature ([B, *shape]) or, when shape's first dim is -1, a FixedLenSequenceFeature
// ([B, longest, *shape[1:]], padded with the default's one value).
Status write_dense(KernelContext& ctx, const FeatureValues& v, const TensorImpl& names,
                   const std::string& key, const Shape& shape, const TensorImpl& fallback, bool batched,
                   int output) {
  const int64_t batch = static_cast<int64_t>(v.ends.size());
  const bool sequence = shape.rank() > 0 && shape.dim(0) < 0;
  int64_t per_row = 1;  // values per record, or per step of a sequence
  for (int i = sequence ? 1 : 0; i < shape.rank(); ++i)
    if (__builtin_mul_overflow(per_row, shape.dim(i), &per_row))
      return invalid_argument("ParseExampleV2: dense shape ", shape.to_string(), " of feature '", key,
                              "' has more than 2^63 elements");
  if (fallback.dtype() != v.dtype)
    return invalid_argument("ParseExampleV2: the default of feature '", key, "' must be ",
                            dtype_name(v.dtype), ", got ", dtype_name(fallback.dtype()));
  std::vector<int64_t> dims = shape.dim_vector();
  int64_t rows = 1;  // per record
  if (sequence) {
    rows = 0;
    for (int64_t r = 0; r < batch; ++r) {
      if (per_row == 0 ? v.count(r) != 0 : v.count(r) % per_row != 0)
        return invalid_argument("ParseExampleV2: feature '", key, "' of ", record_name(names, r), " has ",
                                v.count(r), " value(s), which is not a whole number of steps of ",
                                Shape(std::span<const int64_t>(dims).subspan(1)).to_string());
      rows = std::max(rows, per_row == 0 ? 0 : v.count(r) / per_row);
    }
    dims[0] = rows;
    if (fallback.num_elements() != 1 && rows * per_row * batch > 0)
      return invalid_argument("ParseExampleV2: the padding of sequence feature '", key,
                              "' must be one value, got ", fallback.num_elements());
  }
  int64_t per_record;
  if (__builtin_mul_overflow(rows, per_row, &per_record))
    return invalid_argument("ParseExampleV2: feature '", key, "' has more than 2^63 values per record");
  if (batched) dims.insert(dims.begin(), batch);
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, output, v.dtype, Shape(dims)));
  TensorImpl& out = ctx.output(output);
  for (int64_t r = 0; r < batch; ++r) {
    const int64_t offset = r * per_record, count = v.count(r);
    if (sequence) {
      v.copy(v.begin(r), count, out, offset);
      fill_from(fallback, per_record - count, out, offset + count);
      continue;
    }
    if (!v.present[r]) {
      if (fallback.num_elements() == 0)
        return invalid_argument("ParseExampleV2: feature '", key, "' (data type: ", type_name_of(v.dtype),
                                ") is required but could not be found in ", record_name(names, r));
      if (fallback.num_elements() != per_record)
        return invalid_argument("ParseExampleV2: the default of feature '", key, "' must be ", per_record,
                                " value(s), got ", fallback.num_elements());
      fill_from(fallback, per_record, out, offset);
      continue;
    }
    if (count != per_record)
      return invalid_argument("ParseExampleV2: feature '", key, "' of ", record_name(names, r), " has ",
                              count, " value(s), but its shape ", shape.to_string(), " holds ", per_record);
    v.copy(v.begin(r), count, out, offset);
  }
  return Status::OK();
}

// A RaggedFeature: its values and row splits (empty for a scalar input, as TensorFlow's).
Status write_ragged(KernelContext& ctx, const FeatureValues& v, DType split_type, bool batched, int values,
                    int splits) {
  const int64_t batch = static_cast<int64_t>(v.ends.size());
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, values, v.dtype, Shape({v.size()})));
  v.copy(0, v.size(), ctx.output(values), 0);
  const int64_t num_splits = batched ? batch + 1 : 0;
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, splits, split_type, Shape({num_splits})));
  for (int64_t r = 0; r < num_splits; ++r) {
    const int64_t split = r == 0 ? 0 : v.ends[r - 1];
    if (split_type == DType::kInt32)
      ctx.output(splits).mutable_data<int32_t>()[r] = static_cast<int32_t>(split);
    else
      ctx.output(splits).mutable_data<int64_t>()[r] = split;
  }
  return Status::OK();
}

Status parse_example_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_attrs(ctx, ctx.inputs.size()));
  const TensorImpl& in = ctx.input(kSerialized);
  EMBER_RETURN_IF_ERROR(check_serialized(in.shape()));
  const TensorImpl& names = ctx.input(kNames);
  if (names.num_elements() != 0 && names.num_elements() != in.num_elements())
    return invalid_argument("ParseExampleV2: names must be empty or name each of the ", in.num_elements(),
                            " record(s), got shape ", names.shape().to_string());
  const std::vector<DType>& sparse_types = ctx.attr_dtypes(kSparseTypes);
  const std::vector<DType>& dense_types = ctx.attr_dtypes(kTdense);
  const std::vector<DType>& ragged_types = ctx.attr_dtypes(kRaggedValueTypes);
  std::vector<std::string> sparse_keys, dense_keys, ragged_keys;
  EMBER_RETURN_IF_ERROR(keys_of(ctx, kSparseKeys, sparse_types.size(), sparse_keys));
  EMBER_RETURN_IF_ERROR(keys_of(ctx, kDenseKeys, dense_types.size(), dense_keys));
  EMBER_RETURN_IF_ERROR(keys_of(ctx, kRaggedKeys, ragged_types.size(), ragged_keys));

  const bool batched = in.rank() == 1;
  std::vector<proto::Example> examples(static_cast<size_t>(in.num_elements()));
  for (size_t r = 0; r < examples.size(); ++r)
    if (!examples[r].ParseFromString(in.data<std::string>()[r]))
      return invalid_argument("ParseExampleV2: ", record_name(names, static_cast<int64_t>(r)),
                              " is not a serialized tf.train.Example (", in.data<std::string>()[r].size(),
                              " bytes)");
  const int num_sparse = static_cast<int>(sparse_types.size());
  for (int i = 0; i < num_sparse; ++i) {
    FeatureValues v;
    EMBER_RETURN_IF_ERROR(read_feature(examples, names, sparse_keys[i], sparse_types[i], v));
    EMBER_RETURN_IF_ERROR(write_sparse(ctx, v, batched, i, num_sparse + i, 2 * num_sparse + i));
  }
  const int dense_base = 3 * num_sparse;
  for (size_t i = 0; i < dense_types.size(); ++i) {
    FeatureValues v;
    EMBER_RETURN_IF_ERROR(read_feature(examples, names, dense_keys[i], dense_types[i], v));
    EMBER_RETURN_IF_ERROR(write_dense(ctx, v, names, dense_keys[i], ctx.attr_shapes(kDenseShapes)[i],
                                      ctx.input(kDenseDefaults + static_cast<int>(i)), batched,
                                      dense_base + static_cast<int>(i)));
  }
  const int ragged_base = dense_base + static_cast<int>(dense_types.size());
  const int num_ragged = static_cast<int>(ragged_types.size());
  for (int i = 0; i < num_ragged; ++i) {
    FeatureValues v;
    EMBER_RETURN_IF_ERROR(read_feature(examples, names, ragged_keys[i], ragged_types[i], v));
    EMBER_RETURN_IF_ERROR(write_ragged(ctx, v, ctx.attr_dtypes(kRaggedSplitTypes)[i], batched,
                                       ragged_base + i, ragged_base + num_ragged + i));
  }
  return Status::OK();
}

}  // namespace

void register_parse_example_ops(OpRegistry& r) {
  OpBuilder("ParseExampleV2")
      .doc(
          "Features of serialized tf.train.Example records: VarLen (sparse), dense (with defaults) and "
          "ragged. "
          "ParseExampleV2([ex], [], [], [\"x\"], [], [[0., 0.]], Tdense=[float32], num_sparse=0, "
          "sparse_types=[], ragged_value_types=[], ragged_split_types=[], dense_shapes=[[2]]) -> [[1., 2.]]")
      .input_fixed("serialized", dtype_bit(DType::kString))
      .input_fixed("names", dtype_bit(DType::kString))
      .input_fixed("sparse_keys", dtype_bit(DType::kString))
      .input_fixed("dense_keys", dtype_bit(DType::kString))
      .input_fixed("ragged_keys", dtype_bit(DType::kString))
      .input_fixed("dense_defaults", kExampleTypes)
      .output("sparse_indices")
      .output("sparse_values")
      .output("sparse_shapes")
      .output("dense_values")
      .output("ragged_values")
      .output("ragged_row_splits")
      .type_var(dtype_bit(DType::kString))
      .attr("Tdense", AttrType::kDTypes)
      .attr("num_sparse", AttrType::kInt)
      .attr("sparse_types", AttrType::kDTypes)
      .attr("ragged_value_types", AttrType::kDTypes)
      .attr("ragged_split_types", AttrType::kDTypes)
      .attr("dense_shapes", AttrType::kShapes)
      .flags(kVariadicInput | kVariadicMayBeEmpty | kNotDifferentiable | kKernelAllocates)
      .shape(&parse_example_shape)
      .kernel(DType::kString, &parse_example_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
