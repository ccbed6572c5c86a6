// TFRecord files: TensorFlow's framing of a sequence of byte strings, used by tf.io.TFRecordWriter,
// tf.data.TFRecordDataset and TensorBoard's event files. Each record is
//
//   uint64 length (little-endian) | uint32 masked CRC32C of those 8 bytes | data | uint32 masked CRC32C of
//   data
//
// and the whole stream may be ZLIB- or GZIP-compressed. What ember writes TensorFlow reads and the other way
// round.
//
//   auto w = RecordWriter::open("/tmp/x.tfrecord", RecordOptions{});   // StatusOr<unique_ptr<...>>
//   EMBER_RETURN_IF_ERROR((*w)->write("hello"));
//   EMBER_RETURN_IF_ERROR((*w)->close());
//
//   auto r = RecordReader::open("/tmp/x.tfrecord", RecordOptions{});
//   std::string record;
//   for (Status s; (s = (*r)->read(&record)).ok();) use(record);  // then OutOfRange, or DataLoss
//
// The reader trusts nothing: a length is checked against its CRC before it is used, the data is read in
// chunks that grow only as bytes actually arrive (a corrupt length never allocates more than the file
// holds), and every problem is DataLoss with TensorFlow's wording ("corrupted record at 12", "truncated
// record at 21"). As TensorFlow's reader, a header cut short at the end of an uncompressed file is the end
// of the records, not an error: a file still being written (TensorBoard reading live) ends that way, and a
// later read retries from the same offset.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ember/core/status.h"

namespace ember::record_io {

enum class Compression { kNone, kZlib, kGzip };

/// "" / "NONE" → kNone, "ZLIB", "GZIP" (TensorFlow's spellings); InvalidArgument otherwise.
StatusOr<Compression> parse_compression(std::string_view name);

struct RecordOptions {
  Compression compression = Compression::kNone;
  int compression_level = -1;  // zlib's Z_DEFAULT_COMPRESSION
  int window_bits = 15;        // GZIP adds 16, as zlib wants
  int mem_level = 8;
  int compression_strategy = 0;
  size_t buffer_size = 256 << 10;  // bytes buffered before they go to the file (and read at once)
};

constexpr size_t kHeaderBytes = 12;  // length + its masked CRC
constexpr size_t kFooterBytes = 4;   // masked CRC of the data

/// The 12 header bytes and the 4 footer bytes of a record holding `data`.
std::string encode_header(uint64_t length);
std::string encode_footer(std::string_view data);
/// A whole framed record (header + data + footer).
std::string encode_record(std::string_view data);

/// Appends records to a file. Writes go through a buffer; flush() hands everything written so far to the
/// operating system (a sync point in a compressed stream, so a reader sees whole records); close() ends
/// the compressed stream, fsyncs and closes. A writer destroyed without close() closes. After the first
/// error every call returns it again.
class RecordWriter {
 public:
  /// Creates (or truncates; with `append`, extends) the file at `path`.
  static StatusOr<std::unique_ptr<RecordWriter>> open(const std::string& path, const RecordOptions& options,
                                                      bool append = false);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  Status write(std::string_view record);
  Status flush();
  Status close();
  bool closed() const { return fd_ < 0; }
  const std::string& path() const { return path_; }

 private:
  struct Deflater;
  RecordWriter(std::string path, const RecordOptions& options, int fd);
  Status put(const char* data, size_t n);
  Status drain(bool force);
  Status fail(Status s);

  std::string path_;
  RecordOptions options_;
  int fd_ = -1;
  std::string buffer_;
  std::unique_ptr<Deflater> deflater_;
  Status status_;
};

/// Reads the records of a file one after another.
class RecordReader {
 public:
  static StatusOr<std::unique_ptr<RecordReader>> open(const std::string& path, const RecordOptions& options);
  ~RecordReader();
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  /// The next record into `*record`: OK, OutOfRange at the end of the records, DataLoss when a record is
  /// corrupt or cut short (also for the following calls: the stream cannot be trusted after it).
  Status read(std::string* record);
  /// Offset, in the (uncompressed) stream, of the next record.
  uint64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  struct Inflater;
  RecordReader(std::string path, const RecordOptions& options, int fd);
  // Up to `n` bytes of the uncompressed stream at `pos` (which only moves forward) into `dst`.
  StatusOr<size_t> read_at(uint64_t pos, char* dst, size_t n);
  StatusOr<size_t> fill(uint64_t pos, char* dst, size_t n);

  std::string path_;
  RecordOptions options_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  std::unique_ptr<Inflater> inflater_;
  // Bytes of a compressed stream already inflated but not yet consumed, starting at stream offset base_.
  std::string pending_;
  uint64_t pending_base_ = 0;
  Status status_;
};

}  // namespace ember::record_io
