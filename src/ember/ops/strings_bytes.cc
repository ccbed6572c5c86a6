// Strings as bytes: DecodeRaw and DecodePaddedRaw (tf.io.decode_raw: each string's bytes read as numbers,
// the way TFRecord pipelines unpack raw image and feature buffers), EncodeBase64 and DecodeBase64
// (tf.io.encode_base64 / decode_base64, web-safe alphabet). Kept apart from strings.cc, whose ops are
// text; registered from register_string_ops (strings.cc).
#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <string>

#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

// TensorFlow's DecodeRaw out_type list, less uint16 (ember has no such dtype).
constexpr DTypeSet kRawTypes = dtype_bit(DType::kFloat16) | dtype_bit(DType::kBFloat16) |
                               dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64) |
                               dtype_bit(DType::kInt8) | dtype_bit(DType::kInt16) | dtype_bit(DType::kInt32) |
                               dtype_bit(DType::kInt64) | dtype_bit(DType::kUInt8) | dtype_bit(DType::kBool) |
                               kComplexTypes;

const std::string* strings_of(const TensorImpl& t) { return t.data<std::string>(); }

Status check_bytes_input(const InferContext& ctx) {
  if (ctx.inputs[0].dtype != DType::kString)
    return invalid_argument(ctx.op->name, ": input ", ctx.op->inputs[0].name,
                            " must be a string tensor, got ", dtype_name(ctx.inputs[0].dtype));
  return Status::OK();
}

Status check_raw_type(const std::string& op, DType out) {
  if (!dtype_in(out, kRawTypes))
    return invalid_argument(op,
                            ": out_type must be one of float16, bfloat16, float32, float64, int8, int16, ",
                            "int32, int64, uint8, bool, complex64 or complex128, got ", dtype_name(out));
  return Status::OK();
}

// Input shape + [n] (n unknown: -1); an input of unknown rank gives an unknown shape.
StatusOr<Shape> with_trailing_dim(const Shape& in, int64_t n) {
  if (!in.rank_known()) return Shape::unknown_rank();
  if (in.rank() >= kMaxRank)
    return invalid_argument("DecodeRaw: the input has rank ", in.rank(), "; the output would exceed rank ",
                            kMaxRank);
  std::array<int64_t, kMaxRank> dims{};
  std::copy(in.dims().begin(), in.dims().end(), dims.begin());
  dims[in.rank()] = n;
  return Shape::from_dims({dims.data(), static_cast<size_t>(in.rank() + 1)}, /*allow_unknown=*/true);
}

// Copies `count` elements of `element_size` bytes; reversed within each `swap_unit` bytes when the data is
// not in this machine's byte order (complex numbers swap their two parts separately, as TensorFlow).
void copy_elements(const char* src, char* dst, int64_t bytes, size_t element_size, bool little_endian,
                   DType dtype) {
  std::memcpy(dst, src, static_cast<size_t>(bytes));
  const bool host_little = std::endian::native == std::endian::little;
  if (little_endian != host_little) {
    const size_t unit = is_complex(dtype) ? element_size / 2 : element_size;
    if (unit > 1)
      for (int64_t at = 0; at + static_cast<int64_t>(unit) <= bytes; at += static_cast<int64_t>(unit))
        std::reverse(dst + at, dst + at + unit);
  }
  if (dtype == DType::kBool)  // any nonzero byte is true; a bool holds 0 or 1
    for (int64_t i = 0; i < bytes; ++i) dst[i] = dst[i] != 0;
}

// ---- DecodeRaw(bytes; out_type, little_endian)

Status decode_raw_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_bytes_input(ctx));
  const DType out = ctx.attr_dtype(0);
  EMBER_RETURN_IF_ERROR(check_raw_type(ctx.op->name, out));
  int64_t n = -1;
  if (const TensorImpl* c = ctx.constant(0)) {  // known strings (eagerly always): their common length
    const size_t size = dtype_size(out);
    n = c->num_elements() == 0 ? 0 : static_cast<int64_t>(strings_of(*c)[0].size() / size);
  }
  auto shape = with_trailing_dim(ctx.inputs[0].shape, n);
  if (!shape.ok()) return shape.status();
  ctx.outputs.push_back(TensorSpec{out, *shape});
  return Status::OK();
}

Status decode_raw_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  const DType out = ctx.attr_dtype(0);
  const bool little_endian = ctx.attr_bool(1);
  const size_t size = dtype_size(out);
  const std::string* src = strings_of(in);
  const int64_t count = in.num_elements();
  const size_t length = count == 0 ? 0 : src[0].size();
  for (int64_t i = 0; i < count; ++i)
    if (src[i].size() != length)
      // TensorFlow's wording, which names the first string's size before element i's.
      return invalid_argument("DecodeRaw requires input strings to all be the same size, but element ", i,
                              " has size ", length, " != ", src[i].size());
  if (length % size != 0)
    return invalid_argument("Input to DecodeRaw has length ", length, " that is not a multiple of ", size,
                            ", the size of ", dtype_name(out));
  auto shape = with_trailing_dim(in.shape(), static_cast<int64_t>(length / size));
  if (!shape.ok()) return shape.status();
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, out, *shape));
  char* dst = static_cast<char*>(ctx.output(0).mutable_raw_data());
  for (int64_t i = 0; i < count; ++i)
    copy_elements(src[i].data(), dst + i * length, static_cast<int64_t>(length), size, little_endian, out);
  return Status::OK();
}

// ---- DecodePaddedRaw(input_bytes, fixed_length; out_type, little_endian)

Status check_fixed_length(const std::string& op, int64_t fixed_length, size_t size) {
  if (fixed_length <= 0)
    return invalid_argument(op, ": fixed_length (", fixed_length, ") must be greater than zero.");
  if (fixed_length % static_cast<int64_t>(size) != 0)
    return invalid_argument(op, ": fixed_length (", fixed_length,
                            ") must be a multiple of the size of out_type (", size, ")");
  return Status::OK();
}

Status decode_padded_raw_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_bytes_input(ctx));
  const DType out = ctx.attr_dtype(0);
  EMBER_RETURN_IF_ERROR(check_raw_type(ctx.op->name, out));
  const Shape& length_shape = ctx.inputs[1].shape;
  if (length_shape.rank_known() && length_shape.rank() != 0)
    return invalid_argument(ctx.op->name, ": fixed_length must be a scalar, got shape ",
                            length_shape.to_string());
  int64_t n = -1;
  if (const TensorImpl* c = ctx.constant(1)) {
    const int64_t fixed_length = c->data<int32_t>()[0];
    EMBER_RETURN_IF_ERROR(check_fixed_length(ctx.op->name, fixed_length, dtype_size(out)));
    n = fixed_length / static_cast<int64_t>(dtype_size(out));
  }
  auto shape = with_trailing_dim(ctx.inputs[0].shape, n);
  if (!shape.ok()) return shape.status();
  ctx.outputs.push_back(TensorSpec{out, *shape});
  return Status::OK();
}

Status decode_padded_raw_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  const DType out = ctx.attr_dtype(0);
  const bool little_endian = ctx.attr_bool(1);
  const size_t size = dtype_size(out);
  if (ctx.input(1).num_elements() != 1)
    return invalid_argument(ctx.op->name, ": fixed_length must be a scalar, got shape ",
                            ctx.input(1).shape().to_string());
  const int64_t fixed_length = ctx.input(1).data<int32_t>()[0];
  EMBER_RETURN_IF_ERROR(check_fixed_length(ctx.op->name, fixed_length, size));
  auto shape = with_trailing_dim(in.shape(), fixed_length / static_cast<int64_t>(size));
  if (!shape.ok()) return shape.status();
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, out, *shape));
  char* dst = static_cast<char*>(ctx.output(0).mutable_raw_data());
  std::memset(dst, 0, static_cast<size_t>(in.num_elements() * fixed_length));
  const std::string* src = strings_of(in);
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    // Shorter strings are zero-padded and longer ones cut, each to fixed_length bytes.
    const int64_t used = std::min<int64_t>(static_cast<int64_t>(src[i].size()), fixed_length);
    const int64_t whole = used - used % static_cast<int64_t>(size);
    char* row = dst + i * fixed_length;
    copy_elements(src[i].data(), row, whole, size, little_endian, out);
    if (whole < used) {  // a trailing partial element: its bytes are placed as the byte order says
      std::array<char, 16> element{};
      std::memcpy(element.data(), src[i].data() + whole, static_cast<size_t>(used - whole));
      copy_elements(element.data(), row + whole, static_cast<int64_t>(size), size, little_endian, out);
    }
  }
  return Status::OK();
}

// ---- EncodeBase64(input; pad), DecodeBase64(input): the web-safe alphabet (RFC 4648 §5)

constexpr char kBase64Alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string encode_base64(const std::string& in, bool pad) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(in[k])); };
  for (; i + 3 <= in.size(); i += 3) {
    const uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kBase64Alphabet[(v >> shift) & 63]);
  }
  const size_t left = in.size() - i;
  if (left > 0) {
    const uint32_t v = byte(i) << 16 | (left == 2 ? byte(i + 1) << 8 : 0);
    out.push_back(kBase64Alphabet[(v >> 18) & 63]);
    out.push_back(kBase64Alphabet[(v >> 12) & 63]);
    if (left == 2) out.push_back(kBase64Alphabet[(v >> 6) & 63]);
    if (pad) out.append(left == 2 ? 1 : 2, '=');
  }
  return out;
}

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

// TensorFlow's rules: padding ('=' or "==") is dropped only from a length that is a multiple of 4; any
// other character, '=' included, is invalid; what is left may not be 1 more than a multiple of 4, which is
// reported only once the whole groups of 4 before the odd character are valid. Bits past the last whole
// byte are ignored.
Status decode_base64(const std::string& in, std::string* out) {
  size_t length = in.size();
  if (length % 4 == 0 && length >= 2) {
    if (in[length - 1] == '=') --length;
    if (in[length - 1] == '=') --length;
  }
  if (length % 4 == 1) {
    for (size_t k = 0; k + 1 < length; ++k)
      if (base64_value(in[k]) < 0) return invalid_argument("Invalid character found in base64.");
    return invalid_argument("Base64 string length cannot be 1 modulo 4.");
  }
  out->clear();
  out->reserve(length / 4 * 3 + 2);
  uint32_t bits = 0;
  int have = 0;
  for (size_t k = 0; k < length; ++k) {
    const int v = base64_value(in[k]);
    if (v < 0) return invalid_argument("Invalid character found in base64.");
    bits = bits << 6 | static_cast<uint32_t>(v);
    have += 6;
    if (have >= 8) {
      have -= 8;
      out->push_back(static_cast<char>((bits >> have) & 0xFF));
    }
  }
  return Status::OK();
}

Status base64_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_bytes_input(ctx));
  ctx.outputs.push_back(TensorSpec{DType::kString, ctx.inputs[0].shape});
  return Status::OK();
}

Status encode_base64_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  const bool pad = ctx.attr_bool(0);
  const std::string* src = strings_of(in);
  std::string* dst = ctx.output(0).mutable_data<std::string>();
  for (int64_t i = 0; i < in.num_elements(); ++i) dst[i] = encode_base64(src[i], pad);
  return Status::OK();
}

Status decode_base64_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  const std::string* src = strings_of(in);
  std::string* dst = ctx.output(0).mutable_data<std::string>();
  for (int64_t i = 0; i < in.num_elements(); ++i) EMBER_RETURN_IF_ERROR(decode_base64(src[i], &dst[i]));
  return Status::OK();
}

}  // namespace

void register_bytes_ops(OpRegistry& r) {
  OpBuilder("DecodeRaw")
      .doc(
          "Each string's bytes as numbers of out_type (all strings the same length), in little- or "
          "big-endian "
          "order: shape input.shape + [length / size]. ([\"\\x01\\x02\"], uint8) -> [[1, 2]]")
      .input("bytes")
      .output("output")
      .type_var(kStringType)
      .attr("out_type", AttrType::kDType)
      .attr("little_endian", AttrType::kBool, true)
      .flags(kNotDifferentiable | kKernelAllocates)
      .shape(&decode_raw_shape)
      .kernel(kStringType, &decode_raw_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("DecodePaddedRaw")
      .doc(
          "DecodeRaw of each string cut or zero-padded to fixed_length bytes: shape input.shape + "
          "[fixed_length / size]. ([\"\\x01\"], 2, uint8) -> [[1, 0]]")
      .input("input_bytes")
      .input("fixed_length", 1)
      .output("output")
      .type_var(kStringType)
      .type_var(dtype_bit(DType::kInt32), 1)
      .attr("out_type", AttrType::kDType)
      .attr("little_endian", AttrType::kBool, true)
      .flags(kNotDifferentiable | kKernelAllocates)
      .shape(&decode_padded_raw_shape)
      .kernel(kStringType, &decode_padded_raw_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("EncodeBase64")
      .doc(
          "Web-safe base64 of each string ('-' and '_'), '='-padded when pad. ([\"a\"], pad=true) -> "
          "[\"YQ==\"]")
      .input("input")
      .output("output")
      .type_var(kStringType)
      .attr("pad", AttrType::kBool, false)
      .flags(kNotDifferentiable)
      .shape(&base64_shape)
      .kernel(kStringType, &encode_base64_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("DecodeBase64")
      .doc("The bytes of each web-safe base64 string (padded or not). ([\"YQ\"]) -> [\"a\"]")
      .input("input")
      .output("output")
      .type_var(kStringType)
      .flags(kNotDifferentiable)
      .shape(&base64_shape)
      .kernel(kStringType, &decode_base64_kernel)
      .batching(BatchingRule::kElementwise)
      .done(r);
}

}  // namespace ember
