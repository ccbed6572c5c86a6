// Shape ops: Reshape, Transpose, ExpandDims, Squeeze, Identity, Shape, Size, Rank, ConcatV2, ConcatOffset,
// Pack, Unpack, SplitV and Bitcast. Indexing ops live in array_index.cc; ops that create values (Fill, Tile,
// BroadcastTo, Pad, Eye, Range, ...) in array_create.cc; the kernels in kernels/array.h.
//
// Note [Views]: Reshape, ExpandDims, Squeeze and Identity never copy: they are kKernelAllocates and
// return TensorImpl::view of their input. Transpose, Unpack, SplitV, Slice and StridedSlice return views
// too when the result happens to be one contiguous run of the input (moving only size-1 dims; splitting
// along the outermost non-1 dim; x[i] or x[a:b] on leading dims). Tensors are immutable, so sharing a
// buffer is always safe; the price is that a small view keeps its whole source alive, as in TensorFlow.
#include "ember/kernels/array.h"

#include <algorithm>
#include <cstring>

#include "ember/ops/families.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {

void register_array_index_ops(OpRegistry& r);   // array_index.cc
void register_array_create_ops(OpRegistry& r);  // array_create.cc
void register_tensor_array_ops(OpRegistry& r);  // tensor_array.cc

namespace {

// ---- Reshape

// TensorFlow's rule: the -1 dim takes whatever is left; zero-sized dims are left out of both products so
// that reshaping an empty tensor can still infer the other dims ([0] -> [0,-1] is [0,1]).
StatusOr<Shape> reshape_target(const Shape& in, const std::vector<int64_t>& req) {
  if (req.size() > static_cast<size_t>(kMaxRank))
    return invalid_argument("Reshape: shape ", list_str(req), " has rank ", req.size(),
                            ", more than the maximum ", kMaxRank);
  int unknown = -1;
  int64_t product_nonzero = 1;
  bool req_has_zero = false;
  for (size_t i = 0; i < req.size(); ++i) {
    if (req[i] == -1) {
      if (unknown >= 0)
        return invalid_argument("Reshape: only one dimension of shape ", list_str(req),
                                " may be -1, got -1 at both ", unknown, " and ", i);
      unknown = static_cast<int>(i);
    } else if (req[i] < 0) {
      return invalid_argument("Reshape: dimension ", i, " of shape ", list_str(req), " is ", req[i],
                              "; dimensions must be >= 0 (or -1 for one inferred dimension)");
    } else if (req[i] == 0) {
      req_has_zero = true;
    } else if (__builtin_mul_overflow(product_nonzero, req[i], &product_nonzero)) {
      return invalid_argument("Reshape: shape ", list_str(req), " has more than 2^63 elements");
    }
  }
  Shape out(req);
  const int64_t n = in.num_elements();
  if (n < 0) return out;  // unknown input size: a -1 stays unknown
  if (unknown >= 0) {
    int64_t in_nonzero = 1;
    bool in_has_zero = false;
    for (int64_t d : in.dims()) {
      if (d > 0 || !req_has_zero)
        in_nonzero *= d;
      else
        in_has_zero = true;
    }
    int64_t missing = in_nonzero / product_nonzero;
    if (!in_has_zero && missing * product_nonzero != in_nonzero)
      return invalid_argument("Reshape: cannot reshape a tensor with ", n, " elements to shape ",
                              list_str(req), ": ", n, " is not a multiple of ", product_nonzero);
    out.set_dim(unknown, missing);
  }
  if (out.num_elements() != n)
    return invalid_argument("Reshape: cannot reshape a tensor with ", n, " elements to shape ", list_str(req),
                            " (", out.num_elements(), " elements)");
  return out;
}

Status reshape_shape(InferContext& ctx) {
  const TensorSpec& shape_spec = ctx.inputs[1];
  if (shape_spec.shape.rank_known() && shape_spec.shape.rank() != 1)
    return invalid_argument("Reshape: 'shape' must be a vector, got a tensor of shape ",
                            shape_spec.shape.to_string());
  PartialValue req = ctx.value_of(1);
  if (req.fully_known()) {
    auto out = reshape_target(ctx.inputs[0].shape, req.values);
    if (!out.ok()) return out.status();
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, *out});
    return Status::OK();
  }
  if (!req.length_known || req.values.size() > static_cast<size_t>(kMaxRank)) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  // Partly known (tf.stack([tf.shape(x)[0], 3])): the known dims stand; when only one is open and the
  // input's size is known, the element count fixes it, as TensorFlow's shape function does.
  Shape out = req.as_shape();
  int open = -1, open_count = 0;
  int64_t known_product = 1;
  for (int i = 0; i < out.rank(); ++i) {
    if (out.dim(i) < 0) {
      open = i;
      ++open_count;
    } else if (!checked_mul(known_product, out.dim(i), &known_product)) {
      return invalid_argument("Reshape: shape ", out.to_string(), " has more than 2^63 elements");
    }
  }
  const int64_t n = ctx.inputs[0].shape.num_elements();
  if (known_product == 0 && n > 0)  // whatever the open dims are, the shape holds no element
    return invalid_argument("Reshape: cannot reshape a tensor with ", n, " elements to shape ",
                            out.to_string(), " (0 elements)");
  if (open_count == 1 && n >= 0 && known_product > 0) {
    if (n % known_product != 0)
      return invalid_argument("Reshape: cannot reshape a tensor with ", n, " elements to shape ",
                              out.to_string(), ": ", n, " is not a multiple of ", known_product);
    out.set_dim(open, n / known_product);
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

Status reshape_kernel(KernelContext& ctx) {
  if (ctx.input(1).rank() != 1)
    return invalid_argument("Reshape: 'shape' must be a vector, got a tensor of shape ",
                            ctx.input(1).shape().to_string());
  auto out = reshape_target(ctx.input(0).shape(), ctx.int_values(1));
  if (!out.ok()) return out.status();
  ctx.outputs[0] = TensorImpl::view(ctx.input(0), *out);
  return Status::OK();
}

// ---- Identity

Status identity_kernel(KernelContext& ctx) {
  ctx.outputs[0] = TensorImpl::view(ctx.input(0), ctx.input(0).shape());
  return Status::OK();
}

// ---- Bitcast(input, type): the same bytes read as another dtype (a view). Equal sizes keep the shape; a
// narrower type appends a dim of size in/out; a wider one needs a last dim of size out/in and drops it.

Status bitcast_shape(InferContext& ctx) {
  const DType from = ctx.inputs[0].dtype, to = ctx.attr_dtype(0);
  const Shape& in = ctx.inputs[0].shape;
  const int64_t from_size = static_cast<int64_t>(dtype_size(from)),
                to_size = static_cast<int64_t>(dtype_size(to));
  if (!dtype_in(to, kNumericAndComplexTypes))
    return invalid_argument("Bitcast: cannot bitcast to ", dtype_name(to), "; the type must be numeric");
  Shape out = in;
  if (from_size > to_size) {
    if (from_size % to_size != 0)
      return invalid_argument("Bitcast: cannot bitcast from ", dtype_name(from), " to ", dtype_name(to));
    if (out.rank_known() && out.rank() >= kMaxRank)
      return invalid_argument("Bitcast: bitcasting ", dtype_name(from), " to the narrower ", dtype_name(to),
                              " adds a dimension, but the input already has rank ", in.rank(), " (at most ",
                              kMaxRank, " dimensions); got shape ", in.to_string());
    if (out.rank_known()) out.push_back(from_size / to_size);
  } else if (from_size < to_size) {
    const int64_t ratio = to_size / from_size;
    if (to_size % from_size != 0 || (in.rank_known() && (in.rank() == 0 || (in.dim(in.rank() - 1) >= 0 &&
                                                                            in.dim(in.rank() - 1) != ratio))))
      return invalid_argument("Bitcast: cannot bitcast from ", dtype_name(from), " to ", dtype_name(to),
                              ": the input's last dim must be ", ratio, ", got shape ", in.to_string());
    if (out.rank_known()) {
      out = Shape();
      for (int d = 0; d + 1 < in.rank(); ++d) out.push_back(in.dim(d));
    }
  }
  ctx.outputs.push_back(TensorSpec{to, out});
  return Status::OK();
}

Status bitcast_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  const DType to = ctx.attr_dtype(0);
  std::vector<int64_t> dims = in.shape().dim_vector();
  const size_t from_size = dtype_size(in.dtype()), to_size = dtype_size(to);
  if (from_size > to_size) dims.push_back(static_cast<int64_t>(from_size / to_size));
  if (from_size < to_size) dims.pop_back();  // the shape function checked it is to_size / from_size
  ctx.outputs[0] = TensorImpl::view(in, to, Shape(dims), 0);
  return Status::OK();
}

// ---- Transpose

Status normalize_perm(const std::vector<int64_t>& perm, int rank, int* out) {
  if (static_cast<int>(perm.size()) != rank)
    return invalid_argument("Transpose: perm ", list_str(perm), " has ", perm.size(),
                            " entries but the input has rank ", rank);
  bool seen[kMaxRank] = {};
  for (int i = 0; i < rank; ++i) {
    int64_t p = perm[i] < 0 ? perm[i] + rank : perm[i];
    if (p < 0 || p >= rank || seen[p]) {
      std::string expected = "[";
      for (int j = 0; j < rank; ++j) expected += (j ? ", " : "") + std::to_string(j);
      return invalid_argument("Transpose: perm ", list_str(perm), " is not a permutation of ", expected, "]");
    }
    seen[p] = true;
    out[i] = static_cast<int>(p);
  }
  return Status::OK();
}

Status transpose_shape(InferContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  const Shape& perm_spec = ctx.inputs[1].shape;
  if (perm_spec.rank_known() && perm_spec.rank() != 1)
    return invalid_argument("Transpose: perm must be a vector, got a tensor of shape ",
                            perm_spec.to_string());
  PartialValue partial = ctx.value_of(1);
  if (!partial.fully_known()) {
    // An unknown permutation keeps only the rank (from the input or from perm's length).
    Shape out = in.rank_known() ? Shape(std::vector<int64_t>(in.rank(), kUnknownDim)) : Shape::unknown_rank();
    if (!in.rank_known() && partial.length_known && partial.values.size() <= static_cast<size_t>(kMaxRank))
      out = Shape(std::vector<int64_t>(partial.values.size(), kUnknownDim));
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
    return Status::OK();
  }
  const std::vector<int64_t>& perm = partial.values;
  Shape out;
  if (!in.rank_known()) {
    if (perm.size() > static_cast<size_t>(kMaxRank))
      return invalid_argument("Transpose: perm ", list_str(perm), " has more than ", kMaxRank, " entries");
    int p[kMaxRank];
    EMBER_RETURN_IF_ERROR(normalize_perm(perm, static_cast<int>(perm.size()), p));
    for (size_t i = 0; i < perm.size(); ++i) out.push_back(kUnknownDim);
  } else {
    int p[kMaxRank];
    EMBER_RETURN_IF_ERROR(normalize_perm(perm, in.rank(), p));
    for (int i = 0; i < in.rank(); ++i) out.push_back(in.dim(p[i]));
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

Status transpose_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  int perm[kMaxRank];
  EMBER_RETURN_IF_ERROR(normalize_perm(ctx.int_values(1), in.rank(), perm));
  Shape out_shape;
  for (int i = 0; i < in.rank(); ++i) out_shape.push_back(in.shape().dim(perm[i]));
  // Only size-1 dims move (or nothing does): the bytes are already in order. Note [Views].
  int last = -1;
  bool in_order = true;
  for (int i = 0; i < in.rank(); ++i) {
    if (in.shape().dim(perm[i]) == 1) continue;
    in_order &= perm[i] > last;
    last = perm[i];
  }
  if (in_order || in.num_elements() == 0) {
    ctx.outputs[0] = TensorImpl::view(in, out_shape);
    return Status::OK();
  }
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, in.dtype(), out_shape));
  kernels::transpose(in.raw_data(), ctx.output(0).mutable_raw_data(), dtype_size(in.dtype()),
                     in.shape().dims(), {perm, static_cast<size_t>(in.rank())});
  return Status::OK();
}

// ---- ExpandDims, Squeeze

StatusOr<Shape> expand_dims_target(const Shape& in, int64_t axis) {
  const int rank = in.rank();
  if (axis < -rank - 1 || axis > rank)
    return invalid_argument("ExpandDims: axis ", axis, " is out of range for a tensor of rank ", rank,
                            " (expected an axis in [", -rank - 1, ", ", rank, "])");
  if (rank >= kMaxRank)
    return invalid_argument("ExpandDims: the result would have rank ", rank + 1, ", more than the maximum ",
                            kMaxRank);
  int a = static_cast<int>(axis < 0 ? axis + rank + 1 : axis);
  Shape out;
  for (int i = 0; i < rank; ++i) {
    if (i == a) out.push_back(1);
    out.push_back(in.dim(i));
  }
  if (a == rank) out.push_back(1);
  return out;
}

// ExpandDims' axis: a scalar or a one-element vector (TensorFlow takes both).
Status check_expand_axis_spec(const Shape& axis) {
  if (axis.rank_known() && (axis.rank() > 1 || (axis.rank() == 1 && axis.dim(0) >= 0 && axis.dim(0) != 1)))
    return invalid_argument(
        "ExpandDims: axis must be a scalar or a one-element vector, got a tensor of shape ",
        axis.to_string());
  return Status::OK();
}

Status expand_dims_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_expand_axis_spec(ctx.inputs[1].shape));
  const Shape& in = ctx.inputs[0].shape;
  PartialValue axis = ctx.value_of(1);
  if (!in.rank_known() || !axis.fully_known() || axis.values.size() != 1) {
    Shape out = Shape::unknown_rank();
    if (in.rank_known() && in.rank() < kMaxRank)
      out = Shape(std::vector<int64_t>(in.rank() + 1, kUnknownDim));
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
    return Status::OK();
  }
  auto out = expand_dims_target(in, axis.values[0]);
  if (!out.ok()) return out.status();
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, *out});
  return Status::OK();
}

Status expand_dims_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_expand_axis_spec(ctx.input(1).shape()));
  auto out = expand_dims_target(ctx.input(0).shape(), ctx.int_values(1)[0]);
  if (!out.ok()) return out.status();
  ctx.outputs[0] = TensorImpl::view(ctx.input(0), *out);
  return Status::OK();
}

// Unknown dims named in squeeze_dims are assumed to be 1 (checked at run time); with no squeeze_dims an
// unknown dim may or may not go, so the result's rank is unknown.
StatusOr<Shape> squeeze_target(const Shape& in, const std::vector<int64_t>& axes) {
  const int rank = in.rank();
  bool drop[kMaxRank] = {};
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      return invalid_argument("Squeeze: axis ", axis, " is out of range for a tensor of rank ", rank,
                              " (expected an axis in [", -rank, ", ", rank, "))");
    int a = static_cast<int>(axis < 0 ? axis + rank : axis);
    if (in.dim(a) > 1 || in.dim(a) == 0)
      return invalid_argument("Squeeze: cannot squeeze dim ", a, " of shape ", in.to_string(),
                              ": expected a dimension of size 1, got ", in.dim(a));
    drop[a] = true;
  }
  Shape out;
  for (int i = 0; i < rank; ++i) {
    if (axes.empty()) {
      if (in.dim(i) == kUnknownDim) return Shape::unknown_rank();
      if (in.dim(i) == 1) continue;
    } else if (drop[i]) {
      continue;
    }
    out.push_back(in.dim(i));
  }
  return out;
}

Status squeeze_shape(InferContext& ctx) {
  if (!ctx.inputs[0].shape.rank_known()) {
    ctx.outputs.push_back(ctx.inputs[0]);
    return Status::OK();
  }
  auto out = squeeze_target(ctx.inputs[0].shape, ctx.attr_ints(0));
  if (!out.ok()) return out.status();
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, *out});
  return Status::OK();
}

Status squeeze_kernel(KernelContext& ctx) {
  auto out = squeeze_target(ctx.input(0).shape(), ctx.attr_ints(0));
  if (!out.ok()) return out.status();
  ctx.outputs[0] = TensorImpl::view(ctx.input(0), *out);
  return Status::OK();
}

// ---- Shape, Size, Rank

Status check_index_dtype(const char* op, DType d) {
  if (d != DType::kInt32 && d != DType::kInt64)
    return invalid_argument(op, ": out_type must be int32 or int64, got ", dtype_name(d));
  return Status::OK();
}

Status shape_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_index_dtype("Shape", ctx.attr_dtype(0)));
  const Shape& in = ctx.inputs[0].shape;
  ctx.outputs.push_back(TensorSpec{ctx.attr_dtype(0), Shape({in.rank_known() ? in.rank() : kUnknownDim})});
  return Status::OK();
}

Status write_index(TensorImpl& out, int64_t i, int64_t v, const char* op);

// ShapeN: Shape of each of its inputs, in one node (TensorFlow's convolution gradients ask for both shapes).
Status shape_n_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_index_dtype("ShapeN", ctx.attr_dtype(0)));
  if (ctx.inputs.empty()) return invalid_argument("ShapeN: expected at least 1 input, got 0");
  for (const TensorSpec& in : ctx.inputs)
    ctx.outputs.push_back(
        TensorSpec{ctx.attr_dtype(0), Shape({in.shape.rank_known() ? in.shape.rank() : kUnknownDim})});
  return Status::OK();
}

Status shape_n_kernel(KernelContext& ctx) {
  for (size_t k = 0; k < ctx.inputs.size(); ++k) {
    const Shape& s = ctx.input(static_cast<int>(k)).shape();
    for (int i = 0; i < s.rank(); ++i)
      EMBER_RETURN_IF_ERROR(write_index(ctx.output(static_cast<int>(k)), i, s.dim(i), "ShapeN"));
  }
  return Status::OK();
}

Status write_index(TensorImpl& out, int64_t i, int64_t v, const char* op) {
  if (out.dtype() == DType::kInt32) {
    if (v > INT32_MAX)
      return invalid_argument(op, ": value ", v, " does not fit in int32; use out_type=int64");
    out.mutable_data<int32_t>()[i] = static_cast<int32_t>(v);
  } else {
    out.mutable_data<int64_t>()[i] = v;
  }
  return Status::OK();
}

Status shape_kernel(KernelContext& ctx) {
  const Shape& s = ctx.input(0).shape();
  for (int i = 0; i < s.rank(); ++i) EMBER_RETURN_IF_ERROR(write_index(ctx.output(0), i, s.dim(i), "Shape"));
  return Status::OK();
}

// ---- InvertPermutation: y[x[i]] = i, for the gradient of a Transpose whose perm is computed in the graph.

Status invert_permutation_shape(InferContext& ctx) {
  const Shape& x = ctx.inputs[0].shape;
  if (x.rank_known() && x.rank() != 1)
    return invalid_argument("InvertPermutation: x must be a vector, got shape ", x.to_string());
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

Status invert_permutation_kernel(KernelContext& ctx) {
  const TensorImpl& x = ctx.input(0);
  if (x.rank() != 1)
    return invalid_argument("InvertPermutation: x must be a vector, got shape ", x.shape().to_string());
  const std::vector<int64_t> perm = ctx.int_values(0);
  const int64_t n = static_cast<int64_t>(perm.size());
  std::vector<int64_t> inverse(perm.size(), -1);
  for (int64_t i = 0; i < n; ++i) {
    if (perm[i] < 0 || perm[i] >= n || inverse[perm[i]] >= 0)
      return invalid_argument("InvertPermutation: ", list_str(perm), " is not a permutation of 0..", n - 1);
    inverse[perm[i]] = i;
  }
  for (int64_t i = 0; i < n; ++i)
    EMBER_RETURN_IF_ERROR(write_index(ctx.output(0), i, inverse[i], "InvertPermutation"));
  return Status::OK();
}

// ---- BroadcastGradientArgs

// The axes of each shape along which broadcasting the two against each other repeats it: what the
// gradient of a broadcasting op sums over (TensorFlow's BroadcastGradientArgs). Axes count in the
// broadcast result, so a shape's missing leading dims are among them.
Status broadcast_gradient_axes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                               std::vector<int64_t>* ra, std::vector<int64_t>* rb) {
  // Equal shapes need no reduction, even where both have size-1 dims (TensorFlow gives [] and [] for
  // [2, 1] against [2, 1]).
  if (a == b) {
    for (int64_t d : a)
      if (d < 0)
        return invalid_argument("BroadcastGradientArgs: shapes ", list_str(a), " and ", list_str(b),
                                " have a negative dimension");
    return Status::OK();
  }
  const size_t rank = std::max(a.size(), b.size());
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da < 0 || db < 0)
      return invalid_argument("BroadcastGradientArgs: shapes ", list_str(a), " and ", list_str(b),
                              " have a negative dimension");
    if (da != db && da != 1 && db != 1)
      return invalid_argument("BroadcastGradientArgs: shapes ", list_str(a), " and ", list_str(b),
                              " are not broadcast-compatible (dimension ", i, ": ", da, " vs ", db, ")");
    const bool both_one = da == 1 && db == 1;
    // A dim of 1 against 1 is summed on both sides (summing over one element changes nothing) as in TF.
    if (da == 1 && (db != 1 || both_one)) ra->push_back(static_cast<int64_t>(i));
    if (db == 1 && (da != 1 || both_one)) rb->push_back(static_cast<int64_t>(i));
  }
  return Status::OK();
}

Status broadcast_gradient_args_shape(InferContext& ctx) {
  for (int i = 0; i < 2; ++i)
    if (ctx.inputs[i].shape.rank_known() && ctx.inputs[i].shape.rank() != 1)
      return invalid_argument("BroadcastGradientArgs: input #", i,
                              " must be a vector, got a tensor of shape ", ctx.inputs[i].shape.to_string());
  PartialValue a = ctx.value_of(0), b = ctx.value_of(1);
  Shape ra{kUnknownDim}, rb{kUnknownDim};
  if (a.fully_known() && b.fully_known()) {
    std::vector<int64_t> axes_a, axes_b;
    EMBER_RETURN_IF_ERROR(broadcast_gradient_axes(a.values, b.values, &axes_a, &axes_b));
    ra = Shape{static_cast<int64_t>(axes_a.size())};
    rb = Shape{static_cast<int64_t>(axes_b.size())};
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, ra});
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, rb});
  return Status::OK();
}

Status broadcast_gradient_args_kernel(KernelContext& ctx) {
  std::vector<int64_t> axes[2];
  EMBER_RETURN_IF_ERROR(broadcast_gradient_axes(ctx.int_values(0), ctx.int_values(1), &axes[0], &axes[1]));
  for (int k = 0; k < 2; ++k) {
    EMBER_RETURN_IF_ERROR(
        allocate_output(ctx, k, ctx.input(0).dtype(), Shape{static_cast<int64_t>(axes[k].size())}));
    for (size_t i = 0; i < axes[k].size(); ++i)
      EMBER_RETURN_IF_ERROR(
          write_index(ctx.output(k), static_cast<int64_t>(i), axes[k][i], "BroadcastGradientArgs"));
  }
  return Status::OK();
}

Status size_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_index_dtype("Size", ctx.attr_dtype(0)));
  ctx.outputs.push_back(TensorSpec{ctx.attr_dtype(0), Shape()});
  return Status::OK();
}

Status size_kernel(KernelContext& ctx) {
  return write_index(ctx.output(0), 0, ctx.input(0).num_elements(), "Size");
}

Status rank_shape(InferContext& ctx) {
  ctx.outputs.push_back(TensorSpec{DType::kInt32, Shape()});
  return Status::OK();
}

Status rank_kernel(KernelContext& ctx) {
  ctx.output(0).mutable_data<int32_t>()[0] = ctx.input(0).rank();
  return Status::OK();
}

// ---- ConcatV2, Pack

// ConcatV2(values..., axis), TensorFlow's signature: the axis is the last input (Note [Variadic inputs]).
Status check_concat_axis_spec(const TensorSpec& axis) {
  if (axis.shape.rank_known() && axis.shape.rank() != 0)
    return invalid_argument("ConcatV2: axis must be a scalar, got a tensor of shape ",
                            axis.shape.to_string());
  return Status::OK();
}

Status concat_shape(InferContext& ctx) {
  const size_t n = ctx.inputs.size() - 1;  // check_inputs saw at least one value and the axis
  EMBER_RETURN_IF_ERROR(check_concat_axis_spec(ctx.inputs[n]));
  const auto in = ctx.inputs.first(n);
  int rank = -1;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].shape.rank_known()) continue;
    if (rank >= 0 && in[i].shape.rank() != rank)
      return invalid_argument("ConcatV2: all inputs must have the same rank; input #0 has shape ",
                              in[0].shape.to_string(), " but input #", i, " has shape ",
                              in[i].shape.to_string());
    rank = in[i].shape.rank();
  }
  if (rank == 0) return invalid_argument("ConcatV2: cannot concatenate scalars (use Pack/tf.stack instead)");
  if (rank < 0) {
    ctx.outputs.push_back(TensorSpec{in[0].dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  const PartialValue axis_value = ctx.value_of(static_cast<int>(n));
  if (!axis_value.fully_known()) {
    // An axis computed in the graph: one value comes out as it is, otherwise only the rank is known (any
    // dim may be the one that adds up). The executor resolves the shape each call (Note [Shape operands
    // computed in the graph]).
    ctx.outputs.push_back(
        TensorSpec{in[0].dtype, n == 1 ? in[0].shape : Shape(std::vector<int64_t>(rank, kUnknownDim))});
    return Status::OK();
  }
  int64_t axis;
  EMBER_RETURN_IF_ERROR(normalize_axis(axis_value.values[0], rank, "ConcatV2", &axis));
  Shape out;
  for (int d = 0; d < rank; ++d) out.push_back(d == axis ? 0 : kUnknownDim);
  int first_known[kMaxRank];
  std::fill(first_known, first_known + kMaxRank, -1);
  for (size_t i = 0; i < in.size(); ++i) {
    const Shape& s = in[i].shape;
    if (!s.rank_known()) {
      out.set_dim(static_cast<int>(axis), kUnknownDim);
      continue;
    }
    for (int d = 0; d < rank; ++d) {
      int64_t v = s.dim(d);
      if (d == axis) {
        out.set_dim(d, (v < 0 || out.dim(d) < 0) ? kUnknownDim : out.dim(d) + v);
      } else if (v >= 0) {
        if (out.dim(d) >= 0 && out.dim(d) != v)
          return invalid_argument("ConcatV2: dimension ", d, " of input #", i, " (shape ", s.to_string(),
                                  ") is ", v, " but input #", first_known[d], " (shape ",
                                  in[first_known[d]].shape.to_string(), ") has ", out.dim(d),
                                  "; all dimensions except axis ", axis, " must match");
        out.set_dim(d, v);
        if (first_known[d] < 0) first_known[d] = static_cast<int>(i);
      }
    }
  }
  ctx.outputs.push_back(TensorSpec{in[0].dtype, out});
  return Status::OK();
}

// Both ConcatV2 and Pack copy [outer, width_i] byte blocks; Pack's axis is a new dim of size 1 per input.
Status concat_inputs(KernelContext& ctx, size_t num_values, int axis_in_inputs) {
  SmallVector<const void*, 8> srcs;
  SmallVector<int64_t, 8> widths;
  const size_t elem = dtype_size(ctx.input(0).dtype());
  const Shape& s0 = ctx.input(0).shape();
  const int64_t outer = product(s0, 0, axis_in_inputs);
  for (const TensorImpl* t : ctx.inputs.first(num_values)) {
    srcs.push_back(t->raw_data());
    widths.push_back(product(t->shape(), axis_in_inputs, t->rank()) * static_cast<int64_t>(elem));
  }
  if (ctx.output(0).num_elements() == 0) return Status::OK();
  kernels::concat({srcs.data(), srcs.size()}, {widths.data(), widths.size()}, outer,
                  ctx.output(0).mutable_raw_data());
  return Status::OK();
}

// The shape function has checked the axis and the shapes against the same values.
Status concat_kernel(KernelContext& ctx) {
  const size_t n = ctx.inputs.size() - 1;
  int64_t axis;
  EMBER_RETURN_IF_ERROR(
      normalize_axis(ctx.int_values(static_cast<int>(n))[0], ctx.input(0).rank(), "ConcatV2", &axis));
  return concat_inputs(ctx, n, static_cast<int>(axis));
}

// ConcatOffset(concat_dim, shapes...): where each of ConcatV2's values starts in its output (TensorFlow's
// op, which ConcatV2's gradient uses when the axis is known only at run time).
Status concat_offset_shape(InferContext& ctx) {
  const Shape& dim = ctx.inputs[0].shape;
  if (dim.rank_known() && dim.rank() != 0)
    return invalid_argument("ConcatOffset: concat_dim must be a scalar, got a tensor of shape ",
                            dim.to_string());
  if (ctx.inputs.size() < 3)
    return invalid_argument("ConcatOffset: expected at least 2 shapes, got ", ctx.inputs.size() - 1);
  int64_t rank = kUnknownDim;
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    const Shape& s = ctx.inputs[i].shape;
    if (s.rank_known() && s.rank() != 1)
      return invalid_argument("ConcatOffset: shape #", i - 1, " must be a vector, got a tensor of shape ",
                              s.to_string());
    const int64_t len = s.rank_known() ? s.dim(0) : kUnknownDim;
    if (len >= 0 && rank >= 0 && len != rank)
      return invalid_argument("ConcatOffset: shape #", i - 1, " has ", len, " elements but shape #0 has ",
                              rank, "; all shapes must have the same rank");
    if (len >= 0) rank = len;
  }
  for (size_t i = 1; i < ctx.inputs.size(); ++i)
    ctx.outputs.push_back(TensorSpec{ctx.inputs[1].dtype, Shape{rank}});
  return Status::OK();
}

Status concat_offset_kernel(KernelContext& ctx) {
  const size_t n = ctx.inputs.size() - 1;
  const std::vector<int64_t> first = ctx.int_values(1);
  const int rank = static_cast<int>(first.size());
  int64_t axis;
  EMBER_RETURN_IF_ERROR(normalize_axis(ctx.int_values(0)[0], rank, "ConcatOffset", &axis));
  int64_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::vector<int64_t> shape = ctx.int_values(static_cast<int>(i + 1));
    if (shape.size() != first.size())  // the shape function saw the lengths; a kernel never reads past
      return invalid_argument("ConcatOffset: shape #", i, " has ", shape.size(),
                              " elements but shape #0 has ", rank, "; all shapes must have the same rank");
    for (int d = 0; d < rank; ++d) {
      if (d == axis || shape[d] == first[d]) continue;
      return invalid_argument("ConcatOffset: shape #", i, " is ", Shape(shape).to_string(),
                              " but shape #0 is ", Shape(first).to_string(), "; all dimensions except ", axis,
                              " must match");
    }
    TensorImpl& out = ctx.output(static_cast<int>(i));
    for (int d = 0; d < rank; ++d) {
      const int64_t v = d == axis ? offset : 0;
      if (out.dtype() == DType::kInt32)
        out.mutable_data<int32_t>()[d] = static_cast<int32_t>(v);
      else
        out.mutable_data<int64_t>()[d] = v;
    }
    offset += shape[static_cast<size_t>(axis)];
  }
  return Status::OK();
}

Status pack_shape(InferContext& ctx) {
  Shape merged = Shape::unknown_rank();
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Shape& s = ctx.inputs[i].shape;
    if (!s.rank_known()) continue;
    if (!merged.rank_known()) {
      merged = s;
      continue;
    }
    bool ok = s.rank() == merged.rank();
    for (int d = 0; ok && d < s.rank(); ++d) {
      if (s.dim(d) >= 0 && merged.dim(d) >= 0 && s.dim(d) != merged.dim(d))
        ok = false;
      else if (merged.dim(d) < 0)
        merged.set_dim(d, s.dim(d));
    }
    if (!ok)
      return invalid_argument("Pack: all inputs must have the same shape; input #0 has shape ",
                              ctx.inputs[0].shape.to_string(), " but input #", i, " has shape ",
                              s.to_string());
  }
  if (!merged.rank_known()) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  const int rank = merged.rank();
  const int64_t axis = ctx.attr_int(0);
  if (axis < -rank - 1 || axis > rank)
    return invalid_argument("Pack: axis ", axis, " is out of range for inputs of rank ", rank,
                            " (expected an axis in [", -rank - 1, ", ", rank, "])");
  if (rank >= kMaxRank)
    return invalid_argument("Pack: the result would have rank ", rank + 1, ", more than the maximum ",
                            kMaxRank);
  auto out = expand_dims_target(merged, axis);
  if (!out.ok()) return out.status();
  out->set_dim(static_cast<int>(axis < 0 ? axis + rank + 1 : axis), static_cast<int64_t>(ctx.inputs.size()));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, *out});
  return Status::OK();
}

Status pack_kernel(KernelContext& ctx) {
  int rank = ctx.input(0).rank();
  int64_t axis = ctx.attr_int(0) < 0 ? ctx.attr_int(0) + rank + 1 : ctx.attr_int(0);
  return concat_inputs(ctx, ctx.inputs.size(), static_cast<int>(axis));
}

// ---- Unpack, SplitV: several outputs along one axis; views when the axis is the outermost non-1 dim.

Status split_outputs(KernelContext& ctx, int axis, std::span<const int64_t> sizes, bool drop_axis) {
  const TensorImpl& in = ctx.input(0);
  const Shape& s = in.shape();
  const size_t elem = dtype_size(in.dtype());
  // An empty input gives empty pieces; its byte widths (a huge dim times the element size) may not even fit
  // in int64, so nothing below is computed for it.
  const bool empty = in.num_elements() == 0;
  const int64_t outer = empty ? 0 : product(s, 0, axis),
                inner = empty ? 0 : product(s, axis + 1, s.rank()) * static_cast<int64_t>(elem);
  SmallVector<void*, 8> dsts;
  SmallVector<int64_t, 8> widths;
  int64_t offset = 0;
  for (size_t j = 0; j < sizes.size(); ++j) {
    Shape piece;
    for (int d = 0; d < s.rank(); ++d) {
      if (d != axis)
        piece.push_back(s.dim(d));
      else if (!drop_axis)
        piece.push_back(sizes[j]);
    }
    if (outer == 1 || empty) {
      ctx.outputs[j] = TensorImpl::view(in, piece, static_cast<size_t>(offset));
    } else {
      EMBER_RETURN_IF_ERROR(allocate_output(ctx, static_cast<int>(j), in.dtype(), piece));
      dsts.push_back(ctx.output(static_cast<int>(j)).mutable_raw_data());
      widths.push_back(sizes[j] * inner);
    }
    offset += sizes[j] * inner;
  }
  if (outer != 1 && outer > 0 && offset > 0)
    kernels::split(in.raw_data(), {dsts.data(), dsts.size()}, {widths.data(), widths.size()}, outer);
  return Status::OK();
}

constexpr int64_t kMaxUnpackOutputs = int64_t{1} << 20;

Status unpack_num(const Shape& in, int64_t num_attr, int64_t axis_attr, int64_t* axis, int64_t* num) {
  EMBER_RETURN_IF_ERROR(normalize_axis(axis_attr, in.rank(), "Unpack", axis));
  int64_t dim = in.dim(static_cast<int>(*axis));
  if (num_attr >= 0 && dim >= 0 && num_attr != dim)
    return invalid_argument("Unpack: num is ", num_attr, " but dimension ", *axis, " of shape ",
                            in.to_string(), " is ", dim);
  if (num_attr < 0 && dim < 0)
    return invalid_argument("Unpack: cannot infer num from shape ", in.to_string(), " along axis ", *axis,
                            "; pass num");
  *num = num_attr >= 0 ? num_attr : dim;
  // Each output is a tensor object of its own: an empty input with a huge dim ([3037000500, 0]) would ask
  // for billions of them. TensorFlow caps outputs at int32; ember at a count a program can actually hold.
  if (*num > kMaxUnpackOutputs)
    return invalid_argument("Unpack: cannot unpack shape ", in.to_string(), " along axis ", *axis, " into ",
                            *num, " tensors; at most ", kMaxUnpackOutputs, " outputs are supported");
  return Status::OK();
}

Status unpack_shape(InferContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  const int64_t num_attr = ctx.attr_int(0);
  if (!in.rank_known()) {
    if (num_attr < 0)
      return invalid_argument("Unpack: cannot infer num from a tensor of unknown rank; pass num");
    if (num_attr > kMaxUnpackOutputs)
      return invalid_argument("Unpack: num ", num_attr, " is more than the ", kMaxUnpackOutputs,
                              " outputs supported");
    for (int64_t j = 0; j < num_attr; ++j) ctx.outputs.push_back(ctx.inputs[0]);
    return Status::OK();
  }
  if (in.rank() == 0) return invalid_argument("Unpack: cannot unpack a scalar");
  int64_t axis, num;
  EMBER_RETURN_IF_ERROR(unpack_num(in, num_attr, ctx.attr_int(1), &axis, &num));
  Shape piece;
  for (int d = 0; d < in.rank(); ++d)
    if (d != axis) piece.push_back(in.dim(d));
  for (int64_t j = 0; j < num; ++j) ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, piece});
  return Status::OK();
}

Status unpack_kernel(KernelContext& ctx) {
  const Shape& in = ctx.input(0).shape();
  if (in.rank() == 0) return invalid_argument("Unpack: cannot unpack a scalar");
  int64_t axis, num;
  EMBER_RETURN_IF_ERROR(unpack_num(in, ctx.attr_int(0), ctx.attr_int(1), &axis, &num));
  if (static_cast<int64_t>(ctx.outputs.size()) != num)
    return make_error(Code::kInternal, "Unpack: expected ", ctx.outputs.size(), " outputs, the input gives ",
                      num);
  std::vector<int64_t> ones(static_cast<size_t>(num), 1);
  return split_outputs(ctx, static_cast<int>(axis), ones, /*drop_axis=*/true);
}

// Resolves the -1 entry of size_splits against `dim` (which may be unknown, -1).
Status resolve_splits(const std::vector<int64_t>& splits, int64_t dim, std::vector<int64_t>* out) {
  *out = splits;
  int unknown = -1;
  int64_t sum = 0;
  for (size_t i = 0; i < splits.size(); ++i) {
    if (splits[i] == -1) {
      if (unknown >= 0)
        return invalid_argument("SplitV: only one entry of size_splits ", list_str(splits), " may be -1");
      unknown = static_cast<int>(i);
    } else if (splits[i] < 0) {
      return invalid_argument("SplitV: size_splits ", list_str(splits), " has a negative entry ", splits[i]);
    } else if (!checked_add(sum, splits[i], &sum)) {
      // A sum that wrapped could match the dim and place a piece outside the buffer.
      return invalid_argument("SplitV: size_splits ", list_str(splits), " sum to more than 2^63-1");
    }
  }
  if (dim < 0) return Status::OK();
  if (unknown >= 0 ? sum > dim : sum != dim)
    return invalid_argument("SplitV: size_splits ", list_str(splits),
                            " must sum to the size of the split dimension, ", dim,
                            unknown >= 0 ? " (or less, with a -1 entry)" : "", "; got ", sum);
  if (unknown >= 0) (*out)[unknown] = dim - sum;
  return Status::OK();
}

// SplitV(value, size_splits, axis): as many outputs as size_splits has entries, so its length must be
// known while tracing; its values and the axis may be computed at run time.
Status split_v_shape(InferContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  if (ctx.inputs[1].shape.rank_known() && ctx.inputs[1].shape.rank() != 1)
    return invalid_argument("SplitV: size_splits must be a vector, got shape ",
                            ctx.inputs[1].shape.to_string());
  if (ctx.inputs[2].shape.rank_known() && ctx.inputs[2].shape.rank() != 0)
    return invalid_argument("SplitV: axis must be a scalar, got shape ", ctx.inputs[2].shape.to_string());
  const PartialValue splits = ctx.value_of(1), axis_value = ctx.value_of(2);
  if (!splits.length_known)
    return invalid_argument(
        "SplitV: the number of pieces (the length of size_splits) must be known while "
        "tracing, got a size_splits of shape ",
        ctx.inputs[1].shape.to_string());
  if (splits.values.empty()) return invalid_argument("SplitV: size_splits must not be empty");
  if (splits.values.size() > static_cast<size_t>(1 << 20))
    return make_error(Code::kResourceExhausted, "SplitV: ", splits.values.size(), " outputs requested");
  if (!in.rank_known() || !axis_value.fully_known()) {
    // Unknown axis: each piece keeps the rank, every dim unknown.
    const Shape piece = in.rank_known() ? Shape(std::vector<int64_t>(in.rank(), kUnknownDim)) : in;
    for (size_t j = 0; j < splits.values.size(); ++j)
      ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, piece});
    return Status::OK();
  }
  int64_t axis;
  EMBER_RETURN_IF_ERROR(normalize_axis(axis_value.values[0], in.rank(), "SplitV", &axis));
  std::vector<int64_t> sizes = splits.values;
  if (splits.fully_known()) {
    EMBER_RETURN_IF_ERROR(resolve_splits(splits.values, in.dim(static_cast<int>(axis)), &sizes));
  } else {
    for (int64_t& size : sizes)
      if (size == PartialValue::kUnknown) size = kUnknownDim;  // a -1 there stays unknown too
  }
  for (int64_t size : sizes) {
    Shape piece = in;
    piece.set_dim(static_cast<int>(axis), size < 0 ? kUnknownDim : size);
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, piece});
  }
  return Status::OK();
}

Status split_v_kernel(KernelContext& ctx) {
  const Shape& in = ctx.input(0).shape();
  if (ctx.input(1).rank() != 1 || ctx.input(2).rank() != 0)
    return invalid_argument("SplitV: size_splits must be a vector and axis a scalar, got shapes ",
                            ctx.input(1).shape().to_string(), " and ", ctx.input(2).shape().to_string());
  int64_t axis;
  EMBER_RETURN_IF_ERROR(normalize_axis(ctx.int_values(2)[0], in.rank(), "SplitV", &axis));
  std::vector<int64_t> sizes;
  EMBER_RETURN_IF_ERROR(resolve_splits(ctx.int_values(1), in.dim(static_cast<int>(axis)), &sizes));
  if (sizes.size() != ctx.outputs.size())
    return invalid_argument("SplitV: size_splits has ", sizes.size(), " entries, but the op was built for ",
                            ctx.outputs.size(), " pieces");
  return split_outputs(ctx, static_cast<int>(axis), sizes, /*drop_axis=*/false);
}

// ---- Gradient rules (ops/gradient.h). Shape ops move dy back through the inverse movement.

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

// Reshape, ExpandDims and Squeeze only relabel the elements.
void reshape_grad(GradContext& c) { c.set(0, reshape_like(c.grad(), c.input(0))); }

void identity_grad(GradContext& c) { c.set(0, c.grad()); }

// TensorFlow's PreventGradient: differentiating through it is an error carrying the op's message (the
// CTC losses wrap their gradient output in it, so a second derivative through them says so).
void prevent_gradient_grad(GradContext& c) {
  check_ok(make_error(Code::kUnimplemented,
                      "PreventGradient: Gradient explicitly disabled. Reason: ", c.attr_string(0)));
}

void transpose_grad(GradContext& c) {
  if (c.input(1)->is_symbolic()) {  // a permutation computed in the graph: inverted there too
    c.set(0, emit1("Transpose", {c.grad(), unary("InvertPermutation", c.input(1))}));
    return;
  }
  const std::vector<int64_t> perm = known_ints(c.input(1), "Transpose", "perm");
  const int64_t rank = static_cast<int64_t>(perm.size());
  std::vector<int64_t> inverse(perm.size());
  for (int64_t i = 0; i < rank; ++i) inverse[perm[i] < 0 ? perm[i] + rank : perm[i]] = i;
  c.set(0, transpose(c.grad(), std::move(inverse)));
}

// Each value gets its own piece of dy along the axis; SplitV cuts all pieces in one op.
void concat_grad(GradContext& c) {
  const int n = c.num_inputs() - 1;  // input n is the axis, which gets no gradient
  const GradTensor dy = c.grad();
  if (n == 1) {
    c.set(0, dy);
    return;
  }
  if (c.input(n)->is_symbolic()) {
    // An axis computed in the graph: the pieces' offsets along it are computed there too.
    SmallVector<GradTensor, 4> operands{cast(c.input(n), DType::kInt32)};
    for (int i = 0; i < n; ++i) operands.push_back(shape_of(c.input(i)));
    const auto offsets =
        emit("ConcatOffset", std::span<const GradTensor>(operands.data(), operands.size()), {});
    for (int i = 0; i < n; ++i) c.set(i, emit1("Slice", {dy, offsets[i], operands[i + 1]}));
    return;
  }
  int64_t axis;
  check_ok(normalize_axis(known_ints(c.input(n), "ConcatV2", "axis")[0], dy.rank(), "ConcatV2", &axis));
  std::vector<int64_t> sizes;
  int unknown = 0;
  for (int i = 0; i < n; ++i) {
    int64_t d =
        c.input(i).shape().rank_known() ? c.input(i).shape().dim(static_cast<int>(axis)) : kUnknownDim;
    unknown += d < 0;
    sizes.push_back(d < 0 ? -1 : d);
  }
  if (unknown > 1) {
    // SplitV infers one unknown size from dy; with more, each piece is sliced at an offset computed at run
    // time from the inputs' shapes.
    const int rank = dy.rank();
    std::vector<int64_t> zeros(static_cast<size_t>(rank), 0), unit(static_cast<size_t>(rank), 0);
    unit[static_cast<size_t>(axis)] = 1;
    GradTensor offset = int_vector(zeros);
    const GradTensor along_axis = int_vector(unit);
    for (int i = 0; i < n; ++i) {
      const GradTensor size = shape_of(c.input(i));
      c.set(i, emit1("Slice", {dy, offset, size}));
      offset = offset + size * along_axis;
    }
    return;
  }
  auto pieces = emit("SplitV", {dy, int_vector(sizes), scalar(static_cast<double>(axis), DType::kInt32)});
  for (int i = 0; i < n; ++i) c.set(i, pieces[i]);
}

void pack_grad(GradContext& c) {
  AttrList attrs;
  attrs.push_back(int64_t{c.num_inputs()});
  attrs.push_back(c.attr_int(0));  // a negative axis counts from the end of dy as it did for the output
  auto pieces = emit("Unpack", {c.grad()}, std::move(attrs));
  for (int i = 0; i < c.num_inputs(); ++i) c.set(i, pieces[i]);
}

void unpack_grad(GradContext& c) {
  std::vector<GradTensor> dys(c.output_grads.begin(), c.output_grads.end());
  AttrList attrs;
  attrs.push_back(c.attr_int(1));
  c.set(0, emit("Pack", std::span<const GradTensor>(dys), std::move(attrs))[0]);
}

void split_v_grad(GradContext& c) {
  std::vector<GradTensor> operands(c.output_grads.begin(), c.output_grads.end());
  operands.push_back(c.input(2));  // the same axis, a constant or computed in the graph
  c.set(0, emit("ConcatV2", std::span<const GradTensor>(operands), {})[0]);
}

}  // namespace

void register_array_ops(OpRegistry& r) {
  const AttrValue kNone = std::vector<int64_t>{};
  OpBuilder("Reshape")
      .doc(
          "Same elements in a new shape (a view, no copy); one dim may be -1. reshape([1, 2, 3, 4], [2, -1]) "
          "== "
          "[[1, 2], [3, 4]]")
      .input("tensor")
      .input_shape_like("shape")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .flags(kKernelAllocates)
      .shape(&reshape_shape)
      .kernel(kAllTypesAndComplex, &reshape_kernel)
      .grad(&reshape_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("Identity")
      .doc("The input itself (a view). identity([1, 2]) == [1, 2]")
      .input("input")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .flags(kKernelAllocates)
      .shape(&same_as_input_shape)
      .kernel(kAllTypesAndComplex, &identity_kernel)
      .grad(&identity_grad)
      .batching(BatchingRule::kElementwise)
      .done(r);
  OpBuilder("Bitcast")
      .doc("The same bytes as another numeric dtype (a view). bitcast([1.], int32) == [1065353216]")
      .input("input")
      .output("output")
      .type_var(kNumericAndComplexTypes)
      .attr("type", AttrType::kDType)
      .flags(kKernelAllocates | kNotDifferentiable)
      .shape(&bitcast_shape)
      .kernel(kNumericAndComplexTypes, &bitcast_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("StopGradient")
      .doc("The input, through which no gradient flows. stop_gradient([1., 2.]) == [1., 2.]")
      .input("input")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .flags(kKernelAllocates | kNotDifferentiable)
      .shape(&same_as_input_shape)
      .kernel(kAllTypesAndComplex, &identity_kernel)
      .batching(BatchingRule::kElementwise)
      .done(r);
  OpBuilder("PreventGradient")
      .doc(
          "The input; differentiating through it raises an error with `message`. prevent_gradient([1., 2.]) "
          "== "
          "[1., 2.]")
      .input("input")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .attr("message", AttrType::kString, std::string())
      .flags(kKernelAllocates)
      .shape(&same_as_input_shape)
      .kernel(kAllTypesAndComplex, &identity_kernel)
      .grad(&prevent_gradient_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("Transpose")
      .doc(
          "Permutes the axes: out.shape[i] == x.shape[perm[i]]. transpose([[1, 2, 3]], [1, 0]) == [[1], [2], "
          "[3]]")
      .input("x")
      .input_shape_like("perm")
      .output("y")
      .type_var(kAllTypesAndComplex)
      .flags(kKernelAllocates)
      .shape(&transpose_shape)
      .kernel(kAllTypesAndComplex, &transpose_kernel)
      .grad(&transpose_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("ExpandDims")
      .doc(
          "Inserts a size-1 axis at `axis` in [-rank-1, rank] (a view). expand_dims([1, 2], 0).shape == [1, "
          "2]")
      .input("input")
      .input_shape_like("axis")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .flags(kKernelAllocates)
      .shape(&expand_dims_shape)
      .kernel(kAllTypesAndComplex, &expand_dims_kernel)
      .grad(&reshape_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("Squeeze")
      .doc("Removes size-1 axes (the listed ones, or all) (a view). squeeze(zeros([1, 2, 1])).shape == [2]")
      .input("input")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .attr("squeeze_dims", AttrType::kInts, kNone)
      .flags(kKernelAllocates)
      .shape(&squeeze_shape)
      .kernel(kAllTypesAndComplex, &squeeze_kernel)
      .grad(&reshape_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("Shape")
      .doc("The shape as a 1-D tensor. shape(zeros([2, 3])) == [2, 3]")
      .input("input")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .attr("out_type", AttrType::kDType, DType::kInt32)
      .flags(kNotDifferentiable | kReadsOnlyShape)
      .shape(&shape_shape)
      .kernel(kAllTypesAndComplex, &shape_kernel)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("ShapeN")
      .doc("The shape of each input as a 1-D tensor. shape_n([zeros([2, 3]), zeros([4])]) == [[2, 3], [4]]")
      .input_list("input")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .attr("out_type", AttrType::kDType, DType::kInt32)
      .flags(kNotDifferentiable | kReadsOnlyShape)
      .shape(&shape_n_shape)
      .kernel(kAllTypesAndComplex, &shape_n_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("InvertPermutation")
      .doc("The inverse permutation: y[x[i]] = i. invert_permutation([2, 0, 1]) == [1, 2, 0]")
      .input("x")
      .output("y")
      .type_var(kIndexTypes)
      .flags(kNotDifferentiable)
      .shape(&invert_permutation_shape)
      .kernel(kIndexTypes, &invert_permutation_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("BroadcastGradientArgs")
      .doc(
          "The axes each of two shapes is repeated along when broadcast together (what a broadcasting op's "
          "gradient sums). broadcast_gradient_args([2, 3], [3]) == ([], [0])")
      .input_shape_like("s0")
      .input_shape_like("s1")
      .output("r0")
      .output("r1")
      .flags(kNotDifferentiable | kKernelAllocates)
      .shape(&broadcast_gradient_args_shape)
      .kernel(kIndexTypes, &broadcast_gradient_args_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("Size")
      .doc("The number of elements as a scalar. size(zeros([2, 3])) == 6")
      .input("input")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .attr("out_type", AttrType::kDType, DType::kInt32)
      .flags(kNotDifferentiable | kReadsOnlyShape)
      .shape(&size_shape)
      .kernel(kAllTypesAndComplex, &size_kernel)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("Rank")
      .doc("The number of dimensions as an int32 scalar. rank(zeros([2, 3])) == 2")
      .input("input")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .flags(kNotDifferentiable | kReadsOnlyShape)
      .shape(&rank_shape)
      .kernel(kAllTypesAndComplex, &rank_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("ConcatV2")
      .doc("Joins tensors along an existing axis. concat([[1, 2]], [[3, 4]]], axis=0) == [[1, 2], [3, 4]]")
      .input_list("values")
      .input_shape_like("axis")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .shape(&concat_shape)
      .kernel(kAllTypesAndComplex, &concat_kernel)
      .grad(&concat_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("ConcatOffset")
      .doc(
          "Where each of ConcatV2's values starts in its output, given their shapes. concat_offset(1, [[2, "
          "3], "
          "[2, 5]]) == [[0, 0], [0, 3]]")
      .input_fixed("concat_dim", dtype_bit(DType::kInt32))
      .input_list("shape")
      .output("offset")
      .type_var(kIndexTypes)
      .flags(kNotDifferentiable)
      .dispatch_on_input(1)
      .shape(&concat_offset_shape)
      .kernel(kIndexTypes, &concat_offset_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("Pack")
      .doc("Stacks same-shape tensors along a new axis. stack([[1, 2], [3, 4]], axis=1) == [[1, 3], [2, 4]]")
      .input("values")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .attr("axis", AttrType::kInt, int64_t{0})
      .flags(kVariadicInput)
      .shape(&pack_shape)
      .kernel(kAllTypesAndComplex, &pack_kernel)
      .grad(&pack_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("Unpack")
      .doc(
          "Splits along an axis into `num` tensors without it (num -1: the dim). unstack([[1, 2], [3, 4]]) "
          "== "
          "[[1, 2], [3, 4]]")
      .input("value")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .attr("num", AttrType::kInt, int64_t{-1})
      .attr("axis", AttrType::kInt, int64_t{0})
      .flags(kKernelAllocates)
      .shape(&unpack_shape)
      .kernel(kAllTypesAndComplex, &unpack_kernel)
      .grad(&unpack_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("SplitV")
      .doc(
          "Splits along an axis into pieces of the given sizes (one may be -1). split([1, 2, 3], [1, -1]) == "
          "[[1], [2, 3]]")
      .input("value")
      .input_shape_like("size_splits")
      .input_shape_like("axis")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .flags(kKernelAllocates)
      .shape(&split_v_shape)
      .kernel(kAllTypesAndComplex, &split_v_kernel)
      .grad(&split_v_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  register_array_index_ops(r);
  register_array_create_ops(r);
  register_tensor_array_ops(r);
}

}  // namespace ember
