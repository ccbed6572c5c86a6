// SparseSegmentSum/Mean/SqrtN and their WithNumSegments forms (tf.sparse.segment_*): the rows
// data[indices[i]] reduced by sorted segment_ids[i], as TensorFlow's ops. tf.nn.embedding_lookup_sparse is
// composed of them in Python. Registered from array_index.cc.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ember/kernels/array.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

enum class Combine { kSum, kMean, kSqrtN };

// TensorFlow's kernels also take 16-bit floats (and more integer types for the sums); ember's take these.
constexpr DTypeSet kMeanTypes = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);
constexpr DTypeSet kSumTypes = kMeanTypes | dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64);

// data [d0, ...], indices [n], segment_ids [n] (, num_segments a scalar) -> [segments, ...]: `segments` is
// num_segments, or the last segment id + 1 (known only when the kernel runs).
Status sparse_segment_shape(InferContext& ctx) {
  const std::string& op = ctx.op->name;
  const Shape &data = ctx.inputs[0].shape, &indices = ctx.inputs[1].shape, &ids = ctx.inputs[2].shape;
  if (indices.rank_known() && indices.rank() != 1)
    return invalid_argument(op, ": indices should be a vector, got shape ", indices.to_string());
  if (ids.rank_known() && ids.rank() != 1)
    return invalid_argument(op, ": segment_ids should be a vector, got shape ", ids.to_string());
  if (indices.rank_known() && ids.rank_known() && indices.dim(0) >= 0 && ids.dim(0) >= 0 &&
      indices.dim(0) != ids.dim(0))
    return invalid_argument(op, ": segment_ids and indices should have the same size, got ", ids.dim(0),
                            " and ", indices.dim(0));
  if (data.rank_known() && data.rank() == 0)
    return invalid_argument(op, ": data must be at least 1-D, got a scalar");
  int64_t num = kUnknownDim;
  if (ctx.inputs.size() == 4) {
    const Shape& num_spec = ctx.inputs[3].shape;
    if (num_spec.rank_known() && num_spec.rank() != 0)
      return invalid_argument(op, ": num_segments should be a scalar, got shape ", num_spec.to_string());
    const PartialValue value = ctx.value_of(3);
    if (value.fully_known()) num = value.values[0];
    if (value.fully_known() && num < 0) return invalid_argument(op, ": num_segments must be >= 0, got ", num);
  }
  Shape out = Shape::unknown_rank();
  if (data.rank_known()) {
    out = data;
    out.set_dim(0, num);
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

template <Combine kCombine>
Status sparse_segment_kernel(KernelContext& ctx) {
  const std::string& op = ctx.op->name;
  const TensorImpl &data = ctx.input(0), &indices = ctx.input(1), &ids = ctx.input(2);
  if (data.rank() == 0 || indices.rank() != 1 || ids.rank() != 1 ||
      indices.num_elements() != ids.num_elements())
    return invalid_argument(
        op, ": expected data [d0, ...] and vectors indices and segment_ids of one size, got ",
        data.shape().to_string(), ", ", indices.shape().to_string(), " and ", ids.shape().to_string());
  const int64_t n = ids.num_elements(), rows = data.shape().dim(0);
  const bool with_num = ctx.inputs.size() == 4;
  int64_t num = kUnknownDim;
  if (with_num) {
    if (ctx.input(3).num_elements() != 1)
      return invalid_argument(op, ": num_segments should be a scalar, got shape ",
                              ctx.input(3).shape().to_string());
    num = kernels::load_index(ctx.input(3).raw_data(), ctx.input(3).dtype(), 0);
    if (num < 0) return invalid_argument(op, ": num_segments must be >= 0, got ", num);
  }
  std::vector<int64_t> segment(n), row(n);
  for (int64_t i = 0; i < n; ++i) {
    segment[i] = kernels::load_index(ids.raw_data(), ids.dtype(), i);
    row[i] = kernels::load_index(indices.raw_data(), indices.dtype(), i);
    if (segment[i] < 0 || (with_num && segment[i] >= num))
      return invalid_argument(op, ": segment_ids[", i, "] = ", segment[i], " is out of range [0, ",
                              with_num ? num : segment[i] + 1, ")");
    if (i > 0 && segment[i] < segment[i - 1])
      return invalid_argument(op, ": segment ids are not increasing: segment_ids[", i, "] = ", segment[i],
                              " follows ", segment[i - 1]);
    if (row[i] < 0 || row[i] >= rows)
      return invalid_argument(op, ": indices[", i, "] = ", row[i], " is not in [0, ", rows, ")");
  }
  if (!with_num) num = n == 0 ? 0 : segment[n - 1] + 1;
  Shape shape = data.shape();
  shape.set_dim(0, num);
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, data.dtype(), shape));
  TensorImpl& out = ctx.output(0);
  const int64_t inner = num == 0 ? 0 : out.num_elements() / num;
  visit_dtype<kSumTypes>(data.dtype(), [&]<typename T>() {
    T* o = out.mutable_data<T>();
    std::memset(static_cast<void*>(o), 0, sizeof(T) * out.num_elements());
    const T* d = data.data<T>();
    for (int64_t start = 0, end = 0; start < n; start = end) {
      T* dst = o + segment[start] * inner;
      for (end = start; end < n && segment[end] == segment[start]; ++end) {
        const T* src = d + row[end] * inner;
        for (int64_t k = 0; k < inner; ++k) dst[k] += src[k];
      }
      if constexpr (kCombine != Combine::kSum) {
        const double count = static_cast<double>(end - start);
        const T scale = static_cast<T>(kCombine == Combine::kMean ? count : std::sqrt(count));
        for (int64_t k = 0; k < inner; ++k) dst[k] /= scale;
      }
    }
  });
  return Status::OK();
}

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

// TensorFlow's dense rule (SparseSegment*Grad): d data[indices[i]] += dy[segment_ids[i]] / w, w being 1, the
// segment's row count or its square root. With sparse_gradient TensorFlow returns the same values as
// IndexedSlices; ember's gradient is dense either way.
template <Combine kCombine>
void sparse_segment_grad(GradContext& c) {
  const GradTensor data = c.input(0), indices = c.input(1), ids = c.input(2), out = c.output(0),
                   dy = c.grad();
  if (!data.shape().rank_known())
    check_ok(make_error(Code::kUnimplemented, c.op->name, ": the gradient needs the rank of data"));
  GradTensor rows = emit1("GatherV2", {dy, ids, scalar(0, DType::kInt32)});
  if constexpr (kCombine != Combine::kSum) {
    const GradTensor ones = ones_like(cast(ids, dy.dtype()));
    GradTensor count = emit1("UnsortedSegmentSum", {ones, ids, dims_product(out, 0, 1)});
    if (kCombine == Combine::kSqrtN) count = sqrt(count);
    GradTensor scale = emit1("GatherV2", {count, ids, scalar(0, DType::kInt32)});
    for (int d = 1; d < data.rank(); ++d) scale = expand_dims(scale, -1);
    rows = rows / scale;
  }
  c.set(0, emit1("UnsortedSegmentSum", {rows, indices, dims_product(data, 0, 1)}));
}

}  // namespace

void register_sparse_segment_ops(OpRegistry& r) {
  struct Row {
    const char* name;
    KernelFn kernel;
    GradFn grad;
    DTypeSet types;
    bool with_num;
    const char* doc;
  };
  const Row rows[] = {
      {"SparseSegmentSum", &sparse_segment_kernel<Combine::kSum>, &sparse_segment_grad<Combine::kSum>,
       kSumTypes, false,
       "Sums of data[indices] per sorted segment id. sparse_segment_sum([[1.], [2.]], [1, 1], [0, 0]) == "
       "[[4.]]"},
      {"SparseSegmentSumWithNumSegments", &sparse_segment_kernel<Combine::kSum>,
       &sparse_segment_grad<Combine::kSum>, kSumTypes, true,
       "SparseSegmentSum into num_segments rows. sparse_segment_sum([[1.]], [0], [1], 3) == [[0.], [1.], "
       "[0.]]"},
      {"SparseSegmentMean", &sparse_segment_kernel<Combine::kMean>, &sparse_segment_grad<Combine::kMean>,
       kMeanTypes, false,
       "Means of data[indices] per sorted segment id. sparse_segment_mean([[1.], [3.]], [0, 1], [0, 0]) == "
       "[[2.]]"},
      {"SparseSegmentMeanWithNumSegments", &sparse_segment_kernel<Combine::kMean>,
       &sparse_segment_grad<Combine::kMean>, kMeanTypes, true,
       "SparseSegmentMean into num_segments rows (an empty one: 0). sparse_segment_mean([[2.]], [0], [0], 2) "
       "== [[2.], [0.]]"},
      {"SparseSegmentSqrtN", &sparse_segment_kernel<Combine::kSqrtN>, &sparse_segment_grad<Combine::kSqrtN>,
       kMeanTypes, false,
       "Sums of data[indices] per sorted segment id over the square root of its size. "
       "sparse_segment_sqrt_n([[3.]], [0, 0], [0, 0]) == [[6. / sqrt(2.)]]"},
      {"SparseSegmentSqrtNWithNumSegments", &sparse_segment_kernel<Combine::kSqrtN>,
       &sparse_segment_grad<Combine::kSqrtN>, kMeanTypes, true,
       "SparseSegmentSqrtN into num_segments rows (an empty one: 0). sparse_segment_sqrt_n([[2.]], [0], [0], "
       "2) == [[2.], [0.]]"},
  };
  for (const Row& row : rows) {
    OpBuilder b(row.name);
    b.doc(row.doc).input("data").input_fixed("indices", kIndexTypes).input_fixed("segment_ids", kIndexTypes);
    if (row.with_num) b.input_shape_like("num_segments");
    b.output("output")
        .type_var(row.types)
        .attr("sparse_gradient", AttrType::kBool, false)
        .flags(kKernelAllocates)
        .shape(&sparse_segment_shape)
        .kernel(row.types, row.kernel)
        .grad(row.grad)
        .batching(BatchingRule::kFallback)
        .done(r);
  }
}

}  // namespace ember
