#include "ember/core/tensor_impl.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "ember/core/device.h"

namespace ember {
namespace {
// TensorImpl objects are small and created once per op: recycle them through a per-thread free list.
struct ImplFreeList {
  std::vector<void*> blocks;
  ~ImplFreeList() {
    for (void* b : blocks) ::operator delete(b);
  }
};
thread_local ImplFreeList impl_free_list;
constexpr size_t kMaxFreeImpls = 256;

void* new_impl_block() {
  auto& list = impl_free_list.blocks;
  if (!list.empty()) {
    void* b = list.back();
    list.pop_back();
    return b;
  }
  return ::operator new(sizeof(TensorImpl));
}
}  // namespace

// Note [String tensors]
// A string tensor's elements are std::strings constructed in its buffer: TensorImpl::allocate constructs
// them empty (a kernel then assigns them) and the buffer destroys them when its last reference goes, so
// views (Reshape, Split, a batch row) share the strings like any other elements. Everything that treats a
// buffer as raw bytes must leave strings alone: the executor's arena and in-place reuse skip string slots
// (runtime/executor.cc), and an op takes strings only where its registry row declares kString, so a kernel
// that memcpy's by dtype_size never sees one. Copies of strings go through copy_elements below.
StatusOr<TensorRef> TensorImpl::allocate(DType dtype, const Shape& shape, Device device) {
  EMBER_DCHECK(shape.fully_defined());
  int64_t n = shape.num_elements();
  size_t elem = dtype_size(dtype);
  // num_elements saturates rather than overflowing, and is 0 for an empty tensor however large its other
  // dims.
  const __int128 bytes = static_cast<__int128>(n) * elem;
  if (bytes > (static_cast<__int128>(1) << 50))
    return make_error(Code::kResourceExhausted, "cannot allocate a tensor of shape ", shape.to_string(),
                      " and dtype ", dtype_name(dtype), ": it would need more than 2^50 bytes");
  // Kernels allocate with the default device: a tensor belongs to the device its op runs on (the tf.device
  // scope or the partition of a multi-device function), which is CPU:0 unless one is set.
  if (device == Device{}) device = current_device();
  auto buffer = Buffer::allocate(static_cast<size_t>(bytes), device);
  if (!buffer.ok())
    return buffer.status().with_prefix("tensor of shape " + shape.to_string() + " and dtype " +
                                       std::string(dtype_name(dtype)) + ": ");
  if (dtype == DType::kString) (*buffer)->construct_strings(n);
  auto* t = new (new_impl_block()) TensorImpl();
  t->dtype_ = dtype;
  t->shape_ = shape;
  t->num_elements_ = n;
  t->buffer_ = *buffer;
  return TensorRef::adopt(t);
}

TensorRef TensorImpl::adopt_buffer(Buffer* buffer, DType dtype, const Shape& shape) {
  EMBER_DCHECK(shape.fully_defined() &&
               buffer->size() >= static_cast<size_t>(shape.num_elements()) * dtype_size(dtype));
  auto* t = new (new_impl_block()) TensorImpl();
  t->dtype_ = dtype;
  t->shape_ = shape;
  t->num_elements_ = shape.num_elements();
  t->buffer_ = buffer;
  return TensorRef::adopt(t);
}

TensorRef TensorImpl::view(const TensorImpl& source, const Shape& shape, size_t byte_offset) {
  return view(source, source.dtype_, shape, byte_offset);
}

TensorRef TensorImpl::view(const TensorImpl& source, DType dtype, const Shape& shape, size_t byte_offset) {
  EMBER_DCHECK(source.offset_ + byte_offset + shape.num_elements() * dtype_size(dtype) <=
               source.buffer_->size());
  auto* t = new (new_impl_block()) TensorImpl();
  t->dtype_ = dtype;
  t->shape_ = shape;
  t->num_elements_ = shape.num_elements();
  t->buffer_ = source.buffer_;
  t->buffer_->ref();
  t->offset_ = source.offset_ + byte_offset;
  return TensorRef::adopt(t);
}

TensorRef TensorImpl::symbolic(DType dtype, const Shape& shape, const void* graph, int32_t node,
                               int32_t output) {
  auto* t = new (new_impl_block()) TensorImpl();
  t->dtype_ = dtype;
  t->shape_ = shape;
  t->num_elements_ = shape.num_elements();
  t->graph_ = graph;
  t->node_ = node;
  t->output_ = output;
  return TensorRef::adopt(t);
}

TensorRef TensorImpl::alias(const TensorImpl& source) {
  if (source.is_symbolic())
    return symbolic(source.dtype_, source.shape_, source.graph_, source.node_, source.output_);
  return view(source, source.shape_, 0);
}

void copy_elements(DType dtype, const void* src, void* dst, int64_t count) {
  if (count <= 0) return;
  if (dtype == DType::kString) {
    std::copy_n(static_cast<const std::string*>(src), count, static_cast<std::string*>(dst));
  } else {
    std::memcpy(dst, src, static_cast<size_t>(count) * dtype_size(dtype));
  }
}

void TensorImpl::set_grad_link(GradNodeBase* node, int32_t output) {
  if (node) node->ref();
  if (grad_node_) grad_node_->unref();
  grad_node_ = node;
  grad_output_ = output;
}

void TensorImpl::destroy() {
  if (buffer_) buffer_->unref();
  if (grad_node_) grad_node_->unref();
  this->~TensorImpl();
  auto& list = impl_free_list.blocks;
  if (list.size() < kMaxFreeImpls) {
    list.push_back(this);
  } else {
    ::operator delete(this);
  }
}

}  // namespace ember
