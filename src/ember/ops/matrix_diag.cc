// TensorFlow's MatrixDiagV3 family, the ops of tf.linalg.diag, diag_part and set_diag: a band of diagonals
// k = lo..hi (a scalar k is the band k..k) of the innermost matrices, stored as [..., num_diags, max_len]
// (just [..., max_len] for one diagonal). Their gradients are each other, as in TensorFlow. The kernels
// move elements by size, so one instantiation serves every dtype of a width. Registered from
// register_linalg_ops (linalg.cc).
//
// Note [Diagonal layout]: diagonals are stacked from hi (row 0) down to lo, each padded to the longest,
// max_len = min(M + min(hi, 0), N - max(lo, 0)). `align` names how superdiagonals and subdiagonals are
// padded: "RIGHT_LEFT" (TensorFlow's default) right-aligns superdiagonals (pads them on the left) and
// left-aligns subdiagonals. The main diagonal is left-aligned when either part says LEFT.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ember/kernels/array.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

constexpr DTypeSet kDiagTypes = kAllTypesAndComplex;

struct Band {
  int64_t lo = 0, hi = 0;
  int64_t count() const { return hi - lo + 1; }
  bool single() const { return lo == hi; }
};

// The band k, a scalar or a vector of one or two int32s.
StatusOr<Band> band_of(const std::string& op, const TensorImpl& k) {
  if (k.rank() > 1)
    return invalid_argument(
        op, ": diag_index must be a scalar or vector, received shape: ", k.shape().to_string());
  const int64_t n = k.num_elements();
  if (n < 1 || n > 2)
    return invalid_argument(op, ": diag_index must have only one or two elements, received ", n,
                            " elements.");
  const int32_t* v = k.data<int32_t>();
  Band band{v[0], n == 2 ? v[1] : v[0]};
  if (band.lo > band.hi)
    return invalid_argument(op, ": lower_diag_index must not be larger than upper_diag_index: ", band.lo,
                            " > ", band.hi);
  return band;
}

// The band of constant operand `i`, if it is known while tracing.
StatusOr<std::optional<Band>> known_band(const InferContext& ctx, int i) {
  const TensorImpl* k = ctx.constant(i);
  if (k == nullptr || k->is_symbolic()) return std::optional<Band>();
  auto band = band_of(ctx.op->name, *k);
  if (!band.ok()) return band.status();
  return std::optional<Band>(*band);
}

// TensorFlow's rule: each end of the band lies strictly inside (-M, N), or is 0.
Status check_inside(const std::string& op, int64_t m, int64_t n, const Band& band) {
  for (const auto& [value, name] : {std::pair{band.lo, "lower"}, std::pair{band.hi, "upper"}})
    if (value != 0 && !(-m < value && value < n))
      return invalid_argument(op, ": ", name, "_diag_index is out of bound: ", value, ". It must be between ",
                              -m, " and ", n);
  return Status::OK();
}

Status check_align(const std::string& op, const std::string& align) {
  for (const char* known : {"LEFT_RIGHT", "RIGHT_LEFT", "LEFT_LEFT", "RIGHT_RIGHT"})
    if (align == known) return Status::OK();
  return invalid_argument(op, ": align must be one of LEFT_RIGHT, RIGHT_LEFT, LEFT_LEFT, RIGHT_RIGHT, got '",
                          align, "'");
}

int64_t diag_length(int64_t m, int64_t n, int64_t d) {
  return std::min(m + std::min<int64_t>(d, 0), n - std::max<int64_t>(d, 0));
}

// Where each slot of the diagonal tensor lives in an M x N matrix (Note [Diagonal layout]).
struct Layout {
  int64_t m, n, max_len;
  Band band;
  bool left_super, left_sub;

  Layout(int64_t rows, int64_t cols, Band b, const std::string& align)
      : m(rows),
        n(cols),
        max_len(std::max<int64_t>(
            std::min(rows + std::min<int64_t>(b.hi, 0), cols - std::max<int64_t>(b.lo, 0)), 0)),
        band(b),
        left_super(align.starts_with("LEFT")),
        left_sub(align.ends_with("LEFT")) {}
  // Calls fn(slot, position) for each slot (row r of the band = diagonal hi - r, column j) holding a
  // matrix element, and pad(slot) for each padding slot.
  template <typename Fn, typename Pad>
  void walk(Fn&& fn, Pad&& pad) const {
    for (int64_t r = 0; r < band.count(); ++r) {
      const int64_t d = band.hi - r;
      const int64_t len = std::max<int64_t>(diag_length(m, n, d), 0);
      const bool left = (d >= 0 && left_super) || (d <= 0 && left_sub);
      const int64_t offset = left ? 0 : max_len - len;
      for (int64_t j = 0; j < max_len; ++j) {
        const int64_t t = j - offset, slot = r * max_len + j;
        if (t < 0 || t >= len) {
          pad(slot);
        } else {
          fn(slot, (t + std::max<int64_t>(0, -d)) * n + t + std::max<int64_t>(0, d));
        }
      }
    }
  }
  int64_t slots() const { return band.count() * max_len; }
};

// Runs fn with Elem, a trivially copyable type of the dtype's width.
template <typename Fn>
void by_width(DType dtype, Fn&& fn) {
  switch (dtype_size(dtype)) {
    case 1:
      return fn.template operator()<uint8_t>();
    case 2:
      return fn.template operator()<uint16_t>();
    case 4:
      return fn.template operator()<uint32_t>();
    case 8:
      return fn.template operator()<uint64_t>();
    default: {
      struct Wide {
        uint64_t words[2];
      };
      return fn.template operator()<Wide>();
    }
  }
}

Status scalar_padding(const std::string& op, const TensorImpl& padding) {
  if (padding.num_elements() != 1)
    return invalid_argument(op, ": padding_value must be a scalar, got shape ", padding.shape().to_string());
  return Status::OK();
}

// Writes each batch's band of diagonals (`diagonal`, laid out by `layout`) into its matrix in `out`, whose
// other elements the caller has set (to padding, or to the input's).
void write_band(const Layout& layout, const TensorImpl& diagonal, TensorImpl& out) {
  const int64_t matrix = layout.m * layout.n;
  const int64_t batches = matrix > 0 ? out.num_elements() / matrix : 0;
  by_width(out.dtype(), [&]<typename Elem>() {
    const Elem* in = static_cast<const Elem*>(diagonal.raw_data());
    Elem* o = static_cast<Elem*>(out.mutable_raw_data());
    for (int64_t b = 0; b < batches; ++b) {
      const Elem* diag = in + b * layout.slots();
      Elem* dst = o + b * matrix;
      layout.walk([&](int64_t slot, int64_t pos) { dst[pos] = diag[slot]; }, [](int64_t) {});
    }
  });
}

// The band operand `k_input` when it and the rank of `x` are known while tracing; otherwise the output is
// pushed as of unknown rank and nullopt returned. Checks align and x's rank (at least `min_rank`) first.
StatusOr<std::optional<Band>> band_for_shape(InferContext& ctx, const Shape& x, int min_rank, int k_input) {
  const std::string& op = ctx.op->name;
  EMBER_RETURN_IF_ERROR(check_align(op, ctx.attr_string(0)));
  if (x.rank_known() && x.rank() < min_rank)
    return invalid_argument(op, ": ", ctx.op->inputs[0].name, " must be at least ", min_rank,
                            "-dim, received shape: ", x.to_string());
  auto band = known_band(ctx, k_input);
  if (!band.ok()) return band.status();
  if (!x.rank_known() || !band->has_value()) {
    ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape::unknown_rank()});
    return std::optional<Band>();
  }
  return *band;
}

// ---- MatrixDiagPartV3(input [..., M, N], k, padding_value; align) -> [..., (num_diags,) max_len]

Status diag_part_shape(InferContext& ctx) {
  const Shape& x = ctx.inputs[0].shape;
  auto band = band_for_shape(ctx, x, 2, 1);
  if (!band.ok()) return band.status();
  if (!band->has_value()) return Status::OK();
  const Band b = **band;
  const int64_t m = x.dim(x.rank() - 2), n = x.dim(x.rank() - 1);
  if (m >= 0 && n >= 0) EMBER_RETURN_IF_ERROR(check_inside(ctx.op->name, m, n, b));
  Shape out;
  for (int d = 0; d < x.rank() - 2; ++d) out.push_back(x.dim(d));
  if (!b.single()) out.push_back(b.count());
  out.push_back(m >= 0 && n >= 0 ? Layout(m, n, b, ctx.attr_string(0)).max_len : kUnknownDim);
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

Status diag_part_kernel(KernelContext& ctx) {
  const TensorImpl& x = ctx.input(0);
  const std::string& op = ctx.op->name;
  if (x.rank() < 2)
    return invalid_argument(op, ": input must be at least 2-dim, received shape: ", x.shape().to_string());
  auto band = band_of(op, ctx.input(1));
  if (!band.ok()) return band.status();
  EMBER_RETURN_IF_ERROR(scalar_padding(op, ctx.input(2)));
  const int64_t m = x.shape().dim(x.rank() - 2), n = x.shape().dim(x.rank() - 1);
  EMBER_RETURN_IF_ERROR(check_inside(op, m, n, *band));
  const Layout layout(m, n, *band, ctx.attr_string(0));
  TensorImpl& out = ctx.output(0);
  const int64_t batches =
      m * n > 0 ? x.num_elements() / (m * n) : out.num_elements() / std::max<int64_t>(layout.slots(), 1);
  by_width(x.dtype(), [&]<typename Elem>() {
    const Elem* in = static_cast<const Elem*>(x.raw_data());
    const Elem pad = *static_cast<const Elem*>(ctx.input(2).raw_data());
    Elem* o = static_cast<Elem*>(out.mutable_raw_data());
    for (int64_t b = 0; b < batches; ++b) {
      const Elem* matrix = in + b * m * n;
      Elem* diag = o + b * layout.slots();
      layout.walk([&](int64_t slot, int64_t pos) { diag[slot] = matrix[pos]; },
                  [&](int64_t slot) { diag[slot] = pad; });
    }
  });
  return Status::OK();
}

// ---- MatrixDiagV3(diagonal, k, num_rows, num_cols, padding_value; align) -> [..., num_rows, num_cols]

struct DiagSize {
  int64_t rows, cols;
};

// num_rows/num_cols as given (-1: inferred from the diagonals), checked as TensorFlow does.
StatusOr<DiagSize> diag_size(const Band& band, int64_t max_len, int64_t rows, int64_t cols) {
  const int64_t min_rows = max_len - std::min<int64_t>(band.hi, 0),
                min_cols = max_len + std::max<int64_t>(band.lo, 0);
  if (rows == -1 && cols == -1) {
    rows = cols = std::max(min_rows, min_cols);
  } else if (rows == -1) {
    rows = min_rows;
  } else if (cols == -1) {
    cols = min_cols;
  }
  if (rows < min_rows) return invalid_argument("MatrixDiagV3: The number of rows is too small.");
  if (cols < min_cols) return invalid_argument("MatrixDiagV3: The number of columns is too small.");
  if (rows != min_rows && cols != min_cols)
    return invalid_argument(
        "MatrixDiagV3: The number of rows or columns is not consistent with the specified d_lower, d_upper, "
        "and "
        "diagonal.");
  int64_t elements;
  if (!checked_mul(rows, cols, &elements) || elements > (int64_t{1} << 40))
    return make_error(Code::kResourceExhausted, "MatrixDiagV3: a ", rows, "x", cols, " matrix is too large");
  return DiagSize{rows, cols};
}

StatusOr<int64_t> int_scalar(const std::string& op, const char* what, const TensorImpl& t) {
  if (t.num_elements() != 1) return invalid_argument(op, ": ", what, " must be a scalar");
  return static_cast<int64_t>(*t.data<int32_t>());
}

// The diagonal's leading (batch) dims and max_len, after checking its band dim.
Status split_diagonal(const Shape& diagonal, const Band& band, Shape& batch, int64_t& max_len) {
  const int batch_rank = diagonal.rank() - (band.single() ? 1 : 2);
  if (diagonal.rank() < 1)
    return invalid_argument("MatrixDiagV3: diagonal must be at least 1-dim, received shape: ",
                            diagonal.to_string());
  if (batch_rank < 0 ||
      (!band.single() && diagonal.dim(batch_rank) >= 0 && diagonal.dim(batch_rank) != band.count()))
    return invalid_argument(
        "MatrixDiagV3: The number of diagonals provided in the input does not match the lower_diag_index and "
        "upper_diag_index range.");
  if (batch_rank + 2 > kMaxRank)  // the matrices add two dims to the batch
    return invalid_argument("MatrixDiagV3: a diagonal of shape ", diagonal.to_string(),
                            " makes matrices of rank ", batch_rank + 2, ", more than ember's ", kMaxRank,
                            " dims");
  for (int d = 0; d < batch_rank; ++d) batch.push_back(diagonal.dim(d));
  max_len = diagonal.dim(diagonal.rank() - 1);
  return Status::OK();
}

Status diag_shape(InferContext& ctx) {
  const Shape& diagonal = ctx.inputs[0].shape;
  auto band = band_for_shape(ctx, diagonal, 1, 1);
  if (!band.ok()) return band.status();
  if (!band->has_value()) return Status::OK();
  Shape out;
  int64_t max_len;
  EMBER_RETURN_IF_ERROR(split_diagonal(diagonal, **band, out, max_len));
  const TensorImpl *rows_t = ctx.constant(2), *cols_t = ctx.constant(3);
  if (max_len >= 0 && rows_t != nullptr && cols_t != nullptr && !rows_t->is_symbolic() &&
      !cols_t->is_symbolic()) {
    auto rows = int_scalar(ctx.op->name, "num_rows", *rows_t);
    if (!rows.ok()) return rows.status();
    auto cols = int_scalar(ctx.op->name, "num_cols", *cols_t);
    if (!cols.ok()) return cols.status();
    auto size = diag_size(**band, max_len, *rows, *cols);
    if (!size.ok()) return size.status();
    out.push_back(size->rows);
    out.push_back(size->cols);
  } else {
    out.push_back(kUnknownDim);
    out.push_back(kUnknownDim);
  }
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

Status diag_kernel(KernelContext& ctx) {
  const TensorImpl& diagonal = ctx.input(0);
  const std::string& op = ctx.op->name;
  auto band = band_of(op, ctx.input(1));
  if (!band.ok()) return band.status();
  Shape batch;
  int64_t max_len;
  EMBER_RETURN_IF_ERROR(split_diagonal(diagonal.shape(), *band, batch, max_len));
  auto rows = int_scalar(op, "num_rows", ctx.input(2));
  if (!rows.ok()) return rows.status();
  auto cols = int_scalar(op, "num_cols", ctx.input(3));
  if (!cols.ok()) return cols.status();
  EMBER_RETURN_IF_ERROR(scalar_padding(op, ctx.input(4)));
  auto size = diag_size(*band, max_len, *rows, *cols);
  if (!size.ok()) return size.status();
  TensorImpl& out = ctx.output(0);
  const Layout layout(size->rows, size->cols, *band, ctx.attr_string(0));
  kernels::fill(out.mutable_raw_data(), out.num_elements(), dtype_size(out.dtype()), ctx.input(4).raw_data());
  write_band(layout, diagonal, out);
  return Status::OK();
}

// ---- MatrixSetDiagV3(input [..., M, N], diagonal, k; align) -> input with the band replaced

Status expected_diagonal(const std::string& op, const Shape& x, const Band& band, const std::string& align,
                         Shape& expected) {
  for (int d = 0; d < x.rank() - 2; ++d) expected.push_back(x.dim(d));
  if (!band.single()) expected.push_back(band.count());
  const int64_t m = x.dim(x.rank() - 2), n = x.dim(x.rank() - 1);
  expected.push_back(m >= 0 && n >= 0 ? Layout(m, n, band, align).max_len : kUnknownDim);
  if (m >= 0 && n >= 0) return check_inside(op, m, n, band);
  return Status::OK();
}

Status set_diag_shape(InferContext& ctx) {
  const Shape &x = ctx.inputs[0].shape, &diagonal = ctx.inputs[1].shape;
  const std::string& op = ctx.op->name;
  EMBER_RETURN_IF_ERROR(check_align(op, ctx.attr_string(0)));
  if (x.rank_known() && x.rank() < 2)
    return invalid_argument(op, ": input must be at least 2-dim, received shape: ", x.to_string());
  auto band = known_band(ctx, 2);
  if (!band.ok()) return band.status();
  if (x.rank_known() && diagonal.rank_known() && band->has_value()) {
    Shape expected;
    EMBER_RETURN_IF_ERROR(expected_diagonal(op, x, **band, ctx.attr_string(0), expected));
    if (!expected.is_compatible_with(diagonal))
      return invalid_argument(op, ": diagonal must have the shape ", expected.to_string(), " for input ",
                              x.to_string(), ", got ", diagonal.to_string());
  }
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

Status set_diag_kernel(KernelContext& ctx) {
  const TensorImpl &x = ctx.input(0), &diagonal = ctx.input(1);
  const std::string& op = ctx.op->name;
  if (x.rank() < 2)
    return invalid_argument(op, ": input must be at least 2-dim, received shape: ", x.shape().to_string());
  auto band = band_of(op, ctx.input(2));
  if (!band.ok()) return band.status();
  Shape expected;
  EMBER_RETURN_IF_ERROR(expected_diagonal(op, x.shape(), *band, ctx.attr_string(0), expected));
  if (expected != diagonal.shape())
    return invalid_argument(op, ": input does not have enough elements for the diagonals ", band->lo, "..",
                            band->hi, ". Input shape: ", x.shape().to_string(),
                            " Diagonal shape: ", diagonal.shape().to_string(),
                            " Expected diagonal shape: ", expected.to_string());
  const int64_t m = x.shape().dim(x.rank() - 2), n = x.shape().dim(x.rank() - 1);
  const Layout layout(m, n, *band, ctx.attr_string(0));
  TensorImpl& out = ctx.output(0);
  if (out.num_elements() == 0) return Status::OK();
  if (out.mutable_raw_data() != x.raw_data()) std::memcpy(out.mutable_raw_data(), x.raw_data(), x.nbytes());
  write_band(layout, diagonal, out);
  return Status::OK();
}

// ---- gradients (TensorFlow's): each op's gradient is one of the others.

AttrList align_attr(const GradContext& c) {
  AttrList attrs;
  attrs.push_back(c.attr_string(0));
  return attrs;
}

void diag_grad(GradContext& c) {
  using namespace gradient;
  c.set(0, emit1("MatrixDiagPartV3", {c.grad(), c.input(1), scalar(0, c.grad().dtype())}, align_attr(c)));
}

void diag_part_grad(GradContext& c) {
  using namespace gradient;
  const GradTensor x = c.input(0);
  const Shape& s = x.shape();
  if (s.rank_known() && s.dim(s.rank() - 2) >= 0 && s.dim(s.rank() - 1) >= 0) {
    c.set(0, emit1("MatrixDiagV3",
                   {c.grad(), c.input(1), scalar(static_cast<double>(s.dim(s.rank() - 2)), DType::kInt32),
                    scalar(static_cast<double>(s.dim(s.rank() - 1)), DType::kInt32), scalar(0, x.dtype())},
                   align_attr(c)));
    return;
  }
  c.set(0, emit1("MatrixSetDiagV3", {zeros_like(x), c.grad(), c.input(1)}, align_attr(c)));
}

void set_diag_grad(GradContext& c) {
  using namespace gradient;
  const GradTensor dy = c.grad();
  c.set(0, emit1("MatrixSetDiagV3", {dy, zeros_like(c.input(1)), c.input(2)}, align_attr(c)));
  c.set(1, emit1("MatrixDiagPartV3", {dy, c.input(2), scalar(0, dy.dtype())}, align_attr(c)));
}

}  // namespace

void register_matrix_diag_ops(OpRegistry& r) {
  const DTypeSet k_type = dtype_bit(DType::kInt32);
  OpBuilder("MatrixDiagPartV3")
      .doc(
          "The diagonals k (a scalar or a band [lo, hi]) of the innermost matrices, padded with "
          "padding_value "
          "and aligned by align. matrix_diag_part_v3([[1, 2], [3, 4]], 0, 0) == [1, 4]")
      .input("input")
      .input_fixed("k", k_type)
      .input("padding_value")
      .output("diagonal")
      .type_var(kDiagTypes)
      .attr("align", AttrType::kString, std::string("RIGHT_LEFT"))
      .shape(&diag_part_shape)
      .kernel(kDiagTypes, &diag_part_kernel)
      .grad(&diag_part_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("MatrixDiagV3")
      .doc(
          "Matrices of num_rows x num_cols (-1: the smallest that fit) with `diagonal` on the diagonals k "
          "and "
          "padding_value elsewhere. matrix_diag_v3([1, 2], 0, -1, -1, 0) == [[1, 0], [0, 2]]")
      .input("diagonal")
      .input_fixed("k", k_type)
      .input_fixed("num_rows", k_type)
      .input_fixed("num_cols", k_type)
      .input("padding_value")
      .output("output")
      .type_var(kDiagTypes)
      .attr("align", AttrType::kString, std::string("RIGHT_LEFT"))
      .shape(&diag_shape)
      .kernel(kDiagTypes, &diag_kernel)
      .grad(&diag_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("MatrixSetDiagV3")
      .doc(
          "input with its diagonals k replaced by `diagonal` (laid out as matrix_diag_part_v3's result). "
          "matrix_set_diag_v3([[1, 2], [3, 4]], [5, 6], 0) == [[5, 2], [3, 6]]")
      .input("input")
      .input("diagonal")
      .input_fixed("k", k_type)
      .output("output")
      .type_var(kDiagTypes)
      .attr("align", AttrType::kString, std::string("RIGHT_LEFT"))
      .flags(kOverwritesInput0)
      .shape(&set_diag_shape)
      .kernel(kDiagTypes, &set_diag_kernel)
      .grad(&set_diag_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
