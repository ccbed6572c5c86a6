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

PartialValue evaluate(const Graph& g, ValueRef v, int depth) {
  const Node& n = g.node(v.node);
  const TensorSpec& spec = n.outputs[v.output];
  PartialValue fallback = from_spec(spec);
  if (depth >= kMaxDepth || (spec.dtype != DType::kInt32 && spec.dtype != DType::kInt64)) return fallback;
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
  if (op == "Identity" || op == "Cast") {
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
    if (!a.length_known || !b.length_known) return fallback;
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

}  // namespace

PartialValue partial_value(const Graph& graph, ValueRef v) { return evaluate(graph, v, 0); }

}  // namespace ember
