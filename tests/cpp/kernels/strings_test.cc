// kernels/strings.h: FarmHash's fingerprint against values TensorFlow computed, Python's split semantics,
// UTF-8 decoding and the broadcasting index map.
#include "ember/kernels/strings.h"

#include <gtest/gtest.h>

namespace ember::kernels {
namespace {

TEST(Strings, FingerprintMatchesTensorFlowsBuckets) {
  // tf.strings.to_hash_bucket_fast(["a", "hello", ""], 2**63 - 1)
  constexpr uint64_t kBuckets = (uint64_t{1} << 63) - 1;
  EXPECT_EQ(fingerprint64("a") % kBuckets, 3694432073954588132ULL);
  EXPECT_EQ(fingerprint64("hello") % kBuckets, 3786372426573024489ULL);
  EXPECT_EQ(fingerprint64("") % kBuckets, 1936946117179621456ULL);
}

TEST(Strings, SplitOnWhitespaceAndSeparators) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(split("  a b  c ", "", -1), (V{"a", "b", "c"}));
  EXPECT_EQ(split("  x  y  ", "", 1), (V{"x", "y  "}));
  EXPECT_EQ(split("  x  y  ", "", 2), (V{"x", "y", ""}));
  EXPECT_EQ(split(" a ", "", 0), (V{" a "}));
  EXPECT_EQ(split("a,,b", ",", -1), (V{"a", "", "b"}));
  EXPECT_EQ(split("a,,b", ",", 1), (V{"a", ",b"}));
  EXPECT_EQ(split("", ",", -1), (V{""}));
  EXPECT_EQ(split("", "", -1), (V{}));
}

TEST(Strings, Utf8) {
  const std::string s = "h\xc3\xa9\xe2\x82\xac";  // h, e-acute, euro sign
  EXPECT_EQ(utf8_length(s), 3);
  EXPECT_EQ(utf8_offset(s, 2), 3u);
  size_t pos = 0;
  EXPECT_EQ(decode_utf8(s, &pos), 'h');
  EXPECT_EQ(decode_utf8(s, &pos), 0xe9);
  EXPECT_EQ(decode_utf8(s, &pos), 0x20ac);
  EXPECT_EQ(pos, s.size());
  const std::string bad = "\xc3";  // truncated
  pos = 0;
  EXPECT_EQ(decode_utf8(bad, &pos), -1);
  EXPECT_EQ(pos, 1u);
  const std::string overlong = "\xc0\x80";
  pos = 0;
  EXPECT_EQ(decode_utf8(overlong, &pos), -1);
}

TEST(Strings, EncodeUnicode) {
  // Each scalar value round-trips through UTF-8 (every encoded length: 1 to 4 bytes).
  for (int32_t cp : {0x41, 0xe9, 0x20ac, 0x1f600, 0x10ffff}) {
    std::string s;
    encode_unicode(cp, UnicodeEncoding::kUtf8, &s);
    size_t pos = 0;
    EXPECT_EQ(decode_utf8(s, &pos), cp);
    EXPECT_EQ(pos, s.size());
  }
  std::string utf16;
  encode_unicode(0x1f600, UnicodeEncoding::kUtf16Be, &utf16);  // a surrogate pair
  EXPECT_EQ(utf16, std::string("\xd8\x3d\xde\x00", 4));
  std::string utf32;
  encode_unicode(0xe9, UnicodeEncoding::kUtf32Be, &utf32);
  EXPECT_EQ(utf32, std::string("\x00\x00\x00\xe9", 4));
  EXPECT_FALSE(is_unicode_scalar(0xd800));
  EXPECT_FALSE(is_unicode_scalar(0x110000));
  EXPECT_FALSE(is_unicode_scalar(-1));
  EXPECT_TRUE(is_unicode_scalar(0x10ffff));
}

TEST(Strings, BroadcastSources) {
  EXPECT_EQ(broadcast_sources(Shape({2, 1}), Shape({2, 3})), (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(broadcast_sources(Shape({3}), Shape({2, 3})), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(broadcast_sources(Shape(), Shape({2})), (std::vector<int64_t>{0, 0}));
}

}  // namespace
}  // namespace ember::kernels
