#include "ember/state/tensor_bundle.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "ember/core/parallel.h"
#include "ember/state/crc32c.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

class TensorBundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ember_bundle_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string prefix(const std::string& name = "ckpt") const { return (dir_ / name).string(); }

  fs::path dir_;
};

TensorRef iota(DType dtype, Shape shape) {
  TensorRef t = TensorImpl::allocate(dtype, shape).value();
  auto* bytes = static_cast<uint8_t*>(t->mutable_raw_data());
  for (size_t i = 0; i < t->nbytes(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 1);
  if (dtype == DType::kBool)
    for (size_t i = 0; i < t->nbytes(); ++i) bytes[i] &= 1;
  return t;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void spit(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
}

TEST(Crc32cTest, KnownValues) {
  EXPECT_EQ(crc32c::value("123456789", 9), 0xE3069283u);
  std::string zeros(32, '\0'), ones(32, '\xff');
  EXPECT_EQ(crc32c::value(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(crc32c::value(ones.data(), ones.size()), 0x62A8AB43u);
  // Extending piecewise gives the CRC of the whole.
  EXPECT_EQ(crc32c::extend(crc32c::value("12345", 5), "6789", 4), 0xE3069283u);
  EXPECT_EQ(crc32c::unmask(crc32c::mask(0x12345678u)), 0x12345678u);
}

TEST_F(TensorBundleTest, EveryDtypeAndStringsRoundTrip) {
  BundleWriter w(prefix());
  const DType all[] = {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64, DType::kInt8,
                       DType::kInt16,   DType::kInt32,    DType::kInt64,   DType::kUInt8,   DType::kBool};
  for (DType d : all) ASSERT_TRUE(w.add(std::string(dtype_name(d)), iota(d, Shape{3, 5})).ok());
  ASSERT_TRUE(w.add("empty", iota(DType::kFloat32, Shape{0, 4})).ok());
  ASSERT_TRUE(w.add_strings("strings", {"a", "", std::string(300, 'z')}, {3}).ok());
  ASSERT_TRUE(w.add_string("_CHECKPOINTABLE_OBJECT_GRAPH", std::string("\0\1\2", 3)).ok());
  ASSERT_TRUE(w.finish().ok());

  auto r = BundleReader::open(prefix());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->keys().size(), 13u);
  for (DType d : all) {
    auto t = r->read(std::string(dtype_name(d)));
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    TensorRef expected = iota(d, Shape{3, 5});
    EXPECT_EQ((*t)->dtype(), d);
    EXPECT_EQ((*t)->shape(), (Shape{3, 5}));
    EXPECT_EQ(std::memcmp((*t)->raw_data(), expected->raw_data(), expected->nbytes()), 0);
  }
  EXPECT_EQ((*r->read("empty"))->shape(), (Shape{0, 4}));
  EXPECT_EQ(*r->read_strings("strings"), (std::vector<std::string>{"a", "", std::string(300, 'z')}));
  EXPECT_EQ(*r->read_string("_CHECKPOINTABLE_OBJECT_GRAPH"), std::string("\0\1\2", 3));
  EXPECT_EQ(*r->tf_dtype("strings"), 7);
  EXPECT_EQ(r->read("nope").status().code(), Code::kNotFound);
  auto strings = r->read("strings");  // a string tensor, as TensorFlow's reader gives
  ASSERT_TRUE(strings.ok()) << strings.status().to_string();
  EXPECT_EQ((*strings)->dtype(), DType::kString);
  EXPECT_EQ((*strings)->data<std::string>()[2], std::string(300, 'z'));
  EXPECT_EQ(r->read_string("float32").status().code(), Code::kInvalidArgument);
}

// LevelDB's builder splits a large index into several blocks and shares key prefixes: the reader
// must rebuild every key.
TEST_F(TensorBundleTest, ManyKeysAcrossBlocks) {
  BundleWriter w(prefix());
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i) {
    keys.push_back("model/layer_with_weights-" + std::to_string(i) + "/kernel/.ATTRIBUTES/VARIABLE_VALUE");
    TensorRef t = TensorImpl::allocate(DType::kInt32, Shape{1}).value();
    t->mutable_data<int32_t>()[0] = i;
    ASSERT_TRUE(w.add(keys.back(), t).ok());
  }
  ASSERT_TRUE(w.finish().ok());
  EXPECT_GT(fs::file_size(prefix() + ".index"), 3 * 4096u);
  auto r = BundleReader::open(prefix());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(r->keys(), keys);
  EXPECT_EQ((*r->read("model/layer_with_weights-1234/kernel/.ATTRIBUTES/VARIABLE_VALUE"))->data<int32_t>()[0],
            1234);
}

TEST_F(TensorBundleTest, AbandonedWriterLeavesThePreviousBundle) {
  {
    BundleWriter w(prefix());
    ASSERT_TRUE(w.add("x", iota(DType::kFloat32, Shape{4})).ok());
    ASSERT_TRUE(w.finish().ok());
  }
  {
    BundleWriter w(prefix());
    ASSERT_TRUE(w.add("y", iota(DType::kFloat32, Shape{8})).ok());
    EXPECT_EQ(w.add("y", iota(DType::kFloat32, Shape{8})).code(), Code::kInvalidArgument);
    EXPECT_EQ(w.finish().code(), Code::kInvalidArgument);  // the first error again
  }
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) files += e.is_regular_file();
  EXPECT_EQ(files, 2u);  // no temporary files left
  auto r = BundleReader::open(prefix());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->keys(), std::vector<std::string>{"x"});
}

TEST_F(TensorBundleTest, EveryTruncationAndBitFlipOfTheIndexIsAnError) {
  BundleWriter w(prefix());
  ASSERT_TRUE(w.add("a", iota(DType::kFloat32, Shape{2, 2})).ok());
  ASSERT_TRUE(w.add_string("s", "hello").ok());
  ASSERT_TRUE(w.finish().ok());
  const std::string index = slurp(prefix() + ".index");
  for (size_t cut = 0; cut < index.size(); ++cut) {
    spit(prefix() + ".index", index.substr(0, cut));
    auto r = BundleReader::open(prefix());
    ASSERT_FALSE(r.ok()) << "cut " << cut;
    EXPECT_NE(r.status().message().find("ckpt.index"), std::string::npos) << r.status().message();
  }
  for (size_t i = 0; i < index.size(); ++i) {
    std::string flipped = index;
    flipped[i] ^= static_cast<char>(1 << (i % 8));
    spit(prefix() + ".index", flipped);
    auto r = BundleReader::open(prefix());
    if (!r.ok()) continue;  // most flips are caught by a block checksum
    // The rest land in padding the reader ignores: the values must still be exactly right.
    EXPECT_EQ(*r->read_string("s"), "hello") << "bit " << i;
  }
}

TEST_F(TensorBundleTest, DataProblemsNameTheFile) {
  BundleWriter w(prefix());
  ASSERT_TRUE(w.add("a", iota(DType::kFloat64, Shape{16})).ok());
  ASSERT_TRUE(w.add_strings("s", {"x", "yy"}, {2}).ok());
  ASSERT_TRUE(w.finish().ok());
  const std::string data_path = bundle_data_path(prefix(), 0, 1);
  const std::string data = slurp(data_path);
  for (size_t i = 0; i < data.size(); ++i) {
    std::string flipped = data;
    flipped[i] ^= 0x20;
    spit(data_path, flipped);
    auto r = BundleReader::open(prefix());
    ASSERT_TRUE(r.ok());
    Status a = r->read("a").status(), s = r->read_strings("s").status();
    EXPECT_FALSE(a.ok() && s.ok()) << "byte " << i;
    for (const Status& st : {a, s})
      if (!st.ok()) {
        EXPECT_EQ(st.code(), Code::kDataLoss);
        EXPECT_NE(st.message().find(".data-00000-of-00001"), std::string::npos) << st.message();
      }
  }
  spit(data_path, data.substr(0, data.size() / 2));
  auto r = BundleReader::open(prefix());
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->read_strings("s").status().message().find("truncated"), std::string::npos);
}

// A tensor past 16 MiB is read in 4 MiB pieces while a second thread checksums them (Note [Checksum beside
// the read]): the checksum must cover every piece (a flipped byte in the first, a middle or the last,
// partial piece is DataLoss), and a read that fails halfway (the file truncated after the reader opened
// it) must return its error rather than wait for pieces that never come.
TEST_F(TensorBundleTest, LargeTensorsAreChecksummedPieceByPiece) {
  const int64_t n = (int64_t{41} << 20) / 4 + 3;  // 41 MiB and 12 bytes: ten full pieces and a partial one
  TensorRef big = iota(DType::kFloat32, Shape{n});
  {
    BundleWriter w(prefix());
    ASSERT_TRUE(w.add("big", big).ok());
    ASSERT_TRUE(w.finish().ok());
  }
  {
    auto r = BundleReader::open(prefix());
    ASSERT_TRUE(r.ok());
    auto got = r->read("big");
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ((*got)->nbytes(), big->nbytes());
    EXPECT_EQ(std::memcmp((*got)->raw_data(), big->raw_data(), big->nbytes()), 0);
  }
  const std::string data_path = bundle_data_path(prefix(), 0, 1);
  const std::string data = slurp(data_path);
  ASSERT_EQ(data.size(), big->nbytes());
  for (size_t at : {size_t{5}, size_t{(18u << 20) + 1}, data.size() - 2}) {
    std::string flipped = data;
    flipped[at] ^= 0x01;
    spit(data_path, flipped);
    auto r = BundleReader::open(prefix());
    ASSERT_TRUE(r.ok());
    Status s = r->read("big").status();
    EXPECT_EQ(s.code(), Code::kDataLoss) << "byte " << at;
    EXPECT_NE(s.message().find("checksum mismatch"), std::string::npos) << s.message();
  }
  spit(data_path, data);
  auto r = BundleReader::open(prefix());
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(::truncate(data_path.c_str(), static_cast<off_t>(data.size() / 2)), 0);
  Status s = r->read("big").status();
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_NE(s.message().find("ends early"), std::string::npos) << s.message();
}

// A large bundle is written as one shard per intra-op thread in parallel (Note [Parallel shards]); every
// tensor reads back from its shard, and a later save with another shard count removes the earlier shards.
TEST_F(TensorBundleTest, LargeBundlesAreShardedAndReadBack) {
  const int threads_before = intra_op_threads();
  set_intra_op_threads(3);
  std::vector<TensorRef> tensors;
  {
    BundleWriter w(prefix());
    for (int i = 0; i < 5; ++i) {  // 5 x 40 MiB: three shards of 80, 80 and 40 MiB
      tensors.push_back(iota(DType::kFloat32, Shape{(int64_t{40} << 20) / 4 + i}));
      ASSERT_TRUE(w.add("t" + std::to_string(i), tensors.back()).ok());
    }
    ASSERT_TRUE(w.add_string("note", "strings go to a shard too").ok());
    ASSERT_TRUE(w.finish().ok());
    EXPECT_EQ(w.num_shards(), 3);
  }
  set_intra_op_threads(threads_before);
  for (int shard = 0; shard < 3; ++shard) EXPECT_TRUE(fs::exists(bundle_data_path(prefix(), shard, 3)));
  {
    auto r = BundleReader::open(prefix());
    ASSERT_TRUE(r.ok()) << r.status().message();
    for (int i = 0; i < 5; ++i) {
      auto got = r->read("t" + std::to_string(i));
      ASSERT_TRUE(got.ok()) << got.status().message();
      ASSERT_EQ((*got)->nbytes(), tensors[i]->nbytes());
      EXPECT_EQ(std::memcmp((*got)->raw_data(), tensors[i]->raw_data(), tensors[i]->nbytes()), 0) << i;
    }
  }
  {
    BundleWriter w(prefix());
    ASSERT_TRUE(w.add("small", iota(DType::kInt32, Shape{4})).ok());
    ASSERT_TRUE(w.finish().ok());
    EXPECT_EQ(w.num_shards(), 1);
  }
  auto r = BundleReader::open(prefix());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->read("small").ok());
  // The three old shards are unlinked in the background; wait for them a little.
  auto old_shards_left = [&] {
    int left = 0;
    for (int shard = 0; shard < 3; ++shard) left += fs::exists(bundle_data_path(prefix(), shard, 3));
    return left;
  };
  for (int tries = 0; tries < 500 && old_shards_left() > 0; ++tries) ::usleep(10000);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"ckpt.data-00000-of-00001", "ckpt.index"}));
}

// Only large tensors count towards the shard count: one huge tensor beside small ones is one shard.
TEST_F(TensorBundleTest, OneHugeTensorBesideSmallOnesIsOneShard) {
  const int threads_before = intra_op_threads();
  set_intra_op_threads(3);
  TensorRef huge = iota(DType::kFloat32, Shape{(int64_t{200} << 20) / 4});
  BundleWriter w(prefix());
  ASSERT_TRUE(w.add("huge", huge).ok());
  ASSERT_TRUE(w.add("counter", iota(DType::kInt64, Shape{})).ok());
  ASSERT_TRUE(w.add_string("graph", "object graph").ok());
  ASSERT_TRUE(w.finish().ok());
  set_intra_op_threads(threads_before);
  EXPECT_EQ(w.num_shards(), 1);
  auto r = BundleReader::open(prefix());
  ASSERT_TRUE(r.ok());
  auto got = r->read("huge");
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(std::memcmp((*got)->raw_data(), huge->raw_data(), huge->nbytes()), 0);
}

// A name the save replaces that is not a regular file: a directory makes the save fail (as rename does)
// and stays; a FIFO is replaced without the save blocking on it.
TEST_F(TensorBundleTest, NamesHeldByADirectoryOrAFifo) {
  fs::create_directories(bundle_index_path(prefix()) + "/inside");
  {
    BundleWriter w(prefix());
    ASSERT_TRUE(w.add("x", iota(DType::kFloat32, Shape{4})).ok());
    EXPECT_EQ(w.finish().code(), Code::kUnavailable);
  }
  EXPECT_TRUE(fs::is_directory(bundle_index_path(prefix()) + "/inside"));
  ASSERT_EQ(::mkfifo(bundle_data_path(prefix("f"), 0, 1).c_str(), 0644), 0);
  BundleWriter w(prefix("f"));
  ASSERT_TRUE(w.add("x", iota(DType::kFloat32, Shape{4})).ok());
  ASSERT_TRUE(w.finish().ok());
  auto r = BundleReader::open(prefix("f"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->read("x").ok());
}

}  // namespace
}  // namespace ember
