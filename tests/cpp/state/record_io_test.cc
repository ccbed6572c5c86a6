#include "ember/state/record_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace ember::record_io {
namespace {

namespace fs = std::filesystem;

class RecordIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ember_record_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name = "data.tfrecord") const { return (dir_ / name).string(); }

  void write_records(const std::string& p, const std::vector<std::string>& records, RecordOptions o = {}) {
    auto w = RecordWriter::open(p, o);
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    for (const std::string& r : records) ASSERT_TRUE((*w)->write(r).ok());
    ASSERT_TRUE((*w)->close().ok());
  }
  // Every record until the first non-OK status, which is returned.
  Status read_all(const std::string& p, std::vector<std::string>* out, RecordOptions o = {}) {
    auto r = RecordReader::open(p, o);
    if (!r.ok()) return r.status();
    std::string record;
    for (;;) {
      Status s = (*r)->read(&record);
      if (!s.ok()) return s;
      out->push_back(record);
    }
  }
  static std::string slurp(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  static void dump(const std::string& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
  }

  fs::path dir_;
};

TEST_F(RecordIoTest, FramingMatchesTensorFlowBytes) {
  // tf.io.TFRecordWriter's bytes for the record b"hello" (TensorFlow 2.21).
  std::string expected = std::string("\x05\0\0\0\0\0\0\0\xea\xb2\x04\x3e", 12) + "hello" + "\xbb\x1f\x1c\x19";
  EXPECT_EQ(encode_record("hello"), expected);
  write_records(path(), {"hello"});
  EXPECT_EQ(slurp(path()), expected);
}

TEST_F(RecordIoTest, RoundTripsEveryCompression) {
  std::vector<std::string> records = {"", "a", std::string(1 << 20, 'x'), std::string("\0\xff\n", 3)};
  for (Compression c : {Compression::kNone, Compression::kZlib, Compression::kGzip}) {
    RecordOptions o;
    o.compression = c;
    o.buffer_size = 1000;  // small buffers cross record boundaries
    write_records(path(), records, o);
    std::vector<std::string> back;
    Status s = read_all(path(), &back, o);
    EXPECT_EQ(s.code(), Code::kOutOfRange) << s.to_string();
    EXPECT_EQ(back, records);
  }
}

TEST_F(RecordIoTest, CorruptLengthCrcIsDataLossAtOffset) {
  std::string bytes = encode_record("hello") + encode_record("world");
  bytes[9] ^= 1;
  dump(path(), bytes);
  std::vector<std::string> back;
  Status s = read_all(path(), &back);
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_EQ(s.message(), "corrupted record at 0 (Is this even a TFRecord file?)");
}

TEST_F(RecordIoTest, CorruptDataIsDataLossAtTheDataOffset) {
  std::string bytes = encode_record("hello") + encode_record("world");
  bytes[21 + 13] ^= 0x40;
  dump(path(), bytes);
  std::vector<std::string> back;
  Status s = read_all(path(), &back);
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_EQ(s.message(), "corrupted record at 33");
  EXPECT_EQ(back, std::vector<std::string>{"hello"});
}

TEST_F(RecordIoTest, TruncatedDataIsDataLossButAShortHeaderEndsTheRecords) {
  std::string bytes = encode_record("hello") + encode_record("world!!");
  dump(path(), bytes.substr(0, bytes.size() - 3));
  std::vector<std::string> back;
  Status s = read_all(path(), &back);
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_EQ(s.message(), "truncated record at 21");

  back.clear();
  dump(path(), bytes.substr(0, 26));
  EXPECT_EQ(read_all(path(), &back).code(), Code::kOutOfRange);
  EXPECT_EQ(back, std::vector<std::string>{"hello"});
}

TEST_F(RecordIoTest, HugeLengthWithValidCrcDoesNotAllocateIt) {
  // A length of 2^62 with its correct CRC: the reader must find the file too short, not allocate 4 EiB.
  dump(path(), encode_header(uint64_t(1) << 62) + "tiny");
  std::vector<std::string> back;
  Status s = read_all(path(), &back);
  EXPECT_EQ(s.code(), Code::kDataLoss);
  dump(path(), encode_header(~uint64_t(0)) + "tiny");
  EXPECT_EQ(read_all(path(), &back).code(), Code::kDataLoss);
}

TEST_F(RecordIoTest, ReaderSeesRecordsAppendedAfterItReachedTheEnd) {
  auto w = RecordWriter::open(path(), RecordOptions{});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->write("one").ok());
  ASSERT_TRUE((*w)->flush().ok());
  auto r = RecordReader::open(path(), RecordOptions{});
  ASSERT_TRUE(r.ok());
  std::string rec;
  ASSERT_TRUE((*r)->read(&rec).ok());
  EXPECT_EQ(rec, "one");
  EXPECT_EQ((*r)->read(&rec).code(), Code::kOutOfRange);
  ASSERT_TRUE((*w)->write("two").ok());
  ASSERT_TRUE((*w)->flush().ok());
  ASSERT_TRUE((*r)->read(&rec).ok());
  EXPECT_EQ(rec, "two");
}

TEST_F(RecordIoTest, CompressedFlushMakesRecordsReadable) {
  RecordOptions o;
  o.compression = Compression::kGzip;
  auto w = RecordWriter::open(path(), o);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->write("abc").ok());
  ASSERT_TRUE((*w)->flush().ok());
  auto r = RecordReader::open(path(), o);
  ASSERT_TRUE(r.ok());
  std::string rec;
  ASSERT_TRUE((*r)->read(&rec).ok());
  EXPECT_EQ(rec, "abc");
  ASSERT_TRUE((*w)->close().ok());
}

TEST_F(RecordIoTest, GarbageCompressedStreamIsDataLoss) {
  dump(path(), std::string("\x1f\x8b\x08\0garbage garbage garbage", 27));
  RecordOptions o;
  o.compression = Compression::kGzip;
  std::vector<std::string> back;
  EXPECT_EQ(read_all(path(), &back, o).code(), Code::kDataLoss);
}

TEST_F(RecordIoTest, WriterErrors) {
  auto w = RecordWriter::open(path(), RecordOptions{});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->close().ok());
  Status s = (*w)->write("x");
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_EQ(s.message(), "Writer is closed.");
  EXPECT_EQ(RecordWriter::open((dir_ / "no" / "such" / "dir").string(), RecordOptions{}).status().code(),
            Code::kNotFound);
  EXPECT_EQ(RecordReader::open(path("missing"), RecordOptions{}).status().code(), Code::kNotFound);
  EXPECT_EQ(parse_compression("BAD").status().code(), Code::kInvalidArgument);
  RecordOptions o;
  o.compression = Compression::kZlib;
  o.window_bits = 40;
  EXPECT_EQ(RecordWriter::open(path(), o).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace ember::record_io
