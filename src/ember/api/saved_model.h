// Loading and serving a SavedModel from C++, no Python in the process: a directory TensorFlow's or ember's
// tf.saved_model.save wrote, its variables restored and each signature compiled once at load.
//
//   ember::SavedModel model = ember::load_saved_model("/tmp/mlp");
//   auto outputs = model.signature("serving_default")({{"x", ember::Tensor::from_vector<float>({...}, {1,
//   8})}}); std::cout << outputs.at("dense_1").to_string() << "\n";
//
// Like the rest of the façade, load_saved_model and a call throw ember::StatusError on a bad file or a bad
// input (the Status names the file or the signature and input); try_load_saved_model and
// Signature::call return the Status instead. See docs/saved_model_cpp.md.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ember/api/tensor.h"
#include "ember/state/saved_model.h"

namespace ember {

class SavedModel {
 public:
  /// One signature: named tensors in, named tensors out. Keeps the model's variables alive.
  class Signature {
   public:
    /// Runs the signature; throws StatusError for a missing or unknown input, a wrong dtype or shape.
    std::map<std::string, Tensor> operator()(const std::map<std::string, Tensor>& inputs) const;
    /// operator() returning the error instead of throwing it.
    StatusOr<std::map<std::string, Tensor>> call(const std::map<std::string, Tensor>& inputs) const;
    const std::string& name() const { return sig_->name(); }
    /// Inputs and outputs sorted by key: dtype, and shape with -1 for an unknown (None) dimension.
    const std::vector<SignatureTensor>& inputs() const { return sig_->inputs(); }
    const std::vector<SignatureTensor>& outputs() const { return sig_->outputs(); }

   private:
    friend class SavedModel;
    explicit Signature(std::shared_ptr<const LoadedSignature> sig) : sig_(std::move(sig)) {}
    std::shared_ptr<const LoadedSignature> sig_;
  };

  explicit SavedModel(std::shared_ptr<LoadedSavedModel> model) : model_(std::move(model)) {}

  /// The signature `name`; throws StatusError (NotFound, listing the signatures there are).
  Signature signature(std::string_view name) const;
  std::vector<std::string> signature_names() const { return model_->signature_names(); }
  /// How many variables were restored from the checkpoint.
  size_t num_variables() const { return model_->variables().size(); }

 private:
  std::shared_ptr<LoadedSavedModel> model_;
};

/// Loads the SavedModel in directory `path` (the MetaGraphDef tagged exactly `tags`); throws StatusError.
SavedModel load_saved_model(const std::string& path, const std::vector<std::string>& tags = {"serve"});
/// load_saved_model returning the error instead of throwing it.
StatusOr<SavedModel> try_load_saved_model(const std::string& path,
                                          const std::vector<std::string>& tags = {"serve"});

}  // namespace ember
