// InplaceUpdate: TensorFlow's raw op of that name, the write of a dense TensorArray (python/ember/ops/
// tensor_array_ops.py, Note [Two representations of a TensorArray]): x with rows i replaced by the rows of v.
// One copy of x and one of each written row, where a SelectV2 over a broadcast mask walked every element.
#include <algorithm>
#include <cstring>

#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

Status inplace_update_shape(InferContext& ctx) {
  const Shape &x = ctx.inputs[0].shape, &i = ctx.inputs[1].shape, &v = ctx.inputs[2].shape;
  if (i.rank_known() && i.rank() != 1)
    return invalid_argument("InplaceUpdate: i must be a vector of row indices, got shape ", i.to_string());
  if (x.rank_known() && x.rank() == 0) return invalid_argument("InplaceUpdate: x must not be a scalar");
  if (x.rank_known() && v.rank_known()) {
    if (v.rank() != x.rank())
      return invalid_argument("InplaceUpdate: v must have the rank of x (", x.to_string(), "), got ",
                              v.to_string());
    for (int d = 1; d < x.rank(); ++d)
      if (x.dim(d) >= 0 && v.dim(d) >= 0 && x.dim(d) != v.dim(d))
        return invalid_argument("InplaceUpdate: the rows of v (", v.to_string(),
                                ") must have the shape of x's (", x.to_string(), ")");
  }
  if (i.rank_known() && v.rank_known() && v.rank() > 0 && i.dim(0) >= 0 && v.dim(0) >= 0 &&
      i.dim(0) != v.dim(0))
    return invalid_argument("InplaceUpdate: i has ", i.dim(0), " indices but v has ", v.dim(0), " rows");
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

Status inplace_update_kernel(KernelContext& ctx) {
  const TensorImpl &x = ctx.input(0), &i = ctx.input(1), &v = ctx.input(2);
  if (x.rank() == 0) return invalid_argument("InplaceUpdate: x must not be a scalar");
  if (i.rank() != 1)
    return invalid_argument("InplaceUpdate: i must be a vector of row indices, got shape ",
                            i.shape().to_string());
  if (v.rank() != x.rank() || v.shape().dim(0) != i.shape().dim(0))
    return invalid_argument("InplaceUpdate: v must be [", i.shape().dim(0), "] + the row shape of x (",
                            x.shape().to_string(), "), got ", v.shape().to_string());
  for (int d = 1; d < x.rank(); ++d)
    if (v.shape().dim(d) != x.shape().dim(d))
      return invalid_argument("InplaceUpdate: the rows of v (", v.shape().to_string(),
                              ") must have the shape of x's (", x.shape().to_string(), ")");
  const int64_t rows = x.shape().dim(0);
  const size_t row_bytes =
      static_cast<size_t>(x.num_elements() / std::max<int64_t>(rows, 1)) * dtype_size(x.dtype());
  TensorImpl& out = ctx.output(0);
  const int32_t* index = i.data<int32_t>();
  for (int64_t k = 0; k < i.shape().dim(0); ++k)
    if (index[k] < 0 || index[k] >= rows)
      return invalid_argument("InplaceUpdate: i[", k, "] = ", index[k], " is not in [0, ", rows, ")");
  if (out.num_elements() == 0) return Status::OK();
  // The executor may hand x's own buffer over as the output (x dies here): then only the rows move.
  if (out.mutable_raw_data() != x.raw_data())
    std::memcpy(out.mutable_raw_data(), x.raw_data(),
                static_cast<size_t>(x.num_elements()) * dtype_size(x.dtype()));
  char* dst = static_cast<char*>(out.mutable_raw_data());
  const char* src = static_cast<const char*>(v.raw_data());
  for (int64_t k = 0; k < i.shape().dim(0); ++k)
    std::memcpy(dst + static_cast<size_t>(index[k]) * row_bytes, src + static_cast<size_t>(k) * row_bytes,
                row_bytes);
  return Status::OK();
}

// The written rows take their gradient from dy; x's gradient is dy with those rows zeroed.
void inplace_update_grad(GradContext& c) {
  using namespace gradient;
  GradTensor dy = c.grad();
  c.set(0, emit1("InplaceUpdate", {dy, c.input(1), zeros_like(c.input(2))}));
  c.set(2, emit1("GatherV2", {dy, c.input(1), scalar(0, DType::kInt32)}));
}

}  // namespace

void register_tensor_array_ops(OpRegistry& r) {
  OpBuilder("InplaceUpdate")
      .doc(
          "x with the rows i (int32) replaced by the rows of v. InplaceUpdate([[1, 2], [3, 4]], [1], [[9, "
          "9]]) "
          "== [[1, 2], [9, 9]]")
      .input("x")
      .input_fixed("i", dtype_bit(DType::kInt32))
      .input("v")
      .output("y")
      .type_var(kAllTypes)
      .flags(kOverwritesInput0)
      .shape(&inplace_update_shape)
      .kernel(kAllTypes, &inplace_update_kernel)
      .grad(&inplace_update_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
