#include "ember/core/resource.h"

namespace ember {

ResourceManager& ResourceManager::global() {
  static ResourceManager* manager = new ResourceManager;
  return *manager;
}

std::shared_ptr<VariableResource> ResourceManager::create_variable(std::string name, TensorRef value) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t id = next_id_++;
  auto variable = std::make_shared<VariableResource>(id, name, std::move(value));
  variables_.emplace(id, variable);
  names_.emplace(id, std::move(name));
  return variable;
}

StatusOr<std::shared_ptr<VariableResource>> ResourceManager::find(int64_t id, const char* op_name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = variables_.find(id);
  std::shared_ptr<VariableResource> variable = it == variables_.end() ? nullptr : it->second.lock();
  if (variable) return variable;
  auto name = names_.find(id);
  if (name == names_.end())
    return make_error(Code::kNotFound, op_name, ": there is no variable with resource id ", id);
  return make_error(Code::kFailedPrecondition, op_name, ": variable '", name->second,
                    "' has been deleted (its Python object was freed), but a function still uses it; keep a "
                    "reference to the variable for as long as functions that use it run");
}

}  // namespace ember
