// Ops that create values: Fill, ZerosLike, OnesLike, Tile, BroadcastTo, Pad (and MirrorPadGrad, the
// adjoint of its mirror modes), Eye, Range, LinSpace. Registered from register_array_ops (array.cc);
// kernels in kernels/array.h.
#include <cctype>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/kernels/array.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

// ---- Fill, ZerosLike, OnesLike

Status fill_shape(InferContext& ctx) {
  const Shape& value = ctx.inputs[1].shape;
  if (value.rank_known() && value.rank() != 0)
    return invalid_argument("Fill: value must be a scalar, got shape ", value.to_string());
  auto shape = ctx.shape_operand(0);
  if (!shape.ok()) return shape.status();
  ctx.outputs.push_back(TensorSpec{ctx.inputs[1].dtype, *shape});
  return Status::OK();
}

Status fill_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  kernels::fill(out.mutable_raw_data(), out.num_elements(), dtype_size(out.dtype()), ctx.input(1).raw_data());
  return Status::OK();
}

Status zeros_like_kernel(KernelContext& ctx) {
  // Zero is all-zero bits in every dtype.
  TensorImpl& out = ctx.output(0);
  const kernels::ScalarBits zero;
  kernels::fill(out.mutable_raw_data(), out.num_elements(), dtype_size(out.dtype()), zero.data());
  return Status::OK();
}

Status ones_like_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  const kernels::ScalarBits one = kernels::encode_scalar(out.dtype(), 1.0);
  kernels::fill(out.mutable_raw_data(), out.num_elements(), dtype_size(out.dtype()), one.data());
  return Status::OK();
}

// ---- Eye (attrs: num_rows, num_columns, batch_shape, dtype)

Status eye_shape(InferContext& ctx) {
  const int64_t rows = ctx.attr_int(0), cols_attr = ctx.attr_int(1);
  const int64_t cols = cols_attr == -1 ? rows : cols_attr;
  const auto& batch = ctx.attr_ints(2);
  if (rows < 0) return invalid_argument("Eye: num_rows must be >= 0, got ", rows);
  if (cols < 0)
    return invalid_argument("Eye: num_columns must be >= 0 (or -1 for num_rows), got ", cols_attr);
  if (batch.size() + 2 > static_cast<size_t>(kMaxRank))
    return invalid_argument("Eye: batch_shape ", list_str(batch), " gives a result of rank ",
                            batch.size() + 2, ", more than the maximum ", kMaxRank);
  Shape out;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i] < 0)
      return invalid_argument("Eye: batch_shape ", list_str(batch), " has a negative dimension");
    out.push_back(batch[i]);
  }
  out.push_back(rows);
  out.push_back(cols);
  ctx.outputs.push_back(TensorSpec{ctx.attr_dtype(3), out});
  return Status::OK();
}

Status eye_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  const Shape& s = out.shape();
  const int64_t rows = s.dim(s.rank() - 2), cols = s.dim(s.rank() - 1);
  const size_t elem = dtype_size(out.dtype());
  const kernels::ScalarBits zero, one = kernels::encode_scalar(out.dtype(), 1.0);
  kernels::fill(out.mutable_raw_data(), out.num_elements(), elem, zero.data());
  if (rows * cols == 0) return Status::OK();
  char* base = static_cast<char*>(out.mutable_raw_data());
  const int64_t batches = out.num_elements() / (rows * cols), diag = std::min(rows, cols);
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < diag; ++i)
      std::memcpy(base + ((b * rows + i) * cols + i) * static_cast<int64_t>(elem), one.data(), elem);
  return Status::OK();
}

// ---- Range (inputs start, limit, delta: scalars of the output's dtype, as TensorFlow's)

// TensorFlow's Range kernels: floats, int32 and int64 (not the 8/16-bit integers).
constexpr DTypeSet kRangeTypes = kFloatTypes | kIndexTypes;

double scalar_value(const TensorImpl& t) {
  double v = 0;
  visit_dtype<kRangeTypes>(t.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      v = static_cast<float>(t.data<T>()[0]);
    } else {
      v = static_cast<double>(t.data<T>()[0]);
    }
  });
  return v;
}

StatusOr<int64_t> range_length(DType dtype, double start, double limit, double delta) {
  // TensorFlow rejects a delta that points away from the limit rather than returning an empty range.
  if (delta > 0 && start > limit)
    return invalid_argument("Range: requires start <= limit when delta > 0, got start ", start, " and limit ",
                            limit);
  if (delta < 0 && start < limit)
    return invalid_argument("Range: requires start >= limit when delta < 0, got start ", start, " and limit ",
                            limit);
  return kernels::range_size(dtype, start, limit, delta);
}

Status range_shape(InferContext& ctx) {
  static const char* const kNames[] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i)
    if (ctx.inputs[i].shape.rank_known() && ctx.inputs[i].shape.rank() != 0)
      return invalid_argument("Range: ", kNames[i], " must be a scalar, got shape ",
                              ctx.inputs[i].shape.to_string());
  const DType dtype = ctx.inputs[0].dtype;
  const TensorImpl *start = ctx.constant(0), *limit = ctx.constant(1), *delta = ctx.constant(2);
  if (start == nullptr || limit == nullptr || delta == nullptr) {
    ctx.outputs.push_back(TensorSpec{dtype, Shape({kUnknownDim})});  // a length known at run time
    return Status::OK();
  }
  auto size = range_length(dtype, scalar_value(*start), scalar_value(*limit), scalar_value(*delta));
  if (!size.ok()) return size.status();
  ctx.outputs.push_back(TensorSpec{dtype, Shape({*size})});
  return Status::OK();
}

Status range_kernel(KernelContext& ctx) {
  const double start = scalar_value(ctx.input(0)), delta = scalar_value(ctx.input(2));
  auto size = range_length(ctx.input(0).dtype(), start, scalar_value(ctx.input(1)), delta);
  if (!size.ok()) return size.status();
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, ctx.input(0).dtype(), Shape({*size})));
  TensorImpl& out = ctx.output(0);
  kernels::range(out.dtype(), start, delta, out.num_elements(), out.mutable_raw_data());
  return Status::OK();
}

// ---- LinSpace

Status linspace_shape(InferContext& ctx) {
  for (int i = 0; i < 2; ++i) {
    const Shape& s = ctx.inputs[i].shape;
    if (s.rank_known() && s.rank() != 0)
      return invalid_argument("LinSpace: ", i == 0 ? "start" : "stop", " must be a scalar, got shape ",
                              s.to_string());
  }
  if (ctx.inputs[2].shape.rank_known() && ctx.inputs[2].shape.rank() != 0)
    return invalid_argument("LinSpace: num must be a scalar, got shape ", ctx.inputs[2].shape.to_string());
  const PartialValue num_value = ctx.value_of(2);
  const int64_t num = num_value.fully_known() ? num_value.values[0] : kUnknownDim;
  if (num_value.fully_known() && num < 1) return invalid_argument("LinSpace: num must be >= 1, got ", num);
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape({num})});
  return Status::OK();
}

Status linspace_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  kernels::linspace(out.dtype(), ctx.input(0).raw_data(), ctx.input(1).raw_data(), out.num_elements(),
                    out.mutable_raw_data());
  return Status::OK();
}

// ---- Tile, BroadcastTo

Status tile_shape(InferContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  const Shape& m_spec = ctx.inputs[1].shape;
  if (m_spec.rank_known() && m_spec.rank() != 1)
    return invalid_argument("Tile: multiples must be a vector, got a tensor of shape ", m_spec.to_string());
  PartialValue multiples = ctx.value_of(1);
  if (!multiples.length_known) {
    ctx.outputs.push_back(
        TensorSpec{ctx.inputs[0].dtype, in.rank_known() ? Shape(std::vector<int64_t>(in.rank(), kUnknownDim))
                                                        : Shape::unknown_rank()});
    return Status::OK();
  }
  const std::vector<int64_t>& m = multiples.values;
  for (size_t i = 0; i < m.size(); ++i)
    if (m[i] < 0 && m[i] != PartialValue::kUnknown)
      return invalid_argument("Tile: multiples[", i, "] must be >= 0, got ", m[i]);
  if (m.size() > static_cast<size_t>(kMaxRank))
    return invalid_argument("Tile: multiples ", list_str(m), " has more than ", kMaxRank, " entries");
  if (in.rank_known() && static_cast<int>(m.size()) != in.rank())
    return invalid_argument("Tile: multiples ", list_str(m),
                            " must have one entry per dimension of the input (shape ", in.to_string(),
                            ", rank ", in.rank(), "), got ", m.size());
  Shape out;
  for (size_t i = 0; i < m.size(); ++i) {
    int64_t d = in.rank_known() ? in.dim(static_cast<int>(i)) : kUnknownDim, size = kUnknownDim;
    if (m[i] == 0)
      size = 0;
    else if (m[i] == PartialValue::kUnknown)
      size = d == 0 ? 0 : kUnknownDim;
    else if (d >= 0 && __builtin_mul_overflow(d, m[i], &size))
      return invalid_argument("Tile: dimension ", i, " of size ", d, " times ", m[i], " overflows int64");
    out.push_back(size);
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

// Tile is a broadcast copy over (multiple, dim) pairs: the multiple's axis has source stride 0.
Status tile_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  const std::vector<int64_t> m = ctx.int_values(1);
  int64_t strides[kMaxRank];
  kernels::dense_strides(in.rank(), in.shape().dims().data(), strides);
  kernels::StridedCopy c;
  for (int i = 0; i < in.rank(); ++i) {
    c.dims[c.rank] = m[i];
    c.src_strides[c.rank++] = 0;
    c.dims[c.rank] = in.shape().dim(i);
    c.src_strides[c.rank++] = strides[i];
  }
  kernels::dense_strides(c.rank, c.dims, c.dst_strides);
  kernels::strided_copy(in.raw_data(), ctx.output(0).mutable_raw_data(), dtype_size(in.dtype()), c);
  return Status::OK();
}

Status broadcast_to_shape(InferContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  auto out = ctx.shape_operand(1);
  if (!out.ok()) return out.status();
  if (in.rank_known() && out->rank_known()) {
    bool ok = in.rank() <= out->rank();
    for (int i = 0; ok && i < in.rank(); ++i) {
      int64_t d = in.dim(i), t = out->dim(out->rank() - in.rank() + i);
      ok = d < 0 || t < 0 || d == 1 || d == t;
    }
    if (!ok)
      return invalid_argument("BroadcastTo: cannot broadcast a tensor of shape ", in.to_string(),
                              " to shape ", out->to_string());
    // An unknown target dim against an input dim above 1 can only be that dim (TensorFlow infers
    // [4, 2, 5] for a [2, 1] input broadcast to [4, ?, 5]).
    for (int i = 0; i < in.rank(); ++i) {
      const int o = out->rank() - in.rank() + i;
      if (out->dim(o) < 0 && in.dim(i) > 1) out->set_dim(o, in.dim(i));
    }
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, *out});
  return Status::OK();
}

Status broadcast_to_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  const Shape& out = ctx.output(0).shape();
  int64_t strides[kMaxRank];
  kernels::dense_strides(in.rank(), in.shape().dims().data(), strides);
  kernels::StridedCopy c;
  c.rank = out.rank();
  const int lead = out.rank() - in.rank();
  for (int i = 0; i < out.rank(); ++i) {
    c.dims[i] = out.dim(i);
    c.src_strides[i] = (i < lead || in.shape().dim(i - lead) == 1) ? 0 : strides[i - lead];
  }
  kernels::dense_strides(c.rank, c.dims, c.dst_strides);
  kernels::strided_copy(in.raw_data(), ctx.output(0).mutable_raw_data(), dtype_size(in.dtype()), c);
  return Status::OK();
}

// ---- Pad (CONSTANT, REFLECT, SYMMETRIC)

enum class PadMode { kConstant, kReflect, kSymmetric };

Status parse_pad_mode(const std::string& text, PadMode* mode) {
  std::string upper = text;
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (upper == "CONSTANT")
    *mode = PadMode::kConstant;
  else if (upper == "REFLECT")
    *mode = PadMode::kReflect;
  else if (upper == "SYMMETRIC")
    *mode = PadMode::kSymmetric;
  else
    return invalid_argument("Pad: mode must be CONSTANT, REFLECT or SYMMETRIC, got '", text, "'");
  return Status::OK();
}

Status check_paddings(const Shape& in, const std::vector<int64_t>& p, PadMode mode) {
  if (in.rank_known() && p.size() != 2 * static_cast<size_t>(in.rank()))
    return invalid_argument("Pad: paddings must have shape [", in.rank(), ", 2] for an input of shape ",
                            in.to_string(), ", got ", p.size(), " values");
  if (p.size() % 2 != 0 || p.size() > 2 * static_cast<size_t>(kMaxRank))
    return invalid_argument("Pad: paddings must be a flattened [rank, 2] list, got ", p.size(), " values");
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == PartialValue::kUnknown) continue;  // computed in the graph: checked when it runs
    if (p[i] < 0)
      return invalid_argument("Pad: paddings must be non-negative, got ", p[i], " for dimension ", i / 2);
    int64_t d = in.rank_known() ? in.dim(static_cast<int>(i / 2)) : kUnknownDim;
    if (d < 0) continue;
    if (mode == PadMode::kReflect && p[i] >= d)
      return invalid_argument("Pad: REFLECT paddings must be less than the dimension size: padding ", p[i],
                              " of dimension ", i / 2, " is not less than ", d);
    if (mode == PadMode::kSymmetric && p[i] > d)
      return invalid_argument("Pad: SYMMETRIC paddings must be no greater than the dimension size: padding ",
                              p[i], " of dimension ", i / 2, " is greater than ", d);
  }
  return Status::OK();
}

// The paddings operand (input `i`, an int [rank, 2] matrix) of Pad or MirrorPadGrad: what is known of its
// values (row-major: before0, after0, before1, ...; kUnknown where computed from unknown dims; all of them
// when it is a constant), with the rank it gives. `known` is false when not even its shape is known.
Status paddings_operand(const InferContext& ctx, int i, bool* known, std::vector<int64_t>* p, int* rank) {
  const Shape& s = ctx.inputs[i].shape;
  if (s.rank_known() && (s.rank() != 2 || (s.dim(1) >= 0 && s.dim(1) != 2)))
    return invalid_argument(ctx.op->name, ": paddings must be a [rank, 2] matrix, got shape ", s.to_string());
  *rank = s.rank_known() && s.dim(0) >= 0 && s.dim(0) <= kMaxRank ? static_cast<int>(s.dim(0)) : -1;
  PartialValue value = ctx.matrix_value_of(i);
  *known = value.matrix();
  if (!*known) return Status::OK();
  if (value.columns != 2)
    return invalid_argument(ctx.op->name, ": paddings must be a [rank, 2] matrix, got shape [",
                            value.values.size() / value.columns, ",", value.columns, "]");
  *p = std::move(value.values);
  return Status::OK();
}

Status paddings_operand(const KernelContext& ctx, int i, std::vector<int64_t>* p) {
  const Shape& s = ctx.input(i).shape();
  if (s.rank() != 2 || s.dim(1) != 2)
    return invalid_argument(ctx.op->name, ": paddings must be a [rank, 2] matrix, got shape ", s.to_string());
  *p = ctx.int_values(i);
  return Status::OK();
}

// Paddings have one row per dimension of the input (dy for MirrorPadGrad), whatever is known of their values.
Status check_paddings_rows(const InferContext& ctx, const Shape& in, int rank_from_paddings) {
  if (in.rank_known() && rank_from_paddings >= 0 && rank_from_paddings != in.rank())
    return invalid_argument(ctx.op->name, ": paddings must have shape [", in.rank(), ", 2] for ",
                            ctx.op->inputs[0].name, " of shape ", in.to_string(), ", got ",
                            ctx.inputs[1].shape.to_string());
  return Status::OK();
}

// The shape of a result whose paddings are not known while tracing: the rank only.
Shape unknown_dims_of_rank(const Shape& in, int rank_from_paddings) {
  const int rank = in.rank_known() ? in.rank() : rank_from_paddings;
  return rank < 0 ? Shape::unknown_rank()
                  : Shape(std::vector<int64_t>(static_cast<size_t>(rank), kUnknownDim));
}

Status pad_shape(InferContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  bool known;
  int rank;
  std::vector<int64_t> p;
  EMBER_RETURN_IF_ERROR(paddings_operand(ctx, 1, &known, &p, &rank));
  PadMode mode;
  EMBER_RETURN_IF_ERROR(parse_pad_mode(ctx.attr_string(1), &mode));
  EMBER_RETURN_IF_ERROR(check_paddings_rows(ctx, in, rank));
  if (!known) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, unknown_dims_of_rank(in, rank)});
    return Status::OK();
  }
  EMBER_RETURN_IF_ERROR(check_paddings(in, p, mode));
  Shape out;
  for (size_t i = 0; i < p.size() / 2; ++i) {
    int64_t d = in.rank_known() ? in.dim(static_cast<int>(i)) : kUnknownDim, size = kUnknownDim;
    if (p[2 * i] == PartialValue::kUnknown || p[2 * i + 1] == PartialValue::kUnknown) d = kUnknownDim;
    if (d >= 0 &&
        (__builtin_add_overflow(d, p[2 * i], &size) || __builtin_add_overflow(size, p[2 * i + 1], &size)))
      return invalid_argument("Pad: padding dimension ", i, " of size ", d, " by ", p[2 * i], " and ",
                              p[2 * i + 1], " overflows int64");
    out.push_back(size);
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

// The interior is one strided copy; mirror modes then fill each dim's edges from the output itself, from
// the last dim to the first, so every edge slab reads only rows that are already complete.
Status pad_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  std::vector<int64_t> p;
  EMBER_RETURN_IF_ERROR(paddings_operand(ctx, 1, &p));
  PadMode mode;
  EMBER_RETURN_IF_ERROR(parse_pad_mode(ctx.attr_string(1), &mode));
  const int rank = in.rank();
  const size_t elem = dtype_size(in.dtype());
  if (out.num_elements() == 0) return Status::OK();
  // The executor hands over a dying input's buffer only when the output has its shape, that is when
  // nothing is padded (kOverwritesInput0): a dynamic-size TensorArray pads its buffer by 0 rows on every
  // write but the ones that double it, and those writes must not copy it.
  if (out.raw_data() == in.raw_data()) return Status::OK();
  if (mode == PadMode::kConstant && out.num_elements() != in.num_elements()) {
    const kernels::ScalarBits value = kernels::encode_scalar(in.dtype(), ctx.attr_float(0));
    kernels::fill(out.mutable_raw_data(), out.num_elements(), elem, value.data());
  }
  int64_t out_strides[kMaxRank], in_strides[kMaxRank];
  kernels::dense_strides(rank, out.shape().dims().data(), out_strides);
  kernels::dense_strides(rank, in.shape().dims().data(), in_strides);
  char* base = static_cast<char*>(out.mutable_raw_data());
  int64_t interior = 0;
  kernels::StridedCopy c;
  c.rank = rank;
  for (int d = 0; d < rank; ++d) {
    interior += p[2 * d] * out_strides[d];
    c.dims[d] = in.shape().dim(d);
    c.src_strides[d] = in_strides[d];
    c.dst_strides[d] = out_strides[d];
  }
  const int64_t ielem = static_cast<int64_t>(elem);
  kernels::strided_copy(in.raw_data(), base + interior * ielem, elem, c);
  if (mode == PadMode::kConstant || in.num_elements() == 0) return Status::OK();

  const int64_t shift = mode == PadMode::kReflect ? 0 : 1;  // SYMMETRIC repeats the edge element
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t left = p[2 * d], right = p[2 * d + 1], n = in.shape().dim(d);
    // Dims before d: only their interior rows exist yet; dims after d: complete, edges included.
    kernels::StridedCopy e;
    e.rank = rank;
    int64_t origin = 0;
    for (int k = 0; k < rank; ++k) {
      e.dims[k] = k < d ? in.shape().dim(k) : out.shape().dim(k);
      e.src_strides[k] = e.dst_strides[k] = out_strides[k];
      if (k < d) origin += p[2 * k] * out_strides[k];
    }
    e.src_strides[d] = -out_strides[d];
    if (left > 0) {
      // out[j] = out[2 * left - j - shift] for j < left.
      e.dims[d] = left;
      kernels::strided_copy(base + (origin + (2 * left - shift) * out_strides[d]) * ielem,
                            base + origin * ielem, elem, e);
    }
    if (right > 0) {
      // out[left + n + k] = out[left + n - 2 + shift - k] for k < right.
      e.dims[d] = right;
      kernels::strided_copy(base + (origin + (left + n - 2 + shift) * out_strides[d]) * ielem,
                            base + (origin + (left + n) * out_strides[d]) * ielem, elem, e);
    }
  }
  return Status::OK();
}

// ---- MirrorPadGrad(dy; paddings, mode): the adjoint of Pad's REFLECT and SYMMETRIC modes.

Status mirror_pad_mode(const std::string& text, PadMode* mode) {
  EMBER_RETURN_IF_ERROR(parse_pad_mode(text, mode));
  if (*mode == PadMode::kConstant)
    return invalid_argument("MirrorPadGrad: mode must be REFLECT or SYMMETRIC, got '", text, "'");
  return Status::OK();
}

Status mirror_pad_grad_shape(InferContext& ctx) {
  const Shape& dy = ctx.inputs[0].shape;
  bool known;
  int rank;
  std::vector<int64_t> p;
  EMBER_RETURN_IF_ERROR(paddings_operand(ctx, 1, &known, &p, &rank));
  PadMode mode;
  EMBER_RETURN_IF_ERROR(mirror_pad_mode(ctx.attr_string(0), &mode));
  EMBER_RETURN_IF_ERROR(check_paddings_rows(ctx, dy, rank));
  if (!known) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, unknown_dims_of_rank(dy, rank)});
    return Status::OK();
  }
  if (p.size() % 2 != 0 || p.size() > 2 * static_cast<size_t>(kMaxRank) ||
      (dy.rank_known() && p.size() != 2 * static_cast<size_t>(dy.rank())))
    return invalid_argument("MirrorPadGrad: paddings must have shape [", dy.rank_known() ? dy.rank() : -1,
                            ", 2] for dy of shape ", dy.to_string(), ", got ", p.size(), " values");
  Shape out;
  for (size_t i = 0; i < p.size() / 2; ++i) {
    int64_t d = dy.rank_known() ? dy.dim(static_cast<int>(i)) : kUnknownDim;
    const bool unknown = p[2 * i] == PartialValue::kUnknown || p[2 * i + 1] == PartialValue::kUnknown;
    if (unknown) d = kUnknownDim;
    if ((p[2 * i] < 0 && p[2 * i] != PartialValue::kUnknown) ||
        (p[2 * i + 1] < 0 && p[2 * i + 1] != PartialValue::kUnknown))
      return invalid_argument("MirrorPadGrad: paddings must be non-negative, got ", list_str(p));
    if (d >= 0 && d < p[2 * i] + p[2 * i + 1])
      return invalid_argument("MirrorPadGrad: dimension ", i, " of dy (shape ", dy.to_string(),
                              ") is smaller than its paddings ", p[2 * i], " and ", p[2 * i + 1]);
    out.push_back(d < 0 ? kUnknownDim : d - p[2 * i] - p[2 * i + 1]);
  }
  // The paddings must be ones Pad accepts for the result, or the mirror images would not exist.
  EMBER_RETURN_IF_ERROR(
      check_paddings(out, p, mode).with_prefix("MirrorPadGrad: the result's paddings must be valid for "));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

Status mirror_pad_grad_kernel(KernelContext& ctx) {
  PadMode mode;
  EMBER_RETURN_IF_ERROR(mirror_pad_mode(ctx.attr_string(0), &mode));
  const TensorImpl& dy = ctx.input(0);
  std::vector<int64_t> p;
  EMBER_RETURN_IF_ERROR(paddings_operand(ctx, 1, &p));
  kernels::mirror_pad_grad(dy.raw_data(), dy.dtype(), dy.shape().dims(), p, mode == PadMode::kSymmetric,
                           ctx.output(0).mutable_raw_data());
  return Status::OK();
}

// ---- Gradient rules (ops/gradient.h)

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

std::vector<int64_t> all_axes(int rank) {
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) axes[i] = i;
  return axes;
}

void fill_grad(GradContext& c) {
  if (c.grad().shape().rank_known()) return c.set(1, sum(c.grad(), all_axes(c.grad().rank()), false));
  // dims computed in the graph, of a length unknown while tracing: sum over every axis counted at run time.
  const GradTensor axes =
      emit1("Range", {scalar(0, DType::kInt32), emit1("Rank", {c.grad()}), scalar(1, DType::kInt32)});
  c.set(1, emit1("Sum", {c.grad(), axes}));
}

// dy viewed as [m0, d0, m1, d1, ...] summed over the multiples' axes; dims tiled once are not split.
void tile_grad(GradContext& c) {
  const GradTensor x = c.input(0);
  if (!x.shape().fully_defined() || c.input(1)->is_symbolic()) {
    // Shapes read at run time: dy viewed as [m0, d0, m1, d1, ...] (the multiples interleaved with x's
    // shape), summed over the multiples' axes.
    const int rank = x.rank();
    if (rank < 0 || 2 * rank > kMaxRank)
      check_ok(make_error(Code::kUnimplemented,
                          "Tile: the gradient with unknown dims needs a known rank of at most ", kMaxRank / 2,
                          ", got ", x.shape().to_string()));
    const int64_t flat[] = {-1};
    const GradTensor split = reshape_to(
        transpose(stack_ints({cast(c.input(1), DType::kInt32), shape_of(x)}), std::vector<int64_t>{1, 0}),
        int_vector(flat));
    std::vector<int64_t> axes;
    for (int i = 0; i < rank; ++i) axes.push_back(2 * i);
    c.set(0, sum(reshape_to(c.grad(), split), axes, false));
    return;
  }
  const std::vector<int64_t> dims = x.shape().dim_vector();
  const std::vector<int64_t> m = known_ints(c.input(1), "Tile", "multiples");
  GradTensor dy = c.grad();
  std::vector<int64_t> split, axes;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (m[i] != 1) {
      axes.push_back(static_cast<int64_t>(split.size()));
      split.push_back(m[i]);
    }
    split.push_back(dims[i]);
  }
  if (axes.empty()) return c.set(0, dy);
  if (split.size() <= static_cast<size_t>(kMaxRank)) {
    c.set(0, reshape(sum(reshape(dy, split), axes, false), dims));
    return;
  }
  // Too many dims to split at once: one tiled dim at a time, with the others merged around it.
  std::vector<int64_t> current(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) current[i] = dims[i] * m[i];
  for (size_t i = 0; i < dims.size(); ++i) {
    if (m[i] == 1) continue;
    int64_t before = 1, after = 1;
    for (size_t k = 0; k < i; ++k) before *= current[k];
    for (size_t k = i + 1; k < dims.size(); ++k) after *= current[k];
    dy = sum(reshape(dy, {before, m[i], dims[i], after}), {1}, false);
    current[i] = dims[i];
  }
  c.set(0, reshape(dy, dims));
}

void broadcast_to_grad(GradContext& c) { c.set(0, reduce_to(c.grad(), c.input(0))); }

// CONSTANT: dy's interior (constant_value is an attribute, so it gets no gradient). REFLECT and
// SYMMETRIC: the interior plus the mirrored edges folded back onto it.
void pad_grad(GradContext& c) {
  PadMode mode;
  check_ok(parse_pad_mode(c.attr_string(1), &mode));
  AttrList attrs;
  if (mode != PadMode::kConstant) {
    attrs.push_back(c.attr_string(1));
    c.set(0, emit1("MirrorPadGrad", {c.grad(), c.input(1)}, std::move(attrs)));
    return;
  }
  // dy's interior: begin is the paddings' first column, the size is the input's shape.
  const int64_t begin[] = {0, 0}, size[] = {-1, 1}, flat[] = {-1};
  const GradTensor first_column =
      reshape_to(emit1("Slice", {cast(c.input(1), DType::kInt32), int_vector(begin), int_vector(size)}),
                 int_vector(flat));
  c.set(0, emit1("Slice", {c.grad(), first_column, shape_of(c.input(0))}));
}

// MirrorPadGrad is linear and Pad (in the same mode) is its adjoint.
void mirror_pad_grad_grad(GradContext& c) {
  AttrList attrs;
  attrs.push_back(0.0);
  attrs.push_back(c.attr_string(0));
  c.set(0, emit1("Pad", {c.grad(), c.input(1)}, std::move(attrs)));
}

}  // namespace

void register_array_create_ops(OpRegistry& r) {
  OpBuilder("Fill")
      .doc("A tensor of shape dims filled with a scalar value. fill([2, 2], 7) == [[7, 7], [7, 7]]")
      .input_shape_like("dims")
      .input("value")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .dispatch_on_input(1)
      .shape(&fill_shape)
      .kernel(kAllTypesAndComplex, &fill_kernel)
      .grad(&fill_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("ZerosLike")
      .doc("Zeros with x's shape and dtype. zeros_like([1, 2]) == [0, 0]")
      .input("x")
      .output("y")
      .type_var(kAllTypesAndComplex)
      .flags(kNotDifferentiable | kReadsOnlyShape)
      .shape(&same_as_input_shape)
      .kernel(kAllTypesAndComplex, &zeros_like_kernel)
      .batching(BatchingRule::kElementwise)
      .done(r);
  OpBuilder("OnesLike")
      .doc("Ones with x's shape and dtype (True for bool). ones_like([1, 2]) == [1, 1]")
      .input("x")
      .output("y")
      .type_var(kAllTypesAndComplex)
      .flags(kNotDifferentiable | kReadsOnlyShape)
      .shape(&same_as_input_shape)
      .kernel(kAllTypesAndComplex, &ones_like_kernel)
      .batching(BatchingRule::kElementwise)
      .done(r);
  OpBuilder("Tile")
      .doc(
          "Repeats the tensor multiples[i] times along axis i. tile([[1, 2]], [2, 2]) == [[1, 2, 1, 2], [1, "
          "2, 1, 2]]")
      .input("input")
      .input_shape_like("multiples")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .shape(&tile_shape)
      .kernel(kAllTypesAndComplex, &tile_kernel)
      .grad(&tile_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("BroadcastTo")
      .doc("Broadcasts to a shape with NumPy's rules. broadcast_to([1, 2], [2, 2]) == [[1, 2], [1, 2]]")
      .input("input")
      .input_shape_like("shape")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .shape(&broadcast_to_shape)
      .kernel(kAllTypesAndComplex, &broadcast_to_kernel)
      .grad(&broadcast_to_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("Pad")
      .doc(
          "Pads each dim by paddings [[before0, after0], [before1, after1], ...]; mode CONSTANT, REFLECT or "
          "SYMMETRIC. pad([1, 2], [[1, 1]]) == [0, 1, 2, 0]")
      .input("input")
      .input_shape_like("paddings")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .attr("constant_value", AttrType::kFloat, 0.0)
      .attr("mode", AttrType::kString, std::string("CONSTANT"))
      .flags(kOverwritesInput0)
      .shape(&pad_shape)
      .kernel(kAllTypesAndComplex, &pad_kernel)
      .grad(&pad_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("MirrorPadGrad")
      .doc(
          "The gradient of Pad in REFLECT or SYMMETRIC mode: dy's interior plus its mirrored edges, folded "
          "back. mirror_pad_grad([1, 2, 3, 4], [[1, 1]], 'REFLECT') == [6, 4]")
      .input("dy")
      .input_shape_like("paddings")
      .output("output")
      .type_var(kNumericTypes)
      .attr("mode", AttrType::kString, std::string("REFLECT"))
      .shape(&mirror_pad_grad_shape)
      .kernel(kNumericTypes, &mirror_pad_grad_kernel)
      .grad(&mirror_pad_grad_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("Eye")
      .doc("Identity matrices (ones on the main diagonal), optionally batched. eye(2) == [[1, 0], [0, 1]]")
      .output("output")
      .type_var(kAllTypesAndComplex)
      .attr("num_rows", AttrType::kInt)
      .attr("num_columns", AttrType::kInt, int64_t{-1})
      .attr("batch_shape", AttrType::kInts, std::vector<int64_t>{})
      .attr("dtype", AttrType::kDType, DType::kFloat32)
      .dispatch_on_output()
      .flags(kNotDifferentiable)
      .shape(&eye_shape)
      .kernel(kAllTypesAndComplex, &eye_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("Range")
      .doc(
          "start, start + delta, ... up to (excluding) limit; an error when delta points away from limit. "
          "range(1, 10, 3) == [1, 4, 7]")
      .input("start")
      .input("limit")
      .input("delta")
      .output("output")
      .type_var(kRangeTypes)
      .flags(kNotDifferentiable | kKernelAllocates)
      .shape(&range_shape)
      .kernel(kRangeTypes, &range_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("LinSpace")
      .doc("num evenly spaced values from start to stop inclusive. linspace(0., 1., 3) == [0., 0.5, 1.]")
      .input("start")
      .input("stop")
      .input_shape_like("num")
      .output("output")
      .type_var(kFloatTypes)
      .flags(kNotDifferentiable)
      .shape(&linspace_shape)
      .kernel(kFloatTypes, &linspace_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
