// Indexing ops: Slice, StridedSlice (Python's __getitem__), GatherV2, Where, SelectV2, OneHot and
// ClipByValue, and the scatters that are their gradients: StridedSliceGrad and UnsortedSegmentSum.
// Registered from register_array_ops (array.cc); kernels in kernels/array.h.
#include <string>
#include <vector>

#include "ember/kernels/array.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

// Slices of an input: start offsets and steps per input dim, the dims walked (one per input dim) and the
// shape of the result (which may drop or add size-1 dims). Used by Slice and StridedSlice.
struct SlicePlan {
  int64_t begin[kMaxRank] = {};
  int64_t step[kMaxRank] = {};
  Shape walked;
  Shape result;
};

// Emits the result as a view when its elements are one contiguous run of the input (Note [Views] in
// array.cc), else copies.
Status run_slice(KernelContext& ctx, const SlicePlan& plan) {
  const TensorImpl& in = ctx.input(0);
  const int rank = in.rank();
  if (plan.result.num_elements() == 0) return allocate_output(ctx, 0, in.dtype(), plan.result);
  int64_t in_strides[kMaxRank];
  kernels::dense_strides(rank, in.shape().dims().data(), in_strides);
  kernels::StridedCopy c;
  c.rank = rank;
  int64_t offset = 0;
  for (int d = 0; d < rank; ++d) {
    c.dims[d] = plan.walked.dim(d);
    c.src_strides[d] = plan.step[d] * in_strides[d];
    offset += plan.begin[d] * in_strides[d];
  }
  kernels::dense_strides(rank, c.dims, c.dst_strides);
  const size_t elem = dtype_size(in.dtype());
  if (kernels::is_contiguous_source(c)) {
    ctx.outputs[0] = TensorImpl::view(in, plan.result, static_cast<size_t>(offset) * elem);
    return Status::OK();
  }
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, in.dtype(), plan.result));
  kernels::strided_copy(static_cast<const char*>(in.raw_data()) + offset * static_cast<int64_t>(elem),
                        ctx.output(0).mutable_raw_data(), elem, c);
  return Status::OK();
}

// ---- Slice

// `in` has a known rank; unknown dims give unknown results (checked again by the kernel).
Status plan_slice(const Shape& in, const std::vector<int64_t>& begin, const std::vector<int64_t>& size,
                  SlicePlan* plan) {
  const int rank = in.rank();
  if (static_cast<int>(begin.size()) != rank || static_cast<int>(size.size()) != rank)
    return invalid_argument("Slice: begin ", list_str(begin), " and size ", list_str(size),
                            " must each have one entry per dimension of the input (shape ", in.to_string(),
                            ")");
  for (int d = 0; d < rank; ++d) {
    const int64_t dim = in.dim(d), b = begin[d], s = size[d];
    if (b < 0 || (dim >= 0 && b > dim))
      return invalid_argument("Slice: expected begin[", d, "] in [0, ",
                              dim < 0 ? std::string("?") : std::to_string(dim), "] for dimension ", d,
                              " of shape ", in.to_string(), ", got ", b);
    if (s < -1 || (dim >= 0 && s > dim - b))
      return invalid_argument("Slice: expected size[", d, "] in [0, ", dim - b, "] (or -1) for dimension ", d,
                              " of shape ", in.to_string(), " with begin ", b, ", got ", s);
    plan->begin[d] = b;
    plan->step[d] = 1;
    plan->walked.push_back(s >= 0 ? s : (dim < 0 ? kUnknownDim : dim - b));
  }
  plan->result = plan->walked;
  return Status::OK();
}

Status slice_shape(InferContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  for (int k = 1; k < 3; ++k)
    if (ctx.inputs[k].shape.rank_known() && ctx.inputs[k].shape.rank() != 1)
      return invalid_argument("Slice: begin and size must be vectors, got a tensor of shape ",
                              ctx.inputs[k].shape.to_string());
  PartialValue begin_value = ctx.value_of(1), size_value = ctx.value_of(2);
  if (!begin_value.fully_known() || !size_value.fully_known()) {
    // The rank is the operands' length; a dim is known where its size is (and not -1).
    Shape out = in;
    const PartialValue& known = size_value.length_known ? size_value : begin_value;
    if (!known.length_known && !in.rank_known()) {
      ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape::unknown_rank()});
      return Status::OK();
    }
    const int rank = in.rank_known() ? in.rank() : static_cast<int>(known.values.size());
    if (rank > kMaxRank)
      return invalid_argument("Slice: rank ", rank, " is more than the maximum ", kMaxRank);
    out = Shape();
    for (int d = 0; d < rank; ++d) {
      int64_t sz = size_value.length_known && d < static_cast<int>(size_value.values.size())
                       ? size_value.values[d]
                       : PartialValue::kUnknown;
      // size -1 reads to the end: known where the dim and its begin are.
      const int64_t b = begin_value.length_known && d < static_cast<int>(begin_value.values.size())
                            ? begin_value.values[d]
                            : PartialValue::kUnknown;
      const int64_t dim = in.rank_known() ? in.dim(d) : kUnknownDim;
      if (sz == -1 && b != PartialValue::kUnknown && dim >= 0 && b >= 0 && b <= dim) sz = dim - b;
      out.push_back(sz >= 0 ? sz : kUnknownDim);
    }
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
    return Status::OK();
  }
  const std::vector<int64_t>& begin = begin_value.values;
  const std::vector<int64_t>& size = size_value.values;
  SlicePlan plan;
  if (!in.rank_known()) {
    if (begin.size() != size.size() || size.size() > static_cast<size_t>(kMaxRank))
      return invalid_argument("Slice: begin ", list_str(begin), " and size ", list_str(size),
                              " must have the same length, at most ", kMaxRank);
    for (int64_t s : size) plan.result.push_back(s >= 0 ? s : kUnknownDim);
  } else {
    EMBER_RETURN_IF_ERROR(plan_slice(in, begin, size, &plan));
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, plan.result});
  return Status::OK();
}

Status slice_kernel(KernelContext& ctx) {
  for (int k = 1; k < 3; ++k)
    if (ctx.input(k).rank() != 1)
      return invalid_argument("Slice: begin and size must be vectors, got a tensor of shape ",
                              ctx.input(k).shape().to_string());
  SlicePlan plan;
  EMBER_RETURN_IF_ERROR(plan_slice(ctx.input(0).shape(), ctx.int_values(1), ctx.int_values(2), &plan));
  return run_slice(ctx, plan);
}

// ---- StridedSlice
//
// Note [StridedSlice]: TensorFlow's algorithm (strided_slice_op.cc, ValidateStridedSliceOp) step by step:
// the "sparse" spec (one entry per index of x[...], with masks for ':' ends, '...', newaxis and integer
// indices) becomes a "dense" spec with one entry per input dim (the ellipsis, explicit or implied at the
// end, expands to full ranges); each dense entry is clamped to the dim; the result shape is the walked
// shape with integer-indexed dims dropped and newaxis dims inserted.

constexpr int kNewAxis = -1;
constexpr int kShrinkAxis = -2;
constexpr size_t kMaxSliceSpec = 62;  // masks are int64 bit sets, and one bit is needed for an implied '...'

// The slice spec: begin, end and strides (inputs `first` .. `first` + 2: StridedSlice's 1-3,
// StridedSliceGrad's 1-3) and the five masks (attributes 0-4 of both ops).
struct StridedSliceAttrs {
  std::vector<int64_t> begin, end, strides;
  int64_t begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_axis_mask = 0;
  uint64_t unknown = 0;  // spec entries with a begin, end or stride unknown while tracing
};

void read_masks(const AttrReader& ctx, StridedSliceAttrs* a) {
  a->begin_mask = ctx.attr_int(0);
  a->end_mask = ctx.attr_int(1);
  a->ellipsis_mask = ctx.attr_int(2);
  a->new_axis_mask = ctx.attr_int(3);
  a->shrink_axis_mask = ctx.attr_int(4);
}

StatusOr<StridedSliceAttrs> strided_slice_attrs(const KernelContext& ctx, int first) {
  StridedSliceAttrs a;
  for (int k = 0; k < 3; ++k)
    if (ctx.input(first + k).rank() != 1)
      return invalid_argument(ctx.op->name,
                              ": begin, end and strides must be vectors, got a tensor of shape ",
                              ctx.input(first + k).shape().to_string());
  a.begin = ctx.int_values(first);
  a.end = ctx.int_values(first + 1);
  a.strides = ctx.int_values(first + 2);
  read_masks(ctx, &a);
  return a;
}

// While tracing: what is known of the spec. Entries with an unknown value give unknown result dims
// (an integer index still removes its dim), so the result's rank stays known when the spec's length is.
StatusOr<StridedSliceAttrs> strided_slice_attrs(const InferContext& ctx, int first, bool* length_known) {
  StridedSliceAttrs a;
  PartialValue values[3];
  *length_known = true;
  for (int k = 0; k < 3; ++k) {
    const Shape& s = ctx.inputs[first + k].shape;
    if (s.rank_known() && s.rank() != 1)
      return invalid_argument(
          ctx.op->name, ": begin, end and strides must be vectors, got a tensor of shape ", s.to_string());
    values[k] = ctx.value_of(first + k);
    *length_known &= values[k].length_known;
  }
  read_masks(ctx, &a);
  if (!*length_known) return a;
  a.begin = values[0].values;
  a.end = values[1].values;
  a.strides = values[2].values;
  for (size_t i = 0; i < a.strides.size() && i < 64; ++i) {
    const bool unknown = (i < a.begin.size() && a.begin[i] == PartialValue::kUnknown) ||
                         (i < a.end.size() && a.end[i] == PartialValue::kUnknown) ||
                         a.strides[i] == PartialValue::kUnknown;
    if (!unknown) continue;
    a.unknown |= uint64_t{1} << i;
    if (i < a.begin.size() && a.begin[i] == PartialValue::kUnknown) a.begin[i] = 0;
    if (i < a.end.size() && a.end[i] == PartialValue::kUnknown) a.end[i] = 0;
    if (a.strides[i] == PartialValue::kUnknown) a.strides[i] = 1;
  }
  return a;
}

// `in` has a known rank. With unknown dims the walked dims are unknown (1 for integer indices).
Status plan_strided_slice(const Shape& in, const StridedSliceAttrs& a, SlicePlan* plan) {
  const size_t n = a.strides.size();
  if (a.begin.size() != n || a.end.size() != n)
    return invalid_argument("StridedSlice: begin ", list_str(a.begin), ", end ", list_str(a.end),
                            " and strides ", list_str(a.strides), " must have the same length");
  if (n > kMaxSliceSpec)
    return invalid_argument("StridedSlice: at most ", kMaxSliceSpec, " slice entries are supported, got ", n);
  auto bit = [](int64_t mask, size_t i) { return ((mask >> i) & 1) != 0; };
  if (a.ellipsis_mask & (a.ellipsis_mask - 1))
    return invalid_argument("StridedSlice: at most one ellipsis ('...') is allowed, got ellipsis_mask ",
                            a.ellipsis_mask);

  // Step 1: count newaxis entries after the ellipsis; imply an ellipsis at the end if there is none.
  size_t sparse_dims = n;
  int64_t ellipsis_mask = a.ellipsis_mask;
  int num_add_axis_after_ellipsis = 0;
  bool ellipsis_seen = false;
  for (size_t i = 0; i < n; ++i) {
    if (ellipsis_seen && bit(a.new_axis_mask, i)) ++num_add_axis_after_ellipsis;
    if (bit(a.ellipsis_mask, i)) ellipsis_seen = true;
  }
  if (!ellipsis_seen) ellipsis_mask |= int64_t{1} << sparse_dims++;

  // Step 2: the dense spec, one entry per input dim.
  const int rank = in.rank();
  int64_t begin[kMaxRank] = {}, end[kMaxRank] = {}, strides[kMaxRank] = {};
  bool begin_masked[kMaxRank] = {}, end_masked[kMaxRank] = {}, shrink[kMaxRank] = {}, unknown[kMaxRank] = {};
  SmallVector<int, 16> gather;  // per result dim: a dense dim, kNewAxis or kShrinkAxis
  int full = 0;
  for (size_t i = 0; i < sparse_dims; ++i) {
    if (bit(ellipsis_mask, i)) {
      int next = std::min(rank - static_cast<int>(sparse_dims - i) + 1 + num_add_axis_after_ellipsis, rank);
      for (; full < next; ++full) {
        strides[full] = 1;
        begin_masked[full] = end_masked[full] = true;
        gather.push_back(full);
      }
    } else if (bit(a.new_axis_mask, i)) {
      gather.push_back(kNewAxis);
    } else {
      if (full == rank)
        return invalid_argument("StridedSlice: too many indices for a tensor of rank ", rank, " (shape ",
                                in.to_string(), ")");
      begin[full] = a.begin[i];
      end[full] = a.end[i];
      strides[full] = a.strides[i];
      begin_masked[full] = bit(a.begin_mask, i);
      end_masked[full] = bit(a.end_mask, i);
      shrink[full] = bit(a.shrink_axis_mask, i);
      unknown[full] = bit(static_cast<int64_t>(a.unknown), i);
      gather.push_back(shrink[full] ? kShrinkAxis : full);
      ++full;
    }
  }

  // Step 3: clamp each dense entry to its dim and compute the walked shape.
  for (int d = 0; d < rank; ++d) {
    const int64_t dim = in.dim(d), stride = strides[d];
    if (stride == 0) return invalid_argument("StridedSlice: strides[", d, "] must be non-zero");
    if (shrink[d] && stride < 0)
      return invalid_argument("StridedSlice: an integer index needs a positive stride, got ", stride);
    if (dim < 0 || unknown[d]) {
      plan->walked.push_back(shrink[d] ? 1 : kUnknownDim);
      plan->begin[d] = 0;
      plan->step[d] = stride;
      continue;
    }
    int64_t b, e;
    if (shrink[d]) {
      b = begin[d] < 0 ? begin[d] + dim : begin[d];
      if (b < 0 || b >= dim)
        return invalid_argument("StridedSlice: index ", begin[d], " is out of bounds for axis ", d,
                                " with size ", dim);
      e = b + 1;
    } else {
      // Python's rules: negative indices count from the end, then clamp to [0, dim] going forward or
      // [-1, dim - 1] going backward; a masked end is the far end in the stride's direction.
      const int64_t lo = stride > 0 ? 0 : -1, hi = stride > 0 ? dim : dim - 1;
      auto canonical = [&](int64_t x, bool masked, bool is_end) {
        if (masked) return (stride > 0) != is_end ? lo : hi;
        int64_t fwd = x < 0 ? dim + x : x;
        return fwd < lo ? lo : (fwd > hi ? hi : fwd);
      };
      b = canonical(begin[d], begin_masked[d], false);
      e = canonical(end[d], end_masked[d], true);
    }
    const int64_t interval = e - b;
    int64_t size = 0;
    if (interval != 0 && (interval < 0) == (stride < 0))
      size = interval / stride + (interval % stride != 0 ? 1 : 0);
    plan->walked.push_back(size);
    plan->begin[d] = b;
    plan->step[d] = stride;
  }

  // Step 4: the result shape.
  for (int g : gather) {
    if (g == kShrinkAxis) continue;
    if (plan->result.rank() == kMaxRank)
      return invalid_argument("StridedSlice: the result would have more than ", kMaxRank, " dimensions");
    plan->result.push_back(g == kNewAxis ? 1 : plan->walked.dim(g));
  }
  return Status::OK();
}

Status strided_slice_shape(InferContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  bool length_known;
  auto spec = strided_slice_attrs(ctx, 1, &length_known);
  if (!spec.ok()) return spec.status();
  if (!in.rank_known() || !length_known) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  SlicePlan plan;
  EMBER_RETURN_IF_ERROR(plan_strided_slice(in, *spec, &plan));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, plan.result});
  return Status::OK();
}

Status strided_slice_kernel(KernelContext& ctx) {
  auto spec = strided_slice_attrs(ctx, 1);
  if (!spec.ok()) return spec.status();
  SlicePlan plan;
  EMBER_RETURN_IF_ERROR(plan_strided_slice(ctx.input(0).shape(), *spec, &plan));
  return run_slice(ctx, plan);
}

// ---- StridedSliceGrad(dy; shape, then StridedSlice's attributes): dy scattered into zeros of `shape`
// at the elements StridedSlice would read; dy has the slice's shape, whose elements are the walked ones.

Status strided_slice_grad_shape(InferContext& ctx) {
  auto shape = ctx.shape_operand(0);
  if (!shape.ok()) return shape.status();
  bool length_known;
  auto spec = strided_slice_attrs(ctx, 1, &length_known);
  if (!spec.ok()) return spec.status();
  const DType dtype = ctx.inputs[4].dtype;
  if (!shape->rank_known() || !length_known) {
    ctx.outputs.push_back(TensorSpec{dtype, *shape});
    return Status::OK();
  }
  SlicePlan plan;
  EMBER_RETURN_IF_ERROR(plan_strided_slice(*shape, *spec, &plan));
  const Shape& dy = ctx.inputs[4].shape;
  bool ok = !dy.rank_known() || dy.rank() == plan.result.rank();
  for (int d = 0; ok && d < dy.rank(); ++d)
    ok = dy.dim(d) < 0 || plan.result.dim(d) < 0 || dy.dim(d) == plan.result.dim(d);
  if (!ok)
    return invalid_argument("StridedSliceGrad: dy has shape ", dy.to_string(),
                            " but the slice of a tensor of shape ", shape->to_string(), " has shape ",
                            plan.result.to_string());
  ctx.outputs.push_back(TensorSpec{dtype, *shape});
  return Status::OK();
}

Status strided_slice_grad_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  const TensorImpl& dy = ctx.input(4);
  auto spec = strided_slice_attrs(ctx, 1);
  if (!spec.ok()) return spec.status();
  SlicePlan plan;
  EMBER_RETURN_IF_ERROR(plan_strided_slice(out.shape(), *spec, &plan));
  if (plan.result.num_elements() != dy.num_elements())
    return invalid_argument("StridedSliceGrad: dy has shape ", dy.shape().to_string(),
                            " but the slice of a tensor of shape ", out.shape().to_string(), " has shape ",
                            plan.result.to_string());
  const size_t elem = dtype_size(out.dtype());
  const kernels::ScalarBits zero;
  kernels::fill(out.mutable_raw_data(), out.num_elements(), elem, zero.data());
  if (dy.num_elements() == 0) return Status::OK();
  const int rank = out.rank();
  int64_t out_strides[kMaxRank];
  kernels::dense_strides(rank, out.shape().dims().data(), out_strides);
  kernels::StridedCopy c;
  c.rank = rank;
  int64_t offset = 0;
  for (int d = 0; d < rank; ++d) {
    c.dims[d] = plan.walked.dim(d);
    c.dst_strides[d] = plan.step[d] * out_strides[d];
    offset += plan.begin[d] * out_strides[d];
  }
  kernels::dense_strides(rank, c.dims, c.src_strides);
  kernels::strided_copy(dy.raw_data(),
                        static_cast<char*>(out.mutable_raw_data()) + offset * static_cast<int64_t>(elem),
                        elem, c);
  return Status::OK();
}

// ---- GatherV2

struct GatherDims {
  int64_t axis, batch_dims;
};

// Validates axis and batch_dims against known ranks (params_rank, indices_rank).
Status gather_dims(int params_rank, int indices_rank, int64_t axis_attr, int64_t batch_attr, GatherDims* g) {
  if (params_rank == 0) return invalid_argument("GatherV2: params must be at least 1-D, got a scalar");
  g->batch_dims = batch_attr < 0 ? batch_attr + indices_rank : batch_attr;
  if (g->batch_dims < 0 || g->batch_dims > indices_rank)
    return invalid_argument("GatherV2: batch_dims ", batch_attr, " must be in [", -indices_rank, ", ",
                            indices_rank, "] for indices of rank ", indices_rank);
  EMBER_RETURN_IF_ERROR(normalize_axis(axis_attr, params_rank, "GatherV2", &g->axis));
  if (g->batch_dims > g->axis)
    return invalid_argument("GatherV2: batch_dims (", g->batch_dims, ") must be less than or equal to axis (",
                            g->axis, ")");
  return Status::OK();
}

Status gather_shape(InferContext& ctx) {
  const Shape &params = ctx.inputs[0].shape, &indices = ctx.inputs[1].shape;
  const Shape& axis_spec = ctx.inputs[2].shape;
  if (axis_spec.rank_known() && axis_spec.rank() != 0)
    return invalid_argument("GatherV2: axis must be a scalar, got shape ", axis_spec.to_string());
  const PartialValue axis = ctx.value_of(2);
  if (!params.rank_known() || !indices.rank_known() || !axis.fully_known()) {
    // An unknown axis still gives the rank: params' rank - 1 + indices' rank - batch_dims.
    Shape out = Shape::unknown_rank();
    const int64_t rank = params.rank() - 1 + indices.rank() - ctx.attr_int(0);
    if (params.rank_known() && indices.rank_known() && rank >= 0 && rank <= kMaxRank)
      out = Shape(std::vector<int64_t>(static_cast<size_t>(rank), kUnknownDim));
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
    return Status::OK();
  }
  GatherDims g;
  EMBER_RETURN_IF_ERROR(gather_dims(params.rank(), indices.rank(), axis.values[0], ctx.attr_int(0), &g));
  Shape out;
  for (int d = 0; d < g.batch_dims; ++d) {
    int64_t p = params.dim(d), i = indices.dim(d);
    if (p >= 0 && i >= 0 && p != i)
      return invalid_argument("GatherV2: params ", params.to_string(), " and indices ", indices.to_string(),
                              " must match in their first batch_dims (", g.batch_dims,
                              ") dimensions; dimension ", d, " is ", p, " vs ", i);
  }
  if (params.rank() - 1 + indices.rank() - g.batch_dims > kMaxRank)
    return invalid_argument("GatherV2: the result would have more than ", kMaxRank, " dimensions");
  for (int d = 0; d < g.axis; ++d)
    out.push_back(params.dim(d) >= 0 || d >= g.batch_dims ? params.dim(d) : indices.dim(d));
  for (int d = static_cast<int>(g.batch_dims); d < indices.rank(); ++d) out.push_back(indices.dim(d));
  for (int d = static_cast<int>(g.axis) + 1; d < params.rank(); ++d) out.push_back(params.dim(d));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

Status gather_kernel(KernelContext& ctx) {
  const TensorImpl &params = ctx.input(0), &indices = ctx.input(1);
  if (ctx.input(2).rank() != 0)
    return invalid_argument("GatherV2: axis must be a scalar, got shape ", ctx.input(2).shape().to_string());
  GatherDims g;
  EMBER_RETURN_IF_ERROR(
      gather_dims(params.rank(), indices.rank(), ctx.int_values(2)[0], ctx.attr_int(0), &g));
  const Shape& ps = params.shape();
  const int bd = static_cast<int>(g.batch_dims), axis = static_cast<int>(g.axis);
  const int64_t batch = product(ps, 0, bd), outer = product(ps, bd, axis), axis_dim = ps.dim(axis);
  const int64_t n = product(indices.shape(), bd, indices.rank()), inner = product(ps, axis + 1, ps.rank());
  if (ctx.output(0).num_elements() == 0 && batch * n == 0) return Status::OK();
  int64_t bad = kernels::gather(params.raw_data(), indices.raw_data(), indices.dtype(),
                                ctx.output(0).mutable_raw_data(), dtype_size(params.dtype()), batch, outer,
                                axis_dim, n, inner);
  if (bad < 0) return Status::OK();
  // TensorFlow's message: indices[i,j] = v is not in [0, dim).
  std::string where;
  int64_t rem = bad;
  for (int d = indices.rank() - 1; d >= 0; --d) {
    where = std::to_string(rem % indices.shape().dim(d)) + (where.empty() ? "" : ",") + where;
    rem /= indices.shape().dim(d);
  }
  return invalid_argument("GatherV2: indices[", where,
                          "] = ", kernels::load_index(indices.raw_data(), indices.dtype(), bad),
                          " is not in [0, ", axis_dim, ")");
}

// ---- UnsortedSegmentSum(data, segment_ids; num_segments): out[s, ...] = sum of data[j..., ...] over the
// positions j of segment_ids equal to s. Negative ids drop their row, as in TensorFlow.

Status segment_sum_shape(InferContext& ctx) {
  const Shape &data = ctx.inputs[0].shape, &ids = ctx.inputs[1].shape;
  const Shape& num_spec = ctx.inputs[2].shape;
  if (num_spec.rank_known() && num_spec.rank() != 0)
    return invalid_argument("UnsortedSegmentSum: num_segments must be a scalar, got shape ",
                            num_spec.to_string());
  const PartialValue num_value = ctx.value_of(2);
  const int64_t num = num_value.fully_known() ? num_value.values[0] : kUnknownDim;
  if (num_value.fully_known() && num < 0)
    return invalid_argument("UnsortedSegmentSum: num_segments must be >= 0, got ", num);
  if (!data.rank_known() || !ids.rank_known()) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  bool ok = ids.rank() <= data.rank();
  for (int d = 0; ok && d < ids.rank(); ++d)
    ok = ids.dim(d) < 0 || data.dim(d) < 0 || ids.dim(d) == data.dim(d);
  if (!ok)
    return invalid_argument("UnsortedSegmentSum: segment_ids' shape ", ids.to_string(),
                            " must be a prefix of data's shape ", data.to_string());
  if (data.rank() - ids.rank() + 1 > kMaxRank)
    return invalid_argument("UnsortedSegmentSum: the result would have more than ", kMaxRank, " dimensions");
  Shape out({num});
  for (int d = ids.rank(); d < data.rank(); ++d) out.push_back(data.dim(d));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

Status segment_sum_kernel(KernelContext& ctx) {
  const TensorImpl &data = ctx.input(0), &ids = ctx.input(1);
  const int64_t num = ctx.output(0).shape().dim(0), n = ids.num_elements();
  const int64_t inner = product(data.shape(), ids.rank(), data.rank());
  const int64_t bad =
      kernels::unsorted_segment_sum(data.raw_data(), data.dtype(), ids.raw_data(), ids.dtype(), n, inner, num,
                                    ctx.output(0).mutable_raw_data());
  if (bad < 0) return Status::OK();
  return invalid_argument("UnsortedSegmentSum: segment_ids[", bad,
                          "] = ", kernels::load_index(ids.raw_data(), ids.dtype(), bad),
                          " is out of range [0, ", num, ")");
}

// ---- Where (coordinates of true elements)

Status where_shape(InferContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  if (in.rank_known() && in.rank() == 0)
    return invalid_argument("Where: the condition must have rank >= 1, got a scalar");
  ctx.outputs.push_back(
      TensorSpec{DType::kInt64, Shape({kUnknownDim, in.rank_known() ? in.rank() : kUnknownDim})});
  return Status::OK();
}

Status where_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  int64_t count = kernels::count_nonzero(in.raw_data(), in.dtype(), in.num_elements());
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, DType::kInt64, Shape({count, in.rank()})));
  kernels::nonzero_coordinates(in.raw_data(), in.dtype(), in.shape(), ctx.output(0).mutable_data<int64_t>());
  return Status::OK();
}

// ---- SelectV2

Status select_shape(InferContext& ctx) {
  const Shape &c = ctx.inputs[0].shape, &t = ctx.inputs[1].shape, &e = ctx.inputs[2].shape;
  auto ct = broadcast_shapes(c, t);
  StatusOr<Shape> out = ct.ok() ? broadcast_shapes(*ct, e) : ct;
  if (!out.ok())
    return invalid_argument("SelectV2: condition ", c.to_string(), ", t ", t.to_string(), " and e ",
                            e.to_string(), " must be broadcastable");
  ctx.outputs.push_back(TensorSpec{ctx.inputs[1].dtype, *out});
  return Status::OK();
}

Status select_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  if (out.num_elements() == 0) return Status::OK();
  Shape shapes[3] = {ctx.input(0).shape(), ctx.input(1).shape(), ctx.input(2).shape()};
  kernels::BroadcastWalk walk = kernels::plan_broadcast_walk(out.shape(), shapes);
  kernels::select(ctx.input(0).data<bool>(), ctx.input(1).raw_data(), ctx.input(2).raw_data(),
                  out.mutable_raw_data(), dtype_size(out.dtype()), walk);
  return Status::OK();
}

// ---- ClipByValue

Status clip_shape(InferContext& ctx) {
  const Shape& t = ctx.inputs[0].shape;
  const char* names[3] = {"t", "clip_value_min", "clip_value_max"};
  for (int k = 1; k <= 2; ++k) {
    const Shape& b = ctx.inputs[k].shape;
    auto joint = broadcast_shapes(t, b);
    bool ok = joint.ok();
    if (ok && joint->rank_known() && t.rank_known()) {
      ok = joint->rank() == t.rank();
      for (int d = 0; ok && d < t.rank(); ++d)
        ok = t.dim(d) < 0 || joint->dim(d) < 0 || joint->dim(d) == t.dim(d);
    }
    if (!ok)
      return invalid_argument("ClipByValue: ", names[k], " of shape ", b.to_string(),
                              " must broadcast to the shape of t, ", t.to_string());
  }
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

Status clip_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  if (out.num_elements() == 0) return Status::OK();
  Shape shapes[3] = {ctx.input(0).shape(), ctx.input(1).shape(), ctx.input(2).shape()};
  kernels::BroadcastWalk walk = kernels::plan_broadcast_walk(out.shape(), shapes);
  kernels::clip_by_value(ctx.input(0).raw_data(), ctx.input(1).raw_data(), ctx.input(2).raw_data(),
                         out.mutable_raw_data(), out.dtype(), walk);
  return Status::OK();
}

// ---- OneHot (attrs: depth, on_value, off_value, axis, dtype)

Status one_hot_axis(int rank, int64_t axis_attr, int64_t* axis) {
  if (axis_attr != -1 && (axis_attr < 0 || axis_attr > rank))
    return invalid_argument("OneHot: axis must be -1 or in [0, ", rank, "] for indices of rank ", rank,
                            ", got ", axis_attr);
  *axis = axis_attr == -1 ? rank : axis_attr;
  return Status::OK();
}

Status one_hot_shape(InferContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  static const char* const kNames[] = {"depth", "on_value", "off_value"};
  for (int i = 1; i < 4; ++i)
    if (ctx.inputs[i].shape.rank_known() && ctx.inputs[i].shape.rank() != 0)
      return invalid_argument("OneHot: ", kNames[i - 1], " must be a scalar, got shape ",
                              ctx.inputs[i].shape.to_string());
  const PartialValue depth_value = ctx.value_of(1);
  const int64_t depth = depth_value.fully_known() ? depth_value.values[0] : kUnknownDim;
  if (depth_value.fully_known() && depth < 0)
    return invalid_argument("OneHot: depth must be non-negative, got ", depth);
  const DType dtype = ctx.inputs[2].dtype;
  if (!in.rank_known()) {
    ctx.outputs.push_back(TensorSpec{dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  int64_t axis;
  EMBER_RETURN_IF_ERROR(one_hot_axis(in.rank(), ctx.attr_int(0), &axis));
  if (in.rank() >= kMaxRank)
    return invalid_argument("OneHot: the result would have rank ", in.rank() + 1, ", more than the maximum ",
                            kMaxRank);
  Shape out;
  for (int d = 0; d <= in.rank(); ++d) {
    if (d == axis) out.push_back(depth);
    if (d < in.rank()) out.push_back(in.dim(d));
  }
  ctx.outputs.push_back(TensorSpec{dtype, out});
  return Status::OK();
}

Status one_hot_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  int64_t axis;
  EMBER_RETURN_IF_ERROR(one_hot_axis(in.rank(), ctx.attr_int(0), &axis));
  if (out.num_elements() == 0) return Status::OK();
  const int64_t outer = product(in.shape(), 0, static_cast<int>(axis));
  const int64_t inner = product(in.shape(), static_cast<int>(axis), in.rank());
  kernels::one_hot(in.raw_data(), in.dtype(), outer, out.shape().dim(static_cast<int>(axis)), inner,
                   ctx.input(2).raw_data(), ctx.input(3).raw_data(), dtype_size(out.dtype()),
                   out.mutable_raw_data());
  return Status::OK();
}

// ---- Gradient rules (ops/gradient.h): each slice or gather scatters dy back to where it was read.

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

int64_t product_of(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

// dy padded with zeros back to the input's shape.
void slice_grad(GradContext& c) {
  const GradTensor x = c.input(0);
  if (!x.shape().fully_defined() || c.input(1)->is_symbolic() || c.input(2)->is_symbolic()) {
    // Shapes known only at run time: dy is scattered back at begin (end = begin + dy's shape).
    const GradTensor begin = cast(c.input(1), DType::kInt32);
    AttrList masks;
    for (int k = 0; k < 5; ++k) masks.push_back(int64_t{0});
    c.set(0, emit1("StridedSliceGrad",
                   {shape_of(x), begin, begin + shape_of(c.grad()), ones_like(begin), c.grad()},
                   std::move(masks)));
    return;
  }
  const std::vector<int64_t> dims = x.shape().dim_vector();
  const std::vector<int64_t> begin = known_ints(c.input(1), "Slice", "begin");
  const std::vector<int64_t> size = known_ints(c.input(2), "Slice", "size");
  std::vector<int64_t> paddings;
  for (size_t d = 0; d < dims.size(); ++d) {
    const int64_t taken = size[d] < 0 ? dims[d] - begin[d] : size[d];
    paddings.push_back(begin[d]);
    paddings.push_back(dims[d] - begin[d] - taken);
  }
  const int64_t matrix[] = {static_cast<int64_t>(dims.size()), 2};
  c.set(0, emit1("Pad", {c.grad(), reshape_to(int_vector(paddings), int_vector(matrix))}));
}

void strided_slice_grad(GradContext& c) {
  AttrList attrs;
  for (const AttrValue& a : c.attrs) attrs.push_back(a);
  c.set(0, emit1("StridedSliceGrad", {shape_of(c.input(0)), c.input(1), c.input(2), c.input(3), c.grad()},
                 std::move(attrs)));
}

// StridedSliceGrad is linear and StridedSlice is its adjoint.
void strided_slice_grad_grad(GradContext& c) {
  AttrList attrs;
  for (const AttrValue& a : c.attrs) attrs.push_back(a);
  c.set(4, emit1("StridedSlice", {c.grad(), c.input(1), c.input(2), c.input(3)}, std::move(attrs)));
}

// The gather gradient from sizes computed in the graph (see Note [Gather gradient]): `groups` rows of
// params before the axis (`batch` of them in the batch dims), `axis_dim` along it, `inner` elements after
// it, `n` indices per batch; `offset_rows` false when every row is in one group (axis 0, nothing before).
void gather_grad_from_sizes(GradContext& c, const GradTensor& groups, const GradTensor& axis_dim,
                            const GradTensor& inner, const GradTensor& n, const GradTensor& batch,
                            bool offset_rows) {
  const GradTensor params = c.input(0), indices = c.input(1);
  const int64_t flat[] = {-1};
  GradTensor ids = reshape_to(cast(indices, DType::kInt64), int_vector(flat));
  if (offset_rows) {
    const GradTensor range =
        emit1("Range", {scalar(0, DType::kInt64), cast(groups, DType::kInt64), scalar(1, DType::kInt64)});
    const GradTensor first_rows =
        reshape_to(range * cast(axis_dim, DType::kInt64),
                   stack_ints({batch, binary("FloorDiv", groups, batch), scalar(1, DType::kInt32)}));
    ids = reshape_to(
        reshape_to(cast(indices, DType::kInt64), stack_ints({batch, scalar(1, DType::kInt32), n})) +
            first_rows,
        int_vector(flat));
  }
  const GradTensor rows = emit1(
      "UnsortedSegmentSum", {reshape_to(c.grad(), stack_ints({groups * n, inner})), ids, groups * axis_dim});
  c.set(0, reshape_to(rows, shape_of(params)));
}

// The gather gradient with shapes read at run time (unknown dims while tracing).
void dynamic_gather_grad(GradContext& c, const GatherDims& g) {
  const GradTensor params = c.input(0), indices = c.input(1);
  const int pr = params.rank(), ir = indices.rank();
  const int bd = static_cast<int>(g.batch_dims), axis = static_cast<int>(g.axis);
  gather_grad_from_sizes(c, dims_product(params, 0, axis), dims_product(params, axis, axis + 1),
                         dims_product(params, axis + 1, pr), dims_product(indices, bd, ir),
                         dims_product(params, 0, bd), axis > 0);
}

// The product of x's dims in [lo, hi), with lo and hi int32 scalars computed in the graph.
GradTensor dims_product_between(const GradTensor& x, const GradTensor& lo, const GradTensor& hi) {
  const int64_t one[] = {1}, first_axis[] = {0};
  const GradTensor dims =
      emit1("Slice", {shape_of(x), reshape_to(lo, int_vector(one)), reshape_to(hi - lo, int_vector(one))});
  return emit1("Prod", {dims, int_vector(first_axis)});
}

// The gather gradient when the axis itself is computed in the graph: the sizes around it are products of
// slices of params' shape at the (normalised) axis. The forward op has already checked the axis's range.
void computed_axis_gather_grad(GradContext& c) {
  const GradTensor params = c.input(0), indices = c.input(1);
  const int pr = params.rank(), ir = indices.rank();
  int bd = static_cast<int>(c.attr_int(0));
  if (bd < 0) bd += ir;
  const GradTensor rank = scalar(pr, DType::kInt32), one = scalar(1, DType::kInt32);
  const GradTensor axis = binary("FloorMod", cast(c.input(2), DType::kInt32), rank);
  gather_grad_from_sizes(c, dims_product_between(params, scalar(0, DType::kInt32), axis),
                         dims_product_between(params, axis, axis + one),
                         dims_product_between(params, axis + one, rank), dims_product(indices, bd, ir),
                         dims_product(params, 0, bd), /*offset_rows=*/true);
}

// Note [Gather gradient]: with params collapsed to [batch, outer, axis_dim, inner] and indices to
// [batch, n], dy is [batch, outer, n, inner], and row (b, o, j) of dy belongs to row
// (b, o, indices[b, j]) of params. Numbering the params rows (b * outer + o) * axis_dim + index makes
// the gradient one UnsortedSegmentSum of dy's rows, with no transposes.
void gather_grad(GradContext& c) {
  const GradTensor indices = c.input(1);
  if (!c.input(0).shape().fully_defined() || !indices.shape().fully_defined()) {
    if (!c.input(0).shape().rank_known() || !indices.shape().rank_known())
      check_ok(
          make_error(Code::kUnimplemented, "GatherV2: the gradient needs the ranks of params and indices"));
    if (c.input(2)->is_symbolic()) return computed_axis_gather_grad(c);
    GatherDims g;
    check_ok(gather_dims(c.input(0).rank(), indices.rank(), known_ints(c.input(2), "GatherV2", "axis")[0],
                         c.attr_int(0), &g));
    return dynamic_gather_grad(c, g);
  }
  if (c.input(2)->is_symbolic()) return computed_axis_gather_grad(c);
  const std::vector<int64_t> pd = c.input(0).shape().dim_vector(), id = indices.shape().dim_vector();
  GatherDims g;
  check_ok(gather_dims(static_cast<int>(pd.size()), static_cast<int>(id.size()),
                       known_ints(c.input(2), "GatherV2", "axis")[0], c.attr_int(0), &g));
  const size_t bd = static_cast<size_t>(g.batch_dims), axis = static_cast<size_t>(g.axis);
  const int64_t groups = product_of(pd, 0, axis), axis_dim = pd[axis];
  const int64_t inner = product_of(pd, axis + 1, pd.size()), n = product_of(id, bd, id.size());
  GradTensor ids;
  if (groups == 1) {
    ids = reshape(indices, {n});
  } else {
    const int64_t batch = product_of(pd, 0, bd);
    const DType dtype = groups * axis_dim > INT32_MAX ? DType::kInt64 : indices.dtype();
    GradTensor range =
        emit1("Range", {scalar(0, dtype), scalar(static_cast<double>(groups), dtype), scalar(1, dtype)});
    GradTensor first_rows =
        reshape(range * scalar(static_cast<double>(axis_dim), dtype), {batch, groups / batch, 1});
    ids = reshape(reshape(cast(indices, dtype), {batch, 1, n}) + first_rows, {groups * n});
  }
  GradTensor rows =
      emit1("UnsortedSegmentSum", {reshape(c.grad(), {groups * n, inner}), ids,
                                   scalar(static_cast<double>(groups * axis_dim), DType::kInt64)});
  c.set(0, reshape(rows, pd));
}

// Row j of data went to segment ids[j]; rows with negative ids were dropped and get zeros.
void segment_sum_grad(GradContext& c) {
  const GradTensor ids = c.input(1), dy = c.grad();
  const GradTensor zero_id = scalar(0, ids.dtype());
  GradTensor rows = emit1("GatherV2", {dy, binary("Maximum", ids, zero_id), scalar(0, DType::kInt32)});
  // The mask of kept rows, shaped [ids..., 1, ...] to broadcast against data's rows.
  GradTensor kept = compare("GreaterEqual", ids, zero_id);
  if (!ids.shape().rank_known() || !c.input(0).shape().rank_known())
    check_ok(
        make_error(Code::kUnimplemented, "UnsortedSegmentSum: the gradient needs the ranks of its inputs"));
  for (int d = ids.rank(); d < c.input(0).rank(); ++d) kept = expand_dims(kept, -1);
  c.set(0, select(kept, rows, scalar(0, dy.dtype())));
}

void select_grad(GradContext& c) {
  const GradTensor cond = c.input(0), dy = c.grad();
  const GradTensor zero = scalar(0, dy.dtype());
  c.set(1, reduce_to(select(cond, dy, zero), c.input(1)));
  c.set(2, reduce_to(select(cond, zero, dy), c.input(2)));
}

// Each element of the result is t's, the lower or the upper bound's: the one the kernel picked gets dy.
// The masks follow the kernel's order (min with the upper bound first) so that they stay exclusive even
// when a lower bound exceeds the upper one.
void clip_grad(GradContext& c) {
  const GradTensor t = c.input(0), lo = c.input(1), hi = c.input(2), dy = c.grad();
  const GradTensor zero = scalar(0, dy.dtype());
  const GradTensor above = compare("Greater", t, hi);
  const GradTensor below = compare("Less", select(above, hi, t), lo);
  const GradTensor not_below = select(below, zero, dy);
  c.set(0, select(above, zero, not_below));
  c.set(1, reduce_to(select(below, dy, zero), lo));
  c.set(2, reduce_to(select(above, not_below, zero), hi));
}

}  // namespace

namespace {
// StridedSlice's index attributes; StridedSliceGrad declares the same ones after its `shape`, and its
// gradient passes them on to StridedSlice unchanged, so both take them from here.
OpBuilder& add_strided_slice_attrs(OpBuilder& b) {
  return b.attr("begin_mask", AttrType::kInt, int64_t{0})
      .attr("end_mask", AttrType::kInt, int64_t{0})
      .attr("ellipsis_mask", AttrType::kInt, int64_t{0})
      .attr("new_axis_mask", AttrType::kInt, int64_t{0})
      .attr("shrink_axis_mask", AttrType::kInt, int64_t{0});
}
}  // namespace

void register_scatter_nd_ops(OpRegistry& r);           // scatter_nd.cc
void register_sparse_segment_ops(OpRegistry& r);       // sparse_segment.cc
void register_sort_ops(OpRegistry& r);                 // sort.cc
void register_sparse_ops(OpRegistry& r);               // sparse.cc
void register_bincount_ops(OpRegistry& r);             // bincount.cc
void register_ragged_ops(OpRegistry& r);               // ragged.cc
void register_cumulative_logsumexp_op(OpRegistry& r);  // cumulative_logsumexp.cc
void register_reverse_roll_ops(OpRegistry& r);         // reverse_roll.cc

void register_array_index_ops(OpRegistry& r) {
  register_scatter_nd_ops(r);
  register_sparse_segment_ops(r);
  register_sort_ops(r);
  register_sparse_ops(r);
  register_bincount_ops(r);
  register_ragged_ops(r);
  register_cumulative_logsumexp_op(r);
  register_reverse_roll_ops(r);
  constexpr DTypeSet kGatherIndexTypes = kIndexTypes;
  constexpr DTypeSet kOneHotIndexTypes = kIndexTypes | dtype_bit(DType::kUInt8);
  OpBuilder("Slice")
      .doc(
          "The block starting at begin with the given size (-1: to the end). slice([[1, 2, 3]], [0, 1], [1, "
          "-1]) "
          "== [[2, 3]]")
      .input("input")
      .input_shape_like("begin")
      .input_shape_like("size")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .flags(kKernelAllocates)
      .shape(&slice_shape)
      .kernel(kAllTypesAndComplex, &slice_kernel)
      .grad(&slice_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder slice_op("StridedSlice");
  slice_op
      .doc(
          "Python indexing x[b:e:s, i, ..., newaxis] with TensorFlow's masks. x = [1, 2, 3, 4]: x[::-2] == "
          "[4, 2]")
      .input("input")
      .input_shape_like("begin")
      .input_shape_like("end")
      .input_shape_like("strides")
      .output("output")
      .type_var(kAllTypesAndComplex);
  add_strided_slice_attrs(slice_op)
      .flags(kKernelAllocates)
      .shape(&strided_slice_shape)
      .kernel(kAllTypesAndComplex, &strided_slice_kernel)
      .grad(&strided_slice_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("GatherV2")
      .doc("Takes slices of params along axis at the given indices. gather([10, 20, 30], [2, 0]) == [30, 10]")
      .input("params")
      .input_fixed("indices", kGatherIndexTypes)
      .input_shape_like("axis")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .attr("batch_dims", AttrType::kInt, int64_t{0})
      .shape(&gather_shape)
      .kernel(kAllTypesAndComplex, &gather_kernel)
      .grad(&gather_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder slice_grad_op("StridedSliceGrad");
  slice_grad_op
      .doc(
          "The gradient of StridedSlice: dy scattered into zeros of `shape` where the slice reads. "
          "strided_slice_grad(shape=[4], begin=[0], end=[4], strides=[2], dy=[7, 8]) == [7, 0, 8, 0]")
      .input_shape_like("shape")
      .input_shape_like("begin")
      .input_shape_like("end")
      .input_shape_like("strides")
      .input("dy")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .dispatch_on_input(4);
  add_strided_slice_attrs(slice_grad_op)
      .shape(&strided_slice_grad_shape)
      .kernel(kAllTypesAndComplex, &strided_slice_grad_kernel)
      .grad(&strided_slice_grad_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("UnsortedSegmentSum")
      .doc(
          "Sums data's rows by segment_ids (a prefix of data's shape) into num_segments rows; negative ids "
          "drop their rows. unsorted_segment_sum([1, 2, 3], [1, 0, 1], 2) == [2, 4]")
      .input("data")
      .input_fixed("segment_ids", kIndexTypes)
      .input_shape_like("num_segments")
      .output("output")
      .type_var(kNumericAndComplexTypes)  // complex: GatherV2's gradient
      .shape(&segment_sum_shape)
      .kernel(kNumericAndComplexTypes, &segment_sum_kernel)
      .grad(&segment_sum_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("Where")
      .doc(
          "Coordinates of the non-zero (true) elements, int64 [num_true, rank]. where([[True, False], "
          "[False, True]]) "
          "== [[0, 0], [1, 1]]")
      .input_fixed("condition", kAllTypes)
      .output("index")
      .type_var(kAllTypes)
      .flags(kKernelAllocates | kNotDifferentiable)
      .shape(&where_shape)
      .kernel(kAllTypes, &where_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("SelectV2")
      .doc(
          "condition ? t : e element-wise, all three broadcast. where([True, False], [1, 2], [3, 4]) == [1, "
          "4]")
      .input_fixed("condition", kBoolType)
      .input("t")
      .input("e")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .dispatch_on_input(1)
      .flags(kElementwise)
      .shape(&select_shape)
      .kernel(kAllTypesAndComplex, &select_kernel)
      .grad(&select_grad)
      .batching(BatchingRule::kBroadcasting)
      .done(r);
  OpBuilder("ClipByValue")
      .doc(
          "min(max(t, clip_value_min), clip_value_max); the bounds broadcast to t. clip_by_value([-1, 5], 0, "
          "3) == "
          "[0, 3]")
      .input("t")
      .input("clip_value_min")
      .input("clip_value_max")
      .output("output")
      .type_var(kNumericTypes)
      .flags(kElementwise)
      .shape(&clip_shape)
      .kernel(kNumericTypes, &clip_kernel)
      .grad(&clip_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("OneHot")
      .doc(
          "on_value where the index equals the position along a new axis, else off_value. one_hot([0, 2], 3) "
          "== "
          "[[1, 0, 0], [0, 0, 1]]")
      .input_fixed("indices", kOneHotIndexTypes)
      .input_shape_like("depth")
      .input("on_value")
      .input("off_value")
      .output("output")
      .type_var(kAllTypes)
      .attr("axis", AttrType::kInt, int64_t{-1})
      .dispatch_on_input(2)
      .flags(kNotDifferentiable)
      .shape(&one_hot_shape)
      .kernel(kAllTypes, &one_hot_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
