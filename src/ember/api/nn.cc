#include "ember/api/nn.h"

namespace ember {

Tensor softmax(const Tensor& logits, int64_t axis) { return call_op1("Softmax", {logits}, {axis}); }

Tensor log_softmax(const Tensor& logits, int64_t axis) { return call_op1("LogSoftmax", {logits}, {axis}); }

Tensor bias_add(const Tensor& value, const Tensor& bias, const std::string& data_format) {
  return call_op1("BiasAdd", {value, bias}, {AttrValue(data_format)});
}

Tensor l2_loss(const Tensor& t) { return call_op1("L2Loss", {t}); }

Tensor sigmoid_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits) {
  return call_op1("SigmoidCrossEntropyWithLogits", {labels, logits});
}

Tensor softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits) {
  return call_op("SoftmaxCrossEntropyWithLogits", {logits, labels})[0];
}

Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits) {
  return call_op("SparseSoftmaxCrossEntropyWithLogits", {logits, labels})[0];
}

}  // namespace ember
