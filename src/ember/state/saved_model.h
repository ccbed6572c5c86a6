// Loading a SavedModel directory (saved_model.pb plus the variables checkpoint), as TensorFlow 2 or ember
// writes it, into functions ready to run from C++ with no Python in the process:
//
//   auto model = LoadedSavedModel::load("/tmp/mlp", {"serve"});       // StatusOr
//   const LoadedSignature* sig = (*model)->signature("serving_default");
//   auto outputs = sig->call({{"x", x_impl}});                        // results in sig->outputs order
//
// What a SavedModel holds and how it maps onto ember (Note [SavedModel to ember] in saved_model.cc): the
// MetaGraphDef's GraphDef has a VarHandleOp per variable and, per signature, Placeholders fed by the
// caller and a StatefulPartitionedCall of the signature's function, which takes the variables as trailing
// inputs. Each signature becomes one function graph (imported with from_graph_def, the VarHandleOps bound
// to variables restored from the checkpoint), compiled once at load. Nothing from the file is executed
// beyond the ops ember registers: no Python, no custom op libraries, no init ops other than NoOp.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/resource.h"
#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember {
namespace proto {
class SavedModel;
}  // namespace proto

class CompiledFunction;

/// One input or output of a signature: its key (the name callers use), the graph tensor it stands for
/// ("serving_default_x:0"), its dtype and shape (-1 for an unknown dimension; no dims when the rank is
/// unknown too).
struct SignatureTensor {
  std::string key;
  std::string tensor;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  bool unknown_rank = false;
};

/// A signature of a loaded SavedModel: its inputs and outputs sorted by key (as TensorFlow orders a
/// signature's flat outputs) and the compiled function computing them.
class LoadedSignature {
 public:
  LoadedSignature(std::string name, std::vector<SignatureTensor> inputs, std::vector<SignatureTensor> outputs,
                  std::shared_ptr<CompiledFunction> compiled,
                  std::vector<std::shared_ptr<VariableResource>> variables);
  ~LoadedSignature();

  const std::string& name() const { return name_; }
  const std::vector<SignatureTensor>& inputs() const { return inputs_; }
  const std::vector<SignatureTensor>& outputs() const { return outputs_; }

  /// Runs the signature on named inputs; the results come in the order of outputs(). Every input must be
  /// given once, with the signature's dtype and a shape compatible with its shape; an error names the
  /// signature, the input and what was expected.
  StatusOr<std::vector<TensorRef>> call(const std::map<std::string, TensorRef, std::less<>>& inputs) const;

 private:
  std::string name_;
  std::vector<SignatureTensor> inputs_;
  std::vector<SignatureTensor> outputs_;
  std::shared_ptr<CompiledFunction> compiled_;
  std::vector<std::shared_ptr<VariableResource>> variables_;  // what the graph reads: kept alive
};

/// The largest saved_model.pb read (protobuf's limit for one message).
inline constexpr int64_t kMaxSavedModelProtoBytes = (int64_t{1} << 31) - 1;

/// A SavedModel loaded from a directory: the variables restored from its checkpoint and a compiled
/// function per signature. Signatures keep the variables alive (a LoadedSignature may outlive this).
class LoadedSavedModel {
 public:
  /// Loads the MetaGraphDef whose tags are exactly `tags` (as a set; TensorFlow's loader's rule) from
  /// `dir`. Errors name the file and what is wrong: NotFound for a missing file, DataLoss for bytes that
  /// do not parse, InvalidArgument for a graph or signature that does not make sense or a variable the
  /// checkpoint lacks or holds with another dtype or shape, NotFound for an op ember does not register.
  static StatusOr<std::shared_ptr<LoadedSavedModel>> load(const std::string& dir,
                                                          const std::vector<std::string>& tags = {"serve"});
  /// load from the bytes of saved_model.pb and a variables checkpoint prefix ("" when there is none: then
  /// a graph that uses a variable fails); `dir` only names the model in errors. For tests and fuzzing.
  static StatusOr<std::shared_ptr<LoadedSavedModel>> load_from_bytes(std::string_view saved_model_pb,
                                                                     const std::string& variables_prefix,
                                                                     const std::vector<std::string>& tags,
                                                                     const std::string& dir);
  /// load_from_bytes for the text form, saved_model.pbtxt (what `load` reads when there is no
  /// saved_model.pb, as TensorFlow's loader does).
  static StatusOr<std::shared_ptr<LoadedSavedModel>> load_from_text(std::string_view saved_model_pbtxt,
                                                                    const std::string& variables_prefix,
                                                                    const std::vector<std::string>& tags,
                                                                    const std::string& dir);

  /// Signature names, sorted (TensorFlow's internal __saved_model_init_op is not one).
  std::vector<std::string> signature_names() const;
  /// The signature `name`, or NotFound listing those there are.
  StatusOr<std::shared_ptr<const LoadedSignature>> signature(std::string_view name) const;
  /// The restored variables, by the graph's name for each (its VarHandleOp node).
  const std::map<std::string, std::shared_ptr<VariableResource>, std::less<>>& variables() const {
    return variables_;
  }

 private:
  // Takes the chosen MetaGraphDef's function library out of `saved` rather than copying it.
  static StatusOr<std::shared_ptr<LoadedSavedModel>> load_from_message(proto::SavedModel& saved,
                                                                       const std::string& variables_prefix,
                                                                       const std::vector<std::string>& tags,
                                                                       const std::string& dir);

  std::string dir_;
  std::map<std::string, std::shared_ptr<const LoadedSignature>, std::less<>> signatures_;
  std::map<std::string, std::shared_ptr<VariableResource>, std::less<>> variables_;
  friend class SavedModelLoader;
};

}  // namespace ember
