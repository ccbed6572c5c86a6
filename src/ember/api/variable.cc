#include "ember/api/variable.h"

namespace ember {
namespace {

TensorRef concrete_initial_value(const Tensor& initial_value) {
  if (!initial_value.defined() || initial_value.impl()->is_symbolic())
    throw StatusError(invalid_argument("Variable: the initial value must be a concrete tensor"));
  return initial_value.ref();
}

}  // namespace

Variable::Variable(const Tensor& initial_value, std::string name) {
  resource_ =
      ResourceManager::global().create_variable(std::move(name), concrete_initial_value(initial_value));
}

Variable::Variable(const Tensor& initial_value, const Shape& shape, std::string name) {
  auto created = ResourceManager::global().create_variable(std::move(name),
                                                           concrete_initial_value(initial_value), shape);
  if (!created.ok()) throw StatusError(created.status());
  resource_ = std::move(created).value();
}

Tensor Variable::read() const {
  return call_op1("ReadVariableOp", {}, {id(), dtype(), shape().dim_vector(), !shape().rank_known()});
}

Variable& Variable::assign(const Tensor& value) {
  call_op("AssignVariableOp", {value}, {id()});
  return *this;
}

Variable& Variable::assign_add(const Tensor& delta) {
  call_op("AssignAddVariableOp", {delta}, {id()});
  return *this;
}

Variable& Variable::assign_sub(const Tensor& delta) {
  call_op("AssignSubVariableOp", {delta}, {id()});
  return *this;
}

}  // namespace ember
