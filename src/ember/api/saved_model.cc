#include "ember/api/saved_model.h"

namespace ember {

StatusOr<std::map<std::string, Tensor>> SavedModel::Signature::call(
    const std::map<std::string, Tensor>& inputs) const {
  std::map<std::string, TensorRef, std::less<>> refs;
  for (const auto& [key, tensor] : inputs) refs.emplace(key, TensorRef(tensor.impl()));
  auto results = sig_->call(refs);
  if (!results.ok()) return results.status();
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < results->size(); ++i)
    out.emplace(sig_->outputs()[i].key, Tensor(std::move((*results)[i])));
  return out;
}

std::map<std::string, Tensor> SavedModel::Signature::operator()(
    const std::map<std::string, Tensor>& inputs) const {
  auto out = call(inputs);
  if (!out.ok()) throw StatusError(out.status());
  return std::move(out).value();
}

SavedModel::Signature SavedModel::signature(std::string_view name) const {
  auto sig = model_->signature(name);
  if (!sig.ok()) throw StatusError(sig.status());
  return Signature(std::move(sig).value());
}

StatusOr<SavedModel> try_load_saved_model(const std::string& path, const std::vector<std::string>& tags) {
  auto model = LoadedSavedModel::load(path, tags);
  if (!model.ok()) return model.status();
  return SavedModel(std::move(model).value());
}

SavedModel load_saved_model(const std::string& path, const std::vector<std::string>& tags) {
  auto model = try_load_saved_model(path, tags);
  if (!model.ok()) throw StatusError(model.status());
  return std::move(model).value();
}

}  // namespace ember
