// Reading shape-like operands: the value an op's shape function and kernel see for an input such as
// Reshape's `shape`, whether it is a concrete tensor, a graph constant or only partly known.
#include "ember/ops/op_def.h"

#include <string>

namespace ember {
namespace {

std::vector<int64_t> read_ints(const TensorImpl& t) {
  std::vector<int64_t> out(static_cast<size_t>(t.num_elements()));
  if (t.dtype() == DType::kInt32) {
    const int32_t* p = t.data<int32_t>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = p[i];
  } else {
    const int64_t* p = t.data<int64_t>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = p[i];
  }
  return out;
}

Status check_int_operand(const OpDef& op, int i, DType dtype, const Shape& shape, bool vector_only) {
  const std::string& name =
      static_cast<size_t>(i) < op.inputs.size() ? op.inputs[i].name : op.inputs.back().name;
  if (dtype != DType::kInt32 && dtype != DType::kInt64)
    return invalid_argument(op.name, ": '", name, "' must be an int32 or int64 tensor, got ",
                            dtype_name(dtype));
  if (shape.rank_known() && (shape.rank() > 1 || (vector_only && shape.rank() != 1)))
    return invalid_argument(op.name, ": '", name, "' must be ",
                            vector_only ? "a vector" : "a scalar or a vector", ", got a tensor of shape ",
                            shape.to_string());
  return Status::OK();
}

StatusOr<Shape> shape_of_values(const OpDef& op, int i, const PartialValue& v) {
  if (!v.length_known) return Shape::unknown_rank();
  if (v.values.size() > static_cast<size_t>(kMaxRank))
    return invalid_argument(op.name, ": '", op.inputs[i].name, "' has ", v.values.size(),
                            " elements, more than the maximum rank ", kMaxRank);
  for (int64_t d : v.values) {
    if (d != PartialValue::kUnknown && d < 0) {
      std::string list;
      for (int64_t e : v.values)
        list +=
            (list.empty() ? "" : ", ") + (e == PartialValue::kUnknown ? std::string("?") : std::to_string(e));
      return invalid_argument(op.name, ": '", op.inputs[i].name, "' [", list, "]: dimension ", d,
                              " must be >= 0");
    }
  }
  return v.as_shape();
}

}  // namespace

bool PartialValue::fully_known() const {
  if (!length_known) return false;
  for (int64_t v : values)
    if (v == kUnknown) return false;
  return true;
}

Shape PartialValue::as_shape() const {
  if (!length_known || values.size() > static_cast<size_t>(kMaxRank)) return Shape::unknown_rank();
  Shape s;
  for (int64_t v : values) s.push_back(v == kUnknown || v < 0 ? kUnknownDim : v);
  return s;
}

PartialValue PartialValue::of_length(int64_t n, bool is_scalar) {
  PartialValue p;
  p.length_known = true;
  p.scalar = is_scalar;
  p.values.assign(static_cast<size_t>(n), kUnknown);
  return p;
}

PartialValue PartialValue::of_matrix(int64_t rows, int64_t columns) {
  PartialValue p = of_length(rows * columns, false);
  p.columns = columns;
  return p;
}

PartialValue PartialValue::from_tensor(const TensorImpl& t) {
  PartialValue p;
  p.length_known = true;
  p.scalar = t.rank() == 0;
  p.values = read_ints(t);
  if (t.rank() == 2 && t.shape().dim(1) > 0) p.columns = t.shape().dim(1);
  return p;
}

PartialValue InferContext::value_of(int i) const {
  const TensorSpec& spec = inputs[i];
  if (spec.dtype != DType::kInt32 && spec.dtype != DType::kInt64) return PartialValue::unknown();
  if (const TensorImpl* c = constant(i); c != nullptr && !c->is_symbolic() && c->rank() <= 1)
    return PartialValue::from_tensor(*c);
  if (static_cast<size_t>(i) < partial_values.size() && partial_values[i] != nullptr &&
      !partial_values[i]->matrix())
    return *partial_values[i];
  if (spec.shape.rank_known() && spec.shape.rank() == 0) return PartialValue::of_length(1, true);
  if (spec.shape.rank_known() && spec.shape.rank() == 1 && spec.shape.dim(0) >= 0 &&
      spec.shape.dim(0) <= kMaxRank * 64)
    return PartialValue::of_length(spec.shape.dim(0), false);
  return PartialValue::unknown();
}

PartialValue InferContext::matrix_value_of(int i) const {
  const TensorSpec& spec = inputs[i];
  if (spec.dtype != DType::kInt32 && spec.dtype != DType::kInt64) return PartialValue::unknown();
  if (const TensorImpl* c = constant(i); c != nullptr && !c->is_symbolic() && c->rank() == 2)
    return PartialValue::from_tensor(*c);
  if (static_cast<size_t>(i) < partial_values.size() && partial_values[i] != nullptr &&
      partial_values[i]->matrix())
    return *partial_values[i];
  const Shape& s = spec.shape;
  if (s.rank_known() && s.rank() == 2 && s.dim(0) >= 0 && s.dim(1) > 0 && s.dim(0) <= kMaxRank * 64 &&
      s.dim(1) <= kMaxRank * 64)
    return PartialValue::of_matrix(s.dim(0), s.dim(1));
  return PartialValue::unknown();
}

StatusOr<Shape> InferContext::shape_operand(int i) const {
  EMBER_RETURN_IF_ERROR(check_int_operand(*op, i, inputs[i].dtype, inputs[i].shape, true));
  return shape_of_values(*op, i, value_of(i));
}

std::vector<int64_t> KernelContext::int_values(int i) const { return read_ints(input(i)); }

StatusOr<Shape> KernelContext::shape_operand(int i) const {
  EMBER_RETURN_IF_ERROR(check_int_operand(*op, i, input(i).dtype(), input(i).shape(), true));
  return shape_of_values(*op, i, PartialValue::from_tensor(input(i)));
}

}  // namespace ember
