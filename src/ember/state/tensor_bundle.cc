#include "ember/state/tensor_bundle.h"

#include <fcntl.h>
#include <leveldb/env.h>
#include <leveldb/options.h>
#include <leveldb/table_builder.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <new>
#include <random>
#include <system_error>
#include <thread>

#include "ember/core/parallel.h"
#include "ember/graph/tensor_proto.h"
#include "ember/state/bundle_generations.h"
#include "ember/state/crc32c.h"

namespace ember {

using namespace bundle_files;

namespace {

constexpr int kDtString = 7;                             // TensorFlow's DT_STRING
constexpr int kBundleVersion = 1;                        // TensorFlow's kTensorBundleVersion
constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;  // LevelDB's table footer magic
constexpr size_t kFooterSize = 48;                       // two padded block handles (40 bytes) + magic
constexpr size_t kBlockTrailerSize = 5;                  // compression type + masked CRC32C

std::string errno_text() { return std::strerror(errno); }

// ---- files

Status write_all(int fd, const void* data, size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n > (1u << 30) ? (1u << 30) : n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return make_error(Code::kUnavailable, "writing ", path, ": ", errno_text());
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status();
}

Status pread_all(int fd, void* data, size_t n, int64_t offset, const std::string& path) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n > (1u << 30) ? (1u << 30) : n, offset);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return make_error(Code::kDataLoss, "reading ", path, ": ", errno_text());
    if (r == 0) return make_error(Code::kDataLoss, path, ": the file ends early (truncated?)");
    p += r;
    n -= static_cast<size_t>(r);
    offset += r;
  }
  return Status();
}

// Note [Checksum beside the read]
// Restoring a large tensor is a read from the page cache (about 0.1 s per GiB on the 2-core Zen 4) and a
// CRC32C over the same bytes (about 0.13 s per GiB at 8 bytes a step): one after the other, they were a
// restore's whole time. A second thread checksums each piece as soon as it has been read, so the two
// overlap and a restore costs about the longer of them. The checksum is still over every byte in order,
// and the tensor is only handed out once it matches. A thread that cannot start means the sequential
// order, never an error.
constexpr size_t kReadPiece = size_t{4} << 20;

Status pread_checksummed(int fd, char* data, size_t n, int64_t offset, const std::string& path,
                         uint32_t* crc) {
  std::future<uint32_t> checksum;
  constexpr size_t kStop = SIZE_MAX;  // a failed read: the checksum thread gives up
  std::atomic<size_t> ready{0};       // bytes read so far
  if (n >= 4 * kReadPiece) {
    try {
      checksum = std::async(std::launch::async, [&ready, data, n] {
        uint32_t c = 0;
        size_t done = 0;
        while (done < n) {
          const size_t r = ready.load(std::memory_order_acquire);
          if (r == kStop) break;
          if (r == done) {
            ready.wait(done, std::memory_order_acquire);
            continue;
          }
          c = crc32c::extend(c, data + done, r - done);
          done = r;
        }
        return c;
      });
    } catch (const std::system_error&) {
    }
  }
  if (!checksum.valid()) {
    EMBER_RETURN_IF_ERROR(pread_all(fd, data, n, offset, path));
    *crc = crc32c::value(data, n);
    return Status();
  }
  Status s;
  for (size_t at = 0; at < n && s.ok(); at += kReadPiece) {
    const size_t len = std::min(kReadPiece, n - at);
    s = pread_all(fd, data + at, len, offset + static_cast<int64_t>(at), path);
    ready.store(s.ok() ? at + len : kStop, std::memory_order_release);
    ready.notify_one();
  }
  const uint32_t c = checksum.get();
  if (!s.ok()) return s;
  *crc = c;
  return Status();
}

std::string temp_suffix() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t seed = std::random_device{}();
  char buf[64];
  std::snprintf(
      buf, sizeof(buf), ".tempstate%llu",
      static_cast<unsigned long long>(seed ^ (static_cast<uint64_t>(::getpid()) << 32) ^ counter++));
  return buf;
}

void put_varint64(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Reads a varint of at most `max_bytes` bytes (5 for 32-bit, 10 for 64-bit) from [*p, end).
bool get_varint(const char** p, const char* end, uint64_t* v, int max_bytes = 10) {
  uint64_t result = 0;
  for (int shift = 0, i = 0; i < max_bytes && *p < end; ++i, shift += 7) {
    uint64_t byte = static_cast<uint8_t>(*(*p)++);
    if (shift == 63 && byte > 1) return false;
    result |= (byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      *v = result;
      return true;
    }
  }
  return false;
}

uint32_t load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// LevelDB's TableBuilder writes through a WritableFile; the index is small, so it goes to memory and then
// through the same write/fsync/rename path as the data.
class StringSink : public leveldb::WritableFile {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  leveldb::Status Append(const leveldb::Slice& data) override {
    out_->append(data.data(), data.size());
    return leveldb::Status::OK();
  }
  leveldb::Status Close() override { return leveldb::Status::OK(); }
  leveldb::Status Flush() override { return leveldb::Status::OK(); }
  leveldb::Status Sync() override { return leveldb::Status::OK(); }

 private:
  std::string* out_;
};

// ---- reading the table format (see Note [Reading the index table])

// Note [Reading the index table]
// LevelDB's Table reader allocates a block's size, read from the file, before it reads the block, so a
// hostile handle ("4 EiB at offset 0") becomes a huge allocation. The index of a checkpoint is small and
// read whole, so it is parsed here instead, every handle checked against the bytes actually there.
struct Table {
  const std::string& path;
  std::string_view file;

  Status corrupt(const std::string& what) const {
    return make_error(Code::kDataLoss, path, ": not a valid checkpoint index (", what, ")");
  }

  Status handle_at(const char** p, const char* end, std::string_view* block, const char* what) const {
    uint64_t offset, size;
    if (!get_varint(p, end, &offset) || !get_varint(p, end, &size))
      return corrupt(std::string("bad block handle of the ") + what);
    if (offset > file.size() || size > file.size() - offset ||
        kBlockTrailerSize > file.size() - offset - size)
      return corrupt(std::string("the ") + what + " block [" + std::to_string(offset) + ", +" +
                     std::to_string(size) + ") lies outside the " + std::to_string(file.size()) +
                     "-byte file");
    const char* data = file.data() + offset;
    const char* trailer = data + size;
    if (trailer[0] != 0)
      return corrupt(std::string("the ") + what + " block is compressed (type " +
                     std::to_string(static_cast<int>(trailer[0])) + "); TensorFlow writes none");
    uint32_t expected = crc32c::unmask(load32(trailer + 1));
    uint32_t actual = crc32c::extend(crc32c::value(data, size), trailer, 1);
    if (expected != actual) return corrupt(std::string("checksum mismatch in the ") + what + " block");
    *block = std::string_view(data, size);
    return Status();
  }

  // Calls visit(key, value) for every entry of a block, keys rebuilt from their shared prefixes.
  template <typename Visit>
  Status for_each(std::string_view block, const char* what, size_t* key_budget, Visit visit) const {
    if (block.size() < 4) return corrupt(std::string("the ") + what + " block is too short");
    uint64_t restarts = load32(block.data() + block.size() - 4);
    if (restarts > (block.size() - 4) / 4)
      return corrupt(std::string("the ") + what + " block claims " + std::to_string(restarts) + " restarts");
    const char* p = block.data();
    const char* end = block.data() + block.size() - 4 - 4 * restarts;
    std::string key;
    while (p < end) {
      uint64_t shared, non_shared, value_size;
      if (!get_varint(&p, end, &shared, 5) || !get_varint(&p, end, &non_shared, 5) ||
          !get_varint(&p, end, &value_size, 5))
        return corrupt(std::string("bad entry header in the ") + what + " block");
      if (shared > key.size() || non_shared > static_cast<uint64_t>(end - p) ||
          value_size > static_cast<uint64_t>(end - p) - non_shared)
        return corrupt(std::string("an entry of the ") + what + " block runs past the block");
      if (shared + non_shared > *key_budget) return corrupt("the keys are larger than the file could hold");
      *key_budget -= shared + non_shared;
      std::string next = key.substr(0, shared);
      next.append(p, non_shared);
      p += non_shared;
      EMBER_RETURN_IF_ERROR(visit(next, std::string_view(p, value_size)));
      p += value_size;
      key = std::move(next);
    }
    return Status();
  }

  // Every (key, value) of the table, checked to be in strictly increasing order.
  Status read_all(std::map<std::string, std::string>* out) const {
    if (file.size() < kFooterSize) return corrupt("shorter than the 48-byte footer");
    const char* footer = file.data() + file.size() - kFooterSize;
    uint64_t magic;
    std::memcpy(&magic, footer + 40, 8);
    if (magic != kTableMagic) return corrupt("bad magic number in the footer");
    const char* p = footer;
    std::string_view metaindex, index;
    EMBER_RETURN_IF_ERROR(handle_at(&p, footer + 40, &metaindex, "metaindex"));
    EMBER_RETURN_IF_ERROR(handle_at(&p, footer + 40, &index, "index"));
    size_t key_budget = 64 * file.size() + 65536;
    bool first = true;
    std::string last;
    return for_each(index, "index", &key_budget, [&](const std::string&, std::string_view handle) {
      const char* hp = handle.data();
      std::string_view data;
      EMBER_RETURN_IF_ERROR(handle_at(&hp, handle.data() + handle.size(), &data, "data"));
      return for_each(data, "data", &key_budget, [&](const std::string& key, std::string_view value) {
        if (!first && key <= last) return corrupt("keys out of order at \"" + key + "\"");
        first = false;
        last = key;
        out->emplace(key, std::string(value));
        return Status();
      });
    });
  }
};

const char* shard_digits(int v, char* buf) {
  std::snprintf(buf, 8, "%05d", v);
  return buf;
}

}  // namespace

std::string bundle_index_path(const std::string& prefix) { return prefix + ".index"; }

std::string bundle_data_path(const std::string& prefix, int shard, int num_shards) {
  char a[8], b[8];
  return prefix + ".data-" + shard_digits(shard, a) + "-of-" + shard_digits(num_shards, b);
}

bool bundle_exists(const std::string& prefix) {
  struct stat st;
  return regular_file(bundle_index_path(prefix), &st) ||
         regular_file(kept_path(bundle_index_path(prefix)), &st);
}

// ---- BundleWriter

// Note [Atomic, not synced]
// A save must leave the previous checkpoint restorable if the process is killed at any moment
// (test_checkpoint_kill.py). That needs only the temporary names and the renames: the page cache outlives
// the process, so whatever was renamed into place is complete. fsync adds durability against a power
// loss or a kernel crash, at the price of waiting for the disk: a 1 GiB save took 0.57 s with it against
// 0.25 s for `cp` of the same bytes. The specification (issue 16) asks for temporary name, fsync, rename,
// so `sync` is the default: data, index and directory are fsynced, and the data's writeback starts as each
// piece is written (Note [Starting writeback early]). TensorFlow 2.21's save does not fsync (strace: no
// fsync, fdatasync or sync_file_range; it even rewrites the final index in place): `sync` false
// (CheckpointOptions(experimental_sync=False) from Python) gives that durability, still atomic.
BundleWriter::BundleWriter(std::string prefix, bool sync)
    : prefix_(std::move(prefix)), suffix_(temp_suffix()), sync_(sync) {
  data_tmps_.push_back(prefix_ + ".data-00000" + suffix_);  // the shard count is known at finish
  index_tmp_ = bundle_index_path(prefix_) + suffix_;
  std::error_code ignored;  // as TensorFlow's Checkpoint.write; a failure surfaces when the file is opened
  std::filesystem::create_directories(dir_of(prefix_), ignored);
  // Opened now, so that an unwritable directory fails the first add rather than the finish.
  first_fd_ = create_locked_file(data_tmps_[0]);
  if (first_fd_ < 0)
    status_ = make_error(Code::kNotFound, "checkpoint ", prefix_, ": cannot create ", data_tmps_[0], ": ",
                         errno_text());
}

BundleWriter::~BundleWriter() {
  if (!finished_) {
    for (const std::string& path : data_tmps_) ::unlink(path.c_str());
    ::unlink(index_tmp_.c_str());
  }
  if (first_fd_ >= 0) ::close(first_fd_);
  for (int fd : held_fds_) ::close(fd);
}

Status BundleWriter::fail(Status s) {
  if (status_.ok()) status_ = s;
  return s;
}

Status BundleWriter::begin_entry(const std::string& key) {
  if (!status_.ok()) return status_;
  if (finished_) return make_error(Code::kFailedPrecondition, "checkpoint ", prefix_, ": already finished");
  if (key.empty()) return fail(invalid_argument("checkpoint ", prefix_, ": a tensor key must not be empty"));
  if (entries_.count(key))
    return fail(invalid_argument("checkpoint ", prefix_, ": key \"", key, "\" added twice"));
  return Status();
}

Status BundleWriter::add(const std::string& key, TensorRef tensor) {
  EMBER_RETURN_IF_ERROR(begin_entry(key));
  if (!tensor || tensor->is_symbolic())
    return fail(invalid_argument("checkpoint ", prefix_, ": \"", key, "\" is not a tensor with a value"));
  if (tensor->dtype() == DType::kString) {  // TensorFlow's string encoding (add_strings)
    std::vector<std::string_view> values(tensor->data<std::string>(),
                                         tensor->data<std::string>() + tensor->num_elements());
    return add_strings(key, values, tensor->shape().dim_vector());
  }
  if (tensor->buffer()->external()) {
    // Memory shared with another library (DLPack) may change before finish: keep a copy of it now.
    auto copy = TensorImpl::allocate(tensor->dtype(), tensor->shape());
    if (!copy.ok()) return fail(copy.status());
    std::memcpy(copy.value()->mutable_raw_data(), tensor->raw_data(), tensor->nbytes());
    tensor = std::move(copy).value();
  }
  proto::BundleEntryProto& e = entries_[key];
  e.set_dtype(static_cast<proto::DataType>(tf_datatype(tensor->dtype())));
  to_shape_proto(tensor->shape().dims(), false, e.mutable_shape());
  pieces_.push_back(Piece{key, std::move(tensor), {}, 0});
  return Status();
}

Status BundleWriter::add_strings(const std::string& key, const std::vector<std::string_view>& values,
                                 const std::vector<int64_t>& dims) {
  EMBER_RETURN_IF_ERROR(begin_entry(key));
  for (int64_t d : dims)
    if (d < 0)
      return fail(invalid_argument("checkpoint ", prefix_, ": string tensor \"", key, "\" has dim ", d));
  Status size_ok = check_shape_size(dims);
  if (!size_ok.ok()) return fail(size_ok);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  if (n != static_cast<int64_t>(values.size()))
    return fail(invalid_argument("checkpoint ", prefix_, ": string tensor \"", key, "\" has ", values.size(),
                                 " values for a shape of ", n, " elements"));
  // TensorFlow's string encoding: varint64 lengths, the masked CRC of the lengths (each as a 4-byte
  // integer, or 8 bytes past 4 GiB), then the bytes; the entry's CRC covers lengths, that CRC and bytes.
  Piece piece{key, TensorRef(), {}, 0};
  uint32_t crc = 0;
  for (std::string_view v : values) {
    put_varint64(&piece.encoded, v.size());
    if (v.size() <= UINT32_MAX) {
      uint32_t len32 = static_cast<uint32_t>(v.size());
      crc = crc32c::extend(crc, &len32, 4);
    } else {
      uint64_t len64 = v.size();
      crc = crc32c::extend(crc, &len64, 8);
    }
  }
  const uint32_t length_crc = crc32c::mask(crc);
  piece.encoded.append(reinterpret_cast<const char*>(&length_crc), 4);
  crc = crc32c::extend(crc, &length_crc, 4);
  for (std::string_view v : values) {
    piece.encoded.append(v.data(), v.size());
    crc = crc32c::extend(crc, v.data(), v.size());
  }
  piece.encoded_crc = crc;
  proto::BundleEntryProto& e = entries_[key];
  e.set_dtype(proto::DT_STRING);
  to_shape_proto(dims, false, e.mutable_shape());
  pieces_.push_back(std::move(piece));
  return Status();
}

namespace {

// Note [Parallel shards]
// Writing a checkpoint is copying its bytes into the page cache, a CPU-bound copy that one thread does at
// about 3.5 GB/s here; `cp` of the same bytes is that copy too. A bundle may spread its tensors over
// several data files (TensorFlow writes one per device and reads any number: the header's num_shards and
// each entry's shard_id), and each file has its own inode lock, so a large checkpoint is written as one
// shard per intra-op thread, tensors dealt largest first to the least loaded shard, each shard by its own
// thread (fewer threads beside busy processes: the shard count depends on the data and the thread
// setting only, so the files do not change with the machine's load). Small checkpoints (under two shards'
// worth, kMinShardBytes each) stay one file in the order of the adds, byte for byte what TensorFlow writes. A
// tensor is never split: a bundle with one huge tensor is one shard, whose checksum runs on a second thread
// beside the write instead (Note [Starting writeback early]).
constexpr size_t kMinShardBytes = size_t{64} << 20;
constexpr int kMaxShards = 16;
// Within a shard each piece is checksummed and written a chunk at a time, so the write copies bytes the
// checksum has just brought into the cache.
constexpr size_t kWriteChunk = size_t{1} << 20;

// Pieces this large count towards the shard count; smaller ones (a save counter, the object graph) only
// ride along, so that one huge tensor beside them stays one shard with its checksum on the side.
constexpr size_t kLargePiece = kMinShardBytes / 16;

int choose_num_shards(size_t total_bytes, size_t large_pieces) {
  const size_t by_size = total_bytes / kMinShardBytes;
  size_t n = std::min<size_t>({by_size, large_pieces, static_cast<size_t>(std::max(1, intra_op_threads())),
                               static_cast<size_t>(kMaxShards)});
  return n < 2 ? 1 : static_cast<int>(n);
}

struct ShardPiece {
  const void* data;
  size_t size;
  bool crc_known;  // a string tensor's CRC, computed at add
  uint32_t crc;
  proto::BundleEntryProto* entry;
};

struct ShardJob {
  int shard = 0;
  int fd = -1;
  std::string path;
  std::vector<ShardPiece> pieces;
  size_t bytes = 0;
  Status status;
};

// Note [Starting writeback early]
// A synced finish() must fsync the data before the rename makes it the checkpoint. Left to the end, that
// fsync waits for every byte to reach the disk after the last write; asking the kernel to start writing each
// large piece as soon as it is in the page cache (sync_file_range without waiting) overlaps the disk with
// the rest of the save, so the final fsync finds little left to do. An unsynced save leaves writeback to
// the kernel: starting it early halved its speed.
//
// In a one-shard bundle the checksum of a large tensor is computed on a second thread while the calling
// thread writes it (both only read the tensor), so it costs the write alone; a thread that cannot start
// means the sequential order, never an error. Shards written in parallel already keep every core busy, so
// there each thread checksums its own chunks just before writing them.
Status write_piece(int fd, const ShardPiece& piece, int64_t offset, bool checksum_beside, bool sync,
                   const std::string& path, uint32_t* crc) {
  const char* data = static_cast<const char*>(piece.data);
  const size_t n = piece.size;
  std::future<uint32_t> checksum;
  if (!piece.crc_known && checksum_beside && n >= (8u << 20)) {
    try {
      checksum = std::async(std::launch::async, [data, n] { return crc32c::value(data, n); });
    } catch (const std::system_error&) {
    }
  }
  uint32_t c = 0;
  Status s;
  if (checksum.valid() || piece.crc_known) {
    s = write_all(fd, data, n, path);
    c = checksum.valid() ? checksum.get() : piece.crc;
  } else {
    for (size_t at = 0; at < n && s.ok(); at += kWriteChunk) {
      const size_t len = std::min(kWriteChunk, n - at);
      c = crc32c::extend(c, data + at, len);
      s = write_all(fd, data + at, len, path);
    }
  }
  EMBER_RETURN_IF_ERROR(s);
#if defined(__linux__)
  if (sync && n >= (1u << 20)) ::sync_file_range(fd, offset, static_cast<off_t>(n), SYNC_FILE_RANGE_WRITE);
#else
  (void)offset;
#endif
  *crc = c;
  return Status();
}

Status write_shard(ShardJob& job, bool checksum_beside, bool sync) {
  int64_t offset = 0;
  for (const ShardPiece& piece : job.pieces) {
    uint32_t crc = 0;
    EMBER_RETURN_IF_ERROR(write_piece(job.fd, piece, offset, checksum_beside, sync, job.path, &crc));
    piece.entry->set_shard_id(job.shard);
    piece.entry->set_offset(offset);
    piece.entry->set_size(static_cast<int64_t>(piece.size));
    piece.entry->set_crc32c(crc32c::mask(crc));
    offset += static_cast<int64_t>(piece.size);
  }
  if (sync && ::fdatasync(job.fd) != 0)
    return make_error(Code::kUnavailable, "fsync of ", job.path, ": ", errno_text());
  return Status();
}

BundleFinishHook& finish_hook() {
  static BundleFinishHook* hook = new BundleFinishHook();
  return *hook;
}

// The test hook's verdict on `step` (OK without a hook).
Status after_step(const std::string& step) { return finish_hook() ? finish_hook()(step) : Status(); }

}  // namespace

void set_bundle_finish_hook_for_testing(BundleFinishHook hook) { finish_hook() = std::move(hook); }

Status BundleWriter::finish() {
  if (!status_.ok()) return status_;
  if (finished_) return make_error(Code::kFailedPrecondition, "checkpoint ", prefix_, ": already finished");
  // Every lock this save takes is released when it returns (Note [Who may settle a save]).
  struct Unlock {
    std::vector<int>& fds;
    ~Unlock() {
      for (int fd : fds) ::close(fd);
      fds.clear();
    }
  } unlock{held_fds_};
  // Deal the pieces to shards (Note [Parallel shards]), each shard keeping the order of the adds.
  size_t total = 0, large = 0;
  for (const Piece& p : pieces_) {
    total += p.bytes();
    large += p.bytes() >= kLargePiece;
  }
  num_shards_ = choose_num_shards(total, large);
  std::vector<ShardJob> jobs(static_cast<size_t>(num_shards_));
  std::vector<int> shard_of(pieces_.size(), 0);
  if (num_shards_ > 1) {
    std::vector<size_t> by_size(pieces_.size());
    for (size_t i = 0; i < by_size.size(); ++i) by_size[i] = i;
    auto size_of = [&](size_t i) { return pieces_[i].bytes(); };
    std::stable_sort(by_size.begin(), by_size.end(),
                     [&](size_t a, size_t b) { return size_of(a) > size_of(b); });
    for (size_t i : by_size) {
      auto least = std::min_element(jobs.begin(), jobs.end(),
                                    [](const ShardJob& a, const ShardJob& b) { return a.bytes < b.bytes; });
      least->bytes += size_of(i);
      shard_of[i] = static_cast<int>(least - jobs.begin());
    }
  }
  for (size_t i = 0; i < pieces_.size(); ++i) {
    const Piece& p = pieces_[i];
    const void* data = p.tensor ? p.tensor->raw_data() : p.encoded.data();
    jobs[static_cast<size_t>(shard_of[i])].pieces.push_back(
        ShardPiece{data, p.bytes(), !p.tensor, p.encoded_crc, &entries_[p.key]});
  }
  for (int s = 0; s < num_shards_; ++s) {
    ShardJob& job = jobs[static_cast<size_t>(s)];
    job.shard = s;
    if (s == 0) {
      job.fd = std::exchange(first_fd_, -1);
      job.path = data_tmps_[0];
      continue;
    }
    job.path = bundle_data_path(prefix_, s, num_shards_) + suffix_;
    data_tmps_.push_back(job.path);
    job.fd = create_locked_file(job.path);
    if (job.fd < 0) job.status = make_error(Code::kUnavailable, "creating ", job.path, ": ", errno_text());
  }
  {
    // One thread per shard where cores are free; beside busy processes fewer threads take turns, since a
    // parallel write waits for its slowest thread (Note [Cores others leave free] in core/parallel.cc).
    const bool beside = num_shards_ == 1;
    const size_t writers =
        std::clamp<size_t>(static_cast<size_t>(cores_free_for_parallel_work()), 1, jobs.size());
    auto write_every = [&](size_t first) {
      for (size_t s = first; s < jobs.size(); s += writers)
        if (jobs[s].status.ok()) jobs[s].status = write_shard(jobs[s], beside, sync_);
    };
    std::vector<std::thread> threads;
    size_t started = 1;
    for (; started < writers; ++started) {
      try {
        threads.emplace_back(write_every, started);
      } catch (const std::system_error&) {
        break;
      }
    }
    write_every(0);
    for (std::thread& t : threads) t.join();
    for (size_t s = started; s < writers; ++s) write_every(s);  // threads that could not start
  }
  Status written;
  for (ShardJob& job : jobs) {
    if (job.fd >= 0) held_fds_.push_back(job.fd);
    if (written.ok() && !job.status.ok()) written = job.status;
  }
  if (!written.ok()) return fail(written);
  pieces_.clear();  // the tensors are on disk (or in the page cache): let them go

  std::string index;
  {
    StringSink sink(&index);
    leveldb::Options options;
    options.compression = leveldb::kNoCompression;
    leveldb::TableBuilder builder(options, &sink);
    proto::BundleHeaderProto header;
    header.set_num_shards(num_shards_);
    header.set_endianness(proto::BundleHeaderProto::LITTLE);
    header.mutable_version()->set_producer(kBundleVersion);
    builder.Add("", header.SerializeAsString());
    for (const auto& [key, e] : entries_) builder.Add(key, e.SerializeAsString());
    leveldb::Status s = builder.Finish();
    if (!s.ok()) return fail(make_error(Code::kInternal, "checkpoint ", prefix_, ": index: ", s.ToString()));
  }
  int ifd = create_locked_file(index_tmp_);
  if (ifd < 0) return fail(make_error(Code::kUnavailable, "creating ", index_tmp_, ": ", errno_text()));
  held_fds_.push_back(ifd);
  Status s = write_all(ifd, index.data(), index.size(), index_tmp_);
  if (s.ok() && sync_ && ::fdatasync(ifd) != 0)
    s = make_error(Code::kUnavailable, "fsync of ", index_tmp_, ": ", errno_text());
  if (!s.ok()) return fail(s);
  EMBER_RETURN_IF_ERROR(fail_at_step("temporary files written"));

  // Data first, then the index: until the index is replaced, the checkpoint at `prefix` is the previous
  // one, read through the files kept for it (Note [Overwriting a checkpoint in place]). The previous
  // generation stays locked until its kept files are gone (Note [Who may settle a save]); a live save
  // at the same prefix holds it, and this one waits.
  const int generation = lock_generation(prefix_, /*wait=*/true);
  if (generation >= 0) held_fds_.push_back(generation);
  EMBER_RETURN_IF_ERROR(fail_at(settle_interrupted_overwrite(prefix_)));
  StatusOr<std::vector<std::string>> keeping = keep_previous_generation(prefix_, num_shards_);
  if (!keeping.ok()) return fail(keeping.status());  // nothing moved: it put back what it had
  const std::vector<std::string> kept = std::move(keeping).value();
  if (!kept.empty() && sync_) EMBER_RETURN_IF_ERROR(fail_at(fsync_dir(dir_of(prefix_))));
  EMBER_RETURN_IF_ERROR(fail_at_step("previous generation kept"));
  for (int shard = 0; shard < num_shards_; ++shard) {
    if (replace_file(data_tmps_[static_cast<size_t>(shard)], bundle_data_path(prefix_, shard, num_shards_)) !=
        0)
      return fail_at(make_error(Code::kUnavailable, "checkpoint ", prefix_, ": rename: ", errno_text()));
    EMBER_RETURN_IF_ERROR(fail_at_step("data " + std::to_string(shard) + " in place"));
  }
  if (replace_file(index_tmp_, bundle_index_path(prefix_)) != 0)
    return fail_at(make_error(Code::kUnavailable, "checkpoint ", prefix_, ": rename: ", errno_text()));
  finished_ = true;
  EMBER_RETURN_IF_ERROR(fail_at_step("index in place"));
  for (const std::string& path : kept) unlink_in_background(path);
  if (!kept.empty()) ::unlink(kept_path(bundle_index_path(prefix_)).c_str());
  EMBER_RETURN_IF_ERROR(fail_at_step("previous generation removed"));
  remove_other_shard_counts(prefix_, num_shards_);
  if (!sync_) return Status();
  Status synced = fsync_dir(dir_of(prefix_));
  return synced.ok() ? synced : fail(synced);
}

Status BundleWriter::fail_at(Status s) {
  if (s.ok()) return s;
  // Whatever was moved into place goes back (or, once the index is in, the kept files go): a failed save
  // leaves the previous checkpoint or the new one, whole.
  (void)settle_interrupted_overwrite(prefix_);
  return fail(std::move(s));
}

Status BundleWriter::fail_at_step(const std::string& step) { return fail_at(after_step(step)); }

// ---- BundleReader

BundleReader::BundleReader(BundleReader&& o) noexcept { *this = std::move(o); }

BundleReader& BundleReader::operator=(BundleReader&& o) noexcept {
  if (this != &o) {
    for (int fd : shard_fds_) ::close(fd);
    prefix_ = std::move(o.prefix_);
    header_ = std::move(o.header_);
    entries_ = std::move(o.entries_);
    shard_fds_ = std::exchange(o.shard_fds_, {});
    shard_sizes_ = std::move(o.shard_sizes_);
    shard_paths_ = std::move(o.shard_paths_);
  }
  return *this;
}

BundleReader::~BundleReader() {
  for (int fd : shard_fds_) ::close(fd);
}

// Note [Opening beside a save]
// An interrupted overwrite's kept generation is the checkpoint until the new index lands (Note
// [Overwriting a checkpoint in place]), so open reads the kept files while it is current. A save may move
// files between the look and the opens: the reader could take the old index and a data file already
// replaced, or the kept index and then, its kept data gone, the new data. Once every file is open, its
// descriptors hold those files whatever happens to the names, so open checks then that the names still
// lead to them (the index is held open meanwhile, so that its inode number cannot be reused by a newer
// index), that the kept generation is as current as it was, and that a kept generation's data file read
// under its own name has not been moved aside since (without hard links the data moves after the index):
// if so, these files were one generation at that moment, and stay readable. Otherwise (kAborted from
// open_generation, or a file gone under a moving generation) it looks again. ReadersBesideRepeated-
// OverwritesSeeOneGeneration (bundle_generations_test.cc) found each of these races.
namespace {

// Which files hold the index and the kept index at `prefix` now (0 for none): a save that moves either
// changes it.
std::pair<ino_t, ino_t> index_files(const std::string& prefix) {
  struct stat index, kept;
  return {regular_file(bundle_index_path(prefix), &index) ? index.st_ino : 0,
          regular_file(kept_path(bundle_index_path(prefix)), &kept) ? kept.st_ino : 0};
}

}  // namespace

StatusOr<BundleReader> BundleReader::open(const std::string& prefix) {
  Status moved;
  for (int attempt = 0; attempt < 64; ++attempt) {
    if (attempt >= 4) std::this_thread::yield();  // let the save move on
    const auto before = index_files(prefix);
    const bool kept = kept_generation_is_current(prefix);
    StatusOr<BundleReader> r = open_generation(prefix, kept);
    if (r.ok()) return r;
    // A file gone while a kept generation is current (without hard links, a data file moves to its kept
    // name after the index did) or while a save moved an index: look again.
    const bool moving = r.status().code() == Code::kNotFound && (kept || index_files(prefix) != before);
    if (r.status().code() != Code::kAborted && !moving) return r;
    moved = r.status();
  }
  if (moved.code() != Code::kAborted) return moved;
  return make_error(Code::kUnavailable, "checkpoint ", prefix,
                    ": other saves kept replacing its files while ", "it was being opened (", moved.message(),
                    ")");
}

StatusOr<BundleReader> BundleReader::open_generation(const std::string& prefix, bool kept) {
  BundleReader r;
  r.prefix_ = prefix;
  const std::string path = kept ? kept_path(bundle_index_path(prefix)) : bundle_index_path(prefix);
  std::string bytes;
  struct stat index_file;
  // Open until the end: while it is open its inode number cannot go to a newer index (Note [Opening
  // beside a save]).
  struct Index {
    int fd;
    ~Index() {
      if (fd >= 0) ::close(fd);
    }
  } index{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  {
    if (index.fd < 0)
      return make_error(Code::kNotFound, "checkpoint ", prefix, ": cannot open ", path, ": ", errno_text());
    struct stat st;
    Status s;
    if (::fstat(index.fd, &st) != 0) s = make_error(Code::kDataLoss, path, ": ", errno_text());
    if (s.ok() && !S_ISREG(st.st_mode)) s = make_error(Code::kDataLoss, path, ": not a regular file");
    index_file = st;
    if (s.ok()) {
      bytes.resize(static_cast<size_t>(st.st_size));
      s = pread_all(index.fd, bytes.data(), bytes.size(), 0, path);
    }
    EMBER_RETURN_IF_ERROR(s);
  }
  std::map<std::string, std::string> table;
  EMBER_RETURN_IF_ERROR((Table{path, bytes}.read_all(&table)));
  auto header = table.find("");
  if (header == table.end() || !r.header_.ParseFromString(header->second))
    return make_error(Code::kDataLoss, path, ": no valid BundleHeaderProto under the empty key");
  if (r.header_.endianness() != proto::BundleHeaderProto::LITTLE)
    return make_error(Code::kUnimplemented, path,
                      ": a big-endian checkpoint; ember reads little-endian ones");
  if (r.header_.version().min_consumer() > kBundleVersion)
    return make_error(Code::kUnimplemented, path, ": needs a reader of bundle version ",
                      r.header_.version().min_consumer(), "; ember reads version ", kBundleVersion);
  const int num_shards = r.header_.num_shards();
  if (num_shards < 1 || num_shards > 99999)
    return make_error(Code::kDataLoss, path, ": the header names ", num_shards, " data shards");
  table.erase(header);
  for (auto& [key, value] : table) {
    proto::BundleEntryProto e;
    if (!e.ParseFromString(value))
      return make_error(Code::kDataLoss, path, ": the entry of \"", key, "\" is not a BundleEntryProto");
    if (e.shard_id() < 0 || e.shard_id() >= num_shards)
      return make_error(Code::kDataLoss, path, ": \"", key, "\" lies in shard ", e.shard_id(), " of ",
                        num_shards);
    if (e.offset() < 0 || e.size() < 0)
      return make_error(Code::kDataLoss, path, ": \"", key, "\" has offset ", e.offset(), " and size ",
                        e.size());
    r.entries_.emplace(key, std::move(e));
  }
  // Only shards that some entry uses need to exist (TensorFlow's writer may leave empty ones out).
  r.shard_fds_.assign(static_cast<size_t>(num_shards), -1);
  r.shard_sizes_.assign(static_cast<size_t>(num_shards), 0);
  r.shard_paths_.resize(static_cast<size_t>(num_shards));
  for (const auto& [key, e] : r.entries_) {
    int shard = e.shard_id();
    if (r.shard_fds_[shard] >= 0 || !e.slices().empty()) continue;
    std::string data = bundle_data_path(prefix, shard, num_shards);
    struct stat kept_data;
    if (kept && regular_file(kept_path(data), &kept_data)) data = kept_path(data);
    r.shard_paths_[shard] = data;
    int fd = ::open(data.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return make_error(Code::kNotFound, "checkpoint ", prefix, ": cannot open ", data, ": ", errno_text());
    r.shard_fds_[shard] = fd;
    struct stat st;
    if (::fstat(fd, &st) != 0) return make_error(Code::kDataLoss, data, ": ", errno_text());
    r.shard_sizes_[shard] = st.st_size;
  }
  // Still one generation (Note [Opening beside a save])?
  struct stat named;
  bool same = kept_generation_is_current(prefix) == kept && ::stat(path.c_str(), &named) == 0 &&
              named.st_dev == index_file.st_dev && named.st_ino == index_file.st_ino;
  for (size_t shard = 0; same && shard < r.shard_fds_.size(); ++shard) {
    struct stat held;
    if (r.shard_fds_[shard] < 0) continue;
    same = ::fstat(r.shard_fds_[shard], &held) == 0 && ::stat(r.shard_paths_[shard].c_str(), &named) == 0 &&
           named.st_dev == held.st_dev && named.st_ino == held.st_ino;
    // A kept generation's data file read under its own name must not have been moved aside since (and
    // replaced by the new one): then it would have a kept name now.
    if (same && kept && !r.shard_paths_[shard].ends_with(kept_path("")))
      same = !regular_file(kept_path(r.shard_paths_[shard]), &named);
  }
  if (!same)
    return make_error(Code::kAborted, "checkpoint ", prefix,
                      ": a save replaced files while they were opened");
  return r;
}

std::vector<std::string> BundleReader::keys() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& kv : entries_) out.push_back(kv.first);
  return out;
}

StatusOr<const proto::BundleEntryProto*> BundleReader::entry(const std::string& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end())
    return make_error(Code::kNotFound, "checkpoint ", prefix_, ": no tensor named \"", key, "\"");
  return &it->second;
}

StatusOr<int> BundleReader::tf_dtype(const std::string& key) const {
  auto e = entry(key);
  if (!e.ok()) return e.status();
  return static_cast<int>((*e)->dtype());
}

StatusOr<std::vector<int64_t>> BundleReader::dims(const std::string& key) const {
  auto e = entry(key);
  if (!e.ok()) return e.status();
  std::vector<int64_t> dims;
  bool unknown_rank = false;
  Status s = from_shape_proto((*e)->shape(), dims, unknown_rank);
  if (s.ok() && unknown_rank) s = invalid_argument("the shape has an unknown rank");
  for (int64_t d : dims)
    if (s.ok() && d < 0) s = invalid_argument("the shape has an unknown dimension");
  if (!s.ok())
    return make_error(Code::kDataLoss, bundle_index_path(prefix_), ": \"", key, "\": ", s.message());
  return dims;
}

StatusOr<BundleReader::Located> BundleReader::locate(const std::string& key,
                                                     const proto::BundleEntryProto& e) const {
  std::string data = shard_paths_[e.shard_id()];
  if (!e.slices().empty())
    return make_error(Code::kUnimplemented, bundle_index_path(prefix_), ": \"", key,
                      "\" is a partitioned variable (saved in slices); ember reads whole tensors only");
  int64_t file_size = shard_sizes_[e.shard_id()];
  if (e.offset() > file_size || e.size() > file_size - e.offset())
    return make_error(Code::kDataLoss, data, ": \"", key, "\" claims bytes [", e.offset(), ", ", e.offset(),
                      " + ", e.size(), ") of a ", file_size, "-byte file (truncated?)");
  return Located{shard_fds_[e.shard_id()], std::move(data)};
}

StatusOr<TensorRef> BundleReader::read(const std::string& key) const {
  auto e = entry(key);
  if (!e.ok()) return e.status();
  if ((*e)->dtype() == kDtString) {
    auto values = read_strings(key);
    if (!values.ok()) return values.status();
    auto dims = this->dims(key);
    if (!dims.ok()) return dims.status();
    auto t = TensorImpl::allocate(DType::kString, Shape(*dims));
    if (!t.ok()) return t.status();
    if (static_cast<int64_t>(values->size()) != t.value()->num_elements())
      return make_error(Code::kDataLoss, "checkpoint ", prefix_, ": \"", key, "\" holds ", values->size(),
                        " strings for ", t.value()->num_elements(), " elements");
    std::move(values->begin(), values->end(), t.value()->mutable_data<std::string>());
    return std::move(t).value();
  }
  DType dtype;
  if (!dtype_from_tf_datatype((*e)->dtype(), &dtype))
    return make_error(Code::kUnimplemented, "checkpoint ", prefix_, ": \"", key, "\" has DataType ",
                      static_cast<int>((*e)->dtype()), ", which ember has no tensors of",
                      (*e)->dtype() == kDtString ? " (a string: use read_string)" : "");
  auto dims = this->dims(key);
  if (!dims.ok()) return dims.status();
  auto where = locate(key, **e);
  if (!where.ok()) return where.status();
  Shape shape(*dims);
  uint64_t expected = static_cast<uint64_t>(shape.num_elements()) * dtype_size(dtype);
  if (shape.num_elements() > 0 && expected / static_cast<uint64_t>(shape.num_elements()) != dtype_size(dtype))
    expected = UINT64_MAX;
  if (expected != static_cast<uint64_t>((*e)->size()))
    return make_error(Code::kDataLoss, bundle_index_path(prefix_), ": \"", key, "\" is ", dtype_name(dtype),
                      " of ", shape.num_elements(), " elements (", expected, " bytes) but its entry says ",
                      (*e)->size(), " bytes");
  auto t = TensorImpl::allocate(dtype, shape);
  if (!t.ok()) return t.status();
  TensorRef out = std::move(t).value();
  uint32_t crc = 0;
  EMBER_RETURN_IF_ERROR(pread_checksummed(where->fd, static_cast<char*>(out->mutable_raw_data()),
                                          out->nbytes(), (*e)->offset(), where->path, &crc));
  if (crc32c::mask(crc) != (*e)->crc32c())
    return make_error(Code::kDataLoss, where->path, ": checksum mismatch for \"", key,
                      "\" (the bytes changed ", "after they were written)");
  return out;
}

StatusOr<std::vector<std::string>> BundleReader::read_strings(const std::string& key) const {
  auto e = entry(key);
  if (!e.ok()) return e.status();
  if ((*e)->dtype() != kDtString)
    return make_error(Code::kInvalidArgument, "checkpoint ", prefix_, ": \"", key,
                      "\" is not a string tensor ", "(DataType ", static_cast<int>((*e)->dtype()), ")");
  auto dims = this->dims(key);
  if (!dims.ok()) return dims.status();
  auto where = locate(key, **e);
  if (!where.ok()) return where.status();
  const int64_t size = (*e)->size();
  int64_t n = 1;
  for (int64_t d : *dims) n = d == 0 ? 0 : (n > size ? n : n * d);
  // Every element takes at least one byte of length, so more elements than bytes cannot be right.
  if (n > size)
    return make_error(Code::kDataLoss, where->path, ": string tensor \"", key,
                      "\" claims more elements than its ", size, " bytes can hold");
  std::string bytes(static_cast<size_t>(size), '\0');
  EMBER_RETURN_IF_ERROR(pread_all(where->fd, bytes.data(), bytes.size(), (*e)->offset(), where->path));
  auto bad = [&](const std::string& what) {
    return make_error(Code::kDataLoss, where->path, ": string tensor \"", key, "\": ", what);
  };
  const char* p = bytes.data();
  const char* end = p + bytes.size();
  std::vector<uint64_t> lengths(static_cast<size_t>(n));
  uint32_t crc = 0;
  uint64_t total = 0;
  for (uint64_t& len : lengths) {
    if (!get_varint(&p, end, &len)) return bad("bad length varint");
    if (len > static_cast<uint64_t>(size)) return bad("an element is longer than the entry");
    total += len;
    if (len <= UINT32_MAX) {
      uint32_t len32 = static_cast<uint32_t>(len);
      crc = crc32c::extend(crc, &len32, 4);
    } else {
      crc = crc32c::extend(crc, &len, 8);
    }
  }
  if (end - p < 4) return bad("no checksum after the lengths");
  if (load32(p) != crc32c::mask(crc)) return bad("checksum mismatch in the lengths");
  crc = crc32c::extend(crc, p, 4);
  p += 4;
  if (total != static_cast<uint64_t>(end - p))
    return bad("the lengths add up to " + std::to_string(total) + " bytes but " + std::to_string(end - p) +
               " follow");
  crc = crc32c::extend(crc, p, static_cast<size_t>(end - p));
  if (crc32c::mask(crc) != (*e)->crc32c()) return bad("checksum mismatch");
  std::vector<std::string> out;
  out.reserve(lengths.size());
  for (uint64_t len : lengths) {
    out.emplace_back(p, static_cast<size_t>(len));
    p += len;
  }
  return out;
}

StatusOr<std::string> BundleReader::read_string(const std::string& key) const {
  auto values = read_strings(key);
  if (!values.ok()) return values.status();
  if (values->size() != 1)
    return make_error(Code::kInvalidArgument, "checkpoint ", prefix_, ": \"", key, "\" holds ",
                      values->size(), " strings, not one");
  return std::move((*values)[0]);
}

}  // namespace ember
