// ReverseV2 (tf.reverse) and Roll (tf.roll): permutations of elements along axes, each its own adjoint up to
// the sign of the shift. Registered from register_array_index_ops (array_index.cc).
#include <cstring>
#include <string>
#include <vector>

#include "ember/kernels/array.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

// The axes named by `values` for a tensor of rank `rank`, normalised; an error names the op.
Status axes_of(const std::string& op, const std::vector<int64_t>& values, int rank, bool allow_repeats,
               std::vector<int64_t>* axes) {
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : values) {
    int64_t axis;
    EMBER_RETURN_IF_ERROR(normalize_axis(a, rank, op.c_str(), &axis));
    if (seen[axis] && !allow_repeats)
      return invalid_argument(op, ": axis ", axis, " is specified more than once in ", list_str(values));
    seen[axis] = true;
    axes->push_back(axis);
  }
  return Status::OK();
}

Status same_shape_checked(InferContext& ctx, int axis_input, bool allow_repeats) {
  const Shape& x = ctx.inputs[0].shape;
  const Shape& axis_shape = ctx.inputs[axis_input].shape;
  if (axis_shape.rank_known() && axis_shape.rank() > 1)
    return invalid_argument(ctx.op->name, ": axis must be a scalar or a vector, got shape ",
                            axis_shape.to_string());
  const PartialValue v = ctx.value_of(axis_input);
  if (x.rank_known() && v.fully_known()) {
    std::vector<int64_t> axes;
    EMBER_RETURN_IF_ERROR(axes_of(ctx.op->name, v.values, x.rank(), allow_repeats, &axes));
  }
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

Status reverse_shape(InferContext& ctx) { return same_shape_checked(ctx, 1, false); }

Status reverse_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  if (ctx.input(1).rank() > 1)
    return invalid_argument("ReverseV2: axis must be a scalar or a vector, got shape ",
                            ctx.input(1).shape().to_string());
  std::vector<int64_t> axes;
  EMBER_RETURN_IF_ERROR(axes_of("ReverseV2", ctx.int_values(1), in.rank(), false, &axes));
  if (out.num_elements() == 0) return Status::OK();
  const int rank = in.rank();
  const size_t elem = dtype_size(in.dtype());
  if (rank == 0) {
    std::memcpy(out.mutable_raw_data(), in.raw_data(), elem);
    return Status::OK();
  }
  kernels::StridedCopy c;
  c.rank = rank;
  int64_t strides[kMaxRank];
  kernels::dense_strides(rank, in.shape().dims().data(), strides);
  int64_t offset = 0;
  for (int d = 0; d < rank; ++d) {
    c.dims[d] = in.shape().dim(d);
    c.dst_strides[d] = strides[d];
    c.src_strides[d] = strides[d];
  }
  for (int64_t a : axes) {
    c.src_strides[a] = -strides[a];
    offset += (in.shape().dim(static_cast<int>(a)) - 1) * strides[a];
  }
  kernels::strided_copy(static_cast<const char*>(in.raw_data()) + offset * static_cast<int64_t>(elem),
                        out.mutable_raw_data(), elem, c);
  return Status::OK();
}

// ---- Roll(input, shift, axis): element i along each axis moves to (i + shift) mod n; shifts on one axis
// add.

Status roll_shape(InferContext& ctx) {
  const Shape &shift = ctx.inputs[1].shape, &axis = ctx.inputs[2].shape;
  if ((shift.rank_known() && shift.rank() > 1) || (axis.rank_known() && axis.rank() > 1) ||
      (shift.rank_known() && axis.rank_known() && shift != axis && shift.fully_defined() &&
       axis.fully_defined()))
    return invalid_argument("Roll: shift and axis must be scalars or vectors of one length, got shapes ",
                            shift.to_string(), " and ", axis.to_string());
  return same_shape_checked(ctx, 2, true);
}

Status roll_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  const std::vector<int64_t> shifts = ctx.int_values(1), axis_values = ctx.int_values(2);
  if (ctx.input(1).rank() > 1 || ctx.input(2).rank() > 1 || shifts.size() != axis_values.size())
    return invalid_argument("Roll: shift and axis must be scalars or vectors of one length, got shapes ",
                            ctx.input(1).shape().to_string(), " and ", ctx.input(2).shape().to_string());
  if (in.rank() == 0) return invalid_argument("Roll: input must be at least 1-D, got a scalar");
  std::vector<int64_t> axes;
  EMBER_RETURN_IF_ERROR(axes_of("Roll", axis_values, in.rank(), true, &axes));
  const size_t elem = dtype_size(in.dtype());
  std::memcpy(out.mutable_raw_data(), in.raw_data(), out.nbytes());
  if (out.num_elements() == 0) return Status::OK();
  std::vector<int64_t> total(static_cast<size_t>(in.rank()), 0);
  for (size_t k = 0; k < axes.size(); ++k) total[axes[k]] += shifts[k];
  std::vector<char> scratch(out.nbytes());
  char* data = static_cast<char*>(out.mutable_raw_data());
  // One axis at a time: with the tensor as [outer, n, inner] rows of bytes, each outer block is two copies.
  for (int a = 0; a < in.rank(); ++a) {
    const int64_t n = in.shape().dim(a);
    const int64_t s = ((total[a] % n) + n) % n;
    if (s == 0) continue;
    const int64_t outer = product(in.shape(), 0, a);
    const size_t row = static_cast<size_t>(product(in.shape(), a + 1, in.rank())) * elem;
    std::memcpy(scratch.data(), data, out.nbytes());
    for (int64_t o = 0; o < outer; ++o) {
      const char* src = scratch.data() + static_cast<size_t>(o * n) * row;
      char* dst = data + static_cast<size_t>(o * n) * row;
      std::memcpy(dst + static_cast<size_t>(s) * row, src, static_cast<size_t>(n - s) * row);
      std::memcpy(dst, src + static_cast<size_t>(n - s) * row, static_cast<size_t>(s) * row);
    }
  }
  return Status::OK();
}

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

void reverse_grad(GradContext& c) { c.set(0, emit1("ReverseV2", {c.grad(), c.input(1)})); }

void roll_grad(GradContext& c) { c.set(0, emit1("Roll", {c.grad(), -c.input(1), c.input(2)})); }

}  // namespace

void register_reverse_roll_ops(OpRegistry& r) {
  OpBuilder("ReverseV2")
      .doc(
          "The elements in reverse order along each of axis. reverse([[1, 2], [3, 4]], [1]) == [[2, 1], [4, "
          "3]]")
      .input("tensor")
      .input_shape_like("axis")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .shape(&reverse_shape)
      .kernel(kAllTypesAndComplex, &reverse_kernel)
      .grad(&reverse_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("Roll")
      .doc(
          "Elements shifted along each axis by shift, wrapping around. roll([1, 2, 3, 4], 1, 0) == [4, 1, 2, "
          "3]")
      .input("input")
      .input_shape_like("shift")
      .input_shape_like("axis")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .shape(&roll_shape)
      .kernel(kAllTypesAndComplex, &roll_kernel)
      .grad(&roll_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
}

}  // namespace ember
