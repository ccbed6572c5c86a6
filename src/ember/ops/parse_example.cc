// ParseExampleV2 and ParseSequenceExampleV2, TensorFlow's ops for tf.io.parse_example / parse_single_example
// and parse_sequence_example / parse_single_sequence_example: every feature of a batch of serialized
// tf.train.Example (SequenceExample) protos in one node, with TensorFlow's signatures, so graphs and
// SavedModels move between ember and TensorFlow (python/ember/io/parsing.py builds them; docs/data.md). The
// records are parsed once, with the protobuf classes of proto/ember/example.proto (TensorFlow's field
// numbers), and each feature is read from the parsed records by one set of functions: an Example's
// features and a SequenceExample's context alike, a feature list as a group of values per step.
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
//
// ParseSequenceExampleV2(serialized, debug_name, context_{sparse,dense,ragged}_keys,
//                        feature_list_{sparse,dense,ragged}_keys, feature_list_dense_missing_assumed_empty:
//                        bool [len(feature_list_dense_types)], context_dense_defaults: Tcontext_dense; attrs
//                        Ncontext_sparse, Tcontext_dense, context_sparse_types, context_ragged_value_types,
//                        context_ragged_split_types, context_dense_shapes, Nfeature_list_sparse,
//                        Nfeature_list_dense, feature_list_dense_types, feature_list_sparse_types,
//                        feature_list_ragged_value_types, feature_list_ragged_split_types,
//                        feature_list_dense_shapes) ->
//   the context's outputs as ParseExampleV2's (ragged row splits: a scalar 0 for a scalar input), then per
//   feature list: sparse [B, most steps, longest] (indices [N, 3]); dense values [B, most steps, *shape],
//   padded with zeros, and lengths [B] int64; ragged values [N], outer splits [B + 1] (records into steps; a
//   scalar 0 for a scalar input) and inner splits [steps + 1] (steps into values).
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

Status check_types(const char* op, const std::vector<DType>& types, DTypeSet allowed, const char* attr,
                   const char* what) {
  for (DType d : types)
    if (!dtype_in(d, allowed))
      return invalid_argument(op, ": attribute '", attr, "' must hold ", what, ", got ", dtype_name(d));
  return Status::OK();
}

constexpr const char* kExampleTypeNames = "float32, int64 or string (what an Example holds)";
constexpr DTypeSet kSplitTypes = dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64);

// Each shape is fully defined, but for its first dim when `sequence_first_dim` (-1: a sequence feature).
Status check_dense_shapes(const char* op, const char* attr, const std::vector<Shape>& shapes,
                          bool sequence_first_dim) {
  for (const Shape& shape : shapes) {
    bool ok = shape.rank_known();
    for (int i = 0; ok && i < shape.rank(); ++i) ok = shape.dim(i) >= 0 || (i == 0 && sequence_first_dim);
    if (!ok)
      return invalid_argument(op, ": each of ", attr, " must be fully defined",
                              sequence_first_dim ? " but for its first dim (-1: a sequence feature)" : "",
                              ", got ", shape.to_string());
  }
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
  const char* op = "ParseExampleV2";
  EMBER_RETURN_IF_ERROR(check_types(op, a.attr_dtypes(kTdense), kExampleTypes, "Tdense", kExampleTypeNames));
  EMBER_RETURN_IF_ERROR(
      check_types(op, a.attr_dtypes(kSparseTypes), kExampleTypes, "sparse_types", kExampleTypeNames));
  EMBER_RETURN_IF_ERROR(check_types(op, a.attr_dtypes(kRaggedValueTypes), kExampleTypes, "ragged_value_types",
                                    kExampleTypeNames));
  EMBER_RETURN_IF_ERROR(
      check_types(op, a.attr_dtypes(kRaggedSplitTypes), kSplitTypes, "ragged_split_types", "int32 or int64"));
  return check_dense_shapes(op, "dense_shapes", a.attr_shapes(kDenseShapes), true);
}

Status check_serialized(const std::string& op, const Shape& shape) {
  if (shape.rank_known() && shape.rank() > 1)
    return invalid_argument(op, ": serialized must be a scalar or a vector, got shape ", shape.to_string());
  return Status::OK();
}

// What the shape of `serialized` says of the outputs: whether there is a batch dimension, and its size.
struct Batch {
  bool rank_known, batched;
  int64_t size;  // -1: unknown

  explicit Batch(const Shape& in)
      : rank_known(in.rank_known()),
        batched(!in.rank_known() || in.rank() == 1),
        size(in.rank_known() && in.rank() == 1 ? in.dim(0) : -1) {}
  // A SparseTensor's rank: the batch's, plus one per level of values (`levels`).
  int64_t sparse_rank(int levels) const { return rank_known ? int64_t{batched} + levels : -1; }
  // `dims` of each record, with the batch dimension before them.
  Shape of_records(std::vector<int64_t> dims) const {
    if (!rank_known) return Shape::unknown_rank();
    if (batched) dims.insert(dims.begin(), size);
    return Shape(dims);
  }
  // Row splits of the records: [B + 1], or `no_rows` for a scalar input.
  Shape splits(const Shape& no_rows) const {
    if (!rank_known) return no_rows.rank() == 1 ? Shape({-1}) : Shape::unknown_rank();
    return batched ? Shape({size < 0 ? -1 : size + 1}) : no_rows;
  }
};

Status check_keys(const InferContext& ctx, std::initializer_list<int> inputs) {
  for (int k : inputs) {
    const Shape& keys = ctx.inputs[k].shape;
    if (keys.rank_known() && keys.rank() > 1)
      return invalid_argument(ctx.op->name, ": input '", ctx.op->inputs[k].name,
                              "' must be a vector of keys, got shape ", keys.to_string());
  }
  return Status::OK();
}

// The outputs of sparse, dense and ragged features of an Example (or a SequenceExample's context).
void push_feature_shapes(InferContext& ctx, const Batch& batch, const std::vector<DType>& sparse_types,
                         const std::vector<DType>& dense_types, const std::vector<Shape>& dense_shapes,
                         const std::vector<DType>& ragged_value_types,
                         const std::vector<DType>& ragged_split_types, const Shape& no_rows) {
  const int64_t index_rank = batch.sparse_rank(1);
  for (size_t i = 0; i < sparse_types.size(); ++i)
    ctx.outputs.push_back({DType::kInt64, Shape({-1, index_rank})});
  for (DType d : sparse_types) ctx.outputs.push_back({d, Shape({-1})});
  for (size_t i = 0; i < sparse_types.size(); ++i)
    ctx.outputs.push_back({DType::kInt64, Shape({index_rank})});
  for (size_t i = 0; i < dense_types.size(); ++i)
    ctx.outputs.push_back({dense_types[i], batch.of_records(dense_shapes[i].dim_vector())});
  for (DType d : ragged_value_types) ctx.outputs.push_back({d, Shape({-1})});
  for (DType d : ragged_split_types) ctx.outputs.push_back({d, batch.splits(no_rows)});
}

Status parse_example_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_attrs(ctx, ctx.inputs.size()));
  const Shape& in = ctx.inputs[kSerialized].shape;
  EMBER_RETURN_IF_ERROR(check_serialized(ctx.op->name, in));
  EMBER_RETURN_IF_ERROR(check_keys(ctx, {kSparseKeys, kDenseKeys, kRaggedKeys}));
  push_feature_shapes(ctx, Batch(in), ctx.attr_dtypes(kSparseTypes), ctx.attr_dtypes(kTdense),
                      ctx.attr_shapes(kDenseShapes), ctx.attr_dtypes(kRaggedValueTypes),
                      ctx.attr_dtypes(kRaggedSplitTypes), Shape({0}));
  return Status::OK();
}

// One feature's values in every record, or every step of a feature list, in order, and where each
// group's (record's or step's) values end.
struct FeatureValues {
  DType dtype;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<int64_t> ends;  // per group
  std::vector<bool> present;  // per record

  int64_t size() const {
    return static_cast<int64_t>(dtype == DType::kFloat32 ? floats.size()
                                : dtype == DType::kInt64 ? ints.size()
                                                         : strings.size());
  }
  int64_t begin(int64_t group) const { return group == 0 ? 0 : ends[group - 1]; }
  int64_t count(int64_t group) const { return ends[group] - begin(group); }
  // Copies `count` values from `from` into dst's elements at `offset`.
  void copy(int64_t from, int64_t count, TensorImpl& dst, int64_t offset) const {
    if (dtype == DType::kFloat32)
      std::copy_n(floats.begin() + from, count, dst.mutable_data<float>() + offset);
    else if (dtype == DType::kInt64)
      std::copy_n(ints.begin() + from, count, dst.mutable_data<int64_t>() + offset);
    else
      std::copy_n(strings.begin() + from, count, dst.mutable_data<std::string>() + offset);
  }
  // Appends f's values; false when f holds values of another type.
  bool append(const proto::Feature& f) {
    switch (f.kind_case()) {
      case proto::Feature::kFloatList:
        if (dtype != DType::kFloat32) return false;
        floats.insert(floats.end(), f.float_list().value().begin(), f.float_list().value().end());
        return true;
      case proto::Feature::kInt64List:
        if (dtype != DType::kInt64) return false;
        ints.insert(ints.end(), f.int64_list().value().begin(), f.int64_list().value().end());
        return true;
      case proto::Feature::kBytesList:
        if (dtype != DType::kString) return false;
        strings.insert(strings.end(), f.bytes_list().value().begin(), f.bytes_list().value().end());
        return true;
      default:  // an empty Feature holds no values
        return true;
    }
  }
};

const char* held_type(const proto::Feature& f) {
  return f.kind_case() == proto::Feature::kFloatList   ? "float"
         : f.kind_case() == proto::Feature::kInt64List ? "int64"
                                                       : "string (bytes)";
}

// How a record is named in errors: by `names` when given (TensorFlow's example_names / debug_name).
std::string record_name(const TensorImpl& names, int64_t record) {
  if (names.num_elements() > record)
    return "record " + std::to_string(record) + " ('" + names.data<std::string>()[record] + "')";
  return "record " + std::to_string(record);
}

// The serialized records, each parsed as a `Message` (tf.train.Example or SequenceExample).
template <typename Message>
Status parse_records(const KernelContext& ctx, const char* message, std::vector<Message>& records) {
  const TensorImpl& in = ctx.input(0);
  EMBER_RETURN_IF_ERROR(check_serialized(ctx.op->name, in.shape()));
  const TensorImpl& names = ctx.input(1);
  if (names.num_elements() != 0 && names.num_elements() != in.num_elements())
    return invalid_argument(ctx.op->name, ": ", ctx.op->inputs[1].name, " must be empty or name each of the ",
                            in.num_elements(), " record(s), got shape ", names.shape().to_string());
  records.resize(static_cast<size_t>(in.num_elements()));
  for (size_t r = 0; r < records.size(); ++r)
    if (!records[r].ParseFromString(in.data<std::string>()[r]))
      return invalid_argument(ctx.op->name, ": ", record_name(names, static_cast<int64_t>(r)),
                              " is not a serialized tf.train.", message, " (",
                              in.data<std::string>()[r].size(), " bytes)");
  return Status::OK();
}

// The values of feature `key` in each record's `features` (`kind` names it in errors: "feature", "context
// feature"). An empty feature reads as a missing one, as TensorFlow's.
Status read_feature(const KernelContext& ctx, const std::vector<const proto::Features*>& records,
                    const char* kind, const std::string& key, DType d, FeatureValues& out) {
  out.dtype = d;
  for (size_t r = 0; r < records.size(); ++r) {
    const auto& features = records[r]->feature();
    auto it = features.find(key);
    const bool found = it != features.end() && it->second.kind_case() != proto::Feature::KIND_NOT_SET;
    if (found && !out.append(it->second))
      return invalid_argument(
          ctx.op->name, ": ", kind, " '", key, "' of ", record_name(ctx.input(1), static_cast<int64_t>(r)),
          " holds ", held_type(it->second), " values, but the feature is declared ", type_name_of(d));
    out.ends.push_back(out.size());
    out.present.push_back(found);
  }
  return Status::OK();
}

// The values of feature list `key` in each record, a group per step; `step_ends` gets where each record's
// steps end.
Status read_feature_list(const KernelContext& ctx, const std::vector<proto::SequenceExample>& records,
                         const std::string& key, DType d, FeatureValues& out,
                         std::vector<int64_t>& step_ends) {
  out.dtype = d;
  for (size_t r = 0; r < records.size(); ++r) {
    const auto& lists = records[r].feature_lists().feature_list();
    auto it = lists.find(key);
    const bool found = it != lists.end();
    for (int step = 0; found && step < it->second.feature_size(); ++step) {
      const proto::Feature& f = it->second.feature(step);
      if (!out.append(f))
        return invalid_argument(ctx.op->name, ": feature list '", key, "' of ",
                                record_name(ctx.input(1), static_cast<int64_t>(r)), ", step ", step,
                                ", holds ", held_type(f), " values, but the feature list is declared ",
                                type_name_of(d));
      out.ends.push_back(out.size());
    }
    step_ends.push_back(static_cast<int64_t>(out.ends.size()));
    out.present.push_back(found);
  }
  return Status::OK();
}

Status keys_of(const KernelContext& ctx, int input, size_t expected, std::vector<std::string>& out) {
  const TensorImpl& keys = ctx.input(input);
  if (keys.rank() > 1 || static_cast<size_t>(keys.num_elements()) != expected)
    return invalid_argument(ctx.op->name, ": input '", ctx.op->inputs[input].name, "' must be a vector of ",
                            expected, " key(s), got shape ", keys.shape().to_string());
  out.assign(keys.data<std::string>(), keys.data<std::string>() + expected);
  return Status::OK();
}

// A VarLenFeature as a SparseTensor: [B, longest] ([longest] for a scalar input) or, for a feature list
// (`step_ends` given), [B, most steps, longest] ([most steps, longest]).
Status write_sparse(KernelContext& ctx, const FeatureValues& v, const std::vector<int64_t>* step_ends,
                    bool batched, int indices, int values, int shape) {
  const bool sequence = step_ends != nullptr;
  const int64_t groups = static_cast<int64_t>(v.ends.size()), total = v.size();
  const int64_t records = sequence ? static_cast<int64_t>(step_ends->size()) : groups;
  const int64_t rank = int64_t{batched} + int64_t{sequence} + 1;
  const auto first_group = [&](int64_t r) { return !sequence ? r : r == 0 ? 0 : (*step_ends)[r - 1]; };
  const auto end_group = [&](int64_t r) { return sequence ? (*step_ends)[r] : r + 1; };
  int64_t longest = 0, most_steps = 0;
  for (int64_t g = 0; g < groups; ++g) longest = std::max(longest, v.count(g));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, indices, DType::kInt64, Shape({total, rank})));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, values, v.dtype, Shape({total})));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, shape, DType::kInt64, Shape({rank})));
  int64_t* index = ctx.output(indices).mutable_data<int64_t>();
  for (int64_t r = 0; r < records; ++r) {
    most_steps = std::max(most_steps, end_group(r) - first_group(r));
    for (int64_t g = first_group(r); g < end_group(r); ++g)
      for (int64_t i = 0; i < v.count(g); ++i) {
        if (batched) *index++ = r;
        if (sequence) *index++ = g - first_group(r);
        *index++ = i;
      }
  }
  v.copy(0, total, ctx.output(values), 0);
  int64_t* dense_shape = ctx.output(shape).mutable_data<int64_t>();
  if (batched) *dense_shape++ = records;
  if (sequence) *dense_shape++ = most_steps;
  *dense_shape = longest;
  return Status::OK();
}

// Copies `count` elements of `fallback` (from element `from`, or its one element repeated when it has one)
// into dst's elements at `offset`; with no fallback, zeros (empty strings).
void fill_from(const TensorImpl* fallback, int64_t count, TensorImpl& dst, int64_t offset) {
  visit_dtype<kExampleTypes>(dst.dtype(), [&]<typename T>() {
    T* out = dst.mutable_data<T>() + offset;
    if (fallback == nullptr) return static_cast<void>(std::fill_n(out, count, T{}));
    const bool repeat = fallback->num_elements() == 1;
    const T* src = fallback->data<T>();
    for (int64_t i = 0; i < count; ++i) out[i] = src[repeat ? 0 : i];
  });
}

// A FixedLenFeature ([B, *shape]) or, when shape's first dim is -1, a FixedLenSequenceFeature
// ([B, longest, *shape[1:]], padded with the fallback's one value, or zeros without one). `steps` holds
// each record's number of steps where they are known (a feature list, whose steps were checked).
Status write_dense(KernelContext& ctx, const FeatureValues& v, const std::string& key, const Shape& shape,
                   const TensorImpl* fallback, bool batched, int output,
                   const std::vector<int64_t>* steps = nullptr) {
  const std::string& op = ctx.op->name;
  const TensorImpl& names = ctx.input(1);
  const int64_t batch = static_cast<int64_t>(v.ends.size());
  const bool sequence = shape.rank() > 0 && shape.dim(0) < 0;
  int64_t per_row = 1;  // values per record, or per step of a sequence
  for (int i = sequence ? 1 : 0; i < shape.rank(); ++i)
    if (__builtin_mul_overflow(per_row, shape.dim(i), &per_row))
      return invalid_argument(op, ": dense shape ", shape.to_string(), " of feature '", key,
                              "' has more than 2^63 elements");
  if (fallback != nullptr && fallback->dtype() != v.dtype)
    return invalid_argument(op, ": the default of feature '", key, "' must be ", dtype_name(v.dtype),
                            ", got ", dtype_name(fallback->dtype()));
  std::vector<int64_t> dims = shape.dim_vector();
  int64_t rows = 1;  // per record
  if (sequence) {
    rows = 0;
    for (int64_t r = 0; r < batch; ++r) {
      if (steps != nullptr) {
        rows = std::max(rows, (*steps)[r]);
        continue;
      }
      if (per_row == 0 ? v.count(r) != 0 : v.count(r) % per_row != 0)
        return invalid_argument(op, ": feature '", key, "' of ", record_name(names, r), " has ", v.count(r),
                                " value(s), which is not a whole number of steps of ",
                                Shape(std::span<const int64_t>(dims).subspan(1)).to_string());
      rows = std::max(rows, per_row == 0 ? 0 : v.count(r) / per_row);
    }
    dims[0] = rows;
    if (fallback != nullptr && fallback->num_elements() != 1 && rows * per_row * batch > 0)
      return invalid_argument(op, ": the padding of sequence feature '", key, "' must be one value, got ",
                              fallback->num_elements());
  }
  int64_t per_record;
  if (__builtin_mul_overflow(rows, per_row, &per_record))
    return invalid_argument(op, ": feature '", key, "' has more than 2^63 values per record");
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
      if (fallback == nullptr || fallback->num_elements() == 0)
        return invalid_argument(op, ": feature '", key, "' (data type: ", type_name_of(v.dtype),
                                ") is required but could not be found in ", record_name(names, r));
      if (fallback->num_elements() != per_record)
        return invalid_argument(op, ": the default of feature '", key, "' must be ", per_record,
                                " value(s), got ", fallback->num_elements());
      fill_from(fallback, per_record, out, offset);
      continue;
    }
    if (count != per_record)
      return invalid_argument(op, ": feature '", key, "' of ", record_name(names, r), " has ", count,
                              " value(s), but its shape ", shape.to_string(), " holds ", per_record);
    v.copy(v.begin(r), count, out, offset);
  }
  return Status::OK();
}

// A dense feature list: [B, most steps, *shape], padded with zeros, and each record's number of steps
// ([B]; a scalar for a scalar input). `v` holds a group per step; it is regrouped per record.
Status write_dense_feature_list(KernelContext& ctx, FeatureValues& v, const std::vector<int64_t>& step_ends,
                                const std::string& key, const Shape& shape, bool missing_assumed_empty,
                                bool batched, int values, int lengths) {
  const TensorImpl& names = ctx.input(1);
  const int64_t records = static_cast<int64_t>(step_ends.size());
  int64_t per_step = 1;
  for (int i = 0; i < shape.rank(); ++i)
    if (__builtin_mul_overflow(per_step, shape.dim(i), &per_step))
      return invalid_argument(ctx.op->name, ": dense shape ", shape.to_string(), " of feature list '", key,
                              "' has more than 2^63 elements");
  std::vector<int64_t> record_ends, steps;
  for (int64_t r = 0; r < records; ++r) {
    if (!v.present[r] && !missing_assumed_empty)
      return invalid_argument(ctx.op->name, ": feature list '", key,
                              "' is required but could not be found in ", record_name(names, r));
    const int64_t first = r == 0 ? 0 : step_ends[r - 1];
    for (int64_t g = first; g < step_ends[r]; ++g)
      if (v.count(g) != per_step)
        return invalid_argument(ctx.op->name, ": feature list '", key, "' of ", record_name(names, r),
                                ", step ", g - first, ", has ", v.count(g), " value(s), but its shape ",
                                shape.to_string(), " holds ", per_step);
    steps.push_back(step_ends[r] - first);
    record_ends.push_back(step_ends[r] == 0 ? 0 : v.ends[step_ends[r] - 1]);
  }
  v.ends = std::move(record_ends);
  std::vector<int64_t> dims = shape.dim_vector();
  dims.insert(dims.begin(), -1);
  EMBER_RETURN_IF_ERROR(write_dense(ctx, v, key, Shape(dims), nullptr, batched, values, &steps));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, lengths, DType::kInt64,
                                        batched ? Shape({records}) : Shape(std::vector<int64_t>{})));
  std::copy(steps.begin(), steps.end(), ctx.output(lengths).mutable_data<int64_t>());
  return Status::OK();
}

// A RaggedTensor's values, in order.
Status write_values(KernelContext& ctx, const FeatureValues& v, int output) {
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, output, v.dtype, Shape({v.size()})));
  v.copy(0, v.size(), ctx.output(output), 0);
  return Status::OK();
}

// Row splits [0, *ends] of `type`; without `ends` (a scalar input, with no rows to split), zeros of
// `no_rows`, what TensorFlow's kernel outputs there.
Status write_splits(KernelContext& ctx, DType type, const std::vector<int64_t>* ends, const Shape& no_rows,
                    int output) {
  const int64_t num_splits =
      ends == nullptr ? no_rows.num_elements() : static_cast<int64_t>(ends->size()) + 1;
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, output, type, ends == nullptr ? no_rows : Shape({num_splits})));
  for (int64_t i = 0; i < num_splits; ++i) {
    const int64_t split = ends == nullptr || i == 0 ? 0 : (*ends)[i - 1];
    if (type == DType::kInt32)
      ctx.output(output).mutable_data<int32_t>()[i] = static_cast<int32_t>(split);
    else
      ctx.output(output).mutable_data<int64_t>()[i] = split;
  }
  return Status::OK();
}

// The features of an Example, or the context of a SequenceExample: their inputs and attributes.
struct FeatureSpecs {
  const char* kind;                                          // in errors: "feature", "context feature"
  int sparse_keys, dense_keys, ragged_keys, dense_defaults;  // inputs
  const std::vector<DType>& sparse_types;
  const std::vector<DType>& dense_types;
  const std::vector<Shape>& dense_shapes;
  const std::vector<DType>& ragged_value_types;
  const std::vector<DType>& ragged_split_types;
  Shape no_rows;  // the row splits of a scalar input
};

// Parses the sparse, dense and ragged `specs` of each record into the outputs from `first_output` on, in
// ParseExampleV2's order; returns the output after them.
StatusOr<int> parse_features(KernelContext& ctx, const std::vector<const proto::Features*>& records,
                             const FeatureSpecs& specs, int first_output) {
  std::vector<std::string> sparse_keys, dense_keys, ragged_keys;
  EMBER_RETURN_IF_ERROR(keys_of(ctx, specs.sparse_keys, specs.sparse_types.size(), sparse_keys));
  EMBER_RETURN_IF_ERROR(keys_of(ctx, specs.dense_keys, specs.dense_types.size(), dense_keys));
  EMBER_RETURN_IF_ERROR(keys_of(ctx, specs.ragged_keys, specs.ragged_value_types.size(), ragged_keys));
  const bool batched = ctx.input(0).rank() == 1;
  const int num_sparse = static_cast<int>(sparse_keys.size()),
            num_dense = static_cast<int>(dense_keys.size());
  const int num_ragged = static_cast<int>(ragged_keys.size());
  for (int i = 0; i < num_sparse; ++i) {
    FeatureValues v;
    EMBER_RETURN_IF_ERROR(read_feature(ctx, records, specs.kind, sparse_keys[i], specs.sparse_types[i], v));
    const int out = first_output + i;
    EMBER_RETURN_IF_ERROR(
        write_sparse(ctx, v, nullptr, batched, out, out + num_sparse, out + 2 * num_sparse));
  }
  const int dense_base = first_output + 3 * num_sparse;
  for (int i = 0; i < num_dense; ++i) {
    FeatureValues v;
    EMBER_RETURN_IF_ERROR(read_feature(ctx, records, specs.kind, dense_keys[i], specs.dense_types[i], v));
    EMBER_RETURN_IF_ERROR(write_dense(ctx, v, dense_keys[i], specs.dense_shapes[i],
                                      &ctx.input(specs.dense_defaults + i), batched, dense_base + i));
  }
  const int ragged_base = dense_base + num_dense;
  for (int i = 0; i < num_ragged; ++i) {
    FeatureValues v;
    EMBER_RETURN_IF_ERROR(
        read_feature(ctx, records, specs.kind, ragged_keys[i], specs.ragged_value_types[i], v));
    EMBER_RETURN_IF_ERROR(write_values(ctx, v, ragged_base + i));
    EMBER_RETURN_IF_ERROR(write_splits(ctx, specs.ragged_split_types[i], batched ? &v.ends : nullptr,
                                       specs.no_rows, ragged_base + num_ragged + i));
  }
  return ragged_base + 2 * num_ragged;
}

Status parse_example_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_attrs(ctx, ctx.inputs.size()));
  std::vector<proto::Example> examples;
  EMBER_RETURN_IF_ERROR(parse_records(ctx, "Example", examples));
  std::vector<const proto::Features*> records;
  for (const proto::Example& example : examples) records.push_back(&example.features());
  const FeatureSpecs specs{"feature",
                           kSparseKeys,
                           kDenseKeys,
                           kRaggedKeys,
                           kDenseDefaults,
                           ctx.attr_dtypes(kSparseTypes),
                           ctx.attr_dtypes(kTdense),
                           ctx.attr_shapes(kDenseShapes),
                           ctx.attr_dtypes(kRaggedValueTypes),
                           ctx.attr_dtypes(kRaggedSplitTypes),
                           Shape({0})};
  return parse_features(ctx, records, specs, 0).status();
}

// ParseSequenceExampleV2: the context's features as ParseExampleV2's, then the feature lists'.
enum SeqInput {
  kSeqSerialized,
  kDebugName,
  kContextSparseKeys,
  kContextDenseKeys,
  kContextRaggedKeys,
  kFeatureListSparseKeys,
  kFeatureListDenseKeys,
  kFeatureListRaggedKeys,
  kFeatureListDenseMissingAssumedEmpty,
  kContextDenseDefaults
};
enum SeqAttr {
  kNcontextSparse,
  kTcontextDense,
  kContextSparseTypes,
  kContextRaggedValueTypes,
  kContextRaggedSplitTypes,
  kContextDenseShapes,
  kNfeatureListSparse,
  kNfeatureListDense,
  kFeatureListDenseTypes,
  kFeatureListSparseTypes,
  kFeatureListRaggedValueTypes,
  kFeatureListRaggedSplitTypes,
  kFeatureListDenseShapes
};

Status check_same_length(size_t length, size_t expected, const char* what, const char* of) {
  if (length != expected)
    return invalid_argument("ParseSequenceExampleV2: ", what, " (", length, ") must be as long as ", of, " (",
                            expected, ")");
  return Status::OK();
}

Status check_sequence_attrs(const AttrReader& a, size_t num_inputs) {
  const auto count = [&](int attr) { return static_cast<size_t>(std::max<int64_t>(0, a.attr_int(attr))); };
  EMBER_RETURN_IF_ERROR(check_same_length(a.attr_dtypes(kContextSparseTypes).size(), count(kNcontextSparse),
                                          "context_sparse_types", "Ncontext_sparse"));
  EMBER_RETURN_IF_ERROR(check_same_length(a.attr_dtypes(kTcontextDense).size(),
                                          num_inputs - kContextDenseDefaults, "Tcontext_dense",
                                          "context_dense_defaults"));
  EMBER_RETURN_IF_ERROR(check_same_length(a.attr_shapes(kContextDenseShapes).size(),
                                          num_inputs - kContextDenseDefaults, "context_dense_shapes",
                                          "context_dense_defaults"));
  EMBER_RETURN_IF_ERROR(check_same_length(a.attr_dtypes(kContextRaggedSplitTypes).size(),
                                          a.attr_dtypes(kContextRaggedValueTypes).size(),
                                          "context_ragged_split_types", "context_ragged_value_types"));
  EMBER_RETURN_IF_ERROR(check_same_length(a.attr_dtypes(kFeatureListSparseTypes).size(),
                                          count(kNfeatureListSparse), "feature_list_sparse_types",
                                          "Nfeature_list_sparse"));
  EMBER_RETURN_IF_ERROR(check_same_length(a.attr_dtypes(kFeatureListDenseTypes).size(),
                                          count(kNfeatureListDense), "feature_list_dense_types",
                                          "Nfeature_list_dense"));
  EMBER_RETURN_IF_ERROR(check_same_length(a.attr_shapes(kFeatureListDenseShapes).size(),
                                          count(kNfeatureListDense), "feature_list_dense_shapes",
                                          "Nfeature_list_dense"));
  EMBER_RETURN_IF_ERROR(check_same_length(
      a.attr_dtypes(kFeatureListRaggedSplitTypes).size(), a.attr_dtypes(kFeatureListRaggedValueTypes).size(),
      "feature_list_ragged_split_types", "feature_list_ragged_value_types"));
  const char* op = "ParseSequenceExampleV2";
  for (auto [attr, name] : {std::pair{kTcontextDense, "Tcontext_dense"},
                            {kContextSparseTypes, "context_sparse_types"},
                            {kContextRaggedValueTypes, "context_ragged_value_types"},
                            {kFeatureListDenseTypes, "feature_list_dense_types"},
                            {kFeatureListSparseTypes, "feature_list_sparse_types"},
                            {kFeatureListRaggedValueTypes, "feature_list_ragged_value_types"}})
    EMBER_RETURN_IF_ERROR(check_types(op, a.attr_dtypes(attr), kExampleTypes, name, kExampleTypeNames));
  for (auto [attr, name] : {std::pair{kContextRaggedSplitTypes, "context_ragged_split_types"},
                            {kFeatureListRaggedSplitTypes, "feature_list_ragged_split_types"}})
    EMBER_RETURN_IF_ERROR(check_types(op, a.attr_dtypes(attr), kSplitTypes, name, "int32 or int64"));
  EMBER_RETURN_IF_ERROR(
      check_dense_shapes(op, "context_dense_shapes", a.attr_shapes(kContextDenseShapes), false));
  return check_dense_shapes(op, "feature_list_dense_shapes", a.attr_shapes(kFeatureListDenseShapes), false);
}

Status parse_sequence_example_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_sequence_attrs(ctx, ctx.inputs.size()));
  const Shape& in = ctx.inputs[kSeqSerialized].shape;
  EMBER_RETURN_IF_ERROR(check_serialized(ctx.op->name, in));
  EMBER_RETURN_IF_ERROR(
      check_keys(ctx, {kContextSparseKeys, kContextDenseKeys, kContextRaggedKeys, kFeatureListSparseKeys,
                       kFeatureListDenseKeys, kFeatureListRaggedKeys, kFeatureListDenseMissingAssumedEmpty}));
  const Batch batch(in);
  const Shape scalar(std::vector<int64_t>{});
  push_feature_shapes(ctx, batch, ctx.attr_dtypes(kContextSparseTypes), ctx.attr_dtypes(kTcontextDense),
                      ctx.attr_shapes(kContextDenseShapes), ctx.attr_dtypes(kContextRaggedValueTypes),
                      ctx.attr_dtypes(kContextRaggedSplitTypes), scalar);
  const std::vector<DType>& sparse_types = ctx.attr_dtypes(kFeatureListSparseTypes);
  const int64_t index_rank = batch.sparse_rank(2);
  for (size_t i = 0; i < sparse_types.size(); ++i)
    ctx.outputs.push_back({DType::kInt64, Shape({-1, index_rank})});
  for (DType d : sparse_types) ctx.outputs.push_back({d, Shape({-1})});
  for (size_t i = 0; i < sparse_types.size(); ++i)
    ctx.outputs.push_back({DType::kInt64, Shape({index_rank})});
  const std::vector<DType>& dense_types = ctx.attr_dtypes(kFeatureListDenseTypes);
  for (size_t i = 0; i < dense_types.size(); ++i) {
    std::vector<int64_t> dims = ctx.attr_shapes(kFeatureListDenseShapes)[i].dim_vector();
    dims.insert(dims.begin(), -1);
    ctx.outputs.push_back({dense_types[i], batch.of_records(dims)});
  }
  for (size_t i = 0; i < dense_types.size(); ++i)
    ctx.outputs.push_back({DType::kInt64, batch.of_records({})});
  const std::vector<DType>& ragged_types = ctx.attr_dtypes(kFeatureListRaggedValueTypes);
  const std::vector<DType>& split_types = ctx.attr_dtypes(kFeatureListRaggedSplitTypes);
  for (DType d : ragged_types) ctx.outputs.push_back({d, Shape({-1})});
  for (DType d : split_types) ctx.outputs.push_back({d, batch.splits(scalar)});
  for (DType d : split_types) ctx.outputs.push_back({d, Shape({-1})});
  return Status::OK();
}

Status parse_sequence_example_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_sequence_attrs(ctx, ctx.inputs.size()));
  std::vector<proto::SequenceExample> examples;
  EMBER_RETURN_IF_ERROR(parse_records(ctx, "SequenceExample", examples));
  std::vector<const proto::Features*> contexts;
  for (const proto::SequenceExample& example : examples) contexts.push_back(&example.context());
  const Shape scalar(std::vector<int64_t>{});
  const FeatureSpecs context{"context feature",
                             kContextSparseKeys,
                             kContextDenseKeys,
                             kContextRaggedKeys,
                             kContextDenseDefaults,
                             ctx.attr_dtypes(kContextSparseTypes),
                             ctx.attr_dtypes(kTcontextDense),
                             ctx.attr_shapes(kContextDenseShapes),
                             ctx.attr_dtypes(kContextRaggedValueTypes),
                             ctx.attr_dtypes(kContextRaggedSplitTypes),
                             scalar};
  StatusOr<int> after_context = parse_features(ctx, contexts, context, 0);
  if (!after_context.ok()) return after_context.status();
  const int sparse_base = after_context.value();

  const bool batched = ctx.input(kSeqSerialized).rank() == 1;
  const std::vector<DType>& sparse_types = ctx.attr_dtypes(kFeatureListSparseTypes);
  const std::vector<DType>& dense_types = ctx.attr_dtypes(kFeatureListDenseTypes);
  const std::vector<DType>& ragged_types = ctx.attr_dtypes(kFeatureListRaggedValueTypes);
  std::vector<std::string> sparse_keys, dense_keys, ragged_keys;
  EMBER_RETURN_IF_ERROR(keys_of(ctx, kFeatureListSparseKeys, sparse_types.size(), sparse_keys));
  EMBER_RETURN_IF_ERROR(keys_of(ctx, kFeatureListDenseKeys, dense_types.size(), dense_keys));
  EMBER_RETURN_IF_ERROR(keys_of(ctx, kFeatureListRaggedKeys, ragged_types.size(), ragged_keys));
  const TensorImpl& missing_assumed_empty = ctx.input(kFeatureListDenseMissingAssumedEmpty);
  if (missing_assumed_empty.rank() > 1 ||
      static_cast<size_t>(missing_assumed_empty.num_elements()) != dense_keys.size())
    return invalid_argument(
        "ParseSequenceExampleV2: feature_list_dense_missing_assumed_empty must be a vector "
        "of ",
        dense_keys.size(), " bool(s), one per dense feature list, got shape ",
        missing_assumed_empty.shape().to_string());

  const int num_sparse = static_cast<int>(sparse_keys.size()),
            num_dense = static_cast<int>(dense_keys.size());
  const int num_ragged = static_cast<int>(ragged_keys.size());
  for (int i = 0; i < num_sparse; ++i) {
    FeatureValues v;
    std::vector<int64_t> step_ends;
    EMBER_RETURN_IF_ERROR(read_feature_list(ctx, examples, sparse_keys[i], sparse_types[i], v, step_ends));
    const int out = sparse_base + i;
    EMBER_RETURN_IF_ERROR(
        write_sparse(ctx, v, &step_ends, batched, out, out + num_sparse, out + 2 * num_sparse));
  }
  const int dense_base = sparse_base + 3 * num_sparse;
  for (int i = 0; i < num_dense; ++i) {
    FeatureValues v;
    std::vector<int64_t> step_ends;
    EMBER_RETURN_IF_ERROR(read_feature_list(ctx, examples, dense_keys[i], dense_types[i], v, step_ends));
    EMBER_RETURN_IF_ERROR(write_dense_feature_list(
        ctx, v, step_ends, dense_keys[i], ctx.attr_shapes(kFeatureListDenseShapes)[i],
        missing_assumed_empty.data<bool>()[i], batched, dense_base + i, dense_base + num_dense + i));
  }
  const int ragged_base = dense_base + 2 * num_dense;
  for (int i = 0; i < num_ragged; ++i) {
    FeatureValues v;
    std::vector<int64_t> step_ends;
    EMBER_RETURN_IF_ERROR(read_feature_list(ctx, examples, ragged_keys[i], ragged_types[i], v, step_ends));
    const DType split_type = ctx.attr_dtypes(kFeatureListRaggedSplitTypes)[i];
    EMBER_RETURN_IF_ERROR(write_values(ctx, v, ragged_base + i));
    EMBER_RETURN_IF_ERROR(
        write_splits(ctx, split_type, batched ? &step_ends : nullptr, scalar, ragged_base + num_ragged + i));
    EMBER_RETURN_IF_ERROR(write_splits(ctx, split_type, &v.ends, scalar, ragged_base + 2 * num_ragged + i));
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

  OpBuilder("ParseSequenceExampleV2")
      .doc(
          "Context features (VarLen, dense, ragged) and feature lists (VarLen, dense with their lengths, "
          "ragged) of serialized tf.train.SequenceExample records. "
          "ParseSequenceExampleV2([ex], [], [], [], [], [], [\"x\"], [], [True], [], Nfeature_list_dense=1, "
          "feature_list_dense_types=[float32], feature_list_dense_shapes=[[]]) -> [[1., 2.]], [2]")
      .input_fixed("serialized", dtype_bit(DType::kString))
      .input_fixed("debug_name", dtype_bit(DType::kString))
      .input_fixed("context_sparse_keys", dtype_bit(DType::kString))
      .input_fixed("context_dense_keys", dtype_bit(DType::kString))
      .input_fixed("context_ragged_keys", dtype_bit(DType::kString))
      .input_fixed("feature_list_sparse_keys", dtype_bit(DType::kString))
      .input_fixed("feature_list_dense_keys", dtype_bit(DType::kString))
      .input_fixed("feature_list_ragged_keys", dtype_bit(DType::kString))
      .input_fixed("feature_list_dense_missing_assumed_empty", dtype_bit(DType::kBool))
      .input_fixed("context_dense_defaults", kExampleTypes)
      .output("context_sparse_indices")
      .output("context_sparse_values")
      .output("context_sparse_shapes")
      .output("context_dense_values")
      .output("context_ragged_values")
      .output("context_ragged_row_splits")
      .output("feature_list_sparse_indices")
      .output("feature_list_sparse_values")
      .output("feature_list_sparse_shapes")
      .output("feature_list_dense_values")
      .output("feature_list_dense_lengths")
      .output("feature_list_ragged_values")
      .output("feature_list_ragged_outer_splits")
      .output("feature_list_ragged_inner_splits")
      .type_var(dtype_bit(DType::kString))
      .attr("Ncontext_sparse", AttrType::kInt, int64_t{0})
      .attr("Tcontext_dense", AttrType::kDTypes, std::vector<DType>{})
      .attr("context_sparse_types", AttrType::kDTypes, std::vector<DType>{})
      .attr("context_ragged_value_types", AttrType::kDTypes, std::vector<DType>{})
      .attr("context_ragged_split_types", AttrType::kDTypes, std::vector<DType>{})
      .attr("context_dense_shapes", AttrType::kShapes, std::vector<Shape>{})
      .attr("Nfeature_list_sparse", AttrType::kInt, int64_t{0})
      .attr("Nfeature_list_dense", AttrType::kInt, int64_t{0})
      .attr("feature_list_dense_types", AttrType::kDTypes, std::vector<DType>{})
      .attr("feature_list_sparse_types", AttrType::kDTypes, std::vector<DType>{})
      .attr("feature_list_ragged_value_types", AttrType::kDTypes, std::vector<DType>{})
      .attr("feature_list_ragged_split_types", AttrType::kDTypes, std::vector<DType>{})
      .attr("feature_list_dense_shapes", AttrType::kShapes, std::vector<Shape>{})
      .flags(kVariadicInput | kVariadicMayBeEmpty | kNotDifferentiable | kKernelAllocates)
      .shape(&parse_sequence_example_shape)
      .kernel(DType::kString, &parse_sequence_example_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
