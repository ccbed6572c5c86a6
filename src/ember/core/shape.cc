#include "ember/core/shape.h"

#include <algorithm>
#include <climits>
#include <string>

#include "ember/core/small_vector.h"

namespace ember {

Shape::Shape(std::span<const int64_t> dims) : rank_(static_cast<int32_t>(dims.size())) {
  EMBER_DCHECK(dims.size() <= kMaxRank);
  std::copy(dims.begin(), dims.end(), dims_.begin());
}

StatusOr<Shape> Shape::from_dims(std::span<const int64_t> dims, bool allow_unknown) {
  if (dims.size() > static_cast<size_t>(kMaxRank))
    return invalid_argument("rank ", dims.size(), " exceeds the maximum rank ", kMaxRank);
  for (int64_t d : dims) {
    if (d < 0 && !(allow_unknown && d == kUnknownDim))
      return invalid_argument("dimension ", d, " is negative");
  }
  if (!allow_unknown || std::find(dims.begin(), dims.end(), kUnknownDim) == dims.end())
    EMBER_RETURN_IF_ERROR(checked_num_elements(dims).status());
  return Shape(dims);
}

StatusOr<int64_t> checked_num_elements(std::span<const int64_t> dims) {
  int64_t nonzero = 1;
  bool empty = false;
  for (int64_t d : dims) {
    if (d == 0) {
      empty = true;
    } else if (!checked_mul(nonzero, d, &nonzero)) {
      std::string list;
      for (int64_t e : dims) list += (list.empty() ? "" : ",") + std::to_string(e);
      return invalid_argument("shape [", list,
                              "] is too large: the product of its dimensions exceeds 2^63-1");
    }
  }
  return empty ? 0 : nonzero;
}

Status check_shape_size(const Shape& shape) {
  if (!shape.rank_known()) return Status::OK();
  SmallVector<int64_t, kMaxRank> known;
  for (int64_t d : shape.dims()) {
    if (d < kUnknownDim) return invalid_argument("shape ", shape.to_string(), " has a negative dimension");
    if (d != kUnknownDim) known.push_back(d);
  }
  return checked_num_elements({known.data(), known.size()}).status();
}

bool Shape::fully_defined() const {
  if (rank_ < 0) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] < 0) return false;
  return true;
}

int64_t Shape::num_elements() const {
  if (rank_ < 0) return -1;
  if (!fully_defined()) return -1;
  int64_t n = 1;
  bool saturated = false;
  for (int i = 0; i < rank_; ++i) {
    if (dims_[i] == 0) return 0;
    if (!saturated && !checked_mul(n, dims_[i], &n)) saturated = true;
  }
  return saturated ? INT64_MAX : n;
}

bool Shape::is_compatible_with(const Shape& o) const {
  if (!rank_known() || !o.rank_known()) return true;
  if (rank() != o.rank()) return false;
  for (int d = 0; d < rank(); ++d)
    if (dim(d) >= 0 && o.dim(d) >= 0 && dim(d) != o.dim(d)) return false;
  return true;
}

bool Shape::operator==(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] != o.dims_[i]) return false;
  return true;
}

std::string Shape::to_string() const {
  if (rank_ < 0) return "<unknown>";
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ",";
    s += dims_[i] < 0 ? std::string("?") : std::to_string(dims_[i]);
  }
  return s + "]";
}

std::array<int64_t, kMaxRank> contiguous_strides(const Shape& shape) {
  std::array<int64_t, kMaxRank> strides{};
  int64_t stride = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= shape.dim(i);
  }
  return strides;
}

StatusOr<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  if (!a.rank_known() || !b.rank_known()) return Shape::unknown_rank();
  int rank = std::max(a.rank(), b.rank());
  Shape out;
  for (int i = 0; i < rank; ++i) {
    int ia = i - (rank - a.rank()), ib = i - (rank - b.rank());
    int64_t da = ia >= 0 ? a.dim(ia) : 1, db = ib >= 0 ? b.dim(ib) : 1;
    int64_t d;
    if (da == db)
      d = da;
    else if (da == 1)
      d = db;
    else if (db == 1)
      d = da;
    else if (da < 0)
      d = db;  // unknown against a known dim > 1 must equal it (checked at run time)
    else if (db < 0)
      d = da;
    else
      return invalid_argument("shapes ", a.to_string(), " and ", b.to_string(),
                              " are not broadcastable: dimension ", i, " is ", da, " vs ", db);
    out.push_back(d);
  }
  return out;
}

Status normalize_axis(int64_t axis, int rank, const char* op, int64_t* out) {
  if (axis < -rank || axis >= rank)
    return invalid_argument(op, ": axis ", axis, " is out of range for a tensor of rank ", rank,
                            " (expected an axis in [", -rank, ", ", rank, "))");
  *out = axis < 0 ? axis + rank : axis;
  return Status::OK();
}

}  // namespace ember
