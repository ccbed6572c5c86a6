#include "ember/graph/proto_wire.h"

#include <bit>
#include <cstring>

namespace ember::proto {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the wire format's fixed-width values are little-endian");

const char* wire_type_name(WireType t) {
  switch (t) {
    case WireType::kVarint:
      return "varint";
    case WireType::kFixed64:
      return "fixed64";
    case WireType::kLengthDelimited:
      return "length-delimited";
    case WireType::kFixed32:
      return "fixed32";
  }
  return "?";
}

template <typename T, typename Decode>
Status read_repeated(const Field& field, std::string_view what, WireType element_type, Decode decode,
                     std::vector<T>& out) {
  if (field.wire_type == element_type) {
    out.push_back(decode(field));
    return Status::OK();
  }
  EMBER_RETURN_IF_ERROR(expect(field, WireType::kLengthDelimited, what));
  // A packed run: the payload is the elements' values back to back, without tags.
  Field element;
  element.number = field.number;
  element.wire_type = element_type;
  size_t pos = 0;
  const std::string_view data = field.bytes;
  while (pos < data.size()) {
    element.offset = field.bytes_offset + pos;
    if (element_type == WireType::kVarint) {
      uint64_t value = 0;
      for (int shift = 0;; shift += 7) {
        if (pos >= data.size() || shift >= 64)
          return make_error(Code::kDataLoss, "malformed varint in packed ", what, " at byte ",
                            element.offset);
        uint8_t byte = static_cast<uint8_t>(data[pos++]);
        value |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if (!(byte & 0x80)) break;
      }
      element.scalar = value;
    } else {
      size_t width = element_type == WireType::kFixed32 ? 4 : 8;
      if (data.size() - pos < width)
        return make_error(Code::kDataLoss, "packed ", what, " at byte ", field.bytes_offset, " has ",
                          data.size(), " bytes, not a multiple of ", width);
      uint64_t value = 0;
      std::memcpy(&value, data.data() + pos, width);
      pos += width;
      element.scalar = value;
    }
    out.push_back(decode(element));
  }
  return Status::OK();
}

}  // namespace

void Writer::put_varint(uint64_t value) {
  while (value >= 0x80) {
    buffer_.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  buffer_.push_back(static_cast<char>(value));
}

void Writer::put_tag(int field, WireType type) {
  put_varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(type));
}

void Writer::write_varint(int field, uint64_t value) {
  put_tag(field, WireType::kVarint);
  put_varint(value);
}

void Writer::write_float(int field, float value) {
  put_tag(field, WireType::kFixed32);
  char bytes[4];
  std::memcpy(bytes, &value, 4);
  buffer_.append(bytes, 4);
}

void Writer::write_bytes(int field, std::string_view bytes) {
  put_tag(field, WireType::kLengthDelimited);
  put_varint(bytes.size());
  buffer_.append(bytes);
}

void Writer::write_packed_ints(int field, std::span<const int64_t> values) {
  if (values.empty()) return;
  Writer packed;
  for (int64_t v : values) packed.put_varint(static_cast<uint64_t>(v));
  write_bytes(field, packed.buffer_);
}

float Field::as_float() const {
  uint32_t bits = static_cast<uint32_t>(scalar);
  return std::bit_cast<float>(bits);
}

double Field::as_double() const { return std::bit_cast<double>(scalar); }

Status Reader::read_varint(uint64_t& value) {
  size_t start = pos_;
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= data_.size())
      return make_error(Code::kDataLoss, "truncated varint at byte ", base_ + start,
                        " (the message ends at byte ", base_ + data_.size(), ")");
    uint8_t byte = static_cast<uint8_t>(data_[pos_++]);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return Status::OK();
  }
  return make_error(Code::kDataLoss, "varint at byte ", base_ + start, " is longer than 10 bytes");
}

Status Reader::next(Field& field) {
  field = Field{};
  field.offset = base_ + pos_;
  uint64_t tag = 0;
  EMBER_RETURN_IF_ERROR(read_varint(tag));
  uint64_t number = tag >> 3;
  if (number == 0 || number > (1u << 29) - 1)
    return make_error(Code::kDataLoss, "invalid field number ", number, " at byte ", field.offset);
  field.number = static_cast<uint32_t>(number);
  uint8_t type = tag & 7;
  switch (type) {
    case 0:
      field.wire_type = WireType::kVarint;
      return read_varint(field.scalar);
    case 1:
    case 5: {
      size_t width = type == 1 ? 8 : 4;
      field.wire_type = type == 1 ? WireType::kFixed64 : WireType::kFixed32;
      if (data_.size() - pos_ < width)
        return make_error(Code::kDataLoss, "truncated ", width, "-byte value of field ", number, " at byte ",
                          field.offset);
      std::memcpy(&field.scalar, data_.data() + pos_, width);
      pos_ += width;
      return Status::OK();
    }
    case 2: {
      field.wire_type = WireType::kLengthDelimited;
      uint64_t length = 0;
      EMBER_RETURN_IF_ERROR(read_varint(length));
      if (length > data_.size() - pos_)
        return make_error(Code::kDataLoss, "field ", number, " at byte ", field.offset, " has length ",
                          length, " but only ", data_.size() - pos_, " byte(s) remain in its message");
      field.bytes = data_.substr(pos_, length);
      field.bytes_offset = base_ + pos_;
      pos_ += length;
      return Status::OK();
    }
    default:
      return make_error(Code::kDataLoss, "field ", number, " at byte ", field.offset, " has wire type ",
                        static_cast<int>(type),
                        ", which this reader does not support (3/4 are deprecated groups; 6/7 do not exist)");
  }
}

Status expect(const Field& field, WireType expected, std::string_view what) {
  if (field.wire_type == expected) return Status::OK();
  return make_error(Code::kDataLoss, what, " (field ", field.number, ") at byte ", field.offset,
                    " should have wire type ", wire_type_name(expected), ", got ",
                    wire_type_name(field.wire_type));
}

bool is_valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    size_t length;
    uint32_t code_point;
    if ((lead & 0xe0) == 0xc0) {
      length = 2, code_point = lead & 0x1f;
    } else if ((lead & 0xf0) == 0xe0) {
      length = 3, code_point = lead & 0x0f;
    } else if ((lead & 0xf8) == 0xf0) {
      length = 4, code_point = lead & 0x07;
    } else {
      return false;
    }
    if (text.size() - i < length) return false;
    for (size_t k = 1; k < length; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code_point = (code_point << 6) | (next & 0x3f);
    }
    static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};  // shorter is an overlong form
    if (code_point < kSmallest[length] || code_point > 0x10ffff ||
        (code_point >= 0xd800 && code_point <= 0xdfff))
      return false;
    i += length;
  }
  return true;
}

Status read_string(const Field& field, std::string_view what, std::string_view& out) {
  EMBER_RETURN_IF_ERROR(expect(field, WireType::kLengthDelimited, what));
  if (!is_valid_utf8(field.bytes))
    return make_error(Code::kDataLoss, what, " at byte ", field.offset, " is not valid UTF-8");
  out = field.bytes;
  return Status::OK();
}

Status read_repeated_ints(const Field& field, std::string_view what, std::vector<int64_t>& out) {
  return read_repeated<int64_t>(
      field, what, WireType::kVarint, [](const Field& f) { return f.as_int64(); }, out);
}

Status read_repeated_floats(const Field& field, std::string_view what, std::vector<float>& out) {
  return read_repeated<float>(
      field, what, WireType::kFixed32, [](const Field& f) { return f.as_float(); }, out);
}

Status read_repeated_doubles(const Field& field, std::string_view what, std::vector<double>& out) {
  return read_repeated<double>(
      field, what, WireType::kFixed64, [](const Field& f) { return f.as_double(); }, out);
}

}  // namespace ember::proto
