#include "ember/api/reduction.h"

namespace ember {
namespace {

Tensor reduce(const char* op, const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
  if (axes.empty() && x.defined()) {
    // axis=None: every axis. (An unknown rank cannot occur for an eager tensor.)
    for (int i = 0; i < x.rank(); ++i) axes.push_back(i);
  }
  return call_op1(op, {x, Tensor::from_vector(axes)}, {AttrValue(keepdims)});
}

}  // namespace

Tensor reduce_sum(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
  return reduce("Sum", x, std::move(axes), keepdims);
}
Tensor reduce_mean(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
  return reduce("Mean", x, std::move(axes), keepdims);
}
Tensor reduce_prod(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
  return reduce("Prod", x, std::move(axes), keepdims);
}
Tensor reduce_max(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
  return reduce("Max", x, std::move(axes), keepdims);
}
Tensor reduce_min(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
  return reduce("Min", x, std::move(axes), keepdims);
}
Tensor reduce_any(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
  return reduce("Any", x, std::move(axes), keepdims);
}
Tensor reduce_all(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
  return reduce("All", x, std::move(axes), keepdims);
}
Tensor reduce_logsumexp(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
  return reduce("ReduceLogSumExp", x, std::move(axes), keepdims);
}

Tensor argmax(const Tensor& x, int64_t axis, DType output_type) {
  return call_op1("ArgMax", {x, Tensor(axis)}, {AttrValue(output_type)});
}
Tensor argmin(const Tensor& x, int64_t axis, DType output_type) {
  return call_op1("ArgMin", {x, Tensor(axis)}, {AttrValue(output_type)});
}

}  // namespace ember
