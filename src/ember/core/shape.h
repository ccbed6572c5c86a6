// Shape: a rank and up to kMaxRank dims stored inline. A dim of -1 is unknown and a rank of -1 means the
// rank itself is unknown, so the same type serves concrete tensors and the specs that tracing infers.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "ember/core/status.h"

namespace ember {

inline constexpr int kMaxRank = 8;
inline constexpr int64_t kUnknownDim = -1;

class Shape {
 public:
  Shape() = default;  // a scalar
  Shape(std::initializer_list<int64_t> dims) : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}
  explicit Shape(std::span<const int64_t> dims);
  static Shape unknown_rank() {
    Shape s;
    s.rank_ = -1;
    return s;
  }
  /// Validates user-supplied dims: rank <= kMaxRank, each dim >= 0 (or -1 when allow_unknown).
  static StatusOr<Shape> from_dims(std::span<const int64_t> dims, bool allow_unknown = false);

  int rank() const { return rank_; }
  bool rank_known() const { return rank_ >= 0; }
  bool fully_defined() const;
  int64_t dim(int i) const { return dims_[i]; }
  int64_t operator[](int i) const { return dims_[i]; }
  void set_dim(int i, int64_t d) { dims_[i] = d; }
  std::span<const int64_t> dims() const { return {dims_.data(), static_cast<size_t>(rank_ < 0 ? 0 : rank_)}; }
  std::vector<int64_t> dim_vector() const { return {dims().begin(), dims().end()}; }
  /// Number of elements; -1 if any dim is unknown. Saturates at INT64_MAX (a shape that large can never be
  /// allocated; shapes built through from_dims or shape inference are checked never to get there).
  int64_t num_elements() const;

  void push_back(int64_t d) { dims_[rank_++] = d; }
  /// Whether one fully defined shape can be both (an unknown rank or dimension matches anything), as
  /// TensorFlow's TensorShape.is_compatible_with.
  bool is_compatible_with(const Shape& o) const;
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  /// "[2,3]", "[?,3]", "<unknown>".
  std::string to_string() const;

 private:
  int32_t rank_ = 0;
  std::array<int64_t, kMaxRank> dims_{};
};

/// Overflow-checked int64 arithmetic for sizes and offsets derived from user input: false on overflow
/// (then *out is unspecified). Signed overflow is undefined behaviour, so it must never happen silently.
inline bool checked_add(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }
inline bool checked_mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }

/// The number of elements of `dims` (each >= 0). An error when the product of the non-zero dims exceeds
/// int64 even if a zero dim makes the tensor empty: strides and partial products over such a shape would
/// overflow in every kernel, so TensorFlow rejects these shapes too.
StatusOr<int64_t> checked_num_elements(std::span<const int64_t> dims);

/// The same check for a shape from inference: unknown dims are left out; a dim below -1 is an error.
Status check_shape_size(const Shape& shape);

/// Row-major strides in elements.
std::array<int64_t, kMaxRank> contiguous_strides(const Shape& shape);

/// NumPy broadcasting of two shapes (unknown dims allowed: ? against 1 or ? stays ?).
StatusOr<Shape> broadcast_shapes(const Shape& a, const Shape& b);

/// Normalises `axis` in [-rank, rank) to [0, rank); error names the op.
Status normalize_axis(int64_t axis, int rank, const char* op, int64_t* out);

}  // namespace ember
