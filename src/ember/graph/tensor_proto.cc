#include "ember/graph/tensor_proto.h"

#include <algorithm>
#include <cstring>

namespace ember {
namespace {

using proto::Field;
using proto::Reader;
using proto::WireType;
using proto::Writer;

// Field numbers of TensorShapeProto and TensorProto.
namespace pb {
namespace shape {  // TensorShapeProto and its Dim
constexpr int kDim = 2, kUnknownRank = 3, kDimSize = 1;
}
namespace tensor {  // TensorProto
constexpr int kDtype = 1, kShape = 2, kContent = 4, kFloatVal = 5, kDoubleVal = 6, kIntVal = 7,
              kInt64Val = 10, kBoolVal = 11, kHalfVal = 13;
}
}  // namespace pb

// TensorFlow's DataType values, indexed by ember's DType.
constexpr int kTfDataTypes[] = {
    19 /*DT_HALF*/, 14 /*DT_BFLOAT16*/, 1 /*DT_FLOAT*/, 2 /*DT_DOUBLE*/, 6 /*DT_INT8*/,
    5 /*DT_INT16*/, 3 /*DT_INT32*/,     9 /*DT_INT64*/, 4 /*DT_UINT8*/,  10 /*DT_BOOL*/};
static_assert(std::size(kTfDataTypes) == kNumDTypes, "one TensorFlow DataType per ember dtype");

// A constant written as one value repeated (TensorFlow's splat: `float_val: 0` for a zeros tensor) may not
// expand past this, so a few bytes of input cannot ask for unbounded memory.
constexpr int64_t kMaxExpandedTensorBytes = int64_t{1} << 30;

// A TensorProto's values: raw tensor_content, or the typed field that its dtype uses.
struct TensorValues {
  int64_t datatype = 0;
  std::vector<int64_t> dims;
  bool unknown_rank = false;
  bool has_content = false;
  std::string_view content;
  std::vector<float> floats;
  std::vector<double> doubles;
  std::vector<int64_t> ints[4];  // int_val, int64_val, bool_val, half_val
};

template <typename T, typename Source>
void fill_values(TensorImpl& t, const std::vector<Source>& values) {
  T* out = t.mutable_data<T>();
  const int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    if (values.empty()) {
      out[i] = T{};
    } else {
      Source v = values[std::min<size_t>(static_cast<size_t>(i), values.size() - 1)];
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

void write_shape_proto(Writer& w, std::span<const int64_t> dims, bool unknown_rank) {
  for (int64_t d : dims)
    w.write_message(pb::shape::kDim, [&](Writer& dim) {
      if (d != 0) dim.write_int(pb::shape::kDimSize, d);
    });
  if (unknown_rank) w.write_bool(pb::shape::kUnknownRank, true);
}

void write_tensor_proto(Writer& w, const TensorImpl& t) {
  w.write_int(pb::tensor::kDtype, tf_datatype(t.dtype()));
  w.write_message(pb::tensor::kShape, [&](Writer& s) { write_shape_proto(s, t.shape().dims(), false); });
  if (t.nbytes() > 0)
    w.write_bytes(pb::tensor::kContent, std::string_view(static_cast<const char*>(t.raw_data()), t.nbytes()));
}

Status read_shape_proto(const Field& field, std::vector<int64_t>& dims, bool& unknown_rank) {
  EMBER_RETURN_IF_ERROR(proto::expect(field, WireType::kLengthDelimited, "TensorShapeProto"));
  dims.clear();
  unknown_rank = false;
  Reader r(field);
  Field f;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    if (f.number == pb::shape::kDim) {
      EMBER_RETURN_IF_ERROR(proto::expect(f, WireType::kLengthDelimited, "TensorShapeProto.dim"));
      int64_t size = 0;
      Reader dr(f);
      Field d;
      while (!dr.done()) {
        EMBER_RETURN_IF_ERROR(dr.next(d));
        if (d.number != pb::shape::kDimSize) continue;
        EMBER_RETURN_IF_ERROR(proto::expect(d, WireType::kVarint, "TensorShapeProto.Dim.size"));
        size = d.as_int64();
      }
      dims.push_back(size);
    } else if (f.number == pb::shape::kUnknownRank) {
      EMBER_RETURN_IF_ERROR(proto::expect(f, WireType::kVarint, "TensorShapeProto.unknown_rank"));
      unknown_rank = f.as_bool();
    }
  }
  if (unknown_rank) {
    dims.clear();
    return Status::OK();
  }
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

Status read_tensor_proto(const Field& field, TensorRef& out) {
  EMBER_RETURN_IF_ERROR(proto::expect(field, WireType::kLengthDelimited, "TensorProto"));
  TensorValues v;
  Reader r(field);
  Field f;
  while (!r.done()) {
    EMBER_RETURN_IF_ERROR(r.next(f));
    switch (f.number) {
      case pb::tensor::kDtype:
        EMBER_RETURN_IF_ERROR(proto::expect(f, WireType::kVarint, "TensorProto.dtype"));
        v.datatype = f.as_int32();
        break;
      case pb::tensor::kShape:
        EMBER_RETURN_IF_ERROR(read_shape_proto(f, v.dims, v.unknown_rank));
        break;
      case pb::tensor::kContent:
        EMBER_RETURN_IF_ERROR(proto::expect(f, WireType::kLengthDelimited, "TensorProto.tensor_content"));
        v.has_content = true;
        v.content = f.bytes;
        break;
      case pb::tensor::kFloatVal:
        EMBER_RETURN_IF_ERROR(proto::read_repeated_floats(f, "TensorProto.float_val", v.floats));
        break;
      case pb::tensor::kDoubleVal:
        EMBER_RETURN_IF_ERROR(proto::read_repeated_doubles(f, "TensorProto.double_val", v.doubles));
        break;
      case pb::tensor::kIntVal:
        EMBER_RETURN_IF_ERROR(proto::read_repeated_ints(f, "TensorProto.int_val", v.ints[0]));
        break;
      case pb::tensor::kInt64Val:
        EMBER_RETURN_IF_ERROR(proto::read_repeated_ints(f, "TensorProto.int64_val", v.ints[1]));
        break;
      case pb::tensor::kBoolVal:
        EMBER_RETURN_IF_ERROR(proto::read_repeated_ints(f, "TensorProto.bool_val", v.ints[2]));
        break;
      case pb::tensor::kHalfVal:
        EMBER_RETURN_IF_ERROR(proto::read_repeated_ints(f, "TensorProto.half_val", v.ints[3]));
        break;
      default:
        break;
    }
  }
  DType dtype;
  if (!dtype_from_tf_datatype(v.datatype, &dtype))
    return invalid_argument("TensorProto has DataType ", v.datatype, ", which ember does not support");
  if (v.unknown_rank) return invalid_argument("TensorProto has a shape of unknown rank");
  auto shape = Shape::from_dims(v.dims);
  if (!shape.ok()) return shape.status().with_prefix("TensorProto: ");
  const int64_t content_size = static_cast<int64_t>(v.content.size());
  const int64_t limit = std::max(content_size, kMaxExpandedTensorBytes);
  const int64_t nbytes = bytes_up_to(dtype, *shape, limit);
  if (v.has_content && nbytes != content_size)
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
  if (v.has_content) {
    if (!v.content.empty()) std::memcpy(value.mutable_raw_data(), v.content.data(), v.content.size());
    if (dtype == DType::kBool) {
      bool* b = value.mutable_data<bool>();
      const char* raw = v.content.data();
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
      fits = check_count(v.floats.size());
      if (fits) fill_values<float>(value, v.floats);
      break;
    case DType::kFloat64:
      fits = check_count(v.doubles.size());
      if (fits) fill_values<double>(value, v.doubles);
      break;
    case DType::kInt64:
      fits = check_count(v.ints[1].size());
      if (fits) fill_values<int64_t>(value, v.ints[1]);
      break;
    case DType::kBool:
      fits = check_count(v.ints[2].size());
      if (fits) fill_values<bool>(value, v.ints[2]);
      break;
    case DType::kFloat16:
      fits = check_count(v.ints[3].size());
      if (fits) fill_values<float16>(value, v.ints[3]);
      break;
    case DType::kBFloat16:
      fits = check_count(v.ints[3].size());
      if (fits) fill_values<bfloat16>(value, v.ints[3]);
      break;
    default:  // int32, int16, int8, uint8: int_val
      fits = check_count(v.ints[0].size());
      if (fits) {
        visit_dtype<kIntTypes>(dtype, [&]<typename T>() { fill_values<T>(value, v.ints[0]); });
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
