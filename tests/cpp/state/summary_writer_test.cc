#include "ember/state/summary_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>

#include "ember/event.pb.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

TensorRef floats(std::vector<float> values, Shape shape) {
  TensorRef t = TensorImpl::allocate(DType::kFloat32, shape).value();
  std::copy(values.begin(), values.end(), t->mutable_data<float>());
  return t;
}

TEST(SummaryWriter, HistogramBucketsAsTensorBoard) {
  // [1, 2, 2, 5] in 3 buckets: edges 1, 7/3, 11/3, 5; the maximum falls in the last bucket.
  std::vector<double> b = histogram_buckets(*floats({1, 2, 2, 5}, Shape({4})), 3);
  ASSERT_EQ(b.size(), 9u);
  EXPECT_DOUBLE_EQ(b[0], 1.0);
  EXPECT_DOUBLE_EQ(b[1], 1.0 + 4.0 / 3.0);
  EXPECT_EQ(b[2], 3.0);
  EXPECT_EQ(b[5], 0.0);
  EXPECT_EQ(b[7], 5.0);  // the last right edge is the maximum itself
  EXPECT_EQ(b[8], 1.0);
  // One distinct value: every bucket's edges are it, all counts in the last bucket.
  b = histogram_buckets(*floats({2.5f, 2.5f}, Shape({2})), 3);
  EXPECT_EQ(b, (std::vector<double>{2.5, 2.5, 0, 2.5, 2.5, 0, 2.5, 2.5, 2}));
  // Empty data: zeros; zero buckets: nothing.
  EXPECT_EQ(histogram_buckets(*floats({}, Shape({0})), 2), std::vector<double>(6, 0.0));
  EXPECT_TRUE(histogram_buckets(*floats({1, 2}, Shape({2})), 0).empty());
  // A NaN makes every edge NaN and every count 0 (TensorFlow's min and max propagate it).
  b = histogram_buckets(*floats({0, 1, NAN}, Shape({3})), 1);
  EXPECT_TRUE(std::isnan(b[0]) && std::isnan(b[1]));
  EXPECT_EQ(b[2], 0.0);
  // An infinite maximum: the first edge is still the minimum.
  b = histogram_buckets(*floats({0, INFINITY, 1}, Shape({3})), 2);
  EXPECT_EQ(b[0], 0.0);
  EXPECT_EQ(b[2], 2.0);
}

TEST(SummaryWriter, WavHeaderAndSamples) {
  float samples[] = {0.0f, 0.5f, -1.0f, 1.0f};
  std::string wav = encode_wav(samples, 2, 2, 8000);
  ASSERT_EQ(wav.size(), 44u + 8u);
  EXPECT_EQ(wav.substr(0, 4), "RIFF");
  EXPECT_EQ(wav.substr(8, 8), "WAVEfmt ");
  auto s16 = [&](size_t at) { return static_cast<int16_t>(uint8_t(wav[at]) | (uint8_t(wav[at + 1]) << 8)); };
  EXPECT_EQ(s16(44), 0);
  EXPECT_EQ(s16(46), 16384);
  EXPECT_EQ(s16(48), -32768);
  EXPECT_EQ(s16(50), 32767);  // +1.0 saturates
}

TEST(SummaryWriter, PngInflatesToTheRows) {
  uint8_t pixels[] = {1, 2, 3, 4, 5, 6};  // 1 x 2 RGB
  std::string png = encode_png(pixels, 1, 2, 3);
  ASSERT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  size_t idat = png.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  uint32_t n = (uint8_t(png[idat - 4]) << 24) | (uint8_t(png[idat - 3]) << 16) |
               (uint8_t(png[idat - 2]) << 8) | uint8_t(png[idat - 1]);
  std::string raw(7, '\0');
  uLongf raw_size = raw.size();
  ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(raw.data()), &raw_size,
                       reinterpret_cast<const Bytef*>(png.data() + idat + 4), n),
            Z_OK);
  EXPECT_EQ(raw, std::string("\0\1\2\3\4\5\6", 7));
}

TEST(SummaryWriter, EventFileHoldsVersionThenSummaries) {
  fs::path dir = fs::temp_directory_path() / ("ember_events_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto writer = EventFileWriter::create(dir.string(), 10, 120000, ".v2");
  ASSERT_TRUE(writer.ok()) << writer.status().to_string();
  TensorRef value = floats({0.5f}, Shape());
  SummaryRequest request;
  request.step = 7;
  request.tensor = value.get();
  request.tag = "loss";
  ASSERT_TRUE((*writer)->write_summary(request).ok());
  ASSERT_TRUE((*writer)->close().ok());
  EXPECT_EQ((*writer)->write_summary(request).code(), Code::kFailedPrecondition);

  auto reader = record_io::RecordReader::open((*writer)->path(), record_io::RecordOptions{});
  ASSERT_TRUE(reader.ok());
  std::string record;
  proto::Event event;
  ASSERT_TRUE((*reader)->read(&record).ok());
  ASSERT_TRUE(event.ParseFromString(record));
  EXPECT_EQ(event.file_version(), "brain.Event:2");
  ASSERT_TRUE((*reader)->read(&record).ok());
  ASSERT_TRUE(event.ParseFromString(record));
  EXPECT_EQ(event.step(), 7);
  EXPECT_EQ(event.summary().value(0).tag(), "loss");
  EXPECT_EQ(event.summary().value(0).tensor().tensor_content(), std::string("\0\0\0?", 4));
  EXPECT_EQ((*reader)->read(&record).code(), Code::kOutOfRange);
  fs::remove_all(dir);
}

TEST(SummaryWriter, BadRequestsAreErrors) {
  fs::path dir = fs::temp_directory_path() / ("ember_events_bad_" + std::to_string(::getpid()));
  auto writer = EventFileWriter::create(dir.string(), 10, 120000, ".v2");
  ASSERT_TRUE(writer.ok());
  TensorRef value = floats({0.5f}, Shape());
  SummaryRequest request;
  request.tensor = value.get();
  request.kind = SummaryRequest::kImage;  // not [k, h, w, c]
  EXPECT_EQ((*writer)->write_summary(request).code(), Code::kInvalidArgument);
  request.kind = SummaryRequest::kAudio;
  EXPECT_EQ((*writer)->write_summary(request).code(), Code::kInvalidArgument);
  request.kind = SummaryRequest::kTensor;
  request.metadata = "\xff\xff not a message";
  EXPECT_EQ((*writer)->write_summary(request).code(), Code::kInvalidArgument);
  EXPECT_EQ(EventFileWriter::create("", 10, 1, "").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(EventFileWriter::create(dir.string(), -1, 1, "").status().code(), Code::kInvalidArgument);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ember
