// Sorting and selection: TopKV2 (tf.math.top_k; tf.sort and tf.argsort are built on it, as in TensorFlow),
// ApproxTopK (tf.math.approx_max_k/approx_min_k), InTopKV2, LowerBound/UpperBound (tf.searchsorted),
// Bucketize, Unique and UniqueWithCounts. Registered from
// register_array_index_ops (array_index.cc); kernels in kernels/sort.h.
#include "ember/kernels/sort.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "ember/kernels/array.h"
#include "ember/kernels/compute_type.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

constexpr DTypeSet kOutIndexTypes = kIndexTypes;

// ---- TopKV2(input, k; sorted, index_type): the k largest along the last axis and their indices.

Status top_k_shape(InferContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  const Shape& k_spec = ctx.inputs[1].shape;
  if (k_spec.rank_known() && k_spec.rank() != 0)
    return invalid_argument("TopKV2: k must be a scalar, got shape ", k_spec.to_string());
  if (in.rank_known() && in.rank() == 0)
    return invalid_argument("TopKV2: input must be at least 1-D, got a scalar");
  const PartialValue k_value = ctx.value_of(1);
  const int64_t k = k_value.fully_known() ? k_value.values[0] : kUnknownDim;
  if (k_value.fully_known() && k < 0) return invalid_argument("TopKV2: k must be non-negative, got ", k);
  const DType index_type = ctx.attr_dtype(1);
  if (!dtype_in(index_type, kOutIndexTypes))
    return invalid_argument("TopKV2: index_type must be int32 or int64, got ", dtype_name(index_type));
  Shape out = Shape::unknown_rank();
  if (in.rank_known()) {
    const int64_t n = in.dim(in.rank() - 1);
    if (k >= 0 && n >= 0 && k > n)
      return invalid_argument("TopKV2: input must have at least k columns; had ", n, ", needed ", k);
    out = in;
    out.set_dim(in.rank() - 1, k);
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  ctx.outputs.push_back(TensorSpec{index_type, out});
  return Status::OK();
}

Status top_k_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  if (ctx.input(1).rank() != 0)
    return invalid_argument("TopKV2: k must be a scalar, got shape ", ctx.input(1).shape().to_string());
  const int64_t k = ctx.int_values(1)[0];
  const int64_t n = in.shape().dim(in.rank() - 1);
  if (k < 0) return invalid_argument("TopKV2: k must be non-negative, got ", k);
  if (k > n) return invalid_argument("TopKV2: input must have at least k columns; had ", n, ", needed ", k);
  const int64_t rows = product(in.shape(), 0, in.rank() - 1);
  if (rows * k == 0) return Status::OK();
  kernels::top_k(in.raw_data(), in.dtype(), rows, n, k, ctx.output(0).mutable_raw_data(),
                 ctx.output(1).mutable_raw_data(), ctx.output(1).dtype());
  return Status::OK();
}

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

// ---- ApproxTopK(input; k, reduction_dimension, recall_target, is_max_k, reduction_input_size_override,
// aggregate_to_topk): the k largest (or smallest) along one axis and their int32 indices.
//
// Note [ApproxTopK on a CPU]
// TensorFlow's ApproxTopK is approximate only where XLA lowers it for TPUs; on a CPU its kernel is TopKV2's
// (eager, last axis, is_max_k only) or XLA's exact sort (jit_compile, any axis, min too), so it returns the
// exact top k whatever recall_target, reduction_input_size_override and aggregate_to_topk say (eager
// TensorFlow returns k elements even with aggregate_to_topk false). ember computes the exact answer for every
// axis and both directions, in Note [Sort order]'s order: for the smallest, ascending with NaN last; equal
// values (0 and -0 among them) by lower index.

constexpr DTypeSet kApproxTopKTypes =
    dtype_bit(DType::kFloat16) | dtype_bit(DType::kBFloat16) | dtype_bit(DType::kFloat32);

// The reduction axis in [0, rank), or an error naming the attribute.
Status approx_top_k_axis(int64_t reduction_dimension, int rank, int& axis) {
  if (reduction_dimension < -rank || reduction_dimension >= rank)
    return invalid_argument("ApproxTopK: reduction_dimension must be in [", -rank, ", ", rank,
                            ") for an input of rank ", rank, ", got ", reduction_dimension);
  axis = static_cast<int>(reduction_dimension < 0 ? reduction_dimension + rank : reduction_dimension);
  return Status::OK();
}

Status approx_top_k_shape(InferContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  const int64_t k = ctx.attr_int(0);
  if (k < 0) return invalid_argument("ApproxTopK: k must be non-negative, got ", k);
  if (!in.rank_known()) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, in});
    ctx.outputs.push_back(TensorSpec{DType::kInt32, in});
    return Status::OK();
  }
  if (in.rank() == 0) return invalid_argument("ApproxTopK: input must be at least 1-D, got a scalar");
  int axis = 0;
  EMBER_RETURN_IF_ERROR(approx_top_k_axis(ctx.attr_int(1), in.rank(), axis));
  const int64_t n = in.dim(axis);
  if (n >= 0 && k > n)
    return invalid_argument("ApproxTopK: input must have at least k elements along reduction_dimension ",
                            ctx.attr_int(1), "; had ", n, ", needed ", k);
  Shape out = in;
  out.set_dim(axis, k);
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  ctx.outputs.push_back(TensorSpec{DType::kInt32, out});
  return Status::OK();
}

// Each of the outer * inner slices along `axis` (n elements, stride `inner`): its k first in the order of
// Note [ApproxTopK on a CPU].
template <typename T>
void approx_top_k_slices(const T* in, int64_t outer, int64_t n, int64_t inner, int64_t k, bool largest,
                         T* values, int32_t* indices) {
  using C = kernels::compute_t<T>;
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::vector<C> slice(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* base = in + o * n * inner + i;
      for (int64_t j = 0; j < n; ++j) slice[j] = static_cast<C>(base[j * inner]);
      std::iota(order.begin(), order.end(), int64_t{0});
      auto before = [&](int64_t a, int64_t b) {
        const C va = slice[a], vb = slice[b];
        const bool na = std::isnan(va), nb = std::isnan(vb);
        if (na || nb) return na != nb ? (largest ? na : nb) : a < b;
        if (va != vb) return largest ? va > vb : va < vb;
        return a < b;
      };
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      T* v = values + o * k * inner + i;
      int32_t* x = indices + o * k * inner + i;
      for (int64_t j = 0; j < k; ++j) {
        v[j * inner] = base[order[j] * inner];
        x[j * inner] = static_cast<int32_t>(order[j]);
      }
    }
  }
}

Status approx_top_k_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  const int64_t k = ctx.attr_int(0);
  if (in.rank() == 0) return invalid_argument("ApproxTopK: input must be at least 1-D, got a scalar");
  int axis = 0;
  EMBER_RETURN_IF_ERROR(approx_top_k_axis(ctx.attr_int(1), in.rank(), axis));
  const int64_t n = in.shape().dim(axis);
  if (k < 0 || k > n)
    return invalid_argument("ApproxTopK: input must have at least k elements along reduction_dimension ",
                            ctx.attr_int(1), "; had ", n, ", needed ", k);
  if (n > INT32_MAX)
    return invalid_argument("ApproxTopK: ", n, " elements along the axis do not fit int32 indices");
  const int64_t outer = product(in.shape(), 0, axis), inner = product(in.shape(), axis + 1, in.rank());
  if (outer * inner * k == 0) return Status::OK();
  const bool largest = ctx.attr_bool(3);
  if (largest && inner == 1) {  // TopKV2's case, and its kernel (parallel rows, radix sort)
    kernels::top_k(in.raw_data(), in.dtype(), outer, n, k, ctx.output(0).mutable_raw_data(),
                   ctx.output(1).mutable_raw_data(), DType::kInt32);
    return Status::OK();
  }
  visit_dtype<kApproxTopKTypes>(in.dtype(), [&]<typename T>() {
    approx_top_k_slices(in.data<T>(), outer, n, inner, k, largest, ctx.output(0).mutable_data<T>(),
                        ctx.output(1).mutable_data<int32_t>());
  });
  return Status::OK();
}

// dy goes back to the positions the values came from: row r's index i is element r * n + i of the
// flattened input. x, indices and dy have the same rank; the selection ran along the last axis.
GradTensor scatter_last_axis(const GradTensor& x, const GradTensor& indices, const GradTensor& dy) {
  const int r = x.rank();
  const GradTensor rows = dims_product(x, 0, r - 1), n = dims_product(x, r - 1, r);
  const GradTensor k = dims_product(indices, r - 1, r);
  const GradTensor first = reshape_to(emit1("Range", {scalar(0, DType::kInt32), rows * n, n}),
                                      stack_ints({rows, scalar(1, DType::kInt32)}));
  const GradTensor flat = reshape_to(reshape_to(cast(indices, DType::kInt32), stack_ints({rows, k})) + first,
                                     stack_ints({rows * k, scalar(1, DType::kInt32)}));
  const GradTensor spread =
      emit1("ScatterNd", {flat, reshape_to(dy, stack_ints({rows * k})), stack_ints({rows * n})});
  return reshape_to(spread, shape_of(x));
}

void top_k_grad(GradContext& c) {
  const GradTensor x = c.input(0);
  if (!x.shape().rank_known())
    check_ok(make_error(Code::kUnimplemented, "TopKV2: the gradient needs the rank of the input"));
  c.set(0, scatter_last_axis(x, c.output(1), c.grad(0)));
}

// As TopKV2's, along reduction_dimension: the axis moves last, and back.
void approx_top_k_grad(GradContext& c) {
  const GradTensor x = c.input(0);
  if (!x.shape().rank_known())
    check_ok(make_error(Code::kUnimplemented, "ApproxTopK: the gradient needs the rank of the input"));
  const int r = x.rank();
  int axis = 0;
  check_ok(approx_top_k_axis(c.attr_int(1), r, axis));
  if (axis == r - 1) return c.set(0, scatter_last_axis(x, c.output(1), c.grad(0)));
  std::vector<int64_t> perm(static_cast<size_t>(r));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  std::rotate(perm.begin() + axis, perm.begin() + axis + 1, perm.end());
  std::vector<int64_t> inverse(static_cast<size_t>(r));
  for (int i = 0; i < r; ++i) inverse[perm[i]] = i;
  const GradTensor spread =
      scatter_last_axis(transpose(x, perm), transpose(c.output(1), perm), transpose(c.grad(0), perm));
  c.set(0, transpose(spread, inverse));
}

// ---- InTopKV2(predictions [batch, classes], targets [batch], k): whether each target's prediction is
// among the k largest of its row: fewer than k predictions are strictly greater. A non-finite target
// prediction or a target out of range is false, as in TensorFlow.

Status in_top_k_shape(InferContext& ctx) {
  const Shape &p = ctx.inputs[0].shape, &t = ctx.inputs[1].shape, &k = ctx.inputs[2].shape;
  if (p.rank_known() && p.rank() != 2)
    return invalid_argument("InTopKV2: predictions must be 2-D [batch, classes], got shape ", p.to_string());
  if (t.rank_known() && t.rank() != 1)
    return invalid_argument("InTopKV2: targets must be 1-D [batch], got shape ", t.to_string());
  if (k.rank_known() && k.rank() != 0)
    return invalid_argument("InTopKV2: k must be a scalar, got shape ", k.to_string());
  int64_t batch = t.rank_known() ? t.dim(0) : kUnknownDim;
  if (p.rank_known() && p.dim(0) >= 0) {
    if (batch >= 0 && batch != p.dim(0))
      return invalid_argument("InTopKV2: predictions have ", p.dim(0), " rows but targets have ", batch,
                              " entries");
    batch = p.dim(0);
  }
  ctx.outputs.push_back(TensorSpec{DType::kBool, Shape({batch})});
  return Status::OK();
}

Status in_top_k_kernel(KernelContext& ctx) {
  const TensorImpl &p = ctx.input(0), &t = ctx.input(1);
  if (p.rank() != 2 || t.rank() != 1 || ctx.input(2).rank() != 0 || t.shape().dim(0) != p.shape().dim(0))
    return invalid_argument(
        "InTopKV2: expected predictions [batch, classes], targets [batch] and a scalar k, "
        "got ",
        p.shape().to_string(), ", ", t.shape().to_string(), " and ", ctx.input(2).shape().to_string());
  const int64_t k = ctx.int_values(2)[0], batch = p.shape().dim(0), classes = p.shape().dim(1);
  const float* pred = p.data<float>();
  bool* out = ctx.output(0).mutable_data<bool>();
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t target = kernels::load_index(t.raw_data(), t.dtype(), b);
    const float* row = pred + b * classes;
    if (target < 0 || target >= classes || !std::isfinite(row[target])) {
      out[b] = false;
      continue;
    }
    int64_t above = 0;
    for (int64_t j = 0; j < classes; ++j) above += row[j] > row[target];
    out[b] = above < k;
  }
  return Status::OK();
}

// ---- LowerBound / UpperBound(sorted_inputs [rows, n], values [rows, m]; out_type)

Status bound_shape(InferContext& ctx) {
  const Shape &s = ctx.inputs[0].shape, &v = ctx.inputs[1].shape;
  const std::string& op = ctx.op->name;
  if ((s.rank_known() && s.rank() != 2) || (v.rank_known() && v.rank() != 2))
    return invalid_argument(op, ": sorted_inputs and values must be 2-D, got shapes ", s.to_string(), " and ",
                            v.to_string());
  if (s.rank_known() && v.rank_known() && s.dim(0) >= 0 && v.dim(0) >= 0 && s.dim(0) != v.dim(0))
    return invalid_argument(op, ": sorted_inputs and values must have the same number of rows, got ",
                            s.to_string(), " and ", v.to_string());
  const DType out_type = ctx.attr_dtype(0);
  if (!dtype_in(out_type, kOutIndexTypes))
    return invalid_argument(op, ": out_type must be int32 or int64, got ", dtype_name(out_type));
  ctx.outputs.push_back(TensorSpec{out_type, v});
  return Status::OK();
}

template <bool kUpper>
Status bound_kernel(KernelContext& ctx) {
  const TensorImpl &s = ctx.input(0), &v = ctx.input(1);
  if (s.rank() != 2 || v.rank() != 2 || s.shape().dim(0) != v.shape().dim(0))
    return invalid_argument(ctx.op->name, ": expected sorted_inputs [rows, n] and values [rows, m], got ",
                            s.shape().to_string(), " and ", v.shape().to_string());
  const int64_t rows = s.shape().dim(0), n = s.shape().dim(1), m = v.shape().dim(1);
  if (ctx.output(0).dtype() == DType::kInt32 && n > INT32_MAX)
    return invalid_argument(ctx.op->name, ": ", n, " sorted elements do not fit out_type int32");
  kernels::search_sorted(s.raw_data(), v.raw_data(), s.dtype(), rows, n, m, kUpper,
                         ctx.output(0).mutable_raw_data(), ctx.output(0).dtype());
  return Status::OK();
}

// ---- Bucketize(input; boundaries): each value's bucket, the number of boundaries <= it.
//
// The boundaries attribute is TensorFlow's list(float), held as a 1-D tensor (GraphDef writes it as a
// list { f }: graph_def_ops' is_float_list). TensorFlow holds the boundaries as float32 and compares each
// value with them in C++'s arithmetic: an int32 or int64 value becomes a float32 (so 16777217 lands where
// 16777216 does), a float64 one stays float64 against the widened boundary. NaN is above every boundary.

constexpr DTypeSet kBucketizeTypes = dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64) |
                                     dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);

Status bucketize_boundaries(const AttrReader& attrs, std::vector<float>& out) {
  const TensorImpl& given = *attrs.attr_tensor(0);
  if (given.rank() != 1 || !dtype_in(given.dtype(), kNumericTypes))
    return invalid_argument("Bucketize: boundaries must be a list of floats, got a ",
                            dtype_name(given.dtype()), " tensor of shape ", given.shape().to_string());
  visit_dtype<kNumericTypes>(given.dtype(), [&]<typename T>() {
    for (int64_t i = 0; i < given.num_elements(); ++i)
      out.push_back(static_cast<float>(static_cast<double>(given.data<T>()[i])));
  });
  for (size_t i = 1; i < out.size(); ++i)
    if (!(out[i - 1] <= out[i]))
      return invalid_argument("Bucketize: expected sorted boundaries, got ", out[i - 1], " before ", out[i],
                              " (at positions ", i - 1, " and ", i, ")");
  return Status::OK();
}

Status bucketize_shape(InferContext& ctx) {
  std::vector<float> boundaries;
  EMBER_RETURN_IF_ERROR(bucketize_boundaries(ctx, boundaries));
  ctx.outputs.push_back(TensorSpec{DType::kInt32, ctx.inputs[0].shape});
  return Status::OK();
}

Status bucketize_kernel(KernelContext& ctx) {
  std::vector<float> boundaries;
  EMBER_RETURN_IF_ERROR(bucketize_boundaries(ctx, boundaries));
  const TensorImpl& in = ctx.input(0);
  int32_t* out = ctx.output(0).mutable_data<int32_t>();
  visit_dtype<kBucketizeTypes>(in.dtype(), [&]<typename T>() {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    std::vector<C> edges(boundaries.begin(), boundaries.end());
    const T* x = in.data<T>();
    for (int64_t i = 0; i < in.num_elements(); ++i) {
      const C v = static_cast<C>(x[i]);
      out[i] = static_cast<int32_t>(std::upper_bound(edges.begin(), edges.end(), v) - edges.begin());
    }
  });
  return Status::OK();
}

// ---- Unique / UniqueWithCounts(x [n]; out_idx): the distinct elements in order of first appearance.

Status unique_shape(InferContext& ctx) {
  const Shape& x = ctx.inputs[0].shape;
  if (x.rank_known() && x.rank() != 1)
    return invalid_argument(ctx.op->name, ": x must be 1-D, got shape ", x.to_string());
  const DType out_idx = ctx.attr_dtype(0);
  if (!dtype_in(out_idx, kOutIndexTypes))
    return invalid_argument(ctx.op->name, ": out_idx must be int32 or int64, got ", dtype_name(out_idx));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape({kUnknownDim})});
  ctx.outputs.push_back(TensorSpec{out_idx, x.rank_known() ? x : Shape({kUnknownDim})});
  if (ctx.op->outputs.size() == 3) ctx.outputs.push_back(TensorSpec{out_idx, Shape({kUnknownDim})});
  return Status::OK();
}

Status unique_kernel(KernelContext& ctx) {
  const TensorImpl& x = ctx.input(0);
  if (x.rank() != 1)
    return invalid_argument(ctx.op->name, ": x must be 1-D, got shape ", x.shape().to_string());
  const int64_t n = x.num_elements();
  const DType out_idx = ctx.attr_dtype(0);
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 1, out_idx, x.shape()));
  std::vector<int64_t> first(static_cast<size_t>(n)), counts(static_cast<size_t>(n));
  const int64_t distinct = kernels::unique(x.raw_data(), x.dtype(), n, ctx.output(1).mutable_raw_data(),
                                           out_idx, first.data(), counts.data());
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, x.dtype(), Shape({distinct})));
  const size_t elem = dtype_size(x.dtype());
  char* y = static_cast<char*>(ctx.output(0).mutable_raw_data());
  const char* src = static_cast<const char*>(x.raw_data());
  for (int64_t i = 0; i < distinct; ++i) std::memcpy(y + i * elem, src + first[i] * elem, elem);
  if (ctx.outputs.size() == 3) {
    EMBER_RETURN_IF_ERROR(allocate_output(ctx, 2, out_idx, Shape({distinct})));
    for (int64_t i = 0; i < distinct; ++i) {
      if (out_idx == DType::kInt64)
        ctx.output(2).mutable_data<int64_t>()[i] = counts[i];
      else
        ctx.output(2).mutable_data<int32_t>()[i] = static_cast<int32_t>(counts[i]);
    }
  }
  return Status::OK();
}

// ---- ListDiff (tf.compat.v1.setdiff1d): the elements of x that are not in y, in x's order, with their
// positions in x. TensorFlow's gradients of reductions over computed axes use it.

Status list_diff_shape(InferContext& ctx) {
  for (int i = 0; i < 2; ++i) {
    const Shape& s = ctx.inputs[i].shape;
    if (s.rank_known() && s.rank() != 1)
      return invalid_argument("ListDiff: ", i == 0 ? "x" : "y", " must be 1-D, got shape ", s.to_string());
  }
  const DType out_idx = ctx.attr_dtype(0);
  if (!dtype_in(out_idx, kOutIndexTypes))
    return invalid_argument("ListDiff: out_idx must be int32 or int64, got ", dtype_name(out_idx));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape({kUnknownDim})});
  ctx.outputs.push_back(TensorSpec{out_idx, Shape({kUnknownDim})});
  return Status::OK();
}

Status list_diff_kernel(KernelContext& ctx) {
  const TensorImpl& x = ctx.input(0);
  const TensorImpl& y = ctx.input(1);
  for (const TensorImpl* t : {&x, &y})
    if (t->rank() != 1)
      return invalid_argument("ListDiff: ", t == &x ? "x" : "y", " must be 1-D, got shape ",
                              t->shape().to_string());
  std::vector<int64_t> kept;
  visit_dtype<kAllTypes>(x.dtype(), [&]<typename T>() {
    using C = kernels::compute_t<T>;
    // y's values sorted, NaN left out (it equals nothing, and would break the ordering); 0 == -0.
    std::vector<C> sorted;
    sorted.reserve(static_cast<size_t>(y.num_elements()));
    for (int64_t i = 0; i < y.num_elements(); ++i) {
      const C v = static_cast<C>(y.data<T>()[i]);
      if (v == v) sorted.push_back(v);
    }
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      const C v = static_cast<C>(x.data<T>()[i]);
      const auto at = std::lower_bound(sorted.begin(), sorted.end(), v);
      if (!(at != sorted.end() && *at == v)) kept.push_back(i);
    }
  });
  const int64_t n = static_cast<int64_t>(kept.size());
  const DType out_idx = ctx.attr_dtype(0);
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, x.dtype(), Shape({n})));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 1, out_idx, Shape({n})));
  const size_t elem = dtype_size(x.dtype());
  char* out = static_cast<char*>(ctx.output(0).mutable_raw_data());
  const char* src = static_cast<const char*>(x.raw_data());
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(out + i * elem, src + kept[i] * elem, elem);
    if (out_idx == DType::kInt64) {
      ctx.output(1).mutable_data<int64_t>()[i] = kept[i];
    } else {
      if (kept[i] > INT32_MAX)
        return invalid_argument("ListDiff: index ", kept[i], " does not fit in int32; use out_idx=int64");
      ctx.output(1).mutable_data<int32_t>()[i] = static_cast<int32_t>(kept[i]);
    }
  }
  return Status::OK();
}

}  // namespace

void register_sort_ops(OpRegistry& r) {
  OpBuilder("ListDiff")
      .doc(
          "The elements of x that are not in y, in x's order, and their positions in x. "
          "setdiff1d([1, 2, 3, 4], [2, 4]) == ([1, 3], [0, 2])")
      .input("x")
      .input("y")
      .output("out")
      .output("idx")
      .type_var(kAllTypes)
      .attr("out_idx", AttrType::kDType, DType::kInt32)
      .flags(kKernelAllocates | kNotDifferentiable)
      .shape(&list_diff_shape)
      .kernel(kAllTypes, &list_diff_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("TopKV2")
      .doc(
          "The k largest along the last axis, largest first (ties: lower index first), and their indices. "
          "top_k([1, 3, 2], 2) == ([3, 2], [1, 2])")
      .input("input")
      .input_shape_like("k")
      .output("values")
      .output("indices")
      .type_var(kNumericTypes)
      .attr("sorted", AttrType::kBool, true)
      .attr("index_type", AttrType::kDType, DType::kInt32)
      .shape(&top_k_shape)
      .kernel(kNumericTypes, &top_k_kernel)
      .grad(&top_k_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("ApproxTopK")
      .doc(
          "The exact k largest (is_max_k) or smallest along reduction_dimension and their int32 indices (the "
          "approximation attributes are accepted; Note [ApproxTopK on a CPU]). approx_max_k([1., 3., 2.], 2) "
          "== ([3., 2.], [1, 2])")
      .input("input")
      .output("values")
      .output("indices")
      .type_var(kApproxTopKTypes)
      .attr("k", AttrType::kInt)
      .attr("reduction_dimension", AttrType::kInt, int64_t{-1})
      .attr("recall_target", AttrType::kFloat, 0.95)
      .attr("is_max_k", AttrType::kBool, true)
      .attr("reduction_input_size_override", AttrType::kInt, int64_t{-1})
      .attr("aggregate_to_topk", AttrType::kBool, true)
      .shape(&approx_top_k_shape)
      .kernel(kApproxTopKTypes, &approx_top_k_kernel)
      .grad(&approx_top_k_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("Bucketize")
      .doc(
          "Each value's bucket among sorted float boundaries: how many boundaries are <= it. "
          "bucketize([-5, 10, 150], boundaries=[0., 10., 100.]) == [0, 2, 3]")
      .input("input")
      .output("output")
      .type_var(kBucketizeTypes)
      .attr("boundaries", AttrType::kTensor)
      .flags(kNotDifferentiable)
      .shape(&bucketize_shape)
      .kernel(kBucketizeTypes, &bucketize_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("InTopKV2")
      .doc(
          "Whether each target's prediction is among its row's k largest. in_top_k([[0.1, 0.9]], [1], 1) == "
          "[True]")
      .input("predictions")
      .input_fixed("targets", kIndexTypes)
      .input_shape_like("k")
      .output("precision")
      .type_var(dtype_bit(DType::kFloat32))
      .flags(kNotDifferentiable)
      .shape(&in_top_k_shape)
      .kernel(dtype_bit(DType::kFloat32), &in_top_k_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("LowerBound")
      .doc(
          "Per row, the first position in sorted_inputs whose element is >= each value. "
          "lower_bound([[1, 3, 5]], [[3, 4]]) == [[1, 2]]")
      .input("sorted_inputs")
      .input("values")
      .output("output")
      .type_var(kNumericTypes)
      .attr("out_type", AttrType::kDType, DType::kInt32)
      .flags(kNotDifferentiable)
      .shape(&bound_shape)
      .kernel(kNumericTypes, &bound_kernel<false>)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("UpperBound")
      .doc(
          "Per row, the first position in sorted_inputs whose element is > each value. "
          "upper_bound([[1, 3, 5]], [[3, 4]]) == [[2, 2]]")
      .input("sorted_inputs")
      .input("values")
      .output("output")
      .type_var(kNumericTypes)
      .attr("out_type", AttrType::kDType, DType::kInt32)
      .flags(kNotDifferentiable)
      .shape(&bound_shape)
      .kernel(kNumericTypes, &bound_kernel<true>)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("Unique")
      .doc(
          "The distinct elements in order of first appearance, and each element's position among them. "
          "unique([1, 1, 4, 1]) == ([1, 4], [0, 0, 1, 0])")
      .input("x")
      .output("y")
      .output("idx")
      .type_var(kAllTypes)
      .attr("out_idx", AttrType::kDType, DType::kInt32)
      .flags(kKernelAllocates | kNotDifferentiable)
      .shape(&unique_shape)
      .kernel(kAllTypes, &unique_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("UniqueWithCounts")
      .doc(
          "Unique, and how often each distinct element appears. unique_with_counts([1, 1, 4]) == ([1, 4], "
          "[0, 0, 1], [2, 1])")
      .input("x")
      .output("y")
      .output("idx")
      .output("count")
      .type_var(kAllTypes)
      .attr("out_idx", AttrType::kDType, DType::kInt32)
      .flags(kKernelAllocates | kNotDifferentiable)
      .shape(&unique_shape)
      .kernel(kAllTypes, &unique_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
