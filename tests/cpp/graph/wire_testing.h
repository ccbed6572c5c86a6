// Test-only: protobuf wire bytes written field by field, for inputs the generated classes cannot make
// (malformed bytes, fields TensorFlow writes that ember does not declare, repeated scalars unpacked).
// The readers under test parse these bytes with libprotobuf.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace ember::testing {

class Writer {
 public:
  void write_int(int field, int64_t value) {
    tag(field, 0);
    varint(static_cast<uint64_t>(value));
  }
  void write_bool(int field, bool value) { write_int(field, value ? 1 : 0); }
  void write_float(int field, float value) {
    tag(field, 5);
    char raw[4];
    std::memcpy(raw, &value, 4);
    out_.append(raw, 4);
  }
  void write_bytes(int field, std::string_view bytes) {
    tag(field, 2);
    varint(bytes.size());
    out_.append(bytes);
  }
  void write_message(int field, const std::function<void(Writer&)>& fill) {
    Writer inner;
    fill(inner);
    write_bytes(field, inner.out_);
  }
  void write_packed_ints(int field, std::span<const int64_t> values) {
    Writer inner;
    for (int64_t v : values) inner.varint(static_cast<uint64_t>(v));
    write_bytes(field, inner.out_);
  }
  std::string take() { return std::move(out_); }

 private:
  void tag(int field, int wire_type) { varint((static_cast<uint64_t>(field) << 3) | wire_type); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  std::string out_;
};

}  // namespace ember::testing
