// Counting ops: Bincount, DenseBincount and RaggedBincount (tf.math.bincount of a tensor or a RaggedTensor)
// HistogramFixedWidth (tf.histogram_fixed_width) and PopulationCount (bits set per element). Their results are
// counts, so none is differentiable (as in TensorFlow). Registered from register_array_index_ops
// (array_index.cc).
#include <algorithm>
#include <bit>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/kernels/array.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

constexpr DTypeSet kWeightTypes = dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64) |
                                  dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);

// The scalar size operand i, or kUnknownDim; a negative constant is an error (value_of alone would read -1
// as unknown).
StatusOr<int64_t> size_value(const InferContext& ctx, int i) {
  if (const TensorImpl* c = ctx.constant(i); c != nullptr && c->num_elements() == 1) {
    const int64_t v = kernels::load_index(c->raw_data(), c->dtype(), 0);
    if (v < 0)
      return invalid_argument(ctx.op->name, ": ", ctx.op->inputs[i].name, " (", v, ") must be non-negative");
    return v;
  }
  const PartialValue v = ctx.value_of(i);
  return v.fully_known() && v.values.size() == 1 ? v.values[0] : kUnknownDim;
}

// ---- Bincount(arr int32, size int32, weights T): bins[v] = number (or weight sum) of arr's elements equal
// to v, for v in [0, size); elements >= size are left out. Empty weights count 1 each.

Status bincount_shape(InferContext& ctx) {
  auto size_or = size_value(ctx, 1);
  if (!size_or.ok()) return size_or.status();
  const int64_t size = *size_or;
  ctx.outputs.push_back(TensorSpec{ctx.inputs[2].dtype, Shape({size})});
  return Status::OK();
}

// DenseBincount(input [n] or [rows, n], size, weights; binary_output): per row when input is 2-D.
Status dense_bincount_shape(InferContext& ctx) {
  const Shape& input = ctx.inputs[0].shape;
  auto size_or = size_value(ctx, 1);
  if (!size_or.ok()) return size_or.status();
  const int64_t size = *size_or;
  if (input.rank_known() && input.rank() > 2)
    return invalid_argument("DenseBincount: input must be 1-D or 2-D, got ", input.to_string());
  Shape out = !input.rank_known() ? Shape::unknown_rank()
              : input.rank() == 2 ? Shape({input.dim(0), size})
                                  : Shape({size});
  ctx.outputs.push_back(TensorSpec{ctx.inputs[2].dtype, out});
  return Status::OK();
}

// RaggedBincount(splits int64, values, size, weights; binary_output): DenseBincount of each row of a
// RaggedTensor given as row splits and flat values: [rows, size].
Status ragged_bincount_shape(InferContext& ctx) {
  const Shape& splits = ctx.inputs[0].shape;
  auto size_or = size_value(ctx, 2);
  if (!size_or.ok()) return size_or.status();
  if (splits.rank_known() && splits.rank() != 1)
    return invalid_argument("RaggedBincount: splits must be a vector, got ", splits.to_string());
  const int64_t rows = splits.rank_known() && splits.dim(0) > 0 ? splits.dim(0) - 1 : kUnknownDim;
  ctx.outputs.push_back(TensorSpec{ctx.inputs[3].dtype, Shape({rows, *size_or})});
  return Status::OK();
}

// Counts `input`'s rows into `out` ([rows, size] row-major), weighted unless weights is empty; row r holds
// the elements [splits[r], splits[r + 1]) of the flattened input.
Status count(const std::string& op, const TensorImpl& input, const TensorImpl& weights, bool binary,
             const std::vector<int64_t>& splits, int64_t size, TensorImpl& out) {
  const int64_t n = input.num_elements();
  const bool weighted = weights.num_elements() > 0;
  if (weighted && weights.shape() != input.shape())
    return invalid_argument(op, ": weights must be empty or have the shape of the input ",
                            input.shape().to_string(), ", got ", weights.shape().to_string());
  Status status = Status::OK();
  visit_dtype<kWeightTypes>(out.dtype(), [&]<typename T>() {
    T* o = out.mutable_data<T>();
    std::fill(o, o + out.num_elements(), T(0));
    const T* w = weighted ? weights.data<T>() : nullptr;
    size_t row = 0;
    for (int64_t i = 0; i < n; ++i) {
      while (row + 2 < splits.size() && i >= splits[row + 1]) ++row;
      const int64_t v = kernels::load_index(input.raw_data(), input.dtype(), i);
      if (v < 0) {
        status = invalid_argument(op, ": Input arr must be non-negative! Got arr[", i, "] = ", v);
        return;
      }
      if (v >= size) continue;
      T& bin = o[static_cast<int64_t>(row) * size + v];
      if (binary) {
        bin = T(1);
      } else {
        bin += weighted ? w[i] : T(1);
      }
    }
  });
  return status;
}

// Row splits of `rows` equal rows over `n` elements.
std::vector<int64_t> even_splits(int64_t rows, int64_t n) {
  std::vector<int64_t> splits(static_cast<size_t>(rows) + 1);
  for (int64_t r = 0; r <= rows; ++r) splits[r] = rows > 0 ? r * (n / rows) : 0;
  return splits;
}

int64_t scalar_size(const TensorImpl& t) { return kernels::load_index(t.raw_data(), t.dtype(), 0); }

Status bincount_kernel(KernelContext& ctx) {
  const TensorImpl &arr = ctx.input(0), &size = ctx.input(1), &weights = ctx.input(2);
  if (size.num_elements() != 1) return invalid_argument("Bincount: size must be a scalar");
  const int64_t s = scalar_size(size);
  if (s < 0) return invalid_argument("Bincount: size (", s, ") must be non-negative");
  return count("Bincount", arr, weights, false, even_splits(1, arr.num_elements()), s, ctx.output(0));
}

Status dense_bincount_kernel(KernelContext& ctx) {
  const TensorImpl &input = ctx.input(0), &size = ctx.input(1), &weights = ctx.input(2);
  if (size.num_elements() != 1) return invalid_argument("DenseBincount: size must be a scalar");
  if (input.rank() > 2)
    return invalid_argument("DenseBincount: input must be 1-D or 2-D, got ", input.shape().to_string());
  const int64_t s = scalar_size(size);
  if (s < 0) return invalid_argument("DenseBincount: size (", s, ") must be non-negative");
  const int64_t rows = input.rank() == 2 ? input.shape().dim(0) : 1;
  return count("DenseBincount", input, weights, ctx.attr_bool(0), even_splits(rows, input.num_elements()), s,
               ctx.output(0));
}

Status ragged_bincount_kernel(KernelContext& ctx) {
  const TensorImpl &splits_in = ctx.input(0), &values = ctx.input(1), &size = ctx.input(2),
                   &weights = ctx.input(3);
  if (size.num_elements() != 1) return invalid_argument("RaggedBincount: size must be a scalar");
  const int64_t s = scalar_size(size);
  if (s < 0) return invalid_argument("RaggedBincount: size (", s, ") must be non-negative");
  if (splits_in.rank() != 1 || splits_in.num_elements() == 0)
    return invalid_argument("RaggedBincount: splits must be a non-empty vector, got ",
                            splits_in.shape().to_string());
  if (values.rank() != 1)
    return invalid_argument("RaggedBincount: values must be a vector, got ", values.shape().to_string());
  std::vector<int64_t> splits(static_cast<size_t>(splits_in.num_elements()));
  for (size_t r = 0; r < splits.size(); ++r) splits[r] = splits_in.data<int64_t>()[r];
  if (splits[0] != 0)
    return invalid_argument("RaggedBincount: Splits must start with 0, not with ", splits[0]);
  for (size_t r = 1; r < splits.size(); ++r)
    if (splits[r] < splits[r - 1])
      return invalid_argument("RaggedBincount: splits must be sorted, got ", splits[r], " after ",
                              splits[r - 1], " at position ", r);
  if (splits.back() != values.num_elements())
    return invalid_argument("RaggedBincount: Splits must end with the number of values, got ", splits.back(),
                            " instead of ", values.num_elements());
  const int64_t rows = static_cast<int64_t>(splits.size()) - 1;
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, weights.dtype(), Shape({rows, s})));
  return count("RaggedBincount", values, weights, ctx.attr_bool(0), splits, s, ctx.output(0));
}

// ---- HistogramFixedWidth(values, value_range [2], nbins; dtype): counts in nbins equal-width bins over
// [lo, hi); values below lo fall in the first bin, values at or above hi in the last.

Status histogram_shape(InferContext& ctx) {
  const Shape& range = ctx.inputs[1].shape;
  if (range.rank_known() && (range.rank() != 1 || (range.dim(0) >= 0 && range.dim(0) != 2)))
    return invalid_argument("HistogramFixedWidth: value_range must be a vector of 2 elements, got shape ",
                            range.to_string());
  const TensorImpl* nbins_constant = ctx.constant(2);
  const int64_t nbins = nbins_constant != nullptr && nbins_constant->num_elements() == 1
                            ? kernels::load_index(nbins_constant->raw_data(), nbins_constant->dtype(), 0)
                            : kUnknownDim;
  if (nbins_constant != nullptr && nbins <= 0)
    return invalid_argument("HistogramFixedWidth: nbins should be a positive number, but got '", nbins, "'");
  const DType dtype = ctx.attr_dtype(0);
  if (!dtype_in(dtype, kIndexTypes))
    return invalid_argument("HistogramFixedWidth: dtype must be int32 or int64, got ", dtype_name(dtype));
  ctx.outputs.push_back(TensorSpec{dtype, Shape({nbins})});
  return Status::OK();
}

Status histogram_kernel(KernelContext& ctx) {
  const TensorImpl &values = ctx.input(0), &range = ctx.input(1), &nbins_t = ctx.input(2);
  const int64_t nbins = scalar_size(nbins_t);
  if (nbins <= 0)
    return invalid_argument("HistogramFixedWidth: nbins should be a positive number, but got '", nbins, "'");
  if (range.num_elements() != 2)
    return invalid_argument("HistogramFixedWidth: value_range must have 2 elements, got ",
                            range.shape().to_string());
  TensorImpl& out = ctx.output(0);
  std::vector<int64_t> counts(static_cast<size_t>(nbins), 0);
  Status status = Status::OK();
  visit_dtype<kWeightTypes>(values.dtype(), [&]<typename T>() {
    const T lo = range.data<T>()[0], hi = range.data<T>()[1];
    if (!(lo < hi)) {
      status = invalid_argument(
          "HistogramFixedWidth: value_range should satisfy value_range[0] < "
          "value_range[1], but got '[",
          static_cast<double>(lo), ", ", static_cast<double>(hi), "]'");
      return;
    }
    // The bin width in double, and each value's distance from lo computed in T first (as TensorFlow does):
    // a value's bin then matches TensorFlow's for float32 inputs at bin edges too.
    const double width = std::is_integral_v<T> ? static_cast<double>(hi) - static_cast<double>(lo)
                                               : static_cast<double>(static_cast<T>(hi - lo));
    const double step = width / static_cast<double>(nbins);
    const T* v = values.data<T>();
    for (int64_t i = 0; i < values.num_elements(); ++i) {
      // Integers subtract in double: v - lo in T overflows when the range spans more than T holds.
      double above;
      if constexpr (std::is_integral_v<T>) {
        above = static_cast<double>(std::max(v[i], lo)) - static_cast<double>(lo);
      } else {
        above = static_cast<double>(static_cast<T>(std::max(v[i], lo) - lo));
      }
      double bin = above / step;
      bin = std::min(bin, static_cast<double>(nbins - 1));
      int64_t b = std::isnan(bin) || bin < 0 ? 0 : static_cast<int64_t>(bin);
      ++counts[static_cast<size_t>(b)];
    }
  });
  if (!status.ok()) return status;
  for (int64_t b = 0; b < nbins; ++b) {
    if (out.dtype() == DType::kInt32) {
      out.mutable_data<int32_t>()[b] = static_cast<int32_t>(counts[b]);
    } else {
      out.mutable_data<int64_t>()[b] = counts[b];
    }
  }
  return Status::OK();
}

// ---- PopulationCount(x integer) -> uint8: the bits set in each element's two's-complement representation
// (int8 -1 has 8), as TensorFlow's.

Status population_count_shape(InferContext& ctx) {
  ctx.outputs.push_back(TensorSpec{DType::kUInt8, ctx.inputs[0].shape});
  return Status::OK();
}

Status population_count_kernel(KernelContext& ctx) {
  const TensorImpl& x = ctx.input(0);
  uint8_t* counts = ctx.output(0).mutable_data<uint8_t>();
  visit_dtype<kIntTypes>(x.dtype(), [&]<typename T>() {
    const T* v = x.data<T>();
    for (int64_t i = 0; i < x.num_elements(); ++i)
      counts[i] = static_cast<uint8_t>(std::popcount(static_cast<std::make_unsigned_t<T>>(v[i])));
  });
  return Status::OK();
}

}  // namespace

void register_bincount_ops(OpRegistry& r) {
  OpBuilder("Bincount")
      .doc(
          "How often each value in [0, size) occurs in arr (or the sum of its weights; empty weights count "
          "1). bincount([1, 1, 3], 4, []) == [0, 2, 0, 1]")
      .input_fixed("arr", dtype_bit(DType::kInt32))
      .input_fixed("size", dtype_bit(DType::kInt32))
      .input("weights")
      .output("bins")
      .type_var(kWeightTypes)
      .flags(kNotDifferentiable)
      .shape(&bincount_shape)
      .kernel(kWeightTypes, &bincount_kernel)
      .dispatch_on_input(2)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("DenseBincount")
      .doc(
          "Bincount of a 1-D input, or of each row of a 2-D one; binary_output marks presence instead of "
          "counting. dense_bincount([[1, 1], [0, 2]], 3, []) == [[0, 2, 0], [1, 0, 1]]")
      .input("input", 1)
      .input("size", 1)
      .input("weights")
      .output("output")
      .type_var(kWeightTypes)
      .type_var(kIndexTypes, 1)
      .attr("binary_output", AttrType::kBool, false)
      .flags(kNotDifferentiable)
      .shape(&dense_bincount_shape)
      .kernel(kWeightTypes, &dense_bincount_kernel)
      .dispatch_on_input(2)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("RaggedBincount")
      .doc(
          "DenseBincount of each row of a RaggedTensor (row splits, flat values). "
          "ragged_bincount([0, 2, 3], [1, 1, 0], 3, []) == [[0, 2, 0], [1, 0, 0]]")
      .input_fixed("splits", dtype_bit(DType::kInt64))
      .input("values", 1)
      .input("size", 1)
      .input("weights")
      .output("output")
      .type_var(kWeightTypes)
      .type_var(kIndexTypes, 1)
      .attr("binary_output", AttrType::kBool, false)
      .flags(kNotDifferentiable | kKernelAllocates)
      .shape(&ragged_bincount_shape)
      .kernel(kWeightTypes, &ragged_bincount_kernel)
      .dispatch_on_input(3)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("HistogramFixedWidth")
      .doc(
          "Counts of values in nbins equal bins over value_range = [lo, hi] (values outside go to the end "
          "bins). histogram_fixed_width([0., 1., 4.], [0., 5.], 5) == [1, 1, 0, 0, 1]")
      .input("values")
      .input("value_range")
      .input_fixed("nbins", dtype_bit(DType::kInt32))
      .output("out")
      .type_var(kWeightTypes)
      .attr("dtype", AttrType::kDType, DType::kInt32)
      .flags(kNotDifferentiable)
      .shape(&histogram_shape)
      .kernel(kWeightTypes, &histogram_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("PopulationCount")
      .doc("The number of bits set in each element, as uint8. population_count([0, 7, -1]) == [0, 3, 32]")
      .input("x")
      .output("y")
      .type_var(kIntTypes)
      .flags(kNotDifferentiable)
      .shape(&population_count_shape)
      .kernel(kIntTypes, &population_count_kernel)
      .batching(BatchingRule::kElementwise)
      .done(r);
}

}  // namespace ember
