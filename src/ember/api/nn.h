// C++ façade: nn ops, with tf.nn's names and argument order.
//
//   ember::Tensor p = ember::softmax(logits);                       // along the last axis
//   ember::Tensor loss = ember::sparse_softmax_cross_entropy_with_logits(labels, logits);
#pragma once

#include <string>

#include "ember/api/tensor.h"

namespace ember {

/// exp(x) / sum(exp(x)) along `axis`.
Tensor softmax(const Tensor& logits, int64_t axis = -1);
/// log(softmax(x)) along `axis`, computed stably.
Tensor log_softmax(const Tensor& logits, int64_t axis = -1);
/// value + bias along the channel dimension: the last ("NHWC") or dimension 1 ("NCHW").
Tensor bias_add(const Tensor& value, const Tensor& bias, const std::string& data_format = "NHWC");
/// sum(t^2) / 2, a scalar.
Tensor l2_loss(const Tensor& t);
/// Element-wise logistic loss: max(x, 0) - x * z + log(1 + exp(-|x|)).
Tensor sigmoid_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits);
/// -sum(labels * log_softmax(logits)) over the last axis; labels has logits' shape.
Tensor softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits);
/// -log_softmax(logits)[labels] over the last axis; labels (int32/int64) has logits' shape without it.
Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits);

}  // namespace ember
