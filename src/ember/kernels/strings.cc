#include "ember/kernels/strings.h"

#include <cstring>
#include <utility>

namespace ember::kernels {
namespace {

// Note [FarmHash fingerprint]
// TensorFlow hashes strings into buckets with farmhash::Fingerprint64, which is FarmHash's "na" variant of
// Hash64 (CityHash's structure: lengths up to 64 bytes mix a few words; longer strings run a 64-byte
// block loop over two 128-bit states). The constants and steps are FarmHash's published algorithm; the
// differential test compares buckets with TensorFlow for lengths 0..200.
constexpr uint64_t k0 = 0xc3a5c85c97cb3127ULL;
constexpr uint64_t k1 = 0xb492b66fbe98f273ULL;
constexpr uint64_t k2 = 0x9ae16a3b2f90404fULL;

uint64_t fetch64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;  // x86-64 is little-endian, as FarmHash's reference reads
}
uint32_t fetch32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t rotate(uint64_t v, int shift) { return shift == 0 ? v : (v >> shift) | (v << (64 - shift)); }
uint64_t shift_mix(uint64_t v) { return v ^ (v >> 47); }

uint64_t hash_len16(uint64_t u, uint64_t v, uint64_t mul) {
  uint64_t a = (u ^ v) * mul;
  a ^= a >> 47;
  uint64_t b = (v ^ a) * mul;
  b ^= b >> 47;
  return b * mul;
}

uint64_t hash_len0to16(const char* s, size_t len) {
  if (len >= 8) {
    const uint64_t mul = k2 + len * 2;
    const uint64_t a = fetch64(s) + k2;
    const uint64_t b = fetch64(s + len - 8);
    const uint64_t c = rotate(b, 37) * mul + a;
    const uint64_t d = (rotate(a, 25) + b) * mul;
    return hash_len16(c, d, mul);
  }
  if (len >= 4) {
    const uint64_t mul = k2 + len * 2;
    const uint64_t a = fetch32(s);
    return hash_len16(len + (a << 3), fetch32(s + len - 4), mul);
  }
  if (len > 0) {
    const uint8_t a = static_cast<uint8_t>(s[0]);
    const uint8_t b = static_cast<uint8_t>(s[len >> 1]);
    const uint8_t c = static_cast<uint8_t>(s[len - 1]);
    const uint32_t y = static_cast<uint32_t>(a) + (static_cast<uint32_t>(b) << 8);
    const uint32_t z = static_cast<uint32_t>(len) + (static_cast<uint32_t>(c) << 2);
    return shift_mix(y * k2 ^ z * k0) * k2;
  }
  return k2;
}

uint64_t hash_len17to32(const char* s, size_t len) {
  const uint64_t mul = k2 + len * 2;
  const uint64_t a = fetch64(s) * k1;
  const uint64_t b = fetch64(s + 8);
  const uint64_t c = fetch64(s + len - 8) * mul;
  const uint64_t d = fetch64(s + len - 16) * k2;
  return hash_len16(rotate(a + b, 43) + rotate(c, 30) + d, a + rotate(b + k2, 18) + c, mul);
}

std::pair<uint64_t, uint64_t> weak_hash32(uint64_t w, uint64_t x, uint64_t y, uint64_t z, uint64_t a,
                                          uint64_t b) {
  a += w;
  b = rotate(b + a + z, 21);
  const uint64_t c = a;
  a += x;
  a += y;
  b += rotate(a, 44);
  return {a + z, b + c};
}
std::pair<uint64_t, uint64_t> weak_hash32(const char* s, uint64_t a, uint64_t b) {
  return weak_hash32(fetch64(s), fetch64(s + 8), fetch64(s + 16), fetch64(s + 24), a, b);
}

uint64_t hash_len33to64(const char* s, size_t len) {
  const uint64_t mul = k2 + len * 2;
  const uint64_t a = fetch64(s) * k2;
  const uint64_t b = fetch64(s + 8);
  const uint64_t c = fetch64(s + len - 8) * mul;
  const uint64_t d = fetch64(s + len - 16) * k2;
  const uint64_t y = rotate(a + b, 43) + rotate(c, 30) + d;
  const uint64_t z = hash_len16(y, a + rotate(b + k2, 18) + c, mul);
  const uint64_t e = fetch64(s + 16) * mul;
  const uint64_t f = fetch64(s + 24);
  const uint64_t g = (y + fetch64(s + len - 32)) * mul;
  const uint64_t h = (z + fetch64(s + len - 24)) * mul;
  return hash_len16(rotate(e + f, 43) + rotate(g, 30) + h, e + rotate(f + a, 18) + g, mul);
}

}  // namespace

uint64_t fingerprint64(std::string_view str) {
  const char* s = str.data();
  const size_t len = str.size();
  if (len <= 16) return hash_len0to16(s, len);
  if (len <= 32) return hash_len17to32(s, len);
  if (len <= 64) return hash_len33to64(s, len);
  constexpr uint64_t seed = 81;
  uint64_t x = seed;
  uint64_t y = seed * k1 + 113;
  uint64_t z = shift_mix(y * k2 + 113) * k2;
  std::pair<uint64_t, uint64_t> v{0, 0}, w{0, 0};
  x = x * k2 + fetch64(s);
  const char* end = s + ((len - 1) / 64) * 64;
  const char* last64 = end + ((len - 1) & 63) - 63;
  do {
    x = rotate(x + y + v.first + fetch64(s + 8), 37) * k1;
    y = rotate(y + v.second + fetch64(s + 48), 42) * k1;
    x ^= w.second;
    y += v.first + fetch64(s + 40);
    z = rotate(z + w.first, 33) * k1;
    v = weak_hash32(s, v.second * k1, x + w.first);
    w = weak_hash32(s + 32, z + w.second, y + fetch64(s + 16));
    std::swap(z, x);
    s += 64;
  } while (s != end);
  const uint64_t mul = k1 + ((z & 0xff) << 1);
  s = last64;
  w.first += ((len - 1) & 63);
  v.first += w.first;
  w.first += v.first;
  x = rotate(x + y + v.first + fetch64(s + 8), 37) * mul;
  y = rotate(y + v.second + fetch64(s + 48), 42) * mul;
  x ^= w.second * 9;
  y += v.first * 9 + fetch64(s + 40);
  z = rotate(z + w.first, 33) * mul;
  v = weak_hash32(s, v.second * mul, x + w.first);
  w = weak_hash32(s + 32, z + w.second, y + fetch64(s + 16));
  std::swap(z, x);
  return hash_len16(hash_len16(v.first, w.first, mul) + shift_mix(y) * k0 + z,
                    hash_len16(v.second, w.second, mul) + x, mul);
}

int64_t utf8_length(std::string_view s) {
  int64_t n = 0;
  for (char c : s) n += is_utf8_lead(static_cast<unsigned char>(c));
  return n;
}

size_t utf8_offset(std::string_view s, int64_t index) {
  int64_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (is_utf8_lead(static_cast<unsigned char>(s[i]))) {
      if (seen == index) return i;
      ++seen;
    }
  }
  return s.size();
}

void encode_unicode(int32_t cp, UnicodeEncoding encoding, std::string* out) {
  const auto put = [out](uint32_t byte) { out->push_back(static_cast<char>(byte & 0xFF)); };
  const uint32_t c = static_cast<uint32_t>(cp);
  switch (encoding) {
    case UnicodeEncoding::kUtf8:
      if (c < 0x80) {
        put(c);
      } else if (c < 0x800) {
        put(0xC0 | (c >> 6));
        put(0x80 | (c & 0x3F));
      } else if (c < 0x10000) {
        put(0xE0 | (c >> 12));
        put(0x80 | ((c >> 6) & 0x3F));
        put(0x80 | (c & 0x3F));
      } else {
        put(0xF0 | (c >> 18));
        put(0x80 | ((c >> 12) & 0x3F));
        put(0x80 | ((c >> 6) & 0x3F));
        put(0x80 | (c & 0x3F));
      }
      return;
    case UnicodeEncoding::kUtf16Be:
      if (c < 0x10000) {
        put(c >> 8);
        put(c);
      } else {
        const uint32_t v = c - 0x10000, high = 0xD800 | (v >> 10), low = 0xDC00 | (v & 0x3FF);
        put(high >> 8);
        put(high);
        put(low >> 8);
        put(low);
      }
      return;
    case UnicodeEncoding::kUtf32Be:
      put(c >> 24);
      put(c >> 16);
      put(c >> 8);
      put(c);
      return;
  }
}

// Note [Ill-formed UTF-8]
// The well-formed byte sequences are those of Unicode's table 3-7: each lead byte fixes the length and the
// range of the second byte (which excludes overlong forms, surrogates and values past U+10FFFF), later
// bytes are 80..BF. An ill-formed sequence is replaced by one U+FFFD per *maximal subpart*: the longest
// prefix that could still begin a well-formed sequence, or the one byte where none can (Unicode's
// recommended practice, which ICU follows, and so TensorFlow's UnicodeDecode): "\xE2\x82" cut off at the
// end of a string is one error, "\xED\xA0\x80" (a surrogate) is three.
int32_t decode_utf8(std::string_view s, size_t* pos) {
  const size_t i = *pos;
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) {
    *pos = i + 1;
    return c;
  }
  int extra;
  int32_t cp;
  unsigned char second_low = 0x80, second_high = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    extra = 1, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    extra = 2, cp = c & 0x0F;
    if (c == 0xE0) second_low = 0xA0;   // below: overlong
    if (c == 0xED) second_high = 0x9F;  // above: surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    extra = 3, cp = c & 0x07;
    if (c == 0xF0) second_low = 0x90;   // below: overlong
    if (c == 0xF4) second_high = 0x8F;  // above: past U+10FFFF
  } else {
    *pos = i + 1;  // a continuation byte, or a lead byte no well-formed sequence has (C0, C1, F5..FF)
    return -1;
  }
  for (int k = 1; k <= extra; ++k) {
    const unsigned char low = k == 1 ? second_low : 0x80, high = k == 1 ? second_high : 0xBF;
    if (i + k >= s.size() || byte(i + k) < low || byte(i + k) > high) {
      *pos = i + k;  // the maximal subpart: the bytes that could still begin a character
      return -1;
    }
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  *pos = i + 1 + extra;
  return cp;
}

std::vector<std::string_view> split(std::string_view s, std::string_view sep, int64_t maxsplit) {
  std::vector<std::string_view> pieces;
  if (sep.empty()) {
    // As TensorFlow: after `maxsplit` pieces the rest (whitespace skipped before it, kept after it) is the
    // last piece, even when empty.
    const auto space = [&](size_t k) { return is_ascii_space(static_cast<unsigned char>(s[k])); };
    if (maxsplit == 0) return {s};  // unsplit, whitespace and all
    size_t i = 0;
    while (i < s.size() && space(i)) ++i;
    while (i < s.size()) {
      size_t j = i;
      while (j < s.size() && !space(j)) ++j;
      pieces.push_back(s.substr(i, j - i));
      i = j;
      while (i < s.size() && space(i)) ++i;
      if (maxsplit >= 0 && static_cast<int64_t>(pieces.size()) == maxsplit) {
        pieces.push_back(s.substr(i));
        break;
      }
    }
    return pieces;
  }
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(pieces.size()) < maxsplit) {
    const size_t at = s.find(sep, start);
    if (at == std::string_view::npos) break;
    pieces.push_back(s.substr(start, at - start));
    start = at + sep.size();
  }
  pieces.push_back(s.substr(start));
  return pieces;
}

std::vector<int64_t> broadcast_sources(const Shape& in, const Shape& out) {
  const int64_t n = out.num_elements();
  std::vector<int64_t> src(static_cast<size_t>(n), 0);
  const int rank = out.rank();
  const int offset = rank - in.rank();
  std::vector<int64_t> in_strides(static_cast<size_t>(rank), 0);
  int64_t stride = 1;
  for (int d = in.rank() - 1; d >= 0; --d) {
    in_strides[static_cast<size_t>(d + offset)] = in.dim(d) == 1 ? 0 : stride;
    stride *= in.dim(d);
  }
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  int64_t at = 0;
  for (int64_t i = 0; i < n; ++i) {
    src[static_cast<size_t>(i)] = at;
    for (int d = rank - 1; d >= 0; --d) {
      const size_t u = static_cast<size_t>(d);
      if (++index[u] < out.dim(d)) {
        at += in_strides[u];
        break;
      }
      at -= in_strides[u] * (out.dim(d) - 1);
      index[u] = 0;
    }
  }
  return src;
}

}  // namespace ember::kernels
