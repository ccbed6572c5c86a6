#include "ember/state/record_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "ember/state/crc32c.h"

namespace ember::record_io {
namespace {

std::string errno_text() { return std::strerror(errno); }

Code open_error_code(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return Code::kNotFound;
    case EACCES:
    case EPERM:
    case EROFS:
      return Code::kPermissionDenied;
    default:
      return Code::kUnavailable;
  }
}

void put_u32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_u64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

Status write_all(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return make_error(Code::kUnavailable, "writing ", path, ": ", errno_text());
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

int zlib_window_bits(const RecordOptions& o) {
  return o.compression == Compression::kGzip ? o.window_bits + 16 : o.window_bits;
}

}  // namespace

StatusOr<Compression> parse_compression(std::string_view name) {
  if (name.empty() || name == "NONE") return Compression::kNone;
  if (name == "ZLIB") return Compression::kZlib;
  if (name == "GZIP") return Compression::kGzip;
  return invalid_argument("Not a valid compression_type: \"", name,
                          "\" (expected \"\", \"ZLIB\" or \"GZIP\")");
}

std::string encode_header(uint64_t length) {
  std::string h(kHeaderBytes, '\0');
  put_u64(h.data(), length);
  put_u32(h.data() + 8, crc32c::mask(crc32c::value(h.data(), 8)));
  return h;
}

std::string encode_footer(std::string_view data) {
  std::string f(kFooterBytes, '\0');
  put_u32(f.data(), crc32c::mask(crc32c::value(data.data(), data.size())));
  return f;
}

std::string encode_record(std::string_view data) {
  std::string r = encode_header(data.size());
  r.append(data);
  r += encode_footer(data);
  return r;
}

// ---------------------------------------------------------------------------------------------------------
// Writer

struct RecordWriter::Deflater {
  z_stream zs{};
  bool ready = false;
  ~Deflater() {
    if (ready) deflateEnd(&zs);
  }
  // Compresses `n` bytes (with `flush`) and appends what zlib produces to `out`.
  Status run(const char* data, size_t n, int flush, std::string* out) {
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    zs.avail_in = static_cast<uInt>(n);  // callers pass at most one record part; split below if huge
    char chunk[1 << 15];
    for (;;) {
      zs.next_out = reinterpret_cast<Bytef*>(chunk);
      zs.avail_out = sizeof(chunk);
      int rc = deflate(&zs, flush);
      if (rc == Z_STREAM_ERROR) return make_error(Code::kInternal, "zlib deflate failed");
      out->append(chunk, sizeof(chunk) - zs.avail_out);
      if (flush == Z_FINISH) {
        if (rc == Z_STREAM_END) break;
      } else if (zs.avail_in == 0 && zs.avail_out != 0) {
        break;
      }
    }
    return Status::OK();
  }
};

RecordWriter::RecordWriter(std::string path, const RecordOptions& options, int fd)
    : path_(std::move(path)), options_(options), fd_(fd) {}

StatusOr<std::unique_ptr<RecordWriter>> RecordWriter::open(const std::string& path,
                                                           const RecordOptions& options, bool append) {
  if (options.compression != Compression::kNone) {
    if (options.window_bits < 8 || options.window_bits > 15)
      return invalid_argument("TFRecordWriter: window_bits must be in [8, 15], got ", options.window_bits);
    if (options.compression_level < -1 || options.compression_level > 9)
      return invalid_argument("TFRecordWriter: compression_level must be in [-1, 9], got ",
                              options.compression_level);
    if (options.mem_level < 1 || options.mem_level > 9)
      return invalid_argument("TFRecordWriter: mem_level must be in [1, 9], got ", options.mem_level);
  }
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) return make_error(open_error_code(errno), path, "; ", errno_text());
  std::unique_ptr<RecordWriter> w(new (std::nothrow) RecordWriter(path, options, fd));
  if (!w) {
    ::close(fd);
    return make_error(Code::kResourceExhausted, "TFRecordWriter: out of memory");
  }
  if (options.compression != Compression::kNone) {
    w->deflater_ = std::make_unique<Deflater>();
    int rc = deflateInit2(&w->deflater_->zs, options.compression_level, Z_DEFLATED, zlib_window_bits(options),
                          options.mem_level, options.compression_strategy);
    if (rc != Z_OK)
      return invalid_argument("TFRecordWriter: zlib rejected the compression options (", rc, ")");
    w->deflater_->ready = true;
  }
  return w;
}

RecordWriter::~RecordWriter() { (void)close(); }

Status RecordWriter::fail(Status s) {
  if (status_.ok()) status_ = s;
  return s;
}

Status RecordWriter::drain(bool force) {
  if (buffer_.empty() || (!force && buffer_.size() < options_.buffer_size)) return Status::OK();
  Status s = write_all(fd_, buffer_.data(), buffer_.size(), path_);
  buffer_.clear();
  return s.ok() ? s : fail(s);
}

Status RecordWriter::put(const char* data, size_t n) {
  if (!deflater_) {
    buffer_.append(data, n);
    return drain(false);
  }
  // zlib counts input in uInt; feed very large records in pieces.
  constexpr size_t kPiece = size_t(1) << 30;
  while (n > 0) {
    size_t take = std::min(n, kPiece);
    Status s = deflater_->run(data, take, Z_NO_FLUSH, &buffer_);
    if (!s.ok()) return fail(s);
    EMBER_RETURN_IF_ERROR(drain(false));
    data += take;
    n -= take;
  }
  return Status::OK();
}

Status RecordWriter::write(std::string_view record) {
  if (!status_.ok()) return status_;
  if (closed()) return make_error(Code::kFailedPrecondition, "Writer is closed.");
  try {
    std::string header = encode_header(record.size());
    std::string footer = encode_footer(record);
    EMBER_RETURN_IF_ERROR(put(header.data(), header.size()));
    EMBER_RETURN_IF_ERROR(put(record.data(), record.size()));
    return put(footer.data(), footer.size());
  } catch (const std::bad_alloc&) {
    return fail(make_error(Code::kResourceExhausted, "TFRecordWriter: out of memory writing ", path_));
  }
}

Status RecordWriter::flush() {
  if (!status_.ok()) return status_;
  if (closed()) return make_error(Code::kFailedPrecondition, "Writer is closed.");
  if (deflater_) {
    Status s = deflater_->run(nullptr, 0, Z_SYNC_FLUSH, &buffer_);
    if (!s.ok()) return fail(s);
  }
  return drain(true);
}

Status RecordWriter::close() {
  if (closed()) return status_;
  Status s = status_;
  if (s.ok() && deflater_) s = deflater_->run(nullptr, 0, Z_FINISH, &buffer_);
  if (s.ok()) s = drain(true);
  // fsync fails with EINVAL on pipes and character devices, which have nothing to sync.
  if (s.ok() && ::fsync(fd_) != 0 && errno != EINVAL)
    s = make_error(Code::kUnavailable, "fsync of ", path_, ": ", errno_text());
  if (::close(fd_) != 0 && s.ok()) s = make_error(Code::kUnavailable, "closing ", path_, ": ", errno_text());
  fd_ = -1;
  deflater_.reset();
  return s.ok() ? s : fail(s);
}

// ---------------------------------------------------------------------------------------------------------
// Reader

struct RecordReader::Inflater {
  z_stream zs{};
  bool ready = false;
  bool eof = false;  // the file has no more compressed bytes
  std::string in;
  ~Inflater() {
    if (ready) inflateEnd(&zs);
  }
};

RecordReader::RecordReader(std::string path, const RecordOptions& options, int fd)
    : path_(std::move(path)), options_(options), fd_(fd) {}

RecordReader::~RecordReader() {
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<std::unique_ptr<RecordReader>> RecordReader::open(const std::string& path,
                                                           const RecordOptions& options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(open_error_code(errno), path, "; ", errno_text());
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return make_error(Code::kFailedPrecondition, path, " is a directory, not a TFRecord file");
  }
  std::unique_ptr<RecordReader> r(new (std::nothrow) RecordReader(path, options, fd));
  if (!r) {
    ::close(fd);
    return make_error(Code::kResourceExhausted, "TFRecord reader: out of memory");
  }
  if (r->options_.buffer_size == 0) r->options_.buffer_size = 256 << 10;
  if (options.compression != Compression::kNone) {
    r->inflater_ = std::make_unique<Inflater>();
    int wbits = options.compression == Compression::kGzip ? options.window_bits + 16 : options.window_bits;
    if (inflateInit2(&r->inflater_->zs, wbits) != Z_OK)
      return invalid_argument("TFRecord reader: zlib rejected window_bits ", options.window_bits);
    r->inflater_->ready = true;
  }
  return r;
}

// Reads up to `n` stream bytes that follow the ones already in pending_ (file offset `pos` when
// uncompressed); returns how many arrived (0: nothing more now).
StatusOr<size_t> RecordReader::fill(uint64_t pos, char* dst, size_t n) {
  if (!inflater_) {
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(fd_, dst + got, n - got, static_cast<off_t>(pos + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return make_error(Code::kDataLoss, "reading ", path_, ": ", errno_text());
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    return got;
  }
  Inflater& z = *inflater_;
  z.zs.next_out = reinterpret_cast<Bytef*>(dst);
  z.zs.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
  uInt want = z.zs.avail_out;
  while (z.zs.avail_out > 0) {
    if (z.zs.avail_in == 0) {
      if (z.eof) break;
      z.in.resize(options_.buffer_size);
      ssize_t r;
      do r = ::read(fd_, z.in.data(), z.in.size());
      while (r < 0 && errno == EINTR);
      if (r < 0) return make_error(Code::kDataLoss, "reading ", path_, ": ", errno_text());
      if (r == 0) {
        z.eof = true;
        break;
      }
      z.zs.next_in = reinterpret_cast<Bytef*>(z.in.data());
      z.zs.avail_in = static_cast<uInt>(r);
    }
    int rc = inflate(&z.zs, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members (or zlib streams) continue the same record stream.
      inflateReset(&z.zs);
      continue;
    }
    if (rc == Z_BUF_ERROR) continue;  // needs more input; the loop reads it
    if (rc != Z_OK)
      return make_error(Code::kDataLoss, "corrupted compressed stream in ", path_, ": ",
                        z.zs.msg ? z.zs.msg : "zlib error");
  }
  return static_cast<size_t>(want - z.zs.avail_out);
}

StatusOr<size_t> RecordReader::read_at(uint64_t pos, char* dst, size_t n) {
  EMBER_DCHECK(pos >= pending_base_);
  // Grow pending_ until it covers [pos, pos + n) or the stream has no more bytes now. Each step reads at
  // most what the buffer already holds (or buffer_size), so memory follows the bytes that exist, not a
  // length read from the file.
  uint64_t end = pos + n;
  while (pending_base_ + pending_.size() < end) {
    size_t have = pending_.size();
    uint64_t need = end - (pending_base_ + have);
    size_t step = static_cast<size_t>(std::min<uint64_t>(need, std::max(options_.buffer_size, have)));
    step = std::max(step, options_.buffer_size);
    pending_.resize(have + step);
    StatusOr<size_t> got = fill(pending_base_ + have, pending_.data() + have, step);
    if (!got.ok()) {
      pending_.resize(have);
      return got.status();
    }
    pending_.resize(have + *got);
    if (*got == 0) break;
  }
  uint64_t avail = pending_base_ + pending_.size() - pos;
  size_t take = static_cast<size_t>(std::min<uint64_t>(avail, n));
  if (dst != nullptr) std::memcpy(dst, pending_.data() + (pos - pending_base_), take);
  return take;
}

Status RecordReader::read(std::string* record) {
  if (!status_.ok()) return status_;
  try {
    char header[kHeaderBytes];
    StatusOr<size_t> got = read_at(offset_, header, kHeaderBytes);
    if (!got.ok()) return status_ = got.status();
    if (*got < kHeaderBytes) return make_error(Code::kOutOfRange, "End of sequence");
    uint64_t length = get_u64(header);
    if (crc32c::unmask(get_u32(header + 8)) != crc32c::value(header, 8)) {
      status_ = make_error(Code::kDataLoss, "corrupted record at ", offset_,
                           offset_ == 0 ? " (Is this even a TFRecord file?)" : "");
      return status_;
    }
    if (length > UINT64_MAX - offset_ - kHeaderBytes - kFooterBytes || length > SIZE_MAX / 2)
      return status_ = make_error(Code::kDataLoss, "corrupted record at ", offset_, ": length ", length);
    uint64_t data_at = offset_ + kHeaderBytes;
    got = read_at(data_at, nullptr, static_cast<size_t>(length) + kFooterBytes);
    if (!got.ok()) return status_ = got.status();
    if (*got < length + kFooterBytes) return make_error(Code::kDataLoss, "truncated record at ", offset_);
    const char* data = pending_.data() + (data_at - pending_base_);
    uint32_t expected = crc32c::unmask(get_u32(data + length));
    if (crc32c::value(data, static_cast<size_t>(length)) != expected)
      return status_ = make_error(Code::kDataLoss, "corrupted record at ", data_at);
    record->assign(data, static_cast<size_t>(length));
    offset_ = data_at + length + kFooterBytes;
    pending_.erase(0, static_cast<size_t>(offset_ - pending_base_));
    pending_base_ = offset_;
    return Status::OK();
  } catch (const std::bad_alloc&) {
    return make_error(Code::kResourceExhausted, "TFRecord reader: out of memory reading ", path_);
  }
}

}  // namespace ember::record_io
