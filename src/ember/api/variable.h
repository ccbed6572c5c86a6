// ember::Variable: mutable state for C++ programs. Its value lives in a VariableResource that this
// object owns; reads and writes are ops, so inside ember::function they become graph nodes ordered by
// automatic control dependencies.
#pragma once

#include <memory>
#include <string>

#include "ember/api/tensor.h"
#include "ember/core/resource.h"

namespace ember {

class Variable {
 public:
  explicit Variable(const Tensor& initial_value, std::string name = "Variable");
  /// A variable of declared shape `shape`, which may leave dimensions or the rank unknown
  /// (`Shape{-1}`, `Shape::unknown_rank()`): assign() then takes any value that fits it, and reads while
  /// tracing have that shape, so one trace serves every value. Throws StatusError (InvalidArgument) when
  /// `initial_value` does not fit `shape`.
  Variable(const Tensor& initial_value, const Shape& shape, std::string name = "Variable");

  /// The current value (a ReadVariableOp node while tracing).
  Tensor read() const;
  operator Tensor() const { return read(); }  // NOLINT: a variable works where a tensor does
  Variable& assign(const Tensor& value);
  Variable& assign_add(const Tensor& delta);
  Variable& assign_sub(const Tensor& delta);

  int64_t id() const { return resource_->id(); }
  const std::string& name() const { return resource_->name(); }
  DType dtype() const { return resource_->dtype(); }
  /// The declared shape; the current value's is read().shape().
  const Shape& shape() const { return resource_->shape(); }

 private:
  std::shared_ptr<VariableResource> resource_;
};

}  // namespace ember
