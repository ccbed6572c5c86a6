// The protobuf wire format, written and read by hand: just enough to exchange TensorFlow's GraphDef
// without a protobuf library. A message is a run of fields; each is a tag (field number << 3 | wire type)
// and a value: a varint, 4 or 8 little-endian bytes, or a varint length and that many bytes (strings,
// nested messages, packed repeated numbers). Readers never trust a length: every malformed input is a
// DataLoss Status naming the byte offset, never a crash.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/status.h"

namespace ember::proto {

enum class WireType : uint8_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

/// Appends fields to a buffer. It writes what it is told: proto3 writers leave out fields that hold
/// their default value, except oneof members, so that choice is the caller's.
class Writer {
 public:
  void write_varint(int field, uint64_t value);
  /// int64/int32/enum: negative values are sign-extended to ten bytes, as protobuf does.
  void write_int(int field, int64_t value) { write_varint(field, static_cast<uint64_t>(value)); }
  void write_bool(int field, bool value) { write_varint(field, value ? 1 : 0); }
  void write_float(int field, float value);
  void write_bytes(int field, std::string_view bytes);
  /// A nested message: `fill(Writer&)` writes its fields.
  template <typename Fill>
  void write_message(int field, Fill&& fill) {
    Writer nested;
    fill(nested);
    write_bytes(field, nested.buffer_);
  }
  /// A packed repeated int64 (one length-delimited run of varints); nothing when `values` is empty.
  void write_packed_ints(int field, std::span<const int64_t> values);

  const std::string& buffer() const { return buffer_; }
  std::string take() { return std::move(buffer_); }

 private:
  void put_tag(int field, WireType type);
  void put_varint(uint64_t value);
  std::string buffer_;
};

/// One field as read.
struct Field {
  uint32_t number = 0;
  WireType wire_type = WireType::kVarint;
  size_t offset = 0;        // of the tag, counted from the start of the outermost buffer
  uint64_t scalar = 0;      // the varint, fixed32 or fixed64 payload
  std::string_view bytes;   // the length-delimited payload
  size_t bytes_offset = 0;  // where `bytes` starts, from the start of the outermost buffer

  int64_t as_int64() const { return static_cast<int64_t>(scalar); }
  /// int32 and enum fields: the low 32 bits (protobuf truncates the same way).
  int32_t as_int32() const { return static_cast<int32_t>(static_cast<uint32_t>(scalar)); }
  bool as_bool() const { return scalar != 0; }
  float as_float() const;
  double as_double() const;
};

/// Reads the fields of one message in order.
class Reader {
 public:
  /// `base_offset` is where `data` starts in the outermost buffer, for error messages.
  explicit Reader(std::string_view data, size_t base_offset = 0) : data_(data), base_(base_offset) {}
  /// The fields of a nested message held in `field`.
  explicit Reader(const Field& field) : Reader(field.bytes, field.bytes_offset) {}

  bool done() const { return pos_ >= data_.size(); }
  /// Reads the next field; DataLoss on a truncated varint, a length past the end, field number 0 or an
  /// unsupported wire type (groups).
  Status next(Field& field);

 private:
  Status read_varint(uint64_t& value);
  std::string_view data_;
  size_t base_;
  size_t pos_ = 0;
};

/// DataLoss unless `field` has wire type `expected`; `what` names the field ("NodeDef.name").
Status expect(const Field& field, WireType expected, std::string_view what);

/// A `string` field (length-delimited, valid UTF-8, as protobuf requires of strings); DataLoss otherwise.
Status read_string(const Field& field, std::string_view what, std::string_view& out);
bool is_valid_utf8(std::string_view text);

/// Repeated numbers arrive packed (one length-delimited run) or one per field; both append to `out`.
Status read_repeated_ints(const Field& field, std::string_view what, std::vector<int64_t>& out);
Status read_repeated_floats(const Field& field, std::string_view what, std::vector<float>& out);
Status read_repeated_doubles(const Field& field, std::string_view what, std::vector<double>& out);

}  // namespace ember::proto
