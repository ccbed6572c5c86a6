#include "ember/api/tensor.h"

#include <cstring>
#include <sstream>

#include "ember/ops/registry.h"
#include "ember/trace/trace_context.h"

namespace ember {
namespace {

// A constant made while a function traces belongs to that function's graph (a Const node).
void note_if_tracing(const TensorRef& t) {
  if (TraceContext* trace = TraceContext::current()) trace->note_local_constant(t.get());
}

template <typename T>
TensorRef scalar_impl(T v) {
  auto t = TensorImpl::allocate(dtype_of<T>::value, Shape());
  if (!t.ok()) throw StatusError(t.status());
  *t.value()->template mutable_data<T>() = v;
  note_if_tracing(t.value());
  return std::move(t).value();
}

}  // namespace

Tensor::Tensor(float v) : impl_(scalar_impl(v)) {}
Tensor::Tensor(double v) : impl_(scalar_impl(static_cast<float>(v))) {}
Tensor::Tensor(int32_t v) : impl_(scalar_impl(v)) {}
Tensor::Tensor(int64_t v) : impl_(scalar_impl(static_cast<int32_t>(v))) {}
Tensor::Tensor(bool v) : impl_(scalar_impl(v)) {}
Tensor::Tensor(std::initializer_list<float> values) : Tensor(from_vector(std::vector<float>(values))) {}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  if (!shape.fully_defined() || shape.num_elements() != static_cast<int64_t>(values.size()))
    throw StatusError(invalid_argument("Tensor::from_vector: ", values.size(), " values do not fill shape ",
                                       shape.to_string()));
  auto t = TensorImpl::allocate(dtype_of<T>::value, shape);
  if (!t.ok()) throw StatusError(t.status());
  T* dst = t.value()->template mutable_data<T>();
  for (size_t i = 0; i < values.size(); ++i) dst[i] = values[i];
  note_if_tracing(t.value());
  return Tensor(std::move(t).value());
}

namespace {
void check_concrete(const Tensor& t, const char* what) {
  if (t.impl()->is_symbolic())
    throw StatusError(make_error(Code::kFailedPrecondition, what,
                                 ": the tensor is symbolic (inside ember::function) and has no value yet"));
}
}  // namespace

template <typename T>
std::vector<T> Tensor::to_vector() const {
  check_concrete(*this, "Tensor::to_vector");
  std::vector<T> out(static_cast<size_t>(num_elements()));
  visit_dtype(dtype(), [&]<typename S>() {
    const S* src = impl_->data<S>();
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<T, S>)
        out[i] = src[i];
      else if constexpr (std::is_same_v<S, float16> || std::is_same_v<S, bfloat16>)
        out[i] = static_cast<T>(static_cast<float>(src[i]));
      else
        out[i] = static_cast<T>(src[i]);  // direct, so large integers survive as double
    }
  });
  return out;
}

template <typename T>
T Tensor::item() const {
  if (num_elements() != 1)
    throw StatusError(invalid_argument("Tensor::item: expected a tensor with one element, got shape ",
                                       shape().to_string()));
  return to_vector<T>()[0];
}

#define EMBER_INSTANTIATE(T)                                                   \
  template Tensor Tensor::from_vector<T>(const std::vector<T>&, const Shape&); \
  template std::vector<T> Tensor::to_vector<T>() const;                        \
  template T Tensor::item<T>() const;
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
EMBER_INSTANTIATE(int8_t)
EMBER_INSTANTIATE(int16_t)
EMBER_INSTANTIATE(int32_t)
EMBER_INSTANTIATE(int64_t)
EMBER_INSTANTIATE(uint8_t)
#undef EMBER_INSTANTIATE
template Tensor Tensor::from_vector<bool>(const std::vector<bool>&, const Shape&);

template <>
std::vector<bool> Tensor::to_vector<bool>() const {
  check_concrete(*this, "Tensor::to_vector");
  std::vector<bool> out(static_cast<size_t>(num_elements()));
  visit_dtype(dtype(), [&]<typename S>() {
    const S* src = impl_->data<S>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(src[i]) != 0.0f;
  });
  return out;
}
template <>
bool Tensor::item<bool>() const {
  if (num_elements() != 1)
    throw StatusError(invalid_argument("Tensor::item: expected a tensor with one element, got shape ",
                                       shape().to_string()));
  return to_vector<bool>()[0];
}

std::string format_values(const TensorImpl& t, int64_t max_elements) {
  std::ostringstream os;
  int64_t n = t.num_elements();
  int rank = t.rank();
  auto strides = contiguous_strides(t.shape());
  visit_dtype(t.dtype(), [&]<typename T>() {
    const T* p = t.data<T>();
    auto elem = [&](int64_t i) {
      if constexpr (std::is_same_v<T, bool>)
        os << (p[i] ? "True" : "False");
      else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>)
        os << static_cast<int>(p[i]);
      else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>)
        os << static_cast<float>(p[i]);
      else
        os << p[i];
    };
    if (rank == 0) {
      elem(0);
      return;
    }
    for (int64_t i = 0; i < std::min(n, max_elements); ++i) {
      for (int d = 0; d < rank; ++d)
        if (i % (strides[d] * t.shape().dim(d)) == 0) os << "[";
      elem(i);
      int closed = 0;
      for (int d = rank - 1; d >= 0; --d) {
        if ((i + 1) % (strides[d] * t.shape().dim(d)) == 0)
          os << "]", ++closed;
        else
          break;
      }
      if (i + 1 < n) os << (closed ? ",\n" : ", ");
    }
    if (n > max_elements) os << "...";
    if (n == 0) os << std::string(rank, '[') << std::string(rank, ']');
  });
  return os.str();
}

std::string Tensor::to_string() const {
  if (!defined()) return "Tensor(<undefined>)";
  if (impl_->is_symbolic())
    return "Tensor(symbolic, shape=" + shape().to_string() + ", dtype=" + std::string(dtype_name(dtype())) +
           ")";
  return "Tensor(shape=" + shape().to_string() + ", dtype=" + std::string(dtype_name(dtype())) +
         ", values=" + format_values(*impl_) + ")";
}

std::vector<Tensor> call_op(std::string_view op_name, const std::vector<Tensor>& inputs,
                            const std::vector<AttrValue>& attrs) {
  const OpDef* op = OpRegistry::global().find(op_name);
  if (op == nullptr) throw StatusError(make_error(Code::kNotFound, "no op named '", op_name, "'"));
  SmallVector<TensorImpl*, 4> impls;
  for (const Tensor& t : inputs) {
    if (!t.defined()) throw StatusError(invalid_argument(op_name, ": an input tensor is undefined"));
    impls.push_back(t.impl());
  }
  AttrList attr_list;
  for (const AttrValue& a : attrs) attr_list.push_back(a);
  Status s = complete_attrs(*op, attr_list);
  if (!s.ok()) throw StatusError(s);
  OutputList outputs;
  s = execute_op(*op, {impls.data(), impls.size()}, {attr_list.data(), attr_list.size()}, outputs);
  if (!s.ok()) throw StatusError(s);
  std::vector<Tensor> result;
  result.reserve(outputs.size());
  for (TensorRef& r : outputs) result.emplace_back(std::move(r));
  return result;
}

std::vector<Tensor> call_op(std::string_view op_name, std::initializer_list<Tensor> inputs,
                            std::initializer_list<AttrValue> attrs) {
  return call_op(op_name, std::vector<Tensor>(inputs), std::vector<AttrValue>(attrs));
}

Tensor call_op1(std::string_view op_name, std::initializer_list<Tensor> inputs,
                std::initializer_list<AttrValue> attrs) {
  return call_op(op_name, inputs, attrs)[0];
}

}  // namespace ember
