// TensorImpl: an immutable, dense, row-major value: a Buffer (shared between views), a byte offset into
// it, a dtype and a shape. Intrusively reference counted so that the Python object, the C++ `Tensor`
// façade and the runtime can all hold one with a single atomic increment.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

#include "ember/core/allocator.h"
#include "ember/core/dtype.h"
#include "ember/core/shape.h"

namespace ember {

class TensorImpl;

/// Base of the autodiff layer's tape nodes: a tensor that a GradientTape recorded points at the node that
/// produced it (its "grad link"), so backprop can walk from a target to its sources. Intrusively counted;
/// the autodiff layer defines what a node holds.
class GradNodeBase {
 public:
  virtual ~GradNodeBase() = default;
  void ref() { refcount_.fetch_add(1, std::memory_order_relaxed); }
  void unref() {
    if (refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 private:
  std::atomic<int32_t> refcount_{1};
};

/// An owning, intrusive pointer to a TensorImpl.
class TensorRef {
 public:
  TensorRef() = default;
  /// Adopts a pointer that already holds one reference.
  static TensorRef adopt(TensorImpl* p) {
    TensorRef r;
    r.p_ = p;
    return r;
  }
  explicit TensorRef(TensorImpl* p);  // takes a new reference
  TensorRef(const TensorRef& o);
  TensorRef(TensorRef&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  TensorRef& operator=(TensorRef o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~TensorRef();

  TensorImpl* get() const { return p_; }
  TensorImpl* operator->() const { return p_; }
  TensorImpl& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  /// Gives up ownership without decrementing.
  TensorImpl* release() { return std::exchange(p_, nullptr); }

 private:
  TensorImpl* p_ = nullptr;
};

class TensorImpl {
 public:
  /// A new tensor with uninitialised storage for `shape` (which must be fully defined).
  static StatusOr<TensorRef> allocate(DType dtype, const Shape& shape, Device device = {});
  /// A tensor over `buffer` (adopting the caller's reference), which must hold `shape` of `dtype`.
  static TensorRef adopt_buffer(Buffer* buffer, DType dtype, const Shape& shape);
  /// A tensor viewing `source`'s buffer at `byte_offset` with a new shape (no copy).
  static TensorRef view(const TensorImpl& source, const Shape& shape, size_t byte_offset = 0);
  /// A tensor of another dtype viewing `source`'s buffer at `byte_offset` (the executor's arena slices).
  static TensorRef view(const TensorImpl& source, DType dtype, const Shape& shape, size_t byte_offset);
  /// A symbolic tensor: output `output` of node `node` in the graph identified by `graph` (owned by the
  /// trace layer). It has a dtype and a possibly partially known shape but no storage.
  static TensorRef symbolic(DType dtype, const Shape& shape, const void* graph, int32_t node, int32_t output);

  bool is_symbolic() const { return buffer_ == nullptr; }
  const void* graph() const { return graph_; }
  int32_t graph_node() const { return node_; }
  int32_t graph_output() const { return output_; }

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t num_elements() const { return num_elements_; }
  size_t nbytes() const { return static_cast<size_t>(num_elements_) * dtype_size(dtype_); }
  Device device() const { return buffer_ ? buffer_->device() : Device{}; }
  Buffer* buffer() const { return buffer_; }
  size_t byte_offset() const { return offset_; }

  const void* raw_data() const { return static_cast<char*>(buffer_->data()) + offset_; }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(raw_data());
  }
  /// Writable storage: only for the kernel that produces this tensor, before anyone else sees it.
  void* mutable_raw_data() { return static_cast<char*>(buffer_->data()) + offset_; }
  template <typename T>
  T* mutable_data() {
    return static_cast<T*>(mutable_raw_data());
  }

  /// Tape membership: bit i is set while tape i watches this tensor (autodiff layer).
  uint32_t tape_mask() const { return tape_mask_; }
  void set_tape_mask(uint32_t mask) { tape_mask_ = mask; }
  /// The tape node that produced this tensor and which of its outputs it is (null when none recorded it).
  GradNodeBase* grad_node() const { return grad_node_; }
  int32_t grad_output() const { return grad_output_; }
  /// Takes a new reference to `node` (may be null, which clears the link).
  void set_grad_link(GradNodeBase* node, int32_t output);
  /// A new tensor with the same value (shared buffer, or the same graph value) and no tape membership:
  /// what a tape node keeps of its outputs without creating a reference cycle.
  static TensorRef alias(const TensorImpl& source);

  void ref() { refcount_.fetch_add(1, std::memory_order_relaxed); }
  void unref() {
    if (refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy();
  }
  /// References held (1: only the caller's; the executor then may write over it in place).
  int refcount() const { return refcount_.load(std::memory_order_acquire); }

 private:
  TensorImpl() = default;
  void destroy();

  std::atomic<int32_t> refcount_{1};
  DType dtype_ = DType::kFloat32;
  uint32_t tape_mask_ = 0;
  Shape shape_;
  int64_t num_elements_ = 0;
  Buffer* buffer_ = nullptr;
  size_t offset_ = 0;
  // Set only for symbolic tensors (buffer_ == nullptr).
  const void* graph_ = nullptr;
  int32_t node_ = -1;
  int32_t output_ = 0;
  GradNodeBase* grad_node_ = nullptr;
  int32_t grad_output_ = 0;
};

/// Copies `count` elements of `dtype` from `src` to `dst` (assigning std::strings for kString, memcpy
/// otherwise); the ranges must not overlap.
void copy_elements(DType dtype, const void* src, void* dst, int64_t count);

inline TensorRef::TensorRef(TensorImpl* p) : p_(p) {
  if (p_) p_->ref();
}
inline TensorRef::TensorRef(const TensorRef& o) : p_(o.p_) {
  if (p_) p_->ref();
}
inline TensorRef::~TensorRef() {
  if (p_) p_->unref();
}

}  // namespace ember
