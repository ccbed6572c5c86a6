// Variables as resources: a VariableResource holds a variable's current value; its owner (a Python
// ember.Variable or a C++ ember::Variable) holds the only strong reference, so the variable lives exactly
// as long as its object. Graphs and ops refer to it by id through the ResourceManager, which holds it
// weakly: an op on a deleted variable fails with an error that names it.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/core/device.h"
#include "ember/core/tensor_impl.h"

namespace ember {

class VariableResource {
 public:
  /// `shape` is the declared shape, which `value` fits (the caller has checked).
  VariableResource(int64_t id, std::string name, TensorRef value, Shape shape)
      : id_(id),
        name_(std::move(name)),
        device_(current_device()),
        dtype_(value->dtype()),
        shape_(shape),
        value_(std::move(value)) {}

  int64_t id() const { return id_; }
  /// The device the variable was created on (its tf.device scope): ops reading or writing it are placed
  /// there (TensorFlow colocates them with the resource).
  Device device() const { return device_; }
  const std::string& name() const { return name_; }
  DType dtype() const { return dtype_; }
  /// The declared shape (TensorFlow's `tf.Variable(..., shape=...)`): every value assigned must fit it.
  /// It may leave dimensions or the rank unknown, and then assignments may change the value's shape
  /// within it; reads while tracing have this shape, so one trace serves every value it admits.
  const Shape& shape() const { return shape_; }
  /// Whether a GradientTape watches the variable when it is read (watch_accessed_variables).
  bool trainable() const { return trainable_.load(std::memory_order_relaxed); }
  void set_trainable(bool trainable) { trainable_.store(trainable, std::memory_order_relaxed); }

  /// The current value as a fresh tensor sharing its buffer (no copy): tensors are immutable, so a reader
  /// keeps the value it read. A tape links each read to the read's own node; were the stored tensor itself
  /// handed out, linking it would relink the tensor that was assigned (and every earlier read), so uses of
  /// them would count as reads of the variable. The shared buffer stays safe from in-place writes, which
  /// need the only reference to the buffer.
  TensorRef read() const {
    std::lock_guard<std::mutex> lock(mu_);
    return TensorImpl::alias(*value_);
  }
  /// Replaces the value; the caller has checked dtype and that the value fits shape().
  void write(TensorRef value) {
    std::lock_guard<std::mutex> lock(mu_);
    value_ = std::move(value);
  }
  /// Read-modify-write as one step (assign_add from several threads loses no update):
  /// `fn(const TensorRef& current) -> StatusOr<TensorRef>` computes the new value under the lock.
  template <typename Fn>
  Status update(Fn&& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    StatusOr<TensorRef> next = fn(value_);
    if (!next.ok()) return next.status();
    value_ = std::move(next).value();
    return Status::OK();
  }

 private:
  int64_t id_;
  std::string name_;
  Device device_;
  DType dtype_;
  Shape shape_;
  mutable std::mutex mu_;
  TensorRef value_;
  std::atomic<bool> trainable_{true};
};

class ResourceManager {
 public:
  static ResourceManager& global();

  /// Creates a variable holding `value`, of declared shape `value`'s own; the returned pointer is its only
  /// strong reference.
  std::shared_ptr<VariableResource> create_variable(std::string name, TensorRef value);
  /// The same with a declared shape that may leave dimensions or the rank unknown; an InvalidArgument
  /// error when `value` does not fit it.
  StatusOr<std::shared_ptr<VariableResource>> create_variable(std::string name, TensorRef value,
                                                              const Shape& shape);
  /// The variable with this id, or a FailedPrecondition error naming it if it has been deleted.
  StatusOr<std::shared_ptr<VariableResource>> find(int64_t id, const char* op_name) const;
  /// Variables alive now (the registry holds no entry for a deleted one).
  size_t num_live_variables() const;

 private:
  std::shared_ptr<VariableResource> register_variable(std::string name, TensorRef value, const Shape& shape);
  void erase(int64_t id, std::string name);

  mutable std::mutex mu_;
  int64_t next_id_ = 1;
  std::unordered_map<int64_t, std::weak_ptr<VariableResource>> variables_;
  // The names of the most recently deleted variables, for the error message; bounded, so programs that
  // create and drop variables forever use constant memory (older ones are reported by id).
  static constexpr size_t kDeletedNamesKept = 1024;
  std::unordered_map<int64_t, std::string> deleted_names_;
  std::vector<int64_t> deleted_order_;  // ring over deleted_names_' keys
  size_t deleted_next_ = 0;
};

}  // namespace ember
