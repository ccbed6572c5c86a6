#include "ember/graph/proto_wire.h"

#include <gtest/gtest.h>

namespace ember::proto {
namespace {

TEST(ProtoWire, WritesVarintsTagsAndLengths) {
  Writer w;
  w.write_varint(1, 150);  // the protobuf documentation's example: 08 96 01
  w.write_int(2, -1);      // negative ints take ten bytes
  w.write_bytes(3, "hi");
  w.write_float(4, 1.0f);
  w.write_message(5, [](Writer& m) { m.write_bool(1, true); });
  int64_t packed[] = {1, 300};
  w.write_packed_ints(6, packed);
  w.write_packed_ints(7, {});  // nothing for an empty list
  constexpr char kExpected[] =
      "\x08\x96\x01"
      "\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"
      "\x1a\x02hi"
      "\x25\x00\x00\x80\x3f"
      "\x2a\x02\x08\x01"
      "\x32\x03\x01\xac\x02";
  EXPECT_EQ(w.buffer(), std::string(kExpected, sizeof(kExpected) - 1));
}

TEST(ProtoWire, ReadsBackWhatItWrites) {
  Writer w;
  w.write_varint(1, 150);
  w.write_int(2, -7);
  w.write_bytes(3, "hello");
  w.write_float(4, 2.5f);
  Reader r(w.buffer());
  Field f;
  ASSERT_TRUE(r.next(f).ok());
  EXPECT_EQ(f.number, 1u);
  EXPECT_EQ(f.scalar, 150u);
  ASSERT_TRUE(r.next(f).ok());
  EXPECT_EQ(f.as_int64(), -7);
  ASSERT_TRUE(r.next(f).ok());
  EXPECT_EQ(f.bytes, "hello");
  EXPECT_EQ(f.bytes_offset, 16u);
  ASSERT_TRUE(r.next(f).ok());
  EXPECT_EQ(f.wire_type, WireType::kFixed32);
  EXPECT_EQ(f.as_float(), 2.5f);
  EXPECT_TRUE(r.done());
}

TEST(ProtoWire, RepeatedNumbersArrivePackedOrOneByOne) {
  Writer w;
  int64_t values[] = {3, -1, 1000};
  w.write_packed_ints(1, values);
  w.write_varint(1, 9);
  std::vector<int64_t> out;
  Reader r(w.buffer());
  Field f;
  while (!r.done()) {
    ASSERT_TRUE(r.next(f).ok());
    ASSERT_TRUE(read_repeated_ints(f, "x", out).ok());
  }
  EXPECT_EQ(out, (std::vector<int64_t>{3, -1, 1000, 9}));

  std::vector<float> floats;
  Field packed_floats;
  packed_floats.number = 5;
  packed_floats.wire_type = WireType::kLengthDelimited;
  packed_floats.bytes = std::string_view("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);
  ASSERT_TRUE(read_repeated_floats(packed_floats, "float_val", floats).ok());
  EXPECT_EQ(floats, (std::vector<float>{1.0f, 2.0f}));
  packed_floats.bytes = std::string_view("\x00\x00\x80", 3);
  EXPECT_EQ(read_repeated_floats(packed_floats, "float_val", floats).code(), Code::kDataLoss);
}

TEST(ProtoWire, MalformedInputIsDataLossNamingTheByte) {
  auto first_error = [](std::string_view bytes) {
    Reader r(bytes);
    Field f;
    while (!r.done()) {
      Status s = r.next(f);
      if (!s.ok()) return s;
    }
    return Status::OK();
  };
  Status truncated = first_error(std::string_view("\x08\x96", 2));
  EXPECT_EQ(truncated.code(), Code::kDataLoss);
  EXPECT_EQ(truncated.message(), "truncated varint at byte 1 (the message ends at byte 2)");
  Status too_long = first_error("\x1a\x05hi");
  EXPECT_EQ(too_long.code(), Code::kDataLoss);
  EXPECT_EQ(too_long.message(), "field 3 at byte 0 has length 5 but only 2 byte(s) remain in its message");
  EXPECT_EQ(first_error(std::string_view("\x00\x01", 2)).code(), Code::kDataLoss);  // field number 0
  EXPECT_NE(first_error("\x0b").message().find("wire type 3"), std::string::npos);  // a group
  EXPECT_EQ(first_error("\x0d\x01\x02").code(), Code::kDataLoss);                   // fixed32 cut short
  EXPECT_EQ(first_error("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01").message(),
            "varint at byte 1 is longer than 10 bytes");

  Field name;
  name.number = 1;
  name.wire_type = WireType::kVarint;
  Status wrong = expect(name, WireType::kLengthDelimited, "NodeDef.name");
  EXPECT_EQ(wrong.code(), Code::kDataLoss);
  EXPECT_EQ(wrong.message(),
            "NodeDef.name (field 1) at byte 0 should have wire type length-delimited, got varint");
}

TEST(ProtoWire, StringsMustBeUtf8) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("ascii"));
  EXPECT_TRUE(is_valid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_FALSE(is_valid_utf8("\xff"));
  EXPECT_FALSE(is_valid_utf8("\xc3"));              // cut short
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  Field f;
  f.wire_type = WireType::kLengthDelimited;
  f.bytes = "\xce";
  std::string_view out;
  EXPECT_EQ(read_string(f, "NodeDef.op", out).message(), "NodeDef.op at byte 0 is not valid UTF-8");
  f.bytes = "Square";
  ASSERT_TRUE(read_string(f, "NodeDef.op", out).ok());
  EXPECT_EQ(out, "Square");
}

}  // namespace
}  // namespace ember::proto
