#include "ember/core/resource.h"

namespace ember {

ResourceManager& ResourceManager::global() {
  static ResourceManager* manager = new ResourceManager;  // never destroyed: variables may outlive main()
  return *manager;
}

std::shared_ptr<VariableResource> ResourceManager::create_variable(std::string name, TensorRef value) {
  Shape shape = value->shape();
  return register_variable(std::move(name), std::move(value), shape);
}

StatusOr<std::shared_ptr<VariableResource>> ResourceManager::create_variable(std::string name,
                                                                             TensorRef value,
                                                                             const Shape& shape) {
  if (!shape.is_compatible_with(value->shape()))
    return invalid_argument("Variable '", name, "': the initial value's shape ", value->shape().to_string(),
                            " is not compatible with the declared shape ", shape.to_string());
  return register_variable(std::move(name), std::move(value), shape);
}

std::shared_ptr<VariableResource> ResourceManager::register_variable(std::string name, TensorRef value,
                                                                     const Shape& shape) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t id = next_id_++;
  // The last owner's release removes the registry entry, so dropped variables leave nothing behind.
  std::shared_ptr<VariableResource> variable(
      new VariableResource(id, std::move(name), std::move(value), shape), [this](VariableResource* v) {
        erase(v->id(), v->name());
        delete v;
      });
  variables_.emplace(id, variable);
  return variable;
}

void ResourceManager::erase(int64_t id, std::string name) {
  std::lock_guard<std::mutex> lock(mu_);
  variables_.erase(id);
  if (deleted_order_.size() < kDeletedNamesKept) {
    deleted_order_.push_back(id);
  } else {
    deleted_names_.erase(deleted_order_[deleted_next_]);
    deleted_order_[deleted_next_] = id;
    deleted_next_ = (deleted_next_ + 1) % kDeletedNamesKept;
  }
  deleted_names_.emplace(id, std::move(name));
}

size_t ResourceManager::num_live_variables() const {
  std::lock_guard<std::mutex> lock(mu_);
  return variables_.size();
}

StatusOr<std::shared_ptr<VariableResource>> ResourceManager::find(int64_t id, const char* op_name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = variables_.find(id);
  std::shared_ptr<VariableResource> variable = it == variables_.end() ? nullptr : it->second.lock();
  if (variable) return variable;
  if (id <= 0 || id >= next_id_)
    return make_error(Code::kNotFound, op_name, ": there is no variable with resource id ", id);
  auto name = deleted_names_.find(id);
  std::string which =
      name != deleted_names_.end() ? "'" + name->second + "'" : "with resource id " + std::to_string(id);
  return make_error(Code::kFailedPrecondition, op_name, ": variable ", which,
                    " has been deleted (its Python object was freed), but a function still uses it; keep a "
                    "reference to the variable for as long as functions that use it run");
}

}  // namespace ember
