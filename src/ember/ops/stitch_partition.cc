// DynamicStitch / ParallelDynamicStitch and DynamicPartition (tf.dynamic_stitch, tf.dynamic_partition):
// slices of tensors interleaved by index lists, and a tensor split by a partition id per slice.
// TensorFlow's gradients of reductions over shapes known only at run time build their output shape with
// DynamicStitch, so its training graphs need these as ops.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

using namespace gradient;  // NOLINT(google-build-using-namespace): gradient rules read as math

// Each partition is an output; as many as that is a mistake, not a program.
constexpr int64_t kMaxPartitions = int64_t{1} << 20;

// ---- DynamicStitch(indices: N * int32, data: N * T) -> merged[indices[m][i...], ...] = data[m][i..., ...]

Status stitch_shape(InferContext& ctx) {
  const size_t n = ctx.inputs.size() / 2;
  Shape rest;  // data[m].shape[indices[m].rank:], the same for every m
  bool rest_known = false;
  for (size_t m = 0; m < n; ++m) {
    const Shape& index = ctx.inputs[m].shape;
    const Shape& data = ctx.inputs[n + m].shape;
    if (!index.rank_known() || !data.rank_known()) continue;
    if (data.rank() < index.rank())
      return invalid_argument(ctx.op->name, ": data[", m, "] (shape ", data.to_string(),
                              ") must start with the shape of indices[", m, "] (", index.to_string(), ")");
    Shape r;
    if (1 + data.rank() - index.rank() > kMaxRank)  // the output is [rows] + the slices' shape
      return invalid_argument(ctx.op->name, ": data[", m, "] (shape ", data.to_string(),
                              ") indexed by indices[", m, "] (shape ", index.to_string(),
                              ") makes an output of rank ", 1 + data.rank() - index.rank(),
                              ", more than ember's ", kMaxRank, " dims");
    for (int d = 0; d < data.rank(); ++d) {
      if (d < index.rank()) {
        if (index.dim(d) >= 0 && data.dim(d) >= 0 && index.dim(d) != data.dim(d))
          return invalid_argument(ctx.op->name, ": data[", m, "] (shape ", data.to_string(),
                                  ") must start with the shape of indices[", m, "] (", index.to_string(),
                                  ")");
        continue;
      }
      r.push_back(data.dim(d));
    }
    if (rest_known && !r.is_compatible_with(rest))
      return invalid_argument(ctx.op->name, ": the slices of data[", m, "] have shape ", r.to_string(),
                              " but earlier ones have ", rest.to_string());
    if (!rest_known) rest = r, rest_known = true;
  }
  int64_t rows = kUnknownDim;  // max index + 1 where every index is a known value
  bool all_known = true;
  int64_t max_index = -1;
  for (size_t m = 0; m < n && all_known; ++m) {
    const PartialValue v = ctx.value_of(static_cast<int>(m));
    if (!v.fully_known()) {
      all_known = false;
      break;
    }
    for (int64_t i : v.values) max_index = std::max(max_index, i);
  }
  if (all_known) rows = max_index + 1;
  Shape out({rows});
  if (!rest_known) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[n].dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  for (int d = 0; d < rest.rank(); ++d) out.push_back(rest.dim(d));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[n].dtype, out});
  return Status::OK();
}

Status stitch_kernel(KernelContext& ctx) {
  const size_t n = ctx.inputs.size() / 2;
  const TensorImpl& data0 = ctx.input(static_cast<int>(n));
  const TensorImpl& index0 = ctx.input(0);
  if (data0.rank() < index0.rank())
    return invalid_argument(ctx.op->name, ": data[0] (shape ", data0.shape().to_string(),
                            ") must start with the shape of indices[0] (", index0.shape().to_string(), ")");
  Shape rest;
  for (int d = index0.rank(); d < data0.rank(); ++d) rest.push_back(data0.shape().dim(d));
  const int64_t slice = rest.num_elements();
  int64_t max_index = -1;
  for (size_t m = 0; m < n; ++m) {
    const TensorImpl& index = ctx.input(static_cast<int>(m));
    const TensorImpl& data = ctx.input(static_cast<int>(n + m));
    bool ok = data.rank() == index.rank() + rest.rank();
    for (int d = 0; ok && d < data.rank(); ++d)
      ok = data.shape().dim(d) == (d < index.rank() ? index.shape().dim(d) : rest.dim(d - index.rank()));
    if (!ok)
      return invalid_argument(ctx.op->name, ": data[", m, "] must have shape indices[", m, "].shape + ",
                              rest.to_string(), " = ", index.shape().to_string(), " + ", rest.to_string(),
                              ", got ", data.shape().to_string());
    const int32_t* ids = index.data<int32_t>();
    for (int64_t i = 0; i < index.num_elements(); ++i) {
      if (ids[i] < 0)
        return invalid_argument(ctx.op->name, ": indices[", m, "] holds ", ids[i], ", which is negative");
      max_index = std::max<int64_t>(max_index, ids[i]);
    }
  }
  Shape out({max_index + 1});
  for (int d = 0; d < rest.rank(); ++d) out.push_back(rest.dim(d));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, data0.dtype(), out));
  TensorImpl& merged = ctx.output(0);
  const size_t bytes = static_cast<size_t>(slice) * dtype_size(data0.dtype());
  char* dst = static_cast<char*>(merged.mutable_raw_data());
  std::memset(dst, 0, merged.nbytes());  // rows no index names are zeros
  for (size_t m = 0; m < n; ++m) {       // in order, so a later list's slice wins, as TensorFlow's
    const TensorImpl& index = ctx.input(static_cast<int>(m));
    const char* src = static_cast<const char*>(ctx.input(static_cast<int>(n + m)).raw_data());
    const int32_t* ids = index.data<int32_t>();
    for (int64_t i = 0; i < index.num_elements(); ++i)
      if (bytes > 0)
        std::memcpy(dst + static_cast<size_t>(ids[i]) * bytes, src + static_cast<size_t>(i) * bytes, bytes);
  }
  return Status::OK();
}

// Each data[m] gets the merged gradient's rows its indices named (as TensorFlow's rule: a slice that a later
// one overwrote still gets its row).
void stitch_grad(GradContext& c) {
  const int n = c.num_inputs() / 2;
  for (int m = 0; m < n; ++m)
    c.set(n + m,
          emit1("GatherV2", {c.grad(), c.input(m), scalar(0, DType::kInt32)}, {AttrValue(int64_t{0})}));
}

// ---- DynamicPartition(data, partitions) -> num_partitions outputs: data[partitions == i]

Status partition_shape(InferContext& ctx) {
  const int64_t num = ctx.attr_int(0);
  if (num < 1 || num > kMaxPartitions)
    return invalid_argument("DynamicPartition: num_partitions must be in [1, ", kMaxPartitions, "], got ",
                            num);
  const Shape& data = ctx.inputs[0].shape;
  const Shape& partitions = ctx.inputs[1].shape;
  Shape piece = Shape::unknown_rank();
  if (data.rank_known() && partitions.rank_known()) {
    bool ok = data.rank() >= partitions.rank();
    for (int d = 0; ok && d < partitions.rank(); ++d)
      ok = data.dim(d) < 0 || partitions.dim(d) < 0 || data.dim(d) == partitions.dim(d);
    if (!ok)
      return invalid_argument("DynamicPartition: data (shape ", data.to_string(),
                              ") must start with the shape of partitions (", partitions.to_string(), ")");
    if (1 + data.rank() - partitions.rank() > kMaxRank)
      return invalid_argument("DynamicPartition: data (shape ", data.to_string(),
                              ") split by partitions (shape ", partitions.to_string(),
                              ") makes pieces of rank ", 1 + data.rank() - partitions.rank(),
                              ", more than ember's ", kMaxRank, " dims");
    piece = Shape({kUnknownDim});
    for (int d = partitions.rank(); d < data.rank(); ++d) piece.push_back(data.dim(d));
  }
  for (int64_t i = 0; i < num; ++i) ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, piece});
  return Status::OK();
}

Status partition_kernel(KernelContext& ctx) {
  const TensorImpl& data = ctx.input(0);
  const TensorImpl& partitions = ctx.input(1);
  const int64_t num = ctx.attr_int(0);
  bool ok = data.rank() >= partitions.rank();
  for (int d = 0; ok && d < partitions.rank(); ++d) ok = data.shape().dim(d) == partitions.shape().dim(d);
  if (!ok)
    return invalid_argument("DynamicPartition: data (shape ", data.shape().to_string(),
                            ") must start with the shape of partitions (", partitions.shape().to_string(),
                            ")");
  const int32_t* ids = partitions.data<int32_t>();
  std::vector<int64_t> counts(static_cast<size_t>(num), 0);
  for (int64_t i = 0; i < partitions.num_elements(); ++i) {
    if (ids[i] < 0 || ids[i] >= num)
      return invalid_argument("DynamicPartition: partitions[", i, "] = ", ids[i], " is not in [0, ", num,
                              ")");
    ++counts[static_cast<size_t>(ids[i])];
  }
  const int64_t slice = product(data.shape(), partitions.rank(), data.rank());
  const size_t bytes = static_cast<size_t>(slice) * dtype_size(data.dtype());
  std::vector<char*> dst(static_cast<size_t>(num));
  for (int64_t p = 0; p < num; ++p) {
    Shape piece({counts[static_cast<size_t>(p)]});
    for (int d = partitions.rank(); d < data.rank(); ++d) piece.push_back(data.shape().dim(d));
    EMBER_RETURN_IF_ERROR(allocate_output(ctx, static_cast<int>(p), data.dtype(), piece));
    dst[static_cast<size_t>(p)] = static_cast<char*>(ctx.output(static_cast<int>(p)).mutable_raw_data());
  }
  const char* src = static_cast<const char*>(data.raw_data());
  for (int64_t i = 0; i < partitions.num_elements() && bytes > 0; ++i) {
    char*& out = dst[static_cast<size_t>(ids[i])];
    std::memcpy(out, src + static_cast<size_t>(i) * bytes, bytes);
    out += bytes;
  }
  return Status::OK();
}

// The gradients stitched back where their slices came from: the positions of data's slices partitioned as
// the data was, then DynamicStitch of the incoming gradients at those positions.
void partition_grad(GradContext& c) {
  const GradTensor data = c.input(0), partitions = c.input(1);
  const int64_t num = c.attr_int(0);
  const GradTensor count = emit1("Size", {partitions}, {AttrValue(DType::kInt32)});
  const GradTensor positions = reshape_to(
      emit1("Range", {scalar(0, DType::kInt32), count, scalar(1, DType::kInt32)}), shape_of(partitions));
  const auto parts = emit("DynamicPartition", {positions, partitions}, {AttrValue(num)});
  std::vector<GradTensor> stitch_inputs(parts.begin(), parts.end());
  for (int64_t p = 0; p < num; ++p) stitch_inputs.push_back(c.grad(static_cast<int>(p)));
  const GradTensor merged = emit("DynamicStitch", stitch_inputs, {})[0];
  c.set(0, reshape_like(merged, data));
}

}  // namespace

void register_stitch_partition_ops(OpRegistry& r) {
  for (const char* name : {"DynamicStitch", "ParallelDynamicStitch"}) {
    OpBuilder(name)
        .doc(
            "Interleaves the slices of data by index: merged[indices[m][i], ...] = data[m][i, ...], a later "
            "list winning where indices repeat. dynamic_stitch([[0, 2], [1]], [[10, 30], [20]]) == "
            "[10, 20, 30]")
        .input_list_pair("indices", dtype_bit(DType::kInt32), "data")
        .output("merged")
        .type_var(kAllTypes)
        .flags(kKernelAllocates)
        .shape(&stitch_shape)
        .kernel(kAllTypes, &stitch_kernel)
        .grad(&stitch_grad)
        .batching(BatchingRule::kFallback)
        .done(r);
  }
  OpBuilder("DynamicPartition")
      .doc(
          "Splits data's slices into num_partitions outputs by the int32 partition of each. "
          "dynamic_partition([10, 20, 30], [1, 0, 1], 2) == [[20], [10, 30]]")
      .input("data")
      .input_fixed("partitions", dtype_bit(DType::kInt32))
      .output("outputs")
      .type_var(kAllTypes)
      .attr("num_partitions", AttrType::kInt)
      .flags(kKernelAllocates)
      .shape(&partition_shape)
      .kernel(kAllTypes, &partition_kernel)
      .grad(&partition_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
