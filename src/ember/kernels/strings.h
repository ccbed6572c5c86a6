// Byte-string algorithms behind the tf.strings ops (ops/strings.cc): UTF-8 decoding, FarmHash's 64-bit
// fingerprint (TensorFlow's StringToHashBucketFast), case mapping and splitting. Plain functions on
// std::string_view so they are testable without tensors.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/shape.h"

namespace ember::kernels {

/// FarmHash's Fingerprint64 (its "na" Hash64): the value TensorFlow buckets strings by, so
/// `fingerprint64(s) % num_buckets` matches tf.strings.to_hash_bucket_fast.
uint64_t fingerprint64(std::string_view s);

/// Whether byte `c` starts a UTF-8 character (is not a continuation byte 10xxxxxx): TensorFlow counts
/// UTF8_CHAR units this way.
inline bool is_utf8_lead(unsigned char c) { return (c & 0xC0) != 0x80; }
/// Number of UTF-8 characters (lead bytes) of `s`.
int64_t utf8_length(std::string_view s);
/// The byte offset of character `index` of `s` (its size when index == the character count).
size_t utf8_offset(std::string_view s, int64_t index);

/// Decodes the code point at `s[*pos]`, advancing `*pos`; returns -1 for an ill-formed sequence (then
/// `*pos` advances past its maximal subpart: Note [Ill-formed UTF-8] in strings.cc).
int32_t decode_utf8(std::string_view s, size_t* pos);

/// Whether `cp` is a Unicode scalar value (in range and not a surrogate): what UnicodeEncode can encode.
inline bool is_unicode_scalar(int64_t cp) {
  return cp >= 0 && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
}
/// Appends the Unicode scalar value `cp` to `out` in UTF-8, UTF-16-BE (surrogate pairs) or UTF-32-BE.
enum class UnicodeEncoding { kUtf8, kUtf16Be, kUtf32Be };
void encode_unicode(int32_t cp, UnicodeEncoding encoding, std::string* out);

/// Python's str.split semantics on bytes: an empty `sep` splits on runs of ASCII whitespace and drops empty
/// pieces; otherwise every occurrence of `sep` splits. At most `maxsplit` splits when it is >= 0.
std::vector<std::string_view> split(std::string_view s, std::string_view sep, int64_t maxsplit);

/// For each element of `out`, the index of the element of `in` it reads under NumPy broadcasting (`in`
/// broadcasts to `out`).
std::vector<int64_t> broadcast_sources(const Shape& in, const Shape& out);

/// ASCII whitespace (' ', \t, \n, \v, \f, \r), as TensorFlow's StringStrip.
inline bool is_ascii_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

}  // namespace ember::kernels
