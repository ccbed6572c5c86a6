// DLPack exchange (tf.experimental.dlpack, Tensor.__dlpack__): tensors leave ember and enter it without a
// copy. nanobind's ndarray does the DLPack protocol (capsules, versioned or not, read-only flags); this
// file maps dtypes and ties the lifetimes together: an exported tensor is kept alive by its capsule's
// owner, an imported array by the ember buffer that wraps its memory.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/allocator.h"
#include "ember/core/tensor_impl.h"
#include "python/py_gil.h"
#include "python/py_tensor.h"

namespace nb = nanobind;

namespace ember::python {
namespace {

constexpr int kDLCPU = 1;

nb::dlpack::dtype to_dlpack_dtype(DType d) {
  using nb::dlpack::dtype_code;
  auto make = [](dtype_code code, int bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  };
  switch (d) {
    case DType::kFloat16:
      return make(dtype_code::Float, 16);
    case DType::kBFloat16:
      return make(dtype_code::Bfloat, 16);
    case DType::kFloat32:
      return make(dtype_code::Float, 32);
    case DType::kFloat64:
      return make(dtype_code::Float, 64);
    case DType::kInt8:
      return make(dtype_code::Int, 8);
    case DType::kInt16:
      return make(dtype_code::Int, 16);
    case DType::kInt32:
      return make(dtype_code::Int, 32);
    case DType::kInt64:
      return make(dtype_code::Int, 64);
    case DType::kUInt8:
      return make(dtype_code::UInt, 8);
    case DType::kBool:
      return make(dtype_code::Bool, 8);
    case DType::kComplex64:  // interleaved (real, imaginary) float32 pairs, DLPack's complex layout
      return make(dtype_code::Complex, 64);
    case DType::kComplex128:
      return make(dtype_code::Complex, 128);
    case DType::kString:  // dlpack_array refuses string tensors before asking
      break;
  }
  return make(dtype_code::Float, 32);
}

std::optional<DType> from_dlpack_dtype(nb::dlpack::dtype t) {
  using nb::dlpack::dtype_code;
  if (t.lanes != 1) return std::nullopt;
  switch (static_cast<dtype_code>(t.code)) {
    case dtype_code::Float:
      if (t.bits == 16) return DType::kFloat16;
      if (t.bits == 32) return DType::kFloat32;
      if (t.bits == 64) return DType::kFloat64;
      break;
    case dtype_code::Bfloat:
      if (t.bits == 16) return DType::kBFloat16;
      break;
    case dtype_code::Int:
      if (t.bits == 8) return DType::kInt8;
      if (t.bits == 16) return DType::kInt16;
      if (t.bits == 32) return DType::kInt32;
      if (t.bits == 64) return DType::kInt64;
      break;
    case dtype_code::UInt:
      if (t.bits == 8) return DType::kUInt8;
      break;
    case dtype_code::Bool:
      if (t.bits == 8) return DType::kBool;
      break;
    case dtype_code::Complex:
      if (t.bits == 64) return DType::kComplex64;
      if (t.bits == 128) return DType::kComplex128;
      break;
    default:
      break;
  }
  return std::nullopt;
}

// The imported array's nanobind handle, released when ember's buffer goes. The last reference may drop on
// an executor thread without the GIL while the main thread holds it and waits on that executor, so the
// release is then handed to the interpreter's pending calls instead of waiting for the GIL.
using ImportedArray = nb::ndarray<nb::ro, nb::device::cpu>;  // read-only arrays too (broadcast views)

int release_with_gil(void* context) {
  delete static_cast<ImportedArray*>(context);
  return 0;
}

void release_imported(void* context) {
  if (!Py_IsInitialized()) return;  // at exit: the interpreter owns nothing any more
  if (PyGILState_Check()) {
    release_with_gil(context);
    return;
  }
  if (Py_AddPendingCall(&release_with_gil, context) == 0) return;
  AcquireGil gil;  // the pending-call queue is full: wait for the GIL (refused at exit: leak)
  if (gil.is_valid()) release_with_gil(context);
}

// A DLPack capsule over the tensor's buffer (nanobind's ndarray without a framework casts to one).
nb::object dlpack_array(nb::handle tensor) {
  if (!is_tensor(tensor.ptr())) throw nb::type_error("to_dlpack: expected an ember tensor");
  TensorImpl* t = impl_of(tensor.ptr());
  if (t->dtype() == DType::kString)
    throw nb::type_error("to_dlpack: DLPack has no string dtype; string tensors cannot be exported");
  if (t->is_symbolic())
    throw nb::type_error(
        "to_dlpack: a symbolic tensor (inside ember.function) has no value yet; return it from the function "
        "to export its value");
  std::vector<size_t> shape(static_cast<size_t>(t->rank()));
  for (int i = 0; i < t->rank(); ++i) shape[static_cast<size_t>(i)] = static_cast<size_t>(t->shape().dim(i));
  t->ref();  // the capsule's reference: the consumer's view keeps the buffer alive
  nb::capsule owner(t, [](void* p) noexcept { static_cast<TensorImpl*>(p)->unref(); });
  nb::ndarray<nb::ro> array(t->raw_data(), shape.size(), shape.data(), owner, nullptr,
                            to_dlpack_dtype(t->dtype()), kDLCPU, 0);
  return nb::cast(array, nb::rv_policy::reference);
}

// The consumer protocol's `__dlpack__`: a legacy (unversioned) capsule, which NumPy, PyTorch and JAX
// accept whatever max_version they ask for; the keyword arguments are accepted and need nothing here.
nb::object tensor_dlpack(nb::handle tensor, nb::kwargs) { return dlpack_array(tensor); }

nb::object tensor_from_dlpack(nb::handle source) {
  ImportedArray array;
  if (!nb::try_cast(source, array, /*convert=*/false))
    throw nb::type_error(
        ("from_dlpack: expected a DLPack capsule or an object with __dlpack__ on the CPU, got " +
         std::string(nb::type_name(source.type()).c_str()))
            .c_str());
  auto dtype = from_dlpack_dtype(array.dtype());
  if (!dtype)
    throw nb::type_error(
        "from_dlpack: the array's dtype has no ember equivalent (uint16/32/64, complex32 and vector lanes "
        "are not supported)");
  Shape shape;
  std::vector<int64_t> dims(array.ndim());
  size_t elements = 1;
  for (size_t i = 0; i < array.ndim(); ++i) {
    dims[i] = static_cast<int64_t>(array.shape(i));
    elements *= array.shape(i);
  }
  shape = Shape(dims);
  // ember tensors are dense and row-major: other layouts are copied into one.
  bool compact = true;
  int64_t expected = 1;
  for (size_t i = array.ndim(); i-- > 0;) {
    if (array.shape(i) != 1 && array.stride(i) != expected) compact = false;
    expected *= static_cast<int64_t>(array.shape(i));
  }
  size_t nbytes = elements * dtype_size(*dtype);
  if (!compact || elements == 0) {
    auto copy = TensorImpl::allocate(*dtype, shape);
    if (!copy.ok()) {
      raise_status(copy.status().with_prefix("from_dlpack: "));
      throw nb::python_error();
    }
    auto* dst = static_cast<char*>((*copy)->mutable_raw_data());
    const auto* src = static_cast<const char*>(array.data());
    size_t item = dtype_size(*dtype);
    std::vector<size_t> index(array.ndim(), 0);
    for (size_t n = 0; n < elements; ++n) {
      int64_t offset = 0;
      for (size_t i = 0; i < array.ndim(); ++i) offset += static_cast<int64_t>(index[i]) * array.stride(i);
      std::memcpy(dst + n * item, src + offset * static_cast<int64_t>(item), item);
      for (size_t i = array.ndim(); i-- > 0;) {
        if (++index[i] < array.shape(i)) break;
        index[i] = 0;
      }
    }
    return nb::steal(wrap_tensor(std::move(*copy)));
  }
  auto* held = new ImportedArray(array);
  Buffer* buffer = Buffer::wrap_external(const_cast<void*>(array.data()), nbytes, &release_imported, held);
  return nb::steal(wrap_tensor(TensorImpl::adopt_buffer(buffer, *dtype, shape)));
}

}  // namespace

void bind_dlpack(nb::module_& m) {
  m.def("to_dlpack", &dlpack_array, "A DLPack capsule viewing the tensor's buffer (no copy).");
  m.def("tensor_dlpack", &tensor_dlpack);
  m.def("from_dlpack", &tensor_from_dlpack,
        "A tensor over a DLPack capsule's or a __dlpack__ object's CPU memory (no copy when dense).");
}

}  // namespace ember::python
