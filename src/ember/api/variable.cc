#include "ember/api/variable.h"

namespace ember {

Variable::Variable(const Tensor& initial_value, std::string name) {
  if (!initial_value.defined() || initial_value.impl()->is_symbolic())
    throw StatusError(invalid_argument("Variable: the initial value must be a concrete tensor"));
  resource_ = ResourceManager::global().create_variable(std::move(name), initial_value.ref());
}

Tensor Variable::read() const {
  return call_op1("ReadVariableOp", {}, {id(), dtype(), shape().dim_vector()});
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
