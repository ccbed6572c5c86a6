#include "ember/graph/tensor_proto.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "ember/ember.h"
#include "wire_testing.h"

namespace ember {
namespace {

using testing::Writer;

// The bytes `fill` writes, parsed as a TensorProto or a TensorShapeProto by libprotobuf.
struct Message {
  std::string bytes;
  proto::TensorProto tensor() const {
    proto::TensorProto t;
    EXPECT_TRUE(t.ParseFromString(bytes));
    return t;
  }
  proto::TensorShapeProto shape() const {
    proto::TensorShapeProto s;
    EXPECT_TRUE(s.ParseFromString(bytes));
    return s;
  }
};

Message message(const std::function<void(Writer&)>& fill) {
  Writer w;
  fill(w);
  return {w.take()};
}

Message tensor_message(const TensorImpl& t) {
  proto::TensorProto m;
  to_tensor_proto(t, &m);
  return {m.SerializeAsString()};
}

Message shape_message(std::span<const int64_t> dims, bool unknown_rank) {
  proto::TensorShapeProto m;
  to_shape_proto(dims, unknown_rank, &m);
  return {m.SerializeAsString()};
}

void shape_of(Writer& t, std::vector<int64_t> dims) {
  t.write_message(2, [&](Writer& s) {
    for (int64_t d : dims) s.write_message(2, [&](Writer& dim) { dim.write_int(1, d); });
  });
}

Tensor read_ok(const Message& m) {
  TensorRef t;
  Status s = from_tensor_proto(m.tensor(), t);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return Tensor(t);
}

Status read_error(const Message& m) {
  TensorRef t;
  Status s = from_tensor_proto(m.tensor(), t);
  EXPECT_FALSE(s.ok());
  return s;
}

TEST(TensorProto, DataTypesAreTensorFlowsEnum) {
  EXPECT_EQ(tf_datatype(DType::kFloat32), 1);
  EXPECT_EQ(tf_datatype(DType::kFloat64), 2);
  EXPECT_EQ(tf_datatype(DType::kInt32), 3);
  EXPECT_EQ(tf_datatype(DType::kUInt8), 4);
  EXPECT_EQ(tf_datatype(DType::kInt16), 5);
  EXPECT_EQ(tf_datatype(DType::kInt8), 6);
  EXPECT_EQ(tf_datatype(DType::kInt64), 9);
  EXPECT_EQ(tf_datatype(DType::kBool), 10);
  EXPECT_EQ(tf_datatype(DType::kBFloat16), 14);
  EXPECT_EQ(tf_datatype(DType::kFloat16), 19);
  EXPECT_EQ(tf_datatype(DType::kComplex64), 8);
  EXPECT_EQ(tf_datatype(DType::kComplex128), 18);
  for (int i = 0; i < kNumDTypes; ++i) {
    DType back;
    ASSERT_TRUE(dtype_from_tf_datatype(tf_datatype(static_cast<DType>(i)), &back));
    EXPECT_EQ(back, static_cast<DType>(i));
  }
  DType string;
  ASSERT_TRUE(dtype_from_tf_datatype(7, &string));  // DT_STRING
  EXPECT_EQ(string, DType::kString);
  DType unused;
  EXPECT_FALSE(dtype_from_tf_datatype(20, &unused));  // DT_RESOURCE
}

TEST(TensorProto, EveryDtypeRoundTripsThroughTensorContent) {
  for (int i = 0; i < kNumDTypes; ++i) {
    DType dtype = static_cast<DType>(i);
    if (dtype == DType::kString) continue;  // string_val, not tensor_content (StringsRoundTrip...)
    Tensor t = cast(Tensor::from_vector<float>({1, 0, 3, 4, 5, 0}, Shape({2, 3})), dtype);
    Message m = tensor_message(*t.impl());
    Tensor back = read_ok(m);
    EXPECT_EQ(back.dtype(), dtype);
    EXPECT_EQ(back.impl()->shape(), Shape({2, 3}));
    EXPECT_EQ(std::memcmp(back.impl()->raw_data(), t.impl()->raw_data(), t.impl()->nbytes()), 0)
        << dtype_name(dtype);
  }
  // An empty tensor writes no tensor_content and reads back empty.
  Tensor empty = zeros({0, 2});
  Tensor back = read_ok(tensor_message(*empty.impl()));
  EXPECT_EQ(back.impl()->shape(), Shape({0, 2}));
}

TEST(TensorProto, StringsRoundTripThroughStringVal) {
  auto t = TensorImpl::allocate(DType::kString, Shape({3}));
  ASSERT_TRUE(t.ok());
  std::string* s = t.value()->mutable_data<std::string>();
  s[0] = "a";
  s[1] = std::string("\0b", 2);
  s[2] = std::string(100, 'x');  // on the heap
  Message m = tensor_message(*t.value());
  Tensor back = read_ok(m);
  ASSERT_EQ(back.dtype(), DType::kString);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(back.impl()->data<std::string>()[i], s[i]);
  // TensorFlow's tensor_content encoding of strings: varint32 lengths, then the bytes ("a", "bc").
  Tensor content = read_ok(message([](Writer& w) {
    w.write_int(1, 7);
    shape_of(w, {2});
    w.write_bytes(4, std::string("\x01\x02"
                                 "abc",
                                 5));
  }));
  ASSERT_EQ(content.dtype(), DType::kString);
  EXPECT_EQ(content.impl()->data<std::string>()[0], "a");
  EXPECT_EQ(content.impl()->data<std::string>()[1], "bc");
}

TEST(TensorProto, TypedValuesAsTensorFlowWritesThem) {
  Tensor splat = read_ok(message([](Writer& t) {  // tf.zeros([2, 2]) + 7: float_val 7 repeats
    t.write_int(1, 1);
    shape_of(t, {2, 2});
    t.write_float(5, 7.0f);
  }));
  EXPECT_EQ(splat.to_vector<float>(), (std::vector<float>{7, 7, 7, 7}));
  Tensor ints = read_ok(message([](Writer& t) {  // int_val, one value per field (unpacked)
    t.write_int(1, 3);
    shape_of(t, {3});
    t.write_int(7, -1);
    t.write_int(7, 5);
    t.write_int(7, 9);
  }));
  EXPECT_EQ(ints.to_vector<int32_t>(), (std::vector<int32_t>{-1, 5, 9}));
  Tensor halves = read_ok(message([](Writer& t) {  // half_val holds bit patterns: 1.0 is 0x3c00
    t.write_int(1, 19);
    shape_of(t, {2});
    int64_t bits[] = {0x3c00, 0x4000};
    t.write_packed_ints(13, bits);
  }));
  EXPECT_EQ(static_cast<float>(halves.impl()->data<float16>()[1]), 2.0f);
  Tensor scalar = read_ok(message([](Writer& t) {  // a scalar: no tensor_shape at all
    t.write_int(1, 10);
    t.write_int(11, 1);
  }));
  EXPECT_EQ(scalar.item<bool>(), true);
  EXPECT_EQ(scalar.impl()->shape(), Shape());
  Tensor zeros = read_ok(message([](Writer& t) {  // no values: zeros
    t.write_int(1, 2);
    shape_of(t, {2});
  }));
  EXPECT_EQ(zeros.to_vector<double>(), (std::vector<double>{0, 0}));
  Tensor bools = read_ok(message([](Writer& t) {  // tensor_content bytes other than 0 and 1 are true
    t.write_int(1, 10);
    shape_of(t, {3});
    t.write_bytes(4, std::string("\0\1\7", 3));
  }));
  const bool* b = bools.impl()->data<bool>();
  EXPECT_EQ(std::vector<int>(b, b + 3), (std::vector<int>{0, 1, 1}));  // stored as 0 and 1
  Tensor complexes = read_ok(message([](Writer& t) {  // scomplex_val: (real, imag) pairs
    t.write_int(1, 8);
    shape_of(t, {2});
    for (float v : {1.f, 2.f, 3.f, -4.f}) t.write_float(9, v);
  }));
  ASSERT_EQ(complexes.dtype(), DType::kComplex64);
  EXPECT_EQ(complexes.impl()->data<complex64>()[1], complex64(3, -4));
  Tensor complex_splat = read_ok(message([](Writer& t) {  // one pair fills the tensor
    t.write_int(1, 8);
    shape_of(t, {3});
    t.write_float(9, 0.5f);
    t.write_float(9, -1.f);
  }));
  EXPECT_EQ(complex_splat.impl()->data<complex64>()[2], complex64(0.5f, -1.f));
  Status odd = read_error(message([](Writer& t) {  // half a pair
    t.write_int(1, 8);
    shape_of(t, {1});
    t.write_float(9, 1.f);
  }));
  EXPECT_EQ(odd.code(), Code::kInvalidArgument);
}

TEST(TensorProto, ShapesReadBack) {
  std::vector<int64_t> dims;
  bool unknown_rank = true;
  int64_t written[] = {-1, 0, 3};
  Message m = shape_message(written, false);
  ASSERT_TRUE(from_shape_proto(m.shape(), dims, unknown_rank).ok());
  EXPECT_EQ(dims, (std::vector<int64_t>{-1, 0, 3}));
  EXPECT_FALSE(unknown_rank);
  m = shape_message({}, true);
  EXPECT_EQ(m.bytes, std::string("\x18\x01"));
  ASSERT_TRUE(from_shape_proto(m.shape(), dims, unknown_rank).ok());
  EXPECT_TRUE(unknown_rank);
  EXPECT_TRUE(dims.empty());
  m = message([](Writer& w) { w.write_message(2, [](Writer& d) { d.write_int(1, -2); }); });
  EXPECT_EQ(from_shape_proto(m.shape(), dims, unknown_rank).message(),
            "TensorShapeProto: dimension -2 is negative");
  // Issue 12, item 9: dims whose product overflows int64 are refused, as TensorFlow refuses them; a zero
  // after huge dims that fit is a legal empty shape.
  int64_t overflowing[] = {int64_t{1} << 32, -1, int64_t{1} << 31, 0};
  m = shape_message(overflowing, false);
  EXPECT_EQ(from_shape_proto(m.shape(), dims, unknown_rank).message(),
            "TensorShapeProto: shape [4294967296,-1,2147483648,0] has more than 2^63 - 1 elements");
  int64_t empty[] = {3037000500, 3037000499, 0};
  m = shape_message(empty, false);
  EXPECT_TRUE(from_shape_proto(m.shape(), dims, unknown_rank).ok());
}

TEST(TensorProto, BadTensorsAreInvalidArgument) {
  EXPECT_EQ(read_error(message([](Writer& t) {
              t.write_int(1, 1);
              shape_of(t, {2});
              t.write_bytes(4, "abc");
            })).message(),
            "TensorProto.tensor_content has 3 bytes; a float32 tensor of shape [2] needs 8");
  Status huge = read_error(message([](Writer& t) {  // a splat asking for 2^40 floats
    t.write_int(1, 1);
    shape_of(t, {int64_t{1} << 40});
    t.write_float(5, 1.0f);
  }));
  EXPECT_EQ(huge.code(), Code::kInvalidArgument);
  EXPECT_EQ(
      huge.message(),
      "TensorProto of shape [1099511627776] and dtype float32 would expand its listed values to more than "
      "1073741824 bytes");
  EXPECT_EQ(read_error(message([](Writer& t) {
              t.write_int(1, 3);
              shape_of(t, {1});
              t.write_int(7, 1);
              t.write_int(7, 2);
            })).message(),
            "TensorProto lists 2 values for a int32 tensor of shape [1] (1 element(s))");
  EXPECT_EQ(read_error(message([](Writer& t) { t.write_int(1, 20); })).message(),
            "TensorProto has DataType 20, which ember does not support");
  EXPECT_EQ(read_error(message([](Writer& t) {  // strings: a length past the bytes
              t.write_int(1, 7);
              shape_of(t, {1});
              t.write_bytes(4, std::string("\x05"
                                           "ab",
                                           3));
            }))
                .message(),
            "TensorProto: string tensor_content is shorter than its lengths say");
  EXPECT_EQ(read_error(message([](Writer& t) {
              t.write_int(1, 1);
              t.write_message(2, [](Writer& s) { s.write_bool(3, true); });
            })).message(),
            "TensorProto has a shape of unknown rank");
  EXPECT_EQ(read_error(message([](Writer& t) {
              t.write_int(1, 1);
              shape_of(t, {-1});
            })).message(),
            "TensorProto: dimension -1 is negative");
  // tensor_content as a varint: an unknown field to protobuf, so a float scalar of no values, zero.
  EXPECT_EQ(read_ok(message([](Writer& t) {
              t.write_int(1, 1);
              t.write_int(4, 1);
            })).to_vector<float>(),
            std::vector<float>{0});
}

}  // namespace
}  // namespace ember
