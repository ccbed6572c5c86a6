#include "ember/graph/partial_value.h"

#include <string_view>

namespace ember {
namespace {

constexpr int kMaxDepth = 32;         // producer chains longer than this are left unknown
constexpr int64_t kMaxLength = 1024;  // longer int vectors are not shapes: not worth tracking

PartialValue from_spec(const TensorSpec& spec) {
  if (spec.dtype != DType::kInt32 && spec.dtype != DType::kInt64) return PartialValue::unknown();
  if (!spec.shape.rank_known()) return PartialValue::unknown();
  if (spec.shape.rank() == 0) return PartialValue::of_length(1, true);
  if (spec.shape.rank() == 1 && spec.shape.dim(0) >= 0 && spec.shape.dim(0) <= kMaxLength)
    return PartialValue::of_length(spec.shape.dim(0), false);
  if (spec.shape.rank() == 2 && spec.shape.dim(0) >= 0 && spec.shape.dim(1) > 0 &&
      spec.shape.dim(0) <= kMaxLength / spec.shape.dim(1))
    return PartialValue::of_matrix(spec.shape.dim(0), spec.shape.dim(1));
  return PartialValue::unknown();
}

bool binary_arithmetic(std::string_view op, int64_t a, int64_t b, int64_t* out) {
  if (op == "Add" || op == "AddV2") return !__builtin_add_overflow(a, b, out);
  if (op == "Sub") return !__builtin_sub_overflow(a, b, out);
  if (op == "Mul") return !__builtin_mul_overflow(a, b, out);
  if (op == "Maximum") return *out = a > b ? a : b, true;
  if (op == "Minimum") return *out = a < b ? a : b, true;
  if (op == "FloorDiv" && b != 0 && !(a == INT64_MIN && b == -1)) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return *out = q, true;
  }
  return false;
}

// Python slicing of a vector of `length` elements by one (begin, end, stride) with TensorFlow's masks
// (bit 0 only: the vector has one axis); false where the masks ask for more than that.
bool slice_indices(int64_t length, int64_t begin, int64_t end, int64_t stride, int64_t begin_mask,
                   int64_t end_mask, int64_t shrink, std::vector<int64_t>* indices) {
  if (stride == 0) return false;
  if (shrink & 1) {
    int64_t i = begin < 0 ? begin + length : begin;
    if (i < 0 || i >= length) return false;
    indices->push_back(i);
    return true;
  }
  auto clamp = [&](int64_t v, bool is_begin) {
    if (v < 0) v += length;
    if (stride > 0) return v < 0 ? int64_t{0} : (v > length ? length : v);
    (void)is_begin;
    return v < -1 ? int64_t{-1} : (v > length - 1 ? length - 1 : v);
  };
  int64_t b = (begin_mask & 1) ? (stride > 0 ? 0 : length - 1) : clamp(begin, true);
  int64_t e = (end_mask & 1) ? (stride > 0 ? length : -1) : clamp(end, false);
  for (int64_t i = b; stride > 0 ? i < e : i > e; i += stride) indices->push_back(i);
  return true;
}

PartialValue evaluate(const Graph& g, ValueRef v, int depth);
PartialValue evaluate_matrix(const Graph& g, const Node& n, int depth, const PartialValue& fallback);

PartialValue input_value(const Graph& g, const Node& n, int i, int depth) {
  return evaluate(g, n.inputs[i], depth + 1);
}

// The value of a constant int operand (an attribute today for some ops, an input for others).
bool constant_ints(const Graph& g, ValueRef v, std::vector<int64_t>* out) {
  PartialValue p = evaluate(g, v, kMaxDepth - 1);
  if (!p.fully_known()) return false;
  *out = p.values;
  return true;
}

// StridedSlice's begin, end and strides (inputs or, in older graphs, attributes) and its five masks.
struct SliceSpec {
  std::vector<int64_t> begin, end, strides;
  int64_t begin_mask = 0, end_mask = 0, ellipsis = 0, new_axis = 0, shrink = 0;
};

bool read_slice_spec(const Graph& g, const Node& n, SliceSpec* s) {
  if (n.inputs.size() == 4) {
    if (!constant_ints(g, n.inputs[1], &s->begin) || !constant_ints(g, n.inputs[2], &s->end) ||
        !constant_ints(g, n.inputs[3], &s->strides))
      return false;
  } else {
    s->begin = std::get<std::vector<int64_t>>(n.attrs[0]);
    s->end = std::get<std::vector<int64_t>>(n.attrs[1]);
    s->strides = std::get<std::vector<int64_t>>(n.attrs[2]);
  }
  const size_t mask_base = n.attrs.size() - 5;
  s->begin_mask = std::get<int64_t>(n.attrs[mask_base]);
  s->end_mask = std::get<int64_t>(n.attrs[mask_base + 1]);
  s->ellipsis = std::get<int64_t>(n.attrs[mask_base + 2]);
  s->new_axis = std::get<int64_t>(n.attrs[mask_base + 3]);
  s->shrink = std::get<int64_t>(n.attrs[mask_base + 4]);
  return true;
}

// StridedSlice of a matrix: rows (paddings[1:]), a row (paddings[1]), a column (paddings[:, 0]) or an
// element; the result has the rank the shrink mask leaves.
PartialValue slice_matrix(const Graph& g, const Node& n, const PartialValue& in,
                          const PartialValue& fallback) {
  SliceSpec s;
  if (!read_slice_spec(g, n, &s) || s.ellipsis != 0 || s.new_axis != 0) return fallback;
  const size_t k = s.begin.size();
  if (k < 1 || k > 2 || s.end.size() != k || s.strides.size() != k) return fallback;
  const int64_t columns = in.columns, rows = static_cast<int64_t>(in.values.size()) / columns;
  std::vector<int64_t> row_indices, column_indices;
  if (!slice_indices(rows, s.begin[0], s.end[0], s.strides[0], s.begin_mask, s.end_mask, s.shrink,
                     &row_indices))
    return fallback;
  if (k == 1) {
    for (int64_t j = 0; j < columns; ++j) column_indices.push_back(j);
  } else if (!slice_indices(columns, s.begin[1], s.end[1], s.strides[1], s.begin_mask >> 1, s.end_mask >> 1,
                            s.shrink >> 1, &column_indices)) {
    return fallback;
  }
  const bool shrink_rows = (s.shrink & 1) != 0, shrink_columns = k == 2 && (s.shrink & 2) != 0;
  const int rank = 2 - static_cast<int>(shrink_rows) - static_cast<int>(shrink_columns);
  if (rank == 2 && column_indices.empty()) return fallback;  // a matrix of no columns is not tracked
  PartialValue p = PartialValue::of_length(0, rank == 0);
  for (int64_t i : row_indices)
    for (int64_t j : column_indices) p.values.push_back(in.values[i * columns + j]);
  if (rank == 2) p.columns = static_cast<int64_t>(column_indices.size());
  return p;
}

PartialValue evaluate(const Graph& g, ValueRef v, int depth) {
  const Node& n = g.node(v.node);
  const TensorSpec& spec = n.outputs[v.output];
  PartialValue fallback = from_spec(spec);
  if (depth >= kMaxDepth || (spec.dtype != DType::kInt32 && spec.dtype != DType::kInt64)) return fallback;
  if (spec.shape.rank_known() && spec.shape.rank() == 2) return evaluate_matrix(g, n, depth, fallback);
  std::string_view op = n.op->name;
  if (op == "Const") {
    const TensorImpl& t = *std::get<TensorRef>(n.attrs[0]);
    if (t.rank() <= 1 && t.num_elements() <= kMaxLength) return PartialValue::from_tensor(t);
    return fallback;
  }
  if (op == "Shape") {
    const Shape& s = g.spec(n.inputs[0]).shape;
    if (!s.rank_known()) return fallback;
    PartialValue p = PartialValue::of_length(s.rank(), false);
    for (int i = 0; i < s.rank(); ++i) p.values[i] = s.dim(i) < 0 ? PartialValue::kUnknown : s.dim(i);
    return p;
  }
  if (op == "Rank") {  // known whenever the input's rank is, its dims aside (tf.get_static_value(tf.rank(x)))
    const Shape& s = g.spec(n.inputs[0]).shape;
    if (!s.rank_known()) return fallback;
    PartialValue p = PartialValue::of_length(1, true);
    p.values[0] = s.rank();
    return p;
  }
  if (op == "Identity" || op == "Cast" || op == "EnsureShape") {
    PartialValue p = input_value(g, n, 0, depth);
    return p.length_known ? p : fallback;
  }
  if (op == "Pack") {
    if (std::get<int64_t>(n.attrs[0]) != 0) return fallback;
    PartialValue p = PartialValue::of_length(static_cast<int64_t>(n.inputs.size()), false);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      PartialValue e = input_value(g, n, static_cast<int>(i), depth);
      if (e.length_known && e.scalar) p.values[i] = e.values[0];
    }
    return p;
  }
  if (op == "ConcatV2") {
    // values..., axis: the axis is the last input; vectors join along their only axis, whether it is
    // spelled 0 or -1 (any other value is the op's error).
    PartialValue p = PartialValue::of_length(0, false);
    for (size_t i = 0; i + 1 < n.inputs.size(); ++i) {
      PartialValue e = input_value(g, n, static_cast<int>(i), depth);
      if (!e.length_known || e.scalar) return fallback;
      p.values.insert(p.values.end(), e.values.begin(), e.values.end());
    }
    return p;
  }
  if (op == "StridedSlice") {
    PartialValue in = input_value(g, n, 0, depth);
    if (!in.length_known || in.scalar) return fallback;
    if (in.matrix()) return slice_matrix(g, n, in, fallback);
    std::vector<int64_t> begin, end, strides;
    if (n.inputs.size() == 4) {
      if (!constant_ints(g, n.inputs[1], &begin) || !constant_ints(g, n.inputs[2], &end) ||
          !constant_ints(g, n.inputs[3], &strides))
        return fallback;
    } else {
      begin = std::get<std::vector<int64_t>>(n.attrs[0]);
      end = std::get<std::vector<int64_t>>(n.attrs[1]);
      strides = std::get<std::vector<int64_t>>(n.attrs[2]);
    }
    const size_t mask_base = n.attrs.size() - 5;  // begin_mask, end_mask, ellipsis, new_axis, shrink
    const int64_t begin_mask = std::get<int64_t>(n.attrs[mask_base]);
    const int64_t end_mask = std::get<int64_t>(n.attrs[mask_base + 1]);
    const int64_t ellipsis = std::get<int64_t>(n.attrs[mask_base + 2]);
    const int64_t new_axis = std::get<int64_t>(n.attrs[mask_base + 3]);
    const int64_t shrink = std::get<int64_t>(n.attrs[mask_base + 4]);
    if (begin.size() != 1 || end.size() != 1 || strides.size() != 1 || ellipsis != 0 || new_axis != 0)
      return fallback;
    std::vector<int64_t> indices;
    if (!slice_indices(static_cast<int64_t>(in.values.size()), begin[0], end[0], strides[0], begin_mask,
                       end_mask, shrink, &indices))
      return fallback;
    PartialValue p = PartialValue::of_length(static_cast<int64_t>(indices.size()), (shrink & 1) != 0);
    for (size_t i = 0; i < indices.size(); ++i) p.values[i] = in.values[indices[i]];
    return p;
  }
  if (n.inputs.size() == 2 && (op == "Add" || op == "AddV2" || op == "Sub" || op == "Mul" ||
                               op == "FloorDiv" || op == "Maximum" || op == "Minimum")) {
    PartialValue a = input_value(g, n, 0, depth), b = input_value(g, n, 1, depth);
    if (!a.length_known || !b.length_known || a.matrix() || b.matrix()) return fallback;
    const size_t na = a.values.size(), nb = b.values.size();
    if (!(na == nb || (a.scalar && na == 1) || (b.scalar && nb == 1))) return fallback;
    const size_t count = a.scalar ? nb : na;
    PartialValue p = PartialValue::of_length(static_cast<int64_t>(count), a.scalar && b.scalar);
    for (size_t i = 0; i < count; ++i) {
      int64_t x = a.values[a.scalar ? 0 : i], y = b.values[b.scalar ? 0 : i], r;
      if (x != PartialValue::kUnknown && y != PartialValue::kUnknown && binary_arithmetic(op, x, y, &r))
        p.values[i] = r;
      // x * 0 is 0 whatever x is (a batch of zero stays zero).
      else if (op == "Mul" && (x == 0 || y == 0))
        p.values[i] = 0;
    }
    return p;
  }
  return fallback;
}

// Rows and columns of a value broadcast as a matrix: a scalar is [1, 1], a vector one row.
void broadcast_dims(const PartialValue& p, int64_t* rows, int64_t* columns) {
  if (p.matrix()) {
    *columns = p.columns;
    *rows = static_cast<int64_t>(p.values.size()) / p.columns;
  } else {
    *rows = 1;
    *columns = p.scalar ? 1 : static_cast<int64_t>(p.values.size());
  }
}

bool broadcast_dim(int64_t a, int64_t b, int64_t* out) {
  if (a != b && a != 1 && b != 1) return false;
  *out = a == 1 ? b : a;
  return true;
}

// Note [Matrix partial values]: Pad's paddings are an int [rank, 2] matrix, and a program builds them as
// it builds shapes (tf.stack([[0, 0], [n, n]]), a concat of rows, a reshape of a vector). TensorFlow's C++
// refiner gives Pad its output shape only when every padding evaluates to a constant, and its Python
// tf.pad then restores the paddings it can read element by element; here the same element-wise knowledge
// flows through the ops that move int elements around without changing them, so [[?, 0], [1, 1]] padding a
// [?, 3] input gives [?, 5]. Vectors keep their own path above: matrices only exist where a rank-2 int
// value is produced, so a static program traces as it did.
PartialValue evaluate_matrix(const Graph& g, const Node& n, int depth, const PartialValue& fallback) {
  std::string_view op = n.op->name;
  if (op == "Const") {
    const TensorImpl& t = *std::get<TensorRef>(n.attrs[0]);
    if (t.rank() == 2 && t.shape().dim(1) > 0 && t.num_elements() <= kMaxLength)
      return PartialValue::from_tensor(t);
    return fallback;
  }
  if (op == "Identity" || op == "Cast" || op == "EnsureShape") {
    PartialValue p = input_value(g, n, 0, depth);
    return p.matrix() ? p : fallback;
  }
  if (op == "Reshape" || op == "ExpandDims") {
    // Both keep the elements in row-major order; the static shape says where the rows break.
    PartialValue p = input_value(g, n, 0, depth);
    if (!p.length_known || !fallback.matrix() || p.values.size() != fallback.values.size()) return fallback;
    p.scalar = false;
    p.columns = fallback.columns;
    return p;
  }
  if (op == "Pack") {
    int64_t axis = std::get<int64_t>(n.attrs[0]);
    if (axis < 0) axis += 2;
    if (axis != 0 && axis != 1) return fallback;
    std::vector<PartialValue> parts;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      parts.push_back(input_value(g, n, static_cast<int>(i), depth));
      const PartialValue& e = parts.back();
      if (!e.length_known || e.scalar || e.matrix() || e.values.size() != parts[0].values.size())
        return fallback;
    }
    const int64_t count = static_cast<int64_t>(parts.size()),
                  length = static_cast<int64_t>(parts[0].values.size());
    if (axis == 0 && length == 0) return fallback;
    PartialValue p =
        axis == 0 ? PartialValue::of_matrix(count, length) : PartialValue::of_matrix(length, count);
    for (int64_t i = 0; i < count; ++i)
      for (int64_t j = 0; j < length; ++j)
        p.values[axis == 0 ? i * length + j : j * count + i] = parts[i].values[j];
    return p;
  }
  if (op == "ConcatV2") {
    // The axis is an attribute, or (as in TensorFlow's signature) the last input.
    size_t count = n.inputs.size();
    int64_t axis = 0;
    int axis_attr = -1;
    for (size_t k = 0; k < n.op->attrs.size(); ++k)
      if (n.op->attrs[k].name == "axis") axis_attr = static_cast<int>(k);
    if (axis_attr >= 0) {
      axis = std::get<int64_t>(n.attrs[axis_attr]);
    } else {
      std::vector<int64_t> a;
      if (count < 2 || !constant_ints(g, n.inputs[count - 1], &a) || a.size() != 1) return fallback;
      axis = a[0];
      --count;
    }
    if (axis < 0) axis += 2;
    if (axis != 0 && axis != 1) return fallback;
    std::vector<PartialValue> parts;
    int64_t rows = 0, columns = 0;
    for (size_t i = 0; i < count; ++i) {
      parts.push_back(input_value(g, n, static_cast<int>(i), depth));
      if (!parts.back().matrix()) return fallback;
      int64_t r, c;
      broadcast_dims(parts.back(), &r, &c);
      if (i > 0 && (axis == 0 ? c != columns : r != rows)) return fallback;
      rows = axis == 0 ? rows + r : r;
      columns = axis == 0 ? c : columns + c;
    }
    if (parts.empty() || rows * columns > kMaxLength) return fallback;
    PartialValue p = PartialValue::of_matrix(rows, columns);
    p.values.clear();
    if (axis == 0) {
      for (const PartialValue& e : parts) p.values.insert(p.values.end(), e.values.begin(), e.values.end());
    } else {
      for (int64_t r = 0; r < rows; ++r)
        for (const PartialValue& e : parts)
          p.values.insert(p.values.end(), e.values.begin() + r * e.columns,
                          e.values.begin() + (r + 1) * e.columns);
    }
    return p;
  }
  if (op == "Transpose") {
    PartialValue in = input_value(g, n, 0, depth);
    std::vector<int64_t> perm;
    if (!in.matrix() || !constant_ints(g, n.inputs[1], &perm) || perm.size() != 2) return fallback;
    if (perm[0] == 0 && perm[1] == 1) return in;
    if (perm[0] != 1 || perm[1] != 0) return fallback;
    int64_t rows, columns;
    broadcast_dims(in, &rows, &columns);
    if (rows == 0) return fallback;
    PartialValue p = PartialValue::of_matrix(columns, rows);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < columns; ++j) p.values[j * rows + i] = in.values[i * columns + j];
    return p;
  }
  if (op == "StridedSlice") {
    PartialValue in = input_value(g, n, 0, depth);
    return in.matrix() ? slice_matrix(g, n, in, fallback) : fallback;
  }
  if (op == "Fill") {
    PartialValue value = input_value(g, n, 1, depth);
    if (!fallback.matrix() || !value.length_known || !value.scalar) return fallback;
    PartialValue p = fallback;
    for (int64_t& e : p.values) e = value.values[0];
    return p;
  }
  if (op == "Tile") {
    PartialValue in = input_value(g, n, 0, depth);
    std::vector<int64_t> m;
    if (!in.matrix() || !constant_ints(g, n.inputs[1], &m) || m.size() != 2) return fallback;
    int64_t rows, columns;
    broadcast_dims(in, &rows, &columns);
    if (m[0] < 0 || m[1] <= 0 || m[0] > kMaxLength || m[1] > kMaxLength ||
        rows * m[0] * columns * m[1] > kMaxLength)
      return fallback;
    PartialValue p = PartialValue::of_matrix(rows * m[0], columns * m[1]);
    for (int64_t i = 0; i < rows * m[0]; ++i)
      for (int64_t j = 0; j < columns * m[1]; ++j)
        p.values[i * columns * m[1] + j] = in.values[(i % rows) * columns + j % columns];
    return p;
  }
  if (n.inputs.size() == 2 && (op == "Add" || op == "AddV2" || op == "Sub" || op == "Mul" ||
                               op == "FloorDiv" || op == "Maximum" || op == "Minimum")) {
    PartialValue a = input_value(g, n, 0, depth), b = input_value(g, n, 1, depth);
    if (!a.length_known || !b.length_known) return fallback;
    int64_t ra, ca, rb, cb, rows, columns;
    broadcast_dims(a, &ra, &ca);
    broadcast_dims(b, &rb, &cb);
    if (!broadcast_dim(ra, rb, &rows) || !broadcast_dim(ca, cb, &columns) || columns == 0 ||
        rows * columns > kMaxLength)
      return fallback;
    PartialValue p = PartialValue::of_matrix(rows, columns);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < columns; ++j) {
        const int64_t x = a.values[(ra == 1 ? 0 : i) * ca + (ca == 1 ? 0 : j)];
        const int64_t y = b.values[(rb == 1 ? 0 : i) * cb + (cb == 1 ? 0 : j)];
        int64_t r;
        if (x != PartialValue::kUnknown && y != PartialValue::kUnknown && binary_arithmetic(op, x, y, &r))
          p.values[i * columns + j] = r;
        else if (op == "Mul" && (x == 0 || y == 0))
          p.values[i * columns + j] = 0;
      }
    }
    return p;
  }
  return fallback;
}

}  // namespace

PartialValue partial_value(const Graph& graph, ValueRef v) { return evaluate(graph, v, 0); }

}  // namespace ember
