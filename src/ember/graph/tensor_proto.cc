#include "ember/graph/tensor_proto.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace ember {
namespace {

// TensorFlow's DataType values, indexed by ember's DType.
constexpr int kTfDataTypes[] = {19 /*DT_HALF*/,
                                14 /*DT_BFLOAT16*/,
                                1 /*DT_FLOAT*/,
                                2 /*DT_DOUBLE*/,
                                6 /*DT_INT8*/,
                                5 /*DT_INT16*/,
                                3 /*DT_INT32*/,
                                9 /*DT_INT64*/,
                                4 /*DT_UINT8*/,
                                10 /*DT_BOOL*/,
                                8 /*DT_COMPLEX64*/,
                                18 /*DT_COMPLEX128*/,
                                7 /*DT_STRING*/};
static_assert(std::size(kTfDataTypes) == kNumDTypes, "one TensorFlow DataType per ember dtype");

// A constant written as one value repeated (TensorFlow's splat: `float_val: 0` for a zeros tensor) may not
// expand past this, so a few bytes of input cannot ask for unbounded memory.
constexpr int64_t kMaxExpandedTensorBytes = int64_t{1} << 30;

template <typename T, typename Source>
void fill_values(TensorImpl& t, const Source& values) {
  T* out = t.mutable_data<T>();
  const int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    if (values.empty()) {
      out[i] = T{};
    } else {
      auto v = values[static_cast<int>(std::min<int64_t>(i, values.size() - 1))];
      if constexpr (std::is_same_v<T, bool>) {
        out[i] = v != 0;
      } else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
        out[i].bits = static_cast<uint16_t>(v);  // half_val holds the 16-bit pattern
      } else {
        out[i] = static_cast<T>(v);
      }
    }
  }
}

// scomplex_val / dcomplex_val list (real, imag) pairs; a single pair is a splat, as TensorFlow reads it.
template <typename T, typename Source>
void fill_complex_values(TensorImpl& t, const Source& values) {
  using Part = typename T::value_type;
  T* out = t.mutable_data<T>();
  const int64_t n = t.num_elements(), pairs = values.size() / 2;
  for (int64_t i = 0; i < n; ++i) {
    if (pairs == 0) {
      out[i] = T{};
    } else {
      const int64_t k = std::min(i, pairs - 1);
      out[i] = T(static_cast<Part>(values[2 * k]), static_cast<Part>(values[2 * k + 1]));
    }
  }
}

// The byte size of a `dtype` tensor of `shape`, or -1 when that exceeds `limit` (computed without overflow).
int64_t bytes_up_to(DType dtype, const Shape& shape, int64_t limit) {
  for (int64_t d : shape.dims())
    if (d == 0) return 0;
  __int128 bytes = dtype_size(dtype);
  for (int64_t d : shape.dims()) {
    bytes *= d;
    if (bytes > limit) return -1;
  }
  return static_cast<int64_t>(bytes);
}

// TensorFlow's tensor_content for strings (port::EncodeStringList): every length as a varint32, then the
// bytes of every string.
Status decode_string_content(const std::string& content, std::string* out, int64_t n) {
  size_t pos = 0;
  std::vector<uint64_t> sizes(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      if (pos >= content.size() || shift > 28)
        return invalid_argument("TensorProto: string tensor_content has a truncated or bad length varint");
      const unsigned char b = static_cast<unsigned char>(content[pos++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
    }
    sizes[static_cast<size_t>(i)] = v;
  }
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t size = sizes[static_cast<size_t>(i)];
    if (size > content.size() - pos)
      return invalid_argument("TensorProto: string tensor_content is shorter than its lengths say");
    out[i].assign(content, pos, size);
    pos += size;
  }
  if (pos != content.size())
    return invalid_argument("TensorProto: string tensor_content has ", content.size() - pos,
                            " bytes past its strings");
  return Status::OK();
}

Status from_string_tensor_proto(const proto::TensorProto& v, const Shape& shape, TensorRef& out) {
  const int64_t n = shape.num_elements();
  const int64_t listed = v.string_val().size();
  // A splat repeats the last value; bound what that may cost like any other expansion.
  const int64_t last = v.string_val().empty() ? 0 : static_cast<int64_t>(v.string_val().rbegin()->size());
  if (n > kMaxExpandedTensorBytes / 32 ||
      (n > listed && (n - listed) * (last + 32) > kMaxExpandedTensorBytes))
    return invalid_argument("TensorProto of shape ", shape.to_string(),
                            " and dtype string would expand to more than ", kMaxExpandedTensorBytes,
                            " bytes");
  if (listed > n)
    return invalid_argument("TensorProto lists ", listed, " values for a string tensor of shape ",
                            shape.to_string(), " (", n, " element(s))");
  auto t = TensorImpl::allocate(DType::kString, shape);
  if (!t.ok()) return t.status().with_prefix("TensorProto: ");
  std::string* dst = t.value()->mutable_data<std::string>();
  if (!v.tensor_content().empty()) {
    if (!v.string_val().empty())
      return invalid_argument("TensorProto: a string tensor has both tensor_content and string_val");
    EMBER_RETURN_IF_ERROR(decode_string_content(v.tensor_content(), dst, n));
  } else if (!v.string_val().empty()) {
    for (int64_t i = 0; i < n; ++i) dst[i] = v.string_val(static_cast<int>(std::min(i, listed - 1)));
  }
  out = std::move(t).value();
  return Status::OK();
}

}  // namespace

int tf_datatype(DType dtype) { return kTfDataTypes[static_cast<int>(dtype)]; }

bool dtype_from_tf_datatype(int64_t datatype, DType* out) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (kTfDataTypes[i] == datatype) {
      *out = static_cast<DType>(i);
      return true;
    }
  }
  return false;
}

void to_shape_proto(std::span<const int64_t> dims, bool unknown_rank, proto::TensorShapeProto* out) {
  out->Clear();
  for (int64_t d : dims) out->add_dim()->set_size(d);
  if (unknown_rank) out->set_unknown_rank(true);
}

void to_tensor_proto(const TensorImpl& t, proto::TensorProto* out) {
  out->set_dtype(static_cast<proto::DataType>(tf_datatype(t.dtype())));
  to_shape_proto(t.shape().dims(), false, out->mutable_tensor_shape());
  if (t.dtype() == DType::kString) {  // TensorFlow writes string tensors as string_val, one per element
    const std::string* s = t.data<std::string>();
    for (int64_t i = 0; i < t.num_elements(); ++i) out->add_string_val(s[i]);
    return;
  }
  if (t.nbytes() > 0) out->set_tensor_content(static_cast<const char*>(t.raw_data()), t.nbytes());
}

Status from_shape_proto(const proto::TensorShapeProto& shape, std::vector<int64_t>& dims,
                        bool& unknown_rank) {
  dims.clear();
  unknown_rank = shape.unknown_rank();
  if (unknown_rank) return Status::OK();
  for (const auto& d : shape.dim()) dims.push_back(d.size());
  EMBER_RETURN_IF_ERROR(
      Shape::from_dims(dims, /*allow_unknown=*/true).status().with_prefix("TensorShapeProto: "));
  return check_shape_size(dims).with_prefix("TensorShapeProto: ");
}

Status check_shape_size(std::span<const int64_t> dims) {
  int64_t product = 1;
  for (int64_t d : dims) {
    if (d < 0) continue;
    if (__builtin_mul_overflow(product, d, &product)) {
      std::string text;
      for (int64_t e : dims) text += (text.empty() ? "" : ",") + std::to_string(e);
      return invalid_argument("shape [", text, "] has more than 2^63 - 1 elements");
    }
  }
  return Status::OK();
}

Status from_tensor_proto(const proto::TensorProto& v, TensorRef& out) {
  std::vector<int64_t> dims;
  bool unknown_rank = false;
  EMBER_RETURN_IF_ERROR(from_shape_proto(v.tensor_shape(), dims, unknown_rank));
  DType dtype;
  if (!dtype_from_tf_datatype(v.dtype(), &dtype))
    return invalid_argument("TensorProto has DataType ", v.dtype(), ", which ember does not support");
  if (unknown_rank) return invalid_argument("TensorProto has a shape of unknown rank");
  auto shape = Shape::from_dims(dims);
  if (!shape.ok()) return shape.status().with_prefix("TensorProto: ");
  // An empty tensor_content reads as absent (proto3 has no presence for it), so an empty tensor may list
  // no values either way.
  const bool has_content = !v.tensor_content().empty();
  const std::string& content = v.tensor_content();
  const int64_t content_size = static_cast<int64_t>(content.size());
  const int64_t limit = std::max(content_size, kMaxExpandedTensorBytes);
  const int64_t nbytes = bytes_up_to(dtype, *shape, limit);
  if (dtype == DType::kString) return from_string_tensor_proto(v, *shape, out);
  if (has_content && nbytes != content_size)
    return invalid_argument("TensorProto.tensor_content has ", content_size, " bytes; a ", dtype_name(dtype),
                            " tensor of shape ", shape->to_string(), " needs ",
                            nbytes < 0 ? "more than " + std::to_string(limit) : std::to_string(nbytes));
  if (nbytes < 0)
    return invalid_argument("TensorProto of shape ", shape->to_string(), " and dtype ", dtype_name(dtype),
                            " would expand its listed values to more than ", kMaxExpandedTensorBytes,
                            " bytes");
  auto t = TensorImpl::allocate(dtype, *shape);
  if (!t.ok()) return t.status().with_prefix("TensorProto: ");
  TensorImpl& value = **t;
  if (has_content) {
    if (!content.empty()) std::memcpy(value.mutable_raw_data(), content.data(), content.size());
    if (dtype == DType::kBool) {
      bool* b = value.mutable_data<bool>();
      const char* raw = content.data();
      for (int64_t i = 0; i < value.num_elements(); ++i) b[i] = raw[i] != 0;  // a bool byte must be 0 or 1
    }
    out = std::move(t).value();
    return Status::OK();
  }
  size_t listed = 0;
  auto check_count = [&](size_t count) {
    listed = count;
    return count <= static_cast<size_t>(value.num_elements());
  };
  bool fits = true;
  switch (dtype) {
    case DType::kFloat32:
      fits = check_count(v.float_val().size());
      if (fits) fill_values<float>(value, v.float_val());
      break;
    case DType::kFloat64:
      fits = check_count(v.double_val().size());
      if (fits) fill_values<double>(value, v.double_val());
      break;
    case DType::kInt64:
      fits = check_count(v.int64_val().size());
      if (fits) fill_values<int64_t>(value, v.int64_val());
      break;
    case DType::kBool:
      fits = check_count(v.bool_val().size());
      if (fits) fill_values<bool>(value, v.bool_val());
      break;
    case DType::kFloat16:
      fits = check_count(v.half_val().size());
      if (fits) fill_values<float16>(value, v.half_val());
      break;
    case DType::kBFloat16:
      fits = check_count(v.half_val().size());
      if (fits) fill_values<bfloat16>(value, v.half_val());
      break;
    case DType::kComplex64:
      fits = v.scomplex_val().size() % 2 == 0 && check_count(v.scomplex_val().size() / 2);
      if (fits) fill_complex_values<complex64>(value, v.scomplex_val());
      break;
    case DType::kComplex128:
      fits = v.dcomplex_val().size() % 2 == 0 && check_count(v.dcomplex_val().size() / 2);
      if (fits) fill_complex_values<complex128>(value, v.dcomplex_val());
      break;
    default:  // int32, int16, int8, uint8: int_val
      fits = check_count(v.int_val().size());
      if (fits) {
        visit_dtype<kIntTypes>(dtype, [&]<typename T>() { fill_values<T>(value, v.int_val()); });
      }
      break;
  }
  if (!fits)
    return invalid_argument("TensorProto lists ", listed, " values for a ", dtype_name(dtype),
                            " tensor of shape ", shape->to_string(), " (", value.num_elements(),
                            " element(s))");
  out = std::move(t).value();
  return Status::OK();
}

}  // namespace ember
