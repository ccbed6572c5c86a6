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

TEST(Strings, BroadcastSources) {
  EXPECT_EQ(broadcast_sources(Shape({2, 1}), Shape({2, 3})), (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(broadcast_sources(Shape({3}), Shape({2, 3})), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(broadcast_sources(Shape(), Shape({2})), (std::vector<int64_t>{0, 0}));
}

}  // namespace
}  // namespace ember::kernels
