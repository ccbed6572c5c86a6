// The C++ façade's Tensor: a value type over TensorImpl with operators, usable with no Python in the
// process. Failures throw ember::StatusError (the Python layer maps Status codes to ember.errors).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/tensor_impl.h"
#include "ember/ops/execute.h"

namespace ember {

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(TensorRef impl) : impl_(std::move(impl)) {}
  /// Scalars with TensorFlow's inference: float -> float32, int -> int32.
  Tensor(float v);    // NOLINT(google-explicit-constructor): `x * 2.0f` should just work
  Tensor(double v);   // NOLINT
  Tensor(int32_t v);  // NOLINT
  Tensor(int64_t v);  // NOLINT
  Tensor(bool v);     // NOLINT
  /// A 1-D float32 tensor: Tensor({1.f, 2.f}).
  Tensor(std::initializer_list<float> values);

  /// A tensor of `shape` holding `values` (row-major); the count must match.
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values) {
    return from_vector(values, Shape({static_cast<int64_t>(values.size())}));
  }

  bool defined() const { return static_cast<bool>(impl_); }
  DType dtype() const { return impl_->dtype(); }
  const Shape& shape() const { return impl_->shape(); }
  int rank() const { return impl_->rank(); }
  int64_t num_elements() const { return impl_->num_elements(); }
  TensorImpl* impl() const { return impl_.get(); }
  const TensorRef& ref() const { return impl_; }

  /// Elements converted to T (no dtype check beyond numeric conversion).
  template <typename T>
  std::vector<T> to_vector() const;
  /// The single element of a one-element tensor.
  template <typename T>
  T item() const;
  /// "Tensor(shape=[2], dtype=float32, values=[1, 2])".
  std::string to_string() const;

 private:
  TensorRef impl_;
};

/// Runs any registered op by name. Attributes by position; missing trailing ones take their defaults.
std::vector<Tensor> call_op(std::string_view op_name, std::initializer_list<Tensor> inputs,
                            std::initializer_list<AttrValue> attrs = {});
std::vector<Tensor> call_op(std::string_view op_name, const std::vector<Tensor>& inputs,
                            const std::vector<AttrValue>& attrs);
/// call_op for an op with one output.
Tensor call_op1(std::string_view op_name, std::initializer_list<Tensor> inputs,
                std::initializer_list<AttrValue> attrs = {});

/// A copy of `t`'s data rendered like NumPy: "[[1, 2], [3, 4]]".
std::string format_values(const TensorImpl& t, int64_t max_elements = 1000);

}  // namespace ember
